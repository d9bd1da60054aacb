//! Two generators of a fleet push by remote write into one Prometheus:
//! the summed native histogram's count is the merged result's committed
//! count, and a receiver that cannot be reached does not stop the run.

use std::process::{Command, Stdio};

use serde_json::Value;

use super::prometheus::{free_port, Prometheus};
use crate::common::{bench_database, pgbolt_path, server, stderr, Run};

#[test]
fn two_generators_pushing_add_up_to_the_merged_result() {
    let db = bench_database(server(), &["-s", "1"]);
    let prometheus = Prometheus::start(&[]);
    let url = format!("http://{}/api/v1/write", prometheus.address());
    let dir = tempfile::tempdir().expect("temp dir");
    let start_at = (pgbolt::wallclock::now_us() / 1_000_000 + 3).to_string();
    let children: Vec<_> = (0..2)
        .map(|i| {
            let json = dir.path().join(format!("gen{i}.json"));
            Run::new(
                &db,
                &["-S", "-c", "4", "-j", "2", "-T", "3", "--no-monitor"],
            )
            .arg(&format!("--generator={i}/2"))
            .arg(&format!("--start-at={start_at}"))
            .arg(&format!("--metrics-push={url}"))
            .arg(&format!("--json={}", json.display()))
            .pgbolt_command()
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("generator starts")
        })
        .collect();
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().expect("generator ends");
        assert!(out.status.success(), "generator {i}: {}", stderr(&out));
        assert!(!stderr(&out).contains("metrics-push"), "{}", stderr(&out));
    }
    let merged = dir.path().join("merged.json");
    let out = Command::new(pgbolt_path())
        .arg("--merge")
        .arg(dir.path().join("gen0.json"))
        .arg(dir.path().join("gen1.json"))
        .arg(format!("--json={}", merged.display()))
        .output()
        .expect("pgbolt runs");
    assert!(out.status.success(), "--merge: {}", stderr(&out));
    let merged: Value =
        serde_json::from_str(&std::fs::read_to_string(&merged).expect("merged")).expect("JSON");
    let committed = merged["counts"]["committed"].as_f64().expect("committed");
    assert!(committed > 0.0);

    let count = r#"histogram_count(sum(db_client_operation_duration_seconds{phase="measured"}))"#;
    let seen = prometheus.wait_for(count, None, |r| r.len() == 1 && r[0].1 == committed);
    assert_eq!(seen.first().map(|s| s.1), Some(committed), "{count}");
    let generators = r#"count by (generator) (pgbolt_transactions_total{outcome="committed"})"#;
    assert_eq!(prometheus.query(generators).len(), 2, "{generators}");
    let index = prometheus.query(r#"pgbolt_generator_index{generators="2"}"#);
    let mut indexes: Vec<f64> = index.iter().map(|s| s.1).collect();
    indexes.sort_by(f64::total_cmp);
    assert_eq!(indexes, [0.0, 1.0]);
}

#[test]
fn an_unreachable_receiver_does_not_stop_the_run() {
    let db = bench_database(server(), &["-s", "1"]);
    // Nothing listens at this port: every send fails, the run goes on.
    let url = format!("http://127.0.0.1:{}/api/v1/write", free_port());
    let out = Run::new(&db, &["-S", "-c", "1", "-T", "2"])
        .arg(&format!("--metrics-push={url}"))
        .pgbolt();
    assert!(out.status.success(), "{}", stderr(&out));
}
