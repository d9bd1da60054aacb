//! The validated settings: what the user asked for, in the words of the
//! pgbench documentation, with every value already range-checked.
//!
//! This is the plain data every mode runs from, and nothing else: the
//! command line ([`crate::cli`]) builds it with no side effects, and the
//! modes above read it. It sits low in the layering so that the engine, a
//! study, the targets and the fleet take their settings from here without
//! knowing the command line exists. It may use the script, expression,
//! init, random and tempdb types it names and the program's name; nothing
//! that runs, renders or writes.
//!
//! Connection options stay raw strings: they are resolved later
//! ([`connection::resolve`]), together with the `PG*` environment,
//! service files and `.pgpass`, by `pgwire::conninfo`. Scripts stay
//! specifications (name or path plus weight): reading and parsing them is
//! the job of [`crate::script`]. The settings of a study
//! ([`study`]), of a target ([`target`]) and of a fleet's generator
//! ([`fleet`]) are in their own files.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::init::{InitStep, PartitionMethod};
use crate::random::RandomSeed;
use crate::script::QueryMode;

pub mod connection;
pub mod fleet;
pub mod metrics;
pub mod study;
pub mod target;

/// Everything pgbolt was asked to do.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// What to do.
    pub mode: Mode,
    /// Where to connect; unset fields fall back to libpq's rules.
    pub connection: Connection,
    /// `--debug`: print debugging output.
    pub debug: bool,
    /// `--temp-instance`: run against a throwaway PostgreSQL instance.
    pub temp_instance: Option<TempInstance>,
    /// The random seeds met while reading the command line, in order
    /// (`PGBENCH_RANDOM_SEED` first, then each `--random-seed`): pgbench
    /// prints `setting random seed to N` for each the moment it meets it.
    pub seeds: Vec<SeedNote>,
    /// `--io`: the I/O driver of the worker threads.
    pub io: IoMethod,
    /// `--busy-poll`: whether a thread spins before it sleeps.
    pub busy_poll: BusyPoll,
    /// `false` under `--no-preflight`: skip the checks made before a run.
    pub preflight: bool,
}

/// The mode pgbolt runs in. It is built once per process, so the size of
/// its largest variant (a benchmark's settings) costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// Run a benchmark (the default).
    Run(Benchmark),
    /// `-i`: create and fill the pgbench tables.
    Init(Init),
    /// `-?` / `--help` as the first argument.
    Help,
    /// `-V` / `--version` as the first argument.
    Version,
    /// `--show-script=NAME`: print a builtin script and exit. The name is not
    /// resolved yet (builtin names may be abbreviated).
    ShowScript(String),
    /// `-b list`: list the builtin scripts and exit.
    ListBuiltins,
    /// `--render=RESULT --html=FILE`: render a saved result as HTML.
    Render(Render),
    /// `--compare BASELINE CANDIDATE`: compare two result files (no
    /// connection is made).
    Compare(Compare),
    /// `--merge RESULT...`: merge the results of a fleet's generators (no
    /// connection is made).
    Merge(Merge),
}

/// Settings of `--merge`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merge {
    /// The result files, in the order given.
    pub results: Vec<PathBuf>,
    /// `--json=FILE` (`-`: standard output).
    pub json: Option<PathBuf>,
    /// `--html=FILE`.
    pub html: Option<PathBuf>,
    /// `--allow-partial`: merge even when generators are missing.
    pub allow_partial: bool,
    /// `--max-input-size`: the largest result file read, in bytes.
    pub max_input_size: u64,
}

/// The largest result file read without `--max-input-size`: 1 GiB.
pub const DEFAULT_MAX_INPUT_SIZE: u64 = 1 << 30;

/// `--render`: a saved result to render, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Render {
    /// The JSON result (or an HTML report, whose embedded result is read).
    pub result: PathBuf,
    /// The HTML report to write.
    pub html: PathBuf,
    /// `--max-input-size`: the largest result file read, in bytes.
    pub max_input_size: u64,
}

/// Settings of `--compare`.
#[derive(Debug, Clone, PartialEq)]
pub struct Compare {
    /// The result files: baseline, then candidate.
    pub baseline: PathBuf,
    pub candidate: PathBuf,
    /// `--json=FILE`: also write the comparison as JSON (`-`: standard
    /// output, the report then goes to standard error).
    pub json: Option<PathBuf>,
    /// `--html=FILE`: also write the comparison as an HTML page.
    pub html: Option<PathBuf>,
    /// `--compare-format`.
    pub format: CompareFormat,
    /// Threshold, metrics and `--allow-different-scripts`.
    pub options: CompareOptions,
    /// `--fail-on-regression`: a regression exits with
    /// [`REGRESSION_EXIT`].
    pub fail_on_regression: bool,
    /// `--max-input-size`: the largest result file read, in bytes.
    pub max_input_size: u64,
}

/// How `--compare` prints its report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareFormat {
    Text,
    Markdown,
}

/// Connection options as given (`-h`, `-p`, `-U`, `-d` or the positional
/// DBNAME), unresolved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Connection {
    pub host: Option<String>,
    pub port: Option<String>,
    pub user: Option<String>,
    pub dbname: Option<String>,
    /// The password file of a throwaway instance (`passfile=`); never set
    /// from the command line, and a connection string in the database
    /// name still overrides it.
    pub passfile: Option<std::path::PathBuf>,
}

/// Settings of a benchmark run.
#[derive(Debug, Clone, PartialEq)]
pub struct Benchmark {
    /// Scripts to choose from, in command-line order, never empty: without
    /// `-b`, `-f`, `-N` or `-S` it holds the builtin `tpcb-like`.
    pub scripts: Vec<ScriptSpec>,
    /// `-D NAME=VALUE`, in order of first definition; a later `-D` of the
    /// same name replaced the value.
    pub variables: Vec<VariableDefinition>,
    /// `-c`: number of concurrent clients.
    pub clients: u32,
    /// `-j`: number of worker threads, already reduced to `clients` when
    /// larger (as pgbench does).
    pub threads: u32,
    /// `-t` or `-T`; `-t 10` when neither was given.
    pub length: RunLength,
    /// `-C`: open a new connection for each transaction.
    pub connect_per_transaction: bool,
    /// `-R`: target rate in transactions per second.
    pub rate: Option<f64>,
    /// `-L`: transactions slower than this count as late (and are skipped
    /// under `-R` when already that late).
    pub latency_limit: Option<Duration>,
    /// `-M`: protocol used to submit queries.
    pub query_mode: QueryMode,
    /// `-n` / `-v`: what to vacuum before the run.
    pub vacuum: VacuumBeforeRun,
    /// `-P`: report progress every this many seconds.
    pub progress: Option<u32>,
    /// `--progress-timestamp`: progress lines carry Unix timestamps.
    pub progress_timestamp: bool,
    /// `-r`: report per-command latencies, failures and retries.
    pub report_per_command: bool,
    /// `-s`: the scale factor to report (pgbench otherwise reads it from
    /// `pgbench_branches`).
    pub scale: Option<u32>,
    /// `-l` and the options that shape the transaction log.
    pub log: Option<TransactionLog>,
    /// `--max-tries`: `None` means unlimited (`--max-tries=0`).
    pub max_tries: Option<u32>,
    /// `--failures-detailed`.
    pub failures_detailed: bool,
    /// `--verbose-errors`.
    pub verbose_errors: bool,
    /// `--exit-on-abort`.
    pub exit_on_abort: bool,
    /// `--continue-on-error` (PostgreSQL 19).
    pub continue_on_error: bool,
    /// `--reconnect[=MAX_WAIT]`: a client that loses its connection opens
    /// another, for at most this long, and goes on.
    pub reconnect: Option<Duration>,
    /// `--committed-query=SQL`: counts the committed transactions before
    /// and after a run under `--reconnect`.
    pub committed_query: Option<String>,
    /// `--random-seed`, else `PGBENCH_RANDOM_SEED`; `None` (neither given)
    /// seeds from the time without saying so, as pgbench does.
    pub random_seed: Option<RandomSeed>,
    /// `--json=FILE`: also write the results as JSON.
    pub json: Option<PathBuf>,
    /// `--html=FILE`: also write the report as an HTML page.
    pub html: Option<PathBuf>,
    /// `--pgbench-output`: print exactly what pgbench prints, nothing more.
    pub pgbench_output: bool,
    /// `--generator=I/N` (or `--generators=N`): this process's share of a
    /// fleet; `clients`, `threads` and `rate` above are already its share.
    pub fleet: Option<fleet::Share>,
    /// `--start-at`: when to start, µs since the Unix epoch.
    pub start_at_us: Option<i64>,
    /// `--run-id`.
    pub run_id: Option<String>,
    /// `--warmup`: seconds of unmeasured run before the measured one (0
    /// for none), before each step of a sweep.
    pub warmup_s: u32,
    /// `--sweep` and its companions: a series of runs instead of one.
    pub study: Option<study::Study>,
    /// The monitor's sampling interval in ms, or `None` under
    /// `--no-monitor`.
    pub monitor: Option<u32>,
    /// `--target=NAME=CONNINFO`, in order: the run (or each step of a
    /// sweep) once per target. Empty: the command line's connection.
    pub targets: Vec<target::Target>,
    /// `--connect-dimension`: each target also with `-C`, as `NAME-C`.
    pub connect_dimension: bool,
    /// `--pool-size`: with `--temp-pgbouncer`, the throwaway PgBouncer's
    /// `default_pool_size`; otherwise the clients share this many
    /// connections inside pgbolt, each taking one for a transaction (see
    /// `engine::pool`).
    pub pool_size: Option<u32>,
    /// `--metrics-listen` and `--metrics-linger`: the live Prometheus
    /// endpoint.
    pub metrics: Option<metrics::Metrics>,
}

impl Benchmark {
    /// The file descriptors the run holds open at once: pgbench's count (a
    /// socket per client, or per pooled connection under `--pool-size`, plus standard input, output and error), the
    /// engine's signal pipe, and per thread its poller (twice: the timer
    /// registers through a duplicate), its timer, its transaction log with
    /// `-l` and its ring with `--io=uring`; with `--temp-instance`, the
    /// instance's signal pipe and its watchdog's pipe.
    pub fn open_files_needed(&self, io: IoMethod, temp_instance: bool) -> u64 {
        let per_thread = 3 + u64::from(self.log.is_some()) + u64::from(io == IoMethod::Uring);
        let instance = if temp_instance { 4 } else { 0 };
        let sockets = self.pool_size.unwrap_or(self.clients);
        u64::from(sockets) + 3 + 2 + instance + u64::from(self.threads) * per_thread
    }
}

/// Settings of `-i`.
#[derive(Debug, Clone, PartialEq)]
pub struct Init {
    /// The steps to run, in order, after `-I`, `-n` and `--foreign-keys`.
    pub steps: Vec<InitStep>,
    /// `-s`: scale factor (default 1).
    pub scale: u32,
    /// `-F`: fill factor of the tables (default 100).
    pub fillfactor: u32,
    /// `-q`: log progress once every 5 seconds only.
    pub quiet: bool,
    /// `--unlogged-tables`.
    pub unlogged_tables: bool,
    /// `--tablespace`.
    pub tablespace: Option<String>,
    /// `--index-tablespace`.
    pub index_tablespace: Option<String>,
    /// `--partitions` (0: not partitioned).
    pub partitions: u32,
    /// `--partition-method`: `None` when not partitioned, `Range` by
    /// default when partitioned.
    pub partition_method: Option<PartitionMethod>,
    /// pgbolt's `--init-jobs`: connections used at once (`None`: the
    /// number of CPUs, at most 8).
    pub jobs: Option<u32>,
}

/// How long a run lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunLength {
    /// `-t`: transactions per client.
    Transactions(u32),
    /// `-T`: seconds.
    Duration(u32),
}

/// What is vacuumed before a benchmark run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VacuumBeforeRun {
    /// `-n`: nothing (this wins over `-v`).
    Skip,
    /// Default: `pgbench_branches` and `pgbench_tellers` (and truncate
    /// `pgbench_history`).
    Standard,
    /// `-v`: the standard tables and `pgbench_accounts`.
    IncludingAccounts,
}

/// A script to run, as given on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptSpec {
    /// `-b NAME[@W]`, `-S` (`select-only`), `-N` (`simple-update`) or the
    /// default `tpcb-like`. The name may be an unambiguous prefix.
    Builtin { name: String, weight: u32 },
    /// `-f FILENAME[@W]`; `-` is standard input.
    File { path: PathBuf, weight: u32 },
}

impl ScriptSpec {
    /// The relative weight of the script (0 ..= 2147483647).
    pub fn weight(&self) -> u32 {
        match self {
            ScriptSpec::Builtin { weight, .. } | ScriptSpec::File { weight, .. } => *weight,
        }
    }
}

/// One `-D NAME=VALUE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariableDefinition {
    pub name: String,
    /// The bytes after the first `=`, which need not be UTF-8.
    pub value: Vec<u8>,
}

/// `-l` with its companions.
#[derive(Debug, Clone, PartialEq)]
pub struct TransactionLog {
    /// `--log-prefix` (default `pgbench_log`), as the bytes given.
    pub prefix: OsString,
    /// `--sampling-rate`: fraction of transactions logged.
    pub sampling_rate: Option<f64>,
    /// `--aggregate-interval`: seconds per aggregated line.
    pub aggregate_interval: Option<u32>,
}

/// A random seed as met on the command line. pgbench reads `-f`/`-b`
/// scripts while it reads the options, so whether a script's error comes
/// after this seed's line depends on how many scripts came before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeedNote {
    pub seed: RandomSeed,
    /// How many `-f`/`-b` options came before the seed.
    pub scripts_before: usize,
}

/// `--io`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoMethod {
    /// The measured better driver for this kind of machine (epoll today).
    Auto,
    Epoll,
    Uring,
}

/// `--busy-poll`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BusyPoll {
    /// Spin only where the spinning threads cannot take a core that the
    /// clients' server backends need, only while measured to be faster, and
    /// never under `-R` (see `engine::choose_spin` and `engine::spin`).
    Auto,
    On,
    Off,
}

/// `--temp-instance` and its companions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TempInstance {
    /// `--temp-instance-setting=NAME=VALUE`, in order.
    pub settings: Vec<(String, String)>,
    /// `--temp-instance-keep`: leave the instance's directory behind.
    pub keep: bool,
    /// `--temp-pgbouncer[=MODE]`: a throwaway PgBouncer in front of it.
    pub pgbouncer: Option<crate::tempdb::PoolMode>,
}

/// Exit status of `--fail-on-regression` when the verdict is a regression
/// (pgbench uses 1 and 2).
pub const REGRESSION_EXIT: i32 = 3;

/// A figure the verdict can be based on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    Tps,
    P50,
    P90,
    P99,
    #[serde(rename = "p99.9")]
    P99_9,
}

impl Metric {
    pub const ALL: [Metric; 5] = [
        Metric::Tps,
        Metric::P50,
        Metric::P90,
        Metric::P99,
        Metric::P99_9,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Tps => "tps",
            Metric::P50 => "p50",
            Metric::P90 => "p90",
            Metric::P99 => "p99",
            Metric::P99_9 => "p99.9",
        }
    }

    /// The metric named `name` (as [`Metric::name`] spells it).
    pub fn from_name(name: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == name)
    }

    pub fn quantile(self) -> Option<f64> {
        match self {
            Metric::Tps => None,
            Metric::P50 => Some(0.5),
            Metric::P90 => Some(0.9),
            Metric::P99 => Some(0.99),
            Metric::P99_9 => Some(0.999),
        }
    }

    /// Higher is better for throughput, lower for latency.
    pub fn higher_is_better(self) -> bool {
        self == Metric::Tps
    }
}

/// What to compare and how strictly.
#[derive(Clone, Debug, PartialEq)]
pub struct CompareOptions {
    /// Smallest relative change that counts (0.03 for 3%).
    pub threshold: f64,
    /// The metrics the verdict is based on.
    pub metrics: Vec<Metric>,
    /// Compare results of different scripts anyway.
    pub allow_different_scripts: bool,
}

impl Config {
    /// A configuration for a mode that needs no settings (help, version,
    /// listing or showing builtin scripts).
    pub fn for_mode(mode: Mode) -> Config {
        Config {
            mode,
            connection: Connection::default(),
            debug: false,
            temp_instance: None,
            seeds: Vec::new(),
            io: IoMethod::Auto,
            busy_poll: BusyPoll::Auto,
            preflight: true,
        }
    }
}
