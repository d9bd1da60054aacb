//! Finding the PostgreSQL server programs.
//!
//! A directory qualifies when it holds `initdb`, `pg_ctl` and `postgres`.
//! The places looked at: every directory on `PATH` (resolving symbolic
//! links, so `/usr/local/bin/initdb -> /usr/lib/postgresql/15/bin/initdb`
//! yields the real directory, where `psql` and `pgbench` live too), the output
//! of `pg_config --bindir`, [`DEPS_BIN_DIR`] (where `make deps` puts
//! PostgreSQL 18), every `/usr/lib/postgresql/<version>/bin` (Debian, Ubuntu)
//! and every `/usr/pgsql-<version>/bin` (PGDG RPMs). Of the qualifying ones
//! the standard search takes the newest server (`postgres --version`), the
//! first in that order among equals: a machine with several versions
//! installed gets its newest without anyone setting `PATH`.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::Error;

const REQUIRED: [&str; 3] = ["initdb", "pg_ctl", "postgres"];

/// Where `make deps` (scripts/install-deps.sh) installs PostgreSQL 18.
pub const DEPS_BIN_DIR: &str = "/opt/pgbolt-pg18/bin";

/// Where to look for the server programs.
#[derive(Debug, Clone, Default)]
pub enum BinSearch {
    /// The newest server of PATH, `pg_config --bindir`, [`DEPS_BIN_DIR`],
    /// `/usr/lib/postgresql/*/bin`, `/usr/pgsql-*/bin`.
    #[default]
    Standard,
    /// Exactly these directories, in order (an empty list finds nothing).
    Only(Vec<PathBuf>),
}

/// Finds the directory of the PostgreSQL server programs the standard way.
pub fn find_bin_dir() -> Result<PathBuf, Error> {
    BinSearch::Standard.find()
}

impl BinSearch {
    /// The qualifying directory (the newest server for the standard
    /// search, the first one for `Only`), or an error listing every place
    /// searched.
    pub fn find(&self) -> Result<PathBuf, Error> {
        let (candidates, newest) = match self {
            BinSearch::Standard => (standard_candidates(), true),
            BinSearch::Only(dirs) => (dirs.clone(), false),
        };
        let mut found = candidates.iter().filter(|dir| qualifies(dir));
        let chosen = if newest {
            let mut best: Option<(&PathBuf, String)> = None;
            for dir in found {
                let version = server_version(dir);
                let newer = match &best {
                    Some((_, v)) => version_cmp(&version, v) == Ordering::Greater,
                    None => true,
                };
                if newer {
                    best = Some((dir, version));
                }
            }
            best.map(|(dir, _)| dir)
        } else {
            found.next()
        };
        chosen.cloned().ok_or(Error::BinariesNotFound {
            searched: candidates,
        })
    }
}

/// The version `postgres --version` prints ("18.6", "15.18"), empty when
/// it cannot be run (such a directory loses to every other).
fn server_version(dir: &Path) -> String {
    let output = Command::new(dir.join("postgres"))
        .arg("--version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    let text = output
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    // "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
    text.split_whitespace()
        .nth(2)
        .unwrap_or_default()
        .to_owned()
}

fn qualifies(dir: &Path) -> bool {
    REQUIRED.iter().all(|name| is_executable(&dir.join(name)))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

fn standard_candidates() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let initdb = dir.join("initdb");
            match std::fs::canonicalize(&initdb) {
                Ok(real) if is_executable(&real) => {
                    if let Some(parent) = real.parent() {
                        out.push(parent.to_path_buf());
                    }
                }
                _ => out.push(dir),
            }
        }
    }
    if let Some(dir) = pg_config_bindir() {
        out.push(dir);
    }
    out.push(PathBuf::from(DEPS_BIN_DIR));
    for (parent, prefix, pattern) in [
        ("/usr/lib/postgresql", "", "/usr/lib/postgresql/*/bin"),
        ("/usr", "pgsql-", "/usr/pgsql-*/bin"),
    ] {
        let found = newest(Path::new(parent), prefix, "bin");
        if found.is_empty() {
            // Named as a pattern, so the error shows it was looked at.
            out.push(PathBuf::from(pattern));
        }
        out.extend(found);
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|d| seen.insert(d.clone()));
    out
}

fn pg_config_bindir() -> Option<PathBuf> {
    let output = Command::new("pg_config")
        .arg("--bindir")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let dir = text.trim();
    (!dir.is_empty()).then(|| PathBuf::from(dir))
}

/// `parent/<prefix><version>/<sub>` for every version found, newest first.
fn newest(parent: &Path, prefix: &str, sub: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut versions: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name();
            let version = name.to_str()?.strip_prefix(prefix)?;
            version
                .starts_with(|c: char| c.is_ascii_digit())
                .then(|| version.to_string())
        })
        .collect();
    versions.sort_by(|a, b| version_cmp(b, a));
    versions
        .into_iter()
        .map(|v| parent.join(format!("{prefix}{v}")).join(sub))
        .collect()
}

/// Compares dotted version strings numerically part by part ("9.6" < "15").
fn version_cmp(a: &str, b: &str) -> Ordering {
    let parts = |s: &str| -> Vec<u64> {
        s.split(|c: char| !c.is_ascii_digit())
            .filter(|p| !p.is_empty())
            .map(|p| p.parse().unwrap_or(u64::MAX))
            .collect()
    };
    parts(a).cmp(&parts(b)).then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_numerically() {
        let cases = [
            ("9.6", "15", Ordering::Less),
            ("15", "15", Ordering::Equal),
            ("16", "15", Ordering::Greater),
            ("10", "9.6", Ordering::Greater),
            ("17beta1", "16", Ordering::Greater),
        ];
        for (a, b, want) in cases {
            assert_eq!(version_cmp(a, b), want, "{a} vs {b}");
        }
    }

    #[test]
    fn empty_search_lists_nowhere_and_how_to_install() {
        let err = BinSearch::Only(Vec::new()).find().unwrap_err();
        let text = err.to_string();
        assert!(text.contains("(nowhere)"), "{text}");
        assert!(text.contains("apt-get install postgresql"), "{text}");
    }

    #[test]
    fn directories_without_the_programs_are_listed() {
        let dir = tempfile::tempdir().unwrap();
        let err = BinSearch::Only(vec![dir.path().to_path_buf()])
            .find()
            .unwrap_err();
        assert!(err.to_string().contains(&dir.path().display().to_string()));
    }
}
