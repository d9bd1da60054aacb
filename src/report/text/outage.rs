//! `--reconnect`: the outage lines, after pgbench's report and pgbolt's
//! percentiles, so that pgbench's lines stay as pgbench prints them.

use std::fmt::Write as _;

use crate::model::failover::{ClientOutage, Outage};
use crate::stats::cfmt::fixed;

/// Clients listed one per line; the others are in the JSON result.
const CLIENT_LINES: usize = 32;

/// The outage lines of a run under `--reconnect`.
pub fn render_text(o: &Outage) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "outage: {} clients lost their connection, {} came back",
        o.clients_hit, o.clients_back
    );
    match (o.start_us, o.end_us) {
        (Some(start), Some(end)) => {
            let _ = writeln!(
                out,
                "; {} s from the first error ({}) to the last client's first commit after ({})",
                seconds(end - start),
                clock(start),
                clock(end)
            );
        }
        (Some(start), None) => {
            let _ = writeln!(out, "; first error at {}", clock(start));
        }
        _ => out.push('\n'),
    }
    if let Some(gap) = &o.server_gap {
        let _ = writeln!(
            out,
            "server-side write gap (pgbench_history.mtime): {} s ({} to {})",
            seconds(gap.duration_us()),
            clock(gap.last_before_us),
            clock(gap.first_after_us)
        );
    }
    if let (Some(p50), Some(p99), Some(max)) =
        (o.downtime_p50_us, o.downtime_p99_us, o.downtime_max_us)
    {
        let _ = writeln!(
            out,
            "downtime per client (first error to first commit after): p50 = {} s, p99 = {} s, max = {} s",
            seconds(p50),
            seconds(p99),
            seconds(max)
        );
    }
    let f = &o.failures;
    let _ = write!(
        out,
        "failed transactions by class: {} not committed, {} in doubt, {} refused read-only",
        f.not_committed, f.in_doubt, f.read_only
    );
    for (state, n) in &f.by_sqlstate {
        let _ = write!(out, ", {n} SQLSTATE {state}");
    }
    out.push('\n');
    if let Some(check) = &o.commit_check {
        let _ = writeln!(
            out,
            "commits checked ({}): {} found after the run, {} acknowledged: {} acknowledged lost, {} of {} in doubt committed",
            check.counted_by,
            check.found(),
            check.acknowledged,
            check.lost(),
            check.in_doubt_committed(),
            check.in_doubt
        );
    }
    let hit: Vec<&ClientOutage> = o
        .clients
        .iter()
        .filter(|c| c.first_error_us.is_some())
        .collect();
    for c in hit.iter().take(CLIENT_LINES) {
        client_line(&mut out, c);
    }
    if hit.len() > CLIENT_LINES {
        let _ = writeln!(
            out,
            "({} more clients in the JSON result)",
            hit.len() - CLIENT_LINES
        );
    }
    out
}

fn client_line(out: &mut String, c: &ClientOutage) {
    let at = |t: Option<i64>| t.map_or_else(|| "-".to_owned(), clock);
    let _ = write!(
        out,
        "client {}: {} -> {}, last commit {}, error {}, connected {}, first commit {}",
        c.client,
        or_dash(&c.host_before),
        or_dash(&c.host_after),
        at(c.last_commit_before_us),
        at(c.first_error_us),
        at(c.reconnected_us),
        at(c.first_commit_after_us)
    );
    if let Some(down) = c.downtime_us() {
        let _ = write!(out, ", down {} s", seconds(down));
    }
    if c.outages > 1 {
        let _ = write!(out, " ({} outages)", c.outages);
    }
    if c.gave_up {
        out.push_str(" (gave up)");
    }
    out.push('\n');
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() {
        "-"
    } else {
        s
    }
}

fn seconds(us: i64) -> String {
    fixed(us as f64 / 1e6, 3)
}

/// `HH:MM:SS.mmm` UTC.
fn clock(us: i64) -> String {
    let ms = us.div_euclid(1_000);
    let day_ms = ms.rem_euclid(86_400_000);
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        day_ms / 3_600_000,
        day_ms / 60_000 % 60,
        day_ms / 1_000 % 60,
        day_ms % 1_000
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::failover::FailureCounts;

    #[test]
    fn the_lines_name_each_figure() {
        let base = 1_700_000_000_000_000;
        let client = ClientOutage {
            client: 3,
            last_commit_before_us: Some(base),
            first_error_us: Some(base + 4_000),
            reconnected_us: Some(base + 1_500_000),
            first_commit_after_us: Some(base + 1_504_000),
            host_before: "a:5432".into(),
            host_after: "b:5433".into(),
            outages: 1,
            gave_up: false,
            failures: FailureCounts {
                in_doubt: 1,
                ..FailureCounts::default()
            },
        };
        let text = render_text(&Outage::from_clients(vec![client]));
        assert!(text.contains("outage: 1 clients lost their connection, 1 came back; 1.500 s from the first error (22:13:20.004)"), "{text}");
        assert!(text.contains("p50 = 1.500 s"), "{text}");
        assert!(
            text.contains("0 not committed, 1 in doubt, 0 refused read-only\n"),
            "{text}"
        );
        assert!(
            text.contains("client 3: a:5432 -> b:5433, last commit 22:13:20.000"),
            "{text}"
        );
    }
}
