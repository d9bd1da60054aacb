//! A server that is not an ordinary idle primary, pgbolt against the real
//! pgbench: a hot standby, sessions that are read-only or serializable by
//! default, statement and idle timeouts that end the backend. Exit codes,
//! report lines and messages are compared with durations masked.

use crate::serverstate_support::*;
use pgbolt::tempdb::TempDb;

/// Environment variables given to both programs.
type Env<'a> = &'a [(&'a str, &'a str)];

/// One command line and its environment.
type Case<'a> = (&'a [&'a str], Env<'a>);

/// Compares both programs on each case; `FILE` in an argument stands for
/// `file`'s path.
fn same_as_pgbench(target: &Target, file: &ScriptFile, cases: &[Case<'_>]) {
    compare(target, file, cases, false);
}

/// [`same_as_pgbench`], and when `uring`, pgbolt's io_uring driver too
/// (unless the kernel forbids io_uring here).
fn compare(target: &Target, file: &ScriptFile, cases: &[Case<'_>], uring: bool) {
    for (args, env) in cases {
        let mut args: Vec<&str> = args
            .iter()
            .map(|a| if *a == "FILE" { file.path.as_str() } else { a })
            .collect();
        let sorted = args.windows(2).any(|w| w[0] == "-c" && w[1] != "1");
        let [pgbench, pgbolt] = both(target, &args, env, sorted);
        assert_eq!(pgbolt, pgbench, "{args:?} {env:?}: pgbolt against pgbench");
        if uring {
            args.push("--io=uring");
            let ring = ours(target, &args, env, sorted);
            let forbidden = ring.code == Some(1)
                && ring
                    .stderr
                    .iter()
                    .any(|l| l.contains("io_uring cannot be used here"));
            if !forbidden {
                assert_eq!(ring, pgbench, "{args:?} {env:?}: pgbolt against pgbench");
            }
        }
    }
}

/// A throwaway primary with pgbench's tables at scale 1 in a database of
/// its own, its hot standby, and where that database is on the standby.
fn primary_and_standby() -> (TempDb, Standby, Target) {
    let primary = TempDb::builder().start().expect("primary starts");
    let dbname = bench_database(&primary, &[]);
    let standby = Standby::of(&primary);
    let target = Target::on_standby(&standby, primary.superuser(), &dbname);
    assert_eq!(target.psql("SELECT pg_is_in_recovery()"), "t");
    (primary, standby, target)
}

const SERIALIZABLE: Env<'static> =
    &[("PGOPTIONS", "-c default_transaction_isolation=serializable")];

/// On a hot standby reads run, writes and the vacuum before the run fail
/// with the server's words, and `-i` stops at its first statement.
///
/// Regression: with serializable transactions by default, which a standby
/// refuses, pgbolt's own check of the connection limit failed and stopped
/// the run with its own message (exit 1) where pgbench fails on the
/// branch count, or runs and aborts its clients (exit 2).
#[test]
fn a_hot_standby_is_benchmarked_as_pgbench_benchmarks_it() {
    let (_primary, _standby, target) = primary_and_standby();
    let one = script_file("one.sql", "SELECT 1;\n");
    let cases: &[Case<'_>] = &[
        (&["-S", "-t", "5"], &[]),
        (
            &["-S", "-c", "3", "-j", "3", "-t", "5", "-M", "prepared"],
            &[],
        ),
        (&["-S", "-t", "3", "-C", "-v"], &[]),
        (&["-t", "3"], &[]),
        (&["-t", "2", "-c", "2", "-v", "-M", "extended"], &[]),
        (&["-N", "-t", "2", "--max-tries=3", "-r"], &[]),
        (
            &["-n", "-b", "simple-update", "-t", "2", "-M", "prepared"],
            &[],
        ),
        (&["-i"], &[]),
        (&["-i", "-I", "v"], &[]),
        (&["-t", "2"], SERIALIZABLE),
        (&["-n", "-f", "FILE", "-t", "2"], SERIALIZABLE),
        (&["-f", "FILE", "-t", "2"], SERIALIZABLE),
        (&["-n", "-f", "FILE", "-t", "2"], &[]),
    ];
    same_as_pgbench(&target, &one, cases);
}

/// Read-only by default, or a statement timeout shorter than a query:
/// the same aborts, counts and exit codes as pgbench. The timeout leaves
/// `BEGIN` and `SELECT 1` room on a loaded machine (50 ms did not always),
/// and the sleep is five times longer still.
#[test]
fn read_only_sessions_and_statement_timeouts_are_met_as_pgbench_meets_them() {
    let db = server();
    let dbname = bench_database(db, &[]);
    let target = Target::on(db, &dbname);
    let slow = script_file("slow.sql", "BEGIN;\nSELECT 1;\nSELECT pg_sleep(1);\nEND;\n");
    let read_only: Env<'_> = &[("PGOPTIONS", "-c default_transaction_read_only=on")];
    let timeout: Env<'_> = &[("PGOPTIONS", "-c statement_timeout=200")];
    let cases: &[Case<'_>] = &[
        (&["-t", "3"], read_only),
        (&["-S", "-t", "3", "-M", "prepared"], read_only),
        (&["-i", "-I", "dtg"], read_only),
        (&["-n", "-f", "FILE", "-t", "2"], timeout),
        (
            &[
                "-n",
                "-f",
                "FILE",
                "-t",
                "2",
                "-M",
                "prepared",
                "--max-tries=3",
            ],
            timeout,
        ),
        (&["-n", "-f", "FILE", "-t", "2", "-c", "2", "-C"], timeout),
    ];
    same_as_pgbench(&target, &slow, cases);
}

/// A backend the server ends while its client sleeps (an idle or idle
/// in transaction session timeout shorter than the script's `\sleep`):
/// the client aborts at its next statement, in each query mode. The
/// timeouts (300 ms) leave a loaded machine room between two statements
/// that are not meant to time out, and the `\sleep` (1 s) room for the
/// timeout to fire.
///
/// Regression: under `-M prepared`, a statement whose Parse went out to
/// the closed connection was reported as failing with the server's
/// FATAL; pgbench prepares it first, logs the FATAL and libpq's lines
/// about the closed connection, and aborts on `SQL command send failed`.
/// The same for the statements a pipeline prepares as it starts (the
/// others get `no connection to the server`).
///
/// Regression: with `--io=uring`, a send that found the connection closed
/// ended the client at once, so the server's FATAL was never read and the
/// client aborted with `perhaps the backend died while processing`.
#[test]
fn a_backend_ended_while_its_client_sleeps_is_reported_as_pgbench_reports_it() {
    let db = server();
    let dbname = new_database(db);
    let target = Target::on(db, &dbname);
    let in_transaction = script_file(
        "in_transaction.sql",
        "BEGIN;\nSELECT 1;\n\\sleep 1 s\nSELECT 2;\nEND;\n",
    );
    let between = script_file("between.sql", "\\sleep 1 s\nSELECT 1;\n");
    let pipeline = script_file(
        "pipeline.sql",
        "\\sleep 1 s\n\\startpipeline\nSELECT 1;\nSELECT 2;\n\\endpipeline\n",
    );
    let idle_in_transaction: Env<'_> =
        &[("PGOPTIONS", "-c idle_in_transaction_session_timeout=300")];
    let idle: Env<'_> = &[("PGOPTIONS", "-c idle_session_timeout=300")];
    for mode in ["simple", "extended", "prepared"] {
        let cases: &[Case<'_>] = &[(
            &["-n", "-f", "FILE", "-t", "2", "-M", mode],
            idle_in_transaction,
        )];
        compare(&target, &in_transaction, cases, true);
        let cases: &[Case<'_>] = &[
            (&["-n", "-f", "FILE", "-t", "2", "-M", mode], idle),
            (
                &["-n", "-f", "FILE", "-t", "2", "-c", "2", "-M", mode],
                idle,
            ),
        ];
        compare(&target, &between, cases, true);
        let cases: &[Case<'_>] = &[(&["-n", "-f", "FILE", "-t", "2", "-M", mode], idle)];
        compare(&target, &pipeline, cases, true);
    }
}

/// The same over TCP, under `-M prepared`: a Send to a connection whose
/// backend has ended succeeds there (the peer answers it with a reset),
/// so only the end of the stream, seen while the client slept, tells that
/// the statement went out to a closed connection.
///
/// Regression: with `--io=uring` over TCP, the statement still to be
/// prepared was reported as failing with the server's FATAL (`aborted in
/// command 1 query 0`), and a pipeline's with `perhaps the backend died
/// while processing`; the driver did not watch for the end of the stream
/// while the client was idle, as the epoll loop does.
#[test]
fn a_backend_ended_while_its_client_sleeps_is_reported_as_pgbench_reports_it_over_tcp() {
    let db = TempDb::builder().tcp(true).start().expect("server starts");
    let dbname = new_database(&db);
    let addr = db.tcp_addr().expect("listens on TCP");
    let target = Target {
        host: addr.ip().to_string().into(),
        ..Target::on(&db, &dbname)
    };
    let between = script_file("between.sql", "\\sleep 1 s\nSELECT 1;\n");
    let pipeline = script_file(
        "pipeline.sql",
        "\\sleep 1 s\n\\startpipeline\nSELECT 1;\nSELECT 2;\n\\endpipeline\n",
    );
    let idle: Env<'_> = &[("PGOPTIONS", "-c idle_session_timeout=300")];
    let cases: &[Case<'_>] = &[
        (&["-n", "-f", "FILE", "-t", "2", "-M", "prepared"], idle),
        (
            &["-n", "-f", "FILE", "-t", "2", "-c", "2", "-M", "prepared"],
            idle,
        ),
    ];
    compare(&target, &between, cases, true);
    let cases: &[Case<'_>] = &[(&["-n", "-f", "FILE", "-t", "2", "-M", "prepared"], idle)];
    compare(&target, &pipeline, cases, true);
}

/// A standby cancels what stands in the way of replaying the primary's
/// changes: here a query holding a lock on `pgbench_tellers` that the
/// primary takes exclusively. A running query gets an ERROR with SQLSTATE
/// 40001, which both programs count as a serialization failure and retry
/// under `--max-tries`.
///
/// A session idle in a transaction gets a FATAL error with the same
/// SQLSTATE and loses its connection. pgbench 15 to 18 take it for a
/// serialization failure, then find the connection gone (`perhaps the
/// backend died while processing`, `client N aborted while receiving the
/// transaction status`); pgbolt, as pgbench 19 does, aborts the client
/// with the server's message (docs/compatibility.md). Under `-M prepared`
/// the next statement's preparation meets the FATAL first, in both.
#[test]
fn a_recovery_conflict_is_retried_or_aborts_the_client() {
    let (primary, _standby, target) = primary_and_standby();
    let conflict = |name: &str, state: &str| {
        wait_until(
            &target,
            &format!(
                "SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = '{name}' \
                 AND state = '{state}' AND query LIKE 'SELECT%pgbench_tellers%'"
            ),
        );
        primary
            .psql_in(
                &target.dbname,
                "BEGIN; LOCK TABLE pgbench_tellers IN ACCESS EXCLUSIVE MODE; COMMIT;",
            )
            .expect("lock on the primary");
    };
    let running = script_file(
        "running.sql",
        "SELECT pg_sleep(3) FROM pgbench_tellers LIMIT 1;\n",
    );
    // Without retries one transaction of two fails: a run where every
    // transaction failed reports differently in pgbench 15 and 18.
    for (tries, transactions, mode) in [
        ("--max-tries=1", "2", "simple"),
        ("--max-tries=3", "1", "simple"),
        ("--max-tries=3", "1", "extended"),
        ("--max-tries=3", "1", "prepared"),
    ] {
        let args = [
            "-n",
            "-f",
            &running.path,
            "-t",
            transactions,
            tries,
            "--verbose-errors",
            "-M",
            mode,
        ];
        let [pgbench, pgbolt] = both_during(&target, &args, |name| conflict(name, "active"));
        assert_eq!(pgbolt, pgbench, "{args:?}: pgbolt against pgbench");
        assert!(
            pgbolt.stderr.iter().any(|l| {
                l
                == "PROG: client 0 got an error in command 0 (SQL) of script 0; ERROR:  canceling \
                    statement due to conflict with recovery"
            }),
            "{pgbolt:?}"
        );
    }
    let idle = script_file(
        "idle.sql",
        "BEGIN;\nSELECT count(*) FROM pgbench_tellers;\n\\sleep 3 s\nSELECT 1;\nEND;\n",
    );
    for mode in ["simple", "extended", "prepared"] {
        let args = [
            "-n",
            "-f",
            &idle.path,
            "-t",
            "1",
            "--max-tries=3",
            "-M",
            mode,
        ];
        let [pgbench, pgbolt] =
            both_during(&target, &args, |name| conflict(name, "idle in transaction"));
        for seen in [&pgbench, &pgbolt] {
            assert_eq!(seen.code, Some(2), "{seen:?}");
            assert!(seen
                .stdout
                .contains(&"number of transactions actually processed: 0/1".to_owned()));
        }
        if mode == "prepared" {
            // The next statement's preparation meets the FATAL first,
            // with pgbench as with pgbolt.
            assert_eq!(pgbolt, pgbench, "{args:?}: pgbolt against pgbench");
            continue;
        }
        assert!(
            pgbench.stderr.contains(
                &"PROG: error: client 0 aborted while receiving the transaction status".to_owned()
            ),
            "{pgbench:?}"
        );
        assert!(
        pgbolt.stderr.contains(
            &"PROG: error: client 0 script 0 aborted in command 3 query 0: FATAL:  terminating \
              connection due to conflict with recovery"
                .to_owned()
        ),
        "{pgbolt:?}"
    );
    }
}
