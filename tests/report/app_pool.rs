//! `--pool-size`: the clients share a few connections inside pgbolt, each
//! taking one for a transaction. Checked on a real server through what it
//! recorded: every client's transactions, the connections used, the
//! statements prepared on each, and the pool wait in the reports.

use std::process::Output;

use crate::common::{line, script_file, server, stderr, stdout, Run};

fn pgbolt(args: &[&str]) -> Output {
    Run::new("postgres", &[&["--no-monitor"], args].concat()).pgbolt()
}

/// Runs pgbolt with `args` and `--json`; its output and the JSON result.
fn pgbolt_json(name: &str, args: &[&str]) -> (Output, serde_json::Value) {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join(format!("{name}.json"));
    let json_arg = format!("--json={}", json.display());
    let mut all = args.to_vec();
    all.push(&json_arg);
    let out = pgbolt(&all);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&json).expect("JSON written");
    (out, serde_json::from_str(&text).expect("JSON result"))
}

fn psql(sql: &str) -> String {
    server().psql(sql).expect("psql runs").trim().to_string()
}

/// Each of 50 clients runs its 20 transactions over 4 connections (2 per
/// thread): 1000 rows, 20 per client, written by 4 backends.
#[test]
fn every_clients_transactions_run_on_the_pools_connections() {
    psql("CREATE TABLE pooled_tx (client int, backend int)");
    let script = script_file(
        "pooled_tx.sql",
        "INSERT INTO pooled_tx VALUES (:client_id, pg_backend_pid());\n",
    );
    let out = pgbolt(&[
        "-n",
        "-c",
        "50",
        "-j",
        "2",
        "--pool-size=4",
        "-t",
        "20",
        "-f",
        &script.path,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        line(&stdout(&out), "number of transactions actually processed"),
        Some("number of transactions actually processed: 1000/1000")
    );
    let rows = psql(
        "SELECT count(*), count(DISTINCT client), count(DISTINCT backend), \
         min(n), max(n) FROM pooled_tx \
         JOIN (SELECT client, count(*) AS n FROM pooled_tx GROUP BY client) c USING (client)",
    );
    assert_eq!(rows, "1000|50|4|20|20");
}

/// `-M prepared`: each statement is prepared once per connection, whichever
/// client runs it there. A second Parse of a name on one connection fails
/// (`already exists`), a missing one fails the execution, and either
/// aborts the client; each transaction also records how many statements
/// its connection has prepared.
#[test]
fn prepared_statements_belong_to_the_connection() {
    psql("CREATE TABLE pooled_prepared (backend int, prepared bigint)");
    let script = script_file(
        "pooled_prepared.sql",
        "SELECT 1;\n\
         INSERT INTO pooled_prepared SELECT pg_backend_pid(), count(*) FROM pg_prepared_statements;\n",
    );
    let out = pgbolt(&[
        "-n",
        "-M",
        "prepared",
        "-c",
        "30",
        "--pool-size=3",
        "-t",
        "10",
        "-f",
        &script.path,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("error"), "{}", stderr(&out));
    let rows = psql(
        "SELECT count(*), count(DISTINCT backend), min(prepared), max(prepared) FROM pooled_prepared",
    );
    assert_eq!(rows, "300|3|2|2");
}

/// Many clients on one connection wait for it: the wait has its own line,
/// JSON distribution (one entry per transaction) and HTML row, and is part
/// of the latency.
#[test]
fn the_pool_wait_is_reported() {
    let script = script_file("pooled_sleep.sql", "SELECT pg_sleep(0.002);\n");
    let (out, result) = pgbolt_json(
        "wait",
        &[
            "-n",
            "-c",
            "8",
            "--pool-size=1",
            "-t",
            "5",
            "-f",
            &script.path,
        ],
    );
    let text = stdout(&out);
    let wait = line(&text, "pool wait: average = ").expect("a pool wait line");
    assert!(
        wait.ends_with("(1 connections for 8 clients, included in the latency)"),
        "{wait}"
    );
    assert!(line(&text, "pool wait percentiles: ").is_some(), "{text}");
    assert_eq!(result["options"]["pool_size"], 1);
    let stats = &result["pool_wait"]["stats"];
    assert_eq!(stats["count"], 40);
    // Seven clients wait behind each 2 ms statement.
    let average_ms = result["pool_wait"]["average_ms"].as_f64().unwrap();
    assert!(average_ms > 1.0, "{average_ms}");
    let latency_ms = result["latency"]["average_ms"].as_f64().unwrap();
    assert!(latency_ms > average_ms, "{latency_ms} {average_ms}");
}

/// Under `-R` the wait is part of the schedule lag: each transaction's lag
/// runs from its scheduled start to its start on a connection, past the
/// moment its client asked for one.
#[test]
fn under_a_rate_the_wait_is_part_of_the_lag() {
    let script = script_file("pooled_rate.sql", "SELECT pg_sleep(0.001);\n");
    let (out, result) = pgbolt_json(
        "rate",
        &[
            "-n",
            "-c",
            "10",
            "--pool-size=1",
            "-R",
            "2000",
            "-t",
            "5",
            "-f",
            &script.path,
        ],
    );
    assert!(line(&stdout(&out), "rate limit schedule lag: ").is_some());
    let sum = |d: &str| result[d]["stats"]["sum"].as_u64().unwrap();
    assert_eq!(result["pool_wait"]["stats"]["count"], 50);
    assert!(sum("pool_wait") > 0);
    assert!(
        sum("lag") >= sum("pool_wait"),
        "{} {}",
        sum("lag"),
        sum("pool_wait")
    );
}

/// A timed run ends while clients wait in line; the run ends and reports.
#[test]
fn a_timed_run_ends_with_clients_waiting() {
    let script = script_file("pooled_select.sql", "SELECT 1;\n");
    let out = pgbolt(&[
        "-n",
        "-c",
        "20",
        "-j",
        "2",
        "--pool-size=2",
        "-T",
        "1",
        "-f",
        &script.path,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(line(&stdout(&out), "pool wait: average = ").is_some());
}

/// A script that leaves its transaction open aborts its client, as
/// without a pool, and the connection is closed rather than handed on in
/// the middle of a transaction; with none left, the waiting clients abort
/// too instead of waiting forever.
#[test]
fn clients_abort_when_the_pool_has_no_connection_left() {
    let script = script_file("pooled_open.sql", "BEGIN;\nSELECT 1;\n");
    let out = pgbolt(&[
        "-n",
        "-c",
        "6",
        "--pool-size=2",
        "-t",
        "3",
        "-f",
        &script.path,
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(
        err.matches("end of script reached without completing the last transaction")
            .count(),
        2,
        "{err}"
    );
    assert_eq!(
        err.matches("aborted: no pooled connection is left").count(),
        4,
        "{err}"
    );
}

/// Sizes and options a per-thread pool cannot honour are refused before
/// anything connects.
#[test]
fn impossible_pools_are_refused() {
    let cases: &[(&[&str], &str)] = &[
        (&["-c", "4", "--pool-size=5"], "--pool-size=5 must be at least the number of threads (1) and at most the number of clients (4)"),
        (&["-c", "8", "-j", "4", "--pool-size=2"], "--pool-size=2 must be at least the number of threads (4)"),
        (&["-c", "4", "--pool-size=0"], "--pool-size"),
        (&["-C", "-c", "4", "--pool-size=2"], "--pool-size with -C/--connect is not supported yet"),
        (&["--io=uring", "-c", "4", "--pool-size=2"], "--pool-size with --io=uring is not supported yet"),
        (&["--sweep=clients:2,4", "--pool-size=2"], "--pool-size with --sweep is not supported yet"),
    ];
    for (args, expected) in cases {
        let out = pgbolt(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(expected),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}
