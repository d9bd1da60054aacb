//! The io_uring driver (`--io=uring`): established plain connections send
//! and receive through one ring per worker thread instead of `send`,
//! `recv` and `epoll_wait`.
//!
//! # Why
//! With epoll every statement costs a `send`, a `recv` and a share of an
//! `epoll_wait`, and each `send` that wakes a server backend can hand the
//! CPU to it in the middle of the loop's turn. Here the turn only queues
//! work: for each client that has something to send, a Send, and for one
//! that waits for input, a Recv into its read buffer, side by side. They
//! are not linked: a Recv queued behind its Send would never start while
//! a pipeline fills both sockets (the server stops reading our requests
//! while it cannot write its results to us), and nothing would move.
//! One `io_uring_enter` per turn submits all of it, waits for the first
//! completion (or the nearest timer) and reaps everything that completed.
//! Recv asks the kernel to wait for readiness first (`POLL_FIRST`): tried
//! at once it would find nothing and then arm the same wait anyway.
//!
//! # Why it is not the default
//! Measured on the project's machine (docs/performance.md), the system
//! calls per transaction halve, but the client's CPU per transaction and
//! the rate do not move beyond the noise: the kernel's work is the socket
//! sends (waking a server backend) and this thread's own sleeps and
//! wake-ups, and io_uring does that same work. Waiting for several
//! completions per enter does not help either: a socket's readiness wakes
//! the waiting thread for each completion, and doubled the CPU per
//! transaction. So `--io=auto` picks epoll, and this driver is there for
//! `--io=uring`.
//!
//! # What stays on epoll
//! Connecting (also under `-C`), TLS sessions (their records are read and
//! written by the TLS layer), `\shell` children and the stop signal keep
//! their mio registrations; the ring watches the epoll file descriptor
//! itself with a Poll request, and when it fires the loop collects those
//! events with a non-blocking `epoll_wait`.
//!
//! # A server that hangs up
//! Each connection also has a Poll request for the end of the server's
//! stream (`POLLRDHUP`), armed once per connection, not per statement: it
//! tells the client that its backend ended while it was idle (an idle
//! session timeout, a terminated backend), as the epoll loop learns it
//! from the socket's event. Over TCP a Send to such a connection succeeds,
//! so without it a statement still to be prepared would be reported as
//! failing with the server's last words, where pgbench's own prepare fails
//! first. Closing the connection cancels the request; a completion of an
//! earlier connection of the same client is told apart by a generation
//! number in its `user_data`.
//!
//! # Buffers in flight
//! A Send owns the client's output: the connection's write buffer is
//! swapped with the slot's empty one ([`pgwire::Connection::take_output`]),
//! so the client may encode its next command while the kernel still reads
//! the previous one. A Recv writes into the connection's read buffer, and
//! while it is in flight the client is never advanced (the worker checks
//! [`Ring::receiving`]); its completion is handed over with
//! [`pgwire::Connection::received`]. Before connections are closed at the
//! end, [`Ring::quiesce`] cancels what is still in flight and waits for it.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use pgwire::Connection;

use super::client::Client;

/// What a completion belongs to: the low three bits of its `user_data`;
/// the client's index follows, and a hang-up watch's generation is in the
/// bits from [`GEN_SHIFT`] on.
const SEND: u64 = 0;
const RECV: u64 = 1;
const EPOLL: u64 = 2;
const CANCEL: u64 = 3;
const HUP: u64 = 4;
const KIND_BITS: u32 = 3;
const GEN_SHIFT: u32 = 40;
const GEN_MASK: u32 = (1 << (64 - GEN_SHIFT)) - 1;

/// Recv flag: wait for readiness before the first attempt, which would
/// find nothing this soon after the query was sent (the kernel's
/// `IORING_RECVSEND_POLL_FIRST`).
const POLL_FIRST: u16 = 1;

/// A completion, copied out of the ring so the clients can be advanced
/// while the ring is borrowed elsewhere.
#[derive(Debug, Clone, Copy)]
pub enum Done {
    /// Client `idx`'s Send or Recv ended (its connection has been told).
    Client(usize),
    /// The epoll file descriptor has events.
    Epoll,
}

/// The hang-up watch of a client's connection.
#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Watch {
    /// Not armed yet for this connection.
    #[default]
    Off,
    Armed,
    /// Fired or ended: not armed again before the next connection.
    Over,
}

/// One client's requests in flight.
#[derive(Default)]
struct Slot {
    /// The output being sent.
    out: BytesMut,
    sending: bool,
    receiving: bool,
    /// The start of the output's first message has been sent and its
    /// rest has not (kept when the connection ends there; the connection
    /// is told with [`pgwire::Connection::untake_output`]).
    cut: bool,
    /// Socket of the Send or Recv in flight.
    fd: RawFd,
    watch: Watch,
    /// Counts the client's connections, so that a hang-up of an earlier
    /// one is not taken for the current one's.
    generation: u32,
}

impl Slot {
    fn watch_tag(&self, idx: usize) -> u64 {
        tag(idx, HUP) | (u64::from(self.generation) << GEN_SHIFT)
    }

    /// The connection is going: its watch no longer applies. The armed
    /// request to cancel, if any.
    fn end_watch(&mut self, idx: usize) -> Option<u64> {
        let armed = (self.watch == Watch::Armed).then(|| self.watch_tag(idx));
        self.watch = Watch::Off;
        self.generation = (self.generation + 1) & GEN_MASK;
        armed
    }
}

/// The worker thread's ring.
pub struct Ring {
    ring: IoUring,
    slots: Vec<Slot>,
    epoll_fd: RawFd,
    epoll_armed: bool,
    in_flight: usize,
    done: Vec<Done>,
}

/// Whether this kernel lets us use io_uring the way [`Ring`] does; the
/// error says why not (seccomp and `io_uring_disabled` give `EPERM`).
pub fn probe() -> io::Result<()> {
    build(4).map(|_| ())
}

fn build(entries: u32) -> io::Result<IoUring> {
    let tuned = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_taskrun_flag()
        .build(entries);
    let ring = match tuned {
        Ok(ring) => ring,
        // Kernels before 6.1 lack deferred task running.
        Err(_) => IoUring::new(entries)?,
    };
    if !ring.params().is_feature_ext_arg() {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "the kernel's io_uring has no timeouts on waits (Linux 5.11 or newer needed)",
        ));
    }
    Ok(ring)
}

impl Ring {
    /// A ring for `clients` clients: room for a Send, a Recv and a hang-up
    /// watch each, plus the epoll watch and cancellations.
    pub fn new(clients: usize, epoll_fd: RawFd) -> io::Result<Ring> {
        let entries = (3 * clients + 4).next_power_of_two().clamp(8, 32768) as u32;
        Ok(Ring {
            ring: build(entries)?,
            slots: (0..clients).map(|_| Slot::default()).collect(),
            epoll_fd,
            epoll_armed: false,
            in_flight: 0,
            done: Vec::with_capacity(2 * clients + 4),
        })
    }

    /// Whether client `idx` has a Recv in flight (it must then wait).
    pub fn receiving(&self, idx: usize) -> bool {
        self.slots.get(idx).is_some_and(|s| s.receiving)
    }

    /// Whether client `idx` has a Send in flight.
    pub fn sending(&self, idx: usize) -> bool {
        self.slots.get(idx).is_some_and(|s| s.sending)
    }

    /// Queues what client `idx` needs after a step: its flushed output, and
    /// a Recv when it waits for input (and, once per connection, the watch
    /// for its end). Nothing is submitted until [`Ring::wait`].
    pub fn queue(
        &mut self,
        idx: usize,
        conn: &mut Connection,
        wants_input: bool,
    ) -> io::Result<()> {
        let fd = conn.fd();
        let Some(slot) = self.slots.get_mut(idx) else {
            return Ok(());
        };
        if slot.watch == Watch::Off {
            let sqe = opcode::PollAdd::new(types::Fd(fd), libc::POLLRDHUP as u32)
                .build()
                .user_data(slot.watch_tag(idx));
            slot.watch = Watch::Armed;
            self.push(&sqe)?;
        }
        let Some(slot) = self.slots.get_mut(idx) else {
            return Ok(());
        };
        let send = !slot.sending && conn.output_flushed();
        let recv = wants_input && !slot.receiving;
        if send {
            slot.cut = conn.sent_in_part();
            conn.take_output(&mut slot.out);
            let sqe = opcode::Send::new(types::Fd(fd), slot.out.as_ptr(), slot.out.len() as u32)
                .flags(libc::MSG_NOSIGNAL)
                .build()
                .user_data(tag(idx, SEND));
            slot.sending = true;
            slot.fd = fd;
            self.in_flight += 1;
            self.push(&sqe)?;
        }
        if recv {
            let Some(slot) = self.slots.get_mut(idx) else {
                return Ok(());
            };
            let target = conn.recv_target();
            let sqe = opcode::Recv::new(types::Fd(fd), target.as_mut_ptr(), target.len() as u32)
                .ioprio(POLL_FIRST)
                .build()
                .user_data(tag(idx, RECV));
            slot.receiving = true;
            slot.fd = fd;
            self.in_flight += 1;
            self.push(&sqe)?;
        }
        Ok(())
    }

    fn push(&mut self, sqe: &squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: the buffers a queued entry points to (a slot's output,
            // a connection's read buffer) stay put until its completion is
            // reaped: the slot keeps the output, and a client with a Recv in
            // flight is not advanced.
            if unsafe { self.ring.submission().push(sqe) }.is_ok() {
                return Ok(());
            }
            self.ring.submit()?;
        }
    }

    /// Submits everything queued and waits for at least one completion,
    /// no longer than `timeout` (`None`: no limit; zero: no wait); then
    /// collects what completed (see [`Ring::take_done`]). The clients'
    /// connections are told about their completed reads and failed writes.
    pub fn wait(&mut self, timeout: Option<Duration>, clients: &mut [Client]) -> io::Result<()> {
        if !self.epoll_armed {
            let sqe = opcode::PollAdd::new(types::Fd(self.epoll_fd), libc::POLLIN as u32)
                .build()
                .user_data(EPOLL);
            self.push(&sqe)?;
            self.epoll_armed = true;
        }
        let entered = match timeout {
            Some(t) if t.is_zero() => self.ring.submitter().submit_and_wait(0),
            Some(t) => {
                let ts = types::Timespec::from(t);
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(1, &args)
            }
            None => self.ring.submitter().submit_and_wait(1),
        };
        match entered {
            Err(e) if !matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR)) => {
                return Err(e)
            }
            _ => {}
        }
        self.done.clear();
        for cqe in self.ring.completion() {
            let (idx, kind) = untag(cqe.user_data());
            match kind {
                EPOLL => {
                    self.epoll_armed = false;
                    self.done.push(Done::Epoll);
                }
                CANCEL => {}
                HUP => {
                    let Some(slot) = self.slots.get_mut(idx) else {
                        continue;
                    };
                    if slot.watch != Watch::Armed || slot.watch_tag(idx) != cqe.user_data() {
                        continue;
                    }
                    slot.watch = Watch::Over;
                    if cqe.result() > 0 {
                        if let Some(c) = clients.get_mut(idx) {
                            c.peer_closed = true;
                        }
                    }
                }
                _ => {
                    self.in_flight -= 1;
                    let Some(slot) = self.slots.get_mut(idx) else {
                        continue;
                    };
                    match clients.get_mut(idx) {
                        Some(Client {
                            conn: Some(conn),
                            peer_closed,
                            response,
                            ..
                        }) => {
                            if complete(slot, kind, &cqe, conn) {
                                *peer_closed = true;
                                response.closed_before_send = true;
                            }
                            if kind == SEND {
                                response.send_cut = slot.cut;
                            }
                        }
                        _ => {
                            slot.sending &= kind != SEND;
                            slot.receiving &= kind != RECV;
                            slot.out.clear();
                        }
                    }
                    self.done.push(Done::Client(idx));
                }
            }
        }
        Ok(())
    }

    /// What the last [`Ring::wait`] collected; hand the list back with
    /// [`Ring::restore_done`] so its memory is reused.
    pub fn take_done(&mut self) -> Vec<Done> {
        std::mem::take(&mut self.done)
    }

    pub fn restore_done(&mut self, done: Vec<Done>) {
        self.done = done;
    }

    /// Client `idx`'s connection is being closed: its hang-up watch is
    /// cancelled (the request holds the socket open) and the next
    /// connection gets one of its own.
    pub fn forget(&mut self, idx: usize) {
        let Some(armed) = self.slots.get_mut(idx).and_then(|s| s.end_watch(idx)) else {
            return;
        };
        let sqe = opcode::AsyncCancel::new(armed).build().user_data(CANCEL);
        let _ = self.push(&sqe);
    }

    /// Cancels every request still in flight, the hang-up watches too, and
    /// waits (at most a second) until the kernel has let go of the Sends'
    /// and Recvs' buffers.
    pub fn quiesce(&mut self) {
        for idx in 0..self.slots.len() {
            self.forget(idx);
        }
        for (idx, slot) in self.slots.iter().enumerate() {
            for (busy, kind) in [(slot.sending, SEND), (slot.receiving, RECV)] {
                if busy {
                    let sqe = opcode::AsyncCancel::new(tag(idx, kind))
                        .build()
                        .user_data(CANCEL);
                    // SAFETY: a cancellation points to no buffer.
                    while unsafe { self.ring.submission().push(&sqe) }.is_err() {
                        if self.ring.submit().is_err() {
                            break;
                        }
                    }
                }
            }
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(1);
        while self.in_flight > 0 {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            let ts = types::Timespec::from(left);
            let args = types::SubmitArgs::new().timespec(&ts);
            let _ = self.ring.submitter().submit_with_args(1, &args);
            for cqe in self.ring.completion() {
                let (idx, kind) = untag(cqe.user_data());
                if kind == SEND || kind == RECV {
                    self.in_flight -= 1;
                    if let Some(slot) = self.slots.get_mut(idx) {
                        slot.sending &= kind != SEND;
                        slot.receiving &= kind != RECV;
                    }
                }
            }
        }
        // The watches' cancellations, when nothing else was in flight.
        let _ = self.ring.submit();
    }
}

/// Hands a finished Send or Recv to the connection. True when a Send
/// found that the server had closed the connection: as the epoll loop
/// does (and libpq), the output is dropped and the failure is left to the
/// reads that follow, which find the server's last message (the FATAL
/// that says why the backend ended) before the end of the stream.
fn complete(slot: &mut Slot, kind: u64, cqe: &cqueue::Entry, conn: &mut Connection) -> bool {
    let res = cqe.result();
    if kind == RECV {
        slot.receiving = false;
        match res {
            // A Recv cancelled (at the end of the run) or interrupted: the
            // client still waits, and is queued again.
            r if r == -libc::ECANCELED || r == -libc::EINTR || r == -libc::EAGAIN => {}
            r if r < 0 => conn.received(Err(io::Error::from_raw_os_error(-r))),
            r => conn.received(Ok(r as usize)),
        }
        return false;
    }
    slot.sending = false;
    match res {
        r if r == -libc::EPIPE || r == -libc::ECONNRESET => {
            slot.out.clear();
            conn.discard_output();
            return true;
        }
        r if r < 0 && r != -libc::EINTR && r != -libc::EAGAIN => {
            // Whatever follows the lost output could only garble the stream.
            slot.out.clear();
            conn.discard_output();
            conn.received(Err(io::Error::from_raw_os_error(-r)));
        }
        r if r < 0 => conn.untake_output(&mut slot.out, slot.cut),
        r => {
            slot.out.advance(r as usize);
            slot.cut = !slot.out.is_empty();
            conn.untake_output(&mut slot.out, slot.cut);
        }
    }
    false
}

fn tag(idx: usize, kind: u64) -> u64 {
    ((idx as u64) << KIND_BITS) | kind
}

fn untag(data: u64) -> (usize, u64) {
    let idx = (data & ((1 << GEN_SHIFT) - 1)) >> KIND_BITS;
    (idx as usize, data & ((1 << KIND_BITS) - 1))
}
