//! The files of a study (a sweep, or targets compared): created before
//! the first step, so that a bad path fails before anything runs; the
//! text report and the JSON written at the end; and a result of a given
//! `kind` read back from its JSON or from a page that embeds it.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use crate::config::Benchmark;
use crate::engine::EngineError;

/// Creates the result file at `path`.
pub(crate) fn create(path: &Path) -> Result<File, EngineError> {
    File::create(path).map_err(|e| {
        EngineError::Report(format!(
            "could not open file \"{}\": {}",
            path.display(),
            crate::oserror::os_message(&e)
        ))
    })
}

/// The `--json` file, unless the JSON goes to standard output (`-`).
pub(crate) fn open_json(bench: &Benchmark) -> Result<Option<File>, EngineError> {
    match &bench.json {
        Some(path) if !json_to_stdout(bench) => create(path).map(Some),
        _ => Ok(None),
    }
}

fn json_to_stdout(bench: &Benchmark) -> bool {
    bench.json.as_deref() == Some(Path::new("-"))
}

/// Prints `text` (to standard error when the JSON owns standard output)
/// and writes `result` as the `--json` file (or to standard output); says
/// so on standard error when the JSON cannot be written, naming it
/// `what`. False when a write failed.
pub(crate) fn write_reports<T: serde::Serialize>(
    text: &str,
    result: &T,
    what: &str,
    bench: &Benchmark,
    json_file: Option<File>,
) -> bool {
    let mut ok = true;
    if json_to_stdout(bench) {
        crate::program::write_stderr_bytes(text.as_bytes());
    } else {
        ok &= std::io::stdout().lock().write_all(text.as_bytes()).is_ok();
    }
    if bench.json.is_none() {
        return ok;
    }
    let written = serde_json::to_string_pretty(result)
        .map_err(std::io::Error::other)
        .and_then(|json| match json_file {
            Some(mut file) => file
                .write_all(json.as_bytes())
                .and_then(|()| file.write_all(b"\n")),
            None => std::io::stdout()
                .lock()
                .write_all(format!("{json}\n").as_bytes()),
        });
    if let Err(e) = written {
        crate::program::ewriteln!(
            "{}: error: could not write {what}: {}",
            crate::program::PROGRAM,
            crate::oserror::os_message(&e)
        );
        ok = false;
    }
    ok
}

/// The result of `kind` in `text` (its JSON, or a page that embeds it);
/// `None` when `text` holds another kind; an error naming `what` when it
/// is of that kind but does not read.
pub(crate) fn read_kind<T: serde::de::DeserializeOwned>(
    text: &str,
    kind: &str,
    what: &str,
) -> Option<Result<T, String>> {
    let json = match crate::report::html::embedded_json(text) {
        Some(json) if text.trim_start().starts_with('<') => json,
        _ => text,
    };
    #[derive(serde::Deserialize)]
    struct Kind {
        kind: Option<String>,
    }
    let found: Kind = serde_json::from_str(json).ok()?;
    (found.kind.as_deref() == Some(kind))
        .then(|| serde_json::from_str(json).map_err(|e| format!("invalid {what}: {e}")))
}
