//! The findings: each a pure function of the result, which says whether
//! its condition holds and, if so, the figures, why they matter and what to
//! do. Thresholds are named constants; docs/diagnosis.md lists them.

use std::collections::BTreeMap;

use super::machine;
use crate::model::diagnosis::{Finding, Severity, MIN_STATE_SAMPLES};
use crate::model::run::RunResult;

/// Shortest read-write run whose checkpoints and vacuums even out.
pub const READ_WRITE_MIN_S: f64 = 60.0;
/// Rows written per committed transaction from which a run of custom
/// scripts is a read-write one (one row per 20 transactions).
pub const READ_WRITE_ROWS_PER_TRANSACTION: f64 = 0.05;
/// Progress intervals a run should span.
pub const MIN_PROGRESS_INTERVALS: f64 = 10.0;
/// Committed transactions under which p99.99 rests on no transaction.
pub const MIN_TRANSACTIONS: u64 = 10_000;
/// Allowed gap between clients and TPS × mean latency, as a fraction.
pub const LITTLE_TOLERANCE: f64 = 0.10;
/// Share of the slow transactions (above the run's p99 and ten times
/// its median) in one interval
/// and the next that makes it a stall.
pub const STALL_SHARE: f64 = 0.75;
/// How many medians above a transaction must be to count as slow.
pub const STALL_MEDIANS: f64 = 10.0;
/// Intervals a run needs before one of them can stand out.
pub const MIN_STALL_INTERVALS: usize = 6;
/// Under `-R`: the schedule lag's p99, in client intervals (clients /
/// rate, the mean time between one client's scheduled starts), above
/// which the schedule was not kept ...
pub const LAG_WARNING_INTERVALS: f64 = 1.0;
/// ... and above which it was lost for good.
pub const LAG_CRITICAL_INTERVALS: f64 = 10.0;
/// Share of the time the clients spent in transactions from which a late
/// schedule is the server's (or too few clients'), not the client
/// machine's.
pub const LAG_CLIENTS_BUSY: f64 = 0.9;
/// A service time p99 at least this fraction of the lag's p99 makes slow
/// transactions the lag's cause.
pub const LAG_SLOW_FRACTION: f64 = 0.5;
/// Share of the run a worker thread waited for a CPU from which a late
/// schedule is the client machine's.
pub const LAG_THREAD_RUNQUEUE: f64 = 0.10;
/// Share of the run's backend-samples that other client sessions' busy
/// ones must reach to be another load beside the run (one busy session
/// beside 20 clients: 5%).
pub const OTHER_SESSIONS_SHARE: f64 = 0.05;
/// Event times a finding's summary lists.
const TIMES_LISTED: usize = 4;

const TPCB_LIKE: &str = "<builtin: TPC-B (sort of)>";
const SIMPLE_UPDATE: &str = "<builtin: simple update>";

/// Every finding that applies to `r`, most severe first.
pub fn findings(r: &RunResult) -> Vec<Finding> {
    let checks: [fn(&RunResult) -> Option<Finding>; 13] = [
        machine::client_saturated,
        machine::machine_saturated,
        schedule_lag,
        machine::shared_machine,
        run_too_short,
        too_few_transactions,
        scale_below_clients,
        checkpoint,
        vacuum,
        commits_disagree,
        other_sessions,
        littles_law,
        stall,
    ];
    let mut found: Vec<Finding> = checks.iter().filter_map(|check| check(r)).collect();
    found.sort_by_key(|f| std::cmp::Reverse(f.severity));
    found
}

pub(super) fn finding(
    id: &str,
    severity: Severity,
    summary: String,
    figures: &[(&str, f64)],
) -> Finding {
    Finding {
        id: id.to_owned(),
        severity,
        summary,
        figures: figures
            .iter()
            .map(|(k, v)| ((*k).to_owned(), *v))
            .collect::<BTreeMap<_, _>>(),
        why: String::new(),
        action: String::new(),
    }
}

pub(super) fn explained(mut f: Finding, why: &str, action: &str) -> Option<Finding> {
    f.why = why.to_owned();
    f.action = action.to_owned();
    Some(f)
}

pub(super) fn window_s(r: &RunResult) -> f64 {
    r.timings.bench_duration_us as f64 / 1e6
}

/// Whether the run wrote: a read-write builtin, or rows written per the
/// server.
/// Whether the run wrote: a builtin script says so by its name; custom
/// scripts by the rows the database wrote, at least
/// [`READ_WRITE_ROWS_PER_TRANSACTION`] per committed transaction (a few
/// rows are written by any run: an analyze's statistics, statistics
/// other sessions reported late).
fn read_write(r: &RunResult) -> bool {
    let scripts = &r.options.scripts;
    if scripts.iter().all(|s| s.name.starts_with("<builtin: ")) {
        return scripts
            .iter()
            .any(|s| s.name == TPCB_LIKE || s.name == SIMPLE_UPDATE);
    }
    let committed = r.counts.counters.committed as f64;
    r.diagnosis
        .as_ref()
        .and_then(|d| d.counters.as_ref())
        .and_then(|c| c.database)
        .is_some_and(|db| {
            db.rows_written > 0
                && db.rows_written as f64 >= committed * READ_WRITE_ROWS_PER_TRANSACTION
        })
}

fn run_too_short(r: &RunResult) -> Option<Finding> {
    let secs = window_s(r);
    if read_write(r) && secs < READ_WRITE_MIN_S {
        let f = finding(
            "run-too-short",
            Severity::Warning,
            format!(
                "run too short: a read-write run of {secs:.1} s (under {READ_WRITE_MIN_S:.0} s)"
            ),
            &[("duration_s", secs), ("minimum_s", READ_WRITE_MIN_S)],
        );
        return explained(
            f,
            "a short read-write run misses the checkpoints, vacuums and cache turnover a longer one pays for",
            "run for several minutes (-T), longer than checkpoint_timeout for steady numbers",
        );
    }
    let progress = f64::from(r.options.progress_s?);
    if secs >= MIN_PROGRESS_INTERVALS * progress {
        return None;
    }
    let f = finding(
        "run-too-short",
        Severity::Info,
        format!("run too short: {secs:.1} s is fewer than {MIN_PROGRESS_INTERVALS:.0} progress intervals of {progress:.0} s"),
        &[("duration_s", secs), ("progress_s", progress)],
    );
    explained(
        f,
        "a few intervals cannot show whether the rate was steady",
        "run longer, or report progress more often (-P)",
    )
}

fn too_few_transactions(r: &RunResult) -> Option<Finding> {
    let committed = r.counts.counters.committed;
    if committed == 0 || committed >= MIN_TRANSACTIONS {
        return None;
    }
    let f = finding(
        "too-few-transactions",
        Severity::Info,
        format!("{committed} transactions: p99.99 rests on fewer than one transaction"),
        &[
            ("committed", committed as f64),
            ("minimum", MIN_TRANSACTIONS as f64),
        ],
    );
    explained(
        f,
        "a high percentile of a few transactions is their maximum, not a tail",
        "run longer, or read only the percentiles the count supports",
    )
}

fn scale_below_clients(r: &RunResult) -> Option<Finding> {
    let o = &r.options;
    let contended = o
        .scripts
        .iter()
        .any(|s| s.name == TPCB_LIKE || s.name == SIMPLE_UPDATE);
    if !contended || o.scale >= u64::from(o.clients) {
        return None;
    }
    let f = finding(
        "scale-below-clients",
        Severity::Warning,
        format!(
            "scale {} below {} clients: updates contend on pgbench_branches rows",
            o.scale, o.clients
        ),
        &[("scale", o.scale as f64), ("clients", f64::from(o.clients))],
    );
    explained(
        f,
        "with fewer branches than clients, clients wait for each other's row locks; the run measures lock contention",
        "initialize with a scale of at least the number of clients (-i -s)",
    )
}

/// When the server's events of `kinds` happened, in seconds on the
/// report's time axis (from the start of the run): the first's time (NaN
/// when the monitor placed none) and the summary's words (` at 2.1 s,
/// 30.4 s`, empty when none was placed).
fn event_times(r: &RunResult, kinds: &[&str]) -> (f64, String) {
    let Some(d) = r.diagnosis.as_ref() else {
        return (f64::NAN, String::new());
    };
    let origin = r.context.started_us.unwrap_or(r.series.start_us);
    let times: Vec<f64> = d
        .events
        .iter()
        .filter(|e| kinds.contains(&e.kind.as_str()))
        .map(|e| (e.at_us - origin) as f64 / 1e6)
        .collect();
    let Some(&first) = times.first() else {
        return (f64::NAN, String::new());
    };
    let mut words: Vec<String> = times
        .iter()
        .take(TIMES_LISTED)
        .map(|t| format!("{t:.1} s"))
        .collect();
    if times.len() > TIMES_LISTED {
        words.push("...".to_owned());
    }
    (first, format!(" at {}", words.join(", ")))
}

fn checkpoint(r: &RunResult) -> Option<Finding> {
    let c = r.diagnosis.as_ref()?.counters.as_ref()?.checkpoints?;
    let n = c.timed + c.requested;
    if n <= 0 {
        return None;
    }
    let (first, at) = event_times(r, &["checkpoint"]);
    let mut figures = vec![("requested", c.requested as f64), ("timed", c.timed as f64)];
    if first.is_finite() {
        figures.push(("first_at_s", first));
    }
    let f = finding(
        "checkpoint",
        Severity::Warning,
        format!(
            "{n} checkpoint(s) during the run ({} requested, {} timed){at}",
            c.requested, c.timed
        ),
        &figures,
    );
    explained(
        f,
        "a checkpoint writes dirty pages and makes the next changes write full pages to the WAL: the rate drops while it runs",
        "run long enough to include checkpoints evenly, or compare runs that have the same number",
    )
}

fn vacuum(r: &RunResult) -> Option<Finding> {
    let d = r.diagnosis.as_ref()?;
    let mut parts = Vec::new();
    let (mut vacuums, mut analyzes) = (0, 0);
    for t in &d.tables {
        let v = t.autovacuums + t.vacuums;
        let a = t.autoanalyzes + t.analyzes;
        if v + a > 0 {
            parts.push(format!("{} ({v} vacuum, {a} analyze)", t.table));
        }
        vacuums += v;
        analyzes += a;
    }
    if parts.is_empty() {
        return None;
    }
    let severity = if vacuums > 0 {
        Severity::Warning
    } else {
        Severity::Info
    };
    let (first, at) = event_times(r, &["vacuum", "autovacuum", "analyze", "autoanalyze"]);
    let mut figures = vec![("vacuums", vacuums as f64), ("analyzes", analyzes as f64)];
    if first.is_finite() {
        figures.push(("first_at_s", first));
    }
    let f = finding(
        "vacuum",
        severity,
        format!("vacuum or analyze during the run: {}{at}", parts.join(", ")),
        &figures,
    );
    explained(
        f,
        "a vacuum reads and writes the table beside the clients, and an analyze can change plans mid-run",
        "vacuum before the run (the default without -n), and compare runs of the same length",
    )
}

fn commits_disagree(r: &RunResult) -> Option<Finding> {
    if !r
        .options
        .scripts
        .iter()
        .all(|s| s.name.starts_with("<builtin: "))
    {
        return None;
    }
    let d = r.diagnosis.as_ref()?;
    // Through a pooler the backends stay and report late: the previous
    // run's commits arrive in this one's window, this one's in the next.
    if d.monitor.pooled {
        return None;
    }
    let db = d.counters.as_ref()?.database?;
    let committed = r.counts.counters.committed as i64;
    let others = db.xact_commit - committed - db.monitor_commits;
    let tolerance = (committed / 100).max(i64::from(r.options.clients) + 10);
    // Fewer commits than pgbolt's is no other session's: the end reading
    // came before the backends reported them (the monitor says so).
    if others <= tolerance {
        return None;
    }
    let figures = [
        ("server_commits", db.xact_commit as f64),
        ("pgbolt_committed", committed as f64),
        ("monitor_commits", db.monitor_commits as f64),
        ("others", others as f64),
    ];
    let summary = format!(
        "the server committed {} transactions, pgbolt {committed}: {others} more",
        db.xact_commit
    );
    // With samples that saw no other client at work, the extra commits are
    // no other load when the samples saw who made them: statistics that
    // idle sessions (a pooler's server connections from an earlier run)
    // reported late, or autovacuum's own transactions (the vacuum finding
    // tells of them). With nobody seen at all, sessions came and went
    // between two samples: other work, unnamed.
    let seen = d
        .activity
        .as_ref()
        .filter(|_| d.monitor.samples > 0)
        .map(|a| &a.others);
    let idle = seen
        .filter(|o| o.clients_busy() == 0)
        .map_or(0, |o| o.same_name.total() + o.other_clients.total());
    if seen.is_some_and(|o| o.clients_busy() == 0 && idle == 0 && o.autovacuum.total() > 0) {
        return None;
    }
    if idle > 0 {
        let f = finding(
            "commits-disagree",
            Severity::Info,
            format!(
                "{summary}, while no other session worked: {:.1} idle sessions on average{}",
                idle as f64 / d.monitor.samples as f64,
                few_samples(r)
            ),
            &figures,
        );
        return explained(
            f,
            "an idle backend reports its last statistics up to 10 s late, so the commits of a session that ended its work just before the run (such as a pooler's server connections from an earlier run) land in this run's counters; the run's own figures are not affected",
            "nothing for this run; leave a few seconds between runs through a pooler and direct ones if the counters should match",
        );
    }
    let unseen = if seen.is_some_and(|o| !o.any()) {
        " (none seen by the samples: sessions shorter than their interval)"
    } else {
        ""
    };
    let f = finding(
        "commits-disagree",
        Severity::Warning,
        format!("{summary} from other sessions{}{unseen}", others_named(r)),
        &figures,
    );
    explained(
        f,
        "other sessions' work shared the server with the run, so the rate is not the server's whole capacity",
        "run on a quiet server, or account for the other load",
    )
}

/// " (from N samples only)" when a finding rests on fewer activity samples
/// than [`MIN_STATE_SAMPLES`], else nothing.
pub(super) fn few_samples(r: &RunResult) -> String {
    let samples = r.diagnosis.as_ref().map_or(0, |d| d.monitor.samples);
    if samples < MIN_STATE_SAMPLES {
        format!(" (from {samples} samples only)")
    } else {
        String::new()
    }
}

/// The other client sessions seen busy beside the run, by kind, with their
/// average busy backends: ": 1.0 other clients, 0.5 other generators of
/// this run" (nothing when the samples saw none).
fn others_named(r: &RunResult) -> String {
    let Some(d) = r.diagnosis.as_ref().filter(|d| d.monitor.samples > 0) else {
        return String::new();
    };
    let Some(o) = d.activity.as_ref().map(|a| &a.others) else {
        return String::new();
    };
    let samples = d.monitor.samples as f64;
    let same_name = if r.generator.is_some() {
        "other generators of this run (or other sessions named like its clients)"
    } else {
        "sessions named like the run's clients but not its own"
    };
    let kinds: Vec<String> = [
        (o.other_clients.busy(), "other clients"),
        (o.same_name.busy(), same_name),
    ]
    .iter()
    .filter(|(busy, _)| *busy > 0)
    .map(|(busy, kind)| format!("{:.1} busy {kind}", *busy as f64 / samples))
    .collect();
    match kinds.is_empty() {
        true => String::new(),
        false => format!(" (seen: {} on average)", kinds.join(", ")),
    }
}

/// Other client sessions worked on the run's database beside it: their
/// busy backend-samples reach [`OTHER_SESSIONS_SHARE`] of the run's own
/// backend-samples.
fn other_sessions(r: &RunResult) -> Option<Finding> {
    let d = r.diagnosis.as_ref()?;
    let a = d.activity.as_ref().filter(|_| d.monitor.samples > 0)?;
    let busy = a.others.clients_busy();
    let own = a.total.total().max(1);
    let share = busy as f64 / own as f64;
    if busy == 0 || share < OTHER_SESSIONS_SHARE {
        return None;
    }
    let samples = d.monitor.samples as f64;
    let f = finding(
        "other-sessions",
        Severity::Warning,
        format!(
            "other sessions worked on the database during the run{}{}",
            others_named(r),
            few_samples(r)
        ),
        &[
            (
                "busy_other_clients",
                a.others.other_clients.busy() as f64 / samples,
            ),
            ("busy_same_name", a.others.same_name.busy() as f64 / samples),
            ("share_of_run_backends", share),
            ("samples", samples),
        ],
    );
    explained(
        f,
        "their queries took server time, locks and cache beside the run's, so the figures are not the server's alone",
        "run on a quiet server, or stop the other work (pg_stat_activity shows it) before measuring",
    )
}

fn littles_law(r: &RunResult) -> Option<Finding> {
    let o = &r.options;
    let mean_ms = r.latency.average_ms?;
    if o.rate.is_some() || o.connect_per_transaction || r.counts.counters.committed == 0 {
        return None;
    }
    let busy = r.tps * mean_ms / 1000.0;
    let clients = f64::from(o.clients);
    let gap = (clients - busy) / clients;
    if gap.abs() <= LITTLE_TOLERANCE {
        return None;
    }
    let f = finding(
        "littles-law",
        Severity::Warning,
        format!("TPS × mean latency = {busy:.2} clients busy, of {}: {:.0}% of their time outside transactions", o.clients, gap * 100.0),
        &[("busy_clients", busy), ("clients", clients), ("gap", gap)],
    );
    explained(
        f,
        "time between transactions (client delays, \\sleep outside them, reconnecting, a slow client thread) is load the server did not get",
        "look at the client's CPU, the scripts' meta-commands, and the connection time",
    )
}

fn stall(r: &RunResult) -> Option<Finding> {
    // Slow: above p99, and far above the median (where p99 is still in
    // the bulk, jitter is no stall).
    let p = r.latency.percentiles?;
    let p99_us = (p.p99.max(STALL_MEDIANS * p.p50) * 1000.0) as u64;
    let intervals = &r.series.intervals;
    if intervals.len() < MIN_STALL_INTERVALS {
        return None;
    }
    let mut slow = Vec::with_capacity(intervals.len());
    for i in intervals {
        // An interval in which nothing committed has no histogram.
        slow.push(match &i.latency_histogram {
            Some(text) => crate::stats::IntervalHistogram::decode(text)
                .ok()?
                .count_reaching_above(p99_us),
            None => 0,
        });
    }
    let total: u64 = slow.iter().sum();
    // A stall's late transactions end in its interval or, catching up,
    // in the next one: the pair of neighbours with the most of them.
    let (first, n) = (0..slow.len())
        .map(|i| (i, slow[i] + slow.get(i + 1).copied().unwrap_or(0)))
        .max_by_key(|&(i, n)| (n, std::cmp::Reverse(i)))?;
    let worst = match slow.get(first + 1) {
        Some(&next) if next > slow[first] => first + 1,
        _ => first,
    };
    let share = n as f64 / total.max(1) as f64;
    if total < 10 || share < STALL_SHARE {
        return None;
    }
    if worst == 0 {
        return cold_start(r, share, p99_us);
    }
    let offset = intervals[worst].offset_s;
    let f = finding(
        "stall",
        Severity::Warning,
        format!(
            "a stall at {offset:.0} s: {:.0}% of the slow transactions (over {:.3} ms) ended in that second or the next",
            share * 100.0,
            p99_us as f64 / 1000.0
        ),
        &[("offset_s", offset), ("share", share), ("slow", n as f64)],
    );
    explained(
        f,
        "the tail percentiles describe one event, not the run's usual latency",
        "look at what happened then (a lock, a checkpoint, the machine) and repeat the run",
    )
}

/// A stall in the first interval: the run began with cold caches and new
/// backends, which a warm-up (or a longer run) leaves out of the tail.
fn cold_start(r: &RunResult, share: f64, slow_us: u64) -> Option<Finding> {
    let f = finding(
        "cold-start",
        Severity::Warning,
        format!(
            "a cold start: {:.0}% of the slow transactions (over {:.3} ms) ended in the first second or the next",
            share * 100.0,
            slow_us as f64 / 1000.0
        ),
        &[("share", share)],
    );
    explained(
        f,
        "the tail percentiles describe the run's first moments (caches filling, new backends), not its usual latency",
        if r.options.warmup_s > 0 {
            "run longer, so that the start weighs less in the tail"
        } else {
            "warm up first (--warmup=SEC), or run longer"
        },
    )
}

/// Why the schedule lagged: a short cause, why it matters, what to do,
/// and whether the cause keeps it a warning whatever the lag (a stall
/// that passed, the schedule's own queueing).
struct LagCause {
    cause: &'static str,
    why: &'static str,
    action: &'static str,
    warning_only: bool,
}

/// Whose fault the lag is: a saturated client thread; else clients in
/// transactions nearly all the time (the server, or too few clients for
/// the rate); else a transaction slow enough to hold up the ones after it
/// (a stall); else a client machine that did not run pgbolt on time (its
/// threads waited for a CPU); else the random schedule's own queueing.
fn lag_cause(r: &RunResult, busy: f64, lag_p99_ms: f64) -> LagCause {
    // Slow transactions explain the lag when they are common enough to
    // make its tail, or crowd in one moment (a stall) and are about as
    // slow as the lag (else the stall was pgbolt's, not the server's).
    let enough = |ms: f64| ms >= LAG_SLOW_FRACTION * lag_p99_ms;
    let slow = r
        .service_time
        .percentiles
        .is_some_and(|p| enough(p.p99) || (enough(p.max) && stall(r).is_some()));
    let wall = window_s(r);
    let queued = r.diagnosis.as_ref().map_or(0.0, |d| {
        d.client
            .thread_runqueue_s
            .iter()
            .fold(0.0, |m: f64, s| m.max(s / wall))
    });
    if r.outage.as_ref().is_some_and(|o| o.clients_hit > 0) {
        LagCause {
            cause: "the clients had no server during the outage",
            why: "under --reconnect the schedule goes on through an outage: the transactions due while the clients had no connection start late when they come back (or are skipped under -L), and their latency rightly includes that wait",
            action: "read the outage lines for the downtime; a run without an outage gives the steady-state latency",
            warning_only: true,
        }
    } else if machine::client_saturated(r).is_some() {
        LagCause {
            cause: "the client could not keep up",
            why: "a saturated client thread starts transactions late, so the server got less load than the rate asked for",
            action: "use more threads (-j) or more load machines, or a lower rate",
            warning_only: false,
        }
    } else if busy >= LAG_CLIENTS_BUSY {
        LagCause {
            cause: "the server could not keep up with these clients",
            why: "every client was inside a transaction when its next one was due: the server (or this number of clients) cannot serve this rate, and the latency reported is mostly waiting in line",
            action: "lower the rate (-R), or add clients (-c) if the server has capacity to spare",
            warning_only: false,
        }
    } else if slow {
        LagCause {
            cause: "slow transactions held up the next ones",
            why: "some transactions took as long as the lag (a lock, a checkpoint, a stall of the server or of this machine), and the transactions due meanwhile started late: the tail latency describes those moments",
            action: "look at what happened then (the stall finding, the checkpoints and vacuums on the timeline) and repeat the run",
            warning_only: true,
        }
    } else if queued >= LAG_THREAD_RUNQUEUE {
        LagCause {
            cause: "pgbolt's threads waited for a CPU",
            why: "the clients had time between transactions yet started late: pgbolt's threads did not get a CPU on time (other load on this machine, CPU limits)",
            action: "run the client on a quieter machine or with more threads, and check its CPU limits",
            warning_only: false,
        }
    } else {
        LagCause {
            cause: "due transactions queued for a free client",
            why: "-R draws start times at random, so several fall due together now and then; with few clients for the rate, the later ones wait for a client, and the latency under -R rightly includes that wait",
            action: "add clients (-c) if the latency should measure the server alone",
            warning_only: true,
        }
    }
}

fn schedule_lag(r: &RunResult) -> Option<Finding> {
    let rate = r.options.rate.filter(|r| *r > 0.0)?;
    let lag = r.lag.percentiles?;
    let clients = f64::from(r.options.clients);
    let interval_ms = clients / rate * 1000.0;
    let behind = lag.p99 / interval_ms;
    if behind <= LAG_WARNING_INTERVALS {
        return None;
    }
    let busy = r.tps * r.service_time.average_ms.unwrap_or(0.0) / 1000.0 / clients;
    let c = lag_cause(r, busy, lag.p99);
    let severity = if behind > LAG_CRITICAL_INTERVALS && !c.warning_only {
        Severity::Critical
    } else {
        Severity::Warning
    };
    let f = finding(
        "schedule-lag",
        severity,
        format!(
            "schedule lag p99 {:.3} ms, max {:.3} ms, {behind:.1} client intervals of {interval_ms:.3} ms: {} (clients busy {:.0}% of the time)",
            lag.p99,
            lag.max,
            c.cause,
            busy * 100.0
        ),
        &[
            ("lag_p99_ms", lag.p99),
            ("lag_max_ms", lag.max),
            ("client_interval_ms", interval_ms),
            ("intervals_behind", behind),
            ("clients_busy", busy),
            ("rate", rate),
            ("tps", r.tps),
        ],
    );
    explained(f, c.why, c.action)
}
