//! CancelRequest: asks the server to cancel the query a session is running.
//!
//! The request travels over a fresh, short-lived socket to the same address,
//! carrying the process id and secret key from BackendKeyData. It is sent in
//! the clear even when the session uses TLS: the server reads a
//! CancelRequest before any authentication or `pg_hba.conf` check, so this
//! works for TLS sessions too (libpq before PostgreSQL 17 does the same).

use std::io::{Read, Write};
use std::time::Duration;

use bytes::BytesMut;
use postgres_protocol::message::frontend;
use socket2::{SockAddr, Socket, Type};

use crate::error::Error;

/// How long a cancel waits at most when `connect_timeout` is not set.
const DEFAULT_CANCEL_TIMEOUT: Duration = Duration::from_secs(10);

/// What is needed to cancel a session's running query; cheap to clone and
/// usable from any thread.
#[derive(Clone, Debug)]
pub struct CancelToken {
    addr: std::sync::Arc<SockAddr>,
    process_id: i32,
    secret_key: i32,
    timeout: Option<Duration>,
}

impl CancelToken {
    pub(crate) fn new(
        addr: SockAddr,
        process_id: i32,
        secret_key: i32,
        timeout: Option<Duration>,
    ) -> CancelToken {
        CancelToken {
            addr: std::sync::Arc::new(addr),
            process_id,
            secret_key,
            timeout,
        }
    }

    /// The server process running the session.
    pub fn process_id(&self) -> i32 {
        self.process_id
    }

    /// The request as bytes with the address it goes to, for a caller that
    /// must send it without allocating or locking (a signal handler).
    pub fn raw_request(&self) -> (libc::sockaddr_storage, libc::socklen_t, [u8; 16]) {
        let mut buf = BytesMut::with_capacity(16);
        frontend::cancel_request(self.process_id, self.secret_key, &mut buf);
        let mut request = [0u8; 16];
        request.copy_from_slice(&buf[..16]);
        // SAFETY: a zeroed sockaddr_storage is valid; the copy is of the
        // address's own length, which fits in a sockaddr_storage.
        let storage = unsafe {
            let mut storage: libc::sockaddr_storage = std::mem::zeroed();
            std::ptr::copy_nonoverlapping(
                self.addr.as_ptr().cast::<u8>(),
                (&mut storage as *mut libc::sockaddr_storage).cast::<u8>(),
                self.addr.len() as usize,
            );
            storage
        };
        (storage, self.addr.len(), request)
    }

    /// Sends the request and waits until the server has read it (it closes
    /// the socket then). Blocks for at most `connect_timeout` (10 s when
    /// unset) per step. Success means the request was delivered, not that a
    /// query was running.
    pub fn cancel(&self) -> Result<(), Error> {
        let timeout = self.timeout.unwrap_or(DEFAULT_CANCEL_TIMEOUT);
        let sock = Socket::new(self.addr.domain(), Type::STREAM, None).map_err(Error::io)?;
        sock.connect_timeout(&self.addr, timeout)
            .map_err(Error::io)?;
        sock.set_read_timeout(Some(timeout)).map_err(Error::io)?;
        sock.set_write_timeout(Some(timeout)).map_err(Error::io)?;
        let mut buf = BytesMut::with_capacity(16);
        frontend::cancel_request(self.process_id, self.secret_key, &mut buf);
        (&sock).write_all(&buf).map_err(Error::io)?;
        let mut scratch = [0u8; 16];
        loop {
            match (&sock).read(&mut scratch) {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(e)),
            }
        }
    }
}
