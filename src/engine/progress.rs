//! `-P`: the progress state of one worker thread.
//!
//! Every thread publishes its totals to [`Shared`] on a fixed beat that
//! falls on every interval's end, and once more as it ends; thread 0 alone
//! owns the reporter and prints one line per interval from the sum of what
//! the threads published. Its line waits (without blocking its clients)
//! until every other thread has published since the interval ended, for at
//! most one beat: otherwise a line would count a thread's transactions of
//! up to a beat before, and those of a thread that has ended not at all,
//! where pgbench's thread 0 reads the other threads' totals as they are.

use crate::stats::{ProgressOptions, ProgressReporter, ThreadStats};

use super::clock::Clock;
use super::shared::{Shared, PUBLISH_EVERY_US};

/// How often thread 0 looks again for the other threads' totals while an
/// interval's line waits for them.
const RECHECK_US: i64 = 1_000;

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
    /// While a line waits for the other threads' totals: when to look again.
    recheck: Option<i64>,
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
            recheck: None,
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
            let report = self.recheck.unwrap_or(self.next_report);
            self.next_publish.min(report)
        } else {
            self.next_publish
        }
    }

    /// Publishes this thread's totals when due, and on thread 0 prints the
    /// line of each interval that has ended once the other threads'
    /// totals are in.
    pub fn tick(&mut self, tid: usize, now: i64, stats: &ThreadStats, shared: &Shared) {
        if now >= self.next_publish {
            shared.publish(tid, stats.snapshot(), now);
            while self.next_publish <= now {
                self.next_publish += PUBLISH_EVERY_US;
            }
        }
        if self.reporter.is_none() || now < self.next_report {
            return;
        }
        let waited_enough = now >= self.next_report + PUBLISH_EVERY_US;
        if waited_enough || shared.published_since(tid, self.next_report) {
            self.report(tid, now, stats, shared);
        } else {
            self.recheck = Some(now + RECHECK_US);
        }
    }

    /// As the thread ends: publishes its final totals, and on thread 0
    /// prints the line still waiting for the other threads' totals,
    /// waiting for them at most what is left of its beat.
    pub fn finish(&mut self, tid: usize, clock: &Clock, stats: &ThreadStats, shared: &Shared) {
        shared.publish(tid, stats.snapshot(), i64::MAX);
        if self.recheck.is_none() {
            return;
        }
        let deadline = self.next_report + PUBLISH_EVERY_US;
        while !shared.published_since(tid, self.next_report) && clock.now_us() < deadline {
            std::thread::sleep(std::time::Duration::from_micros(RECHECK_US as u64));
        }
        self.report(tid, clock.now_us(), stats, shared);
    }

    fn report(&mut self, tid: usize, now: i64, stats: &ThreadStats, shared: &Shared) {
        let Some(reporter) = self.reporter.as_mut() else {
            return;
        };
        let total = shared.progress_total(tid, &stats.snapshot());
        let line = reporter.report(now, &total);
        crate::cli::ewriteln!("{line}");
        while self.next_report <= now {
            self.next_report += self.interval_us;
        }
        self.recheck = None;
    }
}
