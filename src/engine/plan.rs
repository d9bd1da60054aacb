//! Everything fixed before the first connection: the scripts, the variable
//! table, prepared-statement names, the split of clients over threads and
//! the run-time options in the units the engine uses (µs).

use std::time::Duration;

use crate::config::{Benchmark, RunLength, ScriptSpec};

use crate::expr::vars::VarNames;
use crate::script::QueryMode;
use crate::script::{self, CommandKind, Script};

use super::error::EngineError;

/// The shared, read-only description of a run.
#[derive(Debug)]
pub struct Plan {
    pub scripts: Vec<Script>,
    pub names: VarNames,
    /// Sum of the script weights (never zero).
    pub total_weight: i64,
    /// `P_<n>` for each SQL command under `-M prepared`, per script.
    pub prepared_names: Vec<Vec<Option<String>>>,
    /// Whether a builtin script is used (pgbench then reads the scale from
    /// `pgbench_branches`).
    pub builtin_used: bool,
    pub query_mode: QueryMode,
    pub clients: u32,
    pub threads: u32,
    /// `-t`: transactions per client (0 under `-T`).
    pub transactions: u64,
    /// `-T`.
    pub duration: Option<Duration>,
    /// `-R` as the mean delay between two transactions of one thread, µs.
    pub throttle_delay_us: f64,
    /// `-L`, µs.
    pub latency_limit_us: Option<i64>,
    /// `--max-tries`; 0 is unlimited.
    pub max_tries: u32,
    pub connect_per_transaction: bool,
    /// `--pool-size`: connections shared by all the clients.
    pub pool_size: Option<u32>,
    pub report_per_command: bool,
    pub verbose_errors: bool,
    pub continue_on_error: bool,
    /// `--reconnect`: how long a client may go without a connection, µs.
    pub reconnect_wait_us: Option<i64>,
    pub exit_on_abort: bool,
    pub debug: bool,
    /// Slots of the automatic variables.
    pub slots: AutoSlots,
}

/// Slots of the variables pgbench defines for every client.
#[derive(Debug, Clone, Copy)]
pub struct AutoSlots {
    pub scale: usize,
    pub client_id: usize,
    pub default_seed: usize,
    pub random_seed: usize,
}

impl Plan {
    /// Loads the scripts of `bench` and fixes the run's shape;
    /// `before_script` is told each script's index before it is loaded,
    /// then the number of scripts once all are.
    pub fn new(
        bench: &Benchmark,
        debug: bool,
        before_script: &mut dyn FnMut(usize),
    ) -> Result<Plan, EngineError> {
        let mut names = VarNames::new();
        for def in &bench.variables {
            names.slot(&def.name);
        }
        let mut scripts = Vec::with_capacity(bench.scripts.len());
        let mut builtin_used = false;
        for (index, spec) in bench.scripts.iter().enumerate() {
            before_script(index);
            let loaded = match spec {
                ScriptSpec::Builtin { name, weight } => {
                    builtin_used = true;
                    let builtin = script::find_builtin(name)?;
                    script::load_builtin(builtin, *weight, &mut names)?
                }
                ScriptSpec::File { path, weight } => script::load_file(path, *weight, &mut names)?,
            };
            scripts.push(loaded);
        }
        before_script(scripts.len());
        // pgbench turns `:name` into parameters once every script is read,
        // before it adds up the weights.
        for script in &scripts {
            script.check_query_mode(bench.query_mode)?;
        }
        let total_weight = scripts.iter().map(|s| i64::from(s.weight)).sum();
        if total_weight == 0 {
            return Err(EngineError::ZeroWeight);
        }
        let slots = AutoSlots {
            scale: names.slot("scale"),
            client_id: names.slot("client_id"),
            default_seed: names.slot("default_seed"),
            random_seed: names.slot("random_seed"),
        };
        let prepared_names = prepared_names(&scripts, bench.query_mode);
        let (transactions, duration) = match bench.length {
            RunLength::Transactions(n) => (u64::from(n), None),
            RunLength::Duration(s) => (0, Some(Duration::from_secs(u64::from(s)))),
        };
        let threads = bench.threads.min(bench.clients).max(1);
        let throttle_delay_us = bench
            .rate
            .map_or(0.0, |rate| 1_000_000.0 / rate * f64::from(threads));
        Ok(Plan {
            scripts,
            names,
            total_weight,
            prepared_names,
            builtin_used,
            query_mode: bench.query_mode,
            clients: bench.clients,
            threads,
            transactions,
            duration,
            throttle_delay_us,
            latency_limit_us: bench
                .latency_limit
                .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX)),
            max_tries: bench.max_tries.unwrap_or(0),
            connect_per_transaction: bench.connect_per_transaction,
            pool_size: bench.pool_size,
            report_per_command: bench.report_per_command,
            verbose_errors: bench.verbose_errors,
            continue_on_error: bench.continue_on_error,
            reconnect_wait_us: bench
                .reconnect
                .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX)),
            exit_on_abort: bench.exit_on_abort,
            debug,
            slots,
        })
    }

    /// Client ids of each thread, as pgbench deals them: thread `i` of `n`
    /// takes `(remaining + n - i - 1) / (n - i)` of the remaining clients.
    pub fn client_ranges(&self) -> Vec<std::ops::Range<u32>> {
        split_clients(self.clients, self.threads)
    }

    /// Each thread's share of `--pool-size`, dealt as the clients are.
    pub fn pool_shares(&self) -> Option<Vec<u32>> {
        let size = self.pool_size?;
        Some(
            split_clients(size, self.threads)
                .iter()
                .map(|r| r.len() as u32)
                .collect(),
        )
    }

    /// The connections open at once during the run: one per client, or
    /// the pool's.
    pub fn connections(&self) -> u32 {
        self.pool_size.unwrap_or(self.clients)
    }

    /// Commands per script, for the statistics layout.
    pub fn commands_per_script(&self) -> Vec<usize> {
        self.scripts.iter().map(|s| s.commands.len()).collect()
    }
}

/// pgbench's deal of `clients` over `threads`.
pub fn split_clients(clients: u32, threads: u32) -> Vec<std::ops::Range<u32>> {
    let mut ranges = Vec::with_capacity(threads as usize);
    let mut dealt = 0;
    for i in 0..threads {
        let n = (clients - dealt + threads - i - 1) / (threads - i);
        ranges.push(dealt..dealt + n);
        dealt += n;
    }
    ranges
}

/// pgbench numbers prepared statements `P_0`, `P_1`, ... over the SQL
/// commands of all scripts in order.
fn prepared_names(scripts: &[Script], mode: QueryMode) -> Vec<Vec<Option<String>>> {
    let mut next = 0;
    scripts
        .iter()
        .map(|s| {
            s.commands
                .iter()
                .map(|c| match (&c.kind, mode) {
                    (CommandKind::Sql(_), QueryMode::Prepared) => {
                        let name = format!("P_{next}");
                        next += 1;
                        Some(name)
                    }
                    _ => None,
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::split_clients;

    #[test]
    fn clients_are_dealt_like_pgbench() {
        let cases: &[(u32, u32, &[u32])] = &[
            (1, 1, &[1]),
            (10, 3, &[4, 3, 3]),
            (7, 2, &[4, 3]),
            (8, 8, &[1; 8]),
            (5, 4, &[2, 1, 1, 1]),
        ];
        for (clients, threads, want) in cases {
            let got: Vec<u32> = split_clients(*clients, *threads)
                .iter()
                .map(|r| r.end - r.start)
                .collect();
            assert_eq!(got, *want, "-c {clients} -j {threads}");
        }
    }
}
