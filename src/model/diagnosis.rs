//! What the diagnosis records: the server's view of the run (from the
//! monitor), the client's own load, and the findings drawn from them.
//! Every part is optional in the JSON, so results written without it
//! (older pgbolt, `--no-monitor`) still read.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The diagnosis of one run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// Whether the monitor ran and what it could not read.
    #[serde(default)]
    pub monitor: MonitorStatus,
    /// States of pgbolt's backends, sampled from `pg_stat_activity`.
    #[serde(default)]
    pub activity: Option<Activity>,
    /// Server counters' changes over the measured window.
    #[serde(default)]
    pub counters: Option<ServerCounters>,
    /// Changes of the `pgbench_*` tables' counters over the window.
    #[serde(default)]
    pub tables: Vec<TableCounters>,
    /// Checkpoints, vacuums and analyzes during the window, oldest first.
    #[serde(default)]
    pub events: Vec<ServerEvent>,
    /// The statements that took the most server time during the run,
    /// from `pg_stat_statements` (empty when it is not installed).
    #[serde(default)]
    pub statements: Vec<StatementTime>,
    /// The client's own CPU.
    #[serde(default)]
    pub client: ClientLoad,
    /// The server's CPU, when it runs on this host and `/proc` shows it.
    #[serde(default)]
    pub server_cpu: Option<ServerCpu>,
    /// The verdicts, most severe first.
    #[serde(default)]
    pub findings: Vec<Finding>,
}

/// What became of the monitor connection.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MonitorStatus {
    /// Whether it connected and sampled.
    pub ran: bool,
    /// Its sampling interval in ms (null under `--no-monitor`).
    pub interval_ms: Option<u32>,
    /// `pg_stat_activity` samples taken.
    pub samples: u64,
    /// It reached the server through a connection pooler, whose backends
    /// stay connected and report their statistics late: the counters
    /// then lag the run, either way.
    #[serde(default)]
    pub pooled: bool,
    /// What could not be read or done, and why, one sentence each.
    #[serde(default)]
    pub missing: Vec<String>,
}

/// Backend-samples by state. Each sample of each of pgbolt's backends
/// counts once in exactly one of the fields.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateCounts {
    /// `active` with no wait event: running (or runnable) on a CPU.
    pub on_cpu: u64,
    /// `active` and waiting, by `wait_event_type` (`IO`, `Lock`, ...).
    pub waiting: BTreeMap<String, u64>,
    /// Waiting for the client: `idle`, or reading from it (`ClientRead`).
    pub client: u64,
    /// `idle in transaction` (aborted or not): the client holds a
    /// transaction open between statements.
    pub idle_in_transaction: u64,
    /// Anything else (`fastpath function call`, `disabled`, no state).
    pub other: u64,
}

impl StateCounts {
    /// Every backend-sample counted.
    pub fn total(&self) -> u64 {
        self.on_cpu + self.waiting_total() + self.client + self.idle_in_transaction + self.other
    }

    /// Samples waiting on the server, whatever the wait.
    pub fn waiting_total(&self) -> u64 {
        self.waiting.values().sum()
    }

    /// `count` as a share of [`Self::total`] (0 when nothing was counted).
    pub fn share(&self, count: u64) -> f64 {
        match self.total() {
            0 => 0.0,
            total => count as f64 / total as f64,
        }
    }

    /// Backend-samples busy on the server's side: running, waiting, or
    /// holding a transaction open (everything but waiting for the client).
    pub fn busy(&self) -> u64 {
        self.total() - self.client
    }

    /// These counts as if taken over `to` samples rather than `from`
    /// (rounded): how the samples of generators that sampled a different
    /// number of times are put side by side.
    pub fn rescaled(&self, from: u64, to: u64) -> StateCounts {
        let scale = |n: u64| match from {
            0 => 0,
            _ => (n as f64 * to as f64 / from as f64).round() as u64,
        };
        StateCounts {
            on_cpu: scale(self.on_cpu),
            waiting: self
                .waiting
                .iter()
                .map(|(kind, n)| (kind.clone(), scale(*n)))
                .collect(),
            client: scale(self.client),
            idle_in_transaction: scale(self.idle_in_transaction),
            other: scale(self.other),
        }
    }

    /// Adds `other`'s counts.
    pub fn add(&mut self, other: &StateCounts) {
        self.on_cpu += other.on_cpu;
        self.client += other.client;
        self.idle_in_transaction += other.idle_in_transaction;
        self.other += other.other;
        for (kind, n) in &other.waiting {
            *self.waiting.entry(kind.clone()).or_default() += n;
        }
    }
}

/// The backend states over the run and per interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Activity {
    /// Over the whole measured window.
    pub total: StateCounts,
    /// Start of the first interval, µs since the Unix epoch.
    pub start_us: i64,
    /// Interval width in µs.
    pub width_us: i64,
    /// The intervals, oldest first.
    pub intervals: Vec<StateCounts>,
    /// The database's other backends, over the whole window (absent in
    /// files written before pgbolt looked at them).
    #[serde(default)]
    pub others: OtherSessions,
}

/// Backends of the run's database that are not the run's, sampled with the
/// run's own and summed by kind over the samples: who else was there, and
/// whether they worked (busy) or sat idle. The monitor connections of
/// pgbolt (this one's and any other generator's) are left out.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OtherSessions {
    /// Autovacuum workers on the run's database.
    pub autovacuum: StateCounts,
    /// Client backends with the run's clients' `application_name` that are
    /// not theirs: a fleet's other generators, another pgbench, or the
    /// server connections a pooler kept from an earlier run.
    pub same_name: StateCounts,
    /// Every other client backend.
    pub other_clients: StateCounts,
}

impl OtherSessions {
    /// Client backend-samples (not autovacuum's) busy on the server.
    pub fn clients_busy(&self) -> u64 {
        self.same_name.busy() + self.other_clients.busy()
    }

    /// Whether any other backend was seen at all.
    pub fn any(&self) -> bool {
        self.autovacuum.total() + self.same_name.total() + self.other_clients.total() > 0
    }
}

/// Changes of server-wide and database counters over the measured window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerCounters {
    /// `pg_stat_database` of the run's database.
    pub database: Option<DatabaseCounters>,
    /// `pg_stat_wal` (PostgreSQL 14 and newer).
    pub wal: Option<WalCounters>,
    /// `pg_stat_checkpointer` (17 and newer) or `pg_stat_bgwriter`.
    pub checkpoints: Option<CheckpointCounters>,
    /// `pg_stat_io` (16 and newer): the rows that changed.
    #[serde(default)]
    pub io: Vec<IoCounters>,
}

/// One `pg_stat_io` row's changes: a backend type's I/O on one kind of
/// object in one context. Bytes are `op_bytes` times the operations
/// before PostgreSQL 18, which counts them itself (its reads may span
/// several blocks).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IoCounters {
    /// `client backend`, `checkpointer`, `autovacuum worker`, ...
    pub backend_type: String,
    /// `relation`, `temp relation`, `wal` (18 and newer).
    pub object: String,
    /// `normal`, `vacuum`, `bulkread`, `bulkwrite`, `init` (18, WAL).
    pub context: String,
    pub reads: i64,
    pub read_bytes: i64,
    pub writes: i64,
    pub write_bytes: i64,
    pub extends: i64,
    pub extend_bytes: i64,
    /// Blocks found in shared buffers.
    pub hits: i64,
    pub evictions: i64,
    pub writebacks: i64,
    pub fsyncs: i64,
}

/// A checkpoint, vacuum or analyze the monitor saw happen.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerEvent {
    /// `checkpoint`, `vacuum`, `autovacuum`, `analyze` or `autoanalyze`.
    pub kind: String,
    /// A checkpoint's cause: `timed` or `requested`.
    pub cause: Option<String>,
    /// The table a vacuum or an analyze was of.
    pub table: Option<String>,
    /// How many: a counter can move by more than one between readings.
    pub count: i64,
    /// When a vacuum or an analyze ended, or a checkpoint started, µs
    /// since the Unix epoch on pgbolt's clock.
    pub at_us: i64,
    /// How uncertain `at_us` is: the event happened in the `within_ms`
    /// before it (0 when the server stamped it, as it does a vacuum's or
    /// an analyze's end).
    pub within_ms: i64,
}

impl ServerEvent {
    /// `checkpoint (requested)`, `autovacuum of pgbench_accounts`.
    pub fn label(&self) -> String {
        let mut label = self.kind.clone();
        if let Some(c) = &self.cause {
            label = format!("{label} ({c})");
        }
        if let Some(t) = &self.table {
            label = format!("{label} of {t}");
        }
        if self.count > 1 {
            label = format!("{label} ×{}", self.count);
        }
        label
    }
}

/// `pg_stat_database` deltas.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DatabaseCounters {
    pub xact_commit: i64,
    pub xact_rollback: i64,
    pub blks_read: i64,
    pub blks_hit: i64,
    pub temp_files: i64,
    pub temp_bytes: i64,
    pub deadlocks: i64,
    pub conflicts: i64,
    /// `tup_inserted + tup_updated + tup_deleted`.
    pub rows_written: i64,
    /// Transactions of the monitor's own queries inside the window, which
    /// `xact_commit` counts too.
    pub monitor_commits: i64,
}

/// `pg_stat_wal` deltas.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WalCounters {
    pub records: i64,
    pub full_page_images: i64,
    pub bytes: i64,
}

/// Checkpoints that started during the window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckpointCounters {
    /// Started because `checkpoint_timeout` elapsed.
    pub timed: i64,
    /// Requested: `CHECKPOINT`, `max_wal_size` reached, ...
    pub requested: i64,
}

/// One `pgbench_*` table's `pg_stat_user_tables` changes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TableCounters {
    pub table: String,
    /// `n_dead_tup` at the end of the window.
    pub dead_tuples: i64,
    pub autovacuums: i64,
    pub autoanalyzes: i64,
    pub vacuums: i64,
    pub analyzes: i64,
}

/// One statement's share of the server's execution time over the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StatementTime {
    /// Its normalized text, first 200 characters.
    pub query: String,
    pub calls: i64,
    /// Execution time in all, ms.
    pub total_ms: f64,
    pub mean_ms: f64,
}

/// Fewest `pg_stat_activity` samples from which the backends' state
/// shares are more than a rough picture: with fewer, a share of 50% may
/// be one backend seen twice, and the reports say so.
pub const MIN_STATE_SAMPLES: u64 = 20;

/// The client's CPU, from the operating system.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientLoad {
    /// CPU seconds of each worker thread over the measured window, in
    /// thread order.
    pub thread_cpu_s: Vec<f64>,
    /// Seconds each worker thread was runnable but waited for a CPU, in
    /// thread order (empty where the kernel does not say).
    #[serde(default)]
    pub thread_runqueue_s: Vec<f64>,
    /// CPU seconds of the whole process, connections and report included.
    pub process_cpu_s: f64,
    /// Wall seconds the process CPU is over.
    pub process_wall_s: f64,
    /// CPUs of this machine pgbolt may use.
    pub cpus: u32,
    /// The share of this machine's CPU time (all its CPUs, every
    /// process) that was busy over the same time as the process's CPU
    /// (from before the clients connect until the workers are done, not
    /// the monitor's end readings after them), from `/proc/stat` (null
    /// where there is none).
    #[serde(default)]
    pub machine_busy_share: Option<f64>,
}

/// The server's processes' CPU over the window, read from `/proc`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerCpu {
    /// Every server process, the monitor's backend included.
    pub cpu_s: f64,
    /// The monitor's own backend.
    pub monitor_backend_cpu_s: f64,
    /// Wall seconds between the two readings.
    pub wall_s: f64,
}

/// How much a finding matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Worth knowing; the numbers stand.
    Info,
    /// The numbers are probably skewed.
    Warning,
    /// The numbers measure something else than the server.
    Critical,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
}

/// One verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// A stable name (`client-saturated`, `checkpoint`, ...).
    pub id: String,
    pub severity: Severity,
    /// One line with the figures.
    pub summary: String,
    /// The figures by name.
    pub figures: BTreeMap<String, f64>,
    /// Why it matters.
    pub why: String,
    /// What to do.
    pub action: String,
}

/// Bytes read, written and extended and fsyncs per backend type, most I/O
/// first: what the text line shows.
pub fn by_backend_type(rows: &[IoCounters]) -> Vec<(String, [i64; 4])> {
    let mut sums: BTreeMap<&str, [i64; 4]> = BTreeMap::new();
    for r in rows {
        let s = sums.entry(&r.backend_type).or_default();
        s[0] += r.read_bytes;
        s[1] += r.write_bytes;
        s[2] += r.extend_bytes;
        s[3] += r.fsyncs;
    }
    let mut out: Vec<(String, [i64; 4])> = sums
        .into_iter()
        .filter(|(_, s)| s.iter().any(|v| *v != 0))
        .map(|(k, s)| (k.to_owned(), s))
        .collect();
    out.sort_by_key(|(_, s)| std::cmp::Reverse(s[0] + s[1] + s[2]));
    out
}
