//! `--temp-instance`: run against a throwaway PostgreSQL of our own.
//!
//! The instance comes from [`crate::tempdb`], built from the locally
//! installed server binaries, listening only on a Unix socket inside its own
//! temporary directory, private to the user who started pgbolt
//! ([`tempdb::Builder::private`]: a 0700 directory, `scram-sha-256` with a
//! password drawn for the instance, handed to every connection as a
//! password file and never shown), with PostgreSQL's own defaults except the
//! `--temp-instance-setting`s (the fast, unsafe test settings are off: the
//! point is to measure a clean server). The mode then runs unchanged: only
//! the connection options are rewritten to point at the instance, so `-i`
//! and a benchmark behave exactly as against any other server. A benchmark
//! without `-i` first creates pgbench's tables at the requested scale,
//! after the refusals its first step would make and the instance can
//! already tell (the connection limit, the targets' checks): loading
//! tables for a run that is then refused wastes the user's time.
//!
//! The instance is stopped and its directory removed on every exit path:
//! `Drop` on return and on panic, tempdb's signal clean-up on Ctrl-C and
//! SIGTERM while it starts or loads, its exit hook and watchdog otherwise.
//! `--temp-instance-keep` hands the instance to the user instead, with the
//! commands to connect to it and to stop it.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::RunError;
use crate::config::{Benchmark, Config, Connection, Init, Mode, TempInstance};
use crate::init::InitStep;
use crate::tempdb::{self, TempDb};

/// The scale of the tables created for a benchmark when `-s` is not given.
pub const DEFAULT_SCALE: u32 = 10;

/// Connections kept free beyond the benchmark's clients (the set-up
/// connection, the preflight check, a psql the user opens meanwhile).
const SPARE_CONNECTIONS: u32 = 10;

/// Settings a throwaway instance always has that say nothing about the
/// server under test; the report header leaves them out.
const UNINTERESTING_SETTINGS: &[&str] = &[
    "application_name",
    "client_encoding",
    "DateStyle",
    "default_text_search_config",
    "dynamic_shared_memory_type",
    "lc_messages",
    "lc_monetary",
    "lc_numeric",
    "lc_time",
    "listen_addresses",
    "log_timezone",
    "password_encryption",
    "port",
    "TimeZone",
    "unix_socket_directories",
];

/// Where the server binaries are searched, overriding the standard search
/// (PATH, `pg_config --bindir`, `/usr/lib/postgresql/*/bin`, ...): a list
/// of directories separated by `:`. Meant for tests and unusual installs.
pub const BIN_DIRS_ENV: &str = "PGBOLT_TEMP_INSTANCE_BIN_DIRS";

/// Starts the instance, runs `mode` against it, and stops it (or keeps it).
pub(super) fn run(
    config: &Config,
    temp: &TempInstance,
    mode: impl FnOnce(&Config, Option<&Init>) -> Result<i32, RunError>,
) -> Result<i32, RunError> {
    tempdb::install_signal_cleanup().map_err(start_error)?;
    if temp.pgbouncer.is_some() {
        // Missing, it is said before a server is made for nothing.
        tempdb::find_pgbouncer().map_err(|e| RunError::TempInstance(e.to_string()))?;
    }
    let db = builder(config, temp).start().map_err(start_error)?;
    match &config.mode {
        Mode::Run(b) if b.pgbench_output => {}
        // `--json=-` owns standard output; the report goes to standard error.
        Mode::Run(b) if b.json.as_deref() == Some(std::path::Path::new("-")) => {
            print_header(&db, &mut std::io::stderr())
        }
        _ => print_header(&db, &mut std::io::stdout()),
    }

    let mut local = config.clone();
    local.connection = Connection {
        host: Some(db.socket_dir().to_string_lossy().into_owned()),
        port: Some(db.port().to_string()),
        user: Some(db.superuser().to_string()),
        dbname: Some("postgres".to_string()),
        passfile: Some(db.passfile().to_path_buf()),
    };
    // In a benchmark, `-s` is the scale of the tables created here; the run
    // then reads it back from them, as pgbench does without `-s`.
    // Kept until the run is over; dropping it stops the pooler.
    let _bouncer = match (&mut local.mode, temp.pgbouncer) {
        (Mode::Run(benchmark), Some(mode)) => Some(
            start_pgbouncer(&db, benchmark, mode)
                .map_err(|e| RunError::TempInstance(format!("the throwaway PgBouncer: {e}")))?,
        ),
        _ => None,
    };
    let tables = match &mut local.mode {
        Mode::Run(benchmark) => {
            let scale = benchmark.scale.take().unwrap_or(DEFAULT_SCALE);
            crate::program::ewriteln!(
                "pgbolt: creating pgbench's tables at scale {scale} in the throwaway instance"
            );
            Some(default_init(scale))
        }
        _ => None,
    };
    let status = mode(&local, tables.as_ref());
    if !matches!(status, Ok(0)) {
        show_server_crash(&db);
    }

    if temp.keep {
        let kept = db.keep();
        crate::program::ewriteln!(
            "pgbolt: the throwaway instance keeps running in {}",
            kept.root.display()
        );
        crate::program::ewriteln!("  password file: {}", kept.passfile.display());
        crate::program::ewriteln!("  connect: {}", kept.connect_command);
        crate::program::ewriteln!("  stop:    {}", kept.stop_command);
    }
    status
}

/// The throwaway PgBouncer's server connections: `--pool-size`, or twice
/// the CPUs (a common starting point: a core's worth of backends running
/// and as many waiting on I/O).
fn pool_size(benchmark: &Benchmark) -> (u32, bool) {
    match benchmark.pool_size {
        Some(n) => (n, false),
        None => {
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
            (cpus * 2, true)
        }
    }
}

/// Starts the throwaway PgBouncer in front of `db`, says how it is set
/// up, and makes the benchmark's targets `direct` and `pgbouncer`.
fn start_pgbouncer(
    db: &TempDb,
    benchmark: &mut Benchmark,
    mode: tempdb::PoolMode,
) -> Result<tempdb::TempPgBouncer, tempdb::PgBouncerError> {
    let (default_pool_size, defaulted) = pool_size(benchmark);
    // The largest step's clients, and room for pgbolt's own sessions
    // (the set-up connection, the console, the monitor). With `-C`, twice
    // the clients: PgBouncer counts a client that has just disconnected
    // for a moment still, and refuses the reconnecting one (measured:
    // 32 clients with `-C` hit a max_client_conn of 42).
    let churn = if benchmark.connect_per_transaction || benchmark.connect_dimension {
        2
    } else {
        1
    };
    let spec = tempdb::PgBouncerSpec {
        pool_mode: mode,
        max_client_conn: benchmark
            .clients
            .saturating_mul(churn)
            .saturating_add(SPARE_CONNECTIONS),
        default_pool_size,
    };
    let bouncer = tempdb::TempPgBouncer::start(db, spec)?;
    // The size was the pooler's: the clients get no pool inside pgbolt.
    benchmark.pool_size = None;
    let (major, minor, patch) = bouncer.version();
    let why = if defaulted {
        " (CPUs x 2; --pool-size sets it)"
    } else {
        ""
    };
    crate::program::ewriteln!(
        "pgbolt: throwaway PgBouncer {major}.{minor}.{patch} in {}: {} pooling, \
         default_pool_size {default_pool_size}{why}, max_client_conn {}",
        bouncer.socket_dir().display(),
        mode.name(),
        spec.max_client_conn
    );
    let direct = format!(
        "host={} port={} user={} dbname=postgres",
        db.socket_dir().display(),
        db.port(),
        db.superuser()
    );
    benchmark.targets = vec![
        crate::config::target::Target {
            name: "direct".into(),
            conninfo: direct,
            pid: None,
        },
        crate::config::target::Target {
            name: "pgbouncer".into(),
            conninfo: bouncer.conninfo("postgres"),
            pid: Some(bouncer.pid()),
        },
    ];
    Ok(bouncer)
}

fn builder(config: &Config, temp: &TempInstance) -> tempdb::Builder {
    let mut builder = TempDb::builder().fast_settings(false).private();
    // Set but empty (`VAR=` in a script) means the standard search, not
    // searching nowhere.
    let dirs = std::env::var_os(BIN_DIRS_ENV)
        .map(|dirs| split_dirs(&dirs))
        .unwrap_or_default();
    if !dirs.is_empty() {
        builder = builder.bin_dirs(dirs);
    }
    let sets_max_connections = temp
        .settings
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("max_connections"));
    if let (Mode::Run(benchmark), false) = (&config.mode, sets_max_connections) {
        let pooled = temp.pgbouncer.map_or(0, |_| pool_size(benchmark).0);
        let needed = benchmark
            .clients
            .saturating_add(SPARE_CONNECTIONS)
            .saturating_add(pooled);
        if needed > 100 {
            builder = builder.max_connections(needed);
        }
    }
    for (name, value) in &temp.settings {
        builder = builder.setting(name.clone(), value.clone());
    }
    builder
}

fn split_dirs(dirs: &OsString) -> Vec<PathBuf> {
    std::env::split_paths(dirs)
        .filter(|dir| !dir.as_os_str().is_empty())
        .collect()
}

/// pgbench's default initialization (`-i` alone) at `scale`.
fn default_init(scale: u32) -> Init {
    Init {
        steps: vec![
            InitStep::DropTables,
            InitStep::CreateTables,
            InitStep::ClientSideGenerate,
            InitStep::Vacuum,
            InitStep::PrimaryKeys,
        ],
        scale,
        fillfactor: 100,
        quiet: true,
        unlogged_tables: false,
        tablespace: None,
        index_tablespace: None,
        partitions: 0,
        partition_method: None,
        jobs: None,
    }
}

/// How many of the server log's last lines are searched for a crash.
const CRASH_LOG_LINES: usize = 200;

/// How long a failed run waits for the server log to tell of a crash.
const CRASH_LOG_WAIT: Duration = Duration::from_secs(1);

/// A server log line that tells of a crash.
fn is_crash(line: &str) -> bool {
    line.contains("PANIC:") || line.contains("was terminated by signal")
}

/// After a failed load or run: if the server crashed (a PANIC, such as a
/// full disk, or a backend killed by a signal), its log says why, and the
/// client side only saw its connections break ("PQputline failed",
/// "server closed the connection unexpectedly"). The log goes away with
/// the instance, so the lines that explain it are shown now.
///
/// The postmaster logs a crash a moment after the connections break, so
/// the log is read a few times over up to [`CRASH_LOG_WAIT`].
fn show_server_crash(db: &TempDb) {
    let started = Instant::now();
    let tail = loop {
        let tail = db.log_tail(CRASH_LOG_LINES);
        if tail.lines().any(is_crash) {
            break tail;
        }
        if started.elapsed() >= CRASH_LOG_WAIT {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let crash: Vec<&str> = tail.lines().filter(|line| is_crash(line)).collect();
    crate::program::ewriteln!("pgbolt: the throwaway instance's server crashed; its log says:");
    for line in crash.iter().rev().take(5).rev() {
        crate::program::ewriteln!("  {line}");
    }
}

fn start_error(err: tempdb::Error) -> RunError {
    RunError::TempInstance(err.to_string())
}

/// The report's header (left out under `--pgbench-output`, which prints
/// pgbench's lines only): the server's version and every setting that
/// differs from PostgreSQL's built-in default. A failed query only loses
/// the header, never the run.
fn print_header(db: &TempDb, out: &mut impl std::io::Write) {
    let sql = "SELECT current_setting('server_version') \
               UNION ALL \
               SELECT string_agg(name || '=' || current_setting(name), ', ' ORDER BY name) \
               FROM pg_settings \
               WHERE source NOT IN ('default', 'override', 'client', 'session') \
               AND setting IS DISTINCT FROM boot_val";
    let Ok(output) = db.psql(sql) else {
        return;
    };
    let mut lines = output.lines();
    let version = lines.next().unwrap_or_default();
    let settings: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split(", ")
        .filter(|pair| {
            let name = pair.split('=').next().unwrap_or_default();
            !name.is_empty() && !UNINTERESTING_SETTINGS.contains(&name)
        })
        .collect();
    let _ = writeln!(
        out,
        "throwaway instance: PostgreSQL {version}, from {}",
        db.bin_dir().display()
    );
    let _ = if settings.is_empty() {
        writeln!(out, "server settings: PostgreSQL's defaults")
    } else {
        writeln!(out, "server settings: {}", settings.join(", "))
    };
}
