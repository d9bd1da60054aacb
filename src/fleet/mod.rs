//! Several load generators running one benchmark together.
//!
//! pgbolt does not orchestrate machines: an existing orchestrator (a
//! Kubernetes Indexed Job, `ssh`, GNU `parallel`) starts `N` copies of the
//! same command line, each told its index (`--generator=I/N`, or
//! `--generators=N` with the index in `JOB_COMPLETION_INDEX`). Each copy
//! computes its share from the command line alone, so the copies need not
//! talk to each other:
//!
//! - **clients and threads** are dealt to the generators the way pgbench
//!   deals clients to threads (generator `I` gets `ceil(left / (N - I))`
//!   of what is left), so the totals are exactly the command line's; each
//!   generator runs at least one thread, so the fleet runs at least `N`;
//! - **`-R`** is split in proportion to the threads (every thread of the
//!   fleet runs the schedule one thread of a single run of the whole
//!   command line would); `-t` is per client and stays as given;
//! - **random states**: the fleet draws the states of a single run of the
//!   whole command line (`clients_total` clients, `threads_total` threads,
//!   in pgbench's order from the seed) and each generator takes its
//!   clients' and threads' states from it, so with `--random-seed=N` the
//!   generators together draw exactly what one process would and never the
//!   same stream twice;
//! - **`client_id`** is global: generator `I`'s clients are numbered after
//!   those of generators `0..I`, so scripts that partition data by
//!   `:client_id` work unchanged.
//!
//! `--start-at` makes every generator connect its clients, run its
//! preflight, then wait until that wall-clock time before it starts; one
//! that is ready later than [`LATE_TOLERANCE_US`] after it refuses to run
//! rather than measure another window. The offline `--merge` adds the
//! results exactly ([`merge`]).

pub mod merge;

use serde::{Deserialize, Serialize};

/// How late a generator may be ready after `--start-at` and still run.
pub const LATE_TOLERANCE_US: i64 = 1_000_000;

/// Generator `index`'s part of a fleet of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    pub index: u32,
    pub count: u32,
    /// The command line's clients and threads (threads at least `count`).
    pub clients_total: u32,
    pub threads_total: u32,
    /// Global number of this generator's first client and first thread.
    pub client_offset: u32,
    pub thread_offset: u32,
    /// This generator's clients and threads.
    pub clients: u32,
    pub threads: u32,
}

/// The `k`-th of `parts` shares of `total` dealt as pgbench deals clients
/// to threads: its offset and size.
fn deal(total: u32, parts: u32, k: u32) -> (u32, u32) {
    let mut dealt = 0;
    for i in 0..parts {
        let n = (total - dealt + parts - i - 1) / (parts - i);
        if i == k {
            return (dealt, n);
        }
        dealt += n;
    }
    (dealt, 0)
}

impl Share {
    /// Generator `index` of `count` running `clients` clients on
    /// `threads` threads in all (`threads` <= `clients`, `count` <=
    /// `clients`, `index` < `count`).
    pub fn new(index: u32, count: u32, clients: u32, threads: u32) -> Share {
        let threads_total = threads.max(count);
        let (client_offset, own_clients) = deal(clients, count, index);
        let (thread_offset, own_threads) = deal(threads_total, count, index);
        Share {
            index,
            count,
            clients_total: clients,
            threads_total,
            client_offset,
            thread_offset,
            clients: own_clients,
            threads: own_threads.min(own_clients),
        }
    }

    /// This generator's part of the fleet's `-R`.
    pub fn rate(&self, rate: f64) -> f64 {
        rate * f64::from(self.threads) / f64::from(self.threads_total)
    }
}

/// What a generator's result records about its place in the fleet.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeneratorInfo {
    /// `I` of `--generator=I/N` (0 and 1 for a run on its own).
    pub index: u32,
    pub count: u32,
    /// The run the generator belongs to (see [`run_id`]).
    pub run_id: String,
    /// Global number of its first client.
    pub client_offset: u32,
    /// `--start-at`, µs since the Unix epoch.
    pub start_at_us: Option<i64>,
    /// The clock the times are read from.
    pub clock: String,
    /// The measured window, µs since the Unix epoch: from the start of the
    /// benchmark (after the connections, and the wait for `--start-at`)
    /// to its end.
    pub window_start_us: i64,
    pub window_end_us: i64,
}

/// The clock every wall-clock time of a result comes from.
pub const CLOCK: &str =
    "CLOCK_REALTIME (system wall clock; keep the generators' clocks in sync with NTP or PTP)";

/// The run id: `given` (`--run-id`), else a hash of what the generators
/// of one run share: `workload` (the fleet's size, the scripts' texts and
/// weights, the totals of clients, threads and rate, the run's length and
/// query mode, as the engine spells them) and `--start-at`. Connection
/// options, `-D` and output files may differ between generators and are
/// not part of it.
pub fn run_id(given: Option<&str>, workload: &str, start_at_us: Option<i64>) -> String {
    if let Some(id) = given {
        return id.to_owned();
    }
    use sha2::Digest;
    let mut hash = sha2::Sha256::new();
    hash.update(workload.as_bytes());
    if let Some(at) = start_at_us {
        hash.update(at.to_le_bytes());
    }
    hash.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Reads `--start-at`: RFC 3339 (`2026-11-27T14:00:00Z`, an offset such
/// as `+01:00`, fractions of a second) or Unix seconds (`1795788000`,
/// `1795788000.5`); µs since the Unix epoch.
pub fn parse_start_at(text: &str) -> Option<i64> {
    let t = text.trim();
    if let Ok(seconds) = t.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| (seconds * 1e6).round() as i64);
    }
    let (date, rest) = t.split_once(['T', 't', ' '])?;
    let mut d = date.splitn(3, '-');
    let (year, month, day): (i64, i64, i64) = (
        d.next()?.parse().ok()?,
        d.next()?.parse().ok()?,
        d.next()?.parse().ok()?,
    );
    let (clock, offset_s) = if let Some(c) = rest.strip_suffix(['Z', 'z']) {
        (c, 0)
    } else {
        let at = rest.rfind(['+', '-'])?;
        let (c, zone) = rest.split_at(at);
        let (h, m) = zone[1..].split_once(':')?;
        let minutes = h.parse::<i64>().ok()? * 60 + m.parse::<i64>().ok()?;
        (
            c,
            if zone.starts_with('-') {
                -minutes
            } else {
                minutes
            } * 60,
        )
    };
    let mut c = clock.splitn(3, ':');
    let (hour, minute): (i64, i64) = (c.next()?.parse().ok()?, c.next()?.parse().ok()?);
    let second: f64 = c.next()?.parse().ok()?;
    let valid = (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && (0..24).contains(&hour)
        && (0..60).contains(&minute)
        && (0.0..61.0).contains(&second);
    if !valid {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let whole = days * 86_400 + hour * 3600 + minute * 60 - offset_s;
    Some(whole * 1_000_000 + (second * 1e6).round() as i64)
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Now, µs since the Unix epoch.
pub fn wall_clock_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

#[cfg(test)]
mod tests;
