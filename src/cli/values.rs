//! Numbers read the way pgbench's C library reads them.
//!
//! pgbench does not use one number parser: most integers go through
//! PostgreSQL's `option_parse_int` (strict, range-checked), but `-R`, `-L`
//! and `--sampling-rate` use `atof`, `--max-tries` uses `atoi`, weights use
//! `strtol` and `--random-seed` uses `sscanf("%lu%c")`. Each accepts and
//! rejects different strings (`atof("5x")` is 5, `atoi("x")` is 0), and the
//! differences are visible to users, so each is reproduced here.

use super::error::CliError;

fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn skip_spaces(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    i
}

/// `strtol(s, &end, 10)`: the value (saturated on overflow), whether it
/// overflowed, and where the number ended (0 when there was no number).
fn strtol(s: &[u8]) -> (i64, bool, usize) {
    let mut i = skip_spaces(s, 0);
    let negative = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
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

/// PostgreSQL's `option_parse_int`: the whole value must be an integer
/// (surrounding white space allowed) within `min..=max`.
pub fn option_int(value: &str, option: &'static str, min: i32, max: i32) -> Result<i32, CliError> {
    let bytes = value.as_bytes();
    let (parsed, overflow, end) = strtol(bytes);
    if skip_spaces(bytes, end) != bytes.len() {
        return Err(CliError::InvalidValue {
            option,
            value: value.to_string(),
        });
    }
    match i32::try_from(parsed) {
        Ok(v) if !overflow && (min..=max).contains(&v) => Ok(v),
        _ => Err(CliError::OutOfRange { option, min, max }),
    }
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
    let mut i = skip_spaces(s, 0);
    let negative = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
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

/// A script weight after `@`, as pgbench reads it with `strtol`.
/// `spec` is the text from the `@` on, used in messages.
pub fn weight(digits: &str, spec: &str) -> Result<u32, CliError> {
    let bytes = digits.as_bytes();
    let (value, overflow, end) = strtol(bytes);
    if overflow || end == 0 || end != bytes.len() {
        return Err(CliError::InvalidWeight(spec.to_string()));
    }
    u32::try_from(value)
        .ok()
        .filter(|w| *w <= i32::MAX as u32)
        .ok_or(CliError::WeightOutOfRange(value))
}

/// The number in a `--random-seed` value, read as `sscanf("%lu%c")` does:
/// optional white space and sign, digits, and nothing after them. A minus
/// sign wraps around and overflow saturates, as `strtoul` does.
pub fn unsigned_seed(value: &str) -> Option<u64> {
    let s = value.as_bytes();
    let mut i = skip_spaces(s, 0);
    let negative = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let digits = count_digits(&s[i..], 10);
    if digits == 0 || i + digits != s.len() {
        return None;
    }
    let mut magnitude: u64 = 0;
    for d in &s[i..] {
        magnitude = match magnitude
            .checked_mul(10)
            .and_then(|m| m.checked_add(u64::from(d - b'0')))
        {
            Some(m) => m,
            None => return Some(u64::MAX),
        };
    }
    Some(if negative {
        magnitude.wrapping_neg()
    } else {
        magnitude
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_int_accepts_what_option_parse_int_accepts() {
        let ok = [
            ("10", 10),
            (" 10", 10),
            ("10 ", 10),
            ("+7", 7),
            ("2147483647", i32::MAX),
        ];
        for (text, want) in ok {
            assert_eq!(
                option_int(text, "-c/--clients", 1, i32::MAX),
                Ok(want),
                "{text:?}"
            );
        }
    }

    #[test]
    fn option_int_rejects_like_option_parse_int() {
        let invalid = ["x", "3x", "+", "1.5", "0x10", "- 1"];
        for text in invalid {
            assert!(
                matches!(
                    option_int(text, "-c/--clients", 1, i32::MAX),
                    Err(CliError::InvalidValue { .. })
                ),
                "{text:?}"
            );
        }
        let out_of_range = ["0", "", "  ", "-1", "2147483648", "99999999999999999999999"];
        for text in out_of_range {
            assert!(
                matches!(
                    option_int(text, "-c/--clients", 1, i32::MAX),
                    Err(CliError::OutOfRange { .. })
                ),
                "{text:?}"
            );
        }
    }

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
    fn weights_follow_strtol() {
        assert_eq!(weight("3", "@3"), Ok(3));
        assert_eq!(weight("0", "@0"), Ok(0));
        assert_eq!(weight("", "@"), Err(CliError::InvalidWeight("@".into())));
        assert_eq!(
            weight("3x", "@3x"),
            Err(CliError::InvalidWeight("@3x".into()))
        );
        assert_eq!(weight("-1", "@-1"), Err(CliError::WeightOutOfRange(-1)));
        assert_eq!(
            weight("99999999999", "@99999999999"),
            Err(CliError::WeightOutOfRange(99999999999))
        );
        assert_eq!(
            weight("99999999999999999999", "@99999999999999999999"),
            Err(CliError::InvalidWeight("@99999999999999999999".into()))
        );
    }

    #[test]
    fn seeds_follow_sscanf() {
        assert_eq!(unsigned_seed("5"), Some(5));
        assert_eq!(unsigned_seed(" +5"), Some(5));
        assert_eq!(unsigned_seed("-1"), Some(u64::MAX));
        assert_eq!(unsigned_seed("99999999999999999999"), Some(u64::MAX));
        assert_eq!(unsigned_seed("5x"), None);
        assert_eq!(unsigned_seed("5 "), None);
        assert_eq!(unsigned_seed(""), None);
        assert_eq!(unsigned_seed("x"), None);
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
            let _ = option_int(&s, "-c/--clients", 1, i32::MAX);
            let _ = weight(&s, &s);
            let _ = unsigned_seed(&s);
        }
    }
}
