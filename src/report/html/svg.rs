//! Inline SVG charts, written directly.
//!
//! A chart is a plot area with two axes (linear or logarithmic), grid
//! lines with their labels, and series drawn as one `<polyline>` each (or
//! one `<rect>` per bar), so a chart's element count depends on its axes
//! and series, never on the number of points: the page stays within its
//! element budget for any run length. Colours and line styles come from
//! the page's CSS classes (`s0`..`s4`), so they print and follow the
//! page's style; every label is escaped.

use std::fmt::Write as _;

use super::escape::esc;

/// Chart size in SVG user units (the page scales it to its width).
const WIDTH: f64 = 880.0;
const HEIGHT: f64 = 280.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 34.0;
const TOP: f64 = 14.0;
const BOTTOM: f64 = 42.0;

/// The most ticks an axis has, whatever its range.
const MAX_TICKS: usize = 20;
/// The most values [`Axis::log_at`] labels.
const MAX_VALUE_TICKS: usize = 12;

/// How values map onto an axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    Linear,
    /// Base 10; values must be positive.
    Log,
}

/// An axis: its range, scale, title and tick labels.
#[derive(Clone, Debug)]
pub struct Axis {
    pub min: f64,
    pub max: f64,
    pub scale: Scale,
    pub title: String,
    /// Ticks as (value, label); [`Axis::linear`] and [`Axis::log`] pick
    /// them, a caller may give its own.
    pub ticks: Vec<(f64, String)>,
}

impl Axis {
    /// A linear axis from 0 (or `min`) to a round value at or above `max`.
    pub fn linear(min: f64, max: f64, title: &str) -> Axis {
        let min = if min.is_finite() { min } else { 0.0 };
        let max = if max > min && max.is_finite() {
            max
        } else {
            min + min.abs().max(1.0)
        };
        let step = nice_step((max - min) / 5.0);
        // A value a hair above a round one (a run of 20.03 s) does not
        // add a whole step of empty chart: up to 2% of a step is clipped.
        let top = (max / step - 0.02).ceil().max(1.0) * step;
        let first = (min / step).floor();
        // Ticks are counted, not stepped to: a step lost in the rounding
        // of large values would never reach the top.
        let count = ((top / step - first).round() as usize).min(MAX_TICKS);
        let ticks: Vec<(f64, String)> = (0..=count)
            .map(|k| (first + k as f64) * step)
            .map(|v| (v, number(v)))
            .collect();
        Axis {
            min: ticks.first().map_or(min, |t| t.0),
            max: top,
            scale: Scale::Linear,
            title: title.to_owned(),
            ticks,
        }
    }

    /// A logarithmic axis from the decade at or below `min` to the one at
    /// or above `max` (1, 2, 5 of each decade labelled when few decades).
    pub fn log(min: f64, max: f64, title: &str) -> Axis {
        let min = if min > 0.0 { min } else { 1e-3 };
        let max = max.max(min * 1.0001);
        let low = min.log10().floor() as i32;
        let high = (max.log10().ceil() as i32).max(low + 1);
        let mut ticks = Vec::new();
        let steps: &[f64] = if high - low <= 3 {
            &[1.0, 2.0, 5.0]
        } else {
            &[1.0]
        };
        for e in low..=high {
            for m in steps {
                let v = m * 10f64.powi(e);
                if v <= 10f64.powi(high) * 1.0001 {
                    ticks.push((v, number(v)));
                }
            }
        }
        Axis {
            min: 10f64.powi(low),
            max: 10f64.powi(high),
            scale: Scale::Log,
            title: title.to_owned(),
            ticks,
        }
    }

    /// The axis of swept values: logarithmic, with a tick at each value,
    /// when they grow by a factor ([`geometric`]), else linear from 0.
    pub fn swept(values: &[f64], title: &str) -> Axis {
        if geometric(values) {
            return Axis::log_at(values, title);
        }
        let top = values.iter().copied().fold(1.0, f64::max);
        Axis::linear(0.0, top, title)
    }

    /// A logarithmic axis for values that grow by a factor (a sweep of
    /// `clients:1..64*2`): ticks at the values themselves (every second,
    /// fourth ... one when they are many), so they read 1, 2, 4, 8.
    pub fn log_at(values: &[f64], title: &str) -> Axis {
        let mut values: Vec<f64> = values.iter().copied().filter(|v| *v > 0.0).collect();
        values.sort_by(f64::total_cmp);
        values.dedup();
        let (Some(&low), Some(&high)) = (values.first(), values.last()) else {
            return Axis::log(1.0, 10.0, title);
        };
        let every = values.len().div_ceil(MAX_VALUE_TICKS).max(1);
        let ticks = values
            .iter()
            .enumerate()
            .filter(|(i, _)| i % every == 0 || *i + 1 == values.len())
            .map(|(_, v)| (*v, number(*v)))
            .collect();
        // A little room on either side, so the first and last points are
        // not drawn on the frame.
        let margin = (high / low).max(2.0).powf(0.04);
        Axis {
            min: low / margin,
            max: high * margin,
            scale: Scale::Log,
            title: title.to_owned(),
            ticks,
        }
    }

    /// A logarithmic axis of ratios (candidate over baseline) labelled as
    /// changes in percent: -90%, -50%, 0%, +100%, +900%. A change of -85%
    /// and one of +10,000% both stay readable on it.
    pub fn change_ratio(low: f64, high: f64, title: &str) -> Axis {
        let low = low.clamp(1e-4, 1.0 / 1.1);
        let high = high.clamp(1.1, 1e6);
        let (from, to) = (low.log10().floor() as i32, high.log10().ceil() as i32);
        let marks: &[f64] = if to - from <= 3 {
            &[1.0, 2.0, 5.0]
        } else {
            &[1.0]
        };
        // The ends go out to the nearest marks, so the data never meets
        // the frame.
        let all = (from..=to).flat_map(|e| marks.iter().map(move |m| m * 10f64.powi(e)));
        let low = all
            .clone()
            .filter(|v| *v <= low)
            .fold(10f64.powi(from), f64::max);
        let high = all.filter(|v| *v >= high).fold(10f64.powi(to), f64::min);
        let mut ticks = Vec::new();
        for e in from..=to {
            for m in marks {
                let v = m * 10f64.powi(e);
                if (low / 1.0001..=high * 1.0001).contains(&v) || v == 1.0 {
                    let change = (v - 1.0) * 100.0;
                    let sign = if change > 0.0 { "+" } else { "" };
                    ticks.push((v, format!("{sign}{}%", number(change))));
                }
            }
        }
        Axis {
            min: low,
            max: high,
            scale: Scale::Log,
            title: title.to_owned(),
            ticks,
        }
    }

    /// Where `v` falls between `from` (at `min`) and `to` (at `max`).
    fn place(&self, v: f64, from: f64, to: f64) -> f64 {
        let (v, lo, hi) = match self.scale {
            Scale::Linear => (v, self.min, self.max),
            Scale::Log => (v.max(self.min).log10(), self.min.log10(), self.max.log10()),
        };
        let t = if hi > lo { (v - lo) / (hi - lo) } else { 0.0 };
        from + t.clamp(0.0, 1.0) * (to - from)
    }
}

/// Whether ascending `values` grow by a factor rather than by a step: at
/// least three, all positive, spanning a factor of 4 or more, and their
/// ratios more even than their differences (1, 2, 4, 8 but not 10, 20,
/// 30, 40).
pub fn geometric(values: &[f64]) -> bool {
    if values.len() < 3 || values[0] <= 0.0 || values[values.len() - 1] < 4.0 * values[0] {
        return false;
    }
    let spread = |steps: Vec<f64>| {
        let mean = steps.iter().sum::<f64>() / steps.len() as f64;
        let var = steps.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / steps.len() as f64;
        if mean.abs() > 0.0 {
            var.sqrt() / mean.abs()
        } else {
            f64::INFINITY
        }
    };
    let differences = spread(values.windows(2).map(|w| w[1] - w[0]).collect());
    let ratios = spread(values.windows(2).map(|w| (w[1] / w[0]).ln()).collect());
    ratios < differences
}

/// Rows the markers' labels take.
const MARKER_ROWS: usize = 3;
/// Pixels between two rows of marker labels: more than the 13 px box of
/// an 11 px label, so that stacked labels do not touch.
const MARKER_ROW_HEIGHT: f64 = 14.0;

/// The width a label takes in the chart's units, at most: 11 px text, in
/// DejaVu Sans (what Chromium draws `system-ui` with on Debian) up to about
/// 7 px a character for words of wide letters ("vacuum" is 44 px), more
/// than the 6 px of an average character that two close labels were
/// measured with when they overlapped.
pub fn label_width(label: &str) -> f64 {
    label.chars().count() as f64 * 7.5
}

/// 1, 2 or 5 times a power of ten, at or above `raw`.
fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let magnitude = 10f64.powf(raw.log10().floor());
    let m = raw / magnitude;
    let nice = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

/// A tick label: at most 3 decimals, no trailing zeros, thousands as `k`.
pub fn number(v: f64) -> String {
    if v.abs() >= 10_000.0 && (v / 1000.0).fract() == 0.0 {
        return format!("{}k", v / 1000.0);
    }
    let text = format!("{v:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".to_owned()
    } else {
        text.to_owned()
    }
}

/// The series classes (colours) of the page's CSS, in the order a chart
/// of many series takes them; past ten they repeat.
pub const SERIES_CLASSES: [&str; 10] = ["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9"];

/// One series: a class (colour), a legend label and its points.
pub struct Line {
    pub class: &'static str,
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// A chart being drawn.
pub struct Chart {
    x: Axis,
    y: Axis,
    body: String,
    /// Vertical markers: where (in chart units) and their labels, laid
    /// out when the chart is finished.
    markers: Vec<(f64, String)>,
    legend: Vec<(&'static str, String)>,
    /// What the chart shows, for readers without sight of it.
    label: String,
}

impl Chart {
    pub fn new(label: &str, x: Axis, y: Axis) -> Chart {
        Chart {
            x,
            y,
            body: String::new(),
            markers: Vec::new(),
            legend: Vec::new(),
            label: label.to_owned(),
        }
    }

    fn px(&self, v: f64) -> f64 {
        self.x.place(v, LEFT, WIDTH - RIGHT)
    }

    fn py(&self, v: f64) -> f64 {
        self.y.place(v, HEIGHT - BOTTOM, TOP)
    }

    /// A polyline through `line.points` (markers too when they are few,
    /// so a series of one point still shows).
    pub fn line(&mut self, line: Line) {
        if line.points.is_empty() {
            return;
        }
        let mut pts = String::with_capacity(line.points.len() * 12);
        for &(x, y) in &line.points {
            // Whole units: a line of hundreds of points stays small, and a
            // unit is a thousandth of the chart's width.
            let _ = write!(pts, "{:.0},{:.0} ", self.px(x), self.py(y));
        }
        let _ = write!(
            self.body,
            "<polyline class=\"{}\" points=\"{}\"/>",
            line.class,
            pts.trim_end()
        );
        if line.points.len() <= 40 {
            for &(x, y) in &line.points {
                let _ = write!(
                    self.body,
                    "<circle class=\"{}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\"/>",
                    line.class,
                    self.px(x),
                    self.py(y)
                );
            }
        }
        self.legend.push((line.class, line.label));
    }

    /// A vertical stroke at each `x` from `low` to `high` (a spread),
    /// in the series' colour, with no legend entry of its own.
    pub fn whiskers(&mut self, class: &'static str, spans: &[(f64, f64, f64)]) {
        for &(x, low, high) in spans.iter().filter(|s| s.2 > s.1) {
            let px = self.px(x);
            let _ = write!(
                self.body,
                "<polyline class=\"{class}\" points=\"{px:.0},{:.0} {px:.0},{:.0}\"/>",
                self.py(low),
                self.py(high)
            );
        }
    }

    /// Bars from `x0` to `x1` of height `y` each.
    pub fn bars(&mut self, class: &'static str, label: &str, bars: &[(f64, f64, f64)]) {
        let base = self.py(self.y.min);
        for &(x0, x1, y) in bars {
            if y <= 0.0 {
                continue;
            }
            let (left, right, top) = (self.px(x0), self.px(x1), self.py(y));
            let _ = write!(
                self.body,
                "<rect class=\"{class}\" x=\"{left:.1}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{:.1}\"/>",
                (right - left - 1.0).max(0.5),
                (base - top).max(0.5)
            );
        }
        self.legend.push((class, label.to_owned()));
    }

    /// A vertical marker line at `x` with a label at its top (see
    /// [`Chart::finish`] for where labels go).
    pub fn marker(&mut self, x: f64, label: &str) {
        let px = self.px(x);
        self.markers.push((px, label.to_owned()));
    }

    /// A horizontal dashed line at `y` (a limit) with its label at the
    /// right end, above the line.
    pub fn limit(&mut self, y: f64, label: &str) {
        let py = self.py(y);
        let _ = write!(
            self.body,
            "<line class=\"limit\" x1=\"{LEFT}\" y1=\"{py:.1}\" x2=\"{:.1}\" y2=\"{py:.1}\"/><text class=\"limit\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            WIDTH - RIGHT,
            WIDTH - RIGHT - 3.0,
            py - 4.0,
            esc(label)
        );
    }

    /// The markers' lines and labels. Each label goes on the first of
    /// [`MARKER_ROWS`] rows from the top where it clears the labels
    /// already there; a label that fits no row is left off (its line
    /// stays), so labels never overlap, however close the markers.
    fn draw_markers(&self, out: &mut String) {
        let mut markers: Vec<&(f64, String)> = self.markers.iter().collect();
        markers.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut row_ends = [f64::NEG_INFINITY; MARKER_ROWS];
        for (px, label) in markers {
            let _ = write!(
                out,
                "<line class=\"mark\" x1=\"{px:.1}\" y1=\"{TOP}\" x2=\"{px:.1}\" y2=\"{:.1}\"/>",
                HEIGHT - BOTTOM
            );
            if label.is_empty() {
                continue;
            }
            let width = label_width(label);
            // Near the right edge the label goes to the left of its line.
            let (start, anchor) = if px + 3.0 + width > WIDTH {
                (px - 3.0 - width, " end")
            } else {
                (px + 3.0, "")
            };
            let Some(row) = row_ends.iter().position(|end| start >= end + 4.0) else {
                continue;
            };
            row_ends[row] = start + width;
            let x = if anchor.is_empty() {
                px + 3.0
            } else {
                px - 3.0
            };
            let _ = write!(
                out,
                "<text class=\"mark{anchor}\" x=\"{x:.1}\" y=\"{:.1}\">{}</text>",
                TOP + 10.0 + MARKER_ROW_HEIGHT * row as f64,
                esc(label)
            );
        }
    }

    /// The finished `<figure>`: the SVG and its legend.
    pub fn finish(self) -> String {
        let mut out = String::with_capacity(self.body.len() + 2048);
        let _ = write!(
            out,
            "<figure><svg viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\" aria-label=\"{}\">",
            esc(&self.label)
        );
        self.grid(&mut out);
        out.push_str(&self.body);
        self.draw_markers(&mut out);
        out.push_str("</svg>");
        if self.legend.len() > 1 || self.legend.iter().any(|(_, l)| !l.is_empty()) {
            out.push_str("<figcaption>");
            for (class, label) in &self.legend {
                let _ = write!(out, "<span class=\"key {class}\"></span>{} ", esc(label));
            }
            out.push_str("</figcaption>");
        }
        out.push_str("</figure>");
        out
    }

    /// Grid lines, tick labels and axis titles, in one path per axis. The
    /// x ticks' labels sit low enough that the lowest y tick's label
    /// (usually `0`) never touches the first of them at the corner.
    fn grid(&self, out: &mut String) {
        let (left, right, top, bottom) = (LEFT, WIDTH - RIGHT, TOP, HEIGHT - BOTTOM);
        let mut path = String::new();
        for (v, _) in &self.y.ticks {
            let y = self.py(*v);
            let _ = write!(path, "M{left:.1},{y:.1}H{right:.1}");
        }
        for (v, _) in &self.x.ticks {
            let x = self.px(*v);
            let _ = write!(path, "M{x:.1},{top:.1}V{bottom:.1}");
        }
        let _ = write!(out, "<path class=\"grid\" d=\"{path}\"/>");
        let _ = write!(
            out,
            "<path class=\"axis\" d=\"M{left:.1},{top:.1}V{bottom:.1}H{right:.1}\"/>"
        );
        for (v, label) in &self.y.ticks {
            let _ = write!(
                out,
                "<text class=\"ty\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                left - 5.0,
                self.py(*v) + 3.5,
                esc(label)
            );
        }
        for (v, label) in &self.x.ticks {
            let _ = write!(
                out,
                "<text class=\"tx\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                self.px(*v),
                bottom + 18.0,
                esc(label)
            );
        }
        let _ = write!(
            out,
            "<text class=\"at\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            (left + right) / 2.0,
            HEIGHT - 6.0,
            esc(&self.x.title)
        );
        let _ = write!(
            out,
            "<text class=\"at\" transform=\"translate(14 {:.1}) rotate(-90)\">{}</text>",
            (top + bottom) / 2.0,
            esc(&self.y.title)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_have_round_ticks() {
        let a = Axis::linear(0.0, 937.0, "tps");
        assert_eq!(a.max, 1000.0);
        assert_eq!(a.ticks.len(), 6);
        let l = Axis::log(0.35, 47.0, "ms");
        assert_eq!((l.min, l.max), (0.1, 100.0));
        assert_eq!(l.ticks.first().map(|t| t.1.as_str()), Some("0.1"));
        assert_eq!(number(20_000.0), "20k");
        assert_eq!(number(0.25), "0.25");
    }

    /// Ranges no result of pgbolt has still give a few ticks, at once.
    #[test]
    fn any_range_gives_few_ticks() {
        for (min, max) in [
            (1e20, 1e20 + 1.0),
            (0.0, f64::INFINITY),
            (f64::NAN, 1.0),
            (0.0, 1e300),
        ] {
            let a = Axis::linear(min, max, "x");
            assert!(
                a.ticks.len() >= 2 && a.ticks.len() <= MAX_TICKS + 1,
                "{min} {max}: {:?}",
                a.ticks
            );
            assert!(a.min.is_finite() && a.max.is_finite(), "{min} {max}");
        }
    }

    /// Markers close together: each label drawn clears the others on its
    /// row, and those that fit nowhere are left off.
    #[test]
    fn marker_labels_never_overlap() {
        let mut c = Chart::new(
            "events",
            Axis::linear(0.0, 100.0, "s"),
            Axis::linear(0.0, 1.0, "y"),
        );
        for i in 0..12 {
            c.marker(40.0 + f64::from(i) * 0.5, "autovacuum");
        }
        c.marker(99.9, "checkpoint");
        let svg = c.finish();
        let re =
            regex::Regex::new(r#"<text class="mark( end)?" x="([0-9.]+)" y="([0-9.]+)">([a-z]+)<"#)
                .expect("regex");
        let mut boxes: Vec<(f64, f64, f64)> = Vec::new();
        for m in re.captures_iter(&svg) {
            let x: f64 = m[2].parse().expect("x");
            let w = label_width(&m[4]);
            let left = if m.get(1).is_some() { x - w } else { x };
            boxes.push((left, left + w, m[3].parse().expect("y")));
        }
        assert_eq!(boxes.len(), MARKER_ROWS + 1, "{svg}");
        for (i, a) in boxes.iter().enumerate() {
            assert!(a.0 >= 0.0 && a.1 <= WIDTH, "{a:?}");
            for b in &boxes[i + 1..] {
                assert!(a.2 != b.2 || a.1 <= b.0 || b.1 <= a.0, "{a:?} {b:?}");
            }
        }
        assert_eq!(svg.matches("<line class=\"mark\"").count(), 13);
    }

    #[test]
    fn values_that_grow_by_a_factor_are_geometric() {
        for (values, wanted) in [
            (&[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0][..], true),
            (&[1.0, 10.0, 100.0], true),
            (&[2.0, 4.0, 8.0, 12.0, 16.0], false),
            (&[10.0, 20.0, 30.0, 40.0, 50.0], false),
            (&[1.0, 2.0], false),
            (&[8.0, 16.0, 24.0], false),
            (&[0.0, 4.0, 8.0], false),
        ] {
            assert_eq!(geometric(values), wanted, "{values:?}");
        }
    }

    #[test]
    fn labels_are_escaped() {
        let mut c = Chart::new(
            "<b>",
            Axis::linear(0.0, 1.0, "<x>"),
            Axis::linear(0.0, 1.0, "y"),
        );
        c.line(Line {
            class: "s0",
            label: "<script>".into(),
            points: vec![(0.0, 0.0), (1.0, 1.0)],
        });
        let svg = c.finish();
        assert!(!svg.contains("<script>") && !svg.contains("<b>") && !svg.contains("<x>"));
        assert!(svg.contains("&lt;script&gt;"));
    }
}
