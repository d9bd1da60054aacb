//! What the failover tests share: a run in the background, polling, and
//! the checks every scenario makes of a result.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use pgbolt::tempdb::TempDb;

use crate::common::standby::as_server_user;
use serde_json::Value;

/// Polls `check` every 50 ms until it holds; fails after `within`.
pub fn wait_until(what: &str, within: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Rows of `pgbench_history` in `dbname`, or none when the server does
/// not answer.
pub fn history_rows(db: &TempDb, dbname: &str) -> Option<i64> {
    db.psql_in(dbname, "SELECT count(*) FROM pgbench_history")
        .ok()
        .and_then(|out| out.trim().parse().ok())
}

/// Runs `command` in the background and, once `ready` holds (`what` it
/// waits for, at most 60 s), does `outage` to the server; then waits for
/// the run to end: its output.
pub fn run_through(
    command: Command,
    what: &str,
    ready: impl FnMut() -> bool,
    outage: impl FnOnce(),
) -> Output {
    let child = start(command);
    wait_until(what, Duration::from_secs(60), ready);
    outage();
    finish(child)
}

/// At least `rows` rows in `pgbench_history` (see [`run_through`]).
pub fn history_reaches<'a>(
    db: &'a TempDb,
    dbname: &'a str,
    rows: i64,
) -> impl FnMut() -> bool + 'a {
    move || history_rows(db, dbname).is_some_and(|n| n >= rows)
}

/// Restarts `db`'s server (`pg_ctl restart -m fast`), logging where it did.
pub fn restart(db: &TempDb) {
    let data = db.data_dir().display().to_string();
    let log = db.log_file().display().to_string();
    as_server_user(
        &db.bin("pg_ctl"),
        &["-D", &data, "-l", &log, "-m", "fast", "-w", "restart"],
    );
}

/// Stops `db`'s server (`pg_ctl stop -m fast`).
pub fn stop(db: &TempDb) {
    let data = db.data_dir().display().to_string();
    as_server_user(
        &db.bin("pg_ctl"),
        &["-D", &data, "-m", "fast", "-w", "stop"],
    );
}

/// A program started with its output captured.
pub fn start(mut cmd: Command) -> Child {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("program starts")
}

pub fn finish(child: Child) -> Output {
    child.wait_with_output().expect("program ends")
}

/// The JSON result written to `path`.
pub fn result(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("JSON result written");
    serde_json::from_str(&text).expect("JSON result parses")
}

/// What every scenario must show: each client that lost its connection
/// came back and has a downtime, the failed transactions are all
/// classified, and committed + failed + skipped add up to the
/// transactions scheduled (`-t` times the clients), when it is known.
pub fn check_outage(json: &Value, clients: u64, scheduled: Option<u64>) -> &Value {
    let counts = &json["counts"];
    let committed = counts["committed"].as_u64().expect("committed");
    let skipped = counts["skipped"].as_u64().expect("skipped");
    let failed = counts["failed"].as_u64().expect("failed");
    if let Some(scheduled) = scheduled {
        assert_eq!(committed + failed + skipped, scheduled, "{counts}");
    }
    let outage = &json["outage"];
    assert_eq!(outage["clients_hit"], clients, "{outage}");
    assert_eq!(outage["clients_back"], clients, "{outage}");
    let hit: Vec<&Value> = outage["clients"]
        .as_array()
        .expect("clients")
        .iter()
        .filter(|c| !c["first_error_us"].is_null())
        .collect();
    assert_eq!(hit.len() as u64, clients, "{outage}");
    for c in hit {
        for moment in ["first_error_us", "reconnected_us", "first_commit_after_us"] {
            assert!(c[moment].is_i64(), "{moment} of {c}");
        }
        assert!(!c["gave_up"].as_bool().expect("gave_up"), "{c}");
    }
    let f = &outage["failures"];
    let classified = f["not_committed"].as_u64().unwrap_or(0)
        + f["in_doubt"].as_u64().unwrap_or(0)
        + f["read_only"].as_u64().unwrap_or(0);
    assert_eq!(classified, failed, "every failure classified: {f}");
    assert!(failed >= clients, "{f}");
    for p in ["downtime_p50_us", "downtime_p99_us", "downtime_max_us"] {
        assert!(outage[p].as_i64().is_some_and(|us| us > 0), "{p}: {outage}");
    }
    outage
}

/// The acknowledged commits checked after the run: none lost (the
/// surviving server had every commit acknowledged), and no more commits
/// found than acknowledged and in doubt.
pub fn check_no_acknowledged_commit_lost(outage: &Value) {
    let check = &outage["commit_check"];
    let found = check["after"].as_i64().expect("after") - check["before"].as_i64().expect("before");
    let acknowledged = check["acknowledged"].as_i64().expect("acknowledged");
    let in_doubt = check["in_doubt"].as_i64().expect("in_doubt");
    assert!(acknowledged > 0, "{check}");
    assert!(found >= acknowledged, "acknowledged commits lost: {check}");
    assert!(found <= acknowledged + in_doubt, "{check}");
}

/// The run's outage as the clients saw it and the server's write gap
/// agree within 200 ms, plus how far apart the clients' first commits
/// after it were: the server's gap ends with the first commit after the
/// switch, the run's outage with the last client's, and on a loaded
/// machine the clients come back one after another (270 ms apart seen
/// with two test binaries and clippy on two CPUs; within 107 ms in every
/// run on a quieter one).
pub fn check_against_server_gap(outage: &Value) -> (i64, i64) {
    let run = outage["end_us"].as_i64().expect("end") - outage["start_us"].as_i64().expect("start");
    let gap = &outage["server_gap"];
    let server = gap["first_after_us"].as_i64().expect("first after")
        - gap["last_before_us"].as_i64().expect("last before");
    let back: Vec<i64> = outage["clients"]
        .as_array()
        .expect("clients")
        .iter()
        .filter_map(|c| c["first_commit_after_us"].as_i64())
        .collect();
    let spread = back.iter().max().unwrap_or(&0) - back.iter().min().unwrap_or(&0);
    assert!(
        run - server >= -200_000 && run - server <= 200_000 + spread,
        "run {run} us, server gap {server} us, clients back over {spread} us: {outage}"
    );
    (run, server)
}
