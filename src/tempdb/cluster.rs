//! Making a data directory and running a postmaster on it.
//!
//! `initdb` is the slow step of a start (most of a second), so each process
//! runs it once per (binaries, server OS user, superuser name) into a
//! *template* directory and every instance starts from a copy of that
//! (about a tenth of the time). The template's superuser gets a random
//! password through `initdb --pwfile`; the instance's own configuration
//! (`pg_hba.conf`, `pgbolt.conf`) is written over the copy.

use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::os::{self, ServerOwner};
use super::{lifecycle, Error, StartFailure};

/// Name of the file, inside the data directory, holding pgbolt's settings.
pub(crate) const PGBOLT_CONF: &str = "pgbolt.conf";

struct Template {
    bin_dir: PathBuf,
    owner_uid: u32,
    superuser: String,
    data_dir: PathBuf,
    password: String,
}

static TEMPLATES: Mutex<Vec<Template>> = Mutex::new(Vec::new());

/// Creates `data_dir` as a copy of this process's template cluster for the
/// given binaries, owner and superuser (making the template if needed), and
/// returns the superuser's password.
pub(crate) fn init_data_dir(
    bin_dir: &Path,
    owner: &ServerOwner,
    superuser: &str,
    data_dir: &Path,
) -> Result<String, Error> {
    let mut templates = TEMPLATES.lock().unwrap_or_else(PoisonError::into_inner);
    let found = templates
        .iter()
        .position(|t| t.bin_dir == bin_dir && t.owner_uid == owner.uid && t.superuser == superuser);
    let index = match found {
        Some(i) if template_intact(&templates[i]) => i,
        stale => {
            let template = make_template(bin_dir, owner, superuser)?;
            match stale {
                Some(i) => {
                    templates[i] = template;
                    i
                }
                None => {
                    templates.push(template);
                    templates.len() - 1
                }
            }
        }
    };
    let template = &templates[index];
    os::copy_tree(&template.data_dir, data_dir)?;
    Ok(template.password.clone())
}

/// A template removed behind our back (by a signal clean-up) is remade.
fn template_intact(t: &Template) -> bool {
    t.data_dir.join("PG_VERSION").is_file()
}

fn make_template(bin_dir: &Path, owner: &ServerOwner, superuser: &str) -> Result<Template, Error> {
    let root = tempfile::Builder::new()
        .prefix("pgbolt-template-")
        .tempdir_in(super::builder::temp_base())
        .map_err(|e| Error::io("creating a temporary directory", e))?
        .keep();
    lifecycle::register(root.clone());
    os::make_private(&root)?;
    owner.chown(&root)?;
    let password = os::random_password()?;
    let pwfile = root.join("pwfile");
    os::write_file(&pwfile, password.as_bytes(), 0o600)?;
    owner.chown(&pwfile)?;
    let data_dir = root.join("data");
    let initdb = bin_dir.join("initdb");
    let mut cmd = Command::new(&initdb);
    cmd.arg("-D")
        .arg(&data_dir)
        .arg("-U")
        .arg(superuser)
        .arg("--pwfile")
        .arg(&pwfile)
        .args([
            "--auth=trust",
            "--no-sync",
            "--no-locale",
            "--encoding=UTF8",
        ])
        .current_dir(&root)
        .stdin(Stdio::null());
    clear_pg_env(&mut cmd);
    owner.apply(&mut cmd);
    let output = cmd.output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::PermissionDenied && owner.is_switched() {
            Error::TempDirUnreachable {
                base: super::builder::temp_base(),
                user: owner.name.clone(),
            }
        } else {
            Error::io(format!("running {}", initdb.display()), e)
        }
    })?;
    let _ = fs::remove_file(&pwfile);
    if !output.status.success() {
        let mut text = String::from_utf8_lossy(&output.stderr).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stdout));
        return Err(Error::InitdbFailed {
            status: output.status,
            output: text,
        });
    }
    Ok(Template {
        bin_dir: bin_dir.to_path_buf(),
        owner_uid: owner.uid,
        superuser: superuser.to_string(),
        data_dir,
        password,
    })
}

/// Removes every `PG*` variable, so the caller's environment cannot redirect
/// a child to another server, database or service file.
pub(crate) fn clear_pg_env(cmd: &mut Command) {
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(|n| n.starts_with("PG")) {
            cmd.env_remove(name);
        }
    }
}

/// Starts `postgres -D data_dir` with output appended to `log`; returns its pid.
pub(crate) fn spawn_postmaster(
    bin_dir: &Path,
    owner: &ServerOwner,
    root: &Path,
    data_dir: &Path,
    log: &Path,
) -> Result<i32, Error> {
    let log_file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| Error::io(format!("opening {}", log.display()), e))?;
    // The server's account owns its log, so that it can append to it when
    // someone restarts a kept instance (`pg_ctl start -l server.log`).
    owner.chown(log)?;
    let log_err = log_file
        .try_clone()
        .map_err(|e| Error::io(format!("opening {}", log.display()), e))?;
    let postgres = bin_dir.join("postgres");
    let mut cmd = Command::new(&postgres);
    cmd.arg("-D")
        .arg(data_dir)
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(log_file)
        .stderr(log_err)
        // Its own process group: a Ctrl-C at the terminal reaches us, not the
        // server, and we decide how it stops.
        .process_group(0);
    clear_pg_env(&mut cmd);
    owner.apply(&mut cmd);
    let child = cmd
        .spawn()
        .map_err(|e| Error::io(format!("starting {}", postgres.display()), e))?;
    // The child is reaped with waitpid by pid (see `lifecycle`), so the
    // `Child` handle itself is not kept.
    Ok(child.id() as i32)
}

/// Waits until the postmaster reports "ready" in `postmaster.pid` (what
/// `pg_ctl -w` does), it exits, or `timeout` passes.
pub(crate) fn wait_ready(
    pid: i32,
    data_dir: &Path,
    log: &Path,
    timeout: Duration,
) -> Result<(), Error> {
    let start = Instant::now();
    let pid_file = data_dir.join("postmaster.pid");
    loop {
        if let Some(status) = lifecycle::exit_status(pid) {
            return Err(start_failed(
                StartFailure::Exited(ExitStatus::from_raw(status)),
                log,
            ));
        }
        if let Ok(text) = fs::read_to_string(&pid_file) {
            let mut lines = text.lines();
            let owner_pid = lines.next().map(str::trim);
            let status = lines.nth(6).map(str::trim);
            if owner_pid == Some(pid.to_string().as_str()) && status == Some("ready") {
                return Ok(());
            }
        }
        if start.elapsed() > timeout {
            return Err(start_failed(StartFailure::TimedOut(timeout), log));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn start_failed(reason: StartFailure, log: &Path) -> Error {
    let tail = log_tail(log, 30);
    let rejected_settings = tail
        .lines()
        .filter(|l| {
            l.contains("parameter \"")
                || l.contains("configuration file")
                || l.contains("syntax error in file")
        })
        .map(str::to_string)
        .collect();
    Error::StartFailed {
        reason,
        rejected_settings,
        log_tail: tail,
    }
}

/// The last `lines` lines of the log (reading at most its last 64 KiB).
pub(crate) fn log_tail(log: &Path, lines: usize) -> String {
    let Ok(mut file) = fs::File::open(log) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)));
    let mut bytes = Vec::new();
    let _ = file.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// True when a failed start looks like a lost race for the TCP port.
pub(crate) fn port_taken(err: &Error) -> bool {
    match err {
        Error::StartFailed { log_tail, .. } => {
            log_tail.contains("could not bind") || log_tail.contains("Address already in use")
        }
        _ => false,
    }
}
