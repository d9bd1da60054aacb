//! The random seed and pgbench's arrangement of random states.
//!
//! pgbench seeds one base sequence from `--random-seed` (or the environment
//! variable `PGBENCH_RANDOM_SEED`, or the clock), then draws from it, in
//! this order: one seed per client for the expression functions; the value
//! of `:default_seed` (unless `-D default_seed=...` was given); three seeds
//! per thread, for choosing scripts, for throttling and for log sampling.
//! Reproducing that order is what makes `--random-seed=N` give pgbench's
//! numbers.

use std::fmt;
use std::io::Read;

use super::PrngState;

/// What `--random-seed` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RandomSeed {
    /// `time` (and the default): the current time in microseconds.
    Time,
    /// `rand`: from the operating system's strong random source.
    Rand,
    /// An unsigned integer.
    Value(u64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeedError {
    /// Neither `time`, `rand` nor an unsigned integer.
    Unrecognized(String),
    /// The strong random source could not be read.
    CouldNotGenerate,
}

impl SeedError {
    /// pgbench's hint line for the error, if it has one.
    pub fn detail(&self) -> Option<&'static str> {
        match self {
            SeedError::Unrecognized(_) => {
                Some("Expecting an unsigned integer, \"time\" or \"rand\".")
            }
            SeedError::CouldNotGenerate => None,
        }
    }
}

impl fmt::Display for SeedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SeedError::Unrecognized(s) => write!(f, "unrecognized random seed option \"{s}\""),
            SeedError::CouldNotGenerate => f.write_str("could not generate random seed"),
        }
    }
}

impl std::error::Error for SeedError {}

/// Parses a `--random-seed` value as pgbench does (`sscanf("%lu")` with
/// nothing after the number: leading blanks and a sign are accepted, a
/// minus sign wraps around as in C).
pub fn parse_seed(text: &str) -> Result<RandomSeed, SeedError> {
    match text {
        "time" => return Ok(RandomSeed::Time),
        "rand" => return Ok(RandomSeed::Rand),
        _ => {}
    }
    let bad = || SeedError::Unrecognized(text.to_owned());
    let rest = text.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (negative, digits) = match rest.as_bytes().first() {
        Some(b'-') => (true, &rest[1..]),
        Some(b'+') => (false, &rest[1..]),
        _ => (false, rest),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let value = digits.parse::<u64>().unwrap_or(u64::MAX);
    Ok(RandomSeed::Value(if negative {
        value.wrapping_neg()
    } else {
        value
    }))
}

impl RandomSeed {
    /// The 64-bit seed: the value itself, the clock, or strong random bytes.
    pub fn resolve(self) -> Result<u64, SeedError> {
        match self {
            RandomSeed::Value(v) => Ok(v),
            RandomSeed::Time => {
                let mut ts = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                // SAFETY: clock_gettime only writes the timespec we own.
                unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
                Ok((ts.tv_sec as u64)
                    .wrapping_mul(1_000_000)
                    .wrapping_add(ts.tv_nsec as u64 / 1000))
            }
            RandomSeed::Rand => {
                let mut bytes = [0u8; 8];
                std::fs::File::open("/dev/urandom")
                    .and_then(|mut f| f.read_exact(&mut bytes))
                    .map_err(|_| SeedError::CouldNotGenerate)?;
                Ok(u64::from_ne_bytes(bytes))
            }
        }
    }
}

/// The generators of one worker thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadStates {
    /// Weighted choice of the next script.
    pub choose: PrngState,
    /// Poisson delays under `--rate`.
    pub throttle: PrngState,
    /// `--sampling-rate` decisions.
    pub sample: PrngState,
}

/// Every generator of a run, created as pgbench creates them.
#[derive(Debug, Clone, PartialEq)]
pub struct RandomStates {
    /// One per client, used by `random*()` in expressions (`cs_func_rs`).
    pub clients: Vec<PrngState>,
    /// One per thread.
    pub threads: Vec<ThreadStates>,
    /// The value of `:default_seed`, or None when `-D default_seed=...`
    /// defined it.
    pub default_seed: Option<i64>,
    /// The value of `:random_seed`: the seed itself.
    pub random_seed: i64,
}

impl RandomStates {
    /// The states pgbench creates for `clients` clients and `threads`
    /// threads (pgbench never runs more threads than clients, so `threads`
    /// is lowered to `clients`). `default_seed_defined` tells whether the
    /// user defined `default_seed`, in which case none is drawn.
    pub fn new(seed: u64, clients: usize, threads: usize, default_seed_defined: bool) -> Self {
        let mut base = PrngState::seeded(seed);
        let clients: Vec<PrngState> = (0..clients)
            .map(|_| PrngState::seeded(base.next_u64()))
            .collect();
        let default_seed = (!default_seed_defined).then(|| base.next_u64() as i64);
        let threads = (0..threads.min(clients.len()))
            .map(|_| ThreadStates {
                choose: PrngState::seeded(base.next_u64()),
                throttle: PrngState::seeded(base.next_u64()),
                sample: PrngState::seeded(base.next_u64()),
            })
            .collect();
        RandomStates {
            clients,
            threads,
            default_seed,
            random_seed: seed as i64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_option_values() {
        let cases: &[(&str, Result<RandomSeed, ()>)] = &[
            ("time", Ok(RandomSeed::Time)),
            ("rand", Ok(RandomSeed::Rand)),
            ("42", Ok(RandomSeed::Value(42))),
            (" 7", Ok(RandomSeed::Value(7))),
            ("+7", Ok(RandomSeed::Value(7))),
            ("-1", Ok(RandomSeed::Value(u64::MAX))),
            ("18446744073709551615", Ok(RandomSeed::Value(u64::MAX))),
            ("7 ", Err(())),
            ("x", Err(())),
            ("", Err(())),
            ("Time", Err(())),
            ("0x10", Err(())),
        ];
        for (text, want) in cases {
            assert_eq!(parse_seed(text).map_err(|_| ()), *want, "{text:?}");
        }
    }

    #[test]
    fn states_are_drawn_in_pgbench_order() {
        let states = RandomStates::new(5, 3, 2, false);
        let mut base = PrngState::seeded(5);
        for client in &states.clients {
            assert_eq!(*client, PrngState::seeded(base.next_u64()));
        }
        assert_eq!(states.default_seed, Some(base.next_u64() as i64));
        assert_eq!(states.threads[0].choose, PrngState::seeded(base.next_u64()));
        assert_eq!(states.threads.len(), 2);
        assert_eq!(RandomStates::new(5, 1, 4, true).threads.len(), 1);
    }
}
