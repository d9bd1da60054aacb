//! One server restarted (`pg_ctl restart -m fast`) during a run: every
//! client reconnects to it and goes on. The run is paced (`-R`, `-L`) so
//! that the restart falls inside it and the transactions due during the
//! outage are late or skipped, and bounded by `-t` so that what was
//! scheduled is known.

use pgbolt::tempdb::TempDb;

use crate::common::{self, Run};
use crate::support::{
    check_against_server_gap, check_no_acknowledged_commit_lost, check_outage, history_reaches,
    restart, result, run_through, stop,
};

#[test]
fn every_client_reconnects_after_a_fast_restart() {
    let db = TempDb::builder().start().expect("server starts");
    let dbname = common::bench_database(&db, &["-s", "1"]);
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("run.json");
    let json_arg = format!("--json={}", json.display());
    let run = Run::on(
        &db,
        &dbname,
        &[
            "-c",
            "4",
            "-j",
            "2",
            "-R",
            "400",
            "-L",
            "200",
            "-t",
            "600",
            "--reconnect=30",
            &json_arg,
        ],
    );
    let out = run_through(
        run.pgbolt_command(),
        "transactions before the restart",
        history_reaches(&db, &dbname, 100),
        || restart(&db),
    );
    let stdout = common::stdout(&out);
    let stderr = common::stderr(&out);
    stop(&db);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("outage: 4 clients lost their connection, 4 came back; "),
        "{stdout}"
    );
    assert!(stderr.contains("reconnecting"), "{stderr}");
    let json = result(&json);
    let outage = check_outage(&json, 4, Some(2400));
    // One server: each client comes back to the host it left.
    for c in outage["clients"].as_array().expect("clients") {
        assert_eq!(c["host_before"], c["host_after"], "{c}");
    }
    check_no_acknowledged_commit_lost(outage);
    let (run, server) = check_against_server_gap(outage);
    println!("outage {run} us, server-side gap {server} us");
}

/// pgbench 18.6 under the same restart: every client aborts at the
/// first lost connection, and the run ends with status 2 (what
/// `--reconnect` is for).
#[test]
fn pgbench_clients_abort_under_the_same_restart() {
    let db = TempDb::builder().start().expect("server starts");
    let dbname = common::bench_database(&db, &["-s", "1"]);
    let run = Run::on(
        &db,
        &dbname,
        &["-c", "4", "-j", "2", "-R", "400", "-L", "200", "-t", "600"],
    );
    let out = run_through(
        run.pgbench_command(),
        "transactions before the restart",
        history_reaches(&db, &dbname, 100),
        || restart(&db),
    );
    stop(&db);
    let stderr = common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.matches("aborted in command").count(), 4, "{stderr}");
    assert!(stderr.contains("Run was aborted"), "{stderr}");
    let processed = common::line(
        &common::stdout(&out),
        "number of transactions actually processed: ",
    )
    .expect("processed line")
    .to_owned();
    assert!(!processed.starts_with("2400/"), "{processed}");
}

/// A server that does not come back: each client gives up `--reconnect`'s
/// wait after its first error, the run ends with status 2 and its results
/// so far, and the outage says no client came back.
#[test]
fn clients_give_up_after_the_wait_when_the_server_stays_down() {
    let db = TempDb::builder().start().expect("server starts");
    let dbname = common::bench_database(&db, &["-s", "1"]);
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("run.json");
    let json_arg = format!("--json={}", json.display());
    let run = Run::on(
        &db,
        &dbname,
        &[
            "-c",
            "2",
            "-R",
            "200",
            "-T",
            "60",
            "--reconnect=1.5",
            &json_arg,
        ],
    );
    let out = run_through(
        run.pgbolt_command(),
        "transactions before the stop",
        history_reaches(&db, &dbname, 50),
        || stop(&db),
    );
    let stdout = common::stdout(&out);
    let stderr = common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert_eq!(
        stderr
            .matches("aborted: no connection within 1.500 s of losing it")
            .count(),
        2,
        "{stderr}"
    );
    assert!(stderr.contains("Run was aborted"), "{stderr}");
    assert!(
        stdout.contains("outage: 2 clients lost their connection, 0 came back; first error at "),
        "{stdout}"
    );
    let json = result(&json);
    let outage = &json["outage"];
    assert_eq!(outage["clients_back"], 0, "{outage}");
    assert!(outage["end_us"].is_null(), "{outage}");
    for c in outage["clients"].as_array().expect("clients") {
        assert_eq!(c["gave_up"], true, "{c}");
    }
}

/// A script of its own: `--committed-query` counts its commits before
/// and after the run, and an insert whose answer was lost is in doubt.
#[test]
fn a_committed_query_checks_a_scripts_own_commits_through_a_restart() {
    let db = TempDb::builder().start().expect("server starts");
    let dbname = common::new_database(&db);
    db.psql_in(&dbname, "CREATE TABLE orders (id bigserial PRIMARY KEY)")
        .expect("create table");
    let script = common::script_file("order.sql", "INSERT INTO orders DEFAULT VALUES;\n");
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("run.json");
    let json_arg = format!("--json={}", json.display());
    let run = Run::on(
        &db,
        &dbname,
        &[
            "-n",
            "-c",
            "2",
            "-R",
            "300",
            "-t",
            "600",
            "-f",
            &script.path,
            "--reconnect=30",
            "--committed-query=SELECT count(*) FROM orders",
            &json_arg,
        ],
    );
    let out = run_through(
        run.pgbolt_command(),
        "inserts before the restart",
        || {
            db.psql_in(&dbname, "SELECT count(*) FROM orders")
                .ok()
                .and_then(|n| n.trim().parse::<i64>().ok())
                .is_some_and(|n| n >= 50)
        },
        || restart(&db),
    );
    let stdout = common::stdout(&out);
    let stderr = common::stderr(&out);
    stop(&db);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let json = result(&json);
    let outage = check_outage(&json, 2, Some(1200));
    assert_eq!(outage["commit_check"]["counted_by"], "--committed-query");
    assert_eq!(
        outage["commit_check"]["acknowledged"], json["counts"]["committed"],
        "{outage}"
    );
    check_no_acknowledged_commit_lost(outage);
    assert!(outage.get("server_gap").is_none(), "{outage}");
    assert!(
        stdout.contains("commits checked (--committed-query): "),
        "{stdout}"
    );
}
