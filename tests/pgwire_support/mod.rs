//! Helpers shared by the pgwire integration tests: configurations resolved
//! hermetically (no environment, no home directory files) from a
//! connection string, and connecting with the blocking client.

#![allow(dead_code)]

use std::path::Path;

use pgwire::blocking::Client;
use pgwire::conninfo::{self, Config, Env};
use pgwire::{Connector, Error};

/// An environment with no `PG*` variables and an empty home directory.
pub fn env() -> Env {
    let home = std::env::temp_dir().join("pgwire-tests-empty-home");
    let _ = std::fs::create_dir_all(&home);
    Env::empty("root").with_passwd_home(home)
}

/// Resolves `conninfo` as libpq would, without consulting the process
/// environment.
pub fn config(conninfo: &str) -> Config {
    let options = conninfo::parse(conninfo).expect("valid connection string");
    conninfo::resolve(&options, &env()).expect("resolvable connection string")
}

pub fn connect(conninfo: &str) -> Result<Client, Error> {
    Client::connect(&config(conninfo))
}

/// Connects and returns the warnings too.
pub fn connect_warned(conninfo: &str) -> (Result<Client, Error>, Vec<String>) {
    let mut warnings = Vec::new();
    let result =
        Connector::new(&config(conninfo)).and_then(|c| Client::connect_with(&c, &mut warnings));
    (result, warnings)
}

/// The one value of a one-row, one-column query.
pub fn value(client: &mut Client, sql: &str) -> String {
    let rows = client.simple_query(sql).expect("query runs");
    rows[0][0].clone().expect("not null")
}

pub fn socket_dir(db: &pgbolt::tempdb::TempDb) -> &Path {
    db.socket_dir()
}

/// Whether `fd` has data to read right now.
pub fn readable(fd: std::os::fd::RawFd) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    unsafe { libc::poll(&mut pfd, 1, 0) == 1 }
}

/// One client of [`event_loop`]: connecting, then running queries.
enum LoopClient {
    Connecting(pgwire::Connecting),
    Running {
        conn: pgwire::Connection,
        done: u32,
        rows: usize,
    },
}

/// Where each client of [`event_loop`] stands, for a stall's
/// message.
fn describe(all: &[LoopClient]) -> String {
    let clients: Vec<String> = all
        .iter()
        .enumerate()
        .map(|(i, c)| match c {
            LoopClient::Connecting(_) => format!("{i}: connecting"),
            LoopClient::Running { done, rows, .. } => {
                format!("{i}: {done} queries done, {rows} rows")
            }
        })
        .collect();
    clients.join("; ")
}

/// After `silent_for` seconds without an event: a failure when a waiting
/// client's socket has data that no event announced (a lost wake-up, the
/// loop's own bug), or when the server has not answered for five minutes;
/// otherwise (a loaded machine's server answering late) what its backends
/// are doing, on stderr, and the loop waits on.
fn stalled(connector: &Connector, all: &[LoopClient], silent_for: u64) {
    let waiting: Vec<(usize, &pgwire::Connection)> = all
        .iter()
        .enumerate()
        .filter_map(|(i, c)| match c {
            LoopClient::Running { conn, .. } => Some((i, conn)),
            LoopClient::Connecting(_) => None,
        })
        .collect();
    for (i, conn) in &waiting {
        assert!(
            !readable(conn.fd()),
            "lost wake-up: client {i}'s socket has data that no event announced: {}",
            describe(all)
        );
    }
    let pids: Vec<String> = waiting
        .iter()
        .map(|(_, c)| c.backend_pid().to_string())
        .collect();
    let backends = pgwire::blocking::Client::connect_with(connector, &mut Vec::new())
        .and_then(|mut c| {
            c.simple_query(&format!(
                "SELECT pid, state, wait_event_type, wait_event, query \
                 FROM pg_stat_activity WHERE pid = ANY('{{{}}}'::int[])",
                pids.join(",")
            ))
        })
        .map(|rows| format!("{rows:?}"))
        .unwrap_or_else(|e| format!("(pg_stat_activity not read: {e})"));
    assert!(
        silent_for < 300,
        "the server left the loop without an answer for {silent_for} s: {}; its backends: {backends}",
        describe(all)
    );
    eprintln!("no event for {silent_for} s; the waiting clients' backends: {backends}");
}

/// Drives `clients` connections from one mio loop, as the benchmark engine
/// does (edge-triggered, one registration per socket), each running `sql`
/// `queries` times in a row; returns the rows each client saw.
pub fn event_loop(connector: &Connector, clients: usize, queries: u32, sql: &str) -> Vec<usize> {
    use mio::unix::SourceFd;
    use mio::{Events, Interest, Poll, Token};
    use pgwire::{ConnectProgress, Fill, Message};

    let mut poll = Poll::new().unwrap();
    let mut events = Events::with_capacity(64);
    let mut all: Vec<LoopClient> = (0..clients)
        .map(|_| LoopClient::Connecting(connector.connect()))
        .collect();
    let mut finished = 0;
    let mut silent_for = 0;
    let mut ready: Vec<usize> = (0..clients).collect();
    while finished < clients {
        for i in ready.drain(..) {
            let client = &mut all[i];
            if let LoopClient::Connecting(c) = client {
                // A full accept queue: this helper does not pace its
                // connections, it waits a moment and tries again.
                let progress = loop {
                    match c.poll().unwrap() {
                        ConnectProgress::Busy => {
                            std::thread::sleep(std::time::Duration::from_millis(1))
                        }
                        other => break other,
                    }
                };
                match progress {
                    ConnectProgress::Wait { fd, new_socket, .. } => {
                        if new_socket {
                            poll.registry()
                                .register(
                                    &mut SourceFd(&fd),
                                    Token(i),
                                    Interest::READABLE | Interest::WRITABLE,
                                )
                                .unwrap();
                        }
                        continue;
                    }
                    ConnectProgress::Busy => unreachable!("waited out above"),
                    ConnectProgress::Ready(mut conn) => {
                        conn.query(sql).unwrap();
                        assert!(conn.flush().unwrap());
                        *client = LoopClient::Running {
                            conn: *conn,
                            done: 0,
                            rows: 0,
                        };
                    }
                }
            }
            let LoopClient::Running { conn, done, rows } = client else {
                continue;
            };
            if *done == queries {
                continue;
            }
            loop {
                let fill = conn.fill().unwrap();
                let mut got_ready = false;
                while let Some(msg) = conn.next_message().unwrap() {
                    match msg {
                        Message::DataRow(_) => *rows += 1,
                        Message::ReadyForQuery(_) => got_ready = true,
                        Message::ErrorResponse(f) => panic!("{:?}", f.get(b'M')),
                        _ => {}
                    }
                }
                if got_ready {
                    *done += 1;
                    if *done == queries {
                        finished += 1;
                        break;
                    }
                    conn.query(sql).unwrap();
                    assert!(conn.flush().unwrap());
                }
                if fill != Fill::More {
                    break;
                }
            }
        }
        if finished < clients {
            poll.poll(&mut events, Some(std::time::Duration::from_secs(30)))
                .unwrap();
            if events.is_empty() {
                silent_for += 30;
                stalled(connector, &all, silent_for);
            } else {
                silent_for = 0;
            }
            ready.extend(events.iter().map(|e| e.token().0));
        }
    }
    all.into_iter()
        .map(|c| match c {
            LoopClient::Running { rows, .. } => rows,
            LoopClient::Connecting(_) => 0,
        })
        .collect()
}
