//! Comparing two sweeps step by step, and a single result with the
//! matching step of a sweep.
//!
//! **Steps are matched by their key** ([`StepKey`]): the swept value.
//! The key is a value of its own, compared and ordered in one place, so
//! that what identifies a step can grow without touching the matching. A
//! step's repeats (`--repeat`) are the runs of one key; a step measured
//! on one side only is listed, not compared.
//!
//! **Each matched step gets the statistics of a single comparison**
//! ([`super::changes`]): Welch over the repeats when both sides repeated
//! the step, else batch means; the percentiles' bootstrap intervals; the
//! rank test; a verdict over the chosen metrics with the same threshold.
//!
//! **The overall verdict** is formed from the steps' verdicts as a
//! comparison's is from its metrics: `regressed` if any step regressed
//! (a regression at one load is a regression, whatever the other loads
//! did, which is what a CI gate wants), else `improved` if any improved,
//! else `undetermined` when no step could be decided (or none matched),
//! else `no significant change`.
//!
//! **Like with like**: sweeps of different dimensions are refused (4
//! clients and 4 threads are not the same point; there is no override).
//! Different swept values, repeats, warm-up or reset are listed; so is
//! what differs between the runs of each matched pair of steps (scripts,
//! options, server, settings: [`super::likeness`]), each difference once,
//! and different scripts refuse as they do for single results.
//!
//! **The fitted curves** (σ, κ, λ, N*, X(N*)) and the best measured points
//! are set side by side with each side's note when its fit does not hold.
//! They carry no interval (the fit keeps none), so no change of them is
//! stated; the per-step changes are the comparison's evidence.
//!
//! **A single result and a sweep**: the single result is compared with the
//! step whose key is the run's value of the swept option (its clients,
//! threads or rate), with that step's repeats, as a plain comparison
//! ([`find_step`]); a run that matches no step is refused, naming the
//! sweep's values.

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use super::changes::{changes, combine};
use super::likeness::{self, Difference};
use super::{
    refuse_different_scripts, CompareError, DistributionChange, MetricChange, Verdict, CONFIDENCE,
};
use crate::config::{CompareOptions, Metric};
use crate::model::run::RunResult;
use crate::model::sweep::{StepResult, SweepResult};
use crate::stats::usl::Fit;

/// What identifies a step of a sweep: steps of two sweeps with equal keys
/// are compared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepKey {
    /// The swept value (clients, threads or rate).
    pub value: f64,
}

impl StepKey {
    /// The key of a measured step.
    pub fn of(step: &StepResult) -> StepKey {
        StepKey { value: step.value }
    }

    /// The order steps are reported in.
    fn order(&self, other: &StepKey) -> Ordering {
        self.value.total_cmp(&other.value)
    }

    /// The step in words: `4 clients`.
    pub fn describe(&self, dimension: &str) -> String {
        format!("{} {dimension}", crate::model::sweep::value(self.value))
    }
}

/// One matched step compared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepComparison {
    pub step: StepKey,
    /// The runs of the step on each side (its repeats).
    pub baseline_runs: usize,
    pub candidate_runs: usize,
    /// Throughput, then p50, p90, p99, p99.9.
    pub metrics: Vec<MetricChange>,
    pub latency_distribution: Option<DistributionChange>,
    /// The step's verdict over the chosen metrics.
    pub verdict: Verdict,
}

/// The best measured point of a sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BestPoint {
    pub value: f64,
    pub tps: f64,
}

/// A summary of one sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepSide {
    /// The file the sweep was read from.
    pub source: String,
    /// The swept values measured, ascending.
    pub values: Vec<f64>,
    /// Whether the values were chosen by `auto`.
    pub auto: bool,
    /// Runs measured (values × repeats, fewer when the sweep stopped).
    pub runs: usize,
    pub repeat: u32,
    /// Why the sweep stopped early, if it did.
    pub stopped: Option<String>,
    /// The highest throughput among the steps that failed at most 1%.
    pub best: Option<BestPoint>,
    /// The USL fit, as the sweep's result holds it.
    pub fit: Option<Fit>,
    /// The model's throughput at its peak N*, X(N*).
    pub peak_throughput: Option<f64>,
    /// Why there is no fit, or why it does not hold.
    pub fit_note: Option<String>,
}

/// Two sweeps compared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepComparison {
    /// `sweep_comparison`: what this JSON document is.
    pub kind: String,
    pub tool: String,
    pub tool_version: String,
    pub confidence: f64,
    pub threshold: f64,
    pub verdict_metrics: Vec<Metric>,
    /// What the verdict cannot see or leaves out, in words (every
    /// step's, once).
    pub caveats: Vec<String>,
    /// The swept option, the same on both sides.
    pub dimension: String,
    pub baseline: SweepSide,
    pub candidate: SweepSide,
    /// What differs between the sweeps and their runs, besides the figures.
    pub differences: Vec<Difference>,
    /// The steps measured on both sides, in ascending order.
    pub steps: Vec<StepComparison>,
    pub only_in_baseline: Vec<StepKey>,
    pub only_in_candidate: Vec<StepKey>,
    /// Over the steps (see the module's documentation).
    pub verdict: Verdict,
}

/// A sweep's steps grouped by key, ascending; each key's runs in the
/// order of their repeats.
fn steps(sweep: &SweepResult) -> Vec<(StepKey, Vec<&RunResult>)> {
    let mut steps: Vec<&StepResult> = sweep.steps.iter().collect();
    steps.sort_by(|a, b| {
        StepKey::of(a)
            .order(&StepKey::of(b))
            .then(a.repeat.cmp(&b.repeat))
    });
    let mut groups: Vec<(StepKey, Vec<&RunResult>)> = Vec::new();
    for s in steps {
        let key = StepKey::of(s);
        match groups.last_mut() {
            Some((k, runs)) if *k == key => runs.push(&s.result),
            _ => groups.push((key, vec![&s.result])),
        }
    }
    groups
}

/// Compares the `candidate` sweep with the `baseline` sweep, step by step;
/// `sources` name the files they came from.
pub fn compare_sweeps(
    baseline: &SweepResult,
    candidate: &SweepResult,
    sources: [&str; 2],
    options: &CompareOptions,
) -> Result<SweepComparison, CompareError> {
    let dimension = &baseline.sweep.dimension;
    if *dimension != candidate.sweep.dimension {
        return Err(CompareError::DifferentDimensions([
            dimension.clone(),
            candidate.sweep.dimension.clone(),
        ]));
    }
    let (a, b) = (steps(baseline), steps(candidate));
    let matched: Vec<(&StepKey, &[&RunResult], &[&RunResult])> = a
        .iter()
        .filter_map(|(key, ra)| {
            b.iter()
                .find(|(k, _)| k == key)
                .map(|(_, rb)| (key, ra.as_slice(), rb.as_slice()))
        })
        .collect();
    let only = |mine: &[(StepKey, Vec<&RunResult>)], theirs: &[(StepKey, Vec<&RunResult>)]| {
        mine.iter()
            .filter(|(k, _)| !theirs.iter().any(|(t, _)| t == k))
            .map(|(k, _)| k.clone())
            .collect::<Vec<StepKey>>()
    };
    let mut differences = sweep_differences(baseline, candidate);
    let mut pairs: Vec<(&RunResult, &RunResult)> =
        matched.iter().map(|(_, ra, rb)| (ra[0], rb[0])).collect();
    if pairs.is_empty() {
        if let (Some((_, ra)), Some((_, rb))) = (a.first(), b.first()) {
            pairs.push((ra[0], rb[0]));
        }
    }
    add_run_differences(&mut differences, &pairs, dimension);
    refuse_different_scripts(&differences, options)?;
    let mut judged = options.metrics.clone();
    let mut caveats: Vec<String> = Vec::new();
    let steps: Vec<StepComparison> = matched
        .iter()
        .map(|(key, ra, rb)| {
            let c = changes(ra, rb, options.threshold, &options.metrics);
            judged.clone_from(&c.judged);
            for caveat in c.caveats {
                if !caveats.contains(&caveat) {
                    caveats.push(caveat);
                }
            }
            StepComparison {
                step: (*key).clone(),
                baseline_runs: ra.len(),
                candidate_runs: rb.len(),
                metrics: c.metrics,
                latency_distribution: c.latency_distribution,
                verdict: c.verdict,
            }
        })
        .collect();
    let verdict = combine(steps.iter().map(|s| s.verdict));
    Ok(SweepComparison {
        kind: "sweep_comparison".to_owned(),
        tool: "pgbolt".to_owned(),
        tool_version: env!("CARGO_PKG_VERSION").to_owned(),
        confidence: CONFIDENCE,
        threshold: options.threshold,
        verdict_metrics: judged,
        caveats,
        dimension: dimension.clone(),
        baseline: side(baseline, &a, sources[0]),
        candidate: side(candidate, &b, sources[1]),
        differences,
        steps,
        only_in_baseline: only(&a, &b),
        only_in_candidate: only(&b, &a),
        verdict,
    })
}

fn side(sweep: &SweepResult, steps: &[(StepKey, Vec<&RunResult>)], source: &str) -> SweepSide {
    let s = &sweep.summary;
    SweepSide {
        source: source.to_owned(),
        values: steps.iter().map(|(k, _)| k.value).collect(),
        auto: sweep.sweep.auto,
        runs: sweep.steps.len(),
        repeat: sweep.sweep.repeat,
        stopped: sweep.sweep.stopped.clone(),
        best: s.best.and_then(|i| s.points.get(i)).map(|p| BestPoint {
            value: p.value,
            tps: p.tps,
        }),
        fit: s.fit.clone(),
        peak_throughput: s
            .fit
            .as_ref()
            .and_then(|f| f.peak_clients.map(|n| f.throughput(n))),
        fit_note: s.fit_note.clone(),
    }
}

/// Adds what differs between the runs of each pair (the first runs of
/// the matched steps, or of the first steps when none matched), each
/// difference once; the swept option differs by design, and what the
/// sweeps' own differences already say (their warm-up) is not repeated.
fn add_run_differences(
    differences: &mut Vec<Difference>,
    pairs: &[(&RunResult, &RunResult)],
    dimension: &str,
) {
    let sweeps: Vec<String> = differences.iter().map(|d| d.what.clone()).collect();
    for (ra, rb) in pairs {
        for d in likeness::differences(ra, rb) {
            if d.what != dimension && !sweeps.contains(&d.what) && !differences.contains(&d) {
                differences.push(d);
            }
        }
    }
}

/// What differs in how the two sweeps were asked for.
fn sweep_differences(a: &SweepResult, b: &SweepResult) -> Vec<Difference> {
    let values = |s: &SweepResult| {
        let mut values: Vec<f64> = s.steps.iter().map(|s| s.value).collect();
        values.sort_by(f64::total_cmp);
        values.dedup();
        let list: Vec<String> = values.into_iter().map(crate::model::sweep::value).collect();
        let list = if list.is_empty() {
            "none".to_owned()
        } else {
            list.join(", ")
        };
        if s.sweep.auto {
            format!("auto ({list})")
        } else {
            list
        }
    };
    let (ia, ib) = (&a.sweep, &b.sweep);
    [
        ("swept values", values(a), values(b)),
        ("repeats", ia.repeat.to_string(), ib.repeat.to_string()),
        ("repeat order", ia.order.clone(), ib.order.clone()),
        (
            "warm-up",
            format!("{} s", ia.warmup_s),
            format!("{} s", ib.warmup_s),
        ),
        ("reset between steps", ia.reset.clone(), ib.reset.clone()),
    ]
    .into_iter()
    .filter(|(_, x, y)| x != y)
    .map(|(what, baseline, candidate)| Difference {
        what: what.to_owned(),
        baseline,
        candidate,
        refuses: false,
    })
    .collect()
}

/// The step of `sweep` that a single run is compared with.
#[derive(Debug)]
pub struct StepMatch<'a> {
    pub key: StepKey,
    /// The step's runs (its repeats), in order.
    pub runs: Vec<&'a RunResult>,
}

/// The step of `sweep` whose key is `run`'s value of the swept option.
pub fn find_step<'a>(
    sweep: &'a SweepResult,
    run: &RunResult,
) -> Result<StepMatch<'a>, CompareError> {
    let dimension = &sweep.sweep.dimension;
    let o = &run.options;
    let value = match dimension.as_str() {
        "clients" => Some(f64::from(o.clients)),
        "threads" => Some(f64::from(o.threads)),
        "rate" => o.rate,
        _ => None,
    };
    let key = value.map(|value| StepKey { value });
    let found = steps(sweep)
        .into_iter()
        .find(|(k, _)| Some(k) == key.as_ref());
    match found {
        Some((key, runs)) => Ok(StepMatch { key, runs }),
        None => Err(CompareError::NoMatchingStep {
            dimension: dimension.clone(),
            value,
            values: steps(sweep).into_iter().map(|(k, _)| k.value).collect(),
        }),
    }
}

#[cfg(test)]
pub(crate) mod tests;
