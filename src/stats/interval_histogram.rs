//! Latency histograms of one interval of the series.
//!
//! Percentiles over time need the distribution of every interval, not only
//! its sums. A full [`super::LatencyHistogram`] per interval (3 significant
//! digits) would be exact but large once serialized (a kilobyte or more
//! for a busy interval), and a result keeps up to
//! [`super::interval::SERIES_BUCKETS`] intervals, which the HTML report
//! embeds within its 400 KB budget. An interval's histogram keeps 1
//! significant digit instead: 16 buckets per doubling, so a percentile
//! read from it is at most 1/16 (6.25%) above the exact value, which on a
//! chart of percentiles over time is a pixel or two, and a busy interval
//! serializes to about 300 bytes. It is still HdrHistogram's V2 format
//! with deflate, base64, so any HdrHistogram library reads it, and
//! intervals of several threads, runs or machines add exactly.
//!
//! The hot path records into one open histogram per thread (a fixed array,
//! allocated before the run; recording never allocates); the series
//! serializes and clears it only when a transaction ends in a later
//! interval ([`super::IntervalSeries`]), so the cost is once per interval
//! and per thread, not per transaction.

use base64::Engine as _;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use super::histogram::{decode_v2, HistogramError, HIGHEST_US};

/// Significant decimal digits of an interval's histogram.
const SIGNIFICANT_DIGITS: u8 = 1;

/// A latency histogram of one interval, in µs, at 1/16 precision.
#[derive(Clone, Debug)]
pub struct IntervalHistogram(Histogram<u64>);

impl Default for IntervalHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for IntervalHistogram {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl IntervalHistogram {
    /// An empty histogram covering 1 µs to 24 h.
    pub fn new() -> Self {
        let mut h = Histogram::new_with_bounds(1, HIGHEST_US, SIGNIFICANT_DIGITS)
            .expect("constant histogram bounds are valid");
        h.auto(false);
        IntervalHistogram(h)
    }

    /// Records one latency; never allocates (negative values count as 0,
    /// values past 24 h as 24 h).
    #[inline]
    pub fn record(&mut self, latency_us: i64) {
        let value = (latency_us.max(0) as u64).min(HIGHEST_US);
        // In range by construction, so it cannot fail.
        let _ = self.0.record(value);
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Number of recorded values.
    pub fn len(&self) -> u64 {
        self.0.len()
    }

    /// Forgets every value (the memory stays).
    pub fn clear(&mut self) {
        self.0.reset();
    }

    /// Adds every count of `other`.
    pub fn add(&mut self, other: &IntervalHistogram) {
        // Same bounds on both sides, so it cannot fail.
        let _ = self.0.add(&other.0);
    }

    /// The values below which each of `quantiles` (0..=1) of the values
    /// fall, in µs (the highest value of the bucket, as HdrHistogram
    /// reports).
    pub fn quantiles<const N: usize>(&self, quantiles: [f64; N]) -> [u64; N] {
        quantiles.map(|q| self.0.value_at_quantile(q))
    }

    /// V2 + deflate + base64 text.
    pub fn encode(&self) -> String {
        let mut bytes = Vec::new();
        // Writing into a vector cannot fail, nor can a histogram of u64
        // counts overflow the format.
        let _ = V2DeflateSerializer::new().serialize(&self.0, &mut bytes);
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// Reads the text written by [`IntervalHistogram::encode`] (or any V2
    /// histogram, brought to this precision).
    pub fn decode(text: &str) -> Result<Self, HistogramError> {
        let decoded = decode_v2(text)?;
        let mut h = IntervalHistogram::new();
        for v in decoded.iter_recorded() {
            let value = v.value_iterated_to().min(HIGHEST_US);
            h.0.record_n(value, v.count_at_value())
                .map_err(|_| HistogramError::Encode(format!("value {value} out of range")))?;
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_precision() {
        let mut h = IntervalHistogram::new();
        for i in 1..=10_000i64 {
            h.record(i * 7);
        }
        let back = IntervalHistogram::decode(&h.encode()).expect("decode");
        assert_eq!(back, h);
        let [p50, p99] = back.quantiles([0.5, 0.99]);
        assert!((35_000..=35_000 + 35_000 / 16).contains(&p50), "{p50}");
        assert!((69_300..=69_300 + 69_300 / 16).contains(&p99), "{p99}");
        assert!(IntervalHistogram::decode("AAAA").is_err());
    }

    #[test]
    fn a_busy_interval_stays_small() {
        let mut h = IntervalHistogram::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..50_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // A peak near 1 ms with a long tail, as a busy server gives.
            let tail = 1u64 << (x % 1024).trailing_zeros().min(6);
            h.record((800 + x % 400) as i64 * tail as i64);
        }
        assert!(h.encode().len() < 400, "{}", h.encode().len());
    }
}
