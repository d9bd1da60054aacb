//! SIGINT and SIGTERM before a run (the preflight, the vacuum): cancel the
//! statement the set-up connection is running, then end as the signal
//! would have ended pgbolt without a handler, as pgbench ends.
//!
//! A backend whose client goes away without a word goes on with its
//! statement: a `truncate pgbench_history` waiting for a lock would keep
//! every session that reaches the table after it waiting too. So the
//! handler sends the cancel request itself, with system calls that are
//! safe in a signal handler (no thread is started: with `-j 1` the run
//! stays single-threaded), waits at most a second for the server to take
//! it, puts the previous action back and raises the signal again. Under
//! `--temp-instance` the previous action is the instance's clean-up, which
//! stops the server anyway: the handler then sends nothing (the main
//! thread would only report the cancelled statement while the clean-up
//! starts). It acts once, whichever of the two signals comes first.
//!
//! In a study the previous action is the handler that remembers a signal
//! between runs ([`super::signals::install_between`]): the handler then
//! sends the cancel and passes the signal on to it, so the study stops
//! after this step's set-up and still reports the steps it ran.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};

use pgwire::CancelToken;

use crate::sigstop::SIGNALS;

/// How long the handler waits for each step of the request, in ms.
const STEP_MS: libc::c_int = 1000;

/// What the handler needs, built before it is installed.
struct Request {
    addr: libc::sockaddr_storage,
    len: libc::socklen_t,
    bytes: [u8; 16],
    previous: [libc::sigaction; 2],
}

struct Slot(UnsafeCell<MaybeUninit<Request>>);

// SAFETY: written only while `ARMED` is false, read only while it is true.
unsafe impl Sync for Slot {}

static SLOT: Slot = Slot(UnsafeCell::new(MaybeUninit::uninit()));
static ARMED: AtomicBool = AtomicBool::new(false);

/// The handler, installed until dropped.
pub struct Armed {
    installed: Option<crate::sigstop::Installed>,
}

/// Installs the handler, to cancel what the connection of `token` runs.
pub fn arm(token: &CancelToken) -> Armed {
    let (addr, len, bytes) = token.raw_request();
    // SAFETY: zeroed sigactions are valid; a null new action only reads the
    // current one. The slot is written while no handler reads it.
    unsafe {
        let mut previous: [libc::sigaction; 2] = std::mem::zeroed();
        for (i, &signo) in SIGNALS.iter().enumerate() {
            libc::sigaction(signo, std::ptr::null(), &mut previous[i]);
        }
        (*SLOT.0.get()).write(Request {
            addr,
            len,
            bytes,
            previous,
        });
    }
    ARMED.store(true, Ordering::SeqCst);
    Armed {
        installed: Some(crate::sigstop::install(on_signal)),
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        self.installed.take();
        ARMED.store(false, Ordering::SeqCst);
    }
}

extern "C" fn on_signal(signo: libc::c_int) {
    if !ARMED.swap(false, Ordering::SeqCst) {
        return;
    }
    // SAFETY: the slot was written before `ARMED` was set; the calls are
    // async-signal-safe. The signal is blocked while its handler runs, so
    // the one raised here arrives, with the previous action, on return;
    // `errno` is put back for the code the signal interrupted.
    unsafe {
        let errno = *libc::__errno_location();
        let request = (*SLOT.0.get()).assume_init_ref();
        let previous = SIGNALS
            .iter()
            .position(|&s| s == signo)
            .map(|i| &request.previous[i]);
        if previous.map_or(true, |p| {
            p.sa_sigaction == libc::SIG_DFL || super::signals::is_between_handler(p)
        }) {
            send(request);
        }
        if let Some(previous) = previous {
            libc::sigaction(signo, previous, std::ptr::null_mut());
        }
        libc::raise(signo);
        *libc::__errno_location() = errno;
    }
}

/// Waits until `fd` is ready for `events`, for at most a step.
///
/// # Safety
/// `fd` must be an open descriptor.
unsafe fn ready(fd: libc::c_int, events: libc::c_short) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    libc::poll(&mut pfd, 1, STEP_MS) == 1
}

/// Sends the cancel request and waits for the server to close the socket,
/// which it does once it has read the request.
///
/// # Safety
/// Async-signal-safe calls only, on a descriptor of its own.
unsafe fn send(request: &Request) {
    let fd = libc::socket(
        libc::c_int::from(request.addr.ss_family),
        libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
        0,
    );
    if fd < 0 {
        return;
    }
    let addr = (&request.addr as *const libc::sockaddr_storage).cast::<libc::sockaddr>();
    let connected = libc::connect(fd, addr, request.len) == 0
        || (*libc::__errno_location() == libc::EINPROGRESS && ready(fd, libc::POLLOUT));
    if connected {
        let sent = libc::write(fd, request.bytes.as_ptr().cast(), request.bytes.len());
        if sent == request.bytes.len() as isize {
            ready(fd, libc::POLLIN);
        }
    }
    libc::close(fd);
}
