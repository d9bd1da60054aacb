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
//!    much less) and Welch's interval is taken over the batch means (over
//!    the runs' TPS when both sides are repeated runs). Latency
//!    percentiles: the percentile bootstrap over the stored histograms,
//!    widened by the spread of the batches' (or the runs') percentiles. The whole latency distributions: the Mann–Whitney rank
//!    test from the histograms, with its effect size. See [`stats`].
//! 3. **A verdict** per chosen metric and overall: a change counts only
//!    when its interval excludes zero *and* its estimate is beyond the
//!    threshold; anything else is "no significant change", never a
//!    percentage to celebrate. Under `-R` (on either side) throughput is
//!    shown but not judged: it follows the schedule, and half the rate is
//!    half the throughput on any system. The latency percentiles, which
//!    `-R` counts from each transaction's scheduled start and which so
//!    include the schedule lag, judge instead (p99 when throughput was
//!    the only metric chosen). A verdict with one run on a side says that
//!    its intervals, drawn from within one run, cannot see how much runs
//!    vary between themselves, and how to get one that can (a step's
//!    repeats).
//!
//! A side is one run, or the repeats of a sweep's step: the statistics
//! over one or several runs are in [`changes`]. Two sweeps are compared
//! step by step, and a single result with a sweep's matching step, in
//! [`sweep`].
//!
//! It uses the model, the settings and the statistics; its text and pages
//! are `crate::report`'s.

mod changes;
pub mod likeness;
pub mod stats;
pub mod sweep;

use serde::{Deserialize, Serialize};

use crate::config::{CompareOptions, Metric};
use crate::model::run::RunResult;
use likeness::Difference;
use stats::Estimate;

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
/// What became of one metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
    /// Throughput under `-R`: it follows the schedule, so a change of it
    /// says what the rate was, not how fast the system is.
    NotJudged,
}

impl Outcome {
    pub fn describe(self) -> &'static str {
        match self {
            Outcome::Improved => "improved",
            Outcome::Regressed => "regressed",
            Outcome::NoSignificantChange => "no significant change",
            Outcome::WithinThreshold => "within threshold",
            Outcome::Undetermined => "undetermined",
            Outcome::NotJudged => "not judged (-R)",
        }
    }
}

/// One figure of both runs and its relative change.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Side {
    /// The file the result was read from (and the step, for a sweep's).
    pub source: String,
    /// The runs compared: 1, or a sweep step's repeats.
    pub runs: usize,
    /// The mean of the runs' TPS.
    pub tps: f64,
    /// Committed and failed transactions and the length, of all the runs.
    pub committed: u64,
    pub failed: u64,
    pub duration_s: f64,
    /// Whether a run was aborted.
    pub aborted: bool,
}

/// The verdict over the chosen metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// `comparison`: what this JSON document is.
    pub kind: String,
    pub tool: String,
    pub tool_version: String,
    pub confidence: f64,
    pub threshold: f64,
    /// The metrics the verdict is based on: the chosen ones, without
    /// throughput under `-R` (p99 when nothing else was chosen).
    pub verdict_metrics: Vec<Metric>,
    /// What the verdict cannot see or leaves out, in words.
    pub caveats: Vec<String>,
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
    /// A side has no run (a sweep whose every step failed).
    NoRuns,
    /// Two sweeps of different options (baseline's, candidate's).
    DifferentDimensions([String; 2]),
    /// A single run matches no step of the sweep it is compared with: its
    /// value of the swept option (`None` for a rate sweep and a run
    /// without `-R`), and the sweep's values.
    NoMatchingStep {
        dimension: String,
        value: Option<f64>,
        values: Vec<f64>,
    },
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
            CompareError::NoRuns => write!(f, "a side has no measured run to compare"),
            CompareError::DifferentDimensions([a, b]) => write!(
                f,
                "the sweeps vary different options ({a} against {b}): their steps are not the same points\nCompare sweeps of the same option."
            ),
            CompareError::NoMatchingStep {
                dimension,
                value,
                values,
            } => {
                let values: Vec<String> = values.iter().map(|v| crate::model::sweep::value(*v)).collect();
                match value {
                    Some(v) => write!(
                        f,
                        "the run's {dimension} ({}) matches no step of the sweep",
                        crate::model::sweep::value(*v)
                    )?,
                    None => write!(f, "the run has no {dimension} to match a step of the sweep")?,
                }
                if values.is_empty() {
                    f.write_str(" (it has no measured step)")?;
                } else {
                    write!(f, " (its steps: {})", values.join(", "))?;
                }
                write!(
                    f,
                    "\nCompare it with a sweep that measured its {dimension}, or with a single result."
                )
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
    compare_runs(&[baseline], &[candidate], sources, options)
}

/// Compares the runs of `candidate` with those of `baseline`: one run a
/// side, or a sweep step's repeats on one side (see [`sweep`]). The
/// first run of each side stands for its options.
pub fn compare_runs(
    baseline: &[&RunResult],
    candidate: &[&RunResult],
    sources: [&str; 2],
    options: &CompareOptions,
) -> Result<Comparison, CompareError> {
    let (Some(first_a), Some(first_b)) = (baseline.first(), candidate.first()) else {
        return Err(CompareError::NoRuns);
    };
    let differences = likeness::differences(first_a, first_b);
    refuse_different_scripts(&differences, options)?;
    let changes = changes::changes(baseline, candidate, options.threshold, &options.metrics);
    Ok(Comparison {
        kind: "comparison".to_owned(),
        tool: "pgbolt".to_owned(),
        tool_version: env!("CARGO_PKG_VERSION").to_owned(),
        confidence: CONFIDENCE,
        threshold: options.threshold,
        verdict_metrics: changes.judged,
        caveats: changes.caveats,
        baseline: side(baseline, sources[0]),
        candidate: side(candidate, sources[1]),
        differences,
        metrics: changes.metrics,
        latency_distribution: changes.latency_distribution,
        verdict: changes.verdict,
    })
}

/// The refusal of differences in the scripts, unless allowed.
fn refuse_different_scripts(
    differences: &[Difference],
    options: &CompareOptions,
) -> Result<(), CompareError> {
    let scripts: Vec<Difference> = differences.iter().filter(|d| d.refuses).cloned().collect();
    if scripts.is_empty() || options.allow_different_scripts {
        Ok(())
    } else {
        Err(CompareError::DifferentScripts(scripts))
    }
}

fn side(runs: &[&RunResult], source: &str) -> Side {
    Side {
        source: source.to_owned(),
        runs: runs.len(),
        tps: runs.iter().map(|r| r.tps).sum::<f64>() / runs.len().max(1) as f64,
        committed: runs.iter().map(|r| r.counts.counters.committed).sum(),
        failed: runs.iter().map(|r| r.counts.failed).sum(),
        duration_s: runs
            .iter()
            .map(|r| r.timings.bench_duration_us as f64 / 1e6)
            .sum(),
        aborted: runs.iter().any(|r| r.aborted),
    }
}

#[cfg(test)]
pub(crate) mod tests;
