//! The figures the endpoint serves: the process's runs, each with what
//! its worker threads last handed over.
//!
//! A worker thread owns a [`Beat`]: every [`BEAT_US`] (checked after a
//! turn of its loop, never per transaction) and once more as the thread
//! ends, it copies its running totals and the latency histograms of its
//! interval series into its own slot of the run, under that slot's mutex.
//! The endpoint's thread adds the slots up when it is scraped. The slots
//! never go backwards, and the last hand-over holds everything the thread
//! recorded, so once the run is over the served figures are the report's.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::model::diagnosis::{OtherSessions, StateCounts};
use crate::observe::Sample;
use crate::stats::{Counters, IntervalHistogram, ThreadStats};

/// How often the linger looks whether a signal asked to stop.
const STOP_CHECK: std::time::Duration = std::time::Duration::from_millis(100);

/// Set by SIGINT or SIGTERM during the linger.
static STOPPED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOPPED.store(true, Ordering::SeqCst);
}

/// How often a worker thread hands over its figures, µs.
pub const BEAT_US: i64 = 500_000;

/// What a run is among the runs of the process (a study's step, its
/// warm-up, a target): the labels of its series.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunLabels {
    /// A study's step, counted from 1 as its progress line counts.
    pub step: Option<usize>,
    /// A study's step: its clients.
    pub clients: Option<u32>,
    /// A comparison of targets: the target's name.
    pub target: Option<String>,
    /// The unmeasured run before the measured one (`--warmup`).
    pub warmup: bool,
}

impl RunLabels {
    /// The labels as Prometheus label pairs.
    pub fn pairs(&self) -> Vec<(String, String)> {
        let mut pairs = Vec::new();
        if let Some(step) = self.step {
            pairs.push(("step".to_owned(), step.to_string()));
        }
        if let Some(clients) = self.clients {
            pairs.push(("clients".to_owned(), clients.to_string()));
        }
        if let Some(target) = &self.target {
            pairs.push(("target".to_owned(), target.clone()));
        }
        pairs.push((
            "phase".to_owned(),
            if self.warmup { "warmup" } else { "measured" }.to_owned(),
        ));
        pairs
    }
}

/// One thread's figures as of its last hand-over.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ThreadFigures {
    /// Outcome counts per script, in the run's script order.
    pub scripts: Vec<Counters>,
    /// Latency of the committed transactions, from the interval series.
    pub latency: IntervalHistogram,
    /// Sum of those latencies, µs (exact).
    pub latency_sum_us: u64,
    /// Sum of the committed transactions' schedule lag, µs.
    pub lag_sum_us: u64,
    /// Clients with a connection (set as they connect, zero once the
    /// thread is done).
    pub connected: u32,
}

impl ThreadFigures {
    /// What `stats` holds now.
    fn of(stats: &ThreadStats, scripts: usize, connected: u32) -> ThreadFigures {
        let snapshot = stats.snapshot();
        ThreadFigures {
            scripts: (0..scripts)
                .map(|i| stats.script(i).map(|s| s.counts).unwrap_or_default())
                .collect(),
            latency: stats.series.latency_total(),
            latency_sum_us: snapshot.latency.sum,
            lag_sum_us: snapshot.lag.sum,
            connected,
        }
    }

    /// Adds another thread's figures.
    pub fn merge(&mut self, other: &ThreadFigures) {
        if self.scripts.len() < other.scripts.len() {
            self.scripts
                .resize(other.scripts.len(), Counters::default());
        }
        for (mine, theirs) in self.scripts.iter_mut().zip(&other.scripts) {
            mine.merge(theirs);
        }
        self.latency.add(&other.latency);
        self.latency_sum_us += other.latency_sum_us;
        self.lag_sum_us += other.lag_sum_us;
        self.connected += other.connected;
    }
}

/// One engine run's series: its labels, script names and threads' slots.
#[derive(Debug)]
pub struct LiveRun {
    pub labels: RunLabels,
    pub scripts: Vec<String>,
    threads: Vec<Mutex<ThreadFigures>>,
}

impl LiveRun {
    /// The threads' figures added up.
    pub fn total(&self) -> ThreadFigures {
        let mut total = ThreadFigures::default();
        for slot in &self.threads {
            if let Ok(figures) = slot.lock() {
                total.merge(&figures);
            }
        }
        total
    }

    fn hand_over(&self, tid: usize, figures: ThreadFigures) {
        if let Some(Ok(mut slot)) = self.threads.get(tid).map(Mutex::lock) {
            *slot = figures;
        }
    }
}

/// A worker thread's side: when to hand over next, and where.
#[derive(Clone, Debug)]
pub struct Beat {
    run: Arc<LiveRun>,
    tid: usize,
    next_us: i64,
    connected: u32,
}

impl Beat {
    /// The run this beat hands over to.
    pub fn run(&self) -> Arc<LiveRun> {
        Arc::clone(&self.run)
    }

    /// The thread's clients are connected (`connected` of them).
    pub fn connected(&mut self, connected: u32, stats: &ThreadStats, now_us: i64) {
        self.connected = connected;
        self.hand_over(stats, now_us);
    }

    /// Hands the figures over when a beat is due.
    #[inline]
    pub fn tick(&mut self, stats: &ThreadStats, now_us: i64) {
        if now_us >= self.next_us {
            self.hand_over(stats, now_us);
        }
    }

    /// The thread is done: its final figures, no client connected.
    pub fn finish(&mut self, stats: &ThreadStats) {
        self.connected = 0;
        let figures = ThreadFigures::of(stats, self.run.scripts.len(), 0);
        self.run.hand_over(self.tid, figures);
    }

    fn hand_over(&mut self, stats: &ThreadStats, now_us: i64) {
        let figures = ThreadFigures::of(stats, self.run.scripts.len(), self.connected);
        self.run.hand_over(self.tid, figures);
        self.next_us = now_us + BEAT_US;
    }
}

/// The process's live figures: every run so far, and where the process is.
#[derive(Debug, Default)]
pub struct Live {
    state: Mutex<State>,
    /// Signalled when a scrape was served after the end.
    scraped: Condvar,
}

#[derive(Debug, Default)]
pub struct State {
    pub runs: Vec<Arc<LiveRun>>,
    /// The labels the next run gets.
    next: RunLabels,
    /// A run is going on.
    pub running: bool,
    /// `db.namespace`: the database the clients use.
    pub namespace: String,
    /// The labels of the study's current step.
    pub step: Option<RunLabels>,
    /// Every run is over: what is served now is final.
    pub finished: bool,
    /// Scrapes served that began after `finished` was set.
    pub final_scrapes: u64,
    /// The monitor's latest activity sample of the run going on: its
    /// backends and the other sessions seen with them (none before
    /// PostgreSQL 10).
    pub backends: Option<(StateCounts, Option<OtherSessions>)>,
}

impl Live {
    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Labels the next run (a study's step, its warm-up, a target).
    pub fn label_next_run(&self, labels: RunLabels) {
        self.state().next = labels;
    }

    /// A run with `threads` threads starts: its series, and each thread's
    /// [`Beat`].
    pub fn open_run(&self, scripts: Vec<String>, threads: usize) -> Vec<Beat> {
        let mut state = self.state();
        state.step = state.next.step.is_some().then(|| state.next.clone());
        let run = Arc::new(LiveRun {
            labels: std::mem::take(&mut state.next),
            scripts,
            threads: (0..threads)
                .map(|_| Mutex::new(ThreadFigures::default()))
                .collect(),
        });
        state.runs.push(Arc::clone(&run));
        state.running = true;
        state.backends = None;
        (0..threads)
            .map(|tid| Beat {
                run: Arc::clone(&run),
                tid,
                next_us: 0,
                connected: 0,
            })
            .collect()
    }

    /// The run's threads are done (its backends are gone with them).
    pub fn close_run(&self) {
        let mut state = self.state();
        state.running = false;
        state.backends = None;
    }

    /// The monitor of `run` took a sample, or lost its connection
    /// (`None`). Taken only while `run` is the one going on: a monitor
    /// that outlives its run (its end waits for it at most a few seconds)
    /// must not show its backends under the next run's labels.
    pub fn sample_backends(&self, run: &Arc<LiveRun>, sample: Option<Sample<'_>>) {
        let mut state = self.state();
        let current = state.running && state.runs.last().is_some_and(|r| Arc::ptr_eq(r, run));
        if current {
            state.backends = sample.map(|s| (s.run.clone(), s.others.cloned()));
        }
    }

    /// Every run is over: what is served or sent now is final.
    pub fn end(&self) {
        let mut state = self.state();
        state.finished = true;
        state.running = false;
    }

    /// Every run is over; waits until a scrape that began after this has
    /// been served, at most `linger`. SIGINT or SIGTERM ends the wait at
    /// once: the run is done, only its last figures would be missed.
    pub fn finish(&self, linger: std::time::Duration) {
        STOPPED.store(false, Ordering::SeqCst);
        let _handlers = crate::sigstop::install(on_stop);
        let mut state = self.state();
        state.finished = true;
        state.running = false;
        let deadline = std::time::Instant::now() + linger;
        while state.final_scrapes == 0 && !STOPPED.load(Ordering::SeqCst) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return;
            }
            // A signal handler cannot notify a condition variable: look
            // at its flag now and then.
            let slice = left.min(STOP_CHECK);
            state = match self.scraped.wait_timeout(state, slice) {
                Ok((s, _)) => s,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }

    /// A scrape that began when `finished` was `began_finished` was served.
    pub fn served(&self, began_finished: bool) {
        if began_finished {
            self.state().final_scrapes += 1;
            self.scraped.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_counts_only_for_the_run_going_on() {
        let live = Live::default();
        let counts = StateCounts {
            on_cpu: 2,
            ..StateCounts::default()
        };
        let sample = || Sample {
            run: &counts,
            others: None,
        };
        let first = live.open_run(vec!["a".to_owned()], 1)[0].run();
        live.sample_backends(&first, Some(sample()));
        assert_eq!(live.state().backends, Some((counts.clone(), None)));
        live.sample_backends(&first, None);
        assert_eq!(
            live.state().backends,
            None,
            "the monitor lost its connection"
        );
        live.sample_backends(&first, Some(sample()));
        live.close_run();
        live.sample_backends(&first, Some(sample()));
        assert_eq!(live.state().backends, None, "after the run");
        let second = live.open_run(vec!["a".to_owned()], 1)[0].run();
        live.sample_backends(&first, Some(sample()));
        assert_eq!(
            live.state().backends,
            None,
            "a late sample of the first run"
        );
        live.sample_backends(&second, Some(sample()));
        assert!(live.state().backends.is_some());
    }
}
