//! How many connections a thread opens at once: a window that adapts to
//! how fast the listener accepts them.
//!
//! # Why not all at once
//! A listener takes new connections from an accept queue of fixed length
//! (PgBouncer's `listen_backlog` defaults to 128; a proxy or a cloud
//! endpoint may allow fewer). Opening thousands of connections at once
//! overflows it: on a Unix-domain socket a non-blocking `connect` then
//! fails with `EAGAIN`, over TCP the kernel drops the handshake and the
//! client retransmits it only a second later. PostgreSQL's own queue is
//! deep, which is why opening everything at once looked free against a
//! server and failed behind a pooler.
//!
//! # The window
//! A thread starts at most [`Pacer::window`] connection attempts at a time;
//! the others wait in a queue, in client order, and each attempt that ends
//! hands its slot to the next. The window changes with every attempt that
//! completes, by the time it took (socket, startup, authentication):
//! - quick (at most twice the quickest seen, plus [`SLACK_US`]): the window
//!   grows, by one slot per quick connection at first, so that it doubles
//!   per round while the listener keeps up (slow start), and after the
//!   first sign of congestion by one slot per window of quick connections;
//! - slow: one slot fewer, so a listener that lets connections queue
//!   (their time grows with the number in flight) holds the window near
//!   the number it can serve at once, well under any accept queue;
//! - refused for a full queue (`EAGAIN` on a Unix socket): the window is
//!   halved (at most once per pause), the attempt gives its slot back and
//!   tries again on the same socket after a pause (1 ms, doubling up to
//!   64 ms while the listener stays full, back to 1 ms once a connection
//!   completes). Never at once: that would spin while the listener is
//!   busy;
//! - stalled (over TCP a full queue drops the handshake without a word,
//!   and the kernel sends it again only a second later): an attempt whose
//!   socket has not connected after four times the quickest connection
//!   seen (at least [`STALL_MIN_US`], at most [`STALL_MAX_US`]; a
//!   handshake is one round trip of the several a connection takes) sends
//!   its request again on a new socket, and the window is halved as for a
//!   full queue. Until a first connection has completed there is no
//!   measure of quick, and the kernel's own retransmission applies.
//!
//! The window is bounded by [`MIN_WINDOW`] and [`MAX_WINDOW`].
//! A listener that accepts connections one at a time (PgBouncer) is kept
//! busy by a window of a few connections; one that serves many in parallel
//! (PostgreSQL forks a backend per connection) lets the window grow.
//!
//! # Per thread, not shared
//! Each thread paces its own clients with its own window. Threads never
//! wait for each other while connecting (no lock, no atomics between
//! event loops), and every thread sees the listener's answers itself: a
//! full queue shrinks the windows of the threads that meet it. The sum of
//! the windows is what the listener sees, so `-j` threads may together
//! have `-j` times one window in flight, which the queue absorbs at any
//! realistic thread count.
//!
//! # What it does not change
//! `connect_timeout` still bounds each attempt from its first `connect`
//! (pauses included); a real refusal (no socket, connection refused, an
//! authentication error) ends the attempt as before, with libpq's words.
//! Waiting in the queue for a slot counts as connection time, as the time
//! a pgbench thread spends opening the connections before it does.
//!
//! The same pacer serves the start of the run and `-C`, where each
//! transaction opens its connection: the queue and the per-client states
//! are allocated with the thread, so pacing allocates nothing per
//! transaction.

use std::collections::VecDeque;

/// The window a thread starts with, at most: the threads together start
/// with no more than [`INITIAL_TOTAL`] attempts, fewer than any accept
/// queue takes (before a first connection completes there is no measure
/// of a stall, see the module doc).
pub const INITIAL_WINDOW: u32 = 8;
pub const INITIAL_TOTAL: u32 = 64;
/// The smallest window: one connection at a time is pgbench's own pace.
pub const MIN_WINDOW: u32 = 1;
/// The largest window, per thread.
pub const MAX_WINDOW: u32 = 512;
/// How much longer than twice the quickest connection a connection may
/// take and still count as quick (µs): room for the scheduler's noise.
pub const SLACK_US: i64 = 1_000;
/// The first and the longest pause before an attempt refused for a full
/// queue tries again (µs).
pub const PAUSE_MIN_US: i64 = 1_000;
pub const PAUSE_MAX_US: i64 = 64_000;
/// The bounds of the time after which a socket that has not connected is
/// taken for a dropped handshake (µs).
pub const STALL_MIN_US: i64 = 50_000;
pub const STALL_MAX_US: i64 = 500_000;

/// Where a client stands with the pacer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// Not connecting.
    Idle,
    /// Waiting in the queue for a slot.
    Queued,
    /// Given a slot by an attempt that ended; not yet dialing.
    Woken,
    /// Connecting, holding a slot.
    Dialing,
    /// Refused for a full queue: waiting for its pause to end, no slot held.
    Paused,
}

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Connected.
    Ready,
    /// Failed for good (the client reports it).
    Failed,
    /// The listener's queue was full: try again after the pause returned.
    Busy,
}

/// One thread's connection window; client indexes are the thread's own.
#[derive(Debug)]
pub struct Pacer {
    window: u32,
    /// Slots held: clients dialing or woken.
    held: u32,
    queue: VecDeque<usize>,
    slots: Vec<Slot>,
    /// When each client's attempt got its slot (µs).
    started: Vec<i64>,
    quickest_us: i64,
    pause_us: i64,
    /// When the window was last halved for a full queue (µs).
    halved_at: Option<i64>,
    /// No sign of congestion yet: the window grows by one per quick
    /// connection (else by one per window of them, counted in `credit`).
    slow_start: bool,
    credit: u32,
}

impl Pacer {
    /// The pacer of one of `threads` threads, for its `clients`.
    pub fn new(clients: usize, threads: u32) -> Pacer {
        Pacer {
            window: (INITIAL_TOTAL / threads.max(1)).clamp(MIN_WINDOW, INITIAL_WINDOW),
            held: 0,
            queue: VecDeque::with_capacity(clients),
            slots: vec![Slot::Idle; clients],
            started: vec![0; clients],
            quickest_us: i64::MAX,
            pause_us: PAUSE_MIN_US,
            halved_at: None,
            slow_start: true,
            credit: 0,
        }
    }

    /// How long an attempt's socket may take to connect before it is
    /// taken for a dropped handshake; `None` until a connection completed.
    pub fn stall_after(&self) -> Option<i64> {
        (self.quickest_us != i64::MAX)
            .then(|| (self.quickest_us * 4).clamp(STALL_MIN_US, STALL_MAX_US))
    }

    /// Whether client `idx`'s attempt has been dialing for `stall` or more.
    pub fn dialing_since(&self, idx: usize, now_us: i64, stall: i64) -> bool {
        self.slots.get(idx) == Some(&Slot::Dialing)
            && now_us - self.started.get(idx).copied().unwrap_or(now_us) >= stall
    }

    /// Client `idx`'s socket had not connected in time and was opened
    /// again: the window shrinks as for a full queue.
    pub fn stalled(&mut self, idx: usize, now_us: i64) {
        if let Some(started) = self.started.get_mut(idx) {
            *started = now_us;
        }
        self.congested(now_us, self.stall_after().unwrap_or(STALL_MIN_US));
    }

    /// Halves the window, at most once per `period`.
    fn congested(&mut self, now_us: i64, period: i64) {
        self.slow_start = false;
        if self.halved_at.map_or(true, |t| now_us - t >= period) {
            self.window = (self.window / 2).max(MIN_WINDOW);
            self.halved_at = Some(now_us);
        }
    }

    #[cfg(test)]
    pub fn window(&self) -> u32 {
        self.window
    }

    /// Client `idx` wants to dial (or is woken, or its pause is over):
    /// true when it holds a slot and may go on, false when it waits in the
    /// queue (an attempt that ends will wake it).
    pub fn request(&mut self, idx: usize, now_us: i64) -> bool {
        let Some(slot) = self.slots.get(idx).copied() else {
            return true;
        };
        match slot {
            Slot::Dialing => true,
            Slot::Queued => false,
            Slot::Woken => {
                self.dial(idx, now_us);
                true
            }
            // Newcomers queue behind those already waiting; a client back
            // from its pause goes first.
            Slot::Idle | Slot::Paused => {
                let fair = slot == Slot::Paused || self.queue.is_empty();
                if fair && self.held < self.window {
                    self.held += 1;
                    self.dial(idx, now_us);
                    return true;
                }
                self.slots[idx] = Slot::Queued;
                if slot == Slot::Paused {
                    self.queue.push_front(idx);
                } else {
                    self.queue.push_back(idx);
                }
                false
            }
        }
    }

    fn dial(&mut self, idx: usize, now_us: i64) {
        self.slots[idx] = Slot::Dialing;
        self.started[idx] = now_us;
    }

    /// Client `idx`'s attempt ended: the window adapts, the slot goes to
    /// the clients handed to `wake` (run them: they hold their slots).
    /// Returns the pause before a [`Outcome::Busy`] attempt tries again.
    pub fn ended(
        &mut self,
        idx: usize,
        now_us: i64,
        outcome: Outcome,
        mut wake: impl FnMut(usize),
    ) -> i64 {
        let Some(slot) = self.slots.get(idx).copied() else {
            return 0;
        };
        if matches!(slot, Slot::Dialing | Slot::Woken) {
            self.held -= 1;
        }
        let mut pause = 0;
        match outcome {
            Outcome::Ready => {
                self.slots[idx] = Slot::Idle;
                self.pause_us = PAUSE_MIN_US;
                let took = now_us - self.started[idx];
                self.quickest_us = self.quickest_us.min(took);
                if took <= self.quickest_us.saturating_mul(2).saturating_add(SLACK_US) {
                    self.grow();
                } else {
                    self.slow_start = false;
                    self.window = (self.window - 1).max(MIN_WINDOW);
                }
            }
            Outcome::Failed => self.slots[idx] = Slot::Idle,
            Outcome::Busy => {
                self.slots[idx] = Slot::Paused;
                pause = self.pause_us;
                self.congested(now_us, pause);
                self.pause_us = (self.pause_us * 2).min(PAUSE_MAX_US);
            }
        }
        self.wake(&mut wake);
        pause
    }

    fn grow(&mut self) {
        if !self.slow_start {
            self.credit += 1;
            if self.credit < self.window {
                return;
            }
            self.credit = 0;
        }
        self.window = (self.window + 1).min(MAX_WINDOW);
    }

    /// Hands the free slots to the clients first in the queue.
    fn wake(&mut self, wake: &mut impl FnMut(usize)) {
        while self.held < self.window {
            let Some(next) = self.queue.pop_front() else {
                break;
            };
            self.held += 1;
            self.slots[next] = Slot::Woken;
            wake(next);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn woken(p: &mut Pacer, idx: usize, now: i64, outcome: Outcome) -> (i64, Vec<usize>) {
        let mut list = Vec::new();
        let pause = p.ended(idx, now, outcome, |i| list.push(i));
        (pause, list)
    }

    #[test]
    fn the_first_clients_dial_and_the_rest_queue_in_order() {
        let mut p = Pacer::new(20, 2);
        let dialing: Vec<usize> = (0..20).filter(|&i| p.request(i, 0)).collect();
        assert_eq!(dialing, (0..INITIAL_WINDOW as usize).collect::<Vec<_>>());
        // A quick completion frees its slot and adds one: two wake.
        let (_, list) = woken(&mut p, 0, 100, Outcome::Ready);
        assert_eq!(list, vec![8, 9]);
        assert!(p.request(8, 100));
        assert!(p.request(9, 100));
    }

    #[test]
    fn many_threads_start_with_smaller_windows() {
        assert_eq!(Pacer::new(10, 1).window(), INITIAL_WINDOW);
        assert_eq!(Pacer::new(10, 16).window(), 4);
        assert_eq!(Pacer::new(10, 1000).window(), MIN_WINDOW);
    }

    #[test]
    fn slow_connections_shrink_the_window_and_quick_ones_grow_it() {
        let mut p = Pacer::new(4, 2);
        assert!(p.request(0, 0));
        woken(&mut p, 0, 100, Outcome::Ready);
        assert_eq!(
            p.window(),
            INITIAL_WINDOW + 1,
            "slow start: one per connection"
        );
        assert!(p.request(1, 1_000));
        woken(&mut p, 1, 1_000 + 2 * 100 + SLACK_US + 1, Outcome::Ready);
        assert_eq!(p.window(), INITIAL_WINDOW);
        // After a slow one, one slot per window of quick connections.
        for _ in 0..INITIAL_WINDOW {
            assert!(p.request(2, 0));
            woken(&mut p, 2, 50, Outcome::Ready);
        }
        assert_eq!(p.window(), INITIAL_WINDOW + 1);
        for _ in 0..MAX_WINDOW * MAX_WINDOW {
            assert!(p.request(2, 0));
            woken(&mut p, 2, 50, Outcome::Ready);
        }
        assert_eq!(p.window(), MAX_WINDOW);
    }

    #[test]
    fn a_socket_that_does_not_connect_stalls_after_four_quickest_connections() {
        let mut p = Pacer::new(2, 2);
        assert_eq!(
            p.stall_after(),
            None,
            "no measure before a first connection"
        );
        assert!(p.request(0, 0));
        woken(&mut p, 0, 30_000, Outcome::Ready);
        assert_eq!(p.stall_after(), Some(120_000));
        assert!(p.request(1, 1_000_000));
        assert!(!p.dialing_since(1, 1_119_999, 120_000));
        assert!(p.dialing_since(1, 1_120_000, 120_000));
        let before = p.window();
        p.stalled(1, 1_120_000);
        assert_eq!(p.window(), before / 2);
        assert!(
            !p.dialing_since(1, 1_120_001, 120_000),
            "the new socket's time starts"
        );
        let mut quick = Pacer::new(1, 2);
        quick.request(0, 0);
        woken(&mut quick, 0, 10, Outcome::Ready);
        assert_eq!(quick.stall_after(), Some(STALL_MIN_US));
    }

    #[test]
    fn a_full_queue_halves_the_window_once_per_pause_and_pauses_longer() {
        let mut p = Pacer::new(30, 2);
        for i in 0..30 {
            p.request(i, 0);
        }
        let (pause, list) = woken(&mut p, 0, 10, Outcome::Busy);
        assert_eq!(pause, PAUSE_MIN_US);
        assert_eq!(p.window(), INITIAL_WINDOW / 2);
        assert!(list.is_empty(), "seven dialing, window four: nobody wakes");
        let (pause, _) = woken(&mut p, 1, 20, Outcome::Busy);
        assert_eq!(pause, 2 * PAUSE_MIN_US);
        assert_eq!(p.window(), INITIAL_WINDOW / 2, "halved once per pause");
        // Back from its pause, a client goes before the queue.
        let mut list = Vec::new();
        for i in 2..8 {
            list.extend(woken(&mut p, i, 30, Outcome::Failed).1);
        }
        assert_eq!(list, vec![8, 9, 10, 11]);
        assert!(!p.request(0, 5_000));
        assert!(p.request(8, 5_000));
        assert_eq!(woken(&mut p, 8, 5_100, Outcome::Failed).1, vec![0]);
        assert!(p.request(0, 5_100));
    }

    #[test]
    fn the_pause_never_passes_its_bound_and_resets_on_success() {
        let mut p = Pacer::new(1, 2);
        let mut last = 0;
        for n in 0..20 {
            assert!(p.request(0, n * 100_000));
            let (pause, _) = woken(&mut p, 0, n * 100_000, Outcome::Busy);
            last = pause;
        }
        assert_eq!(last, PAUSE_MAX_US);
        assert_eq!(p.window(), MIN_WINDOW);
        assert!(p.request(0, 0));
        woken(&mut p, 0, 10, Outcome::Ready);
        assert!(p.request(0, 20));
        assert_eq!(woken(&mut p, 0, 30, Outcome::Busy).0, PAUSE_MIN_US);
    }
}
