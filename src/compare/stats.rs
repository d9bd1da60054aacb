//! The statistics of a comparison, as pure functions over numbers and
//! histogram buckets.
//!
//! - [`welch`]: the difference of two means with its confidence interval,
//!   for samples of unequal variance (Welch's t, Welch–Satterthwaite
//!   degrees of freedom).
//! - [`batch_means`]: per-interval throughput is autocorrelated (a slow
//!   second is followed by another), so the intervals are first grouped
//!   into a few consecutive batches whose means are close to independent;
//!   Welch's interval is then taken over the batch means.
//! - [`bootstrap_quantile_ratio`]: the interval of a ratio of two
//!   percentiles, by the percentile bootstrap over the stored histograms.
//!   Resampling `n` values from a histogram and taking the value of rank
//!   `r` is the same as reading the histogram at a cumulative fraction
//!   drawn from Beta(`r`, `n` − `r` + 1) (the `r`-th smallest of `n`
//!   uniforms), so a replicate costs two Beta draws and two binary
//!   searches instead of `n` draws, and is exactly the bootstrap.
//! - [`batch_quantile_ratio`]: the same ratio from batches of intervals,
//!   for the variation over time that a bootstrap of independent
//!   transactions cannot see: Welch's interval over the logarithms of the
//!   batches' percentiles.
//! - [`mann_whitney`]: the rank test on two whole distributions, computed
//!   from the buckets (each bucket is a group of ties), with the normal
//!   approximation and the tie correction, and its effect size, the
//!   probability that a candidate value exceeds a baseline value.

use crate::stats::simple::mean_variance;
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

use crate::random::PrngState;

/// A value with the bounds of its confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Estimate {
    pub value: f64,
    pub low: f64,
    pub high: f64,
}

/// Welch's interval for `mean(b) - mean(a)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Welch {
    pub difference: Estimate,
    /// Welch–Satterthwaite degrees of freedom (infinite when both samples
    /// have no spread).
    pub degrees_of_freedom: f64,
    /// Two-sided p-value of "no difference".
    pub p_value: f64,
}

/// Welch's t interval at `confidence` (0.95 for 95%) for the difference of
/// the means of `b` and `a`; `None` when a side has fewer than two values.
pub fn welch(a: &[f64], b: &[f64], confidence: f64) -> Option<Welch> {
    let (mean_a, var_a) = mean_variance(a)?;
    let (mean_b, var_b) = mean_variance(b)?;
    let (qa, qb) = (var_a / a.len() as f64, var_b / b.len() as f64);
    let se = (qa + qb).sqrt();
    let difference = mean_b - mean_a;
    if se == 0.0 {
        let p_value = if difference == 0.0 { 1.0 } else { 0.0 };
        return Some(Welch {
            difference: Estimate {
                value: difference,
                low: difference,
                high: difference,
            },
            degrees_of_freedom: f64::INFINITY,
            p_value,
        });
    }
    let df = (qa + qb).powi(2)
        / (qa.powi(2) / (a.len() as f64 - 1.0) + qb.powi(2) / (b.len() as f64 - 1.0));
    let t = StudentsT::new(0.0, 1.0, df).ok()?;
    let half = t.inverse_cdf(0.5 + confidence / 2.0) * se;
    let p_value = 2.0 * t.sf((difference / se).abs());
    Some(Welch {
        difference: Estimate {
            value: difference,
            low: difference - half,
            high: difference + half,
        },
        degrees_of_freedom: df,
        p_value,
    })
}

/// The means of `batches` consecutive groups of equal size; the values
/// that do not fill a last whole group are left out. Fewer values than
/// batches give one batch per value.
pub fn batch_means(values: &[f64], batches: usize) -> Vec<f64> {
    let batches = batches.min(values.len()).max(1);
    let size = values.len() / batches;
    if size == 0 {
        return Vec::new();
    }
    values
        .chunks_exact(size)
        .take(batches)
        .map(|c| c.iter().sum::<f64>() / size as f64)
        .collect()
}

/// A histogram as its non-empty buckets: each bucket's value (the highest
/// value it holds, as HdrHistogram reports percentiles) and count, in
/// increasing order of value.
#[derive(Clone, Debug, PartialEq)]
pub struct Buckets {
    values: Vec<u64>,
    /// Running totals of the counts.
    cumulative: Vec<u64>,
}

impl Buckets {
    /// From `(value, count)` pairs in increasing order of value; empty
    /// buckets are dropped.
    pub fn new(pairs: impl IntoIterator<Item = (u64, u64)>) -> Self {
        let mut values = Vec::new();
        let mut cumulative = Vec::new();
        let mut total = 0u64;
        for (value, count) in pairs {
            if count > 0 {
                total += count;
                values.push(value);
                cumulative.push(total);
            }
        }
        Buckets { values, cumulative }
    }

    /// Number of values.
    pub fn len(&self) -> u64 {
        self.cumulative.last().copied().unwrap_or(0)
    }

    /// Whether the histogram is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value of rank `rank` (1-based) in increasing order.
    fn value_of_rank(&self, rank: u64) -> u64 {
        let i = self.cumulative.partition_point(|&c| c < rank);
        self.values[i.min(self.values.len() - 1)]
    }

    /// The rank HdrHistogram reads for `quantile`: the smallest rank whose
    /// cumulative share reaches it (at least 1).
    fn rank_of(&self, quantile: f64) -> u64 {
        ((quantile * self.len() as f64).ceil() as u64).clamp(1, self.len())
    }

    /// The value at `quantile` (0..=1), as HdrHistogram reports it.
    pub fn quantile(&self, quantile: f64) -> Option<u64> {
        (!self.is_empty()).then(|| self.value_of_rank(self.rank_of(quantile)))
    }

    /// The `quantile` of a bootstrap resample: the histogram read at the
    /// cumulative fraction of the rank's order statistic of uniforms.
    fn resampled_quantile(&self, quantile: f64, rng: &mut PrngState) -> u64 {
        let n = self.len();
        let rank = self.rank_of(quantile);
        let u = beta(rank as f64, (n - rank + 1) as f64, rng);
        let resampled_rank = ((u * n as f64).ceil() as u64).clamp(1, n);
        self.value_of_rank(resampled_rank)
    }
}

/// The ratio `quantile(b) / quantile(a)` with its percentile-bootstrap
/// interval from `replicates` resamples of both histograms; `None` when
/// either is empty or the baseline's quantile is 0.
pub fn bootstrap_quantile_ratio(
    a: &Buckets,
    b: &Buckets,
    quantile: f64,
    replicates: usize,
    confidence: f64,
    seed: u64,
) -> Option<Estimate> {
    let qa = a.quantile(quantile)?;
    let qb = b.quantile(quantile)?;
    if qa == 0 {
        return None;
    }
    let mut rng = PrngState::seeded(seed);
    let mut ratios: Vec<f64> = (0..replicates.max(1))
        .map(|_| {
            let ra = a.resampled_quantile(quantile, &mut rng).max(1);
            let rb = b.resampled_quantile(quantile, &mut rng);
            rb as f64 / ra as f64
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    let tail = (1.0 - confidence) / 2.0;
    let at =
        |p: f64| ratios[((p * (ratios.len() - 1) as f64).round() as usize).min(ratios.len() - 1)];
    Some(Estimate {
        value: qb as f64 / qa as f64,
        low: at(tail),
        high: at(1.0 - tail),
    })
}

/// The interval of a ratio of percentiles from batches of each run:
/// Welch's interval over the logarithms of the batches' percentiles (`a`
/// and `b`, in any unit), centred on `ratio` (the ratio of the whole runs'
/// percentiles, read from their finer histograms). `None` when a side has
/// fewer than two batches or a batch's percentile is not positive.
pub fn batch_quantile_ratio(a: &[f64], b: &[f64], ratio: f64, confidence: f64) -> Option<Estimate> {
    let logs = |values: &[f64]| -> Option<Vec<f64>> {
        values.iter().map(|&v| (v > 0.0).then(|| v.ln())).collect()
    };
    let w = welch(&logs(a)?, &logs(b)?, confidence)?;
    let half = (w.difference.high - w.difference.low) / 2.0;
    Some(Estimate {
        value: ratio,
        low: ratio * (-half).exp(),
        high: ratio * half.exp(),
    })
}

/// A Gamma(`shape`, 1) draw, `shape` >= 1 (Marsaglia and Tsang's method).
fn gamma(shape: f64, rng: &mut PrngState) -> f64 {
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = rng.next_normal();
        let v = (1.0 + c * x).powi(3);
        if v <= 0.0 {
            continue;
        }
        let u = 1.0 - rng.next_f64();
        if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

/// A Beta(`a`, `b`) draw, `a`, `b` >= 1.
fn beta(a: f64, b: f64, rng: &mut PrngState) -> f64 {
    let x = gamma(a, rng);
    let y = gamma(b, rng);
    x / (x + y)
}

/// The Mann–Whitney U test of two distributions given as buckets.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RankTest {
    /// U of the candidate (`b`): pairs where its value is larger, ties
    /// counted half.
    pub u: f64,
    /// `u / (n_a * n_b)`: the probability that a candidate value exceeds a
    /// baseline value (ties half), 0.5 for no difference.
    pub superiority: f64,
    /// The standardized statistic (normal approximation, tie-corrected,
    /// no continuity correction).
    pub z: f64,
    /// Two-sided p-value.
    pub p_value: f64,
}

/// The rank test of `b` against `a`; `None` when either is empty.
pub fn mann_whitney(a: &Buckets, b: &Buckets) -> Option<RankTest> {
    let (na, nb) = (a.len() as f64, b.len() as f64);
    if na == 0.0 || nb == 0.0 {
        return None;
    }
    let counts = |buckets: &Buckets, i: usize| {
        buckets.cumulative[i] - if i == 0 { 0 } else { buckets.cumulative[i - 1] }
    };
    let (mut i, mut j) = (0, 0);
    let mut a_below = 0.0;
    let mut u = 0.0;
    let mut ties = 0.0;
    while i < a.values.len() || j < b.values.len() {
        let va = a.values.get(i).copied().unwrap_or(u64::MAX);
        let vb = b.values.get(j).copied().unwrap_or(u64::MAX);
        let value = va.min(vb);
        let ca = if va == value {
            counts(a, i) as f64
        } else {
            0.0
        };
        let cb = if vb == value {
            counts(b, j) as f64
        } else {
            0.0
        };
        u += cb * (a_below + ca / 2.0);
        let t = ca + cb;
        ties += t * t * t - t;
        a_below += ca;
        i += usize::from(va == value);
        j += usize::from(vb == value);
    }
    let n = na + nb;
    let variance = na * nb / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    let mean = na * nb / 2.0;
    let z = if variance > 0.0 {
        (u - mean) / variance.sqrt()
    } else {
        0.0
    };
    let normal = Normal::standard();
    Some(RankTest {
        u,
        superiority: u / (na * nb),
        z,
        p_value: (2.0 * normal.sf(z.abs())).min(1.0),
    })
}

#[cfg(test)]
mod tests;
