//! The scratch `TMPDIR` of the `--temp-instance` tests: pgbolt runs with
//! a temporary directory of its own as `TMPDIR` and working directory, so
//! "nothing left behind" means no instance directory is left in it and no
//! process mentions it on its command line.

#![allow(dead_code)]

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub struct Scratch(tempfile::TempDir);

impl Scratch {
    /// A `TMPDIR` the server's OS user can reach (the server runs as
    /// `postgres` when the tests run as root).
    pub fn new() -> Scratch {
        let dir = tempfile::Builder::new()
            .prefix("pgbolt-temp-instance-test-")
            .tempdir_in("/tmp")
            .expect("temporary directory");
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).expect("chmod");
        Scratch(dir)
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_pgbolt"));
        command
            .args(args)
            .current_dir(self.path())
            .env("TMPDIR", self.path())
            .env("LC_ALL", "C")
            .env_remove("PGHOST")
            .env_remove("PGPORT")
            .env_remove("PGDATABASE")
            .env_remove("PGUSER")
            .stdin(Stdio::null());
        common::default_signals(&mut command);
        command
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run pgbolt")
    }

    pub fn spawn(&self, args: &[&str]) -> Child {
        self.command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn pgbolt")
    }

    /// The throwaway instances' directories under this `TMPDIR`.
    pub fn instances(&self) -> Vec<PathBuf> {
        fs::read_dir(self.path())
            .expect("read TMPDIR")
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("pgbolt-"))
            })
            .collect()
    }

    /// Asserts that no instance directory and no process is left.
    pub fn assert_nothing_left(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let entries = self.instances();
            let processes = processes_mentioning(self.path());
            if entries.is_empty() && processes.is_empty() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "left behind: {entries:?}, processes {processes:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until a process whose command line matches `wanted` mentions
    /// this directory; false if `child` ends first.
    pub fn wait_for_process(&self, child: &mut Child, wanted: impl Fn(&str) -> bool) -> bool {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if processes_mentioning(self.path()).iter().any(|p| wanted(p)) {
                return true;
            }
            if child.try_wait().expect("try_wait").is_some() {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        false
    }
}

/// Command lines of running processes that mention `dir`.
pub fn processes_mentioning(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(cmdline) = fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains(&needle) {
            found.push(text);
        }
    }
    found
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The standard output of a run that must have succeeded (its standard
/// error shown otherwise).
pub fn stdout_of_success(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
}
