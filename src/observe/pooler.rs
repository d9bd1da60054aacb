//! PgBouncer's admin console (database `pgbouncer`): what a target is,
//! and what the pooler sees during a step.
//!
//! A target is taken for a PgBouncer when its console answers `SHOW
//! VERSION` to the target's user (an `admin_users` or `stats_users` entry,
//! or any user under `auth_type = any`); a server, or a pooler that will
//! not let the user in, is read as no pooler, and only what needs the
//! console is left out. Columns are found by name: they differ between
//! versions (1.18 added `cl_cancel_req`, 1.20 split it in two).
//!
//! `SHOW STATS`'s `avg_*` columns are averages over PgBouncer's
//! `stats_period` (a minute by default), not over a step, so a step's wait
//! per transaction is computed from the `total_*` counters read at its
//! start and end instead.

use std::time::{Duration, Instant};

use crate::model::pooler::{PoolerInfo, PoolerView};
use pgwire::blocking::{Client, Row};
use pgwire::conninfo;
use pgwire::Connector;

use crate::program::log;

/// How long the console may take to answer a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// An open console session.
pub struct Console {
    client: Client,
    /// The database whose pools and statistics are read.
    dbname: String,
}

impl Console {
    /// Opens the console of the pooler `target` reaches, as its user;
    /// `None` when it is no PgBouncer or does not let the user in.
    pub fn open(target: &conninfo::Config) -> Option<Console> {
        let mut config = target.clone();
        config.dbname = "pgbouncer".to_owned();
        config.connect_timeout = Some(
            config
                .connect_timeout
                .map_or(CONNECT_TIMEOUT, |t| t.min(CONNECT_TIMEOUT)),
        );
        let mut client = Client::connect(&config).ok()?;
        // A server with a database named `pgbouncer` fails this.
        let (_, rows) = client.simple_query_named("SHOW VERSION").ok()?;
        let version = first_text(&rows)?;
        version.contains("PgBouncer").then_some(Console {
            client,
            dbname: target.dbname.clone(),
        })
    }

    /// `SHOW VERSION` and the settings of `SHOW CONFIG` that matter here.
    pub fn info(&mut self) -> Option<PoolerInfo> {
        let (_, rows) = self.client.simple_query_named("SHOW VERSION").ok()?;
        let version = first_text(&rows)?;
        let (_, config) = self.client.simple_query_named("SHOW CONFIG").ok()?;
        let setting = |key: &str| -> Option<String> {
            config
                .iter()
                .find(|row| row.first().and_then(|k| k.as_deref()) == Some(key))
                .and_then(|row| row.get(1).cloned().flatten())
        };
        let number = |key: &str| setting(key).and_then(|v| v.parse().ok());
        Some(PoolerInfo {
            version,
            pool_mode: setting("pool_mode"),
            max_client_conn: number("max_client_conn"),
            default_pool_size: number("default_pool_size"),
            max_prepared_statements: number("max_prepared_statements"),
        })
    }

    /// The target database's pools (summed over users), now.
    pub fn pools(&mut self) -> Option<Pools> {
        let (names, rows) = self.client.simple_query_named("SHOW POOLS").ok()?;
        let column = |name: &str| names.iter().position(|n| n == name);
        let database = column("database")?;
        let mut pools = Pools::default();
        for row in rows
            .iter()
            .filter(|r| text(r, Some(database)) == self.dbname)
        {
            let n = |name: &str| number(row, column(name));
            pools.cl_active += n("cl_active");
            pools.cl_waiting += n("cl_waiting");
            pools.sv_active += n("sv_active");
            pools.sv_idle += n("sv_idle");
            let wait = n("maxwait") as f64 + n("maxwait_us") as f64 / 1e6;
            pools.maxwait_s = pools.maxwait_s.max(wait);
        }
        Some(pools)
    }

    /// The target database's `SHOW STATS` totals, now.
    pub fn totals(&mut self) -> Option<Totals> {
        let (names, rows) = self.client.simple_query_named("SHOW STATS").ok()?;
        let column = |name: &str| names.iter().position(|n| n == name);
        let database = column("database")?;
        // No row yet: no client has used the database since the start.
        let Some(row) = rows.iter().find(|r| text(r, Some(database)) == self.dbname) else {
            return Some(Totals::default());
        };
        Some(Totals {
            xact_count: number(row, column("total_xact_count")),
            wait_time_us: number(row, column("total_wait_time")),
        })
    }
}

/// One `SHOW POOLS` reading.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Pools {
    pub cl_active: u64,
    pub cl_waiting: u64,
    pub sv_active: u64,
    pub sv_idle: u64,
    pub maxwait_s: f64,
}

/// `SHOW STATS` counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub xact_count: u64,
    pub wait_time_us: u64,
}

/// Samples the console on a thread of its own while a step runs.
pub struct Sampler {
    stop: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<Option<PoolerView>>,
}

impl Sampler {
    /// Starts sampling through `console` every `every`; `pid` is the
    /// pooler's process when it runs here.
    pub fn start(mut console: Console, every: Duration, pid: Option<i32>) -> Sampler {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let started = Instant::now();
            let cpu_start = pid.and_then(process_cpu_ticks);
            let totals_start = console.totals();
            let mut view = PoolerView {
                samples: 0,
                cl_active_max: 0,
                cl_waiting_max: 0,
                sv_active_max: 0,
                maxwait_max_s: 0.0,
                wait_us_per_xact: None,
                cpu_percent: None,
            };
            loop {
                if let Some(p) = console.pools() {
                    view.samples += 1;
                    view.cl_active_max = view.cl_active_max.max(p.cl_active);
                    view.cl_waiting_max = view.cl_waiting_max.max(p.cl_waiting);
                    view.sv_active_max = view.sv_active_max.max(p.sv_active);
                    view.maxwait_max_s = view.maxwait_max_s.max(p.maxwait_s);
                }
                match stopped.recv_timeout(every) {
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    _ => break,
                }
            }
            if let (Some(a), Some(b)) = (totals_start, console.totals()) {
                let xacts = b.xact_count.saturating_sub(a.xact_count);
                view.wait_us_per_xact = (xacts > 0)
                    .then(|| b.wait_time_us.saturating_sub(a.wait_time_us) as f64 / xacts as f64);
            }
            if let (Some(a), Some(b)) = (cpu_start, pid.and_then(process_cpu_ticks)) {
                let seconds = started.elapsed().as_secs_f64();
                if seconds > 0.0 {
                    view.cpu_percent = Some((b - a) as f64 / clock_ticks() / seconds * 100.0);
                }
            }
            (view.samples > 0).then_some(view)
        });
        Sampler { stop, thread }
    }

    /// Stops sampling and returns what was seen (`None` if the console
    /// answered nothing, as when the pooler died).
    pub fn finish(self) -> Option<PoolerView> {
        let _ = self.stop.send(());
        self.thread.join().ok().flatten()
    }
}

/// The process listening on the Unix socket `target` reaches first, when
/// it runs on this host and we may see its descriptors (as root, or as
/// its user): the listening socket's inode from `/proc/net/unix`, then
/// the process holding it among `/proc/*/fd`. For the pooler's CPU.
pub fn local_pid(target: &conninfo::Config) -> Option<i32> {
    let host = target.hosts.first()?;
    let conninfo::HostKind::Unix(dir) = &host.kind else {
        return None;
    };
    let socket = dir.join(format!(".s.PGSQL.{}", host.port));
    let socket = socket.to_str()?;
    // Num RefCount Protocol Flags Type St Inode Path; a listening
    // socket's flags have __SO_ACCEPTCON (0x10000).
    let table = std::fs::read_to_string("/proc/net/unix").ok()?;
    let inode = table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let listening = u32::from_str_radix(fields.get(3)?, 16).ok()? & 0x10000 != 0;
        (listening && *fields.get(7)? == socket).then(|| fields[6].to_owned())
    })?;
    let wanted = format!("socket:[{inode}]");
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            std::fs::read_dir(entry.path().join("fd"))
                .ok()?
                .flatten()
                .any(|fd| {
                    std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == wanted.as_str())
                })
                .then_some(pid)
        })
}

/// `utime + stime` of `pid` in clock ticks, from `/proc/PID/stat`.
fn process_cpu_ticks(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces; the fields after it are fixed.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

fn first_text(rows: &[Row]) -> Option<String> {
    rows.first()?.first()?.clone()
}

fn text(row: &Row, index: Option<usize>) -> &str {
    index
        .and_then(|i| row.get(i))
        .and_then(|v| v.as_deref())
        .unwrap_or_default()
}

fn number(row: &Row, index: Option<usize>) -> u64 {
    text(row, index).parse().unwrap_or(0)
}

/// Why `-M prepared` cannot work through this pooler, and what to use.
pub fn prepared_refusal(pooler: &PoolerInfo) -> String {
    let mode = pooler.pool_mode.as_deref().unwrap_or("transaction");
    format!(
        "-M prepared cannot work through {} in {mode} pooling: a client prepares its \
         statements once on the server connection it first gets, and later transactions run on \
         other server connections where they are missing or already exist. Use -M extended \
         (the same protocol with unnamed statements), session pooling, or PgBouncer 1.21 or \
         later with max_prepared_statements above 0.",
        pooler.version
    )
}

/// The process id of the backend that answers `client`'s next query.
fn backend_pid(client: &mut Client) -> Option<i64> {
    let rows = client
        .simple_query("select pg_catalog.pg_backend_pid()")
        .ok()?;
    drop(client.take_notices());
    rows.first()?.first()?.as_deref()?.parse().ok()
}

/// Whether the set-up connection reached a pooler rather than a server
/// backend: the process id of the startup's BackendKeyData is the
/// pooler's own (see `crate::engine`'s preflight). A query that fails says nothing.
pub fn behind_pooler(client: &mut Client) -> bool {
    backend_pid(client).is_some_and(|pid| pid != i64::from(client.connection().backend_pid()))
}

/// How long the second session of [`shares_server_connections`] may wait
/// for a server connection (under session pooling with a full pool it
/// would wait for PgBouncer's `query_wait_timeout`).
const PROBE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether two sessions through the pooler get the same server
/// connection, one after the other: never under session pooling, where a
/// server connection belongs to one client for its whole session; as a
/// rule under transaction or statement pooling, where the idle server
/// connection used last is handed to the next transaction. No transaction
/// is held open, so a pool of one server connection cannot wedge it; the
/// second session's query, which a full session pool makes wait, is given
/// up after [`PROBE_WAIT`] by shutting its socket down.
fn shares_server_connections(client: &mut Client, connector: &Connector) -> bool {
    let Some(first) = backend_pid(client) else {
        return false;
    };
    let Ok(mut other) = Client::connect_with(connector, &mut Vec::new()) else {
        return false;
    };
    let fd = other.connection().fd();
    let (answer, answered) = std::sync::mpsc::channel();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let probe = std::thread::spawn(move || {
        let _ = answer.send(backend_pid(&mut other));
        // The socket stays open until we are told, so that the shutdown
        // below never meets a descriptor number reused meanwhile.
        let _ = released.recv();
        other.close();
    });
    let second = answered.recv_timeout(PROBE_WAIT).unwrap_or_else(|_| {
        // SAFETY: `fd` is the probe's socket, open until `release`.
        unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
        None
    });
    let _ = release.send(());
    let _ = probe.join();
    second == Some(first)
}

/// Why the monitor must not connect, if it must not: through a pooler
/// that pools by session (or whose mode its console does not tell), the
/// monitor's session would hold one of the pool's server connections for
/// the whole run, and a client that needs it would wait until the end
/// (or the monitor would, and see nothing). Through transaction or
/// statement pooling it only borrows one per sample.
pub fn monitor_refused(client: &mut Client, connector: &Connector) -> Option<String> {
    if !behind_pooler(client) {
        return None;
    }
    let info = Console::open(connector.config()).and_then(|mut c| c.info());
    match info.as_ref().and_then(|i| i.pool_mode.as_deref()) {
        Some("transaction" | "statement") => None,
        Some(mode) => Some(format!(
            "monitor: not started, the pooler pools by {mode} and the monitor's session would hold a server connection a client may need"
        )),
        None => Some(
            "monitor: not started behind a pooler whose pooling mode is unknown (its console is not readable): its session could hold a server connection a client needs"
                .to_owned(),
        ),
    }
}

/// Says once, before the clients connect, why `-M prepared` fails
/// through a pooler that hands a client's transactions to any server
/// connection, and what to use instead. The pooler's admin console tells
/// its mode and version when the user may read it; otherwise two sessions
/// sharing a server connection show it ([`shares_server_connections`]).
/// Quiet under session pooling, and on PgBouncer 1.21 and later with
/// `max_prepared_statements` above 0.
pub fn warn_prepared_through_pooler(client: &mut Client, connector: &Connector) {
    let info = Console::open(connector.config()).and_then(|mut c| c.info());
    match info {
        Some(info) if info.keeps_prepared_statements() => {}
        Some(info) => log::warning(format_args!("{}", prepared_refusal(&info))),
        None if shares_server_connections(client, connector) => log::warning(format_args!(
            "-M prepared cannot work through this connection pooler: two sessions got the same \
             server connection, so it pools by transaction or statement, and a client prepares \
             its statements once, on the server connection it first gets, while its later \
             transactions run on other server connections where they are missing or already \
             exist (PgBouncer before 1.21, or with max_prepared_statements = 0). Use -M \
             extended (the same protocol with unnamed statements) or session pooling."
        )),
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::PoolerInfo;

    fn info(version: &str, mode: &str, prepared: Option<u32>) -> PoolerInfo {
        PoolerInfo {
            version: format!("PgBouncer {version}"),
            pool_mode: Some(mode.into()),
            max_client_conn: Some(100),
            default_pool_size: Some(20),
            max_prepared_statements: prepared,
        }
    }

    #[test]
    fn prepared_statements_survive_session_pooling_and_recent_poolers() {
        assert!(info("1.18.0", "session", None).keeps_prepared_statements());
        assert!(!info("1.18.0", "transaction", None).keeps_prepared_statements());
        assert!(!info("1.18.0", "statement", None).keeps_prepared_statements());
        assert!(!info("1.21.0", "transaction", Some(0)).keeps_prepared_statements());
        assert!(info("1.21.0", "transaction", Some(200)).keeps_prepared_statements());
        assert!(!info("1.20.1", "transaction", Some(200)).keeps_prepared_statements());
    }

    #[test]
    fn process_cpu_is_read_from_proc() {
        let pid = std::process::id() as i32;
        assert!(super::process_cpu_ticks(pid).is_some());
        assert!(super::process_cpu_ticks(i32::MAX).is_none());
    }
}
