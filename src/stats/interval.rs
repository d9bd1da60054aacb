//! Per-interval time series with constant memory.
//!
//! The JSON and HTML reports plot throughput and latency over the run. A
//! series with one bucket per second would grow with the run length, so the
//! series has a fixed number of buckets: when the run outlives them, the
//! bucket width doubles and neighbouring buckets are added together. Memory
//! stays constant; a long run simply gets coarser buckets. Buckets hold the
//! same exact counters and sums as the totals, so coarsening and merging are
//! exact.
//!
//! Each bucket also has a latency histogram of its committed transactions
//! ([`IntervalHistogram`]), from which the reports draw percentiles over
//! time. Recording goes into one open histogram ([`IntervalRecorder`]),
//! the one of the bucket being filled; when a committed transaction ends
//! in a later bucket, the open histogram is moved into its bucket and
//! cleared. Transactions end in time order within a thread, so that
//! happens once per bucket; one that ends in an earlier bucket than the
//! open one (a clock read earlier in the same loop turn) is counted in the
//! open one. Widening the buckets adds neighbouring histograms, short
//! ordered lists, so it stays cheap on the worker's thread.

use serde::{Deserialize, Serialize};

use super::interval_histogram::{IntervalHistogram, IntervalRecorder};
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
#[derive(Clone, Debug)]
pub struct IntervalSeries {
    start_us: i64,
    width_us: i64,
    /// The buckets in use; room for [`SERIES_BUCKETS`] is reserved at the
    /// start, so adding one never allocates, and the reserved room stays
    /// untouched (not resident) until a run reaches it.
    buckets: Vec<IntervalStats>,
    /// Each bucket's latency histogram (the open one's is in `open`).
    histograms: Vec<IntervalHistogram>,
    /// The bucket being filled and its histogram (see the module doc).
    open: Open,
}

/// The histogram being recorded into.
#[derive(Clone, Debug)]
struct Open {
    index: usize,
    histogram: IntervalRecorder,
}

impl PartialEq for IntervalSeries {
    /// Equal when they hold the same figures, wherever the histograms are.
    fn eq(&self, other: &Self) -> bool {
        self.start_us == other.start_us
            && self.width_us == other.width_us
            && self.buckets == other.buckets
            && self.latency_histograms() == other.latency_histograms()
    }
}

impl IntervalSeries {
    /// An empty series of 1-second buckets starting at `start_us`.
    pub fn new(start_us: i64) -> Self {
        IntervalSeries {
            start_us,
            width_us: 1_000_000,
            buckets: Vec::with_capacity(SERIES_BUCKETS),
            histograms: Vec::with_capacity(SERIES_BUCKETS),
            open: Open {
                index: 0,
                histogram: IntervalRecorder::new(),
            },
        }
    }

    /// Moves the start of an empty series to `start_us` (the measured
    /// window's, known only once the clients are connected); a series
    /// that holds figures keeps its start.
    pub fn begin_at(&mut self, start_us: i64) {
        if self.buckets.is_empty() {
            self.start_us = start_us;
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
        if outcome == Outcome::Committed {
            if index > self.open.index {
                self.close_open();
                self.open.index = index;
            }
            self.open.histogram.record(latency_us);
        }
    }

    /// Adds the open histogram into its bucket's and clears it.
    fn close_open(&mut self) {
        let open = &mut self.open;
        if open.histogram.is_empty() {
            return;
        }
        let closed = open.histogram.take();
        if let Some(stored) = self.histograms.get_mut(open.index) {
            if stored.is_empty() {
                *stored = closed;
            } else {
                stored.add(&closed);
            }
        }
    }

    /// The latency histogram of each bucket, the open one included.
    pub fn latency_histograms(&self) -> Vec<IntervalHistogram> {
        let mut out = self.histograms.clone();
        if !self.open.histogram.is_empty() {
            if let Some(slot) = out.get_mut(self.open.index) {
                slot.add(&self.open.histogram.snapshot());
            }
        }
        out
    }

    /// The latency histograms of every bucket added together, the open
    /// one's included: the run's distribution so far at the series'
    /// precision (the live metrics read it, see `crate::metrics`).
    pub fn latency_total(&self) -> IntervalHistogram {
        let mut total = self.open.histogram.snapshot();
        for h in &self.histograms {
            total.add(h);
        }
        total
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
            self.histograms.push(IntervalHistogram::default());
        }
        index
    }

    /// Doubles the bucket width, adding neighbours together.
    fn coarsen(&mut self) {
        self.close_open();
        self.open.index /= 2;
        let halved = self.buckets.len().div_ceil(2);
        for i in 0..halved {
            let mut pair = self.buckets[2 * i];
            if let Some(next) = self.buckets.get(2 * i + 1) {
                pair.merge(next);
            }
            self.buckets[i] = pair;
            let mut histogram = std::mem::take(&mut self.histograms[2 * i]);
            if let Some(next) = self.histograms.get(2 * i + 1) {
                histogram.add(next);
            }
            self.histograms[i] = histogram;
        }
        self.buckets.truncate(halved);
        self.histograms.truncate(halved);
        self.width_us *= 2;
    }

    /// Adds every bucket of `other`, coarsening as needed. Series of one run
    /// share their start, so this is exact; series with other starts are
    /// placed by the start of each of their buckets.
    pub fn merge(&mut self, other: &IntervalSeries) {
        let theirs = other.latency_histograms();
        self.close_open();
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
            if let Some(h) = theirs.get(i) {
                self.histograms[index].add(h);
            }
        }
    }

    /// Rebuilds a series from buckets read back from a result, each with
    /// its latency histogram.
    pub fn from_parts(
        start_us: i64,
        width_us: i64,
        parts: &[(IntervalStats, IntervalHistogram)],
    ) -> Self {
        let mut series = IntervalSeries::new(start_us);
        series.width_us = width_us.max(1);
        for (i, (b, h)) in parts.iter().enumerate() {
            let at = start_us.saturating_add((i as i64).saturating_mul(series.width_us));
            let index = series.index_for(at);
            series.buckets[index].merge(b);
            series.histograms[index].add(h);
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
        let bad = IntervalSeries::from_parts(
            i64::MAX - 10,
            i64::MAX,
            &vec![(one, IntervalHistogram::default()); 3],
        );
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
        let histograms = one.latency_histograms();
        assert_eq!(histograms.len(), one.buckets().len());
        assert!(histograms.iter().all(|h| !h.is_empty()));
    }

    #[test]
    fn each_bucket_has_the_histogram_of_its_transactions() {
        let mut s = IntervalSeries::new(0);
        for sec in 0..(SERIES_BUCKETS as i64 + 10) {
            for i in 0..10 {
                s.add(
                    sec * 1_000_000 + i,
                    Outcome::Committed,
                    1,
                    1000 * (sec + 1),
                    0,
                );
            }
            s.add(sec * 1_000_000 + 20, Outcome::Skipped, 1, 0, 0);
        }
        assert_eq!(s.width_us(), 2_000_000);
        for (i, h) in s.latency_histograms().iter().enumerate() {
            assert_eq!(h.len(), 20, "bucket {i}");
            let [min, max] = h.quantiles([0.0, 1.0]);
            let first = 1000 * (2 * i as u64 + 1);
            assert!(min.abs_diff(first) <= first / 16, "bucket {i}: {min}");
            let last = first + 1000;
            assert!(
                (last..=last + last / 16).contains(&max),
                "bucket {i}: {max}"
            );
        }
    }
}
