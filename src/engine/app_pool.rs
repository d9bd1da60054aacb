//! `--pool-size`: an application-side connection pool inside each worker
//! thread, as an application with HikariCP or Go's `sql.DB` has.
//!
//! # What it does
//! A thread's clients share the thread's connections (the pool size dealt
//! over the threads as pgbench deals clients). A client takes a connection
//! as its transaction starts (after any `-R` schedule wait) and gives it
//! back as the transaction ends: to the client that has waited longest, or
//! to the idle list. Waiters are served first come, first served. The time
//! from asking to holding is the *pool wait*: it is recorded on its own and
//! is also part of the transaction's latency (measured from the moment the
//! client asked, or from the scheduled start under `-R`, where it is part
//! of the schedule lag), so the latency is what the application would see.
//!
//! # Session state moves with the connection
//! What a session remembers belongs to the connection, not to the client:
//! the `-M prepared` flags (each statement is prepared once per connection)
//! and the socket's poller state (written-to, hung up) travel with it, by
//! swapping the client's vectors with the slot's, which allocates nothing.
//! Anything else a script leaves in the session (`SET`, temporary tables,
//! session advisory locks) is seen by whichever client takes the
//! connection next; a script that ends inside a transaction block aborts
//! its client, as it does without a pool, and its connection is closed.
//!
//! # Tokens: one per connection, and an owner map
//! Without a pool a socket is registered under its client's index. A
//! pooled connection is registered once, under a token of its own
//! ([`Pool::token`]), and the pool keeps which client holds it; an event is
//! routed to the holder, or noted on the idle connection (the server hung
//! up). The other choice, registering the socket again under the new
//! holder's index at each handover, adds an `epoll_ctl` per transaction to
//! the `send`, the `recv` and the share of an `epoll_wait` it costs.
//! Measured on the project's 2-core machine (shared with other work),
//! `-S -M prepared -j 2`, 1000 clients on 16 connections: 2.37 system calls
//! per transaction with the owner map (2.50 for 16 direct clients), so
//! re-registering would add 40%; a build doing that spent 1.05 to 1.12
//! times the owner map's CPU per transaction (medians of two series of
//! alternating runs). The map costs a vector look-up per event.
//!
//! # Fewer steps per handover
//! A client that hands its connection to a waiter leaves none idle, so it
//! queues behind at once instead of yielding its turn first: a pooled
//! transaction then costs two client steps, as a direct one does (the
//! holder reading its results, the next holder sending). What is left of
//! the difference is the 1000 clients' state being touched in turn, which
//! the 16 direct clients keep in the cache.

//! # A connection that is lost
//! A client that aborts while holding a connection closes it, as without a
//! pool; the pool then has one fewer. When a thread has none left, its
//! waiting clients and those that come to ask abort too.

use std::collections::VecDeque;

use mio::Token;
use pgwire::Connection;

use super::client::Client;

/// One pooled connection and the session state that goes with it.
struct Slot {
    conn: Option<Connection>,
    /// `-M prepared`: per script, per command, prepared on this connection.
    prepared: Vec<Vec<bool>>,
    writing: bool,
    peer_closed: bool,
    /// The client holding it (index within the thread).
    holder: Option<usize>,
}

/// A thread's pool.
pub struct Pool {
    /// The thread's share of `--pool-size`.
    pub size: usize,
    slots: Vec<Slot>,
    /// Idle slots, the last given back on top (its socket is warm).
    idle: Vec<usize>,
    /// Clients waiting for a connection, first come first served.
    waiters: VecDeque<usize>,
    /// Per client: the slot handed to it while it waited.
    handed: Vec<Option<usize>>,
    /// The first token of the pool's connections.
    token_base: usize,
    /// Connections still open.
    open: usize,
}

impl Pool {
    /// A pool of `size` connections for `clients` clients whose socket
    /// tokens start at `token_base`; everything it needs is allocated here.
    pub fn new(size: usize, clients: usize, token_base: usize) -> Pool {
        Pool {
            size,
            slots: Vec::with_capacity(size),
            idle: Vec::with_capacity(size),
            waiters: VecDeque::with_capacity(clients),
            handed: vec![None; clients],
            token_base,
            open: 0,
        }
    }

    /// Adds an established connection as an idle slot; its token is
    /// [`Pool::token`] of the returned slot.
    pub fn add(&mut self, conn: Connection, commands_per_script: &[usize]) -> usize {
        let slot = self.slots.len();
        self.slots.push(Slot {
            conn: Some(conn),
            prepared: commands_per_script
                .iter()
                .map(|&n| vec![false; n])
                .collect(),
            writing: false,
            peer_closed: false,
            holder: None,
        });
        self.idle.push(slot);
        self.open += 1;
        slot
    }

    /// The poller token of slot `slot`'s socket.
    pub fn token(&self, slot: usize) -> Token {
        Token(self.token_base + slot)
    }

    /// The slot a token belongs to, if it is one of the pool's.
    pub fn slot_of(&self, token: Token) -> Option<usize> {
        token
            .0
            .checked_sub(self.token_base)
            .filter(|&s| s < self.slots.len())
    }

    /// The client holding slot `slot`; with none, the hang-up is noted for
    /// the next holder.
    pub fn holder_or_note(&mut self, slot: usize, closed: bool) -> Option<usize> {
        let s = &mut self.slots[slot];
        if s.holder.is_none() && closed {
            s.peer_closed = true;
        }
        s.holder
    }

    /// Client `idx` asks for a connection at the start of a transaction:
    /// true when it holds an idle one now, false when it waits in line.
    pub fn acquire(&mut self, c: &mut Client, idx: usize) -> bool {
        match self.idle.pop() {
            Some(slot) => {
                self.hold(c, idx, slot);
                true
            }
            None => {
                self.waiters.push_back(idx);
                false
            }
        }
    }

    /// A waiting client `idx` takes the connection handed to it, if any.
    pub fn take_handed(&mut self, c: &mut Client, idx: usize) -> bool {
        match self.handed[idx].take() {
            Some(slot) => {
                self.hold(c, idx, slot);
                true
            }
            None => false,
        }
    }

    fn hold(&mut self, c: &mut Client, idx: usize, slot: usize) {
        let s = &mut self.slots[slot];
        s.holder = Some(idx);
        c.conn = s.conn.take();
        std::mem::swap(&mut c.prepared, &mut s.prepared);
        c.writing = s.writing;
        c.peer_closed = s.peer_closed;
        c.slot = Some(slot);
    }

    /// Client `c` (index `idx`) gives its connection back at the end of a
    /// transaction: to the first waiter (returned, to be woken) or to the
    /// idle list.
    pub fn release(&mut self, c: &mut Client, idx: usize) -> Option<usize> {
        let slot = c.slot.take()?;
        let s = &mut self.slots[slot];
        debug_assert_eq!(s.holder, Some(idx));
        s.conn = c.conn.take();
        std::mem::swap(&mut c.prepared, &mut s.prepared);
        s.writing = c.writing;
        s.peer_closed = c.peer_closed;
        c.writing = false;
        c.peer_closed = false;
        s.holder = None;
        self.hand_over(slot)
    }

    /// Slot `slot` is free: to the first waiter (returned, to be woken) or
    /// to the idle list.
    fn hand_over(&mut self, slot: usize) -> Option<usize> {
        match self.waiters.pop_front() {
            Some(next) => {
                self.handed[next] = Some(slot);
                Some(next)
            }
            None => {
                self.idle.push(slot);
                None
            }
        }
    }

    /// The connection client `c` held is gone (the client aborted and
    /// closed it). When it was the last, the waiting clients are returned,
    /// to be woken and to abort.
    pub fn lost(&mut self, c: &mut Client) -> impl Iterator<Item = usize> + '_ {
        if let Some(slot) = c.slot.take() {
            self.slots[slot].holder = None;
            std::mem::swap(&mut c.prepared, &mut self.slots[slot].prepared);
            self.open -= 1;
        }
        let n = if self.open == 0 {
            self.waiters.len()
        } else {
            0
        };
        self.waiters.drain(..n)
    }

    /// Whether no connection is left.
    pub fn exhausted(&self) -> bool {
        self.open == 0
    }

    /// Client `idx` stops waiting (the run is over): a connection handed to
    /// it goes to the next waiter, returned to be woken in turn.
    pub fn leave(&mut self, idx: usize) -> Option<usize> {
        self.waiters.retain(|&w| w != idx);
        let slot = self.handed[idx].take()?;
        self.hand_over(slot)
    }

    /// The idle connections, to be closed at the end of the run.
    pub fn drain_idle(&mut self) -> impl Iterator<Item = Connection> + '_ {
        self.slots.iter_mut().filter_map(|s| s.conn.take())
    }
}
