//! The monitor: the server's view of the run, from one extra connection on
//! a thread of its own, and the client's own CPU.
//!
//! # Why a thread and a blocking connection
//! The workers' event loops are the measurement; a query of the monitor
//! on one of them would delay its clients and show up in their latency.
//! The monitor thread sleeps between samples on a condition variable, so
//! the end of the run wakes it at once, and it never touches a worker's
//! state: the engine hands it a function that waits for the workers' start
//! gate and takes back a [`ServerView`] when the workers are done.
//!
//! # Not disturbing what it measures
//! - It connects only once every client is connected, so it never takes a
//!   connection slot a client needed, and the engine does not start it
//!   when the preflight found no room for one more connection.
//! - It finds the run's backends by the PIDs its connections received
//!   (by their `application_name`, the clients' effective one, where a
//!   pooler stands in between or the engine does not know them) in the
//!   run's database; its own connection is called `pgbolt-monitor`. The
//!   same sample counts the database's other sessions by kind
//!   (autovacuum, backends named like the run's clients but not theirs,
//!   other clients), so that findings can tell other work from late
//!   statistics. It needs no superuser and no extension: the views
//!   it reads are readable by any role for its own sessions.
//! - Each of its queries is a transaction, which `pg_stat_database`
//!   counts: it counts them too, so the diagnosis can subtract them.
//! - Every failure (refused, lost connection, a view missing on an older
//!   server, no permission) becomes a line of [`MonitorStatus::missing`],
//!   never an error of the run.
//!
//! # The window it covers
//! The measured window opens when the workers pass their start gate: once
//! every client is connected, or at `--start-at`. The engine hands the
//! monitor that time, and nothing before it is sampled or counted:
//! - When the monitor is connected before the window opens (under
//!   `--start-at` it connects during the wait), it takes its start
//!   reading of every view in the [`START_LEAD`] before the start, then
//!   waits for it, so the wait is left out.
//! - Otherwise `pg_stat_database` and `pg_stat_statements` come from the
//!   set-up connection's reading just before the clients connected
//!   ([`read_database`]), so that a monitor that connects late still
//!   covers every commit and statement of the run (connecting commits
//!   nothing), and the other views are read as soon as the monitor
//!   connects (a few ms after the clients start).
//!
//! The samples' one-second buckets start with the window, so they line
//! up with the run's own intervals. The end reading comes after the
//! workers closed their connections and their backends left (waiting at
//! most 2 s), since a backend flushes its statistics for good only as it
//! exits, and after `pg_stat_force_next_flush()` (PostgreSQL 15+) for the
//! monitor's own. Checkpoints and vacuums are placed on the timeline from
//! readings every second in between (`events`).
//!
//! In the layering it uses the model (the shapes it fills), the program's
//! messages and the wall clock; nothing that runs a benchmark.

mod activity;
mod counters;
pub mod cpu;
mod events;
pub mod io;
pub mod pooler;
mod statements;

pub use counters::{read_database, DatabaseStart};

use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use pgwire::blocking::Client;
use pgwire::conninfo::HostKind;
use pgwire::Connector;

use crate::model::diagnosis::{
    Activity, MonitorStatus, OtherSessions, ServerCounters, ServerCpu, ServerEvent, StateCounts,
    StatementTime, TableCounters,
};
use crate::wallclock::now_us;

/// The application name of the monitor's own connection.
pub const MONITOR_APPLICATION_NAME: &str = "pgbolt-monitor";

/// How long the end waits for pgbolt's backends to leave.
const BACKENDS_EXIT_WAIT: Duration = Duration::from_secs(2);

/// How long before the window opens a monitor that is connected by then
/// takes its start reading (a few queries of a few ms each).
pub const START_LEAD: Duration = Duration::from_millis(50);

/// One activity sample as the monitor hands it over.
pub struct Sample<'a> {
    /// The run's backends.
    pub run: &'a StateCounts,
    /// The other sessions of the database, when the server tells them
    /// apart (PostgreSQL 10 and later, see [`activity_query`]).
    pub others: Option<&'a OtherSessions>,
}

/// Where each activity sample goes as it is taken, besides the run's
/// view (the live metrics show the latest); `None` once the monitor lost
/// its connection and takes no more.
pub type SampleSink = Box<dyn FnMut(Option<Sample<'_>>) + Send>;

/// What the monitor saw.
#[derive(Debug, Clone, Default)]
pub struct ServerView {
    pub status: MonitorStatus,
    pub activity: Option<Activity>,
    pub counters: Option<ServerCounters>,
    pub tables: Vec<TableCounters>,
    pub events: Vec<ServerEvent>,
    pub statements: Vec<StatementTime>,
    pub server_cpu: Option<ServerCpu>,
}

/// A running monitor.
pub struct Monitor {
    stop: Arc<(Mutex<bool>, Condvar)>,
    /// Where its thread sends what it saw.
    view: Option<mpsc::Receiver<ServerView>>,
    interval_ms: u32,
}

/// How long the end of the run waits for the monitor's last queries (its
/// wait for the clients' backends to leave included): a server that
/// stopped answering must not hold up the report.
const STOP_WAIT: Duration = Duration::from_secs(5);

/// What the monitor thread needs to know.
struct Settings<'a> {
    /// The clients' `application_name`.
    clients_name: &'a str,
    /// The clients' backend PIDs, when the engine knows them (see
    /// [`Monitor::start`]).
    backends: Option<Vec<i32>>,
    interval: Duration,
    database_start: Option<DatabaseStart>,
    /// When the measured window opens, µs since the epoch.
    window_start_us: i64,
    sink: Option<SampleSink>,
}

/// Adds `line` to `missing` unless it is there already.
fn note(missing: &mut Vec<String>, line: &str) {
    if !missing.iter().any(|m| m == line) {
        missing.push(line.to_owned());
    }
}

/// A first line of an error, for [`MonitorStatus::missing`].
fn why(e: &pgwire::Error) -> String {
    e.to_string().lines().next().unwrap_or_default().to_owned()
}

/// Whether a connection to `kind` reaches a server on this host.
fn is_local(kind: &HostKind) -> bool {
    match kind {
        HostKind::Unix(_) => true,
        HostKind::Tcp { addr: Some(a), .. } => a.is_loopback(),
        HostKind::Tcp { name: Some(n), .. } => n == "localhost" || n.starts_with("127."),
        HostKind::Tcp { .. } => false,
    }
}

/// The first server version (10) whose `pg_stat_activity` has
/// `backend_type`, which tells the other sessions apart.
const BACKEND_TYPE_FROM: u32 = 100_000;

/// The activity sample's query: every client backend and autovacuum worker
/// of the run's database but the monitor's own, grouped by whose it is
/// (`run` when it matches `run`, the condition on the run's backends;
/// `autovacuum`; `monitor` for pgbolt's monitors; `named` when it has the
/// clients' `name`; `other`) and by state. Servers before 10 have no
/// `backend_type`: there only the run's backends are sampled.
fn activity_query(run: &str, name: &str, version_num: u32) -> String {
    let states = "coalesce(state, ''), coalesce(wait_event_type, ''), coalesce(wait_event, '')";
    let here = "from pg_catalog.pg_stat_activity \
                where datname = pg_catalog.current_database() and pid <> pg_catalog.pg_backend_pid()";
    if version_num < BACKEND_TYPE_FROM {
        return format!("select 'run', {states}, count(*) {here} and {run} group by 1, 2, 3, 4");
    }
    format!(
        "select case when {run} then 'run' \
         when backend_type = 'autovacuum worker' then 'autovacuum' \
         when application_name = {monitor} then 'monitor' \
         when application_name = {name} then 'named' else 'other' end, \
         {states}, count(*) {here} \
         and backend_type in ('client backend', 'autovacuum worker') group by 1, 2, 3, 4",
        monitor = literal(MONITOR_APPLICATION_NAME),
    )
}

/// `text` as a string literal that reads the same whatever
/// `standard_conforming_strings` says.
fn literal(text: &str) -> String {
    format!("E'{}'", text.replace('\\', "\\\\").replace('\'', "''"))
}

impl Monitor {
    /// Starts the monitor thread: it calls `opened` (which waits until
    /// every client is connected and gives when the measured window opens,
    /// or `None` when the run does not start), connects with the clients'
    /// options under its own application name, and samples every
    /// `interval_ms` from the window's start, handing each sample to
    /// `sink` too.
    pub fn start(
        connector: &Connector,
        interval_ms: u32,
        database_start: Option<DatabaseStart>,
        opened: impl FnOnce() -> Option<(i64, Option<Vec<i32>>)> + Send + 'static,
        sink: Option<SampleSink>,
    ) -> Monitor {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let (sender, view) = mpsc::channel();
        let mut config = connector.config().clone();
        let clients_name = config
            .effective_application_name()
            .unwrap_or_default()
            .to_owned();
        config.application_name = Some(MONITOR_APPLICATION_NAME.to_owned());
        let connector = Connector::new(&config);
        let flag = stop.clone();
        let interval = Duration::from_millis(u64::from(interval_ms));
        let started = std::thread::Builder::new()
            .name("pgbolt-monitor".to_owned())
            .spawn(move || {
                let Some((window_start_us, backends)) = opened() else {
                    return;
                };
                let view = match connector {
                    Ok(connector) => {
                        let session = Settings {
                            clients_name: &clients_name,
                            backends,
                            interval,
                            database_start,
                            window_start_us,
                            sink,
                        };
                        Session::run(&connector, session, &flag)
                    }
                    Err(e) => ServerView::missing(format!("connection: {}", why(&e))),
                };
                let _ = sender.send(view);
            })
            .is_ok();
        Monitor {
            stop,
            view: started.then_some(view),
            interval_ms,
        }
    }

    /// Ends the monitor after the workers are done and returns what it saw.
    pub fn stop(mut self) -> ServerView {
        let (lock, cv) = &*self.stop;
        if let Ok(mut stopped) = lock.lock() {
            *stopped = true;
        }
        cv.notify_all();
        let mut view = match self.view.take().map(|v| v.recv_timeout(STOP_WAIT)) {
            Some(Ok(view)) => view,
            Some(Err(mpsc::RecvTimeoutError::Timeout)) => ServerView::missing(format!(
                "monitor: no answer from the server {} s after the run; its view is left out",
                STOP_WAIT.as_secs()
            )),
            // The run never started, or the thread failed.
            Some(Err(mpsc::RecvTimeoutError::Disconnected)) => {
                ServerView::missing("monitor: it ended without a view of the run".to_owned())
            }
            None => ServerView::missing("monitor: its thread could not start".to_owned()),
        };
        view.status.interval_ms = Some(self.interval_ms);
        view
    }
}

impl ServerView {
    /// A view with nothing in it but why.
    pub fn missing(why: String) -> ServerView {
        ServerView {
            status: MonitorStatus {
                missing: vec![why],
                ..MonitorStatus::default()
            },
            ..ServerView::default()
        }
    }
}

/// What the start reading found.
struct Begun {
    started: Instant,
    cpu_start: Option<cpu::ServerReading>,
    counters: counters::Reading,
    statements: Option<statements::Reading>,
}

/// The name of the monitor's prepared activity query.
const ACTIVITY_STATEMENT: &str = "pgbolt_monitor_activity";

/// The monitor's connection and what it gathers.
struct Session {
    client: Client,
    version_num: u32,
    activity_sql: String,
    /// Whether `activity_sql` is prepared as [`ACTIVITY_STATEMENT`].
    activity_prepared: bool,
    /// The connection goes through a pooler: the server connections serve
    /// every client, and outlive the run.
    pooled: bool,
    remaining_sql: String,
    missing: Vec<String>,
    queries: i64,
    sink: Option<SampleSink>,
}

impl Session {
    fn run(
        connector: &Connector,
        mut settings: Settings<'_>,
        stop: &(Mutex<bool>, Condvar),
    ) -> ServerView {
        let mut warnings = Vec::new();
        let client = match Client::connect_with(connector, &mut warnings) {
            Ok(c) => c,
            Err(e) => return ServerView::missing(format!("connection refused: {}", why(&e))),
        };
        let local = connector
            .config()
            .hosts
            .get(client.host_index())
            .is_some_and(|h| is_local(&h.kind));
        let version_num = client.parameter("server_version").map_or(0, version_number);
        let name = literal(settings.clients_name);
        let mut session = Session {
            version_num,
            activity_sql: String::new(),
            activity_prepared: false,
            pooled: false,
            remaining_sql: String::new(),
            client,
            missing: Vec::new(),
            queries: 0,
            sink: settings.sink.take(),
        };
        session.find_pooler();
        // Without a pooler in between, the run's backends are the PIDs
        // its connections got: a backend of another program (or of an
        // earlier run's pooler) that calls itself the same is not the
        // run's. Through a pooler those PIDs are the pooler's own, and
        // the name is all there is.
        let run = match (session.pooled, &settings.backends) {
            (false, Some(pids)) => {
                let list: Vec<String> = pids.iter().map(i32::to_string).collect();
                format!("pid = any('{{{}}}'::int[])", list.join(","))
            }
            _ => format!("application_name = {name}"),
        };
        session.activity_sql = activity_query(&run, &name, version_num);
        session.remaining_sql = format!(
            "select count(*) from pg_catalog.pg_stat_activity where {run} \
             and datname = pg_catalog.current_database() and pid <> pg_catalog.pg_backend_pid()"
        );
        session.prepare_activity();
        let backend = session.client.connection().backend_pid();
        let server = if session.pooled {
            Err("not measured through a connection pooler (its server connections serve every client)".to_owned())
        } else if local {
            cpu::LocalServer::find(backend)
        } else {
            Err("the server is not on this host".to_owned())
        };
        session.observe(server, settings, stop)
    }

    fn observe(
        mut self,
        server: Result<cpu::LocalServer, String>,
        settings: Settings<'_>,
        stop: &(Mutex<bool>, Condvar),
    ) -> ServerView {
        let interval = settings.interval;
        let window_start = settings.window_start_us;
        let Some(begun) = self.begin(&server, settings, stop) else {
            return ServerView::missing("monitor: the run ended before it started".to_owned());
        };
        let mut timeline = events::Timeline::default();
        timeline.see(begun.counters.clone());
        let (activity, samples, lost) =
            self.sample_until_stopped(interval, window_start, &mut timeline, stop);
        let mut view = ServerView::default();
        view.status.samples = samples;
        view.status.ran = true;
        view.status.pooled = self.pooled;
        view.activity = activity;
        if let Some(lost) = lost {
            self.missing.push(lost);
            self.missing.push("counters: no end reading".to_owned());
            view.status.missing = self.missing;
            view.events = timeline.finish();
            return view;
        }
        self.end(begun, server, timeline, view)
    }

    /// The start reading: at the window's start, or as soon as connected
    /// when that is later (with the set-up connection's database and
    /// statements readings, taken before the clients connected). `None`
    /// when the run stopped before its start.
    fn begin(
        &mut self,
        server: &Result<cpu::LocalServer, String>,
        settings: Settings<'_>,
        stop: &(Mutex<bool>, Condvar),
    ) -> Option<Begun> {
        let window_start = settings.window_start_us;
        let lead = START_LEAD.as_micros() as i64;
        // Connected before the window opens: the start reading just
        // before it, so that the wait for it is not counted.
        let early = now_us() + lead <= window_start;
        if early && pause_until(stop, window_start - lead) {
            return None;
        }
        let started = Instant::now();
        let cpu_start = server.as_ref().ok().and_then(cpu::LocalServer::read);
        let mut counters = counters::read(
            &mut self.client,
            self.version_num,
            &mut self.missing,
            &mut self.queries,
        );
        let statements = match settings.database_start.filter(|_| !early) {
            Some(before) => {
                // The set-up connection's reading, before the clients
                // started: its own transaction is in the window too.
                counters = counters.with_database(&before);
                self.queries += 1;
                for m in &before.missing {
                    note(&mut self.missing, m);
                }
                before.statements
            }
            None => statements::read(
                &mut self.client,
                self.version_num,
                &mut self.missing,
                &mut self.queries,
            ),
        };
        if early && pause_until(stop, window_start) {
            return None;
        }
        Some(Begun {
            started,
            cpu_start,
            counters,
            statements,
        })
    }

    /// The end reading, once the clients' backends have left, and the
    /// changes since `begun` into `view`.
    fn end(
        mut self,
        begun: Begun,
        server: Result<cpu::LocalServer, String>,
        mut timeline: events::Timeline,
        mut view: ServerView,
    ) -> ServerView {
        self.wait_for_backends_to_leave();
        if self.version_num >= 150_000
            && self
                .client
                .simple_query("select pg_catalog.pg_stat_force_next_flush()")
                .is_ok()
        {
            self.queries += 1;
        }
        // Every query since the start reading (its own included) committed
        // a transaction inside the window.
        let own = self.queries;
        let end = counters::read(
            &mut self.client,
            self.version_num,
            &mut self.missing,
            &mut self.queries,
        );
        let (server_counters, tables) = counters::changes(&begun.counters, &end, own);
        timeline.see(end);
        view.events = timeline.finish();
        view.counters = Some(server_counters);
        view.tables = tables;
        if let Some(first) = begun.statements {
            if let Some(last) = statements::read(
                &mut self.client,
                self.version_num,
                &mut self.missing,
                &mut self.queries,
            ) {
                view.statements = statements::top(&first, &last);
            }
        }
        view.server_cpu = match (&server, begun.cpu_start) {
            (Ok(s), Some(first)) => s.read().map(|last| {
                let (cpu_s, monitor_backend_cpu_s) = cpu::server_cpu_between(&first, &last);
                ServerCpu {
                    cpu_s,
                    monitor_backend_cpu_s,
                    wall_s: begun.started.elapsed().as_secs_f64(),
                }
            }),
            _ => None,
        };
        if let Err(why) = server {
            self.missing.push(format!("server CPU: {why}"));
        }
        view.status.missing = self.missing;
        self.client.close();
        view
    }

    /// Samples every `interval` until the stop, in buckets from
    /// `window_start`, and reads the event counters every
    /// [`events::TICK`] into `timeline`: the activity seen (none without
    /// a sample), the number of samples, and why the connection was lost
    /// if it was.
    fn sample_until_stopped(
        &mut self,
        interval: Duration,
        window_start: i64,
        timeline: &mut events::Timeline,
        stop: &(Mutex<bool>, Condvar),
    ) -> (Option<Activity>, u64, Option<String>) {
        let mut log = activity::ActivityLog::new(window_start);
        let mut samples = 0;
        let mut lost = None;
        let mut next_tick = Instant::now() + events::TICK;
        while !stopped(stop, interval) {
            match self.sample() {
                Ok((sample, others)) => {
                    log.add(now_us(), &sample, &others);
                    let others = (self.version_num >= BACKEND_TYPE_FROM).then_some(&others);
                    if let Some(sink) = self.sink.as_mut() {
                        sink(Some(Sample {
                            run: &sample,
                            others,
                        }));
                    }
                    samples += 1;
                }
                Err(e) => {
                    lost = Some(format!(
                        "connection lost after {samples} samples: {}",
                        why(&e)
                    ));
                    if let Some(sink) = self.sink.as_mut() {
                        sink(None);
                    }
                    break;
                }
            }
            if Instant::now() >= next_tick {
                next_tick = Instant::now() + events::TICK;
                // A view this role cannot read was noted by the start
                // reading; a lost connection is the next sample's to
                // report.
                timeline.see(counters::read_events(
                    &mut self.client,
                    self.version_num,
                    &mut Vec::new(),
                    &mut self.queries,
                ));
            }
        }
        ((samples > 0).then(|| log.finish()), samples, lost)
    }

    /// Prepares the activity sample's query, which runs ten times a second:
    /// planning it each time was most of the monitor's backend's CPU (0.2
    /// of 0.3 ms a sample). Not through a pooler, which may hand the next
    /// transaction to a server that never saw the statement: samples are
    /// plain queries there, and where preparing fails.
    fn prepare_activity(&mut self) {
        self.activity_prepared = !self.pooled
            && self
                .client
                .prepare(ACTIVITY_STATEMENT, &self.activity_sql)
                .is_ok();
        // A Parse with its Sync is a transaction (a failed one a rollback,
        // which nothing subtracts).
        self.queries += i64::from(self.activity_prepared);
    }

    /// Whether a pooler stands between the monitor and the server, noticed
    /// as the preflight notices it.
    fn find_pooler(&mut self) {
        self.pooled = pooler::behind_pooler(&mut self.client);
        // Its query is a transaction.
        self.queries += 1;
    }

    /// One `pg_stat_activity` sample of pgbolt's backends and of the
    /// database's other sessions.
    fn sample(&mut self) -> Result<(StateCounts, OtherSessions), pgwire::Error> {
        let rows = match self.activity_prepared {
            true => self.client.query_prepared(ACTIVITY_STATEMENT, &[])?,
            false => self.client.simple_query(&self.activity_sql)?,
        };
        self.queries += 1;
        let (mut run, mut others) = (StateCounts::default(), OtherSessions::default());
        for row in rows {
            let text = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
            let n = text(4).parse().unwrap_or(0);
            let state = (text(1), text(2), text(3));
            activity::count_row(
                &mut run,
                &mut others,
                &text(0),
                (&state.0, &state.1, &state.2),
                n,
            );
        }
        Ok((run, others))
    }

    /// Waits until pgbolt's backends have left, so that their statistics
    /// are flushed, for at most [`BACKENDS_EXIT_WAIT`].
    fn wait_for_backends_to_leave(&mut self) {
        if self.pooled {
            // The pooler keeps its server connections, and an idle backend
            // reports its last second's statistics up to 10 s later.
            self.missing.push(
                "through a connection pooler the server's backends stay connected and report their last statistics up to 10 s late: the end counters may miss the run's last second"
                    .to_owned(),
            );
            return;
        }
        let deadline = Instant::now() + BACKENDS_EXIT_WAIT;
        while Instant::now() < deadline {
            let Ok(rows) = self.client.simple_query(&self.remaining_sql) else {
                return;
            };
            self.queries += 1;
            if rows
                .first()
                .and_then(|r| r.first())
                .cloned()
                .flatten()
                .as_deref()
                == Some("0")
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.missing.push(
            "pgbolt's backends were still there 2 s after the run: the end counters may miss some of their work"
                .to_owned(),
        );
    }
}

/// Waits until `at_us` (µs since the epoch) or the stop, whichever comes
/// first; true once stopped.
fn pause_until(stop: &(Mutex<bool>, Condvar), at_us: i64) -> bool {
    loop {
        let left = at_us - now_us();
        if left <= 0 {
            return false;
        }
        if stopped(stop, Duration::from_micros(left as u64)) {
            return true;
        }
    }
}

/// Waits for `interval` or the stop, whichever comes first; true once
/// stopped.
fn stopped(stop: &(Mutex<bool>, Condvar), interval: Duration) -> bool {
    let (lock, cv) = stop;
    let Ok(guard) = lock.lock() else {
        return true;
    };
    if *guard {
        return true;
    }
    match cv.wait_timeout(guard, interval) {
        Ok((guard, _)) => *guard,
        Err(_) => true,
    }
}

/// `server_version` as `server_version_num` spells it: `15.4` is
/// 150004, `18beta1` 180000, `9.6.2` 90602.
fn version_number(text: &str) -> u32 {
    let digits = |s: &str| -> u32 {
        s.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .unwrap_or(0)
    };
    let mut parts = text.split('.');
    let major = digits(parts.next().unwrap_or(""));
    let minor = digits(parts.next().unwrap_or(""));
    if major >= 10 {
        major * 10_000 + minor
    } else {
        major * 10_000 + minor * 100 + digits(parts.next().unwrap_or(""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_as_server_version_num() {
        assert_eq!(version_number("15.4"), 150_004);
        assert_eq!(version_number("18beta1"), 180_000);
        assert_eq!(version_number("18.1 (Debian 18.1-1)"), 180_001);
        assert_eq!(version_number("9.6.2"), 90_602);
    }

    #[test]
    fn literals_survive_quotes_and_backslashes() {
        assert_eq!(literal(r"a'b\c"), r"E'a''b\\c'");
    }

    #[test]
    fn sockets_and_loopback_are_local() {
        assert!(is_local(&HostKind::Unix("/tmp".into())));
        assert!(is_local(&HostKind::Tcp {
            name: None,
            addr: Some("::1".parse().unwrap())
        }));
        assert!(!is_local(&HostKind::Tcp {
            name: Some("db.example".into()),
            addr: None
        }));
    }
}
