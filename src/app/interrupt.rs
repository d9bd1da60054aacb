//! SIGINT and SIGTERM during `-i`: say so, then exit with 128 plus the
//! signal number.
//!
//! Without a handler the process would simply vanish mid-step, leaving
//! the user to guess what state the tables are in. With one, the user
//! reads that initialization was interrupted and that `-i` starts over:
//! its first step drops the four tables, whatever state they are in. The
//! statements still running are cancelled first (see
//! [`crate::sigstop::cancel_registered`]).
//!
//! The handler only writes the signal number to a pipe; a watcher thread
//! reads it, writes the message straight to descriptor 2 (the
//! initialization holds the lock of `std::io::stderr` while it prints its
//! progress), and exits, which also runs the clean-up of
//! `--temp-instance` (whose tables go with it, so the message says that
//! instead). Standard error is silenced after the message. Dropping the
//! [`Watch`] restores the previous handlers and ends the watcher.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicI32, Ordering};
use std::thread::JoinHandle;

use crate::program::PROGRAM;

/// How long the cancel requests may take before the process exits anyway.
const CANCEL_LIMIT: std::time::Duration = std::time::Duration::from_secs(1);

static WRITE_FD: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(signo: libc::c_int) {
    let fd = WRITE_FD.load(Ordering::SeqCst);
    if fd >= 0 {
        let byte = signo as u8;
        // SAFETY: writes one byte from a local to a descriptor we own.
        unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) };
    }
}

/// The installed handlers and their watcher.
pub struct Watch {
    write_fd: RawFd,
    watcher: Option<JoinHandle<()>>,
    handlers: Option<crate::sigstop::Installed>,
}

/// Installs the handlers for the duration of an initialization.
/// `temp_instance`: the tables are in a throwaway instance, which goes away
/// with the process, so the message does not suggest running `-i` again.
pub fn watch(temp_instance: bool) -> std::io::Result<Watch> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let read_fd = fds[0];
    let watcher = std::thread::Builder::new()
        .name("pgbolt-interrupt".to_owned())
        .spawn(move || wait_for_signal(read_fd, temp_instance))?;
    WRITE_FD.store(fds[1], Ordering::SeqCst);
    Ok(Watch {
        write_fd: fds[1],
        watcher: Some(watcher),
        handlers: Some(crate::sigstop::install(on_signal)),
    })
}

/// The watcher: a signal number ends the process; 0 or end of file ends
/// the watcher.
fn wait_for_signal(read_fd: RawFd, temp_instance: bool) {
    let mut byte = 0u8;
    // SAFETY: reads one byte into a local from a descriptor we own.
    let n = unsafe { libc::read(read_fd, (&mut byte as *mut u8).cast(), 1) };
    // SAFETY: closes the read end, used by nobody else.
    unsafe { libc::close(read_fd) };
    if n == 1 && byte != 0 {
        let message = if temp_instance {
            format!("{PROGRAM}: error: initialization was interrupted; the throwaway instance is removed\n")
        } else {
            format!(
                "{PROGRAM}: error: initialization was interrupted; the tables may be incomplete: run -i again to start over (it drops them first)\n"
            )
        };
        // SAFETY: writes a local buffer to standard error, then points
        // standard error at /dev/null: the initialization still running on
        // the main thread would report the failures the cancel and the exit
        // cause (such as the throwaway server going away), which would only
        // mislead.
        unsafe {
            libc::write(2, message.as_ptr().cast(), message.len());
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if null >= 0 {
                libc::dup2(null, 2);
                libc::close(null);
            }
        }
        crate::sigstop::cancel_registered(CANCEL_LIMIT);
        std::process::exit(128 + i32::from(byte));
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        // The previous handlers first, so that no signal falls between.
        self.handlers.take();
        WRITE_FD.store(-1, Ordering::SeqCst);
        let done = 0u8;
        // SAFETY: writes one byte to, then closes, the pipe we created.
        unsafe {
            libc::write(self.write_fd, (&done as *const u8).cast(), 1);
            libc::close(self.write_fd);
        }
        if let Some(watcher) = self.watcher.take() {
            let _ = watcher.join();
        }
    }
}
