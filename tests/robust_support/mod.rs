//! Shared helpers of the robustness tests: a server of a test's own (to
//! stop or freeze), pgbolt started in the background, and waits that fail
//! a test instead of hanging it.

#![allow(dead_code)]

use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use pgbolt::tempdb::TempDb;

use crate::common::{bench_database, new_database, Run};
pub use crate::common::{line, pgbench_path, pgbolt_path, server, text};

/// A server of the test's own, for tests that stop or freeze it.
pub fn own_server() -> TempDb {
    TempDb::builder().start().expect("throwaway server starts")
}

/// A fresh database on `db`, with pgbench's tables at scale 1 when `init`.
pub fn database(db: &TempDb, init: bool) -> String {
    if init {
        bench_database(db, &["-s", "1"])
    } else {
        new_database(db)
    }
}

/// pgbolt connecting to `db`'s database `dbname`, in the C locale.
pub fn pgbolt(db: &TempDb, dbname: &str, args: &[&str]) -> Command {
    Run::on(db, dbname, args)
        .env("LC_ALL", "C")
        .pgbolt_command()
}

/// The real pgbench with the same environment as [`pgbolt`].
pub fn pgbench(db: &TempDb, dbname: &str, args: &[&str]) -> Command {
    Run::on(db, dbname, args)
        .env("LC_ALL", "C")
        .pgbench_command()
}

/// A program running in the background with its output collected.
pub struct Running {
    pub pid: i32,
    pub started: Instant,
    done: mpsc::Receiver<Output>,
}

/// What a finished run gave, and how long it took from its start.
pub struct Finished {
    pub out: Output,
    pub elapsed: Duration,
    /// When it ended.
    pub ended: Instant,
}

impl Finished {
    pub fn stdout(&self) -> String {
        text(&self.out.stdout)
    }
    pub fn stderr(&self) -> String {
        text(&self.out.stderr)
    }
    pub fn code(&self) -> Option<i32> {
        self.out.status.code()
    }

    /// What every run that ended in aborts shows: exit status 2, each of
    /// `phrases` on standard error, pgbench's closing line, and a report
    /// that counts at least one transaction.
    pub fn assert_aborted_with(&self, phrases: &[&str]) {
        let (out, err) = (self.stdout(), self.stderr());
        assert_eq!(self.code(), Some(2), "{err}");
        for phrase in phrases {
            assert!(err.contains(phrase), "{phrase:?} missing in:\n{err}");
        }
        assert!(
            err.contains("Run was aborted; the above results are incomplete."),
            "{err}"
        );
        assert!(processed(&out) > 0, "{out}");
    }
}

pub fn spawn(mut cmd: Command) -> Running {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let started = Instant::now();
    let child: Child = cmd.spawn().expect("program starts");
    let pid = child.id() as i32;
    let (tx, done) = mpsc::channel();
    std::thread::spawn(move || {
        if let Ok(out) = child.wait_with_output() {
            let _ = tx.send(out);
        }
    });
    Running { pid, started, done }
}

impl Running {
    /// Waits for the end; a program still running after `limit` is killed
    /// and the test fails: it hung.
    pub fn wait(self, limit: Duration) -> Finished {
        match self.done.recv_timeout(limit) {
            Ok(out) => Finished {
                out,
                elapsed: self.started.elapsed(),
                ended: Instant::now(),
            },
            Err(_) => {
                signal(self.pid, libc::SIGKILL);
                let out = self.done.recv().ok();
                panic!(
                    "still running after {limit:?}: hung\nstderr: {}",
                    out.map(|o| text(&o.stderr)).unwrap_or_default()
                );
            }
        }
    }

    /// Whether the program has ended, without waiting.
    pub fn try_finish(&self) -> Option<Output> {
        self.done.try_recv().ok()
    }

    pub fn signal(&self, sig: i32) {
        signal(self.pid, sig);
    }
}

pub fn signal(pid: i32, sig: i32) {
    // SAFETY: kill has no memory-safety preconditions.
    unsafe {
        libc::kill(pid, sig);
    }
}

/// Process ids of pgbolt's backends in `dbname` (client backends whose
/// application is pgbolt).
pub fn backends(db: &TempDb, dbname: &str) -> Vec<i32> {
    db.psql(&format!(
        "SELECT pid FROM pg_stat_activity WHERE datname = '{dbname}' \
         AND application_name = 'pgbolt' AND backend_type = 'client backend' ORDER BY pid"
    ))
    .unwrap_or_default()
    .lines()
    .filter_map(|l| l.trim().parse().ok())
    .collect()
}

/// Waits until pgbolt has `n` backends in `dbname` and returns their pids.
pub fn wait_for_backends(db: &TempDb, dbname: &str, n: usize) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let pids = backends(db, dbname);
        if pids.len() >= n {
            return pids;
        }
        assert!(
            Instant::now() < deadline,
            "pgbolt never connected {n} clients"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The rows of `pgbench_history` in `dbname`.
pub fn history_rows(db: &TempDb, dbname: &str) -> u64 {
    db.psql_in(dbname, "SELECT count(*) FROM pgbench_history")
        .ok()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// Waits until `pgbench_history` in `dbname` has at least `rows` rows (the
/// tpcb-like script adds one per committed transaction). With `n` clients,
/// `n + 1` rows more than before mean that some client committed twice, so
/// its first transaction was complete on its side (it starts the next one
/// only once it has the end of the previous): the report counts it. A fixed
/// pause before signalling or freezing did not ensure that on a loaded
/// machine.
pub fn wait_for_history(db: &TempDb, dbname: &str, rows: u64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while history_rows(db, dbname) < rows {
        assert!(
            Instant::now() < deadline,
            "fewer than {rows} transactions committed in {dbname}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The pids of the `n` client backends of a tpcb-like run in `dbname`
/// (a fresh database), once the run is under way: `pgbench_history` has
/// `n + 1` rows (see [`wait_for_history`]), so every client is connected,
/// and exactly `n` pgbolt backends are left. Until then the backend of
/// pgbolt's set-up connection (vacuum, preflight) can still be listed, with
/// the lowest pid: a test that terminated "the first backend" hit that one,
/// no client aborted and the run ended with status 0 (seen under load).
pub fn running_clients(db: &TempDb, dbname: &str, n: usize) -> Vec<i32> {
    wait_for_history(db, dbname, n as u64 + 1);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let pids = backends(db, dbname);
        if pids.len() == n {
            return pids;
        }
        assert!(
            Instant::now() < deadline,
            "not {n} pgbolt backends: {pids:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The number of transactions the report says were processed.
pub fn processed(report: &str) -> u64 {
    line(report, "number of transactions actually processed: ")
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.split('/').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no processed count in:\n{report}"))
}

/// Lines of every log file whose name starts with `prefix` in `dir`.
pub fn log_lines(dir: &std::path::Path, prefix: &str) -> Vec<String> {
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(dir).expect("log dir").flatten() {
        if entry.file_name().to_string_lossy().starts_with(prefix) {
            let body = std::fs::read_to_string(entry.path()).expect("log file");
            lines.extend(body.lines().map(str::to_owned));
        }
    }
    lines
}
