//! One worker thread: its clients, one mio poller, a timer heap, and its
//! own statistics.
//!
//! Tokens are client indices within the thread; a client's `\shell` child
//! is watched under `clients + index`, the lingering connection of a
//! client that aborted in a pipeline under `2 * clients + index`, and the
//! stop signal under [`SIGNAL`]. The thread's resources are in
//! [`ThreadEnv`] (module `env`). Sockets are registered once, edge-triggered, for reading;
//! writability is added only while a write is incomplete (a socket
//! watched for it would report every time its peer reads), so a client
//! waiting for results never re-registers. The loop: wait (in
//! `epoll_pwait2`, see [`super::timer`]; no longer than the nearest timer,
//! not at all when a client is ready to run), advance
//! the clients that have events, then those whose timers are due, then
//! those that yielded; clock read once per turn.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Interest, Poll, Token};
use pgwire::ConnectProgress;

use crate::stats::ThreadStats;

use super::client::{Client, State};
use super::env::{redial_if_stalled, ThreadEnv};
use super::error::EngineError;
use super::machine;
use super::pacing::Outcome;
use super::plan::Plan;
use super::shared::Shared;
use super::spin::{SpinMode, SpinTrials};
use super::timer::Ready;
use super::uring::{Done, Ring};
use crate::program::log;

/// Token of the stop signal's pipe.
pub const SIGNAL: Token = Token(usize::MAX - 1);
/// Token of the thread's timerfd (see [`super::timer::Sleeper`]).
pub const TIMER: Token = Token(usize::MAX - 2);

/// What a worker hands back when it is done.
pub struct WorkerResult {
    pub stats: ThreadStats,
    pub conn_duration_us: i64,
    /// When this thread's clients started (after all connected), µs.
    pub bench_start_us: i64,
    pub aborted: usize,
    /// Clients still running when a stop cut the run short.
    pub interrupted: usize,
    /// Writing the transaction log failed (the error was printed).
    pub log_failed: bool,
    /// CPU time of this thread from the start to the end of its run, µs.
    pub cpu_us: i64,
    /// Time it was runnable but waited for a CPU meanwhile, µs, where the
    /// kernel says.
    pub run_delay_us: Option<i64>,
    /// `--reconnect`: each client's outage timeline.
    pub outages: Vec<crate::model::failover::ClientOutage>,
}

/// The thread's body: connect every client (paced), wait for the
/// other threads, then run.
pub fn run(
    plan: Arc<Plan>,
    shared: Arc<Shared>,
    mut clients: Vec<Client>,
    mut env: ThreadEnv,
    mut poll: Poll,
) -> Option<WorkerResult> {
    let mut events = Ready::with_capacity(clients.len() * 2 + 4);
    if !get_ready(
        &plan,
        &shared,
        &mut clients,
        &mut env,
        &mut poll,
        &mut events,
    ) {
        return None;
    }
    let start = env.clock.now_us();
    let cpu_start = crate::observe::cpu::thread_cpu_us();
    let delay_start = crate::observe::cpu::thread_run_delay_us();
    begin_run(&mut env, &shared, clients.len(), start);
    let mut remaining = clients.len();
    let mut stop_seen: Option<i64> = None;
    // Thread 0 decides for all whether `--busy-poll=auto` spins.
    let mut trials =
        (env.tid == 0 && env.spin == SpinMode::Adaptive).then(|| SpinTrials::new(start));
    while remaining > 0 {
        let timeout = loop_timeout(&env, stop_seen, trials.as_ref());
        let Some(done) = wait(
            &mut env,
            &mut poll,
            &mut events,
            &mut clients,
            &shared,
            timeout,
        ) else {
            break;
        };
        let now = env.clock.now_us();
        if shared.stop_requested() && stop_seen.is_none() {
            stop_seen = Some(now);
        }
        env.over = stop_seen.is_some() || env.end_us.is_some_and(|end| now >= end);
        let mut turn = Turn {
            plan: &plan,
            shared: &shared,
            clients: &mut clients,
            env: &mut env,
            remaining: &mut remaining,
        };
        turn.run(&done, &events, now);
        if let Some(ring) = env.ring.as_mut() {
            ring.restore_done(done);
        }
        after_turn(&mut env, &shared, trials.as_mut(), now);
        if shared.exit_on_abort_triggered()
            || cut_off(stop_seen, env.end_us).is_some_and(|t| now >= t)
        {
            break;
        }
    }
    end_run(&mut env, &shared, trials);
    let stopped = shared.stop_requested() || shared.exit_on_abort_triggered();
    let cpu_us = crate::observe::cpu::thread_cpu_us() - cpu_start;
    let run_delay_us = crate::observe::cpu::thread_run_delay_us()
        .zip(delay_start)
        .map(|(end, start)| end - start);
    let mut result = finish(clients, env, start, stopped);
    result.cpu_us = cpu_us;
    result.run_delay_us = run_delay_us;
    Some(result)
}

/// Before the run: the thread's ring (when io_uring is to be used) and
/// progress reports, every client connected (paced; not under `-C`), then
/// the wait for the other threads (and `--start-at`). False when the run
/// is not to start (see [`Shared::wait_start`]).
fn get_ready(
    plan: &Plan,
    shared: &Shared,
    clients: &mut [Client],
    env: &mut ThreadEnv,
    poll: &mut Poll,
    events: &mut Ready,
) -> bool {
    if env.io_uring {
        // A ring that cannot be made leaves the thread on epoll.
        env.ring = Ring::new(clients.len(), poll.as_raw_fd()).ok();
    }
    if let Some(p) = env.progress.as_mut() {
        p.start(env.tid);
    }
    if !plan.connect_per_transaction {
        if let Err(e) = connect_clients(plan, clients, env, poll, events) {
            shared.fail_start(e);
            return false;
        }
        shared.add_backends(
            clients
                .iter()
                .filter_map(|c| c.conn.as_ref().map(pgwire::Connection::backend_pid)),
        );
    }
    if let Some(live) = env.live.as_mut() {
        let connected = clients.iter().filter(|c| c.conn.is_some()).count() as u32;
        live.connected(connected, &env.stats, env.clock.now_us());
    }
    shared.wait_start(env.clock.now_us(), &env.clock)
}

/// The run starts at `start`: the schedule of `-R` and the log's first
/// interval count from it, a timed run's end is the one all threads
/// share (in a study's step, also the end of what is counted), and every
/// client is ready to run.
fn begin_run(env: &mut ThreadEnv, shared: &Shared, clients: usize, start: i64) {
    env.throttle_trigger = start;
    if let Some(log) = env.log.as_mut() {
        log.begin(start);
    }
    env.end_us = shared.end_us();
    // Every thread's series starts where the measured window does, not
    // where the process did: under `--start-at` a generator started
    // early would otherwise show empty intervals before it.
    if let Some(at) = shared.window_start_us() {
        env.stats.series.begin_at(at);
    }
    if shared.length_after_connect_us.is_some() {
        env.count_until = env.end_us.unwrap_or(i64::MAX);
    }
    for idx in 0..clients {
        env.runq.push_back(idx);
    }
}

/// The loop is over: the last progress report, and the `--busy-poll=auto`
/// trial's verdict for the threads still running.
fn end_run(env: &mut ThreadEnv, shared: &Shared, trials: Option<SpinTrials>) {
    if let Some(p) = env.progress.as_mut() {
        p.finish(env.tid, &env.clock, &env.stats, shared);
    }
    if let Some(live) = env.live.as_mut() {
        live.finish(&env.stats);
    }
    // Threads still running go on the way that won, not the one on trial.
    if let Some(t) = trials {
        shared.spin.set(t.winner());
    }
}

/// How long this turn of the loop may wait (see [`wait_timeout`]); during
/// a `--busy-poll=auto` trial, no longer than the end of its part.
#[inline]
fn loop_timeout(
    env: &ThreadEnv,
    stop_seen: Option<i64>,
    trials: Option<&SpinTrials>,
) -> Option<Duration> {
    let mut timeout = wait_timeout(env, cut_off(stop_seen, env.end_us));
    if let Some(t) = trials {
        // Wake for the end of a trial even while this thread's own
        // clients wait for a long statement: the others follow it.
        let left = (t.part_end_us() - env.clock.now_us()).max(0) as u64;
        let left = Duration::from_micros(left);
        timeout = Some(timeout.map_or(left, |d| d.min(left)));
    }
    timeout
}

/// After each turn: the progress report, and the `--busy-poll=auto`
/// trial's measure of it (which switches every thread's spinning).
#[inline]
fn after_turn(env: &mut ThreadEnv, shared: &Shared, trials: Option<&mut SpinTrials>, now: i64) {
    if let Some(p) = env.progress.as_mut() {
        p.tick(env.tid, env.clock.now_us(), &env.stats, shared);
    }
    if let Some(live) = env.live.as_mut() {
        live.tick(&env.stats, now);
    }
    if let Some(t) = trials {
        // Service time: under -R the latency also holds the schedule
        // lag, which grows or shrinks whichever way the thread waits.
        let spin = t.tick(now, env.stats.total.service());
        if spin != shared.spin.on() {
            shared.spin.set(spin);
        }
    }
}

/// Waits for work (socket events, completions, timers) through the ring or
/// epoll; the completions the ring reports. None when waiting failed: the
/// thread then ends its run.
fn wait(
    env: &mut ThreadEnv,
    poll: &mut Poll,
    events: &mut Ready,
    clients: &mut [Client],
    shared: &Shared,
    timeout: Option<Duration>,
) -> Option<Vec<Done>> {
    match env.ring.as_mut() {
        Some(ring) => {
            if let Err(e) = ring.wait(timeout, clients) {
                log::error(format_args!("io_uring_enter() failed: {e}"));
                return None;
            }
            let done = ring.take_done();
            events.clear();
            if done.iter().any(|d| matches!(d, Done::Epoll)) {
                let _ = env
                    .sleeper
                    .wait(poll.as_raw_fd(), events, Some(Duration::ZERO));
            }
            Some(done)
        }
        None => {
            let spinning = match env.spin {
                SpinMode::Never => false,
                SpinMode::Always => true,
                SpinMode::Adaptive => shared.spin.on(),
            };
            let waited = wait_epoll(poll, events, env, clients, spinning, timeout);
            if let Err(e) = waited {
                log::error(format_args!("epoll_wait() failed: {e}"));
                return None;
            }
            Some(Vec::new())
        }
    }
}

/// Waits for events or the timeout on epoll: spinning first when
/// `spinning` (see [`SpinMode`]) and some client awaits an answer (not
/// while every client sleeps until a timer). An interrupted wait returns
/// no events.
fn wait_epoll(
    poll: &mut Poll,
    events: &mut Ready,
    env: &ThreadEnv,
    clients: &[Client],
    spinning: bool,
    mut timeout: Option<Duration>,
) -> std::io::Result<()> {
    if spinning && clients.iter().any(|c| c.state.waits_for_io()) {
        let started = Instant::now();
        if spin(poll, events, env, timeout) {
            return Ok(());
        }
        // The spin used part of the wait; a timer is not pushed back by it.
        timeout = timeout.map(|t| t.saturating_sub(started.elapsed()));
        if timeout.is_some_and(|t| t.is_zero()) {
            events.clear();
            return Ok(());
        }
    }
    env.sleeper.wait(poll.as_raw_fd(), events, timeout)
}

/// The longest a thread polls without sleeping before it sleeps in
/// `epoll_wait` after all: long enough for a point query's answer on the
/// same machine, short enough that a long query costs a spare core little.
pub const SPIN_BUDGET: Duration = Duration::from_micros(200);

/// Polls without sleeping until an event arrives (true), the spin budget
/// is spent or the loop's own timeout is reached (false, nothing
/// collected). A zero timeout means the loop has work: nothing to spin for.
fn spin(poll: &mut Poll, events: &mut Ready, env: &ThreadEnv, timeout: Option<Duration>) -> bool {
    let budget = timeout.map_or(SPIN_BUDGET, |t| t.min(SPIN_BUDGET));
    if budget.is_zero() {
        return false;
    }
    let start = Instant::now();
    loop {
        let polled = env
            .sleeper
            .wait(poll.as_raw_fd(), events, Some(Duration::ZERO));
        if polled.is_ok() && !events.is_empty() {
            return true;
        }
        if start.elapsed() >= budget {
            return false;
        }
        std::hint::spin_loop();
    }
}

/// How long transactions in flight may take to finish after a stop
/// request (SIGINT, SIGTERM).
const STOP_GRACE_US: i64 = 1_000_000;
/// The same after the end of a `-T` run. pgbench waits for them however
/// long they take; a server that stopped answering would then keep the
/// run going forever, so pgbolt gives up after this long.
pub const END_GRACE_US: i64 = 5_000_000;

/// When the clients still running are cut off (their queries cancelled,
/// their connections closed): a grace period after a stop request or
/// after the end of a timed run, whichever comes first.
fn cut_off(stop_seen: Option<i64>, end_us: Option<i64>) -> Option<i64> {
    let after_stop = stop_seen.map(|s| s + STOP_GRACE_US);
    let after_end = end_us.map(|e| e + END_GRACE_US);
    match (after_stop, after_end) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// How long the loop may sleep: not at all when a client is ready, else
/// until the nearest timer, the end of a timed run, the next progress
/// tick, or (once the run is over) the cut-off.
fn wait_timeout(env: &ThreadEnv, cut_off: Option<i64>) -> Option<Duration> {
    if !env.runq.is_empty() {
        return Some(Duration::ZERO);
    }
    let mut next = env.timers.peek().map(|Reverse((t, _))| *t);
    let mut earliest = |t: i64| next = Some(next.map_or(t, |n| n.min(t)));
    if let (Some(end), false) = (env.end_us, env.over) {
        earliest(end);
    }
    if let Some(p) = env.progress.as_ref() {
        earliest(p.next_wake());
    }
    let now = env.clock.now_us();
    if let (Some(t), true) = (cut_off, env.over) {
        earliest(t);
    }
    next.map(|t| Duration::from_micros((t - now).max(0) as u64))
}

/// One turn of the loop: the clients with events, then those whose timers
/// are due, then those that yielded.
struct Turn<'a> {
    plan: &'a Plan,
    shared: &'a Shared,
    clients: &'a mut [Client],
    env: &'a mut ThreadEnv,
    remaining: &'a mut usize,
}

impl Turn<'_> {
    fn run(&mut self, done: &[Done], events: &Ready, now: i64) {
        for &d in done {
            let Done::Client(idx) = d else {
                continue;
            };
            let receiving = self.env.ring.as_ref().is_some_and(|r| r.receiving(idx));
            let Some(c) = self.clients.get_mut(idx) else {
                continue;
            };
            if !receiving && c.state.waits_for_io() {
                self.step(idx);
            } else {
                self.env.sync_io(c, idx);
            }
        }
        for event in events.iter() {
            let token = event.token();
            if token == SIGNAL || token == TIMER {
                continue;
            }
            if let Some(pool) = self.env.pool.as_mut() {
                if let Some(slot) = pool.slot_of(token) {
                    let closed = event.is_read_closed() || event.is_error();
                    if let Some(idx) = pool.holder_or_note(slot, closed) {
                        self.pooled_event(idx, closed);
                    }
                    continue;
                }
            }
            if token.0 >= 2 * self.env.clients {
                let idx = token.0 - 2 * self.env.clients;
                self.env.lingering.readable(idx, &self.env.registry);
                continue;
            }
            let idx = token.0 % self.env.clients.max(1);
            if token.0 < self.env.clients && (event.is_read_closed() || event.is_error()) {
                if let Some(c) = self.clients.get_mut(idx) {
                    c.peer_closed = true;
                }
            }
            if self
                .clients
                .get(idx)
                .is_some_and(|c| c.state.waits_for_io())
            {
                self.step(idx);
            }
        }
        while let Some(Reverse((t, idx))) = self.env.timers.peek().copied() {
            if t > now {
                break;
            }
            self.env.timers.pop();
            if self
                .clients
                .get(idx)
                .is_some_and(|c| c.state.waits_for_time())
            {
                self.step(idx);
            }
        }
        for _ in 0..self.env.runq.len() {
            let Some(idx) = self.env.runq.pop_front() else {
                break;
            };
            self.step(idx);
        }
    }

    /// An event on the pooled connection client `idx` holds.
    fn pooled_event(&mut self, idx: usize, closed: bool) {
        let Some(c) = self.clients.get_mut(idx) else {
            return;
        };
        c.peer_closed |= closed;
        if c.state.waits_for_io() {
            self.step(idx);
        }
    }

    fn step(&mut self, idx: usize) {
        step(
            self.plan,
            self.shared,
            self.clients,
            idx,
            self.env,
            self.remaining,
        );
    }
}

/// Cancels what is still running after a stop, closes everything, and
/// hands back the thread's results.
///
/// The cancel requests go out from a thread of their own: a server that
/// stopped answering accepts the request's connection but never reads it,
/// and must not hold up the report. They are given a second before the
/// connections are closed: a pooler such as pgbouncer finds the server
/// connection to cancel through the client's connection, so a request
/// that arrives after its client is gone is dropped ("failed cancel
/// request") and the query runs on in the server. Connections of aborted
/// clients that still linger get a grace period, unless the run was
/// `stopped` (a signal, `--exit-on-abort`).
fn finish(mut clients: Vec<Client>, mut env: ThreadEnv, start: i64, stopped: bool) -> WorkerResult {
    if let Some(ring) = env.ring.as_mut() {
        ring.quiesce();
    }
    let tokens: Vec<pgwire::CancelToken> = clients
        .iter()
        .filter(|c| !c.state.is_done())
        .filter_map(|c| c.conn.as_ref().map(|conn| conn.cancel_token()))
        .collect();
    if !tokens.is_empty() {
        let _ = cancel_in_background(tokens).recv_timeout(Duration::from_secs(1));
    }
    let mut interrupted = 0;
    for (idx, c) in clients.iter_mut().enumerate() {
        if !c.state.is_done() {
            interrupted += 1;
        }
        env.close(c, idx);
    }
    if let Some(pool) = env.pool.as_mut() {
        for conn in pool.drain_idle() {
            let _ = env.registry.deregister(&mut SourceFd(&conn.fd()));
            conn.close();
        }
    }
    std::mem::take(&mut env.lingering).finish(stopped);
    if let Some(log) = env.log.as_mut() {
        if let Err(e) = log.finish(env.clock.now_us()) {
            if !env.log_failed {
                log::error(format_args!("{e}"));
                env.log_failed = true;
            }
        }
    }
    let aborted = clients.iter().filter(|c| c.state == State::Aborted).count();
    let hosts = super::reconnect::host_names(env.connector.config());
    let outages = clients
        .iter()
        .filter_map(|c| c.watch.as_ref().map(|w| w.outage(&hosts)))
        .filter(|o| o.first_error_us.is_some() || o.failures.total() > 0)
        .collect();
    WorkerResult {
        outages,
        stats: env.stats,
        conn_duration_us: env.conn_duration,
        bench_start_us: start,
        aborted,
        interrupted,
        log_failed: env.log_failed,
        cpu_us: 0,
        run_delay_us: None,
    }
}

/// Sends the cancel requests one after another on a detached thread; the
/// receiver hears when all are delivered (or the thread could not start).
fn cancel_in_background(tokens: Vec<pgwire::CancelToken>) -> std::sync::mpsc::Receiver<()> {
    let (tx, rx) = std::sync::mpsc::channel();
    let _ = std::thread::Builder::new()
        .name("pgbolt-cancel".to_owned())
        .spawn(move || {
            for token in &tokens {
                let _ = token.cancel();
            }
            let _ = tx.send(());
        });
    rx
}

fn step(
    plan: &Plan,
    shared: &Shared,
    clients: &mut [Client],
    idx: usize,
    env: &mut ThreadEnv,
    remaining: &mut usize,
) {
    // pgbench leaves its loop over the clients at the first abort under
    // --exit-on-abort: the clients after it in the same turn are not
    // advanced, so their errors are not reported.
    if plan.exit_on_abort && shared.exit_on_abort_triggered() {
        return;
    }
    let Some(c) = clients.get_mut(idx) else {
        return;
    };
    if c.state.is_done() || env.ring.as_ref().is_some_and(|r| r.receiving(idx)) {
        return;
    }
    machine::advance(c, idx, plan, env);
    env.sync_io(c, idx);
    if c.state.is_done() {
        machine::advance(c, idx, plan, env);
        *remaining -= 1;
        if c.state == State::Aborted && plan.exit_on_abort {
            shared.trigger_exit_on_abort(env.tid);
        }
    }
}

/// Opens the connections of the run's start: one per client, or under
/// `--pool-size` the thread's share of the pool, opened by its first
/// clients as theirs would be (paced alike) and then handed to the pool,
/// whose tokens they are registered under.
fn connect_clients(
    plan: &Plan,
    clients: &mut [Client],
    env: &mut ThreadEnv,
    poll: &mut Poll,
    events: &mut Ready,
) -> Result<(), EngineError> {
    let Some(size) = env.pool.as_ref().map(|p| p.size) else {
        return connect_all(clients, env, poll, events);
    };
    let opening = size.min(clients.len());
    let openers = &mut clients[..opening];
    connect_all(openers, env, poll, events)?;
    let per_script = plan.commands_per_script();
    for c in openers {
        let (Some(conn), Some(pool)) = (c.conn.take(), env.pool.as_mut()) else {
            continue;
        };
        let fd = conn.fd();
        let slot = pool.add(conn, &per_script);
        env.registry
            .reregister(&mut SourceFd(&fd), pool.token(slot), Interest::READABLE)
            .map_err(EngineError::Poll)?;
    }
    Ok(())
}

/// Opens every client's connection, as many at once as the thread's
/// window allows (see [`super::pacing`]); the first failure is returned
/// with the client's number.
fn connect_all(
    clients: &mut [Client],
    env: &mut ThreadEnv,
    poll: &mut Poll,
    events: &mut Ready,
) -> Result<(), EngineError> {
    let n = clients.len();
    let mut pending: Vec<Option<pgwire::Connecting>> = (0..n).map(|_| None).collect();
    let mut left = n;
    let mut ready: Vec<usize> = (0..n).collect();
    let mut woken: Vec<usize> = Vec::with_capacity(n);
    // Wake-ups: the end of a pause after a full queue, the time a socket
    // that has not connected is taken for stalled.
    let mut wakeups: BinaryHeap<Reverse<(i64, usize)>> = BinaryHeap::new();
    let timeouts = env
        .connector
        .config()
        .connect_timeout
        .is_some_and(|t| !t.is_zero());
    while left > 0 {
        while !ready.is_empty() {
            for idx in ready.drain(..) {
                if clients[idx].conn.is_some() {
                    continue;
                }
                connect_one(idx, clients, &mut pending, env, &mut wakeups, &mut woken)?;
                if clients[idx].conn.is_some() {
                    left -= 1;
                }
            }
            ready.append(&mut woken);
        }
        if left == 0 {
            break;
        }
        let mut wake = wakeups.peek().map(|Reverse((t, _))| *t);
        if timeouts {
            let now = env.clock.now_us();
            let instant = Instant::now();
            for d in pending.iter().flatten().filter_map(|p| p.deadline()) {
                let at = now + d.saturating_duration_since(instant).as_micros() as i64;
                wake = Some(wake.map_or(at, |w| w.min(at)));
            }
        }
        let timeout = wake.map(|t| Duration::from_micros((t - env.clock.now_us()).max(0) as u64));
        env.sleeper
            .wait(poll.as_raw_fd(), events, timeout)
            .map_err(EngineError::Poll)?;
        ready.extend(events.iter().map(|e| e.token().0).filter(|&t| t < n));
        let now = env.clock.now_us();
        while let Some(Reverse((t, idx))) = wakeups.peek().copied() {
            if t > now {
                break;
            }
            wakeups.pop();
            ready.push(idx);
        }
        if events.is_empty() && timeouts {
            // A deadline may have passed: the attempts find out.
            ready.extend((0..n).filter(|&i| pending[i].is_some()));
        }
    }
    Ok(())
}

/// Advances client `idx`'s connection at the start of the run, once it
/// holds a slot of the window; attempts that end hand their slots to the
/// clients pushed onto `woken`.
fn connect_one(
    idx: usize,
    clients: &mut [Client],
    pending: &mut [Option<pgwire::Connecting>],
    env: &mut ThreadEnv,
    wakeups: &mut BinaryHeap<Reverse<(i64, usize)>>,
    woken: &mut Vec<usize>,
) -> Result<(), EngineError> {
    let now = env.clock.now_us();
    if !env.pacer.request(idx, now) {
        return Ok(());
    }
    let connecting = pending[idx].get_or_insert_with(|| env.connector.connect());
    redial_if_stalled(&mut env.pacer, connecting, idx, now);
    match connecting.poll() {
        Ok(ConnectProgress::Wait { fd, new_socket, .. }) => {
            if new_socket {
                env.watch_connecting(fd, idx);
                if let Some(stall) = env.pacer.stall_after() {
                    wakeups.push(Reverse((now + stall, idx)));
                }
            }
        }
        Ok(ConnectProgress::Busy) => {
            let pause = env.pacer.ended(idx, now, Outcome::Busy, |j| woken.push(j));
            wakeups.push(Reverse((now + pause, idx)));
        }
        Ok(ConnectProgress::Ready(mut conn)) => {
            super::setup::show_notices(connecting.take_notices());
            pending[idx] = None;
            let done = env.clock.now_us();
            env.pacer
                .ended(idx, done, Outcome::Ready, |j| woken.push(j));
            env.adopt(&mut conn, idx).map_err(EngineError::Poll)?;
            clients[idx].conn = Some(*conn);
        }
        Err(error) => {
            super::setup::show_notices(connecting.take_notices());
            return Err(EngineError::ClientConnection {
                client: clients[idx].id,
                error,
            });
        }
    }
    Ok(())
}
