//! Pipelines (`\startpipeline`, `\syncpipeline`, `\endpipeline`) at run
//! time, pgbolt against the real pgbench: which statements reach the
//! server and stay committed, exit statuses and messages, for scripts
//! that run through, fail in the middle of a pipeline or abort with a
//! pipeline open.
//!
//! What the server runs is read from the rows a script leaves behind. A
//! client that aborts with its pipeline open hands its queued statements
//! to the server as it closes, so the server may still be running them
//! when the program exits; rows are read once the database has no other
//! backend left.

use std::time::{Duration, Instant};

use crate::engine_support::*;

/// A fresh database with an empty `t`.
fn database_with_table() -> String {
    let db = database(None);
    sql(&db, "create table t (client int, a text)");
    db
}

/// Waits until no backend but psql's own is connected to `db`, so that
/// what a closed client queued has been run or dropped by the server.
fn settled(db: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let others = format!(
        "select count(*) from pg_stat_activity where datname = '{db}' and pid <> pg_backend_pid()"
    );
    while sql(db, &others) != "0" {
        assert!(Instant::now() < deadline, "backends of {db} never ended");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What one program did: exit status, standard error with the program's
/// name masked where it starts a line, and the rows of `t` (which are then removed).
#[derive(Debug, PartialEq)]
struct Outcome {
    status: Option<i32>,
    messages: String,
    rows: String,
}

fn outcome(db: &str, out: &std::process::Output, program: &str) -> Outcome {
    settled(db);
    let rows = sql(db, "select client, a from t order by 1, 2");
    sql(db, "truncate t");
    Outcome {
        status: out.status.code(),
        messages: stderr(out)
            .lines()
            .map(|l| match l.strip_prefix(program) {
                Some(rest) => format!("PROG{rest}\n"),
                None => format!("{l}\n"),
            })
            .collect(),
        rows,
    }
}

/// Runs `text` with both programs, one after the other on the same
/// database: (pgbolt's outcome, pgbench's).
fn both(db: &str, text: &str, args: &[&str]) -> (Outcome, Outcome) {
    let file = script(text);
    let mut full = vec!["-n", "-f", file.path.as_str()];
    full.extend_from_slice(args);
    let ours = pgbolt(db, &full);
    let ours = outcome(db, &ours, "pgbolt");
    let theirs = pgbench(db, &full);
    let theirs = outcome(db, &theirs, "pgbench");
    (ours, theirs)
}

/// Regression: a client aborted with its pipeline open (the script ends
/// there, a second `\startpipeline`, a meta command that fails, `\gset`)
/// dropped the statements it had queued. pgbench's libpq sends them with
/// its Terminate when the connection is closed, and the server runs them
/// before it ends the session, so a `COMMIT` among them commits.
#[test]
fn a_client_aborted_inside_a_pipeline_still_sends_what_it_queued() {
    let queued = "\\startpipeline\nBEGIN;\nINSERT INTO t VALUES (:client_id, 'kept');\nCOMMIT;\n\
                  INSERT INTO t VALUES (:client_id, 'rolled back');\n";
    let causes = [
        ("", "client 0 aborted: end of script reached with pipeline open"),
        (
            "\\startpipeline\n\\endpipeline\n",
            "client 0 aborted in command 5 (startpipeline) of script 0; already in pipeline mode",
        ),
        (
            "\\set x 1 / 0\n\\endpipeline\n",
            "client 0 aborted in command 5 (set) of script 0; evaluation of meta-command failed",
        ),
        (
            "\\sleep :nosuch\n\\endpipeline\n",
            "client 0 aborted in command 5 (sleep) of script 0; execution of meta-command failed",
        ),
        (
            "SELECT 1 AS one \\gset\n\\endpipeline\n",
            "client 0 aborted in command 5 (gset) of script 0; \\gset is not allowed in pipeline mode",
        ),
    ];
    let db = database_with_table();
    for (cause, message) in causes {
        let text = format!("{queued}{cause}");
        for mode in ["extended", "prepared"] {
            let (ours, theirs) = both(&db, &text, &["-t", "1", "-M", mode]);
            assert_eq!(ours, theirs, "-M {mode}: {text}");
            assert_eq!(ours.status, Some(2), "-M {mode}: {text}");
            assert!(
                ours.messages.contains(message),
                "-M {mode}: {text}: {}",
                ours.messages
            );
            assert_eq!(ours.rows, "0|kept", "-M {mode}: {text}");
        }
    }
}

/// Regression: the statements a client queued after a `\syncpipeline`
/// and before aborting were lost when it closed its connection at once:
/// the server, answering the synchronisation point (or, under `-M
/// prepared`, the pipeline's preparations) on a closed socket, ended the
/// session before reading them. pgbolt keeps the socket open until the
/// server has ended the session, so the first part commits and the rest
/// runs and is rolled back, as pgbench 18 has the server do.
#[test]
fn what_an_aborted_client_queued_after_a_sync_still_runs() {
    let text = "\\startpipeline\nINSERT INTO t VALUES (0, 'synced');\n\\syncpipeline\n\
                INSERT INTO t VALUES (0, 'rolled back');\nINSERT INTO t VALUES (0, 'in pipeline') \\gset\n";
    let db = database_with_table();
    let file = script(text);
    for mode in ["extended", "prepared"] {
        let out = pgbolt(&db, &["-n", "-t", "1", "-M", mode, "-f", &file.path]);
        let ours = outcome(&db, &out, "pgbolt");
        assert_eq!(ours.status, Some(2), "-M {mode}");
        assert!(
            ours.messages
                .contains("\\gset is not allowed in pipeline mode"),
            "-M {mode}: {}",
            ours.messages
        );
        assert_eq!(ours.rows, "0|synced", "-M {mode}");
    }
}

/// Scripts whose pipelines run through or fail in the middle: pgbolt
/// leaves the rows pgbench leaves, with the same exit status and
/// messages, in both protocols that allow pipelines.
#[test]
fn pipeline_scripts_match_pgbench() {
    let row = |v: &str| format!("INSERT INTO t VALUES (:client_id, '{v}');\n");
    let (a, b, c) = (row("a"), row("b"), row("c"));
    let scripts = [
        format!("\\startpipeline\n{a}SELECT 1/0;\n{b}\\endpipeline\n"),
        format!("\\startpipeline\nSELECT 1/0;\n{a}\\endpipeline\n{b}"),
        format!("\\startpipeline\nBEGIN;\n{a}COMMIT;\nSELECT 1/0;\n{b}\\endpipeline\n"),
        format!("\\startpipeline\nBEGIN;\n{a}SELECT 1/0;\n{b}COMMIT;\n\\endpipeline\n"),
        format!("\\startpipeline\nBEGIN;\n{a}ROLLBACK;\n{b}\\endpipeline\n"),
        format!("\\startpipeline\nBEGIN;\n{a}\\endpipeline\n{b}COMMIT;\n"),
        format!("BEGIN;\n\\startpipeline\n{a}\\endpipeline\n{b}COMMIT;\n"),
        format!("BEGIN;\n\\startpipeline\n{a}SELECT 1/0;\n\\endpipeline\nCOMMIT;\n"),
        format!("\\startpipeline\n{a}VACUUM t;\n{b}\\endpipeline\n"),
        format!("\\startpipeline\n{a}SELEC 1;\n{b}\\endpipeline\n"),
        "\\startpipeline\nINSERT INTO t VALUES (1, 'x') \\; INSERT INTO t VALUES (2, 'y');\n\
         \\endpipeline\n"
            .to_owned(),
        format!("\\startpipeline\n\\endpipeline\n\\startpipeline\n{a}\\endpipeline\n{b}"),
        format!(
            "\\set v 5\n\\startpipeline\n\\set v :v + 1\nINSERT INTO t VALUES (:v, 'set');\n\
             \\setshell w echo 42\nINSERT INTO t VALUES (:w, 'setshell');\n\\shell true\n\
             \\sleep 1 ms\n{a}\\endpipeline\n"
        ),
        format!(
            "\\set r 2\n\\startpipeline\n{a}\\if :r = 1\n{b}\\else\n{c}\\endif\n\\endpipeline\n"
        ),
        format!("\\startpipeline\n{a}\\if false\n\\endpipeline\n\\endif\n\\endpipeline\n{b}"),
        format!("\\startpipeline\n{a}\\endpipeline\nSELECT count(*) AS n FROM t \\gset\n{b}"),
        format!("\\startpipeline\nCOPY (SELECT 1) TO STDOUT;\n{a}\\endpipeline\n"),
        format!("{a}\\endpipeline\n"),
    ];
    let db = database_with_table();
    for text in &scripts {
        for mode in ["extended", "prepared"] {
            let (ours, theirs) = both(&db, text, &["-t", "2", "-M", mode]);
            assert_eq!(ours, theirs, "-M {mode}:\n{text}");
        }
    }
}

/// `\syncpipeline` (pgbench 17) splits a pipeline into transactions that
/// the server runs whatever happened before: an error in the first part
/// aborts the client, yet the part after the synchronisation point, sent
/// with `\endpipeline`, runs and commits; an error in the second part
/// leaves the first committed, as with pgbench 18: the client aborts as the
/// error comes back and the server is left to finish what it was sent.
#[test]
fn syncpipeline_parts_commit_on_their_own() {
    let db = database_with_table();
    let cases = [
        (
            "\\startpipeline\nINSERT INTO t VALUES (0, 'a');\nSELECT 1/0;\n\\syncpipeline\n\
             INSERT INTO t VALUES (0, 'b');\n\\endpipeline\n",
            "0|b",
        ),
        (
            "\\startpipeline\nINSERT INTO t VALUES (0, 'a');\n\\syncpipeline\n\
             INSERT INTO t VALUES (0, 'b');\nSELECT 1/0;\n\\endpipeline\n",
            "0|a",
        ),
    ];
    for (text, rows) in cases {
        for mode in ["extended", "prepared"] {
            let (ours, theirs) = both(&db, text, &["-t", "2", "-M", mode]);
            assert_eq!(ours, theirs, "-M {mode}: {text}");
            assert_eq!(ours.status, Some(2), "-M {mode}: {text}");
            // The error is read at the `\endpipeline`, command 5.
            assert!(
                ours.messages
                    .contains("aborted in command 5 query 0: ERROR:  division by zero"),
                "-M {mode}: {}",
                ours.messages
            );
            assert_eq!(ours.rows, rows, "-M {mode}: {text}");
        }
    }
}

/// Under `-M prepared`, pgbench prepares a pipeline's statements up to the
/// first `\endpipeline` after `\startpipeline`; a statement past it that
/// the pipeline runs (the first `\endpipeline` is in a branch not taken)
/// then fails, since libpq refuses to prepare inside a pipeline. pgbolt
/// prepares it with its execution and runs it (docs/compatibility.md).
#[test]
fn a_statement_past_the_first_endpipeline_runs_under_prepared() {
    let text = "\\set r 2\n\\startpipeline\nINSERT INTO t VALUES (0, 'a');\n\\if :r = 1\n\
                INSERT INTO t VALUES (0, 'b');\n\\endpipeline\n\\else\n\
                INSERT INTO t VALUES (0, 'c');\n\\endpipeline\n\\endif\n";
    let db = database_with_table();
    let (ours, theirs) = both(&db, text, &["-t", "1", "-M", "prepared"]);
    assert_eq!(theirs.status, Some(2), "{}", theirs.messages);
    assert!(
        theirs
            .messages
            .contains("synchronous command execution functions are not allowed in pipeline mode")
            && theirs
                .messages
                .contains("ERROR:  prepared statement \"P_2\" does not exist"),
        "{}",
        theirs.messages
    );
    assert_eq!(theirs.rows, "");
    assert_eq!((ours.status, ours.messages.as_str()), (Some(0), ""));
    assert_eq!(ours.rows, "0|a\n0|c");
}

/// The output a pipeline queues before it is sent (pgbench's libpq and
/// pgbolt both flush at 64 KiB).
const PIPELINE_FLUSH: usize = 64 * 1024;

/// Waits until `db` has a client backend besides psql's own.
fn connected(db: &str) {
    until(
        db,
        &format!(
            "select count(*) > 0 from pg_stat_activity where datname = '{db}' \
             and backend_type = 'client backend' and pid <> pg_backend_pid()"
        ),
    );
}

/// Waits until the query `test` answers true in `db`.
fn until(db: &str, test: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while sql(db, test) != "t" {
        assert!(
            Instant::now() < deadline,
            "never true in {db}: {test}\n{}",
            sql(db, "select state, left(query, 40) from pg_stat_activity")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Regression: a run stopped by SIGTERM while a client had statements
/// queued in its pipeline sent them as it closed, so a `COMMIT` among them
/// committed; pgbench, killed by the signal, sends nothing more. The
/// io_uring driver sent a pipeline's statements as they were queued, so
/// the server ran them before the pipeline's end.
#[test]
fn a_run_stopped_by_a_signal_sends_nothing_more_of_a_pipeline() {
    let db = database_with_table();
    // The second pipeline passes the size at which its output is flushed
    // before its end: the server runs BEGIN and the INSERT, never COMMIT.
    let large = "x".repeat(70_000);
    for value in ["queued", large.as_str()] {
        let file = script(&format!(
            "\\startpipeline\nBEGIN;\ninsert into t values (:client_id, '{value}');\nCOMMIT;\n\
             \\sleep 10 s\n\\endpipeline\n"
        ));
        let args = ["-n", "-M", "extended", "-t", "1", "-f", file.path.as_str()];
        let uring = [&args[..], &["--io=uring"]].concat();
        for (name, mut cmd) in [
            ("pgbolt", pgbolt_command(&db, &args)),
            ("pgbolt --io=uring", pgbolt_command(&db, &uring)),
            ("pgbench", pgbench_command(&db, &args)),
        ] {
            if name.ends_with("uring") && !uring_usable(&db) {
                continue;
            }
            let child = cmd
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("program starts");
            connected(&db);
            if value.len() > PIPELINE_FLUSH {
                // Signal once the server has what the flush sent (pgbolt
                // sends BEGIN and the INSERT, pgbench's libpq whole 8 KiB
                // blocks of them).
                until(
                    &db,
                    &format!(
                        "select count(*) > 0 from pg_stat_activity where datname = '{db}' \
                         and pid <> pg_backend_pid() \
                         and (query like 'BEGIN%' or query like 'insert%')"
                    ),
                );
            } else {
                // Nothing shows: the client queues its pipeline as soon as
                // it is connected, and the signal comes while it sleeps.
                std::thread::sleep(Duration::from_millis(500));
            }
            // SAFETY: kill() with the id of a child this test started.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let out = child.wait_with_output().expect("program ends");
            assert!(!out.status.success(), "{name}");
            settled(&db);
            let rows = sql(&db, "select count(*) from t");
            assert_eq!(rows, "0", "{name}, {} bytes", value.len());
        }
    }
}

/// Regression: the connection of a client that aborted with its pipeline
/// open was only read at the end of the run, so a backend sending it a
/// large result blocked on the full socket, kept its row lock, and the
/// other clients of a `-t` run waited on that lock for ever. Its output is
/// now read and dropped as it comes, and the run ends as pgbench's does.
#[test]
fn an_aborted_pipeline_with_a_large_result_does_not_hold_up_the_run() {
    let db = database(Some(1));
    let file = script(
        "\\startpipeline\nBEGIN;\nupdate pgbench_branches set bbalance = bbalance + 1 where bid = 1;\n\
         select * from pgbench_accounts;\nselect 1 as x \\gset\n\\endpipeline\n",
    );
    let weighted = format!("{}@1", file.path);
    let args = [
        "-n",
        "-M",
        "extended",
        "-c",
        "2",
        "-t",
        "20",
        "-b",
        "tpcb-like@1",
        "-f",
        weighted.as_str(),
    ];
    for (name, mut cmd) in [
        ("pgbolt", pgbolt_command(&db, &args)),
        ("pgbench", pgbench_command(&db, &args)),
    ] {
        let mut child = cmd
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("program starts");
        // A hang detector, not a measurement: either run takes well under
        // a second when nothing is stuck.
        let deadline = Instant::now() + Duration::from_secs(120);
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("{name} never ended");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(status.code(), Some(2), "{name}");
        settled(&db);
    }
}
