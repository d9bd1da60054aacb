//! Numbers written the way pgbench writes them.
//!
//! pgbench prints doubles with C's `%.*g` and `DBL_DIG` (15) significant
//! digits, in `debug()` output and when a double variable is substituted
//! into SQL; error messages use `%f`. C's `printf` and Rust's formatter both
//! round the exact binary value correctly, so the digits agree; what is
//! reproduced here is `%g`'s choice of notation, its trimming of trailing
//! zeros, its exponent form (`e+20`, `e-05`) and PostgreSQL's spellings
//! `Infinity`, `-Infinity` and `NaN` (whatever the sign of the NaN). Formatting goes through a stack buffer: nothing is allocated.

use std::fmt::{self, Write};

/// Significant digits of `%.*g` with `DBL_DIG`.
const DBL_DIG: usize = 15;

/// A fixed-size text buffer on the stack.
struct StackBuf {
    buf: [u8; 400],
    len: usize,
}

impl StackBuf {
    fn new() -> Self {
        StackBuf {
            buf: [0; 400],
            len: 0,
        }
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or_default()
    }
}

impl Write for StackBuf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// PostgreSQL's spelling of non-finite values (its own `snprintf` writes
/// them, not the C library's), or None for finite ones.
fn non_finite(x: f64) -> Option<&'static str> {
    if x.is_nan() {
        Some("NaN")
    } else if x.is_infinite() {
        Some(if x < 0.0 { "-Infinity" } else { "Infinity" })
    } else {
        None
    }
}

/// Displays a double as C's `printf("%.15g", x)`.
#[derive(Debug, Clone, Copy)]
pub struct PgDouble(pub f64);

impl fmt::Display for PgDouble {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let x = self.0;
        if let Some(s) = non_finite(x) {
            return f.write_str(s);
        }
        let mut sci = StackBuf::new();
        write!(sci, "{:.*e}", DBL_DIG - 1, x)?;
        let sci = sci.as_str();
        let (mantissa, exp) = sci.split_once('e').ok_or(fmt::Error)?;
        let exp: i32 = exp.parse().map_err(|_| fmt::Error)?;
        if (-4..DBL_DIG as i32).contains(&exp) {
            let precision = (DBL_DIG as i32 - 1 - exp) as usize;
            let mut fixed = StackBuf::new();
            write!(fixed, "{:.*}", precision, x)?;
            f.write_str(trim_fraction(fixed.as_str()))
        } else {
            f.write_str(trim_fraction(mantissa))?;
            let sign = if exp < 0 { '-' } else { '+' };
            write!(f, "e{sign}{:02}", exp.unsigned_abs())
        }
    }
}

/// Removes trailing zeros of a fraction, and the point if nothing is left.
fn trim_fraction(s: &str) -> &str {
    if !s.contains('.') {
        return s;
    }
    s.trim_end_matches('0').trim_end_matches('.')
}

/// Displays a double as C's `printf("%f", x)`.
#[derive(Debug, Clone, Copy)]
pub struct PgFixed(pub f64);

impl fmt::Display for PgFixed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match non_finite(self.0) {
            Some(s) => f.write_str(s),
            None => write!(f, "{:.6}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g15_matches_printf() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (1.5, "1.5"),
            (0.1, "0.1"),
            (1.0 / 3.0, "0.333333333333333"),
            (std::f64::consts::PI, "3.14159265358979"),
            (1e15, "1e+15"),
            (123456789012345.0, "123456789012345"),
            (1e-4, "0.0001"),
            (1e-5, "1e-05"),
            (1.25e-7, "1.25e-07"),
            (1e100, "1e+100"),
            (-2.5e300, "-2.5e+300"),
            (9.999999999999999e14, "1e+15"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
            (f64::NAN, "NaN"),
            (-f64::NAN, "NaN"),
            (5e-324, "4.94065645841247e-324"),
            (f64::MAX, "1.79769313486232e+308"),
        ];
        for &(x, want) in cases {
            assert_eq!(PgDouble(x).to_string(), want, "{x:e}");
        }
    }

    #[test]
    fn fixed_matches_printf() {
        assert_eq!(PgFixed(2.0).to_string(), "2.000000");
        assert_eq!(PgFixed(-1.5).to_string(), "-1.500000");
        assert_eq!(PgFixed(1e20).to_string(), "100000000000000000000.000000");
        assert_eq!(PgFixed(f64::NAN).to_string(), "NaN");
    }
}
