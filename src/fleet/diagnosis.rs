//! The fleet's diagnosis, made as the generators' results are merged.
//!
//! Every generator of a fleet runs against the same database, each with a
//! monitor of its own, so what is the server's was seen by each of them
//! and what is a generator's is its alone:
//! - The server's view (counters, tables, events, statements, the
//!   server's CPU) is taken from one generator: the one whose monitor took
//!   the most samples (the lowest index among equals), called the watcher
//!   below. Its database counters hold every generator's commits and every
//!   monitor's queries, so the monitors' commits are the sum of theirs.
//! - The backend states add up: each generator counted its own backends.
//!   Each generator's counts are first put on the watcher's number of
//!   samples, then added; interval by interval, on the watcher's buckets.
//! - Other sessions are the watcher's autovacuum workers and other
//!   clients. What it counted as sessions named like the run's clients
//!   were mostly the other generators' backends, seen at other moments
//!   than they saw them themselves, so subtracting leaves noise: that kind
//!   is left out of the fleet's view (each generator's own keeps it).
//! - A generator's client side (threads' CPU, its machine) is its own:
//!   the fleet has no client load of its own, and each generator's client
//!   findings are carried over with its index in front.
//! - The findings are then drawn from the merged result as from a run's,
//!   so that the server's commits are held against the whole fleet's.

use crate::diagnose;
use crate::model::diagnosis::{Activity, ClientLoad, Diagnosis, MonitorStatus, OtherSessions};
use crate::model::run::RunResult;

/// The findings about a generator's own machine and process.
const CLIENT_FINDINGS: [&str; 3] = [
    "client-saturated",
    "machine-saturated",
    "client-shares-machine",
];

/// Gives `merged` the fleet's diagnosis from its `generators` (each with
/// its index); none when no generator has a diagnosis.
pub fn diagnose_fleet(merged: &mut RunResult, generators: &[(u32, &RunResult)]) {
    let with: Vec<(u32, &Diagnosis)> = generators
        .iter()
        .filter_map(|(i, r)| r.diagnosis.as_ref().map(|d| (*i, d)))
        .collect();
    let Some(&(_, watcher)) = with
        .iter()
        .max_by_key(|(i, d)| (d.monitor.samples, std::cmp::Reverse(*i)))
    else {
        merged.diagnosis = None;
        return;
    };
    let monitor_commits = with
        .iter()
        .filter_map(|(_, d)| d.counters.as_ref()?.database)
        .map(|db| db.monitor_commits)
        .sum();
    let mut counters = watcher.counters.clone();
    if let Some(db) = counters.as_mut().and_then(|c| c.database.as_mut()) {
        db.monitor_commits = monitor_commits;
    }
    merged.diagnosis = Some(Diagnosis {
        monitor: monitor(&with, watcher),
        activity: activity(&with, watcher),
        counters,
        tables: watcher.tables.clone(),
        events: watcher.events.clone(),
        statements: watcher.statements.clone(),
        client: ClientLoad::default(),
        server_cpu: watcher.server_cpu,
        findings: Vec::new(),
    });
    let mut found = diagnose::findings(merged);
    for (i, d) in &with {
        for f in d
            .findings
            .iter()
            .filter(|f| CLIENT_FINDINGS.contains(&f.id.as_str()))
        {
            let mut f = f.clone();
            f.summary = format!("generator {i}: {}", f.summary);
            found.push(f);
        }
    }
    found.sort_by_key(|f| std::cmp::Reverse(f.severity));
    if let Some(d) = merged.diagnosis.as_mut() {
        d.findings = found;
    }
}

/// The watcher's monitor, with every line any monitor could not measure.
fn monitor(with: &[(u32, &Diagnosis)], watcher: &Diagnosis) -> MonitorStatus {
    let mut status = watcher.monitor.clone();
    status.ran = with.iter().any(|(_, d)| d.monitor.ran);
    for (i, d) in with {
        for m in &d.monitor.missing {
            let line = format!("generator {i}: {m}");
            if !watcher.monitor.missing.contains(m) && !status.missing.contains(&line) {
                status.missing.push(line);
            }
        }
    }
    status
}

/// The generators' backend states added on the watcher's samples and
/// buckets, and the other sessions the watcher saw but the generators'.
fn activity(with: &[(u32, &Diagnosis)], watcher: &Diagnosis) -> Option<Activity> {
    let base = watcher.activity.as_ref()?;
    let samples = watcher.monitor.samples;
    let mut a = Activity {
        start_us: base.start_us,
        width_us: base.width_us,
        others: OtherSessions {
            autovacuum: base.others.autovacuum.clone(),
            other_clients: base.others.other_clients.clone(),
            ..OtherSessions::default()
        },
        ..Activity::default()
    };
    let width = base.width_us.max(1) as f64;
    for (_, d) in with {
        let Some(theirs) = d.activity.as_ref() else {
            continue;
        };
        a.total
            .add(&theirs.total.rescaled(d.monitor.samples, samples));
        let shift = ((theirs.start_us - base.start_us) as f64 / width).round() as i64;
        for (k, counts) in theirs.intervals.iter().enumerate() {
            let Ok(at) = usize::try_from(k as i64 + shift) else {
                continue;
            };
            if a.intervals.len() <= at {
                a.intervals.resize(at + 1, Default::default());
            }
            a.intervals[at].add(counts);
        }
    }
    Some(a)
}
