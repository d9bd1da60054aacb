//! TLS connections against the real pgbench: the same connection options
//! given to pgbolt and to pgbench (libpq with OpenSSL) must succeed or fail
//! alike, with the same exit code and the same messages, and TLS sessions
//! must look the same to the server (`pg_stat_ssl`).
//!
//! Certificates are made with the `openssl` command, as users make them:
//! `openssl x509 -req` without extensions gives an X.509 version 1 client
//! certificate, which libpq sends and the server accepts. Two servers run
//! with those certificates: one offering TLS 1.3, one limited to TLS 1.2
//! whose certificate each host name case replaces (and reloads).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use crate::common::{pgbench_path, pgbolt_path, stderr};
use crate::tls_support::{certs, chown_to_server, set_mode};
use pgbolt::tempdb::TempDb;

fn tls_server(extra: &[(&str, &str)]) -> TempDb {
    let c = certs();
    let mut builder = TempDb::builder()
        .tcp(true)
        .ssl(true)
        .setting("ssl_cert_file", c.arg("server.crt"))
        .setting("ssl_key_file", c.arg("server.key"))
        .setting("ssl_ca_file", c.arg("ca.crt"));
    for (name, value) in extra {
        builder = builder.setting(*name, *value);
    }
    builder.start().expect("TLS server starts")
}

/// TLS 1.2 and 1.3, certificate for `localhost` and `127.0.0.1`.
fn tls13() -> &'static TempDb {
    static DB: OnceLock<TempDb> = OnceLock::new();
    DB.get_or_init(|| tls_server(&[]))
}

/// TLS 1.2 only; its certificate is replaced by the host name test.
fn tls12() -> &'static TempDb {
    static DB: OnceLock<TempDb> = OnceLock::new();
    DB.get_or_init(|| {
        let c = certs();
        for ext in ["crt", "key"] {
            let copy = c.path(&format!("tls12.{ext}"));
            std::fs::copy(c.path(&format!("server.{ext}")), &copy).expect("copy");
            chown_to_server(&copy);
        }
        let db = tls_server(&[("ssl_max_protocol_version", "TLSv1.2")]);
        db.psql(&format!(
            "ALTER SYSTEM SET ssl_cert_file = '{}'; ALTER SYSTEM SET ssl_key_file = '{}'; \
             SELECT pg_reload_conf();",
            c.arg("tls12.crt"),
            c.arg("tls12.key")
        ))
        .expect("point the server at its own certificate copy");
        db
    })
}

/// What one tool did: exit code and standard error with its name masked.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    code: Option<i32>,
    messages: String,
}

fn run(program: &Path, name: &str, conninfo: &str, extra: &[&str], home: &str) -> Outcome {
    let c = certs();
    let out = Command::new(program)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", c.path(home))
        .args(["-n", "-t", "1", "-f", &c.arg("select.sql")])
        .args(extra)
        .arg(conninfo)
        .output()
        .expect("tool runs");
    Outcome {
        code: out.status.code(),
        messages: stderr(&out).replace(&format!("{name}: "), "PROG: "),
    }
}

/// Runs both tools with `conninfo`; they must agree. `want` is `None` for
/// success, or a phrase the error must contain.
fn same(conninfo: &str, extra: &[&str], want: Option<&str>) {
    same_in("home", conninfo, extra, want)
}

/// [`same`] with `HOME` set to the certificate directory's `home`.
fn same_in(home: &str, conninfo: &str, extra: &[&str], want: Option<&str>) {
    let ours = run(&pgbolt_path(), "pgbolt", conninfo, extra, home);
    let theirs = run(Path::new(pgbench_path()), "pgbench", conninfo, extra, home);
    assert_eq!(ours, theirs, "{conninfo} {extra:?}");
    match want {
        None => assert_eq!(ours.code, Some(0), "{conninfo}: {}", ours.messages),
        Some(phrase) => {
            assert_eq!(ours.code, Some(1), "{conninfo}");
            assert!(
                ours.messages.contains(phrase),
                "{conninfo}: {}",
                ours.messages
            );
        }
    }
}

fn tcp(db: &TempDb, options: &str) -> String {
    format!(
        "host=127.0.0.1 port={} user={} dbname=postgres {options}",
        db.port(),
        db.superuser()
    )
}

/// A chain that does not lead to the root, a root file with no
/// certificate, and the server refusing our certificate, in OpenSSL's
/// words; a protocol version the server does not offer, with libpq's hint.
#[test]
fn tls_failures_are_worded_as_libpq_words_them() {
    let c = certs();
    let other = c.arg("other.crt");
    let garbage = c.arg("garbage.pem");
    let bad_cert = format!(
        "sslcert={} sslkey={}",
        c.arg("client-other-ca.crt"),
        c.arg("client-other-ca.key")
    );
    let cases = [
        (
            format!("sslmode=verify-ca sslrootcert={other}"),
            "SSL error: certificate verify failed",
        ),
        (
            format!("sslmode=require sslrootcert={other}"),
            "SSL error: certificate verify failed",
        ),
        (
            format!("sslmode=verify-ca sslrootcert={garbage}"),
            "could not read root certificate file",
        ),
        (
            format!("sslmode=require {bad_cert}"),
            "SSL error: tlsv1 alert unknown ca",
        ),
        (
            format!("sslmode=require {bad_cert} ssl_max_protocol_version=TLSv1.2"),
            "SSL error: tlsv1 alert unknown ca",
        ),
        // After a TLS 1.3 handshake the refusal breaks an established
        // session: libpq does not try again without TLS.
        (
            format!("sslmode=prefer {bad_cert}"),
            "SSL error: tlsv1 alert unknown ca",
        ),
    ];
    for (options, want) in &cases {
        same(&tcp(tls13(), options), &[], Some(want));
    }
    // Under TLS 1.2 the refusal is part of the handshake, which `prefer`
    // retries without TLS.
    same(
        &tcp(
            tls13(),
            &format!("sslmode=prefer {bad_cert} ssl_max_protocol_version=TLSv1.2"),
        ),
        &[],
        None,
    );
    for mode in ["require", "prefer"] {
        same(
            &tcp(
                tls12(),
                &format!("sslmode={mode} ssl_min_protocol_version=TLSv1.3"),
            ),
            &[],
            (mode == "require").then_some(
                "This may indicate that the server does not support any SSL protocol version \
                 between TLSv1.3 and TLSv1.3.",
            ),
        );
    }
}

/// Client certificates as libpq loads them: an X.509 version 1 certificate
/// is sent, a DER key is read, and a missing, mismatched, unreadable or
/// misplaced file is reported with libpq's message.
#[test]
fn client_certificates_and_keys_are_loaded_as_libpq_loads_them() {
    let c = certs();
    let v1 = c.arg("client-v1.crt");
    let cases: Vec<(String, Option<&str>)> = vec![
        (
            format!("sslcert={v1} sslkey={}", c.arg("client-v1.key")),
            None,
        ),
        (
            format!("sslcert={v1} sslkey={}", c.arg("client-v1.der")),
            None,
        ),
        (
            format!("sslcert={v1}"),
            Some("certificate present, but not private key file"),
        ),
        (
            format!("sslcert={v1} sslkey={}", c.arg("other.key")),
            Some(": key values mismatch"),
        ),
        (
            format!("sslcert={v1} sslkey={}", c.arg("home")),
            Some("is not a regular file"),
        ),
        (
            format!(
                "sslcert={} sslkey={}",
                c.arg("garbage.pem"),
                c.arg("client-v1.key")
            ),
            Some("could not read certificate file"),
        ),
        (
            format!("sslcert={v1} sslkey={}", c.arg("garbage.pem")),
            Some("could not load private key file"),
        ),
    ];
    for (options, want) in cases {
        same(
            &tcp(tls13(), &format!("sslmode=require {options}")),
            &[],
            want,
        );
    }
}

/// The session each tool opens looks the same in `pg_stat_ssl`: protocol,
/// cipher, key size, and the client certificate's subject.
#[test]
fn sessions_look_the_same_to_the_server() {
    let c = certs();
    let db = tls13();
    db.psql("CREATE TABLE IF NOT EXISTS ssl_seen (tool text, version text, cipher text, bits int, client_dn text)")
        .expect("create table");
    let with_cert = format!(
        "sslcert={} sslkey={}",
        c.arg("client-v1.crt"),
        c.arg("client-v1.key")
    );
    let cases = [
        "sslmode=require".to_string(),
        "sslmode=prefer ssl_max_protocol_version=TLSv1.2".to_string(),
        format!(
            "sslmode=verify-full sslrootcert={} host=localhost",
            c.arg("ca.crt")
        ),
        format!("sslmode=require {with_cert}"),
        "sslmode=disable".to_string(),
    ];
    for (i, options) in cases.iter().enumerate() {
        for (program, name) in [
            (pgbolt_path(), "pgbolt"),
            (PathBuf::from(pgbench_path()), "pgbench"),
        ] {
            let script = c.path(&format!("seen-{name}-{i}.sql"));
            std::fs::write(
                &script,
                format!(
                    "INSERT INTO ssl_seen SELECT '{name}-{i}', version, cipher, bits, client_dn \
                     FROM pg_stat_ssl WHERE pid = pg_backend_pid();\n"
                ),
            )
            .expect("script");
            let out = Command::new(&program)
                .env_clear()
                .env("HOME", c.path("home"))
                .args(["-n", "-t", "1", "-f", &script.to_string_lossy()])
                .arg(tcp(db, options))
                .output()
                .expect("tool runs");
            assert!(out.status.success(), "{name} {options}: {}", stderr(&out));
        }
        let seen = |name: &str| {
            db.psql(&format!(
                "SELECT version, cipher, bits, client_dn FROM ssl_seen WHERE tool = '{name}-{i}'"
            ))
            .expect("query")
        };
        let ours = seen("pgbolt");
        assert_eq!(ours, seen("pgbench"), "{options}");
        assert!(!ours.trim().is_empty(), "{options}");
    }
}

/// A file of the certificate directory copied into a `~/.postgresql`:
/// its name there, its name in the home, its mode.
type HomeFile = (&'static str, &'static str, u32);

/// libpq reads `~/.postgresql`'s files as the TLS session starts, so under
/// the default `sslmode=prefer` a problem with them is a failed handshake,
/// retried without TLS: a client certificate without its key or with a
/// key others can read, and a root certificate of another CA (the chain is
/// checked whenever that file exists). Regressions: pgbolt failed the
/// first two and kept TLS without checking the chain in the third.
#[test]
fn prefer_goes_on_without_tls_when_home_files_fail() {
    let c = certs();
    let db = tls13();
    let homes: [(&str, &[HomeFile]); 3] = [
        ("home-no-key", &[("client-v1.crt", "postgresql.crt", 0o644)]),
        (
            "home-open-key",
            &[
                ("client-v1.crt", "postgresql.crt", 0o644),
                ("client-v1.key", "postgresql.key", 0o644),
            ],
        ),
        ("home-other-root", &[("other.crt", "root.crt", 0o644)]),
    ];
    db.psql("CREATE TABLE IF NOT EXISTS prefer_seen (tool text, ssl bool)")
        .expect("create table");
    for (home, files) in homes {
        let dir = c.path(home).join(".postgresql");
        std::fs::create_dir_all(&dir).expect("home dir");
        for (from, to, mode) in files {
            std::fs::copy(c.path(from), dir.join(to)).expect("copy");
            set_mode(&dir.join(to), *mode);
        }
        same_in(home, &tcp(db, ""), &[], None);
        for (program, name) in [
            (pgbolt_path(), "pgbolt"),
            (PathBuf::from(pgbench_path()), "pgbench"),
        ] {
            let script = c.path(&format!("prefer-{name}-{home}.sql"));
            std::fs::write(
                &script,
                format!(
                    "INSERT INTO prefer_seen SELECT '{name}-{home}', ssl \
                     FROM pg_stat_ssl WHERE pid = pg_backend_pid();\n"
                ),
            )
            .expect("script");
            let out = Command::new(&program)
                .env_clear()
                .env("HOME", c.path(home))
                .args(["-n", "-t", "1", "-f", &script.to_string_lossy()])
                .arg(tcp(db, ""))
                .output()
                .expect("tool runs");
            assert!(out.status.success(), "{name} {home}: {}", stderr(&out));
        }
        let seen = |name: &str| {
            db.psql(&format!(
                "SELECT ssl FROM prefer_seen WHERE tool = '{name}-{home}'"
            ))
            .expect("query")
        };
        assert_eq!(seen("pgbolt"), seen("pgbench"), "{home}");
        assert_eq!(seen("pgbolt").trim(), "f", "{home}");
    }
}

/// `-C` opens a verified TLS session for every transaction, and fails the
/// same way when verification fails.
#[test]
fn reconnecting_per_transaction_over_tls() {
    let c = certs();
    let verified = format!("sslmode=verify-full sslrootcert={}", c.arg("ca.crt"));
    same(
        &tcp(tls13(), &verified),
        &["-C", "-c", "2", "-t", "3"],
        None,
    );
    let untrusted = format!("sslmode=verify-full sslrootcert={}", c.arg("other.crt"));
    same(
        &tcp(tls13(), &untrusted),
        &["-C"],
        Some("SSL error: certificate verify failed"),
    );
}

/// Revocation lists as libpq uses them: with a root certificate file, from
/// `sslcrl`, `sslcrldir` or `~/.postgresql/root.crl`; a list that cannot be
/// read is no check at all, a directory without the issuer's list fails
/// every certificate.
#[test]
fn revocation_lists_are_checked_as_libpq_checks_them() {
    let c = certs();
    let root = format!("sslrootcert={}", c.arg("ca.crt"));
    let failed = Some("SSL error: certificate verify failed");
    let cases = [
        (
            format!("sslmode=verify-ca {root} sslcrl={}", c.arg("revoked.crl")),
            failed,
        ),
        (
            format!("sslmode=require {root} sslcrl={}", c.arg("revoked.crl")),
            failed,
        ),
        (
            format!("sslmode=require sslcrl={}", c.arg("revoked.crl")),
            None,
        ),
        (
            format!(
                "sslmode=verify-full host=localhost {root} sslcrl={}",
                c.arg("good.crl")
            ),
            None,
        ),
        (
            format!("sslmode=verify-ca {root} sslcrl={}", c.arg("other.crl")),
            failed,
        ),
        (
            format!("sslmode=verify-ca {root} sslcrl={}", c.arg("garbage.pem")),
            None,
        ),
        (
            format!("sslmode=verify-ca {root} sslcrl={}", c.arg("missing.crl")),
            None,
        ),
        (
            format!("sslmode=verify-ca {root} sslcrldir={}", c.arg("crldir")),
            failed,
        ),
        (
            format!("sslmode=verify-ca {root} sslcrldir={}", c.arg("emptydir")),
            failed,
        ),
    ];
    for (options, want) in &cases {
        same(&tcp(tls13(), options), &[], *want);
    }
    same_in(
        "crlhome",
        &tcp(tls13(), &format!("sslmode=verify-ca {root}")),
        &[],
        failed,
    );
}

/// `requirepeer` is checked on Unix sockets only, and like a failed
/// handshake or a refused login it ends a host list: libpq goes on to the
/// next host only when a server could not be reached.
#[test]
fn requirepeer_and_host_lists_stop_where_libpq_stops() {
    let c = certs();
    let db = tls13();
    let (port, user) = (db.port(), db.superuser());
    let socket = db.socket_dir().display().to_string();
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let at = |hosts: &str, ports: &str, options: &str| {
        format!("host={hosts} port={ports} user={user} dbname=postgres {options}")
    };
    let mismatch = "requirepeer specifies \"root\", but actual peer user name is \"postgres\"";
    let cases = [
        (at(&socket, &port.to_string(), "requirepeer=postgres"), None),
        (
            at(&socket, &port.to_string(), "requirepeer=root"),
            Some(mismatch),
        ),
        (at("127.0.0.1", &port.to_string(), "requirepeer=root"), None),
        (
            at(
                &format!("{socket},127.0.0.1"),
                &port.to_string(),
                "requirepeer=root",
            ),
            Some(mismatch),
        ),
        (
            at(
                "127.0.0.1,127.0.0.1",
                &format!("{port},{port}"),
                &format!("sslmode=verify-full sslrootcert={}", c.arg("other.crt")),
            ),
            Some("SSL error: certificate verify failed"),
        ),
        (
            at(
                "127.0.0.1,127.0.0.1",
                &format!("{port},{port}"),
                "dbname=nosuch",
            ),
            Some("database \"nosuch\" does not exist"),
        ),
        (
            at("127.0.0.1,127.0.0.1", &format!("{dead},{port}"), ""),
            None,
        ),
    ];
    for (conninfo, want) in &cases {
        same(conninfo, &[], *want);
    }
}

/// TLS 1.0 and 1.1, which pgbolt cannot speak, fail like a handshake the
/// server refuses: `prefer` and `allow` go on without TLS, `require` fails
/// with an `SSL error` (worded differently: pgbench's comes from the
/// server's alert, pgbolt's from the client).
#[test]
fn tls_versions_below_1_2_fail_like_a_refused_handshake() {
    let old = "ssl_min_protocol_version=TLSv1 ssl_max_protocol_version=TLSv1.1";
    for mode in ["prefer", "allow"] {
        same(&tcp(tls13(), &format!("sslmode={mode} {old}")), &[], None);
    }
    let conninfo = tcp(tls13(), &format!("sslmode=require {old}"));
    let ours = run(&pgbolt_path(), "pgbolt", &conninfo, &[], "home");
    let theirs = run(Path::new(pgbench_path()), "pgbench", &conninfo, &[], "home");
    assert_eq!(ours.code, Some(1), "{}", ours.messages);
    assert_eq!(theirs.code, Some(1), "{}", theirs.messages);
    let prefix = "failed: SSL error: ";
    assert!(ours.messages.contains(prefix), "{}", ours.messages);
    assert!(theirs.messages.contains(prefix), "{}", theirs.messages);
    assert!(
        ours.messages.contains("between TLSv1 and TLSv1.1."),
        "{}",
        ours.messages
    );
}

/// Serialises the cases that replace the TLS 1.2 server's certificate.
static CERT_SWAP: Mutex<()> = Mutex::new(());

/// Puts certificate `stem` in place on the TLS 1.2 server and waits until
/// it is the one presented.
fn present(stem: &str) {
    let c = certs();
    let db = tls12();
    for ext in ["crt", "key"] {
        let copy = c.path(&format!("tls12.{ext}"));
        std::fs::copy(c.path(&format!("{stem}.{ext}")), &copy).expect("copy");
        chown_to_server(&copy);
    }
    set_mode(&c.path("tls12.key"), 0o600);
    db.psql("SELECT pg_reload_conf()").expect("reload");
    let want = std::fs::read(c.path(&format!("{stem}.crt"))).expect("read");
    for _ in 0..200 {
        let out = Command::new("openssl")
            .args([
                "s_client",
                "-starttls",
                "postgres",
                "-connect",
                &format!("127.0.0.1:{}", db.port()),
            ])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("openssl s_client runs");
        let shown = common::stdout(&out);
        let pem = String::from_utf8_lossy(&want);
        // The server certificate, the first of the file: s_client shows it
        // and not the rest of a chain.
        let end = "-----END CERTIFICATE-----";
        let first = pem.split_inclusive(end).next().unwrap_or_default();
        if shown.contains(first.trim()) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("the server never presented {stem}.crt");
}

/// `verify-full` checks `host` (never `hostaddr`) with libpq's rules: an IP
/// host (also in `inet_aton`'s short forms) is matched against IP
/// alternative names and falls back to the common name when there are only
/// DNS ones; a DNS host the other way round; `*.` covers one label; the
/// message counts the names examined.
#[test]
fn host_names_are_checked_as_libpq_checks_them() {
    let _swap = CERT_SWAP.lock().unwrap_or_else(|e| e.into_inner());
    let c = certs();
    let db = tls12();
    let (port, user) = (db.port(), db.superuser());
    let hosts = [
        "host=127.0.0.1",
        "host=localhost",
        "host=localhost hostaddr=127.0.0.1",
        "hostaddr=127.0.0.1",
        "host=a.localhost hostaddr=127.0.0.1",
        "host=127.1 hostaddr=127.0.0.1",
    ];
    // (certificate, host, expected error)
    let cases: &[(&str, &[Option<&str>])] = &[
        (
            "cn-ip",
            &[
                None,
                None,
                None,
                Some("host name must be specified for a verified SSL connection"),
                Some("server certificate for \"localhost\" does not match host name \"a.localhost\""),
                Some("server certificate for \"localhost\" (and 1 other name) does not match host name \"127.1\""),
            ],
        ),
        (
            "cn-dns",
            &[
                Some("server certificate for \"10.1.2.3\" does not match host name \"127.0.0.1\""),
                None,
                None,
                Some("host name must be specified"),
                Some("server certificate for \"10.1.2.3\" (and 1 other name) does not match host name \"a.localhost\""),
                Some("server certificate for \"10.1.2.3\" does not match host name \"127.1\""),
            ],
        ),
        (
            "ip-san",
            &[
                None,
                Some("server certificate for \"127.0.0.1\" (and 1 other name) does not match host name \"localhost\""),
                Some("(and 1 other name) does not match host name \"localhost\""),
                Some("host name must be specified"),
                Some("does not match host name \"a.localhost\""),
                None,
            ],
        ),
        (
            "wildcard",
            &[
                Some("server certificate for \"*.localhost\" (and 2 other names) does not match host name \"127.0.0.1\""),
                Some("server certificate for \"*.localhost\" (and 1 other name) does not match host name \"localhost\""),
                Some("does not match host name \"localhost\""),
                Some("host name must be specified"),
                None,
                Some("(and 2 other names) does not match host name \"127.1\""),
            ],
        ),
    ];
    for (stem, wants) in cases {
        present(stem);
        for (host, want) in hosts.iter().zip(wants.iter()) {
            let conninfo = format!(
                "{host} port={port} user={user} dbname=postgres sslmode=verify-full \
                 sslrootcert={}",
                c.arg("ca.crt")
            );
            same(&conninfo, &[], *want);
        }
    }
}

/// OpenSSL trusts a chain only when it ends at a self-signed certificate:
/// an intermediate in the root file helps build the chain up to its root
/// but is no trust anchor itself, whether or not the server sends it.
#[test]
fn an_intermediate_in_the_root_file_is_no_trust_anchor() {
    let _swap = CERT_SWAP.lock().unwrap_or_else(|e| e.into_inner());
    let c = certs();
    let refused = Some("certificate verify failed");
    let cases = [
        ("via-int", [refused, None, refused]),
        ("via-int-chain", [refused, None, None]),
    ];
    for (presented, wants) in cases {
        present(presented);
        for (root, want) in ["int-only.crt", "int-and-ca.crt", "ca.crt"]
            .iter()
            .zip(wants)
        {
            let options = format!("sslmode=verify-ca sslrootcert={}", c.arg(root));
            same(&tcp(tls12(), &options), &[], want);
        }
    }
}

/// Regression: a backend that ends (here at `idle_session_timeout`, while
/// its client sleeps) closes its TLS session properly, and libpq words
/// that end `SSL connection has been closed unexpectedly`; pgbolt said
/// `server closed the connection unexpectedly` with libpq's two lines
/// about a crash, after the server's FATAL of a statement still to be
/// prepared, alone or in a pipeline.
#[test]
fn a_tls_session_the_server_ends_is_worded_as_libpq_words_it() {
    let c = certs();
    let dir = tempfile::tempdir().expect("temporary directory");
    let between = dir.path().join("between.sql");
    std::fs::write(&between, "\\sleep 1 s\nSELECT 1;\n").expect("script");
    let pipeline = dir.path().join("pipeline.sql");
    std::fs::write(
        &pipeline,
        "\\sleep 1 s\n\\startpipeline\nSELECT 1;\nSELECT 2;\n\\endpipeline\n",
    )
    .expect("script");
    let conninfo = tcp(tls13(), "sslmode=require");
    for (script, mode) in [
        (&between, "prepared"),
        (&pipeline, "prepared"),
        (&between, "simple"),
    ] {
        let [ours, theirs] = [
            (pgbolt_path(), "pgbolt"),
            (pgbench_path().into(), "pgbench"),
        ]
        .map(|(program, name): (std::path::PathBuf, &str)| {
            let out = Command::new(program)
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("HOME", c.path("home"))
                .env("PGOPTIONS", "-c idle_session_timeout=300")
                .args(["-n", "-t", "2", "-M", mode, "-f"])
                .arg(script)
                .arg(&conninfo)
                .output()
                .expect("tool runs");
            Outcome {
                code: out.status.code(),
                messages: stderr(&out).replace(&format!("{name}: "), "PROG: "),
            }
        });
        assert_eq!(ours, theirs, "{mode} {}", script.display());
        assert_eq!(ours.code, Some(2), "{}", ours.messages);
        if mode == "prepared" {
            assert!(
                ours.messages
                    .contains("\nSSL connection has been closed unexpectedly\n"),
                "{}",
                ours.messages
            );
        }
    }
}
