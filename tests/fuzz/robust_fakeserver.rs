//! A fake server on loopback that answers with random and truncated bytes,
//! during the startup and in the middle of a query: every case is an
//! error (or, when the bytes happen to form valid messages, a result),
//! never a panic or a hang. The real server is not the subject here: the
//! point is bytes no real server would send. Also run by `make fuzz` with
//! `PGBOLT_FUZZ_CASES`.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use pgwire::blocking::Client;
use pgwire::conninfo::{self, Env};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

fn cases() -> u32 {
    std::env::var("PGBOLT_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .map_or(64, |n| (n / 50).max(64))
}

fn message(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![tag];
    m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    m.extend_from_slice(body);
    m
}

/// A complete, valid startup answer: trust, parameters, key, ready.
fn handshake() -> Vec<u8> {
    [
        message(b'R', &0u32.to_be_bytes()),
        message(b'S', b"server_version\x0015.0\x00"),
        message(b'S', b"client_encoding\x00UTF8\x00"),
        message(b'K', &[0, 0, 0, 1, 0, 0, 0, 2]),
        message(b'Z', b"I"),
    ]
    .concat()
}

/// Reads the client's startup packet (or SSL request) and what follows
/// for a moment, then sends `answer` and closes.
fn serve(mut stream: TcpStream, answer: &[u8], after_query: bool) {
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    let mut len = [0u8; 4];
    if stream.read_exact(&mut len).is_err() {
        return;
    }
    let mut rest = vec![
        0u8;
        (u32::from_be_bytes(len) as usize)
            .saturating_sub(4)
            .min(10_000)
    ];
    let _ = stream.read_exact(&mut rest);
    if after_query {
        let _ = stream.write_all(&handshake());
        let mut query = [0u8; 5];
        let _ = stream.read_exact(&mut query);
    }
    let _ = stream.write_all(answer);
}

fn config(port: u16) -> pgwire::conninfo::Config {
    let options = conninfo::parse(&format!(
        "host=127.0.0.1 port={port} user=fuzz dbname=fuzz sslmode=disable connect_timeout=5"
    ))
    .expect("conninfo");
    conninfo::resolve(&options, &Env::empty("fuzz")).expect("resolve")
}

/// One exchange: the client connects (and, with `after_query`, runs a
/// query) against a server that answers `answer`.
fn exchange(answer: Vec<u8>, after_query: bool) -> bool {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server = std::thread::spawn(move || {
        if let Ok((stream, _)) = listener.accept() {
            serve(stream, &answer, after_query);
        }
    });
    let outcome = match Client::connect(&config(port)) {
        Ok(mut client) if after_query => client.simple_query("SELECT 1").is_ok(),
        Ok(_) => true,
        Err(e) => {
            let _ = e.to_string();
            false
        }
    };
    let _ = server.join();
    outcome
}

/// Valid messages cut short, garbage, or a mix.
fn answer() -> impl Strategy<Value = Vec<u8>> {
    let garbage = prop::collection::vec(any::<u8>(), 0..200);
    let cut = (0usize..200).prop_map(|n| {
        let mut h = handshake();
        h.truncate(n);
        h
    });
    let spliced = (0usize..60, prop::collection::vec(any::<u8>(), 0..40)).prop_map(|(n, junk)| {
        let mut h = handshake();
        h.truncate(n);
        h.extend_from_slice(&junk);
        h
    });
    prop_oneof![garbage, cut, spliced]
}

#[test]
fn random_startup_answers_are_errors_never_panics() {
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&answer(), |bytes| {
            let whole = bytes.len() >= handshake().len() && bytes.starts_with(&handshake());
            let connected = exchange(bytes, false);
            prop_assert!(whole || !connected, "connected on an incomplete answer");
            Ok(())
        })
        .unwrap();
}

#[test]
fn random_answers_to_a_query_are_errors_never_panics() {
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&prop::collection::vec(any::<u8>(), 0..200), |bytes| {
            prop_assert!(!exchange(bytes, true), "a query succeeded on garbage");
            Ok(())
        })
        .unwrap();
}

/// Answers that once needed care: an announced length of 4 GB, an
/// authentication request of an unknown kind, an error during startup.
#[test]
fn startup_regressions() {
    let cases: Vec<Vec<u8>> = vec![
        b"R\xff\xff\xff\xff".to_vec(),
        message(b'R', &99u32.to_be_bytes()),
        message(b'E', b"SFATAL\0C28000\0Mno\0\0"),
        message(b'R', &10u32.to_be_bytes()),
        b"N".to_vec(),
    ];
    for case in cases {
        assert!(!exchange(case, false));
    }
}

/// A server on a Unix socket that sends its whole startup answer as soon
/// as it accepts, before reading anything, and answers every simple query
/// with `SELECT 1`'s completion.
fn eager_server(dir: &std::path::Path) -> std::thread::JoinHandle<()> {
    use std::os::unix::net::{UnixListener, UnixStream};
    let listener = UnixListener::bind(dir.join(".s.PGSQL.5432")).expect("bind");
    fn answer(mut stream: UnixStream) {
        let _ = stream.write_all(&handshake());
        let _ = stream.set_read_timeout(Some(Duration::from_secs(20)));
        let mut len = [0u8; 4];
        if stream.read_exact(&mut len).is_err() {
            return;
        }
        let mut startup = vec![0u8; (u32::from_be_bytes(len) as usize).saturating_sub(4)];
        let _ = stream.read_exact(&mut startup);
        let mut header = [0u8; 5];
        while stream.read_exact(&mut header).is_ok() {
            let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
            let mut body = vec![0u8; len.saturating_sub(4)];
            if stream.read_exact(&mut body).is_err() || header[0] == b'X' {
                return;
            }
            if header[0] == b'Q' {
                let reply = [message(b'C', b"SELECT 1\0"), message(b'Z', b"I")].concat();
                let _ = stream.write_all(&reply);
            }
        }
    }
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || answer(stream));
        }
    })
}

/// Regression: a connection over a Unix socket whose every answer was
/// already there when read was established without ever waiting, so the
/// engine never registered its socket with the poller and the client
/// waited forever for the results of its first query (seen with SCRAM on
/// a busy machine). The eager server makes that likely; each run must end.
/// The monitor is not the subject: against this server, whose answers to
/// its queries are empty, it made each run wait about 5 s at its end.
#[test]
fn connection_made_without_waiting_is_still_watched() {
    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("one.sql");
    std::fs::write(&script, "SELECT 1;\n").expect("write script");
    let _server = eager_server(dir.path());
    for attempt in 0..20 {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_pgbolt"))
            .args([
                "-n",
                "--no-preflight",
                "--no-monitor",
                "-t",
                "2",
                "-c",
                "2",
                "-f",
            ])
            .arg(&script)
            .env("PGHOST", dir.path())
            .env("PGPORT", "5432")
            .env("PGUSER", "fuzz")
            .env("PGDATABASE", "fuzz")
            .env_remove("PGPASSWORD")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("pgbolt starts");
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break status;
            }
            if started.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                panic!("attempt {attempt}: pgbolt hung on its first query");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let mut out = String::new();
        let _ = child
            .stdout
            .take()
            .expect("stdout")
            .read_to_string(&mut out);
        assert!(status.success(), "attempt {attempt}: {out}");
        assert!(
            out.contains("number of transactions actually processed: 4/4"),
            "attempt {attempt}: {out}"
        );
    }
}
