//! The PostgreSQL client layer of pgbolt: connection options with libpq's
//! semantics, authentication, TLS, and a non-blocking, poll-driven connection.
//!
//! This crate does no threading and holds no policy. The benchmark engine owns
//! the event loop; a connection only tells it which readiness it waits for and
//! advances when told the socket is ready. Frontend messages are encoded into
//! buffers the connection reuses, and backend messages are framed in place, so
//! a steady-state transaction allocates nothing.
//!
//! # Connecting
//!
//! Build one [`Connector`] per [`conninfo::Config`] (it holds the TLS
//! configuration) and start as many [`Connecting`]s as there are clients:
//!
//! ```text
//! let connector = Connector::new(&config)?;
//! let mut c = connector.connect();
//! loop {
//!     match c.poll()? {
//!         ConnectProgress::Wait { fd, interest, new_socket } => {
//!             // register fd (again if new_socket) for `interest`, wake up at
//!             // c.deadline() at the latest, then poll again
//!         }
//!         ConnectProgress::Busy => {
//!             // the listener's queue is full: wake up after a short
//!             // pause, then poll again
//!         }
//!         ConnectProgress::Ready(conn) => break *conn,
//!     }
//! }
//! ```
//!
//! `poll` always tries the I/O until it would block before it returns
//! `Wait`, so an edge-triggered poller (mio) is safe to use. A failed
//! connection's [`Error`] lists every host tried, in libpq's words.
//!
//! # The hot path
//!
//! For a prepared statement the engine writes the parameter values straight
//! into the Bind message, sends everything with one `send`, and reads the
//! answer:
//!
//! ```text
//! conn.bind_execute("P0_1", 1, |_, out| { out.extend_from_slice(b"42"); true }, false, true)?;
//! if !conn.flush()? { /* wait for writability, flush again */ }
//! // on readability:
//! loop {
//!     let fill = conn.fill()?;              // one recv
//!     while let Some(msg) = conn.next_message()? {
//!         match msg {
//!             Message::DataRow(row) => { /* count, or copy values for \gset */ }
//!             Message::ErrorResponse(f) => { /* f.get(b'C') is the SQLSTATE */ }
//!             Message::ReadyForQuery(_) => { /* transaction done */ }
//!             _ => {}
//!         }
//!     }
//!     if fill != Fill::More { break; }      // drained: wait for readiness
//! }
//! ```
//!
//! [`Connection::fill`] reports whether the socket was drained, so the engine
//! stops reading once ReadyForQuery is in hand without an extra `recv` that
//! returns `EAGAIN`. Any number of messages may be pipelined before Sync.
//! Messages borrow the read buffer ([`backend::Message`]); only turning an
//! error into a [`DbError`] allocates. Over TLS, rustls itself allocates a
//! buffer per outgoing record; the plain path allocates nothing.
//!
//! [`blocking::Client`] drives the same machinery with `poll(2)` for set-up
//! work and tests. [`CancelToken`] cancels a running query from any thread.

mod auth;
pub mod backend;
pub mod blocking;
mod cancel;
mod connect;
mod connection;
pub mod conninfo;
mod error;
pub mod frame;
pub mod libpq_text;
mod tls;
mod transport;

pub use backend::{Message, TxStatus};
pub use cancel::CancelToken;
pub use connect::{ConnectProgress, Connecting, Connector, Interest};
pub use connection::{Connection, Fill};
pub use error::{Attempt, DbError, Error, ErrorKind};
/// Encoders for every frontend message, from postgres-protocol.
pub use postgres_protocol::message::frontend;

#[cfg(test)]
mod tests {
    /// Worker threads own connections and hand cancel tokens around.
    #[test]
    fn public_types_cross_threads() {
        fn send<T: Send>() {}
        fn sync<T: Send + Sync>() {}
        send::<super::Connecting>();
        send::<super::Connection>();
        send::<super::blocking::Client>();
        sync::<super::Connector>();
        sync::<super::CancelToken>();
        sync::<super::Error>();
    }
}
