//! How a worker thread sleeps: in `epoll_wait`, until a socket is ready or
//! the nearest timer is due.
//!
//! # Exact timeouts
//! Under `-R` a thread sleeps once or twice per transaction until a
//! client's scheduled start, and how late it wakes is part of the latency
//! and of the `rate limit schedule lag` pgbolt reports. `epoll_wait`
//! takes its timeout in whole milliseconds (rounded up), which made the
//! lag 0.6 ms at `-c 1 -R 1000` where pgbench, whose `ppoll` takes
//! microseconds, reports 0.1 ms. So the thread sleeps in `epoll_pwait2`
//! (Linux 5.11), whose timeout is a `timespec`: one system call and one
//! kernel timer per sleep, with the kernel's default slack (it may end
//! the sleep up to 50 µs late, as it may pgbench's `ppoll`).
//!
//! Where `epoll_pwait2` is missing (older kernels, a seccomp filter that
//! does not know it), a short wait arms a timerfd to the exact time
//! instead; the timerfd sits in the thread's epoll set and wakes the
//! millisecond-rounded `epoll_wait` on time. That costs a
//! `timerfd_settime` per short sleep and two kernel timers instead of one:
//! measured under `-R`, a quarter more client CPU per transaction than
//! pgbench where `epoll_pwait2` brings it to about pgbench's
//! (docs/performance.md). The
//! timerfd is never read: `timerfd_settime` clears its expirations, and
//! being registered edge-triggered, each new expiry wakes the loop again.
//!
//! # Events
//! The loop reads the events into its own buffer ([`Ready`]) rather than
//! mio's, which only `Poll::poll` can fill; registrations still go through
//! mio's `Registry`, so the token is the event's `u64` and the flags mean
//! what mio reads from them.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;
use std::time::Duration;

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};

/// With the millisecond `epoll_wait`, waits at least this long keep its
/// timeout alone: arming the timerfd costs a system call, and a
/// millisecond late there (the end of a `-T` run, the next progress
/// line) changes nothing.
pub const PRECISE_BELOW: Duration = Duration::from_millis(20);

/// The events one wait returned, in a buffer reused for every wait.
pub struct Ready {
    buf: Vec<libc::epoll_event>,
    len: usize,
}

/// One socket's (or pipe's, or timer's) readiness.
#[derive(Clone, Copy)]
pub struct Event {
    token: Token,
    flags: u32,
}

impl Event {
    pub fn token(&self) -> Token {
        self.token
    }

    /// The peer closed its end (as mio's `is_read_closed`).
    pub fn is_read_closed(&self) -> bool {
        let hup = self.flags & libc::EPOLLHUP as u32 != 0;
        let rdhup = self.flags & (libc::EPOLLIN | libc::EPOLLRDHUP) as u32
            == (libc::EPOLLIN | libc::EPOLLRDHUP) as u32;
        hup || rdhup
    }

    pub fn is_error(&self) -> bool {
        self.flags & libc::EPOLLERR as u32 != 0
    }
}

impl Ready {
    pub fn with_capacity(capacity: usize) -> Ready {
        Ready {
            buf: vec![libc::epoll_event { events: 0, u64: 0 }; capacity.max(1)],
            len: 0,
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = Event> + '_ {
        self.buf[..self.len].iter().map(|e| Event {
            token: Token(e.u64 as usize),
            flags: e.events,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn clear(&mut self) {
        self.len = 0;
    }
}

/// How the thread's waits reach their timeouts (see the module doc).
pub enum Sleeper {
    /// `epoll_pwait2` with the exact timeout.
    Exact,
    /// `epoll_wait` in milliseconds, woken earlier by the timerfd.
    Rounded(PreciseTimer),
}

impl Sleeper {
    /// The exact sleeper where the kernel has `epoll_pwait2`, else the
    /// timerfd, registered under `token`.
    pub fn new(registry: &Registry, token: Token) -> io::Result<Sleeper> {
        if exact_waits() {
            return Ok(Sleeper::Exact);
        }
        PreciseTimer::new(registry, token).map(Sleeper::Rounded)
    }

    /// Waits on `epfd` for events or `timeout` (None: for events only) and
    /// puts them in `ready`; an interrupted wait returns none.
    pub fn wait(
        &self,
        epfd: RawFd,
        ready: &mut Ready,
        timeout: Option<Duration>,
    ) -> io::Result<()> {
        ready.len = 0;
        let capacity = ready.buf.len() as libc::c_int;
        let buf = ready.buf.as_mut_ptr();
        let n = match self {
            Sleeper::Exact => {
                let spec = timeout.map(timespec);
                let spec_ptr = spec.as_ref().map_or(std::ptr::null(), |s| s as *const _);
                // SAFETY: the buffer holds `capacity` events; the timespec
                // lives until the call returns; no signal mask.
                unsafe {
                    libc::syscall(
                        libc::SYS_epoll_pwait2,
                        epfd,
                        buf,
                        capacity,
                        spec_ptr,
                        std::ptr::null::<libc::sigset_t>(),
                        0usize,
                    ) as libc::c_int
                }
            }
            Sleeper::Rounded(timer) => {
                if let Some(t) = timeout {
                    timer.arm_if_short(t);
                }
                // SAFETY: the buffer holds `capacity` events.
                unsafe { libc::epoll_wait(epfd, buf, capacity, millis_rounded_up(timeout)) }
            }
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::Interrupted => Ok(()),
                _ => Err(e),
            };
        }
        ready.len = n as usize;
        Ok(())
    }
}

fn timespec(d: Duration) -> libc::timespec {
    libc::timespec {
        tv_sec: d.as_secs().min(libc::time_t::MAX as u64) as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    }
}

/// `epoll_wait`'s timeout: -1 for none, else whole milliseconds, never
/// shorter than asked.
fn millis_rounded_up(timeout: Option<Duration>) -> libc::c_int {
    match timeout {
        None => -1,
        Some(t) => {
            let ms = t.as_nanos().div_ceil(1_000_000);
            ms.min(libc::c_int::MAX as u128) as libc::c_int
        }
    }
}

/// Whether this kernel (and any seccomp filter) lets `epoll_pwait2` run,
/// tried once per process on an epoll set of its own.
fn exact_waits() -> bool {
    static EXACT: OnceLock<bool> = OnceLock::new();
    *EXACT.get_or_init(|| {
        // SAFETY: plain system calls on a descriptor created and closed here.
        unsafe {
            let fd = libc::epoll_create1(libc::EPOLL_CLOEXEC);
            if fd < 0 {
                return false;
            }
            let mut event = libc::epoll_event { events: 0, u64: 0 };
            let zero = timespec(Duration::ZERO);
            let rc = libc::syscall(
                libc::SYS_epoll_pwait2,
                fd,
                &mut event as *mut libc::epoll_event,
                1 as libc::c_int,
                &zero as *const libc::timespec,
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            );
            libc::close(fd);
            rc == 0
        }
    })
}

/// A one-shot monotonic timerfd in a thread's epoll set.
pub struct PreciseTimer {
    fd: OwnedFd,
}

impl PreciseTimer {
    /// Creates the timer and registers it under `token`.
    pub fn new(registry: &Registry, token: Token) -> io::Result<PreciseTimer> {
        // SAFETY: plain system call; the result is checked before use.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        registry.register(&mut SourceFd(&fd.as_raw_fd()), token, Interest::READABLE)?;
        Ok(PreciseTimer { fd })
    }

    /// Makes the timer fire `after` from now, when that is short enough to
    /// matter (see [`PRECISE_BELOW`]).
    pub fn arm_if_short(&self, after: Duration) {
        if after.is_zero() || after >= PRECISE_BELOW {
            return;
        }
        // SAFETY: a zeroed itimerspec is "disarmed"; only it_value is set
        // (one-shot, relative), and the descriptor is alive.
        unsafe {
            let mut spec: libc::itimerspec = std::mem::zeroed();
            spec.it_value = timespec(after);
            libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mio::Poll;

    const T: Token = Token(7);

    fn fired(poll: &Poll, sleeper: &Sleeper, ready: &mut Ready, limit: Duration) -> bool {
        sleeper.wait(poll.as_raw_fd(), ready, Some(limit)).unwrap();
        ready.iter().any(|e| e.token() == T)
    }

    #[test]
    fn each_short_arming_wakes_the_poller_once() {
        let poll = Poll::new().unwrap();
        let mut ready = Ready::with_capacity(4);
        let rounded = Sleeper::Rounded(PreciseTimer::new(poll.registry(), T).unwrap());
        let Sleeper::Rounded(timer) = &rounded else {
            unreachable!()
        };
        for _ in 0..3 {
            timer.arm_if_short(Duration::from_micros(300));
            assert!(fired(&poll, &rounded, &mut ready, Duration::from_secs(10)));
        }
        // Never read, the fired timer does not wake the poller again.
        assert!(!fired(
            &poll,
            &rounded,
            &mut ready,
            Duration::from_millis(30)
        ));
    }

    #[test]
    fn long_waits_are_left_to_the_poller_timeout() {
        let poll = Poll::new().unwrap();
        let mut ready = Ready::with_capacity(4);
        let timer = PreciseTimer::new(poll.registry(), T).unwrap();
        timer.arm_if_short(PRECISE_BELOW);
        timer.arm_if_short(Duration::ZERO);
        let rounded = Sleeper::Rounded(timer);
        assert!(!fired(&poll, &rounded, &mut ready, PRECISE_BELOW * 2));
    }

    #[test]
    fn the_peer_closing_its_end_is_reported() {
        use std::os::unix::net::UnixStream;
        let poll = Poll::new().unwrap();
        let (ours, theirs) = UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        poll.registry()
            .register(&mut SourceFd(&ours.as_raw_fd()), T, Interest::READABLE)
            .unwrap();
        drop(theirs);
        let mut ready = Ready::with_capacity(4);
        let sleeper = Sleeper::new(poll.registry(), Token(8)).unwrap();
        sleeper
            .wait(poll.as_raw_fd(), &mut ready, Some(Duration::from_secs(5)))
            .unwrap();
        let events: Vec<Event> = ready.iter().collect();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].token(), T);
        assert!(events[0].is_read_closed());
    }

    #[test]
    fn a_short_timeout_ends_a_wait_without_events() {
        let poll = Poll::new().unwrap();
        let mut ready = Ready::with_capacity(4);
        let sleeper = Sleeper::new(poll.registry(), T).unwrap();
        sleeper
            .wait(
                poll.as_raw_fd(),
                &mut ready,
                Some(Duration::from_micros(300)),
            )
            .unwrap();
        assert!(ready.is_empty());
    }

    #[test]
    fn millisecond_timeouts_round_up() {
        assert_eq!(millis_rounded_up(None), -1);
        assert_eq!(millis_rounded_up(Some(Duration::ZERO)), 0);
        assert_eq!(millis_rounded_up(Some(Duration::from_micros(1))), 1);
        assert_eq!(millis_rounded_up(Some(Duration::from_micros(1000))), 1);
        assert_eq!(millis_rounded_up(Some(Duration::from_micros(1001))), 2);
    }
}
