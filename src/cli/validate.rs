//! Second step of parsing: checks across options, in pgbench's order, and
//! the typed [`Config`].

use std::time::Duration;

use super::error::CliError;
use super::gather::Gathered;
use crate::config::{
    Benchmark, BusyPoll, Compare, CompareFormat, Config, Init, IoMethod, Merge, Mode, Render,
    RunLength, ScriptSpec, TempInstance, TransactionLog, VacuumBeforeRun,
};
use crate::init::{InitStep, PartitionMethod};
use crate::script::QueryMode;

/// pgbench accepts at most this many scripts.
const MAX_SCRIPTS: usize = 128;
const DEFAULT_INIT_STEPS: &str = "dtgvp";
const DEFAULT_TRANSACTIONS: u32 = 10;

/// Turns gathered options into a configuration, or the first error pgbench
/// would report.
pub fn finish(mut g: Gathered) -> Result<Config, CliError> {
    if let Some(result) = g.render.take() {
        return render(g, result);
    }
    if g.compare {
        return Ok(Config::for_mode(Mode::Compare(compare(&mut g)?)));
    }
    if g.merge {
        return merge(g);
    }
    if g.allow_partial {
        return Err(CliError::RequiresMerge("--allow-partial"));
    }
    if g.max_input_size.is_some() {
        return Err(CliError::MaxInputSizeWithoutInput);
    }
    if let Some((_, long)) = g.given.iter().find(|(_, l)| COMPARE_ONLY.contains(l)) {
        return Err(CliError::RequiresCompare(format!("--{long}")));
    }
    if g.scripts.len() > MAX_SCRIPTS {
        return Err(CliError::TooManyScripts);
    }
    if g.scripts.is_empty() && !g.init_mode {
        g.scripts.push(ScriptSpec::Builtin {
            name: "tpcb-like".to_string(),
            weight: 1,
        });
    }
    let total_weight: u64 = g.scripts.iter().map(|s| u64::from(s.weight())).sum();
    if total_weight == 0 && !g.init_mode {
        return Err(CliError::TotalWeightZero);
    }

    let mut positionals = std::mem::take(&mut g.positionals).into_iter();
    if g.connection.dbname.is_none() {
        g.connection.dbname = positionals.next();
    }
    if let Some(extra) = positionals.next() {
        return Err(CliError::TooManyArguments(extra));
    }

    let mode = if g.init_mode {
        Mode::Init(init(&g)?)
    } else {
        if g.initialization_option {
            return Err(CliError::InitOptionInBenchmarkMode);
        }
        Mode::Run(benchmark(&mut g)?)
    };
    if let (Mode::Run(bench), Some(limit)) = (&mode, g.open_files_limit) {
        let needed = bench.open_files_needed(g.io.unwrap_or(IoMethod::Auto), g.temp_instance);
        if needed > limit {
            return Err(CliError::TooManyOpenFiles { needed, limit });
        }
    }
    let temp_instance = temp_instance(&mut g)?;
    Ok(Config {
        mode,
        connection: g.connection,
        debug: g.debug,
        temp_instance,
        seeds: std::mem::take(&mut g.seeds),
        io: g.io.unwrap_or(IoMethod::Auto),
        busy_poll: g.busy_poll.unwrap_or(BusyPoll::Auto),
        preflight: !g.no_preflight,
    })
}

/// `--render`: only `--html` goes with it; anything that would shape a
/// run or name a server is refused rather than ignored.
fn render(g: Gathered, result: std::path::PathBuf) -> Result<Config, CliError> {
    let limit = max_input_size(&g);
    if let Some(option) = g.first_option_besides(&["render", "html", "max-input-size"]) {
        return Err(CliError::RenderWithOption(option));
    }
    if let Some(arg) = g.positionals.into_iter().next() {
        return Err(CliError::RenderWithArgument(arg));
    }
    let html = g.html.ok_or(CliError::RenderWithoutHtml)?;
    Ok(Config::for_mode(Mode::Render(Render {
        result,
        html,
        max_input_size: limit,
    })))
}

/// `--max-input-size`, or the default limit on a result file read.
fn max_input_size(g: &Gathered) -> u64 {
    g.max_input_size
        .unwrap_or(crate::config::DEFAULT_MAX_INPUT_SIZE)
}

fn init(g: &Gathered) -> Result<Init, CliError> {
    if g.benchmarking_option {
        return Err(CliError::BenchmarkOptionInInitMode);
    }
    let partitions = g.partitions.unwrap_or(0);
    let partition_method = match (partitions, g.partition_method) {
        (0, Some(_)) => return Err(CliError::PartitionMethodWithoutPartitions),
        (0, None) => None,
        (_, method) => Some(method.unwrap_or(PartitionMethod::Range)),
    };
    let letters = g.init_steps.as_deref().unwrap_or(DEFAULT_INIT_STEPS);
    let mut steps: Vec<InitStep> = letters
        .chars()
        .filter_map(InitStep::from_letter)
        .filter(|step| !(g.no_vacuum && *step == InitStep::Vacuum))
        .collect();
    if g.foreign_keys && !steps.contains(&InitStep::ForeignKeys) {
        steps.push(InitStep::ForeignKeys);
    }
    Ok(Init {
        steps,
        scale: g.scale.unwrap_or(1),
        fillfactor: g.fillfactor.unwrap_or(100),
        quiet: g.quiet,
        unlogged_tables: g.unlogged_tables,
        tablespace: g.tablespace.clone(),
        index_tablespace: g.index_tablespace.clone(),
        partitions,
        partition_method,
        jobs: g.init_jobs,
    })
}

fn benchmark(g: &mut Gathered) -> Result<Benchmark, CliError> {
    let length = run_length(g)?;
    let log = transaction_log(g)?;
    aggregation_fits(g, length)?;
    if g.progress_timestamp && g.progress.is_none() {
        return Err(CliError::ProgressTimestampWithoutProgress);
    }
    let max_tries = g.max_tries.unwrap_or(1);
    if max_tries == 0 && g.latency_limit_us == 0 && g.duration.is_none() {
        return Err(CliError::UnlimitedTriesWithoutBound);
    }

    targets(g)?;
    let study = study(g)?;
    let mut clients = g.clients.unwrap_or(1);
    if let Some(largest) = study.as_ref().and_then(|s| s.largest_clients()) {
        // The open files and the preflight are reckoned for the largest step.
        clients = largest;
    }
    let mut threads = g.threads.unwrap_or(1).min(clients);
    let mut rate = g.rate;
    let fleet = fleet_share(g, clients, threads)?;
    if let Some(share) = &fleet {
        clients = share.clients;
        threads = share.threads;
        rate = rate.map(|r| share.rate(r));
    }
    // With --temp-pgbouncer the size is the pooler's, not pgbolt's.
    if let (Some(pool), None) = (g.pool_size, &g.temp_pgbouncer) {
        pool_size_fits(g, pool, clients, threads)?;
    }
    reconnect_fits(g, study.is_some())?;
    let vacuum = vacuum_before_run(g);
    Ok(Benchmark {
        scripts: std::mem::take(&mut g.scripts),
        variables: std::mem::take(&mut g.variables),
        clients,
        threads,
        length,
        connect_per_transaction: g.connect,
        rate,
        latency_limit: u64::try_from(g.latency_limit_us)
            .ok()
            .filter(|us| *us > 0)
            .map(Duration::from_micros),
        query_mode: g.query_mode.unwrap_or(QueryMode::Simple),
        vacuum,
        progress: g.progress,
        progress_timestamp: g.progress_timestamp,
        report_per_command: g.report_per_command,
        scale: g.scale,
        log,
        max_tries: (max_tries > 0).then_some(max_tries),
        failures_detailed: g.failures_detailed,
        verbose_errors: g.verbose_errors,
        exit_on_abort: g.exit_on_abort,
        continue_on_error: g.continue_on_error,
        reconnect: g.reconnect,
        committed_query: g.committed_query.clone(),
        random_seed: g.random_seed,
        json: g.json.take(),
        html: g.html.take(),
        pgbench_output: g.pgbench_output,
        fleet,
        start_at_us: g.start_at,
        run_id: g.run_id.take(),
        warmup_s: g.warmup.unwrap_or(0),
        study,
        monitor: (!g.no_monitor).then(|| g.monitor_interval.unwrap_or(100)),
        targets: std::mem::take(&mut g.targets),
        connect_dimension: g.connect_dimension,
        pool_size: g.pool_size,
        metrics: metrics(g)?,
    })
}

/// `--metrics-listen`, `--metrics-linger` and `--metrics-push`.
fn metrics(g: &Gathered) -> Result<Option<crate::config::metrics::Metrics>, CliError> {
    if g.metrics_listen.is_none() && g.metrics_linger.is_some() {
        return Err(CliError::LingerWithoutListen);
    }
    if g.metrics_listen.is_none() && g.metrics_push.is_none() {
        return Ok(None);
    }
    Ok(Some(crate::config::metrics::Metrics {
        listen: g.metrics_listen,
        push: g.metrics_push.clone(),
        linger: g
            .metrics_linger
            .map_or(crate::config::metrics::DEFAULT_LINGER, |s| {
                std::time::Duration::from_secs(u64::from(s))
            }),
    }))
}

/// `-t` or `-T`, not both; pgbench's 10 transactions when neither.
fn run_length(g: &Gathered) -> Result<RunLength, CliError> {
    match (g.transactions, g.duration) {
        (Some(_), Some(_)) => Err(CliError::TransactionsAndDuration),
        (Some(n), None) => Ok(RunLength::Transactions(n)),
        (None, Some(seconds)) => Ok(RunLength::Duration(seconds)),
        (None, None) => Ok(RunLength::Transactions(DEFAULT_TRANSACTIONS)),
    }
}

/// `--aggregate-interval` in a timed run: no longer than the run, and the
/// run a whole number of intervals.
fn aggregation_fits(g: &Gathered, length: RunLength) -> Result<(), CliError> {
    if let (Some(interval), RunLength::Duration(duration)) = (g.aggregate_interval, length) {
        if interval > duration {
            return Err(CliError::AggregationLongerThanDuration { interval, duration });
        }
        if duration % interval != 0 {
            return Err(CliError::DurationNotMultipleOfAggregation { duration, interval });
        }
    }
    Ok(())
}

/// `-n` skips the vacuum before the run, `-v` adds pgbench_accounts to it.
fn vacuum_before_run(g: &Gathered) -> VacuumBeforeRun {
    if g.no_vacuum {
        VacuumBeforeRun::Skip
    } else if g.vacuum_all {
        VacuumBeforeRun::IncludingAccounts
    } else {
        VacuumBeforeRun::Standard
    }
}

/// `--pool-size`: each thread shares its own connections among its own
/// clients, so every thread needs one and no connection may go unused;
/// the options whose connections are not one per session of many
/// transactions are refused.
/// `--reconnect` is refused where a client's connection is not its own
/// for the whole run, or where the run is a study: the outage of one run
/// is what it measures.
fn reconnect_fits(g: &Gathered, study: bool) -> Result<(), CliError> {
    if g.reconnect.is_none() {
        if g.committed_query.is_some() {
            return Err(CliError::CommittedQueryWithoutReconnect);
        }
        return Ok(());
    }
    let refused = [
        (g.connect, "-C/--connect"),
        (g.pool_size.is_some(), "--pool-size"),
        (study, "--sweep"),
        (
            !g.targets.is_empty() || g.temp_pgbouncer.is_some(),
            "--target",
        ),
        (g.io == Some(IoMethod::Uring), "--io=uring"),
    ];
    match refused.iter().find(|(given, _)| *given) {
        Some((_, option)) => Err(CliError::UnsupportedWithReconnect(option)),
        None => Ok(()),
    }
}

fn pool_size_fits(g: &Gathered, pool: u32, clients: u32, threads: u32) -> Result<(), CliError> {
    let refused = [
        ("-C/--connect", g.connect),
        ("--sweep", g.sweep.is_some()),
        ("--target", !g.targets.is_empty()),
        ("--io=uring", g.io == Some(IoMethod::Uring)),
    ];
    if let Some((option, _)) = refused.into_iter().find(|(_, given)| *given) {
        return Err(CliError::PoolSizeWith(option));
    }
    if pool < threads || pool > clients {
        return Err(CliError::PoolSizeOutOfRange {
            pool,
            threads,
            clients,
        });
    }
    Ok(())
}

/// `--target`, `--temp-pgbouncer` and `--pool-size`, checked against what
/// a comparison of targets cannot honour yet.
fn targets(g: &Gathered) -> Result<(), CliError> {
    if g.temp_pgbouncer.is_some() && !g.temp_instance {
        return Err(CliError::RequiresTempInstance("--temp-pgbouncer"));
    }
    if g.temp_instance && !g.targets.is_empty() {
        return Err(CliError::TempInstanceWithServer("--target"));
    }
    if g.targets.is_empty() && g.temp_pgbouncer.is_none() {
        return match g.connect_dimension {
            true => Err(CliError::RequiresTargets("--connect-dimension")),
            false => Ok(()),
        };
    }
    if g.connect_dimension && g.connect {
        return Err(CliError::ConnectDimensionWithConnect);
    }
    let unsupported = [
        ("-l/--log", g.log),
        ("--pgbench-output", g.pgbench_output),
        (
            "--generator",
            g.generator.is_some() || g.generators.is_some(),
        ),
        ("--start-at", g.start_at.is_some()),
        (
            "--sweep=clients:auto",
            matches!(&g.sweep, Some(s) if s.values == crate::config::study::Values::Auto),
        ),
    ];
    match unsupported.into_iter().find(|(_, given)| *given) {
        Some((option, _)) => Err(CliError::UnsupportedWithTargets(option)),
        None => Ok(()),
    }
}

/// `--sweep` and its companions, checked against the options a sweep sets
/// itself or cannot honour yet.
fn study(g: &Gathered) -> Result<Option<crate::config::study::Study>, CliError> {
    use crate::config::study::{Dimension, Order, Reset, Study, Values};
    if g.warmup.is_some() && g.start_at.is_some() {
        return Err(CliError::UnsupportedWithWarmup("--start-at"));
    }
    let Some(sweep) = g.sweep.clone() else {
        let companion = [
            ("--repeat", g.repeat.is_some()),
            ("--sweep-reset", g.sweep_reset.is_some()),
            ("--repeat-order", g.repeat_order.is_some()),
            ("--slo", !g.slo.is_empty()),
        ];
        return match companion.into_iter().find(|(_, given)| *given) {
            Some((option, _)) => Err(CliError::RequiresSweep(option)),
            None => Ok(None),
        };
    };
    let dimension = sweep.dimension.name();
    let swept = match sweep.dimension {
        Dimension::Clients => g.clients.is_some().then_some("-c/--client"),
        Dimension::Threads => None,
        Dimension::Rate => g.rate.is_some().then_some("-R/--rate"),
    };
    if let Some(option) = swept {
        return Err(CliError::SweptOption(option, dimension));
    }
    if let (Some(order), Values::Auto) = (g.repeat_order, &sweep.values) {
        return Err(CliError::InvalidStudyValue {
            option: "--repeat-order",
            value: order.name().to_owned(),
            reason: "clients:auto runs each value's repeats one after the other, as it finds \
                     the values; there is no order to choose"
                .into(),
        });
    }
    if sweep.dimension == Dimension::Threads && g.threads.is_some() {
        return Err(CliError::SweptOption("-j/--jobs", dimension));
    }
    let unsupported = [
        ("--pgbench-output", g.pgbench_output),
        (
            "--generator",
            g.generator.is_some() || g.generators.is_some(),
        ),
        ("--start-at", g.start_at.is_some()),
    ];
    if let Some((option, _)) = unsupported.into_iter().find(|(_, given)| *given) {
        return Err(CliError::UnsupportedWithSweep(option));
    }
    Ok(Some(Study {
        sweep,
        repeat: g.repeat.unwrap_or(1),
        order: g.repeat_order.unwrap_or(Order::Alternate),
        reset: g.sweep_reset.unwrap_or(Reset::Vacuum),
        slo: g.slo.clone(),
        jobs: g.threads,
    }))
}

/// The share of `--generator=I/N` or `--generators=N` (the index from
/// `JOB_COMPLETION_INDEX`), or `None` for a run on its own.
fn fleet_share(
    g: &Gathered,
    clients: u32,
    threads: u32,
) -> Result<Option<crate::config::fleet::Share>, CliError> {
    let (index, count) = match (g.generator, g.generators) {
        (Some((_, n)), Some(m)) if n != m => return Err(CliError::GeneratorsDisagree),
        (Some(given), _) => given,
        (None, Some(count)) => {
            let found = g.job_completion_index.clone();
            let index = found
                .as_deref()
                .and_then(|v| v.trim().parse::<u32>().ok())
                .filter(|i| *i < count)
                .ok_or(CliError::MissingGeneratorIndex { count, found })?;
            (index, count)
        }
        (None, None) => return Ok(None),
    };
    if clients < count {
        return Err(CliError::FewerClientsThanGenerators {
            clients,
            generators: count,
        });
    }
    Ok(Some(crate::config::fleet::Share::new(
        index, count, clients, threads,
    )))
}

/// `--merge`: result files and the options of the merge only.
fn merge(mut g: Gathered) -> Result<Config, CliError> {
    let allowed = ["merge", "json", "html", "allow-partial", "max-input-size"];
    if let Some(option) = g.first_option_besides(&allowed) {
        return Err(CliError::OptionWithMerge(option));
    }
    if g.positionals.is_empty() {
        return Err(CliError::NoResultsToMerge);
    }
    Ok(Config::for_mode(Mode::Merge(Merge {
        results: std::mem::take(&mut g.positionals)
            .into_iter()
            .map(Into::into)
            .collect(),
        json: g.json.take(),
        html: g.html.take(),
        allow_partial: g.allow_partial,
        max_input_size: max_input_size(&g),
    })))
}

fn transaction_log(g: &mut Gathered) -> Result<Option<TransactionLog>, CliError> {
    if g.sampling_rate.is_some() && !g.log {
        return Err(CliError::SamplingWithoutLog);
    }
    if g.sampling_rate.is_some() && g.aggregate_interval.is_some() {
        return Err(CliError::SamplingWithAggregation);
    }
    if g.aggregate_interval.is_some() && !g.log {
        return Err(CliError::AggregationWithoutLog);
    }
    if g.log_prefix.is_some() && !g.log {
        return Err(CliError::LogPrefixWithoutLog);
    }
    Ok(g.log.then(|| TransactionLog {
        prefix: g.log_prefix.take().unwrap_or_else(|| "pgbench_log".into()),
        sampling_rate: g.sampling_rate,
        aggregate_interval: g.aggregate_interval,
    }))
}

/// Server settings a throwaway instance decides itself: pgbolt connects to
/// the socket it placed in the instance's directory, under the port it chose.
const OWNED_SETTINGS: &[&str] = &[
    "port",
    "unix_socket_directories",
    "data_directory",
    "config_file",
    "hba_file",
    "ident_file",
];

fn temp_instance(g: &mut Gathered) -> Result<Option<TempInstance>, CliError> {
    if !g.temp_instance {
        if !g.temp_instance_settings.is_empty() {
            return Err(CliError::RequiresTempInstance("--temp-instance-setting"));
        }
        if g.temp_instance_keep {
            return Err(CliError::RequiresTempInstance("--temp-instance-keep"));
        }
        return Ok(None);
    }
    if g.connection.host.is_some() {
        return Err(CliError::TempInstanceWithServer("-h/--host"));
    }
    if g.connection.port.is_some() {
        return Err(CliError::TempInstanceWithServer("-p/--port"));
    }
    if g.connection.user.is_some() {
        return Err(CliError::TempInstanceWithServer("-U/--username"));
    }
    if g.connection.dbname.is_some() {
        return Err(CliError::TempInstanceWithServer(
            "a database name (-d/--dbname or an argument)",
        ));
    }
    if let Some((name, _)) = g.temp_instance_settings.iter().find(|(name, _)| {
        OWNED_SETTINGS
            .iter()
            .any(|owned| name.eq_ignore_ascii_case(owned))
    }) {
        return Err(CliError::TempInstanceOwnsSetting(name.clone()));
    }
    Ok(Some(TempInstance {
        settings: std::mem::take(&mut g.temp_instance_settings),
        keep: g.temp_instance_keep,
        pgbouncer: g.temp_pgbouncer,
    }))
}

/// The options that only `--compare` takes.
const COMPARE_ONLY: &[&str] = &[
    "threshold",
    "compare-metric",
    "compare-format",
    "fail-on-regression",
    "allow-different-scripts",
];

/// `--compare`: two result files and the options of the comparison only;
/// anything that would shape a run or a connection is refused by name.
fn compare(g: &mut Gathered) -> Result<Compare, CliError> {
    let allowed: Vec<&str> = ["compare", "json", "html", "max-input-size"]
        .into_iter()
        .chain(COMPARE_ONLY.iter().copied())
        .collect();
    if let Some(option) = g.first_option_besides(&allowed) {
        return Err(CliError::OptionWithCompare(option));
    }
    let files = std::mem::take(&mut g.positionals);
    let [baseline, candidate] =
        <[String; 2]>::try_from(files).map_err(|files| CliError::CompareFileCount(files.len()))?;
    Ok(Compare {
        max_input_size: max_input_size(g),
        baseline: baseline.into(),
        candidate: candidate.into(),
        json: g.json.take(),
        html: g.html.take(),
        format: g.compare_format.unwrap_or(CompareFormat::Text),
        options: crate::config::CompareOptions {
            threshold: g.threshold.unwrap_or(0.03),
            metrics: g
                .compare_metrics
                .take()
                .unwrap_or_else(|| vec![crate::config::Metric::Tps, crate::config::Metric::P99]),
            allow_different_scripts: g.allow_different_scripts,
        },
        fail_on_regression: g.fail_on_regression,
    })
}
