//! The page of a comparison (`pgbolt --compare ... --html=FILE`): the
//! verdict, what differs between the runs, each figure's change with its
//! interval, and the two runs overlaid (throughput over time, percentile
//! spectra, latency distributions).
//!
//! It draws with the run page's charts ([`super::svg`]) and reads each run
//! through the same helpers as the run page ([`super::time`],
//! [`super::distribution`]), the baseline in the first colour and the
//! candidate in the second. The page embeds the comparison and both
//! results as one JSON object (`comparison`, `baseline`, `candidate`).

use std::fmt::Write as _;

use serde::Serialize;

use super::escape::esc;
use super::frame::{self, Frame};
use super::svg::{Axis, Chart, Line};
use super::{distribution, page_end, page_start, time};
use crate::compare::likeness::Difference;
use crate::compare::stats::Estimate;
use crate::compare::{Comparison, MetricChange};
use crate::model::run::{ReportError, RunResult};

/// What the page embeds.
#[derive(Serialize)]
struct Embedded<'a> {
    comparison: &'a Comparison,
    baseline: &'a RunResult,
    candidate: &'a RunResult,
}

/// The page of comparison `c` of `baseline` and `candidate`.
pub fn render_comparison_html(
    c: &Comparison,
    baseline: &RunResult,
    candidate: &RunResult,
    rendered_at_us: i64,
) -> Result<String, ReportError> {
    let json = serde_json::to_string(&Embedded {
        comparison: c,
        baseline,
        candidate,
    })
    .map_err(ReportError::Json)?;
    let title = format!("pgbolt comparison: {}", c.verdict.describe());
    let mut out = page_start(&title, json.len());
    header(&mut out, c, baseline, candidate);
    changes(&mut out, c);
    overlays(&mut out, baseline, candidate)?;
    page_end(
        &mut out,
        "comparison, with both results,",
        &json,
        rendered_at_us,
    );
    Ok(out)
}

const RUNS: [(&str, &str); 2] = [("s0", "baseline"), ("s1", "candidate")];

/// The frame's header, read from the baseline (what differs in the
/// candidate is listed next), then the differences and both sides'
/// findings.
fn header(out: &mut String, c: &Comparison, baseline: &RunResult, candidate: &RunResult) {
    let mut lines = Vec::new();
    for ((class, name), side) in RUNS.iter().zip([&c.baseline, &c.candidate]) {
        let summary = crate::report::text::comparison::side_summary(side);
        lines.push(frame::side_line(class, name, &side.source, &summary));
    }
    let metrics: Vec<&str> = c.verdict_metrics.iter().map(|m| m.name()).collect();
    lines.push((
        "Verdict on",
        format!(
            "{}, threshold {}%, {}% intervals",
            esc(&metrics.join(", ")),
            c.threshold * 100.0,
            c.confidence * 100.0
        ),
    ));
    for caveat in &c.caveats {
        lines.push(("Note", esc(caveat)));
    }
    let outcome = |r: &RunResult| if r.aborted { "aborted" } else { "completed" };
    let frame = Frame {
        heading: format!(
            "pgbolt comparison: <span data-figure=\"verdict\">{}</span>",
            esc(c.verdict.describe())
        ),
        run: baseline,
        lines,
        span: frame::span([baseline, candidate].into_iter()),
        outcome: format!(
            "baseline {}, candidate {}; verdict: {}",
            outcome(baseline),
            outcome(candidate),
            esc(c.verdict.describe())
        ),
        banner: None,
    };
    out.push_str(&frame.html());
    differences_section(
        out,
        "runs",
        &c.differences,
        "None: same scripts, options, server version and recorded settings.",
    );
    out.push_str("</section>");
    let _ = write!(
        out,
        "<section><h2>Findings</h2>{}</section>",
        frame::findings_of_steps(
            [
                ("baseline".to_owned(), baseline),
                ("candidate".to_owned(), candidate)
            ]
            .into_iter(),
            "run"
        )
    );
}

/// The section of the differences between the `what` (runs, sweeps), or
/// `none` when there are none; left open for more.
pub(super) fn differences_section(
    out: &mut String,
    what: &str,
    differences: &[Difference],
    none: &str,
) {
    let _ = write!(out, "<section><h2>Differences between the {what}</h2>");
    if differences.is_empty() {
        let _ = write!(out, "<p class=\"note\">{}</p>", esc(none));
    } else {
        out.push_str("<table><tr><th>what</th><th>baseline</th><th>candidate</th></tr>");
        for d in differences {
            let _ = write!(
                out,
                "<tr><td class=\"text\">{}</td><td>{}</td><td>{}</td></tr>",
                esc(&d.what),
                esc(&d.baseline),
                esc(&d.candidate)
            );
        }
        out.push_str("</table>");
    }
}

/// The table of changes and the chart of their intervals.
fn changes(out: &mut String, c: &Comparison) {
    out.push_str("<section><h2>Changes</h2><table><tr><th>metric</th><th>baseline</th><th>candidate</th><th>change</th><th>95% interval</th><th>outcome</th></tr>");
    for m in &c.metrics {
        let [name, baseline, candidate, change, interval, outcome] =
            crate::report::text::comparison::row(m);
        let _ = write!(
            out,
            "<tr data-metric=\"{0}\"><td>{6}</td><td>{1}</td><td>{2}</td><td data-figure=\"change-{0}\">{3}</td><td>{4}</td><td>{5}</td></tr>",
            esc(m.metric.name()),
            esc(&baseline),
            esc(&candidate),
            esc(&change),
            esc(&interval),
            esc(&outcome),
            esc(&name)
        );
    }
    out.push_str("</table>");
    out.push_str(&metrics_chart(&c.metrics, c.threshold));
    if let Some(d) = &c.latency_distribution {
        let _ = write!(
            out,
            "<p class=\"note\">Whole latency distributions: a candidate transaction is slower than a baseline one with probability {:.3} (0.5: no difference; Cliff's delta {:+.3}; Mann–Whitney p {}).</p>",
            d.probability_slower,
            d.cliffs_delta,
            if d.p_value < 1e-4 {
                "&lt; 0.0001".to_owned()
            } else {
                format!("= {:.4}", d.p_value)
            }
        );
    }
    for line in crate::report::text::comparison::method_lines(c) {
        let _ = write!(out, "<p class=\"note\">{}</p>", esc(&line));
    }
    out.push_str("</section>");
}

/// Each metric's change as a point with its interval, against the
/// threshold on either side of no change.
fn metrics_chart(metrics: &[MetricChange], threshold: f64) -> String {
    let rows: Vec<(String, Estimate)> = metrics
        .iter()
        .filter_map(|m| m.change.map(|e| (m.metric.name().to_owned(), e)))
        .collect();
    interval_chart("Each change with its 95% interval", &rows, threshold)
}

/// Changes as points with their intervals, one row each (labelled),
/// against the threshold on either side of no change.
pub(super) fn interval_chart(title: &str, rows: &[(String, Estimate)], threshold: f64) -> String {
    let bounds = rows.iter().flat_map(|(_, e)| [e.low, e.value, e.high]);
    let (low, high) = bounds.fold((-threshold * 2.0, threshold * 2.0), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    // Past a doubling or a halving, a linear axis squeezes every modest
    // change against zero: the ratios go on a logarithmic axis instead.
    let ratios = high > 1.0 || low < -0.5;
    let at = |change: f64| {
        if ratios {
            (1.0 + change).max(1e-4)
        } else {
            change * 100.0
        }
    };
    let x = if ratios {
        Axis::change_ratio(at(low), at(high), "change (%, logarithmic)")
    } else {
        let reach = low.abs().max(high.abs()) * 100.0;
        let mut x = Axis::linear(-reach, reach, "change (%)");
        let step = x.ticks.get(1).map_or(reach, |t| t.0 - x.ticks[0].0);
        x.ticks = (-(reach / step).ceil() as i64..=(reach / step).ceil() as i64)
            .map(|k| (k as f64 * step, super::svg::number(k as f64 * step)))
            .collect();
        x.min = x.ticks.first().map_or(-reach, |t| t.0);
        x.max = x.ticks.last().map_or(reach, |t| t.0);
        x
    };
    let mut y = Axis::linear(0.0, rows.len() as f64 + 1.0, "");
    y.ticks = rows
        .iter()
        .enumerate()
        .map(|(i, (label, _))| ((rows.len() - i) as f64, label.clone()))
        .collect();
    let mut chart = Chart::new(title, x, y);
    for (i, (label, e)) in rows.iter().enumerate() {
        let row = (rows.len() - i) as f64;
        chart.line(Line {
            class: super::svg::SERIES_CLASSES[i % super::svg::SERIES_CLASSES.len()],
            label: label.clone(),
            points: vec![(at(e.low), row), (at(e.value), row), (at(e.high), row)],
        });
    }
    chart.marker(at(-threshold), "");
    chart.marker(
        at(threshold),
        &format!("threshold ±{}%", super::svg::number(threshold * 100.0)),
    );
    chart.finish()
}

/// The two runs overlaid: throughput over time, percentile spectra and
/// latency distributions, a section each.
fn overlays(out: &mut String, a: &RunResult, b: &RunResult) -> Result<(), ReportError> {
    let _ = write!(
        out,
        "<section><h2>Throughput over time</h2>{}</section>",
        throughput_chart(a, b)
    );
    let _ = write!(
        out,
        "<section><h2>Percentile spectra</h2>{}</section>",
        spectra_chart(a, b)?
    );
    let _ = write!(
        out,
        "<section><h2>Latency distributions</h2>{}<p class=\"note\">Share of each run's committed transactions in each bucket, plotted at the bucket's middle.</p></section>",
        distributions_chart(a, b)?
    );
    Ok(())
}

/// Committed transactions per second of both runs, over time.
fn throughput_chart(a: &RunResult, b: &RunResult) -> String {
    let runs = [a, b];
    let tps = runs.map(time::committed_per_second);
    let top = tps.iter().flatten().map(|p| p.1).fold(0.0, f64::max);
    let end = tps.iter().flatten().map(|p| p.0).fold(1.0, f64::max);
    let mut chart = Chart::new(
        "Throughput over time",
        Axis::linear(0.0, end, "time since the run's start (s)"),
        Axis::linear(0.0, top, "committed transactions per second"),
    );
    for ((class, name), points) in RUNS.into_iter().zip(tps) {
        chart.line(Line {
            class,
            label: name.to_owned(),
            points,
        });
    }
    chart.finish()
}

/// Both runs' latency percentile spectra.
fn spectra_chart(a: &RunResult, b: &RunResult) -> Result<String, ReportError> {
    let spectra = [
        distribution::spectrum_points(a)?,
        distribution::spectrum_points(b)?,
    ];
    let top = spectra
        .iter()
        .flatten()
        .flatten()
        .map(|p| p.1)
        .fold(0.0, f64::max);
    let mut chart = Chart::new(
        "Percentile spectra",
        distribution::spectrum_axis(),
        Axis::linear(0.0, top, "latency (ms)"),
    );
    for ((class, name), points) in RUNS.into_iter().zip(spectra) {
        chart.line(Line {
            class,
            label: name.to_owned(),
            points: points.unwrap_or_default(),
        });
    }
    Ok(chart.finish())
}

/// Both runs' latency distributions, in logarithmic buckets.
fn distributions_chart(a: &RunResult, b: &RunResult) -> Result<String, ReportError> {
    let buckets = [distribution::log_buckets(a)?, distribution::log_buckets(b)?];
    let all: Vec<(f64, f64, f64)> = buckets.iter().flatten().flatten().copied().collect();
    let lo = all.iter().map(|b| b.0).fold(f64::INFINITY, f64::min);
    let hi = all.iter().map(|b| b.1).fold(0.0, f64::max);
    let top = all.iter().map(|b| b.2).fold(0.0, f64::max);
    let mut chart = Chart::new(
        "Latency distributions",
        Axis::log(
            if lo.is_finite() { lo } else { 0.001 },
            hi.max(0.002),
            "latency (ms), 10 buckets per decade",
        ),
        Axis::linear(0.0, top, "share of transactions (%)"),
    );
    for ((class, name), bars) in RUNS.into_iter().zip(buckets) {
        chart.line(Line {
            class,
            label: name.to_owned(),
            points: bars
                .unwrap_or_default()
                .iter()
                .map(|&(low, high, share)| ((low * high).sqrt(), share))
                .collect(),
        });
    }
    Ok(chart.finish())
}
