//! First step of parsing: each option, as it is met, checks its own value
//! and records it, exactly when pgbench would (so that of two bad options
//! the first one is reported). Checks that involve several options wait
//! for [`super::validate`].
//!
//! This file gathers pgbench's own options; pgbolt's (result files, the
//! throwaway instance and pooler, targets, I/O, comparing, fleets,
//! merging, studies) are in `extensions`, whose functions are re-exported
//! here so that the option table names every option's function alike.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use super::error::CliError;
use super::values;
use super::Environment;
use crate::config::Metric;
use crate::config::{
    BusyPoll, CompareFormat, Connection, IoMethod, Mode, ScriptSpec, SeedNote, VariableDefinition,
};
use crate::init::{InitStep, PartitionMethod};
use crate::random::RandomSeed;
use crate::script::QueryMode;
use crate::script::ScriptError;

mod extensions;
pub use extensions::*;

/// Options as met so far, before cross-checks; mirrors pgbench's globals.
#[derive(Debug, Default)]
pub struct Gathered {
    /// Set by `-b list` and `--show-script`, which end parsing at once.
    pub early_exit: Option<Mode>,
    pub benchmarking_option: bool,
    pub initialization_option: bool,
    pub open_files_limit: Option<u64>,

    pub connection: Connection,
    pub positionals: Vec<String>,
    pub debug: bool,

    pub init_mode: bool,
    pub init_steps: Option<String>,
    pub fillfactor: Option<u32>,
    pub no_vacuum: bool,
    pub quiet: bool,
    pub scale: Option<u32>,
    pub foreign_keys: bool,
    pub unlogged_tables: bool,
    pub tablespace: Option<String>,
    pub index_tablespace: Option<String>,
    pub partitions: Option<u32>,
    pub init_jobs: Option<u32>,
    pub partition_method: Option<PartitionMethod>,

    pub scripts: Vec<ScriptSpec>,
    pub variables: Vec<VariableDefinition>,
    /// Where each `-D` name is in `variables`, so that redefining a name
    /// finds it without a scan (thousands of `-D` stay linear).
    pub variable_index: HashMap<String, usize>,
    pub clients: Option<u32>,
    pub threads: Option<u32>,
    pub transactions: Option<u32>,
    pub duration: Option<u32>,
    pub connect: bool,
    pub log: bool,
    /// Microseconds, computed as pgbench does (0: no limit).
    pub latency_limit_us: i64,
    pub query_mode: Option<QueryMode>,
    pub vacuum_all: bool,
    pub progress: Option<u32>,
    pub progress_timestamp: bool,
    pub report_per_command: bool,
    pub rate: Option<f64>,
    pub sampling_rate: Option<f64>,
    pub aggregate_interval: Option<u32>,
    pub log_prefix: Option<OsString>,
    pub random_seed: Option<RandomSeed>,
    /// Every seed met so far, the last one being `random_seed`.
    pub seeds: Vec<SeedNote>,
    /// Raw `--max-tries` (0: unlimited); pgbench's default is 1.
    pub max_tries: Option<u32>,
    pub failures_detailed: bool,
    pub verbose_errors: bool,
    pub exit_on_abort: bool,
    pub continue_on_error: bool,
    /// `--reconnect[=MAX_WAIT]`: the longest wait for a new connection.
    pub reconnect: Option<std::time::Duration>,
    pub committed_query: Option<String>,

    pub json: Option<PathBuf>,
    pub html: Option<PathBuf>,
    pub render: Option<PathBuf>,
    pub pgbench_output: bool,
    pub no_monitor: bool,
    /// `--monitor-interval` in ms.
    pub monitor_interval: Option<u32>,
    pub pool_size: Option<u32>,
    pub no_preflight: bool,
    pub temp_instance: bool,
    pub temp_instance_settings: Vec<(String, String)>,
    pub temp_instance_keep: bool,
    /// `--temp-pgbouncer[=MODE]`.
    pub temp_pgbouncer: Option<crate::tempdb::PoolMode>,
    pub targets: Vec<crate::config::target::Target>,
    pub connect_dimension: bool,
    pub io: Option<IoMethod>,
    pub busy_poll: Option<BusyPoll>,
    pub sweep: Option<crate::config::study::Sweep>,
    pub warmup: Option<u32>,
    pub repeat: Option<u32>,
    pub sweep_reset: Option<crate::config::study::Reset>,
    pub repeat_order: Option<crate::config::study::Order>,
    pub slo: Vec<crate::config::study::Slo>,

    /// Every option met, in order, so that a mode that takes only a few
    /// options (`--render`, `--compare`) can name the first one it refuses.
    /// Each as its short name, if any, and its long name.
    pub given: Vec<(Option<char>, &'static str)>,
    pub compare: bool,
    pub compare_format: Option<CompareFormat>,
    pub compare_metrics: Option<Vec<Metric>>,
    /// `--threshold` as a fraction.
    pub threshold: Option<f64>,
    pub fail_on_regression: bool,
    pub allow_different_scripts: bool,

    /// `--generator=I/N`.
    pub generator: Option<(u32, u32)>,
    /// `--generators=N`.
    pub generators: Option<u32>,
    pub job_completion_index: Option<String>,
    /// `--start-at`, µs since the Unix epoch.
    pub start_at: Option<i64>,
    pub run_id: Option<String>,
    pub merge: bool,
    pub allow_partial: bool,

    /// `--metrics-listen=ADDR:PORT`.
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// `--metrics-push=URL`.
    pub metrics_push: Option<crate::config::metrics::PushUrl>,
    /// `--metrics-linger=SECS`.
    pub metrics_linger: Option<u32>,
    /// `--max-input-size`, in bytes.
    pub max_input_size: Option<u64>,
}

impl Gathered {
    /// Starts from the environment; `PGBENCH_RANDOM_SEED` is checked first,
    /// before any option, as pgbench does.
    pub fn new(env: &Environment) -> Result<Gathered, CliError> {
        let random_seed = match &env.random_seed {
            Some(seed) => Some(parse_seed(&text(seed), true)?),
            None => None,
        };
        let seeds = random_seed
            .map(|seed| SeedNote {
                seed,
                scripts_before: 0,
            })
            .into_iter()
            .collect();
        Ok(Gathered {
            open_files_limit: env.open_files_limit,
            job_completion_index: env.job_completion_index.clone(),
            random_seed,
            seeds,
            ..Gathered::default()
        })
    }
}

impl Gathered {
    /// The first option met that is not among `allowed` (long names), as
    /// messages name it (`-c/--client`, `--json`).
    pub fn first_option_besides(&self, allowed: &[&str]) -> Option<String> {
        let (short, long) = self.given.iter().find(|(_, l)| !allowed.contains(l))?;
        Some(match short {
            Some(c) => format!("-{c}/--{long}"),
            None => format!("--{long}"),
        })
    }

    /// `error`, with the seeds met before it.
    pub fn failure(&self, error: CliError) -> super::ParseFailure {
        super::ParseFailure {
            error,
            seeds: self.seeds.clone(),
        }
    }
}

fn text(value: &OsStr) -> String {
    value.to_string_lossy().into_owned()
}

fn positive(value: &OsStr, option: &'static str) -> Result<u32, CliError> {
    values::option_int(&text(value), option, 1, i32::MAX).map(|v| v as u32)
}

fn parse_seed(value: &str, from_environment: bool) -> Result<RandomSeed, CliError> {
    crate::random::parse_seed(value).map_err(|_| CliError::InvalidRandomSeed {
        value: value.to_string(),
        from_environment,
    })
}

/// Splits `NAME[@W]` at its last `@`, as pgbench does.
fn weighted(value: &OsStr) -> Result<(OsString, u32), CliError> {
    let bytes = value.as_encoded_bytes();
    match bytes.iter().rposition(|b| *b == b'@') {
        Some(at) => {
            let spec = String::from_utf8_lossy(&bytes[at..]).into_owned();
            let weight = values::weight(&spec[1..], &spec)?;
            // SAFETY: splitting right before an ASCII '@' keeps both halves
            // valid encoded OS strings.
            let name = unsafe { OsStr::from_encoded_bytes_unchecked(&bytes[..at]) };
            Ok((name.to_os_string(), weight))
        }
        None => Ok((value.to_os_string(), 1)),
    }
}

fn builtin_spec(name: &str) -> ScriptSpec {
    ScriptSpec::Builtin {
        name: name.to_string(),
        weight: 1,
    }
}

pub fn builtin(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    if value == "list" {
        g.early_exit = Some(Mode::ListBuiltins);
        return Ok(());
    }
    let (name, weight) = weighted(value)?;
    let name = text(&name);
    // pgbench looks the name up as it meets the option, so an unknown
    // name is reported before any later option's error.
    crate::script::find_builtin(&name).map_err(|e| match e {
        ScriptError::AmbiguousBuiltin { name, matches } => {
            CliError::AmbiguousBuiltin { name, matches }
        }
        _ => CliError::UnknownBuiltin(name.clone()),
    })?;
    g.scripts.push(ScriptSpec::Builtin { name, weight });
    Ok(())
}

pub fn file(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let (path, weight) = weighted(value)?;
    g.scripts.push(ScriptSpec::File {
        path: PathBuf::from(path),
        weight,
    });
    Ok(())
}

pub fn select_only(g: &mut Gathered) {
    g.scripts.push(builtin_spec("select-only"));
}

pub fn skip_some_updates(g: &mut Gathered) {
    g.scripts.push(builtin_spec("simple-update"));
}

pub fn clients(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let clients = positive(value, "-c/--client")?;
    let needed = u64::from(clients) + 3;
    if let Some(limit) = g.open_files_limit.filter(|limit| *limit < needed) {
        return Err(CliError::TooManyOpenFiles { needed, limit });
    }
    g.clients = Some(clients);
    Ok(())
}

pub fn connect(g: &mut Gathered) {
    g.connect = true;
}

pub fn dbname(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    g.connection.dbname = Some(text(value));
    Ok(())
}

/// `-D NAME=VALUE`: the value is kept as the bytes given, UTF-8 or not
/// (a `LATIN1` database takes them as they are, as with pgbench).
pub fn define(g: &mut Gathered, definition: &OsStr) -> Result<(), CliError> {
    let bytes = definition.as_encoded_bytes();
    let (name, value) = match bytes.iter().position(|&b| b == b'=') {
        Some(at) if at > 0 && at + 1 < bytes.len() => (&bytes[..at], &bytes[at + 1..]),
        _ => return Err(CliError::InvalidVariableDefinition(text(definition))),
    };
    let name = String::from_utf8_lossy(name);
    if !crate::script::valid_variable_name(&name) {
        return Err(CliError::InvalidVariableName(name.into_owned()));
    }
    match g.variable_index.get(name.as_ref()) {
        Some(&at) => g.variables[at].value = value.to_vec(),
        None => {
            g.variable_index.insert(name.to_string(), g.variables.len());
            g.variables.push(VariableDefinition {
                name: name.into_owned(),
                value: value.to_vec(),
            });
        }
    }
    Ok(())
}

pub fn fillfactor(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    g.fillfactor = Some(values::option_int(&text(value), "-F/--fillfactor", 10, 100)? as u32);
    Ok(())
}

pub fn host(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    g.connection.host = Some(text(value));
    Ok(())
}

pub fn initialize(g: &mut Gathered) {
    g.init_mode = true;
}

pub fn init_steps(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let steps = text(value);
    if steps.is_empty() {
        return Err(CliError::NoInitSteps);
    }
    if let Some(bad) = steps
        .chars()
        .find(|c| *c != ' ' && InitStep::from_letter(*c).is_none())
    {
        return Err(CliError::UnrecognizedInitStep(bad));
    }
    g.init_steps = Some(steps);
    Ok(())
}

pub fn jobs(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    g.threads = Some(positive(value, "-j/--jobs")?);
    Ok(())
}

pub fn log(g: &mut Gathered) {
    g.log = true;
}

pub fn latency_limit(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let value = text(value);
    let limit_ms = crate::cnum::atof(&value);
    if limit_ms.is_nan() || limit_ms <= 0.0 {
        return Err(CliError::InvalidLatencyLimit(value));
    }
    // As in pgbench, a limit under a microsecond becomes 0: no limit.
    g.latency_limit_us = (limit_ms * 1000.0) as i64;
    Ok(())
}

pub fn no_vacuum(g: &mut Gathered) {
    g.no_vacuum = true;
}

pub fn port(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    g.connection.port = Some(text(value));
    Ok(())
}

pub fn progress(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    g.progress = Some(positive(value, "-P/--progress")?);
    Ok(())
}

pub fn protocol(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let mode = [QueryMode::Simple, QueryMode::Extended, QueryMode::Prepared]
        .into_iter()
        .find(|m| value == m.name())
        .ok_or_else(|| CliError::InvalidQueryMode(text(value)))?;
    g.query_mode = Some(mode);
    Ok(())
}

pub fn quiet(g: &mut Gathered) {
    g.quiet = true;
}

pub fn report_per_command(g: &mut Gathered) {
    g.report_per_command = true;
}

pub fn rate(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let value = text(value);
    let rate = crate::cnum::atof(&value);
    if rate.is_nan() || rate <= 0.0 {
        return Err(CliError::InvalidRate(value));
    }
    // pgbench throttles by the delay between transactions, 1/rate: a rate
    // too large for a double (`inf`, `1e400`) is a delay of 0, no limit.
    g.rate = rate.is_finite().then_some(rate);
    Ok(())
}

pub fn scale(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    g.scale = Some(positive(value, "-s/--scale")?);
    Ok(())
}

pub fn time(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    g.duration = Some(positive(value, "-T/--time")?);
    Ok(())
}

pub fn transactions(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    g.transactions = Some(positive(value, "-t/--transactions")?);
    Ok(())
}

pub fn username(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    g.connection.user = Some(text(value));
    Ok(())
}

pub fn vacuum_all(g: &mut Gathered) {
    g.vacuum_all = true;
}

pub fn unlogged_tables(g: &mut Gathered) {
    g.unlogged_tables = true;
}

pub fn tablespace(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    g.tablespace = Some(text(value));
    Ok(())
}

pub fn index_tablespace(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    g.index_tablespace = Some(text(value));
    Ok(())
}

pub fn sampling_rate(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let value = text(value);
    let rate = crate::cnum::atof(&value);
    if rate.is_nan() || rate <= 0.0 || rate > 1.0 {
        return Err(CliError::InvalidSamplingRate(value));
    }
    g.sampling_rate = Some(rate);
    Ok(())
}

pub fn aggregate_interval(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    g.aggregate_interval = Some(positive(value, "--aggregate-interval")?);
    Ok(())
}

pub fn progress_timestamp(g: &mut Gathered) {
    g.progress_timestamp = true;
}

pub fn log_prefix(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    g.log_prefix = Some(value.to_os_string());
    Ok(())
}

pub fn foreign_keys(g: &mut Gathered) {
    g.foreign_keys = true;
}

pub fn random_seed(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let seed = parse_seed(&text(value), false)?;
    g.random_seed = Some(seed);
    g.seeds.push(SeedNote {
        seed,
        scripts_before: g.scripts.len(),
    });
    Ok(())
}

pub fn show_script(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    g.early_exit = Some(Mode::ShowScript(text(value)));
    Ok(())
}

pub fn partitions(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    g.partitions = Some(values::option_int(&text(value), "--partitions", 0, i32::MAX)? as u32);
    Ok(())
}

pub fn init_jobs(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    g.init_jobs = Some(values::option_int(&text(value), "--init-jobs", 1, 1024)? as u32);
    Ok(())
}

pub fn partition_method(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let value = text(value);
    let Some(method) = PartitionMethod::parse(&value) else {
        return Err(CliError::InvalidPartitionMethod(value));
    };
    g.partition_method = Some(method);
    Ok(())
}

pub fn failures_detailed(g: &mut Gathered) {
    g.failures_detailed = true;
}

pub fn max_tries(g: &mut Gathered, value: &OsStr) -> Result<(), CliError> {
    let value = text(value);
    let tries = crate::cnum::atoi(&value);
    if tries < 0 {
        return Err(CliError::InvalidMaxTries(value));
    }
    g.max_tries = Some(tries as u32);
    Ok(())
}

pub fn verbose_errors(g: &mut Gathered) {
    g.verbose_errors = true;
}

pub fn exit_on_abort(g: &mut Gathered) {
    g.exit_on_abort = true;
}

pub fn debug(g: &mut Gathered) {
    g.debug = true;
}

pub fn continue_on_error(g: &mut Gathered) {
    g.continue_on_error = true;
}
