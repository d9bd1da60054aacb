//! A throwaway pgbouncer in front of a throwaway PostgreSQL server, for the
//! tests that check pgbolt through a connection pooler.
//!
//! ```text
//! let bouncer = Bouncer::builder()
//!     .pool_mode(PoolMode::Transaction)
//!     .max_client_conn(2)
//!     .start(server);
//! let out = bouncer.command(pgbench_path()).args(["-S", "-t", "10"]).output()?;
//! ```
//!
//! # Why here and not `src/tempdb`'s
//! `src/tempdb` has a throwaway PgBouncer of its own
//! (`pgbolt::tempdb::TempPgBouncer`, for `--temp-pgbouncer`), set up the
//! one way pgbolt needs it and guarded like the servers (an exit hook,
//! signal handlers, a watchdog). The tests here need what the product
//! never writes: TCP listening, more users, a raised open-file limit,
//! any line of `pgbouncer.ini`, and PgBouncer's own defaults for the
//! sizes. So they keep this harness, with a pgbouncer that runs as a
//! child of the test process, stopped by `Drop` (which also runs while a
//! failing test unwinds). A test binary killed outright leaves the
//! pgbouncer running; its directory under `$TMPDIR` tells which one it is.
//!
//! # How it runs
//! pgbouncer comes from Debian's package (`make deps` installs it); a test
//! that needs it fails with a clear message when it is missing. pgbouncer
//! refuses to run as root, so as root it runs as the `postgres` OS user,
//! like the servers. Its directory (`$TMPDIR/pgbolt-pgbouncer-XXXXXX`)
//! holds the configuration, the user list, the log and the Unix socket it
//! listens on (and TCP only when a test sets `listen_addr`). Its port
//! number is one that was free on 127.0.0.1, never a fixed one: Debian's
//! own pgbouncer service listens on localhost:6432 once the package is
//! installed, as may another test run on the same machine, and a
//! pgbouncer that cannot bind its TCP port only warns and goes on, so the
//! clients reached the other one and hung (a start that logs that warning
//! is retried on another port). Clients are trusted (`auth_type = trust`; the user
//! list names the server's superuser and any [`Builder::user`]); pgbouncer
//! logs in to the server as the client's user with the superuser's
//! password, which works whatever the server's authentication method. The
//! start is over when the socket accepts a connection; if pgbouncer exits
//! first, the panic message carries its log.

use std::ffi::CString;
use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pgbolt::tempdb::TempDb;

use super::without_pg_env;

/// Debian's pgbouncer.
pub const PGBOUNCER: &str = "/usr/sbin/pgbouncer";

/// Starts tried before giving up on finding a TCP port of our own.
const PORT_ATTEMPTS: usize = 5;

/// What pgbouncer logs when another process holds its TCP port.
const PORT_TAKEN: &str = "cannot listen on";

/// How long a start may take before the test fails.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// How long pgbouncer gets to exit after SIGTERM before SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// pgbouncer's `pool_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolMode {
    Session,
    Transaction,
    Statement,
}

impl PoolMode {
    pub fn name(self) -> &'static str {
        match self {
            PoolMode::Session => "session",
            PoolMode::Transaction => "transaction",
            PoolMode::Statement => "statement",
        }
    }
}

/// What the next [`Bouncer`] looks like.
#[derive(Debug, Clone)]
pub struct Builder {
    pool_mode: PoolMode,
    max_client_conn: u32,
    default_pool_size: u32,
    users: Vec<String>,
    settings: Vec<(String, String)>,
    open_files: Option<u64>,
}

impl Builder {
    pub fn pool_mode(mut self, mode: PoolMode) -> Self {
        self.pool_mode = mode;
        self
    }

    /// Client connections pgbouncer accepts at once; the next one is
    /// refused with `no more connections allowed (max_client_conn)`.
    pub fn max_client_conn(mut self, n: u32) -> Self {
        self.max_client_conn = n;
        self
    }

    /// Server connections per database and user; clients beyond it wait.
    pub fn default_pool_size(mut self, n: u32) -> Self {
        self.default_pool_size = n;
        self
    }

    /// Another role clients may log in as (it must exist on the server).
    pub fn user(mut self, name: &str) -> Self {
        self.users.push(name.to_string());
        self
    }

    /// Raises pgbouncer's limit on open files to `n` (soft and hard), for
    /// thousands of clients: set in the child before pgbouncer starts, so
    /// that no login session (as `runuser`'s PAM one) resets it to 1,024.
    pub fn open_files(mut self, n: u64) -> Self {
        self.open_files = Some(n);
        self
    }

    /// Any other line of the `[pgbouncer]` section.
    pub fn setting(mut self, name: &str, value: &str) -> Self {
        self.settings.push((name.to_string(), value.to_string()));
        self
    }

    /// Starts pgbouncer in front of `server` and waits until it accepts
    /// connections. Panics with pgbouncer's log when it cannot start.
    pub fn start(self, server: &TempDb) -> Bouncer {
        assert!(
            Path::new(PGBOUNCER).exists(),
            "{PGBOUNCER} is missing: these tests need Debian's pgbouncer (`make deps` installs it)"
        );
        for _ in 1..PORT_ATTEMPTS {
            let bouncer = self.start_on(server, free_port());
            if !bouncer.log().contains(PORT_TAKEN) {
                return bouncer;
            }
        }
        let bouncer = self.start_on(server, free_port());
        assert!(
            !bouncer.log().contains(PORT_TAKEN),
            "pgbouncer found no free TCP port:\n{}",
            bouncer.log()
        );
        bouncer
    }

    fn start_on(&self, server: &TempDb, port: u16) -> Bouncer {
        let owner = Owner::for_pgbouncer();
        let dir = tempfile::Builder::new()
            .prefix("pgbolt-pgbouncer-")
            .tempdir()
            .expect("temporary directory for pgbouncer");
        let root = dir.path().to_path_buf();
        let ini = root.join("pgbouncer.ini");
        let users = root.join("users.txt");
        let log = root.join("pgbouncer.log");
        fs::write(&ini, self.ini(server, &root, &users, &log, port)).expect("write pgbouncer.ini");
        let mut names = vec![server.superuser().to_string()];
        names.extend(self.users.iter().cloned());
        let list: String = names.iter().map(|u| format!("\"{u}\" \"\"\n")).collect();
        fs::write(&users, list).expect("write the user list");
        owner.give(&root);
        let mut command = Command::new(PGBOUNCER);
        command
            .arg(&ini)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        owner.apply(&mut command);
        if let Some(n) = self.open_files {
            let limit = libc::rlimit {
                rlim_cur: n,
                rlim_max: n,
            };
            // SAFETY: setrlimit is async-signal-safe and reads only the
            // struct copied into the closure.
            unsafe {
                command.pre_exec(move || {
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                });
            }
        }
        let child = command.spawn().expect("pgbouncer starts");
        let mut bouncer = Bouncer {
            child,
            root,
            log,
            superuser: server.superuser().to_string(),
            password: server.superuser_password().to_string(),
            port,
            _dir: dir,
        };
        bouncer.wait_until_accepting();
        bouncer
    }

    fn ini(
        &self,
        server: &TempDb,
        root: &Path,
        users: &Path,
        log: &Path,
        listen_port: u16,
    ) -> String {
        let mut ini = format!(
            "[databases]\n\
             * = host={host} port={port} password={password}\n\
             [pgbouncer]\n\
             listen_addr =\n\
             listen_port = {listen_port}\n\
             unix_socket_dir = {root}\n\
             auth_type = trust\n\
             auth_file = {users}\n\
             pool_mode = {mode}\n\
             max_client_conn = {max_client_conn}\n\
             default_pool_size = {pool_size}\n\
             logfile = {log}\n",
            host = server.socket_dir().display(),
            port = server.port(),
            password = server.superuser_password(),
            root = root.display(),
            users = users.display(),
            mode = self.pool_mode.name(),
            max_client_conn = self.max_client_conn,
            pool_size = self.default_pool_size,
            log = log.display(),
        );
        for (name, value) in &self.settings {
            ini.push_str(&format!("{name} = {value}\n"));
        }
        ini
    }
}

/// A running pgbouncer; dropping it stops it and removes its directory.
#[derive(Debug)]
pub struct Bouncer {
    child: Child,
    root: PathBuf,
    log: PathBuf,
    superuser: String,
    password: String,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Bouncer {
    /// Session pooling, pgbouncer's own defaults for the sizes
    /// (`max_client_conn` 100, `default_pool_size` 20).
    pub fn builder() -> Builder {
        Builder {
            pool_mode: PoolMode::Session,
            max_client_conn: 100,
            default_pool_size: 20,
            users: Vec::new(),
            settings: Vec::new(),
            open_files: None,
        }
    }

    /// The directory of the socket clients connect to (`PGHOST`).
    pub fn socket_dir(&self) -> &Path {
        &self.root
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// libpq connection string for `dbname` through pgbouncer.
    pub fn conninfo(&self, dbname: &str) -> String {
        format!(
            "host={} port={} user={} dbname={dbname}",
            self.root.display(),
            self.port,
            self.superuser
        )
    }

    /// `program` with `PGHOST`, `PGPORT`, `PGUSER` and `PGPASSWORD` aimed at
    /// pgbouncer, every other inherited `PG*` variable removed.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = without_pg_env(program);
        command
            .env("PGHOST", &self.root)
            .env("PGPORT", self.port.to_string())
            .env("PGUSER", &self.superuser)
            .env("PGPASSWORD", &self.password);
        command
    }

    /// pgbouncer's log so far.
    pub fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn wait_until_accepting(&mut self) {
        let socket = self.root.join(format!(".s.PGSQL.{}", self.port));
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if UnixStream::connect(&socket).is_ok() {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("pgbouncer exited at start ({status}):\n{}", self.log());
            }
            if Instant::now() > deadline {
                panic!(
                    "pgbouncer did not accept connections within {START_TIMEOUT:?}:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Bouncer {
    /// SIGTERM (pgbouncer's immediate shutdown), SIGKILL if it lingers.
    fn drop(&mut self) {
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: signalling our own child, which has not been reaped yet.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A TCP port on 127.0.0.1 that was free a moment ago (pgbouncer's start
/// tells whether it still is).
fn free_port() -> u16 {
    TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free TCP port on 127.0.0.1")
}

/// The OS account pgbouncer runs as: `postgres` when we are root (which
/// pgbouncer refuses), otherwise ourselves.
struct Owner {
    ids: Option<(u32, u32)>,
}

impl Owner {
    fn for_pgbouncer() -> Owner {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Owner { ids: None };
        }
        let name = CString::new("postgres").expect("no NUL");
        // SAFETY: a valid C string; the result is read before any other
        // getpw* call in this thread.
        let pwd = unsafe { libc::getpwnam(name.as_ptr()) };
        assert!(
            !pwd.is_null(),
            "running as root, pgbouncer needs the `postgres` OS user"
        );
        // SAFETY: checked non-null above.
        let ids = unsafe { ((*pwd).pw_uid, (*pwd).pw_gid) };
        Owner { ids: Some(ids) }
    }

    /// Gives the directory and the files in it to the account.
    fn give(&self, root: &Path) {
        let Some((uid, gid)) = self.ids else {
            return;
        };
        let entries = fs::read_dir(root).expect("list the pgbouncer directory");
        for path in entries.flatten().map(|e| e.path()).chain([root.into()]) {
            std::os::unix::fs::chown(&path, Some(uid), Some(gid)).expect("chown");
        }
        fs::set_permissions(root, fs::Permissions::from_mode(0o700)).expect("chmod");
    }

    fn apply(&self, command: &mut Command) {
        if let Some((uid, gid)) = self.ids {
            command.uid(uid).gid(gid);
        }
    }
}

/// A throwaway server with the pgbench tables (scale 1) in `postgres`,
/// allowing `max_connections` when given; the caller keeps it for its test
/// binary.
pub fn initialized_server(max_connections: Option<u32>) -> Result<TempDb, pgbolt::tempdb::Error> {
    pgbolt::tempdb::install_signal_cleanup()?;
    let mut builder = TempDb::builder();
    if let Some(n) = max_connections {
        builder = builder.max_connections(n);
    }
    let db = builder.start()?;
    let init = db
        .command(super::pgbench_path())
        .args(["-i", "-q", "-s", "1"])
        .output()
        .expect("pgbench runs");
    assert!(
        init.status.success(),
        "pgbench -i: {}",
        super::stderr(&init)
    );
    Ok(db)
}

/// Runs `program` (pgbench or pgbolt) with `args` through `bouncer`.
pub fn run(
    bouncer: &Bouncer,
    program: impl AsRef<std::ffi::OsStr>,
    args: &[&str],
) -> std::process::Output {
    bouncer
        .command(program)
        .args(args)
        .output()
        .expect("the program runs")
}

/// The `number of transactions actually processed` line of a report.
pub fn processed(out: &std::process::Output) -> Option<String> {
    super::line(
        &super::stdout(out),
        "number of transactions actually processed",
    )
    .map(str::to_string)
}
