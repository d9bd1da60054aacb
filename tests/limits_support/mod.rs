//! Helpers of the limits suite: run the real pgbench and pgbolt with the
//! same arguments, in the same directory, against the test binary's
//! throwaway server, and reduce what each printed to what must agree.

#![allow(dead_code)]

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

pub use crate::common::{server, Program};

/// What one program did, in words both programs share.
#[derive(Debug, PartialEq, Eq)]
pub struct Outcome {
    pub status: Option<i32>,
    /// Standard error with the program's name as `PROG` and the lines
    /// that depend on timing or on the program left out.
    pub messages: String,
    /// Peak resident memory in kilobytes, as `/usr/bin/time` saw it.
    pub peak_kb: u64,
}

/// Runs `program` with `args` in `dir` under `/usr/bin/time`, connected to
/// the shared server.
pub fn run(program: Program, dir: &Path, args: &[&str]) -> Outcome {
    let peak_file = dir.join(format!(".peak.{}", program.name()));
    let mut cmd: Command = server().command("/usr/bin/time");
    cmd.arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&peak_file)
        .arg(program.path())
        .args(args)
        .current_dir(dir)
        .env("LC_ALL", "C")
        .env_remove("PGBENCH_RANDOM_SEED")
        .stdin(Stdio::null());
    let out = cmd.output().expect("the program runs");
    let peak_kb = std::fs::read_to_string(&peak_file)
        .ok()
        .and_then(|t| t.lines().last().and_then(|l| l.trim().parse().ok()))
        .unwrap_or(0);
    Outcome {
        status: out.status.code(),
        messages: messages(&common::stderr(&out), program.name()),
        peak_kb,
    }
}

/// Standard error in shared words: the program's name replaced, progress
/// lines' numbers masked.
fn messages(text: &str, name: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with(&format!("{name} (")))
        .map(|l| l.replace(&format!("{name}: "), "PROG: "))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Runs both programs on `args` in `dir`: (pgbench, pgbolt).
pub fn both(dir: &Path, args: &[&str]) -> (Outcome, Outcome) {
    (
        run(Program::Pgbench, dir, args),
        run(Program::Pgbolt, dir, args),
    )
}

/// A temporary directory holding `files` (name, contents).
pub fn files(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, contents) in files {
        std::fs::write(dir.path().join(name), contents).expect("write file");
    }
    dir
}
