//! What differed between pgbolt and pgbench when both were pointed at
//! servers of other versions (13, 15, 17 and 18; see "Server versions" in
//! docs/compatibility.md): the order of set-up notices (on the default
//! PostgreSQL 18), and on the machine's PostgreSQL 15 the wording of the
//! preflight on a server without `pg_use_reserved_connections` and a
//! server hanging up in the middle of a direct TLS handshake. Also the
//! preflight's wording to a superuser.

use crate::common;

use std::process::Output;

use crate::common::{bench_database, messages, new_database, server, stderr, Program, Run};
use pgbolt::tempdb::TempDb;

/// Runs pgbench, then pgbolt, with the same arguments, on `db` with `env`
/// on top of its own `PG*` settings: (pgbench's output, pgbolt's).
fn both(db: &TempDb, args: &[&str], env: &[(&str, &str)]) -> (Output, Output) {
    let run = env
        .iter()
        .fold(Run::on(db, "postgres", args), |run, (name, value)| {
            run.env(name, value)
        });
    (run.pgbench(), run.pgbolt())
}

/// A server before 16 has no `pg_use_reserved_connections`: the preflight
/// names superusers alone. pgbench connects its clients until the server
/// refuses one; both stop with exit status 1.
#[test]
fn preflight_on_a_server_without_role_reserved_slots() {
    let db = common::builder15()
        .max_connections(10)
        .start()
        .expect("small server starts");
    db.psql("CREATE ROLE plain LOGIN; CREATE DATABASE plain_db OWNER plain")
        .expect("role");
    let env = [("PGUSER", "plain")];
    let script = common::script_file("one.sql", "select 1;\n");
    let args = ["-n", "-f", script.path.as_str(), "-c", "9", "plain_db"];
    let (pgbench, pgbolt) = both(&db, &args, &env);
    assert_eq!(pgbench.status.code(), Some(1), "{}", stderr(&pgbench));
    assert!(
        stderr(&pgbench).contains("remaining connection slots are reserved"),
        "{}",
        stderr(&pgbench)
    );
    assert_eq!(pgbolt.status.code(), Some(1), "{}", stderr(&pgbolt));
    // pgbench's backends may still be ending, so the number in use is
    // not checked.
    assert!(
        stderr(&pgbolt).starts_with(
            "pgbolt: error: the server cannot accept 9 more connections: max_connections \
             is 10, 3 are reserved for superusers, and "
        ),
        "{}",
        stderr(&pgbolt)
    );
}

/// Regression: a superuser was told `0 are reserved for superusers` when
/// `superuser_reserved_connections` is 3; the slots are open to it, and
/// the preflight now says so.
#[test]
fn preflight_to_a_superuser() {
    let out = Run::on(server(), "postgres", &["-S", "-t", "1", "-c", "500"]).pgbolt();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.starts_with(
            "pgbolt: error: the server cannot accept 500 more connections: max_connections \
             is 100, none of which are reserved against a superuser, and "
        ),
        "{err}"
    );
}

/// Notices drawn by the queries before the vacuum (`client_min_messages`
/// at `log` shows each statement) come as they arrive, before
/// `starting vacuum...`, as pgbench shows them; those of pgbolt's own
/// preflight queries are not shown at all. The seed makes both programs
/// send the same account ids, so every line is the same.
#[test]
fn set_up_notices_come_in_pgbench_order() {
    let db = bench_database(server(), &[]);
    let env = [("PGOPTIONS", "-c client_min_messages=log")];
    for extra in [&[][..], &["-v"], &["-n"], &["-N", "-M", "prepared"]] {
        let mut args = vec!["-t", "2", "--random-seed=5", &db];
        args.extend_from_slice(extra);
        let (pgbench, pgbolt) = both(server(), &args, &env);
        assert_eq!(pgbench.status.code(), Some(0), "{}", stderr(&pgbench));
        assert_eq!(pgbolt.status.code(), Some(0), "{}", stderr(&pgbolt));
        let ours = messages(&pgbolt, Program::Pgbolt);
        assert_eq!(ours, messages(&pgbench, Program::Pgbench), "{args:?}");
        assert!(!ours.contains("pg_backend_pid"), "{ours}");
    }
}

/// The same when the table look-up fails: its notices come before the
/// error.
#[test]
fn notices_come_before_a_missing_table_error() {
    let db = new_database(server());
    let env = [("PGOPTIONS", "-c client_min_messages=log")];
    let (pgbench, pgbolt) = both(server(), &["-S", "-t", "1", &db], &env);
    assert_eq!(pgbench.status.code(), Some(1), "{}", stderr(&pgbench));
    assert_eq!(pgbolt.status.code(), Some(1), "{}", stderr(&pgbolt));
    let theirs = messages(&pgbench, Program::Pgbench);
    let notice = "LOG:  statement: select count(*) from pgbench_branches\n";
    let error = "PROG: error: could not count number of branches";
    assert!(
        theirs.find(notice) < theirs.find(error) && theirs.contains(error),
        "{theirs}"
    );
    assert_eq!(messages(&pgbolt, Program::Pgbolt), theirs);
}

/// `sslnegotiation=direct` against a server before 17 (the machine's
/// PostgreSQL 15): the server reads the TLS hello as a startup packet and
/// hangs up; libpq 18 reports OpenSSL's words for the end of the stream.
#[test]
fn a_server_hanging_up_during_a_direct_handshake() {
    let db = common::server15();
    let port = db.port().to_string();
    let env = [("PGSSLMODE", "require"), ("PGSSLNEGOTIATION", "direct")];
    let args = ["-S", "-t", "1", "-h", "127.0.0.1", "-p", &port];
    let (pgbench, pgbolt) = both(db, &args, &env);
    assert_eq!(pgbolt.status.code(), Some(1), "{}", stderr(&pgbolt));
    assert_eq!(pgbolt.status.code(), pgbench.status.code());
    assert_eq!(
        messages(&pgbolt, Program::Pgbolt),
        messages(&pgbench, Program::Pgbench)
    );
    assert_eq!(
        stderr(&pgbolt),
        format!(
            "pgbolt: error: connection to server at \"127.0.0.1\", port {port} failed: \
             SSL error: unexpected eof while reading\n\
             pgbolt: error: could not create connection for setup\n"
        )
    );
}

/// `--exit-on-abort` (pgbench 17): pgbench 17 and 18, against every
/// server version, report the first client of the thread that aborts and
/// no other, since the thread leaves its loop over the clients there.
/// Four clients of one thread that all fail at once used to report one
/// to four aborts.
#[test]
fn exit_on_abort_reports_one_aborted_client_per_thread() {
    let script = common::script_file("zero.sql", "select 1/0;\n");
    let args = [
        "-n",
        "-f",
        &script.path,
        "-t",
        "3",
        "-c",
        "4",
        "--exit-on-abort",
    ];
    for _ in 0..5 {
        let (pgbench, pgbolt) = both(server(), &args, &[]);
        assert_eq!(pgbolt.status.code(), Some(2), "{}", stderr(&pgbolt));
        assert_eq!(pgbench.status.code(), Some(2), "{}", stderr(&pgbench));
        for (out, program) in [(&pgbolt, Program::Pgbolt), (&pgbench, Program::Pgbench)] {
            let (err, name) = (messages(out, program), program.name());
            assert_eq!(
                err.matches("aborted in command 0 query 0").count(),
                1,
                "{name}: {err}"
            );
            assert!(
                err.ends_with("PROG: error: Run was aborted due to an error in thread 0\n"),
                "{name}: {err}"
            );
        }
    }
}
