//! The PostgreSQL client layer of pgbolt: connection options with libpq's
//! semantics, authentication, TLS, and a non-blocking, poll-driven connection.
//!
//! This crate does no threading and holds no policy. The benchmark engine owns
//! the event loop; a connection only tells it which readiness it waits for and
//! advances when told the socket is ready. Frontend messages are encoded into
//! buffers the connection reuses, and backend messages are framed in place, so
//! a steady-state transaction allocates nothing.

mod auth;
pub mod backend;
pub mod conninfo;
mod error;
pub mod frame;
mod tls;
mod transport;

pub use error::{Attempt, DbError, Error, ErrorKind};
