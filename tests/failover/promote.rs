//! A primary and its streaming standby (`pg_basebackup -R`), synchronous;
//! the primary stopped and the standby promoted during a run through
//! `host=A,B target_session_attrs=read-write`: every client finds the new
//! primary, and no acknowledged commit is lost.

use std::time::Duration;

use pgbolt::tempdb::TempDb;

use crate::common::standby::Standby;
use crate::common::{self, Run};
use crate::support::{
    check_against_server_gap, check_no_acknowledged_commit_lost, check_outage, history_reaches,
    result, run_through, stop, wait_until,
};

#[test]
fn clients_follow_a_promoted_standby_and_lose_no_acknowledged_commit() {
    let primary = TempDb::builder().start().expect("primary starts");
    let dbname = common::bench_database(&primary, &["-s", "1"]);
    let standby = Standby::of(&primary);
    primary
        .psql(
            "ALTER SYSTEM SET synchronous_standby_names = '*'; \
             ALTER SYSTEM SET synchronous_commit = on",
        )
        .expect("synchronous replication");
    primary.psql("SELECT pg_reload_conf()").expect("reload");
    wait_until("a synchronous standby", Duration::from_secs(60), || {
        primary
            .psql("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'")
            .is_ok_and(|n| n.trim() == "1")
    });
    let conninfo = format!(
        "host={},{} port={},{} dbname={dbname} user={} target_session_attrs=read-write",
        primary.socket_dir().display(),
        standby.socket_dir().display(),
        primary.port(),
        standby.port,
        primary.superuser()
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("run.json");
    let json_arg = format!("--json={}", json.display());
    let html = dir.path().join("run.html");
    let html_arg = format!("--html={}", html.display());
    let run = Run::on(
        &primary,
        &dbname,
        &[
            "-c",
            "4",
            "-j",
            "2",
            "-R",
            "300",
            "-L",
            "500",
            "-t",
            "600",
            "--reconnect=30",
            &json_arg,
            &html_arg,
            &conninfo,
        ],
    );
    let out = run_through(
        run.pgbolt_command(),
        "transactions before the switch",
        history_reaches(&primary, &dbname, 100),
        || {
            stop(&primary);
            standby.promote();
        },
    );
    let stdout = common::stdout(&out);
    let stderr = common::stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let json = result(&json);
    let outage = check_outage(&json, 4, Some(2400));
    let primary_host = format!("{}:{}", primary.socket_dir().display(), primary.port());
    let standby_host = format!("{}:{}", standby.socket_dir().display(), standby.port);
    for c in outage["clients"].as_array().expect("clients") {
        assert_eq!(c["host_before"], primary_host.as_str(), "{c}");
        assert_eq!(c["host_after"], standby_host.as_str(), "{c}");
    }
    check_no_acknowledged_commit_lost(outage);
    let (run, server) = check_against_server_gap(outage);
    println!("outage {run} us, server-side gap {server} us");
    assert!(stdout.contains("0 acknowledged lost"), "{stdout}");
    let page = std::fs::read_to_string(&html).expect("HTML page written");
    assert!(page.contains("<h2>Outage</h2>"), "no outage section");
    assert_eq!(
        page.matches("font-size=\"11\">client ").count(),
        4,
        "one line per client"
    );
}
