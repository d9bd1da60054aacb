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

#[cfg(test)]
mod tests;
