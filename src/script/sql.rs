//! Variables in SQL commands, resolved to slots.
//!
//! pgbench looks for `:name` by scanning the command text for colons, with
//! no regard for quotes: a name starts with a letter, an underscore or any
//! non-ASCII byte and goes on with those and digits. A colon not followed by
//! a name skips every colon right after it, so `::int` casts stay intact.

use super::lexer::is_var_char;
use super::{ResultVars, SqlCommand};
use crate::expr::vars::VarNames;

/// The most variables one SQL command may use with the extended and
/// prepared protocols (pgbench's limit).
pub const MAX_PARAMETERS: usize = 255;

/// A piece of an SQL command in its simple-protocol form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SqlPiece {
    /// Text sent as is.
    Text(String),
    /// A variable's value; when the variable is not set, `written` (the
    /// `:name` of the script) is sent instead, as pgbench does.
    Var { slot: usize, written: String },
}

/// A variable reference at a colon, as `(name start, end)`.
fn variable_at(bytes: &[u8], colon: usize) -> Option<(usize, usize)> {
    let start = colon + 1;
    let first = *bytes.get(start)?;
    if first.is_ascii_digit() || !is_var_char(first) {
        return None;
    }
    let mut end = start + 1;
    while end < bytes.len() && is_var_char(bytes[end]) {
        end += 1;
    }
    Some((start, end))
}

/// Build an SQL command from its collected text.
pub(crate) fn sql_command(text: String, vars: &mut VarNames) -> SqlCommand {
    let bytes = text.as_bytes();
    let mut pieces = Vec::new();
    let mut extended_text = String::with_capacity(text.len());
    let mut params = Vec::new();
    let mut literal_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b':' {
            i += 1;
            continue;
        }
        let Some((start, end)) = variable_at(bytes, i) else {
            while i < bytes.len() && bytes[i] == b':' {
                i += 1;
            }
            continue;
        };
        let literal = &text[literal_start..i];
        if !literal.is_empty() {
            pieces.push(SqlPiece::Text(literal.to_owned()));
        }
        extended_text.push_str(literal);
        let slot = vars.slot(&text[start..end]);
        pieces.push(SqlPiece::Var {
            slot,
            written: text[i..end].to_owned(),
        });
        params.push(slot);
        extended_text.push('$');
        extended_text.push_str(&params.len().to_string());
        literal_start = end;
        i = end;
    }
    let literal = &text[literal_start..];
    if !literal.is_empty() {
        pieces.push(SqlPiece::Text(literal.to_owned()));
    }
    extended_text.push_str(literal);
    SqlCommand {
        text,
        pieces,
        extended_text,
        params,
        results: ResultVars::Discard,
    }
}

/// Whether pgbench accepts `name` as a variable name when it creates a
/// variable.
pub fn valid_variable_name(name: &str) -> bool {
    match name.as_bytes().first() {
        Some(b) if !b.is_ascii_digit() => name.bytes().all(is_var_char),
        _ => false,
    }
}
