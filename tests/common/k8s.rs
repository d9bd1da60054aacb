//! The Kubernetes Jobs of the docs: valid manifests (checked by
//! kubernetes-validate, which `make deps` installs) whose generator
//! arguments are a command line pgbolt accepts.

use std::path::Path;
use std::process::Command;

use super::{stderr, stdout};

/// Where `make deps` installs kubernetes-validate.
const K8S_VALIDATE: &str = "/opt/pgbolt-kubernetes-validate";

/// Checks `manifest` with kubernetes-validate, then parses its container's
/// `args` (the start time and `$(JOB_COMPLETION_INDEX)`, which Kubernetes
/// would fill in, replaced by a time and 0) in the environment of the pod
/// of completion index `index`: the benchmark they describe.
pub fn validate_job(manifest: &str, index: u32) -> pgbolt::config::Benchmark {
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
                .replace("$(START_AT)", "2026-11-27T14:05:00Z")
                .replace("$(JOB_COMPLETION_INDEX)", "0")
        })
        .collect();
    let env = pgbolt::cli::Environment {
        job_completion_index: Some(index.to_string()),
        ..pgbolt::cli::Environment::default()
    };
    let config = pgbolt::cli::parse(&args, &env).expect("the manifest's arguments parse");
    let pgbolt::config::Mode::Run(bench) = config.mode else {
        panic!("not a benchmark run");
    };
    bench
}
