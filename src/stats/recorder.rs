//! The per-thread recorder the benchmark engine calls from its hot path.
//!
//! Each worker thread owns one [`ThreadStats`]; nothing is shared, so
//! recording takes no lock. Everything is allocated in
//! [`ThreadStats::new`] from a [`StatsLayout`] (scripts, commands per
//! script), and the recording methods only add to integers and fixed-size
//! histograms: they never allocate, format or fail. At the end of the run the
//! threads' recorders are merged with [`ThreadStats::merge`], which is exact.
//!
//! The counting rules are pgbench's (`accumStats`): a skipped transaction
//! counts only as skipped; a started one adds its retries (`tries - 1`) and,
//! if it was retried, one to `retried`; a committed one adds its latency and
//! schedule lag; a failed one counts under its failure kind. Latency is
//! measured from the scheduled start (so under `-R` it includes the schedule
//! lag, avoiding coordinated omission); service time from the actual start.

use serde::{Deserialize, Serialize};

use super::histogram::LatencyHistogram;
use super::interval::IntervalSeries;
use super::simple::SimpleStats;

/// Why a transaction did not commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// SQLSTATE 40001, not retried successfully.
    Serialization,
    /// SQLSTATE 40P01, not retried successfully.
    Deadlock,
    /// Any other SQL error (counted only under `--continue-on-error`).
    Other,
}

/// How a transaction ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It committed (possibly after retries).
    Committed,
    /// It failed for good.
    Failed(FailureKind),
    /// It was never started: under `-R` with `-L` it was already too late.
    Skipped,
}

/// Transaction counts, as pgbench's `StatsData` keeps them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Committed transactions ("actually processed").
    pub committed: u64,
    /// Transactions skipped under `-R` with `-L`.
    pub skipped: u64,
    /// Transactions retried at least once (whether or not they then committed).
    pub retried: u64,
    /// Retries over all transactions.
    pub retries: u64,
    /// Transactions failed on a serialization error.
    pub serialization_failures: u64,
    /// Transactions failed on a deadlock.
    pub deadlock_failures: u64,
    /// Transactions failed on another SQL error (`--continue-on-error`).
    pub other_failures: u64,
}

impl Counters {
    /// Accounts for one transaction.
    #[inline]
    pub fn add(&mut self, outcome: Outcome, tries: u32) {
        if outcome == Outcome::Skipped {
            self.skipped += 1;
            return;
        }
        if tries > 1 {
            self.retries += u64::from(tries - 1);
            self.retried += 1;
        }
        match outcome {
            Outcome::Committed => self.committed += 1,
            Outcome::Failed(FailureKind::Serialization) => self.serialization_failures += 1,
            Outcome::Failed(FailureKind::Deadlock) => self.deadlock_failures += 1,
            Outcome::Failed(FailureKind::Other) => self.other_failures += 1,
            Outcome::Skipped => {}
        }
    }

    /// Failed transactions of every kind.
    pub fn failures(&self) -> u64 {
        self.serialization_failures + self.deadlock_failures + self.other_failures
    }

    /// Every transaction: committed, failed and skipped.
    pub fn total(&self) -> u64 {
        self.committed + self.skipped + self.failures()
    }

    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &Counters) {
        self.committed += other.committed;
        self.skipped += other.skipped;
        self.retried += other.retried;
        self.retries += other.retries;
        self.serialization_failures += other.serialization_failures;
        self.deadlock_failures += other.deadlock_failures;
        self.other_failures += other.other_failures;
    }

    /// The counts added since `earlier` was copied.
    pub fn since(&self, earlier: &Counters) -> Counters {
        Counters {
            committed: self.committed - earlier.committed,
            skipped: self.skipped - earlier.skipped,
            retried: self.retried - earlier.retried,
            retries: self.retries - earlier.retries,
            serialization_failures: self.serialization_failures - earlier.serialization_failures,
            deadlock_failures: self.deadlock_failures - earlier.deadlock_failures,
            other_failures: self.other_failures - earlier.other_failures,
        }
    }
}

/// One finished (or skipped) transaction, as the engine reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transaction {
    /// Index of the script it ran.
    pub script: usize,
    /// How it ended.
    pub outcome: Outcome,
    /// Tries it took (1 when it was not retried; ignored when skipped).
    pub tries: u32,
    /// From the scheduled start (the actual start without `-R`) to the end, µs.
    pub latency_us: i64,
    /// From the scheduled start to the actual start, µs (0 without `-R`).
    pub lag_us: i64,
    /// When it ended, µs since the Unix epoch.
    pub end_us: i64,
}

/// The shape of a run, fixed before it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatsLayout {
    /// Number of commands of each script, in script order.
    pub commands_per_script: Vec<usize>,
    /// `-L` in µs; transactions slower than this are counted as late.
    pub latency_limit_us: Option<i64>,
    /// `-R`: transactions are scheduled, so their schedule lag and service
    /// time are worth recording. Without it every transaction starts when
    /// it is scheduled: the lag is 0 and the service time is the latency,
    /// which the statistics then derive instead of recording them again.
    pub throttled: bool,
    /// When the run started, µs since the Unix epoch: the series' start
    /// until the engine moves it to the measured window's
    /// ([`IntervalSeries::begin_at`]).
    pub start_us: i64,
    /// Keeps the per-interval series. Only the JSON report shows it, so a
    /// run without `--json` spares each thread the series' memory (up to
    /// 80 KiB, filled during the first 512 seconds) and its per-transaction
    /// work.
    pub series: bool,
}

/// Per-command statistics for `-r`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandStats {
    /// Elapsed time of each execution, µs.
    pub latency: SimpleStats,
    /// Transactions that failed on this command.
    pub failures: u64,
    /// Retries that started after an error on this command.
    pub retries: u64,
}

/// Statistics of one group of transactions (the whole run, or one script).
#[derive(Clone, Debug)]
pub struct GroupStats {
    /// Outcome counts.
    pub counts: Counters,
    /// Latency of committed transactions (exact sums).
    pub latency: SimpleStats,
    /// Latency distribution (from the scheduled start).
    pub latency_histogram: LatencyHistogram,
    /// Committed transactions slower than `-L`.
    pub latency_late: u64,
    /// Keeps the service-time and lag distributions (the whole run's group).
    detailed: bool,
    /// Records lag and service time (see [`StatsLayout::throttled`]); the
    /// four fields below stay empty otherwise.
    tracks_lag: bool,
    lag: SimpleStats,
    service: SimpleStats,
    service_histogram: Option<LatencyHistogram>,
    lag_histogram: Option<LatencyHistogram>,
}

impl GroupStats {
    /// `detailed` groups also keep service-time and lag histograms (the
    /// totals do; scripts keep only latency, to bound memory).
    fn new(detailed: bool, tracks_lag: bool) -> Self {
        let kept = detailed && tracks_lag;
        GroupStats {
            counts: Counters::default(),
            latency: SimpleStats::default(),
            latency_histogram: LatencyHistogram::new(),
            latency_late: 0,
            detailed,
            tracks_lag,
            lag: SimpleStats::default(),
            service: SimpleStats::default(),
            service_histogram: kept.then(LatencyHistogram::new),
            lag_histogram: kept.then(LatencyHistogram::new),
        }
    }

    /// Schedule lag of committed transactions (exact sums).
    pub fn lag(&self) -> SimpleStats {
        if self.tracks_lag {
            self.lag
        } else {
            SimpleStats::zeros(self.latency.count)
        }
    }

    /// Service time (latency less lag) of committed transactions (exact
    /// sums).
    pub fn service(&self) -> SimpleStats {
        if self.tracks_lag {
            self.service
        } else {
            self.latency
        }
    }

    /// Service-time distribution (from the actual start); detailed groups
    /// only.
    pub fn service_histogram(&self) -> Option<&LatencyHistogram> {
        match (self.detailed, self.tracks_lag) {
            (false, _) => None,
            (true, true) => self.service_histogram.as_ref(),
            (true, false) => Some(&self.latency_histogram),
        }
    }

    /// Schedule-lag distribution; detailed groups only.
    pub fn lag_histogram(&self) -> Option<LatencyHistogram> {
        match (self.detailed, self.tracks_lag) {
            (false, _) => None,
            (true, true) => self.lag_histogram.clone(),
            (true, false) => Some(LatencyHistogram::zeros(self.latency.count)),
        }
    }

    #[inline]
    fn add(&mut self, tx: &Transaction, latency_limit_us: Option<i64>) {
        self.counts.add(tx.outcome, tx.tries);
        if tx.outcome != Outcome::Committed {
            return;
        }
        self.latency.add(tx.latency_us);
        self.latency_histogram.record(tx.latency_us);
        if self.tracks_lag {
            self.lag.add(tx.lag_us);
            self.service.add(tx.latency_us - tx.lag_us);
            if let Some(h) = &mut self.service_histogram {
                h.record(tx.latency_us - tx.lag_us);
            }
            if let Some(h) = &mut self.lag_histogram {
                h.record(tx.lag_us);
            }
        }
        if latency_limit_us.is_some_and(|limit| tx.latency_us > limit) {
            self.latency_late += 1;
        }
    }

    fn merge(&mut self, other: &GroupStats) {
        self.counts.merge(&other.counts);
        self.latency.merge(&other.latency);
        self.lag.merge(&other.lag);
        self.service.merge(&other.service);
        self.latency_histogram.merge(&other.latency_histogram);
        merge_optional(&mut self.service_histogram, &other.service_histogram);
        merge_optional(&mut self.lag_histogram, &other.lag_histogram);
        self.latency_late += other.latency_late;
    }
}

fn merge_optional(mine: &mut Option<LatencyHistogram>, theirs: &Option<LatencyHistogram>) {
    match (mine.as_mut(), theirs) {
        (Some(m), Some(t)) => m.merge(t),
        (None, Some(t)) => *mine = Some(t.clone()),
        _ => {}
    }
}

/// Why two recorders cannot be merged.
#[derive(Debug)]
pub enum MergeError {
    /// They were built for runs with different scripts or commands.
    LayoutMismatch,
}

impl std::fmt::Display for MergeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MergeError::LayoutMismatch => {
                write!(
                    f,
                    "statistics of runs with different scripts cannot be merged"
                )
            }
        }
    }
}

impl std::error::Error for MergeError {}

/// Everything one worker thread measures.
#[derive(Clone, Debug)]
pub struct ThreadStats {
    layout: StatsLayout,
    /// The whole thread.
    pub total: GroupStats,
    /// One per script when there are several; empty with a single script,
    /// whose statistics are the totals (see [`ThreadStats::script`]), so
    /// that each transaction is recorded once.
    pub scripts: Vec<GroupStats>,
    /// Per script, one per command.
    pub commands: Vec<Vec<CommandStats>>,
    /// Per-interval series over the run.
    pub series: IntervalSeries,
    /// `--pool-size`: the waits for a pooled connection, one per
    /// transaction started (see [`ThreadStats::track_pool_wait`]).
    pub pool_wait: Option<PoolWaitStats>,
}

/// The waits for a pooled connection, µs.
#[derive(Clone, Debug, Default)]
pub struct PoolWaitStats {
    /// Exact sums.
    pub stats: SimpleStats,
    pub histogram: LatencyHistogram,
}

impl PoolWaitStats {
    fn merge(&mut self, other: &PoolWaitStats) {
        self.stats.merge(&other.stats);
        self.histogram.merge(&other.histogram);
    }
}

impl ThreadStats {
    /// Allocates everything the run will need.
    pub fn new(layout: &StatsLayout) -> Self {
        ThreadStats {
            layout: layout.clone(),
            total: GroupStats::new(true, layout.throttled),
            scripts: match layout.commands_per_script.len() {
                1 => Vec::new(),
                n => (0..n)
                    .map(|_| GroupStats::new(false, layout.throttled))
                    .collect(),
            },
            commands: layout
                .commands_per_script
                .iter()
                .map(|&n| vec![CommandStats::default(); n])
                .collect(),
            series: IntervalSeries::new(layout.start_us),
            pool_wait: None,
        }
    }

    /// Keeps the waits for a pooled connection (`--pool-size`).
    pub fn track_pool_wait(&mut self) {
        self.pool_wait = Some(PoolWaitStats::default());
    }

    /// Records how long a transaction waited for its pooled connection.
    #[inline]
    pub fn record_pool_wait(&mut self, wait_us: i64) {
        if let Some(p) = &mut self.pool_wait {
            p.stats.add(wait_us);
            p.histogram.record(wait_us);
        }
    }

    /// The statistics of script `i`: the totals when there is only one.
    pub fn script(&self, i: usize) -> Option<&GroupStats> {
        match self.layout.commands_per_script.len() {
            1 => (i == 0).then_some(&self.total),
            _ => self.scripts.get(i),
        }
    }

    /// The layout this recorder was built for.
    pub fn layout(&self) -> &StatsLayout {
        &self.layout
    }

    /// Records a finished or skipped transaction. Out-of-range script
    /// indices count in the totals only.
    #[inline]
    pub fn record_transaction(&mut self, tx: &Transaction) {
        let limit = self.layout.latency_limit_us;
        self.total.add(tx, limit);
        if let Some(script) = self.scripts.get_mut(tx.script) {
            script.add(tx, limit);
        }
        if self.layout.series {
            self.series
                .add(tx.end_us, tx.outcome, tx.tries, tx.latency_us, tx.lag_us);
        }
    }

    /// Records one execution of a command, for `-r`.
    #[inline]
    pub fn record_command(&mut self, script: usize, command: usize, elapsed_us: i64) {
        if let Some(c) = self.command_mut(script, command) {
            c.latency.add(elapsed_us);
        }
    }

    /// Records that a transaction failed for good on this command.
    #[inline]
    pub fn record_command_failure(&mut self, script: usize, command: usize) {
        if let Some(c) = self.command_mut(script, command) {
            c.failures += 1;
        }
    }

    /// Records that a transaction is retried after an error on this command.
    #[inline]
    pub fn record_command_retry(&mut self, script: usize, command: usize) {
        if let Some(c) = self.command_mut(script, command) {
            c.retries += 1;
        }
    }

    #[inline]
    fn command_mut(&mut self, script: usize, command: usize) -> Option<&mut CommandStats> {
        self.commands.get_mut(script)?.get_mut(command)
    }

    /// A cheap copy of the running totals, for progress reports.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            counts: self.total.counts,
            latency: self.total.latency,
            lag: self.total.lag(),
        }
    }

    /// Adds everything `other` recorded; exact.
    pub fn merge(&mut self, other: &ThreadStats) -> Result<(), MergeError> {
        if self.layout.commands_per_script != other.layout.commands_per_script
            || self.layout.throttled != other.layout.throttled
        {
            return Err(MergeError::LayoutMismatch);
        }
        self.total.merge(&other.total);
        for (mine, theirs) in self.scripts.iter_mut().zip(&other.scripts) {
            mine.merge(theirs);
        }
        for (mine, theirs) in self.commands.iter_mut().zip(&other.commands) {
            for (m, t) in mine.iter_mut().zip(theirs) {
                m.latency.merge(&t.latency);
                m.failures += t.failures;
                m.retries += t.retries;
            }
        }
        self.series.merge(&other.series);
        match (self.pool_wait.as_mut(), &other.pool_wait) {
            (Some(mine), Some(theirs)) => mine.merge(theirs),
            (None, Some(theirs)) => self.pool_wait = Some(theirs.clone()),
            _ => {}
        }
        Ok(())
    }
}

/// Running totals at one moment, what a progress report needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Outcome counts.
    pub counts: Counters,
    /// Latency sums of committed transactions.
    pub latency: SimpleStats,
    /// Schedule-lag sums of committed transactions.
    pub lag: SimpleStats,
}

impl Snapshot {
    /// Adds another thread's snapshot.
    pub fn merge(&mut self, other: &Snapshot) {
        self.counts.merge(&other.counts);
        self.latency.merge(&other.latency);
        self.lag.merge(&other.lag);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> StatsLayout {
        StatsLayout {
            commands_per_script: vec![2, 3],
            latency_limit_us: Some(1000),
            start_us: 0,
            throttled: true,
            series: true,
        }
    }

    fn tx(
        script: usize,
        outcome: Outcome,
        tries: u32,
        latency_us: i64,
        lag_us: i64,
    ) -> Transaction {
        Transaction {
            script,
            outcome,
            tries,
            latency_us,
            lag_us,
            end_us: latency_us * 1000,
        }
    }

    #[test]
    fn counts_follow_pgbench_rules() {
        let mut s = ThreadStats::new(&layout());
        s.record_transaction(&tx(0, Outcome::Committed, 1, 500, 20));
        s.record_transaction(&tx(0, Outcome::Committed, 3, 1500, 0));
        s.record_transaction(&tx(1, Outcome::Failed(FailureKind::Serialization), 2, 0, 0));
        s.record_transaction(&tx(1, Outcome::Failed(FailureKind::Deadlock), 1, 0, 0));
        s.record_transaction(&tx(1, Outcome::Skipped, 5, 0, 0));
        let c = s.total.counts;
        assert_eq!(
            (
                c.committed,
                c.skipped,
                c.retried,
                c.retries,
                c.failures(),
                c.total()
            ),
            (2, 1, 2, 3, 2, 5)
        );
        assert_eq!(s.total.latency_late, 1);
        assert_eq!((s.total.latency.count, s.total.latency.sum), (2, 2000));
        assert_eq!(s.total.service_histogram().map(|h| h.len()), Some(2));
        assert_eq!(s.total.lag().sum, 20);
        assert!(s.scripts[0].service_histogram().is_none());
        assert_eq!(s.scripts[0].counts.committed, 2);
        assert_eq!(s.scripts[1].counts.failures(), 2);
    }

    #[test]
    fn a_single_script_is_the_totals() {
        let layout = StatsLayout {
            commands_per_script: vec![1],
            ..layout()
        };
        let mut s = ThreadStats::new(&layout);
        s.record_transaction(&tx(0, Outcome::Committed, 1, 500, 0));
        s.record_transaction(&tx(0, Outcome::Failed(FailureKind::Deadlock), 1, 0, 0));
        let script = s.script(0).expect("script 0");
        assert_eq!((script.counts.committed, script.counts.failures()), (1, 1));
        assert_eq!(script.latency_histogram.len(), 1);
        assert!(s.script(1).is_none());
        let mut merged = ThreadStats::new(&layout);
        merged.merge(&s).expect("same layout");
        assert_eq!(merged.script(0).map(|g| g.counts.total()), Some(2));
    }

    #[test]
    fn the_series_is_kept_only_when_asked_for() {
        let mut s = ThreadStats::new(&StatsLayout {
            series: false,
            ..layout()
        });
        s.record_transaction(&tx(0, Outcome::Committed, 1, 500, 0));
        assert!(s.series.buckets().is_empty());
        assert_eq!(s.total.counts.committed, 1);
    }

    #[test]
    fn merging_threads_equals_recording_into_one() {
        let mut one = ThreadStats::new(&layout());
        let mut threads = vec![ThreadStats::new(&layout()), ThreadStats::new(&layout())];
        for i in 0..2000i64 {
            let outcome = match i % 7 {
                0 => Outcome::Failed(FailureKind::Serialization),
                1 => Outcome::Skipped,
                _ => Outcome::Committed,
            };
            let t = tx(
                (i % 2) as usize,
                outcome,
                1 + (i % 3) as u32,
                i * 3 % 9000,
                i % 50,
            );
            one.record_transaction(&t);
            one.record_command((i % 2) as usize, 1, i);
            let th = &mut threads[(i % 2) as usize];
            th.record_transaction(&t);
            th.record_command((i % 2) as usize, 1, i);
        }
        let mut merged = ThreadStats::new(&layout());
        for t in &threads {
            merged.merge(t).unwrap();
        }
        assert_eq!(merged.total.counts, one.total.counts);
        assert_eq!(merged.total.latency, one.total.latency);
        assert_eq!(merged.total.latency_late, one.total.latency_late);
        assert_eq!(merged.commands, one.commands);
        assert_eq!(merged.series, one.series);
        for q in [0.5, 0.99, 1.0] {
            assert_eq!(
                merged.total.latency_histogram.value_at_quantile(q),
                one.total.latency_histogram.value_at_quantile(q)
            );
        }
        let other = ThreadStats::new(&StatsLayout {
            commands_per_script: vec![1],
            ..layout()
        });
        assert!(matches!(
            merged.merge(&other),
            Err(MergeError::LayoutMismatch)
        ));
    }
}
