//! The text report: pgbench 18's final report line for line, then pgbolt's
//! percentile lines and the outage under `--reconnect` (left out with
//! `pgbench_output`).

use std::fmt::Write as _;

use crate::model::run::{Counts, Distribution, Percentiles, RunLimit, RunResult, ScriptResult};
use crate::stats::cfmt::fixed;

/// Renders the full text report: pgbench's lines, then (unless
/// `pgbench_output`) pgbolt's percentile lines.
pub fn render_text(result: &RunResult, pgbench_output: bool) -> String {
    let mut out = render_pgbench(result);
    if !pgbench_output {
        out.push_str(&render_percentiles(result));
        if let Some(outage) = &result.outage {
            out.push_str(&super::outage::render_text(outage));
        }
    }
    out
}

/// pgbench 18's `printResults` output.
pub fn render_pgbench(r: &RunResult) -> String {
    let mut out = String::with_capacity(2048);
    header_lines(&mut out, r);
    let c = &r.counts;
    if c.total == 0 {
        return out;
    }
    outcome_lines(&mut out, r, c, "");
    latency_lines(&mut out, r, c);
    rate_lines(&mut out, r, c);
    if r.options.per_script_stats() || r.options.report_per_command {
        for (i, s) in r.scripts.iter().enumerate() {
            script_section(&mut out, r, i, s);
        }
    }
    out
}

/// How the run was set up, and how many transactions it processed.
fn header_lines(out: &mut String, r: &RunResult) {
    let o = &r.options;
    let kind = match o.scripts.as_slice() {
        [one] => one.name.as_str(),
        _ => "multiple scripts",
    };
    line(out, format_args!("transaction type: {kind}"));
    line(out, format_args!("scaling factor: {}", o.scale));
    if let Some(p) = &o.partitioning {
        line(out, format_args!("partition method: {}", p.method));
        line(out, format_args!("partitions: {}", p.partitions));
    }
    line(out, format_args!("query mode: {}", o.query_mode));
    line(out, format_args!("number of clients: {}", o.clients));
    line(out, format_args!("number of threads: {}", o.threads));
    if o.max_tries != 0 {
        line(
            out,
            format_args!("maximum number of tries: {}", o.max_tries),
        );
    }
    let committed = r.counts.counters.committed;
    match o.limit {
        RunLimit::TransactionsPerClient(n) => {
            line(out, format_args!("number of transactions per client: {n}"));
            let expected = u128::from(n) * u128::from(o.clients);
            line(
                out,
                format_args!("number of transactions actually processed: {committed}/{expected}"),
            );
        }
        RunLimit::DurationSeconds(s) => {
            line(out, format_args!("duration: {s} s"));
            line(
                out,
                format_args!("number of transactions actually processed: {committed}"),
            );
        }
    }
}

/// The latency limit's count, then the latency: its average and standard
/// deviation where pgbench measures each transaction (`-R`, `-P`, `-L`),
/// otherwise the average pgbench derives from the run's duration.
fn latency_lines(out: &mut String, r: &RunResult, c: &Counts) {
    let o = &r.options;
    if let Some(limit) = o.latency_limit_us {
        let late_pct = if c.counters.committed > 0 {
            100.0 * c.latency_late as f64 / c.counters.committed as f64
        } else {
            0.0
        };
        line(
            out,
            format_args!(
                "number of transactions above the {} ms latency limit: {}/{} ({}%)",
                fixed(limit as f64 / 1000.0, 1),
                c.latency_late,
                c.counters.committed,
                fixed(late_pct, 3)
            ),
        );
    }
    if o.rate.is_some() || o.progress_s.is_some() || o.latency_limit_us.is_some() {
        simple_stats(out, "latency", &r.latency);
    } else {
        let avg =
            0.001 * r.timings.bench_duration_us as f64 * f64::from(o.clients) / c.total as f64;
        let note = if c.failed > 0 {
            " (including failures)"
        } else {
            ""
        };
        line(
            out,
            format_args!("latency average = {} ms{note}", fixed(avg, 3)),
        );
    }
}

/// The schedule lag under `-R`, the connection time and the rate.
fn rate_lines(out: &mut String, r: &RunResult, c: &Counts) {
    let o = &r.options;
    if o.rate.is_some() {
        let lag = &r.lag.stats;
        line(
            out,
            format_args!(
                "rate limit schedule lag: avg {} (max {}) ms",
                fixed(0.001 * lag.sum as f64 / c.counters.committed as f64, 3),
                fixed(0.001 * lag.max as f64, 3)
            ),
        );
    }
    if o.connect_per_transaction {
        let per =
            0.001 * r.timings.total_connection_us as f64 / (c.counters.committed + c.failed) as f64;
        line(
            out,
            format_args!("average connection time = {} ms", fixed(per, 3)),
        );
        line(
            out,
            format_args!("tps = {} (including reconnection times)", fixed(r.tps, 6)),
        );
    } else {
        let conn = 0.001 * r.timings.initial_connection_us as f64;
        line(
            out,
            format_args!("initial connection time = {} ms", fixed(conn, 3)),
        );
        line(
            out,
            format_args!(
                "tps = {} (without initial connection time)",
                fixed(r.tps, 6)
            ),
        );
    }
}

/// Failed / retried / skipped lines, shared by the summary and the
/// per-script sections (`prefix` is `" - "` there).
fn outcome_lines(out: &mut String, r: &RunResult, c: &Counts, prefix: &str) {
    let o = &r.options;
    let total = c.total as f64;
    let pct = |n: u64| fixed(100.0 * n as f64 / total, 3);
    line(
        out,
        format_args!(
            "{prefix}number of failed transactions: {} ({}%)",
            c.failed,
            pct(c.failed)
        ),
    );
    if o.failures_detailed {
        let k = &c.counters;
        line(
            out,
            format_args!(
                "{prefix}number of serialization failures: {} ({}%)",
                k.serialization_failures,
                pct(k.serialization_failures)
            ),
        );
        line(
            out,
            format_args!(
                "{prefix}number of deadlock failures: {} ({}%)",
                k.deadlock_failures,
                pct(k.deadlock_failures)
            ),
        );
        if o.continue_on_error {
            line(
                out,
                format_args!(
                    "{prefix}number of other failures: {} ({}%)",
                    k.other_failures,
                    pct(k.other_failures)
                ),
            );
        }
    }
    if o.max_tries != 1 {
        let k = &c.counters;
        line(
            out,
            format_args!(
                "{prefix}number of transactions retried: {} ({}%)",
                k.retried,
                pct(k.retried)
            ),
        );
        line(
            out,
            format_args!("{prefix}total number of retries: {}", k.retries),
        );
    }
    if o.rate.is_some() && o.latency_limit_us.is_some() {
        let k = &c.counters;
        line(
            out,
            format_args!(
                "{prefix}number of transactions skipped: {} ({}%)",
                k.skipped,
                pct(k.skipped)
            ),
        );
    }
}

fn script_section(out: &mut String, r: &RunResult, index: usize, s: &ScriptResult) {
    let o = &r.options;
    if o.per_script_stats() {
        let total_weight: u64 = o.scripts.iter().map(|s| u64::from(s.weight)).sum();
        let c = &s.counts;
        line(out, format_args!("SQL script {}: {}", index + 1, s.name));
        line(
            out,
            format_args!(
                " - weight: {} (targets {}% of total)",
                s.weight,
                fixed(100.0 * f64::from(s.weight) / total_weight as f64, 1)
            ),
        );
        line(
            out,
            format_args!(
                " - {} transactions ({}% of total)",
                c.total,
                fixed(100.0 * c.total as f64 / r.counts.total as f64, 1)
            ),
        );
        if c.total > 0 {
            line(
                out,
                format_args!(
                    " - number of transactions actually processed: {} (tps = {})",
                    c.counters.committed,
                    fixed(s.tps, 6)
                ),
            );
            outcome_lines(out, r, c, " - ");
        }
        simple_stats(out, " - latency", &s.latency);
    }
    if o.report_per_command {
        let prefix = if o.per_script_stats() { " - " } else { "" };
        let what = if o.max_tries == 1 {
            " and failures"
        } else {
            ", failures and retries"
        };
        line(
            out,
            format_args!("{prefix}statement latencies in milliseconds{what}:"),
        );
        for cmd in &s.commands {
            let avg = fixed(cmd.average_ms, 3);
            if o.max_tries == 1 {
                line(
                    out,
                    format_args!("   {avg:>11}  {:>10} {}", cmd.failures, cmd.command),
                );
            } else {
                line(
                    out,
                    format_args!(
                        "   {avg:>11}  {:>10} {:>10} {}",
                        cmd.failures, cmd.retries, cmd.command
                    ),
                );
            }
        }
    }
}

/// pgbench's `printSimpleStats`: average and stddev, when anything was counted.
fn simple_stats(out: &mut String, prefix: &str, d: &Distribution) {
    if d.stats.count == 0 {
        return;
    }
    line(
        out,
        format_args!(
            "{prefix} average = {} ms",
            fixed(0.001 * d.stats.mean_us(), 3)
        ),
    );
    line(
        out,
        format_args!(
            "{prefix} stddev = {} ms",
            fixed(0.001 * d.stats.stddev_us(), 3)
        ),
    );
}

/// pgbolt's percentile lines (not printed by pgbench).
pub fn render_percentiles(r: &RunResult) -> String {
    let mut out = String::new();
    if let Some(p) = &r.latency.percentiles {
        percentile_line(&mut out, "latency", p);
    }
    if r.options.rate.is_some() {
        if let Some(p) = &r.service_time.percentiles {
            percentile_line(&mut out, "service time", p);
        }
        if let Some(p) = &r.lag.percentiles {
            percentile_line(&mut out, "schedule lag", p);
        }
    }
    if let Some(wait) = &r.pool_wait {
        pool_wait_lines(&mut out, r, wait);
    }
    if r.options.per_script_stats() {
        for (i, s) in r.scripts.iter().enumerate() {
            if let Some(p) = &s.latency.percentiles {
                percentile_line(&mut out, &format!("SQL script {} latency", i + 1), p);
            }
        }
    }
    out
}

/// `--pool-size`: the wait for a pooled connection, which the latency
/// above includes.
fn pool_wait_lines(out: &mut String, r: &RunResult, wait: &Distribution) {
    let Some(average) = wait.average_ms else {
        return;
    };
    line(
        out,
        format_args!(
            "pool wait: average = {} ms, max = {} ms ({} connections for {} clients, included in the latency)",
            fixed(average, 3),
            fixed(0.001 * wait.stats.max as f64, 3),
            r.options.pool_size.unwrap_or(0),
            r.options.clients
        ),
    );
    if let Some(p) = &wait.percentiles {
        percentile_line(out, "pool wait", p);
    }
}

fn percentile_line(out: &mut String, what: &str, p: &Percentiles) {
    line(
        out,
        format_args!(
            "{what} percentiles: p50 = {} ms, p90 = {} ms, p99 = {} ms, p99.9 = {} ms, max = {} ms",
            fixed(p.p50, 3),
            fixed(p.p90, 3),
            fixed(p.p99, 3),
            fixed(p.p99_9, 3),
            fixed(p.max, 3)
        ),
    );
}

fn line(out: &mut String, args: std::fmt::Arguments<'_>) {
    // Writing to a String cannot fail.
    let _ = out.write_fmt(args);
    out.push('\n');
}
