//! Connecting to real throwaway servers: authentication methods, libpq's
//! error messages, host lists, URIs, `.pgpass`, `target_session_attrs` and
//! `connect_timeout`.

use std::io::Write;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::sync::OnceLock;

use pgbolt::tempdb::{AuthMethod, PasswordEncryption, TempDb};
use pgwire::ErrorKind;

use crate::common::server;
use crate::pgwire_support::{connect, connect_warned, value};

fn md5_server() -> &'static TempDb {
    static DB: OnceLock<TempDb> = OnceLock::new();
    DB.get_or_init(|| {
        TempDb::builder()
            .tcp(true)
            .host_auth(AuthMethod::Md5)
            .local_auth(AuthMethod::Password)
            .password_encryption(PasswordEncryption::Md5)
            .user("alice", "secret")
            .start()
            .expect("md5 server starts")
    })
}

fn scram_server() -> &'static TempDb {
    static DB: OnceLock<TempDb> = OnceLock::new();
    DB.get_or_init(|| {
        TempDb::builder()
            .tcp(true)
            .auth(AuthMethod::ScramSha256)
            .user("alice", "secret")
            .start()
            .expect("scram server starts")
    })
}

fn read_only_server() -> &'static TempDb {
    static DB: OnceLock<TempDb> = OnceLock::new();
    DB.get_or_init(|| {
        TempDb::builder()
            .tcp(true)
            .setting("default_transaction_read_only", "on")
            .start()
            .expect("read-only server starts")
    })
}

fn tcp(db: &TempDb) -> String {
    format!("host=127.0.0.1 port={} dbname=postgres", db.port())
}

fn unix(db: &TempDb) -> String {
    format!(
        "host={} port={} dbname=postgres",
        db.socket_dir().display(),
        db.port()
    )
}

/// A port nothing listens on.
fn dead_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn each_auth_method_takes_the_right_password_and_refuses_a_wrong_one() {
    // (server, how to reach it, require_auth proving the method, password)
    let cases: Vec<(&TempDb, String, &str)> = vec![
        (md5_server(), tcp(md5_server()), "md5"),
        (md5_server(), unix(md5_server()), "password"),
        (
            scram_server(),
            tcp(scram_server()) + " sslmode=disable",
            "scram-sha-256",
        ),
        (scram_server(), unix(scram_server()), "scram-sha-256"),
    ];
    for (_, target, method) in &cases {
        let good = format!("{target} user=alice password=secret require_auth={method}");
        let mut client = connect(&good).unwrap_or_else(|e| panic!("{good}: {e}"));
        assert_eq!(value(&mut client, "SELECT current_user"), "alice");

        let bad = format!("{target} user=alice password=wrong");
        let err = connect(&bad).expect_err("wrong password accepted");
        assert!(
            err.to_string()
                .ends_with("failed: FATAL:  password authentication failed for user \"alice\""),
            "{bad}: {err}"
        );
        assert_eq!(err.sqlstate(), Some("28P01"), "{bad}");

        let none = format!("{target} user=alice");
        let err = connect(&none).expect_err("no password accepted");
        assert!(
            err.to_string()
                .ends_with("fe_sendauth: no password supplied"),
            "{err}"
        );
    }
    let mut trusted = connect(&(tcp(server()) + " user=postgres require_auth=none")).unwrap();
    assert_eq!(value(&mut trusted, "SELECT 1"), "1");
}

#[test]
fn channel_binding_required_refuses_an_md5_request() {
    // libpq's words: an MD5 request can never bind the channel.
    let conninfo =
        tcp(md5_server()) + " sslmode=disable user=alice password=secret channel_binding=require";
    let err = connect(&conninfo).unwrap_err();
    assert!(
        err.to_string().ends_with(
            "channel binding required but not supported by server's authentication request"
        ),
        "{err}"
    );
    assert_eq!(err.attempts_made()[0].error.kind(), ErrorKind::Auth);
}

#[test]
fn require_auth_refuses_other_methods() {
    let conninfo =
        tcp(scram_server()) + " sslmode=disable user=alice password=secret require_auth=md5";
    let err = connect(&conninfo).unwrap_err();
    assert!(
        err.to_string().ends_with(
            "authentication method requirement \"md5\" failed: server requested SASL authentication"
        ),
        "{err}"
    );
    let err = connect(&(tcp(server()) + " user=postgres require_auth=password")).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("server did not complete authentication"),
        "{err}"
    );
}

#[test]
fn messages_match_libpq() {
    let port = dead_port();
    let cases: Vec<(String, String)> = vec![
        (
            "host=/nonexistent/dir port=5432".into(),
            "connection to server on socket \"/nonexistent/dir/.s.PGSQL.5432\" failed: No such \
             file or directory\n\tIs the server running locally and accepting connections on \
             that socket?"
                .into(),
        ),
        (
            format!("host=127.0.0.1 port={port} sslmode=disable"),
            format!(
                "connection to server at \"127.0.0.1\", port {port} failed: Connection \
                 refused\n\tIs the server running on that host and accepting TCP/IP connections?"
            ),
        ),
        // With `hostaddr`, libpq names the address alone: the host name,
        // or a socket directory given as host, is not shown.
        (
            format!("host=db.invalid hostaddr=127.0.0.1 port={port}"),
            format!(
                "connection to server at \"127.0.0.1\", port {port} failed: \
                 Connection refused\n\tIs the server running on that host and accepting TCP/IP \
                 connections?"
            ),
        ),
        // libpq's limit on socket paths (107 bytes with `/.s.PGSQL.N`).
        (
            format!("host=/tmp/{} port=5432", "d".repeat(92)),
            format!(
                "Unix-domain socket path \"/tmp/{}/.s.PGSQL.5432\" is too long (maximum 107 \
                 bytes)",
                "d".repeat(92)
            ),
        ),
        (
            format!("host=@{} port=5432", "d".repeat(96)),
            format!(
                "Unix-domain socket path \"@{}/.s.PGSQL.5432\" is too long (maximum 107 bytes)",
                "d".repeat(96)
            ),
        ),
        // A socket option the system refuses (0 is EINVAL for these).
        (
            format!("host=127.0.0.1 port={port} keepalives_idle=0"),
            format!(
                "connection to server at \"127.0.0.1\", port {port} failed: \
                 setsockopt(TCP_KEEPIDLE) failed: Invalid argument"
            ),
        ),
        (
            format!("host=127.0.0.1 port={port} keepalives_count=-3"),
            format!(
                "connection to server at \"127.0.0.1\", port {port} failed: \
                 setsockopt(TCP_KEEPCNT) failed: Invalid argument"
            ),
        ),
        (
            format!("host=/tmp hostaddr=127.0.0.1 port={port}"),
            format!(
                "connection to server at \"127.0.0.1\", port {port} failed: \
                 Connection refused\n\tIs the server running on that host and accepting TCP/IP \
                 connections?"
            ),
        ),
        (
            format!(
                "host={} port={} user=postgres dbname=nope",
                server().socket_dir().display(),
                server().port()
            ),
            format!(
                "connection to server on socket \"{}/.s.PGSQL.{}\" failed: FATAL:  database \
                 \"nope\" does not exist",
                server().socket_dir().display(),
                server().port()
            ),
        ),
    ];
    for (conninfo, want) in cases {
        let err = connect(&conninfo).expect_err("connection must fail");
        assert_eq!(err.to_string(), want, "{conninfo}");
    }
    // The resolver's reason varies with the system; the frame does not.
    let err = connect("host=no-such-host.invalid port=5432").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("could not translate host name \"no-such-host.invalid\" to address: "),
        "{err}"
    );
}

#[test]
fn a_host_list_skips_a_dead_host_and_keeps_its_error() {
    let db = server();
    let dead = dead_port();
    let conninfo = format!(
        "host=127.0.0.1,127.0.0.1 port={dead},{} user=postgres dbname=postgres sslmode=disable",
        db.port()
    );
    let mut client = connect(&conninfo).unwrap();
    assert_eq!(value(&mut client, "SHOW port"), db.port().to_string());

    let both_dead = format!("host=127.0.0.1,/nonexistent port={dead},{dead} sslmode=disable");
    let err = connect(&both_dead).unwrap_err();
    let text = err.to_string();
    assert_eq!(err.attempts_made().len(), 2, "{text}");
    let first = text.find("connection to server at \"127.0.0.1\"").unwrap();
    let second = text
        .find("connection to server on socket \"/nonexistent")
        .unwrap();
    assert!(first < second, "{text}");
}

#[test]
fn a_uri_can_name_a_socket_directory() {
    let db = server();
    let dir = db.socket_dir().display().to_string();
    let encoded = dir.replace('/', "%2F");
    for uri in [
        format!("postgresql://postgres@{encoded}:{}/postgres", db.port()),
        format!(
            "postgresql:///postgres?host={dir}&port={}&user=postgres",
            db.port()
        ),
    ] {
        let options = pgwire::conninfo::parse(&uri).unwrap();
        let config = pgwire::conninfo::resolve(&options, &crate::pgwire_support::env()).unwrap();
        let mut client =
            pgwire::blocking::Client::connect(&config).unwrap_or_else(|e| panic!("{uri}: {e}"));
        assert_eq!(value(&mut client, "SELECT current_database()"), "postgres");
    }
}

#[test]
fn target_session_attrs_picks_the_right_server() {
    let ro = read_only_server();
    let rw = server();
    let list = format!(
        "host=127.0.0.1,127.0.0.1 port={},{} user=postgres dbname=postgres",
        ro.port(),
        rw.port()
    );
    let cases = [
        ("read-write", Some(rw.port())),
        ("read-only", Some(ro.port())),
        ("any", Some(ro.port())),
        ("primary", Some(ro.port())),
        ("prefer-standby", Some(ro.port())),
        ("standby", None),
    ];
    for (attrs, want) in cases {
        let conninfo = format!("{list} target_session_attrs={attrs}");
        match (connect(&conninfo), want) {
            (Ok(mut c), Some(port)) => {
                assert_eq!(value(&mut c, "SHOW port"), port.to_string(), "{attrs}")
            }
            (Err(e), None) => {
                assert_eq!(e.attempts_made().len(), 2, "{e}");
                assert!(
                    e.to_string()
                        .ends_with("failed: server is not in hot standby mode"),
                    "{e}"
                );
            }
            (got, _) => panic!("{attrs}: {got:?}"),
        }
    }
    let only_ro = format!("{} user=postgres target_session_attrs=read-write", tcp(ro));
    let err = connect(&only_ro).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connect);
    assert!(
        err.to_string().ends_with("failed: session is read-only"),
        "{err}"
    );
}

#[test]
fn connect_timeout_gives_up_on_a_server_that_never_answers() {
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let conninfo = format!("host=127.0.0.1 port={port} connect_timeout=1 sslmode=disable");
    let err = connect(&conninfo).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("connection to server at \"127.0.0.1\", port {port} failed: timeout expired")
    );
    drop(silent);
}

#[test]
fn pgpass_is_used_and_ignored_when_others_can_read_it() {
    let db = md5_server();
    let dir = tempfile::tempdir().unwrap();
    let passfile = dir.path().join("pgpass");
    let mut f = std::fs::File::create(&passfile).unwrap();
    writeln!(f, "127.0.0.1:{}:*:alice:secret", db.port()).unwrap();
    drop(f);
    let conninfo = format!("{} user=alice passfile={}", tcp(db), passfile.display());

    std::fs::set_permissions(&passfile, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (client, warnings) = connect_warned(&conninfo);
    assert_eq!(value(&mut client.unwrap(), "SELECT current_user"), "alice");
    assert!(warnings.is_empty(), "{warnings:?}");

    std::fs::set_permissions(&passfile, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (client, warnings) = connect_warned(&conninfo);
    let err = client.unwrap_err();
    assert!(
        err.to_string()
            .ends_with("fe_sendauth: no password supplied"),
        "{err}"
    );
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("has group or world access"),
        "{}",
        warnings[0]
    );
}

/// A peer that answers the startup message with bytes no server sends.
fn garbage_peer(reply: &'static [u8]) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        if let Ok((mut sock, _)) = listener.accept() {
            let mut startup = [0u8; 256];
            let _ = std::io::Read::read(&mut sock, &mut startup);
            let _ = sock.write_all(reply);
        }
    });
    port
}

#[test]
fn garbage_from_the_server_is_an_error_not_a_panic() {
    let cases: [(&'static [u8], &str); 4] = [
        (b"HTTP/1.1 400 Bad Request\r\n\r\n", "too large"),
        (b"R\xff\xff\xff\xff", "too large"),
        (
            b"R\0\0\0\x08\0\0\0",
            "server closed the connection unexpectedly",
        ),
        (b"Z\0\0\0\x05Q", "unexpected transaction status"),
    ];
    for (reply, want) in cases {
        let port = garbage_peer(reply);
        let conninfo = format!("host=127.0.0.1 port={port} sslmode=disable connect_timeout=5");
        let err = connect(&conninfo).unwrap_err();
        assert!(err.to_string().contains(want), "{reply:?}: {err}");
    }
}

/// `PGDATESTYLE`, `PGTZ` and `PGGEQO` reach the server as settings, as
/// libpq sends them; a bad value fails the connection with the server's
/// error, and `default` sends nothing.
#[test]
fn environment_settings_reach_the_server() {
    let db = server();
    let conninfo = unix(db) + " user=postgres";
    let options = pgwire::conninfo::parse(&conninfo).unwrap();
    let with = |vars: &[(&str, &str)]| {
        let env = vars
            .iter()
            .fold(crate::pgwire_support::env(), |e, (k, v)| e.with_var(k, v));
        let config = pgwire::conninfo::resolve(&options, &env).unwrap();
        pgwire::blocking::Client::connect(&config)
    };
    let mut client = with(&[
        ("PGDATESTYLE", "German"),
        ("PGTZ", "Asia/Tokyo"),
        ("PGGEQO", "off"),
    ])
    .unwrap();
    assert_eq!(value(&mut client, "SHOW datestyle"), "German, DMY");
    assert_eq!(value(&mut client, "SHOW timezone"), "Asia/Tokyo");
    assert_eq!(value(&mut client, "SHOW geqo"), "off");
    let mut client = with(&[("PGGEQO", "default")]).unwrap();
    assert_eq!(value(&mut client, "SHOW geqo"), "on");

    let cases = [
        (
            "PGTZ",
            "Mars/Olympus",
            "invalid value for parameter \"TimeZone\": \"Mars/Olympus\"",
        ),
        (
            "PGGEQO",
            "maybe",
            "parameter \"geqo\" requires a Boolean value",
        ),
    ];
    for (var, bad, want) in cases {
        let err = with(&[(var, bad)]).expect_err("bad setting accepted");
        assert!(
            err.to_string().ends_with(&format!("FATAL:  {want}")),
            "{var}: {err}"
        );
    }
}

/// libpq retries once without `application_name` when the server answers
/// the startup with SQLSTATE 42704 (servers before 9.0 refused the name);
/// today that is an unknown setting in `options`, and both failures are
/// reported, as pgbench shows them.
#[test]
fn an_unknown_setting_in_options_is_tried_twice_when_an_application_name_is_sent() {
    let db = server();
    let socket = format!(
        "connection to server on socket \"{}/.s.PGSQL.{}\" failed: FATAL:  unrecognized \
         configuration parameter \"no_such_setting\"",
        db.socket_dir().display(),
        db.port()
    );
    let base = unix(db) + " user=postgres options='-c no_such_setting=1'";
    let cases = [
        (base.clone(), vec![socket.clone()]),
        (
            base.clone() + " fallback_application_name=pgbolt",
            vec![socket.clone(), socket.clone()],
        ),
        (base + " application_name=x", vec![socket.clone(), socket]),
    ];
    for (conninfo, want) in cases {
        let err = connect(&conninfo).expect_err("unknown setting accepted");
        assert_eq!(err.to_string(), want.join("\n"), "{conninfo}");
    }
}

/// A wrong password taken from the password file gets libpq's line naming
/// the file; a wrong password given explicitly does not.
#[test]
fn a_wrong_password_from_the_password_file_names_the_file() {
    let db = md5_server();
    let dir = tempfile::tempdir().unwrap();
    let passfile = dir.path().join("pgpass");
    std::fs::write(&passfile, "*:*:*:alice:wrong\n").unwrap();
    std::fs::set_permissions(&passfile, std::fs::Permissions::from_mode(0o600)).unwrap();
    let failed = "failed: FATAL:  password authentication failed for user \"alice\"";

    let from_file = format!("{} user=alice passfile={}", tcp(db), passfile.display());
    let err = connect(&from_file).unwrap_err();
    assert!(
        err.to_string().ends_with(&format!(
            "{failed}\npassword retrieved from file \"{}\"",
            passfile.display()
        )),
        "{err}"
    );
    assert_eq!(err.sqlstate(), Some("28P01"));

    let explicit = from_file + " password=wrong";
    let err = connect(&explicit).unwrap_err();
    assert!(err.to_string().ends_with(failed), "{err}");
}

/// A host starting with `@` is a socket in Linux's abstract namespace, as
/// in libpq: a name nobody listens on is refused (there is no file to be
/// missing), and a listening one is reached.
#[test]
fn an_at_sign_host_names_an_abstract_socket() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener};

    let dir = format!("pgbolt-test-{}", std::process::id());
    let err = connect(&format!("host=@{dir}-nobody port=5432")).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "connection to server on socket \"@{dir}-nobody/.s.PGSQL.5432\" failed: Connection \
             refused\n\tIs the server running locally and accepting connections on that socket?"
        )
    );

    let name = format!("{dir}/.s.PGSQL.5432");
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = UnixListener::bind_addr(&addr).unwrap();
    let peer = std::thread::spawn(move || listener.accept().is_ok());
    let err = connect(&format!("host=@{dir} port=5432")).unwrap_err();
    assert!(peer.join().unwrap(), "the abstract socket was not reached");
    assert!(
        err.to_string().starts_with(&format!(
            "connection to server on socket \"@{name}\" failed: "
        )),
        "{err}"
    );
}

/// A Unix socket at `path` whose accept queue holds one connection, and
/// that connection, made by `connector`: the next attempt finds the queue
/// full. The listener never accepts by itself.
fn full_listener(
    path: &std::path::Path,
    connector: &pgwire::Connector,
) -> (std::os::unix::net::UnixListener, pgwire::Connecting) {
    use std::os::fd::AsRawFd;

    let listener = std::os::unix::net::UnixListener::bind(path).unwrap();
    // SAFETY: listen again on a listening socket, to shrink its queue to
    // one connection.
    assert_eq!(unsafe { libc::listen(listener.as_raw_fd(), 0) }, 0);
    let mut first = connector.connect();
    assert!(matches!(
        first.poll().unwrap(),
        pgwire::ConnectProgress::Wait { .. }
    ));
    (listener, first)
}

/// Regression (issue 24): a Unix socket whose accept queue is full made
/// `connect` fail with EAGAIN, reported as "Resource temporarily
/// unavailable" where libpq's blocking connect waits. It is now
/// `ConnectProgress::Busy`: the same attempt tries again once the listener
/// has taken a connection from its queue, and `connect_timeout` still ends
/// an attempt that never gets in.
#[test]
fn a_full_accept_queue_on_a_unix_socket_is_busy_until_the_listener_accepts() {
    use pgwire::ConnectProgress;

    let dir = tempfile::tempdir().unwrap();
    let config = crate::pgwire_support::config(&format!(
        "host={} port=5432 user=u dbname=d connect_timeout=2",
        dir.path().display()
    ));
    let connector = pgwire::Connector::new(&config).unwrap();
    let (listener, _first) = full_listener(&dir.path().join(".s.PGSQL.5432"), &connector);
    let mut second = connector.connect();
    assert!(matches!(second.poll().unwrap(), ConnectProgress::Busy));
    assert!(matches!(second.poll().unwrap(), ConnectProgress::Busy));
    let _accepted = listener.accept().unwrap();
    assert!(matches!(
        second.poll().unwrap(),
        ConnectProgress::Wait {
            new_socket: true,
            ..
        }
    ));
    let mut third = connector.connect();
    assert!(matches!(third.poll().unwrap(), ConnectProgress::Busy));
    let deadline = third.deadline().expect("connect_timeout is set");
    std::thread::sleep(deadline.saturating_duration_since(std::time::Instant::now()));
    let error = third.poll().unwrap_err().to_string();
    assert!(error.ends_with("failed: timeout expired"), "{error}");
}

/// A listener that goes away while an attempt waits for room in its queue
/// refuses the next try: that address is done and the next host is tried,
/// as for any refused connection.
#[test]
fn a_busy_listener_that_goes_away_leaves_the_next_host_to_be_tried() {
    use pgwire::ConnectProgress;

    let db = server();
    let dir = tempfile::tempdir().unwrap();
    let config = crate::pgwire_support::config(&format!(
        "host={},{} port={} user=postgres dbname=postgres",
        dir.path().display(),
        db.socket_dir().display(),
        db.port()
    ));
    let connector = pgwire::Connector::new(&config).unwrap();
    let path = dir.path().join(format!(".s.PGSQL.{}", db.port()));
    let (listener, first) = full_listener(&path, &connector);
    let mut second = connector.connect();
    assert!(matches!(second.poll().unwrap(), ConnectProgress::Busy));
    drop(first);
    drop(listener);
    let conn = loop {
        match second.poll().unwrap() {
            ConnectProgress::Ready(conn) => break conn,
            _ => std::thread::sleep(std::time::Duration::from_millis(1)),
        }
    };
    assert_eq!(conn.host_index(), 1, "the second host's server");
}
