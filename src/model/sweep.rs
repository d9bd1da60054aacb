//! A sweep's result: what was asked, every step's full run result, and the
//! answers drawn from them, as the result file holds them.
//!
//! The answers (each value's point with its repeats pooled, the best, the
//! knee, the plateau and the USL fit) are pure functions of the steps'
//! results ([`point`], [`summarize`], [`plateau`]), so a saved sweep gives
//! the same answers when read back, a comparison of two sweeps can compute
//! them for its tests, and they are unit-tested with synthetic results.
//! `crate::study` runs the steps and calls them.

use serde::{Deserialize, Serialize};

use super::diagnosis::{Severity, StateCounts};
use super::run::RunResult;
use crate::config::study::{Dimension, Slo};
use crate::stats::histogram::LatencyHistogram;
use crate::stats::usl::{self, Fit};

/// A swept value as written (rates may have decimals).
pub fn value(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// The `kind` of a sweep's result file.
pub const KIND: &str = "sweep";
/// A point within this fraction of the best throughput is as good.
pub const NEAR_BEST: f64 = 0.05;
/// Above this share of failed transactions a step is not an answer, and
/// `auto` stops.
pub const MAX_FAILURE_RATIO: f64 = 0.01;

/// A sweep's result file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepResult {
    pub schema_version: u32,
    /// [`KIND`], so readers of run results can tell it apart.
    pub kind: String,
    pub tool: String,
    pub tool_version: String,
    pub sweep: SweepInfo,
    /// Every measured step, in the order run.
    pub steps: Vec<StepResult>,
    pub summary: Summary,
}

/// What was asked for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepInfo {
    /// `clients`, `threads` or `rate`.
    pub dimension: String,
    pub auto: bool,
    pub warmup_s: u32,
    pub repeat: u32,
    /// `alternate` or `shuffle`: the order of each pass over the values.
    #[serde(default = "alternate")]
    pub order: String,
    /// `vacuum` or `checkpoint`.
    pub reset: String,
    pub slo: Vec<SloInfo>,
    /// Why the sweep ended before its last step, if it did.
    pub stopped: Option<String>,
}

fn alternate() -> String {
    "alternate".to_owned()
}

/// One latency objective.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SloInfo {
    pub name: String,
    pub quantile: f64,
    pub limit_ms: f64,
}

impl From<&Slo> for SloInfo {
    fn from(slo: &Slo) -> Self {
        SloInfo {
            name: slo.name.clone(),
            quantile: slo.quantile,
            limit_ms: slo.limit_ms,
        }
    }
}

/// One measured step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepResult {
    /// The swept value.
    pub value: f64,
    /// Which repetition (1 for the first).
    pub repeat: u32,
    pub result: RunResult,
}

/// The answers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// One per swept value, ascending, repeats pooled.
    pub points: Vec<Point>,
    /// Index in `points` of the highest throughput.
    pub best: Option<usize>,
    /// Index of the smallest value within [`NEAR_BEST`] of the best.
    pub near_best: Option<usize>,
    /// Index of the highest throughput that met every SLO.
    pub best_within_slo: Option<usize>,
    /// The USL fit (clients sweeps).
    pub fit: Option<Fit>,
    /// Why there is no fit, or why it is not to be trusted.
    pub fit_note: Option<String>,
}

/// A swept value with its repeats pooled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub value: f64,
    pub clients: u32,
    pub threads: u32,
    pub rate: Option<f64>,
    pub repeats: u32,
    /// The shortest measured window of the repeats, seconds: from the
    /// moment every client was connected to the end of the step (null in
    /// files written before it was recorded).
    #[serde(default)]
    pub measured_s: Option<f64>,
    /// Mean over the repeats.
    pub tps: f64,
    /// Sample standard deviation over the repeats (null for one).
    pub tps_stddev: Option<f64>,
    pub tps_min: f64,
    pub tps_max: f64,
    /// Latency percentiles (ms) of the repeats' histograms added.
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p99_9_ms: f64,
    pub failed: u64,
    pub failure_ratio: f64,
    /// Little's law: throughput × mean latency, the number of
    /// transactions in flight on average.
    pub in_flight: f64,
    /// `in_flight` over the clients: near 1 when every client is always
    /// in a transaction; lower when they wait (throttling, connecting,
    /// the client's own work between transactions).
    pub little_ratio: f64,
    /// Each SLO's percentile (ms), in `--slo` order.
    pub slo_ms: Vec<f64>,
    /// Whether every SLO was met (null without `--slo`).
    pub slo_met: Option<bool>,
    /// The busiest pgbolt worker thread's CPU over the measured window,
    /// as a share of it (mean over the repeats; null when the diagnosis
    /// has no thread figures). The busiest is the one that ran or waited
    /// for a CPU the longest.
    #[serde(default)]
    pub client_cpu: Option<f64>,
    /// The same thread's wait for a CPU (runnable, not running), as a
    /// share of the window (null where the kernel does not say): beside
    /// `client_cpu` it tells a client short of CPU time from a machine
    /// whose CPUs were taken.
    #[serde(default)]
    pub client_cpu_wait: Option<f64>,
    /// pgbolt's backends' states, the repeats' samples pooled (null
    /// without the monitor).
    #[serde(default)]
    pub backends: Option<BackendShares>,
    /// The diagnosis's warnings and critical findings of any repeat, by
    /// id, sorted.
    #[serde(default)]
    pub findings: Vec<String>,
}

/// Shares of the backend-samples (see [`crate::model::diagnosis::StateCounts`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct BackendShares {
    pub on_cpu: f64,
    /// Waiting on the server, whatever for.
    pub waiting: f64,
    /// Waiting for the client.
    pub client: f64,
    pub idle_in_transaction: f64,
    /// The `pg_stat_activity` samples the shares rest on, the repeats'
    /// added (0 in files written before it was recorded); below
    /// [`super::diagnosis::MIN_STATE_SAMPLES`] the shares are a rough
    /// picture.
    #[serde(default)]
    pub samples: u64,
}

/// The load figures of a point, from its runs' diagnoses: the busiest
/// thread's CPU and wait shares, the backends' states, the findings.
type Load = (Option<f64>, Option<f64>, Option<BackendShares>, Vec<String>);

/// The load figures of a point, from its runs' diagnoses.
fn load(runs: &[&RunResult]) -> Load {
    // Each run's busiest thread (running or waiting): its CPU and its
    // wait, as shares of the window.
    let busiest: Vec<(f64, Option<f64>)> = runs
        .iter()
        .filter_map(|r| {
            let wall = r.timings.bench_duration_us as f64 / 1e6;
            let c = &r.diagnosis.as_ref()?.client;
            let wait = |i: usize| c.thread_runqueue_s.get(i).copied();
            let busy = |i: usize| c.thread_cpu_s[i] + wait(i).unwrap_or(0.0);
            let thread = (0..c.thread_cpu_s.len()).max_by(|&a, &b| busy(a).total_cmp(&busy(b)))?;
            (wall > 0.0).then(|| {
                (
                    c.thread_cpu_s[thread] / wall,
                    wait(thread).map(|w| w / wall),
                )
            })
        })
        .collect();
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let cpu: Vec<f64> = busiest.iter().map(|b| b.0).collect();
    let waits: Option<Vec<f64>> = busiest.iter().map(|b| b.1).collect();
    let client_cpu = mean(&cpu);
    let client_cpu_wait = waits.as_deref().and_then(mean);
    let mut states = StateCounts::default();
    let mut findings = Vec::new();
    let mut samples = 0;
    for d in runs.iter().filter_map(|r| r.diagnosis.as_ref()) {
        if let Some(activity) = &d.activity {
            states.add(&activity.total);
            samples += d.monitor.samples;
        }
        findings.extend(
            d.findings
                .iter()
                .filter(|f| f.severity >= Severity::Warning)
                .map(|f| f.id.clone()),
        );
    }
    findings.sort();
    findings.dedup();
    let backends = (states.total() > 0).then(|| BackendShares {
        on_cpu: states.share(states.on_cpu),
        waiting: states.share(states.waiting_total()),
        client: states.share(states.client),
        idle_in_transaction: states.share(states.idle_in_transaction),
        samples,
    });
    (client_cpu, client_cpu_wait, backends, findings)
}

/// Pools a value's repeats into a point; `None` without results.
pub fn point(value: f64, runs: &[&RunResult], slo: &[Slo]) -> Option<Point> {
    let first = runs.first()?;
    let tps: Vec<f64> = runs.iter().map(|r| r.tps).collect();
    let mean = tps.iter().sum::<f64>() / tps.len() as f64;
    let stddev = crate::stats::simple::mean_variance(&tps).map(|(_, v)| v.sqrt());
    let mut histogram = LatencyHistogram::new();
    let mut max_us = 0;
    for run in runs {
        if let Ok(h) = run.latency.decode_histogram() {
            histogram.merge(&h);
        }
        max_us = max_us.max(run.latency.stats.max);
    }
    let at = |q: f64| -> f64 {
        if histogram.is_empty() {
            0.0
        } else {
            histogram.value_at_quantile(q).min(max_us) as f64 / 1000.0
        }
    };
    let failed: u64 = runs.iter().map(|r| r.counts.failed).sum();
    let total: u64 = runs.iter().map(|r| r.counts.total).sum();
    let in_flight = runs
        .iter()
        .map(|r| r.tps * r.latency.average_ms.unwrap_or(0.0) / 1000.0)
        .sum::<f64>()
        / runs.len() as f64;
    let slo_ms: Vec<f64> = slo.iter().map(|s| at(s.quantile)).collect();
    let (client_cpu, client_cpu_wait, backends, findings) = load(runs);
    let slo_met = (!slo.is_empty())
        .then(|| !histogram.is_empty() && slo.iter().zip(&slo_ms).all(|(s, v)| *v < s.limit_ms));
    Some(Point {
        value,
        clients: first.options.clients,
        threads: first.options.threads,
        rate: first.options.rate,
        repeats: runs.len() as u32,
        measured_s: runs
            .iter()
            .map(|r| r.timings.bench_duration_us as f64 / 1e6)
            .reduce(f64::min),
        tps: mean,
        tps_stddev: stddev,
        tps_min: tps.iter().copied().fold(f64::INFINITY, f64::min),
        tps_max: tps.iter().copied().fold(0.0, f64::max),
        p50_ms: at(0.5),
        p90_ms: at(0.9),
        p99_ms: at(0.99),
        p99_9_ms: at(0.999),
        failed,
        failure_ratio: if total > 0 {
            failed as f64 / total as f64
        } else {
            0.0
        },
        in_flight,
        little_ratio: in_flight / f64::from(first.options.clients.max(1)),
        slo_ms,
        slo_met,
        client_cpu,
        client_cpu_wait,
        backends,
        findings,
    })
}

/// The answers drawn from the steps.
pub fn summarize(dimension: Dimension, steps: &[StepResult], slo: &[Slo]) -> Summary {
    let mut values: Vec<f64> = steps.iter().map(|s| s.value).collect();
    values.sort_by(f64::total_cmp);
    values.dedup();
    let points: Vec<Point> = values
        .iter()
        .filter_map(|&v| {
            let runs: Vec<&RunResult> = steps
                .iter()
                .filter(|s| s.value == v)
                .map(|s| &s.result)
                .collect();
            point(v, &runs, slo)
        })
        .collect();
    let usable = |p: &&Point| p.failure_ratio <= MAX_FAILURE_RATIO;
    let best = index_of_max(points.iter().enumerate().filter(|(_, p)| usable(p)));
    let near_best = best.and_then(|b| {
        let floor = points[b].tps * (1.0 - NEAR_BEST);
        points.iter().position(|p| usable(&p) && p.tps >= floor)
    });
    let best_within_slo = index_of_max(
        points
            .iter()
            .enumerate()
            .filter(|(_, p)| usable(p) && p.slo_met == Some(true)),
    );
    let (fit, fit_note) = if dimension == Dimension::Clients {
        let xs: Vec<(f64, f64)> = steps
            .iter()
            .map(|s| (f64::from(s.result.options.clients), s.result.tps))
            .collect();
        match usl::fit(&xs) {
            Ok(fit) if fit.fits() => (Some(fit), None),
            Ok(fit) => {
                let note = format!(
                    "the USL does not fit these points (R² = {:.3}, below {}): its peak is no answer",
                    fit.r_squared,
                    usl::MIN_R_SQUARED
                );
                (Some(fit), Some(note))
            }
            Err(e) => (None, Some(e.to_string())),
        }
    } else {
        (
            None,
            Some(format!(
                "the USL fit is for clients sweeps, not {}",
                dimension.name()
            )),
        )
    };
    Summary {
        points,
        best,
        near_best,
        best_within_slo,
        fit,
        fit_note,
    }
}

fn index_of_max<'a>(points: impl Iterator<Item = (usize, &'a Point)>) -> Option<usize> {
    points
        .max_by(|a, b| a.1.tps.total_cmp(&b.1.tps))
        .map(|(i, _)| i)
}

/// `auto`'s plateau rule over the throughputs measured so far, in order:
/// no gain over the best before the last 3 steps, or less than 2% over
/// the best before the last 5.
pub fn plateau(tps: &[f64]) -> bool {
    let stalled = |window: usize, gain: f64| {
        tps.len() > window && {
            let (before, last) = tps.split_at(tps.len() - window);
            let best_before = before.iter().copied().fold(0.0, f64::max);
            let best_last = last.iter().copied().fold(0.0, f64::max);
            best_last <= best_before * (1.0 + gain)
        }
    };
    stalled(3, 0.0) || stalled(5, 0.02)
}

#[cfg(test)]
mod tests;

impl Summary {
    /// Checks the indexes into [`Summary::points`] of a summary read from a
    /// file: the name of the first that points past the end.
    pub fn check_indexes(&self) -> Result<(), String> {
        let indexes = [
            ("summary.best", self.best),
            ("summary.near_best", self.near_best),
            ("summary.best_within_slo", self.best_within_slo),
        ];
        for (field, index) in indexes {
            if let Some(i) = index.filter(|&i| i >= self.points.len()) {
                return Err(format!(
                    "{field} is {i}, past the {} points of summary.points",
                    self.points.len()
                ));
            }
        }
        Ok(())
    }
}
