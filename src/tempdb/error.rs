//! The one error type of the module.
//!
//! Each variant says what was being attempted; the `Display` text is written
//! for a person (it names the path, program or setting at fault and, where it
//! helps, what to do). Passwords never appear in any variant.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

/// Why a throwaway instance could not be created, configured or used.
#[derive(Debug)]
pub enum Error {
    /// No directory holding `initdb`, `pg_ctl` and `postgres` was found.
    BinariesNotFound {
        /// Every place looked at, in order.
        searched: Vec<PathBuf>,
    },
    /// The server must run as an OS user that does not exist (running as root).
    OsUserMissing {
        /// The user name looked up.
        user: String,
    },
    /// Running as root, the server's OS user cannot reach the directory
    /// the instance lives in (a private `TMPDIR`, for example).
    TempDirUnreachable {
        /// The directory that holds the instance directories.
        base: std::path::PathBuf,
        /// The OS user the server runs as.
        user: String,
    },
    /// A builder value is unusable (for example a setting name with spaces).
    InvalidOption {
        /// The option at fault.
        option: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A file system or process operation failed.
    Io {
        /// What was being done, naming the path or program.
        context: String,
        /// The underlying error.
        source: io::Error,
    },
    /// `initdb` exited with an error.
    InitdbFailed {
        /// Its exit status.
        status: ExitStatus,
        /// Its standard error and output.
        output: String,
    },
    /// The server did not come up.
    StartFailed {
        /// Exit or time-out.
        reason: StartFailure,
        /// The server's own complaints about its configuration, if any
        /// (lines of the log that name a parameter or configuration file).
        rejected_settings: Vec<String>,
        /// The last lines of the server log.
        log_tail: String,
    },
    /// A `psql` run failed.
    PsqlFailed {
        /// Its exit status.
        status: ExitStatus,
        /// Its standard error.
        stderr: String,
    },
    /// The server did not pick up a reloaded configuration in time.
    ReloadTimedOut {
        /// How long we waited.
        waited: Duration,
    },
    /// An SSL operation was asked of an instance built without `.ssl(true)`.
    SslNotEnabled,
    /// Generating the test certificates failed.
    Certificates(rcgen::Error),
    /// A signal clean-up removed the instance while it was starting.
    Interrupted,
}

/// How a server start failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartFailure {
    /// The postmaster exited during start-up.
    Exited(ExitStatus),
    /// It was still not accepting connections after this long.
    TimedOut(Duration),
}

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::BinariesNotFound { searched } => {
                write!(
                    f,
                    "PostgreSQL server programs (initdb, pg_ctl, postgres) not found; searched:"
                )?;
                if searched.is_empty() {
                    write!(f, " (nowhere)")?;
                }
                for place in searched {
                    write!(f, "\n  {}", place.display())?;
                }
                write!(
                    f,
                    "\ninstall them (Debian/Ubuntu: `apt-get install postgresql`; \
                     Fedora/RHEL: `dnf install postgresql-server`) or put their directory on PATH"
                )
            }
            Error::TempDirUnreachable { base, user } => write!(
                f,
                "the server runs as OS user \"{user}\", which cannot reach \"{}\"; \
                 set TMPDIR to a directory it can reach, such as /tmp",
                base.display()
            ),
            Error::OsUserMissing { user } => write!(
                f,
                "running as root, so the server must run as OS user \"{user}\", \
                 but no such user exists; create it (`useradd --system {user}`) \
                 or run as an ordinary user"
            ),
            Error::InvalidOption { option, reason } => write!(f, "invalid {option}: {reason}"),
            Error::Io { context, source } => write!(f, "{context}: {source}"),
            Error::InitdbFailed { status, output } => {
                write!(f, "initdb failed ({status}):\n{}", output.trim_end())
            }
            Error::StartFailed {
                reason,
                rejected_settings,
                log_tail,
            } => {
                match reason {
                    StartFailure::Exited(status) => {
                        write!(f, "PostgreSQL server exited during start-up ({status})")?
                    }
                    StartFailure::TimedOut(waited) => write!(
                        f,
                        "PostgreSQL server not accepting connections after {:.1} s",
                        waited.as_secs_f64()
                    )?,
                }
                for line in rejected_settings {
                    write!(f, "\n{line}")?;
                }
                // The tail is left out when it says nothing more than the
                // lines above (or nothing at all).
                let says_more = log_tail.lines().any(|line| {
                    !line.trim().is_empty() && !rejected_settings.iter().any(|r| r == line)
                });
                if says_more {
                    write!(f, "\nserver log (last lines):\n{}", log_tail.trim_end())?;
                }
                Ok(())
            }
            Error::PsqlFailed { status, stderr } => {
                write!(f, "psql failed ({status}): {}", stderr.trim_end())
            }
            Error::ReloadTimedOut { waited } => write!(
                f,
                "PostgreSQL server did not apply the new configuration within {:.1} s",
                waited.as_secs_f64()
            ),
            Error::SslNotEnabled => write!(f, "the instance was built without SSL"),
            Error::Certificates(e) => write!(f, "generating test certificates: {e}"),
            Error::Interrupted => write!(f, "interrupted by a signal while starting the server"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Certificates(e) => Some(e),
            _ => None,
        }
    }
}

impl From<rcgen::Error> for Error {
    fn from(e: rcgen::Error) -> Self {
        Error::Certificates(e)
    }
}
