//! SIGINT and SIGTERM during `-i` and during a run: pgbolt says what
//! happened, leaves nothing a rerun cannot fix, prints what it measured,
//! flushes its logs, and exits with 128 plus the signal number.

use std::time::{Duration, Instant};

use crate::robust_support::*;

const SIGNALS: [(i32, &str); 2] = [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")];

/// Waits until `pgbench_accounts` exists in `dbname` (the data is being
/// generated).
fn wait_for_accounts_table(dbname: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = server()
            .psql_in(
                dbname,
                "SELECT count(*) FROM pg_class WHERE relname = 'pgbench_accounts'",
            )
            .unwrap_or_default();
        if found.trim() == "1" {
            return;
        }
        assert!(Instant::now() < deadline, "pgbench_accounts never appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Regression: a signal during `-i` ended pgbolt without a word (the
/// default action), leaving the user to guess the tables' state.
#[test]
fn signal_during_init_says_so_and_a_rerun_starts_over() {
    let db = server();
    for (signo, name) in SIGNALS {
        let dbname = database(db, false);
        let run = spawn(pgbolt(db, &dbname, &["-i", "-s", "30"]));
        wait_for_accounts_table(&dbname);
        std::thread::sleep(Duration::from_millis(300));
        run.signal(signo);
        let done = run.wait(Duration::from_secs(30));
        let err = done.stderr();
        assert_eq!(done.code(), Some(128 + signo), "{name}: {err}");
        assert!(
            err.contains("pgbolt: error: initialization was interrupted"),
            "{name}: {err}"
        );
        assert!(
            !err.contains("\ndone in "),
            "{name}: it finished before the signal"
        );

        let rerun =
            spawn(pgbolt(db, &dbname, &["-i", "-q", "-s", "1"])).wait(Duration::from_secs(60));
        assert_eq!(rerun.code(), Some(0), "{name}: {}", rerun.stderr());
        let rows = db
            .psql_in(&dbname, "SELECT count(*) FROM pgbench_accounts")
            .unwrap();
        assert_eq!(rows.trim(), "100000", "{name}");
    }
}

/// A signal during a run: the partial report, every transaction it counts
/// in the logs, `Run was interrupted`, exit 128 + signal.
#[test]
fn signal_during_a_run_reports_and_flushes_the_logs() {
    let db = server();
    let dbname = database(db, true);
    for (signo, name) in SIGNALS {
        let logs = tempfile::tempdir().unwrap();
        let prefix = logs.path().join("sig");
        let before = history_rows(db, &dbname);
        let run = spawn(pgbolt(
            db,
            &dbname,
            &[
                "-T",
                "30",
                "-c",
                "4",
                "-j",
                "2",
                "-l",
                &format!("--log-prefix={}", prefix.display()),
            ],
        ));
        wait_for_backends(db, &dbname, 4);
        wait_for_history(db, &dbname, before + 5);
        run.signal(signo);
        let done = run.wait(Duration::from_secs(20));
        let (out, err) = (done.stdout(), done.stderr());
        assert_eq!(done.code(), Some(128 + signo), "{name}: {err}");
        assert!(
            err.contains("Run was interrupted; the above results are incomplete."),
            "{name}: {err}"
        );
        let n = processed(&out);
        assert!(n > 0, "{name}: {out}");
        let lines = log_lines(logs.path(), "sig");
        assert_eq!(
            lines.len() as u64,
            n,
            "{name}: every counted transaction is in the logs"
        );
        assert!(
            lines.iter().all(|l| l.split(' ').count() == 6),
            "{name}: whole lines only"
        );
    }
}

/// Regression: pgbolt installed its handler even for a signal it was
/// started with ignored, as a shell starts a command in the background
/// (`pgbolt ... &` in a script ignores SIGINT), so a Ctrl-C meant for the
/// shell's foreground stopped it. pgbench, without handlers, goes on; so
/// does pgbolt now.
#[test]
fn a_signal_ignored_at_start_stays_ignored() {
    use std::os::unix::process::CommandExt;
    let db = server();
    let dbname = database(db, true);
    let mut cmd = pgbolt(db, &dbname, &["-n", "-S", "-T", "2", "-c", "2"]);
    // SAFETY: only sets a signal disposition between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            Ok(())
        });
    }
    let run = spawn(cmd);
    wait_for_backends(db, &dbname, 2);
    run.signal(libc::SIGINT);
    let done = run.wait(Duration::from_secs(30));
    let err = done.stderr();
    assert_eq!(done.code(), Some(0), "{err}");
    assert!(!err.contains("interrupted"), "{err}");
}

/// The client backends in `dbname` whose application is `application`
/// and whose state is `state`, with what they wait for.
fn sessions(dbname: &str, application: &str, state: &str) -> String {
    server()
        .psql(&format!(
            "SELECT pid, coalesce(wait_event_type, '') FROM pg_stat_activity \
             WHERE datname = '{dbname}' AND application_name = '{application}' \
             AND state = '{state}' AND backend_type = 'client backend'"
        ))
        .unwrap_or_default()
}

/// Waits until `ready` holds, for at most 30 s.
fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ready() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A `psql` session holding `lock` on `table` in `dbname` until dropped.
struct LockHolder {
    psql: std::process::Child,
}

impl LockHolder {
    fn take(dbname: &str, table: &str, lock: &str) -> LockHolder {
        use std::io::Write;
        let db = server();
        let mut psql = db
            .command(db.bin("psql"))
            .args(["-X", "-q", "-d", dbname])
            .env("PGAPPNAME", "holder")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("psql starts");
        let input = psql.stdin.as_mut().unwrap();
        write!(input, "BEGIN;\nLOCK TABLE {table} IN {lock} MODE;\n").unwrap();
        input.flush().unwrap();
        wait_until("the lock was never taken", || {
            !sessions(dbname, "holder", "idle in transaction").is_empty()
        });
        LockHolder { psql }
    }
}

impl Drop for LockHolder {
    fn drop(&mut self) {
        drop(self.psql.stdin.take());
        let _ = self.psql.wait();
    }
}

/// Signals pgbolt, run with `args` in `dbname`, once its statement waits
/// for a lock another session holds, and checks that it leaves no backend
/// behind (its statement was cancelled; without the cancel, the backend
/// would wait for the lock for ever).
fn signal_while_waiting_for_a_lock(
    dbname: &str,
    args: &[&str],
    signo: i32,
    name: &str,
) -> Finished {
    let db = server();
    let run = spawn(pgbolt(db, dbname, args));
    wait_until("pgbolt never waited for the lock", || {
        sessions(dbname, "pgbolt", "active").contains("Lock")
    });
    run.signal(signo);
    let done = run.wait(Duration::from_secs(30));
    wait_until(
        &format!("{name}: pgbolt's statement still waits for the lock"),
        || backends(db, dbname).is_empty(),
    );
    done
}

/// Regression: a signal during `-i` ended pgbolt at once, and the backend
/// went on with the statement it was running (one that sends nothing until
/// it ends: a server-side generation, a key build, a wait for a lock),
/// holding its locks, so a rerun of `-i` waited for it. pgbench cancels
/// the statement on Ctrl-C; pgbolt now cancels it before it exits. A lock
/// held by another session makes the first step, the drop, wait for ever.
#[test]
fn signal_during_init_cancels_the_running_statement() {
    for (signo, name) in SIGNALS {
        let dbname = database(server(), true);
        let _holder = LockHolder::take(&dbname, "pgbench_accounts", "ACCESS SHARE");
        let done = signal_while_waiting_for_a_lock(&dbname, &["-i", "-I", "d"], signo, name);
        let err = done.stderr();
        assert_eq!(done.code(), Some(128 + signo), "{name}: {err}");
        assert!(
            err.contains("pgbolt: error: initialization was interrupted"),
            "{name}: {err}"
        );
    }
}

/// Regression: a signal before the run (during the vacuum or the
/// preflight) ended pgbolt by the signal's default action, and its backend
/// went on: a `truncate pgbench_history` waiting for a lock then held up
/// every session that reached the table after it. pgbolt now cancels the
/// statement, then ends by the signal without a word, as pgbench does.
#[test]
fn signal_before_the_run_cancels_the_vacuum() {
    use std::os::unix::process::ExitStatusExt;
    for (signo, name) in SIGNALS {
        let dbname = database(server(), true);
        let _holder = LockHolder::take(&dbname, "pgbench_tellers", "SHARE UPDATE EXCLUSIVE");
        let done = signal_while_waiting_for_a_lock(&dbname, &["-T", "30", "-c", "1"], signo, name);
        let err = done.stderr();
        assert_eq!(done.out.status.signal(), Some(signo), "{name}: {err}");
        assert_eq!(err, "starting vacuum...", "{name}");
    }
}

/// Processes whose command line is `sleep SECONDS` (a marker no other
/// test uses).
fn sleepers(seconds: &str) -> usize {
    let wanted = format!("sleep\0{seconds}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .filter(|cmdline| cmdline.ends_with(wanted.as_bytes()))
        .count()
}

/// Regression: a run that ended with `\shell` or `\setshell` commands
/// still running killed the shell but not the command it had forked, which
/// went on with pgbolt's output open (so `pgbolt ... | tee` waited for
/// it); and a Ctrl-C from a terminal, which reaches the whole process
/// group, made every such client report a failed command before `Run was
/// interrupted`. Now each command runs in a process group of its own,
/// which pgbolt stops whole: for a signal to pgbolt alone, for a signal to
/// its process group, and at the end of a `-T` run's grace period.
#[test]
fn a_stop_during_shell_commands_stops_them_whole() {
    use std::os::unix::process::CommandExt;
    let db = server();
    let dbname = database(db, false);
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("shells.sql");
    std::fs::write(
        &script,
        "\\if :client_id = 0\n\\setshell v sh -c 'sleep 87.25; echo 1'\n\\else\n\\shell sleep 87.25 ; true\n\\endif\n",
    )
    .unwrap();
    let path = script.to_str().unwrap();
    for (case, duration) in [("process", "60"), ("group", "60"), ("end of run", "1")] {
        let mut cmd = pgbolt(db, &dbname, &["-n", "-f", path, "-c", "2", "-T", duration]);
        cmd.process_group(0);
        let run = spawn(cmd);
        wait_until("the commands start", || sleepers("87.25") == 2);
        match case {
            "process" => run.signal(libc::SIGINT),
            "group" => signal(-run.pid, libc::SIGINT),
            _ => {}
        }
        let done = run.wait(Duration::from_secs(30));
        let err = done.stderr();
        if case == "end of run" {
            assert_eq!(done.code(), Some(2), "{case}: {err}");
        } else {
            assert_eq!(done.code(), Some(130), "{case}: {err}");
            assert!(err.contains("Run was interrupted"), "{case}: {err}");
        }
        assert!(!err.contains("meta-command failed"), "{case}: {err}");
        assert_eq!(sleepers("87.25"), 0, "{case}: a command outlived the run");
    }
}

/// Regression: a signal during the set-up between two steps of a sweep
/// ended pgbolt by the signal's default action, without the report of
/// the steps already run. Now the set-up's statement is cancelled, the
/// sweep stops, and its report has every finished step.
#[test]
fn signal_between_sweep_steps_reports_the_steps_done() {
    let db = server();
    for (signo, name) in SIGNALS {
        let dbname = database(db, true);
        let run = spawn(pgbolt(
            db,
            &dbname,
            &["-S", "-T", "2", "--no-monitor", "--sweep=clients:1,2"],
        ));
        // Step 1 runs (its vacuum is behind it): the lock now makes step
        // 2's vacuum wait.
        wait_until("step 1 never ran a transaction", || {
            db.psql(&format!(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = '{dbname}' \
                 AND query LIKE 'SELECT abalance%'"
            ))
            .is_ok_and(|n| n.trim() != "0")
        });
        let _holder = LockHolder::take(&dbname, "pgbench_tellers", "SHARE UPDATE EXCLUSIVE");
        wait_until("step 2 never waited for the lock", || {
            sessions(&dbname, "pgbolt", "active").contains("Lock")
        });
        run.signal(signo);
        let done = run.wait(Duration::from_secs(30));
        let (out, err) = (done.stdout(), done.stderr());
        assert_eq!(done.code(), Some(128 + signo), "{name}: {err}");
        assert!(
            out.contains(&format!(
                "\nstopped: interrupted by {name} during step 2 of 2, which is left out\n"
            )),
            "{name}: {out}"
        );
        assert!(out.contains("best measured: 1 clients"), "{name}: {out}");
        wait_until(
            &format!("{name}: the vacuum still waits for the lock"),
            || backends(db, &dbname).is_empty(),
        );
    }
}
