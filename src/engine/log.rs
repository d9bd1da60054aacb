//! Messages on standard error in pgbench's format (`pgbolt: error: ...`),
//! each written with one call so lines of different threads do not mix.
//! A message ending in a newline loses it, as with pgbench's logging (the
//! server's error texts end in one).

use std::fmt::Arguments;
use std::io::Write;

fn emit(kind: &str, args: Arguments<'_>) {
    let mut text = format!("{}: {kind}{args}", crate::cli::PROGRAM);
    if text.ends_with('\n') {
        text.pop();
    }
    text.push('\n');
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
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

pub fn debug(args: Arguments<'_>) {
    emit("debug: ", args);
}
