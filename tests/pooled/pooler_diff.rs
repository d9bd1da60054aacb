//! pgbench and pgbolt side by side through a real pgbouncer (Debian's, see
//! `tests/common/pgbouncer.rs`), on the paths `tests/pooled/pooler.rs` leaves
//! out: pgbouncer's admin console, `-C` against `max_client_conn`,
//! `-M prepared` with clients waiting for a server connection, TLS to
//! pgbouncer, and the startup parameters pgbouncer refuses. Each case runs
//! both programs with the same arguments through the same pgbouncer and
//! compares exit statuses, messages and report counts; where they differ
//! on purpose (see `docs/compatibility.md`) the test pins both sides.

use std::process::Output;
use std::sync::OnceLock;

use crate::common::pgbouncer::{initialized_server, processed, run, Bouncer, PoolMode};
use crate::common::{line, pgbench_path, pgbolt_path, script_file, stderr, stdout};
use pgbolt::tempdb::{self, TempDb};

/// One small server with the pgbench tables (scale 1) in `postgres`.
fn server() -> &'static TempDb {
    static SERVER: OnceLock<Result<TempDb, tempdb::Error>> = OnceLock::new();
    match SERVER.get_or_init(|| initialized_server(None)) {
        Ok(db) => db,
        Err(e) => panic!("cannot start a throwaway server: {e}"),
    }
}

/// Standard error with the program's name replaced wherever it starts a
/// message (also after `starting vacuum...`). The admin console ends a
/// session that sent it a message of the extended protocol with `FATAL:
/// bad packet` right after refusing it; whether that line shows depends
/// on when it arrives, for pgbench as for pgbolt, so it is left out.
fn messages(out: &Output, program: &str) -> String {
    stderr(out)
        .replace(&format!("{program}: "), "PROG: ")
        .replace("FATAL:  bad packet\n", "")
}

/// Runs pgbench, then pgbolt, with `args` through `bouncer`; checks that
/// both exit with `status`, print the same messages and process the same
/// number of transactions.
fn same_outcome(bouncer: &Bouncer, args: &[&str], status: i32) {
    let case = args.join(" ");
    let expected = run(bouncer, pgbench_path(), args);
    let actual = run(bouncer, pgbolt_path(), args);
    assert_eq!(
        expected.status.code(),
        Some(status),
        "pgbench {case}: {}",
        stderr(&expected)
    );
    assert_eq!(
        actual.status.code(),
        Some(status),
        "pgbolt {case}: {}",
        stderr(&actual)
    );
    assert_eq!(
        messages(&actual, "pgbolt"),
        messages(&expected, "pgbench"),
        "{case}"
    );
    assert_eq!(processed(&actual), processed(&expected), "{case}");
}

/// Regression: a script of `SHOW` commands run against pgbouncer's admin
/// console (database `pgbouncer`) works with pgbench; pgbolt's check of
/// the server's connection limit sent a long query there, which the
/// console answered by ending the session (`FATAL:  failure`), and pgbolt
/// stopped with exit status 1. Under `-M extended` both abort the client
/// with the console's refusal; the vacuum's statements are refused and
/// ignored by both.
#[test]
fn a_script_runs_on_the_admin_console_as_with_pgbench() {
    let bouncer = Bouncer::builder()
        .pool_mode(PoolMode::Transaction)
        .setting("admin_users", server().superuser())
        .start(server());
    let script = script_file("show.sql", "show pools;\n");
    let f = script.path.as_str();
    let cases: &[(&[&str], i32)] = &[
        (&["-n", "-t", "2", "-f", f, "pgbouncer"], 0),
        (&["-n", "-C", "-c", "2", "-t", "2", "-f", f, "pgbouncer"], 0),
        (&["-t", "2", "-f", f, "pgbouncer"], 0),
        (
            &["-n", "-M", "extended", "-t", "2", "-f", f, "pgbouncer"],
            2,
        ),
    ];
    for (args, status) in cases {
        same_outcome(&bouncer, args, *status);
    }
}

/// Documented difference: under `-M prepared`, pgbench prepares in a
/// blocking round trip. In session pooling with one client more than
/// server connections, the third client's prepare waits for a server
/// connection and stalls its thread, so the two clients holding the
/// connections never finish; PgBouncer's `query_wait_timeout` ends the
/// wait and pgbench's run fails. pgbolt prepares without blocking: the
/// first two finish and disconnect, and the third runs.
#[test]
fn a_prepare_waiting_for_a_server_connection_does_not_stall_the_other_clients() {
    let bouncer = Bouncer::builder()
        .pool_mode(PoolMode::Session)
        .default_pool_size(2)
        .setting("query_wait_timeout", "2")
        .start(server());
    let args = ["-n", "-S", "-M", "prepared", "-c", "3", "-t", "4"];
    let expected = run(&bouncer, pgbench_path(), &args);
    assert_eq!(expected.status.code(), Some(2), "{}", stderr(&expected));
    assert!(
        stderr(&expected).contains("FATAL:  query_wait_timeout"),
        "{}",
        stderr(&expected)
    );
    let actual = run(&bouncer, pgbolt_path(), &args);
    assert_eq!(actual.status.code(), Some(0), "{}", stderr(&actual));
    assert_eq!(
        processed(&actual).as_deref(),
        Some("number of transactions actually processed: 12/12")
    );
    // With a thread per client nothing stalls, and both agree.
    same_outcome(
        &bouncer,
        &[
            "-n", "-S", "-M", "prepared", "-c", "3", "-j", "3", "-t", "4",
        ],
        0,
    );
}

/// `-C` with one client more than pgbouncer's `max_client_conn`: the run
/// goes on with the clients pgbouncer lets in, and both end with exit
/// status 2 and pgbouncer's refusal for the aborted clients. How many
/// abort differs (documented): connections that arrive together beyond
/// the limit may all be refused, and pgbolt opens them together.
#[test]
fn reconnecting_clients_beyond_max_client_conn_abort_as_with_pgbench() {
    for mode in [PoolMode::Session, PoolMode::Transaction] {
        let bouncer = Bouncer::builder()
            .pool_mode(mode)
            .max_client_conn(3)
            .default_pool_size(2)
            .start(server());
        let args = ["-n", "-S", "-C", "-c", "4", "-t", "5"];
        for program in [pgbench_path().into(), pgbolt_path()] {
            let out = run(&bouncer, &program, &args);
            let text = stderr(&out);
            let case = format!("{} pooling, {}", mode.name(), program.display());
            assert_eq!(out.status.code(), Some(2), "{case}: {text}");
            assert!(
                text.contains("FATAL:  no more connections allowed (max_client_conn)"),
                "{case}: {text}"
            );
            assert!(
                text.contains("aborted while establishing connection"),
                "{case}: {text}"
            );
            assert!(
                line(&stdout(&out), "number of transactions actually processed: ").is_some(),
                "{case}"
            );
        }
    }
}

/// A self-signed certificate for `127.0.0.1` that says it is a CA, as
/// `openssl req -x509` makes one by default, with its key; in a directory
/// pgbouncer (running as `postgres`) can read.
fn self_signed_ca_cert() -> (tempfile::TempDir, String, String) {
    use std::os::unix::fs::PermissionsExt;
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).expect("params");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let cert = params.self_signed(&key).expect("certificate");
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let cert_path = dir.path().join("server.crt");
    let key_path = dir.path().join("server.key");
    std::fs::write(&cert_path, cert.pem()).expect("write certificate");
    std::fs::write(&key_path, key.serialize_pem()).expect("write key");
    std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let text = |p: std::path::PathBuf| p.to_string_lossy().into_owned();
    (dir, text(cert_path), text(key_path))
}

/// Regression: pgbouncer with TLS for its clients and a self-signed
/// server certificate given as the root certificate (`sslrootcert`), the
/// usual set-up: pgbench connects with `sslmode=require` and
/// `verify-ca`, pgbolt failed with `certificate verify failed` because the
/// certificate says it is a CA (webpki refuses a CA as the server's own
/// certificate; OpenSSL trusts a certificate found in the trust store).
#[test]
fn a_self_signed_ca_certificate_given_as_root_is_trusted_as_by_pgbench() {
    let (_dir, cert, key) = self_signed_ca_cert();
    let bouncer = Bouncer::builder()
        .pool_mode(PoolMode::Transaction)
        .setting("listen_addr", "127.0.0.1")
        .setting("client_tls_sslmode", "require")
        .setting("client_tls_cert_file", &cert)
        .setting("client_tls_key_file", &key)
        .start(server());
    for sslmode in ["require", "verify-ca", "verify-full"] {
        let args = ["-n", "-S", "-t", "3", "-c", "2"];
        let mut outcomes = Vec::new();
        for (program, label) in [
            (pgbench_path().into(), "pgbench"),
            (pgbolt_path(), "pgbolt"),
        ] {
            let out = bouncer
                .command(&program)
                .args(args)
                .env("PGHOST", "127.0.0.1")
                .env("PGSSLMODE", sslmode)
                .env("PGSSLROOTCERT", &cert)
                .output()
                .expect("the program runs");
            assert_eq!(
                out.status.code(),
                Some(0),
                "sslmode={sslmode}, {}: {}",
                program.display(),
                stderr(&out)
            );
            outcomes.push((processed(&out), messages(&out, label)));
        }
        assert_eq!(outcomes[1], outcomes[0], "sslmode={sslmode}");
    }
    assert!(
        bouncer.log().contains("tls=TLSv1."),
        "the clients never used TLS:\n{}",
        bouncer.log()
    );
}

/// What goes into the startup message: pgbouncer refuses parameters it
/// does not know (`options` from `PGOPTIONS`, `geqo` from `PGGEQO`) with
/// its own FATAL error, and passes on the ones it tracks. Both programs
/// send the same parameters, so they succeed and fail alike, with the
/// same messages, and pgbouncer logs a refusal only for the refused ones.
#[test]
fn startup_parameters_are_refused_or_passed_on_as_for_pgbench() {
    let cases: &[(&str, &str, i32)] = &[
        ("PGOPTIONS", "-c work_mem=1MB", 1),
        ("PGGEQO", "on", 1),
        ("PGAPPNAME", "probe", 0),
        ("PGDATESTYLE", "ISO", 0),
        ("PGTZ", "UTC", 0),
        ("PGCLIENTENCODING", "LATIN1", 0),
    ];
    let bouncer = Bouncer::builder()
        .pool_mode(PoolMode::Transaction)
        .start(server());
    let args = ["-n", "-S", "-t", "2"];
    for (name, value, status) in cases {
        let mut texts = Vec::new();
        for (program, label) in [
            (pgbench_path().into(), "pgbench"),
            (pgbolt_path(), "pgbolt"),
        ] {
            let before = bouncer.log().len();
            let out = bouncer
                .command(&program)
                .args(args)
                .env(name, value)
                .output()
                .expect("the program runs");
            assert_eq!(
                out.status.code(),
                Some(*status),
                "{name}={value}, {label}: {}",
                stderr(&out)
            );
            let refused = bouncer.log()[before..].contains("unsupported startup parameter");
            assert_eq!(refused, *status == 1, "{name}={value}, {label}");
            texts.push(messages(&out, label));
        }
        assert_eq!(texts[1], texts[0], "{name}={value}");
    }
}
