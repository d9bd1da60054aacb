//! What each mode does with a validated [`Config`].
//!
//! Each mode has one function here; features that are not built yet are
//! refused by name ("... is not supported yet") rather than ignored, so a
//! command line never silently means less than it says.

use std::fmt;
use std::io::Write;

use super::config::{Benchmark, Config, Init, IoMethod, Mode};
use super::help;

/// Why a mode could not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunError {
    /// The named feature is not implemented yet.
    Unsupported(&'static str),
    /// The benchmark could not start.
    Engine(String),
}

impl RunError {
    /// The exit status pgbench uses for this kind of failure.
    pub fn exit_code(&self) -> i32 {
        match self {
            RunError::Unsupported(_) | RunError::Engine(_) => 1,
        }
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Unsupported(feature) => write!(f, "{feature} is not supported yet"),
            RunError::Engine(text) => f.write_str(text),
        }
    }
}

impl std::error::Error for RunError {}

/// Runs the mode of `config` and returns the exit status.
pub fn run(config: Config) -> Result<i32, RunError> {
    match &config.mode {
        Mode::Help => Ok(print_stdout(&help::usage())),
        Mode::Version => Ok(print_stdout(&format!("{}\n", help::version()))),
        Mode::ListBuiltins => Err(RunError::Unsupported("-b list")),
        Mode::ShowScript(_) => Err(RunError::Unsupported("--show-script")),
        Mode::Init(init) => initialize(&config, init),
        Mode::Run(benchmark) => run_benchmark(&config, benchmark),
    }
}

/// Prints to standard output; a closed pipe (`pgbolt --help | head`) is
/// not an error worth reporting.
fn print_stdout(text: &str) -> i32 {
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    0
}

fn initialize(config: &Config, _init: &Init) -> Result<i32, RunError> {
    unsupported_common(config)?;
    Err(RunError::Unsupported("initialization (-i)"))
}

fn run_benchmark(config: &Config, benchmark: &Benchmark) -> Result<i32, RunError> {
    if config.temp_instance.is_some() {
        return Err(RunError::Unsupported("--temp-instance"));
    }
    if config.io == IoMethod::Uring {
        return Err(RunError::Unsupported("--io=uring"));
    }
    crate::engine::run(config, benchmark).map_err(|e| RunError::Engine(e.to_string()))
}

/// Options shared by both modes that have no implementation yet.
fn unsupported_common(config: &Config) -> Result<(), RunError> {
    if config.temp_instance.is_some() {
        return Err(RunError::Unsupported("--temp-instance"));
    }
    if !config.preflight {
        return Err(RunError::Unsupported("--no-preflight"));
    }
    if config.io != IoMethod::Auto {
        return Err(RunError::Unsupported("--io"));
    }
    Ok(())
}
