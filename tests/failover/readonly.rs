//! A server that turns read-only during a run (`default_transaction_read_only`
//! set and the configuration reloaded, as a demoted primary refuses
//! writes with SQLSTATE 25006) and writable again: each client leaves
//! its connection at the refusal, finds no read-write server
//! (`target_session_attrs=read-write`) until the setting is back off,
//! then goes on.

use std::time::Duration;

use pgbolt::tempdb::TempDb;

use crate::common::{self, Run};
use crate::support::{check_outage, history_reaches, result, run_through, wait_until};

/// Refusals the server logged so far.
fn refusals(db: &TempDb) -> usize {
    std::fs::read_to_string(db.log_file())
        .unwrap_or_default()
        .matches("in a read-only transaction")
        .count()
}

fn set_read_only(db: &TempDb, on: bool) {
    db.psql(&format!(
        "ALTER SYSTEM SET default_transaction_read_only = {on}"
    ))
    .expect("alter system");
    db.psql("SELECT pg_reload_conf()").expect("reload");
}

#[test]
fn clients_leave_a_server_that_refuses_writes_and_come_back() {
    let db = TempDb::builder().start().expect("server starts");
    let dbname = common::bench_database(&db, &["-s", "1"]);
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("run.json");
    let json_arg = format!("--json={}", json.display());
    let conninfo = format!(
        "host={} port={} dbname={dbname} user={} target_session_attrs=read-write",
        db.socket_dir().display(),
        db.port(),
        db.superuser()
    );
    let run = Run::on(
        &db,
        &dbname,
        &[
            "-c",
            "2",
            "-R",
            "200",
            "-L",
            "300",
            "-t",
            "600",
            "--reconnect=30",
            &json_arg,
            &conninfo,
        ],
    );
    let out = run_through(
        run.pgbolt_command(),
        "transactions before the refusal",
        history_reaches(&db, &dbname, 100),
        || {
            let before = refusals(&db);
            set_read_only(&db, true);
            wait_until("both clients refused", Duration::from_secs(60), || {
                refusals(&db) >= before + 2
            });
            set_read_only(&db, false);
        },
    );
    let stdout = common::stdout(&out);
    let stderr = common::stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("(transaction refused by a read-only server); reconnecting"),
        "{stderr}"
    );
    let json = result(&json);
    let outage = check_outage(&json, 2, Some(1200));
    assert!(
        outage["failures"]["read_only"]
            .as_u64()
            .is_some_and(|n| n >= 2),
        "{outage}"
    );
}
