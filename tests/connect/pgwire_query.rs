//! Sessions at work against a real server: query errors with SQLSTATE,
//! COPY FROM STDIN (text and binary), prepared statements, pipelining, and
//! many connections driven from one thread by a mio event loop, the way the
//! benchmark engine drives them.

use std::time::Duration;

use pgwire::{Connection, Connector, Fill, Interest, Message};

use crate::common::server;
use crate::pgwire_support::{config, connect, value};

fn conninfo() -> String {
    format!(
        "host={} port={} user=postgres dbname=postgres",
        server().socket_dir().display(),
        server().port()
    )
}

#[test]
fn a_query_error_carries_its_sqlstate_and_the_session_survives() {
    let mut client = connect(&conninfo()).unwrap();
    let err = client
        .simple_query("SELECT * FROM no_such_table")
        .unwrap_err();
    assert_eq!(err.sqlstate(), Some("42P01"));
    assert_eq!(
        err.to_string(),
        "ERROR:  relation \"no_such_table\" does not exist"
    );
    let db_error = err.db_error().unwrap();
    assert_eq!(db_error.position, Some(15));
    assert_eq!(db_error.severity_nonlocalized.as_deref(), Some("ERROR"));

    let err = client.execute("SELECT 1/0").unwrap_err();
    assert_eq!(err.sqlstate(), Some("22012"));
    assert_eq!(value(&mut client, "SELECT 41 + 1"), "42");
}

/// Regression: a FATAL error followed by the server closing the connection
/// came back as "server closed the connection unexpectedly" alone; libpq
/// (and so pgbench) shows the FATAL message, then those lines.
#[test]
fn a_fatal_error_before_the_server_closes_is_kept() {
    let mut client = connect(&conninfo()).unwrap();
    let sql = "SELECT pg_terminate_backend(pg_backend_pid())";
    let err = client.execute(sql).unwrap_err();
    assert_eq!(err.sqlstate(), Some("57P01"));
    assert!(err.closed_after());
    let expected = "FATAL:  terminating connection due to administrator command\n\
        server closed the connection unexpectedly\n\
        \tThis probably means the server terminated abnormally\n\
        \tbefore or while processing the request.";
    assert_eq!(err.to_string(), expected);
    assert_eq!(
        pgwire::libpq_text::query_failure(&err, Some(sql)),
        format!("{expected}\n")
    );
}

#[test]
fn copy_in_of_100k_rows_in_text_and_binary() {
    let mut client = connect(&conninfo()).unwrap();
    client
        .execute("CREATE TEMP TABLE t (id int, name text)")
        .unwrap();
    let mut copy = client.copy_in("COPY t FROM STDIN").unwrap();
    let mut chunk = String::new();
    for i in 0..100_000 {
        chunk.push_str(&format!("{i}\tname {i}\n"));
        if chunk.len() > 10_000 {
            copy.write(chunk.as_bytes()).unwrap();
            chunk.clear();
        }
    }
    copy.write(chunk.as_bytes()).unwrap();
    assert_eq!(copy.finish().unwrap(), 100_000);
    assert_eq!(value(&mut client, "SELECT count(*) FROM t"), "100000");
    assert_eq!(value(&mut client, "SELECT sum(id) FROM t"), "4999950000");

    let mut binary = b"PGCOPY\n\xff\r\n\0".to_vec();
    binary.extend_from_slice(&[0; 8]);
    for i in 0..1000i32 {
        binary.extend_from_slice(&2i16.to_be_bytes());
        binary.extend_from_slice(&4i32.to_be_bytes());
        binary.extend_from_slice(&(-i).to_be_bytes());
        binary.extend_from_slice(&(-1i32).to_be_bytes());
    }
    binary.extend_from_slice(&(-1i16).to_be_bytes());
    let mut copy = client.copy_in("COPY t FROM STDIN (FORMAT binary)").unwrap();
    for piece in binary.chunks(777) {
        copy.write(piece).unwrap();
    }
    assert_eq!(copy.finish().unwrap(), 1000);
    assert_eq!(
        value(
            &mut client,
            "SELECT count(*) FROM t WHERE id <= 0 AND name IS NULL"
        ),
        "1000"
    );

    let copy = client.copy_in("COPY t FROM STDIN").unwrap();
    let err = copy.fail("client gave up").unwrap_err();
    assert_eq!(err.sqlstate(), Some("57014"));
    let mut bad = client.copy_in("COPY t FROM STDIN").unwrap();
    bad.write(b"not a number\tx\n").unwrap();
    assert_eq!(bad.finish().unwrap_err().sqlstate(), Some("22P02"));
    assert_eq!(value(&mut client, "SELECT count(*) FROM t"), "101000");
}

#[test]
fn prepared_statements_with_text_parameters_and_nulls() {
    let mut client = connect(&conninfo()).unwrap();
    client
        .prepare("add", "SELECT $1::int + $2::int, $3::text IS NULL")
        .unwrap();
    let rows = client
        .query_prepared("add", &[Some("40"), Some("2"), None])
        .unwrap();
    assert_eq!(rows, vec![vec![Some("42".into()), Some("t".into())]]);
    let err = client.query_prepared("missing", &[]).unwrap_err();
    assert_eq!(err.sqlstate(), Some("26000"));
}

#[test]
fn a_null_parameter_sends_nothing_its_writer_appended() {
    let mut conn = connect(&conninfo()).unwrap().into_connection();
    conn.parse("", "SELECT $1::text IS NULL, $2::text", &[])
        .unwrap();
    let write = |i: usize, out: &mut Vec<u8>| {
        out.extend_from_slice(b"dropped");
        i == 1
    };
    conn.bind_execute("", 2, write, false, true).unwrap();
    while !conn.flush().unwrap() {
        pgwire::blocking::wait(conn.fd(), Interest::Write, None).unwrap();
    }
    let mut row = Vec::new();
    loop {
        while let Some(msg) = conn.next_message().unwrap() {
            match msg {
                Message::DataRow(r) => {
                    row = r
                        .columns()
                        .map(|c| c.unwrap().map(<[u8]>::to_vec))
                        .collect();
                }
                Message::ErrorResponse(f) => panic!("{:?}", f.get(b'M')),
                Message::ReadyForQuery(_) => {
                    assert_eq!(row, vec![Some(b"t".to_vec()), Some(b"dropped".to_vec())]);
                    return;
                }
                _ => {}
            }
        }
        if conn.fill().unwrap() == Fill::WouldBlock {
            pgwire::blocking::wait(conn.fd(), Interest::Read, None).unwrap();
        }
    }
}

#[test]
fn parameter_status_updates_are_tracked() {
    let mut client = connect(&(conninfo() + " application_name=first")).unwrap();
    assert_eq!(client.parameter("application_name"), Some("first"));
    assert!(client.parameter("server_version").is_some());
    client.execute("SET application_name = 'second'").unwrap();
    assert_eq!(client.parameter("application_name"), Some("second"));
}

/// Reads until ReadyForQuery with blocking waits; returns (rows, errors).
fn drain(conn: &mut Connection) -> (usize, Vec<String>) {
    let (mut rows, mut errors) = (0, Vec::new());
    loop {
        while let Some(msg) = conn.next_message().unwrap() {
            match msg {
                Message::DataRow(_) => rows += 1,
                Message::ErrorResponse(f) => errors.push(f.get(b'C').unwrap_or("").to_owned()),
                Message::ReadyForQuery(_) => return (rows, errors),
                _ => {}
            }
        }
        if conn.fill().unwrap() == Fill::WouldBlock {
            pgwire::blocking::wait(conn.fd(), Interest::Read, None).unwrap();
        }
    }
}

#[test]
fn many_messages_pipelined_before_one_sync() {
    let mut conn = connect(&conninfo()).unwrap().into_connection();
    conn.parse("s", "SELECT generate_series(1, $1::int)", &[])
        .unwrap();
    for n in 1..=200 {
        let write = |_, out: &mut Vec<u8>| {
            out.extend_from_slice(n.to_string().as_bytes());
            true
        };
        conn.bind_execute("s", 1, write, n % 2 == 0, false).unwrap();
    }
    conn.sync();
    while !conn.flush().unwrap() {
        pgwire::blocking::wait(conn.fd(), Interest::Write, None).unwrap();
    }
    let (rows, errors) = drain(&mut conn);
    assert_eq!(rows, (1..=200).sum::<usize>());
    assert!(errors.is_empty());

    // An error skips the rest up to Sync; the next batch runs normally.
    conn.query("SELECT 1; SELECT 1/0; SELECT 2").unwrap();
    conn.query("SELECT 3").unwrap();
    conn.flush().unwrap();
    assert_eq!(drain(&mut conn), (1, vec!["22012".to_string()]));
    assert_eq!(drain(&mut conn), (1, vec![]));
}

#[test]
fn a_plain_session_can_be_cancelled() {
    let mut conn = connect(&conninfo()).unwrap().into_connection();
    conn.query("SELECT pg_sleep(30)").unwrap();
    conn.flush().unwrap();
    let token = conn.cancel_token();
    assert_eq!(token.process_id(), conn.backend_pid());
    let (mut rows, mut errors) = (0, Vec::new());
    for _ in 0..100 {
        std::thread::sleep(Duration::from_millis(100));
        token.cancel().unwrap();
        if crate::pgwire_support::readable(conn.fd()) {
            (rows, errors) = drain(&mut conn);
            break;
        }
    }
    assert_eq!((rows, errors), (0, vec!["57014".to_string()]));
}

#[test]
fn fifty_connections_from_one_mio_loop() {
    let connector = Connector::new(&config(&conninfo())).unwrap();
    let rows =
        crate::pgwire_support::event_loop(&connector, 50, 20, "SELECT generate_series(1, 3)");
    assert_eq!(rows, vec![20 * 3; 50]);
}

#[test]
fn copy_from_stdin_outside_copy_in_fails_without_hanging() {
    let mut client = connect(&conninfo()).unwrap();
    client.execute("CREATE TEMP TABLE c (x int)").unwrap();
    let err = client.execute("COPY c FROM STDIN").unwrap_err();
    assert_eq!(err.sqlstate(), Some("57014"), "{err}");
    assert!(err
        .to_string()
        .contains("COPY FROM STDIN is not supported by this call"));
    let out = client.simple_query("COPY (SELECT 1) TO STDOUT").unwrap();
    assert!(out.is_empty());
    assert_eq!(value(&mut client, "SELECT 7"), "7");
}

/// External I/O, as pgbolt's io_uring driver does it: the caller sends what
/// `take_output` hands over and receives into `recv_target` itself; the
/// connection frames the same messages, makes no system call of its own in
/// `flush` and `fill`, and reports the end of the stream from `fill`.
#[test]
fn external_io_frames_what_the_driver_reads() {
    let mut conn = connect(&conninfo()).unwrap().into_connection();
    assert!(conn.set_external_io(true));
    conn.query("SELECT 1; SELECT 1/0").unwrap();
    assert!(
        !conn.flush().unwrap(),
        "flush leaves the output to the driver"
    );
    let mut out = bytes::BytesMut::new();
    conn.take_output(&mut out);
    assert_eq!(conn.pending_output(), 0);
    let fd = conn.fd();
    let mut sent = 0;
    while sent < out.len() {
        pgwire::blocking::wait(fd, Interest::Write, None).unwrap();
        // SAFETY: the slice is valid for reads of its length.
        let n = unsafe { libc::send(fd, out[sent..].as_ptr().cast(), out.len() - sent, 0) };
        assert!(n > 0, "send: {}", std::io::Error::last_os_error());
        sent += n as usize;
    }
    let (mut rows, mut errors) = (0, Vec::new());
    'reading: loop {
        assert_eq!(conn.fill().unwrap(), Fill::WouldBlock);
        pgwire::blocking::wait(fd, Interest::Read, None).unwrap();
        let target = conn.recv_target();
        // SAFETY: the target is valid for writes of its length.
        let n = unsafe { libc::recv(fd, target.as_mut_ptr().cast(), target.len(), 0) };
        assert!(n > 0, "recv: {}", std::io::Error::last_os_error());
        conn.received(Ok(n as usize));
        while let Some(msg) = conn.next_message().unwrap() {
            match msg {
                Message::DataRow(_) => rows += 1,
                Message::ErrorResponse(f) => errors.push(f.get(b'C').unwrap_or("").to_owned()),
                Message::ReadyForQuery(_) => break 'reading,
                _ => {}
            }
        }
    }
    assert_eq!((rows, errors), (1, vec!["22012".to_owned()]));
    conn.received(Ok(0));
    let err = conn.fill().unwrap_err();
    assert!(err.to_string().contains("closed"), "{err}");
}
