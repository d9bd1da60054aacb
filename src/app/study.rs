//! The studies: a sweep (`--sweep`) and the same benchmark against several
//! targets (`--target`, `--temp-pgbouncer`). Their result files are
//! checked before the first step connects; the study runs its steps; then
//! its text report is printed and its JSON and page written, as a run's
//! are.

use serde::Serialize;

use super::RunError;
use crate::config::study::Study;
use crate::config::{Benchmark, Config};
use crate::report::files::{Outputs, Stdout};

/// `--sweep`: runs the steps and returns the exit status.
pub fn sweep(config: &Config, bench: &Benchmark, study: &Study) -> Result<i32, RunError> {
    let outputs = check(bench)?;
    let (result, status) =
        crate::study::run(config, bench, study).map_err(|e| RunError::Engine(e.to_string()))?;
    let text = crate::report::text::sweep::render(&result, bench);
    Ok(report(&text, &result, status, outputs, || {
        crate::report::html::render_sweep_html(&result, crate::wallclock::now_us())
    }))
}

/// `--target`: runs every step once per target and returns the exit
/// status.
pub fn targets(config: &Config, bench: &Benchmark) -> Result<i32, RunError> {
    let outputs = check(bench)?;
    let (result, status) =
        crate::targets::run(config, bench).map_err(|e| RunError::Engine(e.to_string()))?;
    let text = crate::report::text::targets::render(&result, bench);
    Ok(report(&text, &result, status, outputs, || {
        crate::report::html::render_targets_html(&result, crate::wallclock::now_us())
    }))
}

/// What a benchmark would refuse at its first step that a throwaway
/// instance can tell before its tables are loaded: the connection limit
/// against the largest step (or `-c`), and each target's checks (a
/// pooler's `max_client_conn`, `-M prepared` through transaction
/// pooling).
pub fn refuse_before_loading(config: &Config, bench: &Benchmark) -> Result<(), RunError> {
    let refused = |e: &dyn std::fmt::Display| RunError::Engine(e.to_string());
    if !bench.targets.is_empty() {
        return crate::targets::refusals(config, bench).map_err(|e| refused(&e));
    }
    if !config.preflight {
        return Ok(());
    }
    let (clients, swept) = match bench.study.as_ref().map(Study::largest_clients) {
        Some(Some(largest)) => (largest, true),
        _ => (bench.pool_size.unwrap_or(bench.clients), false),
    };
    crate::engine::preflight_only(config, clients, swept).map_err(|e| refused(&e))
}

fn check(bench: &Benchmark) -> Result<Outputs, RunError> {
    Outputs::check(bench.json.as_deref(), bench.html.as_deref())
        .map_err(|e| RunError::Engine(e.to_string()))
}

/// Prints `text`, writes `result`'s files; a study whose steps all went
/// well but whose results could not all be written ends with status 2.
fn report<T: Serialize, E: std::fmt::Display>(
    text: &str,
    result: &T,
    status: i32,
    outputs: Outputs,
    page: impl FnOnce() -> Result<String, E>,
) -> i32 {
    let mut stdout = Stdout::default();
    let written = outputs.write(
        text,
        &mut stdout,
        || {
            serde_json::to_string_pretty(result)
                .map(|json| json + "\n")
                .map_err(|e| e.to_string())
        },
        || page().map_err(|e| e.to_string()),
    );
    if stdout.closed {
        crate::program::die_of_sigpipe();
    }
    if status == 0 && !written {
        2
    } else {
        status
    }
}
