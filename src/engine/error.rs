//! Why a benchmark could not run, with the message pgbench prints.
//!
//! Errors before the run (exit status 1) are values of [`EngineError`];
//! errors during the run are per client and only logged (the client aborts
//! and the run ends with status 2), so they have no type here.

use std::fmt;

use pgwire::libpq_text::query_failure;

use crate::random::SeedError;
use crate::script::ScriptError;
use crate::stats::LogError;

/// The query that reads the scale of the pgbench tables.
pub(crate) const COUNT_BRANCHES: &str = "select count(*) from pgbench_branches";

/// A failure that stops pgbolt before or while starting the run.
#[derive(Debug)]
pub enum EngineError {
    /// The connection options cannot be resolved; pgbench's second line
    /// follows, as for a failed connection.
    ConnOptions(pgwire::conninfo::Error),
    /// The set-up connection could not be opened; pgbench's second line
    /// follows libpq's message.
    SetupConnection(pgwire::Error),
    /// A client's connection could not be opened before the run.
    ClientConnection { client: u32, error: pgwire::Error },
    /// A script could not be loaded or is unfit for the query mode.
    Script(ScriptError),
    /// `total script weight must not be zero`.
    ZeroWeight,
    /// The random seed could not be obtained.
    Seed(SeedError),
    /// `select count(*) from pgbench_branches` failed.
    CountBranches {
        error: pgwire::Error,
        /// The database, when the table does not exist (for the hint).
        missing_table_in: Option<String>,
    },
    /// The count was not a usable number.
    InvalidBranchCount(String),
    /// No `pgbench_accounts` in the search path.
    NoAccountsTable { dbname: String },
    /// `unexpected partition method`.
    PartitionMethod(String),
    /// The server cannot accept that many more connections.
    Preflight(Preflight),
    /// A transaction log file could not be opened.
    Log(LogError),
    /// A worker thread could not be started.
    Thread(std::io::Error),
    /// A worker's poller failed (waiting, or watching a socket).
    Poll(std::io::Error),
    /// `--io=uring` was asked for and the kernel does not allow it.
    IoUring(std::io::Error),
    /// A worker thread panicked (a bug).
    ThreadPanicked,
    /// The results could not be put together.
    Report(String),
    /// `--start-at`: the clients were connected too late to start with
    /// the other generators.
    LateForStart { ready_us: i64, start_at_us: i64 },
}

/// The numbers behind a preflight refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preflight {
    pub clients: u32,
    pub max_connections: i64,
    /// The slots this role may not use (none for a superuser).
    pub reserved: i64,
    pub in_use: i64,
    /// The role connecting is a superuser, who may use every slot.
    pub superuser: bool,
    /// The server has `reserved_connections` and the role
    /// `pg_use_reserved_connections` (PostgreSQL 16 and later), and this
    /// role is not a member of it; before 16 only superusers have slots of
    /// their own.
    pub role_slots: bool,
    /// The server is `--temp-instance`'s, whose settings come from
    /// `--temp-instance-setting`.
    pub temp_instance: bool,
    /// The clients are a sweep's largest step, not `-c` (which a sweep of
    /// clients cannot be given): the hint says so.
    pub swept: bool,
}

impl Preflight {
    /// Connections the server can still accept for this user.
    pub fn available(&self) -> i64 {
        self.max_connections - self.reserved - self.in_use
    }
}

impl EngineError {
    /// pgbench's exit status for the failure.
    pub fn exit_code(&self) -> i32 {
        1
    }
}

impl fmt::Display for EngineError {
    /// The first line follows `pgbolt: error: `; later lines carry their
    /// own prefix.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prog = crate::program::PROGRAM.as_str();
        match self {
            EngineError::ConnOptions(e) => {
                write!(f, "{e}\n{prog}: error: could not create connection for setup")
            }
            EngineError::SetupConnection(e) => {
                write!(f, "{e}\n{prog}: error: could not create connection for setup")
            }
            EngineError::ClientConnection { client, error } => {
                write!(f, "{error}\n{prog}: error: could not create connection for client {client}")
            }
            EngineError::Script(e) => write!(f, "{e}"),
            EngineError::ZeroWeight => f.write_str("total script weight must not be zero"),
            EngineError::Seed(e) => write!(f, "{e}"),
            EngineError::CountBranches {
                error,
                missing_table_in,
            } => count_branches_failed(f, error, missing_table_in.as_deref(), prog),
            EngineError::InvalidBranchCount(v) => {
                write!(f, "invalid count(*) from pgbench_branches: \"{v}\"")
            }
            EngineError::NoAccountsTable { dbname } => write!(
                f,
                "no pgbench_accounts table found in \"search_path\"\n{prog}: hint: Perhaps you need to do \
                 initialization (\"pgbench -i\") in database \"{dbname}\"."
            ),
            EngineError::PartitionMethod(m) => write!(f, "unexpected partition method: \"{m}\""),
            EngineError::Preflight(p) => preflight_refused(f, p, prog),
            EngineError::Log(e) => write!(f, "{e}"),
            EngineError::Thread(e) => write!(f, "could not create thread: {e}"),
            EngineError::Poll(e) => write!(f, "waiting for the clients' sockets failed: {e}"),
            EngineError::IoUring(e) => write!(
                f,
                "io_uring cannot be used here ({e}); use --io=epoll or --io=auto"
            ),
            EngineError::ThreadPanicked => f.write_str("a worker thread failed unexpectedly"),
            EngineError::LateForStart {
                ready_us,
                start_at_us,
            } => write!(
                f,
                "the clients were connected at {}, {:.3} s after --start-at ({}), later than the {} s allowed: this generator does not run, so as not to measure another window than the others",
                crate::wallclock::utc(*ready_us),
                (ready_us - start_at_us) as f64 / 1e6,
                crate::wallclock::utc(*start_at_us),
                crate::config::fleet::LATE_TOLERANCE_US / 1_000_000
            ),
            EngineError::Report(e) => write!(f, "could not build the report: {e}"),
        }
    }
}

/// pgbench's message when the count of branches fails: libpq's wording
/// (PQerrorMessage), with the LINE excerpt and caret, and the
/// closed-connection lines after a FATAL error; the hint to initialize
/// when the table does not exist.
fn count_branches_failed(
    f: &mut fmt::Formatter<'_>,
    error: &pgwire::Error,
    missing_table_in: Option<&str>,
    prog: &str,
) -> fmt::Result {
    write!(
        f,
        "could not count number of branches: {}",
        query_failure(error, Some(COUNT_BRANCHES)).trim_end()
    )?;
    if let Some(db) = missing_table_in {
        write!(
            f,
            "\n{prog}: hint: Perhaps you need to do initialization (\"pgbench -i\") in database \"{db}\"."
        )?;
    }
    Ok(())
}

/// The preflight refusal: the server's connection slots, how many are
/// reserved and in use, and what to do (fewer clients, more
/// `max_connections`, a pooler).
fn preflight_refused(f: &mut fmt::Formatter<'_>, p: &Preflight, prog: &str) -> fmt::Result {
    write!(
        f,
        "the server cannot accept {} more connections: max_connections is {}, ",
        p.clients, p.max_connections,
    )?;
    if p.superuser {
        write!(f, "none of which are reserved against a superuser, ")?;
    } else {
        write!(f, "{} are reserved for superusers", p.reserved)?;
        if p.role_slots {
            write!(f, " and roles with pg_use_reserved_connections")?;
        }
        write!(f, ", ")?;
    }
    write!(
        f,
        "and {} are in use, which leaves {}\n{prog}: hint: ",
        p.in_use,
        p.available().max(0),
    )?;
    if p.swept {
        write!(f, "Sweep to at most {} clients, ", p.available().max(1))?;
    } else {
        write!(f, "Run with fewer clients (-c {}), ", p.available().max(1))?;
    }
    if p.temp_instance {
        let needed = i64::from(p.clients) + p.reserved + p.in_use;
        write!(
            f,
            "or give the throwaway instance more with --temp-instance-setting=\
             max_connections={needed}; --no-preflight skips this check."
        )
    } else {
        write!(
            f,
            "raise max_connections on the server, or connect through a connection \
             pooler such as PgBouncer; --no-preflight skips this check."
        )
    }
}

impl std::error::Error for EngineError {}

impl From<ScriptError> for EngineError {
    fn from(e: ScriptError) -> Self {
        EngineError::Script(e)
    }
}

#[cfg(test)]
mod tests {
    use super::{EngineError, Preflight};

    /// Servers before 16 have no `pg_use_reserved_connections`, so the
    /// refusal names superusers alone there. Regression: a superuser was
    /// told `0 are reserved for superusers` when 3 were; the slots are
    /// open to it, which the message now says instead.
    #[test]
    fn preflight_names_the_reserved_slots_the_server_has() {
        let cases = [
            (
                false,
                false,
                3,
                "3 are reserved for superusers, and 1 are in use",
            ),
            (
                false,
                true,
                3,
                "3 are reserved for superusers and roles with pg_use_reserved_connections, \
                 and 1 are in use",
            ),
            (
                true,
                false,
                0,
                "max_connections is 50, none of which are reserved against a superuser, \
                 and 1 are in use, which leaves 49\n",
            ),
        ];
        for (superuser, role_slots, reserved, expected) in cases {
            let error = EngineError::Preflight(Preflight {
                clients: 60,
                max_connections: 50,
                reserved,
                in_use: 1,
                superuser,
                role_slots,
                temp_instance: false,
                swept: false,
            });
            let text = error.to_string();
            assert!(text.contains(expected), "{role_slots}: {text}");
        }
    }
}
