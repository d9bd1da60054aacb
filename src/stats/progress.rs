//! `-P` progress lines, worded exactly as pgbench prints them.
//!
//! pgbench's thread 0 adds up every thread's running totals each interval
//! and prints the difference from the previous report. The engine does the
//! same with [`Snapshot`]s (cheap `Copy` values); this module only turns two
//! snapshots and two instants into the line, so it has no clock of its own.

use super::cfmt::push_fixed;
use super::recorder::Snapshot;
use std::fmt::Write as _;

/// What a progress line shows, fixed for the run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProgressOptions {
    /// `--progress-timestamp`: print the Unix time instead of the elapsed time.
    pub timestamp: bool,
    /// `-R` was given (adds the schedule lag).
    pub throttled: bool,
    /// `-L` was given (adds the skipped count under `-R`).
    pub latency_limit: bool,
    /// `--max-tries` (adds retried and retries unless it is 1).
    pub max_tries: u32,
}

/// Remembers the previous report so each line covers one interval.
#[derive(Clone, Debug)]
pub struct ProgressReporter {
    options: ProgressOptions,
    test_start_us: i64,
    last_report_us: i64,
    last: Snapshot,
}

impl ProgressReporter {
    /// Starts at `test_start_us` (µs since the Unix epoch) with nothing counted.
    pub fn new(options: ProgressOptions, test_start_us: i64) -> Self {
        ProgressReporter {
            options,
            test_start_us,
            last_report_us: test_start_us,
            last: Snapshot::default(),
        }
    }

    /// The line for the interval ending at `now_us` (µs since the epoch),
    /// given the run's totals so far, without the trailing newline.
    pub fn report(&mut self, now_us: i64, current: &Snapshot) -> String {
        let run_us = (now_us - self.last_report_us) as f64;
        let counts = current.counts.since(&self.last.counts);
        let latency = current.latency.since(&self.last.latency);
        let lag = current.lag.since(&self.last.lag);
        let cnt = counts.committed;
        let tps = 1_000_000.0 * cnt as f64 / run_us;
        let (lat_ms, stddev_ms, lag_ms) = if cnt > 0 {
            let lat_ms = 0.001 * latency.sum as f64 / cnt as f64;
            let sqlat = latency.sum2 as f64 / cnt as f64;
            let stddev = 0.001 * (sqlat - 1_000_000.0 * lat_ms * lat_ms).sqrt();
            (lat_ms, stddev, 0.001 * lag.sum as f64 / cnt as f64)
        } else {
            (0.0, 0.0, 0.0)
        };

        let mut line = String::with_capacity(128);
        line.push_str("progress: ");
        if self.options.timestamp {
            push_fixed(&mut line, now_us as f64 / 1_000_000.0, 3);
        } else {
            push_fixed(
                &mut line,
                (now_us - self.test_start_us) as f64 / 1_000_000.0,
                1,
            );
        }
        line.push_str(" s, ");
        push_fixed(&mut line, tps, 1);
        line.push_str(" tps, lat ");
        push_fixed(&mut line, lat_ms, 3);
        line.push_str(" ms stddev ");
        push_fixed(&mut line, stddev_ms, 3);
        let _ = write!(line, ", {} failed", counts.failures());
        if self.options.throttled {
            line.push_str(", lag ");
            push_fixed(&mut line, lag_ms, 3);
            line.push_str(" ms");
            if self.options.latency_limit {
                let _ = write!(line, ", {} skipped", counts.skipped);
            }
        }
        if self.options.max_tries != 1 {
            let _ = write!(
                line,
                ", {} retried, {} retries",
                counts.retried, counts.retries
            );
        }
        self.last = *current;
        self.last_report_us = now_us;
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::recorder::{Outcome, StatsLayout, ThreadStats, Transaction};

    fn run(options: ProgressOptions) -> (String, String) {
        let layout = StatsLayout {
            commands_per_script: vec![1],
            latency_limit_us: None,
            start_us: 0,
            throttled: options.throttled,
            series: false,
        };
        let mut stats = ThreadStats::new(&layout);
        let mut p = ProgressReporter::new(options, 1_700_000_000_000_000);
        for latency in [1000, 3000] {
            stats.record_transaction(&Transaction {
                script: 0,
                outcome: Outcome::Committed,
                tries: 1,
                latency_us: latency,
                lag_us: 100,
                end_us: 0,
            });
        }
        stats.record_transaction(&Transaction {
            script: 0,
            outcome: Outcome::Skipped,
            tries: 1,
            latency_us: 0,
            lag_us: 0,
            end_us: 0,
        });
        let first = p.report(1_700_000_000_000_000 + 2_000_000, &stats.snapshot());
        let second = p.report(1_700_000_000_000_000 + 4_000_000, &stats.snapshot());
        (first, second)
    }

    #[test]
    fn lines_are_worded_as_pgbench() {
        let plain = ProgressOptions {
            timestamp: false,
            throttled: false,
            latency_limit: false,
            max_tries: 1,
        };
        let (a, b) = run(plain);
        assert_eq!(
            a,
            "progress: 2.0 s, 1.0 tps, lat 2.000 ms stddev 1.000, 0 failed"
        );
        assert_eq!(
            b,
            "progress: 4.0 s, 0.0 tps, lat 0.000 ms stddev 0.000, 0 failed"
        );

        let all = ProgressOptions {
            timestamp: true,
            throttled: true,
            latency_limit: true,
            max_tries: 0,
        };
        let (a, _) = run(all);
        assert_eq!(
            a,
            "progress: 1700000002.000 s, 1.0 tps, lat 2.000 ms stddev 1.000, 0 failed, \
             lag 0.100 ms, 1 skipped, 0 retried, 0 retries"
        );
    }
}
