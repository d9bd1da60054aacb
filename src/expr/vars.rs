//! Variable names resolved to slots at parse time.
//!
//! Every `:name` in SQL, every variable in an expression and every target of
//! `\set`, `\gset` or `\setshell` is turned into a slot number when the
//! script is parsed. At run time a client keeps one value per slot
//! ([`Variables`]), so the engine never looks a name up while a benchmark
//! runs.

use std::collections::HashMap;

use super::Value;

/// The table of variable names shared by all scripts of a run.
#[derive(Debug, Default, Clone)]
pub struct VarNames {
    names: Vec<String>,
    slots: HashMap<String, usize>,
}

impl VarNames {
    pub fn new() -> Self {
        Self::default()
    }

    /// The slot of `name`, allocating a new one the first time it is seen.
    pub fn slot(&mut self, name: &str) -> usize {
        if let Some(&slot) = self.slots.get(name) {
            return slot;
        }
        let slot = self.names.len();
        self.names.push(name.to_owned());
        self.slots.insert(name.to_owned(), slot);
        slot
    }

    /// The slot of `name` if some script or definition uses it.
    pub fn lookup(&self, name: &str) -> Option<usize> {
        self.slots.get(name).copied()
    }

    /// The name behind a slot, for error messages.
    pub fn name(&self, slot: usize) -> &str {
        &self.names[slot]
    }

    /// How many slots exist; a client allocates this many values.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// Why a variable's value cannot be used in an expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarError {
    /// The variable was never set.
    Undefined,
    /// Its text is empty (pgbench fails without a message of its own).
    Empty,
    /// Its text looks like an integer but does not fit in a bigint.
    BigintOutOfRange,
    /// Its text is blanks and a sign without digits.
    InvalidBigint,
    /// Its text is neither NULL, a boolean, an integer nor a double.
    Malformed,
}

/// One client's variables, one entry per slot of the run's [`VarNames`].
///
/// Values set by an expression are kept as values; values given as text
/// (`-D`, `\gset`, `\setshell`) are kept as bytes, substituted into SQL
/// verbatim (like pgbench's C strings they need not be UTF-8: a `LATIN1`
/// or `SQL_ASCII` database hands back and takes other bytes), and converted to a number, boolean or NULL the first time an
/// expression uses them (pgbench's `makeVariableValue`), the result being
/// remembered. Setting a text variable again reuses its buffer, so steady
/// state assignments do not allocate.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Variables {
    slots: Vec<Slot>,
}

#[derive(Debug, Clone, Default, PartialEq)]
enum Slot {
    #[default]
    Unset,
    Value(Value),
    Text {
        text: Vec<u8>,
        parsed: Option<Value>,
    },
}

impl Variables {
    /// A store with every variable of `names` unset.
    pub fn new(names: &VarNames) -> Self {
        Variables {
            slots: vec![Slot::Unset; names.len()],
        }
    }

    fn slot_mut(&mut self, slot: usize) -> &mut Slot {
        if slot >= self.slots.len() {
            self.slots.resize(slot + 1, Slot::Unset);
        }
        &mut self.slots[slot]
    }

    pub fn set(&mut self, slot: usize, value: Value) {
        *self.slot_mut(slot) = Slot::Value(value);
    }

    /// Sets a variable to text, to be converted when an expression uses it.
    pub fn set_text(&mut self, slot: usize, value: impl AsRef<[u8]>) {
        let value = value.as_ref();
        match self.slot_mut(slot) {
            Slot::Text { text, parsed } => {
                text.clear();
                text.extend_from_slice(value);
                *parsed = None;
            }
            other => {
                *other = Slot::Text {
                    text: value.to_vec(),
                    parsed: None,
                }
            }
        }
    }

    pub fn is_set(&self, slot: usize) -> bool {
        !matches!(self.slots.get(slot), None | Some(Slot::Unset))
    }

    /// The value of a variable for an expression.
    pub fn get(&mut self, slot: usize) -> Result<Value, VarError> {
        match self.slots.get_mut(slot) {
            None | Some(Slot::Unset) => Err(VarError::Undefined),
            Some(Slot::Value(v)) => Ok(*v),
            Some(Slot::Text { text, parsed }) => {
                if let Some(v) = parsed {
                    return Ok(*v);
                }
                let v = text_value(text)?;
                *parsed = Some(v);
                Ok(v)
            }
        }
    }

    /// The text of a variable if it was set as text.
    pub fn text(&self, slot: usize) -> Option<&[u8]> {
        match self.slots.get(slot) {
            Some(Slot::Text { text, .. }) => Some(text),
            _ => None,
        }
    }

    /// Appends the variable as pgbench substitutes it into SQL: its text,
    /// or its value written out. Returns false if the variable is unset.
    pub fn write_sql(&self, slot: usize, out: &mut Vec<u8>) -> bool {
        use std::io::Write;
        match self.slots.get(slot) {
            Some(Slot::Value(Value::Int(i))) => {
                crate::decimal::push_i64(out, *i);
                true
            }
            None | Some(Slot::Unset) => false,
            Some(Slot::Text { text, .. }) => {
                out.extend_from_slice(text);
                true
            }
            Some(Slot::Value(v)) => write!(out, "{v}").is_ok(),
        }
    }
}

/// pgbench's conversion of a variable's text: `null`, prefixes of `true`,
/// `yes`, `false`, `no`, and `on`, `off`, `of` (any case) are NULL and
/// booleans; then an integer if it looks like one; else a double as C's
/// `strtod` reads it. Text that is not UTF-8 is none of these.
fn text_value(text: &[u8]) -> Result<Value, VarError> {
    if text.is_empty() {
        return Err(VarError::Empty);
    }
    let text = std::str::from_utf8(text).map_err(|_| VarError::Malformed)?;
    let is_prefix_of =
        |word: &str| text.len() <= word.len() && word[..text.len()].eq_ignore_ascii_case(text);
    if text.eq_ignore_ascii_case("null") {
        Ok(Value::Null)
    } else if is_prefix_of("true") || is_prefix_of("yes") || text.eq_ignore_ascii_case("on") {
        Ok(Value::Bool(true))
    } else if is_prefix_of("false")
        || is_prefix_of("no")
        || text.eq_ignore_ascii_case("off")
        || text.eq_ignore_ascii_case("of")
    {
        Ok(Value::Bool(false))
    } else if looks_like_int(text) {
        match parse_bigint(text) {
            Some(i) => Ok(Value::Int(i)),
            None if text.bytes().any(|b| b.is_ascii_digit()) => Err(VarError::BigintOutOfRange),
            None => Err(VarError::InvalidBigint),
        }
    } else {
        c_strtod(text).map(Value::Double).ok_or(VarError::Malformed)
    }
}

fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// pgbench's `is_an_int`: optional blanks and sign, then only digits (an
/// empty digit string passes here and fails in `parse_bigint`).
fn looks_like_int(text: &str) -> bool {
    let rest = text.trim_start_matches(|c: char| c.is_ascii() && is_c_space(c as u8));
    let rest = rest.strip_prefix(['+', '-']).unwrap_or(rest);
    rest.bytes().all(|b| b.is_ascii_digit())
}

/// pgbench's `strtoint64`: blanks, sign, at least one digit, trailing blanks.
pub(crate) fn parse_bigint(text: &str) -> Option<i64> {
    let t = text.trim_matches(|c: char| c.is_ascii() && is_c_space(c as u8));
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse::<i64>().ok()
}

/// C's `strtod` on the whole text, failing on trailing characters and on
/// range errors (overflow, or underflow below the smallest normal double).
fn c_strtod(text: &str) -> Option<f64> {
    let t = text.trim_start_matches(|c: char| c.is_ascii() && is_c_space(c as u8));
    let (negative, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let magnitude = if let Some(hex) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        hex_float(hex)?
    } else if body.eq_ignore_ascii_case("inf") || body.eq_ignore_ascii_case("infinity") {
        f64::INFINITY
    } else if body.eq_ignore_ascii_case("nan") {
        f64::NAN
    } else {
        if !body.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
            return None;
        }
        super::parse_c_double(body)?
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// The digits of a C hexadecimal float after `0x`: hex digits with an
/// optional point, and an optional binary exponent `p[+-]digits`.
fn hex_float(text: &str) -> Option<f64> {
    let (mantissa, exponent) = match text.find(['p', 'P']) {
        Some(i) => (&text[..i], text[i + 1..].parse::<i32>().ok()?),
        None => (text, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let mut value = 0f64;
    for c in int_part.chars().chain(frac_part.chars()) {
        value = value * 16.0 + f64::from(c.to_digit(16)?);
    }
    let scale = exponent.checked_sub(4 * frac_part.len() as i32)?;
    let v = value * 2f64.powi(scale);
    v.is_finite().then_some(v)
}
