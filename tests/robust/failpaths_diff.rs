//! Failure paths of the run's I/O, pgbolt against the real pgbench where
//! pgbench gets through them: a backend that ends while its client is in
//! the middle of sending a statement, the end of a run or Ctrl-C at that
//! moment, and output that cannot be written. Both I/O drivers (epoll and,
//! where the kernel allows it, io_uring) go through each case.
//!
//! A client is caught in the middle of a send without any timing: after a
//! marker statement its script waits (`\shell`) for a file the test
//! creates once it has stopped (SIGSTOP) the backend, idle after the
//! marker; the next statement is far larger than a socket's buffer, so
//! the client fills the socket and waits to send the rest, which the test
//! sees in the backend's receive queue.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::failpaths_support::*;
use pgbolt::tempdb::TempDb;

/// Size of the large statement: several times a Unix socket's buffer.
const LARGE: usize = 1 << 20;

/// The same arguments for pgbench and for pgbolt with each driver, with
/// the application name each shows in `pg_stat_activity`.
fn programs(db: &TempDb, dbname: &str, args: &[&str]) -> Vec<(&'static str, String, Command)> {
    let mut runs = vec![("pgbench", "pgbench".to_owned(), pgbench(db, dbname, args))];
    for driver in drivers(db, dbname) {
        let mut cmd = pgbolt(db, dbname, args);
        cmd.arg(driver);
        runs.push(("pgbolt", format!("pgbolt {driver}"), cmd));
    }
    runs
}

/// What one run showed: the program (and driver), the exit status and
/// masked standard error, and the report's count line.
struct Seen {
    name: String,
    outcome: (Option<i32>, Vec<String>),
    processed: Option<String>,
}

/// How a backend ends while its client sends the large statement.
#[derive(Clone, Copy)]
enum Ending {
    /// `pg_terminate_backend`, with the client frozen until the backend
    /// is gone: the client then finds the server's FATAL and the end of
    /// the connection together in its socket.
    TerminatedWhileFrozen,
    /// SIGKILL: the connection ends without a word.
    Killed,
}

/// Runs each program with `args`, ends the backend of its first client
/// to run the marker as `ending` says, and returns what each showed: the
/// exit status, the standard error (masked) and the report's count line.
fn outcomes(db: &TempDb, dbname: &str, args: &[&str], dir: &Path, ending: Ending) -> Vec<Seen> {
    let mut seen = Vec::new();
    for (application, name, cmd) in programs(db, dbname, args) {
        hold(dir);
        let run = spawn(cmd);
        let stopped = Stopped::backend(db, dbname, application, dir);
        let pid = stopped.pid;
        match ending {
            Ending::TerminatedWhileFrozen => {
                signal(run.pid, libc::SIGSTOP);
                db.psql(&format!("SELECT pg_terminate_backend({pid})"))
                    .unwrap();
                drop(stopped);
                wait_gone(pid);
                signal(run.pid, libc::SIGCONT);
            }
            Ending::Killed => {
                signal(pid, libc::SIGKILL);
                drop(stopped);
            }
        }
        let done = run.wait(Duration::from_secs(60));
        let report =
            line(&done.stdout(), "number of transactions actually processed").map(str::to_owned);
        seen.push(Seen {
            name,
            outcome: masked_outcome(&done),
            processed: report,
        });
        if matches!(ending, Ending::Killed) {
            wait_restarted(db);
        }
    }
    seen
}

/// Asserts that every pgbolt run showed what pgbench showed, and that
/// pgbench showed `expected` on standard error with exit status 2.
fn assert_all_as_pgbench(seen: &[Seen], expected: &[&str], case: &str) {
    let pgbench = &seen[0];
    let (code, lines) = &pgbench.outcome;
    assert_eq!(*code, Some(2), "pgbench, {case}: {lines:?}");
    assert_eq!(lines, expected, "pgbench, {case}");
    for run in &seen[1..] {
        assert_eq!(run.outcome, pgbench.outcome, "{}, {case}", run.name);
        assert_eq!(run.processed, pgbench.processed, "{}, {case}", run.name);
    }
}

/// A backend terminated while its client is in the middle of sending a
/// large statement, with the server's FATAL in the client's socket by the
/// time the client finds the connection closed: the send's failure is
/// left to the reads that follow, which show that FATAL, as libpq does.
/// One client of three is hit and the others finish their transactions;
/// with each driver, with the simple and extended protocols and in a
/// pipeline (whose `\endpipeline` reads the FATAL).
#[test]
fn backend_terminated_during_a_large_send_shows_its_fatal_as_pgbench() {
    let db = server();
    let dbname = database(db, false);
    let dir = tempfile::tempdir().unwrap();
    let large = large_statement_script(dir.path(), LARGE, false);
    let piped = large_statement_script(dir.path(), LARGE, true);
    for (clients, mode, script, command) in [
        ("1", "simple", &large, 2),
        ("3", "simple", &large, 2),
        ("3", "extended", &large, 2),
        ("3", "extended", &piped, 5),
    ] {
        let args = [
            "-n", "-t", "2", "-c", clients, "-j", "1", "-M", mode, "-f", script,
        ];
        let seen = outcomes(
            db,
            &dbname,
            &args,
            dir.path(),
            Ending::TerminatedWhileFrozen,
        );
        let abort = format!(
            "error: client N script 0 aborted in command {command} query 0: FATAL:  \
             terminating connection due to administrator command"
        );
        assert_all_as_pgbench(
            &seen,
            &[
                abort.as_str(),
                "error: Run was aborted; the above results are incomplete.",
            ],
            &format!("-c {clients} -M {mode} -f {script}"),
        );
    }
}

/// Regression: a backend that died without a word (SIGKILL) while its
/// client was in the middle of sending a large statement made pgbolt say
/// `perhaps the backend died while processing`, as for a statement sent
/// whole. pgbench's send fails there, and with it the client: `SQL
/// command send failed`, or in a pipeline `failed to send a pipeline
/// sync` at its end.
#[test]
fn backend_killed_during_a_large_send_fails_the_send_as_in_pgbench() {
    let db = own_server();
    let dbname = database(&db, false);
    let dir = tempfile::tempdir().unwrap();
    let large = large_statement_script(dir.path(), LARGE, false);
    let piped = large_statement_script(dir.path(), LARGE, true);
    let cases = [
        (
            "simple",
            &large,
            "error: client N aborted in command 2 (SQL) of script 0; SQL command send failed",
        ),
        (
            "extended",
            &large,
            "error: client N aborted in command 2 (SQL) of script 0; SQL command send failed",
        ),
        (
            "extended",
            &piped,
            "error: client N aborted in command 5 (endpipeline) of script 0; failed to send a \
             pipeline sync",
        ),
    ];
    for (mode, script, abort) in cases {
        let args = ["-n", "-t", "2", "-c", "1", "-M", mode, "-f", script];
        let seen = outcomes(&db, &dbname, &args, dir.path(), Ending::Killed);
        assert_all_as_pgbench(
            &seen,
            &[
                abort,
                "error: Run was aborted; the above results are incomplete.",
            ],
            &format!("-M {mode} -f {script}"),
        );
    }
}

/// A backend message: tag, length, body.
fn backend_message(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![tag];
    m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    m.extend_from_slice(body);
    m
}

/// Regression: a connection closed while the socket held the start of a
/// message (a large statement sent in part, at the end of a run) wrote
/// Terminate right behind that start. The server took Terminate's bytes
/// for the rest of the statement; had fewer than five bytes been missing,
/// they would have completed it (the statement run with a garbled end)
/// and the rest of Terminate been read as a new message (`invalid
/// frontend message type`). Now the stream ends inside the message, which
/// the server reports as `incomplete message from client`.
///
/// A fake server on a Unix socket answers the startup and reads nothing
/// until the client's write of a large query has stopped on a full
/// socket; it then takes what the socket holds (room for a Terminate,
/// had one been written) and reads the rest only after the client has
/// closed.
#[test]
fn a_connection_closed_inside_a_message_sends_nothing_after_it() {
    use std::io::{Read, Write};
    use std::os::unix::net::UnixListener;
    use std::sync::mpsc;

    let dir = tempfile::tempdir().unwrap();
    let listener = UnixListener::bind(dir.path().join(".s.PGSQL.5432")).unwrap();
    let (room_made, wait_room) = mpsc::channel();
    let (socket_full, wait_full) = mpsc::channel();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut len = [0u8; 4];
        stream.read_exact(&mut len).unwrap();
        let mut startup = vec![0u8; u32::from_be_bytes(len) as usize - 4];
        stream.read_exact(&mut startup).unwrap();
        let handshake = [
            backend_message(b'R', &0u32.to_be_bytes()),
            backend_message(b'S', b"client_encoding\0UTF8\0"),
            backend_message(b'K', &[0, 0, 0, 1, 0, 0, 0, 2]),
            backend_message(b'Z', b"I"),
        ]
        .concat();
        stream.write_all(&handshake).unwrap();
        wait_full.recv().unwrap();
        let mut first = vec![0u8; 256 * 1024];
        let taken = stream.read(&mut first).unwrap();
        first.truncate(taken);
        room_made.send(()).unwrap();
        let mut rest = Vec::new();
        stream.read_to_end(&mut rest).unwrap();
        first.extend_from_slice(&rest);
        first
    });
    let options = pgwire::conninfo::parse(&format!(
        "host={} port=5432 user=u dbname=d connect_timeout=10",
        dir.path().display()
    ))
    .unwrap();
    let config = pgwire::conninfo::resolve(&options, &pgwire::conninfo::Env::empty("u")).unwrap();
    let connector = pgwire::Connector::new(&config).unwrap();
    let mut connecting = connector.connect();
    let mut conn = loop {
        match connecting.poll().unwrap() {
            pgwire::ConnectProgress::Ready(conn) => break conn,
            pgwire::ConnectProgress::Wait { .. } | pgwire::ConnectProgress::Busy => {
                std::thread::sleep(Duration::from_millis(1))
            }
        }
    };
    let sql = format!("SELECT '{}'", "x".repeat(8 << 20));
    conn.query(&sql).unwrap();
    assert!(!conn.flush().unwrap(), "the socket took the whole query");
    socket_full.send(()).unwrap();
    wait_room.recv().unwrap();
    conn.close();
    let received = server.join().unwrap();
    let mut query = vec![b'Q'];
    query.extend_from_slice(&(sql.len() as u32 + 5).to_be_bytes());
    query.extend_from_slice(sql.as_bytes());
    query.push(0);
    assert!(received.len() < query.len());
    assert!(
        query.starts_with(&received),
        "the stream goes on past the part of the query: {:?}",
        String::from_utf8_lossy(&received[received.len().saturating_sub(8)..])
    );
}

/// The end of a `-T` run and Ctrl-C, each while a client is in the middle
/// of sending a large statement to a backend that does not read: the run
/// ends (the end of `-T` after its grace period), the report is printed
/// with the usual exit status, and the server, once it reads again, finds
/// the stream ending inside that statement (`incomplete message from
/// client`). The socket stays full here, so nothing could follow the
/// statement anyway: what is written after a message sent in part is
/// `a_connection_closed_inside_a_message_sends_nothing_after_it`'s. pgbench
/// has nothing to compare here: it waits in its blocking send for as long
/// as the backend does not read.
#[test]
fn end_of_run_and_ctrl_c_during_a_large_send_end_the_run_cleanly() {
    let db = server();
    let dbname = database(db, false);
    let dir = tempfile::tempdir().unwrap();
    let script = large_statement_script(dir.path(), LARGE, false);
    for driver in drivers(db, &dbname) {
        for (duration, ctrl_c) in [("2", false), ("600", true)] {
            let from = server_log_len(db);
            let args = [
                "-n", "-c", "2", "-j", "1", "-T", duration, "-f", &script, driver,
            ];
            hold(dir.path());
            let run = spawn(pgbolt(db, &dbname, &args));
            let stopped = Stopped::backend(db, &dbname, "pgbolt", dir.path());
            if ctrl_c {
                run.signal(libc::SIGINT);
            }
            let done = run.wait(Duration::from_secs(60));
            let (out, err) = (done.stdout(), done.stderr());
            let case = format!("{driver}, Ctrl-C: {ctrl_c}");
            if ctrl_c {
                assert_eq!(done.code(), Some(130), "{case}: {err}");
                assert!(err.contains("Run was interrupted"), "{case}: {err}");
            } else {
                assert_eq!(done.code(), Some(2), "{case}: {err}");
                assert!(
                    err.contains("1 of the clients were still in a transaction 5 s after the end"),
                    "{case}: {err}"
                );
            }
            assert!(
                line(&out, "number of transactions actually processed: ").is_some(),
                "{case}: {out}"
            );
            let pid = stopped.pid;
            drop(stopped);
            wait_gone(pid);
            let log = server_log_since(db, from);
            assert!(
                log.contains("incomplete message from client"),
                "{case}: {log}"
            );
            assert!(!log.contains("invalid frontend message"), "{case}: {log}");
            assert!(!log.contains("invalid message length"), "{case}: {log}");
        }
    }
}

/// Standard output and standard error closed (`>&- 2>&-`): the run goes
/// on to its end with its usual exit status and writes its transaction
/// log in full, with either driver, and nothing of its output reaches the
/// server. (pgbench's first connection takes the free descriptor 1 or 2,
/// and its report or messages go into that connection: the server ends
/// it with `invalid frontend message type`.)
#[test]
fn closed_standard_output_and_error_do_not_disturb_the_run() {
    use std::os::unix::process::CommandExt;

    let db = server();
    let dbname = database(db, true);
    for driver in drivers(db, &dbname) {
        let from = server_log_len(db);
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("closed");
        let prefix = format!("--log-prefix={}", prefix.display());
        let mut cmd = pgbolt(
            db,
            &dbname,
            &["-n", "-S", "-t", "5", "-c", "2", "-l", &prefix, driver],
        );
        // SAFETY: close(2) is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                libc::close(1);
                libc::close(2);
                Ok(())
            });
        }
        let status = cmd.status().expect("pgbolt runs");
        assert_eq!(status.code(), Some(0), "{driver}");
        assert_eq!(log_lines(dir.path(), "closed").len(), 10, "{driver}");
        let log = server_log_since(db, from);
        assert!(!log.contains("invalid frontend message"), "{driver}: {log}");
    }
}

/// Regression: a backend terminated after writing its answer (an error
/// that aborts the client, then ReadyForQuery) but before its client read
/// it, so that the client reads the answer and the server's FATAL
/// together. pgbench shows that FATAL, before the abort line: it drains
/// the connection with `PQgetResult` first, and libpq parses what it
/// already holds. pgbolt showed only the abort line. After a COPY, which
/// pgbench reports as it starts, the FATAL follows the abort line; so it
/// does in a pipeline whose failing query is its last, and in one where
/// another query follows, pgbench's drain stops before it.
///
/// The client is caught between its send and its read without timing: its
/// statement waits for an advisory lock the test holds; the test freezes
/// the client, releases the lock, waits until the backend has answered,
/// terminates it and thaws the client.
#[test]
fn a_fatal_behind_the_error_that_aborts_the_client_is_shown_as_by_pgbench() {
    let db = server();
    let dbname = database(db, false);
    let dir = tempfile::tempdir().unwrap();
    let locked = "(SELECT pg_advisory_lock_shared(4242)) AS locked";
    let failing = script_file(
        dir.path(),
        "failing.sql",
        &format!("SELECT 1 / (count(*) - 1) FROM {locked};\n"),
    );
    let copy = script_file(
        dir.path(),
        "copy.sql",
        &format!("COPY (SELECT 1 FROM {locked}) TO STDOUT;\n"),
    );
    let piped_last = script_file(
        dir.path(),
        "piped-last.sql",
        &format!("\\startpipeline\nSELECT 1 / (count(*) - 1) FROM {locked};\n\\endpipeline\n"),
    );
    let piped_before = script_file(
        dir.path(),
        "piped-before.sql",
        &format!(
            "\\startpipeline\nSELECT 1 / (count(*) - 1) FROM {locked};\nSELECT 2;\n\\endpipeline\n"
        ),
    );
    let options = pgwire::conninfo::parse(&format!("{} dbname={dbname}", db.conninfo())).unwrap();
    let env = pgwire::conninfo::Env::empty(db.superuser());
    let config = pgwire::conninfo::resolve(&options, &env).unwrap();
    let mut holder = pgwire::blocking::Client::connect(&config).unwrap();
    let fatal = "FATAL:  terminating connection due to administrator command";
    let division = "ERROR:  division by zero";
    let at_first = format!("error: client N script 0 aborted in command 0 query 0: {division}");
    let at_end = |command: u32| {
        format!("error: client N script 0 aborted in command {command} query 0: {division}")
    };
    let (at_2, at_3) = (at_end(2), at_end(3));
    let copying = "error: COPY is not supported in pgbench, aborting";
    let cases: [(&str, &String, Vec<&str>); 8] = [
        ("simple", &failing, vec![fatal, &at_first]),
        ("extended", &failing, vec![fatal, &at_first]),
        ("prepared", &failing, vec![fatal, &at_first]),
        // pgbench reports a COPY as it starts, before it drains the
        // connection.
        ("simple", &copy, vec![copying, fatal]),
        ("extended", &copy, vec![copying, fatal]),
        ("prepared", &copy, vec![copying, fatal]),
        // In a pipeline the abort line comes first, and pgbench's drain
        // stops at the end of the next query's results.
        ("extended", &piped_last, vec![&at_2, fatal]),
        ("extended", &piped_before, vec![&at_3]),
    ];
    for (mode, script, mut expected) in cases {
        expected.push("error: Run was aborted; the above results are incomplete.");
        let args = ["-n", "-t", "1", "-M", mode, "-f", script];
        let mut seen = Vec::new();
        // io_uring's receive, armed before the client was frozen, may
        // complete while it is stopped, taking the answer without the FATAL
        // that follows it: with that driver, what one read holds is not
        // the test's to decide.
        let programs = programs(db, &dbname, &args)
            .into_iter()
            .filter(|(_, name, _)| !name.ends_with("--io=uring"));
        for (application, name, cmd) in programs {
            holder
                .simple_query("SELECT pg_advisory_lock(4242)")
                .unwrap();
            let run = spawn(cmd);
            let pid = backend_in(db, &dbname, application, "wait_event_type = 'Lock'");
            signal(run.pid, libc::SIGSTOP);
            holder
                .simple_query("SELECT pg_advisory_unlock(4242)")
                .unwrap();
            backend_in(
                db,
                &dbname,
                application,
                &format!("pid = {pid} AND state = 'idle'"),
            );
            db.psql(&format!("SELECT pg_terminate_backend({pid})"))
                .unwrap();
            wait_gone(pid);
            signal(run.pid, libc::SIGCONT);
            let done = run.wait(Duration::from_secs(60));
            seen.push(Seen {
                name,
                outcome: masked_outcome(&done),
                processed: None,
            });
        }
        assert_all_as_pgbench(&seen, &expected, &format!("-M {mode} -f {script}"));
    }
}

/// Writes `body` to the file `name` in `dir` and returns its path.
fn script_file(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    path.display().to_string()
}

/// The pid of the backend of `application` in `dbname` once
/// `pg_stat_activity` shows it as `condition` says.
fn backend_in(db: &TempDb, dbname: &str, application: &str, condition: &str) -> i32 {
    let sql = format!(
        "SELECT pid FROM pg_stat_activity WHERE datname = '{dbname}' \
         AND application_name = '{application}' AND {condition}"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(pid) = db.psql(&sql).unwrap_or_default().trim().parse::<i32>() {
            return pid;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{application} never showed {condition}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
