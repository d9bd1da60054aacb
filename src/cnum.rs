//! C's number readers, as pgbench's behaviour depends on them.
//!
//! pgbench does not use one number parser: `-R`, `-L` and
//! `--sampling-rate` go through `atof`, `--max-tries` and `\\sleep`
//! through `atoi`, weights, `\\setshell` results and counts read back
//! from the server through `strtol`. Each accepts and rejects different
//! strings (`atof("5x")` is 5, `atoi("x")` is 0), and the differences are
//! visible to users, so each is reproduced here once, for every module
//! that needs it.

fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// The index of the first byte at or after `i` that C's `isspace` rejects.
pub fn skip_spaces(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    i
}

/// An optional sign at `i`: whether it is `-`, and the index after it.
fn sign(s: &[u8], i: usize) -> (bool, usize) {
    match s.get(i) {
        Some(b'-') => (true, i + 1),
        Some(b'+') => (false, i + 1),
        _ => (false, i),
    }
}

/// `strtol(s, &end, 10)`: the value (saturated on overflow), whether it
/// overflowed, and where the number ended (0 when there was no number).
pub fn strtol(s: &[u8]) -> (i64, bool, usize) {
    let (negative, mut i) = sign(s, skip_spaces(s, 0));
    let digits_start = i;
    let mut magnitude: u64 = 0;
    let mut overflow = false;
    while let Some(d) = s.get(i).filter(|b| b.is_ascii_digit()) {
        magnitude = match magnitude
            .checked_mul(10)
            .and_then(|m| m.checked_add(u64::from(d - b'0')))
        {
            Some(m) => m,
            None => {
                overflow = true;
                u64::MAX
            }
        };
        i += 1;
    }
    if i == digits_start {
        return (0, false, 0);
    }
    let value = if negative {
        if magnitude > i64::MAX as u64 + 1 {
            overflow = true;
            i64::MIN
        } else {
            (magnitude as i64).wrapping_neg()
        }
    } else if magnitude > i64::MAX as u64 {
        overflow = true;
        i64::MAX
    } else {
        magnitude as i64
    };
    (value, overflow, i)
}

/// C's `atoi`: the leading integer, 0 when there is none, truncated to
/// 32 bits as the C conversion does.
pub fn atoi(value: &str) -> i32 {
    strtol(value.as_bytes()).0 as i32
}

/// C's `atof`: the longest leading floating-point number, 0 when there is
/// none. Accepts decimal and hexadecimal forms, `inf`, `infinity`, `nan`.
pub fn atof(value: &str) -> f64 {
    let s = value.as_bytes();
    let (negative, i) = sign(s, skip_spaces(s, 0));
    let rest = &s[i..];
    let magnitude = if starts_with_ignore_case(rest, b"inf") {
        f64::INFINITY
    } else if starts_with_ignore_case(rest, b"nan") {
        f64::NAN
    } else if starts_with_ignore_case(rest, b"0x") {
        hex_float(&rest[2..]).unwrap_or(0.0)
    } else {
        decimal_float(rest)
    };
    if negative {
        -magnitude
    } else {
        magnitude
    }
}

fn starts_with_ignore_case(s: &[u8], prefix: &[u8]) -> bool {
    s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

fn count_digits(s: &[u8], radix: u32) -> usize {
    s.iter()
        .take_while(|b| (**b as char).is_digit(radix))
        .count()
}

/// Exponent digits after `e`/`p`, with an optional sign; the length consumed
/// (0 when there is no well-formed exponent) and its value, saturated.
fn exponent(s: &[u8]) -> (usize, i32) {
    let sign_len = usize::from(matches!(s.first(), Some(b'+' | b'-')));
    let digits = count_digits(&s[sign_len..], 10);
    if digits == 0 {
        return (0, 0);
    }
    let mut value: i32 = 0;
    for d in &s[sign_len..sign_len + digits] {
        value = value.saturating_mul(10).saturating_add(i32::from(d - b'0'));
    }
    if s.first() == Some(&b'-') {
        value = -value;
    }
    (sign_len + digits, value)
}

fn decimal_float(s: &[u8]) -> f64 {
    let int_digits = count_digits(s, 10);
    let mut end = int_digits;
    let mut frac_digits = 0;
    if s.get(end) == Some(&b'.') {
        frac_digits = count_digits(&s[end + 1..], 10);
        end += 1 + frac_digits;
    }
    if int_digits + frac_digits == 0 {
        return 0.0;
    }
    if matches!(s.get(end), Some(b'e' | b'E')) {
        let (len, _) = exponent(&s[end + 1..]);
        if len > 0 {
            end += 1 + len;
        }
    }
    // The prefix is ASCII digits, '.', 'e' and signs only.
    std::str::from_utf8(&s[..end])
        .ok()
        .and_then(|t| t.parse::<f64>().ok())
        .unwrap_or(0.0)
}

fn hex_float(s: &[u8]) -> Option<f64> {
    let int_digits = count_digits(s, 16);
    let fraction: &[u8] = match s.get(int_digits) {
        Some(b'.') => {
            let rest = &s[int_digits + 1..];
            &rest[..count_digits(rest, 16)]
        }
        _ => &[],
    };
    if int_digits + fraction.len() == 0 {
        return None;
    }
    let digit = |b: &u8| (*b as char).to_digit(16).map(f64::from);
    let mut mantissa = 0.0f64;
    for b in &s[..int_digits] {
        mantissa = mantissa * 16.0 + digit(b)?;
    }
    let mut scale = 1.0 / 16.0;
    for b in fraction {
        mantissa += digit(b)? * scale;
        scale /= 16.0;
    }
    let end = if fraction.is_empty() && s.get(int_digits) != Some(&b'.') {
        int_digits
    } else {
        int_digits + 1 + fraction.len()
    };
    let power = match s.get(end) {
        Some(b'p' | b'P') => exponent(&s[end + 1..]).1,
        _ => 0,
    };
    Some(mantissa * 2f64.powi(power))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atof_reads_the_leading_number() {
        let cases = [
            ("5", 5.0),
            (" 5", 5.0),
            ("1x", 1.0),
            ("x", 0.0),
            ("", 0.0),
            ("-2.5e1", -25.0),
            (".5", 0.5),
            ("5.", 5.0),
            ("1e", 1.0),
            ("1e+", 1.0),
            ("0x10", 16.0),
            ("0x1p3", 8.0),
            ("0x", 0.0),
            ("0x.8", 0.5),
            ("0x1.", 1.0),
            ("0x2p", 2.0),
            ("-", 0.0),
            ("+.", 0.0),
            ("1e-400", 0.0),
        ];
        for (text, want) in cases {
            assert_eq!(atof(text), want, "{text:?}");
        }
        assert!(atof("inf").is_infinite());
        assert!(atof("1e400").is_infinite());
        assert!(atof("nan").is_nan());
    }

    #[test]
    fn atoi_truncates_like_c() {
        assert_eq!(atoi("x"), 0);
        assert_eq!(atoi("3x"), 3);
        assert_eq!(atoi("-1"), -1);
        assert_eq!(atoi("99999999999"), 1215752191);
    }

    #[test]
    fn atoi_skips_c_white_space_and_stops_at_the_first_non_digit() {
        let cases: &[(&str, i32)] = &[
            ("12", 12),
            ("  7x", 7),
            ("-3", -3),
            ("+4", 4),
            ("", 0),
            ("abc", 0),
            ("\t\n 9 9", 9),
        ];
        for (text, want) in cases {
            assert_eq!(atoi(text), *want, "{text:?}");
        }
    }

    #[test]
    fn strtol_reports_overflow_and_where_it_stopped() {
        assert_eq!(strtol(b"  -12x"), (-12, false, 5));
        assert_eq!(strtol(b"x"), (0, false, 0));
        assert_eq!(strtol(b"99999999999999999999"), (i64::MAX, true, 20));
        assert_eq!(strtol(b"-99999999999999999999"), (i64::MIN, true, 21));
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn number_readers_accept_any_text_without_panicking(s in "[ +\\-0-9.eEpPxXa-fA-Fin@]{0,12}|\\PC{0,12}") {
            let _ = atof(&s);
            let _ = atoi(&s);
            let _ = strtol(s.as_bytes());
        }
    }
}
