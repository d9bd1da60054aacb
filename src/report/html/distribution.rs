//! The latency distribution of the whole run: a histogram on logarithmic
//! buckets, and the percentile spectrum.
//!
//! Both come from the result's latency histogram (HdrHistogram, 0.1%
//! precision). The histogram regroups it into 10 buckets per decade, so
//! a distribution spanning microseconds to seconds shows its shape and its
//! tail on one axis. The spectrum plots latency against percentile on a
//! 1/(1-p) axis, as HdrHistogram's plots do, so p99, p99.9 and p99.99 are
//! equally far apart and the tail is as visible as the median.

use std::fmt::Write as _;

use super::svg::{Axis, Chart, Line};
use crate::model::run::{ReportError, RunResult};
use crate::stats::LatencyHistogram;

/// Buckets per decade of the histogram.
const PER_DECADE: f64 = 10.0;

/// Points of the spectrum: p = 1 - 10^(-k/10) for k = 0..=50, up to
/// p99.999.
const SPECTRUM: [f64; 51] = {
    let mut q = [0.0; 51];
    let mut k = 1;
    // 10^(-k/10) by repeated division; exact enough for plotting.
    let step = 1.258_925_411_794_167_2; // 10^(1/10)
    let mut tail = 1.0;
    while k < 51 {
        tail /= step;
        q[k] = 1.0 - tail;
        k += 1;
    }
    q
};

fn decoded(r: &RunResult) -> Result<Option<LatencyHistogram>, ReportError> {
    if r.latency.stats.count == 0 {
        return Ok(None);
    }
    let h = r.latency.decode_histogram()?;
    Ok((!h.is_empty()).then_some(h))
}

fn none(title: &str) -> Option<String> {
    Some(format!(
        "<section><h2>{title}</h2><p class=\"note\">No transaction committed.</p></section>"
    ))
}

/// A logarithmic bucket: low edge, high edge (ms) and share (%).
pub type Bucket = (f64, f64, f64);

/// The share (%) of committed transactions in each logarithmic bucket, as
/// (low edge, high edge, share) with edges in ms; `None` when nothing
/// committed.
pub fn log_buckets(r: &RunResult) -> Result<Option<Vec<Bucket>>, ReportError> {
    let Some(h) = decoded(r)? else {
        return Ok(None);
    };
    let total = h.len() as f64;
    let mut bins: Vec<(i64, u64)> = Vec::new();
    for (value, n) in h.buckets() {
        let k = ((value.max(1) as f64).log10() * PER_DECADE + 1e-9).floor() as i64;
        match bins.last_mut() {
            Some((last, count)) if *last == k => *count += n,
            _ => bins.push((k, n)),
        }
    }
    let edge = |k: i64| 10f64.powf(k as f64 / PER_DECADE) / 1000.0;
    Ok(Some(
        bins.iter()
            .map(|&(k, n)| (edge(k), edge(k + 1), 100.0 * n as f64 / total))
            .collect(),
    ))
}

/// The share of committed transactions in each logarithmic bucket.
pub fn histogram(r: &RunResult) -> Result<Option<String>, ReportError> {
    let title = "Latency distribution";
    let Some(bars) = log_buckets(r)? else {
        return Ok(none(title));
    };
    let lo = bars.first().map_or(0.001, |b| b.0);
    let hi = bars.last().map_or(1.0, |b| b.1);
    let top = bars.iter().map(|b| b.2).fold(0.0, f64::max);
    let mut chart = Chart::new(
        title,
        Axis::log(lo, hi, "latency (ms), 10 buckets per decade"),
        Axis::linear(0.0, top, "share of transactions (%)"),
    );
    chart.bars("s0", "", &bars);
    if let Some(p) = &r.latency.percentiles {
        chart.marker(p.p50, "p50");
        chart.marker(p.p99, "p99");
    }
    Ok(Some(format!(
        "<section><h2>{title}</h2>{}<p class=\"note\">Latency of the {} committed transactions.</p></section>",
        chart.finish(),
        r.latency.stats.count
    )))
}

/// Latency (ms) at each percentile up to p99.999, as (1/(1-p), latency);
/// `None` when nothing committed.
pub fn spectrum_points(r: &RunResult) -> Result<Option<Vec<(f64, f64)>>, ReportError> {
    let Some(h) = decoded(r)? else {
        return Ok(None);
    };
    let (values, _) = h.quantiles(SPECTRUM);
    let max_ms = r.latency.stats.max as f64 / 1000.0;
    Ok(Some(
        SPECTRUM
            .iter()
            .zip(values)
            .map(|(q, v)| (1.0 / (1.0 - q), (v as f64 / 1000.0).min(max_ms)))
            .collect(),
    ))
}

/// The 1/(1-p) axis of a percentile spectrum, labelled in percentiles.
pub fn spectrum_axis() -> Axis {
    let mut x = Axis::log(1.0, 100_000.0, "percentile");
    x.ticks = ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"]
        .iter()
        .enumerate()
        .map(|(e, label)| (10f64.powi(e as i32), (*label).to_owned()))
        .collect();
    x
}

/// Latency at each percentile up to p99.999, on a 1/(1-p) axis.
pub fn spectrum(r: &RunResult) -> Result<Option<String>, ReportError> {
    let title = "Percentile spectrum";
    let Some(points) = spectrum_points(r)? else {
        return Ok(none(title));
    };
    let max_ms = r.latency.stats.max as f64 / 1000.0;
    let mut chart = Chart::new(
        title,
        spectrum_axis(),
        Axis::linear(0.0, max_ms, "latency (ms)"),
    );
    chart.line(Line {
        class: "s0",
        label: "latency at percentile".into(),
        points,
    });
    let mut rows = String::new();
    if let Some(p) = &r.latency.percentiles {
        for v in [p.p50, p.p90, p.p99, p.p99_9, p.p99_99, p.max] {
            let _ = write!(rows, "<td>{v:.3}</td>");
        }
    }
    Ok(Some(format!(
        "<section><h2>{title}</h2>{}<table><tr><th>ms</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>p99.99</th><th>max</th></tr><tr><td>latency</td>{rows}</tr></table></section>",
        chart.finish()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spectrum_reaches_p99_999() {
        assert_eq!(SPECTRUM[0], 0.0);
        assert!((SPECTRUM[10] - 0.9).abs() < 1e-12);
        assert!((SPECTRUM[50] - 0.99999).abs() < 1e-12);
    }
}
