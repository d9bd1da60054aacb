//! Runs through a real pgbouncer (Debian's, see `tests/common/pgbouncer.rs`)
//! in session and transaction pooling, pgbench and pgbolt with the same
//! arguments: exit statuses, report counts and error phrases. `-i` through
//! pgbouncer is compared in `tests/init/init_failures.rs`.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common;

use crate::common::pgbouncer::{initialized_server, processed, run, Bouncer, PoolMode};
use crate::common::{pgbench_path, pgbolt_path, stderr};
use pgbolt::tempdb::{self, TempDb};

/// The server connections this test binary's server allows: fewer than
/// the clients of [`a_pooled_run_is_not_held_to_the_servers_free_connections`].
const MAX_CONNECTIONS: u32 = 20;

/// One small server with the pgbench tables (scale 1) in `postgres`.
fn server() -> &'static TempDb {
    static SERVER: OnceLock<Result<TempDb, tempdb::Error>> = OnceLock::new();
    match SERVER.get_or_init(|| initialized_server(Some(MAX_CONNECTIONS))) {
        Ok(db) => db,
        Err(e) => panic!("cannot start a throwaway server: {e}"),
    }
}

/// Benchmarks that work through either pooling mode end as pgbench's do:
/// the same exit status, count of transactions and messages.
#[test]
fn runs_through_pgbouncer_end_as_pgbenchs() {
    let cases: &[(PoolMode, &[&str])] = &[
        (
            PoolMode::Session,
            &["-S", "-M", "simple", "-c", "3", "-t", "20"],
        ),
        (
            PoolMode::Session,
            &["-S", "-M", "extended", "-c", "3", "-t", "20"],
        ),
        (
            PoolMode::Session,
            &["-S", "-M", "prepared", "-c", "3", "-t", "20"],
        ),
        (PoolMode::Session, &["-c", "2", "-t", "10"]),
        (PoolMode::Session, &["-C", "-S", "-c", "2", "-t", "10"]),
        // More clients than server connections: the last ones wait for
        // the first to finish and disconnect.
        (PoolMode::Session, &["-S", "-c", "5", "-t", "10"]),
        (
            PoolMode::Transaction,
            &["-S", "-M", "simple", "-c", "3", "-t", "20"],
        ),
        (
            PoolMode::Transaction,
            &["-S", "-M", "extended", "-c", "3", "-t", "20"],
        ),
        (
            PoolMode::Transaction,
            &["-M", "extended", "-c", "2", "-t", "10"],
        ),
        (PoolMode::Transaction, &["-C", "-S", "-c", "2", "-t", "10"]),
        (PoolMode::Transaction, &["-S", "-c", "8", "-t", "10"]),
    ];
    for mode in [PoolMode::Session, PoolMode::Transaction] {
        let bouncer = Bouncer::builder()
            .pool_mode(mode)
            .default_pool_size(3)
            .start(server());
        for (_, args) in cases.iter().filter(|(m, _)| *m == mode) {
            let case = format!("{} pooling, {}", mode.name(), args.join(" "));
            let expected = run(&bouncer, pgbench_path(), args);
            let actual = run(&bouncer, pgbolt_path(), args);
            assert_eq!(
                actual.status.code(),
                expected.status.code(),
                "case {case}: {}",
                stderr(&actual)
            );
            assert_eq!(processed(&actual), processed(&expected), "case {case}");
            assert_eq!(
                stderr(&actual).replace("pgbolt: ", "PROG: "),
                stderr(&expected).replace("pgbench: ", "PROG: "),
                "case {case}"
            );
        }
    }
}

/// Regression: pgbolt's preflight compared `-c` with the connections the
/// server had free and refused a run that a pooler makes possible (its hint
/// even suggested a pooler), where pgbench runs. Behind a pooler the check
/// is now skipped; on a direct connection it still applies.
#[test]
fn a_pooled_run_is_not_held_to_the_servers_free_connections() {
    let bouncer = Bouncer::builder()
        .pool_mode(PoolMode::Transaction)
        .default_pool_size(3)
        .start(server());
    let args = ["-S", "-c", "24", "-t", "10"];
    let expected = run(&bouncer, pgbench_path(), &args);
    let actual = run(&bouncer, pgbolt_path(), &args);
    assert!(expected.status.success(), "{}", stderr(&expected));
    assert!(actual.status.success(), "{}", stderr(&actual));
    assert_eq!(processed(&actual), processed(&expected));
    let direct = server()
        .command(pgbolt_path())
        .args(args)
        .output()
        .expect("pgbolt runs");
    assert_eq!(direct.status.code(), Some(1));
    assert!(
        stderr(&direct).contains("the server cannot accept 24 more connections"),
        "{}",
        stderr(&direct)
    );
}

/// More clients than pgbouncer's `max_client_conn`: pgbouncer refuses the
/// one too many with its own FATAL error, and both stop with exit status 1
/// before the run. (Which client is refused may differ: pgbolt opens
/// several of a thread's connections at once, pgbench one after another.)
#[test]
fn clients_beyond_max_client_conn_fail_as_with_pgbench() {
    for mode in [PoolMode::Session, PoolMode::Transaction] {
        let bouncer = Bouncer::builder()
            .pool_mode(mode)
            .max_client_conn(4)
            .default_pool_size(2)
            .start(server());
        let args = ["-S", "-c", "6", "-t", "10"];
        for out in [
            run(&bouncer, pgbench_path(), &args),
            run(&bouncer, pgbolt_path(), &args),
        ] {
            let text = stderr(&out);
            assert_eq!(
                out.status.code(),
                Some(1),
                "{} pooling: {text}",
                mode.name()
            );
            assert!(
                text.contains("FATAL:  no more connections allowed (max_client_conn)"),
                "{text}"
            );
            assert!(
                text.contains("could not create connection for client "),
                "{text}"
            );
            assert!(processed(&out).is_none());
        }
    }
}

/// Regression: `-M prepared` in transaction pooling (pgbouncer 1.18 keeps
/// no prepared statements per client, and server connections keep what
/// other clients prepared on them). With one server connection, the
/// second client's Parse of `P_0` finds the name taken: pgbench logs the
/// error and executes the statement found there, and so does pgbolt now
/// (it aborted the client, exit status 2).
#[test]
fn a_prepared_statement_found_on_a_pooled_connection_is_used_as_pgbench_does() {
    let args = ["-S", "-M", "prepared", "-c", "2", "-t", "10"];
    let taken = "error: ERROR:  prepared statement \"P_0\" already exists";
    let mut outcomes = Vec::new();
    for program in [pgbench_path().into(), pgbolt_path()] {
        let bouncer = Bouncer::builder()
            .pool_mode(PoolMode::Transaction)
            .default_pool_size(1)
            .start(server());
        let out = run(&bouncer, &program, &args);
        let text = stderr(&out);
        assert_eq!(
            text.matches(taken).count(),
            1,
            "{}: {text}",
            program.display()
        );
        outcomes.push((out.status.code(), processed(&out)));
    }
    assert_eq!(outcomes[1], outcomes[0]);
    assert_eq!(outcomes[0].0, Some(0));
}

/// The active queries on the server whose text contains `marker`.
fn active_queries(marker: &str) -> usize {
    let sql = format!(
        "select count(*) from pg_stat_activity where state = 'active' \
         and query like '%{marker}%' and pid <> pg_backend_pid()"
    );
    let out = server().psql(&sql).expect("psql runs");
    out.trim().parse().expect("a count")
}

/// Waits up to `limit` for `done`; false if it never came.
fn within(limit: Duration, done: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    done()
}

/// Regression: at SIGINT (and at the end of a `-T` run's grace period)
/// pgbolt closed its connections while its cancel requests were on their
/// way; pgbouncer finds the server connection to cancel through the
/// client's, so it dropped them (`failed cancel request`) and the queries
/// ran on in the server. The cancels are now delivered first.
#[test]
fn sigint_cancels_the_running_queries_through_pgbouncer() {
    for mode in [PoolMode::Session, PoolMode::Transaction] {
        let bouncer = Bouncer::builder().pool_mode(mode).start(server());
        let marker = format!("pooler_sigint_{}", mode.name());
        let script =
            common::script_file("sleep.sql", &format!("select pg_sleep(600) as {marker};\n"));
        let mut command = bouncer.command(pgbolt_path());
        let mut child = common::default_signals(&mut command)
            .args(["-n", "-c", "2", "-T", "600", "-f", &script.path])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("pgbolt starts");
        assert!(
            within(Duration::from_secs(30), || active_queries(&marker) == 2),
            "{} pooling: the queries never started",
            mode.name()
        );
        // SAFETY: signalling our own child, not yet reaped.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        let status = child.wait().expect("pgbolt ends");
        assert_eq!(status.code(), Some(130));
        assert!(
            within(Duration::from_secs(10), || active_queries(&marker) == 0),
            "{} pooling: queries still running after pgbolt ended:\n{}",
            mode.name(),
            bouncer.log()
        );
    }
}

/// Clients of the many-client runs: far more than pgbouncer's default
/// accept queue (`listen_backlog` 128).
const MANY: u32 = 10_000;

/// A transaction-pooling pgbouncer for [`MANY`] clients, with its default
/// `listen_backlog`, listening on TCP too when `tcp`.
fn bouncer_for_many(tcp: bool) -> Bouncer {
    let mut builder = Bouncer::builder()
        .pool_mode(PoolMode::Transaction)
        .max_client_conn(MANY + 100)
        .default_pool_size(4)
        .open_files(u64::from(MANY) + 1_000)
        .setting("log_connections", "0")
        .setting("log_disconnections", "0");
    if tcp {
        builder = builder.setting("listen_addr", "127.0.0.1");
    }
    builder.start(server())
}

/// Runs pgbolt with `args` through `bouncer` (over TCP when `tcp`) and
/// checks that every client connected and ran all its transactions.
fn every_client_completes(bouncer: &Bouncer, tcp: bool, args: &[&str], transactions: u32) {
    let mut command = bouncer.command(pgbolt_path());
    if tcp {
        command.env("PGHOST", "127.0.0.1");
    }
    let out = command.args(args).output().expect("pgbolt runs");
    let text = stderr(&out);
    assert!(out.status.success(), "{text}\n{}", bouncer.log());
    assert!(!text.contains("error"), "{text}");
    assert_eq!(
        processed(&out).as_deref(),
        Some(
            format!("number of transactions actually processed: {transactions}/{transactions}")
                .as_str()
        ),
        "{text}"
    );
}

/// Regression (issue 24): opening every client's connection at once
/// overflowed pgbouncer's accept queue; over its Unix socket `connect`
/// failed with `EAGAIN` and pgbolt stopped with "Resource temporarily
/// unavailable" where pgbench ran. Connections are now paced and a full
/// queue is waited out.
#[test]
fn ten_thousand_clients_connect_through_pgbouncers_unix_socket() {
    many_clients_complete(false);
}

/// The same over TCP, where an overflowing queue drops the handshake and
/// costs a retransmission a second later instead of an error.
#[test]
fn ten_thousand_clients_connect_through_pgbouncer_over_tcp() {
    many_clients_complete(true);
}

fn many_clients_complete(tcp: bool) {
    let bouncer = bouncer_for_many(tcp);
    let clients = MANY.to_string();
    let args = [
        "-n", "-S", "-M", "simple", "-j", "2", "-c", &clients, "-t", "1",
    ];
    every_client_completes(&bouncer, tcp, &args, MANY);
}

/// `-C`: a thousand clients each opening a connection per transaction
/// through pgbouncer's Unix socket and over TCP, no error.
#[test]
fn a_connection_per_transaction_for_a_thousand_clients_through_pgbouncer() {
    for tcp in [false, true] {
        let bouncer = bouncer_for_many(tcp);
        let args = [
            "-n", "-C", "-S", "-M", "simple", "-j", "2", "-c", "1000", "-t", "3",
        ];
        every_client_completes(&bouncer, tcp, &args, 3_000);
    }
}

/// Regression: on a server where nobody else worked, a direct run right
/// after a run through PgBouncer said "... from other sessions": the
/// pooler's idle server connections reported their last commits late,
/// into the direct run's counters, and autovacuum's commits were told as
/// other sessions' work beside the vacuum itself. Now the monitor counts
/// those sessions by kind: idle ones are no other load, autovacuum is the
/// vacuum finding's alone.
#[test]
fn a_stale_pooler_and_autovacuum_are_not_other_load() {
    let db = server();
    let dbname = common::bench_database(db, &["-s", "1"]);
    db.psql_in(
        &dbname,
        "ALTER TABLE pgbench_accounts SET (autovacuum_vacuum_threshold = 0, \
         autovacuum_vacuum_scale_factor = 0, autovacuum_analyze_threshold = 0, \
         autovacuum_analyze_scale_factor = 0)",
    )
    .expect("autovacuum settings");
    // Autovacuum looks at each database every second (the server's other
    // tests do not mind).
    db.psql("ALTER SYSTEM SET autovacuum_naptime = 1; SELECT pg_reload_conf()")
        .expect("autovacuum_naptime");
    let bouncer = Bouncer::builder()
        .pool_mode(PoolMode::Session)
        .default_pool_size(4)
        .start(db);
    let pooled = run(&bouncer, pgbolt_path(), &["-c", "4", "-T", "2", &dbname]);
    assert!(pooled.status.success(), "{}", stderr(&pooled));
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("direct.json");
    let direct = db
        .command(pgbolt_path())
        .args(["-n", "-c", "2", "-T", "3", "--monitor-interval=50"])
        .arg(format!("--json={}", json.display()))
        .arg(&dbname)
        .output()
        .expect("pgbolt runs");
    assert!(direct.status.success(), "{}", stderr(&direct));
    let text = common::stdout(&direct);
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json")).expect("json parses");
    let d = &result["diagnosis"];
    let others = &d["activity"]["others"];
    let count = |kind: &str, state: &str| others[kind][state].as_u64().expect("count");
    // The pooler's server connections stayed, idle, through the run.
    let idle = count("same_name", "client") + count("other_clients", "client");
    assert!(idle > 0, "{others}\n{text}");
    assert_eq!(
        count("same_name", "on_cpu") + count("other_clients", "on_cpu"),
        0,
        "{others}"
    );
    let findings = d["findings"].as_array().expect("findings");
    for f in findings {
        assert_ne!(f["id"], "other-sessions", "{text}");
        if f["id"] == "commits-disagree" {
            assert_eq!(f["severity"], "info", "{text}");
        }
    }
    assert!(!text.contains("from other sessions"), "{text}");
    assert!(text.contains("  other sessions: "), "{text}");
}
