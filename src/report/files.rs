//! The one reader and writer of result files: the `--json` and `--html`
//! files of every mode (a run, a sweep, targets compared, a merge, a
//! comparison, a page rendered offline), the report that goes with them
//! on standard output, and a result read back from its JSON or from a
//! page that embeds it.
//!
//! # Checked before, written after
//! A path that cannot be written (a missing directory, a directory, no
//! permission) is found out before the first connection, as a bad
//! `--log-prefix` is, instead of after a run that may have lasted hours
//! ([`Outputs::check`]). The check leaves nothing behind: an existing
//! file is opened for writing without being emptied, and the temporary
//! file the results will go to is created beside it and removed at once.
//! A regular file (or a new one) is then replaced whole when the results
//! are written, or not at all ([`super::atomic`]), so a mode that ends
//! without results (a failed connection, `--exit-on-abort`, a signal, a
//! full disk) leaves the path as it found it. A FIFO or a character
//! device (`/dev/stdout`, a terminal, `/dev/null`) is written as it is:
//! there is no file to replace. Anything else (a directory, a block
//! device, a socket) is refused.
//!
//! # Standard output
//! `--json=-` sends the JSON to standard output, and the text that would
//! have gone there to standard error. A reader of standard output that
//! went away (`pgbolt ... | head -1`) is remembered ([`Stdout::closed`])
//! so the mode can end as pgbench ends, by SIGPIPE, once everything else
//! is done; any other failure is said once.

use std::fs::{File, OpenOptions};

use super::atomic;
use std::io::{self, ErrorKind, Write};
use std::path::{Path, PathBuf};

use crate::compare::sweep::SweepComparison;
use crate::compare::Comparison;
use crate::model::run::RunResult;
use crate::model::sweep::SweepResult;
use crate::oserror::os_message;
use crate::program::log;

/// A result file whose path was found writable.
pub struct ResultFile {
    path: PathBuf,
    /// A path that is not a regular file (a FIFO, a terminal) stays open
    /// from the check on: a reader of a FIFO sees one writer, and one end
    /// of file, as it did before the check existed.
    open: Option<File>,
    /// The path is standard output itself (`/dev/stdout` or `/dev/fd/1`,
    /// whatever it was redirected to): the results follow the report
    /// there instead of overwriting it from the start of the file.
    is_stdout: bool,
}

/// Whether `meta` is the file standard output is open on.
fn is_standard_output(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat fills the buffer it is given for descriptor 1.
    if unsafe { libc::fstat(1, st.as_mut_ptr()) } != 0 {
        return false;
    }
    // SAFETY: fstat succeeded, so the buffer is initialized.
    let st = unsafe { st.assume_init() };
    st.st_dev == meta.dev() && st.st_ino == meta.ino()
}

/// What a result file holds, as its errors name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Json,
    Html,
}

/// The result file could not be opened.
#[derive(Debug)]
pub struct OpenError {
    kind: Kind,
    path: PathBuf,
    source: io::Error,
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "could not open {} file \"{}\": {}",
            match self.kind {
                Kind::Json => "JSON",
                Kind::Html => "HTML",
            },
            self.path.display(),
            os_message(&self.source)
        )
    }
}

impl std::error::Error for OpenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl ResultFile {
    /// Checks that `path` can be written, changing nothing there.
    pub fn open(path: &Path, kind: Kind) -> Result<Self, OpenError> {
        let fail = |source| OpenError {
            kind,
            path: path.to_owned(),
            source,
        };
        let mut open = None;
        let mut is_stdout = false;
        match std::fs::metadata(path) {
            Ok(meta) => {
                let file = OpenOptions::new().write(true).open(path).map_err(fail)?;
                is_stdout = is_standard_output(&meta);
                if meta.is_file() && !is_stdout {
                    atomic::check(&atomic::destination(path)).map_err(|e| {
                        fail(io::Error::new(
                            e.kind(),
                            format!(
                                "no file can be made beside it to replace it: {}",
                                os_message(&e)
                            ),
                        ))
                    })?;
                } else if !is_stdout {
                    use std::os::unix::fs::FileTypeExt;
                    let kind = meta.file_type();
                    if !(kind.is_fifo() || kind.is_char_device()) {
                        return Err(fail(io::Error::other(
                            "not a regular file, a FIFO or a character device",
                        )));
                    }
                    open = Some(file);
                }
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {
                atomic::check(&atomic::destination(path)).map_err(fail)?;
            }
            Err(e) => return Err(fail(e)),
        }
        Ok(ResultFile {
            path: path.to_owned(),
            open,
            is_stdout,
        })
    }

    /// The path given on the command line.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the file with `text`, whole or not at all ([`atomic`]); a
    /// device or pipe such as `/dev/stdout` is written as it is.
    pub fn write(self, text: &[u8]) -> io::Result<()> {
        if self.is_stdout {
            let mut out = io::stdout().lock();
            out.write_all(text)?;
            return out.flush();
        }
        match self.open {
            Some(mut file) => {
                file.write_all(text)?;
                file.flush()
            }
            None => atomic::write(&atomic::destination(&self.path), text),
        }
    }
}

/// The report's way to standard output. A reader that went away is
/// remembered, not reported; any other failure (a full disk under a
/// redirection) is reported once.
#[derive(Default)]
pub struct Stdout {
    /// The reader went away: the caller ends by SIGPIPE when done.
    pub closed: bool,
    /// A write failed otherwise (and was said).
    pub failed: bool,
}

impl Stdout {
    pub fn write(&mut self, bytes: &[u8]) {
        if self.closed || self.failed {
            return;
        }
        let mut out = io::stdout().lock();
        match out.write_all(bytes).and_then(|()| out.flush()) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::BrokenPipe => self.closed = true,
            Err(e) => {
                log::error(format_args!(
                    "could not write to standard output: {}",
                    os_message(&e)
                ));
                self.failed = true;
            }
        }
    }
}

/// Where the JSON goes.
enum JsonTo {
    File(ResultFile),
    Stdout,
}

/// A mode's `--json` and `--html`, checked before it starts.
pub struct Outputs {
    json: Option<JsonTo>,
    html: Option<ResultFile>,
}

impl Outputs {
    /// Checks the paths (`-` as the JSON's path is standard output),
    /// changing nothing there.
    pub fn check(json: Option<&Path>, html: Option<&Path>) -> Result<Outputs, OpenError> {
        let json = match json {
            Some(path) if path == Path::new("-") => Some(JsonTo::Stdout),
            Some(path) => Some(JsonTo::File(ResultFile::open(path, Kind::Json)?)),
            None => None,
        };
        let html = html.map(|p| ResultFile::open(p, Kind::Html)).transpose()?;
        Ok(Outputs { json, html })
    }

    /// The JSON goes to standard output, so the text goes to standard
    /// error.
    pub fn json_to_stdout(&self) -> bool {
        matches!(self.json, Some(JsonTo::Stdout))
    }

    /// Prints `text` (to standard error when the JSON owns standard
    /// output), then writes the JSON (`json` as it is to its file, with a
    /// newline at its end on standard output) and the page, each made
    /// only when asked for. Every failure is said on standard error;
    /// false when something could not be written.
    pub fn write(
        self,
        text: &str,
        stdout: &mut Stdout,
        json: impl FnOnce() -> Result<String, String>,
        page: impl FnOnce() -> Result<String, String>,
    ) -> bool {
        if self.json_to_stdout() {
            crate::program::write_stderr_bytes(text.as_bytes());
        } else {
            stdout.write(text.as_bytes());
        }
        let mut ok = true;
        let made = self.json.is_some().then(json);
        match (self.json, made) {
            (Some(JsonTo::File(file)), Some(Ok(json))) => ok &= write_file(file, &json),
            (Some(JsonTo::Stdout), Some(Ok(mut json))) => {
                if !json.ends_with('\n') {
                    json.push('\n');
                }
                stdout.write(json.as_bytes());
            }
            (_, Some(Err(e))) => {
                log::error(format_args!("{e}"));
                ok = false;
            }
            _ => {}
        }
        if let Some(file) = self.html {
            ok &= match page() {
                Ok(page) => write_file(file, &page),
                Err(e) => {
                    log::error(format_args!(
                        "could not write \"{}\": {e}",
                        file.path.display()
                    ));
                    false
                }
            };
        }
        ok && !stdout.failed
    }
}

/// Writes `text` as the whole of `file`; false when that failed (and was
/// said).
fn write_file(file: ResultFile, text: &str) -> bool {
    let path = file.path.clone();
    match file.write(text.as_bytes()) {
        Ok(()) => true,
        Err(e) => {
            log::error(format_args!(
                "could not write \"{}\": {}",
                path.display(),
                os_message(&e)
            ));
            false
        }
    }
}

/// The result of `kind` in `text` (its JSON, or a page that embeds it);
/// `None` when `text` holds another kind; an error naming `what` when it
/// is of that kind but does not read or does not pass its
/// [`super::check`].
pub fn read_kind<T: serde::de::DeserializeOwned + super::check::Check>(
    text: &str,
    kind: &str,
    what: &str,
) -> Option<Result<T, String>> {
    let json = match super::html::embedded_json(text) {
        Some(json) if text.trim_start().starts_with('<') => json,
        _ => text,
    };
    #[derive(serde::Deserialize)]
    struct Kind {
        kind: Option<String>,
    }
    let found: Kind = serde_json::from_str(json).ok()?;
    (found.kind.as_deref() == Some(kind)).then(|| {
        let read: T = serde_json::from_str(json).map_err(|e| format!("invalid {what}: {e}"))?;
        read.check().map_err(|e| format!("invalid {what}: {e}"))?;
        Ok(read)
    })
}

/// A sweep's result read from `text` (its JSON file, or a page that embeds
/// it); `None` when `text` is not a sweep's (a run's result, say).
pub fn read_sweep(text: &str) -> Option<Result<crate::model::sweep::SweepResult, String>> {
    read_kind(text, crate::model::sweep::KIND, "sweep result").map(|sweep| {
        let sweep: crate::model::sweep::SweepResult = sweep?;
        check_sweep(&sweep)?;
        Ok(sweep)
    })
}

/// Checks what a sweep read from a file points at: its answers' indexes
/// (each step's fields pass [`super::check`] with the sweep).
fn check_sweep(sweep: &crate::model::sweep::SweepResult) -> Result<(), String> {
    sweep.summary.check_indexes()
}

/// A targets' result read from `text` (its JSON file, or a page that
/// embeds it); `None` when it is not a targets' result.
pub fn read_targets(text: &str) -> Option<Result<crate::model::targets::TargetsResult, String>> {
    read_kind(text, crate::model::targets::KIND, "targets' result").map(|targets| {
        let targets: crate::model::targets::TargetsResult = targets?;
        for target in &targets.targets {
            check_sweep(&target.sweep).map_err(|e| format!("target {}: {e}", target.name))?;
        }
        Ok(targets)
    })
}

/// What the page of a comparison embeds: the comparison and the two
/// results it was drawn from (boxed: results are large).
pub enum ComparisonPage {
    Runs(Box<(Comparison, RunResult, RunResult)>),
    Sweeps(Box<(SweepComparison, SweepResult, SweepResult)>),
}

/// The comparison that a page written by `--compare ... --html` embeds,
/// with its two results, each read and checked as its own file would be;
/// `None` when `text` is not such a page (a comparison's JSON holds the
/// figures only, not the results its page draws).
pub fn read_comparison_page(text: &str) -> Option<Result<ComparisonPage, String>> {
    #[derive(serde::Deserialize)]
    struct Embedded {
        comparison: serde_json::Value,
        baseline: serde_json::Value,
        candidate: serde_json::Value,
    }
    if !text.trim_start().starts_with('<') {
        return None;
    }
    let e: Embedded = serde_json::from_str(super::html::embedded_json(text)?).ok()?;
    let kind = e.comparison.get("kind")?.as_str()?.to_owned();
    let invalid = |e: serde_json::Error| format!("invalid comparison: {e}");
    Some(match kind.as_str() {
        "comparison" => (|| {
            let run = |side: &serde_json::Value, name: &str| {
                super::read_result(&side.to_string())
                    .map_err(|e| format!("its {name}'s result: {e}"))
            };
            Ok(ComparisonPage::Runs(Box::new((
                serde_json::from_value(e.comparison).map_err(invalid)?,
                run(&e.baseline, "baseline")?,
                run(&e.candidate, "candidate")?,
            ))))
        })(),
        "sweep_comparison" => (|| {
            let sweep = |side: &serde_json::Value, name: &str| match read_sweep(&side.to_string()) {
                Some(read) => read.map_err(|e| format!("its {name}'s sweep: {e}")),
                None => Err(format!("its {name} is not a sweep's result")),
            };
            Ok(ComparisonPage::Sweeps(Box::new((
                serde_json::from_value(e.comparison).map_err(invalid)?,
                sweep(&e.baseline, "baseline")?,
                sweep(&e.candidate, "candidate")?,
            ))))
        })(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_directory_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("missing").join("r.json");
        let err = ResultFile::open(&path, Kind::Json)
            .err()
            .expect("open fails");
        assert_eq!(
            err.to_string(),
            format!(
                "could not open JSON file \"{}\": No such file or directory",
                path.display()
            )
        );
        let err = ResultFile::open(dir.path(), Kind::Html)
            .err()
            .expect("directory");
        assert!(err.to_string().ends_with("Is a directory"), "{err}");
        let err = ResultFile::open(Path::new("/proc/version"), Kind::Json)
            .err()
            .expect("a file of /proc");
        assert!(
            err.to_string()
                .contains("\"/proc/version\": no file can be made beside it"),
            "{err}"
        );
    }

    #[test]
    fn checking_the_path_leaves_it_as_it_was() {
        let dir = tempfile::tempdir().expect("temp dir");
        let new = dir.path().join("new.json");
        ResultFile::open(&new, Kind::Json).expect("open");
        assert!(!new.exists());
        let old = dir.path().join("old.json");
        std::fs::write(&old, "previous results").expect("write");
        ResultFile::open(&old, Kind::Json).expect("open");
        assert_eq!(
            std::fs::read_to_string(&old).expect("read"),
            "previous results"
        );
    }

    #[test]
    fn writing_replaces_the_whole_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("r.json");
        std::fs::write(&path, "a much longer previous result").expect("write");
        let file = ResultFile::open(&path, Kind::Json).expect("open");
        file.write(b"{}").expect("write");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "{}");
    }
}
