//! Connection storms: more clients than the server takes, refused before
//! the run (the preflight), while connecting (`--no-preflight`), and
//! during the run (`-C` while other sessions take the free slots). The
//! real pgbench in the same situation is the oracle for the exit status
//! and the key phrases.

use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::robust_support::*;
use pgbolt::tempdb::TempDb;

fn small_server(max_connections: u32) -> TempDb {
    TempDb::builder()
        .max_connections(max_connections)
        .start()
        .expect("throwaway server starts")
}

/// Sessions that sit in `pg_sleep`, holding connection slots; killed
/// when dropped.
struct Holders(Vec<Child>);

impl Holders {
    fn open(db: &TempDb, n: usize) -> Holders {
        let children = (0..n)
            .map(|_| {
                db.command("psql")
                    .args(["-X", "-q", "-c", "SELECT pg_sleep(60)"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("psql starts")
            })
            .collect();
        Holders(children)
    }
}

impl Drop for Holders {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Keeps up to `n` sessions sitting in `pg_sleep` until `stop`: a session
/// refused for want of a slot is replaced by a new attempt, so every slot
/// that a reconnecting client gives up is soon taken.
fn take_free_slots(db: &TempDb, n: usize, stop: &AtomicBool) {
    let mut sessions: Vec<Child> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        sessions.retain_mut(|c| matches!(c.try_wait(), Ok(None)));
        if sessions.len() < n {
            sessions.append(&mut Holders::open(db, 1).0);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(Holders(sessions));
}

/// Waits until the server has `n` sessions running `pg_sleep` and no
/// other client session (the backends of earlier set-up commands end a
/// little after their clients, and the preflight would count them).
fn wait_for_sleepers(db: &TempDb, n: usize) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let query = "SELECT count(*) FILTER (WHERE query LIKE 'SELECT pg_sleep%') || ' ' || count(*) \
                 FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()";
    loop {
        let counts: Vec<usize> = db
            .psql(query)
            .map(|s| {
                s.split_whitespace()
                    .filter_map(|c| c.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        if counts.len() == 2 && counts[0] >= n && counts[1] == counts[0] {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "holders never connected alone: {counts:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The client number in `could not create connection for client N`.
fn failed_client(stderr: &str) -> Option<u32> {
    // Anywhere in the text: pgbench's two threads may both fail and write
    // their lines into each other.
    const PHRASE: &str = "could not create connection for client ";
    let at = stderr.find(PHRASE)? + PHRASE.len();
    let digits: String = stderr[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// More clients than the server has free slots (two are held by other
/// sessions): pgbolt refuses before opening any client connection and
/// gives the numbers; pgbench fails while connecting. Both exit 1.
#[test]
fn preflight_refuses_more_clients_than_free_slots() {
    let db = small_server(10);
    let dbname = database(&db, true);
    let _holders = Holders::open(&db, 2);
    wait_for_sleepers(&db, 2);
    let args = ["-n", "-t", "10", "-c", "9"];
    let bolt = spawn(pgbolt(&db, &dbname, &args)).wait(Duration::from_secs(60));
    let bench = spawn(pgbench(&db, &dbname, &args)).wait(Duration::from_secs(60));
    let err = bolt.stderr();
    assert_eq!(bolt.code(), Some(1), "{err}");
    assert_eq!(bench.code(), Some(1), "{}", bench.stderr());
    assert!(
        err.contains("the server cannot accept 9 more connections: max_connections is 10"),
        "{err}"
    );
    // The two holders are in use; a backend that is still exiting (the
    // psql that waited for them) may be counted too, so the advice
    // follows whatever count the server gave.
    let in_use: u32 = err
        .split(" are in use")
        .next()
        .and_then(|head| head.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in use: {err}"));
    assert!((2..=3).contains(&in_use), "{err}");
    let left = 10 - in_use;
    assert!(
        err.contains(&format!("{in_use} are in use, which leaves {left}")),
        "{err}"
    );
    assert!(
        err.contains(&format!("Run with fewer clients (-c {left})")),
        "{err}"
    );
    assert!(
        !bolt.stdout().contains("tps = "),
        "no report before the run"
    );
}

/// `--no-preflight` with more clients than `max_connections`: the server
/// refuses one of them (53300). The message names the client and carries
/// the server's error, as pgbench's does; exit 1, no report.
#[test]
fn refused_connection_names_the_client_and_the_server_error() {
    let db = small_server(6);
    let dbname = database(&db, true);
    let args = ["-n", "-t", "10", "-c", "12", "-j", "2"];
    let mut with = args.to_vec();
    with.push("--no-preflight");
    let bolt = spawn(pgbolt(&db, &dbname, &with)).wait(Duration::from_secs(60));
    let bench = spawn(pgbench(&db, &dbname, &args)).wait(Duration::from_secs(60));
    for (run, name) in [(&bolt, "pgbolt"), (&bench, "pgbench")] {
        let err = run.stderr();
        assert_eq!(run.code(), Some(1), "{name}: {err}");
        assert!(
            err.contains("FATAL:  sorry, too many clients already"),
            "{name}: {err}"
        );
        let client = failed_client(&err).unwrap_or_else(|| panic!("{name}: {err}"));
        assert!(client < 12, "{name}: {err}");
        assert!(!run.stdout().contains("tps = "), "{name}: no report");
    }
}

/// Under `-C` each transaction connects again; when other sessions take
/// every free slot in the middle of the run, the clients abort with
/// pgbench's message, the report is printed and the exit status is 2,
/// long before `-T` (which is far off, so that a loaded machine taking a
/// while to fill the slots does not reach it).
#[test]
fn slots_taken_mid_run_abort_reconnecting_clients() {
    let db = small_server(8);
    let dbname = database(&db, true);
    let run = spawn(pgbolt(
        &db,
        &dbname,
        &["-n", "-C", "-T", "60", "-c", "2", "-S"],
    ));
    wait_for_backends(&db, &dbname, 1);
    let stop = AtomicBool::new(false);
    let done = std::thread::scope(|s| {
        s.spawn(|| take_free_slots(&db, 10, &stop));
        let done = run.wait(Duration::from_secs(90));
        stop.store(true, Ordering::Relaxed);
        done
    });
    done.assert_aborted_with(&[
        "FATAL:  sorry, too many clients already",
        "aborted while establishing connection",
    ]);
    assert!(
        done.elapsed < Duration::from_secs(60),
        "the clients did not abort"
    );
}

/// Regression: a server that closed a new connection without reading the
/// startup packet (as a listener closed during a shutdown resets the
/// connections waiting to be accepted) was reported as `Connection reset
/// by peer`; libpq, so pgbench, says `server closed the connection
/// unexpectedly`. A fake server on a Unix socket accepts each connection
/// and drops it unread.
#[test]
fn a_connection_reset_at_startup_is_reported_as_pgbench_reports_it() {
    use std::os::unix::net::UnixListener;
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join(".s.PGSQL.5432");
    let listener = UnixListener::bind(&socket).unwrap();
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let server = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                // Give the client time to send its startup packet, then
                // close with it unread.
                std::thread::sleep(Duration::from_millis(100));
                drop(stream);
            }
        })
    };
    let want = format!(
        "error: connection to server on socket \"{}\" failed: server closed the connection \
         unexpectedly\n\tThis probably means the server terminated abnormally\n\tbefore or \
         while processing the request.\n",
        socket.display()
    );
    for (name, path) in [
        ("pgbolt", pgbolt_path().to_string_lossy().into_owned()),
        ("pgbench", pgbench_path().to_owned()),
    ] {
        let mut cmd = std::process::Command::new(path);
        cmd.args(["-n", "-t", "1", "-h"])
            .arg(dir.path())
            .args(["-U", "nobody", "nodb"])
            .env("LC_ALL", "C")
            .stdin(Stdio::null());
        let done = spawn(cmd).wait(Duration::from_secs(30));
        let err = done.stderr();
        assert_eq!(done.code(), Some(1), "{name}: {err}");
        assert!(err.contains(&want), "{name}: {err}");
    }
    stop.store(true, Ordering::SeqCst);
    let _ = std::os::unix::net::UnixStream::connect(&socket);
    server.join().unwrap();
}
