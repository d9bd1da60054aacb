//! pgbench-compatible random numbers.
//!
//! [`PrngState`] is PostgreSQL's `pg_prng`: xoroshiro128** seeded through
//! splitmix64, bit for bit, so a given `--random-seed` yields the values
//! pgbench yields. The distributions (`random`, `random_exponential`,
//! `random_gaussian`, `random_zipfian`), `permute` and the hash functions
//! follow pgbench's arithmetic step by step, including the order of the
//! floating-point operations, because the results are truncated to integers
//! and one ulp can change a value. The transcendental functions (`ln`,
//! `exp`, `sin`, `pow`) come from the platform's libm, as pgbench's do.
//!
//! [`RandomStates`] reproduces the order in which pgbench draws the seeds of
//! its per-client and per-thread generators from the base sequence.

mod seeds;

pub use seeds::{parse_seed, RandomSeed, RandomStates, SeedError, ThreadStates};

/// One `pg_prng_state`: xoroshiro128**.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrngState {
    s0: u64,
    s1: u64,
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut val = *state;
    val = (val ^ (val >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    val = (val ^ (val >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    val ^ (val >> 31)
}

impl PrngState {
    /// `pg_prng_seed`.
    pub fn seeded(seed: u64) -> Self {
        let mut seed = seed;
        let s0 = splitmix64(&mut seed);
        let s1 = splitmix64(&mut seed);
        if s0 == 0 && s1 == 0 {
            return PrngState {
                s0: 0x5851_F42D_4C95_7F2D,
                s1: 0x1405_7B7E_F767_814F,
            };
        }
        PrngState { s0, s1 }
    }

    /// `pg_prng_uint64`: the next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let s0 = self.s0;
        let sx = self.s1 ^ s0;
        let val = s0.wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        self.s0 = s0.rotate_left(24) ^ sx ^ (sx << 16);
        self.s1 = sx.rotate_left(37);
        val
    }

    /// `pg_prng_uint64_range`: uniform in `[min, max]`, `min` if empty.
    pub fn u64_range(&mut self, min: u64, max: u64) -> u64 {
        if max <= min {
            return min;
        }
        let range = max - min;
        let shift = range.leading_zeros();
        loop {
            let val = self.next_u64() >> shift;
            if val <= range {
                return min + val;
            }
        }
    }

    /// `pg_prng_double`: uniform in `[0, 1)` with 52 random bits.
    pub fn next_f64(&mut self) -> f64 {
        let v = self.next_u64() >> 12;
        v as f64 * f64::powi(2.0, -52)
    }

    /// `pg_prng_double_normal`: standard normal, by the Box-Muller transform.
    pub fn next_normal(&mut self) -> f64 {
        let u1 = 1.0 - self.next_f64();
        let u2 = 1.0 - self.next_f64();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).sin()
    }

    /// pgbench's `getrand`: uniform in `[min, max]`; the caller guarantees
    /// `max - min` does not overflow.
    pub fn uniform(&mut self, min: i64, max: i64) -> i64 {
        min.wrapping_add(self.u64_range(0, max.wrapping_sub(min) as u64) as i64)
    }

    /// pgbench's `getExponentialRand`; `parameter` > 0.
    pub fn exponential(&mut self, min: i64, max: i64, parameter: f64) -> i64 {
        let cut = (-parameter).exp();
        let uniform = 1.0 - self.next_f64();
        let rand = -(cut + (1.0 - cut) * uniform).ln() / parameter;
        min.wrapping_add(c_trunc(span(min, max) as f64 * rand))
    }

    /// pgbench's `getGaussianRand`; `parameter` >= 2.
    pub fn gaussian(&mut self, min: i64, max: i64, parameter: f64) -> i64 {
        // pgbench's loop condition, so that a NaN parameter ends the loop.
        let stdev = loop {
            let s = self.next_normal();
            if !(s < -parameter || s >= parameter) {
                break s;
            }
        };
        let rand = (stdev + parameter) / (parameter * 2.0);
        min.wrapping_add(c_trunc(span(min, max) as f64 * rand))
    }

    /// pgbench's `getZipfianRand`; `s` in [1.001, 1000] (with NaN, the
    /// rejection loop would never end).
    pub fn zipfian(&mut self, min: i64, max: i64, s: f64) -> i64 {
        let n = span(min, max);
        min.wrapping_sub(1)
            .wrapping_add(self.iterative_zipfian(n, s))
    }

    /// Devroye's rejection method, as pgbench's `computeIterativeZipfian`.
    fn iterative_zipfian(&mut self, n: i64, s: f64) -> i64 {
        if n <= 1 {
            return 1;
        }
        let b = 2.0f64.powf(s - 1.0);
        loop {
            let u = self.next_f64();
            let v = self.next_f64();
            let x = u.powf(-1.0 / (s - 1.0)).floor();
            let t = (1.0 + 1.0 / x).powf(s - 1.0);
            if v * x * (t - 1.0) / (b - 1.0) <= t / b && x <= n as f64 {
                return x as i64;
            }
        }
    }
}

/// C's conversion of a double to int64 as x86-64 performs it: truncation,
/// and `i64::MIN` for NaN and out-of-range values.
fn c_trunc(x: f64) -> i64 {
    if x.is_nan() || !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

/// `max - min + 1`, the size of the range (checked for overflow by the
/// expression evaluator before any distribution is drawn).
fn span(min: i64, max: i64) -> i64 {
    max.wrapping_sub(min).wrapping_add(1)
}

const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const MM2_MUL: u64 = 0xc6a4_a793_5bd1_e995;
const MM2_MUL_TIMES_8: u64 = 0x3525_3c9a_de8f_4ca8;
const MM2_ROT: u32 = 47;

/// pgbench's `hash_fnv1a(val, seed)`.
pub fn hash_fnv1a(val: i64, seed: i64) -> i64 {
    let mut result = FNV_OFFSET_BASIS ^ seed as u64;
    let mut val = val;
    for _ in 0..8 {
        let octet = (val & 0xff) as u64;
        val >>= 8;
        result = (result ^ octet).wrapping_mul(FNV_PRIME);
    }
    result as i64
}

/// pgbench's `hash_murmur2(val, seed)` (also plain `hash`).
pub fn hash_murmur2(val: i64, seed: i64) -> i64 {
    let mut result = seed as u64 ^ MM2_MUL_TIMES_8;
    let mut k = val as u64;
    k = k.wrapping_mul(MM2_MUL);
    k ^= k >> MM2_ROT;
    k = k.wrapping_mul(MM2_MUL);
    result ^= k;
    result = result.wrapping_mul(MM2_MUL);
    result ^= result >> MM2_ROT;
    result = result.wrapping_mul(MM2_MUL);
    result ^= result >> MM2_ROT;
    result as i64
}

/// pgbench's `permute(val, size, seed)`: a pseudorandom permutation of
/// `[0, size)` chosen by `seed`, applied to `val mod size`. Sizes below 2
/// give 0 (the caller rejects sizes below 1).
pub fn permute(val: i64, size: i64, seed: i64) -> i64 {
    if size < 2 {
        return 0;
    }
    let mut state = PrngState::seeded(seed as u64);
    let size = size as u64;
    let mut v = val as u64 % size;
    let masklen = 63 - size.leading_zeros();
    let mask = (1u64 << masklen) - 1;
    // Rotating left by one within `masklen` bits; `masklen` >= 1 here.
    let rotate = |x: u64| ((x << 1) & mask) | (x >> (masklen - 1));
    for _ in 0..6 {
        let m = (state.next_u64() & mask) | 1;
        let r = state.next_u64() & mask;
        if v <= mask {
            v = (v.wrapping_mul(m) ^ r) & mask;
            v = rotate(v);
        }
        let m = (state.next_u64() & mask) | 1;
        let r = state.next_u64() & mask;
        let mut t = size - 1 - v;
        if t <= mask {
            t = (t.wrapping_mul(m) ^ r) & mask;
            t = rotate(t);
            v = size - 1 - t;
        }
        let r = state.u64_range(0, size - 1);
        v = (v + r) % size;
    }
    v as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_hash_vectors() {
        assert_eq!(hash_murmur2(10, 5432), -5817877081768721676);
        assert_eq!(hash_fnv1a(10, 5432), -7793829335365542153);
    }

    #[test]
    fn permute_is_a_bijection() {
        for size in 1..40i64 {
            for seed in [0i64, 1, -7, 5432] {
                let mut seen: Vec<i64> = (0..size).map(|v| permute(v, size, seed)).collect();
                seen.sort_unstable();
                assert_eq!(
                    seen,
                    (0..size).collect::<Vec<_>>(),
                    "size {size} seed {seed}"
                );
            }
        }
    }

    #[test]
    fn uniform_stays_in_range() {
        let mut rng = PrngState::seeded(42);
        for _ in 0..1000 {
            let v = rng.uniform(-3, 3);
            assert!((-3..=3).contains(&v));
        }
        assert_eq!(rng.uniform(5, 5), 5);
    }
}
