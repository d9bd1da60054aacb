//! Fixed-size latency histograms.
//!
//! Percentiles need the distribution, and keeping every latency in a vector
//! grows without bound and costs a sort at the end. An HDR histogram keeps
//! counts in buckets whose width grows with the value, so any value between
//! 1 µs and 24 hours is stored with 3 significant digits (a relative error of
//! at most 0.1%) in a fixed ~200 KiB allocated when the recorder is created.
//! Auto-resize is off, so recording never allocates; a value beyond the top
//! is clamped to it (and counted: nothing is silently dropped). Two
//! histograms with the same bounds add exactly: merging per-thread
//! histograms is the same as recording everything into one.
//!
//! Histograms are carried in results as HdrHistogram's V2 format compressed
//! with deflate and base64-encoded, the interchange format every
//! HdrHistogram implementation reads, so results from several processes or
//! machines can be merged exactly later.

use std::fmt;

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// Lowest distinguishable value: 1 µs.
const LOWEST_US: u64 = 1;
/// Highest trackable value: 24 hours in microseconds.
pub const HIGHEST_US: u64 = 86_400_000_000;
/// Significant decimal digits kept for every value.
const SIGNIFICANT_DIGITS: u8 = 3;

/// A microsecond histogram with pgbolt's fixed bounds.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    inner: Histogram<u64>,
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
    /// Allocates an empty histogram covering 1 µs to 24 h.
    pub fn new() -> Self {
        let mut inner = Histogram::new_with_bounds(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)
            .expect("constant histogram bounds are valid");
        inner.auto(false);
        LatencyHistogram { inner }
    }

    /// A histogram of `count` values that are all 0.
    pub fn zeros(count: u64) -> Self {
        let mut h = LatencyHistogram::new();
        h.inner.saturating_record_n(0, count);
        h
    }

    /// Records one value in microseconds: never allocates, never fails
    /// (negative values count as 0, values past 24 h as 24 h).
    #[inline]
    pub fn record(&mut self, value_us: i64) {
        self.inner.saturating_record(value_us.max(0) as u64);
    }

    /// Number of recorded values.
    pub fn len(&self) -> u64 {
        self.inner.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// The value below which `quantile` (0..=1) of the values fall, in µs
    /// (the highest value equivalent to the bucket, as HdrHistogram reports).
    pub fn value_at_quantile(&self, quantile: f64) -> u64 {
        self.inner.value_at_quantile(quantile)
    }

    /// Largest recorded value (its bucket's highest equivalent value).
    pub fn max(&self) -> u64 {
        self.inner.max()
    }

    /// Whether two values fall in the same bucket (are equal at this precision).
    pub fn equivalent(&self, a: u64, b: u64) -> bool {
        self.inner.equivalent(a, b)
    }

    /// Adds every count of `other` into `self`.
    pub fn merge(&mut self, other: &LatencyHistogram) -> Result<(), HistogramError> {
        self.inner.add(&other.inner).map_err(HistogramError::Add)
    }

    /// V2 + deflate + base64 text.
    pub fn to_base64(&self) -> Result<String, HistogramError> {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&self.inner, &mut bytes)
            .map_err(|e| HistogramError::Encode(format!("{e:?}")))?;
        Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    /// Reads the text written by [`LatencyHistogram::to_base64`] (or by any
    /// HdrHistogram implementation writing V2 with deflate).
    pub fn from_base64(text: &str) -> Result<Self, HistogramError> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(HistogramError::Base64)?;
        let decoded: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(HistogramError::Decode)?;
        let mut h = LatencyHistogram::new();
        h.inner.add(&decoded).map_err(HistogramError::Add)?;
        Ok(h)
    }
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
            merged.merge(t).unwrap();
        }
        assert_eq!(merged.inner, one.inner);
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
        assert_eq!(back.inner, h.inner);
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
