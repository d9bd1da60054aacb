//! A load generator's place in a fleet as its result records it, the run
//! id that ties the generators of one run together, and the generators of
//! a merged result as the merge lists them.

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

/// One generator of a merged result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeneratorSummary {
    pub index: u32,
    /// The file its result was read from.
    pub source: String,
    pub clients: u32,
    pub threads: u32,
    pub committed: u64,
    pub tps: f64,
    /// Its measured window, µs since the Unix epoch.
    pub window_start_us: i64,
    pub window_end_us: i64,
    /// Its process's CPU seconds, from its diagnosis (absent without one).
    #[serde(default)]
    pub cpu_s: Option<f64>,
    /// The severity of its `client-saturated` finding, if it had one: the
    /// generator itself was the bottleneck.
    #[serde(default)]
    pub saturated: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_id_is_the_workload_and_the_start_time() {
        let one = run_id(None, "4|clients 10|select 1", Some(5));
        assert_eq!(one, run_id(None, "4|clients 10|select 1", Some(5)));
        assert_eq!(one.len(), 16);
        assert_ne!(one, run_id(None, "4|clients 10|select 1", Some(6)));
        assert_ne!(one, run_id(None, "4|clients 12|select 1", Some(5)));
        assert_eq!(run_id(Some("nightly-42"), "x", None), "nightly-42");
    }
}
