//! The top of the program: one function per mode, run with a validated
//! [`Config`].
//!
//! [`main`] parses the command line ([`crate::cli`]), picks the mode and
//! maps what happened to pgbench's exit status. Each mode has its own
//! function here: the benchmark ([`run`](mod@run)), `-i`, a sweep, targets
//! compared, and the offline modes (render, merge, compare) that read
//! result files and connect nowhere; a throwaway instance
//! ([`temp_instance`]) wraps any of them. The modes call down into the
//! engine, a study or the targets for the work, and into
//! [`crate::report`] to print and write what came of it; nothing below
//! knows which mode it serves. Before any mode starts, an output that
//! would overwrite one of its inputs or another output is refused
//! ([`crate::report::overlap`]). The offline modes' work on a file's text
//! ([`render_page`], [`compare_texts`], [`merge_texts`]) is public so the
//! fuzzing of the result-file readers calls what the modes call. Signal handling that belongs to a mode
//! (`-i`'s interrupt) is here too. Features that are not built yet are
//! refused by name ("... is not supported yet") rather than ignored, so a
//! command line never silently means less than it says.

use std::fmt;
use std::io::Write;

use std::num::NonZeroUsize;

mod compare;
mod interrupt;
mod merge;
mod render;
mod run;
mod study;
mod temp_instance;

pub use compare::compare_texts;
pub use merge::merge_texts;
pub use render::render_page;

use crate::cli::{self, help, CliError, Environment, Level};
use crate::config::connection;
use crate::config::{Benchmark, BusyPoll, Config, Init, IoMethod, Mode};
use crate::init::{InitOptions, InitSteps};
use crate::program::{announce_seed, ewriteln, PROGRAM};

/// Why a mode could not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunError {
    /// The named feature is not implemented yet.
    Unsupported(&'static str),
    /// The throwaway instance of `--temp-instance` could not be started.
    TempInstance(String),
    /// The benchmark could not start.
    Engine(String),
}

impl RunError {
    /// The exit status pgbench uses for this kind of failure.
    pub fn exit_code(&self) -> i32 {
        match self {
            RunError::Unsupported(_) | RunError::TempInstance(_) | RunError::Engine(_) => 1,
        }
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Unsupported(feature) => write!(f, "{feature} is not supported yet"),
            RunError::TempInstance(message) => {
                write!(f, "could not start the throwaway instance: {message}")
            }
            RunError::Engine(text) => f.write_str(text),
        }
    }
}

impl std::error::Error for RunError {}

/// Runs the mode of `config` and returns the exit status.
pub fn run(config: Config) -> Result<i32, RunError> {
    check_overlap(&config.mode).map_err(RunError::Engine)?;
    let endpoint = metrics_endpoint(&config)?;
    let status = run_with_endpoint(&config);
    if let Some(endpoint) = endpoint {
        endpoint.finish();
    }
    status
}

/// `--metrics-listen`: the endpoint, open before anything connects and
/// until the mode is done (its port in use refuses the run).
fn metrics_endpoint(config: &Config) -> Result<Option<crate::metrics::Endpoint>, RunError> {
    let Mode::Run(bench) = &config.mode else {
        return Ok(None);
    };
    let Some(settings) = &bench.metrics else {
        return Ok(None);
    };
    let identity = crate::metrics::Identity {
        namespace: namespace(config),
        generator: bench.fleet.map(|share| (share.index, share.count)),
    };
    crate::metrics::listen(settings, identity)
        .map(Some)
        .map_err(|e| RunError::Engine(e.to_string()))
}

/// The database the clients use (`db.namespace`), empty when the
/// connection options do not resolve (the run then fails to connect).
fn namespace(config: &Config) -> String {
    connection::resolve(&config.connection)
        .map(|c| c.dbname)
        .unwrap_or_default()
}

fn run_with_endpoint(config: &Config) -> Result<i32, RunError> {
    match &config.temp_instance {
        Some(temp) => temp_instance::run(config, temp, |local, tables| {
            crate::metrics::set_namespace(namespace(local));
            if let (Mode::Run(benchmark), Some(_)) = (&local.mode, tables) {
                study::refuse_before_loading(local, benchmark)?;
            }
            if let Some(init) = tables {
                let status = initialize(local, init)?;
                if status != 0 {
                    return Ok(status);
                }
            }
            run_mode(local)
        }),
        None => run_mode(config),
    }
}

/// Refuses an output that is one of the mode's inputs (scripts, result
/// files) or another output, before anything starts
/// ([`crate::report::overlap`]).
fn check_overlap(mode: &Mode) -> Result<(), String> {
    use crate::config::ScriptSpec;
    use crate::report::overlap::{check, Named};
    fn named<'a>(what: &'a str, path: &'a Option<std::path::PathBuf>) -> Option<Named<'a>> {
        path.as_deref().map(|path| Named { what, path })
    }
    let (outputs, inputs): (Vec<Named<'_>>, Vec<Named<'_>>) = match mode {
        Mode::Run(b) => (
            [named("--json", &b.json), named("--html", &b.html)]
                .into_iter()
                .flatten()
                .collect(),
            b.scripts
                .iter()
                .filter_map(|s| match s {
                    ScriptSpec::File { path, .. } => Some(Named {
                        what: "-f script",
                        path,
                    }),
                    ScriptSpec::Builtin { .. } => None,
                })
                .collect(),
        ),
        Mode::Render(r) => (
            vec![Named {
                what: "--html",
                path: &r.html,
            }],
            vec![Named {
                what: "--render input",
                path: &r.result,
            }],
        ),
        Mode::Compare(c) => (
            [named("--json", &c.json), named("--html", &c.html)]
                .into_iter()
                .flatten()
                .collect(),
            [&c.baseline, &c.candidate]
                .into_iter()
                .map(|p| Named {
                    what: "--compare input",
                    path: compare::split_target(p).0,
                })
                .collect(),
        ),
        Mode::Merge(m) => (
            [named("--json", &m.json), named("--html", &m.html)]
                .into_iter()
                .flatten()
                .collect(),
            m.results
                .iter()
                .map(|path| Named {
                    what: "--merge input",
                    path,
                })
                .collect(),
        ),
        _ => return Ok(()),
    };
    check(&outputs, &inputs)
}

fn run_mode(config: &Config) -> Result<i32, RunError> {
    if !matches!(config.mode, Mode::Run(_)) {
        // The benchmark shows them as it loads its scripts.
        for note in &config.seeds {
            if let Ok(value) = note.seed.resolve() {
                crate::program::announce_seed(value);
            }
        }
    }
    match &config.mode {
        Mode::Help => Ok(print_stdout(&help::usage())),
        Mode::Version => Ok(print_stdout(&format!("{}\n", help::version()))),
        Mode::ListBuiltins => Ok(print_stderr(&crate::script::list_builtins())),
        Mode::ShowScript(name) => Ok(show_script(name)),
        Mode::Init(init) => initialize(config, init),
        Mode::Run(benchmark) => run_benchmark(config, benchmark),
        Mode::Render(r) => render::run(r),
        Mode::Compare(compare) => Ok(compare::run(compare)),
        Mode::Merge(merge) => Ok(merge::run(merge)),
    }
}

/// Prints to standard output; a closed pipe (`pgbolt --help | head`) is
/// not an error worth reporting.
fn print_stdout(text: &str) -> i32 {
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    0
}

/// pgbench writes builtin listings to standard error and exits 0.
fn print_stderr(text: &str) -> i32 {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
    0
}

/// `--show-script=NAME`: the builtin's text, or pgbench's error for an
/// unknown or ambiguous name (exit status 1).
fn show_script(name: &str) -> i32 {
    match crate::script::show_builtin(name) {
        Ok(text) => print_stderr(&text),
        Err(err) => {
            crate::program::ewriteln!("{PROGRAM}: error: {err}");
            1
        }
    }
}

/// `-i`: pgbench's initialization. Its errors are printed the way pgbench
/// prints them, with exit status 1.
fn initialize(config: &Config, init: &Init) -> Result<i32, RunError> {
    refuse_run_only_drivers(config)?;
    let conn = match connection::resolve(&config.connection) {
        Ok(conn) => conn,
        Err(err) => {
            crate::program::ewriteln!("{PROGRAM}: error: {err}");
            crate::program::ewriteln!(
                "{PROGRAM}: error: could not create connection for initialization"
            );
            return Ok(1);
        }
    };
    let options = InitOptions {
        scale: init.scale,
        steps: Some(init.steps.iter().copied().collect::<InitSteps>()),
        fillfactor: init.fillfactor,
        no_vacuum: false,
        foreign_keys: false,
        tablespace: init.tablespace.clone(),
        index_tablespace: init.index_tablespace.clone(),
        partition_method: init.partition_method,
        partitions: init.partitions,
        unlogged_tables: init.unlogged_tables,
        quiet: init.quiet,
        jobs: init.jobs.and_then(|n| NonZeroUsize::new(n as usize)),
    };
    let _interrupt = interrupt::watch(config.temp_instance.is_some())
        .map_err(|e| RunError::Engine(e.to_string()))?;
    let mut stderr = std::io::stderr().lock();
    match crate::init::run(&options, &conn, &mut stderr) {
        Ok(()) => Ok(0),
        Err(err) => {
            let _ = stderr.write_all(err.report(PROGRAM.as_str()).as_bytes());
            Ok(1)
        }
    }
}

fn run_benchmark(config: &Config, benchmark: &Benchmark) -> Result<i32, RunError> {
    if config.busy_poll == BusyPoll::On && config.io == IoMethod::Uring {
        return Err(RunError::Unsupported("--busy-poll=on with --io=uring"));
    }
    if !benchmark.targets.is_empty() {
        return study::targets(config, benchmark);
    }
    match &benchmark.study {
        Some(sweep) => study::sweep(config, benchmark, sweep),
        None => run::benchmark(config, benchmark),
    }
}

/// Initialization has no io_uring driver and never spins.
fn refuse_run_only_drivers(config: &Config) -> Result<(), RunError> {
    if config.io == IoMethod::Uring {
        return Err(RunError::Unsupported("--io=uring with -i"));
    }
    if config.busy_poll == BusyPoll::On {
        return Err(RunError::Unsupported("--busy-poll=on with -i"));
    }
    Ok(())
}

/// Prints the lines of an error to standard error, each after the program
/// name.
pub fn print_error(err: &CliError) {
    for (level, text) in err.lines(PROGRAM.as_str()) {
        // The option parser's complaints name argv[0] as given, as glibc's
        // getopt_long does for pgbench.
        let name = match level {
            Level::Plain => PROGRAM.invocation(),
            _ => PROGRAM.as_str(),
        };
        ewriteln!("{name}: {}{text}", level.label());
    }
}

/// Runs pgbolt with the process arguments and returns the exit code.
pub fn main() -> i32 {
    PROGRAM.set_from_argv0(std::env::args_os().next().as_deref());
    let env = Environment::from_process();
    let config = match cli::parse_noting_seeds(std::env::args_os().skip(1), &env) {
        Ok(config) => config,
        Err(failure) => {
            for note in &failure.seeds {
                if let Ok(value) = note.seed.resolve() {
                    announce_seed(value);
                }
            }
            print_error(&failure.error);
            return 1;
        }
    };
    match run(config) {
        Ok(code) => code,
        Err(err) => {
            ewriteln!("{PROGRAM}: error: {err}");
            err.exit_code()
        }
    }
}
