//! Throwaway PostgreSQL instances: `pgbolt --temp-instance` and the test
//! harness of the whole project.
//!
//! ```no_run
//! use pgbolt::tempdb::{AuthMethod, TempDb};
//! let db = TempDb::builder().tcp(true).auth(AuthMethod::ScramSha256).start()?;
//! assert_eq!(db.psql("SELECT 1")?.trim(), "1");
//! # Ok::<(), pgbolt::tempdb::Error>(())
//! ```
//!
//! # Making an instance
//! The server programs are looked for on `PATH`, via `pg_config
//! --bindir`, in [`DEPS_BIN_DIR`] (PostgreSQL 18 from `make deps`), in
//! `/usr/lib/postgresql/*/bin` and `/usr/pgsql-*/bin`, and the newest
//! server found is taken ([`find_bin_dir`]); [`Builder::bin_dirs`] names
//! the directories instead (the tests' PostgreSQL 15 instances). Each instance lives in one fresh
//! directory `$TMPDIR/pgbolt-tempdb-XXXXXX` holding the data directory
//! (`data/`), the Unix socket, the server log (`server.log`) and, with SSL,
//! the certificates (`ssl/`) and `pgpass`, a libpq password file (mode
//! 0600, the current user's) with the superuser's password
//! ([`TempDb::passfile`]). The server listens on the socket only, or also
//! on 127.0.0.1 with `.tcp(true)` (a free port, retried if another process
//! grabs it first).
//!
//! # Who can connect
//! The directory is mode 0700 and belongs to the server's OS user, so no
//! other local user reaches the socket (root, which we may be, reaches it
//! anyway). [`Builder::private`] (what `--temp-instance` uses) also puts
//! `scram-sha-256` on every `pg_hba.conf` line and draws the superuser's
//! password for the instance, so TCP, when asked for, lets in only who can
//! read the password file. The tests' instances keep `trust` by default:
//! they are the harness's, made and removed by one test binary.
//!
//! PostgreSQL refuses to run as root, so when we are root the data directory
//! is given to the `postgres` OS user and `initdb` and the server run as that
//! user; the superuser role is then called `postgres`. Otherwise everything
//! runs as the current user and the superuser is named after it, as `initdb`
//! would do. Helpers such as [`TempDb::psql`] run as the current user and
//! connect through the socket with the superuser's password, so they work
//! whatever the authentication method.
//!
//! `initdb` costs most of a start, so it runs once per process (per
//! binaries, OS user and superuser) into a template that each instance
//! copies; the per-instance configuration is written over the copy: a
//! replaced `pg_hba.conf`, and `pgbolt.conf` included from the end of
//! `postgresql.conf`. The server is started directly (`postgres -D`), in its
//! own process group, and is ready when `postmaster.pid` says so (what
//! `pg_ctl -w` checks); if it exits first, the error carries the log lines
//! that reject a setting and the log's tail.
//!
//! # Clean-up on every exit path
//! - `Drop` (also during a panic's unwinding): immediate shutdown (SIGQUIT,
//!   SIGKILL after 10 s), wait, remove the directory.
//! - Process exit: statics are never dropped, so the first instance
//!   registers a `libc::atexit` hook that cleans up every instance still in
//!   the process-wide registry. This is what stops [`shared`] instances at
//!   the end of a test binary (the test harness ends through `exit`).
//! - SIGINT, SIGTERM, SIGHUP: [`install_signal_cleanup`] (called by
//!   [`shared`]; `main` calls it for `--temp-instance`) installs a handler
//!   that only writes to a pipe; a thread cleans up and re-raises the signal.
//! - Deaths nothing inside the process sees (SIGKILL, abort): each instance
//!   has a watchdog, a small `/bin/sh` loop in its own process group that
//!   reads a pipe only we hold open. When the pipe reaches end of file
//!   without having been told `done`, we are gone: it stops the server and
//!   removes the directory. (The postmaster itself also shuts down within a
//!   minute when its `postmaster.pid` disappears.)
//!
//! A throwaway PgBouncer ([`TempPgBouncer`], `--temp-pgbouncer`) lives
//! beside the servers and is cleaned up by the same registry.
//!
//! [`TempDb::keep`] is the one way out of all this: the server keeps running
//! and the caller gets the commands to connect and to stop it.
//!
//! # Sharing
//! [`shared`] gives every test of a test binary the same default instance
//! (socket and TCP, `trust`), created on first use. Tests that create
//! tables (`pgbench -i`) should each work in a database of their own from
//! [`TempDb::create_database`], since the test harness runs them in
//! parallel. For another shared configuration, keep a `TempDb` in your own
//! `OnceLock`: any instance still alive at exit is cleaned up the same way.
//!
//! # Running client programs
//! [`TempDb::command`] prepares `psql`, `pgbench` or any program of the
//! server's bin directory with `PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE` and
//! `PGPASSWORD` set (and every other inherited `PG*` variable removed);
//! [`TempDb::psql`] runs set-up SQL and returns the output. Connection
//! strings: [`TempDb::conninfo`] (socket), [`TempDb::tcp_conninfo`].

mod bins;
mod builder;
mod cluster;
mod config;
mod error;
mod instance;
mod lifecycle;
mod os;
mod pgbouncer;
mod ssl;

use std::sync::OnceLock;

pub use bins::{find_bin_dir, BinSearch, DEPS_BIN_DIR};
pub use builder::{AuthMethod, Builder, PasswordEncryption};
pub use error::{Error, StartFailure};
pub use instance::{KeptInstance, TempDb};
pub use lifecycle::install_signal_cleanup;
pub use pgbouncer::{
    find_pgbouncer, parse_version, PgBouncerError, PgBouncerSpec, PoolMode, TempPgBouncer,
    PGBOUNCER_DIRS_ENV,
};
pub use ssl::{CertFiles, ServerCert, SslFiles};

/// One default instance per process (Unix socket and 127.0.0.1, `trust`),
/// started on first call; also installs [`install_signal_cleanup`]. It is
/// stopped and removed when the process exits. A start failure is kept and
/// returned to every caller.
pub fn shared() -> Result<&'static TempDb, &'static Error> {
    static SHARED: OnceLock<Result<TempDb, Error>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            install_signal_cleanup()?;
            TempDb::builder().tcp(true).start()
        })
        .as_ref()
}
