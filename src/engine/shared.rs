//! What the worker threads share: the start gate (pgbench's barrier), the
//! end of a timed run, and the flags that stop the run. Nothing here is
//! touched per transaction.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

use crate::stats::Snapshot;

use super::error::EngineError;
use super::signals;
use super::spin::SpinSwitch;

#[derive(Default)]
struct Gate {
    arrived: usize,
    failed: bool,
    error: Option<EngineError>,
    /// When the last thread arrived (every client connected).
    ready_us: Option<i64>,
    /// `-T`: when the run ends, µs since the epoch; set at the start, or
    /// when the last thread arrives under `length_after_connect_us`.
    end_us: Option<i64>,
}

pub struct Shared {
    threads: usize,
    gate: Mutex<Gate>,
    opened: Condvar,
    /// `-T` in µs when the run's window opens as its last client
    /// connects (a study's step), not at its start (pgbench's runs).
    pub length_after_connect_us: Option<i64>,
    /// `--start-at`, µs since the epoch: the gate opens then, not before.
    pub start_at: Option<i64>,
    exit_on_abort: AtomicBool,
    /// The thread whose client aborted first under `--exit-on-abort`.
    abort_thread: AtomicUsize,
    /// Under `-P`: each thread's running totals and when it took them,
    /// published every [`PUBLISH_EVERY_US`] (never per transaction) and as
    /// the thread ends, for thread 0's lines.
    progress: Vec<Mutex<(Snapshot, i64)>>,
    /// Under `--busy-poll=auto`: whether the threads spin now (thread 0
    /// decides, see `spin`).
    pub spin: SpinSwitch,
    /// The server backends the clients' connections got at start-up (the
    /// PIDs of their BackendKeyData), added by each thread once its
    /// clients are connected: the monitor counts these as the run's.
    backend_pids: Mutex<Vec<i32>>,
}

/// How often threads publish their totals for progress reports.
pub const PUBLISH_EVERY_US: i64 = 100_000;

impl Shared {
    pub fn new(threads: usize, end_us: Option<i64>) -> Shared {
        Shared {
            threads,
            gate: Mutex::new(Gate {
                end_us,
                ..Gate::default()
            }),
            opened: Condvar::new(),
            length_after_connect_us: None,
            start_at: None,
            exit_on_abort: AtomicBool::new(false),
            abort_thread: AtomicUsize::new(usize::MAX),
            progress: (0..threads)
                .map(|_| Mutex::new((Snapshot::default(), i64::MIN)))
                .collect(),
            spin: SpinSwitch::default(),
            backend_pids: Mutex::new(Vec::new()),
        }
    }

    /// Adds backend PIDs of a thread's connected clients.
    pub fn add_backends(&self, pids: impl IntoIterator<Item = i32>) {
        if let Ok(mut all) = self.backend_pids.lock() {
            all.extend(pids);
        }
    }

    /// The clients' backend PIDs added so far, sorted.
    pub fn backends(&self) -> Vec<i32> {
        let mut pids = self
            .backend_pids
            .lock()
            .map_or_else(|_| Vec::new(), |p| p.clone());
        pids.sort_unstable();
        pids
    }

    /// Publishes thread `tid`'s totals as of `at` (`i64::MAX` once the
    /// thread has ended: they are then final).
    pub fn publish(&self, tid: usize, snapshot: Snapshot, at: i64) {
        if let Some(Ok(mut slot)) = self.progress.get(tid).map(|m| m.lock()) {
            *slot = (snapshot, at);
        }
    }

    /// Whether every thread but `tid` has published its totals at or after
    /// `t` (or has ended).
    pub fn published_since(&self, tid: usize, t: i64) -> bool {
        self.progress
            .iter()
            .enumerate()
            .all(|(i, slot)| i == tid || slot.lock().map_or(true, |s| s.1 >= t))
    }

    /// The sum of the published totals, with `own` in place of thread
    /// `tid`'s.
    pub fn progress_total(&self, tid: usize, own: &Snapshot) -> Snapshot {
        let mut total = *own;
        for (i, slot) in self.progress.iter().enumerate() {
            if i != tid {
                if let Ok(s) = slot.lock() {
                    total.merge(&s.0);
                }
            }
        }
        total
    }

    /// Waits until every thread has connected its clients (`now_us` is
    /// when this one has), then under `--start-at` until that time; false
    /// when a thread failed, when the clients were connected too late
    /// for the start time, or when a signal stopped the wait (the run does
    /// not start).
    pub fn wait_start(&self, now_us: i64, clock: &super::clock::Clock) -> bool {
        if !self.wait_connected(now_us) {
            return false;
        }
        let Some(at) = self.start_at else {
            return true;
        };
        loop {
            let left = at - clock.now_us();
            if left <= 0 {
                return true;
            }
            if self.stop_requested() {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_micros(left.min(50_000) as u64));
        }
    }

    /// When a timed run ends, µs since the epoch (`None` for `-t`, and
    /// before the last client connected when the window opens then).
    pub fn end_us(&self) -> Option<i64> {
        self.gate.lock().ok().and_then(|g| g.end_us)
    }

    /// When every client was connected (`None` before).
    pub fn ready_us(&self) -> Option<i64> {
        self.gate.lock().ok().and_then(|g| g.ready_us)
    }

    fn wait_connected(&self, now_us: i64) -> bool {
        let Ok(mut gate) = self.gate.lock() else {
            return false;
        };
        gate.arrived += 1;
        if gate.arrived == self.threads {
            gate.ready_us = Some(now_us);
            if let Some(length) = self.length_after_connect_us {
                gate.end_us = Some(now_us + length);
            }
            if let Some(at) = self.start_at {
                if now_us > at + crate::config::fleet::LATE_TOLERANCE_US {
                    gate.failed = true;
                    gate.error.get_or_insert(EngineError::LateForStart {
                        ready_us: now_us,
                        start_at_us: at,
                    });
                }
            }
            self.opened.notify_all();
        }
        while gate.arrived < self.threads && !gate.failed {
            gate = match self.opened.wait(gate) {
                Ok(g) => g,
                Err(_) => return false,
            };
        }
        !gate.failed
    }

    /// Waits, without being one of the threads, until every thread has
    /// connected its clients; false when one of them failed.
    pub fn wait_opened(&self) -> bool {
        let Ok(mut gate) = self.gate.lock() else {
            return false;
        };
        while gate.arrived < self.threads && !gate.failed {
            gate = match self.opened.wait(gate) {
                Ok(g) => g,
                Err(_) => return false,
            };
        }
        !gate.failed
    }

    /// Waits like [`Self::wait_opened`], then gives when the measured
    /// window opens (see [`Self::window_start_us`]). `None` when the run
    /// does not start.
    pub fn wait_window_start(&self) -> Option<i64> {
        if !self.wait_opened() {
            return None;
        }
        self.window_start_us()
    }

    /// When the measured window opens, µs since the epoch: `--start-at`,
    /// or when every client was connected if that was later or there is
    /// none (`None` before every client is connected).
    pub fn window_start_us(&self) -> Option<i64> {
        let ready = self.ready_us()?;
        Some(self.start_at.map_or(ready, |at| at.max(ready)))
    }

    /// Reports a failure before the start; the first one is kept.
    pub fn fail_start(&self, error: EngineError) {
        if let Ok(mut gate) = self.gate.lock() {
            gate.failed = true;
            gate.error.get_or_insert(error);
        }
        self.opened.notify_all();
    }

    pub fn take_start_error(&self) -> Option<EngineError> {
        self.gate.lock().ok().and_then(|mut g| g.error.take())
    }

    pub fn stop_requested(&self) -> bool {
        signals::stop_requested() || self.exit_on_abort.load(Ordering::Relaxed)
    }

    pub fn trigger_exit_on_abort(&self, tid: usize) {
        let _ = self.abort_thread.compare_exchange(
            usize::MAX,
            tid,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
        self.exit_on_abort.store(true, Ordering::Relaxed);
        signals::wake();
    }

    pub fn exit_on_abort_triggered(&self) -> bool {
        self.exit_on_abort.load(Ordering::Relaxed)
    }

    /// The thread named in `Run was aborted due to an error in thread N`.
    pub fn abort_thread(&self) -> Option<usize> {
        match self.abort_thread.load(Ordering::Relaxed) {
            usize::MAX => None,
            t => Some(t),
        }
    }
}
