//! Bad values for every numeric option, and a client count beyond the
//! open-file limit. The real pgbench is the oracle: same first error line
//! (program name aside), same exit status. No server is needed: every
//! case fails before connecting (the host is a directory with no server,
//! so a value that slipped through would fail differently).

use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};

use crate::common::pgbench_path;

const OPTIONS: &[&str] = &[
    "-c",
    "-j",
    "-t",
    "-T",
    "-s",
    "-R",
    "-L",
    "-P",
    "-F",
    "--sampling-rate",
    "--aggregate-interval",
    "--max-tries",
    "--partitions",
    "--random-seed",
];

const BAD_VALUES: &[&str] = &[
    "0",
    "-1",
    "99999999999999999999",
    "abc",
    "5x",
    "",
    " 7",
    "1e3",
];

fn command(program: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(program);
    for var in [
        "PGPORT",
        "PGUSER",
        "PGDATABASE",
        "PGPASSWORD",
        "PGSERVICE",
        "PGBENCH_RANDOM_SEED",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("PGHOST", "/nonexistent-socket-dir")
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .args(args);
    cmd
}

/// Exit status and first error line with the program's name replaced.
fn outcome(out: &Output, program: &str) -> (Option<i32>, String) {
    let err = String::from_utf8_lossy(&out.stderr);
    let first = err
        .lines()
        .find(|l| l.starts_with(&format!("{program}: ")))
        .unwrap_or_default()
        .replacen(program, "PROGRAM", 1);
    (out.status.code(), first)
}

fn both(args: &[&str]) -> ((Option<i32>, String), (Option<i32>, String)) {
    let bolt = command(env!("CARGO_BIN_EXE_pgbolt"), args)
        .output()
        .expect("pgbolt runs");
    let bench = command(pgbench_path(), args)
        .output()
        .expect("pgbench runs");
    (outcome(&bolt, "pgbolt"), outcome(&bench, "pgbench"))
}

#[test]
fn bad_numeric_values_are_refused_as_pgbench_refuses_them() {
    let mut differences = Vec::new();
    for option in OPTIONS {
        for value in BAD_VALUES {
            // -l makes --sampling-rate and --aggregate-interval valid to give.
            let args = [option, *value, "-l"];
            let (bolt, bench) = both(&args);
            if bolt != bench {
                differences.push(format!("{args:?}: pgbolt {bolt:?}, pgbench {bench:?}"));
            }
            assert_ne!(bolt.0, Some(0), "{args:?} accepted");
            assert_ne!(bolt.0, None, "{args:?} killed pgbolt");
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

/// Runs with the open-file limit set to `soft`/`hard`.
fn limited(program: &str, args: &[&str], soft: u64, hard: u64) -> Output {
    let mut cmd = command(program, args);
    // SAFETY: setrlimit is async-signal-safe and touches only a local.
    unsafe {
        cmd.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.output().expect("program runs")
}

/// `-c 100000` with a hard limit of 1024: refused before connecting with
/// pgbench's message and hint, exit 1.
#[test]
fn clients_beyond_the_open_file_limit_are_refused() {
    let out = limited(
        env!("CARGO_BIN_EXE_pgbolt"),
        &["-c", "100000", "-t", "1"],
        256,
        1024,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("pgbolt: error: need at least 100003 open files, but system limit is 1024"),
        "{err}"
    );
    assert!(
        err.contains("Reduce number of clients, or use limit/ulimit"),
        "{err}"
    );
}

/// With a soft limit below what 500 clients need and a hard limit above
/// it, pgbolt raises the soft limit as pgbench 18 does and goes on (here
/// to a failed connection, there being no server); pgbench 15 refused.
#[test]
fn the_soft_open_file_limit_is_raised_to_the_hard_one() {
    let args = ["-c", "500", "-t", "1"];
    let bolt = limited(env!("CARGO_BIN_EXE_pgbolt"), &args, 256, 1024);
    let bench = limited(pgbench_path(), &args, 256, 1024);
    let bolt_err = String::from_utf8_lossy(&bolt.stderr);
    let bench_err = String::from_utf8_lossy(&bench.stderr);
    assert!(!bolt_err.contains("open files"), "{bolt_err}");
    assert!(bolt_err.contains("/nonexistent-socket-dir"), "{bolt_err}");
    assert_eq!(bolt_err, bench_err.replace("pgbench:", "pgbolt:"));
    assert_eq!(bolt.status.code(), bench.status.code());
}
