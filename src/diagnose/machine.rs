//! The findings about the client's machine: a worker thread saturated,
//! by its own work (`client-saturated`) or behind the machine's full CPUs
//! (`machine-saturated`), and a client taking too much of a machine it
//! shares with the server (`client-shares-machine`). Thresholds are named
//! constants, as in [`super::findings`], which runs these with the rest.

use super::findings::{explained, few_samples, finding, window_s};
use crate::model::diagnosis::{Finding, Severity};
use crate::model::run::RunResult;

/// A worker thread's CPU share of the window above which the client may
/// be the bottleneck.
pub const SATURATION_WARNING: f64 = 0.80;
/// ... above which the numbers measure the client.
pub const SATURATION_CRITICAL: f64 = 0.90;
/// Share of this machine's CPUs the server's processes took from which
/// the machine is full of the server's work.
pub const MACHINE_FULL_SERVER_SHARE: f64 = 0.75;
/// Share of this machine's CPU time busy (every process) from which the
/// machine is full.
pub const MACHINE_FULL_SHARE: f64 = 0.90;
/// Share of the machine's CPU the client may take beside a local server.
pub const SHARED_MACHINE_SHARE: f64 = 0.25;

/// The worker thread most busy (running, or runnable and waiting for a
/// CPU: a thread the machine cannot run is as much the bottleneck as one
/// always running): its index, busy, CPU and wait shares of the window,
/// when it passes the warning threshold.
fn busiest_thread(r: &RunResult) -> Option<(usize, f64, f64, f64)> {
    let d = r.diagnosis.as_ref()?;
    let wall = window_s(r);
    let c = &d.client;
    let busy = |i: usize| c.thread_cpu_s[i] + c.thread_runqueue_s.get(i).copied().unwrap_or(0.0);
    let thread = (0..c.thread_cpu_s.len()).max_by(|&a, &b| busy(a).total_cmp(&busy(b)))?;
    let share = busy(thread) / wall;
    (share > SATURATION_WARNING).then(|| {
        (
            thread,
            share,
            c.thread_cpu_s[thread] / wall,
            c.thread_runqueue_s.get(thread).copied().unwrap_or(0.0) / wall,
        )
    })
}

/// Whether this machine's CPUs were full: its CPU time busy at
/// [`MACHINE_FULL_SHARE`] or more (every process's, from `/proc/stat`),
/// or, when the server runs here (its CPU is read from `/proc`), on
/// average at least one backend per CPU on a CPU or waiting for one
/// (`pg_stat_activity`'s active backends with no wait event) or the
/// server's processes taking [`MACHINE_FULL_SERVER_SHARE`] of it. The
/// machine's busy share, the average backends and the server's share
/// (0 where unknown).
fn machine_full(r: &RunResult) -> Option<(Option<f64>, f64, f64)> {
    let d = r.diagnosis.as_ref()?;
    let cpus = f64::from(d.client.cpus.max(1));
    let machine = d.client.machine_busy_share;
    let (backends, server_share) = match d.server_cpu {
        Some(server) => (
            match (&d.activity, d.monitor.samples) {
                (Some(a), n) if n > 0 => a.total.on_cpu as f64 / n as f64,
                _ => 0.0,
            },
            if server.wall_s > 0.0 {
                server.cpu_s / (server.wall_s * cpus)
            } else {
                0.0
            },
        ),
        None => (0.0, 0.0),
    };
    let full = machine.is_some_and(|m| m >= MACHINE_FULL_SHARE)
        || (d.server_cpu.is_some()
            && (backends >= cpus || server_share >= MACHINE_FULL_SERVER_SHARE));
    full.then_some((machine, backends, server_share))
}

fn severity_of(share: f64) -> Severity {
    if share > SATURATION_CRITICAL {
        Severity::Critical
    } else {
        Severity::Warning
    }
}

/// The busiest thread saturated while it ran more than it waited, or
/// while the machine had CPU to spare: pgbolt is the bottleneck.
pub(super) fn client_saturated(r: &RunResult) -> Option<Finding> {
    let (thread, share, cpu, queued) = busiest_thread(r)?;
    if queued > cpu && machine_full(r).is_some() {
        return None;
    }
    let f = finding(
        "client-saturated",
        severity_of(share),
        format!(
            "client saturated: thread {thread} ran {:.0}% of the run and waited {:.0}% for a CPU",
            cpu * 100.0,
            queued * 100.0
        ),
        &[
            ("thread", thread as f64),
            ("busy_share", share),
            ("cpu_share", cpu),
            ("runqueue_share", queued),
        ],
    );
    explained(
        f,
        "a worker thread that is always running or waiting to run delays its clients' next statements, so the rate and latency measure pgbolt and this machine as much as the server",
        "use more threads (-j) if CPUs are free, else another or more load machines",
    )
}

/// The busiest thread saturated mostly waiting for a CPU while this
/// machine's CPUs were full (see [`machine_full`]): the machine is the
/// bottleneck, not pgbolt (more threads would only queue too).
pub(super) fn machine_saturated(r: &RunResult) -> Option<Finding> {
    let (thread, share, cpu, queued) = busiest_thread(r)?;
    let (machine, backends, server_share) = machine_full(r)?;
    if queued <= cpu {
        return None;
    }
    let cpus = r.diagnosis.as_ref().map_or(1, |d| d.client.cpus);
    let mut f = finding(
        "machine-saturated",
        severity_of(share),
        format!(
            "machine saturated: thread {thread} ran {:.0}% of the run and waited {:.0}% for a CPU \
             while this machine's {cpus} CPUs were {}{}",
            cpu * 100.0,
            queued * 100.0,
            machine.map_or("full".to_owned(), |m| format!("{:.0}% busy", m * 100.0)),
            if server_share > 0.0 {
                format!(
                    " (the server {:.0}% of them, {backends:.1} of its backends on or waiting for a \
                     CPU on average{})",
                    server_share * 100.0,
                    few_samples(r)
                )
            } else {
                String::new()
            }
        ),
        &[
            ("thread", thread as f64),
            ("busy_share", share),
            ("cpu_share", cpu),
            ("runqueue_share", queued),
            ("backends_on_cpu", backends),
            ("server_cpu_share", server_share),
            ("cpus", f64::from(cpus)),
        ],
    );
    if let Some(m) = machine {
        f.figures.insert("machine_busy_share".to_owned(), m);
    }
    explained(
        f,
        "pgbolt's thread spent the run waiting for a CPU that the server's backends (or other processes) held: the machine is too small for this load, so the figures measure its run queue, not the server nor pgbolt, and more threads (-j) would only queue too",
        "use fewer clients (a server on this machine peaks near its CPUs' number), or run pgbolt on another machine, away from the server and other work",
    )
}

pub(super) fn shared_machine(r: &RunResult) -> Option<Finding> {
    let d = r.diagnosis.as_ref()?;
    d.server_cpu?;
    let c = &d.client;
    if c.cpus == 0 || c.process_wall_s <= 0.0 {
        return None;
    }
    let share = c.process_cpu_s / (c.process_wall_s * f64::from(c.cpus));
    if share <= SHARED_MACHINE_SHARE {
        return None;
    }
    let f = finding(
        "client-shares-machine",
        Severity::Warning,
        format!(
            "the client used {:.0}% of this machine's {} CPUs beside the server",
            share * 100.0,
            c.cpus
        ),
        &[("machine_share", share), ("cpus", f64::from(c.cpus))],
    );
    explained(
        f,
        "CPU the client takes on the server's machine is CPU the server does not get",
        "run pgbolt on another machine, or fewer threads",
    )
}
