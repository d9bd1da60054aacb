//! The result file of the same benchmark run against several targets: each
//! target's sweep, what its pooler showed, and the comparison between
//! them (computed by `crate::targets`; this is its shape).

use serde::{Deserialize, Serialize};

use super::pooler::{PoolerInfo, PoolerView};
use super::sweep::SweepResult;

/// The `kind` of a targets' result file.
pub const KIND: &str = "targets";

/// The result file of a run or sweep over several targets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetsResult {
    pub schema_version: u32,
    /// [`KIND`].
    pub kind: String,
    pub tool: String,
    pub tool_version: String,
    /// In the order given; the first is the baseline of the ratios.
    pub targets: Vec<TargetResult>,
    pub comparison: Comparison,
    /// The pooler's view of each step, for targets that are PgBouncers
    /// whose console answers.
    pub pooler_steps: Vec<PoolerStep>,
    /// Why the run ended before its last step, if it did.
    pub stopped: Option<String>,
}

/// One target's steps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetResult {
    pub name: String,
    /// Its connection string with passwords replaced.
    pub conninfo: String,
    /// What its admin console said, when it is a PgBouncer.
    pub pooler: Option<PoolerInfo>,
    /// Every step's full result and the sweep's answers, as a sweep's
    /// result file holds them.
    pub sweep: SweepResult,
}

/// The pooler's view of one step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PoolerStep {
    pub target: String,
    pub value: f64,
    pub repeat: u32,
    pub view: PoolerView,
}

/// The targets side by side.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The target the ratios are against.
    pub baseline: String,
    /// One per swept value, ascending.
    pub rows: Vec<Row>,
    /// One per pair of targets, the earlier one as the pair's baseline
    /// (none when the comparison stopped early, see `unjudged`).
    pub crossovers: Vec<Crossover>,
    /// Why no crossover was drawn: the comparison stopped before every
    /// value was measured on every target, and a crossover speaks of the
    /// values never run too.
    #[serde(default)]
    pub unjudged: Option<String>,
}

/// One swept value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub value: f64,
    /// One per target, in the targets' order; `None` where the target
    /// has no result at this value (the comparison stopped, by a signal
    /// or a failed step, before it was measured).
    pub cells: Vec<Option<Cell>>,
}

/// One target at one value, repeats pooled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub tps: f64,
    pub tps_min: f64,
    pub tps_max: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub failed: u64,
    /// This target's TPS over the baseline's.
    pub tps_ratio: Option<f64>,
    /// This target's p99 over the baseline's.
    pub p99_ratio: Option<f64>,
}

/// Where one target and the baseline trade places.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Crossover {
    pub target: String,
    pub baseline: String,
    /// The smallest value from which the target's TPS is above the
    /// baseline's beyond the repeats' spread (its lowest repeat above the
    /// baseline's highest) at every larger value measured.
    pub target_ahead_from: Option<f64>,
    /// The same for the baseline.
    pub baseline_ahead_from: Option<f64>,
    /// Every value at which the target's TPS is above the baseline's
    /// beyond the spread, whether or not it stays ahead after it (empty
    /// in files written before it was recorded).
    #[serde(default)]
    pub target_ahead_at: Vec<f64>,
    /// The same for the baseline.
    #[serde(default)]
    pub baseline_ahead_at: Vec<f64>,
}
