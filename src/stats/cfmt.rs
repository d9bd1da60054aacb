//! Number formatting that reproduces pgbench's `printf` where Rust differs.
//!
//! For finite values Rust's `{:.N}` and C's `%.Nf` agree (both round the
//! exact binary value). pgbench prints through PostgreSQL's own `printf`
//! (`src/port/snprintf.c`), which writes non-finite values as `NaN` (never
//! signed), `Infinity` and `-Infinity` whatever the C library would write;
//! pgbench can print them (a standard deviation of rounding noise, an
//! average over zero transactions).

use std::fmt::Write as _;

/// Appends `value` formatted like C's `%.{precision}f`.
pub fn push_fixed(out: &mut String, value: f64, precision: usize) {
    if value.is_nan() {
        out.push_str("NaN");
    } else if value.is_infinite() {
        out.push_str(if value < 0.0 { "-Infinity" } else { "Infinity" });
    } else {
        // Writing to a String cannot fail.
        let _ = write!(out, "{value:.precision$}");
    }
}

/// `value` formatted like C's `%.{precision}f`.
pub fn fixed(value: f64, precision: usize) -> String {
    let mut s = String::new();
    push_fixed(&mut s, value, precision);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_printf() {
        let cases: &[(f64, usize, &str)] = &[
            (0.0, 3, "0.000"),
            (1.0005, 3, "1.000"),
            (2.5, 0, "2"),
            (3.5, 0, "4"),
            (896.967014, 6, "896.967014"),
            (f64::NAN, 3, "NaN"),
            (-f64::NAN, 3, "NaN"),
            (f64::INFINITY, 1, "Infinity"),
            (f64::NEG_INFINITY, 1, "-Infinity"),
            (-0.0, 3, "-0.000"),
        ];
        for (v, p, want) in cases {
            assert_eq!(fixed(*v, *p), *want, "{v} with {p} digits");
        }
    }
}
