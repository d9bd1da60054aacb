//! `-i` against the real pgbench: for each option combination, pgbench
//! initializes one database and pgbolt another on the same throwaway
//! server; the catalogs, the rows, the visibility of the pages and the
//! messages must be the same.

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::process::Command;

use crate::init_support::*;

#[test]
fn step_letters_alone_and_together() {
    let _turn = exclusive();
    let cases: &[&[&str]] = &[
        &["-s", "1"],
        &["-I", "dtg"],
        &["-I", "dtG"],
        &["-I", "dtGvp"],
        &["-I", "dtgvpf"],
        &["-I", "dt"],
        &["-I", "d"],
        &["-I", "dtgv"],
        &["-I", "dtgp"],
        &["-I", "d t g v p f"],
        &["-I", "dtpfg"],
        &["-n"],
        &["-q"],
        &["--foreign-keys"],
    ];
    for args in cases {
        check(args);
    }
}

#[test]
fn storage_options_and_scales() {
    let _turn = exclusive();
    let cases: &[&[&str]] = &[
        &["-s", "5"],
        &["-q", "-s", "5"],
        &["-F", "80"],
        &["-F", "10", "-I", "dtGvp"],
        &["--unlogged-tables"],
        &["--unlogged-tables", "--foreign-keys", "-n"],
        // bigint account ids from scale 20000 on (tables only: no data)
        &["-s", "19999", "-I", "dt"],
        &["-s", "20000", "-I", "dtp"],
        &["-s", "21475", "-I", "dt", "--partitions=3"],
    ];
    for args in cases {
        check(args);
    }
}

#[test]
fn partitions_of_both_methods() {
    let _turn = exclusive();
    let cases: &[&[&str]] = &[
        &["--partitions=3"],
        &["--partition-method=hash", "--partitions=4"],
        &[
            "--partition-method",
            "range",
            "--partitions",
            "7",
            "-s",
            "5",
            "--foreign-keys",
        ],
        &["--partition-method=hash", "--partitions=3", "-I", "dtGvp"],
        &["--partition-method=HASH", "--partitions=2", "-n", "-s", "5"],
        &["--partitions=5", "-q"],
        &["--partitions=1"],
    ];
    for args in cases {
        check(args);
    }
}

/// pgbench 18 no longer makes the other tables unlogged when accounts are
/// partitioned (PostgreSQL 18 refuses unlogged partitioned tables), only
/// the partitions (pgbench 15 made every table unlogged).
#[test]
fn unlogged_partitions_follow_pgbench_18() {
    let _turn = exclusive();
    let args = ["--partitions=2", "--unlogged-tables", "-F", "90"];
    let (pgbench_db, pgbolt_db) = database_pair();
    let expected = run_pgbench(&pgbench_db, &args);
    let actual = run_pgbolt(&pgbolt_db, "postgres", &options(&args));
    assert!(expected.success && actual.success, "{}", actual.stderr);
    assert_eq!(normalized(&actual.stderr), normalized(&expected.stderr));
    compare("unlogged partitions", &pgbench_db, &pgbolt_db, CATALOG);
    compare("unlogged partitions", &pgbench_db, &pgbolt_db, DATA);
    assert_eq!(
        psql(
            &pgbolt_db,
            "select string_agg(relname || '=' || relpersistence::text, ' ' order by relname)
             from pg_class where relname like 'pgbench%'"
        )
        .trim(),
        "pgbench_accounts=p pgbench_accounts_1=u pgbench_accounts_1_pkey=u \
         pgbench_accounts_2=u pgbench_accounts_2_pkey=u pgbench_accounts_pkey=p \
         pgbench_branches=p pgbench_branches_pkey=p pgbench_history=p \
         pgbench_tellers=p pgbench_tellers_pkey=p"
    );
}

/// Step `g` on a partitioned `pgbench_accounts` that an earlier run
/// created, without `--partitions` this time: pgbench 16 and later (and
/// pgbolt) look at the table and leave FREEZE out (pgbench 15 decided by
/// the option and failed with `cannot perform COPY FREEZE on a partitioned
/// table`).
#[test]
fn existing_partitions_are_loaded_as_pgbench_16_does() {
    let _turn = exclusive();
    let (pgbench_db, pgbolt_db) = database_pair();
    for db in [&pgbench_db, &pgbolt_db] {
        assert!(run_pgbench(db, &["-I", "dt", "--partitions=3"]).success);
    }
    let expected = run_pgbench(&pgbench_db, &["-I", "g"]);
    assert!(expected.success, "{}", expected.stderr);
    let actual = run_pgbolt(&pgbolt_db, "postgres", &options(&["-I", "g"]));
    assert!(actual.success, "{}", actual.stderr);
    compare("existing partitions", &pgbench_db, &pgbolt_db, CATALOG);
    compare("existing partitions", &pgbench_db, &pgbolt_db, DATA);
}

#[test]
fn one_connection_gives_the_same_end_state() {
    let _turn = exclusive();
    let (pgbench_db, pgbolt_db) = database_pair();
    let args = ["--partitions=3", "-s", "2"];
    assert!(run_pgbench(&pgbench_db, &args).success);
    let mut opts = options(&args);
    opts.jobs = NonZeroUsize::new(1);
    assert!(run_pgbolt(&pgbolt_db, "postgres", &opts).success);
    compare("one job", &pgbench_db, &pgbolt_db, CATALOG);
    compare("one job", &pgbench_db, &pgbolt_db, PARTITION_PAGES);
    compare("one job", &pgbench_db, &pgbolt_db, DATA);
}

/// Transaction ids used by `run` in `dbname` (the two probes around it
/// take one each).
fn xids_used(dbname: &str, run: impl FnOnce()) -> i64 {
    let probe = || -> i64 {
        psql(dbname, "select pg_current_xact_id()::text::bigint")
            .trim()
            .parse()
            .expect("an xid")
    };
    let before = probe();
    run();
    probe() - before - 1
}

/// With more than one connection, the load and the key build of a plain
/// `pgbench_accounts` run beside a WAL flusher (src/init/parallel.rs): it
/// commits transactions of its own (so it ran, and flushed at least once
/// per step), and the tables, rows and page visibility stay pgbench's.
#[test]
fn the_wal_flusher_changes_nothing_but_transaction_ids() {
    let _turn = exclusive();
    let (pgbench_db, pgbolt_db) = database_pair();
    let args = ["-s", "2", "-I", "dtgvp"];
    let theirs = xids_used(&pgbench_db, || {
        assert!(run_pgbench(&pgbench_db, &args).success)
    });
    let mut opts = options(&args);
    opts.jobs = NonZeroUsize::new(4);
    let ours = xids_used(&pgbolt_db, || {
        let outcome = run_pgbolt(&pgbolt_db, "postgres", &opts);
        assert!(outcome.success, "{}", outcome.stderr);
    });
    assert!(
        ours >= theirs + 2,
        "pgbolt used {ours} xids, pgbench {theirs}"
    );
    compare("flusher", &pgbench_db, &pgbolt_db, CATALOG);
    compare("flusher", &pgbench_db, &pgbolt_db, DATA);
}

#[test]
fn rerun_replaces_the_previous_tables() {
    let _turn = exclusive();
    let (pgbench_db, pgbolt_db) = database_pair();
    for args in [&["--partitions=2", "--foreign-keys"][..], &["-s", "2"][..]] {
        let expected = run_pgbench(&pgbench_db, args);
        let actual = run_pgbolt(&pgbolt_db, "postgres", &options(args));
        assert!(expected.success && actual.success, "{}", actual.stderr);
        assert_eq!(normalized(&actual.stderr), normalized(&expected.stderr));
    }
    compare("rerun", &pgbench_db, &pgbolt_db, CATALOG);
    compare("rerun", &pgbench_db, &pgbolt_db, DATA);
}

#[test]
fn unrelated_objects_are_untouched() {
    let _turn = exclusive();
    let (_, pgbolt_db) = database_pair();
    psql(
        &pgbolt_db,
        "create table keep_me(id int primary key, note text);
         insert into keep_me select g, 'row ' || g from generate_series(1, 1000) g;
         create schema other;
         create table other.pgbench_accounts(aid int);
         insert into other.pgbench_accounts values (42);",
    );
    let snapshot = "select (select md5(string_agg(k::text, ',' order by id)) from keep_me k),
                           (select count(*) from other.pgbench_accounts)";
    let before = psql(&pgbolt_db, snapshot);
    for args in [
        &["--foreign-keys"][..],
        &["-I", "dtGvp", "--partitions=2"][..],
    ] {
        let outcome = run_pgbolt(&pgbolt_db, "postgres", &options(args));
        assert!(outcome.success, "{}", outcome.stderr);
    }
    assert_eq!(psql(&pgbolt_db, snapshot), before);
    assert_eq!(
        psql(&pgbolt_db, "select count(*) from pgbench_accounts").trim(),
        "100000"
    );
}

#[test]
fn tablespaces() {
    let _turn = exclusive();
    let db = server();
    let dir: PathBuf = db.root().join("init_ts");
    std::fs::create_dir_all(&dir).unwrap();
    let status = Command::new("chown")
        .arg(db.superuser())
        .arg(&dir)
        .status()
        .unwrap();
    assert!(status.success() || db.superuser() != "postgres");
    psql(
        "postgres",
        &format!("create tablespace init_ts location '{}'", dir.display()),
    );
    check(&["--tablespace=init_ts", "--index-tablespace=init_ts"]);
    check(&["--index-tablespace=init_ts", "--partitions=3"]);
}
