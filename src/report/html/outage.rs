//! `--reconnect`: the outage section, a timeline with one line per client
//! and the figures of the run.
//!
//! Each client's line shows its first outage in three parts: from its
//! last commit to its first error (it had not noticed yet), from the
//! error to its new connection (no server to talk to), and from there to
//! its first commit after. The server's write gap, when it was read, is
//! a band behind every line, so the clients' view and the server's can
//! be compared at a glance. The timeline is drawn as plain SVG rects:
//! a line per client, at most [`CLIENT_ROWS`] of them.

use std::fmt::Write as _;

use super::escape::esc;
use crate::model::failover::{ClientOutage, Outage};
use crate::model::run::{ReportError, RunResult};

/// Clients drawn; the others are in the JSON result.
const CLIENT_ROWS: usize = 64;
const LEFT: f64 = 90.0;
const WIDTH: f64 = 860.0;
const ROW: f64 = 16.0;
const TOP: f64 = 24.0;
const BOTTOM: f64 = 36.0;

const NOT_NOTICED: &str = "#b0b7c3";
const NO_CONNECTION: &str = "#d64545";
const NOT_COMMITTED: &str = "#f0a030";
const SERVER_GAP: &str = "#dfe8f7";

/// The outage section, for a run under `--reconnect`.
pub fn section(r: &RunResult) -> Result<Option<String>, ReportError> {
    let Some(o) = &r.outage else {
        return Ok(None);
    };
    let mut out = String::from("<section><h2>Outage</h2>");
    figures(&mut out, o);
    let hit: Vec<&ClientOutage> = o
        .clients
        .iter()
        .filter(|c| c.first_error_us.is_some())
        .take(CLIENT_ROWS)
        .collect();
    if !hit.is_empty() {
        timeline(&mut out, o, &hit);
    }
    out.push_str("</section>");
    Ok(Some(out))
}

fn seconds(us: i64) -> String {
    format!("{:.3} s", us as f64 / 1e6)
}

fn figures(out: &mut String, o: &Outage) {
    out.push_str("<dl class=\"meta\">");
    let mut item = |name: &str, value: String| {
        let _ = write!(out, "<dt>{name}</dt><dd>{value}</dd>");
    };
    item(
        "Clients",
        format!(
            "{} lost their connection, {} came back",
            o.clients_hit, o.clients_back
        ),
    );
    if let Some(d) = o.duration_us() {
        item(
            "Outage of the run",
            format!(
                "{} (first error of any client to the last client's first commit after)",
                seconds(d)
            ),
        );
    }
    if let Some(gap) = &o.server_gap {
        item(
            "Server-side write gap",
            format!(
                "{} (pgbench_history.mtime, the server's clock)",
                seconds(gap.duration_us())
            ),
        );
    }
    if let (Some(p50), Some(p99), Some(max)) =
        (o.downtime_p50_us, o.downtime_p99_us, o.downtime_max_us)
    {
        item(
            "Downtime per client",
            format!(
                "p50 {}, p99 {}, max {}",
                seconds(p50),
                seconds(p99),
                seconds(max)
            ),
        );
    }
    let f = &o.failures;
    let mut classes = format!(
        "{} not committed, {} in doubt, {} refused read-only",
        f.not_committed, f.in_doubt, f.read_only
    );
    for (state, n) in &f.by_sqlstate {
        let _ = write!(classes, ", {n} SQLSTATE {}", esc(state));
    }
    item("Failed transactions", classes);
    if let Some(c) = &o.commit_check {
        item(
            "Acknowledged commits",
            format!(
                "{} acknowledged, {} found after the run ({}): {} lost, {} of {} in doubt committed",
                c.acknowledged,
                c.found(),
                esc(&c.counted_by),
                c.lost(),
                c.in_doubt_committed(),
                c.in_doubt
            ),
        );
    }
    out.push_str("</dl>");
}

/// The time span drawn, µs: from the earliest moment shown to the
/// latest, with a margin.
fn span(o: &Outage, hit: &[&ClientOutage]) -> (i64, i64) {
    let moments = hit.iter().flat_map(|c| {
        [
            c.last_commit_before_us,
            c.first_error_us,
            c.reconnected_us,
            c.first_commit_after_us,
        ]
    });
    let gap = o
        .server_gap
        .iter()
        .flat_map(|g| [Some(g.last_before_us), Some(g.first_after_us)]);
    let all: Vec<i64> = moments.chain(gap).flatten().collect();
    let low = all.iter().copied().min().unwrap_or(0);
    let high = all.iter().copied().max().unwrap_or(0).max(low + 1_000);
    let margin = (high - low) / 20;
    (low - margin, high + margin)
}

fn timeline(out: &mut String, o: &Outage, hit: &[&ClientOutage]) {
    let (low, high) = span(o, hit);
    let height = TOP + ROW * hit.len() as f64 + BOTTOM;
    let x = |us: i64| LEFT + (us - low) as f64 / (high - low) as f64 * (WIDTH - LEFT - 10.0);
    let _ = write!(
        out,
        "<svg class=\"outage\" viewBox=\"0 0 {WIDTH} {height}\" width=\"{WIDTH}\" height=\"{height}\" role=\"img\" aria-label=\"Outage timeline\">"
    );
    if let Some(g) = &o.server_gap {
        let _ = write!(
            out,
            "<rect x=\"{:.1}\" y=\"{TOP}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{SERVER_GAP}\"/>",
            x(g.last_before_us),
            (x(g.first_after_us) - x(g.last_before_us)).max(1.0),
            ROW * hit.len() as f64
        );
    }
    for (row, c) in hit.iter().enumerate() {
        let y = TOP + ROW * row as f64;
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"11\">client {}</text>",
            LEFT - 6.0,
            y + ROW - 4.0,
            c.client
        );
        let parts = [
            (c.last_commit_before_us, c.first_error_us, NOT_NOTICED),
            (c.first_error_us, c.reconnected_us, NO_CONNECTION),
            (c.reconnected_us, c.first_commit_after_us, NOT_COMMITTED),
        ];
        for (from, to, colour) in parts {
            let (Some(from), Some(to)) = (from, to) else {
                continue;
            };
            let _ = write!(
                out,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{colour}\"><title>client {}: {}</title></rect>",
                x(from),
                y + 3.0,
                (x(to) - x(from)).max(1.0),
                ROW - 6.0,
                c.client,
                seconds(to - from)
            );
        }
    }
    let zero = o.start_us.unwrap_or(low);
    axis(out, (low, high, zero), TOP + ROW * hit.len() as f64, &x);
    out.push_str("</svg>");
    let _ = write!(
        out,
        "<p class=\"note\">Per client: <span style=\"color:{NOT_NOTICED}\">&#9632;</span> last commit to first error, \
         <span style=\"color:{NO_CONNECTION}\">&#9632;</span> first error to a new connection, \
         <span style=\"color:{NOT_COMMITTED}\">&#9632;</span> new connection to first commit after{}. \
         Seconds from the first error.</p>",
        if o.server_gap.is_some() {
            "; <span style=\"color:#9db4dd\">&#9632;</span> the server's write gap behind them"
        } else {
            ""
        }
    );
}

/// Ticks in seconds from the first error.
fn axis(out: &mut String, (low, high, zero): (i64, i64, i64), y: f64, x: &dyn Fn(i64) -> f64) {
    let _ = write!(
        out,
        "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#666\"/>",
        WIDTH - 10.0
    );
    let range_s = (high - low) as f64 / 1e6;
    // 1, 2 or 5 times a power of ten: at most 10 ticks whatever the span.
    let magnitude = 10f64.powf((range_s / 8.0).log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|s| range_s / s <= 10.0)
        .unwrap_or(10.0 * magnitude);
    let first = ((low - zero) as f64 / 1e6 / step).ceil() as i64;
    let last = ((high - zero) as f64 / 1e6 / step).floor() as i64;
    for k in first..=last {
        let t = zero + (k as f64 * step * 1e6) as i64;
        let px = x(t);
        let _ = write!(
            out,
            "<line x1=\"{px:.1}\" y1=\"{y:.1}\" x2=\"{px:.1}\" y2=\"{:.1}\" stroke=\"#666\"/><text x=\"{px:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"11\">{}</text>",
            y + 4.0,
            y + 16.0,
            super::svg::number(k as f64 * step)
        );
    }
    let _ = write!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"11\">seconds</text>",
        (LEFT + WIDTH) / 2.0,
        y + 30.0
    );
}

#[cfg(test)]
mod tests {
    use super::section;
    use crate::model::failover::{ClientOutage, Outage};

    /// One line per client hit, at most 10 ticks however long the
    /// outage, nothing without `--reconnect`.
    #[test]
    fn the_timeline_has_a_line_per_client_and_few_ticks() {
        let mut r = crate::compare::tests::run(&[100.0], &[(1000, 10)]);
        assert_eq!(section(&r).expect("section"), None);
        let client = |id: u32, down_us: i64| ClientOutage {
            client: id,
            last_commit_before_us: Some(1_000),
            first_error_us: Some(2_000),
            reconnected_us: Some(2_000 + down_us / 2),
            first_commit_after_us: Some(2_000 + down_us),
            ..ClientOutage::default()
        };
        for down_us in [3_000, 1_800_000, 50 * 366 * 24 * 3_600 * 1_000_000] {
            r.outage = Some(Outage::from_clients(vec![
                client(0, down_us),
                client(1, down_us / 2),
                ClientOutage::default(),
            ]));
            let html = section(&r).expect("section").expect("an outage section");
            assert_eq!(
                html.matches("font-size=\"11\">client ").count(),
                2,
                "{html}"
            );
            let ticks = html
                .matches("text-anchor=\"middle\" font-size=\"11\">")
                .count()
                - 1;
            assert!((2..=11).contains(&ticks), "{ticks} ticks for {down_us} us");
        }
    }
}
