//! Shared helpers of the `-i` tests: one throwaway server per test binary
//! (set up so that `vacuum` marks pages all-visible deterministically), a
//! fresh pair of databases per case, runners for pgbench and pgbolt, and
//! the catalog and data queries whose answers must be equal.

#![allow(dead_code)]

use std::num::NonZeroUsize;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use pgbolt::init::{self, InitOptions, InitSteps, PartitionMethod};
use pgbolt::tempdb::{self, TempDb};
use pgwire::conninfo::{Config, Host, HostKind, Secret};

use crate::common::pgbouncer::Bouncer;
use crate::common::sql::Session;
use crate::common::{pgbench_path, Run};

/// One server for this test binary, set up so that `vacuum` marks pages
/// all-visible deterministically (for pgbench and pgbolt alike): commits
/// are synchronous (with asynchronous commits, hint bits and hence
/// all-visible flags cannot be set until the WAL writer catches up), no
/// autovacuum worker holds back the visibility horizon, and no checkpointer
/// or background writer pins the pages vacuum wants to clean.
pub fn server() -> &'static TempDb {
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
pub fn exclusive() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A connection configuration for `dbname` on the shared server.
pub fn config(dbname: &str, user: &str) -> Config {
    let db = server();
    let host = Host {
        kind: HostKind::Unix(db.socket_dir().to_path_buf()),
        port: db.port(),
    };
    let mut config = Config::new(vec![host], user, dbname);
    config.password = Some(Secret::new(db.superuser_password()));
    config
}

/// Runs `sql` in `dbname` as the superuser; see [`Session::query`].
pub fn psql(dbname: &str, sql: &str) -> String {
    session(dbname).query(sql)
}

/// A session in `dbname` as the superuser, for several queries.
pub fn session(dbname: &str) -> Session {
    Session::open(server(), dbname)
}

/// A fresh pair of databases with `pg_visibility`: one for pgbench, one
/// for pgbolt.
pub fn database_pair() -> (String, String) {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    static TEMPLATE: OnceLock<()> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        psql("postgres", "create database init_template");
        psql("init_template", "create extension pg_visibility");
    });
    let pair = (format!("pgbench_{n}"), format!("pgbolt_{n}"));
    let mut postgres = session("postgres");
    for name in [&pair.0, &pair.1] {
        postgres.query(&format!("create database {name} template init_template"));
    }
    pair
}

/// The pgbench command line of a case, turned into pgbolt's options (the
/// command line itself is the CLI's business; these are the init options).
pub fn options(args: &[&str]) -> InitOptions {
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

pub struct Outcome {
    pub success: bool,
    pub stderr: String,
}

pub fn run_pgbench(dbname: &str, args: &[&str]) -> Outcome {
    run_pgbench_as(dbname, server().superuser(), args)
}

pub fn run_pgbench_as(dbname: &str, user: &str, args: &[&str]) -> Outcome {
    let command = Run::on(server(), dbname, &[])
        .env("PGUSER", user)
        .pgbench_command();
    pgbench_init(command, dbname, args)
}

pub fn pgbench_init(mut command: Command, dbname: &str, args: &[&str]) -> Outcome {
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

pub fn run_pgbolt(dbname: &str, user: &str, opts: &InitOptions) -> Outcome {
    pgbolt_init(&config(dbname, user), opts)
}

pub fn pgbolt_init(config: &Config, opts: &InitOptions) -> Outcome {
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
pub fn normalized(stderr: &str) -> Vec<String> {
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

/// The pages of the partitions, the same when pgbolt loads them as
/// pgbench does (one connection).
pub const PARTITION_PAGES: &[(&str, &str)] = &[(
    "partition pages",
    "select relname, relpages from pg_class
     where relnamespace = 'public'::regnamespace and relispartition order by 1",
)];

/// Everything about the pgbench tables a user or the planner can see.
pub const CATALOG: &[(&str, &str)] = &[
    (
        "relations",
        "select c.relname, c.relkind, c.relpersistence, coalesce(array_to_string(c.reloptions, ','), ''),
                coalesce(pg_get_expr(c.relpartbound, c.oid), ''), coalesce(pg_get_partkeydef(c.oid), ''),
                coalesce(t.spcname, ''),
                -- partitions loaded side by side end without the empty pages
                -- pgbench's one COPY leaves at their end (PostgreSQL 16 and
                -- later; docs/compatibility.md): see PARTITION_PAGES
                case when c.relispartition then null else c.relpages end,
                c.relallvisible
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

pub const DATA: &[(&str, &str)] = &[
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

pub fn tables_exist(dbname: &str) -> bool {
    psql(dbname, "select to_regclass('pgbench_accounts') is not null").trim() == "t"
}

pub fn compare(case: &str, pgbench_db: &str, pgbolt_db: &str, queries: &[(&str, &str)]) {
    if let Some(difference) = first_difference(pgbench_db, pgbolt_db, queries) {
        panic!("case {case}: {difference}");
    }
}

/// The first of `queries` whose rows differ between the two databases, in
/// words; `None` when they all agree.
fn first_difference(pgbench_db: &str, pgbolt_db: &str, queries: &[(&str, &str)]) -> Option<String> {
    let (mut pgbolt, mut pgbench) = (session(pgbolt_db), session(pgbench_db));
    queries.iter().find_map(|(what, sql)| {
        let (actual, expected) = (pgbolt.query(sql), pgbench.query(sql));
        (actual != expected)
            .then(|| format!("{what} differ\n  pgbolt: {actual:?}\n pgbench: {expected:?}"))
    })
}

/// Runs one case and compares everything.
pub fn check(args: &[&str]) {
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

/// A connection configuration for `dbname` through `bouncer`.
pub fn config_through(bouncer: &Bouncer, dbname: &str) -> Config {
    let mut config = config(dbname, "postgres");
    config.hosts = vec![Host {
        kind: HostKind::Unix(bouncer.socket_dir().to_path_buf()),
        port: bouncer.port(),
    }];
    config
}

/// `-i` through `bouncer` with `--init-jobs=4` against pgbench through it:
/// both succeed with the same messages and end states.
pub fn init_through(bouncer: &Bouncer, what: &str) {
    let cases: &[&[&str]] = &[
        &["-s", "1", "--partitions", "3"],
        &["-s", "1", "--partitions", "2", "-I", "dtGvpf"],
        &["-s", "1"],
    ];
    for args in cases {
        let case = format!("{what}, {}", args.join(" "));
        // Once more after a difference: seen twice under load (two test
        // binaries and clippy on two CPUs), and never alone, pgbolt's
        // parallel vacuum left `pgbench_branches` and `pgbench_tellers`
        // with `relallvisible` 0 against pgbench's 1 in the `-I dtGvpf`
        // case; a vacuum that cannot take a page's cleanup lock at once
        // (another process holds a pin) does not mark it all-visible.
        let difference = init_through_once(bouncer, &case, args)
            .and_then(|_| init_through_once(bouncer, &case, args));
        if let Some(difference) = difference {
            panic!("case {case}, twice: {difference}");
        }
    }
}

/// One initialization of `args` by pgbench and by pgbolt through
/// `bouncer`: the first difference in the tables they made, if any.
fn init_through_once(bouncer: &Bouncer, case: &str, args: &[&str]) -> Option<String> {
    let (pgbench_db, pgbolt_db) = database_pair();
    let expected = pgbench_init(bouncer.command(pgbench_path()), &pgbench_db, args);
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
    first_difference(&pgbench_db, &pgbolt_db, CATALOG)
        .or_else(|| first_difference(&pgbench_db, &pgbolt_db, DATA))
}
