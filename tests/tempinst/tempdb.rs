//! Throwaway instances against real PostgreSQL servers.

use std::path::Path;
use std::process::{Command, Output};

use pgbolt::tempdb::{self, AuthMethod, Error, ServerCert, StartFailure, TempDb};

use crate::common;

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// Runs `psql -c SELECT current_user` with a connection string and password.
fn psql_as(db: &TempDb, conninfo: &str, password: &str) -> Output {
    let mut cmd = common::without_pg_env(db.bin("psql"));
    cmd.args([
        "-X",
        "-A",
        "-t",
        "-w",
        "-c",
        "SELECT current_user",
        conninfo,
    ])
    .env("PGPASSWORD", password)
    .output()
    .expect("psql runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn start_and_stop_leave_no_process_and_no_directory() {
    let db = TempDb::start().unwrap();
    let pid = db.pid();
    let root = db.root().to_path_buf();
    assert!(alive(pid));
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let uid_line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
        assert!(!uid_line.split_whitespace().any(|f| f == "0"), "{uid_line}");
    }
    assert_eq!(db.psql("SELECT 40 + 2").unwrap().trim(), "42");
    assert!(db
        .socket_dir()
        .join(format!(".s.PGSQL.{}", db.port()))
        .exists());
    db.stop();
    assert!(!alive(pid), "postmaster {pid} still running");
    assert!(!root.exists(), "{} still exists", root.display());
}

#[test]
fn drop_during_panic_cleans_up() {
    let (tx, rx) = std::sync::mpsc::channel();
    let result = std::thread::spawn(move || {
        let db = TempDb::start().unwrap();
        tx.send((db.pid(), db.root().to_path_buf())).unwrap();
        panic!("test body failed");
    })
    .join();
    assert!(result.is_err());
    let (pid, root) = rx.recv().unwrap();
    assert!(!alive(pid));
    assert!(!root.exists());
}

#[test]
fn the_fast_defaults_and_settings_apply() {
    let db = TempDb::builder()
        .max_connections(7)
        .setting("work_mem", "3MB")
        .start()
        .unwrap();
    let shown = db
        .psql("SHOW fsync; SHOW max_connections; SHOW work_mem; SHOW listen_addresses;")
        .unwrap();
    assert_eq!(shown.lines().collect::<Vec<_>>(), ["off", "7", "3MB", ""]);
}

#[test]
fn a_rejected_setting_reports_the_server_message() {
    let err = TempDb::builder()
        .setting("max_connections", "lots")
        .start()
        .unwrap_err();
    let Error::StartFailed {
        reason,
        rejected_settings,
        ..
    } = &err
    else {
        panic!("unexpected error: {err}");
    };
    assert!(matches!(reason, StartFailure::Exited(_)), "{err}");
    assert!(
        rejected_settings
            .iter()
            .any(|l| l.contains("invalid value for parameter \"max_connections\": \"lots\"")),
        "{err}"
    );
    assert!(err.to_string().contains("\"max_connections\""), "{err}");
}

#[test]
fn an_unknown_setting_reports_the_server_message() {
    let err = TempDb::builder()
        .setting("no_such_setting", "1")
        .start()
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("unrecognized configuration parameter \"no_such_setting\""),
        "{text}"
    );
}

#[test]
fn a_malformed_setting_name_is_refused_before_start() {
    let err = TempDb::builder()
        .setting("work mem", "1MB")
        .start()
        .unwrap_err();
    assert!(matches!(err, Error::InvalidOption { .. }), "{err}");
}

#[test]
fn no_binaries_error_lists_places_and_install_hint() {
    let empty = tempfile::tempdir().unwrap();
    let cases: [&[&Path]; 2] = [&[], &[empty.path()]];
    for dirs in cases {
        let err = TempDb::builder()
            .bin_dirs(dirs.iter().copied())
            .start()
            .unwrap_err();
        assert!(matches!(err, Error::BinariesNotFound { .. }), "{err}");
        let text = err.to_string();
        assert!(text.contains("apt-get install postgresql"), "{text}");
        for dir in dirs {
            assert!(text.contains(&dir.display().to_string()), "{text}");
        }
    }
}

/// The standard search takes the newest server: PostgreSQL 18 from `make
/// deps` over the machine's 15, which comes first on `PATH` here.
#[test]
fn the_newest_server_is_found() {
    let found = tempdb::find_bin_dir().unwrap();
    if Path::new(tempdb::DEPS_BIN_DIR).join("postgres").is_file() {
        assert_eq!(found, Path::new(tempdb::DEPS_BIN_DIR));
    }
    let major = |dir: &Path| -> u32 {
        let out = Command::new(dir.join("postgres"))
            .arg("--version")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .nth(2)
            .and_then(|v| v.split('.').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    assert!(major(&found) >= major(Path::new(common::PG15_BIN)));
}

#[test]
fn the_found_bin_dir_has_the_client_programs() {
    let dir = tempdb::find_bin_dir().unwrap();
    for program in ["psql", "pgbench", "initdb", "pg_ctl", "postgres"] {
        assert!(
            dir.join(program).is_file(),
            "{program} in {}",
            dir.display()
        );
    }
}

#[test]
fn shared_instance_is_reused() {
    let a = tempdb::shared().unwrap();
    let b = tempdb::shared().unwrap();
    assert_eq!(a.pid(), b.pid());
    assert!(a.tcp_addr().is_some());
    let over_tcp = psql_as(a, &a.tcp_conninfo().unwrap(), "");
    assert!(over_tcp.status.success(), "{}", stderr(&over_tcp));
}

#[test]
fn each_auth_method_accepts_the_right_password_and_rejects_a_wrong_one() {
    let methods = [
        AuthMethod::Password,
        AuthMethod::Md5,
        AuthMethod::ScramSha256,
    ];
    for method in methods {
        let db = TempDb::builder()
            .tcp(true)
            .auth(method)
            .user("alice", "wonder land")
            .start()
            .unwrap();
        let port = db.port();
        for host in [
            db.socket_dir().to_string_lossy().into_owned(),
            "127.0.0.1".into(),
        ] {
            let conninfo = format!("host='{host}' port={port} user=alice dbname=postgres");
            let good = psql_as(&db, &conninfo, "wonder land");
            assert!(
                good.status.success(),
                "{method:?} {host}: {}",
                stderr(&good)
            );
            assert_eq!(String::from_utf8_lossy(&good.stdout).trim(), "alice");
            let bad = psql_as(&db, &conninfo, "wonderland");
            assert!(
                !bad.status.success(),
                "{method:?} {host} accepted a wrong password"
            );
            assert!(
                stderr(&bad).contains("password authentication failed for user \"alice\""),
                "{method:?} {host}: {}",
                stderr(&bad)
            );
        }
    }
}

#[test]
fn passwords_stay_out_of_errors_and_debug_output() {
    let builder = TempDb::builder()
        .superuser_password("su-secret")
        .user("alice", "first-secret")
        .user("alice", "second-secret");
    let debug = format!("{builder:?}");
    for secret in ["su-secret", "first-secret", "second-secret"] {
        assert!(!debug.contains(secret), "{debug}");
    }
    let err = builder.start().unwrap_err();
    let text = err.to_string();
    assert!(text.contains("role \"alice\" already exists"), "{text}");
    for secret in ["su-secret", "first-secret", "second-secret"] {
        assert!(!text.contains(secret), "{text}");
    }
}

#[test]
fn databases_of_their_own_on_the_shared_server() {
    let db = tempdb::shared().unwrap();
    let first = db.create_database().unwrap();
    let second = db.create_database().unwrap();
    assert_ne!(first, second);
    for name in [&first, &second] {
        db.psql_in(name, "CREATE TABLE t (v int); INSERT INTO t VALUES (1);")
            .unwrap();
        let out = db
            .command("psql")
            .env("PGDATABASE", name)
            .args([
                "-X",
                "-A",
                "-t",
                "-c",
                "SELECT current_database(), count(*) FROM t",
            ])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            format!("{name}|1")
        );
    }
}

#[test]
fn md5_method_stores_md5_hashes() {
    let db = TempDb::builder()
        .auth(AuthMethod::Md5)
        .user("bob", "secret")
        .start()
        .unwrap();
    let hash = db
        .psql("SELECT rolpassword FROM pg_authid WHERE rolname = 'bob'")
        .unwrap();
    assert!(hash.trim().starts_with("md5"), "{hash}");
}

#[test]
fn ssl_verify_full_over_tcp() {
    let mut db = TempDb::builder().tcp(true).ssl(true).start().unwrap();
    let ca = db.ssl_files().unwrap().ca_cert.clone();
    let conninfo = format!(
        "host=localhost port={} user={} dbname=postgres sslmode=verify-full sslrootcert={}",
        db.port(),
        db.superuser(),
        ca.display()
    );
    let ok = psql_as(&db, &conninfo, "");
    assert!(ok.status.success(), "{}", stderr(&ok));

    db.use_server_cert(ServerCert::WrongHost).unwrap();
    let wrong = psql_as(&db, &conninfo, "");
    assert!(!wrong.status.success());
    assert!(
        stderr(&wrong).contains("does not match host name \"localhost\""),
        "{}",
        stderr(&wrong)
    );

    // libpq falls back to the common name when a certificate has no SAN.
    db.use_server_cert(ServerCert::LocalhostNoSan).unwrap();
    let no_san = psql_as(&db, &conninfo, "");
    assert!(no_san.status.success(), "{}", stderr(&no_san));
}

#[test]
fn client_certificate_authentication() {
    let db = TempDb::builder()
        .tcp(true)
        .ssl(true)
        .host_auth(AuthMethod::Cert)
        .host_ssl_only(true)
        .start()
        .unwrap();
    let files = db.ssl_files().unwrap();
    let base = format!(
        "host=localhost port={} user={} dbname=postgres sslmode=verify-full sslrootcert={}",
        db.port(),
        db.superuser(),
        files.ca_cert.display()
    );
    let with_cert = format!(
        "{base} sslcert={} sslkey={}",
        files.client.cert.display(),
        files.client.key.display()
    );
    let ok = psql_as(&db, &with_cert, "");
    assert!(ok.status.success(), "{}", stderr(&ok));
    let without = psql_as(&db, &format!("{base} sslcert=/nonexistent"), "");
    assert!(!without.status.success());
    let plain = format!(
        "host=127.0.0.1 port={} user={} dbname=postgres sslmode=disable",
        db.port(),
        db.superuser()
    );
    let refused = psql_as(&db, &plain, "");
    assert!(
        stderr(&refused).contains("no encryption"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn key_files_are_private_to_their_users() {
    use std::os::unix::fs::MetadataExt;
    let db = TempDb::builder().ssl(true).start().unwrap();
    assert_eq!(db.psql("SHOW ssl").unwrap().trim(), "on");
    let files = db.ssl_files().unwrap();
    let server_uid = std::fs::metadata(db.data_dir()).unwrap().uid();
    let server_keys = [
        ServerCert::Localhost,
        ServerCert::LocalhostNoSan,
        ServerCert::WrongHost,
    ]
    .map(|which| files.server_cert(which).key.clone());
    // SAFETY: geteuid has no preconditions.
    let our_uid = unsafe { libc::geteuid() };
    let expected = server_keys
        .iter()
        .map(|k| (k, server_uid))
        .chain([(&files.client.key, our_uid)]);
    for (key, uid) in expected {
        let meta = std::fs::metadata(key).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600, "{}", key.display());
        assert_eq!(meta.uid(), uid, "{}", key.display());
    }
}

#[test]
fn switching_certificates_needs_ssl() {
    let mut db = TempDb::start().unwrap();
    let err = db.use_server_cert(ServerCert::WrongHost).unwrap_err();
    assert!(matches!(err, Error::SslNotEnabled), "{err}");
}

#[test]
fn a_start_time_out_is_reported() {
    let err = TempDb::builder()
        .start_timeout(std::time::Duration::ZERO)
        .start()
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::StartFailed {
                reason: StartFailure::TimedOut(_),
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("not accepting connections"),
        "{err}"
    );
}

#[test]
fn a_missing_server_os_user_is_named() {
    let result = TempDb::builder().os_user("pgbolt_no_such_user").start();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let err = result.unwrap_err();
        assert!(matches!(err, Error::OsUserMissing { .. }), "{err}");
        assert!(err.to_string().contains("\"pgbolt_no_such_user\""), "{err}");
    } else {
        // Not root: the server runs as the current user; the option is moot.
        assert!(result.is_ok());
    }
}

#[test]
fn keep_leaves_a_running_server_and_a_working_stop_command() {
    let kept = TempDb::start().unwrap().keep();
    let pid_file = kept.data_dir.join("postmaster.pid");
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(alive(pid));
    let psql = Command::new("sh")
        .arg("-c")
        .arg(format!("{} -X -A -t -c 'SELECT 7'", kept.connect_command))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&psql.stdout).trim(),
        "7",
        "{}",
        stderr(&psql)
    );
    let stop = Command::new("sh")
        .arg("-c")
        .arg(&kept.stop_command)
        .output()
        .unwrap();
    assert!(stop.status.success(), "{}", stderr(&stop));
    // pg_ctl waited for the shutdown; the postmaster is our child, so reap it.
    // SAFETY: waitpid accepts a null status pointer.
    unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
    assert!(!alive(pid));
    assert!(!kept.root.exists());
}

/// Environment variable that turns [`helper_process_holding_instances`]
/// into a helper process for the clean-up tests below.
const HELPER_MODE: &str = "PGBOLT_TEMPDB_HELPER";

/// Helper process body, inert in a normal run. The clean-up tests re-run this
/// test binary with only this test and `HELPER_MODE` set: it starts one
/// private instance (leaked on purpose with `mem::forget`, so only the exit
/// paths can clean it) and the shared one, reports them on stdout, and then
/// either returns (`exit`) or waits to be killed (`wait`).
#[test]
fn helper_process_holding_instances() {
    let Ok(mode) = std::env::var(HELPER_MODE) else {
        return;
    };
    let db = TempDb::start().unwrap();
    let shared = tempdb::shared().unwrap();
    println!(
        "READY {} {} {} {}",
        db.pid(),
        db.root().display(),
        shared.pid(),
        shared.root().display()
    );
    std::mem::forget(db);
    if mode == "wait" {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
    }
}

struct Helper {
    child: std::process::Child,
    instances: Vec<(i32, std::path::PathBuf)>,
    /// Kept open so the helper's last lines of output do not hit a closed pipe.
    _stdout: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

/// A failing test must not leave a helper waiting forever.
impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn_helper(mode: &str) -> Helper {
    use std::io::BufRead;
    let mut command = Command::new(std::env::current_exe().unwrap());
    let mut child = common::default_signals(&mut command)
        .args([
            "--exact",
            "tempdb::helper_process_holding_instances",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HELPER_MODE, mode)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    while let Some(Ok(line)) = lines.next() {
        // libtest prints "test <name> ... " on the same line first.
        if let Some((_, rest)) = line.split_once("READY ") {
            let f: Vec<&str> = rest.split(' ').collect();
            let instances = vec![
                (f[0].parse().unwrap(), f[1].into()),
                (f[2].parse().unwrap(), f[3].into()),
            ];
            return Helper {
                child,
                instances,
                _stdout: lines,
            };
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("helper ended without reporting its instances");
}

/// Running, and not a zombie nobody has reaped yet.
fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

fn assert_cleaned(instances: &[(i32, std::path::PathBuf)]) {
    for (pid, root) in instances {
        assert!(!running(*pid), "postmaster {pid} still running");
        assert!(!root.exists(), "{} still exists", root.display());
    }
}

#[test]
fn process_exit_stops_leaked_and_shared_instances() {
    let mut helper = spawn_helper("exit");
    let status = helper.child.wait().unwrap();
    assert!(status.success(), "{status}");
    assert_cleaned(&helper.instances);
}

#[test]
fn termination_signals_stop_everything_and_end_the_process_by_that_signal() {
    use std::os::unix::process::ExitStatusExt;
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let mut helper = spawn_helper("wait");
        // SAFETY: signalling our own child.
        unsafe { libc::kill(helper.child.id() as i32, signal) };
        let status = helper.child.wait().unwrap();
        assert_eq!(status.signal(), Some(signal), "{status}");
        assert_cleaned(&helper.instances);
    }
}

#[test]
fn after_sigkill_the_watchdog_cleans_up() {
    let mut helper = spawn_helper("wait");
    helper.child.kill().unwrap();
    helper.child.wait().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while helper
        .instances
        .iter()
        .any(|(pid, root)| running(*pid) || root.exists())
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_cleaned(&helper.instances);
}
