//! Whether a waiting worker thread spins (`--busy-poll`).
//!
//! A thread that polls its sockets instead of sleeping saves its own
//! wake-up, which on an idle core of a virtual machine costs more than a
//! point query: measured at `-c 1 -j 1` on 2 CPUs, 0.031 ms per point select
//! spinning against 0.085 ms sleeping. But the scheduler does not always
//! keep the client and its backend on different CPUs. Often it runs both on
//! one CPU, handing it from one to the other without waking an idle one,
//! and then sleeping is by far the faster: 0.017-0.021 ms, against
//! 0.05-0.10 ms for a spinner, which keeps the backend off its CPU. Which of
//! the two happens depends on the scheduler and on what else the machine
//! runs, not on anything pgbolt can see beforehand; the machine's idle time
//! is the same in both.
//!
//! So `--busy-poll=auto` (when the threads and one backend per client fit
//! the CPUs) measures instead of guessing. Thread 0 runs in one way (first
//! sleeping, as pgbench does), then tries the other for [`TRIAL_US`], and
//! compares the mean service time (latency less any `-R` schedule lag) of
//! its committed transactions over the last [`MEASURE_US`] of each; with
//! fewer than 20 there, nothing is tried or decided. Spinning is kept only
//! when it is at least [`SPIN_GAIN`] faster; a trial that loses doubles
//! the time until the next one, from [`FIRST_TRIAL_US`] up to
//! [`LONGEST_GAP_US`], so a run that has found its way spends little time
//! trying the other. When thread 0 ends, the others go on the way that
//! won. All threads
//! follow thread 0's choice through one shared flag, read once per wait and
//! never locked; the bookkeeping is a few comparisons per turn of the loop.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::stats::SimpleStats;

/// How a thread waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpinMode {
    /// Sleeps in `epoll_wait` (`--busy-poll=off`, or too many clients).
    Never,
    /// Spins before every sleep (`--busy-poll=on`).
    Always,
    /// Follows [`SpinSwitch`], which thread 0 sets from its trials
    /// (`--busy-poll=auto`).
    Adaptive,
}

/// When the first trial starts.
pub const FIRST_TRIAL_US: i64 = 500_000;
/// How long a trial of the other way of waiting lasts.
pub const TRIAL_US: i64 = 200_000;
/// The part of a trial, and of the time before it, that is measured (the
/// rest lets the scheduler settle into the new way).
pub const MEASURE_US: i64 = 150_000;
/// The longest time between two trials.
pub const LONGEST_GAP_US: i64 = 16_000_000;
/// Spinning must lower the mean latency by this fraction to be kept.
pub const SPIN_GAIN: f64 = 0.1;
/// Fewer transactions than this in a measured part decide nothing.
const MIN_TRANSACTIONS: u64 = 20;

/// The choice all threads follow under [`SpinMode::Adaptive`].
#[derive(Default)]
pub struct SpinSwitch {
    on: AtomicBool,
}

impl SpinSwitch {
    pub fn on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    pub fn set(&self, on: bool) {
        self.on.store(on, Ordering::Relaxed);
    }
}

/// Thread 0's trials under [`SpinMode::Adaptive`].
pub struct SpinTrials {
    /// The way that won the last comparison.
    spin: bool,
    /// A trial of the other way is under way.
    trying: bool,
    /// The current part ends (a trial, or the time before the next one).
    part_end_us: i64,
    /// Its measured tail begins.
    measure_from_us: i64,
    /// The totals when the measured tail began, once it has.
    at_measure: Option<SimpleStats>,
    /// Mean latency in the tail of the time before the current trial.
    before_trial: Option<f64>,
    /// Time until the next trial.
    gap_us: i64,
}

impl SpinTrials {
    pub fn new(start_us: i64) -> SpinTrials {
        let gap_us = FIRST_TRIAL_US;
        SpinTrials {
            spin: false,
            trying: false,
            part_end_us: start_us + gap_us,
            measure_from_us: start_us + gap_us - MEASURE_US,
            at_measure: None,
            before_trial: None,
            gap_us,
        }
    }

    /// Moves the trials on and says whether the threads spin now;
    /// `totals` are thread 0's service times so far.
    pub fn tick(&mut self, now_us: i64, totals: SimpleStats) -> bool {
        if self.at_measure.is_none() && now_us >= self.measure_from_us {
            self.at_measure = Some(totals);
        }
        if now_us >= self.part_end_us {
            let mean = self
                .at_measure
                .take()
                .and_then(|from| mean_us(from, totals));
            if self.trying {
                let trial = !self.spin;
                let won = match (self.before_trial, mean) {
                    (Some(before), Some(during)) => wins(trial, during, before),
                    _ => false,
                };
                self.trying = false;
                if won {
                    self.spin = trial;
                    self.wait_for_trial(now_us, FIRST_TRIAL_US);
                } else {
                    self.wait_for_trial(now_us, (self.gap_us * 2).min(LONGEST_GAP_US));
                }
            } else if mean.is_some() {
                self.before_trial = mean;
                self.trying = true;
                self.part(now_us, TRIAL_US);
            } else {
                // Too few transactions to compare with: no trial, and the
                // next chance comes later.
                self.wait_for_trial(now_us, (self.gap_us * 2).min(LONGEST_GAP_US));
            }
        }
        self.spin != self.trying
    }

    /// When the current part (a trial, or the wait for the next one) ends.
    pub fn part_end_us(&self) -> i64 {
        self.part_end_us
    }

    /// The way that won the last comparison.
    pub fn winner(&self) -> bool {
        self.spin
    }

    fn wait_for_trial(&mut self, now_us: i64, gap_us: i64) {
        self.gap_us = gap_us;
        self.part(now_us, gap_us);
    }

    fn part(&mut self, now_us: i64, length_us: i64) {
        self.part_end_us = now_us + length_us;
        self.measure_from_us = self.part_end_us - MEASURE_US;
    }
}

fn mean_us(from: SimpleStats, to: SimpleStats) -> Option<f64> {
    let count = to.count.checked_sub(from.count)?;
    let sum = to.sum.checked_sub(from.sum)?;
    (count >= MIN_TRANSACTIONS).then(|| sum as f64 / count as f64)
}

/// Whether the way tried (`spin` or not) beats the one before it: spinning
/// must be [`SPIN_GAIN`] faster, sleeping merely no slower than that.
fn wins(spin: bool, during: f64, before: f64) -> bool {
    if spin {
        during <= before * (1.0 - SPIN_GAIN)
    } else {
        during * (1.0 - SPIN_GAIN) < before
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A machine on which a transaction takes `latency(spinning)` µs, one
    /// after the other, driven through the trials.
    struct Run {
        trials: SpinTrials,
        now: i64,
        totals: SimpleStats,
    }

    impl Run {
        fn new() -> Run {
            Run {
                trials: SpinTrials::new(0),
                now: 0,
                totals: SimpleStats::default(),
            }
        }

        /// Runs until `end` µs; says whether the threads spin then.
        fn until(&mut self, end: i64, latency: impl Fn(bool) -> u64) -> bool {
            let mut spin = self.trials.tick(self.now, self.totals);
            while self.now < end {
                let l = latency(spin);
                self.now += l as i64;
                self.totals.add(l as i64);
                spin = self.trials.tick(self.now, self.totals);
            }
            spin
        }
    }

    #[test]
    fn starts_sleeping_and_keeps_sleeping_when_spinning_is_slower() {
        let mut run = Run::new();
        assert!(!run.until(0, |_| 1));
        assert!(!run.until(60_000_000, |spin| if spin { 60 } else { 20 }));
        assert_eq!(run.trials.gap_us, LONGEST_GAP_US);
    }

    #[test]
    fn spins_when_spinning_is_clearly_faster() {
        let mut run = Run::new();
        assert!(run.until(2_000_000, |spin| if spin { 31 } else { 85 }));
        assert!(run.trials.winner());
    }

    #[test]
    fn spinning_must_be_ten_percent_faster() {
        let mut run = Run::new();
        assert!(run.until(2_000_000, |spin| if spin { 90 } else { 100 }));
        let mut run = Run::new();
        assert!(!run.until(10_000_000, |spin| if spin { 91 } else { 100 }));
    }

    #[test]
    fn sleeping_wins_back_unless_spinning_stays_ten_percent_faster() {
        let mut run = Run::new();
        assert!(run.until(2_000_000, |spin| if spin { 31 } else { 85 }));
        assert!(run.until(10_000_000, |spin| if spin { 90 } else { 100 }));
        assert!(!run.until(40_000_000, |spin| if spin { 92 } else { 100 }));
    }

    #[test]
    fn goes_back_to_sleeping_when_the_machine_changes() {
        let mut run = Run::new();
        assert!(run.until(2_000_000, |spin| if spin { 31 } else { 85 }));
        assert!(!run.until(4_000_000, |spin| if spin { 60 } else { 20 }));
    }

    #[test]
    fn too_few_transactions_decide_nothing_and_start_no_trial() {
        let mut run = Run::new();
        // One transaction every 10 or 50 ms: a measured tail holds a few,
        // however much faster spinning would be.
        let mut spun = false;
        let latency = |spin: bool| if spin { 10_000 } else { 50_000 };
        while run.now < 60_000_000 {
            spun |= run.until(run.now + 50_000, latency);
        }
        assert!(!spun);
        assert_eq!(run.trials.gap_us, LONGEST_GAP_US);
    }
}
