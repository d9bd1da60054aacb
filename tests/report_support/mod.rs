//! Shared helpers of the binary-level report tests: one throwaway server
//! per test binary, one database initialized once with the real
//! `pgbench -i -s 1` for the tests that only read or whose writes do not
//! matter, fresh initialized databases for the tests that contend, and
//! runners that start the pgbolt binary and the real pgbench with the same
//! arguments, environment and working directory.

#![allow(dead_code)]

#[path = "../common/mod.rs"]
mod common;
pub mod compare;
pub mod json;
pub mod logs;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

pub use common::{line, pgbench_path, script_file as script, server, stderr, stdout, ScriptFile};

/// Waits until a backend of application `app` on the shared server is on
/// its second statement like `statement` (see the common helper).
pub fn wait_for_second_statement(app: &str, statement: &str) {
    common::wait_for_second_statement(server(), app, statement);
}

/// `fail_if(condition, sqlstate)` raises an error with that SQLSTATE when
/// the condition holds: failures raised on purpose, at places a seeded
/// script chooses, so both programs meet the same ones.
pub const FAIL_IF: &str = "CREATE FUNCTION fail_if(fail boolean, code text) RETURNS int
LANGUAGE plpgsql AS $$
BEGIN
    IF fail THEN
        RAISE EXCEPTION 'failing on purpose (%)', code USING ERRCODE = code;
    END IF;
    RETURN 0;
END $$;";

/// A new database initialized with `pgbench -i -s 1`.
pub fn fresh_database() -> String {
    initialized_database(&[])
}

/// A new database initialized with `pgbench -i -s 1` and `more` options.
pub fn initialized_database(more: &[&str]) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let name = format!("report_{}", NEXT.fetch_add(1, Ordering::SeqCst));
    server()
        .psql(&format!("CREATE DATABASE {name}"))
        .expect("create database");
    let args: Vec<&str> = ["-i", "-q", "-s", "1"]
        .iter()
        .chain(more)
        .copied()
        .collect();
    let out = Run::new(&name, &args).pgbench();
    assert!(out.status.success(), "pgbench -i: {}", stderr(&out));
    name
}

/// The database every test may share: initialized once.
pub fn shared_database() -> &'static str {
    static DB: OnceLock<String> = OnceLock::new();
    DB.get_or_init(fresh_database)
}

/// One command line, run by either program.
#[derive(Clone)]
pub struct Run {
    pub dbname: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub dir: Option<PathBuf>,
}

impl Run {
    pub fn new(dbname: &str, args: &[&str]) -> Run {
        Run {
            dbname: dbname.to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: Vec::new(),
            dir: None,
        }
    }

    pub fn env(mut self, name: &str, value: &str) -> Run {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn in_dir(mut self, dir: &Path) -> Run {
        self.dir = Some(dir.to_owned());
        self
    }

    fn command(&self, program: &Path) -> Command {
        let mut cmd = server().command(program);
        cmd.env("PGDATABASE", &self.dbname);
        cmd.env_remove("PGBENCH_RANDOM_SEED");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        if let Some(dir) = &self.dir {
            cmd.current_dir(dir);
        }
        cmd.args(&self.args);
        common::default_signals(&mut cmd);
        cmd
    }

    pub fn pgbolt_command(&self) -> Command {
        self.command(Path::new(env!("CARGO_BIN_EXE_pgbolt")))
    }

    pub fn pgbolt(&self) -> Output {
        self.pgbolt_command().output().expect("pgbolt runs")
    }

    pub fn pgbench(&self) -> Output {
        self.command(Path::new(pgbench_path()))
            .output()
            .expect("pgbench runs")
    }

    /// Runs pgbolt (`ours`) or pgbench and returns its output with its
    /// process id, which log file names carry.
    pub fn spawn(&self, ours: bool) -> (u32, Output) {
        let mut cmd = if ours {
            self.pgbolt_command()
        } else {
            self.command(Path::new(pgbench_path()))
        };
        let child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("program starts");
        let pid = child.id();
        (pid, child.wait_with_output().expect("program ends"))
    }
}

/// Updates of a handful of rows in one transaction: under SERIALIZABLE,
/// concurrent clients get serialization failures. The pause between the
/// read and the write keeps transactions open long enough to overlap
/// however the clients happen to be scheduled.
pub const CONTENDED: &str = "\\set aid random(1, 4)
BEGIN;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
\\sleep 1 ms
UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;
END;
";

pub const SERIALIZABLE: &str = "-c default_transaction_isolation=serializable";
