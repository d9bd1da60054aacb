//! The run over time: throughput with failures, retries and skips, and
//! latency percentiles per interval, from the result's series.
//!
//! Rates are per second of each interval. The series starts with the
//! measured window (in files of older versions, before the clients
//! connected) and its last interval usually ends with the run, part-way
//! through, so the first and last intervals' rates are taken over the
//! part of them that the measured window covered (the series itself keeps
//! whole intervals), each plotted at the middle of that part; a first or last
//! interval the run covered for less than a quarter of its width is left
//! off the charts, since its few transactions would draw a spike that
//! means nothing.

use std::fmt::Write as _;

use super::svg::{Axis, Chart, Line};
use crate::model::run::{IntervalResult, ReportError, RunResult};

/// The measured window in s from the start of the series: after the
/// connections, to the end. A generator's (or a merged fleet's) result
/// says where its window was, which also covers the wait for
/// `--start-at`; the others begin when the connections were made.
fn window(r: &RunResult) -> (f64, f64) {
    let since = |us: i64| (us - r.series.start_us) as f64 / 1e6;
    let windows = r
        .generators
        .iter()
        .map(|g| (g.window_start_us, g.window_end_us))
        .chain(
            r.generator
                .iter()
                .map(|g| (g.window_start_us, g.window_end_us)),
        );
    match windows.reduce(|(a0, a1), (b0, b1)| (a0.min(b0), a1.max(b1))) {
        Some((start, end)) if end > start && start >= r.series.start_us => {
            (since(start), since(end))
        }
        _ => {
            let begin = r.timings.initial_connection_us as f64 / 1e6;
            (begin, begin + r.timings.bench_duration_us as f64 / 1e6)
        }
    }
}

/// The end of the run in s from the start of the series.
fn run_end(r: &RunResult) -> f64 {
    window(r).1
}

/// The intervals to plot, each with where it is plotted (the middle of
/// the part the run covered, in s from the start of the series) and how
/// many seconds of it the run covered.
fn spans(r: &RunResult) -> Vec<(&IntervalResult, f64, f64)> {
    let width = r.series.width_us as f64 / 1e6;
    let (begin, end) = window(r);
    let count = r.series.intervals.len();
    r.series
        .intervals
        .iter()
        .enumerate()
        .filter_map(|(n, i)| {
            let from = i.offset_s.max(begin).min(i.offset_s + width);
            let ran = ((i.offset_s + width).min(end) - from).clamp(0.0, width);
            let edge = n == 0 || n + 1 == count;
            if edge && count > 1 && ran < width / 4.0 {
                return None;
            }
            let (from, ran) = if ran > 0.0 {
                (from, ran)
            } else {
                (i.offset_s, width)
            };
            Some((i, from + ran / 2.0, ran))
        })
        .collect()
}

pub(super) fn time_axis(r: &RunResult) -> Axis {
    let width = r.series.width_us as f64 / 1e6;
    let last = r
        .series
        .intervals
        .last()
        .map_or(width, |i| i.offset_s + width)
        .min(run_end(r).max(width));
    let mut axis = Axis::linear(0.0, last, "time since start (s)");
    if axis.max > 600.0 {
        let minutes = Axis::linear(0.0, last / 60.0, "time since start (min)");
        axis.ticks = minutes
            .ticks
            .iter()
            .map(|(v, label)| (v * 60.0, label.clone()))
            .collect();
        axis.max = minutes.max * 60.0;
        axis.title = minutes.title;
    }
    axis
}

fn empty_note(title: &str, note: &str) -> String {
    format!("<section><h2>{title}</h2><p class=\"note\">{note}</p></section>")
}

/// Committed transactions per second over time and, when there were
/// any, failed, retried and skipped transactions per second on a chart of
/// their own (on the same axis they would hug the bottom of the chart).
pub fn throughput(r: &RunResult) -> Result<Option<String>, ReportError> {
    let title = "Throughput over time";
    if r.series.intervals.is_empty() {
        return Ok(Some(empty_note(title, "No interval was recorded.")));
    }
    let spans = spans(r);
    let per_s = |f: Count| -> Vec<(f64, f64)> {
        spans
            .iter()
            .map(|&(i, x, ran)| (x, f(i) as f64 / ran))
            .collect()
    };
    let mut out = format!("<section><h2>{title}</h2>");
    let committed = Line {
        class: "s0",
        label: "committed per second".into(),
        points: per_s(|i| i.stats.counts.committed),
    };
    out.push_str(&chart(title, r, vec![committed]));
    let others: [(&'static str, &str, Count); 3] = [
        ("s3", "failed per second", |i| i.stats.counts.failures()),
        ("s1", "retried per second", |i| i.stats.counts.retried),
        ("s4", "skipped per second", |i| i.stats.counts.skipped),
    ];
    let lines: Vec<Line> = others
        .into_iter()
        .filter(|(_, _, f)| r.series.intervals.iter().any(|i| f(i) > 0))
        .map(|(class, label, f)| Line {
            class,
            label: label.into(),
            points: per_s(f),
        })
        .collect();
    if !lines.is_empty() {
        out.push_str(&chart(
            "Failed, retried and skipped transactions over time",
            r,
            lines,
        ));
    }
    let _ = write!(
        out,
        "<p class=\"note\">Per interval of {} s.{}</p></section>",
        super::svg::number(r.series.width_us as f64 / 1e6),
        if r.diagnosis.as_ref().is_some_and(|d| !d.events.is_empty()) {
            " Dashed lines mark the checkpoints, vacuums and analyzes the monitor saw (listed with the counters)."
        } else {
            ""
        }
    );
    Ok(Some(out))
}

/// Committed transactions per second of each interval, at seconds since
/// the run's start (after the connections), so that runs line up.
pub fn committed_per_second(r: &RunResult) -> Vec<(f64, f64)> {
    let begin = window(r).0;
    spans(r)
        .iter()
        .map(|&(i, x, ran)| (x - begin, i.stats.counts.committed as f64 / ran))
        .collect()
}

/// One count of an interval.
type Count = fn(&IntervalResult) -> u64;

/// A chart of rates over time.
fn chart(label: &str, r: &RunResult, lines: Vec<Line>) -> String {
    let top = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let axis = time_axis(r);
    let axis_max = axis.max;
    let mut chart = Chart::new(
        label,
        axis,
        Axis::linear(0.0, top, "transactions per second"),
    );
    for line in lines {
        chart.line(line);
    }
    super::diagnosis::mark_events(r, axis_max, &mut chart);
    chart.finish()
}

/// p50, p90, p99 and max latency per interval, on a logarithmic axis.
pub fn latency(r: &RunResult) -> Result<Option<String>, ReportError> {
    let title = "Latency over time";
    let spans = spans(r);
    let mut points: [Vec<(f64, f64)>; 4] = Default::default();
    for &(i, x, _) in &spans {
        if let Some(p) = i.latency_percentiles()? {
            for (k, v) in [p.p50, p.p90, p.p99, p.max].into_iter().enumerate() {
                points[k].push((x, v));
            }
        }
    }
    if points[0].is_empty() {
        let averages: Vec<(f64, f64)> = spans
            .iter()
            .filter_map(|&(i, x, _)| i.latency_average_ms.map(|v| (x, v)))
            .collect();
        if averages.is_empty() {
            return Ok(Some(empty_note(title, "No transaction committed.")));
        }
        let (lo, hi) = range(&averages);
        let mut chart = Chart::new(title, time_axis(r), Axis::log(lo, hi, "latency (ms)"));
        chart.line(Line {
            class: "s0",
            label: "average".into(),
            points: averages,
        });
        return Ok(Some(format!(
            "<section><h2>{title}</h2>{}<p class=\"note\">This result has no per-interval percentiles (schema version 1): averages only.</p></section>",
            chart.finish()
        )));
    }
    let all: Vec<(f64, f64)> = points.iter().flatten().copied().collect();
    let (lo, hi) = range(&all);
    let axis = time_axis(r);
    let axis_max = axis.max;
    let mut chart = Chart::new(title, axis, Axis::log(lo, hi, "latency (ms)"));
    super::diagnosis::mark_events(r, axis_max, &mut chart);
    let [p50, p90, p99, max] = points;
    for (class, label, points) in [
        ("s3", "max", max),
        ("s1", "p99", p99),
        ("s2", "p90", p90),
        ("s0", "p50", p50),
    ] {
        chart.line(Line {
            class,
            label: label.into(),
            points,
        });
    }
    Ok(Some(format!(
        "<section><h2>{title}</h2>{}<p class=\"note\">Percentiles of each interval's committed transactions, read from its histogram (at most 6.25% above the exact value; the max is exact).</p></section>",
        chart.finish()
    )))
}

/// Smallest positive and largest value of the points.
fn range(points: &[(f64, f64)]) -> (f64, f64) {
    let lo = points
        .iter()
        .map(|p| p.1)
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let hi = points.iter().map(|p| p.1).fold(0.0, f64::max);
    if lo.is_finite() {
        (lo, hi)
    } else {
        (0.001, 1.0)
    }
}
