//! The engine's clock: microseconds since the Unix epoch, read from the
//! monotonic clock.
//!
//! Timestamps go into logs and reports as Unix time, while durations must
//! not jump with the wall clock; so the offset between the two is taken
//! once when the run starts and every reading after that is monotonic.

/// Microseconds since the Unix epoch from a monotonic clock.
///
/// Read two or three times per transaction, so it asks `CLOCK_MONOTONIC`
/// directly (a vDSO call) and does 64-bit arithmetic, where `Instant`'s
/// checked `Duration` subtraction and 128-bit microseconds cost as much
/// again.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    /// The Unix time of the monotonic clock's zero, in µs.
    offset_us: i64,
}

impl Clock {
    pub fn new() -> Clock {
        let epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        Clock {
            offset_us: epoch - monotonic_us(),
        }
    }

    #[inline]
    pub fn now_us(&self) -> i64 {
        self.offset_us + monotonic_us()
    }
}

#[inline]
fn monotonic_us() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always
    // exists on Linux, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000 + ts.tv_nsec / 1_000
}
