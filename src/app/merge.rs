//! `--merge`: the result files of a fleet's generators read, added exactly
//! into one run's result (`crate::fleet::merge`) with the fleet's
//! diagnosis (`crate::fleet::diagnosis`), and reported as a run is, with
//! the generators table after the report. Nothing connects.

use crate::config::Merge;
use crate::fleet::merge::{merge_results, MergeError};
use crate::model::run::RunResult;
use crate::program::PROGRAM;
use crate::report::files::{Outputs, Stdout};

/// Runs `--merge` and returns the exit status: 0, or 1 when the results
/// cannot be merged or an output cannot be written.
pub fn run(m: &Merge) -> i32 {
    match merge_files(m) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(message) => {
            crate::program::ewriteln!("{PROGRAM}: error: {message}");
            1
        }
    }
}

/// Reads every generator's result, in the order given.
fn read_all(m: &Merge) -> Result<Vec<(String, String)>, String> {
    let mut texts = Vec::with_capacity(m.results.len());
    for path in &m.results {
        let shown = path.display().to_string();
        let text = crate::report::bounded::read_text(path, m.max_input_size).map_err(|e| {
            MergeError::Read {
                path: shown.clone(),
                message: e.to_string(),
            }
            .to_string()
        })?;
        texts.push((shown, text));
    }
    Ok(texts)
}

/// The merge of the generators' results, each a file's name and its text:
/// the report (the run's, then the generators' table) and the merged
/// result. Public for the fuzzing of the readers.
pub fn merge_texts(
    texts: &[(String, String)],
    allow_partial: bool,
) -> Result<(String, RunResult), String> {
    let mut results = Vec::with_capacity(texts.len());
    for (shown, text) in texts {
        let result = crate::report::read_result(text).map_err(|e| {
            MergeError::Read {
                path: shown.clone(),
                message: e.to_string(),
            }
            .to_string()
        })?;
        results.push((shown.clone(), result));
    }
    let (merged, missing) = merge_results(&results, allow_partial).map_err(|e| e.to_string())?;
    let count = results
        .first()
        .and_then(|(_, r)| r.generator.as_ref())
        .map_or(0, |g| g.count);
    let mut text = crate::report::text::run::render_text(&merged, false);
    text.push_str(&crate::report::text::diagnosis::render_text(&merged));
    text.push_str(&crate::report::text::generators::render(
        &merged, &missing, count,
    ));
    Ok((text, merged))
}

/// Merges and reports; false when an output could not be written (and
/// that was said).
fn merge_files(m: &Merge) -> Result<bool, String> {
    let outputs =
        Outputs::check(m.json.as_deref(), m.html.as_deref()).map_err(|e| e.to_string())?;
    let (text, merged) = merge_texts(&read_all(m)?, m.allow_partial)?;
    let mut stdout = Stdout::default();
    Ok(outputs.write(
        &text,
        &mut stdout,
        || {
            crate::report::to_json(&merged)
                .map(|json| json + "\n")
                .map_err(|e| e.to_string())
        },
        || {
            crate::report::render_html(&merged, crate::wallclock::now_us())
                .map_err(|e| e.to_string())
        },
    ))
}
