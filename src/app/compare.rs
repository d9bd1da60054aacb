//! `--compare`: reads two result files, compares them and prints the
//! comparison; no connection is made.
//!
//! Each file is a run's result or a sweep's (its JSON, or a page that
//! embeds it), or one target's sweep in a comparison of targets, named
//! `FILE#TARGET` (`targets.json#pgbouncer`). Two runs give a comparison, two sweeps a comparison step by
//! step, and a run with a sweep a comparison of the run with the sweep's
//! matching step ([`crate::compare::sweep`]).
//!
//! Exit status: 0 when the comparison was made (whatever its verdict), 1
//! when it could not be (a file unreadable or not a result, different
//! scripts without `--allow-different-scripts`, sweeps of different
//! options, a run that matches no step, the JSON or HTML not written), and
//! [`REGRESSION_EXIT`] for a regression under `--fail-on-regression`.

use std::path::Path;

use crate::compare::sweep::{self, StepMatch};
use crate::compare::{self, CompareError, Verdict};
use crate::config::REGRESSION_EXIT;
use crate::config::{Compare, CompareFormat};
use crate::model::run::RunResult;
use crate::model::sweep::SweepResult;
use crate::program::PROGRAM;
use crate::report;
use crate::report::files::{Outputs, Stdout};
use crate::wallclock::now_us;

/// A result file as read.
enum Loaded {
    Run(Box<RunResult>),
    Sweep(Box<SweepResult>),
}

/// A comparison made, rendered.
struct Made {
    /// The report, as text or Markdown.
    report: String,
    json: String,
    /// The page, when `--html` asked for one.
    html: Option<Result<String, String>>,
    verdict: Verdict,
}

/// Runs the comparison and returns the exit status.
pub fn run(c: &Compare) -> i32 {
    let outputs = match Outputs::check(c.json.as_deref(), c.html.as_deref()) {
        Ok(outputs) => outputs,
        Err(e) => {
            crate::program::ewriteln!("{PROGRAM}: error: {e}");
            return 1;
        }
    };
    let limit = c.max_input_size;
    let (baseline, candidate) = match (read(&c.baseline, limit), read(&c.candidate, limit)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(message), _) | (_, Err(message)) => {
            crate::program::ewriteln!("{PROGRAM}: error: {message}");
            return 1;
        }
    };
    let sources = [c.baseline.as_path(), c.candidate.as_path()].map(|p| p.to_string_lossy());
    let made = match make(c, &baseline, &candidate, [&sources[0], &sources[1]]) {
        Ok(made) => made,
        Err(err) => {
            crate::program::ewriteln!("{PROGRAM}: error: {err}");
            return 1;
        }
    };
    let mut stdout = Stdout::default();
    let html = made.html;
    if !outputs.write(
        &made.report,
        &mut stdout,
        || Ok(made.json),
        || html.unwrap_or_else(|| Err("no page was made".to_owned())),
    ) {
        return 1;
    }
    if c.fail_on_regression && made.verdict == Verdict::Regressed {
        REGRESSION_EXIT
    } else {
        0
    }
}

impl Made {
    /// `comparison` rendered by `render` (text, then Markdown) as
    /// `--compare-format` asks, as JSON, and by `page` when `--html` asks.
    fn new<T: serde::Serialize>(
        c: &Compare,
        comparison: &T,
        verdict: Verdict,
        render: [fn(&T) -> String; 2],
        page: impl FnOnce() -> Result<String, crate::model::run::ReportError>,
    ) -> Made {
        let report = match c.format {
            CompareFormat::Text => render[0](comparison),
            CompareFormat::Markdown => render[1](comparison),
        };
        Made {
            report,
            json: serde_json::to_string_pretty(comparison).unwrap_or_default() + "\n",
            html: c.html.as_ref().map(|_| page().map_err(|e| e.to_string())),
            verdict,
        }
    }
}

/// The comparison of the two files, whatever their kinds.
fn make(c: &Compare, a: &Loaded, b: &Loaded, sources: [&str; 2]) -> Result<Made, CompareError> {
    match (a, b) {
        (Loaded::Sweep(a), Loaded::Sweep(b)) => {
            let comparison = sweep::compare_sweeps(a, b, sources, &c.options)?;
            Ok(Made::new(
                c,
                &comparison,
                comparison.verdict,
                [
                    report::text::sweep_comparison::render_text,
                    report::text::sweep_comparison::render_markdown,
                ],
                || report::html::render_sweep_comparison_html(&comparison, a, b, now_us()),
            ))
        }
        (Loaded::Run(a), Loaded::Run(b)) => runs(c, &[a], &[b], sources),
        (Loaded::Sweep(s), Loaded::Run(r)) => {
            let step = sweep::find_step(s, r)?;
            let source = step_source(sources[0], &step, &s.sweep.dimension);
            runs(c, &step.runs, &[r], [&source, sources[1]])
        }
        (Loaded::Run(r), Loaded::Sweep(s)) => {
            let step = sweep::find_step(s, r)?;
            let source = step_source(sources[1], &step, &s.sweep.dimension);
            runs(c, &[r], &step.runs, [sources[0], &source])
        }
    }
}

/// A comparison of runs: one a side, or a sweep's step and a run. The
/// page overlays the first run of each side.
fn runs(
    c: &Compare,
    a: &[&RunResult],
    b: &[&RunResult],
    sources: [&str; 2],
) -> Result<Made, CompareError> {
    let comparison = compare::compare_runs(a, b, sources, &c.options)?;
    Ok(Made::new(
        c,
        &comparison,
        comparison.verdict,
        [
            report::text::comparison::render_text,
            report::text::comparison::render_markdown,
        ],
        || report::render_comparison_html(&comparison, a[0], b[0], now_us()),
    ))
}

/// The source of a sweep's step: `sweep.json, step 4 clients`.
fn step_source(file: &str, step: &StepMatch, dimension: &str) -> String {
    format!("{file}, step {}", step.key.describe(dimension))
}

/// Reads and checks one result file: a run's or a sweep's, or one
/// target's sweep of a comparison of targets, named `FILE#TARGET`.
fn read(path: &Path, limit: u64) -> Result<Loaded, String> {
    let (path, target) = split_target(path);
    let text = crate::report::bounded::read_text(path, limit)
        .map_err(|e| format!("could not read result file \"{}\": {e}", path.display()))?;
    load(path, target, &text)
}

/// The comparison `c` asks for of two result files' texts (the files
/// named by `c`, read already): its report, its JSON and its page when
/// `c.html` asks for one. Public for the fuzzing of the readers.
pub fn compare_texts(c: &Compare, texts: [&str; 2]) -> Result<[String; 3], String> {
    let [a, b] = [(&c.baseline, texts[0]), (&c.candidate, texts[1])].map(|(path, text)| {
        let (path, target) = split_target(path);
        load(path, target, text)
    });
    let sources = [c.baseline.as_path(), c.candidate.as_path()].map(|p| p.to_string_lossy());
    let made = make(c, &a?, &b?, [&sources[0], &sources[1]]).map_err(|e| e.to_string())?;
    Ok([
        made.report,
        made.json,
        made.html.unwrap_or(Ok(String::new()))?,
    ])
}

/// A result file's `text`: a run's or a sweep's, or `target`'s sweep of
/// a comparison of targets.
fn load(path: &Path, target: Option<&str>, text: &str) -> Result<Loaded, String> {
    if let Some(targets) = crate::report::files::read_targets(text) {
        let targets = targets.map_err(|e| format!("result file \"{}\": {e}", path.display()))?;
        let names: Vec<String> = targets.targets.iter().map(|t| t.name.clone()).collect();
        let Some(name) = target else {
            return Err(format!(
                "result file \"{}\" holds the steps of several targets ({}): name one as {}#{}",
                path.display(),
                names.join(", "),
                path.display(),
                names.first().map_or("NAME", String::as_str)
            ));
        };
        let Some(chosen) = targets.targets.into_iter().find(|t| t.name == name) else {
            return Err(format!(
                "result file \"{}\" has no target \"{name}\" (its targets: {})",
                path.display(),
                names.join(", ")
            ));
        };
        return checked_sweep(path, chosen.sweep).map(|s| Loaded::Sweep(Box::new(s)));
    }
    if let Some(name) = target {
        return Err(format!(
            "result file \"{}\" is not a comparison of targets, so it has no target \"{name}\"",
            path.display()
        ));
    }
    let invalid = |e: &dyn std::fmt::Display| format!("result file \"{}\": {e}", path.display());
    if let Some(sweep) = crate::report::files::read_sweep(text) {
        let sweep = sweep.map_err(|e| invalid(&e))?;
        return checked_sweep(path, sweep).map(|s| Loaded::Sweep(Box::new(s)));
    }
    let result = report::read_result(text).map_err(|e| invalid(&e))?;
    result.latency.decode_histogram().map_err(|e| invalid(&e))?;
    Ok(Loaded::Run(Box::new(result)))
}

/// `sweep`, once every step's histogram decodes.
fn checked_sweep(path: &Path, sweep: SweepResult) -> Result<SweepResult, String> {
    for step in &sweep.steps {
        step.result
            .latency
            .decode_histogram()
            .map_err(|e| format!("result file \"{}\": {e}", path.display()))?;
    }
    Ok(sweep)
}

/// `FILE#TARGET` as the file and the target's name; a path that exists
/// as written, or has no `#`, is a file.
pub(super) fn split_target(path: &Path) -> (&Path, Option<&str>) {
    if path.exists() {
        return (path, None);
    }
    match path.to_str().and_then(|p| p.rsplit_once('#')) {
        Some((file, name)) if !file.is_empty() && !name.is_empty() => (Path::new(file), Some(name)),
        _ => (path, None),
    }
}
