//! The run's diagnosis: its findings, the server backends' states over
//! time (on the same time axis as the throughput chart), the server's
//! counters and the client's CPU.

use std::fmt::Write as _;

use super::escape::esc;
use super::svg::{Axis, Chart, Line};
use super::time::time_axis;
use crate::model::diagnosis::ServerEvent;
use crate::model::diagnosis::{Diagnosis, StateCounts};
use crate::model::run::{ReportError, RunResult};

/// The findings, then what the monitor could not see.
pub fn findings(r: &RunResult) -> Result<Option<String>, ReportError> {
    let Some(d) = &r.diagnosis else {
        return Ok(None);
    };
    let mut out = String::from("<section><h2>Diagnosis</h2>");
    if d.findings.is_empty() {
        out.push_str("<p>No finding: nothing suggests these numbers measure something else than the server.</p>");
    } else {
        out.push_str("<table class=\"findings\"><tr><th>severity</th><th>finding</th><th>why it matters</th><th>what to do</th></tr>");
        for f in &d.findings {
            let _ = write!(
                out,
                "<tr><td class=\"label\">{}</td><td class=\"text\">{}</td><td class=\"text\">{}</td><td class=\"text\">{}</td></tr>",
                f.severity.name(),
                esc(&f.summary),
                esc(&f.why),
                esc(&f.action)
            );
        }
        out.push_str("</table>");
    }
    if d.monitor.interval_ms.is_none() {
        out.push_str("<p class=\"note\">The monitor was off (--no-monitor): no server view.</p>");
    }
    for m in &d.monitor.missing {
        let _ = write!(out, "<p class=\"note\">Not measured: {}</p>", esc(m));
    }
    out.push_str("</section>");
    Ok(Some(out))
}

/// The server's events that fall on the time axis `axis_max` s long,
/// each with its time in s from the start of the series.
fn events_on_axis(r: &RunResult, axis_max: f64) -> Vec<(f64, &ServerEvent)> {
    let Some(d) = &r.diagnosis else {
        return Vec::new();
    };
    d.events
        .iter()
        .map(|e| ((e.at_us - r.series.start_us) as f64 / 1e6, e))
        .filter(|(t, _)| (0.0..=axis_max).contains(t))
        .collect()
}

/// Marks the checkpoints, vacuums and analyzes on a chart of the run's
/// time axis (`axis_max` s long).
pub(super) fn mark_events(r: &RunResult, axis_max: f64, chart: &mut Chart) {
    for (t, e) in events_on_axis(r, axis_max) {
        chart.marker(t, &e.kind);
    }
}

/// One class of backend-samples.
type StateCount = fn(&StateCounts) -> u64;

/// The shares of the backend states per interval.
pub fn backend_states(r: &RunResult) -> Result<Option<String>, ReportError> {
    let Some(a) = r.diagnosis.as_ref().and_then(|d| d.activity.as_ref()) else {
        return Ok(None);
    };
    let title = "Server backends over time";
    let width = a.width_us as f64 / 1e6;
    let origin = (a.start_us - r.series.start_us) as f64 / 1e6;
    let classes: [(&'static str, &str, StateCount); 4] = [
        ("s0", "on CPU", |c| c.on_cpu),
        ("s3", "waiting on the server", StateCounts::waiting_total),
        ("s2", "waiting for the client", |c| c.client),
        ("s1", "idle in transaction", |c| c.idle_in_transaction),
    ];
    let axis = time_axis(r);
    let axis_max = axis.max;
    let mut chart = Chart::new(
        title,
        axis,
        Axis::linear(0.0, 100.0, "share of samples (%)"),
    );
    mark_events(r, axis_max, &mut chart);
    for (class, label, count) in classes {
        let points = a
            .intervals
            .iter()
            .enumerate()
            .filter(|(_, c)| c.total() > 0)
            .map(|(i, c)| (origin + (i as f64 + 0.5) * width, c.share(count(c)) * 100.0))
            .collect();
        chart.line(Line {
            class,
            label: label.into(),
            points,
        });
    }
    let others = r
        .diagnosis
        .as_ref()
        .and_then(crate::report::text::diagnosis::others_line)
        .map(|line| format!("<p>Other sessions on the database: {}.</p>", esc(&line)))
        .unwrap_or_default();
    Ok(Some(format!(
        "<section><h2>{title}</h2><p>Over the run: {}.</p>{others}{}<p class=\"note\">pgbolt's backends as pg_stat_activity showed them, sampled every {} ms, per second of the run.</p></section>",
        esc(&crate::report::text::diagnosis::shares_line(&a.total)),
        chart.finish(),
        r.diagnosis.as_ref().and_then(|d| d.monitor.interval_ms).unwrap_or(0)
    )))
}

/// The server's counters and the client's and server's CPU.
pub fn counters(r: &RunResult) -> Result<Option<String>, ReportError> {
    let Some(d) = &r.diagnosis else {
        return Ok(None);
    };
    let mut rows: Vec<(String, String)> = Vec::new();
    counter_rows(d, &mut rows);
    let wall = r.timings.bench_duration_us as f64 / 1e6;
    for (i, s) in d.client.thread_cpu_s.iter().enumerate() {
        rows.push((
            format!("client thread {i} CPU"),
            format!("{s:.2} s ({:.0}% of the run)", s / wall * 100.0),
        ));
        if let Some(q) = d.client.thread_runqueue_s.get(i) {
            rows.push((
                format!("client thread {i} waiting for a CPU"),
                format!("{q:.2} s ({:.0}% of the run)", q / wall * 100.0),
            ));
        }
    }
    if r.generators.is_empty() {
        rows.push((
            "client process CPU".into(),
            format!(
                "{:.2} s over {:.2} s",
                d.client.process_cpu_s, d.client.process_wall_s
            ),
        ));
    }
    if let Some(s) = d.server_cpu {
        rows.push((
            "server CPU".into(),
            format!("{:.2} s over {:.2} s", s.cpu_s, s.wall_s),
        ));
        rows.push((
            "monitor's backend CPU".into(),
            format!("{:.3} s", s.monitor_backend_cpu_s),
        ));
    }
    let mut out = String::from("<section><h2>Server counters and CPU</h2><table><tr><th>figure</th><th>over the run</th></tr>");
    for (name, value) in rows {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td></tr>",
            esc(&name),
            esc(&value)
        );
    }
    out.push_str("</table>");
    events_table(r, &mut out);
    if !d.statements.is_empty() {
        out.push_str("<h3>Top statements (pg_stat_statements)</h3><table><tr><th>calls</th><th>mean ms</th><th>total ms</th><th>statement</th></tr>");
        for s in &d.statements {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{:.3}</td><td>{:.1}</td><td class=\"text\"><pre>{}</pre></td></tr>",
                s.calls,
                s.mean_ms,
                s.total_ms,
                esc(&s.query)
            );
        }
        out.push_str("</table>");
    }
    out.push_str("</section>");
    Ok(Some(out))
}

/// The checkpoints, vacuums and analyzes with their times.
fn events_table(r: &RunResult, out: &mut String) {
    let events = events_on_axis(r, f64::INFINITY);
    if events.is_empty() {
        return;
    }
    out.push_str("<h3>Checkpoints, vacuums and analyzes</h3><table><tr><th>at (s)</th><th>event</th><th>time known to</th></tr>");
    for (t, e) in events {
        let known = if e.within_ms > 0 {
            format!("happened in the {} ms before", e.within_ms)
        } else {
            "the server's time stamp".to_owned()
        };
        let _ = write!(
            out,
            "<tr><td>{t:.1}</td><td class=\"text\">{}</td><td class=\"text\">{}</td></tr>",
            esc(&e.label()),
            esc(&known)
        );
    }
    out.push_str("</table>");
}

fn counter_rows(d: &Diagnosis, rows: &mut Vec<(String, String)>) {
    let mut add = |name: &str, value: String| rows.push((name.to_owned(), value));
    if let Some(c) = &d.counters {
        if let Some(db) = c.database {
            add(
                "commits (the monitor's own)",
                format!("{} ({})", db.xact_commit, db.monitor_commits),
            );
            add("rollbacks", db.xact_rollback.to_string());
            add(
                "blocks read / hit",
                format!("{} / {}", db.blks_read, db.blks_hit),
            );
            add(
                "temporary files / bytes",
                format!("{} / {}", db.temp_files, db.temp_bytes),
            );
            add(
                "deadlocks / conflicts",
                format!("{} / {}", db.deadlocks, db.conflicts),
            );
        }
        if let Some(w) = c.wal {
            add(
                "WAL records / full pages / bytes",
                format!("{} / {} / {}", w.records, w.full_page_images, w.bytes),
            );
        }
        if let Some(k) = c.checkpoints {
            add(
                "checkpoints timed / requested",
                format!("{} / {}", k.timed, k.requested),
            );
        }
        for io in &c.io {
            add(
                &format!(
                    "I/O of {}, {}, {}: reads / writes / extends (MB), hits, evictions, writebacks, fsyncs",
                    io.backend_type, io.object, io.context
                ),
                format!(
                    "{} / {} / {} ({:.1} / {:.1} / {:.1}), {}, {}, {}, {}",
                    io.reads,
                    io.writes,
                    io.extends,
                    io.read_bytes as f64 / 1e6,
                    io.write_bytes as f64 / 1e6,
                    io.extend_bytes as f64 / 1e6,
                    io.hits,
                    io.evictions,
                    io.writebacks,
                    io.fsyncs
                ),
            );
        }
    }
    for t in &d.tables {
        add(
            &format!(
                "{}: dead tuples, autovacuums, autoanalyzes, vacuums, analyzes",
                t.table
            ),
            format!(
                "{}, {}, {}, {}, {}",
                t.dead_tuples, t.autovacuums, t.autoanalyzes, t.vacuums, t.analyzes
            ),
        );
    }
}
