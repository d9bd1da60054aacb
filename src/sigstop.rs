//! Installing a handler for the signals that ask pgbolt to stop (SIGINT and
//! SIGTERM), and putting the previous handlers back.
//!
//! The run engine (stop starting transactions, then report) and `-i` (say
//! that initialization was interrupted) each install their own handler for
//! as long as they run; the handlers themselves only touch atomics and
//! `write(2)`, so they are async-signal-safe. Dropping [`Installed`]
//! restores what was there before, such as the clean-up of a throwaway
//! instance, which installs its own with [`set_handler`].

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
