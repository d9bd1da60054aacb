//! The benchmark, as pgbench runs it: the result files checked before
//! anything connects, the run, then pgbench's report (and pgbolt's lines
//! after it unless `--pgbench-output`), the result files written, and
//! pgbench's exit status.
//!
//! Standard output is written once the logs are complete, and a reader
//! that went away ends the process by SIGPIPE only after everything else
//! is done, as pgbench ends.

use super::RunError;
use crate::config::{Benchmark, Config};
use crate::engine::{self, Finished, Ran};
use crate::report::files::{Outputs, Stdout};

/// Runs the benchmark of `bench` and returns the exit status.
pub fn benchmark(config: &Config, bench: &Benchmark) -> Result<i32, RunError> {
    let outputs = Outputs::check(bench.json.as_deref(), bench.html.as_deref())
        .map_err(|e| RunError::Engine(e.to_string()))?;
    match engine::run(config, bench).map_err(|e| RunError::Engine(e.to_string()))? {
        Ran::Nothing(status) => Ok(status),
        Ran::Finished(finished) => Ok(report(bench, &finished, outputs)),
    }
}

/// Prints the report, writes the result files and gives the status.
fn report(bench: &Benchmark, finished: &Finished, outputs: Outputs) -> i32 {
    let result = &finished.result;
    let mut text = crate::report::text::run::render_text(result, bench.pgbench_output);
    if !bench.pgbench_output {
        text.push_str(&crate::report::text::diagnosis::render_text(result));
    }
    let mut stdout = Stdout::default();
    let written = outputs.write(
        &text,
        &mut stdout,
        || crate::report::to_json(result).map_err(|e| e.to_string()),
        || {
            crate::report::render_html(result, crate::wallclock::now_us())
                .map_err(|e| e.to_string())
        },
    );
    finished.say_how_it_ended();
    // Complete results some of which could not be written give 2 too.
    let status = finished.status(!written);
    if stdout.closed {
        crate::program::die_of_sigpipe();
    }
    status
}
