//! SIGINT and SIGTERM during a run: stop starting transactions, let the
//! ones in flight finish (they are cancelled after a second), then report.
//!
//! The handler only stores the signal number and writes a byte to a pipe
//! whose read end every worker's poller watches, so a thread asleep in
//! `epoll_wait` wakes at once. The previous handlers come back when the
//! run ends.
//!
//! A study (a sweep) runs many such runs in one process, with set-up work
//! and reporting between them. For the whole study [`install_between`]
//! keeps a handler that only remembers the signal: the study then ends
//! after the step under way, and reports the steps done. A signal during a
//! step's set-up also cancels the set-up connection's statement (see
//! `setup_stop`, which recognizes this handler by [`is_between_handler`]).

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);
static WAKE_WRITE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(signo: libc::c_int) {
    SIGNAL.store(signo, Ordering::SeqCst);
    STOP.store(true, Ordering::SeqCst);
    // The handler may interrupt a worker between a system call and its
    // reading of `errno` (thread 0 runs on the thread signals go to).
    // SAFETY: reading and restoring errno is async-signal-safe.
    let errno = unsafe { *libc::__errno_location() };
    wake();
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// Whether a stop was requested by a signal.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// The signal that stopped the run, if any.
pub fn received() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Wakes every worker (async-signal-safe: one `write`).
pub fn wake() {
    let fd = WAKE_WRITE.load(Ordering::SeqCst);
    if fd >= 0 {
        let byte = 1u8;
        // SAFETY: writes one byte from a local to a descriptor we own.
        unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) };
    }
}

/// The installed handlers; dropping restores the previous ones.
pub struct Guard {
    read_fd: RawFd,
    write_fd: RawFd,
    handlers: Option<crate::sigstop::Installed>,
}

impl Guard {
    /// The descriptor workers register to be woken.
    pub fn wake_fd(&self) -> RawFd {
        self.read_fd
    }
}

/// Installs the handlers.
pub fn install() -> std::io::Result<Guard> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    STOP.store(false, Ordering::SeqCst);
    SIGNAL.store(0, Ordering::SeqCst);
    WAKE_WRITE.store(fds[1], Ordering::SeqCst);
    Ok(Guard {
        read_fd: fds[0],
        write_fd: fds[1],
        handlers: Some(crate::sigstop::install(on_signal)),
    })
}

impl Drop for Guard {
    fn drop(&mut self) {
        // The previous handlers first, so that no signal falls between.
        self.handlers.take();
        WAKE_WRITE.store(-1, Ordering::SeqCst);
        // SAFETY: closes the pipe we created.
        unsafe {
            libc::close(self.read_fd);
            libc::close(self.write_fd);
        }
    }
}

/// A signal received outside a run while a study goes on.
static BETWEEN: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal_between(signo: libc::c_int) {
    BETWEEN.store(signo, Ordering::SeqCst);
}

/// The handler between a study's runs, installed until dropped.
pub struct BetweenGuard {
    _handlers: crate::sigstop::Installed,
}

/// Installs the handler that remembers a signal between a study's runs
/// (and forgets any remembered before).
pub fn install_between() -> BetweenGuard {
    BETWEEN.store(0, Ordering::SeqCst);
    BetweenGuard {
        _handlers: crate::sigstop::install(on_signal_between),
    }
}

/// The signal that asked the study to stop outside a run, if any.
pub fn received_between() -> Option<i32> {
    match BETWEEN.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Whether `action` is the handler of [`install_between`].
pub fn is_between_handler(action: &libc::sigaction) -> bool {
    action.sa_sigaction == on_signal_between as extern "C" fn(libc::c_int) as usize
}
