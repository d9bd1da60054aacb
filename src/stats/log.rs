//! `-l` transaction logs, byte for byte in pgbench's format.
//!
//! Each worker thread writes its own file: `pgbench_log.PID` for thread 0
//! and `pgbench_log.PID.N` for thread N (`--log-prefix` replaces
//! `pgbench_log`). A line per transaction is
//! `client_id transaction_no time script_no time_epoch time_us [schedule_lag] [retries]`,
//! where `time` is the latency in µs, or `skipped`, `failed` (or with
//! `--failures-detailed` `serialization`, `deadlock`, `other`). With
//! `--aggregate-interval` a line per interval is written instead:
//! `interval_start num_transactions sum_latency sum_latency_2 min_latency max_latency
//! sum_lag sum_lag_2 min_lag max_lag skipped retried retries serialization_failures deadlock_failures`,
//! columns that do not apply to the options being 0 (pgbench 15 to 18).
//! Under `--continue-on-error` (pgbench 19) an `other_failures` column follows.
//! As in pgbench, the last, incomplete interval is not written.
//!
//! Lines are formatted into a stack buffer and written through a 64 KiB
//! `BufWriter`: logging a transaction allocates nothing, and the file is
//! written when the buffer fills, or when a line is logged a second or
//! more after the last write ([`FLUSH_AFTER_US`]); an aggregated line is
//! written with the first transaction logged after its interval closed
//! (there is no timer: nothing is written while no transaction ends).
//! At high rates that changes
//! nothing; in a long run at a low rate, or with aggregated lines (one a
//! second fills 64 KiB in about 20 minutes), it keeps the file current
//! for a reader (`tail -f`) and bounds what a killed run loses, as
//! pgbench's 4 KiB stdio buffer roughly does, at one write a second (or
//! an interval) at most. Errors are returned, never panicked on;
//! [`TransactionLog::finish`] flushes.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Write};

use super::interval::IntervalStats;
use super::recorder::{FailureKind, Outcome};
use crate::oserror::os_message;

/// Size of the write buffer of each log file.
pub const LOG_BUFFER_BYTES: usize = 64 * 1024;

/// A line logged this long (µs) after the file was last written is
/// written out with what the buffer holds.
pub const FLUSH_AFTER_US: i64 = 1_000_000;

/// The logging options of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct LogOptions {
    /// `--log-prefix`; `pgbench_log` when absent. A path's bytes, which
    /// need not be UTF-8.
    pub prefix: Option<OsString>,
    /// Process id used in file names.
    pub pid: u32,
    /// `-R` was given (adds the schedule lag).
    pub throttled: bool,
    /// `-L` was given (fills the aggregate `skipped` column).
    pub latency_limit: bool,
    /// `--max-tries` (adds retries unless it is 1).
    pub max_tries: u32,
    /// `--failures-detailed`.
    pub failures_detailed: bool,
    /// `--continue-on-error` (adds the aggregate `other_failures` column).
    pub continue_on_error: bool,
    /// `--sampling-rate`, the fraction of transactions to log.
    pub sampling_rate: Option<f64>,
    /// `--aggregate-interval` in seconds.
    pub aggregate_interval_s: Option<u32>,
}

/// The file name pgbench uses for `thread`'s log.
pub fn log_file_name(prefix: Option<&OsStr>, pid: u32, thread: usize) -> OsString {
    let mut name = prefix.unwrap_or(OsStr::new("pgbench_log")).to_os_string();
    if thread == 0 {
        name.push(format!(".{pid}"));
    } else {
        name.push(format!(".{pid}.{thread}"));
    }
    name
}

/// A log file could not be written.
#[derive(Debug)]
pub enum LogError {
    /// The file could not be created.
    Open { path: String, source: io::Error },
    /// Writing or flushing failed.
    Write { path: String, source: io::Error },
}

impl fmt::Display for LogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LogError::Open { path, source } => {
                write!(
                    f,
                    "could not open logfile \"{path}\": {}",
                    os_message(source)
                )
            }
            LogError::Write { path, source } => {
                write!(
                    f,
                    "could not write to logfile \"{path}\": {}",
                    os_message(source)
                )
            }
        }
    }
}

impl std::error::Error for LogError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LogError::Open { source, .. } | LogError::Write { source, .. } => Some(source),
        }
    }
}

/// One transaction to log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogEntry {
    /// Client number (0-based over the whole run).
    pub client_id: u32,
    /// How many transactions this client has ended, this one included.
    pub transaction_no: u64,
    /// Script index.
    pub script: usize,
    /// How it ended.
    pub outcome: Outcome,
    /// Tries it took (1 when not retried).
    pub tries: u32,
    /// Latency in µs (from the scheduled start).
    pub latency_us: i64,
    /// Schedule lag in µs.
    pub lag_us: i64,
    /// When it was logged, µs since the Unix epoch.
    pub now_us: i64,
}

struct Aggregate {
    start_us: i64,
    interval_us: i64,
    stats: IntervalStats,
}

/// One thread's log file.
pub struct TransactionLog<W: Write> {
    out: BufWriter<W>,
    path: String,
    options: LogOptions,
    aggregate: Option<Aggregate>,
    /// When the buffer was last written out, µs since the epoch.
    flushed_us: i64,
}

impl TransactionLog<File> {
    /// Creates `thread`'s file in the current directory. The first
    /// aggregation interval starts at the whole second before `start_us`
    /// (µs since the epoch).
    pub fn create(options: &LogOptions, thread: usize, start_us: i64) -> Result<Self, LogError> {
        let name = log_file_name(options.prefix.as_deref(), options.pid, thread);
        // Messages show the name with U+FFFD for bytes that are not UTF-8.
        let path = name.to_string_lossy().into_owned();
        let file = File::create(&name).map_err(|source| LogError::Open {
            path: path.clone(),
            source,
        })?;
        Ok(TransactionLog::new(file, path, options, start_us))
    }
}

impl<W: Write> TransactionLog<W> {
    /// Logs into `writer`; `path` names it in errors.
    pub fn new(writer: W, path: String, options: &LogOptions, start_us: i64) -> Self {
        // As pgbench does, the first interval starts at the whole second
        // before `start_us`, the time its line shows, so that intervals
        // cover whole epoch seconds and the first is a partial one.
        let aggregate = options.aggregate_interval_s.map(|s| Aggregate {
            start_us: start_us.div_euclid(1_000_000) * 1_000_000,
            interval_us: i64::from(s) * 1_000_000,
            stats: IntervalStats::default(),
        });
        TransactionLog {
            out: BufWriter::with_capacity(LOG_BUFFER_BYTES, writer),
            path,
            options: options.clone(),
            aggregate,
            flushed_us: start_us,
        }
    }

    /// Moves the start of the first aggregation interval to the whole
    /// second before `start_us`: pgbench counts intervals from when its
    /// thread's clients are connected, not from when the file was opened.
    pub fn begin(&mut self, start_us: i64) {
        if let Some(a) = self.aggregate.as_mut() {
            a.start_us = start_us.div_euclid(1_000_000) * 1_000_000;
        }
        self.flushed_us = start_us;
    }

    /// Logs one transaction. Under `--sampling-rate`, `sample` is drawn once
    /// (a uniform value in [0, 1), the thread's sampling random state) and
    /// the transaction is left out when the draw exceeds the rate.
    pub fn log(
        &mut self,
        entry: &LogEntry,
        sample: &mut impl FnMut() -> f64,
    ) -> Result<(), LogError> {
        if let Some(rate) = self.options.sampling_rate {
            if sample() > rate {
                return Ok(());
            }
        }
        if self.aggregate.is_some() {
            self.write_intervals_before(entry.now_us)?;
            if let Some(agg) = &mut self.aggregate {
                agg.stats
                    .add(entry.outcome, entry.tries, entry.latency_us, entry.lag_us);
            }
            // An interval line is written out as soon as its interval
            // closes: one write per interval at most.
            if self.out.buffer().is_empty() {
                return Ok(());
            }
            return self.flush();
        }
        let mut line = LineBuf::new();
        line.push_u64(u64::from(entry.client_id));
        line.push_byte(b' ');
        line.push_u64(entry.transaction_no);
        line.push_byte(b' ');
        match entry.outcome {
            Outcome::Committed => line.push_i64(entry.latency_us),
            Outcome::Skipped => line.push_str("skipped"),
            Outcome::Failed(kind) if self.options.failures_detailed => line.push_str(match kind {
                FailureKind::Serialization => "serialization",
                FailureKind::Deadlock => "deadlock",
                FailureKind::Other => "other",
            }),
            Outcome::Failed(_) => line.push_str("failed"),
        }
        line.push_byte(b' ');
        line.push_u64(entry.script as u64);
        line.push_byte(b' ');
        line.push_i64(entry.now_us.div_euclid(1_000_000));
        line.push_byte(b' ');
        line.push_i64(entry.now_us.rem_euclid(1_000_000));
        if self.options.throttled {
            line.push_byte(b' ');
            line.push_i64(entry.lag_us);
        }
        if self.options.max_tries != 1 {
            line.push_byte(b' ');
            line.push_u64(u64::from(entry.tries.saturating_sub(1)));
        }
        line.push_byte(b'\n');
        self.write(line.as_bytes())?;
        self.flush_if_due(entry.now_us)
    }

    /// Writes the buffer out when it holds lines and the file was last
    /// written [`FLUSH_AFTER_US`] or more before `now_us`.
    fn flush_if_due(&mut self, now_us: i64) -> Result<(), LogError> {
        if now_us - self.flushed_us < FLUSH_AFTER_US {
            return Ok(());
        }
        self.flushed_us = now_us;
        if self.out.buffer().is_empty() {
            return Ok(());
        }
        self.flush()
    }

    /// Writes the aggregation intervals that ended by `now_us`, then flushes.
    /// The interval in progress is not written (pgbench drops it too).
    pub fn finish(&mut self, now_us: i64) -> Result<(), LogError> {
        if self.aggregate.is_some() {
            self.write_intervals_before(now_us)?;
        }
        self.flush()
    }

    /// Flushes buffered lines to the file.
    pub fn flush(&mut self) -> Result<(), LogError> {
        self.out.flush().map_err(|source| LogError::Write {
            path: self.path.clone(),
            source,
        })
    }

    /// The file's name.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Gives the writer back, flushed.
    pub fn into_inner(mut self) -> Result<W, LogError> {
        self.flush()?;
        let path = self.path;
        self.out.into_inner().map_err(|e| LogError::Write {
            path,
            source: e.into_error(),
        })
    }

    fn write_intervals_before(&mut self, now_us: i64) -> Result<(), LogError> {
        loop {
            let Some(agg) = &mut self.aggregate else {
                return Ok(());
            };
            let next = agg.start_us + agg.interval_us;
            if next > now_us {
                return Ok(());
            }
            let line = aggregate_line(&self.options, agg.start_us, &agg.stats);
            agg.start_us = next;
            agg.stats = IntervalStats::default();
            self.write(line.as_bytes())?;
        }
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), LogError> {
        self.out.write_all(bytes).map_err(|source| LogError::Write {
            path: self.path.clone(),
            source,
        })
    }
}

fn aggregate_line(options: &LogOptions, start_us: i64, s: &IntervalStats) -> LineBuf {
    let mut line = LineBuf::new();
    let lat = &s.latency;
    line.push_i64(start_us.div_euclid(1_000_000));
    line.push_fields(&[s.counts.committed, lat.sum]);
    line.push_byte(b' ');
    line.push_u128(lat.sum2);
    line.push_fields(&[lat.min, lat.max]);
    let lag = if options.throttled {
        s.lag
    } else {
        Default::default()
    };
    line.push_fields(&[lag.sum]);
    line.push_byte(b' ');
    line.push_u128(lag.sum2);
    line.push_fields(&[lag.min, lag.max]);
    let skipped = if options.latency_limit {
        s.counts.skipped
    } else {
        0
    };
    let (retried, retries) = if options.max_tries != 1 {
        (s.counts.retried, s.counts.retries)
    } else {
        (0, 0)
    };
    let c = &s.counts;
    let (serialization, deadlock, other) = if options.failures_detailed {
        (
            c.serialization_failures,
            c.deadlock_failures,
            c.other_failures,
        )
    } else {
        (0, 0, 0)
    };
    line.push_fields(&[skipped, retried, retries, serialization, deadlock]);
    if options.continue_on_error {
        line.push_fields(&[other]);
    }
    line.push_byte(b'\n');
    line
}

/// A line assembled on the stack.
struct LineBuf {
    buf: [u8; 256],
    len: usize,
}

impl LineBuf {
    fn new() -> Self {
        LineBuf {
            buf: [0; 256],
            len: 0,
        }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    fn push_byte(&mut self, b: u8) {
        if self.len < self.buf.len() {
            self.buf[self.len] = b;
            self.len += 1;
        }
    }

    fn push_str(&mut self, s: &str) {
        for b in s.bytes() {
            self.push_byte(b);
        }
    }

    fn push_digits(&mut self, digits: &[u8]) {
        for &b in digits {
            self.push_byte(b);
        }
    }

    fn push_u128(&mut self, v: u128) {
        self.push_digits(crate::decimal::u128_digits(v, &mut [0; 39]));
    }

    fn push_u64(&mut self, v: u64) {
        self.push_digits(crate::decimal::u64_digits(v, &mut [0; 20]));
    }

    fn push_i64(&mut self, v: i64) {
        if v < 0 {
            self.push_byte(b'-');
        }
        self.push_u64(v.unsigned_abs());
    }

    fn push_fields(&mut self, values: &[u64]) {
        for v in values {
            self.push_byte(b' ');
            self.push_u64(*v);
        }
    }
}
