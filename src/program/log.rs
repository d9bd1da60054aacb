//! Messages on standard error in pgbench's format (`pgbolt: error: ...`),
//! each written with one call so lines of different threads do not mix.
//! A message ending in a newline loses it, as with pgbench's logging (the
//! server's error texts end in one).

use std::fmt::Arguments;

fn emit(kind: &str, args: Arguments<'_>) {
    emit_bytes(kind, format!("{args}").as_bytes());
}

fn emit_bytes(kind: &str, message: &[u8]) {
    let mut text = format!("{}: {kind}", crate::program::PROGRAM).into_bytes();
    text.extend_from_slice(message.strip_suffix(b"\n").unwrap_or(message));
    text.push(b'\n');
    crate::program::write_stderr_bytes(&text);
}

/// An error message holding bytes that need not be UTF-8 (a shell
/// command's output), written as they are, as pgbench writes them.
pub fn error_bytes(message: &[u8]) {
    emit_bytes("error: ", message);
}

pub fn error(args: Arguments<'_>) {
    emit("error: ", args);
}

pub fn warning(args: Arguments<'_>) {
    emit("warning: ", args);
}

pub fn detail(args: Arguments<'_>) {
    emit("detail: ", args);
}

pub fn info(args: Arguments<'_>) {
    emit("", args);
}

/// `--debug` lines carry no level word, as in pgbench.
pub fn debug(args: Arguments<'_>) {
    emit("", args);
}

/// A `--debug` line holding bytes that need not be UTF-8.
pub fn debug_bytes(message: &[u8]) {
    emit_bytes("", message);
}
