//! Measurement: what the benchmark engine records while it runs.
//!
//! Each worker thread owns a [`ThreadStats`] and, with `-l`, a
//! [`TransactionLog`]; neither is shared, so the hot path takes no lock, and
//! both are allocated before the run, so recording allocates nothing. After
//! the run the per-thread recorders are merged ([`ThreadStats::merge`]) and
//! handed to the report. [`usl`] fits the Universal Scalability Law to a
//! sweep's throughput.
//!
//! Two kinds of numbers are kept, for two purposes:
//! - exact integer sums ([`SimpleStats`]: count, sum, sum of squares, min,
//!   max in µs), from which pgbench's averages, standard deviations,
//!   progress lines and aggregate log lines are computed, so pgbolt prints
//!   the same figures pgbench would from the same transactions;
//! - HDR histograms ([`LatencyHistogram`]), which pgbench does not have,
//!   for percentiles: fixed memory, 0.1% precision, exact merging.
//!
//! Memory is bounded over any run length: histograms have fixed bounds
//! (their pages become resident as values first reach them, so a run's
//! memory grows early and levels off), and the per-interval series, kept
//! only for `--json` and `--html`, coarsens instead of growing ([`IntervalSeries`]).

pub mod cfmt;
pub mod histogram;
pub mod interval;
pub mod interval_histogram;
pub mod log;
pub mod progress;
pub mod recorder;
pub mod simple;
pub mod usl;
mod zeroed;

pub use histogram::{HistogramError, LatencyHistogram};
pub use interval::{IntervalSeries, IntervalStats};
pub use interval_histogram::{IntervalHistogram, IntervalRecorder};
pub use log::{log_file_name, LogEntry, LogError, LogOptions, TransactionLog};
pub use progress::{ProgressOptions, ProgressReporter};
pub use recorder::{
    CommandStats, Counters, FailureKind, GroupStats, MergeError, Outcome, Snapshot, StatsLayout,
    ThreadStats, Transaction,
};
pub use simple::SimpleStats;
