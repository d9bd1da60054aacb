//! Helpers shared by the binary-level test suites (each suite's support
//! module re-exports them): the real pgbench, the test binary's shared
//! throwaway server, output as text, report lines and script files.
//!
//! # Which pgbench, which server
//! The oracle is pgbench 18 ([`pgbench_path`]: the one `make deps`
//! installs, or `PGBOLT_TEST_PGBENCH`). The servers are PostgreSQL 18 by
//! default ([`server`], and every `TempDb::builder()` of a test, which
//! takes the newest server on the machine). A small named set of tests
//! also runs against the machine's PostgreSQL 15 ([`server15`],
//! [`builder15`]); docs/testing.md lists them.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use pgbolt::tempdb::{self, TempDb};

/// Names the pgbench the differential tests compare with, instead of
/// pgbench 18 from `make deps`.
pub const PGBENCH_ENV: &str = "PGBOLT_TEST_PGBENCH";

/// The bin directory of the machine's PostgreSQL 15 (Debian's package).
pub const PG15_BIN: &str = "/usr/lib/postgresql/15/bin";

/// The pgbench every differential test uses as the oracle: pgbench 18 as
/// `make deps` installs it, or the program `PGBOLT_TEST_PGBENCH` names.
/// Fails the test, saying what to do, when it is missing.
pub fn pgbench_path() -> &'static str {
    static PATH: OnceLock<String> = OnceLock::new();
    PATH.get_or_init(|| {
        let path = std::env::var(PGBENCH_ENV)
            .ok()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| format!("{}/pgbench", tempdb::DEPS_BIN_DIR));
        assert!(
            std::path::Path::new(&path).is_file(),
            "the oracle {path} is missing: run `make deps`, or name another pgbench in {PGBENCH_ENV}"
        );
        path
    })
}

/// The test binary's shared server (started on first use, removed when
/// the binary exits): the newest PostgreSQL on the machine, 18 once `make
/// deps` ran.
pub fn server() -> &'static TempDb {
    tempdb::shared().expect("throwaway server starts")
}

/// A builder for an instance of the machine's PostgreSQL 15.
pub fn builder15() -> tempdb::Builder {
    TempDb::builder().bin_dirs([PG15_BIN])
}

/// The test binary's shared PostgreSQL 15 server (socket and TCP,
/// `trust`), for the tests that also cover the older server.
pub fn server15() -> &'static TempDb {
    static SERVER: OnceLock<TempDb> = OnceLock::new();
    SERVER.get_or_init(|| {
        tempdb::install_signal_cleanup().expect("signal clean-up");
        builder15()
            .tcp(true)
            .start()
            .expect("PostgreSQL 15 server starts")
    })
}

pub fn pgbolt_path() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_pgbolt"))
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub fn stdout(out: &Output) -> String {
    text(&out.stdout)
}

pub fn stderr(out: &Output) -> String {
    text(&out.stderr)
}

/// The first line of `text` starting with `prefix`, if any.
pub fn line<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    text.lines().find(|l| l.starts_with(prefix))
}

/// Waits until a backend of `db` whose `application_name` is `app` is on
/// its second statement matching the `LIKE` pattern `statement` (its
/// `query_start` moved on), so that its client has had the first one's
/// answer: the run is under way and has completed work to report. Seeing
/// the clients connected is not enough: they connect before the run (and
/// its signal handling) starts. Fails the test after a minute.
pub fn wait_for_second_statement(db: &TempDb, app: &str, statement: &str) {
    let sql = format!(
        "SELECT pid || ' ' || query_start FROM pg_stat_activity \
         WHERE application_name = '{app}' AND query LIKE '{statement}'"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut seen = std::collections::HashMap::new();
    loop {
        for row in db.psql(&sql).unwrap_or_default().lines() {
            if let Some((pid, started)) = row.split_once(' ') {
                let before = seen.insert(pid.to_owned(), started.to_owned());
                if before.is_some_and(|b| b != started) {
                    return;
                }
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no backend of {app} ran a second {statement:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A script file in a temporary directory that lives as long as the value.
pub struct ScriptFile {
    _dir: tempfile::TempDir,
    pub path: String,
}

/// Writes `text` to a file called `name` in a new temporary directory.
pub fn script_file(name: &str, text: &str) -> ScriptFile {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write script");
    ScriptFile {
        path: path.to_string_lossy().into_owned(),
        _dir: dir,
    }
}

/// Gives the program `cmd` starts the default action for the signals the
/// tests send (SIGINT, SIGTERM, SIGHUP, SIGQUIT), whatever this test binary
/// inherited. A suite started in the background by a script (`make test &`)
/// ignores SIGINT and SIGQUIT, one started under `nohup` ignores SIGHUP,
/// and an ignored signal stays ignored across exec: pgbolt, as pgbench,
/// then leaves it ignored, and a test of what Ctrl-C does fails for a
/// reason that has nothing to do with pgbolt. A test that wants a signal
/// ignored sets that after this.
pub fn default_signals(cmd: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: signal(2) is async-signal-safe; between fork and exec it only
    // resets the child's dispositions.
    unsafe {
        cmd.pre_exec(|| {
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                libc::signal(signal, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    cmd
}

/// Runs `cmd` with no controlling terminal (its own session) and `answer`
/// on standard input, so that a password question goes to standard error
/// and reads standard input, as in a script that pipes the password in.
pub fn run_without_terminal(cmd: &mut Command, answer: &[u8]) -> Output {
    use std::io::Write;
    use std::os::unix::process::CommandExt;

    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setsid is async-signal-safe; it only detaches the child from
    // the test's terminal, if any.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("program starts");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(answer).expect("answer");
    drop(stdin);
    child.wait_with_output().expect("program ends")
}

pub mod pgbouncer;
pub mod standby;

/// `text` without pgbolt's diagnosis section: the `diagnosis:` line and
/// the indented lines after it (see docs/diagnosis.md).
pub fn without_diagnosis(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut inside = false;
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "diagnosis:" {
            inside = true;
            continue;
        }
        if inside && line.starts_with("  ") {
            continue;
        }
        inside = false;
        out.push_str(line);
    }
    out
}
