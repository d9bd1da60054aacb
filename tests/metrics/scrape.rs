//! A run and a sweep scraped by Prometheus: the totals it stores are the
//! JSON result's, the p99 of the native histogram is within its bucket
//! width of the result's, the classic buckets add up (a Prometheus
//! without native histograms), each step is a series of its own; a port in use
//! is refused before anything connects, and the port is closed after.

use std::net::{TcpListener, TcpStream};

use serde_json::Value;

use super::prometheus::{free_port, now_s, Prometheus};
use crate::common::{bench_database, server, stderr, Run};

fn read_json(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("JSON result")).expect("JSON")
}

/// The one value of an instant query's result (NaN when there is none).
fn single(result: &[(Value, f64)]) -> f64 {
    match result {
        [(_, value)] => *value,
        _ => f64::NAN,
    }
}

/// pgbolt run with `args`, its endpoint on `port` (waiting up to a minute
/// for the scrape after the end) and its JSON result in `json`.
fn scraped_run(db: &str, args: &[&str], port: u16, json: &std::path::Path) -> std::process::Output {
    Run::new(db, args)
        .arg(&format!("--metrics-listen=127.0.0.1:{port}"))
        .arg("--metrics-linger=60")
        .arg(&format!("--json={}", json.display()))
        .pgbolt()
}

/// The metric names of the table in docs/metrics.md.
fn documented_names() -> Vec<String> {
    include_str!("../../docs/metrics.md")
        .lines()
        .filter(|row| row.starts_with("| `"))
        .filter_map(|row| row.split('`').nth(1).map(str::to_owned))
        .collect()
}

/// The names of the metrics Prometheus stored from pgbolt.
fn stored_names(prometheus: &Prometheus, at: Option<f64>) -> Vec<String> {
    prometheus
        .query_at(
            r#"group by (__name__) ({__name__=~"pgbolt_.+|db_client_.+"})"#,
            at,
        )
        .iter()
        .filter_map(|(labels, _)| labels["__name__"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_scraped_run_agrees_with_its_json_result() {
    let db = bench_database(server(), &["-s", "1"]);
    let port = free_port();
    let prometheus = Prometheus::start(&[format!("127.0.0.1:{port}")]);
    // Its scrape loop has begun (`up` is stored from the first attempt,
    // refused or not), so the scrapes of every second cover the run.
    prometheus.wait_for("up", None, |r| !r.is_empty());
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("run.json");
    let out = scraped_run(
        &db,
        &["-S", "-M", "prepared", "-c", "4", "-j", "2", "-T", "10"],
        port,
        &json,
    );
    let ended = Some(now_s());
    assert!(out.status.success(), "pgbolt: {}", stderr(&out));
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the metrics port is still open after the run"
    );
    let result = read_json(&json);
    let committed = result["counts"]["committed"].as_u64().expect("committed");
    assert!(committed > 0);

    let total = r#"sum(pgbolt_transactions_total{outcome="committed",phase="measured"})"#;
    let seen = single(&prometheus.wait_for(total, ended, |r| single(r) == committed as f64));
    assert_eq!(seen, committed as f64, "{total}");
    let count = r#"histogram_count(sum(db_client_operation_duration_seconds{db_system_name="postgresql"}))"#;
    let seen = single(&prometheus.wait_for(count, ended, |r| single(r) == committed as f64));
    assert_eq!(seen, committed as f64, "{count}");

    // The served histogram is the interval series' (16 buckets a doubling,
    // each counted at its middle) in native buckets of 2^(2^-schema): the
    // quantile Prometheus reads is within both widths of the result's.
    let p99_ms = result["latency"]["percentiles"]["p99"]
        .as_f64()
        .expect("p99");
    let p99 = r#"histogram_quantile(0.99, sum(db_client_operation_duration_seconds))"#;
    let seen_ms = single(&prometheus.query_at(p99, ended)) * 1000.0;
    let native = 2f64.powf(2f64.powi(-pgbolt::metrics::NATIVE_SCHEMA)) - 1.0;
    let tolerance = native + 1.0 / 16.0;
    assert!(
        (seen_ms - p99_ms).abs() <= p99_ms * tolerance,
        "p99 from Prometheus {seen_ms} ms, from the result {p99_ms} ms (tolerance {tolerance})"
    );
    // The run's four backends, in whatever state, at the monitor's
    // samples while it ran (the series end with the run: read back over
    // its length).
    let backends = r#"max_over_time(sum(pgbolt_server_backends{kind="run"})[1m:1s])"#;
    assert_eq!(
        single(&prometheus.query_at(backends, ended)),
        4.0,
        "{backends}"
    );
    let names = stored_names(&prometheus, ended);
    for name in documented_names() {
        // Served by a sweep or a fleet, or only while a run goes on.
        let elsewhere = [
            "pgbolt_study_step",
            "pgbolt_generator_index",
            "pgbolt_server_backends",
        ];
        assert!(
            names.contains(&name) || elsewhere.contains(&name.as_str()),
            "{name} is documented but not served: {names:?}"
        );
    }
    let namespace = prometheus.query_at(r#"db_client_operation_duration_seconds"#, ended);
    assert!(
        namespace
            .iter()
            .all(|(labels, _)| labels["db_namespace"] == db.as_str()),
        "{namespace:?}"
    );

    // Without native histograms, the classic buckets, from a second run
    // that only a Prometheus without the feature scrapes: with two
    // scrapers, only the first scrape after the end is sure to store the
    // final figures, and the other's next one finds the port closed and
    // marks the series stale.
    let port = free_port();
    let classic = Prometheus::start_with(&[format!("127.0.0.1:{port}")], false);
    let json = dir.path().join("classic.json");
    let out = scraped_run(&db, &["-S", "-c", "2", "-T", "3"], port, &json);
    let ended = Some(now_s());
    assert!(out.status.success(), "pgbolt: {}", stderr(&out));
    let committed = read_json(&json)["counts"]["committed"]
        .as_u64()
        .expect("committed");
    let of_scrape = |query: &str| single(&classic.query_at(query, ended));
    let count = of_scrape(r#"sum(db_client_operation_duration_seconds_count)"#);
    assert_eq!(count, committed as f64);
    let inf = of_scrape(r#"sum(db_client_operation_duration_seconds_bucket{le="+Inf"})"#);
    let counted = of_scrape(r#"sum(pgbolt_transactions_total{outcome="committed"})"#);
    assert_eq!((inf, counted), (count, count));
    let buckets = classic.query_at(
        r#"sum by (le) (db_client_operation_duration_seconds_bucket)"#,
        ended,
    );
    let mut buckets: Vec<(f64, f64)> = buckets
        .iter()
        .map(|(labels, v)| {
            let le = labels["le"].as_str().unwrap_or("");
            (le.parse::<f64>().unwrap_or(f64::INFINITY), *v)
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(buckets.len(), 10, "{buckets:?}");
    assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1), "{buckets:?}");
}

#[test]
fn a_scraped_sweep_has_a_series_per_step() {
    let db = bench_database(server(), &["-s", "1"]);
    let port = free_port();
    let prometheus = Prometheus::start(&[format!("127.0.0.1:{port}")]);
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("sweep.json");
    let out = scraped_run(&db, &["-S", "-T", "1", "--sweep=clients:1,2"], port, &json);
    let ended = Some(now_s());
    assert!(out.status.success(), "pgbolt: {}", stderr(&out));
    let result = read_json(&json);
    let steps = result["steps"].as_array().expect("steps");
    let expected: Vec<(String, String, f64)> = steps
        .iter()
        .enumerate()
        .map(|(i, step)| {
            let run = &step["result"];
            (
                (i + 1).to_string(),
                run["options"]["clients"].to_string(),
                run["counts"]["committed"].as_f64().expect("committed"),
            )
        })
        .collect();
    assert_eq!(expected.len(), 2, "{result}");

    let query = r#"sum by (step, clients) (pgbolt_transactions_total{outcome="committed",phase="measured"})"#;
    let per_step = |r: &[(Value, f64)]| {
        let mut steps: Vec<(String, String, f64)> = r
            .iter()
            .map(|(labels, value)| {
                let label = |name: &str| labels[name].as_str().unwrap_or("").to_owned();
                (label("step"), label("clients"), *value)
            })
            .collect();
        steps.sort_by(|a, b| a.0.cmp(&b.0));
        steps
    };
    let seen = per_step(&prometheus.wait_for(query, ended, |r| per_step(r) == expected));
    assert_eq!(seen, expected, "{query}");
    let last_step = prometheus.query_at("pgbolt_study_step", ended);
    assert_eq!(last_step.len(), 1, "{last_step:?}");
    assert_eq!(last_step[0].1, 2.0);
    assert_eq!(last_step[0].0["clients"], "2");
}

#[test]
fn a_metrics_port_in_use_is_refused_before_connecting() {
    let taken = TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = taken.local_addr().expect("address").port();
    // Nothing listens at this host: an attempt to connect would fail
    // with a connection error, not the option's.
    let out = Run::new("postgres", &["-h", "/nonexistent", "-S", "-T", "1"])
        .arg(&format!("--metrics-listen=127.0.0.1:{port}"))
        .pgbolt();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "could not listen on 127.0.0.1:{port} for --metrics-listen: Address already in use"
        )),
        "{err}"
    );
    assert!(!err.contains("connection"), "{err}");
}

#[test]
fn metrics_options_refuse_bad_values() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--metrics-listen=localhost"],
            "invalid value \"localhost\" for option --metrics-listen: expected ADDR:PORT",
        ),
        (
            &["--metrics-listen=127.0.0.1:9187", "--metrics-linger=soon"],
            "invalid value \"soon\" for option --metrics-linger",
        ),
        (
            &["--metrics-linger=5"],
            "--metrics-linger requires --metrics-listen",
        ),
        (
            &["--metrics-push=https://user:secret@127.0.0.1:9090/api/v1/write"],
            "invalid value \"https://***@127.0.0.1:9090/api/v1/write\" for option --metrics-push",
        ),
        (
            &["-i", "--metrics-listen=127.0.0.1:9187"],
            "cannot be used in initialization (-i) mode",
        ),
    ];
    for (args, message) in cases {
        let out = Run::new("postgres", &["-h", "/nonexistent"]).arg(args[0]);
        let out = args[1..].iter().fold(out, |run, a| run.arg(a)).pgbolt();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(message), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn sigterm_ends_the_linger_of_an_unscraped_endpoint() {
    let db = bench_database(server(), &["-s", "1"]);
    let port = free_port();
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("run.json");
    let mut child = Run::new(&db, &["-S", "-c", "1", "-T", "1"])
        .arg(&format!("--metrics-listen=127.0.0.1:{port}"))
        .arg("--metrics-linger=600")
        .arg(&format!("--json={}", json.display()))
        .pgbolt_command()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("pgbolt starts");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !json.exists() {
        assert!(std::time::Instant::now() < deadline, "no result written");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    // SAFETY: signals our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    // Far less than the 600 s linger: the signal ended it.
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still lingering after SIGTERM"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    // The result is written just before the linger starts: a signal that
    // comes in between ends the process as it would have without metrics.
    use std::os::unix::process::ExitStatusExt;
    assert!(
        status.code() == Some(0) || status.signal() == Some(libc::SIGTERM),
        "{status:?}"
    );
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "port still open"
    );
}
