//! The `--json=FILE` and `--html=FILE` result files: checked before the
//! run, written after.
//!
//! A path that cannot be written (a missing directory, a directory, no
//! permission) is found out before the first connection, as a bad
//! `--log-prefix` is, instead of after a run that may have lasted hours.
//! The check leaves nothing behind: an existing file is opened for writing
//! without being emptied, a new one is created and removed at once. The
//! file is only created (or emptied) when the results are written, so a
//! run that ends without results (a failed connection, `--exit-on-abort`,
//! a signal before the run started) leaves the path as it found it.

use std::fs::{File, OpenOptions};
use std::io::{self, ErrorKind, Write};
use std::path::{Path, PathBuf};

use crate::oserror::os_message;

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
                if !meta.is_file() && !is_stdout {
                    open = Some(file);
                }
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {
                match OpenOptions::new().write(true).create_new(true).open(path) {
                    Ok(_) => {
                        let _ = std::fs::remove_file(path);
                    }
                    // A dangling symbolic link: writing the results will
                    // create its target.
                    Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(fail(e)),
                }
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

    /// Replaces the file's contents with `text` (a device or pipe such as
    /// `/dev/stdout` is written as it is).
    pub fn write(self, text: &[u8]) -> io::Result<()> {
        if self.is_stdout {
            let mut out = io::stdout().lock();
            out.write_all(text)?;
            return out.flush();
        }
        let mut file = match self.open {
            Some(file) => file,
            None => File::create(&self.path)?,
        };
        file.write_all(text)?;
        file.flush()
    }
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
