//! Tables: per script (and per command under `-r`), the schedule under
//! `-R`, and the connection times (with the pool wait under `--pool-size`).

use std::fmt::Write as _;

use super::escape::esc;
use crate::model::run::{Distribution, ReportError, RunResult};

fn ms(v: Option<f64>) -> String {
    v.map_or("–".to_owned(), |v| format!("{v:.3}"))
}

/// One row per script, then each script's commands when `-r` was given.
pub fn scripts(r: &RunResult) -> Result<Option<String>, ReportError> {
    let mut out = String::from(
        "<section><h2>Scripts</h2><table><tr><th>script</th><th>weight</th><th>committed</th><th>failed</th><th>skipped</th><th>retried</th><th>tps</th><th>avg ms</th><th>p50 ms</th><th>p99 ms</th><th>max ms</th></tr>",
    );
    for s in &r.scripts {
        let p = s.latency.percentiles;
        let c = &s.counts;
        let _ = write!(
            out,
            "<tr><td class=\"text\"><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&s.name),
            s.weight,
            c.counters.committed,
            c.failed,
            c.counters.skipped,
            c.counters.retried,
            s.tps,
            ms(s.latency.average_ms),
            ms(p.map(|p| p.p50)),
            ms(p.map(|p| p.p99)),
            ms(p.map(|p| p.max)),
        );
    }
    out.push_str("</table>");
    if r.options.report_per_command {
        for s in &r.scripts {
            let _ = write!(
                out,
                "<h3>Commands of <code>{}</code></h3><table><tr><th>avg ms</th><th>runs</th><th>failures</th><th>retries</th><th>command</th></tr>",
                esc(&s.name)
            );
            for c in &s.commands {
                let _ = write!(
                    out,
                    "<tr><td>{:.3}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"text\"><pre>{}</pre></td></tr>",
                    c.average_ms,
                    c.latency.count,
                    c.failures,
                    c.retries,
                    esc(&c.command)
                );
            }
            out.push_str("</table>");
        }
    } else {
        out.push_str("<p class=\"note\">Per-command figures need -r.</p>");
    }
    out.push_str("</section>");
    Ok(Some(out))
}

fn distribution_row(out: &mut String, label: &str, d: &Distribution) {
    let p = d.percentiles;
    let _ = write!(
        out,
        "<tr><td>{label}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        ms(d.average_ms),
        ms(p.map(|p| p.p50)),
        ms(p.map(|p| p.p99)),
        ms(p.map(|p| p.p99_9)),
        ms(p.map(|p| p.max)),
    );
}

/// Under `-R`: the schedule lag, the service time, and the transactions
/// that were late (`-L`) or skipped.
pub fn schedule(r: &RunResult) -> Result<Option<String>, ReportError> {
    let Some(rate) = r.options.rate else {
        return Ok(None);
    };
    let mut out = format!(
        "<section><h2>Schedule (-R {rate:.1} tps)</h2><table><tr><th>ms</th><th>avg</th><th>p50</th><th>p99</th><th>p99.9</th><th>max</th></tr>"
    );
    distribution_row(&mut out, "schedule lag", &r.lag);
    distribution_row(&mut out, "service time", &r.service_time);
    distribution_row(&mut out, "latency (from schedule)", &r.latency);
    out.push_str("</table>");
    let c = &r.counts;
    let share = |n: u64| {
        if c.total > 0 {
            format!("{:.3}%", 100.0 * n as f64 / c.total as f64)
        } else {
            "–".to_owned()
        }
    };
    let _ = write!(
        out,
        "<dl class=\"meta\"><dt>Skipped</dt><dd data-figure=\"skipped_schedule\">{} ({})</dd>",
        c.counters.skipped,
        share(c.counters.skipped)
    );
    if let Some(limit) = r.options.latency_limit_us {
        let _ = write!(
            out,
            "<dt>Late (over {:.3} ms)</dt><dd data-figure=\"late\">{} ({})</dd>",
            limit as f64 / 1000.0,
            c.latency_late,
            share(c.latency_late)
        );
    }
    out.push_str("</dl></section>");
    Ok(Some(out))
}

/// Time spent connecting.
pub fn connections(r: &RunResult) -> Result<Option<String>, ReportError> {
    let t = &r.timings;
    let mut out = String::from("<section><h2>Connections</h2><dl class=\"meta\">");
    if r.options.connect_per_transaction {
        let per = if r.counts.total > 0 {
            format!(
                ", {:.3} ms per transaction",
                t.total_connection_us as f64 / 1000.0 / r.counts.total as f64
            )
        } else {
            String::new()
        };
        let _ = write!(
            out,
            "<dt>Connecting (-C, summed over threads)</dt><dd data-figure=\"connection_total\">{:.3} ms{per}</dd>",
            t.total_connection_us as f64 / 1000.0
        );
    } else {
        let _ = write!(
            out,
            "<dt>Initial connection time</dt><dd data-figure=\"connection_initial\">{:.3} ms</dd>",
            t.initial_connection_us as f64 / 1000.0
        );
    }
    out.push_str("</dl>");
    if let (Some(wait), Some(size)) = (&r.pool_wait, r.options.pool_size) {
        let _ = write!(
            out,
            "<p class=\"note\">{} clients shared {size} connections (--pool-size); the latency includes the wait for one.</p><table><tr><th>ms</th><th>avg</th><th>p50</th><th>p99</th><th>p99.9</th><th>max</th></tr>",
            r.options.clients
        );
        distribution_row(&mut out, "pool wait", wait);
        out.push_str("</table>");
    }
    out.push_str("</section>");
    Ok(Some(out))
}

/// A merged result's generators: one row each.
pub fn generators(r: &RunResult) -> Result<Option<String>, ReportError> {
    if r.generators.is_empty() {
        return Ok(None);
    }
    let mut out = String::from(
        "<section><h2>Generators</h2><table><tr><th>generator</th><th>clients</th><th>threads</th><th>committed</th><th>tps</th><th>window start</th><th>length (s)</th><th>CPU (s)</th><th>saturated</th><th>result file</th></tr>",
    );
    for g in &r.generators {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3}</td><td>{}</td><td>{:.3}</td><td>{}</td><td>{}</td><td class=\"text\"><code>{}</code></td></tr>",
            g.index,
            g.clients,
            g.threads,
            g.committed,
            g.tps,
            crate::wallclock::utc(g.window_start_us),
            (g.window_end_us - g.window_start_us) as f64 / 1e6,
            g.cpu_s.map_or("–".to_owned(), |s| format!("{s:.2}")),
            esc(g.saturated.as_deref().unwrap_or("no")),
            esc(&g.source)
        );
    }
    out.push_str("</table></section>");
    Ok(Some(out))
}
