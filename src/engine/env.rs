//! What a worker thread owns besides its clients: its poller's registry,
//! timers and run queue, statistics and transaction log, random states,
//! the I/O driver's ring, and the connections that still linger. The state
//! machine reaches the thread only through [`ThreadEnv`].

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::fs::File;
use std::os::fd::RawFd;
use std::time::Instant;

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use pgwire::{ConnectProgress, Connector};

use crate::random::PrngState;
use crate::stats::{LogEntry, ThreadStats, TransactionLog};

use super::app_pool::Pool;
use super::client::{Client, State};
use super::clock::Clock;
use super::linger::Lingering;
use super::pacing::{Outcome, Pacer};
use super::progress::Progress;
use super::spin::SpinMode;
use super::timer::Sleeper;
use super::uring::Ring;
use crate::program::log;

/// Opens client `idx`'s connection request again on a new socket when
/// its socket has not connected for longer than the pacer allows (see
/// [`super::pacing`]): over TCP a full accept queue drops the handshake.
pub(super) fn redial_if_stalled(
    pacer: &mut Pacer,
    connecting: &mut pgwire::Connecting,
    idx: usize,
    now: i64,
) {
    let Some(stall) = pacer.stall_after() else {
        return;
    };
    if pacer.dialing_since(idx, now, stall) && connecting.redial() {
        pacer.stalled(idx, now);
    }
}

/// What the state machine may touch besides its client.
/// Where a client's connection attempt is.
pub enum Opening {
    /// Waiting for a slot, the socket or a timer.
    Waiting,
    /// Connected (or aborted, when the connection could not be watched).
    Open,
    /// The attempt failed.
    Failed(pgwire::Error),
}

pub struct ThreadEnv {
    pub tid: usize,
    pub clock: Clock,
    pub registry: Registry,
    pub connector: Connector,
    pub clients: usize,
    pub timers: BinaryHeap<Reverse<(i64, usize)>>,
    pub runq: VecDeque<usize>,
    /// How many connections the thread opens at once (see [`super::pacing`]).
    pub pacer: Pacer,
    pub stats: ThreadStats,
    pub log: Option<TransactionLog<File>>,
    pub log_failed: bool,
    pub choose: PrngState,
    pub throttle: PrngState,
    pub sample: PrngState,
    pub throttle_trigger: i64,
    pub conn_duration: i64,
    /// The run is over (`-T` elapsed or a stop was requested).
    pub over: bool,
    pub end_us: Option<i64>,
    /// What ends later is not counted: the end of a study's measured
    /// window ([`super::Window::FromConnected`]); `i64::MAX` in a plain
    /// run, which counts what ends after `-T` as pgbench does.
    pub count_until: i64,
    /// `-P`: progress lines (thread 0 prints them).
    pub progress: Option<Progress>,
    /// `--metrics-listen`: where the thread hands over its figures.
    pub live: Option<crate::metrics::Beat>,
    /// `--io` chose io_uring; the thread then creates [`ThreadEnv::ring`].
    pub io_uring: bool,
    /// The thread's ring, which does the I/O of its plain connections.
    pub ring: Option<Ring>,
    /// How the thread waits under `--busy-poll` (epoll only).
    pub spin: SpinMode,
    /// How the epoll loop sleeps until its nearest timer.
    pub sleeper: Sleeper,
    /// Connections of clients aborted inside a pipeline, ended with
    /// Terminate and kept open (see [`ThreadEnv::close`]).
    pub lingering: Lingering,
    /// `--pool-size`: the connections the thread's clients share.
    pub pool: Option<Pool>,
    /// `--reconnect`: the clients waiting to try again.
    pub reconnecting: super::reconnect::Waiting,
}

impl ThreadEnv {
    pub fn add_timer(&mut self, at_us: i64, idx: usize) {
        self.timers.push(Reverse((at_us, idx)));
    }

    /// Logs a transaction under `-l`; a write error is reported once, and
    /// the log is left alone after it (the lines still buffered would
    /// otherwise be written again, in vain, for every transaction).
    pub fn log_transaction(&mut self, entry: &LogEntry) {
        let Some(log) = self.log.as_mut() else {
            return;
        };
        if self.log_failed {
            return;
        }
        let sample = &mut self.sample;
        if let Err(e) = log.log(entry, &mut || sample.next_f64()) {
            if !self.log_failed {
                log::error(format_args!("{e}"));
                self.log_failed = true;
            }
        }
    }

    pub fn watch_shell(&mut self, fd: RawFd, idx: usize) {
        let _ = self.registry.register(
            &mut SourceFd(&fd),
            Token(self.clients + idx),
            Interest::READABLE,
        );
    }

    pub fn unwatch_shell(&mut self, fd: RawFd, _idx: usize) {
        let _ = self.registry.deregister(&mut SourceFd(&fd));
    }

    /// Drives the client's pending connection (`-C`); true when the client
    /// moved on (connected, or aborted), false to wait.
    pub fn poll_connect(&mut self, c: &mut Client, idx: usize) -> bool {
        match self.open(c, idx) {
            Opening::Waiting => false,
            Opening::Open => true,
            Opening::Failed(e) => {
                log::error(format_args!("{e}"));
                log::error(format_args!(
                    "client {} aborted while establishing connection",
                    c.id
                ));
                c.state = State::Aborted;
                true
            }
        }
    }

    /// Drops the connection attempt in progress, if any, freeing its
    /// pacer slot.
    pub fn abandon_connect(&mut self, c: &mut Client, idx: usize) {
        if c.connecting.take().is_some() {
            let now = self.clock.now_us();
            let runq = &mut self.runq;
            self.pacer
                .ended(idx, now, Outcome::Failed, |j| runq.push_back(j));
        }
    }

    /// Advances the client's connection attempt (starting one once the
    /// pacer gives it a slot). A connection that cannot be watched aborts
    /// the client (it is then `Open`, with the client `Aborted`).
    pub fn open(&mut self, c: &mut Client, idx: usize) -> Opening {
        let now = self.clock.now_us();
        if !self.pacer.request(idx, now) {
            // Waiting for a slot: an attempt that ends wakes the client.
            return Opening::Waiting;
        }
        if c.connecting.is_none() {
            // The connection time counts from here, as pgbench's counts the
            // connect itself: not the wait for a slot, which in pgbench is
            // the wait for the thread's other clients' connects.
            c.connect_start = now;
        }
        let connecting = c.connecting.get_or_insert_with(|| self.connector.connect());
        redial_if_stalled(&mut self.pacer, connecting, idx, now);
        let runq = &mut self.runq;
        match connecting.poll() {
            Ok(ConnectProgress::Wait { fd, new_socket, .. }) => {
                if new_socket {
                    self.watch_connecting(fd, idx);
                    if let Some(stall) = self.pacer.stall_after() {
                        self.add_timer(now + stall, idx);
                    }
                }
                if let Some(deadline) = connecting.deadline() {
                    let left = deadline.saturating_duration_since(Instant::now());
                    self.add_timer(now + left.as_micros() as i64, idx);
                }
                Opening::Waiting
            }
            Ok(ConnectProgress::Busy) => {
                let pause = self
                    .pacer
                    .ended(idx, now, Outcome::Busy, |j| runq.push_back(j));
                let left = connecting.deadline().map_or(pause, |d| {
                    d.saturating_duration_since(Instant::now()).as_micros() as i64
                });
                self.add_timer(now + pause.min(left), idx);
                Opening::Waiting
            }
            Ok(ConnectProgress::Ready(mut conn)) => {
                super::setup::show_notices(connecting.take_notices());
                c.connecting = None;
                let done = self.clock.now_us();
                self.pacer
                    .ended(idx, done, Outcome::Ready, |j| runq.push_back(j));
                if let Err(e) = self.adopt(&mut conn, idx) {
                    log::error(format_args!("could not watch the connection: {e}"));
                    log::error(format_args!(
                        "client {} aborted while establishing connection",
                        c.id
                    ));
                    c.state = State::Aborted;
                    return Opening::Open;
                }
                c.writing = false;
                c.peer_closed = false;
                c.conn = Some(*conn);
                Opening::Open
            }
            Err(e) => {
                super::setup::show_notices(connecting.take_notices());
                c.connecting = None;
                self.pacer
                    .ended(idx, now, Outcome::Failed, |j| runq.push_back(j));
                Opening::Failed(e)
            }
        }
    }

    /// Watches the socket of a connection being opened, for both
    /// readiness kinds (the connect state machine wants either).
    pub(super) fn watch_connecting(&self, fd: RawFd, idx: usize) {
        let _ = self.registry.register(
            &mut SourceFd(&fd),
            Token(idx),
            Interest::READABLE | Interest::WRITABLE,
        );
    }

    /// Watches a newly established connection: through the ring when there
    /// is one and the session is plain, else read-only on the poller.
    pub(super) fn adopt(
        &mut self,
        conn: &mut pgwire::Connection,
        idx: usize,
    ) -> std::io::Result<()> {
        if self.ring.is_some() && conn.set_external_io(true) {
            let _ = self.registry.deregister(&mut SourceFd(&conn.fd()));
            return Ok(());
        }
        read_only(&self.registry, conn.fd(), idx)
    }

    /// After a step: the ring queues the client's output and, when it waits
    /// for input, a read; on epoll, writability is watched only while a
    /// write is incomplete.
    pub(super) fn sync_io(&mut self, c: &mut Client, idx: usize) {
        let Some(conn) = c.conn.as_mut() else {
            return;
        };
        if conn.is_external_io() {
            let Some(ring) = self.ring.as_mut() else {
                return;
            };
            let wants_input = matches!(c.state, State::WaitResult | State::WaitRollback);
            if let Err(e) = ring.queue(idx, conn, wants_input) {
                // No completion will come: the client's next step reads
                // the error and aborts.
                conn.received(Err(e));
                self.runq.push_back(idx);
            }
            return;
        }
        let wants = conn.pending_output() > 0;
        if wants != c.writing {
            let interest = if wants {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            let fd = conn.fd();
            let token = match (c.slot, self.pool.as_ref()) {
                (Some(slot), Some(pool)) => pool.token(slot),
                _ => Token(idx),
            };
            let _ = self
                .registry
                .reregister(&mut SourceFd(&fd), token, interest);
            c.writing = wants;
        }
    }

    /// Closes the client's connection (and child), if any; a pooled
    /// connection is then lost to the pool.
    ///
    /// A client that aborted with its pipeline open first hands the
    /// statements it queued there to the server, as libpq does when
    /// pgbench closes such a connection: the server runs them before it
    /// reads Terminate, so a `COMMIT` among them commits. Its socket stays
    /// open until the server has ended the session (see [`Lingering`]).
    /// A client stopped by the end of the run or a signal sends nothing
    /// more, as pgbench's does.
    pub fn close(&mut self, c: &mut Client, idx: usize) {
        if let Some(mut conn) = c.conn.take() {
            let in_flight = self.ring.as_ref().is_some_and(|r| r.sending(idx));
            if let Some(ring) = self.ring.as_mut() {
                ring.forget(idx);
            }
            let mut queued = c.state == State::Aborted
                && c.pipeline.is_some()
                && conn.pending_output() > 0
                && !in_flight;
            if queued {
                conn.set_external_io(false);
                // Only output that went out whole is handed over: after a
                // part of it the server would wait for the rest of a
                // message, so the connection is closed as usual instead
                // and the server drops the incomplete message.
                queued = matches!(conn.flush(), Ok(true));
            }
            let fd = conn.fd();
            let _ = self.registry.deregister(&mut SourceFd(&fd));
            if queued {
                conn.terminate();
                let token = Token(2 * self.clients + idx);
                self.lingering.keep(idx, conn, &self.registry, token);
            } else if in_flight {
                conn.abandon();
            } else {
                conn.close();
            }
        }
        c.connecting = None;
        if let Some(pool) = self.pool.as_mut() {
            // The waiters of a pool left with no connection abort.
            self.runq.extend(pool.lost(c));
        }
        if let Some(job) = c.shell.take() {
            if let Some(fd) = job.fd() {
                self.unwatch_shell(fd, 0);
            }
            job.kill();
        }
    }
}

/// A connection that completed on its very first poll (a fast local
/// server with trust authentication) was never registered while it
/// connected, so it is registered here; without that, its client would
/// wait forever for results no event announces.
pub(super) fn read_only(registry: &Registry, fd: RawFd, idx: usize) -> std::io::Result<()> {
    let token = Token(idx);
    match registry.reregister(&mut SourceFd(&fd), token, Interest::READABLE) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            registry.register(&mut SourceFd(&fd), token, Interest::READABLE)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;
    use std::time::Duration;

    use mio::{Events, Poll};

    use super::*;

    /// Regression: a connection that finished connecting on its first poll
    /// was never registered, and its client waited forever for results.
    #[test]
    fn a_connection_never_registered_while_connecting_is_still_watched() {
        let mut poll = Poll::new().unwrap();
        let (ours, mut server) = UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        read_only(poll.registry(), ours.as_raw_fd(), 7).unwrap();
        server.write_all(b"Z").unwrap();
        let mut events = Events::with_capacity(4);
        poll.poll(&mut events, Some(Duration::from_secs(5)))
            .unwrap();
        let tokens: Vec<Token> = events.iter().map(|e| e.token()).collect();
        assert_eq!(tokens, vec![Token(7)]);
    }

    #[test]
    fn watching_a_registered_connection_keeps_one_registration() {
        let mut poll = Poll::new().unwrap();
        let (ours, mut server) = UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        let fd = ours.as_raw_fd();
        poll.registry()
            .register(
                &mut SourceFd(&fd),
                Token(3),
                Interest::READABLE | Interest::WRITABLE,
            )
            .unwrap();
        read_only(poll.registry(), fd, 3).unwrap();
        server.write_all(b"Z").unwrap();
        let mut events = Events::with_capacity(4);
        poll.poll(&mut events, Some(Duration::from_secs(5)))
            .unwrap();
        let readable: Vec<bool> = events.iter().map(|e| e.is_readable()).collect();
        assert_eq!(readable, vec![true]);
    }
}
