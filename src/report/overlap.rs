//! Outputs that would overwrite an input or each other, found before
//! anything runs.
//!
//! `--merge g0.json g1.json --json=g0.json` would replace a generator's
//! result with the merge, `-f s.sql --json=s.sql` the script with the
//! JSON, `--json=X --html=X` the JSON with the page. Each is refused.
//!
//! Two paths name the same file when they reach the same device and inode
//! (so `./a.json`, `a.json` and a link to it all match); a path that does
//! not exist yet is compared by its directory's canonical path and its
//! name, so two new outputs can still collide, while a new output cannot
//! be an input (an input exists). Only regular files and new paths take
//! part: a FIFO, `/dev/null` or standard output (`-`) can sensibly serve
//! as several outputs, and reading a device is not reading a file.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A path as given, with what the command line called it (`--json`, `-f`,
/// `--merge input`, ...).
#[derive(Clone, Copy, Debug)]
pub struct Named<'a> {
    pub what: &'a str,
    pub path: &'a Path,
}

/// Which file a path reaches.
#[derive(Debug, PartialEq, Eq)]
enum Identity {
    Inode(u64, u64),
    New(PathBuf),
}

/// The identity of `path`, or `None` when it takes no part (not a regular
/// file, standard output, a directory that cannot be resolved).
fn identity(path: &Path) -> Option<Identity> {
    if path == Path::new("-") {
        return None;
    }
    match fs::metadata(path) {
        Ok(meta) if meta.is_file() => Some(Identity::Inode(meta.dev(), meta.ino())),
        Ok(_) => None,
        Err(_) => {
            let name = path.file_name()?;
            let dir = match path.parent() {
                Some(dir) if !dir.as_os_str().is_empty() => dir,
                _ => Path::new("."),
            };
            Some(Identity::New(fs::canonicalize(dir).ok()?.join(name)))
        }
    }
}

/// The first output that is an input or an earlier output, worded for the
/// user.
pub fn check(outputs: &[Named<'_>], inputs: &[Named<'_>]) -> Result<(), String> {
    let inputs: Vec<(Named<'_>, Identity)> = inputs
        .iter()
        .filter_map(|n| Some((*n, identity(n.path)?)))
        .collect();
    let mut earlier: Vec<(Named<'_>, Identity)> = Vec::new();
    for output in outputs {
        let Some(id) = identity(output.path) else {
            continue;
        };
        if let Some((input, _)) = inputs.iter().find(|(_, i)| *i == id) {
            return Err(format!(
                "the {} file \"{}\" is the {} \"{}\": it would be overwritten; \
                 write the output elsewhere",
                output.what,
                output.path.display(),
                input.what,
                input.path.display()
            ));
        }
        if let Some((other, _)) = earlier.iter().find(|(_, i)| *i == id) {
            return Err(format!(
                "the {} file \"{}\" is also the {} file \"{}\": one would overwrite the \
                 other; give them different paths",
                output.what,
                output.path.display(),
                other.what,
                other.path.display()
            ));
        }
        earlier.push((*output, id));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named<'a>(what: &'a str, path: &'a Path) -> Named<'a> {
        Named { what, path }
    }

    #[test]
    fn outputs_over_inputs_or_each_other_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.json");
        fs::write(&a, "{}").unwrap();
        let dotted = dir.path().join(".").join("a.json");
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&a, &link).unwrap();
        let new = dir.path().join("new.html");
        let new_again = dir.path().join("sub/../new.html");
        fs::create_dir(dir.path().join("sub")).unwrap();
        let other = dir.path().join("other.json");

        let input = [named("--compare input", &a)];
        let err = check(&[named("--json", &dotted)], &input).unwrap_err();
        assert!(err.contains("is the --compare input"), "{err}");
        assert!(check(&[named("--json", &link)], &input).is_err());
        assert!(check(&[named("--json", &other)], &input).is_ok());
        let err = check(&[named("--json", &new), named("--html", &new_again)], &[]).unwrap_err();
        assert!(err.contains("is also the --json file"), "{err}");
        let stdout = Path::new("-");
        let null = Path::new("/dev/null");
        let fine = [
            named("--json", stdout),
            named("--html", null),
            named("--json", null),
        ];
        assert!(check(&fine, &[named("-f", null)]).is_ok());
    }
}
