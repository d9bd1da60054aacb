//! Authentication against the real pgbench: one server whose `pg_hba.conf`
//! gives each role its own method (`password`, `md5` with a SCRAM and an
//! MD5 verifier, `reject`, `peer`, `ident`, `scram-sha-256`), and the same
//! command line run by both programs with passwords from `PGPASSWORD`,
//! `password=` and password files. Exit codes and every error, warning and
//! prompt line must match (warnings once each: libpq repeats some per
//! connection attempt), and no password may appear in pgbolt's output.
//!
//! `require_auth` (libpq 16 and later) is compared too.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::{pgbench_path, pgbolt_path, run_without_terminal, without_pg_env, Run};
use pgbolt::tempdb::{AuthMethod, TempDb};

const PASSWORD: &str = "pw-9f3kq";
/// A password needing SASLprep: "pässwörd" with the umlauts written as a
/// plain letter plus a combining diaeresis (NFD); the role's verifier was
/// made from the composed (NFC) form.
const DECOMPOSED: &str = "pa\u{0308}ssw\u{006f}\u{0308}rd";
const COMPOSED: &str = "p\u{00e4}ssw\u{00f6}rd";
const ESCAPED: &str = "a b\\c:d";
/// "pässwort" in Latin-1: not UTF-8. libpq sends such bytes as they are,
/// so an MD5 verifier made from them (as psql's `\password` makes it in a
/// Latin-1 terminal) lets them in.
const LATIN1: &[u8] = b"p\xe4sswort";
const LATIN1_HEX: &str = "70e47373776f7274";

fn server() -> &'static TempDb {
    static DB: OnceLock<TempDb> = OnceLock::new();
    DB.get_or_init(|| {
        let db = TempDb::builder()
            .tcp(true)
            .auth(AuthMethod::ScramSha256)
            .start()
            .expect("server starts");
        let super_user = db.superuser().to_owned();
        db.psql(&format!(
            "CREATE ROLE pw_user LOGIN PASSWORD '{PASSWORD}';
             CREATE ROLE md5_scram LOGIN PASSWORD '{PASSWORD}';
             CREATE ROLE scram_user LOGIN PASSWORD '{PASSWORD}';
             CREATE ROLE reject_user LOGIN PASSWORD '{PASSWORD}';
             CREATE ROLE peer_user LOGIN;
             CREATE ROLE ident_user LOGIN;
             CREATE ROLE no_login PASSWORD '{PASSWORD}';
             CREATE ROLE expired LOGIN PASSWORD '{PASSWORD}' VALID UNTIL '2000-01-01';
             CREATE ROLE \"Odd User\" LOGIN PASSWORD '{PASSWORD}';
             CREATE ROLE \"a:b\\c\" LOGIN PASSWORD '{PASSWORD}';
             CREATE ROLE umlaut LOGIN PASSWORD '{COMPOSED}';
             CREATE ROLE escaped LOGIN PASSWORD E'a b\\\\c:d';
             SET password_encryption = 'md5';
             CREATE ROLE md5_md5 LOGIN PASSWORD '{PASSWORD}';
             CREATE ROLE latin1 LOGIN;
             DO $$ BEGIN EXECUTE format('ALTER ROLE latin1 PASSWORD %L', 'md5' ||
                 md5(decode('{LATIN1_HEX}', 'hex') || 'latin1'::bytea)); END $$;"
        ))
        .expect("roles");
        let hba = format!(
            "local all {super_user} trust
             host all {super_user} 127.0.0.1/32 trust
             local all pw_user password
             host all pw_user 127.0.0.1/32 password
             local all md5_scram md5
             local all md5_md5 md5
             local all latin1 md5
             host all md5_md5 127.0.0.1/32 scram-sha-256
             local all reject_user reject
             local all peer_user peer
             host all ident_user 127.0.0.1/32 ident
             local all all scram-sha-256
             host all all 127.0.0.1/32 scram-sha-256\n"
        );
        std::fs::write(db.data_dir().join("pg_hba.conf"), hba).expect("write pg_hba.conf");
        db.psql("SELECT pg_reload_conf()").expect("reload");
        wait_for_reject(&db);
        let out = Run::on(&db, "postgres", &["-i", "-q", "-s", "1"]).pgbench();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        db.psql("GRANT SELECT ON ALL TABLES IN SCHEMA public TO PUBLIC")
            .expect("grant");
        db
    })
}

/// Waits until the reloaded `pg_hba.conf` is in force (its `reject` line
/// answers), so no case sees the old rules.
fn wait_for_reject(db: &TempDb) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut psql = db.command("psql");
        psql.env("PGUSER", "reject_user")
            .args(["-X", "-c", "SELECT 1"]);
        let out = psql.output().expect("psql runs");
        if String::from_utf8_lossy(&out.stderr).contains("rejects connection") {
            return;
        }
        assert!(Instant::now() < deadline, "pg_hba.conf never reloaded");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Where a case's password comes from, besides the command line.
struct Setup<'a> {
    pgpassword: Option<&'a str>,
    /// Lines of a password file and its mode; `None`: no file at all.
    passfile: Option<(&'a [&'a str], u32)>,
}

const NOTHING: Setup<'static> = Setup {
    pgpassword: None,
    passfile: None,
};

fn env_password(password: &str) -> Setup<'_> {
    Setup {
        pgpassword: Some(password),
        passfile: None,
    }
}

fn passfile<'a>(lines: &'a [&'a str]) -> Setup<'a> {
    Setup {
        pgpassword: None,
        passfile: Some((lines, 0o600)),
    }
}

fn run(program: &Path, setup: &Setup<'_>, args: &[String], dir: &Path) -> Output {
    let mut cmd = without_pg_env(program);
    let passfile = dir.join("pgpass");
    cmd.env("LC_ALL", "C")
        .env("HOME", dir)
        .env("PGPASSFILE", &passfile)
        .args(args)
        .stdin(Stdio::null());
    if let Some(password) = setup.pgpassword {
        cmd.env("PGPASSWORD", password);
    }
    if let Some((lines, mode)) = setup.passfile {
        std::fs::write(&passfile, lines.join("\n") + "\n").expect("write password file");
        std::fs::set_permissions(&passfile, std::fs::Permissions::from_mode(mode))
            .expect("chmod password file");
    }
    cmd.output().expect("program runs")
}

/// Standard error, line by line, with the program name made neutral:
/// errors, warnings (as often as they are shown: a warning about the
/// password file comes again when an empty answer to the prompt sends the
/// program back to the file), the prompt and the password file hint.
fn seen(out: &Output, name: &str) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(|line| line.replace(&format!("{name}:"), "PROGRAM:"))
        .collect()
}

/// Runs pgbench and pgbolt with `-n -t 1 -S` plus `args` and compares.
fn compare(case: &str, setup: Setup<'_>, args: &[String], want: &str) {
    let mut all = vec!["-n".to_owned(), "-t".into(), "1".into(), "-S".into()];
    all.extend_from_slice(args);
    let dir = tempfile::tempdir().expect("temp dir");
    let theirs = run(Path::new(pgbench_path()), &setup, &all, dir.path());
    let ours = run(&pgbolt_path(), &setup, &all, dir.path());
    let (their_lines, our_lines) = (seen(&theirs, "pgbench"), seen(&ours, "pgbolt"));
    let shown = format!(
        "{case}: {all:?}\npgbench: {:?} {their_lines:#?}\npgbolt: {:?} {our_lines:#?}",
        theirs.status, ours.status
    );
    assert_eq!(theirs.status.code(), ours.status.code(), "{shown}");
    assert_eq!(their_lines, our_lines, "{shown}");
    assert!(their_lines.join("\n").contains(want), "{shown}");
    let everything = String::from_utf8_lossy(&ours.stdout) + String::from_utf8_lossy(&ours.stderr);
    for secret in [PASSWORD, DECOMPOSED, COMPOSED, ESCAPED] {
        assert!(
            !everything.contains(secret),
            "{case}: pgbolt printed a password"
        );
    }
}

fn socket(db: &TempDb, user: &str) -> Vec<String> {
    vec![
        "-h".into(),
        db.socket_dir().to_string_lossy().into_owned(),
        "-p".into(),
        db.port().to_string(),
        "-U".into(),
        user.into(),
        "postgres".into(),
    ]
}

fn tcp(db: &TempDb, user: &str) -> Vec<String> {
    vec![
        "-h".into(),
        "127.0.0.1".into(),
        "-p".into(),
        db.port().to_string(),
        "-U".into(),
        user.into(),
        "postgres".into(),
    ]
}

#[test]
fn each_pg_hba_method_answers_as_with_pgbench() {
    let db = server();
    let cases: &[(&str, &str, bool, Option<&str>, &str)] = &[
        ("password", "pw_user", false, Some(PASSWORD), ""),
        (
            "password wrong",
            "pw_user",
            true,
            Some("nope"),
            "password authentication failed for user \"pw_user\"",
        ),
        (
            "password missing",
            "pw_user",
            false,
            None,
            "fe_sendauth: no password supplied",
        ),
        (
            "password empty",
            "pw_user",
            true,
            Some(""),
            "fe_sendauth: no password supplied",
        ),
        (
            "md5, SCRAM verifier",
            "md5_scram",
            false,
            Some(PASSWORD),
            "",
        ),
        (
            "md5, SCRAM verifier, wrong",
            "md5_scram",
            false,
            Some("nope"),
            "password authentication failed for user \"md5_scram\"",
        ),
        ("md5, MD5 verifier", "md5_md5", false, Some(PASSWORD), ""),
        (
            "md5, MD5 verifier, missing",
            "md5_md5",
            false,
            None,
            "fe_sendauth: no password supplied",
        ),
        (
            "scram-sha-256, MD5 verifier",
            "md5_md5",
            true,
            Some(PASSWORD),
            "password authentication failed for user \"md5_md5\"",
        ),
        ("scram-sha-256", "scram_user", true, Some(PASSWORD), ""),
        (
            "reject",
            "reject_user",
            false,
            Some(PASSWORD),
            "pg_hba.conf rejects connection for host \"[local]\", user \"reject_user\"",
        ),
        (
            "peer, other OS user",
            "peer_user",
            false,
            None,
            "Peer authentication failed for user \"peer_user\"",
        ),
        (
            "ident, no ident server",
            "ident_user",
            true,
            None,
            "Ident authentication failed for user \"ident_user\"",
        ),
        (
            "no LOGIN",
            "no_login",
            false,
            Some(PASSWORD),
            "role \"no_login\" is not permitted to log in",
        ),
        (
            "VALID UNTIL in the past",
            "expired",
            false,
            Some(PASSWORD),
            "password authentication failed for user \"expired\"",
        ),
        (
            "no such role",
            "nobody_here",
            true,
            Some(PASSWORD),
            "password authentication failed for user \"nobody_here\"",
        ),
        ("quoted role name", "Odd User", true, Some(PASSWORD), ""),
        ("SASLprep", "umlaut", false, Some(DECOMPOSED), ""),
        ("SASLprep, composed", "umlaut", true, Some(COMPOSED), ""),
        (
            "spaces, backslash, colon",
            "escaped",
            false,
            Some(ESCAPED),
            "",
        ),
    ];
    for &(case, user, over_tcp, password, want) in cases {
        let args = if over_tcp {
            tcp(db, user)
        } else {
            socket(db, user)
        };
        let setup = password.map_or(NOTHING, env_password);
        compare(case, setup, &args, want);
    }
}

#[test]
fn passwords_come_from_the_right_place() {
    let db = server();
    let conninfo = |extra: &str| {
        let mut args = socket(db, "scram_user");
        args.pop();
        args.push(format!("dbname=postgres {extra}"));
        args
    };
    let good = format!("*:*:*:scram_user:{PASSWORD}");
    let wrong = "*:*:*:scram_user:nope".to_owned();
    compare(
        "password= beats PGPASSWORD",
        env_password("nope"),
        &conninfo(&format!("password={PASSWORD}")),
        "",
    );
    compare(
        "PGPASSWORD beats the password file",
        Setup {
            pgpassword: Some(PASSWORD),
            passfile: Some((&[&wrong], 0o600)),
        },
        &socket(db, "scram_user"),
        "",
    );
    compare(
        "an empty password= falls back to the password file",
        Setup {
            pgpassword: Some(""),
            passfile: Some((&[&good], 0o600)),
        },
        &conninfo("password="),
        "",
    );
    compare(
        "a wrong password from the file names the file",
        passfile(&[&wrong]),
        &socket(db, "scram_user"),
        "password retrieved from file",
    );
    compare(
        "a readable password file is ignored with a warning",
        Setup {
            pgpassword: None,
            passfile: Some((&[&good], 0o644)),
        },
        &socket(db, "scram_user"),
        "has group or world access",
    );
}

#[test]
fn password_file_lines_match_as_in_libpq() {
    let db = server();
    let port = db.port();
    let dir = db.socket_dir().to_string_lossy().into_owned();
    let with_port = |port_text: &str| {
        let mut args = socket(db, "scram_user");
        args.pop();
        args.push(format!("dbname=postgres port={port_text}"));
        args
    };
    let line = |fields: &str| format!("{fields}:{PASSWORD}");
    let cases: Vec<(&str, Vec<String>, Vec<String>, &str)> = vec![
        (
            "wildcards",
            vec![line("*:*:*:scram_user")],
            socket(db, "scram_user"),
            "",
        ),
        (
            "socket directory by name",
            vec![line(&format!("{dir}:{port}:postgres:scram_user"))],
            socket(db, "scram_user"),
            "",
        ),
        (
            "socket directory with a slash",
            vec![line(&format!("{dir}/:*:*:scram_user"))],
            socket(db, "scram_user"),
            "no password supplied",
        ),
        (
            "localhost is not this socket",
            vec![line("localhost:*:*:scram_user")],
            socket(db, "scram_user"),
            "no password supplied",
        ),
        (
            "localhost is not 127.0.0.1",
            vec![line("localhost:*:*:scram_user")],
            tcp(db, "scram_user"),
            "no password supplied",
        ),
        (
            "127.0.0.1",
            vec![line("127.0.0.1:*:*:scram_user")],
            tcp(db, "scram_user"),
            "",
        ),
        (
            "another port",
            vec![line(&format!("*:{}:*:scram_user", port - 1))],
            tcp(db, "scram_user"),
            "no password supplied",
        ),
        (
            "comment and short line first",
            vec![
                "# *:*:*:scram_user:nope".into(),
                "*:*:*:scram_user".into(),
                line("*:*:*:scram_user"),
            ],
            tcp(db, "scram_user"),
            "",
        ),
        (
            "escaped colon and backslash in the user",
            vec![line("*:*:*:a\\:b\\\\c")],
            socket(db, "a:b\\c"),
            "",
        ),
        (
            "unescaped colon in the user",
            vec![line("*:*:*:a:b\\c")],
            socket(db, "a:b\\c"),
            "no password supplied",
        ),
        (
            "escaped password",
            vec!["*:*:*:escaped:a b\\\\c\\:d".into()],
            socket(db, "escaped"),
            "",
        ),
        (
            "unescaped password stops at its colon",
            vec!["*:*:*:escaped:a b\\\\c:d".into()],
            socket(db, "escaped"),
            "password authentication failed",
        ),
        (
            "CRLF line end",
            vec![line("*:*:*:scram_user") + "\r"],
            socket(db, "scram_user"),
            "",
        ),
        (
            "empty password field",
            vec!["*:*:*:scram_user:".into(), line("*:*:*:scram_user")],
            socket(db, "scram_user"),
            "no password supplied",
        ),
        // libpq compares the port as written, not as a number.
        (
            "port written with a leading zero",
            vec![line(&format!("*:{port}:*:scram_user"))],
            with_port(&format!("0{port}")),
            "no password supplied",
        ),
        (
            "the line spells the port the same way",
            vec![line(&format!("*:0{port}:*:scram_user"))],
            with_port(&format!("0{port}")),
            "",
        ),
    ];
    for (case, lines, args, want) in cases {
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        compare(case, passfile(&lines), &args, want);
    }
}

#[test]
fn password_files_that_are_not_plain_files_are_skipped_with_a_warning() {
    let db = server();
    let dir = tempfile::tempdir().expect("temp dir");
    for (case, path) in [
        ("a directory", dir.path().to_path_buf()),
        ("/dev/null", Path::new("/dev/null").to_path_buf()),
        ("missing", dir.path().join("missing")),
    ] {
        let mut args = socket(db, "scram_user");
        args.pop();
        args.push(format!("dbname=postgres passfile={}", path.display()));
        let want = if case == "missing" {
            "no password supplied"
        } else {
            "is not a plain file"
        };
        compare(case, NOTHING, &args, want);
    }
}

/// `require_auth` (libpq 16) compared with pgbench 18: the requirement's
/// wording, and the password prompt libpq 18 makes once it has chosen
/// SCRAM (a refusal of the request itself asks for none).
#[test]
fn require_auth_speaks_libpq_18() {
    let db = server();
    let cases = [
        ("!oauth", "", env_password(PASSWORD)),
        ("scram-sha-256", "", env_password(PASSWORD)),
        (
            "!scram-sha-256",
            "server requested SCRAM-SHA-256 authentication",
            env_password(PASSWORD),
        ),
        (
            "oauth",
            "server requested SCRAM-SHA-256 authentication",
            env_password(PASSWORD),
        ),
        (
            "!scram-sha-256,!oauth",
            "server requested SASL authentication",
            env_password(PASSWORD),
        ),
        (
            "password,md5",
            "server requested SASL authentication",
            env_password(PASSWORD),
        ),
        ("!scram-sha-256", "Password: ", NOTHING),
        ("password", "requirement \"password\" failed", NOTHING),
    ];
    for (spec, want, setup) in cases {
        let mut args = tcp(db, "scram_user");
        args.pop();
        args.push(format!(
            "dbname=postgres sslmode=disable require_auth={spec}"
        ));
        compare(spec, setup, &args, want);
    }
}

/// Runs `program` with `-n -t 1 -S` as role `latin1` over the socket, the
/// password file `passfile` and `answer` on standard input for the prompt.
fn run_latin1(program: &Path, passfile: &[u8], answer: &[u8]) -> Output {
    let db = server();
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("pgpass");
    std::fs::write(&file, passfile).expect("write password file");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let mut cmd = without_pg_env(program);
    let mut args = vec!["-n".to_owned(), "-t".into(), "1".into(), "-S".into()];
    args.extend(socket(db, "latin1"));
    cmd.env("LC_ALL", "C")
        .env("HOME", dir.path())
        .env("PGPASSFILE", &file)
        .args(&args);
    run_without_terminal(&mut cmd, answer)
}

#[test]
fn passwords_that_are_not_utf8_are_sent_as_they_are() {
    let mut line = b"*:*:*:latin1:".to_vec();
    line.extend_from_slice(LATIN1);
    line.push(b'\n');
    let mut typed = LATIN1.to_vec();
    typed.push(b'\n');
    let cases: [(&str, &[u8], &[u8], &str); 3] = [
        ("from the password file", &line, b"", ""),
        ("typed at the prompt", b"", &typed, "Password: "),
        (
            "wrong",
            b"",
            b"p\xe4ss\n",
            "password authentication failed for user \"latin1\"",
        ),
    ];
    for (case, passfile, answer, want) in cases {
        let theirs = run_latin1(Path::new(pgbench_path()), passfile, answer);
        let ours = run_latin1(&pgbolt_path(), passfile, answer);
        let (their_lines, our_lines) = (seen(&theirs, "pgbench"), seen(&ours, "pgbolt"));
        let shown = format!("{case}\npgbench: {their_lines:#?}\npgbolt: {our_lines:#?}");
        assert_eq!(theirs.status.code(), ours.status.code(), "{shown}");
        assert_eq!(their_lines, our_lines, "{shown}");
        assert!(their_lines.join("\n").contains(want), "{shown}");
        let everything = [ours.stdout.as_slice(), ours.stderr.as_slice()].concat();
        assert!(
            !everything.windows(LATIN1.len()).any(|w| w == LATIN1),
            "{case}: pgbolt printed the password"
        );
    }
}
