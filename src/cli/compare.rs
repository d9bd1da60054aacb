//! `--compare`: reads two result files, compares them and prints the
//! comparison; no connection is made.
//!
//! Exit status: 0 when the comparison was made (whatever its verdict), 1
//! when it could not be (a file unreadable or not a result, different
//! scripts without `--allow-different-scripts`, the JSON or HTML not
//! written), and
//! [`REGRESSION_EXIT`] for a regression under `--fail-on-regression`.

use std::io::Write;
use std::path::Path;

use super::config::{Compare, CompareFormat};
use super::PROGRAM;
use crate::compare::{self, Verdict, REGRESSION_EXIT};
use crate::report::{self, RunResult};

/// Runs the comparison and returns the exit status.
pub fn run(c: &Compare) -> i32 {
    let (baseline, candidate) = match (read(&c.baseline), read(&c.candidate)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(message), _) | (_, Err(message)) => {
            crate::cli::ewriteln!("{PROGRAM}: error: {message}");
            return 1;
        }
    };
    let sources = [c.baseline.as_path(), c.candidate.as_path()].map(|p| p.to_string_lossy());
    let comparison = match compare::compare(
        &baseline,
        &candidate,
        [&sources[0], &sources[1]],
        &c.options,
    ) {
        Ok(comparison) => comparison,
        Err(err) => {
            crate::cli::ewriteln!("{PROGRAM}: error: {err}");
            return 1;
        }
    };
    let text = match c.format {
        CompareFormat::Text => compare::render_text(&comparison),
        CompareFormat::Markdown => compare::render_markdown(&comparison),
    };
    let json_to_stdout = c.json.as_deref() == Some(Path::new("-"));
    if json_to_stdout {
        crate::cli::write_stderr_bytes(text.as_bytes());
    } else {
        let _ = std::io::stdout().lock().write_all(text.as_bytes());
    }
    if let Some(path) = &c.json {
        let json = serde_json::to_string_pretty(&comparison).unwrap_or_default() + "\n";
        let written = if json_to_stdout {
            std::io::stdout().lock().write_all(json.as_bytes())
        } else {
            std::fs::write(path, json)
        };
        if let Err(e) = written {
            crate::cli::ewriteln!(
                "{PROGRAM}: error: could not write \"{}\": {}",
                path.display(),
                crate::oserror::os_message(&e)
            );
            return 1;
        }
    }
    if let Some(path) = &c.html {
        let page = report::render_comparison_html(
            &comparison,
            &baseline,
            &candidate,
            crate::report::html::now_us(),
        );
        let written = match page {
            Ok(page) => std::fs::write(path, page).map_err(|e| crate::oserror::os_message(&e)),
            Err(e) => Err(e.to_string()),
        };
        if let Err(message) = written {
            crate::cli::ewriteln!(
                "{PROGRAM}: error: could not write \"{}\": {message}",
                path.display()
            );
            return 1;
        }
    }
    if c.fail_on_regression && comparison.verdict == Verdict::Regressed {
        REGRESSION_EXIT
    } else {
        0
    }
}

/// Reads and checks one result file.
fn read(path: &Path) -> Result<RunResult, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "could not read result file \"{}\": {}",
            path.display(),
            crate::oserror::os_message(&e)
        )
    })?;
    let invalid = |e: &dyn std::fmt::Display| format!("result file \"{}\": {e}", path.display());
    let result = report::from_json(&text).map_err(|e| invalid(&e))?;
    result.latency.decode_histogram().map_err(|e| invalid(&e))?;
    Ok(result)
}
