//! A throwaway PgBouncer in front of a throwaway server
//! (`pgbolt --temp-instance --temp-pgbouncer`).
//!
//! It is Debian's `pgbouncer` (PATH, then `/usr/sbin`, `/usr/local/sbin`,
//! `/usr/local/bin`), run as the server's OS account (PgBouncer refuses to
//! run as root, as PostgreSQL does), in a directory of its own,
//! `$TMPDIR/pgbolt-pgbouncer-XXXXXX`, that holds its configuration, its
//! user list, its log and the Unix socket it listens on (no TCP at all:
//! `listen_addr` is empty, so no port can clash with Debian's own service
//! on 6432). The directory is mode 0700 and belongs to the server's OS
//! account, so no other local user reaches the socket; behind it clients
//! authenticate with `scram-sha-256` against `users.txt` (mode 0600), which
//! holds the server superuser's SCRAM verifier, read from `pg_authid`: the
//! password that passes is the one in the instance's password file
//! ([`TempDb::passfile`]), so whoever may use the server may use the
//! pooler, nobody else. PgBouncer logs in to the server with the password
//! itself, from its `[databases]` line. (A plain-text password in the
//! `auth_file` works too, but PgBouncer 1.18 then derives the key for
//! every client, one at a time: 12 clients connecting at once took over a
//! second.) The superuser is also the console's only admin, so `SHOW
//! POOLS` and `SHOW STATS` answer on database `pgbouncer` for it alone.
//!
//! The directory is put under the care of the same registry as the
//! servers' ([`super::lifecycle`]), so the pooler is stopped and removed on
//! every exit path the servers are: `Drop`, process exit, SIGINT, SIGTERM
//! and SIGHUP, and the watchdog for deaths nothing inside the process sees.
//! It is stopped with SIGKILL (see [`super::lifecycle::set_pooler_pid`]);
//! core dumps are turned off in the child so that nothing is written if a
//! version takes a signal for a crash.

use std::fmt;
use std::io;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::os::ServerOwner;
use super::{lifecycle, TempDb};

/// The Unix socket's port number (the socket is `.s.PGSQL.6432` in the
/// pooler's own directory; nothing listens on TCP).
const PORT: u16 = 6432;

/// How long the pooler may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// Where PgBouncer is looked for after PATH.
const SBIN_DIRS: &[&str] = &["/usr/sbin", "/usr/local/sbin", "/usr/local/bin"];

/// A list of directories (separated by `:`) searched for `pgbouncer`
/// instead of the standard places; for tests and unusual installs.
pub const PGBOUNCER_DIRS_ENV: &str = "PGBOLT_PGBOUNCER_DIRS";

/// PgBouncer's `pool_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolMode {
    Session,
    Transaction,
    Statement,
}

impl PoolMode {
    /// The word in `pgbouncer.ini` and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            PoolMode::Session => "session",
            PoolMode::Transaction => "transaction",
            PoolMode::Statement => "statement",
        }
    }

    /// Parses `session`, `transaction` or `statement`.
    pub fn parse(text: &str) -> Option<PoolMode> {
        match text {
            "session" => Some(PoolMode::Session),
            "transaction" => Some(PoolMode::Transaction),
            "statement" => Some(PoolMode::Statement),
            _ => None,
        }
    }
}

/// How the pooler is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PgBouncerSpec {
    pub pool_mode: PoolMode,
    /// Clients it accepts at once.
    pub max_client_conn: u32,
    /// Server connections per database and user.
    pub default_pool_size: u32,
}

/// Why the pooler could not start.
#[derive(Debug)]
pub enum PgBouncerError {
    /// No `pgbouncer` program in any of these places.
    NotFound { searched: Vec<PathBuf> },
    /// A file or process operation failed.
    Io { context: String, source: io::Error },
    /// The server's account or directory could not be set up.
    Setup(super::Error),
    /// It exited or hung before accepting connections; its log.
    Start { reason: String, log: String },
}

impl fmt::Display for PgBouncerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PgBouncerError::NotFound { searched } => {
                let places: Vec<String> =
                    searched.iter().map(|p| p.display().to_string()).collect();
                write!(
                    f,
                    "pgbouncer was not found (searched {}); install the Debian package \
                     \"pgbouncer\" (apt-get install pgbouncer, or make deps)",
                    places.join(", ")
                )
            }
            PgBouncerError::Io { context, source } => write!(f, "{context}: {source}"),
            PgBouncerError::Setup(e) => write!(f, "{e}"),
            PgBouncerError::Start { reason, log } => {
                write!(f, "pgbouncer {reason}")?;
                if !log.trim().is_empty() {
                    write!(f, "; its log says:\n{}", log.trim_end())?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for PgBouncerError {}

/// A running throwaway PgBouncer. Dropping it stops it and removes its
/// directory.
#[derive(Debug)]
pub struct TempPgBouncer {
    id: u64,
    root: PathBuf,
    pid: i32,
    version: (u32, u32, u32),
    spec: PgBouncerSpec,
    user: String,
}

impl TempPgBouncer {
    /// Starts PgBouncer in front of `server` and waits until it accepts
    /// connections.
    pub fn start(server: &TempDb, spec: PgBouncerSpec) -> Result<TempPgBouncer, PgBouncerError> {
        let program = find_pgbouncer()?;
        let version = version_of(&program)?;
        let owner = ServerOwner::resolve(&server.owner.name).map_err(PgBouncerError::Setup)?;
        let root = tempfile::Builder::new()
            .prefix("pgbolt-pgbouncer-")
            .tempdir_in(super::builder::temp_base())
            .map_err(|e| io_error("creating a temporary directory", e))?
            .keep();
        super::os::make_private(&root).map_err(PgBouncerError::Setup)?;
        // From here on the registry owns the directory.
        let id = lifecycle::register(root.clone());
        let mut bouncer = TempPgBouncer {
            id,
            root,
            pid: 0,
            version,
            spec,
            user: server.superuser().to_owned(),
        };
        bouncer.write_files(server)?;
        owner
            .chown_tree(&bouncer.root)
            .map_err(PgBouncerError::Setup)?;
        let mut command = Command::new(&program);
        command
            .arg(bouncer.root.join("pgbouncer.ini"))
            .current_dir(&bouncer.root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Ctrl-C reaches us, not the pooler; we decide how it stops.
            .process_group(0);
        super::cluster::clear_pg_env(&mut command);
        owner.apply(&mut command);
        let files = u64::from(spec.max_client_conn) + u64::from(spec.default_pool_size) + 64;
        // SAFETY: setrlimit is async-signal-safe and reads only the values
        // copied into the closure.
        unsafe {
            command.pre_exec(move || {
                let core = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                libc::setrlimit(libc::RLIMIT_CORE, &core);
                let mut open = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                if libc::getrlimit(libc::RLIMIT_NOFILE, &mut open) == 0 && open.rlim_cur < files {
                    open.rlim_cur = files.min(open.rlim_max);
                    libc::setrlimit(libc::RLIMIT_NOFILE, &open);
                }
                Ok(())
            });
        }
        let child = command
            .spawn()
            .map_err(|e| io_error(&format!("starting {}", program.display()), e))?;
        let pid = child.id() as i32;
        if !lifecycle::set_pooler_pid(id, pid) {
            // A signal cleaned everything up meanwhile.
            // SAFETY: our own child, not reaped yet.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            return Err(PgBouncerError::Start {
                reason: "was stopped by a signal while starting".into(),
                log: String::new(),
            });
        }
        bouncer.pid = pid;
        bouncer.wait_until_accepting()?;
        Ok(bouncer)
    }

    fn write_files(&self, server: &TempDb) -> Result<(), PgBouncerError> {
        let users = self.root.join("users.txt");
        let ini = format!(
            "[databases]\n\
             * = host={host} port={port} user={user} password={password}\n\
             [pgbouncer]\n\
             listen_addr =\n\
             listen_port = {PORT}\n\
             unix_socket_dir = {root}\n\
             auth_type = scram-sha-256\n\
             auth_file = {users}\n\
             admin_users = {user}\n\
             stats_users = {user}\n\
             pool_mode = {mode}\n\
             max_client_conn = {max_client_conn}\n\
             default_pool_size = {pool_size}\n\
             logfile = {log}\n",
            host = server.socket_dir().display(),
            port = server.port(),
            user = self.user,
            password = server.superuser_password(),
            root = self.root.display(),
            users = users.display(),
            mode = self.spec.pool_mode.name(),
            max_client_conn = self.spec.max_client_conn,
            pool_size = self.spec.default_pool_size,
            log = self.log_file().display(),
        );
        super::os::write_file(&self.root.join("pgbouncer.ini"), ini.as_bytes(), 0o600)
            .map_err(PgBouncerError::Setup)?;
        // The server's own verifier: PgBouncer checks a client's proof
        // against it without deriving a key from a plain-text password for
        // every connection (milliseconds each, one at a time in its single
        // thread).
        let verifier = server
            .psql("SELECT rolpassword FROM pg_authid WHERE rolname = current_user")
            .map_err(PgBouncerError::Setup)?;
        let quoted = |text: &str| format!("\"{}\"", text.replace('"', "\"\""));
        let line = format!("{} {}\n", quoted(&self.user), quoted(verifier.trim()));
        super::os::write_file(&users, line.as_bytes(), 0o600).map_err(PgBouncerError::Setup)
    }

    fn wait_until_accepting(&self) -> Result<(), PgBouncerError> {
        let socket = self.root.join(format!(".s.PGSQL.{PORT}"));
        let started = Instant::now();
        loop {
            if UnixStream::connect(&socket).is_ok() {
                return Ok(());
            }
            if let Some(status) = lifecycle::exit_status(self.pid) {
                return Err(PgBouncerError::Start {
                    reason: format!("exited at start (wait status {status})"),
                    log: self.log_tail(20),
                });
            }
            if started.elapsed() > START_TIMEOUT {
                return Err(PgBouncerError::Start {
                    reason: format!(
                        "did not accept connections within {} s",
                        START_TIMEOUT.as_secs()
                    ),
                    log: self.log_tail(20),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The directory of its Unix socket (`host=` for clients).
    pub fn socket_dir(&self) -> &Path {
        &self.root
    }

    /// The port number in the socket's name.
    pub fn port(&self) -> u16 {
        PORT
    }

    /// Its process id, for its CPU in `/proc`.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Its version, as `pgbouncer --version` gave it.
    pub fn version(&self) -> (u32, u32, u32) {
        self.version
    }

    pub fn spec(&self) -> PgBouncerSpec {
        self.spec
    }

    /// The user clients log in as (the server's superuser).
    pub fn user(&self) -> &str {
        &self.user
    }

    /// libpq connection string for `dbname` through the pooler (no
    /// password: it is the server's, in [`TempDb::passfile`]).
    pub fn conninfo(&self, dbname: &str) -> String {
        format!(
            "host={} port={PORT} user={} dbname={dbname}",
            self.root.display(),
            self.user
        )
    }

    pub fn log_file(&self) -> PathBuf {
        self.root.join("pgbouncer.log")
    }

    /// The last `lines` lines of its log.
    pub fn log_tail(&self, lines: usize) -> String {
        super::cluster::log_tail(&self.log_file(), lines)
    }
}

impl Drop for TempPgBouncer {
    fn drop(&mut self) {
        lifecycle::release(self.id);
    }
}

fn io_error(context: &str, source: io::Error) -> PgBouncerError {
    PgBouncerError::Io {
        context: context.to_owned(),
        source,
    }
}

/// The `pgbouncer` program: in [`PGBOUNCER_DIRS_ENV`]'s directories when
/// set, otherwise on PATH, then in [`SBIN_DIRS`].
pub fn find_pgbouncer() -> Result<PathBuf, PgBouncerError> {
    let dirs: Vec<PathBuf> = match std::env::var_os(PGBOUNCER_DIRS_ENV) {
        Some(dirs) if !dirs.is_empty() => std::env::split_paths(&dirs).collect(),
        _ => std::env::var_os("PATH")
            .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .chain(SBIN_DIRS.iter().map(PathBuf::from))
            .collect(),
    };
    let mut searched = Vec::new();
    for dir in dirs {
        if dir.as_os_str().is_empty() || searched.contains(&dir) {
            continue;
        }
        let program = dir.join("pgbouncer");
        if program.is_file() {
            return Ok(program);
        }
        searched.push(dir);
    }
    Err(PgBouncerError::NotFound { searched })
}

/// `pgbouncer --version`'s first line, `PgBouncer 1.18.0`, as numbers.
fn version_of(program: &Path) -> Result<(u32, u32, u32), PgBouncerError> {
    let output = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| io_error(&format!("running {} --version", program.display()), e))?;
    let text = String::from_utf8_lossy(&output.stdout);
    parse_version(text.lines().next().unwrap_or_default()).ok_or_else(|| PgBouncerError::Start {
        reason: format!("gave no version we can read: \"{}\"", text.trim()),
        log: String::new(),
    })
}

/// `PgBouncer 1.18.0` (or a bare `1.18.0`) as numbers.
pub fn parse_version(line: &str) -> Option<(u32, u32, u32)> {
    let word = line
        .split_whitespace()
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))?;
    let mut parts = word
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().ok());
    let major = parts.next()??;
    let minor = parts.next()??;
    let patch = parts.next().flatten().unwrap_or(0);
    Some((major, minor, patch))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_pgbouncers_lines() {
        assert_eq!(parse_version("PgBouncer 1.18.0"), Some((1, 18, 0)));
        assert_eq!(parse_version("1.21.0"), Some((1, 21, 0)));
        assert_eq!(parse_version("PgBouncer 1.23"), Some((1, 23, 0)));
        assert_eq!(parse_version("PgBouncer"), None);
    }

    #[test]
    fn modes_parse_by_name() {
        for mode in [
            PoolMode::Session,
            PoolMode::Transaction,
            PoolMode::Statement,
        ] {
            assert_eq!(PoolMode::parse(mode.name()), Some(mode));
        }
        assert_eq!(PoolMode::parse("txn"), None);
    }
}
