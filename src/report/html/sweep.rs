//! The page of a sweep (`--sweep ... --html=FILE`, or `--render` of a
//! sweep's result file): what was asked, the answers, the table of steps,
//! and the charts a sweep is read by: throughput against the swept value
//! with the fitted USL curve and the linear ideal, the latency
//! percentiles against it, and p99 against throughput (the hockey stick:
//! where latency turns up while throughput stops growing).
//!
//! A sweep's result is a kind of its own, so it has its own list of
//! sections ([`SECTIONS`]); they draw with [`super::svg::Chart`]. The page
//! embeds the sweep's whole result, every step's run result included.

use std::fmt::Write as _;

use super::escape::esc;
use super::frame::{self, Frame};
use super::svg::{Axis, Chart, Line, Scale};
use super::{page_end, page_start};
use crate::model::run::ReportError;
use crate::model::sweep::{Point, SloInfo, SweepResult, NEAR_BEST};

type Section = fn(&SweepResult) -> String;

/// A figure of a point, for a chart's series.
type Figure = fn(&Point) -> f64;

/// The sections of a sweep's page, in order.
const SECTIONS: &[Section] = &[
    header,
    findings,
    throughput,
    percentiles,
    hockey_stick,
    over_time,
    table,
];

/// The page of `result`; `rendered_at_us` is shown in its footer.
pub fn render_sweep_html(result: &SweepResult, rendered_at_us: i64) -> Result<String, ReportError> {
    let json = serde_json::to_string(result).map_err(ReportError::Json)?;
    let title = format!("pgbolt sweep of {}", result.sweep.dimension);
    let mut out = page_start(&title, json.len());
    for section in SECTIONS {
        out.push_str(&section(result));
    }
    page_end(
        &mut out,
        "sweep's result, every step's included,",
        &json,
        rendered_at_us,
    );
    Ok(out)
}

fn value(v: f64) -> String {
    super::svg::number(v)
}

fn header(r: &SweepResult) -> String {
    let s = &r.summary;
    let dim = &r.sweep.dimension;
    let values: Vec<String> = s.points.iter().map(|p| value(p.value)).collect();
    let mut steps = format!(
        "{} {}: {}; {} measured steps",
        values.len(),
        if values.len() == 1 { "value" } else { "values" },
        values.join(", "),
        r.steps.len()
    );
    if r.sweep.repeat > 1 {
        let _ = write!(steps, ", {} repeats", r.sweep.repeat);
    }
    if r.sweep.warmup_s > 0 {
        let _ = write!(steps, ", warm-up {} s each", r.sweep.warmup_s);
    }
    let mut lines = vec![("Steps", esc(&steps)), ("Length", step_lengths(r))];
    if !r.sweep.slo.is_empty() {
        let slo: Vec<String> = r
            .sweep
            .slo
            .iter()
            .map(|o| format!("{} &lt; {} ms", esc(&o.name), value(o.limit_ms)))
            .collect();
        lines.push(("SLO", slo.join(", ")));
    }
    let mut out = match r.steps.first() {
        Some(first) => Frame {
            heading: format!("Sweep of {}", esc(dim)),
            run: &first.result,
            lines,
            span: frame::span(r.steps.iter().map(|s| &s.result)),
            outcome: match &r.sweep.stopped {
                Some(why) => format!("<strong>stopped</strong>: {}", esc(why)),
                None => "completed".to_owned(),
            },
            banner: None,
        }
        .html(),
        None => format!(
            "<header><h1>Sweep of {}</h1><p>No step was measured.</p></header>",
            esc(dim)
        ),
    };
    out.push_str("<section><h2>Answers</h2><ul>");
    let at = |i: usize| {
        let p = &s.points[i];
        format!("{} {} ({:.1} tps)", value(p.value), esc(dim), p.tps)
    };
    if let Some(i) = s.best {
        let _ = write!(out, "<li>Best measured: {}</li>", at(i));
    }
    if let Some(i) = s.near_best {
        let _ = write!(
            out,
            "<li>Smallest within {:.0}% of the best: {}</li>",
            NEAR_BEST * 100.0,
            at(i)
        );
    }
    if let Some(fit) = &s.fit {
        let _ = write!(
            out,
            "<li>USL fit: σ {:.5}, κ {:.6}, λ {:.1} tps, R² {:.4}</li>",
            fit.sigma, fit.kappa, fit.lambda, fit.r_squared
        );
        if let (None, Some(peak)) = (&s.fit_note, fit.peak_clients) {
            let around: Vec<String> = fit
                .around_peak
                .iter()
                .map(|(n, x)| format!("X({n}) = {x:.1}"))
                .collect();
            let _ = write!(
                out,
                "<li>USL peak: N* = {peak:.1} clients, {}</li>",
                around.join(", ")
            );
        }
    }
    if let Some(note) = &s.fit_note {
        let _ = write!(out, "<li>USL: {}</li>", esc(note));
    }
    if !r.sweep.slo.is_empty() {
        match s.best_within_slo {
            Some(i) => {
                let _ = write!(out, "<li>Highest throughput within the SLO: {}</li>", at(i));
            }
            None => out.push_str("<li>No step met the SLO.</li>"),
        }
    }
    out.push_str("</ul></section>");
    out
}

/// The steps' measured lengths: the range over the steps, in s.
pub(super) fn step_lengths(r: &SweepResult) -> String {
    let lengths = r
        .steps
        .iter()
        .map(|s| s.result.timings.bench_duration_us as f64 / 1e6);
    let (low, high) = lengths.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !low.is_finite() {
        "–".to_owned()
    } else if high - low < 0.0005 {
        format!("{low:.3} s measured per step")
    } else {
        format!("{low:.3} to {high:.3} s measured per step")
    }
}

/// Each step's findings, once per finding, with the steps it fired in.
fn findings(r: &SweepResult) -> String {
    format!("<section><h2>Findings</h2>{}</section>", step_findings(r))
}

/// The findings of `r`'s steps, each once, with the steps it fired in.
pub(super) fn step_findings(r: &SweepResult) -> String {
    let dim = &r.sweep.dimension;
    let repeats = r.sweep.repeat > 1;
    frame::findings_of_steps(
        r.steps.iter().map(|s| {
            // `1 client`, `2 clients`.
            let dim = if s.value == 1.0 {
                dim.strip_suffix('s').unwrap_or(dim)
            } else {
                dim
            };
            let step = if repeats {
                format!("{} {dim} (repeat {})", value(s.value), s.repeat)
            } else {
                format!("{} {dim}", value(s.value))
            };
            (step, &s.result)
        }),
        "step",
    )
}

/// The swept value's axis.
fn x_axis(r: &SweepResult) -> Axis {
    let values: Vec<f64> = r.summary.points.iter().map(|p| p.value).collect();
    Axis::swept(&values, &r.sweep.dimension)
}

/// Where a fit's curve is drawn on the swept value's axis `x`: 101 values
/// evenly spaced on it, from one (or the axis's start, when logarithmic).
pub(super) fn fit_samples(x: &Axis) -> Vec<f64> {
    let start = match x.scale {
        Scale::Log => x.min.max(1.0),
        Scale::Linear => 1.0,
    };
    along(x, start, x.max.max(start * 1.01), 100)
}

/// `count + 1` values from `from` to `to`, evenly spaced on `axis`.
fn along(axis: &Axis, from: f64, to: f64, count: u32) -> Vec<f64> {
    (0..=count)
        .map(|i| f64::from(i) / f64::from(count))
        .map(|t| match axis.scale {
            Scale::Log => from * (to / from).powf(t),
            Scale::Linear => from + (to - from) * t,
        })
        .collect()
}

fn series(points: &[Point], y: impl Fn(&Point) -> f64) -> Vec<(f64, f64)> {
    points.iter().map(|p| (p.value, y(p))).collect()
}

fn throughput(r: &SweepResult) -> String {
    let points = &r.summary.points;
    let x = x_axis(r);
    let fit = r.summary.fit.as_ref();
    let mut top = points.iter().map(|p| p.tps_max).fold(0.0, f64::max);
    if let Some(fit) = fit {
        top = top.max(
            points
                .iter()
                .map(|p| fit.throughput(p.value))
                .fold(0.0, f64::max),
        );
    }
    let x_end = x.max;
    let y_axis = Axis::linear(0.0, top * 1.05, "committed transactions per second");
    let samples = fit_samples(&x);
    let mut chart = Chart::new("Throughput against the swept value", x, y_axis.clone());
    chart.line(Line {
        class: "s0",
        label: "measured (mean)".to_owned(),
        points: series(points, |p| p.tps),
    });
    if let Some(fit) = fit {
        let curve: Vec<(f64, f64)> = samples
            .iter()
            .map(|&n| (n, fit.throughput(n).min(y_axis.max)))
            .collect();
        let label = if r.summary.fit_note.is_some() {
            "USL fit (does not fit: no answer)"
        } else {
            "USL fit"
        };
        chart.line(Line {
            class: "s1",
            label: label.to_owned(),
            points: curve,
        });
        // λN up to where it leaves the chart at its top.
        let ideal_end = (y_axis.max / fit.lambda).min(x_end);
        let ideal: Vec<(f64, f64)> = samples
            .iter()
            .map(|&n| n.min(ideal_end))
            .map(|n| (n, fit.lambda * n))
            .collect();
        chart.line(Line {
            class: "s2",
            label: "linear ideal (λN)".to_owned(),
            points: ideal,
        });
    }
    format!("<section><h2>Throughput</h2>{}</section>", chart.finish())
}

fn percentiles(r: &SweepResult) -> String {
    let points = &r.summary.points;
    let low = points
        .iter()
        .map(|p| p.p50_ms)
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let limits: Vec<&SloInfo> = r.sweep.slo.iter().filter(|s| s.limit_ms > 0.0).collect();
    let high = points
        .iter()
        .map(|p| p.p99_9_ms)
        .chain(limits.iter().map(|s| s.limit_ms))
        .fold(0.0, f64::max);
    let y = Axis::log(
        if low.is_finite() { low } else { 0.001 },
        high,
        "latency (ms)",
    );
    let mut chart = Chart::new("Latency percentiles against the swept value", x_axis(r), y);
    let lines: [(&'static str, &str, Figure); 4] = [
        ("s0", "p50", |p| p.p50_ms),
        ("s1", "p90", |p| p.p90_ms),
        ("s2", "p99", |p| p.p99_ms),
        ("s3", "p99.9", |p| p.p99_9_ms),
    ];
    for (class, label, y) in lines {
        chart.line(Line {
            class,
            label: label.to_owned(),
            points: series(points, |p| y(p).max(0.001)),
        });
    }
    for slo in limits {
        chart.limit(
            slo.limit_ms,
            &format!("SLO {} < {} ms", slo.name, value(slo.limit_ms)),
        );
    }
    format!("<section><h2>Latency</h2>{}</section>", chart.finish())
}

fn hockey_stick(r: &SweepResult) -> String {
    let points = &r.summary.points;
    let x_top = points.iter().map(|p| p.tps).fold(1.0, f64::max);
    let y_top = points.iter().map(|p| p.p99_ms).fold(0.0, f64::max);
    let mut chart = Chart::new(
        "p99 latency against throughput",
        Axis::linear(0.0, x_top * 1.05, "committed transactions per second"),
        Axis::linear(0.0, y_top * 1.05, "p99 latency (ms)"),
    );
    chart.line(Line {
        class: "s3",
        label: format!("p99, one point per value of {}", r.sweep.dimension),
        points: points.iter().map(|p| (p.tps, p.p99_ms)).collect(),
    });
    format!(
        "<section><h2>Latency against throughput</h2>{}</section>",
        chart.finish()
    )
}

/// Each step's throughput over time (the first repeat of each value), so
/// that a step that had not settled, or one disturbed midway, shows.
fn over_time(r: &SweepResult) -> String {
    let steps: Vec<_> = r.steps.iter().filter(|s| s.repeat == 1).collect();
    let lines: Vec<Vec<(f64, f64)>> = steps
        .iter()
        .map(|s| super::time::committed_per_second(&s.result))
        .collect();
    if lines.iter().all(Vec::is_empty) {
        return String::new();
    }
    let end = lines.iter().flatten().map(|p| p.0).fold(1.0, f64::max);
    let top = lines.iter().flatten().map(|p| p.1).fold(0.0, f64::max);
    let mut chart = Chart::new(
        "Each step's throughput over time",
        Axis::linear(0.0, end, "time since the step's start (s)"),
        Axis::linear(0.0, top * 1.05, "committed transactions per second"),
    );
    for (i, (step, points)) in steps.iter().zip(lines).enumerate() {
        chart.line(Line {
            class: super::svg::SERIES_CLASSES[i % super::svg::SERIES_CLASSES.len()],
            label: format!("{} {}", value(step.value), r.sweep.dimension),
            points,
        });
    }
    format!(
        "<section><h2>Each step over time</h2>{}</section>",
        chart.finish()
    )
}

fn table(r: &SweepResult) -> String {
    let mut out = String::from(
        "<section><h2>Steps</h2><div class=\"wide\"><table class=\"steps\"><tr><th>clients</th><th>threads</th><th>secs</th><th>rate</th><th>tps</th><th>± stddev</th><th>p50 ms</th><th>p90 ms</th><th>p99 ms</th><th>p99.9 ms</th><th>failed</th><th>L/N</th><th>client CPU</th><th>client CPU wait</th><th>backends on CPU</th><th>waiting</th><th>for the client</th><th>findings</th><th>SLO</th></tr>",
    );
    for p in &r.summary.points {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{}</td><td>{:.2}</td><td>{}</td><td>{}</td>{}<td>{}</td><td>{}</td></tr>",
            p.clients,
            p.threads,
            p.measured_s.map_or("–".to_owned(), |s| format!("{s:.2}")),
            p.rate.map_or("–".to_owned(), value),
            p.tps,
            p.tps_stddev.map_or("–".to_owned(), |s| format!("{s:.1}")),
            p.p50_ms,
            p.p90_ms,
            p.p99_ms,
            p.p99_9_ms,
            p.failed,
            p.little_ratio,
            p.client_cpu.map_or("–".to_owned(), percent),
            p.client_cpu_wait.map_or("–".to_owned(), percent),
            p.backends.map_or("<td>–</td><td>–</td><td>–</td>".to_owned(), |b| format!(
                "<td>{}</td><td>{}</td><td>{}</td>",
                percent(b.on_cpu),
                percent(b.waiting),
                percent(b.client + b.idle_in_transaction)
            )),
            if p.findings.is_empty() {
                "–".to_owned()
            } else {
                esc(&p.findings.join(", "))
            },
            match p.slo_met {
                Some(true) => "met",
                Some(false) => "failed",
                None => "–",
            }
        );
    }
    out.push_str(
        "</table></div><p>Secs: the shortest measured window of the repeats, from the last connection to the end. L/N: throughput × mean latency over the clients (Little's law). Client CPU and its wait: the busiest pgbolt thread's share of the step on a CPU and waiting for one. Backends: shares of the samples of pgbolt's server backends (see the diagnosis of a run); waiting for the client includes idle in a transaction. Findings: the diagnosis's warnings in the step.</p></section>",
    );
    out
}

fn percent(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}
