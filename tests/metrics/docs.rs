//! docs/metrics.md holds: every PromQL expression in it (its examples and
//! its Grafana dashboard's) is accepted by the real Prometheus, the
//! dashboard is JSON, and its Kubernetes Job is valid against
//! Kubernetes' schema with arguments pgbolt accepts.

use super::prometheus::Prometheus;
use crate::common::k8s::validate_job;

const PAGE: &str = include_str!("../../docs/metrics.md");

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
    let bench = validate_job(manifest, 1);
    let push = bench.metrics.and_then(|m| m.push).expect("--metrics-push");
    assert_eq!(push.authority, "prometheus.monitoring.svc:9090");
}
