//! The `--json=FILE` result file, opened before the run and written after.
//!
//! A path that cannot be written (a missing directory, a directory, no
//! permission) is found out before the first connection, as a bad
//! `--log-prefix` is, instead of after a run that may have lasted hours.
//! Opening does not truncate: the file is emptied only when the results
//! are written, so a run that ends without results (a failed connection,
//! `--exit-on-abort`) leaves an existing file as it was, and removes the
//! file it created for nothing rather than leave an empty one behind.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::oserror::os_message;

/// An open result file.
pub struct ResultFile {
    path: PathBuf,
    file: File,
    /// The file did not exist before pgbolt opened it.
    created: bool,
    written: bool,
}

/// The result file could not be opened.
#[derive(Debug)]
pub struct OpenError {
    path: PathBuf,
    source: io::Error,
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "could not open JSON file \"{}\": {}",
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
    /// Opens (creating if needed, without truncating) `path` for writing.
    pub fn open(path: &Path) -> Result<Self, OpenError> {
        let existed = std::fs::symlink_metadata(path).is_ok();
        let fail = |source| OpenError {
            path: path.to_owned(),
            source,
        };
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(fail)?;
        Ok(ResultFile {
            path: path.to_owned(),
            file,
            created: !existed,
            written: false,
        })
    }

    /// The path given on the command line.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the file's contents with `text`. A regular file is
    /// emptied first; a device or pipe (`/dev/stdout`) is written as is.
    pub fn write(&mut self, text: &[u8]) -> io::Result<()> {
        self.written = true;
        if self.file.metadata()?.is_file() {
            self.file.set_len(0)?;
        }
        self.file.write_all(text)?;
        self.file.flush()
    }
}

impl Drop for ResultFile {
    fn drop(&mut self) {
        if self.created && !self.written {
            // Best effort: the run is ending without results anyway.
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_directory_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("missing").join("r.json");
        let err = ResultFile::open(&path).err().expect("open fails");
        assert_eq!(
            err.to_string(),
            format!(
                "could not open JSON file \"{}\": No such file or directory",
                path.display()
            )
        );
        let err = ResultFile::open(dir.path()).err().expect("directory");
        assert!(err.to_string().ends_with("Is a directory"), "{err}");
    }

    #[test]
    fn an_unwritten_file_is_removed_or_left_as_it_was() {
        let dir = tempfile::tempdir().expect("temp dir");
        let new = dir.path().join("new.json");
        drop(ResultFile::open(&new).expect("open"));
        assert!(!new.exists());
        let old = dir.path().join("old.json");
        std::fs::write(&old, "previous results").expect("write");
        drop(ResultFile::open(&old).expect("open"));
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
        let mut f = ResultFile::open(&path).expect("open");
        f.write(b"{}").expect("write");
        drop(f);
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "{}");
    }
}
