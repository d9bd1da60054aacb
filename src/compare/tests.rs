//! Comparisons of synthetic results whose true change is known.

use super::*;
use crate::model::run::{Counts, Distribution, IntervalResult, RunContext, Series, Timings};
use crate::model::run::{RunLimit, RunOptions, ScriptInfo};
use crate::stats::{Counters, IntervalRecorder, IntervalStats, LatencyHistogram, SimpleStats};

/// A run of `tps.len()` 1-second intervals with these throughputs, in
/// which interval `i` records the latencies `latency_us(i)` (value and
/// count); the whole run's histogram holds them all.
fn run_with(tps: &[f64], latency_us: impl Fn(usize) -> Vec<(i64, u64)>) -> RunResult {
    let mut h = LatencyHistogram::new();
    let mut stats = SimpleStats::default();
    let mut histograms = Vec::new();
    for i in 0..tps.len() {
        let mut interval = IntervalRecorder::new();
        for (v, n) in latency_us(i) {
            for _ in 0..n {
                h.record(v);
                stats.add(v);
                interval.record(v);
            }
        }
        histograms.push(interval.take().encode());
    }
    let committed: f64 = tps.iter().sum();
    let counters = Counters {
        committed: committed as u64,
        ..Counters::default()
    };
    let distribution = Distribution::new(stats, &h).expect("histogram");
    RunResult {
        schema_version: crate::model::run::SCHEMA_VERSION,
        tool: "pgbolt".to_owned(),
        tool_version: "test".to_owned(),
        merged_runs: 1,
        options: RunOptions::for_test(
            vec![ScriptInfo {
                name: "<builtin: select only>".to_owned(),
                weight: 1,
                commands: vec!["select 1".to_owned()],
                sha256: Some("ab".repeat(32)),
            }],
            8,
            2,
            RunLimit::DurationSeconds(tps.len() as u64),
        ),
        timings: Timings {
            bench_duration_us: tps.len() as i64 * 1_000_000 + 300,
            ..Timings::default()
        },
        aborted: false,
        counts: Counts {
            counters,
            failed: 0,
            total: counters.committed,
            latency_late: 0,
        },
        tps: committed / tps.len() as f64,
        latency: distribution.clone(),
        service_time: distribution.clone(),
        lag: distribution,
        pool_wait: None,
        scripts: Vec::new(),
        series: Series {
            start_us: 0,
            width_us: 1_000_000,
            intervals: tps
                .iter()
                .zip(histograms)
                .enumerate()
                .map(|(i, (&t, histogram))| IntervalResult {
                    offset_s: i as f64,
                    tps: t,
                    latency_average_ms: None,
                    stats: IntervalStats::default(),
                    latency_histogram: Some(histogram),
                })
                .collect(),
        },
        context: RunContext::default(),
        generator: None,
        generators: Vec::new(),
        diagnosis: None,
        outage: None,
    }
}

/// A run whose every interval has the latencies `latency_us`.
pub(crate) fn run(tps: &[f64], latency_us: &[(i64, u64)]) -> RunResult {
    run_with(tps, |_| latency_us.to_vec())
}

/// Throughput around `level` with a deterministic wobble of about 2%.
pub(crate) fn wobbly(level: f64, seconds: usize) -> Vec<f64> {
    (0..seconds)
        .map(|i| level * (1.0 + 0.02 * ((i * 7919 % 13) as f64 / 6.0 - 1.0)))
        .collect()
}

pub(crate) fn latencies(scale: i64) -> Vec<(i64, u64)> {
    (1..=200)
        .map(|v| (v * 10 * scale, (v as u64 * 31) % 17 + 1))
        .collect()
}

pub(crate) fn options(metrics: &[Metric]) -> CompareOptions {
    CompareOptions {
        threshold: 0.03,
        metrics: metrics.to_vec(),
        allow_different_scripts: false,
    }
}

pub(crate) fn compared(a: &RunResult, b: &RunResult, metrics: &[Metric]) -> Comparison {
    compare(a, b, ["a.json", "b.json"], &options(metrics)).expect("comparable")
}

fn metric(c: &Comparison, m: Metric) -> &MetricChange {
    metric_of(&c.metrics, m)
}

fn metric_of(metrics: &[MetricChange], m: Metric) -> &MetricChange {
    metrics.iter().find(|x| x.metric == m).expect("metric")
}

#[test]
fn a_run_against_itself_is_no_significant_change() {
    let a = run(&wobbly(1000.0, 30), &latencies(1));
    let c = compared(&a, &a, &[Metric::Tps, Metric::P99]);
    for m in &c.metrics {
        let e = m.change.expect("interval");
        assert!(e.low <= 0.0 && e.high >= 0.0, "{m:?}");
        assert_eq!(m.outcome, Outcome::NoSignificantChange, "{m:?}");
    }
    assert_eq!(c.verdict, Verdict::NoSignificantChange);
    assert!(c.differences.is_empty());
    let d = c.latency_distribution.expect("rank test");
    assert_eq!(d.probability_slower, 0.5);
}

#[test]
fn half_the_throughput_and_twice_the_latency_is_a_regression_covering_the_truth() {
    let a = run(&wobbly(1000.0, 30), &latencies(1));
    let b = run(&wobbly(500.0, 30), &latencies(2));
    let c = compared(&a, &b, &[Metric::Tps, Metric::P99]);
    let tps = metric(&c, Metric::Tps);
    let e = tps.change.expect("interval");
    assert!(e.low <= -0.5 && e.high >= -0.5, "{e:?}");
    assert_eq!(tps.outcome, Outcome::Regressed);
    let p99 = metric(&c, Metric::P99);
    // Twice every latency: +100%, within the histograms' 0.1% precision.
    let e = p99.change.expect("interval");
    assert!(e.low > 0.99 && e.high < 1.01, "{e:?}");
    assert_eq!(p99.outcome, Outcome::Regressed);
    assert_eq!(c.verdict, Verdict::Regressed);
    assert!(
        c.latency_distribution
            .expect("rank test")
            .probability_slower
            > 0.6
    );
}

#[test]
fn a_faster_candidate_is_an_improvement() {
    let a = run(&wobbly(1000.0, 20), &latencies(2));
    let b = run(&wobbly(1200.0, 20), &latencies(1));
    let c = compared(&a, &b, &[Metric::Tps, Metric::P50]);
    assert_eq!(metric(&c, Metric::Tps).outcome, Outcome::Improved);
    assert_eq!(metric(&c, Metric::P50).outcome, Outcome::Improved);
    assert_eq!(c.verdict, Verdict::Improved);
}

#[test]
fn a_significant_change_below_the_threshold_does_not_count() {
    let a = run(&[1000.0; 20], &latencies(1));
    let b = run(&[1010.0; 20], &latencies(1));
    let c = compared(&a, &b, &[Metric::Tps]);
    assert_eq!(metric(&c, Metric::Tps).outcome, Outcome::WithinThreshold);
    assert_eq!(c.verdict, Verdict::NoSignificantChange);
}

/// Latencies that drift during each run by far more than the runs differ:
/// a bootstrap of independent transactions sees a significant change, the
/// batches of intervals see the drift and widen the interval.
#[test]
fn latency_drifting_over_time_widens_the_percentile_interval() {
    let drift = |base: f64| {
        move |i: usize| {
            let scale = base * if (i / 3) % 2 == 0 { 1.0 } else { 1.5 };
            (1..=100)
                .map(|v| ((v as f64 * 10.0 * scale) as i64, 20))
                .collect::<Vec<_>>()
        }
    };
    let a = run_with(&[1000.0; 30], drift(1.0));
    let b = run_with(&[1000.0; 30], drift(1.04));
    let c = compared(&a, &b, &[Metric::P50]);
    let p50 = metric(&c, Metric::P50);
    assert!(p50.method.starts_with("the wider of"), "{}", p50.method);
    let e = p50.change.expect("interval");
    assert!(e.low < 0.0 && e.high > 0.0, "{e:?}");
    assert_eq!(p50.outcome, Outcome::NoSignificantChange);
    let boot = stats::bootstrap_quantile_ratio(
        &changes::Sample::new(&[&a]).latency,
        &changes::Sample::new(&[&b]).latency,
        0.5,
        REPLICATES,
        CONFIDENCE,
        BOOTSTRAP_SEED,
    )
    .expect("bootstrap");
    assert!(
        boot.low > 1.0,
        "the bootstrap alone calls it significant: {boot:?}"
    );
}

#[test]
fn a_run_too_short_for_an_interval_is_undetermined() {
    let a = run(&[1000.0, 1000.0], &latencies(1));
    let c = compared(&a, &a, &[Metric::Tps]);
    let tps = metric(&c, Metric::Tps);
    assert_eq!(tps.outcome, Outcome::Undetermined);
    assert!(
        tps.method.contains("too few whole intervals"),
        "{}",
        tps.method
    );
    assert_eq!(c.verdict, Verdict::Undetermined);
}

#[test]
fn different_scripts_are_refused_unless_allowed() {
    let a = run(&wobbly(1000.0, 10), &latencies(1));
    let mut b = a.clone();
    b.options.scripts[0].sha256 = Some("cd".repeat(32));
    let err = compare(&a, &b, ["a", "b"], &options(&[Metric::Tps])).expect_err("refused");
    assert!(err.to_string().contains("text differs"), "{err}");
    assert!(
        err.to_string().contains("--allow-different-scripts"),
        "{err}"
    );
    let mut allowed = options(&[Metric::Tps]);
    allowed.allow_different_scripts = true;
    let c = compare(&a, &b, ["a", "b"], &allowed).expect("allowed");
    assert!(c.differences[0].refuses);
}

#[test]
fn options_server_and_settings_that_differ_are_listed() {
    let a = run(&wobbly(1000.0, 10), &latencies(1));
    let mut b = a.clone();
    b.options.clients = 16;
    let server = |v: &str, sb: &str| RunContext {
        server_version: Some(v.to_owned()),
        server_settings: [("shared_buffers".to_owned(), sb.to_owned())].into(),
        ..RunContext::default()
    };
    let mut a = a;
    a.context = server("15.18", "128MB");
    b.context = server("18.6", "1GB");
    let c = compared(&a, &b, &[Metric::Tps]);
    let listed: Vec<(&str, &str, &str)> = c
        .differences
        .iter()
        .map(|d| (d.what.as_str(), d.baseline.as_str(), d.candidate.as_str()))
        .collect();
    assert_eq!(
        listed,
        vec![
            ("clients", "8", "16"),
            ("server version", "15.18", "18.6"),
            ("setting shared_buffers", "128MB", "1GB"),
        ]
    );
    assert!(c.differences.iter().all(|d| !d.refuses));
}

fn refs(runs: &[RunResult]) -> Vec<&RunResult> {
    runs.iter().collect()
}

/// Runs at these TPS (their series and histograms alike).
fn repeats(tps: &[f64]) -> Vec<RunResult> {
    tps.iter()
        .map(|&t| {
            let mut r = run(&wobbly(1000.0, 10), &latencies(1));
            r.tps = t;
            r
        })
        .collect()
}

#[test]
fn repeats_give_welchs_interval_over_their_tps_relative_to_the_baselines_mean() {
    let (ta, tb) = ([1000.0, 1150.0, 900.0], [1100.0, 1180.0, 1010.0]);
    let (a, b) = (repeats(&ta), repeats(&tb));
    let c = changes::changes(&refs(&a), &refs(&b), 0.03, &[Metric::Tps]);
    let tps = metric_of(&c.metrics, Metric::Tps);
    assert_eq!(tps.method, "Welch t over repeats: 3 and 3 runs");
    let w = stats::welch(&ta, &tb, CONFIDENCE).expect("two samples");
    let mean_a = ta.iter().sum::<f64>() / 3.0;
    let e = tps.change.expect("interval");
    let value = tb.iter().sum::<f64>() / ta.iter().sum::<f64>() - 1.0;
    assert!((e.value - value).abs() < 1e-12, "{e:?}");
    let half = (w.difference.high - w.difference.low) / 2.0 / mean_a;
    assert!((e.high - (value + half)).abs() < 1e-12, "{e:?}");
    assert!((e.low - (value - half)).abs() < 1e-12, "{e:?}");
    assert_eq!(tps.baseline, Some(mean_a));
}

#[test]
fn a_throughput_interval_wider_than_everything_stops_at_minus_100_percent() {
    let (a, b) = (repeats(&[100.0, 1000.0]), repeats(&[50.0, 60.0]));
    let c = changes::changes(&refs(&a), &refs(&b), 0.03, &[Metric::Tps]);
    let e = metric_of(&c.metrics, Metric::Tps).change.expect("interval");
    assert_eq!(e.low, -1.0);
    assert!(e.high > 0.0, "{e:?}");
}

#[test]
fn verdicts_combine_worst_first() {
    use Verdict::*;
    let cases: [(&[Verdict], Verdict); 6] = [
        (&[Improved, Regressed, NoSignificantChange], Regressed),
        (&[Improved, NoSignificantChange], Improved),
        (&[NoSignificantChange, Undetermined], NoSignificantChange),
        (&[Undetermined, Undetermined], Undetermined),
        (&[], Undetermined),
        (&[Improved, Undetermined], Improved),
    ];
    for (verdicts, expected) in cases {
        assert_eq!(
            changes::combine(verdicts.iter().copied()),
            expected,
            "{verdicts:?}"
        );
    }
}
