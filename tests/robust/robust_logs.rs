//! Writing results fails: a log directory that does not exist, a full
//! disk (`/dev/full` in place of the log file or the JSON file). The
//! error is clear, the report is still printed, the exit status says
//! something went wrong.

use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::robust_support::*;

/// pgbolt started through `sh`, which first makes `DIR/full.PID` (the
/// name of the first thread's log) a link to `/dev/full`, then `exec`s
/// pgbolt under its own process id.
fn pgbolt_with_full_log(dbname: &str, dir: &std::path::Path, args: &[&str]) -> Command {
    let db = server();
    let link = dir.join("full");
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(format!(
            "ln -s /dev/full '{}.'$$ && exec \"$0\" \"$@\"",
            link.display()
        ))
        .arg(pgbolt_path())
        .args(args)
        .arg(format!("--log-prefix={}", link.display()))
        .envs(db.env())
        .env("PGDATABASE", dbname)
        .env("LC_ALL", "C");
    cmd
}

/// Regression: pgbolt ended the message with Rust's ` (os error 2)`,
/// which pgbench does not print.
#[test]
fn log_prefix_in_a_missing_directory_fails_before_the_run_as_pgbench() {
    let db = server();
    let dbname = database(db, true);
    let args = ["-n", "-t", "5", "-l", "--log-prefix=/nonexistent/dir/run"];
    for (run, name) in [
        (spawn(pgbolt(db, &dbname, &args)), "pgbolt"),
        (spawn(pgbench(db, &dbname, &args)), "pgbench"),
    ] {
        let done = run.wait(Duration::from_secs(30));
        let err = done.stderr();
        assert_eq!(done.code(), Some(1), "{name}: {err}");
        assert!(
            err.contains(&format!(
                "{name}: error: could not open logfile \"/nonexistent/dir/run."
            )),
            "{name}: {err}"
        );
        let line = err
            .lines()
            .find(|l| l.contains("could not open logfile"))
            .unwrap_or_default();
        assert!(
            line.ends_with("\": No such file or directory"),
            "{name}: {line:?}"
        );
    }
}

/// Regression: a transaction log on a full disk printed the error but
/// pgbolt exited 0, so a script could not tell that the logs were lost.
/// (pgbench does not notice at all.)
#[test]
fn full_disk_under_the_log_is_an_error_after_the_report() {
    let db = server();
    let dbname = database(db, true);
    let dir = tempfile::tempdir().unwrap();
    let done = spawn(pgbolt_with_full_log(
        &dbname,
        dir.path(),
        &["-n", "-t", "200", "-c", "2", "-l"],
    ))
    .wait(Duration::from_secs(60));
    let (out, err) = (done.stdout(), done.stderr());
    assert_eq!(done.code(), Some(2), "{err}");
    assert!(err.contains("could not write to logfile"), "{err}");
    assert!(err.contains("No space left on device\n"), "{err}");
    assert_eq!(
        err.matches("could not write to logfile").count(),
        1,
        "said once: {err}"
    );
    assert_eq!(processed(&out), 400, "{out}");
}

#[test]
fn full_disk_under_the_json_file_is_an_error_after_the_report() {
    let db = server();
    let dbname = database(db, true);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("results.json");
    std::os::unix::fs::symlink("/dev/full", &json).unwrap();
    let done = spawn(pgbolt(
        db,
        &dbname,
        &["-n", "-t", "20", &format!("--json={}", json.display())],
    ))
    .wait(Duration::from_secs(60));
    let (out, err) = (done.stdout(), done.stderr());
    assert_eq!(done.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "could not write \"{}\": No space left on device\n",
            json.display()
        )),
        "{err}"
    );
    assert_eq!(processed(&out), 20, "{out}");
}

/// Regression: when `-R` with `--latency-limit` skipped every transaction,
/// the lag average (zero over zero) was printed as C's `-nan`; pgbench
/// prints through PostgreSQL's own `printf`, which writes `NaN`. The log
/// has one `skipped` line per transaction, as pgbench's.
#[test]
fn a_run_whose_transactions_are_all_skipped_reports_as_pgbench() {
    let db = server();
    let dbname = database(db, true);
    for name in ["pgbolt", "pgbench"] {
        let make = if name == "pgbolt" { pgbolt } else { pgbench };
        let dir = tempfile::tempdir().unwrap();
        let prefix = format!("--log-prefix={}", dir.path().join("skip").display());
        let args = [
            "-n",
            "-S",
            "-R",
            "100000000",
            "-L",
            "0.001",
            "-t",
            "3",
            "-l",
            &prefix,
        ];
        let done = spawn(make(db, &dbname, &args)).wait(Duration::from_secs(30));
        let out = done.stdout();
        assert_eq!(done.code(), Some(0), "{name}: {}", done.stderr());
        for want in [
            "number of transactions actually processed: 0/3\n",
            "number of failed transactions: 0 (0.000%)\n",
            "number of transactions skipped: 3 (100.000%)\n",
            "rate limit schedule lag: avg NaN (max 0.000) ms\n",
        ] {
            assert!(out.contains(want), "{name}: no {want:?} in\n{out}");
        }
        let lines = log_lines(dir.path(), "skip");
        assert_eq!(lines.len(), 3, "{name}: {lines:?}");
        assert!(
            lines.iter().all(|l| l.split(' ').nth(2) == Some("skipped")),
            "{name}: {lines:?}"
        );
    }
}

/// Runs `cmd` with `stdout` as its standard output, standard error
/// collected.
fn run_with_stdout(mut cmd: Command, stdout: Stdio) -> Output {
    cmd.stdout(stdout).stderr(Stdio::piped());
    cmd.output().expect("program starts")
}

/// The write end of a pipe whose read end is already closed, as after
/// `pgbolt ... | head -1` once `head` has exited.
fn pipe_without_reader() -> Stdio {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe(2) returns.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both descriptors were just created and are owned here.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    Stdio::from(write)
}

/// Regression: a report that could not be written to standard output
/// (a redirection to a full disk) was dropped without a word and the exit
/// status was 0. (pgbench does not notice either.)
#[test]
fn full_disk_under_standard_output_is_an_error() {
    let db = server();
    let dbname = database(db, true);
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = run_with_stdout(
        pgbolt(db, &dbname, &["-n", "-S", "-t", "20"]),
        Stdio::from(full),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err.matches("pgbolt: error: could not write to standard output: No space left on device")
            .count(),
        1,
        "{err}"
    );
}

/// Regression: with nobody left to read standard output (`| head -1`),
/// pgbolt exited 0 where pgbench dies by SIGPIPE, so `set -o pipefail`
/// saw a success. pgbolt now ends the same way, but only after its logs
/// are written in full (pgbench dies at its first write to standard
/// output, before or after the run, and loses the logs not yet written).
#[test]
fn closed_standard_output_ends_the_run_by_sigpipe_as_pgbench() {
    let db = server();
    let dbname = database(db, true);
    let dir = tempfile::tempdir().unwrap();
    for name in ["pgbolt", "pgbench"] {
        let make = if name == "pgbolt" { pgbolt } else { pgbench };
        let prefix = format!("--log-prefix={}", dir.path().join(name).display());
        let args = ["-n", "-S", "-t", "20", "-c", "2", "-l", &prefix];
        let out = run_with_stdout(make(db, &dbname, &args), pipe_without_reader());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{name}: {err}");
        if name == "pgbolt" {
            // pgbench dies at its first write, its logs not yet written.
            assert_eq!(log_lines(dir.path(), name).len(), 40);
        }
    }
}

/// Regression: with standard error a pipe nobody reads, the first
/// message written there (a server notice, a progress line) made pgbolt
/// panic (exit status 101). The messages are lost, the run goes on and
/// its report and exit status are as usual. (pgbench dies by SIGPIPE at
/// its first message.)
#[test]
fn closed_standard_error_loses_the_messages_but_not_the_run() {
    let db = server();
    let dbname = database(db, true);
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("notice.sql");
    std::fs::write(&script, "DO $$ BEGIN RAISE NOTICE 'hello'; END $$;\n").unwrap();
    let file = format!("--file={}", script.display());
    let mut cmd = pgbolt(db, &dbname, &["-n", "-t", "5", "-c", "2", &file]);
    cmd.stdout(Stdio::piped()).stderr(pipe_without_reader());
    let out = cmd.output().expect("program starts");
    let report = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert_eq!(processed(&report), 10, "{report}");
}
