//! A comparison as text for the terminal and as Markdown for a pull
//! request: the differences between the runs first, then a table of the
//! figures with their changes and intervals, the distributions' rank test,
//! the methods, and the verdict last.

use std::fmt::Write;

use super::escape::line;
use crate::compare::likeness::Difference;
use crate::compare::{Comparison, MetricChange, Side};
use crate::config::Metric;

/// The terminal report.
pub fn render_text(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "baseline:  {} ({})",
        line(&c.baseline.source),
        side_summary(&c.baseline)
    );
    let _ = writeln!(
        out,
        "candidate: {} ({})",
        line(&c.candidate.source),
        side_summary(&c.candidate)
    );
    differences_text(&mut out, "runs", &c.differences);
    let header = [
        "metric",
        "baseline",
        "candidate",
        "change",
        "95% interval",
        "outcome",
    ]
    .map(str::to_owned);
    let rows: Vec<Vec<String>> = std::iter::once(header.to_vec())
        .chain(c.metrics.iter().map(|m| row(m).to_vec()))
        .collect();
    out.push_str(&aligned(&rows, &[0, 5]));
    if let Some(d) = &c.latency_distribution {
        let _ = writeln!(out, "{}", distribution_line(d));
    }
    for line in method_lines(c) {
        let _ = writeln!(out, "{line}");
    }
    for caveat in &c.caveats {
        let _ = writeln!(out, "note: {caveat}");
    }
    let _ = writeln!(out, "{}", verdict_line(c));
    out
}

/// `rows` (the header first) as columns padded to their widest cell:
/// the columns in `left` aligned to the left, the others to the right.
pub(super) fn aligned(rows: &[Vec<String>], left: &[usize]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            let pad = " ".repeat(widths[i] - cell.chars().count());
            if left.contains(&i) {
                let _ = write!(line, "{cell}{pad}  ");
            } else {
                let _ = write!(line, "{pad}{cell}  ");
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// The Markdown report, for a pull-request comment.
pub fn render_markdown(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "### pgbolt comparison: {}\n", c.verdict.describe());
    let _ = writeln!(
        out,
        "- baseline: `{}` ({})",
        code(&c.baseline.source),
        side_summary(&c.baseline)
    );
    let _ = writeln!(
        out,
        "- candidate: `{}` ({})",
        code(&c.candidate.source),
        side_summary(&c.candidate)
    );
    differences_markdown(&mut out, "runs", &c.differences);
    let _ = writeln!(
        out,
        "\n| metric | baseline | candidate | change | 95% interval | outcome |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---|");
    for r in c.metrics.iter().map(row) {
        let _ = writeln!(
            out,
            "| {} |",
            r.iter().map(|s| cell(s)).collect::<Vec<_>>().join(" | ")
        );
    }
    out.push('\n');
    if let Some(d) = &c.latency_distribution {
        let _ = writeln!(out, "{}\n", cell(&distribution_line(d)));
    }
    for line in method_lines(c) {
        let _ = writeln!(out, "- {}", cell(&line));
    }
    for caveat in &c.caveats {
        let _ = writeln!(out, "- note: {}", cell(caveat));
    }
    let _ = writeln!(out, "\n**{}**", cell(&verdict_line(c)));
    out
}

/// The differences between the `what` (runs, sweeps) as text lines.
pub(super) fn differences_text(out: &mut String, what: &str, differences: &[Difference]) {
    if !differences.is_empty() {
        let _ = writeln!(out, "differences between the {what}:");
        for d in differences {
            let _ = writeln!(
                out,
                "  {}: {} -> {}",
                line(&d.what),
                line(&d.baseline),
                line(&d.candidate)
            );
        }
    }
}

/// The differences between the `what` (runs, sweeps) as a Markdown list.
pub(super) fn differences_markdown(out: &mut String, what: &str, differences: &[Difference]) {
    if !differences.is_empty() {
        let _ = writeln!(out, "\n**Differences between the {what}**\n");
        for d in differences {
            let _ = writeln!(
                out,
                "- {}: `{}` → `{}`",
                cell(&d.what),
                code(&d.baseline),
                code(&d.candidate)
            );
        }
    }
}

/// One side in a line: its TPS, counts and length (the mean TPS and the
/// totals of a step's repeats).
pub fn side_summary(s: &Side) -> String {
    let runs = if s.runs > 1 {
        format!(" over {} runs (tps: their mean)", s.runs)
    } else {
        String::new()
    };
    format!(
        "{:.1} tps, {} committed, {} failed in {:.1} s{runs}{}",
        s.tps,
        s.committed,
        s.failed,
        s.duration_s,
        if s.aborted { ", aborted" } else { "" }
    )
}

/// A metric's row: name, baseline, candidate (TPS, or ms), change, its
/// interval and the outcome.
pub fn row(m: &MetricChange) -> [String; 6] {
    let name = match m.metric {
        Metric::Tps => "tps".to_owned(),
        other => format!("latency {} (ms)", other.name()),
    };
    let figure = |v: Option<f64>| match (v, m.metric) {
        (None, _) => "-".to_owned(),
        (Some(v), Metric::Tps) => format!("{v:.1}"),
        (Some(v), _) => format!("{v:.3}"),
    };
    let (change, interval) = match m.change {
        Some(e) => (
            percent(e.value),
            format!("[{}, {}]", percent(e.low), percent(e.high)),
        ),
        None => ("-".to_owned(), "-".to_owned()),
    };
    [
        name,
        figure(m.baseline),
        figure(m.candidate),
        change,
        interval,
        m.outcome.describe().to_owned(),
    ]
}

pub(super) fn percent(v: f64) -> String {
    format!("{:+.1}%", v * 100.0)
}

pub(super) fn distribution_line(d: &crate::compare::DistributionChange) -> String {
    format!(
        "latency distribution: a candidate transaction is slower than a baseline one \
         with probability {:.3} (0.5: no difference; Cliff's delta {:+.3}; Mann-Whitney p {})",
        d.probability_slower,
        d.cliffs_delta,
        p_value(d.p_value)
    )
}

pub(super) fn p_value(p: f64) -> String {
    if p < 1e-4 {
        "< 0.0001".to_owned()
    } else {
        format!("= {p:.4}")
    }
}

/// One line per method used: the metrics it served and how.
pub fn method_lines(c: &Comparison) -> Vec<String> {
    let mut lines = Vec::new();
    let mut seen = Vec::new();
    for m in &c.metrics {
        if !seen.contains(&&m.method) {
            seen.push(&m.method);
            let names: Vec<&str> = c
                .metrics
                .iter()
                .filter(|x| x.method == m.method)
                .map(|x| x.metric.name())
                .collect();
            lines.push(format!("method ({}): {}", names.join(", "), m.method));
        }
    }
    lines
}

fn verdict_line(c: &Comparison) -> String {
    let metrics: Vec<&str> = c.verdict_metrics.iter().map(|m| m.name()).collect();
    format!(
        "verdict ({}; threshold {}%): {}",
        metrics.join(", "),
        c.threshold * 100.0,
        c.verdict.describe()
    )
}

/// Text for a Markdown table cell or list item.
pub(super) fn cell(text: &str) -> String {
    super::escape::markdown(text)
}

/// Text inside backticks.
pub(super) fn code(text: &str) -> String {
    super::escape::code(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::tests::{compared, latencies, run, wobbly};

    #[test]
    fn renderings_carry_the_figures_and_the_verdict() {
        let a = run(&wobbly(1000.0, 30), &latencies(1));
        let b = run(&wobbly(500.0, 30), &latencies(2));
        let mut c = compared(&a, &b, &[Metric::Tps, Metric::P99]);
        let text = render_text(&c);
        assert!(
            text.contains("verdict (tps, p99; threshold 3%): regressed"),
            "{text}"
        );
        assert!(
            text.contains("Welch t over batch means: 10 batches of 3 s"),
            "{text}"
        );
        c.baseline.source = "a|b.json".to_owned();
        let md = render_markdown(&c);
        assert!(md.starts_with("### pgbolt comparison: regressed"), "{md}");
        assert!(md.contains("| metric | baseline | candidate |"), "{md}");
        assert!(
            md.contains("a\\|b.json") || md.contains("`a|b.json`"),
            "{md}"
        );
    }
}
