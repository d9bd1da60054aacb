//! Script errors compared with the real pgbench.
//!
//! pgbench reads and checks every script before it connects, so running it
//! with `PGHOST` pointing at a directory with no server shows exactly what
//! it thinks of a script: a script error (exit 1, before any connection
//! attempt) or, for a valid script, the connection failure. pgbolt runs
//! the same way: a rejected script must give the same exit status and the
//! whole same standard error text (with `pgbolt` for `pgbench`), an accepted
//! one must get as far as the connection attempt.

use std::path::Path;
use std::process::Command;

use pgbolt::script::{list_builtins, show_builtin, MAX_SCRIPTS};

use crate::common::pgbench_path;

fn pgbolt_exe() -> &'static str {
    env!("CARGO_BIN_EXE_pgbolt")
}

/// Runs `program` on a script option list with no server to reach; its
/// exit code and standard error, the program's name replaced by `pgbolt`.
fn run(program: &str, name: &str, dir: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(program)
        .args(args)
        .args(["-t", "1"])
        .current_dir(dir)
        .env("PGHOST", dir.join("no-server-here"))
        .env_remove("PGPORT")
        .output()
        .expect("run the program");
    let stderr = String::from_utf8_lossy(&out.stderr).replace(&format!("{name}: "), "pgbolt: ");
    (out.status.code().unwrap_or(-1), stderr)
}

/// Scripts pgbench rejects, each run as `-f s.sql`.
const BAD_SCRIPTS: &[&str] = &[
    "\\foo\n",
    "\\foo bar baz\n",
    "select 1;\n\n\\nosuch 1 2 3\n",
    "\\set\n",
    "\\set x\n",
    "\\set x",
    "\\set x 1 +\n",
    "\\set x 1 + * 2\n",
    "\\set x (1\n",
    "\\set x (1\r\n",
    "\\set x 1 2\n",
    "\\set x 1, 2\n",
    "\\set x foo(1)\n",
    "\\set x random(1)\n",
    "\\set x 99999999999999999999\n",
    "\\set x :\n",
    "\\set x @ #\n",
    "\\set x 1 \\\n + @\n",
    "select 1;\n  \\set x 1 + \\\n\\\n *\n",
    "\\set x 1 -- comment\n",
    "\\set x debug(1\n",
    "\\set x abs()\n",
    "\\set x 1 +",
    "\\SET x 1 +\n",
    "\\if\n",
    "\\elif\n",
    "\\if 1 +\n\\endif\n",
    "\\sleep\n",
    "\\sleep 10 xx\n",
    "\\sleep abc\n",
    "\\sleep 1 ms extra\n",
    "\\sleep 10ms ms\n",
    "\\sleep :x foo\n",
    "\\sleep 5 MINUTES\n",
    "\\sleep +x\n",
    "\\sleep 1 \\\n minutes\n",
    "\\setshell\n",
    "\\setshell x\n",
    "\\shell\n",
    "\\startpipeline x\n",
    "\\endpipeline 1\n",
    "\\else x\n",
    "\\endif x\n",
    "\\gset a b\n",
    "\\aset a b\n",
    "\\gset\n",
    "\\aset\n",
    "select 1 \\gset\n\\gset\n",
    "\\set x 1\n\\gset\n",
    "\\else\n",
    "\\elif 1\n",
    "\\endif\n",
    "select 1;\n\\endif\n",
    "\\if 1\n",
    "\\if 1\n\\else\n\\else\n\\endif\n",
    "\\if 1\n\\else\n\\elif 2\n\\endif\n",
    "\\if 1\n\\if 2\n\\endif\n",
    "\\if 1\nselect 1;\n\\elif 2\n\\endif\n\\endif\n",
    "",
    "-- only a comment\n\n",
    "\\\n",
    "   \n\t\n",
    "select 1,\n 2;\n\n-- c\n\\set x )\n",
    "select 'a\n\\set x (\n'; \\set y )\n",
    "select $$\n\\bad\n$$;\n\\bad2\n",
    "select $q$ $$ \\bad $q$; \\worse\n",
    "/* \\bad */ \\worse\n",
    "/* /* \\bad */ \\bad */ \\worse\n",
    "select \"\\bad\"; select E'\\\\'; \\worse\n",
    "select 1 -- \\bad\n; \\worse\n",
    "select 1\\; \\worse\n",
    "select 'a'\n'\\bad';\n\\worse\n",
    "select E'\\'\\bad'; \\worse\n",
    "select U&'\\bad'; \\worse\n",
    "select X'\\bad'; \\worse\n",
    "select $a$ $b$ \\bad $a$; \\worse\n",
    "select $1 \\bad\n",
    "select a$b$ \\bad\n",
    "select :'x' \\bad\n",
    "select -- x \\bad\n\\worse\n",
    "select /* x */ \\bad\n",
    "select \"a\"\"\\bad\" \\worse\n",
    "create function f() begin atomic select 1; \\bad\n",
    "select 'a' -- c\n 'b\\bad' \\worse\n",
    "select (\n;\n\\bad\n",
    "\\set x 1\n\\set y\n",
    "\\set x 1.5e99999\n",
    "\\set x ab\\\n(1)\n",
    // A backslash before `\r\n` continues a meta command too.
    "\\set x 1 \\\r\n + @\r\n",
    "\\set x 1 \\\r\n + \r\nselect 1;\n",
    "\\set x 1 \\\r\n + 1 \\\r\n @\r\nselect 1;\n",
    "\\set x 1 \\\r\r\n + 1\n",
    "\\sleep 1 \\\r\n xs\r\n",
    // pgbench parses the file as a C string: a NUL byte ends it.
    "\\set x debug(5\0)\n",
    "\0select 1;\n",
];

/// Scripts pgbench accepts (it then fails to connect).
const GOOD_SCRIPTS: &[&str] = &[
    "select 1;",
    "select 'unterminated\n",
    "/* only a comment */\n",
    "select 1 \\gset\n",
    "select 1\\; select 2 \\aset p_\n",
    "\\set x 1 \\\n + 2\n",
    "\\sleep 10ms\n\\sleep :x us\n\\sleep -1\n",
    "\\if :x\n\\elif 1\n\\else\n\\endif\n",
    "\\setshell v echo 1 ::a :b\n\\shell true\n",
    "\\startpipeline\nselect 1;\n\\endpipeline\n",
    "\\set 1x 5\n",
    "create function f() returns int begin atomic select 1; end;\n",
    "\\set x 1 \\\r\n + 1\r\n",
    "\\set \\\r\nx \\\r\n1\n\\if 1 \\\r\n = 1\n\\endif\n",
    "\\sleep 1 \\\r\n ms\n\\setshell x echo 5 \\\r\n 6\n",
    "select 1;\n\0\\bad\n",
    "select 1\0 \\bad\n",
];

/// Compare pgbench and pgbolt on `args`, where `-f` values are relative
/// to `dir`; `rejected` says whether pgbench must reject the scripts.
fn compare(dir: &Path, args: &[&str], rejected: bool, label: &str) -> Result<(), String> {
    let mut full = Vec::new();
    for pair in args.chunks(2) {
        full.push(pair[0].to_owned());
        full.push(match pair[0] {
            "-f" => format!("{}/{}", dir.display(), pair[1]),
            _ => pair[1].to_owned(),
        });
    }
    let args: Vec<&str> = full.iter().map(String::as_str).collect();
    let (code, expected) = run(pgbench_path(), "pgbench", dir, &args);
    let (our_code, got) = run(pgbolt_exe(), "pgbolt", dir, &args);
    let script_error = !expected.contains("no-server-here");
    if script_error != rejected {
        return Err(format!(
            "{label}: not a test case, pgbench said\n{expected}"
        ));
    }
    let accepted = got.contains("no-server-here");
    match script_error {
        true if got == expected && (code, our_code) == (1, 1) => Ok(()),
        false if accepted => Ok(()),
        _ => Err(format!(
            "{label}: pgbench (exit {code}) said\n{expected}\npgbolt (exit {our_code}) said\n{got}\n"
        )),
    }
}

#[test]
fn script_files_fail_as_in_pgbench() {
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let bad = BAD_SCRIPTS.iter().map(|text| (text, true));
    let scripts = bad.chain(GOOD_SCRIPTS.iter().map(|text| (text, false)));
    for (i, (text, rejected)) in scripts.enumerate() {
        let name = format!("s{i}.sql");
        std::fs::write(dir.path().join(&name), text).unwrap();
        if let Err(e) = compare(dir.path(), &["-f", &name], rejected, &format!("{text:?}")) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn options_fail_as_in_pgbench() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ok.sql"), "select 1;\n").unwrap();
    let many: Vec<String> = (0..256).map(|i| format!(":v{i}")).collect();
    std::fs::write(
        dir.path().join("many.sql"),
        format!("select {};\n", many.join(", ")),
    )
    .unwrap();
    let shell: Vec<String> = (0..300).map(|i| format!("a{i}")).collect();
    std::fs::write(
        dir.path().join("shell.sql"),
        format!("\\shell {}\n", shell.join(" ")),
    )
    .unwrap();
    let cases: &[(&[&str], bool)] = &[
        (&["-f", "missing.sql"], true),
        (&["-f", "ok.sql@x"], true),
        (&["-f", "ok.sql@"], true),
        (&["-f", "ok.sql@-1"], true),
        (&["-f", "ok.sql@99999999999"], true),
        (&["-f", "ok.sql@99999999999999999999"], true),
        (&["-f", "ok.sql@1x"], true),
        (&["-f", "ok.sql@3"], false),
        (&["-f", "ok.sql@ +3"], false),
        (&["-b", "nope"], true),
        (&["-b", "s"], true),
        (&["-b", "select@x"], true),
        (
            &["-b", "tpcb@2", "-b", "simple@1", "-b", "select-only@0"],
            false,
        ),
        (&["-M", "extended", "-f", "many.sql"], true),
        (&["-f", "many.sql"], false),
        (&["-f", "shell.sql"], true),
        (&["-f", "ok.sql", "-f", "missing.sql"], true),
        (&["-b", "select@0"], true),
        (&["-b", "select@0", "-f", "ok.sql@0"], true),
        (&["-b", "select@0", "-f", "ok.sql@1"], false),
        (&["-D", "x"], true),
        (&["-D", "=1"], true),
        (&["-D", "x="], true),
        (&["-D", "1x=2"], true),
        (&["-D", "a b=1"], true),
        (&["-D", "é=1"], false),
        (&["-D", "x=1=2"], false),
        (&["-D", "scale=7", "-f", "ok.sql"], false),
    ];
    let many_builtins: Vec<&str> = ["-b", "select"].repeat(MAX_SCRIPTS);
    let too_many: Vec<&str> = ["-b", "select"].repeat(MAX_SCRIPTS + 1);
    let cases = cases
        .iter()
        .copied()
        .chain([(&many_builtins[..], false), (&too_many[..], true)]);
    let mut failures = Vec::new();
    for (args, rejected) in cases {
        if let Err(e) = compare(dir.path(), args, rejected, &args.join(" ")) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn builtin_listing_and_show_script_match_pgbench() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(pgbench_path())
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).replace("pgbench: ", "pgbolt: "),
        )
    };
    assert_eq!(run(&["-b", "list"]), (Some(0), list_builtins()));
    for name in ["tpcb-like", "simple", "select-only", "t"] {
        let expected = run(&[&format!("--show-script={name}")]);
        assert_eq!(expected, (Some(0), show_builtin(name).unwrap()), "{name}");
    }
    let (code, expected) = run(&["--show-script=nope"]);
    assert_eq!(code, Some(1));
    assert_eq!(
        expected,
        format!("pgbolt: error: {}\n", show_builtin("nope").unwrap_err())
    );
}

/// `\syncpipeline` came with PostgreSQL 17: pgbolt reads it as pgbench 18
/// does.
#[test]
fn syncpipeline_as_pgbench_18() {
    let dir = tempfile::tempdir().unwrap();
    for (text, rejected) in [("\\syncpipeline\n", false), ("\\syncpipeline a b\n", true)] {
        std::fs::write(dir.path().join("p.sql"), text).unwrap();
        compare(dir.path(), &["-f", "p.sql"], rejected, text).unwrap();
    }
}
