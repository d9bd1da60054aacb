//! Latency histograms of one interval of the series.
//!
//! Percentiles over time need the distribution of every interval, not only
//! its sums. A full [`super::LatencyHistogram`] per interval (3 significant
//! digits) would be exact but large once serialized (a kilobyte or more
//! for a busy interval), and a result keeps up to
//! [`super::interval::SERIES_BUCKETS`] intervals, which the HTML report
//! embeds within its 400 KB budget. An interval's histogram keeps 1
//! significant digit instead: HdrHistogram's layout with 16 buckets per
//! doubling, so a percentile read from it is at most 1/16 (6.25%) above
//! the exact value, which on a chart of percentiles over time is a pixel
//! or two. In a result it is HdrHistogram's V2 format with deflate,
//! base64 (about 250 bytes for a busy interval), so any HdrHistogram
//! library reads it, and intervals of several threads, runs or machines
//! add exactly.
//!
//! Two forms, for two costs:
//! - [`IntervalRecorder`], the open interval's: a fixed array of counts
//!   (533 of them, about 4 KiB), allocated before the run; recording is
//!   one index computation and one addition, never an allocation;
//! - [`IntervalHistogram`], a closed interval's: only the buckets that
//!   hold values, in order. The series closes the open interval when a
//!   transaction ends in a later one (once per interval and thread), and
//!   adds closed ones when its buckets widen or threads merge: a merge of
//!   two short sorted lists, so widening all 512 buckets costs about a
//!   millisecond on the worker's thread (1.4 ms measured in a debug
//!   build; serializing them instead cost 110 ms). Serializing (deflate)
//!   happens only when a result is built, after the run.

use base64::Engine as _;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use super::histogram::{decode_v2, HistogramError, HIGHEST_US};

/// Sub-buckets per bucket: 32, the power of two that gives 1 significant
/// digit (2 × 10¹ rounded up), as HdrHistogram sizes it.
const SUB_BUCKET_COUNT_MAGNITUDE: u32 = 5;
const SUB_BUCKET_HALF_COUNT_MAGNITUDE: u32 = SUB_BUCKET_COUNT_MAGNITUDE - 1;
const SUB_BUCKET_HALF_COUNT: u64 = 1 << SUB_BUCKET_HALF_COUNT_MAGNITUDE;
const SUB_BUCKET_MASK: u64 = (1 << SUB_BUCKET_COUNT_MAGNITUDE) - 1;
const LEADING_ZERO_COUNT_BASE: u32 = 64 - SUB_BUCKET_COUNT_MAGNITUDE;

/// HdrHistogram's index of the count for `value` at 1 significant digit.
const fn index_for(value: u64) -> usize {
    let bucket = LEADING_ZERO_COUNT_BASE - (value | SUB_BUCKET_MASK).leading_zeros();
    let sub_bucket = value >> bucket;
    (((bucket as u64 + 1) << SUB_BUCKET_HALF_COUNT_MAGNITUDE) + sub_bucket - SUB_BUCKET_HALF_COUNT)
        as usize
}

/// The lowest value counted at `index` (the inverse of [`index_for`]).
fn value_for(index: usize) -> u64 {
    let index = index as u64;
    let bucket = (index >> SUB_BUCKET_HALF_COUNT_MAGNITUDE) as i64 - 1;
    let sub_bucket = (index & (SUB_BUCKET_HALF_COUNT - 1)) + SUB_BUCKET_HALF_COUNT;
    if bucket < 0 {
        sub_bucket - SUB_BUCKET_HALF_COUNT
    } else {
        sub_bucket << bucket
    }
}

/// Counts an interval needs: values are clamped to 24 h.
const COUNTS: usize = index_for(HIGHEST_US) + 1;

/// The crate's histogram for these bounds, empty.
fn empty_hdr() -> Histogram<u64> {
    let mut h =
        Histogram::new_with_bounds(1, HIGHEST_US, 1).expect("constant histogram bounds are valid");
    h.auto(false);
    h
}

/// The open interval's histogram: fixed counts, recording never allocates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntervalRecorder {
    counts: Box<[u64]>,
    len: u64,
}

impl Default for IntervalRecorder {
    fn default() -> Self {
        Self::new()
    }
}

impl IntervalRecorder {
    /// Empty, with every count allocated.
    pub fn new() -> Self {
        IntervalRecorder {
            counts: vec![0; COUNTS].into_boxed_slice(),
            len: 0,
        }
    }

    /// Records one latency (negative values count as 0, values past 24 h
    /// as 24 h).
    #[inline]
    pub fn record(&mut self, latency_us: i64) {
        let value = (latency_us.max(0) as u64).min(HIGHEST_US);
        if let Some(c) = self.counts.get_mut(index_for(value)) {
            *c += 1;
            self.len += 1;
        }
    }

    /// Whether nothing was recorded since the last [`IntervalRecorder::take`].
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// What was recorded, as a closed histogram, clearing the counts.
    pub fn take(&mut self) -> IntervalHistogram {
        let mut entries = Vec::new();
        if self.len > 0 {
            for (index, c) in self.counts.iter_mut().enumerate() {
                if *c > 0 {
                    entries.push(Entry::new(index, *c));
                    *c = 0;
                }
            }
        }
        self.len = 0;
        IntervalHistogram { entries }
    }

    /// What was recorded, as a closed histogram, keeping the counts.
    pub fn snapshot(&self) -> IntervalHistogram {
        IntervalHistogram {
            entries: self
                .counts
                .iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(index, c)| Entry::new(index, *c))
                .collect(),
        }
    }
}

/// One bucket of a closed histogram in 8 bytes: its index in the top 16
/// bits, its count (saturating at 2^48) in the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry(u64);

const COUNT_BITS: u32 = 48;
const COUNT_MAX: u64 = (1 << COUNT_BITS) - 1;

impl Entry {
    fn new(index: usize, count: u64) -> Entry {
        Entry(((index as u64) << COUNT_BITS) | count.min(COUNT_MAX))
    }

    fn index(self) -> usize {
        (self.0 >> COUNT_BITS) as usize
    }

    fn count(self) -> u64 {
        self.0 & COUNT_MAX
    }

    fn plus(self, count: u64) -> Entry {
        Entry::new(self.index(), self.count().saturating_add(count))
    }
}

/// A closed interval's histogram: the buckets holding values, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IntervalHistogram {
    entries: Vec<Entry>,
}

impl IntervalHistogram {
    /// Whether it holds no value.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Number of values.
    pub fn len(&self) -> u64 {
        self.entries.iter().map(|e| e.count()).sum()
    }

    /// Adds every count of `other` (a merge of the two ordered lists).
    pub fn add(&mut self, other: &IntervalHistogram) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            self.entries.clone_from(&other.entries);
            return;
        }
        let (a, b) = (&self.entries, &other.entries);
        let mut merged = Vec::with_capacity(a.len() + b.len());
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            match a[i].index().cmp(&b[j].index()) {
                std::cmp::Ordering::Less => {
                    merged.push(a[i]);
                    i += 1;
                }
                std::cmp::Ordering::Greater => {
                    merged.push(b[j]);
                    j += 1;
                }
                std::cmp::Ordering::Equal => {
                    merged.push(a[i].plus(b[j].count()));
                    i += 1;
                    j += 1;
                }
            }
        }
        merged.extend_from_slice(&a[i..]);
        merged.extend_from_slice(&b[j..]);
        self.entries = merged;
    }

    /// The buckets holding values, lowest first: each bucket's lowest
    /// value, the lowest value of the next bucket (both µs) and its count.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.entries
            .iter()
            .map(|e| (value_for(e.index()), value_for(e.index() + 1), e.count()))
    }

    /// Number of values in buckets that reach above `value_us` (whose
    /// highest value is above it): at this precision, the values that may
    /// be above it.
    pub fn count_reaching_above(&self, value_us: u64) -> u64 {
        self.entries
            .iter()
            .filter(|e| value_for(e.index() + 1) - 1 > value_us)
            .map(|e| e.count())
            .sum()
    }

    /// The crate's histogram with the same counts.
    fn hdr(&self) -> Histogram<u64> {
        let mut h = empty_hdr();
        for e in &self.entries {
            h.saturating_record_n(value_for(e.index()), e.count());
        }
        h
    }

    /// The values below which each of `quantiles` (0..=1) of the values
    /// fall, in µs (the highest value of the bucket, as HdrHistogram
    /// reports).
    pub fn quantiles<const N: usize>(&self, quantiles: [f64; N]) -> [u64; N] {
        let h = self.hdr();
        quantiles.map(|q| h.value_at_quantile(q))
    }

    /// V2 + deflate + base64 text.
    pub fn encode(&self) -> String {
        let mut bytes = Vec::new();
        // Writing into a vector cannot fail, nor can a histogram of u64
        // counts overflow the format.
        let _ = V2DeflateSerializer::new().serialize(&self.hdr(), &mut bytes);
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// Reads the text written by [`IntervalHistogram::encode`] (or any V2
    /// histogram, brought to this precision).
    pub fn decode(text: &str) -> Result<Self, HistogramError> {
        let mut entries: Vec<Entry> = Vec::new();
        // Values come lowest first, so their indices too.
        for v in decode_v2(text)?.iter_recorded() {
            let index = index_for(v.value_iterated_to().min(HIGHEST_US));
            match entries.last_mut() {
                Some(last) if last.index() == index => *last = last.plus(v.count_at_value()),
                _ => entries.push(Entry::new(index, v.count_at_value())),
            }
        }
        Ok(IntervalHistogram { entries })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_precision() {
        let mut r = IntervalRecorder::new();
        for i in 1..=10_000i64 {
            r.record(i * 7);
        }
        let h = r.take();
        assert!(r.is_empty() && r.take().is_empty());
        let back = IntervalHistogram::decode(&h.encode()).expect("decode");
        assert_eq!(back, h);
        assert_eq!(back.len(), 10_000);
        let [p50, p99] = back.quantiles([0.5, 0.99]);
        assert!((35_000..=35_000 + 35_000 / 16).contains(&p50), "{p50}");
        assert!((69_300..=69_300 + 69_300 / 16).contains(&p99), "{p99}");
        assert!(IntervalHistogram::decode("AAAA").is_err());
    }

    /// A bucket that straddles the threshold counts: its values may be
    /// above it.
    #[test]
    fn values_reaching_above_a_threshold_include_its_bucket() {
        let mut r = IntervalRecorder::new();
        for v in [100, 1_996_623, 1_996_623, 5_000_000] {
            r.record(v);
        }
        let h = r.take();
        assert_eq!(h.count_reaching_above(1_929_215), 3);
        assert_eq!(h.count_reaching_above(4_000_000), 1);
        assert_eq!(h.count_reaching_above(10_000_000), 0);
    }

    /// The layout is the crate's at 1 significant digit: the same values
    /// give the same serialized histogram.
    #[test]
    fn counts_are_the_crates_own() {
        let mut ours = IntervalRecorder::new();
        let mut theirs = empty_hdr();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = x >> (1 + x % 63);
            ours.record(v.min(i64::MAX as u64) as i64);
            theirs.saturating_record(v.min(HIGHEST_US));
        }
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&theirs, &mut bytes)
            .expect("serialize");
        let text = base64::engine::general_purpose::STANDARD.encode(bytes);
        assert_eq!(ours.take().encode(), text);
        for index in 0..COUNTS {
            assert_eq!(index_for(value_for(index)), index);
        }
        assert!(COUNTS <= empty_hdr().distinct_values());
    }

    #[test]
    fn adding_equals_recording_into_one() {
        let (mut one, mut a, mut b) = (
            IntervalRecorder::new(),
            IntervalRecorder::new(),
            IntervalRecorder::new(),
        );
        for i in 0..5_000i64 {
            let v = (i * 7919) % 50_000;
            one.record(v);
            if i % 3 == 0 { &mut a } else { &mut b }.record(v);
        }
        let mut sum = a.take();
        sum.add(&b.take());
        assert_eq!(sum, one.take());
    }

    #[test]
    fn a_busy_interval_stays_small() {
        let mut r = IntervalRecorder::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..50_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // A peak near 1 ms with a long tail, as a busy server gives.
            let tail = 1u64 << (x % 1024).trailing_zeros().min(6);
            r.record((800 + x % 400) as i64 * tail as i64);
        }
        let text = r.take().encode();
        assert!(text.len() < 400, "{}", text.len());
    }
}
