//! The benchmark engine against a real server, with the real pgbench as the
//! oracle.

use crate::engine_support::*;

#[test]
fn transactions_processed_match_pgbench() {
    let db = database(Some(1));
    for args in [
        &["-n", "-t", "5", "-c", "1"][..],
        &["-n", "-t", "7", "-c", "3", "-j", "2"],
        &["-n", "-t", "4", "-c", "4", "-j", "4", "-M", "extended"],
        &["-n", "-t", "4", "-c", "2", "-M", "prepared", "-S"],
        &["-n", "-t", "3", "-c", "2", "-N"],
    ] {
        let ours = pgbolt(&db, args);
        let theirs = pgbench(&db, args);
        assert_eq!(ours.status.code(), Some(0), "{args:?}: {}", stderr(&ours));
        assert_eq!(
            theirs.status.code(),
            Some(0),
            "{args:?}: {}",
            stderr(&theirs)
        );
        let key = "number of transactions actually processed:";
        assert_eq!(
            line(&stdout(&ours), key),
            line(&stdout(&theirs), key),
            "{args:?}\n{}",
            stdout(&ours)
        );
        for prefix in [
            "transaction type:",
            "query mode:",
            "number of clients:",
            "number of threads:",
        ] {
            assert_eq!(line(&stdout(&ours), prefix), line(&stdout(&theirs), prefix));
        }
    }
}

#[test]
fn tpcb_ledger_balances_for_several_client_and_thread_counts() {
    let db = database(Some(1));
    for args in [
        &["-n", "-t", "10", "-c", "1"][..],
        &["-n", "-t", "10", "-c", "5", "-j", "2"],
        &["-n", "-t", "6", "-c", "8", "-j", "3", "-M", "prepared"],
        &["-n", "-t", "5", "-c", "3", "-j", "3", "-M", "extended"],
    ] {
        let out = pgbolt(&db, args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        let l = ledger(&db);
        assert!(
            l.iter().all(|v| v == &l[0]),
            "{args:?}: ledger does not balance: {l:?}"
        );
    }
    let history = sql(&db, "select count(*) from pgbench_history");
    assert_eq!(history, (10 + 50 + 48 + 15).to_string());
}

/// `(tid, bid, aid, delta)` of every history row, sorted.
fn history(db: &str) -> String {
    sql(
        db,
        "select tid, bid, aid, delta from pgbench_history order by 1, 2, 3, 4",
    )
}

#[test]
fn fixed_seed_gives_pgbench_history() {
    let db = database(Some(1));
    let args = ["-t", "15", "-c", "3", "-j", "3", "--random-seed=7"];
    let theirs = pgbench(&db, &args);
    assert!(theirs.status.success(), "{}", stderr(&theirs));
    let expected = history(&db);
    let ours = pgbolt(&db, &args);
    assert!(ours.status.success(), "{}", stderr(&ours));
    assert!(stderr(&ours).contains("pgbolt: setting random seed to 7"));
    assert_eq!(history(&db), expected);
    assert_eq!(expected.lines().count(), 45);
}

#[test]
fn the_seed_line_appears_when_pgbench_prints_it() {
    let db = database(Some(1));
    let seed_line = |out: &std::process::Output| {
        stderr(out)
            .lines()
            .any(|l| l.contains(": setting random seed to "))
    };
    for seed in [None, Some("time"), Some("rand"), Some("5")] {
        let mut args = vec!["-n", "-S", "-t", "1"];
        let option;
        if let Some(seed) = seed {
            option = format!("--random-seed={seed}");
            args.push(&option);
        }
        let theirs = pgbench(&db, &args);
        let ours = pgbolt(&db, &args);
        assert!(ours.status.success(), "{}", stderr(&ours));
        assert_eq!(seed_line(&ours), seed_line(&theirs), "{seed:?}");
        assert_eq!(seed_line(&ours), seed.is_some(), "{seed:?}");
    }
}

#[test]
fn weighted_scripts_are_chosen_as_pgbench_chooses() {
    let db = database(Some(1));
    let args = [
        "-n",
        "-t",
        "40",
        "-c",
        "2",
        "-j",
        "2",
        "--random-seed=3",
        "-b",
        "select-only@1",
        "-b",
        "simple-update@3",
    ];
    let ours = stdout(&pgbolt(&db, &args));
    let theirs = stdout(&pgbench(&db, &args));
    let counts = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with(" - ") && l.contains(" transactions ("))
            .map(|l| l.split(" (").next().unwrap_or_default().to_owned())
            .collect()
    };
    assert_eq!(counts(&ours), counts(&theirs), "{ours}");
    assert_eq!(counts(&ours).len(), 2);
}

#[test]
fn connect_per_transaction() {
    let db = database(Some(1));
    let args = ["-n", "-C", "-t", "5", "-c", "3", "-j", "2", "-S"];
    let ours = pgbolt(&db, &args);
    assert!(ours.status.success(), "{}", stderr(&ours));
    let out = stdout(&ours);
    assert_eq!(
        line(&out, "number of transactions actually processed:"),
        Some("number of transactions actually processed: 15/15")
    );
    assert!(line(&out, "average connection time = ").is_some(), "{out}");
}

/// Regression: a `COPY ... FROM STDIN` hung pgbolt for ever when the
/// CopyInResponse came in the same read as what preceded it (the message
/// ending the COPY was never sent), and in extended and prepared mode, in a
/// pipeline too (the server had swallowed the Sync in copy-in mode, so no
/// ReadyForQuery ever came). pgbench aborts the client with `COPY is not
/// supported in pgbench, aborting`.
#[test]
fn copy_from_stdin_aborts_the_client_without_hanging() {
    let db = database(None);
    let plain = script("COPY t FROM STDIN;\n");
    let pipelined = script("\\startpipeline\nSELECT 1;\nCOPY t FROM STDIN;\n\\endpipeline\n");
    sql(&db, "CREATE TABLE IF NOT EXISTS t (a int)");
    let cases = [
        (&plain, "simple"),
        (&plain, "extended"),
        (&plain, "prepared"),
        (&pipelined, "extended"),
        (&pipelined, "prepared"),
    ];
    for (file, mode) in cases {
        let args = [
            "-n",
            "-t",
            "2",
            "-c",
            "2",
            "-M",
            mode,
            "-f",
            file.path.as_str(),
        ];
        let mut child = pgbolt_command(&db, &args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("pgbolt runs");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while child.try_wait().expect("wait for pgbolt").is_none() {
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                panic!("-M {mode}: pgbolt still running after 30 s");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let ours = child.wait_with_output().expect("pgbolt output");
        let theirs = pgbench(&db, &args);
        assert_eq!(ours.status.code(), Some(2), "-M {mode}");
        assert_eq!(ours.status.code(), theirs.status.code(), "-M {mode}");
        assert_eq!(
            stderr(&ours).replace("pgbolt: ", "PROG: "),
            stderr(&theirs).replace("pgbench: ", "PROG: "),
            "-M {mode}"
        );
    }
}

/// Server errors are worded as libpq words them for pgbench: the `LINE n:`
/// excerpt with its caret (cut to libpq's window on long lines, on the
/// substituted text in simple mode and on the `$n` text otherwise),
/// `CONTEXT:` and `QUERY:` lines, also for the failing statement of a
/// pipeline (whose query number restarts at 0 for each statement, as in
/// pgbench). Prepared mode is left out: pgbench reports those errors when
/// it prepares, pgbolt when it executes (see docs/compatibility.md).
#[test]
fn server_error_texts_match_pgbench() {
    let long = "x".repeat(80);
    let cases = [
        "SELECT 1;\nSELECT nocol FROM pg_class WHERE oid = 1;\n".to_owned(),
        "\\set v 12345\nSELECT 1,\n\t:v +;\n".to_owned(),
        format!("SELECT '{long}' || nocol FROM pg_class WHERE oid = 1 AND relpages >= 0;\n"),
        "DO $$ BEGIN RAISE EXCEPTION 'boom' USING DETAIL = 'd', HINT = 'h'; END $$;\n".to_owned(),
        "DO $$ BEGIN PERFORM nocol FROM pg_class; END $$;\n".to_owned(),
        "DO $$ BEGIN RAISE NOTICE 'note'; END $$;\nSELECT 1/0;\n".to_owned(),
        // Wide characters take two columns of libpq's window and caret.
        "SELECT '漢字漢字' || nocol FROM pg_class WHERE oid = 1;\n".to_owned(),
        format!(
            "SELECT '{}' || nocol || '{}' FROM pg_class WHERE oid = 1;\n",
            "漢".repeat(40),
            "字".repeat(40)
        ),
        // Regression: reserved code points of the CJK compatibility block
        // that Unicode 14 lists as wide took one column.
        format!(
            "SELECT '{}' || nocol FROM pg_class WHERE oid = 1;\n",
            "\u{fa6e}\u{fa6f}\u{fada}\u{faff}".repeat(12)
        ),
    ];
    for text in &cases {
        for mode in ["simple", "extended"] {
            let (ours, theirs) = both_fail(text, &["-t", "1", "-c", "1", "-M", mode]);
            assert_eq!(ours, theirs, "{mode}: {text}");
        }
    }
    let pipelines = [
        "\\startpipeline\nSELECT 1;\nSELECT nocol FROM pg_class;\nSELECT 2;\n\\endpipeline\n",
        "\\startpipeline\nSELECT 1;\n\\if 1 = 2\nSELECT 5;\n\\else\nSELECT 2;\n\\endif\n\
         SELECT 1,\n  nocol FROM pg_class;\nSELECT 3;\n\\endpipeline\n",
        "\\startpipeline\nSELECT 1;\nSELECT 1/0;\n\\endpipeline\n",
    ];
    for text in pipelines {
        let (ours, theirs) = both_fail(text, &["-t", "1", "-c", "1", "-M", "extended"]);
        assert_eq!(ours, theirs, "{text}");
    }
}

#[test]
fn one_client_aborting_lets_the_others_finish() {
    let text = "SELECT CASE WHEN :client_id = 0 THEN 1/0 ELSE 1 END;\n";
    let db = database(None);
    let file = script(text);
    let args = ["-n", "-t", "5", "-c", "3", "-f", file.path.as_str()];
    let ours = pgbolt(&db, &args);
    let theirs = pgbench(&db, &args);
    assert_eq!(ours.status.code(), Some(2));
    assert_eq!(theirs.status.code(), Some(2));
    let key = "number of transactions actually processed:";
    assert_eq!(line(&stdout(&ours), key), line(&stdout(&theirs), key));
    let err = stderr(&ours);
    assert!(
        err.contains(
            "pgbolt: error: client 0 script 0 aborted in command 0 query 0: ERROR:  division by zero"
        ),
        "{err}"
    );
    assert!(err.contains("pgbolt: error: Run was aborted; the above results are incomplete."));

    let exit = pgbolt(&db, &[&args[..], &["--exit-on-abort"]].concat());
    assert_eq!(exit.status.code(), Some(2));
    assert!(stderr(&exit).contains("Run was aborted due to an error in thread 0"));

    let cont = pgbolt(&db, &[&args[..], &["--continue-on-error"]].concat());
    assert_eq!(cont.status.code(), Some(0), "{}", stderr(&cont));
    assert_eq!(
        line(&stdout(&cont), "number of failed transactions:"),
        Some("number of failed transactions: 5 (33.333%)")
    );
}

#[test]
fn serialization_failures_are_retried() {
    let db = database(Some(1));
    let out = pgbolt_command(
        &db,
        &[
            "-n",
            "-t",
            "25",
            "-c",
            "6",
            "-j",
            "2",
            "--max-tries=100",
            "-b",
            "simple-update",
        ],
    )
    .env("PGOPTIONS", "-c default_transaction_isolation=serializable")
    .output()
    .expect("pgbolt runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(
        line(&text, "number of transactions actually processed:"),
        Some("number of transactions actually processed: 150/150"),
        "{text}"
    );
    assert!(
        line(&text, "number of transactions retried:").is_some(),
        "{text}"
    );
    assert_eq!(sql(&db, "select count(*) from pgbench_history"), "150");
}

#[test]
fn late_transactions_are_skipped_under_rate_and_latency_limit() {
    let db = database(Some(1));
    let out = pgbolt(&db, &["-n", "-S", "-t", "50", "-R", "20000", "-L", "0.001"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let skipped = line(&text, "number of transactions skipped:").expect("skipped line");
    assert!(
        !skipped.starts_with("number of transactions skipped: 0 "),
        "{text}"
    );
    assert!(
        line(
            &text,
            "number of transactions above the 0.0 ms latency limit:"
        )
        .is_some(),
        "{text}"
    );
}

#[test]
fn more_clients_than_the_server_accepts_is_refused_before_connecting() {
    let db = database(None);
    let out = pgbolt(&db, &["-n", "-S", "-t", "1", "-c", "500"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains(
            "pgbolt: error: the server cannot accept 500 more connections: max_connections is"
        ),
        "{err}"
    );
    assert!(err.contains("--no-preflight"), "{err}");
    assert!(stdout(&out).lines().all(|l| !l.starts_with("number of")));
}

/// SIGINT once the run is under way (a fixed pause could end before the
/// run started on a loaded machine, and a signal before the run ends
/// pgbolt as it ends pgbench, without a report).
#[test]
fn sigint_prints_the_results_so_far() {
    let db = database(Some(1));
    let app = "engine_sigint";
    let mut child = pgbolt_command(&db, &["-n", "-S", "-T", "30", "-c", "2"])
        .env("PGAPPNAME", app)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("pgbolt starts");
    wait_for_second_statement(app, "SELECT abalance %");
    // SAFETY: sends SIGINT to the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let started = std::time::Instant::now();
    let out = loop {
        if child.try_wait().expect("wait").is_some() {
            break child.wait_with_output().expect("output");
        }
        if started.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            panic!("pgbolt did not stop after SIGINT");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_ne!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(
        line(&text, "number of transactions actually processed:").is_some(),
        "{text}"
    );
    assert!(
        stderr(&out).contains("Run was interrupted"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn progress_lines_and_transaction_logs() {
    let (out, logged) = logged_run(&["-n", "-S", "-T", "3", "-c", "2", "-j", "2", "-P", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let progress: Vec<String> = stderr(&out)
        .lines()
        .filter(|l| l.starts_with("progress: "))
        .map(str::to_owned)
        .collect();
    assert!(progress.len() >= 2, "{}", stderr(&out));
    let shape = regex::Regex::new(
        r"^progress: \d+\.\d s, \d+\.\d tps, lat \d+\.\d{3} ms stddev \d+\.\d{3}, 0 failed$",
    )
    .expect("regex");
    assert!(progress.iter().all(|l| shape.is_match(l)), "{progress:?}");
    assert_eq!(logged, processed(&out));
}

/// A run of `args` with `-l`: its output and the lines of its logs.
fn logged_run(args: &[&str]) -> (std::process::Output, u64) {
    let db = database(Some(1));
    let dir = tempfile::tempdir().expect("temp dir");
    let prefix = dir.path().join("tx").to_string_lossy().into_owned();
    let mut full = args.to_vec();
    full.extend_from_slice(&["-l", "--log-prefix", &prefix]);
    let out = pgbolt(&db, &full);
    (out, logged_lines(dir.path()))
}

/// Lines of all the transaction logs in `dir`.
fn logged_lines(dir: &std::path::Path) -> u64 {
    let mut logged = 0;
    for entry in std::fs::read_dir(dir).expect("log dir") {
        let text = std::fs::read_to_string(entry.expect("entry").path()).expect("log file");
        logged += text.lines().count() as u64;
    }
    logged
}

/// `--busy-poll=auto` with one client on a machine with a spare CPU tries
/// spinning half a second into the run and may switch back and forth: no
/// transaction is lost or counted twice on the way. (With a single CPU
/// `auto` never spins, and this is a plain run.)
#[test]
fn busy_poll_trials_lose_no_transaction() {
    let (out, logged) = logged_run(&[
        "-n",
        "-S",
        "-T",
        "2",
        "-c",
        "1",
        "-j",
        "1",
        "--busy-poll=auto",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("number of failed transactions: 0 (0.000%)"));
    assert_eq!(logged, processed(&out));
}

/// `--io=epoll`, `--io=uring` and the spinning epoll loop
/// (`--busy-poll=on`) run the same transactions and leave the same rows:
/// plain, prepared, pipelined, reconnecting (`-C`), failing ones and a
/// statement sent in several parts (io_uring hung on its rest once). Where
/// the kernel forbids io_uring, `--io=uring` must say so and exit 1, and
/// `--io=auto` must still run.
#[test]
fn every_io_driver_runs_the_same_transactions() {
    // A statement larger than the socket's buffer goes out in several
    // sends.
    let large = format!("SELECT length('{}');\n", "x".repeat(1 << 20));
    let text = r"\set x random(1, 3)
\startpipeline
INSERT INTO t VALUES (:client_id, 'one', NULL, NULL, NULL);
INSERT INTO t VALUES (:client_id, 'two', NULL, NULL, NULL);
\endpipeline
SELECT 1 / (:x - :x) \gset
";
    let file = script(&format!("{large}{text}"));
    let cases: &[&[&str]] = &[
        &[
            "-t",
            "20",
            "-c",
            "4",
            "-j",
            "2",
            "-M",
            "prepared",
            "--continue-on-error",
        ],
        &[
            "-t",
            "5",
            "-c",
            "3",
            "-C",
            "-M",
            "extended",
            "--continue-on-error",
        ],
        &["-t", "3", "-c", "2", "-M", "prepared"],
    ];
    for args in cases {
        let mut counts = Vec::new();
        let drivers: &[&[&str]] = &[
            &["--io=epoll", "--busy-poll=off"],
            &["--io=uring"],
            &["--io=auto"],
            &["--io=epoll", "--busy-poll=on"],
        ];
        for &driver in drivers {
            let io = driver.join(" ");
            let db = database(None);
            if io == "--io=uring" && !uring_usable(&db) {
                continue;
            }
            sql(
                &db,
                "create table t (client int, a text, b text, c text, d text)",
            );
            let mut full = vec!["-n", "-f", file.path.as_str()];
            full.extend_from_slice(driver);
            full.extend_from_slice(args);
            let out = pgbolt(&db, &full);
            let rows = sql(
                &db,
                "select client, a, count(*) from t group by 1, 2 order by 1, 2",
            );
            counts.push((
                io,
                out.status.code(),
                line(&stdout(&out), "number of transactions actually processed:")
                    .map(str::to_owned),
                rows,
            ));
        }
        for other in &counts[1..] {
            assert_eq!(
                (&other.1, &other.2, &other.3),
                (&counts[0].1, &counts[0].2, &counts[0].3),
                "{args:?}: {} against {}",
                other.0,
                counts[0].0
            );
        }
    }
}

/// Regression: io_uring queued each client's Recv behind its Send. A
/// pipeline whose requests and results both outgrow the sockets' buffers
/// then stalled for ever: the server stops reading while it cannot write
/// its results, and the Recv that would have let it never started.
#[test]
fn a_pipeline_larger_than_the_socket_buffers_runs_on_every_driver() {
    let db = database(None);
    let statement = format!("SELECT repeat('x', 1000), '{}';\n", "y".repeat(500));
    let text = format!("\\startpipeline\n{}\\endpipeline\n", statement.repeat(2000));
    let file = script(&text);
    for driver in ["--io=epoll", "--io=uring"] {
        if driver == "--io=uring" && !uring_usable(&db) {
            continue;
        }
        let args = [
            "-n",
            "-M",
            "extended",
            "-t",
            "3",
            "-f",
            file.path.as_str(),
            driver,
        ];
        let out = pgbolt(&db, &args);
        assert!(out.status.success(), "{driver}: {}", stderr(&out));
        let report = stdout(&out);
        let done = line(&report, "number of transactions actually processed:");
        assert_eq!(
            done,
            Some("number of transactions actually processed: 3/3"),
            "{driver}"
        );
    }
}
