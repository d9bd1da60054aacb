//! The page's header (what ran, where, when) and its key figures.
//!
//! Each key figure carries a `data-figure` attribute naming it, and shows
//! the JSON's value with fixed decimals (counts as integers, TPS with 1
//! decimal, latencies in ms with 3), so a reader, or a test, finds the
//! same numbers in the page as in the embedded result (which holds them
//! exact).

use std::fmt::Write as _;

use super::escape::esc;
use super::frame::Frame;
use crate::model::run::RunLimit;
use crate::model::run::{ReportError, RunResult};

/// The page title.
pub fn title(r: &RunResult) -> String {
    let scripts: Vec<&str> = r.options.scripts.iter().map(|s| s.name.as_str()).collect();
    format!(
        "pgbolt report: {}, {} clients",
        scripts.join(", "),
        r.options.clients
    )
}

/// `1 client`, `2 clients`.
fn plural(n: u32, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// What ran, where and when, in the frame every page shares.
pub fn header(r: &RunResult) -> Result<Option<String>, ReportError> {
    let o = &r.options;
    let mut lines = vec![(
        "Clients",
        format!(
            "{}, {}, query mode {}",
            plural(o.clients, "client"),
            plural(o.threads, "thread"),
            esc(&o.query_mode)
        ),
    )];
    let limit = match o.limit {
        RunLimit::TransactionsPerClient(n) => format!("{n} transactions per client"),
        RunLimit::DurationSeconds(s) => format!("{s} s"),
    };
    let measured = r.timings.bench_duration_us as f64 / 1e6;
    lines.push(("Duration", format!("{limit} (measured: {measured:.3} s)")));
    let extra = options(r);
    if !extra.is_empty() {
        lines.push(("Options", extra.join(", ")));
    }
    if !r.generators.is_empty() {
        lines.push((
            "Generators",
            format!("{} merged (listed below)", r.generators.len()),
        ));
    }
    let frame = Frame {
        heading: if r.generators.is_empty() {
            "pgbolt benchmark report".to_owned()
        } else {
            "pgbolt benchmark report: a fleet's results merged".to_owned()
        },
        run: r,
        lines,
        span: r.context.started_us.zip(r.context.ended_us),
        outcome: if r.aborted {
            "<strong>aborted</strong>".to_owned()
        } else {
            "completed".to_owned()
        },
        banner: r.aborted.then(|| {
            "<div class=\"banner\" data-figure=\"aborted\">This run ended early (a client aborted, or it was interrupted): the figures cover what ran until then.</div>".to_owned()
        }),
    };
    Ok(Some(frame.html()))
}

/// The options that change what the figures mean, in words.
fn options(r: &RunResult) -> Vec<String> {
    let o = &r.options;
    let mut extra = Vec::new();
    if let Some(rate) = o.rate {
        extra.push(format!("rate {rate:.1} tps (-R)"));
    }
    if let Some(l) = o.latency_limit_us {
        extra.push(format!("latency limit {:.3} ms (-L)", l as f64 / 1000.0));
    }
    match o.max_tries {
        1 => {}
        0 => extra.push("unlimited tries".to_owned()),
        n => extra.push(format!("max tries {n}")),
    }
    if o.connect_per_transaction {
        extra.push("new connection per transaction (-C)".to_owned());
    }
    if o.continue_on_error {
        extra.push("continue on error".to_owned());
    }
    if r.merged_runs > 1 {
        extra.push(format!("{} runs merged", r.merged_runs));
    }
    extra
}

/// TPS, the outcome counts and the latency percentiles.
pub fn key_figures(r: &RunResult) -> Result<Option<String>, ReportError> {
    let c = &r.counts;
    let mut out = String::from("<section><h2>Key figures</h2><div class=\"figures\">");
    let mut figure = |name: &str, label: &str, value: String, unit: &str, bad: bool| {
        let _ = write!(
            out,
            "<div class=\"figure{}\"><div class=\"label\">{label}</div><span class=\"value\" data-figure=\"{name}\">{value}</span><span class=\"unit\">{unit}</span></div>",
            match (bad, name) {
                (true, _) => " bad",
                (_, "tps") => " wide",
                _ => "",
            }
        );
    };
    figure("tps", "Throughput", format!("{:.1}", r.tps), "tps", false);
    figure(
        "committed",
        "Committed",
        c.counters.committed.to_string(),
        "",
        false,
    );
    figure("failed", "Failed", c.failed.to_string(), "", c.failed > 0);
    figure(
        "retried",
        "Retried",
        c.counters.retried.to_string(),
        "",
        false,
    );
    figure(
        "skipped",
        "Skipped",
        c.counters.skipped.to_string(),
        "",
        c.counters.skipped > 0,
    );
    match &r.latency.percentiles {
        Some(p) => {
            for (name, label, v) in [
                ("p50", "Latency p50", p.p50),
                ("p90", "p90", p.p90),
                ("p99", "p99", p.p99),
                ("p99_9", "p99.9", p.p99_9),
                ("p99_99", "p99.99", p.p99_99),
                ("max", "max", p.max),
            ] {
                figure(name, label, format!("{v:.3}"), "ms", false);
            }
        }
        None => out.push_str(
            "<div class=\"figure wide\"><div class=\"label\">Latency</div><span class=\"value\" data-figure=\"p50\">none</span><span class=\"unit\">no committed transaction</span></div>",
        ),
    }
    out.push_str("</div>");
    if r.options.rate.is_some() {
        out.push_str("<p class=\"note\">Under -R latency is measured from each transaction's scheduled start, so it includes the schedule lag.</p>");
    }
    out.push_str("</section>");
    Ok(Some(out))
}
