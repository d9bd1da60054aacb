//! Waits shorter than a millisecond, for the epoll loop.
//!
//! `epoll_wait` takes its timeout in whole milliseconds (mio rounds up), so
//! a client that `-R` schedules 300 µs from now would be woken up to a
//! millisecond late, and that lateness is part of the latency and of the
//! `rate limit schedule lag` pgbolt reports: 0.6 ms at `-c 1 -R 1000`
//! where pgbench, which waits with microsecond timeouts, reports 0.1 ms.
//! So a short wait also arms a timerfd to the exact time; the timerfd is
//! registered in the thread's epoll set and wakes the loop when it fires,
//! before the rounded-up timeout would. Long waits (the end of a `-T` run,
//! the next progress line) only use the timeout: arming costs a system
//! call, and a millisecond late there changes nothing.
//!
//! The timerfd is never read: `timerfd_settime` clears its expirations, and
//! being registered edge-triggered, each new expiry wakes the loop again.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};

/// Waits at least this long keep the millisecond timeout alone.
pub const PRECISE_BELOW: Duration = Duration::from_millis(20);

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
            spec.it_value.tv_sec = after.as_secs() as libc::time_t;
            spec.it_value.tv_nsec = after.subsec_nanos() as libc::c_long;
            libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mio::{Events, Poll};

    const T: Token = Token(7);

    fn fired(poll: &mut Poll, events: &mut Events, limit: Duration) -> bool {
        poll.poll(events, Some(limit)).unwrap();
        events.iter().any(|e| e.token() == T)
    }

    #[test]
    fn each_short_arming_wakes_the_poller_once() {
        let mut poll = Poll::new().unwrap();
        let mut events = Events::with_capacity(4);
        let timer = PreciseTimer::new(poll.registry(), T).unwrap();
        for _ in 0..3 {
            timer.arm_if_short(Duration::from_micros(300));
            assert!(fired(&mut poll, &mut events, Duration::from_secs(10)));
        }
        // Never read, the fired timer does not wake the poller again.
        assert!(!fired(&mut poll, &mut events, Duration::from_millis(30)));
    }

    #[test]
    fn long_waits_are_left_to_the_poller_timeout() {
        let mut poll = Poll::new().unwrap();
        let mut events = Events::with_capacity(4);
        let timer = PreciseTimer::new(poll.registry(), T).unwrap();
        timer.arm_if_short(PRECISE_BELOW);
        timer.arm_if_short(Duration::ZERO);
        assert!(!fired(&mut poll, &mut events, PRECISE_BELOW * 2));
    }
}
