//! JSON results checked against the text report of the same run, and the
//! resident memory of a process.

use super::*;

/// The number after `prefix` on the report line starting with it.
pub fn figure(report: &str, prefix: &str) -> String {
    line(report, prefix)
        .and_then(|l| l[prefix.len()..].split([' ', '/']).next())
        .unwrap_or_else(|| panic!("no line {prefix:?} in\n{report}"))
        .to_owned()
}

/// Asserts that `printed` (a figure of the report with `decimals` places)
/// is `value` rounded: within half a unit of its last place. Comparing the
/// formatted strings instead failed now and then: where the exact value is
/// a tie at that place (a duration in µs times the clients over the
/// transactions often is), two orders of the same arithmetic round apart.
pub fn assert_printed(what: &str, value: f64, printed: &str, decimals: i32) {
    let shown: f64 = printed
        .parse()
        .unwrap_or_else(|_| panic!("{what}: {printed:?} is not a number"));
    let half = 0.5 * 10f64.powi(-decimals);
    assert!(
        (value - shown).abs() <= half * (1.0 + 1e-9),
        "{what}: {value} printed as {printed}"
    );
    assert_eq!(
        printed.split_once('.').map(|(_, d)| d.len()),
        Some(decimals as usize),
        "{what}: {printed}"
    );
}

/// The fields docs/json.md lists, by object.
pub const DOCUMENTED: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "schema_version",
            "tool",
            "tool_version",
            "merged_runs",
            "context",
            "options",
            "timings",
            "aborted",
            "counts",
            "tps",
            "latency",
            "service_time",
            "lag",
            "scripts",
            "series",
            "generator",
            "diagnosis",
        ],
    ),
    (
        "generator",
        &[
            "index",
            "count",
            "run_id",
            "client_offset",
            "start_at_us",
            "clock",
            "window_start_us",
            "window_end_us",
        ],
    ),
    (
        "diagnosis",
        &[
            "monitor",
            "activity",
            "counters",
            "tables",
            "events",
            "statements",
            "client",
            "server_cpu",
            "findings",
        ],
    ),
    (
        "diagnosis/monitor",
        &["ran", "interval_ms", "samples", "pooled", "missing"],
    ),
    (
        "diagnosis/client",
        &[
            "thread_cpu_s",
            "thread_runqueue_s",
            "process_cpu_s",
            "process_wall_s",
            "cpus",
            "machine_busy_share",
        ],
    ),
    (
        "options",
        &[
            "scripts",
            "scale",
            "partitioning",
            "query_mode",
            "clients",
            "threads",
            "max_tries",
            "limit",
            "rate",
            "latency_limit_us",
            "progress_s",
            "connect_per_transaction",
            "failures_detailed",
            "report_per_command",
            "continue_on_error",
            "warmup_s",
            "variables",
        ],
    ),
    (
        "timings",
        &[
            "bench_duration_us",
            "initial_connection_us",
            "total_connection_us",
        ],
    ),
    (
        "counts",
        &[
            "committed",
            "skipped",
            "retried",
            "retries",
            "serialization_failures",
            "deadlock_failures",
            "other_failures",
            "failed",
            "total",
            "latency_late",
        ],
    ),
    (
        "latency",
        &[
            "stats",
            "average_ms",
            "stddev_ms",
            "percentiles",
            "histogram",
        ],
    ),
    ("latency/stats", &["count", "min", "max", "sum", "sum2"]),
    (
        "latency/percentiles",
        &["p50", "p90", "p99", "p99_9", "p99_99", "max"],
    ),
    (
        "scripts/0",
        &["name", "weight", "counts", "tps", "latency", "commands"],
    ),
    (
        "scripts/0/commands/0",
        &["command", "latency", "average_ms", "failures", "retries"],
    ),
    ("series", &["start_us", "width_us", "intervals"]),
    (
        "series/intervals/0",
        &[
            "offset_s",
            "tps",
            "latency_average_ms",
            "counts",
            "latency",
            "lag",
            "latency_histogram",
        ],
    ),
    (
        "context",
        &[
            "command_line",
            "server_version",
            "server_settings",
            "started_us",
            "ended_us",
        ],
    ),
];

/// The JSON result agrees with the text report of the same run.
pub fn check_json(json: &serde_json::Value, report: &str, rate: bool) {
    let (_, top) = DOCUMENTED[0];
    for field in top {
        assert!(json.get(field).is_some(), "no {field} in {json}");
    }
    assert_eq!(json["schema_version"], 2);
    assert_eq!(json["tool"], "pgbolt");
    assert_eq!(json["merged_runs"], 1);
    assert_eq!(json["aborted"], false);
    let counts = &json["counts"];
    let processed = figure(report, "number of transactions actually processed: ");
    assert_eq!(counts["committed"].to_string(), processed);
    assert_eq!(
        counts["failed"].to_string(),
        figure(report, "number of failed transactions: ")
    );
    let total = counts["total"].as_u64().expect("total");
    assert_eq!(
        total,
        counts["committed"].as_u64().unwrap_or(0)
            + counts["failed"].as_u64().unwrap_or(0)
            + counts["skipped"].as_u64().unwrap_or(0)
    );
    let tps = json["tps"].as_f64().expect("tps");
    assert_eq!(format!("{tps:.6}"), figure(report, "tps = "));
    let average = if rate {
        json["latency"]["average_ms"].as_f64().expect("average")
    } else {
        // Without -R, -P or -L pgbench's average is computed from the run
        // time: duration × clients / transactions.
        let duration = json["timings"]["bench_duration_us"]
            .as_f64()
            .expect("duration");
        let clients = json["options"]["clients"].as_f64().expect("clients");
        duration * clients / total as f64 / 1000.0
    };
    let printed = figure(report, "latency average = ");
    if rate {
        assert_eq!(format!("{average:.3}"), printed);
    } else {
        // Recomputed here: equal to the printed precision.
        assert_printed("latency average", average, &printed, 3);
    }
    if rate {
        let stddev = json["latency"]["stddev_ms"].as_f64().expect("stddev");
        assert_eq!(format!("{stddev:.3}"), figure(report, "latency stddev = "));
    }
    let per_script: Vec<String> = report
        .lines()
        .filter_map(|l| l.strip_prefix(" - number of transactions actually processed: "))
        .map(|rest| rest.split(' ').next().unwrap_or_default().to_owned())
        .collect();
    let scripts = json["scripts"].as_array().expect("scripts");
    if !per_script.is_empty() {
        let committed: Vec<String> = scripts
            .iter()
            .map(|s| s["counts"]["committed"].to_string())
            .collect();
        assert_eq!(committed, per_script);
    }
}

/// The resident set size of a process in kB, from `/proc/PID/status`.
pub fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("process status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS line")
}
