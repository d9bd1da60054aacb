//! Script errors compared with the real pgbench.
//!
//! pgbench reads and checks every script before it connects, so running it
//! with `PGHOST` pointing at a directory with no server shows exactly what
//! it thinks of a script: a script error (exit 1, before any connection
//! attempt) or, for a valid script, the connection failure. pgbolt's side
//! goes through the same steps with the library: `-f`/`-b` options in
//! order, then the query-mode check. The whole standard error text must be
//! the same, with `pgbolt` for `pgbench`.

use std::path::Path;
use std::process::Command;

use pgbolt::script::{
    find_builtin, list_builtins, load_builtin, load_file, parse_weight, show_builtin, QueryMode,
    ScriptError, VarNames,
};

const PGBENCH: &str = "/usr/lib/postgresql/15/bin/pgbench";

/// Run pgbench on a script option list; its exit code and standard error.
fn pgbench(dir: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(PGBENCH)
        .args(args)
        .args(["-t", "1"])
        .current_dir(dir)
        .env("PGHOST", dir.join("no-server-here"))
        .env_remove("PGPORT")
        .output()
        .expect("run pgbench");
    let stderr = String::from_utf8_lossy(&out.stderr).replace("pgbench: ", "pgbolt: ");
    (out.status.code().unwrap_or(-1), stderr)
}

/// pgbolt's handling of the same options, `None` when every script is fine.
fn pgbolt(args: &[&str]) -> Option<String> {
    let run = || -> Result<(), ScriptError> {
        let mut vars = VarNames::new();
        let mut scripts = Vec::new();
        let mut mode = QueryMode::Simple;
        for pair in args.chunks(2) {
            match pair {
                ["-f", option] => {
                    let (path, weight) = parse_weight(option)?;
                    scripts.push(load_file(path, weight, &mut vars)?);
                }
                ["-b", option] => {
                    let (name, weight) = parse_weight(option)?;
                    scripts.push(load_builtin(find_builtin(name)?, weight, &mut vars)?);
                }
                ["-M", "extended"] => mode = QueryMode::Extended,
                other => panic!("unexpected test arguments {other:?}"),
            }
        }
        for script in &scripts {
            script.check_query_mode(mode)?;
        }
        Ok(())
    };
    run().err().map(|e| format!("{e}\n"))
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
    "\\set x 1\n\\set y\n",
    "\\set x 1.5e99999\n",
    "\\set x ab\\\n(1)\n",
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
    let (code, expected) = pgbench(dir, &args);
    let got = pgbolt(&args);
    let script_error = !expected.contains("no-server-here");
    if script_error != rejected {
        return Err(format!(
            "{label}: not a test case, pgbench said\n{expected}"
        ));
    }
    match (script_error, got) {
        (true, Some(got)) if got == expected && code == 1 => Ok(()),
        (false, None) => Ok(()),
        (_, got) => Err(format!(
            "{label}: pgbench (exit {code}) said\n{expected}\npgbolt said\n{}\n",
            got.unwrap_or_else(|| "nothing: script accepted".into())
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
    ];
    let mut failures = Vec::new();
    for (args, rejected) in cases {
        if let Err(e) = compare(dir.path(), args, *rejected, &args.join(" ")) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn builtin_listing_and_show_script_match_pgbench() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(PGBENCH)
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
    assert_eq!(expected, format!("{}\n", show_builtin("nope").unwrap_err()));
}

/// `\syncpipeline` came with PostgreSQL 17; the pgbench 15 used as the
/// oracle does not know it, pgbolt follows pgbench 18.
#[test]
fn syncpipeline_follows_pgbench_18() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("\\syncpipeline\n", None),
        (
            "\\syncpipeline a b\n",
            Some("unexpected argument in command \"syncpipeline\"\n\\syncpipeline a b\n"),
        ),
    ];
    for (i, (text, ours)) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("p{i}.sql"));
        std::fs::write(&path, text).unwrap();
        let path = path.to_str().unwrap();
        let (code, theirs) = pgbench(dir.path(), &["-f", path]);
        assert_eq!(code, 1);
        assert!(theirs.contains("invalid command in command \"syncpipeline\""));
        let ours = ours.map(|m| format!("pgbolt: error: {path}:1: {m}"));
        assert_eq!(pgbolt(&["-f", path]), ours, "{text:?}");
    }
}
