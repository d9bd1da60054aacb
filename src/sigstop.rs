//! Installing a handler for the signals that ask pgbolt to stop (SIGINT and
//! SIGTERM), and putting the previous handlers back.
//!
//! The run engine (stop starting transactions, then report) and `-i` (say
//! that initialization was interrupted) each install their own handler for
//! as long as they run; the handlers themselves only touch atomics and
//! `write(2)`, so they are async-signal-safe. Dropping [`Installed`]
//! restores what was there before, such as the clean-up of a throwaway
//! instance, which installs its own with [`set_handler`].
//!
//! During `-i`, pgbolt talks to the server over blocking connections;
//! those register with [`cancel_on_stop`] so that a stop cancels what they
//! are running before the process exits ([`cancel_registered`]), and start
//! nothing new once that has begun ([`wait_if_stopping`]). A backend
//! whose client goes away without a word goes on with a statement that
//! sends nothing until it ends (a server-side data generation, a key
//! build, a wait for a lock), holding locks that a rerun would wait for.
//! pgbench cancels on Ctrl-C during `-i` too.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use pgwire::CancelToken;

/// The signals that ask pgbolt to stop.
pub const SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

/// The previous actions of [`SIGNALS`], restored on drop.
pub struct Installed {
    old: [libc::sigaction; 2],
}

/// Installs `handler` for [`SIGNALS`] (with `SA_RESTART`), except for a
/// signal pgbolt was started with ignored: a shell ignores SIGINT for a
/// command it starts in the background (`pgbolt ... &` in a script), and
/// such a command is meant to go on, as pgbench (which installs no
/// handler) does.
pub fn install(handler: extern "C" fn(libc::c_int)) -> Installed {
    // SAFETY: zeroed sigaction structs are valid "default" values.
    let mut old: [libc::sigaction; 2] = unsafe { std::mem::zeroed() };
    for (i, &signo) in SIGNALS.iter().enumerate() {
        // SAFETY: a null new action only reads the current one into `old`.
        let read = unsafe { libc::sigaction(signo, std::ptr::null(), &mut old[i]) };
        if read == 0 && old[i].sa_sigaction == libc::SIG_IGN {
            continue;
        }
        if let Ok(previous) = set_handler(signo, handler) {
            old[i] = previous;
        }
    }
    Installed { old }
}

/// True when `signo` is currently ignored (`SIG_IGN`).
pub fn is_ignored(signo: libc::c_int) -> bool {
    // SAFETY: a zeroed sigaction is a valid buffer; a null new action only
    // reads the current one.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signo, std::ptr::null(), &mut current) == 0
            && current.sa_sigaction == libc::SIG_IGN
    }
}

/// Installs `handler` for `signo` with `SA_RESTART` and an empty mask, and
/// returns the action it replaced. The handler must be async-signal-safe.
pub fn set_handler(
    signo: libc::c_int,
    handler: extern "C" fn(libc::c_int),
) -> std::io::Result<libc::sigaction> {
    // SAFETY: a zeroed sigaction is a valid value to fill in; the handler
    // is a plain function, the mask is emptied before use.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(signo, &action, &mut old) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(old)
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        for (i, &signo) in SIGNALS.iter().enumerate() {
            // SAFETY: restores the action saved at installation.
            unsafe { libc::sigaction(signo, &self.old[i], std::ptr::null_mut()) };
        }
    }
}

/// The cancel tokens of the connections registered now.
static REGISTERED: Mutex<Vec<CancelToken>> = Mutex::new(Vec::new());

/// Set once a stop has begun cancelling: no registered connection starts a
/// statement after that (see [`wait_if_stopping`]).
static STOPPING: AtomicBool = AtomicBool::new(false);

/// Called by a registered connection before it sends a statement: once a
/// stop has begun, the thread waits for the process to exit instead, so
/// that no statement starts after the cancel requests went out (a cancel
/// only ends a statement the backend is running).
pub fn wait_if_stopping() {
    while STOPPING.load(Ordering::SeqCst) {
        std::thread::park();
    }
}

/// A connection's entry among those [`cancel_registered`] cancels; removed
/// on drop.
pub struct Cancellable(i32);

/// Registers a connection, by its cancel token, until the returned value
/// is dropped.
pub fn cancel_on_stop(token: CancelToken) -> Cancellable {
    let pid = token.process_id();
    REGISTERED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(token);
    Cancellable(pid)
}

impl Drop for Cancellable {
    fn drop(&mut self) {
        REGISTERED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|t| t.process_id() != self.0);
    }
}

/// Asks the server to cancel what every registered connection is running,
/// waiting at most `limit` for the requests to be delivered (each from a
/// thread of its own, so a server that does not answer cannot hold the
/// caller up).
pub fn cancel_registered(limit: Duration) {
    let tokens = {
        let registered = REGISTERED.lock().unwrap_or_else(PoisonError::into_inner);
        STOPPING.store(true, Ordering::SeqCst);
        registered.clone()
    };
    let count = tokens.len();
    let (done, delivered) = mpsc::channel();
    for token in tokens {
        let sender = done.clone();
        let spawned = std::thread::Builder::new()
            .name("pgbolt-cancel".to_owned())
            .spawn(move || {
                let _ = token.cancel();
                let _ = sender.send(());
            });
        if spawned.is_err() {
            let _ = done.send(());
        }
    }
    let deadline = Instant::now() + limit;
    for _ in 0..count {
        let left = deadline.saturating_duration_since(Instant::now());
        if delivered.recv_timeout(left).is_err() {
            return;
        }
    }
}
