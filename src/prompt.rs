//! `Password: `, as pgbench asks it.
//!
//! When the server wants a password and none was given (no `password`
//! option, no `PGPASSWORD`, nothing in the password file), pgbench asks
//! for one once, on the terminal, and uses the answer for every later
//! connection of the run. Scripts that pipe a password into pgbench rely
//! on where it asks: on `/dev/tty` when the process has a controlling
//! terminal, else on standard error, reading standard input. Echo is off
//! while the answer is typed, and a newline is written after it.
//!
//! Only the first connection (the set-up connection of a run, the main
//! connection of `-i`) asks; the password then goes into the connection
//! settings the other connections are made from.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, RawFd};

use pgwire::conninfo::{Config, Secret};

/// Runs `connect`; if the server asked for a password that was not given,
/// asks for one, keeps it in `config` and runs `connect` again, once.
pub fn connect_asking<T>(
    config: &mut Config,
    mut connect: impl FnMut(&Config) -> Result<T, pgwire::Error>,
) -> Result<T, pgwire::Error> {
    match connect(config) {
        Err(e) if e.needs_password() => {
            // An empty answer is no password, as for libpq: the password
            // file is read (and warned about) again.
            let answer = read_password();
            config.password = (!answer.is_empty()).then(|| Secret::from_bytes(answer));
            connect(config)
        }
        other => other,
    }
}

/// Asks for the password; an answer that cannot be read is an empty one,
/// which the next attempt reports as `no password supplied`.
fn read_password() -> Vec<u8> {
    let answer = match OpenOptions::new().read(true).write(true).open("/dev/tty") {
        Ok(tty) => {
            let mut out = &tty;
            ask(tty.as_raw_fd(), &mut out)
        }
        Err(_) => ask(io::stdin().as_raw_fd(), &mut io::stderr()),
    };
    answer.unwrap_or_default()
}

/// Writes the question to `out`, reads one line from `input` with echo
/// off when it is a terminal, and ends the line on `out`.
fn ask(input: RawFd, out: &mut impl Write) -> io::Result<Vec<u8>> {
    out.write_all(b"Password: ")?;
    out.flush()?;
    let echo = EchoOff::new(input);
    let line = read_line(input);
    drop(echo);
    out.write_all(b"\n")?;
    out.flush()?;
    line
}

/// One line without its line ending (`\n` or `\r\n`), read a byte at a
/// time and unbuffered, so that nothing after it is taken from the input.
/// The bytes are kept as typed, UTF-8 or not, as libpq keeps them.
fn read_line(input: RawFd) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    loop {
        let mut byte = 0u8;
        // SAFETY: reads at most one byte into a one-byte buffer.
        match unsafe { libc::read(input, (&mut byte as *mut u8).cast(), 1) } {
            1 if byte == b'\n' => break,
            1 => bytes.push(byte),
            0 => break,
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    if bytes.last() == Some(&b'\r') {
        bytes.pop();
    }
    Ok(bytes)
}

/// Terminal echo switched off for as long as the value lives; nothing
/// happens for an input that is not a terminal.
struct EchoOff {
    fd: RawFd,
    saved: Option<libc::termios>,
}

impl EchoOff {
    fn new(fd: RawFd) -> EchoOff {
        // SAFETY: `termios` is plain data, filled in by `tcgetattr`, which
        // fails harmlessly on a descriptor that is not a terminal.
        let saved = unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            (libc::tcgetattr(fd, &mut t) == 0).then_some(t)
        };
        if let Some(mut quiet) = saved {
            quiet.c_lflag &= !libc::ECHO;
            // SAFETY: sets attributes read from the same terminal.
            unsafe { libc::tcsetattr(fd, libc::TCSAFLUSH, &quiet) };
        }
        EchoOff { fd, saved }
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        if let Some(saved) = self.saved {
            // SAFETY: restores the attributes read in `new`.
            unsafe { libc::tcsetattr(self.fd, libc::TCSAFLUSH, &saved) };
        }
    }
}
