//! What a run leaves behind: the threads' results merged into the result
//! model, with what pgbench needs to say of how the run ended and its exit
//! status ([`Finished`]). Printing and writing it is the caller's
//! (`crate::app` for a plain run, a study for its steps).

use crate::config::{Benchmark, RunLength};
use crate::model::failover::{ClientOutage, Outage};
use crate::model::run::{Partitioning, RunLimit, RunOptions, ScriptInfo};
use crate::model::run::{RunResult, Timings};
use crate::stats::ThreadStats;

use super::monitor::{diagnosis, ThreadTimes};
use super::worker::WorkerResult;
use super::{EngineError, Prepared};
use crate::program::log;

/// What the threads and the monitor left behind.
pub(super) struct Ended {
    pub(super) results: Vec<WorkerResult>,
    pub(super) start_time: i64,
    pub(super) now: i64,
    pub(super) interrupted_by: Option<i32>,
    /// When every client was connected.
    pub(super) ready_us: Option<i64>,
    /// The end of a study's measured window: what ended later is not
    /// counted (see [`super::Window::FromConnected`]).
    pub(super) window_end_us: Option<i64>,
    /// What the monitor saw (the reason it did not run in its `missing`);
    /// `None` under `--no-monitor`.
    pub(super) server_view: Option<crate::observe::ServerView>,
    /// The process's CPU from before the clients connected to the end.
    pub(super) process_cpu_us: i64,
    /// The share of this machine's CPU time that was busy meanwhile.
    pub(super) machine_busy_share: Option<f64>,
}

/// What the generators of one run share, for its id (see
/// [`crate::model::generators::run_id`]): the fleet's totals, not this generator's
/// share.
fn fleet_workload(options: &RunOptions, bench: &Benchmark) -> String {
    let (count, clients, threads) = bench
        .fleet
        .map_or((1, options.clients, options.threads), |s| {
            (s.count, s.clients_total, s.threads_total)
        });
    let rate = bench.fleet.zip(bench.rate).map_or(bench.rate, |(s, r)| {
        Some(r * f64::from(s.threads_total) / f64::from(s.threads))
    });
    let scripts: Vec<String> = options
        .scripts
        .iter()
        .map(|s| format!("{}@{}", s.sha256.as_deref().unwrap_or(&s.name), s.weight))
        .collect();
    format!(
        "generators {count}|clients {clients}|threads {threads}|rate {rate:?}|{:?}|{}|{}",
        options.limit,
        options.query_mode,
        scripts.join(",")
    )
}

/// `--json=-`: the JSON results go to standard output, and the text that
/// would have gone there (version line, report) to standard error.
pub(super) fn json_to_stdout(bench: &Benchmark) -> bool {
    bench.json.as_deref() == Some(std::path::Path::new("-"))
}

/// The run's options as the result model records them.
fn run_options(prepared: &Prepared, bench: &Benchmark) -> RunOptions {
    let plan = &prepared.plan;
    RunOptions {
        scripts: plan
            .scripts
            .iter()
            .map(|s| ScriptInfo {
                name: s.name.clone(),
                weight: s.weight,
                commands: s.commands.iter().map(|c| c.first_line.clone()).collect(),
                sha256: Some(s.sha256.clone()),
            })
            .collect(),
        scale: prepared.scale.max(0) as u64,
        partitioning: prepared
            .partitioning
            .clone()
            .map(|(method, partitions)| Partitioning { method, partitions }),
        query_mode: plan.query_mode.name().to_owned(),
        clients: plan.clients,
        threads: plan.threads,
        max_tries: plan.max_tries,
        limit: match bench.length {
            RunLength::Transactions(n) => RunLimit::TransactionsPerClient(u64::from(n)),
            RunLength::Duration(s) => RunLimit::DurationSeconds(u64::from(s)),
        },
        rate: bench.rate,
        latency_limit_us: plan.latency_limit_us,
        progress_s: bench.progress,
        connect_per_transaction: plan.connect_per_transaction,
        pool_size: plan.pool_size,
        failures_detailed: bench.failures_detailed,
        report_per_command: plan.report_per_command,
        continue_on_error: plan.continue_on_error,
        warmup_s: bench.warmup_s,
        variables: bench
            .variables
            .iter()
            .map(|v| {
                (
                    v.name.clone(),
                    crate::model::run::redacted_variable(&v.value),
                )
            })
            .collect(),
    }
}

/// A run's merged result and how it ended.
pub struct Finished {
    pub result: RunResult,
    /// Clients that aborted.
    pub aborted: usize,
    /// Clients still in a transaction at the end, whose queries were
    /// cancelled.
    pub interrupted: usize,
    /// The signal that ended the run early.
    pub interrupted_by: Option<i32>,
    /// A transaction log could not be written.
    pub log_failed: bool,
}

impl Finished {
    /// pgbench's exit status, given whether some output failed.
    pub fn status(&self, output_failed: bool) -> i32 {
        if let Some(signo) = self.interrupted_by {
            128 + signo
        } else if self.aborted > 0 || self.interrupted > 0 || output_failed || self.log_failed {
            2
        } else {
            0
        }
    }

    /// pgbench's last words on a run that did not end well: clients cut
    /// off at the end, and whether the results above are incomplete.
    pub fn say_how_it_ended(&self) {
        let interrupted = self.interrupted;
        if interrupted > 0 && self.interrupted_by.is_none() {
            log::error(format_args!(
                "{interrupted} of the clients were still in a transaction {} s after the end of the run: their queries were cancelled and their connections closed",
                super::worker::END_GRACE_US / 1_000_000
            ));
        }
        if self.interrupted_by.is_some() {
            log::error(format_args!(
                "Run was interrupted; the above results are incomplete."
            ));
        } else if self.aborted > 0 || interrupted > 0 {
            log::error(format_args!(
                "Run was aborted; the above results are incomplete."
            ));
        }
    }
}

/// Merges the threads' results into the run's result; `None` when no
/// thread left any.
pub(super) fn build_result(
    prepared: &Prepared,
    bench: &Benchmark,
    ended: Ended,
) -> Result<Option<Finished>, EngineError> {
    let Ended {
        results,
        start_time,
        now,
        interrupted_by,
        ready_us,
        window_end_us,
        server_view,
        process_cpu_us,
        machine_busy_share,
    } = ended;
    // A study's window closes at its end even when the clients' last
    // transactions took longer (they are not counted); a plain run's
    // lasts until its threads are done, as pgbench's does.
    let measured_end = window_end_us.map_or(now, |end| end.min(now));
    let thread_times: Vec<ThreadTimes> = results
        .iter()
        .map(|r| ThreadTimes {
            cpu_us: r.cpu_us,
            run_delay_us: r.run_delay_us,
        })
        .collect();
    let Some(merged) = merge_threads(results)? else {
        return Ok(None);
    };
    let options = run_options(prepared, bench);
    // Under --start-at the wait after the connections is not connection
    // time.
    let connected = match (bench.start_at_us, ready_us) {
        (Some(_), Some(ready)) => ready.min(merged.bench_start),
        _ => merged.bench_start,
    };
    let timings = Timings {
        bench_duration_us: (measured_end - merged.bench_start).max(1),
        initial_connection_us: connected - start_time,
        total_connection_us: merged.conn_total,
    };
    let outage = bench
        .reconnect
        .map(|_| Outage::from_clients(merged.outages));
    let incomplete = merged.aborted > 0 || merged.interrupted > 0 || interrupted_by.is_some();
    let mut result = RunResult::build(options, timings, incomplete, &merged.stats)
        .map_err(|e| EngineError::Report(e.to_string()))?;
    result.context = run_context(prepared, start_time, now);
    result.outage = outage;
    if let (Some(outage), Some((counting, before))) =
        (result.outage.as_mut(), prepared.commits_before.as_ref())
    {
        let acknowledged = result.counts.counters.committed;
        super::commits::check(
            &prepared.connector,
            counting,
            *before,
            acknowledged,
            start_time,
            outage,
        );
    }
    result.diagnosis = Some(diagnosis(
        &result,
        server_view,
        &thread_times,
        (process_cpu_us, now - start_time),
        machine_busy_share,
    ));
    result.generator = Some(generator_info(
        bench,
        &result,
        merged.bench_start,
        measured_end,
    ));
    Ok(Some(Finished {
        result,
        aborted: merged.aborted,
        interrupted: merged.interrupted,
        interrupted_by,
        log_failed: merged.log_failed,
    }))
}

/// The threads' results added together.
struct Merged {
    stats: ThreadStats,
    /// Time the threads spent connecting, summed, µs.
    conn_total: i64,
    /// When the first thread's clients started, µs.
    bench_start: i64,
    aborted: usize,
    interrupted: usize,
    log_failed: bool,
    outages: Vec<ClientOutage>,
}

/// Adds the threads' statistics and counts; `None` when no thread left any.
fn merge_threads(results: Vec<WorkerResult>) -> Result<Option<Merged>, EngineError> {
    let mut merged: Option<ThreadStats> = None;
    let (mut conn_total, mut bench_start, mut aborted, mut interrupted) = (0, i64::MAX, 0, 0);
    let mut log_failed = false;
    let mut outages = Vec::new();
    for mut r in results {
        outages.append(&mut r.outages);
        log_failed |= r.log_failed;
        conn_total += r.conn_duration_us;
        bench_start = bench_start.min(r.bench_start_us);
        aborted += r.aborted;
        interrupted += r.interrupted;
        match merged.as_mut() {
            None => merged = Some(r.stats),
            Some(m) => m
                .merge(&r.stats)
                .map_err(|e| EngineError::Report(e.to_string()))?,
        }
    }
    Ok(merged.map(|stats| Merged {
        stats,
        conn_total,
        bench_start,
        aborted,
        interrupted,
        log_failed,
        outages,
    }))
}

/// Where and when the run ran, for the result: the command line (its
/// secrets redacted), the server, and the run's start and end.
fn run_context(prepared: &Prepared, start_time: i64, now: i64) -> crate::model::run::RunContext {
    crate::model::run::RunContext {
        command_line: Some(crate::model::run::redacted_command_line(std::env::args_os())),
        server_version: prepared.server_version.clone(),
        server_settings: prepared.server_settings.clone(),
        started_us: Some(start_time),
        ended_us: Some(now),
    }
}

/// Which of the fleet's generators wrote `result` (generator 0 of 1
/// without `--generators`), the run's id and its measured window, for
/// `--merge`.
fn generator_info(
    bench: &Benchmark,
    result: &RunResult,
    bench_start: i64,
    now: i64,
) -> crate::model::generators::GeneratorInfo {
    crate::model::generators::GeneratorInfo {
        index: bench.fleet.map_or(0, |s| s.index),
        count: bench.fleet.map_or(1, |s| s.count),
        run_id: crate::model::generators::run_id(
            bench.run_id.as_deref(),
            &fleet_workload(&result.options, bench),
            bench.start_at_us,
        ),
        client_offset: bench.fleet.map_or(0, |s| s.client_offset),
        start_at_us: bench.start_at_us,
        clock: crate::wallclock::CLOCK.to_owned(),
        window_start_us: bench_start,
        window_end_us: now,
    }
}
