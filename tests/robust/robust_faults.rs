//! Server-side faults during a run: backends killed, the server shut
//! down, the server frozen. Each asserts on what the user sees: the abort
//! messages, the report, the logs, the exit status, and that pgbolt ends.

use std::time::Duration;

use crate::robust_support::*;

/// Clients that logged at least two transactions ending after `after`
/// (microseconds since the epoch): the clients that went on. A client
/// whose backend was terminated before `after` can still complete the
/// transaction whose end was on its way, never a second one.
///
/// (A last transaction within a second of the latest one is no sign of
/// it: at scale 1 every transaction waits for the one branch row, and on a
/// loaded machine a surviving client can wait longer than that.)
fn clients_going_on_after(lines: &[String], after: u64) -> usize {
    let ended_after = |l: &String| -> Option<u32> {
        let f: Vec<&str> = l.split(' ').collect();
        let at = f.get(4)?.parse::<u64>().ok()? * 1_000_000 + f.get(5)?.parse::<u64>().ok()?;
        (at > after).then(|| f.first()?.parse().ok())?
    };
    let mut counts = std::collections::BTreeMap::<u32, usize>::new();
    for client in lines.iter().filter_map(ended_after) {
        *counts.entry(client).or_default() += 1;
    }
    counts.values().filter(|&&n| n >= 2).count()
}

/// Microseconds since the epoch, the clock of the transaction logs.
fn now_us() -> u64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970");
    since.as_secs() * 1_000_000 + u64::from(since.subsec_micros())
}

/// Regression: a backend terminated while its client waited for results
/// sent FATAL and closed the socket in one go; the client stopped reading
/// after the short read and never saw the end of file, so the run hung
/// instead of ending at `-T`.
#[test]
fn killed_backends_abort_their_clients_and_the_others_finish() {
    let db = server();
    let dbname = database(db, true);
    let logs = tempfile::tempdir().unwrap();
    let prefix = logs.path().join("run");
    let run = spawn(pgbolt(
        db,
        &dbname,
        &[
            "-T",
            "6",
            "-c",
            "8",
            "-j",
            "2",
            "-l",
            &format!("--log-prefix={}", prefix.display()),
        ],
    ));
    let pids = running_clients(db, &dbname, 8);
    for pid in &pids[..3] {
        db.psql(&format!("SELECT pg_terminate_backend({pid})"))
            .unwrap();
    }
    let killed = now_us();
    let done = run.wait(Duration::from_secs(30));
    done.assert_aborted_with(&[]);
    let (out, err) = (done.stdout(), done.stderr());
    let aborts: Vec<&str> = err
        .lines()
        .filter(|l| l.contains(" aborted in command "))
        .collect();
    assert_eq!(aborts.len(), 3, "{err}");
    // Killed while its client waits for results or between two
    // statements, a backend's client reports the server's FATAL message,
    // as pgbench does. Killed just after it answered, its FATAL is shown
    // on a line of its own and the client fails on its next command.
    const FATAL: &str = "FATAL:  terminating connection due to administrator command";
    let shown_alone = err.lines().filter(|l| *l == FATAL).count();
    let died = aborts
        .iter()
        .filter(|a| a.ends_with("; perhaps the backend died while processing"))
        .count();
    assert_eq!(shown_alone, died, "{err}");
    for abort in aborts {
        assert!(abort.starts_with("pgbolt: error: client "), "{abort}");
        assert!(
            abort.ends_with(FATAL) || abort.ends_with("perhaps the backend died while processing"),
            "{abort}"
        );
    }
    let lines = log_lines(logs.path(), "run");
    assert_eq!(
        lines.len() as u64,
        processed(&out),
        "every transaction logged"
    );
    assert_eq!(
        clients_going_on_after(&lines, killed),
        5,
        "the 5 other clients went on"
    );
}

/// A backend killed while its client sleeps between two statements (or
/// between two pipelines): the next send finds the socket closed, and like
/// libpq (and so pgbench) pgbolt reads the server's last message before it
/// reports the failure.
///
/// The backend is killed once the client has run `\shell touch`, so once
/// it has read every answer: the server shows the backend idle as soon as
/// it has answered, and a backend killed before its client read the answer
/// is reported otherwise (by both programs, see the test of a backend
/// terminated right after answering), which made pgbolt's run and
/// pgbench's differ now and then on a loaded machine.
#[test]
fn a_backend_killed_between_statements_is_reported_as_pgbench_reports_it() {
    let db = server();
    let dbname = database(db, false);
    let dir = tempfile::tempdir().unwrap();
    let slept = dir.path().join("slept");
    let shell = format!("\\shell touch {}\n", slept.display());
    let cases = [
        (
            "sleepy.sql",
            format!("SELECT 1;\n{shell}\\sleep 1500 ms\nSELECT 2;\n"),
            "simple",
            3,
        ),
        (
            "piped.sql",
            format!(
                "\\startpipeline\nSELECT 1;\n\\endpipeline\n{shell}\\sleep 1500 ms\n\\startpipeline\n\
                 SELECT 2;\n\\endpipeline\n"
            ),
            "extended",
            7,
        ),
    ];
    for (file, text, mode, command) in cases {
        let script = dir.path().join(file);
        std::fs::write(&script, text).unwrap();
        let script = script.display().to_string();
        let args = [
            "-n",
            "-c",
            "1",
            "-t",
            "1",
            "-M",
            mode,
            "-f",
            script.as_str(),
        ];
        let mut seen = Vec::new();
        for (name, cmd) in [
            ("pgbench", pgbench(db, &dbname, &args)),
            ("pgbolt", pgbolt(db, &dbname, &args)),
        ] {
            let _ = std::fs::remove_file(&slept);
            let run = spawn(cmd);
            let sleeping = format!(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{dbname}' \
                 AND state = 'idle' AND query = 'SELECT 1;'"
            );
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while !slept.exists() || db.psql(&sleeping).unwrap().trim() != "t" {
                assert!(std::time::Instant::now() < deadline, "{name} never slept");
                std::thread::sleep(Duration::from_millis(20));
            }
            seen.push(outcome(run, name));
        }
        assert_eq!(seen[1], seen[0], "{file}: pgbolt against pgbench");
        assert_eq!(seen[0].0, Some(2), "{file}");
        let abort = format!(
            "aborted in command {command} query 0: FATAL:  terminating connection due to administrator command"
        );
        assert!(
            seen[0].1.iter().any(|l| l.ends_with(&abort)),
            "{file}: {:?}",
            seen[0].1
        );
    }
}

/// Regression: a backend that died without a word (SIGKILL) while its
/// client slept between two statements made pgbolt print the connection's
/// own error (`server closed the connection unexpectedly` and libpq's two
/// lines of explanation) before pgbench's `perhaps the backend died while
/// processing`, which pgbench prints alone. As in the test above, the
/// backend is killed once its client has read every answer.
#[test]
fn a_backend_killed_without_a_word_is_reported_as_pgbench_reports_it() {
    let db = own_server();
    let dbname = database(&db, false);
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("sleepy.sql");
    let slept = dir.path().join("slept");
    std::fs::write(
        &script,
        format!(
            "SELECT 1;\n\\shell touch {}\n\\sleep 1500 ms\nSELECT 2;\n",
            slept.display()
        ),
    )
    .unwrap();
    let script = script.display().to_string();
    let args = ["-n", "-c", "1", "-t", "1", "-f", script.as_str()];
    let sleeping = format!(
        "SELECT pid FROM pg_stat_activity WHERE datname = '{dbname}' AND state = 'idle' \
         AND query = 'SELECT 1;'"
    );
    let mut seen = Vec::new();
    for (name, cmd) in [
        ("pgbench", pgbench(&db, &dbname, &args)),
        ("pgbolt", pgbolt(&db, &dbname, &args)),
    ] {
        let _ = std::fs::remove_file(&slept);
        let run = spawn(cmd);
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let pid = loop {
            let pid = db.psql(&sleeping).unwrap().trim().parse::<i32>();
            if let Some(pid) = pid.ok().filter(|_| slept.exists()) {
                break pid;
            }
            assert!(std::time::Instant::now() < deadline, "{name} never slept");
            std::thread::sleep(Duration::from_millis(20));
        };
        signal(pid, libc::SIGKILL);
        seen.push(outcome(run, name));
        // The server restarts after the crash of one of its processes.
        while db.psql("SELECT 1").is_err() {
            assert!(std::time::Instant::now() < deadline, "no restart");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    assert_eq!(seen[1], seen[0], "pgbolt against pgbench");
    assert_eq!(seen[0].0, Some(2));
    assert_eq!(
        seen[0].1,
        [
            "error: client 0 aborted in command 3 (SQL) of script 0; perhaps the backend died \
             while processing",
            "error: Run was aborted; the above results are incomplete.",
        ]
    );
}

/// Regression: a backend terminated just after it answered (its FATAL
/// came in the same read as the ReadyForQuery) was taken as failing the
/// client's next query. libpq shows that FATAL at once, as a notice, and
/// the next command fails with `perhaps the backend died while
/// processing`; so does pgbolt now. The client is frozen while its backend
/// answers and is terminated, so both messages wait in its socket.
#[test]
fn a_backend_terminated_right_after_answering_is_reported_as_pgbench_reports_it() {
    let db = server();
    let dbname = database(db, false);
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("answered.sql");
    std::fs::write(&script, "SELECT pg_sleep(2);\nSELECT 2;\n").unwrap();
    let script = script.display().to_string();
    let args = ["-n", "-c", "1", "-t", "1", "-f", script.as_str()];
    let backend_in = |state: &str| {
        format!(
            "SELECT pid FROM pg_stat_activity WHERE datname = '{dbname}' AND state = '{state}' \
             AND query = 'SELECT pg_sleep(2);'"
        )
    };
    let mut seen = Vec::new();
    for (name, cmd) in [
        ("pgbench", pgbench(db, &dbname, &args)),
        ("pgbolt", pgbolt(db, &dbname, &args)),
    ] {
        let run = spawn(cmd);
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let wait_for = |state: &str| loop {
            if let Ok(pid) = db.psql(&backend_in(state)).unwrap().trim().parse::<i32>() {
                break pid;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{name}: no {state} backend"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        wait_for("active");
        let frozen = Frozen::freeze(vec![run.pid]);
        let pid = wait_for("idle");
        // With a timeout, pg_terminate_backend returns once the backend
        // is gone, so its FATAL is already in the frozen client's socket.
        db.psql(&format!("SELECT pg_terminate_backend({pid}, 10000)"))
            .unwrap();
        drop(frozen);
        seen.push(outcome(run, name));
    }
    assert_eq!(seen[1], seen[0], "pgbolt against pgbench");
    assert_eq!(
        seen[0],
        (
            Some(2),
            vec![
                "FATAL:  terminating connection due to administrator command".to_owned(),
                "error: client 0 aborted in command 1 (SQL) of script 0; perhaps the backend \
                 died while processing"
                    .to_owned(),
                "error: Run was aborted; the above results are incomplete.".to_owned(),
            ]
        )
    );
}

/// `--exit-on-abort`: the first killed backend ends the whole run at
/// once, with pgbench's message and exit status 2. (Ending well before
/// `-T` is what shows it; the bound leaves a loaded machine plenty of
/// time.)
#[test]
fn exit_on_abort_stops_the_run_at_the_first_killed_backend() {
    let db = server();
    let dbname = database(db, true);
    let run = spawn(pgbolt(
        db,
        &dbname,
        &["-T", "60", "-c", "8", "-j", "2", "--exit-on-abort"],
    ));
    let pids = running_clients(db, &dbname, 8);
    let killed = std::time::Instant::now();
    db.psql(&format!("SELECT pg_terminate_backend({})", pids[0]))
        .unwrap();
    let done = run.wait(Duration::from_secs(90));
    let err = done.stderr();
    assert_eq!(done.code(), Some(2), "{err}");
    assert!(
        err.contains("Run was aborted due to an error in thread "),
        "{err}"
    );
    assert!(
        done.ended.duration_since(killed) < Duration::from_secs(30),
        "the run went on after the abort"
    );
}

/// The distinct client numbers of the `client N ... aborted ...` lines.
fn aborted_clients(stderr: &str) -> Vec<u32> {
    let mut ids: Vec<u32> = stderr
        .lines()
        .filter(|l| l.contains(" aborted "))
        .filter_map(|l| l.strip_prefix("pgbolt: error: client "))
        .filter_map(|l| l.split(' ').next()?.parse().ok())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Stops the server with `signal` (SIGINT: fast shutdown, SIGQUIT:
/// immediate shutdown) in the middle of a `-T 60` run: every client
/// aborts, the report is printed, exit status 2, and pgbolt ends soon
/// after the server instead of at `-T` (the bound leaves a loaded machine
/// plenty of time).
fn server_stopped_mid_run(signal_number: i32) {
    let db = own_server();
    let dbname = database(&db, true);
    let run = spawn(pgbolt(&db, &dbname, &["-T", "60", "-c", "8", "-j", "2"]));
    running_clients(&db, &dbname, 8);
    let stopped = std::time::Instant::now();
    signal(db.pid(), signal_number);
    let done = run.wait(Duration::from_secs(90));
    done.assert_aborted_with(&[]);
    let err = done.stderr();
    assert_eq!(aborted_clients(&err), (0..8).collect::<Vec<_>>(), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        done.ended.duration_since(stopped) < Duration::from_secs(30),
        "pgbolt outlived the server by {:?}",
        done.ended.duration_since(stopped)
    );
}

/// Regression: backends that received the fast shutdown while their
/// client waited sent FATAL and closed at once; the client never read the
/// end of file and the run hung (the same bug as a terminated backend).
#[test]
fn fast_shutdown_aborts_every_client() {
    server_stopped_mid_run(libc::SIGINT);
}

#[test]
fn immediate_shutdown_aborts_every_client() {
    server_stopped_mid_run(libc::SIGQUIT);
}

/// Processes frozen with SIGSTOP, resumed when dropped (before the
/// server, which is declared first).
struct Frozen(Vec<i32>);

impl Frozen {
    fn freeze(pids: Vec<i32>) -> Frozen {
        for &pid in &pids {
            signal(pid, libc::SIGSTOP);
        }
        Frozen(pids)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        for &pid in &self.0 {
            signal(pid, libc::SIGCONT);
        }
    }
}

/// A server that stops answering (backends and postmaster frozen) does
/// not keep a `-T` run going: after the end and a grace period the
/// queries in flight are cancelled, the connections closed, and the
/// report says the run is incomplete. The cancel requests themselves go
/// to the frozen postmaster and must not hold up the end either: waiting
/// for them (10 s each) would take the run past 3 + 5 + 10 s, while pgbolt
/// gives them a second; the bound in between leaves a loaded machine
/// several seconds.
#[test]
fn frozen_server_ends_a_timed_run_after_the_grace_period() {
    let db = own_server();
    let dbname = database(&db, true);
    let run = spawn(pgbolt(&db, &dbname, &["-T", "3", "-c", "4", "-j", "2"]));
    let mut pids = running_clients(&db, &dbname, 4);
    pids.push(db.pid());
    let _frozen = Frozen::freeze(pids);
    let done = run.wait(Duration::from_secs(40));
    done.assert_aborted_with(&[
        "4 of the clients were still in a transaction 5 s after the end of the run",
    ]);
    assert!(
        done.elapsed < Duration::from_secs(3 + 5 + 8),
        "took {:?}",
        done.elapsed
    );
}

/// With `-t` there is no end to wait for: against a frozen server pgbolt
/// waits, as pgbench does, until Ctrl-C, which ends it promptly with the
/// partial report (it gives the cancel requests to the frozen postmaster
/// a second, where waiting for them would take 10 s).
#[test]
fn frozen_server_and_ctrl_c_end_a_transaction_count_run() {
    let db = own_server();
    let dbname = database(&db, true);
    let run = spawn(pgbolt(
        &db,
        &dbname,
        &["-t", "1000000", "-c", "4", "-j", "2"],
    ));
    let mut pids = running_clients(&db, &dbname, 4);
    pids.push(db.pid());
    let _frozen = Frozen::freeze(pids);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(run.try_finish().is_none(), "a -t run ended on its own");
    let interrupted = std::time::Instant::now();
    run.signal(libc::SIGINT);
    let done = run.wait(Duration::from_secs(30));
    let (out, err) = (done.stdout(), done.stderr());
    assert_eq!(done.code(), Some(130), "{err}");
    assert!(
        err.contains("Run was interrupted; the above results are incomplete."),
        "{err}"
    );
    assert!(processed(&out) > 0, "{out}");
    assert!(
        done.ended.duration_since(interrupted) < Duration::from_secs(8),
        "took {:?} after Ctrl-C",
        done.ended.duration_since(interrupted)
    );
}

/// The exit status of a run of `name` (pgbench or pgbolt) and its standard
/// error lines without the program's name in front, so that both
/// programs' lines compare equal.
fn outcome(run: Running, name: &str) -> (Option<i32>, Vec<String>) {
    let done = run.wait(Duration::from_secs(30));
    let prefix = format!("{name}: ");
    let lines = done
        .stderr()
        .lines()
        .map(|l| l.strip_prefix(&prefix).unwrap_or(l).to_owned())
        .collect();
    (done.code(), lines)
}
