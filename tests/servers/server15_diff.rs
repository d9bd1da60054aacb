//! The machine's PostgreSQL 15, which the rest of the suite no longer runs
//! against (PostgreSQL 18 is the default server): one differential test per
//! area where the server's version reaches the client. Connecting over the
//! socket and over TCP with TLS, password authentication (SCRAM), both
//! ways of generating data in `-i`, a run in each query mode and the
//! report's version line. pgbench 18 is the oracle, as everywhere; the
//! other tests that need a server before 16 or 17 are listed in
//! docs/testing.md.

use crate::common;

use std::process::Output;
use std::sync::OnceLock;

use crate::common::{builder15, stderr, stdout, Run};
use pgbolt::tempdb::{AuthMethod, TempDb};

const USER: &str = "bench_user";
const PASSWORD: &str = "pw-15-a7Kq";

/// One PostgreSQL 15 server: socket and TCP, TLS, SCRAM everywhere, a
/// database initialized by pgbench at scale 1.
fn server() -> &'static TempDb {
    static DB: OnceLock<TempDb> = OnceLock::new();
    DB.get_or_init(|| {
        pgbolt::tempdb::install_signal_cleanup().expect("signal clean-up");
        let db = builder15()
            .tcp(true)
            .ssl(true)
            .auth(AuthMethod::ScramSha256)
            .user(USER, PASSWORD)
            .setting("fsync", "off")
            .start()
            .expect("PostgreSQL 15 starts");
        db.psql(&format!(
            "CREATE DATABASE bench OWNER {USER}; CREATE DATABASE init_a; CREATE DATABASE init_b"
        ))
        .expect("databases");
        let init = Run::on(&db, "bench", &["-i", "-q", "-s", "1"]).pgbench();
        assert!(init.status.success(), "{}", stderr(&init));
        db.psql_in(
            "bench",
            &format!("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {USER}"),
        )
        .expect("grant");
        db
    })
}

/// pgbench's and pgbolt's outputs for the same arguments, in that order.
fn both_in(db: &TempDb, dbname: &str, args: &[&str]) -> (Output, Output) {
    let run = Run::on(db, dbname, args);
    (run.pgbench(), run.pgbolt())
}

/// A report with numbers masked and each program's own lines left out:
/// the version line (checked to name server 15) and pgbolt's percentiles.
fn report(out: &Output) -> Vec<String> {
    let text = common::without_diagnosis(&stdout(out));
    let mut lines = text.lines();
    let version = lines.next().unwrap_or_default();
    assert!(version.contains(", server 15."), "{text}");
    let digits = regex::Regex::new(r"\d+(\.\d+)?").unwrap();
    lines
        .filter(|l| !l.contains(" percentiles: "))
        .map(|l| digits.replace_all(l, "N").into_owned())
        .collect()
}

/// Standard error with the program's name as `PROG` and numbers masked.
fn messages(out: &Output, program: &str) -> String {
    let digits = regex::Regex::new(r"\d+(\.\d+)?").unwrap();
    let text = stderr(out).replace(&format!("{program}: "), "PROG: ");
    digits.replace_all(&text, "N").into_owned()
}

#[test]
fn one_run_per_query_mode() {
    let db = server();
    for mode in ["simple", "extended", "prepared"] {
        let args = [
            "-M",
            mode,
            "-t",
            "20",
            "-c",
            "2",
            "-j",
            "2",
            "--random-seed=3",
        ];
        let (theirs, ours) = both_in(db, "bench", &args);
        assert_eq!(theirs.status.code(), Some(0), "{}", stderr(&theirs));
        assert_eq!(ours.status.code(), Some(0), "{mode}: {}", stderr(&ours));
        assert_eq!(report(&ours), report(&theirs), "{mode}");
        assert_eq!(messages(&ours, "pgbolt"), messages(&theirs, "pgbench"));
    }
    // The vacuum before each run empties the history: what is left is
    // the last run's, pgbolt's.
    let history = db
        .psql_in("bench", "SELECT count(*) FROM pgbench_history")
        .expect("count");
    assert_eq!(history.trim(), "40");
}

/// Both ways of generating the data leave the same rows from both
/// programs, with the same lines on standard error.
#[test]
fn init_generates_the_same_tables() {
    let db = server();
    let count = "SELECT (SELECT count(*) FROM pgbench_branches) || ' ' || \
                 (SELECT count(*) FROM pgbench_tellers) || ' ' || \
                 (SELECT count(*) FROM pgbench_accounts) || ' ' || \
                 (SELECT sum(abalance) FROM pgbench_accounts) || ' ' || \
                 (SELECT count(*) FROM pgbench_history)";
    for steps in ["dtgvp", "dtGvp"] {
        let args = ["-i", "-s", "2", "-I", steps];
        let theirs = Run::on(db, "init_a", &args).pgbench();
        let ours = Run::on(db, "init_b", &args).pgbolt();
        assert!(theirs.status.success(), "{}", stderr(&theirs));
        assert!(ours.status.success(), "{steps}: {}", stderr(&ours));
        assert_eq!(messages(&ours, "pgbolt"), messages(&theirs, "pgbench"));
        assert_eq!(
            db.psql_in("init_b", count).expect("counts"),
            db.psql_in("init_a", count).expect("counts"),
            "{steps}"
        );
    }
}

/// SCRAM over TCP with TLS, and over the socket; a wrong password fails
/// in both with the same message.
#[test]
fn scram_over_tcp_with_tls_and_over_the_socket() {
    let db = server();
    let port = db.port().to_string();
    type Env<'a> = &'a [(&'a str, &'a str)];
    let cases: [(Env<'_>, &str, Option<i32>); 3] = [
        (
            &[("PGHOST", "127.0.0.1"), ("PGSSLMODE", "require")],
            PASSWORD,
            Some(0),
        ),
        (&[], PASSWORD, Some(0)),
        (&[("PGHOST", "127.0.0.1")], "wrong", Some(1)),
    ];
    for (env, password, code) in cases {
        let run = env.iter().fold(
            Run::on(db, "bench", &["-n", "-S", "-t", "5"])
                .env("PGUSER", USER)
                .env("PGPASSWORD", password)
                .env("PGPORT", &port),
            |run, (name, value)| run.env(name, value),
        );
        let (theirs, ours) = (run.pgbench(), run.pgbolt());
        assert_eq!(theirs.status.code(), code, "{env:?}: {}", stderr(&theirs));
        assert_eq!(ours.status.code(), code, "{env:?}: {}", stderr(&ours));
        assert_eq!(
            messages(&ours, "pgbolt"),
            messages(&theirs, "pgbench"),
            "{env:?}"
        );
        assert!(!stderr(&ours).contains(PASSWORD));
        if code == Some(0) {
            assert_eq!(report(&ours), report(&theirs), "{env:?}");
        }
    }
}
