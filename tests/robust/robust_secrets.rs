//! Passwords never leak: given in a connection string, a URI,
//! `PGPASSWORD` or a password file, to a server asking for SCRAM or MD5,
//! with every output switched on (`--debug`, `-l`, `--json`, `--html`),
//! right or wrong, the password appears in none of standard output,
//! standard error, the log files, the JSON file or the HTML report (whose
//! command line shows it as `****`).

use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::Duration;

use crate::common::run_without_terminal;
use crate::robust_support::*;
use pgbolt::tempdb::{AuthMethod, PasswordEncryption, TempDb};

const SECRET: &str = "Zq7-secret-Kx9";
const WRONG: &str = "Wr0ng-guess-Pm4";

/// Where the password comes from.
#[derive(Debug, Clone, Copy)]
enum Source {
    Conninfo,
    Uri,
    Environment,
    PasswordFile,
}

fn server(method: AuthMethod, encryption: PasswordEncryption) -> TempDb {
    TempDb::builder()
        .auth(method)
        .password_encryption(encryption)
        .user("bench", SECRET)
        .start()
        .expect("throwaway server starts")
}

/// pgbolt with no inherited connection settings, every output on, and
/// the password given by `source`.
fn run(db: &TempDb, source: Source, password: &str, dir: &std::path::Path) -> Finished {
    let script = dir.join("script.sql");
    std::fs::write(
        &script,
        "\\set n random(1, 10)\nSELECT :n AS n, :client_id AS c;\n",
    )
    .unwrap();
    let socket = db.socket_dir().display().to_string();
    let port = db.port().to_string();
    let mut cmd = Command::new(pgbolt_path());
    for var in [
        "PGHOST",
        "PGPORT",
        "PGUSER",
        "PGPASSWORD",
        "PGDATABASE",
        "PGSERVICE",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("LC_ALL", "C")
        .env("PGPASSFILE", dir.join("no-such-passfile"))
        .args(["-n", "-t", "3", "-c", "2", "--debug", "-l"])
        .arg(format!("--log-prefix={}", dir.join("log").display()))
        .arg(format!("--json={}", dir.join("out.json").display()))
        .arg(format!("--html={}", dir.join("out.html").display()))
        .arg(format!("--file={}", script.display()));
    match source {
        Source::Conninfo => {
            cmd.arg(format!(
                "host={socket} port={port} user=bench password={password} dbname=postgres"
            ));
        }
        Source::Uri => {
            cmd.arg(format!(
                "postgresql://bench:{password}@localhost:{port}/postgres?host={socket}"
            ));
        }
        Source::Environment => {
            cmd.env("PGPASSWORD", password)
                .args(["-h", &socket, "-p", &port, "-U", "bench", "postgres"]);
        }
        Source::PasswordFile => {
            let file = dir.join("pgpass");
            std::fs::write(&file, format!("*:*:*:bench:{password}\n")).unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
            cmd.env("PGPASSFILE", &file)
                .args(["-h", &socket, "-p", &port, "-U", "bench", "postgres"]);
        }
    }
    spawn(cmd).wait(Duration::from_secs(15))
}

/// Everything pgbolt wrote: its output and the files in `dir` other than
/// the ones the test made.
fn everything_written(done: &Finished, dir: &std::path::Path) -> String {
    let mut all = done.stdout() + &done.stderr();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("log") || name == "out.json" || name == "out.html" {
            all.push_str(&std::fs::read_to_string(entry.path()).unwrap());
        }
    }
    all
}

fn check_server(db: &TempDb, method: &str) {
    for source in [
        Source::Conninfo,
        Source::Uri,
        Source::Environment,
        Source::PasswordFile,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let ok = run(db, source, SECRET, dir.path());
        assert_eq!(ok.code(), Some(0), "{method} {source:?}: {}", ok.stderr());
        assert!(
            ok.stderr().contains("pgbolt: client 0 sending"),
            "{method} {source:?}"
        );
        assert!(dir.path().join("out.json").exists(), "{method} {source:?}");
        let page = std::fs::read_to_string(dir.path().join("out.html")).unwrap();
        if matches!(source, Source::Conninfo | Source::Uri) {
            assert!(page.contains("****"), "{method} {source:?}: {page}");
        }
        let written = everything_written(&ok, dir.path());
        assert!(
            !written.contains(SECRET),
            "{method} {source:?} leaked:\n{written}"
        );

        let dir = tempfile::tempdir().unwrap();
        let bad = run(db, source, WRONG, dir.path());
        let err = bad.stderr();
        assert_eq!(bad.code(), Some(1), "{method} {source:?}: {err}");
        assert!(
            err.contains("password authentication failed for user \"bench\""),
            "{method} {source:?}: {err}"
        );
        let written = everything_written(&bad, dir.path());
        assert!(
            !written.contains(WRONG),
            "{method} {source:?} leaked:\n{written}"
        );
        assert!(
            !written.contains(SECRET),
            "{method} {source:?} leaked:\n{written}"
        );
    }
}

#[test]
fn no_password_leaks_with_scram() {
    check_server(
        &server(AuthMethod::ScramSha256, PasswordEncryption::ScramSha256),
        "scram",
    );
}

#[test]
fn no_password_leaks_with_md5() {
    check_server(&server(AuthMethod::Md5, PasswordEncryption::Md5), "md5");
}

/// `program` reaching `db` as `bench` with no password from anywhere,
/// with `answer` on standard input and no controlling terminal, so that
/// the password question goes to standard error, as in a script that
/// pipes the password in.
fn asked(db: &TempDb, program: &str, args: &[&str], answer: &str) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(program);
    for var in ["PGPASSWORD", "PGSERVICE", "PGDATABASE"] {
        cmd.env_remove(var);
    }
    cmd.env("LC_ALL", "C")
        .env("PGPASSFILE", dir.path().join("no-such-passfile"))
        .env("PGHOST", db.socket_dir())
        .env("PGPORT", db.port().to_string())
        .env("PGUSER", "bench")
        .args(args)
        .arg("postgres");
    run_without_terminal(&mut cmd, answer.as_bytes())
}

#[test]
fn a_missing_password_is_asked_for_as_pgbench_asks() {
    let db = server(AuthMethod::ScramSha256, PasswordEncryption::ScramSha256);
    db.psql("GRANT CREATE ON SCHEMA public TO bench")
        .expect("grant");
    let cases: &[(&[&str], &str, i32, &str)] = &[
        (
            &["-i", "-s", "1", "-I", "dtg"],
            "\n",
            1,
            "no password supplied",
        ),
        (
            &["-i", "-s", "1", "-I", "dtg"],
            &format!("{SECRET}\n"),
            0,
            "done in",
        ),
        (
            &["-S", "-c", "2", "-C", "-t", "3"],
            &format!("{SECRET}\r\n"),
            0,
            "processed: 6/6",
        ),
        (
            &["-S", "-t", "1"],
            &format!("{WRONG}\n"),
            1,
            "password authentication failed",
        ),
    ];
    for &(args, answer, code, phrase) in cases {
        let theirs = asked(&db, pgbench_path(), args, answer);
        let ours = asked(&db, &pgbolt_path().to_string_lossy(), args, answer);
        for (who, out) in [("pgbench", &theirs), ("pgbolt", &ours)] {
            let all = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(code), "{who} {args:?}: {all}");
            assert!(
                String::from_utf8_lossy(&out.stderr).starts_with("Password: \n"),
                "{who} {args:?}: {all}"
            );
            assert!(all.contains(phrase), "{who} {args:?}: {all}");
            assert_eq!(all.matches("Password: ").count(), 1, "{who} {args:?}");
            assert!(
                !all.contains(SECRET) && !all.contains(WRONG),
                "{who} leaked"
            );
        }
    }
}

/// Regression: a connection string given after the database name was
/// echoed whole in `too many command-line arguments (first is "...")`,
/// password included (pgbench echoes it too).
#[test]
fn an_extra_argument_is_echoed_without_its_password() {
    let cases = [
        (
            format!("host=/nowhere password={SECRET} dbname=x"),
            "(first is \"host=/nowhere password=**** dbname=x\")",
        ),
        (
            format!("postgresql://bench:{SECRET}@localhost/x?password={SECRET}"),
            "(first is \"postgresql://bench:****@localhost/x?password=****\")",
        ),
    ];
    for (extra, shown) in cases {
        let out = Command::new(pgbolt_path())
            .args(["-n", "-t", "1", "mydb", &extra])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("too many command-line arguments"), "{err}");
        assert!(err.contains(shown), "{err}");
        assert!(!err.contains(SECRET), "leaked: {err}");
    }
}
