//! `-i` where things go wrong, against the real pgbench: server errors,
//! lost connections, connection limits of the role, the server or a
//! pgbouncer in front of it. The messages and status must be pgbench's,
//! and what succeeds for pgbench must succeed for pgbolt with the same end
//! state.

use std::num::NonZeroUsize;

use crate::common::pgbench_path;
use crate::common::pgbouncer::{Bouncer, PoolMode};
use crate::init_support::*;
use pgbolt::init::InitOptions;

#[test]
fn copy_failure_reads_as_pgbench() {
    let _turn = exclusive();
    let (pgbench_db, pgbolt_db) = database_pair();
    for db in [&pgbench_db, &pgbolt_db] {
        assert!(run_pgbench(db, &["-I", "dt"]).success);
        psql(
            db,
            "alter table pgbench_accounts add constraint small check (aid < 50000)",
        );
    }
    let expected = run_pgbench(&pgbench_db, &["-I", "g"]);
    let actual = run_pgbolt(&pgbolt_db, "postgres", &options(&["-I", "g"]));
    assert!(!expected.success && !actual.success);
    assert_eq!(normalized(&actual.stderr), normalized(&expected.stderr));
    assert_eq!(
        psql(&pgbolt_db, "select count(*) from pgbench_branches").trim(),
        "0"
    );
}

/// Regressions: when the connection breaks while rows are being sent
/// (here a trigger ends the loading backend half-way), pgbench says
/// `PQputline failed`; pgbolt printed the socket error (`Broken pipe`) and
/// `PQendcopy failed`. When the backend ends at the last row, pgbench
/// shows the server's FATAL error and `PQendcopy failed`; pgbolt added
/// libpq's `server closed the connection unexpectedly` lines, which libpq
/// prints for a failed query but not there. A plain rerun then starts over.
#[test]
fn connection_lost_during_copy_reads_as_pgbench() {
    let _turn = exclusive();
    for (row, phrase) in [(50000, "PQputline failed"), (100000, "PQendcopy failed")] {
        let (pgbench_db, pgbolt_db) = database_pair();
        for db in [&pgbench_db, &pgbolt_db] {
            assert!(run_pgbench(db, &["-I", "dt"]).success);
            psql(
                db,
                &format!(
                    "create function end_me() returns trigger language plpgsql as $$
                     begin
                       if new.aid = {row} then perform pg_terminate_backend(pg_backend_pid()); end if;
                       return new;
                     end $$;
                     create trigger end_me before insert on pgbench_accounts
                       for each row execute function end_me()"
                ),
            );
        }
        let expected = run_pgbench(&pgbench_db, &["-I", "g"]);
        let actual = run_pgbolt(&pgbolt_db, "postgres", &options(&["-I", "g"]));
        assert!(!expected.success && !actual.success, "row {row}");
        assert!(expected.stderr.contains(phrase), "{}", expected.stderr);
        assert_eq!(
            normalized(&actual.stderr),
            normalized(&expected.stderr),
            "row {row}"
        );
        let rerun = run_pgbolt(&pgbolt_db, "postgres", &InitOptions::default());
        assert!(rerun.success, "{}", rerun.stderr);
    }
}

#[test]
fn connection_failure_reads_as_pgbench() {
    let _turn = exclusive();
    let expected = run_pgbench("no_such_db", &[]);
    let actual = run_pgbolt("no_such_db", "postgres", &InitOptions::default());
    assert!(!expected.success && !actual.success);
    assert_eq!(normalized(&actual.stderr), normalized(&expected.stderr));
}

/// A server error stops initialization with pgbench's message and status,
/// and a plain rerun then succeeds.
#[test]
fn server_errors_read_as_pgbench_and_a_rerun_recovers() {
    let _turn = exclusive();
    psql(
        "postgres",
        "do $$ begin create role init_nopriv login; exception when duplicate_object then null; end $$",
    );
    let cases: &[(&[&str], &str)] = &[
        (&["--tablespace=nope"], "postgres"),
        (&["--index-tablespace=nope", "--partitions=2"], "postgres"),
        (&["--index-tablespace=nope"], "postgres"),
        (&["-I", "tg"], "init_nopriv"),
        (&["-I", "g"], "postgres"),
    ];
    for (args, user) in cases {
        let case = args.join(" ");
        let (pgbench_db, pgbolt_db) = database_pair();
        let mut pgbench = run_pgbench_as(&pgbench_db, user, args);
        let actual = run_pgbolt(&pgbolt_db, user, &options(args));
        assert!(!pgbench.success && !actual.success, "case {case}");
        pgbench.stderr = pgbench.stderr.replace(&pgbench_db, "DB");
        let actual_stderr = actual.stderr.replace(&pgbolt_db, "DB");
        assert_eq!(
            normalized(&actual_stderr),
            normalized(&pgbench.stderr),
            "case {case}: messages differ"
        );
        let rerun = run_pgbolt(&pgbolt_db, "postgres", &InitOptions::default());
        assert!(rerun.success, "case {case}: rerun failed: {}", rerun.stderr);
        assert_eq!(
            psql(&pgbolt_db, "select count(*) from pgbench_accounts").trim(),
            "100000"
        );
    }
}

/// Regression: a role that may not vacuum the tables gets one warning per
/// table from step `v`. pgbolt vacuums the tables on several connections
/// at once and printed the warnings connection by connection; it now
/// prints them in pgbench's table order.
#[test]
fn vacuum_warnings_come_in_pgbench_order() {
    let _turn = exclusive();
    psql(
        "postgres",
        "do $$ begin create role init_not_owner login; exception when duplicate_object then null; end $$",
    );
    let (pgbench_db, pgbolt_db) = database_pair();
    for db in [&pgbench_db, &pgbolt_db] {
        assert!(run_pgbench(db, &["-I", "dtg"]).success);
    }
    let expected = run_pgbench_as(&pgbench_db, "init_not_owner", &["-I", "v"]);
    let mut opts = options(&["-I", "v"]);
    opts.jobs = NonZeroUsize::new(4);
    let actual = run_pgbolt(&pgbolt_db, "init_not_owner", &opts);
    assert!(expected.success && actual.success, "{}", actual.stderr);
    assert!(
        expected
            .stderr
            .contains("WARNING:  permission denied to vacuum \"pgbench_tellers\", skipping it"),
        "{}",
        expected.stderr
    );
    assert_eq!(normalized(&actual.stderr), normalized(&expected.stderr));
}

/// Regression: the WAL flusher's connection could take the place of one a
/// step needed, so that a role allowed no more connections than
/// `--init-jobs` failed at step `g` of a partitioned load (`too many
/// connections for role`), where pgbench, with one connection, succeeds.
/// The flusher now starts once the step's connections are open and frees
/// its slot before the next step opens more. And a role allowed fewer
/// connections than `--init-jobs` (here one, as pgbench needs) gets the
/// work done on those it may open.
#[test]
fn init_never_needs_more_connections_than_it_may_open() {
    let _turn = exclusive();
    for (role, limit, jobs) in [("init_two_conns", 2, 2), ("init_one_conn", 1, 3)] {
        psql(
            "postgres",
            &format!(
                "do $$ begin create role {role} login connection limit {limit}; \
                 exception when duplicate_object then null; end $$"
            ),
        );
        let cases: &[&[&str]] = &[
            &["-s", "1", "--partitions", "2"],
            &["-s", "1", "--partitions", "3", "-I", "dtGvp"],
            &["-s", "1"],
        ];
        for args in cases {
            let case = format!("{role}, {}", args.join(" "));
            let (pgbench_db, pgbolt_db) = database_pair();
            psql(
                "postgres",
                &format!("alter database {pgbolt_db} owner to {role}"),
            );
            let mut opts = options(args);
            opts.jobs = NonZeroUsize::new(jobs);
            let outcome = run_pgbolt(&pgbolt_db, role, &opts);
            assert!(outcome.success, "case {case}: {}", outcome.stderr);
            assert!(run_pgbench(&pgbench_db, args).success, "case {case}");
            compare(&case, &pgbench_db, &pgbolt_db, CATALOG);
            compare(&case, &pgbench_db, &pgbolt_db, DATA);
        }
    }
}

/// Regression: the extra connections of step `v` stayed open, idle,
/// through the following steps; a server that ends idle sessions
/// (`idle_session_timeout`) had closed them by step `p`, which failed on
/// them (`query failed: Broken pipe`) where pgbench, with its one busy
/// connection, succeeds. Each step now opens its extra connections afresh.
/// (A second: a step's first connection waits for the others to connect
/// before its query goes out, which a loaded machine stretched past
/// 100 ms.)
#[test]
fn extra_connections_outlive_no_step() {
    let _turn = exclusive();
    let args = ["-s", "2", "-I", "dtvGp"];
    let (pgbench_db, pgbolt_db) = database_pair();
    for db in [&pgbench_db, &pgbolt_db] {
        psql(
            "postgres",
            &format!("alter database {db} set idle_session_timeout = '1s'"),
        );
    }
    let expected = run_pgbench(&pgbench_db, &args);
    let mut opts = options(&args);
    opts.jobs = NonZeroUsize::new(4);
    let actual = run_pgbolt(&pgbolt_db, "postgres", &opts);
    assert!(expected.success, "{}", expected.stderr);
    assert!(actual.success, "{}", actual.stderr);
    assert_eq!(normalized(&actual.stderr), normalized(&expected.stderr));
    compare("idle sessions", &pgbench_db, &pgbolt_db, CATALOG);
    compare("idle sessions", &pgbench_db, &pgbolt_db, DATA);
}

/// Regression: through a pgbouncer whose `max_client_conn` leaves room for
/// fewer connections than `--init-jobs`, pgbouncer refused the extra ones
/// (`no more connections allowed (max_client_conn)`, SQLSTATE 08P01) and
/// `-i` failed where pgbench, with one connection, succeeds. The pool now
/// goes on with the connections it got, as when the server refuses them.
#[test]
fn init_through_a_full_pgbouncer_uses_the_connections_it_gets() {
    let _turn = exclusive();
    for mode in [PoolMode::Session, PoolMode::Transaction] {
        let bouncer = Bouncer::builder()
            .pool_mode(mode)
            .max_client_conn(2)
            .start(server());
        init_through(&bouncer, &format!("{} pooling", mode.name()));
        assert!(
            bouncer.log().contains("no more connections allowed"),
            "{} pooling: pgbouncer never refused a connection, so the case proves nothing",
            mode.name()
        );
    }
}

/// Regression: in session pooling with fewer server connections than
/// `--init-jobs`, pgbouncer let the extra connections in and held their
/// statements until a server connection was free, which never happened
/// (the others were this run's own, kept to the end): the load waited for
/// pgbouncer's `query_wait_timeout` (two minutes) and failed. A new
/// connection that does not answer within two seconds is now left out.
#[test]
fn init_through_a_small_session_pool_leaves_out_connections_it_holds_back() {
    let _turn = exclusive();
    let bouncer = Bouncer::builder()
        .pool_mode(PoolMode::Session)
        .default_pool_size(2)
        .setting("query_wait_timeout", "30")
        .start(server());
    init_through(&bouncer, "session pool of 2");
}

/// Statement pooling refuses transaction blocks with a FATAL error and
/// closes the connection, so `-i` stops at the `begin` of the data
/// generation. Regression: pgbolt said only "server closed the connection
/// unexpectedly"; it now shows pgbouncer's message first, as libpq does for
/// pgbench.
#[test]
fn init_through_statement_pooling_fails_as_pgbench() {
    let _turn = exclusive();
    let bouncer = Bouncer::builder()
        .pool_mode(PoolMode::Statement)
        .start(server());
    let (pgbench_db, pgbolt_db) = database_pair();
    let expected = pgbench_init(bouncer.command(pgbench_path()), &pgbench_db, &[]);
    let config = config_through(&bouncer, &pgbolt_db);
    let actual = pgbolt_init(&config, &InitOptions::default());
    assert!(!expected.success && !actual.success);
    assert!(
        expected
            .stderr
            .contains("FATAL:  transaction blocks not allowed in statement pooling mode"),
        "{}",
        expected.stderr
    );
    assert_eq!(normalized(&actual.stderr), normalized(&expected.stderr));
}

/// An event trigger that, once `create table pgbench_accounts` has run,
/// runs `action` on the new table (partitions created after it inherit
/// what it adds), so that a run of `-i` fails in a step after `t`.
fn on_accounts_created(db: &str, action: &str) {
    psql(
        db,
        &format!(
            "create function u_dup() returns trigger language plpgsql as $$
             begin if new.aid = 50001 then new.aid := 50000; end if; return new; end $$;
             create function on_accounts() returns event_trigger language plpgsql as $$
             begin
               if to_regclass('pgbench_accounts') is not null
                  and not exists (select from pg_trigger where tgname = 'u_dup')
                  and not exists (select from pg_constraint where conname = 'u_small') then
                 {action};
               end if;
             end $$;
             create event trigger on_accounts on ddl_command_end when tag in ('CREATE TABLE')
               execute function on_accounts()"
        ),
    );
}

/// Regressions: with partitions loaded and keyed side by side, a failure
/// was reported as the loader or statement that met it, not as pgbench's
/// one COPY or one key of the partitioned table: a row that breaks a
/// check constraint came with its line in the loader's COPY (`line
/// 16666`, where pgbench says `line 50000`), and for hash partitions the
/// first loader's bad row (`50005`) rather than the lowest one; a
/// duplicate key in a partition was reported with `Query was: alter table
/// pgbench_accounts_2 add primary key (aid)`. A rerun then starts over.
#[test]
fn failures_of_partitions_read_as_pgbench_s_single_statement() {
    let _turn = exclusive();
    let cases: &[(&str, &[&str])] = &[
        (
            "alter table pgbench_accounts add constraint u_small check (aid < 50000)",
            &["--partitions=3", "--partition-method=hash"],
        ),
        (
            "alter table pgbench_accounts add constraint u_small check (aid < 50000)",
            &["--partitions=3"],
        ),
        (
            "create trigger u_dup before insert on pgbench_accounts
               for each row execute function u_dup()",
            &["--partitions=3"],
        ),
    ];
    for (action, args) in cases {
        let case = format!("{action}, {}", args.join(" "));
        let (pgbench_db, pgbolt_db) = database_pair();
        for db in [&pgbench_db, &pgbolt_db] {
            on_accounts_created(db, action);
        }
        let expected = run_pgbench(&pgbench_db, args);
        let mut opts = options(args);
        opts.jobs = NonZeroUsize::new(4);
        let actual = run_pgbolt(&pgbolt_db, "postgres", &opts);
        assert!(!expected.success && !actual.success, "case {case}");
        assert_eq!(
            normalized(&actual.stderr),
            normalized(&expected.stderr),
            "case {case}: messages differ"
        );
        for db in [&pgbench_db, &pgbolt_db] {
            psql(db, "drop event trigger on_accounts");
        }
        assert!(run_pgbench(&pgbench_db, args).success, "case {case}");
        let rerun = run_pgbolt(&pgbolt_db, "postgres", &opts);
        assert!(rerun.success, "case {case}: {}", rerun.stderr);
        compare(&case, &pgbench_db, &pgbolt_db, CATALOG);
        compare(&case, &pgbench_db, &pgbolt_db, DATA);
    }
}
