//! The page of a comparison of two sweeps (`pgbolt --compare A.json
//! B.json --html=FILE` with two sweeps' results): the verdict, what
//! differs, the two throughput curves overlaid with their fits, p99
//! against the swept value, each step's changes as a table and as
//! intervals per chosen metric, and the fits side by side.
//!
//! The rows and lines are those of the text report
//! ([`crate::compare::sweep`]), so the page and the terminal cannot
//! disagree; the charts draw with [`super::svg::Chart`], the baseline in
//! the first colour and the candidate in the second, each fit dashed in
//! its sweep's colour. The page embeds the comparison and both sweeps'
//! whole results as one JSON object (`comparison`, `baseline`,
//! `candidate`).

use std::fmt::Write as _;

use serde::Serialize;

use super::comparison::{differences_section, interval_chart};
use super::escape::esc;
use super::frame::{self, Frame};
use super::svg::{Axis, Chart, Line};
use super::{page_end, page_start};
use crate::compare::sweep::SweepComparison;
use crate::model::run::ReportError;
use crate::model::sweep::SweepResult;
use crate::report::text::sweep_comparison as text;

/// What the page embeds.
#[derive(Serialize)]
struct Embedded<'a> {
    comparison: &'a SweepComparison,
    baseline: &'a SweepResult,
    candidate: &'a SweepResult,
}

/// The two sweeps: CSS class (colour), name.
const SWEEPS: [(&str, &str); 2] = [("s0", "baseline"), ("s1", "candidate")];

/// The page of comparison `c` of the sweeps `baseline` and `candidate`.
pub fn render_sweep_comparison_html(
    c: &SweepComparison,
    baseline: &SweepResult,
    candidate: &SweepResult,
    rendered_at_us: i64,
) -> Result<String, ReportError> {
    let json = serde_json::to_string(&Embedded {
        comparison: c,
        baseline,
        candidate,
    })
    .map_err(ReportError::Json)?;
    let title = format!(
        "pgbolt comparison of sweeps of {}: {}",
        c.dimension,
        c.verdict.describe()
    );
    let mut out = page_start(&title, json.len());
    header(&mut out, c, [baseline, candidate]);
    curves(&mut out, c, [baseline, candidate]);
    steps(&mut out, c);
    fits(&mut out, c);
    page_end(
        &mut out,
        "comparison, with both sweeps' results,",
        &json,
        rendered_at_us,
    );
    Ok(out)
}

/// How a sweep ended, as HTML.
fn ended(s: &SweepResult) -> String {
    match &s.sweep.stopped {
        Some(why) => format!("stopped ({})", esc(why)),
        None => "completed".to_owned(),
    }
}

/// The frame's header, read from the baseline's first step (what differs
/// in the candidate is listed next), then the differences and both
/// sweeps' findings.
fn header(out: &mut String, c: &SweepComparison, sweeps: [&SweepResult; 2]) {
    let heading = format!(
        "pgbolt comparison of sweeps of {}: <span data-figure=\"verdict\">{}</span>",
        esc(&c.dimension),
        esc(c.verdict.describe())
    );
    let mut lines = Vec::new();
    for ((class, name), side) in SWEEPS.iter().zip([&c.baseline, &c.candidate]) {
        let summary = text::side_summary(c, side);
        lines.push(frame::side_line(class, name, &side.source, &summary));
    }
    lines.push(("Verdict", esc(&text::verdict_line(c))));
    for caveat in &c.caveats {
        lines.push(("Note", esc(caveat)));
    }
    let runs = || {
        sweeps
            .iter()
            .flat_map(|s| s.steps.iter().map(|step| &step.result))
    };
    match runs().next() {
        Some(first) => out.push_str(
            &Frame {
                heading,
                run: first,
                lines,
                span: frame::span(runs()),
                outcome: format!(
                    "baseline {}, candidate {}",
                    ended(sweeps[0]),
                    ended(sweeps[1])
                ),
                banner: None,
            }
            .html(),
        ),
        None => {
            let _ = write!(out, "<header><h1>{heading}</h1></header>");
        }
    }
    differences_section(
        out,
        "sweeps",
        &c.differences,
        "None: same swept values, repeats, scripts, options, server version and recorded settings.",
    );
    for line in text::unmatched_lines(c) {
        let _ = write!(out, "<p class=\"note\">{}</p>", esc(&line));
    }
    out.push_str("</section><section><h2>Findings</h2>");
    for ((_, name), sweep) in SWEEPS.iter().zip(sweeps) {
        let _ = write!(out, "<h3>{name}</h3>{}", super::sweep::step_findings(sweep));
    }
    out.push_str("</section>");
}

/// Throughput against the swept value, both sweeps with their fits; p99
/// against the swept value.
fn curves(out: &mut String, c: &SweepComparison, sweeps: [&SweepResult; 2]) {
    let points = sweeps.map(|s| &s.summary.points);
    // Both sweeps' values on one axis: logarithmic when they grow by a
    // factor (1, 2, 4 ... clients), as on a sweep's own page.
    let values: Vec<f64> = points
        .iter()
        .flat_map(|p| p.iter())
        .map(|p| p.value)
        .collect();
    let x = Axis::swept(&values, &c.dimension);
    let fit_at = super::sweep::fit_samples(&x);
    let measured = points
        .iter()
        .flat_map(|p| p.iter())
        .map(|p| p.tps_max)
        .fold(0.0, f64::max);
    let y = Axis::linear(0.0, measured * 1.1, "committed transactions per second");
    let mut chart = Chart::new(
        "Throughput against the swept value, both sweeps",
        x.clone(),
        y.clone(),
    );
    for (((class, name), points), sweep) in SWEEPS.into_iter().zip(points).zip(sweeps) {
        chart.line(Line {
            class,
            label: format!("{name} (mean)"),
            points: points.iter().map(|p| (p.value, p.tps)).collect(),
        });
        if let Some(fit) = &sweep.summary.fit {
            let holds = if sweep.summary.fit_note.is_some() {
                ", does not fit"
            } else {
                ""
            };
            chart.line(Line {
                class: if class == "s0" { "s0 fit" } else { "s1 fit" },
                label: format!("{name}'s USL fit{holds}"),
                points: fit_at
                    .iter()
                    .map(|&n| (n, fit.throughput(n).min(y.max)))
                    .collect(),
            });
        }
    }
    let _ = write!(
        out,
        "<section><h2>Throughput</h2>{}<p class=\"note\">Solid: the measured means; dashed: each sweep's USL fit (clients sweeps).</p></section>",
        chart.finish()
    );
    let p99 = |p: &crate::model::sweep::Point| p.p99_ms.max(0.001);
    let all = || points.iter().flat_map(|p| p.iter()).map(p99);
    let mut chart = Chart::new(
        "p99 latency against the swept value, both sweeps",
        x,
        Axis::log(
            all().fold(f64::INFINITY, f64::min).min(1e9),
            all().fold(0.0, f64::max),
            "p99 latency (ms)",
        ),
    );
    for ((class, name), points) in SWEEPS.into_iter().zip(points) {
        chart.line(Line {
            class,
            label: name.to_owned(),
            points: points.iter().map(|p| (p.value, p99(p))).collect(),
        });
    }
    let _ = write!(out, "<section><h2>Latency</h2>{}</section>", chart.finish());
}

/// The table of every step's changes, the intervals of the chosen
/// metrics per step, and each step's verdict.
fn steps(out: &mut String, c: &SweepComparison) {
    out.push_str("<section><h2>Step by step</h2>");
    if c.steps.is_empty() {
        out.push_str("<p class=\"note\">No step was measured on both sides.</p></section>");
        return;
    }
    out.push_str("<table><tr><th>step</th><th class=\"label\">metric</th><th>baseline</th><th>candidate</th><th>change</th><th>95% interval</th><th>outcome</th></tr>");
    for (i, metric, row) in text::table_rows(c) {
        let step = &c.steps[i];
        let metric = metric.name();
        let _ = write!(
            out,
            "<tr data-step=\"{}\"><td class=\"label\">{}</td><td class=\"label\">{}</td><td>{}</td><td>{}</td><td data-figure=\"change-{}-{}\">{}</td><td>{}</td><td>{}</td></tr>",
            esc(&crate::model::sweep::value(step.step.value)),
            esc(&row[0]),
            esc(&row[1]),
            esc(&row[2]),
            esc(&row[3]),
            esc(&crate::model::sweep::value(step.step.value)),
            esc(metric),
            esc(&row[4]),
            esc(&row[5]),
            esc(&row[6])
        );
    }
    out.push_str("</table>");
    for metric in &c.verdict_metrics {
        let rows: Vec<(String, crate::compare::stats::Estimate)> = c
            .steps
            .iter()
            .filter_map(|s| {
                s.metrics
                    .iter()
                    .find(|m| m.metric == *metric)
                    .and_then(|m| m.change)
                    .map(|e| (s.step.describe(&c.dimension), e))
            })
            .collect();
        if !rows.is_empty() {
            let title = format!(
                "The change of {} at each step, with its 95% interval",
                metric.name()
            );
            let _ = write!(
                out,
                "<h3>{}</h3>{}",
                esc(&title),
                interval_chart(&title, &rows, c.threshold)
            );
        }
    }
    for line in text::step_lines(c).iter().chain(&text::method_lines(c)) {
        let _ = write!(out, "<p class=\"note\">{}</p>", esc(line));
    }
    out.push_str("</section>");
}

/// The fits side by side, the best points and the notes.
fn fits(out: &mut String, c: &SweepComparison) {
    out.push_str("<section><h2>Fitted curves</h2>");
    let rows = text::fit_rows(c);
    if !rows.is_empty() {
        out.push_str("<table><tr><th>USL fit</th><th>baseline</th><th>candidate</th></tr>");
        for [name, a, b] in rows {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&name),
                esc(&a),
                esc(&b)
            );
        }
        out.push_str("</table>");
    }
    for line in text::best_and_notes(c) {
        let _ = write!(out, "<p class=\"note\">{}</p>", esc(&line));
    }
    out.push_str("</section>");
}
