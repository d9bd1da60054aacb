use super::*;
use crate::expr::vars::VarNames;

fn parse(text: &str) -> Result<Script, ScriptError> {
    parse_script("t.sql", text, 1, &mut VarNames::new())
}

/// Each command as `sql: <text>` or the meta command's text.
fn commands(text: &str) -> Vec<String> {
    let script = parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    script
        .commands
        .iter()
        .map(|c| match &c.kind {
            CommandKind::Sql(sql) => format!("sql: {}", sql.text),
            _ => c.first_line.clone(),
        })
        .collect()
}

#[test]
fn splitting_sql_commands() {
    let cases: &[(&str, &[&str])] = &[
        ("select 1;", &["sql: select 1;"]),
        ("select 1", &["sql: select 1"]),
        ("select 1;select 2;", &["sql: select 1;", "sql: select 2;"]),
        ("  \n\n  select\n  1;\n\n", &["sql: select\n  1;"]),
        ("select 1; -- trailing\n", &["sql: select 1;"]),
        ("-- only a comment\n\n", &[]),
        ("select -- inside\n 1;", &["sql: select -- inside\n 1;"]),
        ("select 'a;b';", &["sql: select 'a;b';"]),
        ("select 'it''s;';", &["sql: select 'it''s;';"]),
        ("select E'a\\';b';", &["sql: select E'a\\';b';"]),
        ("select 'a\\';b';", &["sql: select 'a\\';", "sql: b';"]),
        ("select B'01';x;", &["sql: select B'01';", "sql: x;"]),
        ("select \"a;\"\"b\";", &["sql: select \"a;\"\"b\";"]),
        ("select $$a;b$$;", &["sql: select $$a;b$$;"]),
        ("select $f$a;$g$;$f$;", &["sql: select $f$a;$g$;$f$;"]),
        ("select $1;", &["sql: select $1;"]),
        ("select a$b;c;", &["sql: select a$b;", "sql: c;"]),
        (
            "select /* a; /* b; */ c; */ 1;",
            &["sql: select /* a; /* b; */ c; */ 1;"],
        ),
        ("/* only */", &["sql: /* only */"]),
        ("select (1;2);3;", &["sql: select (1;2);", "sql: 3;"]),
        ("select 1\\; select 2;", &["sql: select 1; select 2;"]),
        ("select 1 \\:x;", &["sql: select 1 :x;"]),
        ("select 'a'\n'b;';", &["sql: select 'a'\n'b;';"]),
        (
            "select 'a' -- c\n 'b;' ;",
            &["sql: select 'a' -- c\n 'b;' ;"],
        ),
        ("select 'a' -- c\n;", &["sql: select 'a' -- c\n;"]),
        ("select :'v;';", &["sql: select :'v;';"]),
        ("select :'v';x;", &["sql: select :'v';", "sql: x;"]),
        ("select :{?v};", &["sql: select FALSE;"]),
        (
            "select 'unterminated;\nmore",
            &["sql: select 'unterminated;\nmore"],
        ),
        (
            "create function f() returns int begin atomic select 1; end;select 2;",
            &[
                "sql: create function f() returns int begin atomic select 1; end;",
                "sql: select 2;",
            ],
        ),
        (
            "select 1 \\sleep 1\nselect 2;",
            &["sql: select 1 ", "\\sleep 1", "sql: select 2;"],
        ),
        ("select 1\n\\sleep 1\n", &["sql: select 1\n", "\\sleep 1"]),
        (
            "\\sleep 1 \\\n ms\nselect 1;",
            &["\\sleep 1 \\\n ms", "sql: select 1;"],
        ),
        ("\\sleep 1\r\nselect 1;", &["\\sleep 1", "sql: select 1;"]),
        (
            "\\sleep 1 \\\r\n ms\r\nselect 1;",
            &["\\sleep 1 \\\r\n ms", "sql: select 1;"],
        ),
        ("\\\nselect 1;", &["sql: select 1;"]),
    ];
    for (text, expected) in cases {
        if expected.is_empty() {
            assert!(
                matches!(parse(text), Err(ScriptError::Empty { .. })),
                "{text:?}"
            );
        } else {
            assert_eq!(&commands(text), expected, "{text:?}");
        }
    }
}

#[test]
fn sql_variables_in_both_forms() {
    let mut vars = VarNames::new();
    let script = parse_script(
        "t",
        "select :a, :a::int, 'x:b', :é1, ::c, :1, :_d from t where x=:a;",
        1,
        &mut vars,
    )
    .unwrap();
    let CommandKind::Sql(sql) = &script.commands[0].kind else {
        panic!("not SQL");
    };
    assert_eq!(
        sql.extended_text,
        "select $1, $2::int, 'x$3', $4, ::c, :1, $5 from t where x=$6;"
    );
    let names: Vec<&str> = sql.params.iter().map(|&s| vars.name(s)).collect();
    assert_eq!(names, ["a", "a", "b", "é1", "_d", "a"]);
    let rebuilt: String = sql
        .pieces
        .iter()
        .map(|p| match p {
            SqlPiece::Text(t) => t.clone(),
            SqlPiece::Var { slot, written } => {
                assert_eq!(&written[1..], vars.name(*slot));
                format!("<{}>", vars.name(*slot))
            }
        })
        .collect();
    assert_eq!(
        rebuilt,
        "select <a>, <a>::int, 'x<b>', <é1>, ::c, :1, <_d> from t where x=<a>;"
    );
}

#[test]
fn parameter_limit_depends_on_the_query_mode() {
    let vars = |n: usize| {
        (0..n)
            .map(|i| format!(":v{i}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    let ok = parse(&format!("select {};", vars(255))).unwrap();
    assert!(ok.check_query_mode(QueryMode::Extended).is_ok());
    let many = parse(&format!("select {};", vars(256))).unwrap();
    assert!(many.check_query_mode(QueryMode::Simple).is_ok());
    let err = many.check_query_mode(QueryMode::Prepared).unwrap_err();
    assert!(err
        .to_string()
        .starts_with("statement has too many arguments (maximum is 255): select :v0,"));
}

#[test]
fn meta_commands_and_their_arguments() {
    let mut vars = VarNames::new();
    let text = "\\set x 1\n\\SLEEP 10ms\n\\sleep :d us\n\\sleep -3\n\\setshell y echo ::a :b\n\
                \\shell true\nselect 1 \\gset p_\nselect 2\\; select 3 \\aset\n\
                \\startpipeline\n\\syncpipeline\n\\endpipeline\n\\set 1x 2\n";
    let script = parse_script("t", text, 1, &mut vars).unwrap();
    let kinds: Vec<&CommandKind> = script.commands.iter().map(|c| &c.kind).collect();
    assert!(
        matches!(kinds[0], CommandKind::Set { target, .. } if vars.name(target.slot) == "x" && target.valid_name)
    );
    assert!(matches!(
        kinds[1],
        CommandKind::Sleep {
            duration: SleepTime::Constant(10),
            unit: TimeUnit::Milliseconds
        }
    ));
    assert!(
        matches!(kinds[2], CommandKind::Sleep { duration: SleepTime::Var(s), unit: TimeUnit::Microseconds } if vars.name(*s) == "d")
    );
    assert!(matches!(
        kinds[3],
        CommandKind::Sleep {
            duration: SleepTime::Constant(-3),
            unit: TimeUnit::Seconds
        }
    ));
    let CommandKind::SetShell { target, command } = kinds[4] else {
        panic!("{:?}", kinds[4]);
    };
    assert_eq!(vars.name(target.slot), "y");
    assert_eq!(
        command,
        &[
            ShellWord::Literal("echo".into()),
            ShellWord::Literal(":a".into()),
            ShellWord::Var(vars.lookup("b").unwrap())
        ]
    );
    assert!(matches!(kinds[5], CommandKind::Shell { command } if command.len() == 1));
    assert!(
        matches!(kinds[6], CommandKind::Sql(SqlCommand { results: ResultVars::Gset { prefix }, .. }) if prefix == "p_")
    );
    assert!(
        matches!(kinds[7], CommandKind::Sql(SqlCommand { results: ResultVars::Aset { prefix }, text, .. }) if prefix.is_empty() && text == "select 2; select 3 ")
    );
    assert!(matches!(kinds[8], CommandKind::StartPipeline));
    assert!(matches!(kinds[9], CommandKind::SyncPipeline));
    assert!(matches!(kinds[10], CommandKind::EndPipeline));
    assert!(matches!(kinds[11], CommandKind::Set { target, .. } if !target.valid_name));
    assert_eq!(script.commands.len(), 12);
    assert_eq!(script.commands[6].first_line, "select 1 ");
}

#[test]
fn conditional_jumps() {
    let text = "\\if :a\nselect 1;\n\\elif :b\nselect 2;\n\\else\nselect 3;\n\\endif\n\
                \\if 0\n\\endif\nselect 4;\n";
    let script = parse(text).unwrap();
    let k: Vec<&CommandKind> = script.commands.iter().map(|c| &c.kind).collect();
    assert!(matches!(
        k[0],
        CommandKind::If {
            false_target: 2,
            ..
        }
    ));
    assert!(matches!(
        k[2],
        CommandKind::Elif {
            false_target: 5,
            end: 7,
            ..
        }
    ));
    assert!(matches!(k[4], CommandKind::Else { end: 7 }));
    assert!(matches!(k[6], CommandKind::Endif));
    assert!(matches!(
        k[7],
        CommandKind::If {
            false_target: 9,
            ..
        }
    ));
}

#[test]
fn syntax_errors_as_pgbench_prints_them() {
    let cases: &[(&str, &str)] = &[
        ("\\foo bar\n", "t.sql:1: invalid command in command \"foo\"\n\\foo bar"),
        ("\\set\n", "t.sql:1: missing argument in command \"set\""),
        (
            "\\set x\n",
            "t.sql:1: syntax error in command \"set\"\n\\set x\n      ^ error found here",
        ),
        (
            "\\set x",
            "t.sql:1: syntax error in command \"set\"\n\\set x\n     ^ error found here",
        ),
        (
            "select 1;\n  \\sleep 10 xx\n",
            "t.sql:2: unrecognized time unit, must be us, ms or s (xx) in command \"sleep\"\n\\sleep 10 xx\n          ^ error found here",
        ),
        (
            "\\sleep 1 ms extra\n",
            "t.sql:1: too many arguments in command \"sleep\"\n\\sleep 1 ms extra\n            ^ error found here",
        ),
        (
            "\\sleep abc\n",
            "t.sql:1: invalid sleep time, must be an integer (abc) in command \"sleep\"\n\\sleep abc\n       ^ error found here",
        ),
        ("\\setshell x\n", "t.sql:1: missing argument in command \"setshell\"\n\\setshell x"),
        ("\\shell\n", "t.sql:1: missing command in command \"shell\"\n\\shell"),
        ("\\else x\n", "t.sql:1: unexpected argument in command \"else\"\n\\else x"),
        ("\\gset a b\n", "t.sql:1: too many arguments in command \"gset\"\n\\gset a b"),
        ("\\gset\n", "t.sql:1: \\gset must follow an SQL command"),
        ("select 1 \\gset\n\\aset\n", "t.sql:2: \\gset must follow an SQL command"),
        (
            "\\set x 1\n\\gset\n",
            "t.sql:2: \\gset must follow an SQL command (\\set x 1)",
        ),
        ("\\else\n", "condition error in script \"t.sql\" command 1: \\else without matching \\if"),
        (
            "\\if 1\n\\else\n\\elif 1\n\\endif\n",
            "condition error in script \"t.sql\" command 3: \\elif after \\else",
        ),
        ("\\if 1\n", "condition error in script \"t.sql\" command 2: \\if without matching \\endif"),
        ("", "empty command list for script \"t.sql\""),
    ];
    for (text, expected) in cases {
        let err = parse(text).unwrap_err().to_string();
        assert_eq!(err, *expected, "{text:?}");
    }
}

/// An option, and the name and weight or the error it gives.

#[test]
fn builtins_weights_and_listing() {
    assert_eq!(find_builtin("tpcb").unwrap().name, "tpcb-like");
    assert_eq!(find_builtin("select-only").unwrap().name, "select-only");
    let ambiguous = find_builtin("s").unwrap_err().to_string();
    assert!(ambiguous.starts_with(
        "ambiguous builtin name: 2 builtin scripts found for prefix \"s\"\nAvailable builtin scripts:\n      tpcb-like: <builtin: TPC-B (sort of)>\n"
    ));
    assert!(ambiguous.ends_with("select-only: <builtin: select only>\n"));
    assert!(matches!(
        find_builtin("x"),
        Err(ScriptError::UnknownBuiltin { .. })
    ));
    for b in &BUILTINS {
        let mut vars = VarNames::new();
        let script = load_builtin(b, 1, &mut vars).unwrap();
        assert_eq!(script.name, b.description);
        assert!(vars.lookup("scale").is_some());
    }
}

#[test]
fn sleep_lengths_wrap_in_32_bits_as_in_pgbench() {
    let cases = [
        (TimeUnit::Seconds, 1, 1_000_000),
        (TimeUnit::Milliseconds, -3, -3_000),
        (TimeUnit::Microseconds, i32::MAX, 2_147_483_647),
        (TimeUnit::Seconds, 2147, 2_147_000_000),
        (TimeUnit::Seconds, 2148, -2_146_967_296),
        (TimeUnit::Seconds, 4295, 32_704),
        (TimeUnit::Milliseconds, 2_147_484, -2_147_483_296),
    ];
    for (unit, amount, micros) in cases {
        assert_eq!(unit.sleep_micros(amount), micros, "{amount} {unit:?}");
    }
}
