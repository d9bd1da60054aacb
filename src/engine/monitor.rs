//! The engine's side of the diagnosis: starting the monitor
//! ([`crate::observe`]) beside the workers, stopping it after them, and
//! putting its view, the threads' CPU and the findings into the result.

use std::sync::Arc;

use super::shared::Shared;
use super::Prepared;
use crate::config::Benchmark;
use crate::model::run::RunResult;

/// A worker thread's CPU and wait for a CPU over its run, µs.
pub struct ThreadTimes {
    pub cpu_us: i64,
    pub run_delay_us: Option<i64>,
}

/// The monitor, if it runs.
pub enum MonitorRun {
    Off,
    Skipped(String),
    Running(crate::observe::Monitor),
}

impl MonitorRun {
    pub fn stop(self) -> Option<crate::observe::ServerView> {
        match self {
            MonitorRun::Off => None,
            MonitorRun::Skipped(why) => Some(crate::observe::ServerView::missing(why)),
            MonitorRun::Running(m) => Some(m.stop()),
        }
    }
}

/// Starts the monitor unless `--no-monitor` said not to or the preflight
/// found no connection slot left for it once the clients are connected;
/// it hands its samples to `sink` too.
pub fn start_monitor(
    prepared: &Prepared,
    bench: &Benchmark,
    shared: &Arc<Shared>,
    sink: Option<crate::observe::SampleSink>,
) -> MonitorRun {
    let Some(interval_ms) = bench.monitor else {
        return MonitorRun::Off;
    };
    if let Some(why) = &prepared.monitor_refused {
        return MonitorRun::Skipped(why.clone());
    }
    if prepared.spare_slots.is_some_and(|n| n < 1) {
        return MonitorRun::Skipped(
            "monitor: not started, the clients take every connection slot the server has"
                .to_owned(),
        );
    }
    let shared = shared.clone();
    // The clients' own backends are known exactly when each keeps the
    // connection it opened (not under -C, nor with pgbolt's own pool,
    // whose connections are not the clients').
    let exact = !prepared.plan.connect_per_transaction && prepared.plan.pool_size.is_none();
    MonitorRun::Running(crate::observe::Monitor::start(
        &prepared.connector,
        interval_ms,
        prepared.database_start.clone(),
        move || {
            let at = shared.wait_window_start()?;
            Some((at, exact.then(|| shared.backends())))
        },
        sink,
    ))
}

/// The diagnosis of `result`: the monitor's view, the threads' and the
/// process's CPU, and the findings drawn from them.
pub fn diagnosis(
    result: &RunResult,
    view: Option<crate::observe::ServerView>,
    threads: &[ThreadTimes],
    process: (i64, i64),
    machine_busy_share: Option<f64>,
) -> crate::model::diagnosis::Diagnosis {
    let view = view.unwrap_or_default();
    let mut d = crate::model::diagnosis::Diagnosis {
        monitor: view.status,
        activity: view.activity,
        counters: view.counters,
        tables: view.tables,
        events: view.events,
        statements: view.statements,
        client: crate::model::diagnosis::ClientLoad {
            thread_cpu_s: threads.iter().map(|t| t.cpu_us as f64 / 1e6).collect(),
            thread_runqueue_s: threads
                .iter()
                .map(|t| t.run_delay_us.map(|us| us as f64 / 1e6))
                .collect::<Option<Vec<f64>>>()
                .unwrap_or_default(),
            process_cpu_s: process.0 as f64 / 1e6,
            process_wall_s: process.1 as f64 / 1e6,
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
            machine_busy_share,
        },
        server_cpu: view.server_cpu,
        findings: Vec::new(),
    };
    let mut with = result.clone();
    with.diagnosis = Some(d.clone());
    d.findings = crate::diagnose::findings(&with);
    d
}
