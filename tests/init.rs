//! `-i` against the real pgbench: for each option combination, pgbench
//! initializes one database and pgbolt another on the same throwaway
//! server; the catalogs, the rows, the visibility of the pages and the
//! messages must be the same.

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use pgbolt::init::{self, InitOptions, InitSteps, PartitionMethod};
use pgbolt::tempdb::{self, TempDb};
use pgwire::conninfo::{Config, Host, HostKind, Secret};

#[path = "common/mod.rs"]
#[allow(unused)]
mod common;

use common::pgbouncer::{Bouncer, PoolMode};
use common::PGBENCH;

/// One server for this test binary, set up so that `vacuum` marks pages
/// all-visible deterministically (for pgbench and pgbolt alike): commits
/// are synchronous (with asynchronous commits, hint bits and hence
/// all-visible flags cannot be set until the WAL writer catches up), no
/// autovacuum worker holds back the visibility horizon, and no checkpointer
/// or background writer pins the pages vacuum wants to clean.
fn server() -> &'static TempDb {
    static SERVER: OnceLock<Result<TempDb, tempdb::Error>> = OnceLock::new();
    let server = SERVER.get_or_init(|| {
        tempdb::install_signal_cleanup()?;
        TempDb::builder()
            .setting("synchronous_commit", "on")
            .setting("autovacuum", "off")
            .setting("max_wal_size", "20GB")
            .setting("checkpoint_timeout", "1h")
            .setting("bgwriter_lru_maxpages", "0")
            .start()
    });
    match server {
        Ok(db) => db,
        Err(e) => panic!("cannot start a throwaway server: {e}"),
    }
}

/// Tests take turns: work in one database (a checkpoint, a `create
/// database`) would otherwise pin buffers that a concurrent `vacuum` in
/// another wants to clean, leaving pages not all-visible at random.
fn exclusive() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A connection configuration for `dbname` on the shared server.
fn config(dbname: &str, user: &str) -> Config {
    let db = server();
    let host = Host {
        kind: HostKind::Unix(db.socket_dir().to_path_buf()),
        port: db.port(),
    };
    let mut config = Config::new(vec![host], user, dbname);
    config.password = Some(Secret::new(db.superuser_password()));
    config
}

fn psql(dbname: &str, sql: &str) -> String {
    let db = server();
    let output = db
        .command("psql")
        .args([
            "-X",
            "-q",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            dbname,
            "-c",
            sql,
        ])
        .output()
        .expect("psql runs");
    assert!(
        output.status.success(),
        "psql failed on {sql}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A fresh pair of databases: one for pgbench, one for pgbolt.
fn database_pair() -> (String, String) {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let pair = (format!("pgbench_{n}"), format!("pgbolt_{n}"));
    for name in [&pair.0, &pair.1] {
        psql("postgres", &format!("create database {name}"));
        psql(name, "create extension pg_visibility");
    }
    pair
}

/// The pgbench command line of a case, turned into pgbolt's options (the
/// command line itself is the CLI's business; these are the init options).
fn options(args: &[&str]) -> InitOptions {
    let mut opts = InitOptions::default();
    let mut i = 0;
    while i < args.len() {
        let (flag, inline) = match args[i].split_once('=') {
            Some((f, v)) => (f, Some(v.to_string())),
            None => (args[i], None),
        };
        let mut value = || {
            inline.clone().unwrap_or_else(|| {
                i += 1;
                args[i].to_string()
            })
        };
        match flag {
            "-s" => opts.scale = value().parse().unwrap(),
            "-I" => opts.steps = Some(InitSteps::parse(&value()).unwrap()),
            "-F" => opts.fillfactor = value().parse().unwrap(),
            "-n" => opts.no_vacuum = true,
            "-q" => opts.quiet = true,
            "--foreign-keys" => opts.foreign_keys = true,
            "--unlogged-tables" => opts.unlogged_tables = true,
            "--partitions" => opts.partitions = value().parse().unwrap(),
            "--partition-method" => opts.partition_method = PartitionMethod::parse(&value()),
            "--tablespace" => opts.tablespace = Some(value()),
            "--index-tablespace" => opts.index_tablespace = Some(value()),
            other => panic!("case uses an option this test does not map: {other}"),
        }
        i += 1;
    }
    opts
}

struct Outcome {
    success: bool,
    stderr: String,
}

fn run_pgbench(dbname: &str, args: &[&str]) -> Outcome {
    run_pgbench_as(dbname, server().superuser(), args)
}

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

fn run_pgbench_as(dbname: &str, user: &str, args: &[&str]) -> Outcome {
    let db = server();
    let mut command = Command::new(PGBENCH);
    command
        .env("PGHOST", db.socket_dir())
        .env("PGPORT", db.port().to_string())
        .env("PGUSER", user)
        .env("PGPASSWORD", db.superuser_password());
    pgbench_init(command, dbname, args)
}

fn pgbench_init(mut command: Command, dbname: &str, args: &[&str]) -> Outcome {
    let output = command
        .env_remove("PGDATABASE")
        .arg("-i")
        .args(args)
        .arg(dbname)
        .output()
        .expect("pgbench runs");
    Outcome {
        success: output.status.success(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn run_pgbolt(dbname: &str, user: &str, opts: &InitOptions) -> Outcome {
    pgbolt_init(&config(dbname, user), opts)
}

fn pgbolt_init(config: &Config, opts: &InitOptions) -> Outcome {
    let mut stderr = Vec::new();
    let result = init::run_with_terminal(opts, config, &mut stderr, false);
    let mut stderr = String::from_utf8(stderr).expect("messages are UTF-8");
    if let Err(e) = &result {
        stderr.push_str(&e.report("pgbolt"));
    }
    Outcome {
        success: result.is_ok(),
        stderr,
    }
}

/// Messages with the unstable parts replaced: timings, the program name,
/// and the table name pgbench 16+ adds to progress lines (the oracle is 15).
fn normalized(stderr: &str) -> Vec<String> {
    let times = regex::Regex::new(r"\d+\.\d\d s").unwrap();
    let table = regex::Regex::new(r"\) of pgbench_\w+ done").unwrap();
    stderr
        .lines()
        .map(|line| {
            let line = line.replace("pgbolt:", "pgbench:");
            let line = table.replace_all(&line, ") done");
            times.replace_all(&line, "T s").into_owned()
        })
        .collect()
}

/// Everything about the pgbench tables a user or the planner can see.
const CATALOG: &[(&str, &str)] = &[
    (
        "relations",
        "select c.relname, c.relkind, c.relpersistence, coalesce(array_to_string(c.reloptions, ','), ''),
                coalesce(pg_get_expr(c.relpartbound, c.oid), ''), coalesce(pg_get_partkeydef(c.oid), ''),
                coalesce(t.spcname, ''), c.relpages,
                -- pgbench 15 fills branches and tellers with INSERTs, 16 and
                -- later (and pgbolt) with COPY FREEZE, which marks pages visible
                case when c.relname in ('pgbench_branches', 'pgbench_tellers')
                     then null else c.relallvisible end
         from pg_class c left join pg_tablespace t on t.oid = c.reltablespace
         where c.relnamespace = 'public'::regnamespace and c.relname like 'pgbench%' order by 1",
    ),
    (
        "columns",
        "select a.attrelid::regclass::text, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull
         from pg_attribute a join pg_class c on c.oid = a.attrelid
         where c.relnamespace = 'public'::regnamespace and c.relname like 'pgbench%'
           and c.relkind in ('r', 'p') and a.attnum > 0 and not a.attisdropped order by 1, a.attnum",
    ),
    (
        "indexes",
        "select i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid), i.indisprimary
         from pg_index i join pg_class c on c.oid = i.indrelid
         where c.relnamespace = 'public'::regnamespace order by 1",
    ),
    (
        "constraints",
        "select conrelid::regclass::text, conname, pg_get_constraintdef(oid), conislocal, coninhcount
         from pg_constraint where connamespace = 'public'::regnamespace order by 1, 2",
    ),
    (
        "inheritance",
        "select inhrelid::regclass::text, inhparent::regclass::text from pg_inherits order by 1",
    ),
];

const DATA: &[(&str, &str)] = &[
    (
        "branches",
        "select count(*), md5(string_agg(t::text, ',' order by bid)) from pgbench_branches t",
    ),
    (
        "tellers",
        "select count(*), md5(string_agg(t::text, ',' order by tid)) from pgbench_tellers t",
    ),
    (
        "accounts",
        "select tableoid::regclass::text, count(*), md5(string_agg(t::text, ',' order by aid))
         from pgbench_accounts t group by 1 order by 1",
    ),
    (
        "physical order of accounts",
        "select tableoid::regclass::text, md5(string_agg(aid::text, ',' order by ctid))
         from pgbench_accounts group by 1 order by 1",
    ),
    ("history", "select count(*) from pgbench_history"),
    (
        "account pages",
        "select c.relname, v.all_visible, v.all_frozen
         from pg_class c, pg_visibility_map_summary(c.oid) v
         where c.relname like 'pgbench_accounts%' and c.relkind = 'r' order by 1",
    ),
];

fn tables_exist(dbname: &str) -> bool {
    psql(dbname, "select to_regclass('pgbench_accounts') is not null").trim() == "t"
}

fn compare(case: &str, pgbench_db: &str, pgbolt_db: &str, queries: &[(&str, &str)]) {
    for (what, sql) in queries {
        assert_eq!(
            psql(pgbolt_db, sql),
            psql(pgbench_db, sql),
            "case {case}: {what} differ"
        );
    }
}

/// Runs one case and compares everything.
fn check(args: &[&str]) {
    let case = args.join(" ");
    let (pgbench_db, pgbolt_db) = database_pair();
    let expected = run_pgbench(&pgbench_db, args);
    let actual = run_pgbolt(&pgbolt_db, "postgres", &options(args));
    assert_eq!(
        actual.success, expected.success,
        "case {case}: {}",
        actual.stderr
    );
    assert_eq!(
        normalized(&actual.stderr),
        normalized(&expected.stderr),
        "case {case}: messages differ"
    );
    compare(&case, &pgbench_db, &pgbolt_db, CATALOG);
    if tables_exist(&pgbench_db) {
        compare(&case, &pgbench_db, &pgbolt_db, DATA);
    }
}

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
/// the partitions; pgbolt follows 18, the oracle here is 15.
#[test]
fn unlogged_partitions_follow_pgbench_18() {
    let _turn = exclusive();
    let args = ["--partitions=2", "--unlogged-tables", "-F", "90"];
    let (pgbench_db, pgbolt_db) = database_pair();
    let expected = run_pgbench(&pgbench_db, &args);
    let actual = run_pgbolt(&pgbolt_db, "postgres", &options(&args));
    assert!(expected.success && actual.success, "{}", actual.stderr);
    assert_eq!(normalized(&actual.stderr), normalized(&expected.stderr));
    compare(
        "unlogged partitions",
        &pgbench_db,
        &pgbolt_db,
        &CATALOG[1..],
    );
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
/// pgbolt) look at the table and leave FREEZE out; pgbench 15 decides by
/// the option and fails with `cannot perform COPY FREEZE on a partitioned
/// table`. The rows and pages are those pgbench 15 gives when told
/// `--partitions`.
#[test]
fn existing_partitions_are_loaded_as_pgbench_16_does() {
    let _turn = exclusive();
    let (pgbench_db, pgbolt_db) = database_pair();
    for db in [&pgbench_db, &pgbolt_db] {
        assert!(run_pgbench(db, &["-I", "dt", "--partitions=3"]).success);
    }
    let pgbench_15 = run_pgbench(&pgbench_db, &["-I", "g"]);
    assert!(!pgbench_15.success);
    assert!(
        pgbench_15
            .stderr
            .contains("cannot perform COPY FREEZE on a partitioned table"),
        "{}",
        pgbench_15.stderr
    );
    assert!(run_pgbench(&pgbench_db, &["-I", "g", "--partitions=3"]).success);
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
#[test]
fn extra_connections_outlive_no_step() {
    let _turn = exclusive();
    let args = ["-s", "2", "-I", "dtvGp"];
    let (pgbench_db, pgbolt_db) = database_pair();
    for db in [&pgbench_db, &pgbolt_db] {
        psql(
            "postgres",
            &format!("alter database {db} set idle_session_timeout = '100ms'"),
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
            .contains("only table or database owner can vacuum it"),
        "{}",
        expected.stderr
    );
    assert_eq!(normalized(&actual.stderr), normalized(&expected.stderr));
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

/// A connection configuration for `dbname` through `bouncer`.
fn config_through(bouncer: &Bouncer, dbname: &str) -> Config {
    let mut config = config(dbname, "postgres");
    config.hosts = vec![Host {
        kind: HostKind::Unix(bouncer.socket_dir().to_path_buf()),
        port: bouncer.port(),
    }];
    config
}

/// `-i` through `bouncer` with `--init-jobs=4` against pgbench through it:
/// both succeed with the same messages and end states.
fn init_through(bouncer: &Bouncer, what: &str) {
    let cases: &[&[&str]] = &[
        &["-s", "1", "--partitions", "3"],
        &["-s", "1", "--partitions", "2", "-I", "dtGvpf"],
        &["-s", "1"],
    ];
    for args in cases {
        let case = format!("{what}, {}", args.join(" "));
        let (pgbench_db, pgbolt_db) = database_pair();
        let expected = pgbench_init(bouncer.command(PGBENCH), &pgbench_db, args);
        let config = config_through(bouncer, &pgbolt_db);
        let mut opts = options(args);
        opts.jobs = NonZeroUsize::new(4);
        let actual = pgbolt_init(&config, &opts);
        assert!(expected.success, "case {case}: {}", expected.stderr);
        assert!(actual.success, "case {case}: {}", actual.stderr);
        assert_eq!(
            normalized(&actual.stderr),
            normalized(&expected.stderr),
            "case {case}: messages differ"
        );
        compare(&case, &pgbench_db, &pgbolt_db, CATALOG);
        compare(&case, &pgbench_db, &pgbolt_db, DATA);
    }
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
    let expected = pgbench_init(bouncer.command(PGBENCH), &pgbench_db, &[]);
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
