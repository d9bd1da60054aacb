//! Per-interval time series with constant memory.
//!
//! The JSON and HTML reports plot throughput and latency over the run. A
//! series with one bucket per second would grow with the run length, so the
//! series has a fixed number of buckets: when the run outlives them, the
//! bucket width doubles and neighbouring buckets are added together. Memory
//! stays constant; a long run simply gets coarser buckets. Buckets hold the
//! same exact counters and sums as the totals, so coarsening and merging are
//! exact.

use serde::{Deserialize, Serialize};

use super::recorder::{Counters, Outcome};
use super::simple::SimpleStats;

/// Number of buckets a series keeps.
pub const SERIES_BUCKETS: usize = 512;

/// What happened during one interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntervalStats {
    /// Transaction outcomes ended in the interval.
    pub counts: Counters,
    /// Latency of the committed transactions.
    pub latency: SimpleStats,
    /// Schedule lag of the committed transactions.
    pub lag: SimpleStats,
}

impl IntervalStats {
    /// Accounts for one transaction.
    #[inline]
    pub fn add(&mut self, outcome: Outcome, tries: u32, latency_us: i64, lag_us: i64) {
        self.counts.add(outcome, tries);
        if outcome == Outcome::Committed {
            self.latency.add(latency_us);
            self.lag.add(lag_us);
        }
    }

    /// Adds everything in `other`.
    pub fn merge(&mut self, other: &IntervalStats) {
        self.counts.merge(&other.counts);
        self.latency.merge(&other.latency);
        self.lag.merge(&other.lag);
    }
}

/// Buckets of `width_us` starting at `start_us` (wall-clock µs since the
/// Unix epoch, the same for every thread of a run).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntervalSeries {
    start_us: i64,
    width_us: i64,
    /// The buckets in use; room for [`SERIES_BUCKETS`] is reserved at the
    /// start, so adding one never allocates, and the reserved room stays
    /// untouched (not resident) until a run reaches it.
    buckets: Vec<IntervalStats>,
}

impl IntervalSeries {
    /// An empty series of 1-second buckets starting at `start_us`.
    pub fn new(start_us: i64) -> Self {
        IntervalSeries {
            start_us,
            width_us: 1_000_000,
            buckets: Vec::with_capacity(SERIES_BUCKETS),
        }
    }

    /// Start of the first bucket, µs since the epoch.
    pub fn start_us(&self) -> i64 {
        self.start_us
    }

    /// Current bucket width in µs.
    pub fn width_us(&self) -> i64 {
        self.width_us
    }

    /// The buckets in use, oldest first.
    pub fn buckets(&self) -> &[IntervalStats] {
        &self.buckets
    }

    /// Accounts for a transaction that ended at `end_us` (µs since the epoch).
    #[inline]
    pub fn add(&mut self, end_us: i64, outcome: Outcome, tries: u32, latency_us: i64, lag_us: i64) {
        let index = self.index_for(end_us);
        self.buckets[index].add(outcome, tries, latency_us, lag_us);
    }

    fn index_for(&mut self, at_us: i64) -> usize {
        let offset = at_us.saturating_sub(self.start_us).max(0);
        let mut index = (offset / self.width_us) as usize;
        while index >= SERIES_BUCKETS && self.width_us <= i64::MAX / 2 {
            self.coarsen();
            index = (offset / self.width_us) as usize;
        }
        while self.buckets.len() <= index {
            self.buckets.push(IntervalStats::default());
        }
        index
    }

    /// Doubles the bucket width, adding neighbours together.
    fn coarsen(&mut self) {
        let halved = self.buckets.len().div_ceil(2);
        for i in 0..halved {
            let mut pair = self.buckets[2 * i];
            if let Some(next) = self.buckets.get(2 * i + 1) {
                pair.merge(next);
            }
            self.buckets[i] = pair;
        }
        self.buckets.truncate(halved);
        self.width_us *= 2;
    }

    /// Adds every bucket of `other`, coarsening as needed. Series of one run
    /// share their start, so this is exact; series with other starts are
    /// placed by the start of each of their buckets.
    pub fn merge(&mut self, other: &IntervalSeries) {
        if other.start_us < self.start_us && self.buckets.is_empty() {
            self.start_us = other.start_us;
        }
        // Bounded: a width read from a damaged result file must not make
        // the doubling overflow.
        while self.width_us < other.width_us && self.width_us <= i64::MAX / 2 {
            self.coarsen();
        }
        for (i, bucket) in other.buckets().iter().enumerate() {
            if *bucket == IntervalStats::default() {
                continue;
            }
            let at = other
                .start_us
                .saturating_add((i as i64).saturating_mul(other.width_us));
            let index = self.index_for(at);
            self.buckets[index].merge(bucket);
        }
    }

    /// Rebuilds a series from buckets read back from a result.
    pub fn from_parts(start_us: i64, width_us: i64, parts: &[IntervalStats]) -> Self {
        let mut series = IntervalSeries::new(start_us);
        series.width_us = width_us.max(1);
        for (i, b) in parts.iter().enumerate() {
            let at = start_us.saturating_add((i as i64).saturating_mul(series.width_us));
            let index = series.index_for(at);
            series.buckets[index].merge(b);
        }
        series
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_runs_coarsen_instead_of_growing() {
        let mut s = IntervalSeries::new(0);
        for sec in 0..(SERIES_BUCKETS as i64 * 3) {
            s.add(sec * 1_000_000 + 10, Outcome::Committed, 1, 100, 0);
        }
        assert_eq!(s.width_us(), 4_000_000);
        assert!(s.buckets().len() <= SERIES_BUCKETS);
        let total: u64 = s.buckets().iter().map(|b| b.counts.committed).sum();
        assert_eq!(total, SERIES_BUCKETS as u64 * 3);
        assert_eq!(s.buckets()[0].counts.committed, 4);
    }

    #[test]
    fn a_damaged_width_cannot_overflow() {
        let mut s = IntervalSeries::new(0);
        s.add(5, Outcome::Committed, 1, 100, 0);
        let mut one = IntervalStats::default();
        one.counts.committed = 1;
        let bad = IntervalSeries::from_parts(i64::MAX - 10, i64::MAX, &[one; 3]);
        s.merge(&bad);
        assert!(s.buckets().len() <= SERIES_BUCKETS);
        let total: u64 = s.buckets().iter().map(|b| b.counts.committed).sum();
        assert_eq!(total, 4);
    }

    #[test]
    fn merging_per_thread_series_equals_one_series() {
        let mut one = IntervalSeries::new(1_000);
        let mut a = IntervalSeries::new(1_000);
        let mut b = IntervalSeries::new(1_000);
        for i in 0..5000i64 {
            let at = 1_000 + i * 400_000;
            one.add(at, Outcome::Committed, 1, i, 0);
            if i % 2 == 0 {
                a.add(at, Outcome::Committed, 1, i, 0);
            } else {
                b.add(at, Outcome::Committed, 1, i, 0);
            }
        }
        a.merge(&b);
        assert_eq!(a, one);
    }
}
