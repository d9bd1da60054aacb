//! Helpers of the server-state differential tests: a hot standby made
//! from a throwaway primary, a place to point both programs at (the
//! primary or the standby), and their outputs reduced to what does not
//! depend on timing.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use pgbolt::tempdb::TempDb;
use regex::Regex;

pub use crate::common::standby::Standby;
use crate::common::without_pg_env;
pub use crate::common::{
    bench_database, new_database, pgbench_path, pgbolt_path, script_file, server, text, ScriptFile,
};

/// Where a program connects: socket directory, port, user and database.
#[derive(Debug, Clone)]
pub struct Target {
    pub host: PathBuf,
    pub port: u16,
    pub user: String,
    pub dbname: String,
}

impl Target {
    /// `dbname` on `standby`, as `user`.
    pub fn on_standby(standby: &Standby, user: &str, dbname: &str) -> Target {
        Target {
            host: standby.socket_dir().to_path_buf(),
            port: standby.port,
            user: user.to_owned(),
            dbname: dbname.to_owned(),
        }
    }

    pub fn on(db: &TempDb, dbname: &str) -> Target {
        Target {
            host: db.socket_dir().to_path_buf(),
            port: db.port(),
            user: db.superuser().to_owned(),
            dbname: dbname.to_owned(),
        }
    }

    /// `program` (pgbench or pgbolt) with `args`, connecting here, with
    /// no other `PG*` setting than those in `env`.
    pub fn command(&self, program: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut cmd = without_pg_env(program);
        cmd.env("PGHOST", &self.host)
            .env("PGPORT", self.port.to_string())
            .env("PGUSER", &self.user)
            .env("PGDATABASE", &self.dbname)
            .env("LC_ALL", "C")
            .envs(env.iter().copied())
            .args(args)
            .stdin(Stdio::null());
        cmd
    }

    /// psql's answer to `sql` here (unaligned, tuples only); panics on an
    /// error.
    pub fn psql(&self, sql: &str) -> String {
        let psql = PathBuf::from(pgbench_path()).with_file_name("psql");
        let out = self
            .command(&psql, &["-X", "-q", "-A", "-t", "-c", sql], &[])
            .output()
            .expect("psql runs");
        assert!(out.status.success(), "{sql}: {}", text(&out.stderr));
        text(&out.stdout).trim().to_owned()
    }
}

/// What a user sees of one run, with timing-dependent numbers masked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub code: Option<i32>,
    pub stdout: Vec<String>,
    pub stderr: Vec<String>,
}

/// The run's output with the program's name made neutral, the version
/// line and pgbolt's percentile lines left out, and decimal numbers
/// masked.
/// Standard error is sorted when `sorted` (several clients abort in any
/// order).
pub fn seen(out: &Output, sorted: bool) -> Seen {
    static DECIMAL: OnceLock<Regex> = OnceLock::new();
    static PROGRAM: OnceLock<Regex> = OnceLock::new();
    let decimal = DECIMAL.get_or_init(|| Regex::new(r"\d+\.\d+").expect("regex"));
    let program = PROGRAM
        .get_or_init(|| Regex::new(r"^(pgbench|pgbolt) \(|\b(pgbench|pgbolt): ").expect("regex"));
    let clean = |bytes: &[u8]| -> Vec<String> {
        text(bytes)
            .lines()
            .filter_map(|l| {
                let l = program
                    .replace_all(l, |c: &regex::Captures<'_>| {
                        if c.get(1).is_some() {
                            "PROG ("
                        } else {
                            "PROG: "
                        }
                    })
                    .into_owned();
                let skip = l.starts_with("PROG (") || l.contains("percentiles:");
                (!skip).then(|| decimal.replace_all(&l, "F").into_owned())
            })
            .collect()
    };
    let mut stderr = clean(&out.stderr);
    if sorted {
        stderr.sort();
    }
    Seen {
        code: out.status.code(),
        stdout: clean(crate::common::without_diagnosis(&text(&out.stdout)).as_bytes()),
        stderr,
    }
}

/// Runs pgbench, then pgbolt, with the same arguments and environment
/// against `target`, and returns what each showed.
pub fn both(target: &Target, args: &[&str], env: &[(&str, &str)], sorted: bool) -> [Seen; 2] {
    [PathBuf::from(pgbench_path()), pgbolt_path()].map(|program| {
        let out = target
            .command(&program, args, env)
            .output()
            .expect("program runs");
        seen(&out, sorted)
    })
}

/// Runs pgbolt alone against `target`.
pub fn ours(target: &Target, args: &[&str], env: &[(&str, &str)], sorted: bool) -> Seen {
    let out = target
        .command(&pgbolt_path(), args, env)
        .output()
        .expect("pgbolt runs");
    seen(&out, sorted)
}

/// Runs pgbench, then pgbolt, in the background against `target`, calls
/// `during` while each runs, and returns what each showed. A program
/// still running a minute later is killed and the test fails.
pub fn both_during(target: &Target, args: &[&str], during: impl Fn(&str)) -> [Seen; 2] {
    [PathBuf::from(pgbench_path()), pgbolt_path()].map(|program| {
        let name = program
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let child = target
            .command(&program, args, &[])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("program starts");
        let pid = child.id() as i32;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        during(&name);
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(out) => seen(&out.expect("program ends"), false),
            Err(_) => {
                // SAFETY: kill has no memory-safety preconditions.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                panic!("{name} {args:?} still running after a minute");
            }
        }
    })
}

/// Waits until `sql` answers `t` at `target`; fails the test after 30 s.
pub fn wait_until(target: &Target, sql: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while target.psql(sql) != "t" {
        assert!(Instant::now() < deadline, "never true: {sql}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
