//! `-P`: the progress state of one worker thread.
//!
//! Every thread publishes its totals to [`Shared`] on a fixed beat; thread
//! 0 alone owns the reporter and prints one line per interval from the sum
//! of what the threads published, so no thread ever waits for another.

use crate::stats::{ProgressOptions, ProgressReporter, ThreadStats};

use super::shared::Shared;

/// Progress reporting state of a thread.
pub struct Progress {
    pub interval_us: i64,
    pub options: ProgressOptions,
    /// When the run started (before any thread): pgbench counts progress
    /// time from about then, and a `-T` run ends then plus its duration,
    /// so the last interval's line is printed as the run ends.
    run_start: i64,
    next_publish: i64,
    next_report: i64,
    reporter: Option<ProgressReporter>,
}

impl Progress {
    pub fn new(interval_s: u32, options: ProgressOptions, run_start: i64) -> Progress {
        Progress {
            interval_us: i64::from(interval_s) * 1_000_000,
            options,
            run_start,
            next_publish: 0,
            next_report: 0,
            reporter: None,
        }
    }

    pub fn start(&mut self, tid: usize) {
        self.next_publish = self.run_start;
        self.next_report = self.run_start + self.interval_us;
        if tid == 0 {
            self.reporter = Some(ProgressReporter::new(self.options, self.run_start));
        }
    }

    pub fn next_wake(&self) -> i64 {
        if self.reporter.is_some() {
            self.next_publish.min(self.next_report)
        } else {
            self.next_publish
        }
    }

    /// Publishes this thread's totals when due, and on thread 0 prints the
    /// line of each interval that has ended.
    pub fn tick(&mut self, tid: usize, now: i64, stats: &ThreadStats, shared: &Shared) {
        if now >= self.next_publish {
            shared.publish(tid, stats.snapshot());
            while self.next_publish <= now {
                self.next_publish += super::shared::PUBLISH_EVERY_US;
            }
        }
        let Some(reporter) = self.reporter.as_mut() else {
            return;
        };
        if now >= self.next_report {
            let total = shared.progress_total(tid, &stats.snapshot());
            let line = reporter.report(now, &total);
            crate::cli::ewriteln!("{line}");
            while self.next_report <= now {
                self.next_report += self.interval_us;
            }
        }
    }
}
