//! Ground truth for pgbolt's own figures: the per-transaction log (`-l`,
//! pgbench's format) of the same run. Counts, exact sums, minimum,
//! maximum, averages, standard deviations and percentiles are computed
//! here from the log lines and compared with the JSON result, and the
//! JSON with the text report printed beside it.

use serde_json::Value;

/// One line of a per-transaction log.
pub struct LogRow {
    pub script: usize,
    /// Latency in µs; `None` for a failed or skipped transaction.
    pub latency_us: Option<u64>,
    pub failed: bool,
    pub skipped: bool,
    pub lag_us: Option<u64>,
    pub retries: Option<u64>,
}

/// Parses the lines of every log file of a run. `rate` says whether the
/// lines carry the schedule lag (`-R`), `retries` the retries column.
pub fn parse_log(lines: &[String], rate: bool, retries: bool) -> Vec<LogRow> {
    lines
        .iter()
        .map(|line| {
            let cols: Vec<&str> = line.split(' ').collect();
            let int = |i: usize| -> u64 {
                cols.get(i)
                    .and_then(|c| c.parse().ok())
                    .unwrap_or_else(|| panic!("column {i} of {line:?}"))
            };
            let latency_us = cols[2].parse().ok();
            LogRow {
                script: int(3) as usize,
                latency_us,
                failed: latency_us.is_none() && cols[2] != "skipped",
                skipped: cols[2] == "skipped",
                lag_us: rate.then(|| int(6)),
                retries: retries.then(|| int(if rate { 7 } else { 6 })),
            }
        })
        .collect()
}

/// HdrHistogram's highest value of the bucket holding `v` µs, with
/// pgbolt's 3 significant digits (2048 sub-buckets): values under 2048
/// have buckets of their own.
fn bucket_top(v: u64) -> u64 {
    if v < 2048 {
        return v;
    }
    let shift = 64 - v.leading_zeros() - 11;
    ((v >> shift) << shift) + (1 << shift) - 1
}

/// Checks a JSON distribution against the values it should describe:
/// exact count, sums, minimum and maximum, the average and standard
/// deviation, and each percentile equal to the bucket of the exact
/// nearest-rank value (capped at the maximum), so within the precision
/// docs/json.md states.
pub fn check_distribution(what: &str, d: &Value, values: &[u64]) {
    let stats = &d["stats"];
    assert_eq!(stats["count"], values.len() as u64, "{what}: count");
    if values.is_empty() {
        assert!(d["average_ms"].is_null(), "{what}: {d}");
        assert!(d["percentiles"].is_null(), "{what}: {d}");
        return;
    }
    let sum: u64 = values.iter().sum();
    let sum2: u128 = values.iter().map(|&v| u128::from(v) * u128::from(v)).sum();
    let max = *values.iter().max().expect("values");
    assert_eq!(stats["sum"], sum, "{what}: sum");
    assert_eq!(stats["sum2"], sum2.to_string(), "{what}: sum2");
    assert_eq!(
        stats["min"],
        *values.iter().min().expect("values"),
        "{what}: min"
    );
    assert_eq!(stats["max"], max, "{what}: max");
    let n = values.len() as f64;
    let mean = sum as f64 / n;
    let stddev = (sum2 as f64 / n - mean * mean).max(0.0).sqrt();
    let close = |got: &Value, want: f64| {
        let got = got.as_f64().unwrap_or(f64::NAN);
        (got - want).abs() <= 1e-9 * want.abs().max(1.0)
    };
    assert!(
        close(&d["average_ms"], mean / 1000.0),
        "{what}: average {d}"
    );
    assert!(
        (d["stddev_ms"].as_f64().unwrap_or(f64::NAN) - stddev / 1000.0).abs() < 1e-6,
        "{what}: stddev {} against {}",
        d["stddev_ms"],
        stddev / 1000.0
    );
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let p = &d["percentiles"];
    for (key, q) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99_9", 0.999)] {
        let rank = ((q * n).ceil() as usize).max(1);
        let exact = sorted[rank - 1];
        let want = bucket_top(exact).min(max);
        let got = (p[key].as_f64().expect("percentile") * 1000.0).round() as u64;
        assert_eq!(got, want, "{what}: {key} (exact value {exact} µs)");
        assert!(
            got >= exact && (got - exact) as f64 <= exact as f64 / 1024.0,
            "{what}: {key} {got} µs is not within 1/1024 above {exact} µs"
        );
    }
    assert!(close(&p["max"], max as f64 / 1000.0), "{what}: max {p}");
}

/// Every figure of the JSON result that the log can give, checked against
/// the log: counts, latency, lag and service time, per script.
pub fn check_against_log(json: &Value, rows: &[LogRow]) {
    let committed: Vec<&LogRow> = rows.iter().filter(|r| r.latency_us.is_some()).collect();
    let latencies =
        |rows: &[&LogRow]| -> Vec<u64> { rows.iter().filter_map(|r| r.latency_us).collect() };
    let counts = &json["counts"];
    assert_eq!(counts["committed"], committed.len() as u64);
    let failed = rows.iter().filter(|r| r.failed).count() as u64;
    let skipped = rows.iter().filter(|r| r.skipped).count() as u64;
    assert_eq!(counts["failed"], failed, "failed");
    assert_eq!(counts["skipped"], skipped, "skipped");
    check_distribution("latency", &json["latency"], &latencies(&committed));
    let rate = rows.first().is_some_and(|r| r.lag_us.is_some());
    if rate {
        let lags: Vec<u64> = committed.iter().filter_map(|r| r.lag_us).collect();
        check_distribution("lag", &json["lag"], &lags);
        let service: Vec<u64> = committed
            .iter()
            .map(|r| r.latency_us.unwrap_or(0) - r.lag_us.unwrap_or(0))
            .collect();
        check_distribution("service time", &json["service_time"], &service);
    } else {
        check_distribution(
            "service time",
            &json["service_time"],
            &latencies(&committed),
        );
    }
    if rows.first().is_some_and(|r| r.retries.is_some()) {
        let retries: Vec<u64> = rows.iter().filter_map(|r| r.retries).collect();
        assert_eq!(counts["retries"], retries.iter().sum::<u64>(), "retries");
        let retried = retries.iter().filter(|&&n| n > 0).count() as u64;
        assert_eq!(counts["retried"], retried, "retried");
    }
    if let Some(limit) = json["options"]["latency_limit_us"].as_u64() {
        let late = committed
            .iter()
            .filter(|r| r.latency_us.unwrap_or(0) > limit)
            .count() as u64;
        assert_eq!(counts["latency_late"], late, "latency_late");
    }
    let scripts = json["scripts"].as_array().expect("scripts");
    if scripts.len() > 1 {
        for (i, s) in scripts.iter().enumerate() {
            let mine: Vec<&LogRow> = committed
                .iter()
                .copied()
                .filter(|r| r.script == i)
                .collect();
            assert_eq!(s["counts"]["committed"], mine.len() as u64, "script {i}");
            check_distribution(&format!("script {i}"), &s["latency"], &latencies(&mine));
        }
    }
}

/// The figure after `prefix` on the report line starting with it.
fn figure<'a>(report: &'a str, prefix: &str) -> Option<&'a str> {
    report
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|rest| rest.split([' ', '/']).next())
}

/// A percentile line as pgbolt prints it from a JSON distribution.
fn percentile_line(what: &str, d: &Value) -> Option<String> {
    let p = d.get("percentiles").filter(|p| !p.is_null())?;
    let ms = |k: &str| format!("{:.3}", p[k].as_f64().unwrap_or(f64::NAN));
    Some(format!(
        "{what} percentiles: p50 = {} ms, p90 = {} ms, p99 = {} ms, p99.9 = {} ms, max = {} ms",
        ms("p50"),
        ms("p90"),
        ms("p99"),
        ms("p99_9"),
        ms("max")
    ))
}

/// The JSON result says what the text report beside it says: counts, tps,
/// the measured average and standard deviation, and pgbolt's percentile
/// lines digit for digit.
pub fn check_against_report(json: &Value, report: &str) {
    let counts = &json["counts"];
    for (prefix, key) in [
        ("number of transactions actually processed: ", "committed"),
        ("number of failed transactions: ", "failed"),
        ("number of transactions skipped: ", "skipped"),
        ("number of transactions retried: ", "retried"),
        ("total number of retries: ", "retries"),
    ] {
        if let Some(n) = figure(report, prefix) {
            assert_eq!(n, counts[key].to_string(), "{prefix}");
        }
    }
    if let Some(tps) = figure(report, "tps = ") {
        assert_eq!(tps, format!("{:.6}", json["tps"].as_f64().expect("tps")));
    }
    if let Some(stddev) = figure(report, "latency stddev = ") {
        let l = &json["latency"];
        let f = |k: &str| format!("{:.3}", l[k].as_f64().expect(k));
        assert_eq!(stddev, f("stddev_ms"));
        assert_eq!(
            figure(report, "latency average = "),
            Some(f("average_ms").as_str())
        );
    }
    let mut lines = vec![percentile_line("latency", &json["latency"])];
    if !json["options"]["rate"].is_null() {
        lines.push(percentile_line("service time", &json["service_time"]));
        lines.push(percentile_line("schedule lag", &json["lag"]));
    }
    let scripts = json["scripts"].as_array().expect("scripts");
    if scripts.len() > 1 {
        for (i, s) in scripts.iter().enumerate() {
            lines.push(percentile_line(
                &format!("SQL script {} latency", i + 1),
                &s["latency"],
            ));
        }
    }
    let want: Vec<String> = lines.into_iter().flatten().collect();
    let got: Vec<String> = report
        .lines()
        .filter(|l| l.contains(" percentiles: p50 = "))
        .map(str::to_owned)
        .collect();
    assert_eq!(got, want, "percentile lines");
}

/// Every documented field is present, and nothing undocumented is.
pub fn check_documented_fields(json: &Value) {
    for (path, fields) in crate::report_support::json::DOCUMENTED {
        let pointer = if path.is_empty() {
            String::new()
        } else {
            format!("/{path}")
        };
        // `percentiles` is null for an empty distribution, and a run
        // may have no interval or a script no command.
        let Some(object) = json.pointer(&pointer).and_then(Value::as_object) else {
            assert!(!path.is_empty(), "the result is not an object");
            continue;
        };
        let mut have: Vec<&str> = object.keys().map(String::as_str).collect();
        let mut want = fields.to_vec();
        have.sort_unstable();
        want.sort_unstable();
        assert_eq!(have, want, "fields of {path:?}");
    }
}
