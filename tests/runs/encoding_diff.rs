//! Bytes that are not UTF-8, with the real pgbench as the oracle: script
//! file names (Linux paths are bytes) and values read by `\gset` from a
//! database in another encoding, as they reach the shell and the messages
//! pgbench prints. Output is compared as bytes, since a lossy conversion
//! would make U+FFFD and the byte it replaced look alike.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::{Command, Output};

use crate::engine_support::*;

/// A program's exit status and standard error.
type Outcome = (Option<i32>, Vec<u8>);

/// Exit status and standard error as bytes, the program's name replaced.
fn outcome(out: &Output, program: &[u8]) -> Outcome {
    let mut err = Vec::new();
    let mut rest = out.stderr.as_slice();
    while let Some(at) = rest.windows(program.len()).position(|w| w == program) {
        err.extend_from_slice(&rest[..at]);
        err.extend_from_slice(b"PROG");
        rest = &rest[at + program.len()..];
    }
    err.extend_from_slice(rest);
    (out.status.code(), err)
}

/// Runs `args` (which may hold any bytes) with both programs against `db`
/// and returns (pgbolt's, pgbench's) status and standard error.
fn both_bytes(db: &str, args: &[&OsStr]) -> (Outcome, Outcome) {
    let run = |mut cmd: Command| cmd.args(args).output().expect("program runs");
    let ours = run(pgbolt_command(db, &[]));
    let theirs = run(pgbench_command(db, &[]));
    (outcome(&ours, b"pgbolt"), outcome(&theirs, b"pgbench"))
}

fn shown(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

/// Regression: a script file whose name is not UTF-8 (`caf\xe9.sql`) was
/// looked up under its name with U+FFFD in place of the byte, so pgbolt
/// reported `could not open file` where pgbench runs it.
#[test]
fn script_files_are_opened_by_the_bytes_of_their_names() {
    let db = database(None);
    sql(&db, "create table t (m text, v text)");
    let dir = tempfile::tempdir().expect("temp dir");
    let name = OsStr::from_bytes(b"caf\xe9.sql");
    let path = dir.path().join(name);
    std::fs::write(&path, "insert into t values ('f', :client_id);\n").expect("write");
    let mut weighted = path.clone().into_os_string();
    weighted.push("@3");
    for spec in [path.as_os_str(), weighted.as_os_str()] {
        let args = [OsStr::new("-n"), OsStr::new("-t1"), OsStr::new("-f"), spec];
        let ((our_code, ours), (their_code, theirs)) = both_bytes(&db, &args);
        assert_eq!(our_code, Some(0), "{}", shown(&ours));
        assert_eq!(their_code, Some(0), "{}", shown(&theirs));
    }
    assert_eq!(
        sql(&db, "select m, v, count(*) from t group by 1, 2"),
        "f|0|4"
    );
}

/// Regression: a `\shell` or `\setshell` argument taken from a variable
/// whose value is not UTF-8 (read by `\gset` from a `LATIN1` database)
/// reached the shell as an empty word; pgbench passes the bytes on.
#[test]
fn shell_commands_get_the_bytes_of_variables() {
    let db = database_in("LATIN1");
    let read = "select convert_from('\\xe9ff', 'LATIN1') as v \\gset\n";
    let dir = tempfile::tempdir().expect("temp dir");
    let scripts = [
        // The output is quoted in the error as it came.
        format!("{read}\\setshell x printf '%s' :v\n"),
        format!("{read}\\setshell x echo :v\n"),
        // The shell's own message names the bytes it could not run.
        format!("{read}\\shell :v\n"),
        format!("{read}\\setshell x :v\n"),
        // What `\shell` wrote lands in the table below.
        format!(
            "{read}\\shell printf '%s' :v > {}/out\n",
            dir.path().display()
        ),
    ];
    for text in &scripts {
        let file = script(text);
        let args = ["-n", "-t1", "-f", &file.path].map(OsStr::new);
        let (ours, theirs) = both_bytes(&db, &args);
        assert_eq!(shown(&ours.1), shown(&theirs.1), "{text}");
        assert_eq!(ours.0, theirs.0, "{text}");
    }
    let out = std::fs::read(dir.path().join("out")).expect("\\shell wrote");
    assert_eq!(out, b"\xe9\xff");
}

/// Regression: a value that is not UTF-8 quoted in an error (`malformed
/// variable`, `invalid sleep time`) was shown with U+FFFD for each bad
/// byte; pgbench writes the value's bytes as they are.
#[test]
fn errors_quote_variable_values_as_bytes() {
    let scripts = [
        "\\set x debug(:v)\n",
        "\\set x :v + 1\n",
        "\\if :v\n\\endif\n",
        "\\if false\n\\elif :v\n\\endif\n",
        "\\sleep :v\n",
        "\\sleep :v us\n",
    ];
    for encoding in ["LATIN1", "SQL_ASCII"] {
        let db = database_in(encoding);
        let read = format!("select convert_from('\\x74e9ff', '{encoding}') as v \\gset\n");
        for text in scripts {
            let file = script(&format!("{read}{text}"));
            for mode in ["simple", "extended", "prepared"] {
                let args = ["-n", "-t1", "-M", mode, "-f", &file.path].map(OsStr::new);
                let (ours, theirs) = both_bytes(&db, &args);
                let label = format!("{encoding} -M {mode}: {text}");
                assert_eq!(shown(&ours.1), shown(&theirs.1), "{label}");
                assert_eq!(ours.0, Some(2), "{label}");
                assert_eq!(theirs.0, Some(2), "{label}");
                assert!(ours.1.windows(3).any(|w| w == b"t\xe9\xff"), "{label}");
            }
        }
    }
}

/// Regression: `PGDATABASE` naming a database whose name is not UTF-8 (one
/// created in a `SQL_ASCII` database) was ignored, so `pgbolt -i`
/// initialized the default database instead; pgbench initializes the one
/// named. pgbolt cannot send such a name and now fails, naming it.
#[test]
fn a_database_name_that_is_not_utf8_is_not_replaced_by_the_default() {
    let ascii = database_in("SQL_ASCII");
    let name = [ascii.as_bytes(), b"_\xe9"].concat();
    let mut create = server().command("psql");
    create.env("PGDATABASE", &ascii).args(["-X", "-q", "-c"]);
    let mut statement = b"create database \"".to_vec();
    statement.extend_from_slice(&name);
    statement.push(b'"');
    let created = create
        .arg(OsStr::from_bytes(&statement))
        .output()
        .expect("psql");
    assert!(created.status.success(), "{}", stderr(&created));
    let init = |mut cmd: Command| {
        cmd.env("PGDATABASE", OsStr::from_bytes(&name))
            .args(["-i", "-q", "-s", "1"])
            .output()
            .expect("program runs")
    };
    let theirs = init(pgbench_command(&ascii, &[]));
    assert!(theirs.status.success(), "{}", stderr(&theirs));
    let ours = init(pgbolt_command(&ascii, &[]));
    assert_eq!(ours.status.code(), Some(1), "{}", stderr(&ours));
    let shown = String::from_utf8_lossy(&name);
    assert!(
        stderr(&ours).contains(&format!("database \"{shown}\" does not exist")),
        "{}",
        stderr(&ours)
    );
    let tables = "select count(*) from pg_class where relname like 'pgbench%'";
    assert_eq!(server().psql(tables).expect("psql").trim(), "0");
}

/// Regression: notices the server sends while a session starts were
/// dropped; pgbench's libpq prints them, one per connection. A long
/// `application_name` in a multi-byte encoding is one: the server
/// truncates it on a character boundary and says so.
#[test]
fn notices_sent_as_a_session_starts_are_shown() {
    let db = database(Some(1));
    let file = script("select 1;\n");
    let name = "日本語".repeat(30);
    let runs: [&[&str]; 4] = [
        &["-n", "-c", "3", "-t", "1", "-f", &file.path],
        &["-n", "-c", "2", "-C", "-t", "2", "-f", &file.path],
        &["-c", "2", "-t", "1", "-S"],
        &["-i", "-q", "-s", "1"],
    ];
    for args in runs {
        let run = |mut cmd: Command| {
            cmd.env("PGAPPNAME", &name)
                .args(args)
                .output()
                .expect("program runs")
        };
        // pgbolt's `-i` opens more connections than pgbench's one; only
        // the first prints what the server said as it started.
        let jobs: &[&str] = if args[0] == "-i" {
            &["--init-jobs=4"]
        } else {
            &[]
        };
        let (ours, theirs) = (
            run(pgbolt_command(&db, jobs)),
            run(pgbench_command(&db, &[])),
        );
        let notices = |out: &Output| {
            stderr(out)
                .lines()
                .filter(|l| l.starts_with("NOTICE:  "))
                .map(|l| format!("{l}\n"))
                .collect::<String>()
        };
        let label = args.join(" ");
        assert_eq!(ours.status.code(), Some(0), "{label}: {}", stderr(&ours));
        assert_eq!(notices(&ours), notices(&theirs), "{label}");
        let first = notices(&theirs).lines().next().map(str::to_owned);
        let truncated = format!("will be truncated to \"{}\"", "日本語".repeat(7));
        assert!(first.is_some_and(|l| l.ends_with(&truncated)), "{label}");
    }
}

/// Regression: the `LINE n:` excerpt of a failed statement was measured
/// in UTF-8 whatever the session's client encoding, so under `LATIN1`
/// or `SQL_ASCII` (one byte per character) the caret stood too far left or
/// the excerpt was left out, and under `EUC_JP` or `GB18030` the caret
/// was off too. libpq measures characters and screen columns in the
/// client encoding.
#[test]
fn error_excerpts_are_measured_in_the_client_encoding() {
    let db = database(None);
    let statements = [
        "select 'é', 1 +;\n",
        "select '日本', 1 +;\n",
        "select\t'日',\t1 +;\n",
        "select 'e\u{301}e\u{301}', 1 +;\n",
        "select '한국어', 1 +;\n",
        "select 'ＡＢ', 1 +;\n",
        "select '😀', 1 +;\n",
        "select 'ü'\n, 'ä' +\n;\n",
    ];
    for text in statements {
        let file = script(text);
        for encoding in ["UTF8", "LATIN1", "SQL_ASCII", "EUC_JP", "GB18030", "SJIS"] {
            for mode in ["simple", "extended"] {
                let args = ["-n", "-t1", "-M", mode, "-f", &file.path];
                let run = |mut cmd: Command| {
                    cmd.env("PGCLIENTENCODING", encoding)
                        .args(args)
                        .output()
                        .expect("program runs")
                };
                let ours = outcome(&run(pgbolt_command(&db, &[])), b"pgbolt");
                let theirs = outcome(&run(pgbench_command(&db, &[])), b"pgbench");
                let label = format!("{encoding} -M {mode}: {text}");
                assert_eq!(shown(&ours.1), shown(&theirs.1), "{label}");
                assert_eq!(ours.0, Some(2), "{label}");
            }
        }
    }
}

/// Regression: in `-M simple` the excerpt was measured on the statement
/// with U+FFFD in place of each byte that is not UTF-8 (three bytes, so
/// three characters in a `LATIN1` session), which moved the window and the
/// caret. The bytes themselves are still shown as U+FFFD (documented), so
/// both sides show each such character as `?` here.
#[test]
fn a_simple_query_excerpt_is_measured_on_the_bytes_sent() {
    let db = database_in("LATIN1");
    let file = script("select ':v', 1 +;\n");
    let mut value = b"v=".to_vec();
    value.extend([0xe9; 40]);
    let masked = |err: &[u8]| {
        let text = shown(err).replace("\\xef\\xbf\\xbd", "?");
        text.replace("\\xe9", "?")
    };
    let mut seen = Vec::new();
    for program in [pgbolt_command, pgbench_command] {
        let out = program(&db, &["-n", "-t1", "-M", "simple", "-f", &file.path])
            .arg("-D")
            .arg(OsStr::from_bytes(&value))
            .output()
            .expect("program runs");
        let (code, err) = outcome(
            &out,
            if seen.is_empty() {
                b"pgbolt"
            } else {
                b"pgbench"
            },
        );
        seen.push((code, masked(&err)));
    }
    assert_eq!(seen[0], seen[1]);
    assert!(
        seen[0].1.contains(", 1 +;"),
        "the whole line: {}",
        seen[0].1
    );
}

/// Regression: a `-D` value that is not UTF-8 got U+FFFD for its bad
/// bytes, so a `LATIN1` database stored other characters than with
/// pgbench, which substitutes and binds the bytes given.
#[test]
fn define_values_keep_their_bytes() {
    let db = database_in("LATIN1");
    // Inside quotes `:x` is replaced in simple mode only (pgbench makes a
    // `$1` of it otherwise, which the server takes for text).
    let runs = [
        ("insert into t values ('text', ':x');\n", "simple"),
        ("insert into t values ('param', :x);\n", "extended"),
        ("insert into t values ('param', :x);\n", "prepared"),
    ];
    let mut rows = Vec::new();
    for (program, binary) in [
        ("pgbolt", pgbolt_command as fn(&str, &[&str]) -> Command),
        ("pgbench", pgbench_command),
    ] {
        for (text, mode) in runs {
            let file = script(text);
            let mut cmd = binary(&db, &["-n", "-t1", "-M", mode, "-f", &file.path]);
            let out = cmd
                .arg("-D")
                .arg(OsStr::from_bytes(b"x=caf\xe9\xff"))
                .output()
                .expect("program runs");
            assert!(
                out.status.success(),
                "{program} -M {mode}: {}",
                stderr(&out)
            );
        }
        rows.push(sql(
            &db,
            "select m, encode(textsend(v), 'hex'), count(*) from t group by 1, 2 order by 1",
        ));
        sql(&db, "truncate t");
    }
    assert_eq!(rows[0], rows[1]);
    assert_eq!(rows[0], "param|636166e9ff|2\ntext|636166e9ff|1");
}

/// Regression: a `--log-prefix` that is not UTF-8 named the log files
/// with U+FFFD in place of its bad bytes; pgbench uses the bytes given.
#[test]
fn log_files_are_named_with_the_bytes_of_the_prefix() {
    let db = database(None);
    let file = script("select 1;\n");
    let mut names = Vec::new();
    for command in [pgbolt_command, pgbench_command] {
        let dir = tempfile::tempdir().expect("temp dir");
        let out = command(&db, &["-n", "-t1", "-c2", "-j2", "-l", "-f", &file.path])
            .arg("--log-prefix")
            .arg(OsStr::from_bytes(b"caf\xe9"))
            .current_dir(dir.path())
            .output()
            .expect("program runs");
        assert!(out.status.success(), "{}", stderr(&out));
        let mut found: Vec<String> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|entry| {
                let name = entry.expect("entry").file_name();
                let bytes = name.as_bytes();
                // The process id between the prefix and the thread number
                // differs.
                let dot = bytes.iter().position(|&b| b == b'.').unwrap_or(bytes.len());
                let thread = bytes[dot..].iter().skip(1).position(|&b| b == b'.');
                let tail = thread.map_or(&b""[..], |at| &bytes[dot + 1 + at..]);
                format!("{}.PID{}", shown(&bytes[..dot]), shown(tail))
            })
            .collect();
        found.sort();
        names.push(found);
    }
    assert_eq!(names[0], names[1]);
    assert_eq!(names[0], ["caf\\xe9.PID", "caf\\xe9.PID.1"]);
}
