//! Helpers of the failure-path suite: the robustness suite's programs in
//! the background, plus a statement too large for a socket's buffer, a
//! way to catch a client in the middle of sending it, and the server log.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pgbolt::tempdb::TempDb;

use crate::common::sql::Session;

pub use crate::robust_support::*;

/// The two I/O drivers of a run; the io_uring one only where the kernel
/// lets pgbolt use it (it says so and exits otherwise).
pub fn drivers(db: &TempDb, dbname: &str) -> Vec<&'static str> {
    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("one.sql");
    std::fs::write(&script, "SELECT 1;\n").expect("write script");
    let script = script.display().to_string();
    let out = pgbolt(db, dbname, &["-n", "-t", "1", "--io=uring", "-f", &script])
        .output()
        .expect("pgbolt runs");
    let err = text(&out.stderr);
    assert!(
        out.status.success() || err.contains("io_uring cannot be used here"),
        "{err}"
    );
    if out.status.success() {
        vec!["--io=epoll", "--io=uring"]
    } else {
        vec!["--io=epoll"]
    }
}

/// The statement that marks a client about to send the large one.
pub const MARKER: &str = "SELECT 'marker';";

/// A script: the marker, a wait for the file `go` in `dir` (which
/// [`Stopped::backend`] creates once the backend is stopped), then a
/// statement of about `bytes` bytes, far more than a socket's buffer
/// holds, so that a client whose backend does not read stays in the
/// middle of sending it. With `pipeline`, that statement and a small one
/// after it form a pipeline (commands 2 to 5, the large one is command 3).
pub fn large_statement_script(dir: &Path, bytes: usize, pipeline: bool) -> String {
    let path = dir.join(if pipeline { "piped.sql" } else { "large.sql" });
    let wait = dir.join("wait-for-go.sh");
    std::fs::write(
        &wait,
        format!(
            "while [ ! -e {} ]; do sleep 0.01; done\n",
            dir.join("go").display()
        ),
    )
    .expect("write the wait");
    let pause = format!("\\shell sh {}\n", wait.display());
    let large = format!("SELECT length('{}');\n", "x".repeat(bytes));
    let text = if pipeline {
        format!("{MARKER}\n{pause}\\startpipeline\n{large}SELECT 2;\n\\endpipeline\n")
    } else {
        format!("{MARKER}\n{pause}{large}")
    };
    std::fs::write(&path, text).expect("write script");
    path.display().to_string()
}

/// Bytes waiting in the receive queue of the socket of process `pid`
/// (a backend), as `ss` reports them; `None` when it shows none.
fn receive_queue(pid: i32) -> Option<u64> {
    let out = std::process::Command::new("ss")
        .arg("-xpn")
        .output()
        .expect("ss runs");
    let tag = format!("pid={pid},");
    text(&out.stdout)
        .lines()
        .filter(|l| l.contains(&tag))
        .find_map(|l| l.split_whitespace().nth(2)?.parse().ok())
}

/// A backend stopped (SIGSTOP) while its client sends the large
/// statement: waits until a backend of `application` in `dbname` has run
/// the marker and sits idle (its client waits for `go`, the file of the
/// script's directory `dir`), stops it, creates `go`, and waits until its
/// client has filled the socket with the first part of the statement.
/// The backend goes on when the value is dropped; `go` stays until
/// [`hold`] removes it before the next run.
pub struct Stopped {
    pub pid: i32,
    go: PathBuf,
}

impl Stopped {
    pub fn backend(db: &TempDb, dbname: &str, application: &str, dir: &Path) -> Stopped {
        let sql = format!(
            "SELECT pid FROM pg_stat_activity WHERE datname = '{dbname}' \
             AND application_name = '{application}' AND state = 'idle' \
             AND query = '{}' ORDER BY pid LIMIT 1",
            MARKER.replace('\'', "''")
        );
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut session = Session::open(db, "postgres");
        let pid = loop {
            if let Ok(pid) = session
                .try_query(&sql)
                .unwrap_or_default()
                .trim()
                .parse::<i32>()
            {
                break pid;
            }
            assert!(
                Instant::now() < deadline,
                "{application} never ran the marker"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        signal(pid, libc::SIGSTOP);
        let stopped = Stopped {
            pid,
            go: dir.join("go"),
        };
        std::fs::write(&stopped.go, "").expect("create go");
        while receive_queue(pid).unwrap_or(0) == 0 {
            assert!(
                Instant::now() < deadline,
                "{application} never sent the large statement"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        stopped
    }
}

/// Waits until process `pid` is gone.
pub fn wait_gone(pid: i32) {
    let deadline = Instant::now() + Duration::from_secs(30);
    // SAFETY: kill with signal 0 only checks that the process exists.
    while unsafe { libc::kill(pid, 0) } == 0 {
        assert!(Instant::now() < deadline, "process {pid} never ended");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until `db` accepts connections again (after a crash of one of
/// its processes, the server restarts).
pub fn wait_restarted(db: &TempDb) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while db.psql("SELECT 1").is_err() {
        assert!(Instant::now() < deadline, "the server did not restart");
        std::thread::sleep(Duration::from_millis(100));
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        signal(self.pid, libc::SIGCONT);
    }
}

/// Makes the clients of the scripts in `dir` wait after the marker again
/// (removes `go`): called before each run.
pub fn hold(dir: &Path) {
    let _ = std::fs::remove_file(dir.join("go"));
}

/// The exit status and standard error of a finished run, with the
/// program's name and client numbers masked, so that pgbench's and
/// pgbolt's lines compare equal (they may connect their clients in
/// another order).
pub fn masked_outcome(done: &Finished) -> (Option<i32>, Vec<String>) {
    let lines = done
        .stderr()
        .lines()
        .map(|l| {
            let l = l
                .strip_prefix("pgbench: ")
                .or_else(|| l.strip_prefix("pgbolt: "))
                .unwrap_or(l);
            mask_client(l)
        })
        .collect();
    (done.code(), lines)
}

fn mask_client(line: &str) -> String {
    let Some(at) = line.find("client ") else {
        return line.to_owned();
    };
    let (head, tail) = line.split_at(at + "client ".len());
    let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
    format!("{head}N{}", &tail[digits..])
}

/// What the server log says from byte `from` on.
pub fn server_log_since(db: &TempDb, from: u64) -> String {
    let bytes = std::fs::read(db.log_file()).unwrap_or_default();
    let from = (from as usize).min(bytes.len());
    String::from_utf8_lossy(&bytes[from..]).into_owned()
}

/// The size of the server log now.
pub fn server_log_len(db: &TempDb) -> u64 {
    std::fs::metadata(db.log_file()).map_or(0, |m| m.len())
}
