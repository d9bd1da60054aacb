//! The diagnosis as the short section that follows the text report (never
//! under `--pgbench-output`): what the server's backends were doing, its
//! counters and I/O, the client's own load, and the findings.

use std::fmt::Write as _;

use crate::model::diagnosis::{Diagnosis, StateCounts};
use crate::model::run::RunResult;

const TEXT_FINDINGS: usize = 8;

/// The backend-state shares of `a` in one line.
pub fn shares_line(a: &StateCounts) -> String {
    let pct = |n: u64| a.share(n) * 100.0;
    let waits: Vec<String> = a
        .waiting
        .iter()
        .map(|(kind, n)| format!("{kind} {:.0}%", pct(*n)))
        .collect();
    let mut line = format!(
        "{:.0}% on CPU, {:.0}% waiting",
        pct(a.on_cpu),
        pct(a.waiting_total())
    );
    if !waits.is_empty() {
        let _ = write!(line, " ({})", waits.join(", "));
    }
    let _ = write!(line, ", {:.0}% waiting for the client", pct(a.client));
    if a.idle_in_transaction > 0 {
        let _ = write!(
            line,
            ", {:.0}% idle in transaction",
            pct(a.idle_in_transaction)
        );
    }
    line
}

/// The diagnosis section of the text report: the backend states, the
/// counters, the client's CPU, what the monitor missed, one line per
/// finding. Empty when the result has no diagnosis.
pub fn render_text(r: &RunResult) -> String {
    let Some(d) = &r.diagnosis else {
        return String::new();
    };
    let mut out = String::from("diagnosis:\n");
    if let Some(a) = d.activity.as_ref().filter(|a| a.total.total() > 0) {
        let few = if d.monitor.samples < crate::model::diagnosis::MIN_STATE_SAMPLES {
            " only: too few for these shares to be more than a rough picture; a lower \
             --monitor-interval or a longer run gives more"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "  server backends: {} ({} samples{few})",
            shares_line(&a.total),
            d.monitor.samples
        );
    }
    if let Some(line) = others_line(d) {
        let _ = writeln!(out, "  other sessions: {line}");
    }
    if let Some(line) = counters_line(d) {
        let _ = writeln!(out, "  server: {line}");
    }
    if let Some(line) = io_line(d) {
        let _ = writeln!(out, "  server I/O: {line}");
    }
    if let Some(s) = d.statements.first() {
        let _ = writeln!(
            out,
            "  top statement: {} calls, mean {:.3} ms on the server: {}",
            s.calls,
            s.mean_ms,
            s.query.split_whitespace().collect::<Vec<_>>().join(" ")
        );
    }
    let _ = writeln!(out, "  client: {}", client_line(r, d));
    if d.monitor.interval_ms.is_none() {
        out.push_str("  monitor: off (--no-monitor)\n");
    }
    for m in d.monitor.missing.iter().take(3) {
        let _ = writeln!(out, "  not measured: {m}");
    }
    if d.findings.is_empty() {
        out.push_str("  findings: none\n");
    }
    for f in d.findings.iter().take(TEXT_FINDINGS) {
        let _ = writeln!(out, "  {}: {}", f.severity.name(), f.summary);
    }
    if d.findings.len() > TEXT_FINDINGS {
        let _ = writeln!(
            out,
            "  ({} more findings in the JSON and HTML reports)",
            d.findings.len() - TEXT_FINDINGS
        );
    }
    out
}

/// The database's other sessions the samples saw, by kind, as average
/// busy and idle backends per sample: "autovacuum 0.3 busy; named like
/// the run's clients 20.0 idle". `None` when the samples saw none.
pub fn others_line(d: &Diagnosis) -> Option<String> {
    let a = d.activity.as_ref().filter(|a| a.others.any())?;
    let samples = d.monitor.samples.max(1) as f64;
    let kinds = [
        ("autovacuum", &a.others.autovacuum),
        ("named like the run's clients", &a.others.same_name),
        ("other clients", &a.others.other_clients),
    ];
    let parts: Vec<String> = kinds
        .iter()
        .filter(|(_, c)| c.total() > 0)
        .map(|(kind, c)| {
            format!(
                "{kind} {:.1} busy, {:.1} idle",
                c.busy() as f64 / samples,
                c.client as f64 / samples
            )
        })
        .collect();
    Some(format!("{} (backends per sample)", parts.join("; ")))
}

fn counters_line(d: &Diagnosis) -> Option<String> {
    let c = d.counters.as_ref()?;
    let mut parts = Vec::new();
    if let Some(db) = c.database {
        let blocks = db.blks_hit + db.blks_read;
        parts.push(format!(
            "{} commits, {} rollbacks",
            db.xact_commit, db.xact_rollback
        ));
        if blocks > 0 {
            parts.push(format!(
                "cache hits {:.1}%",
                db.blks_hit as f64 * 100.0 / blocks as f64
            ));
        }
        parts.push(format!(
            "{} temp files, {} deadlocks",
            db.temp_files, db.deadlocks
        ));
    }
    if let Some(w) = c.wal {
        parts.push(format!("WAL {:.1} MB", w.bytes as f64 / 1e6));
    }
    if let Some(k) = c.checkpoints {
        parts.push(format!("{} checkpoints", k.timed + k.requested));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// Backend types with I/O, most first.
const IO_TYPES: usize = 3;

/// The server's I/O per backend type (`pg_stat_io`), the busiest first.
fn io_line(d: &Diagnosis) -> Option<String> {
    let sums = crate::model::diagnosis::by_backend_type(&d.counters.as_ref()?.io);
    let mb = |b: i64| b as f64 / 1e6;
    let parts: Vec<String> = sums
        .iter()
        .take(IO_TYPES)
        .map(|(kind, [read, written, extended, fsyncs])| {
            let mut p = vec![];
            for (bytes, what) in [(read, "read"), (written, "written"), (extended, "extended")] {
                if *bytes != 0 {
                    p.push(format!("{:.1} MB {what}", mb(*bytes)));
                }
            }
            if *fsyncs != 0 {
                p.push(format!("{fsyncs} fsyncs"));
            }
            format!("{kind} {}", p.join(", "))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

fn client_line(r: &RunResult, d: &Diagnosis) -> String {
    let server = d.server_cpu.map_or(String::new(), |s| {
        format!(
            "; server CPU {:.2} s (monitor's backend {:.3} s)",
            s.cpu_s, s.monitor_backend_cpu_s
        )
    });
    if !r.generators.is_empty() {
        return format!("each generator's own (its CPU in the generators' table){server}");
    }
    let wall = r.timings.bench_duration_us as f64 / 1e6;
    let threads: Vec<String> = d
        .client
        .thread_cpu_s
        .iter()
        .map(|s| format!("{:.0}%", s / wall * 100.0))
        .collect();
    let queued: Vec<String> = d
        .client
        .thread_runqueue_s
        .iter()
        .map(|s| format!("{:.0}%", s / wall * 100.0))
        .collect();
    let mut line = format!("threads' CPU {} of the run", threads.join(" "));
    if !queued.is_empty() {
        let _ = write!(line, " (waiting for a CPU {})", queued.join(" "));
    }
    let _ = write!(line, ", process {:.2} s{server}", d.client.process_cpu_s);
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::findings;
    use crate::diagnose::tests::{clean, diagnosis};
    use crate::model::diagnosis::Activity;

    #[test]
    fn the_text_section_has_the_shares_and_one_line_per_finding() {
        let mut r = clean();
        r.options.clients = 8;
        let d = diagnosis(&mut r);
        d.activity = Some(Activity {
            total: StateCounts {
                on_cpu: 31,
                waiting: [("IO".to_owned(), 4), ("LWLock".to_owned(), 2)].into(),
                client: 63,
                ..StateCounts::default()
            },
            ..Activity::default()
        });
        let found = findings(&r);
        diagnosis(&mut r).findings = found;
        let text = render_text(&r);
        assert!(
            text.contains("31% on CPU, 6% waiting (IO 4%, LWLock 2%), 63% waiting for the client"),
            "{text}"
        );
        assert!(text.contains("warning: TPS × mean latency"), "{text}");
        assert!(text.lines().count() <= 15);
    }
}
