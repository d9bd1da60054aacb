//! Shared helpers of the engine tests: a fresh database per test
//! initialized with the real pgbench, and short forms of `tests/common`'s
//! [`Run`] for pgbolt and pgbench with the same arguments on the shared
//! server.

#![allow(dead_code)]

use std::process::{Command, Output};

use crate::common;
pub use crate::common::{line, server, stderr, stdout, Run, ScriptFile};

/// Waits until a backend of application `app` on the shared server is on
/// its second statement like `statement` (see the common helper).
pub fn wait_for_second_statement(app: &str, statement: &str) {
    common::wait_for_second_statement(server(), app, statement);
}

/// A fresh database, initialized with `pgbench -i -s scale` when `scale`
/// is given.
pub fn database(scale: Option<u32>) -> String {
    match scale {
        Some(scale) => common::bench_database(server(), &["-s", &scale.to_string()]),
        None => common::new_database(server()),
    }
}

pub fn pgbolt_command(dbname: &str, args: &[&str]) -> Command {
    Run::new(dbname, args).pgbolt_command()
}

pub fn pgbolt(dbname: &str, args: &[&str]) -> Output {
    Run::new(dbname, args).pgbolt()
}

pub fn pgbench_command(dbname: &str, args: &[&str]) -> Command {
    Run::new(dbname, args).pgbench_command()
}

pub fn pgbench(dbname: &str, args: &[&str]) -> Output {
    Run::new(dbname, args).pgbench()
}

/// Runs SQL in `dbname` and returns psql's unaligned output.
pub fn sql(dbname: &str, query: &str) -> String {
    server()
        .psql(&format!("\\c {dbname}\n{query}"))
        .expect("psql runs")
        .trim()
        .to_owned()
}

pub fn script(text: &str) -> ScriptFile {
    common::script_file("script.sql", text)
}

/// `sum(abalance)`, `sum(tbalance)`, `sum(bbalance)`, `sum(delta)`.
pub fn ledger(dbname: &str) -> Vec<String> {
    sql(
        dbname,
        "select (select coalesce(sum(abalance),0) from pgbench_accounts), \
         (select coalesce(sum(tbalance),0) from pgbench_tellers), \
         (select coalesce(sum(bbalance),0) from pgbench_branches), \
         (select coalesce(sum(delta),0) from pgbench_history)",
    )
    .split('|')
    .map(str::to_owned)
    .collect()
}

/// Runs the same script with both programs into fresh tables and returns
/// (pgbolt's rows, pgbench's rows).
pub fn both_into_table(script_text: &str, args: &[&str]) -> (String, String) {
    let db = database(None);
    sql(
        &db,
        "create table t (client int, a text, b text, c text, d text)",
    );
    let file = script(script_text);
    let mut full = vec!["-n", "-f", file.path.as_str()];
    full.extend_from_slice(args);
    let ours = pgbolt(&db, &full);
    assert!(ours.status.success(), "{}", stderr(&ours));
    let mine = sql(&db, "select * from t order by 1, 2, 3, 4, 5");
    sql(&db, "truncate t");
    let theirs = pgbench(&db, &full);
    assert!(theirs.status.success(), "{}", stderr(&theirs));
    (mine, sql(&db, "select * from t order by 1, 2, 3, 4, 5"))
}

/// The exit status and standard error of both programs.
pub fn both_fail(
    script_text: &str,
    args: &[&str],
) -> ((Option<i32>, String), (Option<i32>, String)) {
    let db = database(None);
    let file = script(script_text);
    let mut full = vec!["-n", "-f", file.path.as_str()];
    full.extend_from_slice(args);
    let ours = pgbolt(&db, &full);
    let theirs = pgbench(&db, &full);
    (
        (ours.status.code(), stderr(&ours).replace("pgbolt", "PROG")),
        (
            theirs.status.code(),
            stderr(&theirs).replace("pgbench", "PROG"),
        ),
    )
}

/// N of `number of transactions actually processed: N` (a `-T` run).
pub fn processed(out: &Output) -> u64 {
    line(&stdout(out), "number of transactions actually processed: ")
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("processed count")
}

/// Whether pgbolt's io_uring driver runs here: where the kernel forbids
/// io_uring, `--io=uring` exits at once, saying so.
pub fn uring_usable(db: &str) -> bool {
    let file = script("SELECT 1;\n");
    let out = pgbolt_command(
        db,
        &["-n", "-t", "1", "--io=uring", "-f", file.path.as_str()],
    )
    .output()
    .expect("pgbolt runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() || err.contains("io_uring cannot be used here"),
        "{err}"
    );
    out.status.success()
}

/// A fresh database in `encoding` (collation C) with table
/// `t (m text, v text)`.
pub fn database_in(encoding: &str) -> String {
    let base = database(None);
    let name = format!("{base}_{}", encoding.to_lowercase().replace('_', ""));
    server()
        .psql(&format!(
            "CREATE DATABASE {name} ENCODING '{encoding}' LOCALE 'C' TEMPLATE template0"
        ))
        .expect("create database");
    sql(&name, "create table t (m text, v text)");
    name
}
