//! Comparing two results: did the candidate get faster or slower than the
//! baseline, beyond the noise?
//!
//! The comparison is a value of its own ([`Comparison`]), built from two
//! [`RunResult`]s by pure functions and rendered as text, Markdown and
//! JSON, like a run's result. It is made in three steps:
//!
//! 1. **Like with like** ([`likeness`]): what differs between the two runs
//!    (scripts by content hash, options, server version and settings) is
//!    listed first. Different scripts make the comparison meaningless and
//!    refuse it unless the user insists; the rest are warnings.
//! 2. **Changes with their uncertainty**: every figure is a relative change
//!    with a 95% interval. Throughput: the per-interval series is grouped
//!    into batches (consecutive intervals are autocorrelated, batch means
//!    much less) and Welch's interval is taken over the batch means.
//!    Latency percentiles: the percentile bootstrap over the stored
//!    histograms. The whole latency distributions: the Mann–Whitney rank
//!    test from the histograms, with its effect size. See [`stats`].
//! 3. **A verdict** per chosen metric and overall: a change counts only
//!    when its interval excludes zero *and* its estimate is beyond the
//!    threshold; anything else is "no significant change", never a
//!    percentage to celebrate.
//!
//! Comparisons of sweeps and of a sweep's targets will join here when
//! sweeps exist; today a result is one run (or several merged runs).

pub mod likeness;
mod render;
pub mod stats;

use serde::Serialize;

use crate::report::RunResult;
use crate::stats::{IntervalHistogram, LatencyHistogram};
use likeness::Difference;
use stats::{Buckets, Estimate};

pub use render::{method_lines, render_markdown, render_text, row, side_summary};

/// The confidence level of every interval.
pub const CONFIDENCE: f64 = 0.95;
/// Bootstrap resamples per percentile.
const REPLICATES: usize = 2_000;
/// The bootstrap's seed: the same two results always give the same report.
const BOOTSTRAP_SEED: u64 = 0x5eed_c0de;
/// Batches of the throughput series (fewer when the run has fewer
/// intervals).
const TPS_BATCHES: usize = 10;
/// Fewest whole intervals a side needs for a throughput interval.
const MIN_INTERVALS: usize = 3;
/// Exit status of `--fail-on-regression` when the verdict is a regression
/// (pgbench uses 1 and 2).
pub const REGRESSION_EXIT: i32 = 3;

/// A figure the verdict can be based on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    Tps,
    P50,
    P90,
    P99,
    #[serde(rename = "p99.9")]
    P99_9,
}

impl Metric {
    pub const ALL: [Metric; 5] = [
        Metric::Tps,
        Metric::P50,
        Metric::P90,
        Metric::P99,
        Metric::P99_9,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Tps => "tps",
            Metric::P50 => "p50",
            Metric::P90 => "p90",
            Metric::P99 => "p99",
            Metric::P99_9 => "p99.9",
        }
    }

    /// The metric named `name` (as [`Metric::name`] spells it).
    pub fn from_name(name: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == name)
    }

    fn quantile(self) -> Option<f64> {
        match self {
            Metric::Tps => None,
            Metric::P50 => Some(0.5),
            Metric::P90 => Some(0.9),
            Metric::P99 => Some(0.99),
            Metric::P99_9 => Some(0.999),
        }
    }

    /// Higher is better for throughput, lower for latency.
    fn higher_is_better(self) -> bool {
        self == Metric::Tps
    }
}

/// What to compare and how strictly.
#[derive(Clone, Debug, PartialEq)]
pub struct CompareOptions {
    /// Smallest relative change that counts (0.03 for 3%).
    pub threshold: f64,
    /// The metrics the verdict is based on.
    pub metrics: Vec<Metric>,
    /// Compare results of different scripts anyway.
    pub allow_different_scripts: bool,
}

/// What became of one metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Better, beyond the noise and the threshold.
    Improved,
    /// Worse, beyond the noise and the threshold.
    Regressed,
    /// The interval covers no change.
    NoSignificantChange,
    /// A change beyond the noise, but smaller than the threshold.
    WithinThreshold,
    /// No interval could be computed (see the method).
    Undetermined,
}

impl Outcome {
    pub fn describe(self) -> &'static str {
        match self {
            Outcome::Improved => "improved",
            Outcome::Regressed => "regressed",
            Outcome::NoSignificantChange => "no significant change",
            Outcome::WithinThreshold => "within threshold",
            Outcome::Undetermined => "undetermined",
        }
    }
}

/// One figure of both runs and its relative change.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricChange {
    pub metric: Metric,
    /// TPS, or the percentile in ms.
    pub baseline: Option<f64>,
    pub candidate: Option<f64>,
    /// `candidate / baseline - 1` with its 95% interval; `None` when it
    /// could not be computed.
    pub change: Option<Estimate>,
    /// How the interval was computed, or why it was not.
    pub method: String,
    pub outcome: Outcome,
}

/// The rank test over the whole latency distributions.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DistributionChange {
    /// Probability that a candidate transaction is slower than a baseline
    /// one (ties count half); 0.5 is no difference.
    pub probability_slower: f64,
    /// Cliff's delta, `2 * probability_slower - 1`, from -1 to 1.
    pub cliffs_delta: f64,
    /// Two-sided p-value of the Mann–Whitney U test (normal approximation
    /// with the tie correction).
    pub p_value: f64,
    pub z: f64,
}

/// A summary of one side.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Side {
    /// The file the result was read from.
    pub source: String,
    pub tps: f64,
    pub committed: u64,
    pub failed: u64,
    pub duration_s: f64,
    pub aborted: bool,
}

/// The verdict over the chosen metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Improved,
    Regressed,
    NoSignificantChange,
    Undetermined,
}

impl Verdict {
    pub fn describe(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::NoSignificantChange => "no significant change",
            Verdict::Undetermined => "undetermined",
        }
    }
}

/// Two results compared.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// `comparison`: what this JSON document is.
    pub kind: &'static str,
    pub tool: &'static str,
    pub tool_version: &'static str,
    pub confidence: f64,
    pub threshold: f64,
    /// The metrics the verdict is based on.
    pub verdict_metrics: Vec<Metric>,
    pub baseline: Side,
    pub candidate: Side,
    /// What differs between the runs, besides the figures.
    pub differences: Vec<Difference>,
    /// Throughput, then p50, p90, p99, p99.9.
    pub metrics: Vec<MetricChange>,
    /// The whole latency distributions; `None` when a side committed
    /// nothing.
    pub latency_distribution: Option<DistributionChange>,
    pub verdict: Verdict,
}

/// Why two results cannot be compared.
#[derive(Debug, Clone, PartialEq)]
pub enum CompareError {
    /// The runs ran different scripts (refused unless allowed).
    DifferentScripts(Vec<Difference>),
}

impl std::fmt::Display for CompareError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompareError::DifferentScripts(differences) => {
                write!(f, "the results come from runs of different scripts")?;
                for d in differences {
                    write!(f, "\n  {}: {} against {}", d.what, d.baseline, d.candidate)?;
                }
                write!(f, "\nCompare them anyway with --allow-different-scripts.")
            }
        }
    }
}

impl std::error::Error for CompareError {}

/// Compares `candidate` with `baseline`; `sources` name the files they
/// came from.
pub fn compare(
    baseline: &RunResult,
    candidate: &RunResult,
    sources: [&str; 2],
    options: &CompareOptions,
) -> Result<Comparison, CompareError> {
    let differences = likeness::differences(baseline, candidate);
    let scripts: Vec<Difference> = differences.iter().filter(|d| d.refuses).cloned().collect();
    if !scripts.is_empty() && !options.allow_different_scripts {
        return Err(CompareError::DifferentScripts(scripts));
    }
    let samples = [baseline, candidate].map(Sample::new);
    let metrics: Vec<MetricChange> = Metric::ALL
        .into_iter()
        .map(|metric| {
            let mut change = match metric.quantile() {
                None => tps_change(baseline, candidate, &samples),
                Some(q) => percentile_change(metric, q, &samples),
            };
            change.outcome = outcome(metric, change.change, options.threshold);
            change
        })
        .collect();
    let latency_distribution =
        stats::mann_whitney(&samples[0].latency, &samples[1].latency).map(|t| DistributionChange {
            probability_slower: t.superiority,
            cliffs_delta: 2.0 * t.superiority - 1.0,
            p_value: t.p_value,
            z: t.z,
        });
    let verdict = verdict(&metrics, &options.metrics);
    Ok(Comparison {
        kind: "comparison",
        tool: "pgbolt",
        tool_version: env!("CARGO_PKG_VERSION"),
        confidence: CONFIDENCE,
        threshold: options.threshold,
        verdict_metrics: options.metrics.clone(),
        baseline: side(baseline, sources[0]),
        candidate: side(candidate, sources[1]),
        differences,
        metrics,
        latency_distribution,
        verdict,
    })
}

fn side(r: &RunResult, source: &str) -> Side {
    Side {
        source: source.to_owned(),
        tps: r.tps,
        committed: r.counts.counters.committed,
        failed: r.counts.failed,
        duration_s: r.timings.bench_duration_us as f64 / 1e6,
        aborted: r.aborted,
    }
}

/// What the statistics read from one result.
struct Sample {
    /// The latency histogram of committed transactions (empty when it
    /// cannot be decoded; the result was checked when it was read).
    latency: Buckets,
    /// The throughput of each whole interval of the series (a last
    /// interval cut short by the end of the run is left out).
    interval_tps: Vec<f64>,
    /// The latency histograms of the batches of whole intervals, grouped
    /// as the throughput's batch means are; `None` for a result without
    /// per-interval histograms (schema version 1).
    batches: Option<Vec<IntervalHistogram>>,
}

impl Sample {
    fn new(r: &RunResult) -> Sample {
        let latency = match r.latency.decode_histogram() {
            Ok(h) => Buckets::new(
                h.buckets()
                    .map(|(v, n)| (LatencyHistogram::highest_equivalent(v), n)),
            ),
            Err(_) => Buckets::new([]),
        };
        let s = &r.series;
        let whole = if s.width_us > 0 {
            ((r.timings.bench_duration_us / s.width_us).max(0) as usize).min(s.intervals.len())
        } else {
            0
        };
        let intervals = &s.intervals[..whole];
        let batches = (r.schema_version >= 2 && !intervals.is_empty()).then(|| {
            let size = intervals.len() / TPS_BATCHES.min(intervals.len());
            intervals
                .chunks_exact(size)
                .take(TPS_BATCHES)
                .map(|batch| {
                    let mut h = IntervalHistogram::default();
                    for i in batch {
                        if let Some(Ok(ih)) = i
                            .latency_histogram
                            .as_deref()
                            .map(IntervalHistogram::decode)
                        {
                            h.add(&ih);
                        }
                    }
                    h
                })
                .collect()
        });
        Sample {
            latency,
            interval_tps: intervals.iter().map(|i| i.tps).collect(),
            batches,
        }
    }
}

fn tps_change(a: &RunResult, b: &RunResult, samples: &[Sample; 2]) -> MetricChange {
    let (sa, sb) = (&samples[0].interval_tps, &samples[1].interval_tps);
    let mut change = MetricChange {
        metric: Metric::Tps,
        baseline: Some(a.tps),
        candidate: Some(b.tps),
        change: None,
        method: String::new(),
        outcome: Outcome::Undetermined,
    };
    if a.tps <= 0.0 {
        change.method = "the baseline committed nothing".to_owned();
        return change;
    }
    if sa.len() < MIN_INTERVALS || sb.len() < MIN_INTERVALS {
        change.method = format!(
            "too few whole intervals for an interval ({} and {}; at least {MIN_INTERVALS} a side)",
            sa.len(),
            sb.len()
        );
        return change;
    }
    let (ba, bb) = (
        stats::batch_means(sa, TPS_BATCHES),
        stats::batch_means(sb, TPS_BATCHES),
    );
    let Some(w) = stats::welch(&ba, &bb, CONFIDENCE) else {
        change.method = "too few batches for an interval".to_owned();
        return change;
    };
    let value = b.tps / a.tps - 1.0;
    let half = (w.difference.high - w.difference.low) / 2.0 / a.tps;
    change.change = Some(Estimate {
        value,
        low: value - half,
        high: value + half,
    });
    change.method = format!(
        "Welch t over batch means: {} and {}",
        batches(a, sa.len(), ba.len()),
        batches(b, sb.len(), bb.len())
    );
    change
}

/// "N batches of S s" for `batches` batches of `intervals` whole intervals.
fn batches(r: &RunResult, intervals: usize, batches: usize) -> String {
    let seconds = (intervals / batches.max(1)) as f64 * r.series.width_us as f64 / 1e6;
    format!("{batches} batches of {seconds} s")
}

fn percentile_change(metric: Metric, q: f64, samples: &[Sample; 2]) -> MetricChange {
    let [a, b] = samples;
    let ms = |s: &Sample| s.latency.quantile(q).map(|v| v as f64 / 1000.0);
    let mut change = MetricChange {
        metric,
        baseline: ms(a),
        candidate: ms(b),
        change: None,
        method: "a side committed no transaction".to_owned(),
        outcome: Outcome::Undetermined,
    };
    let Some(boot) = stats::bootstrap_quantile_ratio(
        &a.latency,
        &b.latency,
        q,
        REPLICATES,
        CONFIDENCE,
        BOOTSTRAP_SEED,
    ) else {
        return change;
    };
    let bootstrap = format!("a percentile bootstrap ({REPLICATES} resamples of each histogram)");
    let percentiles = |batches: &[IntervalHistogram]| -> Vec<f64> {
        batches
            .iter()
            .filter(|h| !h.is_empty())
            .map(|h| h.quantiles([q])[0] as f64)
            .collect()
    };
    let by_batches = match (&a.batches, &b.batches) {
        (Some(ba), Some(bb)) => {
            let (pa, pb) = (percentiles(ba), percentiles(bb));
            stats::batch_quantile_ratio(&pa, &pb, boot.value, CONFIDENCE)
                .map(|e| (e, pa.len(), pb.len()))
        }
        _ => None,
    };
    let (low, high) = match by_batches {
        Some((e, na, nb)) => {
            change.method = format!(
                "the wider of {bootstrap} and Welch t over the percentiles of {na} and {nb} batches of intervals"
            );
            (boot.low.min(e.low), boot.high.max(e.high))
        }
        None => {
            change.method = format!(
                "{bootstrap} only, transactions taken as independent (no per-interval histograms, or too few intervals): narrower than the run's variation over time"
            );
            (boot.low, boot.high)
        }
    };
    change.change = Some(Estimate {
        value: boot.value - 1.0,
        low: low - 1.0,
        high: high - 1.0,
    });
    change
}

/// A change counts when its interval excludes zero and its estimate is
/// beyond the threshold.
fn outcome(metric: Metric, change: Option<Estimate>, threshold: f64) -> Outcome {
    let Some(c) = change else {
        return Outcome::Undetermined;
    };
    if c.low <= 0.0 && c.high >= 0.0 {
        return Outcome::NoSignificantChange;
    }
    if c.value.abs() < threshold {
        return Outcome::WithinThreshold;
    }
    if (c.value > 0.0) == metric.higher_is_better() {
        Outcome::Improved
    } else {
        Outcome::Regressed
    }
}

fn verdict(metrics: &[MetricChange], chosen: &[Metric]) -> Verdict {
    let outcomes: Vec<Outcome> = metrics
        .iter()
        .filter(|m| chosen.contains(&m.metric))
        .map(|m| m.outcome)
        .collect();
    if outcomes.contains(&Outcome::Regressed) {
        Verdict::Regressed
    } else if outcomes.contains(&Outcome::Improved) {
        Verdict::Improved
    } else if !outcomes.is_empty() && outcomes.iter().all(|o| *o == Outcome::Undetermined) {
        Verdict::Undetermined
    } else {
        Verdict::NoSignificantChange
    }
}

#[cfg(test)]
mod tests;
