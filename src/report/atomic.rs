//! Writing a result file whole or not at all.
//!
//! The file the user named is theirs: a run that fails to write its
//! results (a full disk, a quota, a killed process) must leave the previous
//! file byte for byte, never a truncated page that looks complete in a
//! browser. So the bytes go to a temporary file in the same directory
//! (`.NAME.tmp-PID`, same file system, so the rename cannot copy), which is
//! flushed to the disk (`fsync`) and then renamed over the target: readers
//! see the old file or the new one, nothing between. Any failure removes
//! the temporary file and leaves the target as it was. The new file keeps
//! the permission bits of the one it replaces.
//!
//! A symbolic link is followed: the file it points at is replaced and the
//! link stays. The check before the run ([`check`]) creates and removes
//! the same temporary file, so a directory that cannot take one
//! (`/proc`, a read-only mount, no write permission) is refused before
//! anything runs rather than after.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The file that writing to `path` replaces: `path` itself, or the file a
/// symbolic link at `path` points to (which need not exist yet).
pub fn destination(path: &Path) -> PathBuf {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => match fs::canonicalize(path) {
            Ok(real) => real,
            Err(_) => match fs::read_link(path) {
                Ok(target) => match path.parent() {
                    Some(dir) => dir.join(target),
                    None => target,
                },
                Err(_) => path.to_owned(),
            },
        },
        _ => path.to_owned(),
    }
}

/// The temporary file beside `target` that [`write`] fills before the
/// rename.
fn temporary(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = format!(".{name}.tmp-{}", std::process::id());
    match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(temp),
        _ => PathBuf::from(temp),
    }
}

/// Creates the temporary file, failing if one is there already.
fn create_temporary(temp: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o666)
        .open(temp)
}

/// Checks that a result can be written in place of `target` (see the
/// module's documentation), leaving nothing behind.
pub fn check(target: &Path) -> io::Result<()> {
    let temp = temporary(target);
    create_temporary(&temp)?;
    let _ = fs::remove_file(&temp);
    Ok(())
}

/// Replaces `target` with `bytes`: all of them, or nothing and the old
/// file as it was.
pub fn write(target: &Path, bytes: &[u8]) -> io::Result<()> {
    let temp = temporary(target);
    let result = fill(&temp, target, bytes).and_then(|()| fs::rename(&temp, target));
    match result {
        Ok(()) => {
            sync_directory(target);
            Ok(())
        }
        Err(e) => {
            let _ = fs::remove_file(&temp);
            Err(e)
        }
    }
}

/// Writes `bytes` into the new file `temp` with `target`'s permission bits
/// when it exists, and flushes it to the disk.
fn fill(temp: &Path, target: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = create_temporary(temp)?;
    if let Ok(meta) = fs::metadata(target) {
        file.set_permissions(meta.permissions())?;
    }
    file.write_all(bytes)?;
    file.sync_all()
}

/// Makes the rename itself durable; a file system that cannot sync a
/// directory has still renamed the file, so a failure here is ignored.
fn sync_directory(target: &Path) {
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn the_file_is_replaced_whole_and_keeps_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        fs::write(&path, "a much longer previous result").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        write(&path, b"{}").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "{}");
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
        assert_eq!(names(dir.path()), ["r.json"]);
    }

    #[test]
    fn a_symbolic_link_stays_and_its_target_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        let link = dir.path().join("link.json");
        fs::write(&real, "old").unwrap();
        std::os::unix::fs::symlink("real.json", &link).unwrap();
        write(&destination(&link), b"new").unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_to_string(&real).unwrap(), "new");
        let dangling = dir.path().join("dangling.json");
        std::os::unix::fs::symlink("made.json", &dangling).unwrap();
        write(&destination(&dangling), b"made").unwrap();
        assert_eq!(
            fs::read_to_string(dir.path().join("made.json")).unwrap(),
            "made"
        );
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        fs::write(&path, "old").unwrap();
        // A temporary file that is there already makes the write fail.
        let temp = temporary(&path);
        fs::create_dir(&temp).unwrap();
        assert!(write(&path, b"new").is_err());
        assert_eq!(fs::read_to_string(&path).unwrap(), "old");
        fs::remove_dir(&temp).unwrap();
        assert_eq!(names(dir.path()), ["r.json"]);
    }

    #[test]
    fn the_check_leaves_nothing_and_fails_where_no_file_can_be_made() {
        let dir = tempfile::tempdir().unwrap();
        check(&dir.path().join("new.json")).unwrap();
        assert!(names(dir.path()).is_empty());
        assert!(check(Path::new("/proc/version")).is_err());
    }
}
