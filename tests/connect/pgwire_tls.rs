//! TLS against real servers: every sslmode with and without server SSL,
//! certificate checks (wrong host name, no SAN, untrusted chain), channel
//! binding, client certificates, and cancelling a TLS session.

use crate::common;

use std::sync::OnceLock;

use crate::pgwire_support::{connect, value};
use pgbolt::tempdb::{AuthMethod, ServerCert, TempDb};
use pgwire::ErrorKind;

fn ssl_server(which: ServerCert, auth: AuthMethod) -> TempDb {
    TempDb::builder()
        .tcp(true)
        .ssl(true)
        .server_cert(which)
        .host_auth(auth)
        .user("alice", "secret")
        .start()
        .expect("SSL server starts")
}

/// SCRAM over TCP, certificate valid for localhost and 127.0.0.1.
fn good_cert() -> &'static TempDb {
    static DB: OnceLock<TempDb> = OnceLock::new();
    DB.get_or_init(|| ssl_server(ServerCert::Localhost, AuthMethod::ScramSha256))
}

/// Trust authentication, certificate without SAN (common name localhost).
fn no_san() -> &'static TempDb {
    static DB: OnceLock<TempDb> = OnceLock::new();
    DB.get_or_init(|| ssl_server(ServerCert::LocalhostNoSan, AuthMethod::Trust))
}

fn wrong_host() -> &'static TempDb {
    static DB: OnceLock<TempDb> = OnceLock::new();
    DB.get_or_init(|| ssl_server(ServerCert::WrongHost, AuthMethod::Trust))
}

fn cert_auth() -> &'static TempDb {
    static DB: OnceLock<TempDb> = OnceLock::new();
    DB.get_or_init(|| {
        TempDb::builder()
            .tcp(true)
            .ssl(true)
            .host_auth(AuthMethod::Cert)
            .host_ssl_only(true)
            .start()
            .expect("cert-auth server starts")
    })
}

/// The binary's shared server, which has no TLS.
fn no_ssl() -> &'static TempDb {
    common::server()
}

/// Connection options for `db` as alice by the name `localhost`.
fn at(db: &TempDb) -> String {
    let ca = db.ssl_files().map(|f| f.ca_cert.display().to_string());
    format!(
        "host=localhost hostaddr=127.0.0.1 port={} dbname=postgres user=alice password=secret{}",
        db.port(),
        ca.map(|ca| format!(" sslrootcert={ca}"))
            .unwrap_or_default()
    )
}

fn uses_tls(client: &mut pgwire::blocking::Client) -> bool {
    value(
        client,
        "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
    ) == "t"
}

#[test]
fn every_sslmode_against_servers_with_and_without_ssl() {
    let refused = "server does not support SSL, but SSL was required";
    // (sslmode, TLS expected with an SSL server, error from a server without SSL)
    let cases = [
        ("disable", false, None),
        ("allow", false, None),
        ("prefer", true, None),
        ("require", true, Some(refused)),
        ("verify-ca", true, Some(refused)),
        ("verify-full", true, Some(refused)),
    ];
    for (mode, tls, plain_error) in cases {
        let mut client = connect(&format!("{} sslmode={mode}", at(good_cert())))
            .unwrap_or_else(|e| panic!("{mode}: {e}"));
        assert_eq!(uses_tls(&mut client), tls, "{mode}");
        assert_eq!(client.connection().is_tls(), tls, "{mode}");

        let plain = format!(
            "host=127.0.0.1 port={} dbname=postgres user=postgres sslmode={mode} \
             sslrootcert={}",
            no_ssl().port(),
            good_cert().ssl_files().unwrap().ca_cert.display()
        );
        match (connect(&plain), plain_error) {
            (Ok(mut c), None) => assert!(!uses_tls(&mut c), "{mode}"),
            (Err(e), Some(want)) => {
                assert!(e.to_string().ends_with(want), "{mode}: {e}");
                assert_eq!(
                    e.attempts_made()[0].error.kind(),
                    ErrorKind::SslNotSupported
                );
            }
            (got, _) => panic!("{mode} without server SSL: {got:?}"),
        }
    }
}

#[test]
fn certificate_checks_follow_libpq() {
    let port = |db: &TempDb| db.port();
    // (server, host name, sslmode, expected error)
    let cases: Vec<(&TempDb, &str, &str, Option<String>)> = vec![
        (
            wrong_host(),
            "localhost",
            "verify-full",
            Some(
                "server certificate for \"wrong.example\" does not match host name \"localhost\""
                    .into(),
            ),
        ),
        (wrong_host(), "localhost", "verify-ca", None),
        (wrong_host(), "localhost", "require", None),
        (no_san(), "localhost", "verify-full", None),
        (
            no_san(),
            "127.0.0.1",
            "verify-full",
            Some(
                "server certificate for \"localhost\" does not match host name \"127.0.0.1\""
                    .into(),
            ),
        ),
        (good_cert(), "127.0.0.1", "verify-full", None),
    ];
    for (db, host, mode, want) in cases {
        let conninfo = format!(
            "host={host} hostaddr=127.0.0.1 port={} dbname=postgres user=alice password=secret \
             sslmode={mode} sslrootcert={}",
            port(db),
            db.ssl_files().unwrap().ca_cert.display()
        );
        match (connect(&conninfo), want) {
            (Ok(mut c), None) => assert!(uses_tls(&mut c), "{conninfo}"),
            (Err(e), Some(want)) => {
                // libpq names the `hostaddr` alone, whatever `host` says.
                assert_eq!(
                    e.to_string(),
                    format!(
                        "connection to server at \"127.0.0.1\", port {} failed: {want}",
                        port(db)
                    )
                );
            }
            (got, _) => panic!("{conninfo}: {got:?}"),
        }
    }
}

#[test]
fn an_untrusted_or_missing_root_certificate_fails_verification() {
    let db = good_cert();
    let not_a_ca = &db.ssl_files().unwrap().client.cert;
    let conninfo = format!(
        "host=localhost hostaddr=127.0.0.1 port={} user=alice password=secret \
         sslmode=verify-ca sslrootcert={}",
        db.port(),
        not_a_ca.display()
    );
    let err = connect(&conninfo).unwrap_err();
    assert!(
        err.to_string()
            .contains("SSL error: certificate verify failed"),
        "{err}"
    );

    // require with a root certificate verifies the chain, as libpq does.
    let err = connect(&conninfo.replace("verify-ca", "require")).unwrap_err();
    assert!(
        err.to_string().contains("certificate verify failed"),
        "{err}"
    );

    let missing = format!(
        "host=localhost hostaddr=127.0.0.1 port={} user=alice password=secret \
         sslmode=verify-full sslrootcert=/nonexistent/root.crt",
        db.port()
    );
    let err = connect(&missing).unwrap_err();
    assert!(
        err.to_string()
            .contains("failed: root certificate file \"/nonexistent/root.crt\" does not exist"),
        "{err}"
    );
}

#[test]
fn channel_binding_require_needs_tls_and_scram_plus() {
    let base = format!("{} channel_binding=require", at(good_cert()));
    let mut client = connect(&format!("{base} sslmode=require")).unwrap();
    assert_eq!(value(&mut client, "SELECT current_user"), "alice");

    let err = connect(&format!("{base} sslmode=disable")).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("channel binding required, but SSL not in use"),
        "{err}"
    );
    assert_eq!(err.attempts_made()[0].error.kind(), ErrorKind::Auth);

    let trust_tls = format!(
        "host=127.0.0.1 port={} user=postgres dbname=postgres sslmode=require channel_binding=require",
        no_san().port()
    );
    let err = connect(&trust_tls).unwrap_err();
    assert!(
        err.to_string().ends_with(
            "channel binding required, but server authenticated client without channel binding"
        ),
        "{err}"
    );
}

#[test]
fn a_client_certificate_authenticates() {
    let db = cert_auth();
    let files = db.ssl_files().unwrap();
    let conninfo = format!(
        "host=localhost hostaddr=127.0.0.1 port={} user={} dbname=postgres sslmode=verify-full \
         sslrootcert={} sslcert={} sslkey={}",
        db.port(),
        db.superuser(),
        files.ca_cert.display(),
        files.client.cert.display(),
        files.client.key.display()
    );
    let mut client = connect(&conninfo).unwrap();
    assert_eq!(value(&mut client, "SELECT current_user"), db.superuser());

    let without = format!(
        "host=127.0.0.1 port={} user={} dbname=postgres sslmode=require sslcert=/nonexistent.crt",
        db.port(),
        db.superuser()
    );
    let err = connect(&without).unwrap_err();
    assert_eq!(err.sqlstate(), Some("28000"), "{err}");
}

#[test]
fn direct_ssl_negotiation_fails_cleanly_on_a_server_without_it() {
    // PostgreSQL 15 predates direct SSL: it must be an error, never a hang.
    let db = common::builder15()
        .tcp(true)
        .ssl(true)
        .server_cert(ServerCert::Localhost)
        .host_auth(AuthMethod::ScramSha256)
        .user("alice", "secret")
        .start()
        .expect("PostgreSQL 15 with SSL starts");
    let conninfo = format!(
        "{} sslmode=require sslnegotiation=direct connect_timeout=10",
        at(&db)
    );
    assert!(connect(&conninfo).is_err());
}

/// PostgreSQL 17 and later take the TLS handshake straight away.
#[test]
fn direct_ssl_negotiation_works_on_a_server_with_it() {
    let conninfo = format!(
        "{} sslmode=require sslnegotiation=direct connect_timeout=10",
        at(good_cert())
    );
    let mut client = connect(&conninfo).unwrap();
    assert!(client.connection().is_tls());
    assert_eq!(value(&mut client, "SELECT 1"), "1");
}

#[test]
fn a_tls_session_can_be_cancelled() {
    let mut client = connect(&format!("{} sslmode=require", at(good_cert()))).unwrap();
    assert!(client.connection().is_tls());
    let token = client.cancel_token();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let finished = done.clone();
    // Cancel until the query is gone: a cancel that arrives before the
    // query starts cancels nothing.
    let canceller = std::thread::spawn(move || {
        while !finished.load(std::sync::atomic::Ordering::SeqCst) {
            std::thread::sleep(std::time::Duration::from_millis(100));
            token.cancel()?;
        }
        Ok::<(), pgwire::Error>(())
    });
    let err = client.simple_query("SELECT pg_sleep(30)").unwrap_err();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    canceller.join().unwrap().unwrap();
    assert_eq!(err.sqlstate(), Some("57014"), "{err}");
    assert_eq!(value(&mut client, "SELECT 1"), "1");
}

#[test]
fn tls_sessions_from_one_mio_loop_with_large_results() {
    let config = crate::pgwire_support::config(&format!("{} sslmode=verify-full", at(good_cert())));
    let connector = pgwire::Connector::new(&config).unwrap();
    let rows =
        crate::pgwire_support::event_loop(&connector, 10, 5, "SELECT generate_series(1, 20000)");
    assert_eq!(rows, vec![5 * 20000; 10]);
}

#[test]
fn sslmode_allow_retries_with_tls_when_the_server_wants_it() {
    let db = cert_auth();
    let files = db.ssl_files().unwrap();
    let conninfo = format!(
        "host=127.0.0.1 port={} user={} dbname=postgres sslmode=allow sslcert={} sslkey={}",
        db.port(),
        db.superuser(),
        files.client.cert.display(),
        files.client.key.display()
    );
    let mut client = connect(&conninfo).unwrap();
    assert!(uses_tls(&mut client));
}

#[test]
fn sslmode_prefer_retries_without_tls_when_the_handshake_fails() {
    let db = TempDb::builder()
        .tcp(true)
        .ssl(true)
        .setting("ssl_max_protocol_version", "TLSv1.2")
        .start()
        .expect("TLS 1.2 server starts");
    let base = format!(
        "host=127.0.0.1 port={} user=postgres dbname=postgres ssl_min_protocol_version=TLSv1.3",
        db.port()
    );
    let mut client = connect(&format!("{base} sslmode=prefer")).unwrap();
    assert!(!uses_tls(&mut client));

    let err = connect(&format!("{base} sslmode=require")).unwrap_err();
    assert_eq!(err.attempts_made().len(), 1, "{err}");
    assert_eq!(err.attempts_made()[0].error.kind(), ErrorKind::Tls, "{err}");
}

/// An error after the server accepted the authentication (an unknown
/// database) is its answer whatever the encryption: `prefer` and `allow`
/// do not try again with the other, and the error is reported once, as
/// libpq reports it. An error before it (`pg_hba.conf` wanting TLS) still
/// makes `allow` try again with TLS.
#[test]
fn an_error_after_authentication_is_not_retried_with_other_encryption() {
    let db = no_san();
    for mode in ["prefer", "allow"] {
        let conninfo = format!(
            "host=127.0.0.1 port={} user={} dbname=nosuch sslmode={mode}",
            db.port(),
            db.superuser()
        );
        let err = connect(&conninfo).unwrap_err();
        assert_eq!(err.attempts_made().len(), 1, "{mode}: {err}");
        assert!(
            err.to_string()
                .ends_with("failed: FATAL:  database \"nosuch\" does not exist"),
            "{mode}: {err}"
        );
    }
}
