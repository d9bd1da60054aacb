//! `--render`: a saved result read and drawn as its page; nothing
//! connects.
//!
//! The result is a run's (a single run or a fleet's merged result), a
//! sweep's or a comparison of targets, as its JSON or as a page that
//! embeds it, or a comparison of two runs or two sweeps as its page,
//! which embeds both results (its JSON holds the figures only, not the
//! results the page draws). A file that is none of these is said plainly
//! for what it is (a comparison's JSON, some other JSON, not a result at
//! all) instead of with the first field a reader missed.
//! A result of a known kind whose fields do not read or do not pass
//! [`crate::report::check`] is an error naming the file and the field.
//! Every failure ends with exit status 1.

use super::RunError;
use crate::config::Render;
use crate::report::files::{
    read_comparison_page, read_sweep, read_targets, ComparisonPage, Outputs, Stdout,
};

/// Renders the saved result of `render` and returns the exit status. The
/// file is read within `--max-input-size` ([`crate::report::bounded`]).
pub fn run(render: &Render) -> Result<i32, RunError> {
    let outputs =
        Outputs::check(None, Some(&render.html)).map_err(|e| RunError::Engine(e.to_string()))?;
    let source = render.result.display().to_string();
    let bytes = crate::report::bounded::read(&render.result, render.max_input_size)
        .map_err(|e| RunError::Engine(format!("could not read result file \"{source}\": {e}")))?;
    let html = render_page(&String::from_utf8_lossy(&bytes), &source)?;
    let written = outputs.write(
        "",
        &mut Stdout::default(),
        || Ok(String::new()),
        || Ok::<_, String>(html),
    );
    Ok(if written { 0 } else { 1 })
}

/// The page `--render` makes of a result file's `text` (`source` names the
/// file in errors). Public for the fuzzing of the readers.
pub fn render_page(text: &str, source: &str) -> Result<String, RunError> {
    let fail =
        |e: &dyn std::fmt::Display| RunError::Engine(format!("result file \"{source}\": {e}"));
    let now = crate::wallclock::now_us();
    Ok(if let Some(targets) = read_targets(text) {
        let targets = targets.map_err(|e| fail(&e))?;
        crate::report::html::render_targets_html(&targets, now).map_err(|e| fail(&e))?
    } else if let Some(sweep) = read_sweep(text) {
        let sweep = sweep.map_err(|e| fail(&e))?;
        crate::report::html::render_sweep_html(&sweep, now).map_err(|e| fail(&e))?
    } else if let Some(page) = read_comparison_page(text) {
        match page.map_err(|e| fail(&e))? {
            ComparisonPage::Runs(runs) => {
                let (c, a, b) = *runs;
                crate::report::render_comparison_html(&c, &a, &b, now)
            }
            ComparisonPage::Sweeps(sweeps) => {
                let (c, a, b) = *sweeps;
                crate::report::html::render_sweep_comparison_html(&c, &a, &b, now)
            }
        }
        .map_err(|e| fail(&e))?
    } else if let Some(what) = not_a_run(text) {
        return Err(RunError::Engine(format!("\"{source}\" {what}")));
    } else {
        let result = crate::report::read_result(text).map_err(|e| fail(&e))?;
        crate::report::render_html(&result, now).map_err(|e| fail(&e))?
    })
}

/// What `--render` takes, after a file that is none of it.
const KINDS: &str =
    "; --render draws the result of a run, a merged fleet, a sweep or targets compared, or a comparison's page";

/// What `text` is when it is not a run's result (nor a sweep's or
/// targets', asked before): `None` when it looks like one, whether or not
/// it then reads.
fn not_a_run(text: &str) -> Option<String> {
    let page = text.trim_start().starts_with('<');
    let json = match crate::report::html::embedded_json(text) {
        Some(json) if page => json,
        _ if page => return Some(format!("is a page that embeds no pgbolt result{KINDS}")),
        _ => text,
    };
    let Ok(value) = serde_json::from_str::<serde_json::Value>(json) else {
        return Some(format!(
            "is neither JSON nor a page written by pgbolt{KINDS}"
        ));
    };
    let inner = value.get("comparison").unwrap_or(&value);
    let kind = inner.get("kind").and_then(|k| k.as_str());
    let file = if page { "page" } else { "JSON" };
    match kind {
        Some(kind @ ("comparison" | "sweep_comparison")) => Some(format!(
            "is the {file} of a comparison of two {} (pgbolt --compare): it holds the figures, not the two results its page draws; render the comparison's page (--render PAGE.html), or make one from the two results: pgbolt --compare BASELINE CANDIDATE --html=FILE",
            if kind == "comparison" { "runs" } else { "sweeps" }
        )),
        Some(other) => Some(format!(
            "is a result of kind \"{}\", which this pgbolt does not know{KINDS}",
            other.escape_debug()
        )),
        None if value.get("tool").and_then(|t| t.as_str()) != Some("pgbolt") => {
            let what = if page { "a page" } else { "JSON" };
            Some(format!(
                "is {what} that pgbolt did not write (it has no \"tool\": \"pgbolt\"){KINDS}"
            ))
        }
        None => None,
    }
}
