//! The outside world that resolution reads: environment variables, the
//! operating system user, the home directory and where sockets live.
//!
//! Resolution never calls `std::env` itself; it reads an [`Env`], a
//! snapshot taken once with [`Env::from_process`] (or built by hand in
//! tests), so results do not depend on what else the process does and unit
//! tests do not depend on the machine they run on.

use std::collections::HashMap;
use std::ffi::{CStr, OsStr};
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::Error;

/// Default socket directories, tried in order: the first that exists is
/// the default; if none exists, the last one is. Debian's libpq uses
/// `/var/run/postgresql`, upstream's uses `/tmp`.
pub const DEFAULT_SOCKET_DIRS: [&str; 2] = ["/var/run/postgresql", "/tmp"];

/// Where libpq on Debian and Ubuntu looks for the system-wide
/// `pg_service.conf` (`pg_config --sysconfdir`) when `PGSYSCONFDIR` is unset.
pub const DEFAULT_SYSCONFDIR: &str = "/etc/postgresql-common";

/// A snapshot of everything outside the options that resolution consults.
#[derive(Clone)]
pub struct Env {
    vars: HashMap<String, String>,
    os_user: Result<String, u32>,
    passwd_home: Option<PathBuf>,
    socket_dirs: Vec<PathBuf>,
    sysconfdir: PathBuf,
}

impl Env {
    /// Takes a snapshot of this process: its environment variables (those
    /// whose names are valid UTF-8; a value that is not has U+FFFD for its
    /// bad bytes, as arguments do, so that `PGDATABASE` naming a database
    /// pgbolt cannot reach fails instead of falling back to the default
    /// one), the user of its effective user ID and that user's home
    /// directory from the password database.
    pub fn from_process() -> Env {
        let vars = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.to_string_lossy().into_owned())))
            .collect();
        // SAFETY: geteuid has no preconditions and cannot fail.
        let uid = unsafe { libc::geteuid() };
        let (os_user, passwd_home) = match passwd_entry(uid) {
            Some((name, home)) => (Ok(name), Some(home)),
            None => (Err(uid), None),
        };
        Env {
            vars,
            os_user,
            passwd_home,
            socket_dirs: DEFAULT_SOCKET_DIRS.iter().map(PathBuf::from).collect(),
            sysconfdir: PathBuf::from(DEFAULT_SYSCONFDIR),
        }
    }

    /// An environment with no variables, OS user `os_user`, no home
    /// directory, socket directory `/tmp` and system configuration
    /// directory `/nonexistent`: a clean slate for tests.
    pub fn empty(os_user: &str) -> Env {
        Env {
            vars: HashMap::new(),
            os_user: Ok(os_user.to_owned()),
            passwd_home: None,
            socket_dirs: vec![PathBuf::from("/tmp")],
            sysconfdir: PathBuf::from("/nonexistent"),
        }
    }

    /// Sets an environment variable in the snapshot.
    pub fn with_var(mut self, name: &str, value: &str) -> Env {
        self.vars.insert(name.to_owned(), value.to_owned());
        self
    }

    /// Replaces the default socket directory candidates.
    pub fn with_socket_dirs<I, P>(mut self, dirs: I) -> Env
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        self.socket_dirs = dirs.into_iter().map(Into::into).collect();
        self
    }

    /// Replaces the system configuration directory (used when
    /// `PGSYSCONFDIR` is unset).
    pub fn with_sysconfdir(mut self, dir: impl Into<PathBuf>) -> Env {
        self.sysconfdir = dir.into();
        self
    }

    /// Replaces the home directory from the password database (used when
    /// `HOME` is unset or empty).
    pub fn with_passwd_home(mut self, dir: impl Into<PathBuf>) -> Env {
        self.passwd_home = Some(dir.into());
        self
    }

    /// The value of an environment variable, if set (possibly empty).
    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// The operating system user name, the default for `user`.
    pub fn os_user(&self) -> Result<&str, Error> {
        match &self.os_user {
            Ok(name) => Ok(name),
            Err(uid) => Err(Error::NoUserName { uid: *uid }),
        }
    }

    /// `HOME` if set and not empty, else the password database's entry.
    pub fn home_dir(&self) -> Option<PathBuf> {
        match self.var("HOME") {
            Some(home) if !home.is_empty() => Some(PathBuf::from(home)),
            _ => self.passwd_home.clone(),
        }
    }

    /// The directory of the Unix socket used when no host is given.
    pub fn default_socket_dir(&self) -> PathBuf {
        self.socket_dirs
            .iter()
            .find(|d| d.is_dir())
            .or(self.socket_dirs.last())
            .cloned()
            .unwrap_or_else(|| PathBuf::from("/tmp"))
    }

    /// The database pgbench connects to when no dbname argument is given:
    /// `PGDATABASE` if set and not empty, else `PGUSER` if set and not
    /// empty, else the OS user. pgbench passes this as an explicit
    /// `dbname`, so it overrides a service file's `dbname`.
    pub fn pgbench_dbname(&self) -> Result<String, Error> {
        for var in ["PGDATABASE", "PGUSER"] {
            if let Some(value) = self.var(var).filter(|v| !v.is_empty()) {
                return Ok(value.to_owned());
            }
        }
        self.os_user().map(str::to_owned)
    }

    /// `PGSYSCONFDIR` if set, else the built-in directory.
    pub fn sysconfdir(&self) -> &Path {
        match self.var("PGSYSCONFDIR") {
            Some(dir) => Path::new(dir),
            None => &self.sysconfdir,
        }
    }
}

impl fmt::Debug for Env {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&String> = self.vars.keys().collect();
        names.sort();
        f.debug_struct("Env")
            .field("vars", &names)
            .field("os_user", &self.os_user)
            .field("passwd_home", &self.passwd_home)
            .field("socket_dirs", &self.socket_dirs)
            .field("sysconfdir", &self.sysconfdir)
            .finish()
    }
}

/// The user name and home directory of `uid` from the password database.
pub(crate) fn passwd_entry(uid: libc::uid_t) -> Option<(String, PathBuf)> {
    let mut size = 1024;
    while size <= 1 << 20 {
        let mut buf = vec![0 as libc::c_char; size];
        // SAFETY: an all-zero passwd is a valid value for getpwuid_r to fill.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the length passed with it.
        let rc = unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), size, &mut result) };
        if rc == libc::ERANGE {
            size *= 2;
            continue;
        }
        if rc != 0 || result.is_null() || pwd.pw_name.is_null() {
            return None;
        }
        // SAFETY: on success the fields point at NUL-terminated strings in buf.
        let name = unsafe { CStr::from_ptr(pwd.pw_name) }
            .to_string_lossy()
            .into_owned();
        let home = if pwd.pw_dir.is_null() {
            PathBuf::new()
        } else {
            // SAFETY: as above.
            let bytes = unsafe { CStr::from_ptr(pwd.pw_dir) }.to_bytes();
            PathBuf::from(OsStr::from_bytes(bytes))
        };
        return Some((name, home));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_variable_names_only() {
        let env = Env::empty("alice").with_var("PGPASSWORD", "hunter2");
        let shown = format!("{env:?}");
        assert!(shown.contains("PGPASSWORD"), "{shown}");
        assert!(!shown.contains("hunter2"), "{shown}");
    }

    #[test]
    fn home_prefers_nonempty_home_variable() {
        let env = Env::empty("a").with_passwd_home("/home/pw");
        assert_eq!(env.home_dir(), Some(PathBuf::from("/home/pw")));
        let env = env.with_var("HOME", "");
        assert_eq!(env.home_dir(), Some(PathBuf::from("/home/pw")));
        let env = env.with_var("HOME", "/h");
        assert_eq!(env.home_dir(), Some(PathBuf::from("/h")));
    }

    #[test]
    fn default_socket_dir_is_first_existing_candidate() {
        let existing = std::env::temp_dir();
        let env = Env::empty("a")
            .with_socket_dirs(["/nonexistent/a", existing.to_str().unwrap_or("/tmp")]);
        assert_eq!(env.default_socket_dir(), existing);
        let env = Env::empty("a").with_socket_dirs(["/nonexistent/a", "/nonexistent/b"]);
        assert_eq!(env.default_socket_dir(), PathBuf::from("/nonexistent/b"));
    }

    #[test]
    fn pgbench_dbname_order() {
        let env = Env::empty("os");
        assert_eq!(env.pgbench_dbname().expect("os user"), "os");
        let env = env.with_var("PGDATABASE", "").with_var("PGUSER", "u");
        assert_eq!(env.pgbench_dbname().expect("set"), "u");
        let env = env.with_var("PGDATABASE", "d");
        assert_eq!(env.pgbench_dbname().expect("set"), "d");
    }

    #[test]
    fn process_snapshot_finds_the_os_user() {
        let env = Env::from_process();
        assert!(!env.os_user().expect("this process has a user").is_empty());
    }
}
