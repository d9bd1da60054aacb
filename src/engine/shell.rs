//! `\shell` and `\setshell` without stalling the thread's other clients.
//!
//! pgbench runs `system()`/`popen()` and blocks its whole thread until the
//! command ends. pgbolt starts `/bin/sh -c COMMAND` and lets the event loop
//! wait: for `\setshell` on the child's standard output (read to its end,
//! then the child is reaped), for `\shell` on a pidfd that becomes readable
//! when the child exits. Where `pidfd_open` is not available the thread
//! waits for the child, as pgbench would.
//!
//! Each child leads a process group of its own, so that what it starts
//! (the shell may fork the command rather than exec it, and a command may
//! start others) can be stopped with it: a run that ends with a command
//! still running (a signal, the end of a `-T` run's grace period) kills
//! the whole group. Left behind, those processes would go on with
//! pgbolt's output pipes open, and whatever reads them (`| tee`) would
//! wait for them. It also keeps a terminal's Ctrl-C, which goes to the
//! terminal's process group, from reaching the commands: pgbolt stops
//! them itself, instead of seeing them fail first and reporting a failed
//! command for every client.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use crate::script::{ShellWord, Target};

use super::client::{Client, State};
use super::env::ThreadEnv;
use super::plan::Plan;
use super::sql::command_failed;
use crate::program::log;

/// pgbench's limit on the length of a shell command.
const SHELL_COMMAND_SIZE: usize = 256;

/// A child being waited for.
pub struct ShellJob {
    child: Child,
    /// The program word, pgbench's prefix for these errors.
    program: String,
    target: Option<Target>,
    /// `\setshell` into a name pgbench refuses (`1x`): that name.
    bad_target: Option<String>,
    /// `\setshell`: the output read so far (the first 63 bytes count).
    output: Vec<u8>,
    /// `\setshell` under `--debug`: the command's first argument as
    /// written, which pgbench's debug line calls the parameter name.
    debug_argument: Option<String>,
    /// What the poller watches: the output pipe or a pidfd.
    watched: Option<OwnedFd>,
}

impl ShellJob {
    pub fn fd(&self) -> Option<RawFd> {
        self.watched.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// Stops the child and everything in its process group at the end of
    /// the run.
    pub fn kill(mut self) {
        // SAFETY: kill has no memory-safety preconditions; a negative pid
        // names the process group the child leads.
        unsafe {
            libc::kill(-(self.child.id() as libc::pid_t), libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

/// Builds the command line and starts the child.
pub fn start(
    c: &mut Client,
    idx: usize,
    plan: &Plan,
    env: &mut ThreadEnv,
    words: &[ShellWord],
    target: Option<Target>,
) {
    let what = if target.is_some() {
        "setshell"
    } else {
        "shell"
    };
    let program = match words.first() {
        Some(ShellWord::Literal(w)) => w.clone(),
        Some(ShellWord::Var(slot)) => format!(":{}", plan.names.name(*slot)),
        None => String::new(),
    };
    let Some(line) = command_line(c, plan, words, &program) else {
        return fail(c, what);
    };
    let mut child = match spawn_shell(&line, target.is_some()) {
        Ok(child) => child,
        Err(_) => {
            log::error(format_args!("{program}: could not launch shell command"));
            return fail(c, what);
        }
    };
    let watched = match child.stdout.take() {
        Some(out) => {
            let fd = OwnedFd::from(out);
            set_nonblocking(fd.as_raw_fd());
            Some(fd)
        }
        None => pidfd(child.id()),
    };
    let bad_target = target
        .filter(|t| !t.valid_name)
        .map(|t| plan.names.name(t.slot).to_owned());
    let debug_argument = (plan.debug && target.is_some()).then(|| {
        let words = &plan.scripts[c.script].commands[c.command].words;
        // `\setshell var program argument`; C's printf shows a missing one
        // as `(null)`.
        words.split(' ').nth(3).unwrap_or("(null)").to_owned()
    });
    let job = ShellJob {
        child,
        program,
        target,
        bad_target,
        output: Vec::new(),
        debug_argument,
        watched,
    };
    if let Some(fd) = job.fd() {
        env.watch_shell(fd, idx);
    }
    c.shell = Some(job);
    c.state = State::WaitShell;
}

/// The command line: the words joined by spaces, each variable replaced
/// by its value. The line is bytes: a variable's value (read by `\gset`
/// from a `LATIN1` database, say) goes to the shell as it is. None, with
/// the error logged, for an undefined variable or a line longer than
/// pgbench allows.
fn command_line(c: &Client, plan: &Plan, words: &[ShellWord], program: &str) -> Option<Vec<u8>> {
    let mut line = Vec::new();
    for (i, word) in words.iter().enumerate() {
        let mut scratch = Vec::new();
        let arg = match word {
            ShellWord::Literal(w) => w.as_bytes(),
            ShellWord::Var(slot) => {
                if !c.vars.write_sql(*slot, &mut scratch) {
                    log::error(format_args!(
                        "{program}: undefined variable \":{}\"",
                        plan.names.name(*slot)
                    ));
                    return None;
                }
                &scratch
            }
        };
        if line.len() + arg.len() + usize::from(i > 0) >= SHELL_COMMAND_SIZE - 1 {
            log::error(format_args!("{program}: shell command is too long"));
            return None;
        }
        if i > 0 {
            line.push(b' ');
        }
        line.extend_from_slice(arg);
    }
    Some(line)
}

/// Starts `/bin/sh -c LINE` leading a process group of its own, its
/// standard output piped to us for `\setshell` (`capture`).
fn spawn_shell(line: &[u8], capture: bool) -> std::io::Result<Child> {
    // system() and popen() name the shell `sh`, which its own error
    // messages repeat (`sh: 1: nosuch: not found`).
    let mut command = Command::new("/bin/sh");
    command
        .arg0("sh")
        .process_group(0)
        .arg("-c")
        .arg(std::ffi::OsStr::from_bytes(line));
    if capture {
        command.stdout(Stdio::piped());
    }
    command.spawn()
}

fn fail(c: &mut Client, what: &str) {
    command_failed(c, what, "execution of meta-command failed");
    c.state = State::Aborted;
}

fn set_nonblocking(fd: RawFd) {
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
}

fn read_fd(fd: RawFd, buf: &mut [u8]) -> std::io::Result<usize> {
    // SAFETY: reads into a buffer we own, of the length we pass.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

fn pidfd(pid: u32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: the descriptor was just created and is owned by nobody else.
    Some(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Makes progress on the client's child; true when it is done (the client's
/// state says how it went).
pub fn poll(c: &mut Client, idx: usize, env: &mut ThreadEnv) -> bool {
    let Some(job) = c.shell.as_mut() else {
        c.state = State::EndCommand;
        return true;
    };
    if job.target.is_some() {
        if let Some(fd) = job.watched.as_ref() {
            let mut buf = [0u8; 4096];
            loop {
                match read_fd(fd.as_raw_fd(), &mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        let room = 63usize.saturating_sub(job.output.len());
                        job.output.extend_from_slice(&buf[..n.min(room)]);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        }
    } else if job.watched.is_some() {
        if let Ok(None) = job.child.try_wait() {
            return false;
        }
    }
    let Some(mut job) = c.shell.take() else {
        return true;
    };
    if let Some(fd) = job.fd() {
        env.unwatch_shell(fd, idx);
    }
    let status = job.child.wait();
    match job.target {
        None => {
            if !matches!(status, Ok(s) if s.success()) {
                if !env.over {
                    log::error(format_args!(
                        "{}: could not launch shell command",
                        job.program
                    ));
                }
                return finish_failed(c, "shell");
            }
        }
        Some(target) => {
            if !store_result(c, &job, target, env) {
                return finish_failed(c, "setshell");
            }
        }
    }
    c.state = State::EndCommand;
    true
}

fn finish_failed(c: &mut Client, what: &str) -> bool {
    fail(c, what);
    true
}

/// pgbench's check of `\setshell` output: the first line must be an
/// integer, C blanks allowed after it. pgbench reads that line as a C
/// string, so a NUL byte ends it.
fn store_result(c: &mut Client, job: &ShellJob, target: Target, env: &ThreadEnv) -> bool {
    if job.output.is_empty() {
        if !env.over {
            log::error(format_args!(
                "{}: could not read result of shell command",
                job.program
            ));
        }
        return false;
    }
    let line_end = job
        .output
        .iter()
        .position(|&b| b == b'\n')
        .map_or(job.output.len(), |i| i + 1);
    let line = &job.output[..line_end];
    let line = &line[..line.iter().position(|&b| b == 0).unwrap_or(line.len())];
    let (value, _, end) = crate::cnum::strtol(line);
    if line.is_empty() || crate::cnum::skip_spaces(line, end) < line.len() {
        let mut message = format!(
            "{}: shell command must return an integer (not \"",
            job.program
        )
        .into_bytes();
        message.extend_from_slice(line);
        message.extend_from_slice(b"\")");
        log::error_bytes(&message);
        return false;
    }
    if !target.valid_name {
        log::error(format_args!(
            "setshell: invalid variable name: \"{}\"",
            job.bad_target.as_deref().unwrap_or_default()
        ));
        return false;
    }
    c.vars.set(
        target.slot,
        crate::expr::Value::Int(i64::from(value as i32)),
    );
    if let Some(argument) = &job.debug_argument {
        let mut message = format!(
            "{}: shell parameter name: \"{argument}\", value: \"",
            job.program
        )
        .into_bytes();
        message.extend_from_slice(line);
        message.push(b'"');
        log::debug_bytes(&message);
    }
    true
}
