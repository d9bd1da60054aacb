//! Valid scripts split into the same commands as pgbench splits them.
//!
//! pgbench's per-command report (`-r`) prints each command's short text in
//! script order, so running a script once against a throwaway server shows
//! how pgbench split it. pgbolt's parser must find the same commands with
//! the same text.

use pgbolt::expr::vars::VarNames;
use pgbolt::script::parse_script;

use crate::common::Run;

/// Scripts that run without error and stress the splitter.
const SCRIPTS: &[&str] = &[
    "select 1 -- c\n;/* only */\n\\set x 1 \\\n + 2\nselect 'a;b' as a\\; select $$x;$$ as b \\gset\n",
    "  \n-- leading comment\n\n   select\n  2 ;  select 3;select 4\n\\sleep 0\n",
    "select E'it\\'s;' as e, 'a''b;' as f, \"char\" 'x' as g;\nselect 'multi'\n  'line;' as m;\n",
    "/* a /* nested; */ still; */ select 5;\n",
    "\\if 1 = 1\nselect 6;\n\\elif 0\nselect 7;\n\\else\nselect 8;\n\\endif\n",
    "create or replace function pgbolt_t() returns int language sql\nbegin atomic select 1; select 2; end;\nselect pgbolt_t();\ndrop function pgbolt_t();\n",
    "select :{?x} as q, ':y' as r, 1::int as s, $q$ \\ ; $q$ as t;\n",
    "select 1 as one \\gset p_\nselect :p_one + 1;\n",
    "select 1 /* x */ \\; -- y\nselect 2;\n",
    "SELECT 1\n\\SET x 2\n",
    "select 1 \\sleep 0 ms\n\\shell true\n\\setshell v echo 5\nselect :v;\n",
];

/// The command texts of pgbench's `-r` report for one run of `path`.
fn pgbench_commands(path: &std::path::Path) -> Vec<String> {
    let path_arg = path.display().to_string();
    let out = Run::new("postgres", &["-n", "-r", "-t", "1", "-f", &path_arg]).pgbench();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "pgbench failed on {path:?}:\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = stdout
        .split_once("statement latencies in milliseconds and failures:\n")
        .expect("a per-command report")
        .1;
    let start = regex::Regex::new(r"^ +-?\d+\.\d{3} +\d+ (.*)$").unwrap();
    let mut commands: Vec<String> = Vec::new();
    for line in report.lines() {
        match (start.captures(line), commands.last_mut()) {
            (Some(c), _) => commands.push(c[1].to_owned()),
            (None, Some(last)) => {
                last.push('\n');
                last.push_str(line);
            }
            (None, None) => panic!("unexpected report line {line:?}"),
        }
    }
    commands
}

#[test]
fn commands_are_split_as_pgbench_splits_them() {
    let dir = tempfile::tempdir().unwrap();
    for (i, text) in SCRIPTS.iter().enumerate() {
        let path = dir.path().join(format!("c{i}.sql"));
        std::fs::write(&path, text).unwrap();
        let expected = pgbench_commands(&path);
        let script = parse_script("c.sql", text, 1, &mut VarNames::new()).unwrap();
        let got: Vec<&str> = script
            .commands
            .iter()
            .map(|c| c.first_line.as_str())
            .collect();
        assert_eq!(got, expected, "{text:?}");
    }
}
