//! Integers written out in decimal on the hot paths: SQL parameters of
//! every statement, COPY rows during `-i`, and per-transaction log lines.
//!
//! `fmt`'s `Display` goes through a `Formatter` and dynamic dispatch,
//! which costs several times what producing the digits does; these
//! functions write the digits straight into a caller's buffer. 64-bit
//! values never go through 128-bit division (a library call on x86-64).

/// Enough room for any `u64` (20 digits).
const U64_DIGITS: usize = 20;

/// Enough room for any `u128` (39 digits).
const U128_DIGITS: usize = 39;

/// The decimal digits of `v`, written at the end of `buf`.
pub fn u64_digits(mut v: u64, buf: &mut [u8; U64_DIGITS]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            return &buf[i..];
        }
    }
}

/// The decimal digits of `v`, written at the end of `buf`, in chunks of
/// 19 digits (the most a `u64` division step can produce).
pub fn u128_digits(mut v: u128, buf: &mut [u8; U128_DIGITS]) -> &[u8] {
    const CHUNK: usize = 19;
    const TEN_POW_CHUNK: u128 = 10_000_000_000_000_000_000;
    let mut end = buf.len();
    loop {
        let mut chunk = [0u8; U64_DIGITS];
        let digits = u64_digits((v % TEN_POW_CHUNK) as u64, &mut chunk);
        v /= TEN_POW_CHUNK;
        let start = end - digits.len();
        buf[start..end].copy_from_slice(digits);
        if v == 0 {
            return &buf[start..];
        }
        buf[end - CHUNK..start].fill(b'0');
        end -= CHUNK;
    }
}

/// Appends `v` in decimal, with a `-` when it is negative.
pub fn push_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(u64_digits(v.unsigned_abs(), &mut [0u8; U64_DIGITS]));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn i64_as_display_writes_it() {
        for v in [0, 7, -7, 10, 99, 100, -100_000, i64::MAX, i64::MIN, 1 << 40] {
            let mut out = b"x".to_vec();
            push_i64(&mut out, v);
            assert_eq!(out, format!("x{v}").into_bytes());
        }
    }

    #[test]
    fn u128_as_display_writes_it() {
        let values = [
            0,
            u128::from(u64::MAX),
            u128::from(u64::MAX) + 1,
            10_000_000_000_000_000_000,
            10_000_000_000_000_000_001,
            123_456_789_012_345_678_901_234_567_890,
            u128::MAX,
        ];
        for v in values {
            let mut buf = [0u8; U128_DIGITS];
            assert_eq!(u128_digits(v, &mut buf), v.to_string().as_bytes());
        }
    }
}
