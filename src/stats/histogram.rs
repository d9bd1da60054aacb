//! Fixed-size latency histograms.
//!
//! Percentiles need the distribution, and keeping every latency in a vector
//! grows without bound and costs a sort at the end. An HDR histogram keeps
//! counts in buckets whose width grows with the value, so any value between
//! 1 µs and 24 hours is stored with 3 significant digits (a relative error of
//! at most 0.1%) in a fixed array of counts. Recording never allocates; a
//! value beyond the top is clamped to it (and counted: nothing is silently
//! dropped). Two histograms add exactly: merging per-thread histograms is
//! the same as recording everything into one.
//!
//! The counts are HdrHistogram's own layout (the `hdrhistogram` crate's
//! bucket and sub-bucket indexing for these bounds), kept in an array
//! that starts as untouched zero pages ([`ZeroedCounts`]): the crate's own
//! histogram writes zeros over its whole ~224 KiB when it is created, so
//! every thread, and every script of every thread, paid that in resident
//! memory before it recorded anything (1.9 GB for 128 scripts at `-j
//! 64`). Here a page becomes resident only when a count on it is first
//! written, which for latencies that cluster is a few pages. The crate's
//! histogram is built from the counts only when the report reads
//! percentiles or serializes.
//!
//! Histograms are carried in results as HdrHistogram's V2 format compressed
//! with deflate and base64-encoded, the interchange format every
//! HdrHistogram implementation reads, so results from several processes or
//! machines can be merged exactly later.

use std::fmt;

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use super::zeroed::ZeroedCounts;

/// Lowest distinguishable value: 1 µs.
const LOWEST_US: u64 = 1;
/// Highest trackable value: 24 hours in microseconds.
pub const HIGHEST_US: u64 = 86_400_000_000;
/// Significant decimal digits kept for every value.
const SIGNIFICANT_DIGITS: u8 = 3;

/// Sub-buckets per bucket: the power of two that gives 3 significant
/// digits (2 × 10³ rounded up), as HdrHistogram sizes it.
const SUB_BUCKET_COUNT_MAGNITUDE: u32 = 11;
const SUB_BUCKET_HALF_COUNT_MAGNITUDE: u32 = SUB_BUCKET_COUNT_MAGNITUDE - 1;
const SUB_BUCKET_HALF_COUNT: u64 = 1 << SUB_BUCKET_HALF_COUNT_MAGNITUDE;
const SUB_BUCKET_MASK: u64 = (1 << SUB_BUCKET_COUNT_MAGNITUDE) - 1;
/// Leading zeros of the largest value of bucket 0, plus one.
const LEADING_ZERO_COUNT_BASE: u32 = 64 - SUB_BUCKET_COUNT_MAGNITUDE;

/// HdrHistogram's index of the count for `value` (unit magnitude 0).
#[inline]
fn index_for(value: u64) -> usize {
    let bucket = LEADING_ZERO_COUNT_BASE - (value | SUB_BUCKET_MASK).leading_zeros();
    let sub_bucket = value >> bucket;
    (((u64::from(bucket) + 1) << SUB_BUCKET_HALF_COUNT_MAGNITUDE) + sub_bucket
        - SUB_BUCKET_HALF_COUNT) as usize
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

/// The crate's histogram for pgbolt's bounds, empty.
fn empty_hdr() -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)
        .expect("constant histogram bounds are valid");
    h.auto(false);
    h
}

/// How many counts the bounds need (the crate's `distinct_values`).
fn counts_len() -> usize {
    static LEN: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *LEN.get_or_init(|| empty_hdr().distinct_values())
}

/// A microsecond histogram with pgbolt's fixed bounds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LatencyHistogram {
    /// HdrHistogram's counts, resident only where written.
    counts: ZeroedCounts,
    len: u64,
}

/// Why a serialized histogram could not be used.
#[derive(Debug)]
pub enum HistogramError {
    /// The text is not valid base64.
    Base64(base64::DecodeError),
    /// The bytes are not a V2 (deflate) histogram.
    Decode(hdrhistogram::serialization::DeserializeError),
    /// Encoding failed.
    Encode(String),
    /// The histogram covers a range this one cannot hold.
    Add(hdrhistogram::AdditionError),
}

impl fmt::Display for HistogramError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HistogramError::Base64(e) => write!(f, "histogram is not valid base64: {e}"),
            HistogramError::Decode(e) => write!(f, "histogram is not a V2 histogram: {e:?}"),
            HistogramError::Encode(e) => write!(f, "could not encode histogram: {e}"),
            HistogramError::Add(e) => write!(f, "histograms cannot be merged: {e:?}"),
        }
    }
}

impl std::error::Error for HistogramError {}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram covering 1 µs to 24 h.
    pub fn new() -> Self {
        LatencyHistogram {
            counts: ZeroedCounts::new(counts_len()),
            len: 0,
        }
    }

    /// A histogram of `count` values that are all 0.
    pub fn zeros(count: u64) -> Self {
        let mut h = LatencyHistogram::new();
        h.record_n(0, count);
        h
    }

    /// Records one value in microseconds: never allocates, never fails
    /// (negative values count as 0; values past the top bucket, which
    /// ends near 38 h, count as 24 h, as the crate clamps them).
    #[inline]
    pub fn record(&mut self, value_us: i64) {
        self.record_n(value_us.max(0) as u64, 1);
    }

    #[inline]
    fn record_n(&mut self, value: u64, n: u64) {
        let mut index = index_for(value);
        if index >= self.counts.len() {
            index = index_for(HIGHEST_US);
        }
        if let Some(c) = self.counts.get_mut(index) {
            *c = c.saturating_add(n);
            self.len = self.len.saturating_add(n);
        }
    }

    /// Number of recorded values.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The crate's histogram with the same counts.
    fn hdr(&self) -> Histogram<u64> {
        let mut h = empty_hdr();
        for (index, &n) in self.counts.iter().enumerate() {
            if n > 0 {
                h.saturating_record_n(value_for(index), n);
            }
        }
        h
    }

    /// The values below which each of `quantiles` (0..=1) of the values
    /// fall, in µs (the highest value equivalent to the bucket, as
    /// HdrHistogram reports), and the largest recorded value (likewise).
    pub fn quantiles<const N: usize>(&self, quantiles: [f64; N]) -> ([u64; N], u64) {
        let h = self.hdr();
        (quantiles.map(|q| h.value_at_quantile(q)), h.max())
    }

    /// The value below which `quantile` (0..=1) of the values fall, in µs
    /// (the highest value equivalent to the bucket, as HdrHistogram reports).
    pub fn value_at_quantile(&self, quantile: f64) -> u64 {
        self.quantiles([quantile]).0[0]
    }

    /// Largest recorded value (its bucket's highest equivalent value).
    pub fn max(&self) -> u64 {
        self.quantiles([]).1
    }

    /// Each bucket holding values: its lowest value in µs and its count,
    /// lowest first.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(index, &n)| (value_for(index), n))
    }

    /// The highest value of the bucket that holds `value`: the value
    /// percentiles report for that bucket.
    pub fn highest_equivalent(value: u64) -> u64 {
        value_for(index_for(value) + 1) - 1
    }

    /// Whether two values fall in the same bucket (are equal at this precision).
    pub fn equivalent(&self, a: u64, b: u64) -> bool {
        index_for(a) == index_for(b)
    }

    /// Adds every count of `other` into `self`.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        for (mine, &theirs) in self.counts.iter_mut().zip(other.counts.iter()) {
            if theirs > 0 {
                *mine = mine.saturating_add(theirs);
            }
        }
        self.len = self.len.saturating_add(other.len);
    }

    /// V2 + deflate + base64 text.
    pub fn to_base64(&self) -> Result<String, HistogramError> {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&self.hdr(), &mut bytes)
            .map_err(|e| HistogramError::Encode(format!("{e:?}")))?;
        Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    /// Reads the text written by [`LatencyHistogram::to_base64`] (or by any
    /// HdrHistogram implementation writing V2 with deflate).
    pub fn from_base64(text: &str) -> Result<Self, HistogramError> {
        let decoded = decode_v2(text)?;
        let mut bounded = empty_hdr();
        bounded.add(&decoded).map_err(HistogramError::Add)?;
        let mut h = LatencyHistogram::new();
        for v in bounded.iter_recorded() {
            h.record_n(v.value_iterated_to(), v.count_at_value());
        }
        Ok(h)
    }
}

/// A histogram from its V2 (deflate) base64 text, as the crate reads it.
pub(crate) fn decode_v2(text: &str) -> Result<Histogram<u64>, HistogramError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(HistogramError::Base64)?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(HistogramError::Decode)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Exact percentile of a sorted set, with HdrHistogram's definition:
    /// the smallest value with at least `q * n` values at or below it.
    fn exact(sorted: &[u64], q: f64) -> u64 {
        let rank = ((q * sorted.len() as f64).ceil() as usize).max(1);
        sorted[rank - 1]
    }

    #[test]
    fn percentiles_match_exact_values_within_precision() {
        // A skewed, deterministic latency set from 50 µs to ~2 s.
        let mut values: Vec<u64> = (0..20_000u64)
            .map(|i| 50 + (i * i * 7919) % 2_000_000 / (1 + i % 13))
            .collect();
        let mut h = LatencyHistogram::new();
        for v in &values {
            h.record(*v as i64);
        }
        values.sort_unstable();
        for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
            let want = exact(&values, q);
            let got = h.value_at_quantile(q);
            assert!(
                h.equivalent(want, got),
                "q={q}: exact {want}, histogram {got}"
            );
            let err = (got as f64 - want as f64).abs() / want as f64;
            assert!(err <= 0.001, "q={q}: relative error {err}");
        }
        assert!(h.equivalent(h.max(), *values.last().unwrap()));
    }

    #[test]
    fn merged_per_thread_histograms_equal_one_histogram() {
        let mut one = LatencyHistogram::new();
        let mut threads = [
            LatencyHistogram::new(),
            LatencyHistogram::new(),
            LatencyHistogram::new(),
        ];
        for i in 0..30_000i64 {
            let v = (i * 37) % 123_457 + i / 3;
            one.record(v);
            threads[(i % 3) as usize].record(v);
        }
        let mut merged = LatencyHistogram::new();
        for t in &threads {
            merged.merge(t);
        }
        assert_eq!(merged, one);
    }

    /// The counts are the crate's: the same values recorded into the
    /// crate's own histogram give the same serialized histogram, the same
    /// quantiles and the same maximum, clamping included.
    #[test]
    fn counts_are_the_crates_own() {
        let mut ours = LatencyHistogram::new();
        let mut theirs = empty_hdr();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for i in 0..50_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = match i % 5 {
                0 => x % 3_000,
                1 => x % 2_000_000,
                2 => x % 90_000_000_000,
                3 => x >> (1 + x % 63),
                _ => i,
            };
            ours.record(v as i64);
            theirs.saturating_record(v);
        }
        assert_eq!(ours.len(), theirs.len());
        let serialized = |h: &Histogram<u64>| {
            let mut bytes = Vec::new();
            V2DeflateSerializer::new()
                .serialize(h, &mut bytes)
                .expect("serialize");
            bytes
        };
        assert!(serialized(&ours.hdr()) == serialized(&theirs));
        for q in [0.0, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(
                ours.value_at_quantile(q),
                theirs.value_at_quantile(q),
                "{q}"
            );
        }
        assert_eq!(ours.max(), theirs.max());
        for index in 0..counts_len() {
            assert_eq!(index_for(value_for(index)), index);
        }
    }

    #[test]
    fn out_of_range_values_are_clamped_not_lost() {
        let mut h = LatencyHistogram::new();
        h.record(-5);
        h.record(HIGHEST_US as i64 * 10);
        assert_eq!(h.len(), 2);
        assert!(h.equivalent(h.max(), HIGHEST_US));
    }

    #[test]
    fn base64_round_trip_is_exact() {
        let mut h = LatencyHistogram::new();
        for i in 0..5000 {
            h.record(i * 13 % 70_001);
        }
        let text = h.to_base64().unwrap();
        let back = LatencyHistogram::from_base64(&text).unwrap();
        assert_eq!(back, h);
        assert!(matches!(
            LatencyHistogram::from_base64("not base64!"),
            Err(HistogramError::Base64(_))
        ));
        assert!(matches!(
            LatencyHistogram::from_base64("AAAA"),
            Err(HistogramError::Decode(_))
        ));
    }
}
