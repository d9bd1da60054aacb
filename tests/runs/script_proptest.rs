//! No script text makes the parser panic: it returns commands or an error.

use pgbolt::expr::vars::VarNames;
use pgbolt::script::{parse_script, QueryMode};
use proptest::prelude::*;

/// Fragments that exercise every lexer state and meta command.
const PIECES: &[&str] = &[
    "select",
    " ",
    "\n",
    "\r\n",
    "\t",
    ";",
    "\\;",
    "\\:",
    "\\",
    "\\\n",
    "'",
    "''",
    "E'",
    "B'",
    "U&'",
    "U&\"",
    "\"",
    "$$",
    "$a$",
    "$1",
    "$",
    "/*",
    "*/",
    "--",
    "(",
    ")",
    ":",
    "::",
    ":x",
    ":'x'",
    ":{?x}",
    "é",
    "1",
    "-",
    "+",
    "*",
    ",",
    "\\set x ",
    "\\set",
    "\\if ",
    "\\elif ",
    "\\else",
    "\\endif",
    "\\sleep ",
    "ms",
    "\\gset",
    "\\aset p",
    "\\shell ",
    "\\setshell v ",
    "random(1, 10)",
    "\\startpipeline",
    "\\endpipeline",
    "begin",
    "end",
    "create function",
    "case",
];

fn script() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            4 => prop::sample::select(PIECES).prop_map(str::to_owned),
            1 => any::<String>(),
        ],
        0..40,
    )
    .prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn parsing_never_panics(text in script()) {
        let mut vars = VarNames::new();
        match parse_script("p.sql", &text, 1, &mut vars) {
            Ok(script) => {
                prop_assert!(!script.commands.is_empty());
                prop_assert!(script.check_query_mode(QueryMode::Simple).is_ok());
            }
            Err(e) => {
                // A message for the caller to print after the program's prefix.
                let message = e.to_string();
                prop_assert!(!message.is_empty() && !message.starts_with("pgbolt"));
            }
        }
    }
}
