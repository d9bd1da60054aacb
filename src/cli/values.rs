//! Option values read the way pgbench reads them: most integers through
//! PostgreSQL's `option_parse_int` (strict, range-checked), script weights
//! through `strtol`; the C readers themselves are in [`crate::cnum`].

use super::error::CliError;
use crate::cnum::{skip_spaces, strtol};

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
                option_int(text, "-c/--client", 1, i32::MAX),
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
                    option_int(text, "-c/--client", 1, i32::MAX),
                    Err(CliError::InvalidValue { .. })
                ),
                "{text:?}"
            );
        }
        let out_of_range = ["0", "", "  ", "-1", "2147483648", "99999999999999999999999"];
        for text in out_of_range {
            assert!(
                matches!(
                    option_int(text, "-c/--client", 1, i32::MAX),
                    Err(CliError::OutOfRange { .. })
                ),
                "{text:?}"
            );
        }
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
}

#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn option_readers_accept_any_text_without_panicking(s in "[ +\\-0-9.eEpPxXa-fA-Fin@]{0,12}|\\PC{0,12}") {
            let _ = option_int(&s, "-c/--client", 1, i32::MAX);
            let _ = weight(&s, &s);
        }
    }
}
