//! The page of a run or sweep over several targets (`--target`,
//! `--temp-pgbouncer` with `--html=FILE`, or `--render` of its result
//! file): the targets and the crossovers, throughput against the swept
//! value with one line per target and the repeats' spread as whiskers,
//! p99 against it, the pooler's wait and CPU, and the side-by-side table.
//! Each target's sweep is in the embedded JSON, whole.

use std::fmt::Write as _;

use super::escape::esc;
use super::frame::{self, Frame};
use super::svg::{Axis, Chart, Line, SERIES_CLASSES};
use super::{page_end, page_start};
use crate::model::pooler::PoolerView;
use crate::model::run::ReportError;
use crate::model::sweep::Point;
use crate::model::targets::TargetsResult;

type Section = fn(&TargetsResult) -> String;

/// A figure of the pooler's view of a step, where it was measured.
type ViewFigure = fn(&PoolerView) -> Option<f64>;

/// A target's series: its index (colour), its name and its points.
type Series<'a> = (usize, &'a str, Vec<(f64, f64)>);

/// The sections of the page, in order.
const SECTIONS: &[Section] = &[header, findings, throughput, p99, pooler, table];

/// The page of `result`; `rendered_at_us` is shown in its footer.
pub fn render_targets_html(
    result: &TargetsResult,
    rendered_at_us: i64,
) -> Result<String, ReportError> {
    let json = serde_json::to_string(result).map_err(ReportError::Json)?;
    let mut out = page_start("pgbolt targets compared", json.len());
    for section in SECTIONS {
        out.push_str(&section(result));
    }
    page_end(
        &mut out,
        "result, every target's sweep included,",
        &json,
        rendered_at_us,
    );
    Ok(out)
}

fn class(i: usize) -> &'static str {
    SERIES_CLASSES[i % SERIES_CLASSES.len()]
}

fn dimension(r: &TargetsResult) -> &str {
    r.targets
        .first()
        .map_or("clients", |t| t.sweep.sweep.dimension.as_str())
}

fn header(r: &TargetsResult) -> String {
    let names: Vec<&str> = r.targets.iter().map(|t| t.name.as_str()).collect();
    let heading = format!("Targets compared: {}", names.join(", "));
    let first = r.targets.iter().find_map(|t| t.sweep.steps.first());
    let runs = || {
        r.targets
            .iter()
            .flat_map(|t| t.sweep.steps.iter().map(|s| &s.result))
    };
    let values: Vec<String> = r
        .comparison
        .rows
        .iter()
        .map(|row| super::svg::number(row.value))
        .collect();
    let lengths: Vec<String> = r
        .targets
        .iter()
        .map(|t| format!("{}: {}", esc(&t.name), super::sweep::step_lengths(&t.sweep)))
        .collect();
    let lines = vec![
        (
            "Steps",
            esc(&format!("{} {}", dimension(r), values.join(", "))),
        ),
        ("Length", lengths.join("; ")),
    ];
    let mut out = match first {
        Some(first) => Frame {
            heading: esc(&heading),
            run: &first.result,
            lines,
            span: frame::span(runs()),
            outcome: match &r.stopped {
                Some(why) => format!("<strong>stopped</strong>: {}", esc(why)),
                None => "completed".to_owned(),
            },
            banner: None,
        }
        .html(),
        None => format!(
            "<header><h1>{}</h1><p>No step was measured.</p></header>",
            esc(&heading)
        ),
    };
    out.push_str("<section><h2>Targets</h2><ul>");
    for t in &r.targets {
        let _ = write!(
            out,
            "<li><b>{}</b>: <code>{}</code>",
            esc(&t.name),
            esc(&t.conninfo)
        );
        if let Some(p) = &t.pooler {
            let _ = write!(out, " ({}", esc(&p.version));
            if let Some(mode) = &p.pool_mode {
                let _ = write!(out, ", {} pooling", esc(mode));
            }
            if let Some(n) = p.default_pool_size {
                let _ = write!(out, ", default_pool_size {n}");
            }
            if let Some(n) = p.max_client_conn {
                let _ = write!(out, ", max_client_conn {n}");
            }
            out.push(')');
        }
        out.push_str("</li>");
    }
    out.push_str("</ul><h2>Crossover</h2><ul>");
    for c in &r.comparison.crossovers {
        let _ = write!(
            out,
            "<li>{}</li>",
            esc(&crate::report::text::targets::crossover_text(
                c,
                dimension(r)
            ))
        );
    }
    if let Some(why) = &r.comparison.unjudged {
        let _ = write!(out, "<li>not judged: {}</li>", esc(why));
    }
    out.push_str("</ul></section>");
    out
}

/// Each target's findings, with the steps they fired in.
fn findings(r: &TargetsResult) -> String {
    let mut out = String::from("<section><h2>Findings</h2>");
    for t in &r.targets {
        let _ = write!(
            out,
            "<h3>{}</h3>{}",
            esc(&t.name),
            super::sweep::step_findings(&t.sweep)
        );
    }
    out.push_str("</section>");
    out
}

fn x_axis(r: &TargetsResult) -> Axis {
    let values: Vec<f64> = r.comparison.rows.iter().map(|row| row.value).collect();
    Axis::swept(&values, dimension(r))
}

fn points(r: &TargetsResult) -> impl Iterator<Item = (usize, &str, &[Point])> {
    r.targets
        .iter()
        .enumerate()
        .map(|(i, t)| (i, t.name.as_str(), t.sweep.summary.points.as_slice()))
}

fn throughput(r: &TargetsResult) -> String {
    let top = points(r)
        .flat_map(|(_, _, p)| p.iter().map(|p| p.tps_max))
        .fold(0.0, f64::max);
    let mut chart = Chart::new(
        "Throughput against the swept value, one line per target",
        x_axis(r),
        Axis::linear(0.0, top * 1.05, "committed transactions per second"),
    );
    for (i, name, pts) in points(r) {
        chart.line(Line {
            class: class(i),
            label: name.to_owned(),
            points: pts.iter().map(|p| (p.value, p.tps)).collect(),
        });
        chart.whiskers(
            class(i),
            &pts.iter()
                .map(|p| (p.value, p.tps_min, p.tps_max))
                .collect::<Vec<_>>(),
        );
    }
    format!(
        "<section><h2>Throughput</h2>{}<p>Lines join the means over the repeats; whiskers \
         span the lowest repeat to the highest.</p></section>",
        chart.finish()
    )
}

fn p99(r: &TargetsResult) -> String {
    let values = || points(r).flat_map(|(_, _, p)| p.iter().map(|p| p.p99_ms));
    let low = values().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
    let high = values().fold(0.0, f64::max);
    let y = Axis::log(
        if low.is_finite() { low } else { 0.001 },
        high.max(0.002),
        "p99 latency (ms)",
    );
    let mut chart = Chart::new("p99 latency against the swept value", x_axis(r), y);
    for (i, name, pts) in points(r) {
        chart.line(Line {
            class: class(i),
            label: name.to_owned(),
            points: pts.iter().map(|p| (p.value, p.p99_ms.max(0.001))).collect(),
        });
    }
    format!("<section><h2>p99 latency</h2>{}</section>", chart.finish())
}

/// Per pooler target and swept value, the mean over the repeats of
/// `figure` where it was measured.
fn pooler_series(
    r: &TargetsResult,
    target: &str,
    figure: impl Fn(&PoolerView) -> Option<f64>,
) -> Vec<(f64, f64)> {
    let mut values: Vec<f64> = r
        .pooler_steps
        .iter()
        .filter(|s| s.target == target)
        .map(|s| s.value)
        .collect();
    values.sort_by(f64::total_cmp);
    values.dedup();
    values
        .into_iter()
        .filter_map(|v| {
            let seen: Vec<f64> = r
                .pooler_steps
                .iter()
                .filter(|s| s.target == target && s.value == v)
                .filter_map(|s| figure(&s.view))
                .collect();
            (!seen.is_empty()).then(|| (v, seen.iter().sum::<f64>() / seen.len() as f64))
        })
        .collect()
}

fn pooler(r: &TargetsResult) -> String {
    let poolers: Vec<(usize, &str)> = r
        .targets
        .iter()
        .enumerate()
        .filter(|(_, t)| t.pooler.is_some())
        .map(|(i, t)| (i, t.name.as_str()))
        .collect();
    let charts: [(&str, &str, ViewFigure); 2] = [
        (
            "Clients' wait for a server connection per transaction",
            "wait per transaction (ms)",
            |v| v.wait_us_per_xact.map(|w| w / 1000.0),
        ),
        (
            "The pooler's CPU (100% is one CPU, all PgBouncer can use)",
            "CPU (% of one CPU)",
            |v| v.cpu_percent,
        ),
    ];
    let mut out = String::new();
    for (label, unit, figure) in charts {
        let lines: Vec<Series> = poolers
            .iter()
            .map(|&(i, name)| (i, name, pooler_series(r, name, figure)))
            .filter(|(_, _, pts)| !pts.is_empty())
            .collect();
        if lines.is_empty() {
            continue;
        }
        let top = lines
            .iter()
            .flat_map(|(_, _, pts)| pts.iter().map(|p| p.1))
            .fold(0.0, f64::max);
        let mut chart = Chart::new(
            label,
            x_axis(r),
            Axis::linear(0.0, top.max(1.0) * 1.05, unit),
        );
        for (i, name, pts) in lines {
            chart.line(Line {
                class: class(i),
                label: name.to_owned(),
                points: pts,
            });
        }
        let _ = write!(out, "<h3>{}</h3>{}", esc(label), chart.finish());
    }
    if out.is_empty() {
        return out;
    }
    format!("<section><h2>The pooler's view</h2>{out}</section>")
}

fn table(r: &TargetsResult) -> String {
    let mut out = format!(
        "<section><h2>Side by side (ratios against {})</h2><table><tr><th>{}</th>",
        esc(&r.comparison.baseline),
        esc(dimension(r))
    );
    for (i, t) in r.targets.iter().enumerate() {
        let name = esc(&t.name);
        let _ = write!(
            out,
            "<th>{name} tps</th><th>{name} min..max</th><th>{name} p99 ms</th>"
        );
        if i > 0 {
            let _ = write!(out, "<th>tps ×</th><th>p99 ×</th>");
        }
    }
    out.push_str("</tr>");
    let ratio = |r: Option<f64>| r.map_or("–".to_owned(), |r| format!("{r:.2}"));
    for row in &r.comparison.rows {
        let _ = write!(out, "<tr><td>{}</td>", super::svg::number(row.value));
        for (i, cell) in row.cells.iter().enumerate() {
            match cell {
                Some(c) => {
                    let _ = write!(
                        out,
                        "<td>{:.1}</td><td>{:.1}..{:.1}</td><td>{:.3}</td>",
                        c.tps, c.tps_min, c.tps_max, c.p99_ms
                    );
                    if i > 0 {
                        let _ = write!(
                            out,
                            "<td>{}</td><td>{}</td>",
                            ratio(c.tps_ratio),
                            ratio(c.p99_ratio)
                        );
                    }
                }
                None => {
                    out.push_str("<td>not measured</td><td>–</td><td>–</td>");
                    if i > 0 {
                        out.push_str("<td>–</td><td>–</td>");
                    }
                }
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</table></section>");
    out
}
