//! The sweep's answers as text: the table of steps, then the best point,
//! the smallest one near it, the fit and the SLO.

use std::fmt::Write;

use crate::config::{Benchmark, RunLength};
use crate::model::sweep::{value, Point, SweepResult, NEAR_BEST};

/// The whole text report of a sweep.
pub fn render(result: &SweepResult, bench: &Benchmark) -> String {
    let mut out = String::new();
    let info = &result.sweep;
    let length = match bench.length {
        RunLength::Duration(s) => format!("{s} s from the last connection"),
        RunLength::Transactions(n) => format!("{n} transactions per client"),
    };
    let _ = write!(
        out,
        "sweep of {}: {} values, {} measured steps of {length}",
        info.dimension,
        result.summary.points.len(),
        result.steps.len()
    );
    if info.repeat > 1 {
        let _ = write!(out, ", {} repeats ({} order)", info.repeat, info.order);
    }
    if info.warmup_s > 0 {
        let _ = write!(out, ", warm-up {} s each", info.warmup_s);
    }
    out.push('\n');
    if let Some(why) = &info.stopped {
        let _ = writeln!(out, "stopped: {why}");
    }
    table(&mut out, result);
    answers(&mut out, result);
    out
}

/// Which of the optional columns the table has.
struct Columns {
    rate: bool,
    client_cpu: bool,
    backends: bool,
    slo: bool,
}

fn table(out: &mut String, result: &SweepResult) {
    let points = &result.summary.points;
    let columns = Columns {
        rate: points.iter().any(|p| p.rate.is_some()),
        client_cpu: points.iter().any(|p| p.client_cpu.is_some()),
        backends: points.iter().any(|p| p.backends.is_some()),
        slo: !result.sweep.slo.is_empty(),
    };
    let _ = write!(out, "{:>8} {:>7} {:>6}", "clients", "threads", "secs");
    if columns.rate {
        let _ = write!(out, " {:>9}", "rate");
    }
    let _ = write!(
        out,
        " {:>11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>5}",
        "tps", "± stddev", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "failed", "L/N"
    );
    if columns.client_cpu {
        let _ = write!(out, " {:>12}", "cli cpu/wait");
    }
    if columns.backends {
        let _ = write!(out, " {:>12}", "cpu/wait/cli");
    }
    out.push_str(if columns.slo { "  SLO\n" } else { "\n" });
    for p in points {
        row(out, p, &columns);
    }
    findings(out, result);
}

fn row(out: &mut String, p: &Point, columns: &Columns) {
    let secs = p.measured_s.map_or("-".to_owned(), |s| format!("{s:.2}"));
    let _ = write!(out, "{:>8} {:>7} {secs:>6}", p.clients, p.threads);
    if columns.rate {
        let rate = p.rate.map_or("-".to_owned(), |r| format!("{r:.0}"));
        let _ = write!(out, " {rate:>9}");
    }
    let spread = p.tps_stddev.map_or("-".to_owned(), |s| format!("{s:.1}"));
    let _ = write!(
        out,
        " {:>11.1} {:>9} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>7} {:>5.2}",
        p.tps, spread, p.p50_ms, p.p90_ms, p.p99_ms, p.p99_9_ms, p.failed, p.little_ratio
    );
    if columns.client_cpu {
        let share = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{:.0}", v * 100.0));
        let cpu = format!("{}/{}%", share(p.client_cpu), share(p.client_cpu_wait));
        let _ = write!(out, " {cpu:>12}");
    }
    if columns.backends {
        let shares = p.backends.map_or("-".to_owned(), |b| {
            format!(
                "{:.0}/{:.0}/{:.0}{}",
                b.on_cpu * 100.0,
                b.waiting * 100.0,
                (b.client + b.idle_in_transaction) * 100.0,
                if thin(&b) { "*" } else { "" }
            )
        });
        let _ = write!(out, " {shares:>12}");
    }
    match p.slo_met {
        Some(true) => out.push_str("  met\n"),
        Some(false) => out.push_str("  FAILED\n"),
        None => out.push('\n'),
    }
}

/// One line per finding of the diagnosis, with the values where it came up.
fn findings(out: &mut String, result: &SweepResult) {
    let points = &result.summary.points;
    let mut ids: Vec<&String> = points.iter().flat_map(|p| &p.findings).collect();
    ids.sort();
    ids.dedup();
    for id in ids {
        let at: Vec<String> = points
            .iter()
            .filter(|p| p.findings.contains(id))
            .map(|p| value(p.value))
            .collect();
        let where_ = if at.len() == points.len() {
            "every step".to_owned()
        } else {
            format!("{} {}", at.join(", "), result.sweep.dimension)
        };
        let _ = writeln!(out, "finding {id} at {where_}");
    }
}

fn answers(out: &mut String, result: &SweepResult) {
    let s = &result.summary;
    let dimension = &result.sweep.dimension;
    let at = |i: usize| {
        let p = &s.points[i];
        format!("{} {dimension} ({:.1} tps)", value(p.value), p.tps)
    };
    match s.best {
        Some(i) => {
            let _ = writeln!(out, "best measured: {}", at(i));
        }
        None => out
            .push_str("best measured: none (every step failed more than 1% of its transactions)\n"),
    }
    if let Some(i) = s.near_best {
        let _ = writeln!(
            out,
            "smallest within {:.0}% of the best: {}",
            NEAR_BEST * 100.0,
            at(i)
        );
    }
    if let Some(fit) = &s.fit {
        let _ = writeln!(
            out,
            "USL fit: sigma {:.5}, kappa {:.6}, lambda {:.1} tps, R² {:.4}",
            fit.sigma, fit.kappa, fit.lambda, fit.r_squared
        );
        if s.fit_note.is_none() {
            match fit.peak_clients {
                Some(peak) => {
                    let around: Vec<String> = fit
                        .around_peak
                        .iter()
                        .map(|(n, x)| format!("X({n}) = {x:.1}"))
                        .collect();
                    let _ = writeln!(
                        out,
                        "USL peak: N* = {peak:.1} clients, {}",
                        around.join(", ")
                    );
                }
                None => out.push_str(
                    "USL peak: none (kappa is 0: throughput levels off without falling)\n",
                ),
            }
        }
    }
    if let Some(note) = &s.fit_note {
        let _ = writeln!(out, "USL: {note}");
    }
    if !result.sweep.slo.is_empty() {
        let names: Vec<String> = result
            .sweep
            .slo
            .iter()
            .map(|c| format!("{}<{}ms", c.name, c.limit_ms))
            .collect();
        match s.best_within_slo {
            Some(i) => {
                let _ = writeln!(
                    out,
                    "highest tps within the SLO ({}): {}",
                    names.join(", "),
                    at(i)
                );
            }
            None => {
                let _ = writeln!(out, "no step met the SLO ({})", names.join(", "));
            }
        }
    }
    out.push_str(
        "secs: the measured window, from the last connection (the shortest of the\nrepeats)\n",
    );
    out.push_str("L/N: throughput x mean latency over the clients (Little's law; 1 when\nevery client is always in a transaction)\n");
    if s.points.iter().filter_map(|p| p.backends).any(|b| thin(&b)) {
        let _ = writeln!(
            out,
            "*: backend shares from fewer than {} samples of pg_stat_activity: a rough\npicture (a lower --monitor-interval or longer steps give more)",
            crate::model::diagnosis::MIN_STATE_SAMPLES
        );
    }
    if s.points
        .iter()
        .any(|p| p.client_cpu.is_some() || p.backends.is_some())
    {
        out.push_str("cli cpu/wait: the busiest pgbolt thread's % of the step on a CPU and\nwaiting for one (a thread that mostly waits is short of machine, not of\nthreads); cpu/wait/cli: % of the backends' samples on CPU, waiting, and\nwaiting for the client (idle in a transaction included)\n");
    }
}

/// Whether backend shares rest on too few samples to be more than a
/// rough picture (files that did not record the count are not marked).
fn thin(b: &crate::model::sweep::BackendShares) -> bool {
    b.samples > 0 && b.samples < crate::model::diagnosis::MIN_STATE_SAMPLES
}
