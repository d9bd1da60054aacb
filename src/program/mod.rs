//! The name pgbolt gives itself, taken from how it was started.
//!
//! pgbench names itself after the last part of its `argv[0]`, in every
//! message and as the connections' `fallback_application_name`, except in
//! the option parser's own complaints (glibc's `getopt_long`), which start
//! with `argv[0]` as given. pgbolt does the same, so that pgbolt installed as `pgbench` (a symbolic link, for
//! wrappers such as pgbench-tools that call `pgbench`) reads as pgbench
//! everywhere. Under any name but its own, `--version` prints the line of
//! PostgreSQL's programs, `NAME (PostgreSQL) VERSION`, with the version of
//! the pgbench pgbolt is compatible with, then pgbolt's own: a script
//! that reads pgbench's version (its third word, its first number, or
//! `^pgbench .PostgreSQL. ` as pgbench's own tests match it) learns which
//! pgbench it may expect ([`version_line`]).

pub mod log;

use std::ffi::OsStr;
use std::fmt;
use std::sync::OnceLock;

/// pgbolt's own name, and the name until [`ProgramName::set_from_argv0`].
const OWN_NAME: &str = "pgbolt";

/// The pgbench release pgbolt is tested against (the oracle's version).
pub const PGBENCH_COMPATIBLE: &str = "18.6";

/// The closing lines of `--help`, where pgbench names PostgreSQL's bug
/// list and home page.
pub const BUG_REPORTS: &str =
    "Report bugs to pgbolt's issue tracker, with the output of --version.";
pub const HOME_PAGE: &str = "pgbolt home page: see README.md in pgbolt's sources.";

/// The process-wide program name: [`PROGRAM`].
pub struct ProgramName {
    name: OnceLock<String>,
    invocation: OnceLock<String>,
}

/// The name pgbolt gives itself in messages: "pgbolt" unless started
/// under another name.
pub static PROGRAM: ProgramName = ProgramName::new();

impl ProgramName {
    const fn new() -> ProgramName {
        ProgramName {
            name: OnceLock::new(),
            invocation: OnceLock::new(),
        }
    }

    /// Takes the name from `argv[0]`'s last path component; an empty or
    /// missing `argv[0]` keeps "pgbolt". Only the first call counts.
    pub fn set_from_argv0(&self, argv0: Option<&OsStr>) {
        let name = argv0
            .map(std::path::Path::new)
            .and_then(|path| path.file_name())
            .map(|name| name.to_string_lossy().into_owned())
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| OWN_NAME.to_owned());
        let invocation = argv0
            .map(|given| given.to_string_lossy().into_owned())
            .filter(|given| !given.is_empty())
            .unwrap_or_else(|| name.clone());
        let _ = self.name.set(name);
        let _ = self.invocation.set(invocation);
    }

    pub fn as_str(&self) -> &str {
        self.name.get().map_or(OWN_NAME, String::as_str)
    }

    /// `argv[0]` as given, which the option parser's complaints start with.
    pub fn invocation(&self) -> &str {
        self.invocation.get().map_or(self.as_str(), String::as_str)
    }
}

impl fmt::Display for ProgramName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `--version` line for a program started as `name`.
pub fn version_line(name: &str) -> String {
    let own = env!("CARGO_PKG_VERSION");
    if name == OWN_NAME {
        format!("pgbolt {own} (compatible with pgbench {PGBENCH_COMPATIBLE})")
    } else {
        format!("{name} (PostgreSQL) {PGBENCH_COMPATIBLE} (pgbolt {own})")
    }
}

/// Writes `args` to standard error in one write, so that lines of
/// different threads do not mix; a failure is ignored (see [`ewrite!`]).
pub fn write_stderr(args: fmt::Arguments<'_>) {
    write_stderr_bytes(args.to_string().as_bytes());
}

/// Writes `bytes` to standard error in one write; a failure is ignored.
pub fn write_stderr_bytes(bytes: &[u8]) {
    use std::io::Write;
    let _ = std::io::stderr().lock().write_all(bytes);
}

/// Prints pgbench's line for a random seed it has met.
pub fn announce_seed(value: u64) {
    ewriteln!("{PROGRAM}: setting random seed to {value}");
}

/// Ends the process by SIGPIPE, as a C program that wrote to a pipe
/// nobody reads any more ends (the Rust runtime ignores SIGPIPE, so a
/// write only fails with `EPIPE`): a shell then sees the status it sees
/// for pgbench.
pub fn die_of_sigpipe() -> ! {
    // SAFETY: restoring the default action and raising the signal are
    // plain system calls; the default action ends the process.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    // Not reached: SIGPIPE's default action ends the process.
    std::process::exit(128 + libc::SIGPIPE)
}

/// `eprint!` without its panic when standard error cannot be written (a
/// pipe whose reader has gone): the message is lost and pgbolt carries
/// on, its exit status still telling what happened.
macro_rules! ewrite {
    ($($arg:tt)*) => {
        $crate::program::write_stderr(format_args!($($arg)*))
    };
}

/// [`ewrite!`] with a newline, as `eprintln!`.
macro_rules! ewriteln {
    ($($arg:tt)*) => {
        $crate::program::write_stderr(format_args!("{}\n", format_args!($($arg)*)))
    };
}

pub(crate) use {ewrite, ewriteln};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_is_argv0s_last_component() {
        let cases: [(Option<&str>, &str, &str); 5] = [
            (
                Some("/usr/local/bin/pgbench"),
                "pgbench",
                "/usr/local/bin/pgbench",
            ),
            (Some("pgbolt"), "pgbolt", "pgbolt"),
            (
                Some("./target/release/pgbolt"),
                "pgbolt",
                "./target/release/pgbolt",
            ),
            (Some(""), "pgbolt", "pgbolt"),
            (None, "pgbolt", "pgbolt"),
        ];
        for (argv0, want, invocation) in cases {
            let name = ProgramName::new();
            name.set_from_argv0(argv0.map(OsStr::new));
            assert_eq!(name.as_str(), want, "{argv0:?}");
            assert_eq!(name.invocation(), invocation, "{argv0:?}");
        }
    }

    /// What scripts do with `pgbench --version`: the third word, or the
    /// first number.
    #[test]
    fn under_another_name_the_version_reads_as_pgbench_18() {
        let line = version_line("pgbench");
        assert!(line.starts_with("pgbench (PostgreSQL) 18.6 "), "{line}");
        assert_eq!(line.split_whitespace().nth(2), Some(PGBENCH_COMPATIBLE));
        let first_number: String = line
            .chars()
            .skip_while(|c| !c.is_ascii_digit())
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        assert_eq!(first_number, PGBENCH_COMPATIBLE);
        assert!(version_line("pgbolt").starts_with("pgbolt 0."));
    }
}
