//! Helpers shared by the binary-level test suites: the real pgbench, the
//! test binary's shared throwaway server, a fresh database on it, one
//! builder that runs pgbolt, pgbench or both with the same arguments
//! ([`Run`]), output as text, report lines and script files. The
//! `*_support` modules beside it hold only what one suite needs.
//!
//! # Which pgbench, which server
//! The oracle is pgbench 18 ([`pgbench_path`]: the one `make deps`
//! installs, or `PGBOLT_TEST_PGBENCH`). The servers are PostgreSQL 18 by
//! default ([`server`], and every `TempDb::builder()` of a test, which
//! takes the newest server on the machine). A small named set of tests
//! also runs against the machine's PostgreSQL 15 ([`server15`],
//! [`builder15`]); docs/testing.md lists them.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
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

/// A command for `program` with no inherited `PG*` variable: for tests
/// that say where and how to connect themselves.
pub fn without_pg_env(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(program);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("PG") {
            cmd.env_remove(name);
        }
    }
    cmd
}

/// A new empty database of `db` (the shared [`server`] for most tests),
/// with a name unique in this test binary.
pub fn new_database(db: &TempDb) -> String {
    db.create_database().expect("create database")
}

/// A new database of `db` initialized by the real pgbench with `-i -q`,
/// then `args` (`-s 1` for pgbench's tables at scale 1).
pub fn bench_database(db: &TempDb, args: &[&str]) -> String {
    let name = new_database(db);
    let init: Vec<&str> = ["-i", "-q"].iter().chain(args).copied().collect();
    let out = Run::on(db, &name, &init).pgbench();
    assert!(out.status.success(), "pgbench -i: {}", stderr(&out));
    name
}

/// The two programs every differential test runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Program {
    Pgbolt,
    Pgbench,
}

impl Program {
    pub fn path(self) -> PathBuf {
        match self {
            Program::Pgbolt => pgbolt_path(),
            Program::Pgbench => PathBuf::from(pgbench_path()),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Program::Pgbolt => "pgbolt",
            Program::Pgbench => "pgbench",
        }
    }
}

/// What `program` printed on standard error with its name before a colon
/// (`pgbolt: `, `pgbench: `) as `PROG: `, so both programs' messages
/// compare equal.
pub fn messages(out: &Output, program: Program) -> String {
    stderr(out).replace(&format!("{}: ", program.name()), "PROG: ")
}

/// One command line, run by either program against a database of a
/// server: `PGHOST`, `PGPORT` and `PGUSER` of the server, `PGDATABASE`,
/// no inherited `PGBENCH_RANDOM_SEED`, nothing on standard input and the
/// default action for the signals the tests send ([`default_signals`]).
#[derive(Clone)]
pub struct Run<'a> {
    server: &'a TempDb,
    pub dbname: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub dir: Option<PathBuf>,
}

impl Run<'static> {
    /// `args` in `dbname` of the test binary's shared [`server`].
    pub fn new(dbname: &str, args: &[&str]) -> Run<'static> {
        Run::on(server(), dbname, args)
    }
}

impl<'a> Run<'a> {
    /// `args` in `dbname` of `server`.
    pub fn on(server: &'a TempDb, dbname: &str, args: &[&str]) -> Run<'a> {
        Run {
            server,
            dbname: dbname.to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: Vec::new(),
            dir: None,
        }
    }

    /// One more argument after the others.
    pub fn arg(mut self, arg: &str) -> Self {
        self.args.push(arg.to_owned());
        self
    }

    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Runs the program in `dir` (where its log files go).
    pub fn in_dir(mut self, dir: &Path) -> Self {
        self.dir = Some(dir.to_owned());
        self
    }

    pub fn command(&self, program: Program) -> Command {
        let mut cmd = self.server.command(program.path());
        cmd.env("PGDATABASE", &self.dbname)
            .env_remove("PGBENCH_RANDOM_SEED")
            .stdin(Stdio::null());
        for (name, value) in &self.env {
            cmd.env(name, value);
        }
        if let Some(dir) = &self.dir {
            cmd.current_dir(dir);
        }
        cmd.args(&self.args);
        default_signals(&mut cmd);
        cmd
    }

    pub fn pgbolt_command(&self) -> Command {
        self.command(Program::Pgbolt)
    }

    pub fn pgbench_command(&self) -> Command {
        self.command(Program::Pgbench)
    }

    /// Runs `program` to its end: what it printed and its exit status.
    pub fn output(&self, program: Program) -> Output {
        self.command(program)
            .output()
            .unwrap_or_else(|e| panic!("{} runs: {e}", program.name()))
    }

    pub fn pgbolt(&self) -> Output {
        self.output(Program::Pgbolt)
    }

    pub fn pgbench(&self) -> Output {
        self.output(Program::Pgbench)
    }

    /// pgbolt's output, then pgbench's, run one after the other.
    pub fn both(&self) -> (Output, Output) {
        (self.pgbolt(), self.pgbench())
    }

    /// Runs `program` and returns its output with its process id, which
    /// log file names carry.
    pub fn spawn(&self, program: Program) -> (u32, Output) {
        let child = self
            .command(program)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("program starts");
        let pid = child.id();
        (pid, child.wait_with_output().expect("program ends"))
    }
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
    let mut session = sql::Session::open(db, "postgres");
    loop {
        for row in session.try_query(&sql).unwrap_or_default().lines() {
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

pub mod k8s;
pub mod pgbouncer;
pub mod sql;
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
