//! A sweep's result: what was asked, every step's full run result, and the
//! answers (best, knee, plateau, the USL fit), as the result file holds
//! them. The answers are computed by `crate::study`; this is their shape.

use serde::{Deserialize, Serialize};

use super::run::RunResult;
use crate::config::study::Slo;
use crate::stats::usl::Fit;

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
    /// has no thread figures).
    #[serde(default)]
    pub client_cpu: Option<f64>,
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
}
