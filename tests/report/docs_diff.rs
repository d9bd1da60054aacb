//! Claims of the documentation (`README.md`, `docs/*.md`, `--help`) that a
//! pgbench user relies on, checked by running pgbolt and the real pgbench
//! with the same command line. Each test is named after the claim it pins.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::report_support::*;

/// Runs `program` with `args` against the shared database under the
/// open-file limits that `limits` (a `ulimit` command) sets.
fn under_limits(program: &Path, limits: &str, args: &[&str]) -> Output {
    let mut cmd: Command = server().command("/bin/bash");
    cmd.env("PGDATABASE", shared_database())
        .env_remove("PGBENCH_RANDOM_SEED")
        .arg("-c")
        .arg(format!("{limits} && exec \"$0\" \"$@\""))
        .arg(program)
        .args(args);
    cmd.output().expect("bash runs")
}

fn both_under_limits(limits: &str, args: &[&str]) -> (Output, Output) {
    (
        under_limits(Path::new(env!("CARGO_BIN_EXE_pgbolt")), limits, args),
        under_limits(Path::new(pgbench_path()), limits, args),
    )
}

/// The two open-file tests run up to 60 clients each; together they
/// would pass the shared server's 100 connections, so they take turns.
static MANY_CLIENTS: Mutex<()> = Mutex::new(());

fn many_clients() -> MutexGuard<'static, ()> {
    MANY_CLIENTS.lock().unwrap_or_else(PoisonError::into_inner)
}

fn processed(out: &Output) -> Option<String> {
    line(&stdout(out), "number of transactions actually processed:").map(str::to_owned)
}

/// docs/options.md: "`-c` ... pgbolt checks that the open-file limit allows
/// NUM + 3 files" (pgbench's check, same message), and the descriptors
/// pgbolt holds besides the clients' sockets are counted too, so a `-c`
/// that passes the check never runs out of descriptors while connecting.
#[test]
fn open_file_limit_is_checked_before_connecting() {
    let _turn = many_clients();
    let limits = "ulimit -n 64";
    // Beyond pgbench's own check: the same message from both.
    let (ours, theirs) = both_under_limits(limits, &["-c", "62", "-S", "-t", "1"]);
    assert_eq!(ours.status.code(), Some(1), "{}", stderr(&ours));
    assert_eq!(theirs.status.code(), Some(1), "{}", stderr(&theirs));
    let message = "error: need at least 65 open files, but system limit is 64";
    assert!(stderr(&ours).contains(message), "{}", stderr(&ours));
    assert!(stderr(&theirs).contains(message), "{}", stderr(&theirs));

    // Within pgbench's check but not with pgbolt's own descriptors (the
    // signal pipe, a poller twice and a timer per thread): pgbench runs,
    // pgbolt refuses before opening any connection, with the real count.
    let (ours, theirs) = both_under_limits(limits, &["-c", "58", "-S", "-t", "1"]);
    assert_eq!(theirs.status.code(), Some(0), "{}", stderr(&theirs));
    assert_eq!(ours.status.code(), Some(1), "{}", stderr(&ours));
    assert!(
        stderr(&ours).contains("error: need at least 66 open files, but system limit is 64"),
        "{}",
        stderr(&ours)
    );
    assert_eq!(stdout(&ours), "", "nothing runs");

    // Well within the limit, several threads: both run every transaction.
    let (ours, theirs) = both_under_limits(limits, &["-c", "20", "-j", "4", "-S", "-t", "2"]);
    assert_eq!(ours.status.code(), Some(0), "{}", stderr(&ours));
    assert_eq!(theirs.status.code(), Some(0), "{}", stderr(&theirs));
    assert_eq!(processed(&ours), processed(&theirs));
}

/// docs/compatibility.md: "The soft limit on open files is raised towards
/// the hard limit", by what the run needs, threads included: many threads
/// under a low soft limit that pgbench's check passes must run too.
#[test]
fn soft_open_file_limit_is_raised_for_every_thread() {
    let _turn = many_clients();
    let limits = "ulimit -Sn 100 && ulimit -Hn 4096";
    let args = ["-c", "60", "-j", "30", "-S", "-t", "1"];
    let (ours, theirs) = both_under_limits(limits, &args);
    assert_eq!(theirs.status.code(), Some(0), "{}", stderr(&theirs));
    assert_eq!(ours.status.code(), Some(0), "{}", stderr(&ours));
    assert_eq!(processed(&ours), processed(&theirs));
    assert_eq!(
        processed(&ours).as_deref(),
        Some("number of transactions actually processed: 60/60")
    );
}

/// docs/scripts.md: "The weight follows the *last* `@`, so `-f a@b.sql@2`
/// is the file `a@b.sql` with weight 2."
#[test]
fn script_weight_follows_the_last_at_sign() {
    let file = script("a@b.sql", "SELECT 1;\n");
    let weighted = format!("{}@2", file.path);
    let run = Run::new(shared_database(), &["-f", &weighted, "-S", "-t", "1"]);
    let (ours, theirs) = (run.pgbolt(), run.pgbench());
    assert_eq!(ours.status.code(), Some(0), "{}", stderr(&ours));
    assert_eq!(theirs.status.code(), Some(0), "{}", stderr(&theirs));
    let weight = " - weight: 2 (targets 66.7% of total)";
    assert_eq!(line(&stdout(&ours), " - weight: 2"), Some(weight));
    assert_eq!(line(&stdout(&theirs), " - weight: 2"), Some(weight));
}
