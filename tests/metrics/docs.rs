//! docs/metrics.md holds: every PromQL expression in it (its examples and
//! its Grafana dashboard's) is accepted by the real Prometheus, the
//! dashboard is JSON, and its Kubernetes Job is valid against
//! Kubernetes' schema with arguments pgbolt accepts.

use std::path::Path;
use std::process::Command;

use super::prometheus::Prometheus;
use crate::common::{stderr, stdout};

const PAGE: &str = include_str!("../../docs/metrics.md");

/// Where `make deps` installs kubernetes-validate.
const K8S_VALIDATE: &str = "/opt/pgbolt-kubernetes-validate";

/// The code blocks of the page in `language`.
fn blocks(language: &str) -> Vec<&'static str> {
    let fence = format!("```{language}\n");
    PAGE.split(fence.as_str())
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap_or(""))
        .collect()
}

#[test]
fn the_promql_of_the_metrics_page_is_accepted_by_prometheus() {
    let dashboard = blocks("json");
    assert_eq!(dashboard.len(), 1);
    let dashboard: serde_json::Value = serde_json::from_str(dashboard[0]).expect("dashboard JSON");
    let mut expressions: Vec<String> = blocks("promql")
        .iter()
        .map(|b| b.trim().to_owned())
        .collect();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().expect("targets") {
            expressions.push(target["expr"].as_str().expect("expr").to_owned());
        }
    }
    assert!(expressions.len() >= 10, "{expressions:?}");
    let prometheus = Prometheus::start(&[]);
    for expr in &expressions {
        // Prometheus answers 400 to an expression it cannot parse.
        prometheus.query(expr);
    }
}

#[test]
fn the_kubernetes_job_of_the_metrics_page_is_valid() {
    let manifest = blocks("yaml")
        .into_iter()
        .find(|b| b.contains("kind: Job"))
        .expect("a Job");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("job.yaml");
    std::fs::write(&path, manifest).expect("write");
    assert!(
        Path::new(K8S_VALIDATE).join("kubernetes_validate").is_dir(),
        "kubernetes-validate is not installed in {K8S_VALIDATE}: run `make deps`"
    );
    let out = Command::new("python3")
        .args(["-m", "kubernetes_validate", "--strict"])
        .arg(&path)
        .env("PYTHONPATH", K8S_VALIDATE)
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let args: Vec<String> = manifest
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("args:"))
        .skip(1)
        .take_while(|l| l.trim_start().starts_with("- \""))
        .map(|l| {
            l.trim()
                .trim_start_matches("- ")
                .trim_matches('"')
                .to_owned()
        })
        .map(|a| {
            a.replace("$(START_AT)", "2026-11-27T14:05:00Z")
                .replace("$(JOB_COMPLETION_INDEX)", "0")
        })
        .collect();
    let env = pgbolt::cli::Environment {
        job_completion_index: Some("1".into()),
        ..pgbolt::cli::Environment::default()
    };
    let config = pgbolt::cli::parse(&args, &env).expect("the manifest's arguments parse");
    let pgbolt::config::Mode::Run(bench) = config.mode else {
        panic!("not a benchmark run");
    };
    let push = bench.metrics.and_then(|m| m.push).expect("--metrics-push");
    assert_eq!(push.authority, "prometheus.monitoring.svc:9090");
}
