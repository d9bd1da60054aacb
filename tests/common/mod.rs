//! Helpers shared by the binary-level test suites (each suite's support
//! module re-exports them): the real pgbench, the test binary's shared
//! throwaway server, output as text, report lines and script files.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use pgbolt::tempdb::{self, TempDb};

/// The pgbench every differential test uses as the oracle.
pub const PGBENCH: &str = "/usr/lib/postgresql/15/bin/pgbench";

/// The test binary's shared server (started on first use, removed when
/// the binary exits).
pub fn server() -> &'static TempDb {
    tempdb::shared().expect("throwaway server starts")
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
