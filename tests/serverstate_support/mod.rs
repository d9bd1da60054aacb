//! Helpers of the server-state differential tests: a hot standby made
//! from a throwaway primary, a place to point both programs at (the
//! primary or the standby), and their outputs reduced to what does not
//! depend on timing.

#![allow(dead_code)]

#[path = "../common/mod.rs"]
pub mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use pgbolt::tempdb::TempDb;
use regex::Regex;

pub use common::{pgbolt_path, script_file, text, ScriptFile, PGBENCH};

/// The test binary's shared server.
pub fn shared() -> &'static TempDb {
    common::server()
}

/// Where a program connects: socket directory, port, user and database.
#[derive(Debug, Clone)]
pub struct Target {
    pub host: PathBuf,
    pub port: u16,
    pub user: String,
    pub dbname: String,
}

impl Target {
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
        let mut cmd = Command::new(program);
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("PG") {
                cmd.env_remove(name);
            }
        }
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
        let psql = PathBuf::from(PGBENCH).with_file_name("psql");
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
/// line and pgbolt's percentile lines left out, decimal numbers masked,
/// and pgbench 15's lines for a run with no transaction at all left out
/// (pgbench 18 prints none; docs/compatibility.md, "Reports and logs").
/// Standard error is sorted when `sorted` (several clients abort in any
/// order).
pub fn seen(out: &Output, sorted: bool) -> Seen {
    static DECIMAL: OnceLock<Regex> = OnceLock::new();
    static PROGRAM: OnceLock<Regex> = OnceLock::new();
    let decimal = DECIMAL.get_or_init(|| Regex::new(r"\d+\.\d+").expect("regex"));
    let program = PROGRAM
        .get_or_init(|| Regex::new(r"^(pgbench|pgbolt) \(|\b(pgbench|pgbolt): ").expect("regex"));
    let clean = |bytes: &[u8]| -> Vec<String> {
        let mut nan = false;
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
                let zero_total = nan && l == "total number of retries: 0";
                nan = l.ends_with(" 0 (NaN%)");
                let skip =
                    l.starts_with("PROG (") || l.contains("percentiles:") || nan || zero_total;
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
        stdout: clean(&out.stdout),
        stderr,
    }
}

/// Runs pgbench, then pgbolt, with the same arguments and environment
/// against `target`, and returns what each showed.
pub fn both(target: &Target, args: &[&str], env: &[(&str, &str)], sorted: bool) -> [Seen; 2] {
    [PathBuf::from(PGBENCH), pgbolt_path()].map(|program| {
        let out = target
            .command(&program, args, env)
            .output()
            .expect("program runs");
        seen(&out, sorted)
    })
}

/// Whether the tests run as root, so the servers run as `postgres`.
fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A command run as the server's OS user.
fn server_user_command(program: &Path, args: &[&str]) -> Command {
    let mut cmd = if root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    };
    cmd.args(args).stdin(Stdio::null());
    cmd
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
    [PathBuf::from(PGBENCH), pgbolt_path()].map(|program| {
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

/// Runs a command as the server's OS user and fails the test if it fails.
fn as_server_user(program: &Path, args: &[&str]) {
    let out = server_user_command(program, args)
        .output()
        .expect("command runs");
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        program.display(),
        text(&out.stderr)
    );
}

/// A hot standby of a throwaway primary, made with `pg_basebackup -R`,
/// listening on a socket of its own; stopped and removed when dropped.
pub struct Standby {
    dir: tempfile::TempDir,
    data: PathBuf,
    pg_ctl: PathBuf,
    pub port: u16,
}

impl Standby {
    /// Copies `primary` (which allows replication connections from then
    /// on) and starts the copy as its standby, with conflicting queries
    /// cancelled at once (`max_standby_streaming_delay = 0`).
    pub fn of(primary: &TempDb) -> Standby {
        let hba = primary.data_dir().join("pg_hba.conf");
        let mut rules = std::fs::read_to_string(&hba).expect("read pg_hba.conf");
        rules.push_str("local replication all trust\n");
        std::fs::write(&hba, rules).expect("write pg_hba.conf");
        primary.psql("SELECT pg_reload_conf()").expect("reload");
        let dir = tempfile::tempdir().expect("temp dir");
        if root() {
            let chown = Command::new("chown")
                .arg("postgres")
                .arg(dir.path())
                .status();
            assert!(
                chown.is_ok_and(|s| s.success()),
                "chown of {:?}",
                dir.path()
            );
        }
        let data = dir.path().join("data");
        let (host, port) = (primary.socket_dir().display().to_string(), primary.port());
        let port_text = port.to_string();
        as_server_user(
            &primary.bin("pg_basebackup"),
            &[
                "-h",
                &host,
                "-p",
                &port_text,
                "-U",
                primary.superuser(),
                "-D",
                &data.display().to_string(),
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
            ],
        );
        let auto = data.join("postgresql.auto.conf");
        let mut conf = std::fs::read_to_string(&auto).expect("read postgresql.auto.conf");
        conf.push_str(&format!(
            "unix_socket_directories = '{}'\nlisten_addresses = ''\nmax_standby_streaming_delay = 0\n",
            dir.path().display()
        ));
        std::fs::write(&auto, conf).expect("write postgresql.auto.conf");
        let pg_ctl = primary.bin("pg_ctl");
        let log = dir.path().join("log");
        as_server_user(
            &pg_ctl,
            &[
                "-D",
                &data.display().to_string(),
                "-l",
                &log.display().to_string(),
                "-w",
                "start",
            ],
        );
        Standby {
            dir,
            data,
            pg_ctl,
            port,
        }
    }

    pub fn target(&self, user: &str, dbname: &str) -> Target {
        Target {
            host: self.dir.path().to_path_buf(),
            port: self.port,
            user: user.to_owned(),
            dbname: dbname.to_owned(),
        }
    }
}

impl Drop for Standby {
    fn drop(&mut self) {
        let data = self.data.display().to_string();
        let _ =
            server_user_command(&self.pg_ctl, &["-D", &data, "-m", "immediate", "stop"]).output();
    }
}
