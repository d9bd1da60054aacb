//! The changes between two sides, each one run or the repeats of a sweep's
//! step: every metric's change with its interval, the rank test, and the
//! verdict over the chosen metrics.
//!
//! What a side's sampling units are decides the method:
//! - **both sides repeated** (a sweep's `--repeat`, at least two runs
//!   each): each run is one unit. Throughput: Welch's interval over the
//!   runs' TPS. A percentile: the wider of the bootstrap over the runs'
//!   histograms added together and Welch's interval over the logarithms of
//!   each run's own percentile. Runs are independent measurements, so this
//!   sees the variation between runs that no single run can show;
//! - **a single run**: each batch of consecutive whole intervals is one
//!   unit, as in a comparison of two single results.
//!
//! Each side takes its own units: a step repeated on one side only is
//! compared through the repeats' means on that side and the batch means of
//! the one run on the other. Welch's interval needs only each side's mean
//! and its standard error, and each side's is estimated the best way it
//! allows (pooling a repeated side's batches instead would count every
//! batch as independent and hide the spread between runs).
//!
//! A single result file holds one run (or runs merged from several load
//! generators, which are parts of one run, not repeats), so two single
//! results always take the second way.

use super::stats::{self, Buckets, Estimate};
use super::{
    DistributionChange, MetricChange, Outcome, Verdict, BOOTSTRAP_SEED, CONFIDENCE, MIN_INTERVALS,
    REPLICATES, TPS_BATCHES,
};
use crate::config::Metric;
use crate::model::run::RunResult;
use crate::stats::{IntervalHistogram, LatencyHistogram};

/// Every figure's change, the rank test and the verdict.
pub struct Changes {
    /// Throughput, then p50, p90, p99, p99.9.
    pub metrics: Vec<MetricChange>,
    pub latency_distribution: Option<DistributionChange>,
    pub verdict: Verdict,
    /// The metrics the verdict judged.
    pub judged: Vec<Metric>,
    /// What the verdict cannot see or leaves out.
    pub caveats: Vec<String>,
}

/// The caveat of a throughput not judged under `-R`.
pub const SCHEDULED: &str = "under -R throughput follows the schedule, so it is shown but not \
     judged: the latency percentiles, counted from each transaction's scheduled start (schedule \
     lag included), judge instead";

/// The caveat of a verdict with one run on a side.
pub const ONE_RUN: &str = "one run on a side: the intervals come from within that run and cannot \
     see how much runs vary from one to the next, so a verdict may be noise between runs; for one \
     that can, run each side as a sweep with repeats (--sweep=clients:N --repeat=3 and more) and \
     compare those files";

/// Compares the runs of `candidate` with those of `baseline` (one run a
/// side, or a step's repeats).
pub fn changes(
    baseline: &[&RunResult],
    candidate: &[&RunResult],
    threshold: f64,
    chosen: &[Metric],
) -> Changes {
    let samples = [Sample::new(baseline), Sample::new(candidate)];
    let scheduled = baseline
        .iter()
        .chain(candidate)
        .any(|r| r.options.rate.is_some());
    let metrics: Vec<MetricChange> = Metric::ALL
        .into_iter()
        .map(|metric| {
            let mut change = match metric.quantile() {
                None => tps_change(&samples),
                Some(q) => percentile_change(metric, q, &samples),
            };
            change.outcome = if scheduled && metric == Metric::Tps {
                Outcome::NotJudged
            } else {
                outcome(metric, change.change, threshold)
            };
            change
        })
        .collect();
    let mut judged: Vec<Metric> = chosen
        .iter()
        .copied()
        .filter(|m| !(scheduled && *m == Metric::Tps))
        .collect();
    if judged.is_empty() {
        judged.push(Metric::P99);
    }
    let mut caveats = Vec::new();
    if scheduled {
        caveats.push(SCHEDULED.to_owned());
    }
    if baseline.len() < 2 || candidate.len() < 2 {
        caveats.push(ONE_RUN.to_owned());
    }
    let latency_distribution =
        stats::mann_whitney(&samples[0].latency, &samples[1].latency).map(|t| DistributionChange {
            probability_slower: t.superiority,
            cliffs_delta: 2.0 * t.superiority - 1.0,
            p_value: t.p_value,
            z: t.z,
        });
    let verdict = combine(
        metrics
            .iter()
            .filter(|m| judged.contains(&m.metric))
            .map(|m| m.outcome.into()),
    );
    Changes {
        metrics,
        latency_distribution,
        verdict,
        judged,
        caveats,
    }
}

/// What the statistics read from one side.
pub(super) struct Sample {
    /// The latency histograms of committed transactions of every run
    /// added together.
    pub(super) latency: Buckets,
    /// The mean of the runs' TPS.
    tps: f64,
    runs: Vec<RunSample>,
}

/// What the statistics read from one run.
struct RunSample {
    tps: f64,
    /// Its own latency histogram (empty when it cannot be decoded; the
    /// result was checked when it was read).
    latency: Buckets,
    /// The throughput of each whole interval of the series (a last
    /// interval cut short by the end of the run is left out).
    interval_tps: Vec<f64>,
    /// The series' interval, µs.
    width_us: i64,
    /// The latency histograms of the batches of whole intervals, grouped
    /// as the throughput's batch means are; `None` for a result without
    /// per-interval histograms (schema version 1).
    batches: Option<Vec<IntervalHistogram>>,
}

impl Sample {
    pub(super) fn new(runs: &[&RunResult]) -> Sample {
        let mut all = LatencyHistogram::new();
        let runs: Vec<RunSample> = runs
            .iter()
            .map(|r| {
                let histogram = r.latency.decode_histogram().unwrap_or_default();
                all.merge(&histogram);
                RunSample::new(r, &histogram)
            })
            .collect();
        let tps = runs.iter().map(|r| r.tps).sum::<f64>() / runs.len().max(1) as f64;
        Sample {
            latency: buckets(&all),
            tps,
            runs,
        }
    }

    /// Whether the runs are the units (at least two).
    fn repeated(&self) -> bool {
        self.runs.len() >= 2
    }
}

fn buckets(h: &LatencyHistogram) -> Buckets {
    Buckets::new(
        h.buckets()
            .map(|(v, n)| (LatencyHistogram::highest_equivalent(v), n)),
    )
}

impl RunSample {
    fn new(r: &RunResult, histogram: &LatencyHistogram) -> RunSample {
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
        RunSample {
            tps: r.tps,
            latency: buckets(histogram),
            interval_tps: intervals.iter().map(|i| i.tps).collect(),
            width_us: s.width_us,
            batches,
        }
    }

    /// The length in seconds of each of `batches` batches of this run's
    /// whole intervals.
    fn batch_seconds(&self, batches: usize) -> f64 {
        (self.interval_tps.len() / batches.max(1)) as f64 * self.width_us as f64 / 1e6
    }
}

/// What a side's sampling units are.
enum Units {
    /// Its runs, at least two.
    Repeats(usize),
    /// The batches of its one run: how many, of how many seconds each.
    Batches(usize, f64),
}

impl Sample {
    /// The side's throughput units and what they are; `Err` with the whole
    /// intervals of a single run too short to be batched.
    fn tps_units(&self) -> Result<(Vec<f64>, Units), usize> {
        if self.repeated() {
            let tps = self.runs.iter().map(|r| r.tps).collect();
            return Ok((tps, Units::Repeats(self.runs.len())));
        }
        let Some(run) = self.runs.first() else {
            return Err(0);
        };
        if run.interval_tps.len() < MIN_INTERVALS {
            return Err(run.interval_tps.len());
        }
        let means = stats::batch_means(&run.interval_tps, TPS_BATCHES);
        let units = Units::Batches(means.len(), run.batch_seconds(means.len()));
        Ok((means, units))
    }

    /// The side's percentile `q` of each unit (µs), and what the units
    /// are; `None` for a single run without per-interval histograms.
    fn percentile_units(&self, q: f64) -> Option<(Vec<f64>, Units)> {
        if self.repeated() {
            let values = self
                .runs
                .iter()
                .filter_map(|r| r.latency.quantile(q))
                .map(|v| v as f64)
                .collect();
            return Some((values, Units::Repeats(self.runs.len())));
        }
        let run = self.runs.first()?;
        let batches = run.batches.as_ref()?;
        let seconds = run.batch_seconds(batches.len());
        let values: Vec<f64> = batches
            .iter()
            .filter(|h| !h.is_empty())
            .map(|h| h.quantiles([q])[0] as f64)
            .collect();
        let n = values.len();
        Some((values, Units::Batches(n, seconds)))
    }
}

/// The method of an interval over the units of both sides.
fn tps_method(a: &Units, b: &Units) -> String {
    match (a, b) {
        (Units::Batches(na, sa), Units::Batches(nb, sb)) => {
            format!("Welch t over batch means: {na} batches of {sa} s and {nb} batches of {sb} s")
        }
        (Units::Repeats(a), Units::Repeats(b)) => {
            format!("Welch t over repeats: {a} and {b} runs")
        }
        (a, b) => format!(
            "Welch t over the baseline's {} and the candidate's {}",
            tps_units(a),
            tps_units(b)
        ),
    }
}

fn tps_units(u: &Units) -> String {
    match u {
        Units::Repeats(n) => format!("{n} repeats"),
        Units::Batches(n, seconds) => format!("batch means ({n} batches of {seconds} s)"),
    }
}

fn percentile_units(a: &Units, b: &Units) -> String {
    match (a, b) {
        (Units::Batches(a, _), Units::Batches(b, _)) => {
            format!("{a} and {b} batches of intervals")
        }
        (Units::Repeats(a), Units::Repeats(b)) => format!("{a} and {b} repeats"),
        (a, b) => {
            let one = |u: &Units| match u {
                Units::Repeats(n) => format!("{n} repeats"),
                Units::Batches(n, _) => format!("{n} batches of intervals"),
            };
            format!("the baseline's {} and the candidate's {}", one(a), one(b))
        }
    }
}

fn tps_change(samples: &[Sample; 2]) -> MetricChange {
    let [a, b] = samples;
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
    let ((ua, wa), (ub, wb)) = match (a.tps_units(), b.tps_units()) {
        (Ok(a), Ok(b)) => (a, b),
        (ra, rb) => {
            let short: Vec<String> = [("baseline", ra), ("candidate", rb)]
                .into_iter()
                .filter_map(|(side, r)| r.err().map(|n| format!("{side}: {n}")))
                .collect();
            change.method = format!(
                "too few whole intervals for an interval ({}; at least {MIN_INTERVALS} for a run compared without repeats)",
                short.join(", ")
            );
            return change;
        }
    };
    let Some(w) = stats::welch(&ua, &ub, CONFIDENCE) else {
        change.method = "too few batches for an interval".to_owned();
        return change;
    };
    change.method = tps_method(&wa, &wb);
    let value = b.tps / a.tps - 1.0;
    let half = (w.difference.high - w.difference.low) / 2.0 / a.tps;
    // Throughput cannot fall below nothing: a wide interval (few repeats)
    // is cut at -100%.
    change.change = Some(Estimate {
        value,
        low: (value - half).max(-1.0),
        high: value + half,
    });
    change
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
    let units =
        a.percentile_units(q)
            .zip(b.percentile_units(q))
            .and_then(|((pa, ua), (pb, ub))| {
                stats::batch_quantile_ratio(&pa, &pb, boot.value, CONFIDENCE)
                    .map(|e| (e, percentile_units(&ua, &ub)))
            });
    let (low, high) = match units {
        Some((e, units)) => {
            change.method =
                format!("the wider of {bootstrap} and Welch t over the percentiles of {units}");
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

impl From<Outcome> for Verdict {
    fn from(o: Outcome) -> Verdict {
        match o {
            Outcome::Improved => Verdict::Improved,
            Outcome::Regressed => Verdict::Regressed,
            Outcome::NoSignificantChange | Outcome::WithinThreshold => Verdict::NoSignificantChange,
            Outcome::Undetermined | Outcome::NotJudged => Verdict::Undetermined,
        }
    }
}

/// One verdict from several (a comparison's chosen metrics, or a sweep's
/// steps): `regressed` if any regressed, else `improved` if any improved,
/// else `undetermined` when none was determined (or there are none), else
/// `no significant change`.
pub fn combine(verdicts: impl IntoIterator<Item = Verdict>) -> Verdict {
    let verdicts: Vec<Verdict> = verdicts.into_iter().collect();
    if verdicts.contains(&Verdict::Regressed) {
        Verdict::Regressed
    } else if verdicts.contains(&Verdict::Improved) {
        Verdict::Improved
    } else if verdicts.iter().all(|v| *v == Verdict::Undetermined) {
        Verdict::Undetermined
    } else {
        Verdict::NoSignificantChange
    }
}
