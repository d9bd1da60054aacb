//! The result model: everything a report shows, in one serializable value.

use serde::{Deserialize, Serialize};

use crate::stats::{
    Counters, GroupStats, HistogramError, IntervalHistogram, IntervalStats, LatencyHistogram,
    SimpleStats, ThreadStats,
};

/// Version of the JSON layout; bumped on any incompatible change.
///
/// Version 2 added per-interval latency histograms and percentiles, p99.99
/// and the run's context (command line, server version, start and end);
/// version 1 files are still read (see [`super::from_json`]).
pub const SCHEMA_VERSION: u32 = 2;

/// A builtin or file script, as the report names it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScriptInfo {
    /// `<builtin: TPC-B (sort of)>` or the file name.
    pub name: String,
    /// `@weight`.
    pub weight: u32,
    /// First line of each command, as `-r` prints it.
    pub commands: Vec<String>,
    /// SHA-256 of the script's text, hex (absent in results of older
    /// pgbolt versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// How the run was bounded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunLimit {
    /// `-t`: transactions per client.
    TransactionsPerClient(u64),
    /// `-T`: seconds.
    DurationSeconds(u64),
}

/// Partitioning of `pgbench_accounts` found in the database.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Partitioning {
    /// `range` or `hash`.
    pub method: String,
    /// Number of partitions.
    pub partitions: u32,
}

/// The options of the run as resolved (never a password or connection string).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunOptions {
    /// Scripts, in the order given.
    pub scripts: Vec<ScriptInfo>,
    /// Scaling factor.
    pub scale: u64,
    /// Partitioning, when the accounts table is partitioned.
    pub partitioning: Option<Partitioning>,
    /// `simple`, `extended` or `prepared`.
    pub query_mode: String,
    /// `-c`.
    pub clients: u32,
    /// `-j`.
    pub threads: u32,
    /// `--max-tries`; 0 means unlimited.
    pub max_tries: u32,
    /// `-t` or `-T`.
    pub limit: RunLimit,
    /// `-R` in transactions per second.
    pub rate: Option<f64>,
    /// `-L` in µs.
    pub latency_limit_us: Option<i64>,
    /// `-P` in seconds.
    pub progress_s: Option<u32>,
    /// `-C`.
    pub connect_per_transaction: bool,
    /// `--pool-size`: connections the clients shared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_size: Option<u32>,
    /// `--failures-detailed`.
    pub failures_detailed: bool,
    /// `-r`.
    pub report_per_command: bool,
    /// `--continue-on-error`.
    pub continue_on_error: bool,
    /// `--warmup` in seconds: how long the same clients ran, unmeasured,
    /// just before the measured run (0 without).
    #[serde(default)]
    pub warmup_s: u32,
    /// `-D NAME=VALUE`, by name (values not UTF-8 shown lossily, a
    /// connection URI's password hidden); empty in files written before
    /// they were recorded.
    #[serde(default)]
    pub variables: std::collections::BTreeMap<String, String>,
}

impl RunOptions {
    /// Options of a test's synthetic result: `scripts`, `clients` on
    /// `threads`, bounded by `limit`, everything else pgbench's default.
    #[cfg(test)]
    pub(crate) fn for_test(
        scripts: Vec<ScriptInfo>,
        clients: u32,
        threads: u32,
        limit: RunLimit,
    ) -> RunOptions {
        RunOptions {
            scripts,
            scale: 1,
            partitioning: None,
            query_mode: "simple".to_owned(),
            clients,
            threads,
            max_tries: 1,
            limit,
            rate: None,
            latency_limit_us: None,
            progress_s: None,
            connect_per_transaction: false,
            pool_size: None,
            failures_detailed: false,
            report_per_command: false,
            continue_on_error: false,
            warmup_s: 0,
            variables: std::collections::BTreeMap::new(),
        }
    }

    /// pgbench prints per-script sections when several scripts run.
    pub fn per_script_stats(&self) -> bool {
        self.scripts.len() > 1
    }
}

/// Run durations, µs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timings {
    /// Benchmarking time (tps is computed over it).
    pub bench_duration_us: i64,
    /// Time to open the initial connections (without `-C`).
    pub initial_connection_us: i64,
    /// Connection time summed over all threads (`-C`).
    pub total_connection_us: i64,
}

/// Latency percentiles in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p99_9: f64,
    /// Absent from schema version 1 files, which are read with it
    /// recomputed from their histograms.
    #[serde(default)]
    pub p99_99: f64,
    pub max: f64,
}

/// A distribution: exact sums plus its histogram.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    /// Exact count, sums, min and max in µs.
    pub stats: SimpleStats,
    /// Mean in ms (null when empty).
    pub average_ms: Option<f64>,
    /// Population standard deviation in ms (null when empty).
    pub stddev_ms: Option<f64>,
    /// Percentiles from the histogram (null when empty).
    pub percentiles: Option<Percentiles>,
    /// HdrHistogram V2 + deflate, base64 (values in µs).
    pub histogram: String,
}

impl Distribution {
    /// Builds from exact sums and a histogram.
    pub fn new(stats: SimpleStats, histogram: &LatencyHistogram) -> Result<Self, HistogramError> {
        let empty = stats.count == 0;
        Ok(Distribution {
            stats,
            // pgbench's scaling (`0.001 * latency`), which the text report
            // prints: `/ 1000.0` can round the other way at a last digit
            // (0.501 in the report, 0.500 in the JSON).
            average_ms: (!empty).then(|| 0.001 * stats.mean_us()),
            stddev_ms: (!empty).then(|| 0.001 * stats.stddev_us()),
            percentiles: (!histogram.is_empty()).then(|| percentiles(histogram, stats.max)),
            histogram: histogram.to_base64()?,
        })
    }

    /// The histogram, decoded.
    pub fn decode_histogram(&self) -> Result<LatencyHistogram, HistogramError> {
        LatencyHistogram::from_base64(&self.histogram)
    }
}

/// The quantiles of [`Percentiles`], in its order.
const QUANTILES: [f64; 5] = [0.5, 0.9, 0.99, 0.999, 0.9999];

/// p50, p90, p99, p99.9, p99.99 of a histogram and the exact maximum, in
/// ms.
///
/// A histogram reports the highest value of a bucket, which can exceed the
/// largest value recorded by up to 0.1%; percentiles are capped at the exact
/// maximum (kept in the sums) so that none exceeds `max`.
pub fn percentiles(h: &LatencyHistogram, exact_max_us: u64) -> Percentiles {
    percentiles_of(h.quantiles(QUANTILES).0, exact_max_us)
}

fn percentiles_of(q: [u64; 5], exact_max_us: u64) -> Percentiles {
    let ms = |v: u64| v.min(exact_max_us) as f64 / 1000.0;
    Percentiles {
        p50: ms(q[0]),
        p90: ms(q[1]),
        p99: ms(q[2]),
        p99_9: ms(q[3]),
        p99_99: ms(q[4]),
        max: exact_max_us as f64 / 1000.0,
    }
}

/// Transaction counts with the derived figures pgbench prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// The raw counters.
    #[serde(flatten)]
    pub counters: Counters,
    /// Failed transactions of every kind.
    pub failed: u64,
    /// Committed + failed + skipped.
    pub total: u64,
    /// Committed transactions slower than `-L`.
    pub latency_late: u64,
}

impl Counts {
    fn new(counters: Counters, latency_late: u64) -> Self {
        Counts {
            counters,
            failed: counters.failures(),
            total: counters.total(),
            latency_late,
        }
    }
}

/// Statistics of one command, for `-r`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CommandResult {
    /// First line of the command.
    pub command: String,
    /// Exact elapsed-time sums, µs.
    pub latency: SimpleStats,
    /// Average elapsed time in ms (0 when never run, as pgbench prints it).
    pub average_ms: f64,
    /// Transactions failed on this command.
    pub failures: u64,
    /// Retries after errors on this command.
    pub retries: u64,
}

/// Statistics of one script.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScriptResult {
    /// Name as in the report.
    pub name: String,
    /// Weight.
    pub weight: u32,
    /// Outcome counts.
    pub counts: Counts,
    /// Committed transactions per second.
    pub tps: f64,
    /// Latency of committed transactions.
    pub latency: Distribution,
    /// Per-command statistics.
    pub commands: Vec<CommandResult>,
}

/// One bucket of the time series.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntervalResult {
    /// Seconds from the start of the series to the start of the bucket.
    pub offset_s: f64,
    /// Committed transactions per second in the bucket.
    pub tps: f64,
    /// Average latency in ms (null when nothing committed).
    pub latency_average_ms: Option<f64>,
    /// The exact counters and sums.
    #[serde(flatten)]
    pub stats: IntervalStats,
    /// The bucket's latency histogram in µs at 1 significant digit, V2 +
    /// deflate, base64; null when nothing committed.
    #[serde(default)]
    pub latency_histogram: Option<String>,
}

impl IntervalResult {
    /// Latency percentiles of the bucket's committed transactions, read
    /// from its histogram (at most 6.25% high) and capped at the exact
    /// maximum; `None` when nothing committed or the bucket has no
    /// histogram (a schema version 1 file).
    pub fn latency_percentiles(&self) -> Result<Option<Percentiles>, ReportError> {
        match &self.latency_histogram {
            Some(text) if self.stats.latency.count > 0 => {
                let q = IntervalHistogram::decode(text)?.quantiles(QUANTILES);
                Ok(Some(percentiles_of(q, self.stats.latency.max)))
            }
            _ => Ok(None),
        }
    }
}

/// The per-interval series.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Start of the first bucket, µs since the Unix epoch.
    pub start_us: i64,
    /// Bucket width in µs.
    pub width_us: i64,
    /// The buckets, oldest first.
    pub intervals: Vec<IntervalResult>,
}

/// Where and when the run happened, for the report's header. Each field is
/// null when unknown (a schema version 1 file, a merged result).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunContext {
    /// The command line, every password replaced by `****`.
    pub command_line: Option<String>,
    /// The server's `server_version`.
    pub server_version: Option<String>,
    /// A few settings that shape performance, by name, as `SHOW` prints
    /// them (see `engine::setup::RECORDED_SETTINGS`); empty when they could
    /// not be read (a pooler's console, `--no-preflight`, a result written
    /// before pgbolt recorded them).
    #[serde(default)]
    pub server_settings: std::collections::BTreeMap<String, String>,
    /// When the run started (before the clients connected), µs since the
    /// Unix epoch.
    pub started_us: Option<i64>,
    /// When the run ended, µs since the Unix epoch.
    pub ended_us: Option<i64>,
}

/// The command line as the report shows it: each argument with every
/// password hidden (a connection string given as the database name or
/// with `-d`/`--dbname`, attached or not), quoted for a POSIX shell where
/// it needs quoting.
pub fn redacted_command_line<I>(args: I) -> String
where
    I: IntoIterator,
    I::Item: Into<std::ffi::OsString>,
{
    let mut words = Vec::new();
    for (i, arg) in args.into_iter().enumerate() {
        let arg = arg.into().to_string_lossy().into_owned();
        let shown = if i == 0 {
            std::path::Path::new(&arg)
                .file_name()
                .map_or(arg.clone(), |n| n.to_string_lossy().into_owned())
        } else {
            redact_argument(&arg)
        };
        words.push(shell_quote(&shown));
    }
    words.join(" ")
}

/// One argument with any password in it hidden: an option's attached
/// value (`--dbname=...`, `-d...`) is redacted apart from the option.
fn redact_argument(arg: &str) -> String {
    if let Some(rest) = arg.strip_prefix("--") {
        if let Some((name, value)) = rest.split_once('=') {
            return format!("--{name}={}", redact_value(value));
        }
        return arg.to_owned();
    }
    if arg.len() > 2 && arg.starts_with('-') && arg.is_char_boundary(2) {
        return format!("{}{}", &arg[..2], redact_value(&arg[2..]));
    }
    redact_value(arg)
}

/// A `-D` value as the result records it: a password in it hidden.
pub fn redacted_variable(value: &[u8]) -> String {
    redact_value(&String::from_utf8_lossy(value))
}

fn redact_value(value: &str) -> String {
    crate::config::target::redact(value)
}

fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_=./:,@%+".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Everything about one run (or several merged runs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `pgbolt`.
    pub tool: String,
    /// pgbolt's version.
    pub tool_version: String,
    /// Number of result files merged into this one (1 for a single run).
    pub merged_runs: u32,
    /// Command line, server, start and end.
    #[serde(default)]
    pub context: RunContext,
    /// Options as resolved.
    pub options: RunOptions,
    /// Durations.
    pub timings: Timings,
    /// Whether some client aborted (partial results).
    pub aborted: bool,
    /// Outcome counts of the whole run.
    pub counts: Counts,
    /// Committed transactions per second over the benchmarking time.
    pub tps: f64,
    /// Latency from the scheduled start (the actual start without `-R`).
    pub latency: Distribution,
    /// Service time, from the actual start.
    pub service_time: Distribution,
    /// Schedule lag under `-R`.
    pub lag: Distribution,
    /// `--pool-size`: the wait for a pooled connection, one per
    /// transaction started (also part of its latency).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_wait: Option<Distribution>,
    /// Per script, in order.
    pub scripts: Vec<ScriptResult>,
    /// Time series.
    pub series: Series,
    /// This run's place in a fleet of load generators (absent in files
    /// of older pgbolt versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<crate::model::generators::GeneratorInfo>,
    /// A merged result's generators, in index order (empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub generators: Vec<crate::model::generators::GeneratorSummary>,
    /// The server's view, the client's load and the findings (null when
    /// not diagnosed: a result of an older pgbolt, a merged result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<crate::model::diagnosis::Diagnosis>,
    /// `--reconnect`: the outage the clients went through (absent
    /// without the option).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outage: Option<crate::model::failover::Outage>,
}

/// `count` per second over `seconds`; 0 for a run that took no time (JSON
/// has no infinity).
pub(crate) fn per_second(count: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        count as f64 / seconds
    } else {
        0.0
    }
}

/// Why a result could not be built, read or merged.
#[derive(Debug)]
pub enum ReportError {
    /// A histogram could not be encoded, decoded or added.
    Histogram(HistogramError),
    /// The JSON text is not a result.
    Json(serde_json::Error),
    /// The result was written by an incompatible pgbolt.
    SchemaVersion { found: u32 },
    /// Results with different scripts cannot be merged.
    ScriptsDiffer,
    /// Merging needs at least one result.
    NothingToMerge,
    /// A result file of another kind (a sweep's), which this reader does
    /// not take yet.
    Kind(String),
    /// A field holds what no pgbolt writes and no renderer can draw (a
    /// series' interval width of 0): its JSON path, and what it must be.
    Field { field: String, problem: String },
    /// A field of a result file holds what no run can have.
    Impossible(String),
}

impl std::fmt::Display for ReportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReportError::Histogram(e) => e.fmt(f),
            ReportError::Json(e) => write!(f, "invalid result file: {e}"),
            ReportError::SchemaVersion { found } => write!(
                f,
                "result file has schema version {found}, this pgbolt reads versions 1 to {SCHEMA_VERSION}"
            ),
            ReportError::ScriptsDiffer => {
                write!(f, "results of runs with different scripts cannot be merged")
            }
            ReportError::NothingToMerge => write!(f, "no results to merge"),
            ReportError::Kind(kind) => write!(
                f,
                "this is a {kind}'s result file: reading it here is not supported yet"
            ),
            ReportError::Field { field, problem } => write!(f, "field {field} {problem}"),
            ReportError::Impossible(what) => write!(f, "invalid result file: {what}"),
        }
    }
}

impl std::error::Error for ReportError {}

impl From<HistogramError> for ReportError {
    fn from(e: HistogramError) -> Self {
        ReportError::Histogram(e)
    }
}

impl RunResult {
    /// Builds the result from the merged statistics of all threads.
    pub fn build(
        options: RunOptions,
        timings: Timings,
        aborted: bool,
        stats: &ThreadStats,
    ) -> Result<Self, ReportError> {
        let seconds = timings.bench_duration_us as f64 / 1_000_000.0;
        let total = &stats.total;
        let empty = LatencyHistogram::new();
        let service = total.service_histogram().unwrap_or(&empty);
        let lag = total.lag_histogram().unwrap_or_default();
        let mut scripts = Vec::with_capacity(options.scripts.len());
        for (i, info) in options.scripts.iter().enumerate() {
            let group = stats.script(i);
            let commands = stats.commands.get(i).map(Vec::as_slice).unwrap_or(&[]);
            scripts.push(script_result(info, group, commands, seconds)?);
        }
        Ok(RunResult {
            schema_version: SCHEMA_VERSION,
            tool: "pgbolt".to_string(),
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            merged_runs: 1,
            context: RunContext::default(),
            generator: None,
            generators: Vec::new(),
            diagnosis: None,
            outage: None,
            counts: Counts::new(total.counts, total.latency_late),
            tps: per_second(total.counts.committed, seconds),
            latency: Distribution::new(total.latency, &total.latency_histogram)?,
            service_time: Distribution::new(total.service(), service)?,
            lag: Distribution::new(total.lag(), &lag)?,
            pool_wait: stats
                .pool_wait
                .as_ref()
                .map(|p| Distribution::new(p.stats, &p.histogram))
                .transpose()?,
            scripts,
            series: series(&stats.series),
            options,
            timings,
            aborted,
        })
    }
}

fn script_result(
    info: &ScriptInfo,
    group: Option<&GroupStats>,
    commands: &[crate::stats::CommandStats],
    seconds: f64,
) -> Result<ScriptResult, ReportError> {
    let empty = LatencyHistogram::new();
    let (counters, late, latency, histogram) = match group {
        Some(g) => (g.counts, g.latency_late, g.latency, &g.latency_histogram),
        None => (Counters::default(), 0, SimpleStats::default(), &empty),
    };
    let commands = info
        .commands
        .iter()
        .enumerate()
        .map(|(i, text)| command_result(text, commands.get(i).copied().unwrap_or_default()))
        .collect();
    Ok(ScriptResult {
        name: info.name.clone(),
        weight: info.weight,
        counts: Counts::new(counters, late),
        tps: per_second(counters.committed, seconds),
        latency: Distribution::new(latency, histogram)?,
        commands,
    })
}

pub(crate) fn command_result(text: &str, c: crate::stats::CommandStats) -> CommandResult {
    CommandResult {
        command: text.to_string(),
        average_ms: if c.latency.count > 0 {
            c.latency.mean_us() / 1000.0
        } else {
            0.0
        },
        latency: c.latency,
        failures: c.failures,
        retries: c.retries,
    }
}

pub(crate) fn series(s: &crate::stats::IntervalSeries) -> Series {
    let width_s = s.width_us() as f64 / 1_000_000.0;
    let histograms = s.latency_histograms();
    let mut intervals = Vec::with_capacity(s.buckets().len());
    for (i, (b, h)) in s.buckets().iter().zip(histograms).enumerate() {
        intervals.push(IntervalResult {
            offset_s: i as f64 * width_s,
            tps: per_second(b.counts.committed, width_s),
            latency_average_ms: (b.latency.count > 0).then(|| b.latency.mean_us() / 1000.0),
            stats: *b,
            latency_histogram: (!h.is_empty()).then(|| h.encode()),
        });
    }
    Series {
        start_us: s.start_us(),
        width_us: s.width_us(),
        intervals,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_hides_every_password() {
        let line = redacted_command_line([
            "/usr/bin/pgbolt",
            "-c",
            "4",
            "host=db password=s3cret",
            "--dbname=postgresql://u:pw@h/db",
            "-dpassword=x",
            "-f",
            "it's.sql",
        ]);
        assert!(!line.contains("s3cret") && !line.contains(":pw@") && !line.contains("=x"));
        let targets = redacted_command_line([
            "pgbolt",
            "--target=a=host=db password=s3cret",
            "--target=b=postgresql://u:pw@h/db",
            "--target",
            "c=postgres://u:pw@h/db",
        ]);
        assert!(
            !targets.contains("s3cret") && !targets.contains(":pw@"),
            "{targets}"
        );
        assert_eq!(
            line,
            "pgbolt -c 4 'host=db password=****' '--dbname=postgresql://u:****@h/db' '-dpassword=****' -f 'it'\\''s.sql'"
        );
    }

    /// Regression: the JSON's average came from `/ 1000.0` and the text
    /// report's from pgbench's `0.001 *`; at a mean of 500.5 µs the two
    /// print 0.500 and 0.501.
    #[test]
    fn the_json_average_prints_the_text_reports_digits() {
        let stats = SimpleStats {
            count: 2,
            sum: 1001,
            ..SimpleStats::default()
        };
        let d = Distribution::new(stats, &LatencyHistogram::new()).expect("distribution");
        let text = format!("{:.3}", 0.001 * stats.mean_us());
        assert_eq!(text, "0.501");
        assert_eq!(format!("{:.3}", d.average_ms.expect("average")), text);
    }
}
