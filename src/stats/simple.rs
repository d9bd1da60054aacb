//! Exact running sums for pgbench's average and standard deviation.
//!
//! pgbench reports `latency average` and `latency stddev` from a count, a
//! sum and a sum of squares (`SimpleStats`). It keeps them in `double`s; we
//! keep integer microseconds in `u64`/`u128`, so nothing is lost however long
//! the run, merging per-thread values is exact and order-independent, and
//! the same numbers come out of a merge of several machines' results. The
//! floating-point arithmetic happens once, when a report is rendered.

use serde::{Deserialize, Serialize};

/// Count, minimum, maximum, sum and sum of squares of non-negative
/// microsecond values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimpleStats {
    /// How many values were added.
    pub count: u64,
    /// Smallest value (0 when empty, as pgbench prints it).
    pub min: u64,
    /// Largest value (0 when empty).
    pub max: u64,
    /// Sum of the values.
    pub sum: u64,
    /// Sum of the squared values (as a decimal string in JSON: it does not
    /// fit a double exactly).
    #[serde(with = "u128_string")]
    pub sum2: u128,
}

impl SimpleStats {
    /// `count` values that are all 0.
    pub fn zeros(count: u64) -> Self {
        SimpleStats {
            count,
            ..SimpleStats::default()
        }
    }

    /// Adds one value; negative values (a clock that went backwards) count as 0.
    #[inline]
    pub fn add(&mut self, value_us: i64) {
        let v = value_us.max(0) as u64;
        if self.count == 0 || v < self.min {
            self.min = v;
        }
        if self.count == 0 || v > self.max {
            self.max = v;
        }
        self.count += 1;
        self.sum = self.sum.wrapping_add(v);
        self.sum2 = self.sum2.wrapping_add(u128::from(v) * u128::from(v));
    }

    /// Adds all values of `other` into `self`.
    pub fn merge(&mut self, other: &SimpleStats) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 || other.min < self.min {
            self.min = other.min;
        }
        if self.count == 0 || other.max > self.max {
            self.max = other.max;
        }
        self.count += other.count;
        self.sum = self.sum.wrapping_add(other.sum);
        self.sum2 = self.sum2.wrapping_add(other.sum2);
    }

    /// The values added since `earlier` was copied from this accumulator
    /// (min and max are not recoverable and are left as in `self`).
    pub fn since(&self, earlier: &SimpleStats) -> SimpleStats {
        SimpleStats {
            count: self.count - earlier.count,
            min: self.min,
            max: self.max,
            sum: self.sum.wrapping_sub(earlier.sum),
            sum2: self.sum2.wrapping_sub(earlier.sum2),
        }
    }

    /// Mean in microseconds, computed as pgbench does (`sum / count`).
    pub fn mean_us(&self) -> f64 {
        self.sum as f64 / self.count as f64
    }

    /// Population standard deviation in microseconds, computed as pgbench
    /// does (`sqrt(sum2 / count - mean^2)`).
    pub fn stddev_us(&self) -> f64 {
        let mean = self.mean_us();
        (self.sum2 as f64 / self.count as f64 - mean * mean).sqrt()
    }
}

/// Serializes a `u128` as a decimal string (JSON numbers are doubles for
/// most readers).
pub(crate) mod u128_string {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &u128, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(v)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u128, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Mean and unbiased variance; `None` for fewer than two values.
pub fn mean_variance(xs: &[f64]) -> Option<(f64, f64)> {
    if xs.len() < 2 {
        return None;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let variance = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some((mean, variance))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_stddev_match_the_textbook_values() {
        let mut s = SimpleStats::default();
        for v in [2, 4, 4, 4, 5, 5, 7, 9] {
            s.add(v);
        }
        assert_eq!((s.count, s.min, s.max, s.sum, s.sum2), (8, 2, 9, 40, 232));
        assert_eq!(s.mean_us(), 5.0);
        assert_eq!(s.stddev_us(), 2.0);
    }

    #[test]
    fn merge_equals_adding_everything_to_one() {
        let values = [0i64, 17, 3, 99_999, 12, -4, 1_000_000];
        let mut one = SimpleStats::default();
        let mut a = SimpleStats::default();
        let mut b = SimpleStats::default();
        for (i, v) in values.iter().enumerate() {
            one.add(*v);
            if i % 2 == 0 {
                a.add(*v)
            } else {
                b.add(*v)
            }
        }
        let mut merged = SimpleStats::default();
        merged.merge(&b);
        merged.merge(&a);
        assert_eq!(merged, one);
    }

    #[test]
    fn sum_of_squares_stays_exact_past_two_to_the_53() {
        let mut s = SimpleStats::default();
        for _ in 0..1000 {
            s.add(3_000_000_001);
        }
        assert_eq!(s.sum2, 1000 * 3_000_000_001u128 * 3_000_000_001u128);
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<SimpleStats>(&json).unwrap(), s);
    }
}
