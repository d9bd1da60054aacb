//! Connections of clients aborted inside a pipeline, kept open until the
//! server has ended their sessions.
//!
//! Such a client sends what it queued in its pipeline, then Terminate, as
//! libpq does when pgbench closes the connection (see
//! [`super::worker::ThreadEnv::close`]). The server answers the Syncs that
//! came before those statements (a `\syncpipeline`, the preparations of a
//! `-M prepared` pipeline) before it reads them; on a socket already
//! closed that answer fails and the server ends the session without
//! running the rest. So the socket stays open, the answers are read and
//! dropped, and it is closed when the server closes its end, or when the
//! run is over and the grace period below has passed.

use std::time::{Duration, Instant};

use pgwire::Connection;

/// How long the end of a thread waits for the servers of its lingering
/// connections to end their sessions (the grace the end of a `-T` run
/// gives transactions in flight).
const GRACE: Duration = Duration::from_secs(5);

/// The thread's lingering connections.
#[derive(Default)]
pub struct Lingering {
    conns: Vec<Connection>,
}

impl Lingering {
    /// Keeps `conn`, already ended with Terminate, open.
    pub fn keep(&mut self, conn: Connection) {
        self.conns.push(conn);
    }

    /// Reads and drops what the servers still send until each closes its
    /// end or the grace period is over, then closes the sockets.
    pub fn drain(self) {
        let deadline = Instant::now() + GRACE;
        let mut scratch = [0u8; 4096];
        for conn in self.conns {
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
                if ready < 0 {
                    continue;
                }
                // SAFETY: reads into a local buffer from the descriptor above.
                let n = unsafe { libc::read(fd, scratch.as_mut_ptr().cast(), scratch.len()) };
                if n == 0 || (n < 0 && !interrupted() && !would_block()) {
                    break;
                }
            }
        }
    }
}

fn interrupted() -> bool {
    std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
}

fn would_block() -> bool {
    std::io::Error::last_os_error().kind() == std::io::ErrorKind::WouldBlock
}
