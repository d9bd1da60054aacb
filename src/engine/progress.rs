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
//! The line keeps the time it was found due, with thread 0's totals of
//! then, so a thread that cannot publish in time (blocked in `\setshell`)
//! delays it without moving its time stamp; its transactions then count in
//! the next line.

use crate::stats::{ProgressOptions, ProgressReporter, Snapshot, ThreadStats};

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
    /// The line of the interval that has ended, while it waits for the
    /// other threads' totals.
    due: Option<Due>,
    reporter: Option<ProgressReporter>,
}

/// A line found due: when (its time stamp and the end of its interval),
/// thread 0's own totals then, and when to look again for the others'.
struct Due {
    at: i64,
    own: Snapshot,
    recheck: i64,
}

impl Progress {
    pub fn new(interval_s: u32, options: ProgressOptions, run_start: i64) -> Progress {
        Progress {
            interval_us: i64::from(interval_s) * 1_000_000,
            options,
            run_start,
            next_publish: 0,
            next_report: 0,
            due: None,
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
            let report = self.due.as_ref().map_or(self.next_report, |d| d.recheck);
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
        let due = self.due.get_or_insert_with(|| Due {
            at: now,
            own: stats.snapshot(),
            recheck: now,
        });
        if now < due.recheck {
            return;
        }
        let waited_enough = now >= self.next_report + PUBLISH_EVERY_US;
        if waited_enough || shared.published_since(tid, self.next_report) {
            self.report(tid, shared);
        } else {
            due.recheck = now + RECHECK_US;
        }
    }

    /// As the thread ends: publishes its final totals, and on thread 0
    /// prints the line still waiting for the other threads' totals,
    /// waiting for them at most what is left of its beat. An interval that
    /// ended before the loop saw it (on a busy machine the thread may wake
    /// after the run's end and leave the loop at once) gets its line too.
    pub fn finish(&mut self, tid: usize, clock: &Clock, stats: &ThreadStats, shared: &Shared) {
        shared.publish(tid, stats.snapshot(), i64::MAX);
        let now = clock.now_us();
        if self.reporter.is_some() && self.due.is_none() && now >= self.next_report {
            self.due = Some(Due {
                at: now,
                own: stats.snapshot(),
                recheck: now,
            });
        }
        if self.due.is_none() {
            return;
        }
        let deadline = self.next_report + PUBLISH_EVERY_US;
        while !shared.published_since(tid, self.next_report) && clock.now_us() < deadline {
            std::thread::sleep(std::time::Duration::from_micros(RECHECK_US as u64));
        }
        self.report(tid, shared);
    }

    /// Prints the line found due, stamped with the time it was found due:
    /// thread 0's totals of then, the other threads' as last published.
    fn report(&mut self, tid: usize, shared: &Shared) {
        let (Some(reporter), Some(due)) = (self.reporter.as_mut(), self.due.take()) else {
            return;
        };
        let total = shared.progress_total(tid, &due.own);
        let line = reporter.report(due.at, &total);
        crate::program::ewriteln!("{line}");
        while self.next_report <= due.at {
            self.next_report += self.interval_us;
        }
    }
}
