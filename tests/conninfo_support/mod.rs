//! The server and the runners of `conninfo_diff`: one throwaway server per
//! test binary, listening on its socket and on 127.0.0.1 and logging every
//! connection, and both programs run with a clean environment.

#![allow(dead_code)]

pub use crate::common::standby::Standby;

use std::io::{Read, Seek, SeekFrom};
use std::process::{Output, Stdio};
use std::sync::OnceLock;

use pgbolt::tempdb::TempDb;

use crate::common::without_pg_env;
pub use crate::common::{messages, Program};

/// The shared server, with `log_connections` on.
pub fn server() -> &'static TempDb {
    static DB: OnceLock<TempDb> = OnceLock::new();
    DB.get_or_init(|| {
        TempDb::builder()
            .tcp(true)
            .setting("log_connections", "on")
            .start()
            .expect("server starts")
    })
}

/// A new empty database named `name`.
pub fn database(name: &str) -> String {
    server()
        .psql(&format!("CREATE DATABASE {name}"))
        .expect("create database");
    name.to_owned()
}

/// `host=SOCKETDIR port=P user=SUPERUSER dbname=DB`.
pub fn socket_conninfo(db: &str) -> String {
    let srv = server();
    format!(
        "host={} port={} user={} dbname={db}",
        srv.socket_dir().display(),
        srv.port(),
        srv.superuser()
    )
}

/// Runs `program` with `args`, no inherited `PG*` variable, `HOME` an empty
/// directory (no password or service file of the machine's), then `env`.
pub fn run(program: Program, args: &[&str], env: &[(&str, &str)]) -> Output {
    let home = tempfile::tempdir().expect("temp dir");
    let mut cmd = without_pg_env(program.path());
    if program == Program::Pgbolt {
        // The sessions pgbench opens are compared: no monitor session.
        cmd.args(["--pgbench-output", "--no-monitor"]);
    }
    cmd.env("HOME", home.path())
        .envs(env.iter().copied())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("program runs")
}

/// Runs `f` and returns its result with the server's `connection
/// authorized` lines for database `db` written meanwhile, from `user=` on.
pub fn authorized(db: &str, f: impl FnOnce() -> Output) -> (Output, Vec<String>) {
    let path = server().log_file();
    let start = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let out = f();
    let mut bytes = Vec::new();
    let mut file = std::fs::File::open(path).expect("server log");
    file.seek(SeekFrom::Start(start)).expect("seek server log");
    file.read_to_end(&mut bytes).expect("read server log");
    let text = String::from_utf8_lossy(&bytes);
    let tag = format!("database={db}");
    let lines = text
        .lines()
        .filter_map(|l| l.split_once("connection authorized: "))
        .map(|(_, rest)| rest.to_owned())
        .filter(|rest| rest.split(' ').any(|word| word == tag))
        .collect();
    (out, lines)
}

/// A TCP port on 127.0.0.1 whose listener never accepts and whose queue is
/// full, so a connection attempt waits until `connect_timeout` gives up.
pub struct Blackhole {
    _listener: std::net::TcpListener,
    _queued: Vec<std::net::TcpStream>,
    pub port: u16,
}

impl Blackhole {
    pub fn new() -> Blackhole {
        use std::os::fd::AsRawFd;
        use std::time::Duration;

        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        // SAFETY: listen on a socket this function owns; it only shrinks
        // the queue of pending connections.
        let shrunk = unsafe { libc::listen(listener.as_raw_fd(), 0) };
        assert_eq!(shrunk, 0, "listen(0)");
        let addr = listener.local_addr().expect("local address");
        let queued = (0..4)
            .filter_map(|_| {
                std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()
            })
            .collect();
        Blackhole {
            port: addr.port(),
            _listener: listener,
            _queued: queued,
        }
    }
}
