//! Connections of clients aborted inside a pipeline, kept open until the
//! server has ended their sessions.
//!
//! Such a client sends what it queued in its pipeline, then Terminate, as
//! libpq does when pgbench closes the connection (see
//! [`super::worker::ThreadEnv::close`]). The server answers the Syncs that
//! came before those statements (a `\syncpipeline`, the preparations of a
//! `-M prepared` pipeline) before it reads them; on a socket already
//! closed that answer fails and the server ends the session without
//! running the rest. So the socket stays open and watched by the thread's
//! poller for the rest of the run: what the server sends is read and
//! dropped as it comes (a backend blocked on a full socket would keep its
//! locks and could stall the other clients), and the socket is closed when
//! the server closes its end. At the end of the run, those still open are
//! given a grace period, unless the run was stopped (a signal,
//! `--exit-on-abort`), which closes them at once.

use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use pgwire::Connection;

/// How long the end of a thread waits for the servers of its lingering
/// connections to end their sessions (the grace the end of a `-T` run
/// gives transactions in flight).
const GRACE: Duration = Duration::from_secs(5);

/// The thread's lingering connections, with the client each came from.
#[derive(Default)]
pub struct Lingering {
    conns: Vec<(usize, Connection)>,
}

impl Lingering {
    /// Keeps `conn`, already ended with Terminate, open and watched under
    /// `token`, as the connection of client `idx`.
    pub fn keep(&mut self, idx: usize, conn: Connection, registry: &Registry, token: Token) {
        let fd = conn.fd();
        if registry
            .register(&mut SourceFd(&fd), token, Interest::READABLE)
            .is_ok()
        {
            self.conns.push((idx, conn));
        }
    }

    /// Reads and drops what the server sent on client `idx`'s lingering
    /// connection; closes it once the server has closed its end.
    pub fn readable(&mut self, idx: usize, registry: &Registry) {
        let Some(pos) = self.conns.iter().position(|(i, _)| *i == idx) else {
            return;
        };
        let fd = self.conns[pos].1.fd();
        if !discard_input(fd) {
            let _ = registry.deregister(&mut SourceFd(&fd));
            self.conns.swap_remove(pos);
        }
    }

    /// Ends the run's lingering: waits up to the grace period for each
    /// server to close its end (none when `stopped`), then closes them.
    pub fn finish(self, stopped: bool) {
        if stopped {
            return;
        }
        let deadline = Instant::now() + GRACE;
        for (_, conn) in self.conns {
            let fd = conn.fd();
            while let Some(left) = deadline.checked_duration_since(Instant::now()) {
                let mut pollfd = libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                };
                let millis = i32::try_from(left.as_millis()).unwrap_or(i32::MAX).max(1);
                // SAFETY: polls one descriptor this connection owns.
                let ready = unsafe { libc::poll(&mut pollfd, 1, millis) };
                if ready == 0 || (ready < 0 && !interrupted()) {
                    break;
                }
                if ready > 0 && !discard_input(fd) {
                    break;
                }
            }
        }
    }
}

/// Reads and drops what `fd` (non-blocking) has to give. False when the
/// peer has closed its end or the socket failed.
fn discard_input(fd: RawFd) -> bool {
    let mut scratch = [0u8; 8192];
    loop {
        // SAFETY: reads into a local buffer from a descriptor the caller's
        // connection owns.
        let n = unsafe { libc::read(fd, scratch.as_mut_ptr().cast(), scratch.len()) };
        if n > 0 {
            continue;
        }
        if n == 0 {
            return false;
        }
        let e = std::io::Error::last_os_error().kind();
        if e == std::io::ErrorKind::Interrupted {
            continue;
        }
        return e == std::io::ErrorKind::WouldBlock;
    }
}

fn interrupted() -> bool {
    std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
}
