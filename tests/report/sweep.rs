//! `--sweep` on the test binary's shared server: the table, the result
//! file, the fit, SLOs, the threads and rate dimensions, repeats, the
//! preflight of the largest step and `auto` stopping on a plateau.
//!
//! Steps are 1 s long. Where an answer depends on latency, a server-side
//! advisory lock held across a `pg_sleep` fixes it: with N clients a
//! transaction waits for the N − 1 others, so its latency is about N times
//! the sleep and the throughput cannot grow with the clients.

use std::path::Path;
use std::process::Output;

use crate::common::{pgbolt_path, script_file, stderr, stdout, Run, ScriptFile};

/// Runs pgbolt with `args` on the shared server's `postgres` database.
fn pgbolt(args: &[&str]) -> Output {
    Run::new("postgres", args).pgbolt()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("JSON")
}

/// A sweep of `script` with `args` and `-n -T 1`, which must succeed:
/// its text report and its result file.
fn sweep(script: &ScriptFile, args: &[&str]) -> (String, serde_json::Value) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("sweep.json");
    let json_arg = format!("--json={}", path.display());
    let common = [
        "-n",
        "-T",
        "1",
        "-f",
        script.path.as_str(),
        json_arg.as_str(),
    ];
    let out = pgbolt(&[&common[..], args].concat());
    let text = stdout(&out);
    assert!(out.status.success(), "{}{text}", stderr(&out));
    (text, json(&path))
}

fn select_script() -> ScriptFile {
    script_file("select.sql", "select 1;\n")
}

/// Each transaction holds advisory lock `:lock` (one per test, as the
/// tests run at once) for `:ms` milliseconds.
fn lock_script() -> ScriptFile {
    script_file(
        "lock.sql",
        "begin;\nselect pg_advisory_xact_lock(:lock);\nselect pg_sleep(:ms / 1000.0);\nend;\n",
    )
}

/// The table's rows: the first column of the lines after the heading,
/// up to the answers.
fn table_clients(text: &str) -> Vec<u32> {
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with("clients"))
        .skip(1)
        .map_while(|l| l.split_whitespace().next()?.parse().ok())
        .collect()
}

fn steps_field(result: &serde_json::Value, field: &str) -> Vec<serde_json::Value> {
    result["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| s["result"]["options"][field].clone())
        .collect()
}

#[test]
fn a_clients_sweep_gives_the_table_the_result_file_and_the_fit() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("sweep.json");
    let script = select_script();
    let out = pgbolt(&[
        "-n",
        "-f",
        &script.path,
        "-T",
        "1",
        "--sweep=clients:1..16*2",
        &format!("--json={}", path.display()),
    ]);
    let text = stdout(&out);
    assert!(out.status.success(), "{}{text}", stderr(&out));
    assert!(
        text.starts_with(
            "sweep of clients: 5 values, 5 measured steps of 1 s from the last connection\n"
        ),
        "{text}"
    );
    assert_eq!(table_clients(&text), [1, 2, 4, 8, 16], "{text}");
    assert!(text.contains("\nbest measured: "), "{text}");
    assert!(
        text.contains("\nsmallest within 5% of the best: "),
        "{text}"
    );
    assert!(
        text.contains("\nUSL fit: sigma ") || text.contains("\nUSL: "),
        "{text}"
    );
    assert_eq!(stderr(&out).matches("step ").count(), 5, "{}", stderr(&out));

    let result = json(&path);
    assert_eq!(result["kind"], "sweep");
    assert_eq!(result["sweep"]["dimension"], "clients");
    assert_eq!(steps_field(&result, "clients"), [1, 2, 4, 8, 16]);
    // Threads are min(clients, CPUs) without -j.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let threads: Vec<u64> = steps_field(&result, "threads")
        .iter()
        .map(|t| t.as_u64().unwrap())
        .collect();
    assert_eq!(threads, [1, 2, 4, 8, 16].map(|c: u64| c.min(cpus)));
    // Every step's whole result is there, histograms included.
    for step in result["steps"].as_array().unwrap() {
        assert!(step["result"]["tps"].as_f64().unwrap() > 0.0);
        assert!(!step["result"]["latency"]["histogram"]
            .as_str()
            .unwrap()
            .is_empty());
        assert!(!step["result"]["series"]["intervals"]
            .as_array()
            .unwrap()
            .is_empty());
    }
    let summary = &result["summary"];
    assert_eq!(summary["points"].as_array().unwrap().len(), 5);
    assert!(summary["best"].is_u64() && summary["near_best"].is_u64());
    assert!(summary["fit"].is_object(), "{summary}");
    let fit = &summary["fit"];
    assert!(fit["sigma"].as_f64().unwrap() >= 0.0 && fit["kappa"].as_f64().unwrap() >= 0.0);
    assert!(fit["lambda"].as_f64().unwrap() > 0.0);
    for point in summary["points"].as_array().unwrap() {
        let ratio = point["little_ratio"].as_f64().unwrap();
        assert!(ratio > 0.0 && ratio <= 1.05, "{point}");
        // The step's own load, from its diagnosis: the busiest thread's
        // CPU and the backends' states (the monitor is on by default).
        let cpu = point["client_cpu"].as_f64().expect("client_cpu");
        assert!(cpu > 0.0 && cpu <= 1.05, "{point}");
        // Beside it, the same thread's wait for a CPU.
        let wait = point["client_cpu_wait"].as_f64().expect("client_cpu_wait");
        assert!((0.0..=1.05).contains(&wait), "{point}");
        let b = &point["backends"];
        let sum: f64 = ["on_cpu", "waiting", "client", "idle_in_transaction"]
            .iter()
            .map(|k| b[k].as_f64().expect("share"))
            .sum();
        assert!(sum > 0.95 && sum <= 1.0 + 1e-9, "{point}");
    }
    assert!(text.contains(" cli cpu/wait cpu/wait/cli\n"), "{text}");
    // --render draws the sweep's page from its file.
    let html = dir.path().join("x.html");
    let out = std::process::Command::new(pgbolt_path())
        .arg(format!("--render={}", path.display()))
        .arg(format!("--html={}", html.display()))
        .output()
        .expect("pgbolt runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let page = std::fs::read_to_string(&html).expect("page");
    for part in [
        "<h1>Sweep of clients</h1>",
        "Best measured: ",
        "<h2>Throughput</h2>",
        "<h2>Latency</h2>",
        "<h2>Latency against throughput</h2>",
        "<h2>Each step over time</h2>",
        "<h2>Steps</h2>",
        "id=\"pgbolt-result\"",
    ] {
        assert!(page.contains(part), "{part}");
    }
    // --compare reads a sweep's file: against itself, step by step, with
    // the fits side by side.
    let out = std::process::Command::new(pgbolt_path())
        .arg("--compare")
        .args([&path, &path])
        .output()
        .expect("pgbolt runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    for part in [
        "(sweep of clients: 1, 2, 4, 8, 16; 1 repeat; 5 runs)",
        "16 clients  tps",
        "lambda (tps)",
        "verdict (tps, p99; threshold 3%; over 5 steps): ",
    ] {
        assert!(text.contains(part), "{part}\n{text}");
    }
}

#[test]
fn an_slo_fails_at_the_step_where_the_lock_queue_grows_past_it() {
    let (text, result) = sweep(
        &lock_script(),
        &[
            "-D",
            "ms=25",
            "-D",
            "lock=1",
            "--warmup=1",
            "--sweep=clients:1,8",
            "--slo=p90<120ms",
        ],
    );
    let verdicts: Vec<&str> = text
        .lines()
        .filter(|l| l.ends_with("  met") || l.ends_with("  FAILED"))
        .map(|l| l.rsplit(' ').next().unwrap())
        .collect();
    assert_eq!(verdicts, ["met", "FAILED"], "{text}");
    assert!(
        text.contains("\nhighest tps within the SLO (p90<120ms): 1 clients ("),
        "{text}"
    );
    assert!(text.contains(", warm-up 1 s each"), "{text}");
    assert_eq!(result["sweep"]["warmup_s"], 1);
    let points = result["summary"]["points"].as_array().unwrap();
    assert_eq!(points[0]["slo_met"], true);
    assert_eq!(points[1]["slo_met"], false);
    assert!(points[1]["slo_ms"][0].as_f64().unwrap() >= 120.0);
    assert_eq!(result["summary"]["best_within_slo"], 0);
    // The warm-up's transactions are in no figure: a 1 s step at 25 ms
    // per transaction commits about 40, never the 80 of both runs.
    let committed = result["steps"][0]["result"]["counts"]["committed"]
        .as_u64()
        .unwrap();
    assert!(committed < 60, "{committed}");
}

#[test]
fn a_threads_sweep_with_repeats_alternates_its_order() {
    let (text, result) = sweep(
        &select_script(),
        &["-c", "2", "--repeat=2", "--sweep=threads:1,2"],
    );
    assert!(
        text.contains(
            "4 measured steps of 1 s from the last connection, 2 repeats (alternate order)"
        ),
        "{text}"
    );
    assert_eq!(steps_field(&result, "threads"), [1, 2, 2, 1]);
    assert_eq!(steps_field(&result, "clients"), [2, 2, 2, 2]);
    let repeats: Vec<u64> = result["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["repeat"].as_u64().unwrap())
        .collect();
    assert_eq!(repeats, [1, 1, 2, 2]);
    let points = result["summary"]["points"].as_array().unwrap();
    assert!(points
        .iter()
        .all(|p| p["repeats"] == 2 && p["tps_stddev"].is_f64()));
    assert!(result["summary"]["fit_note"]
        .as_str()
        .unwrap()
        .contains("for clients sweeps"));
}

#[test]
fn a_rate_sweep_runs_each_step_at_its_rate() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("rate.json");
    let script = select_script();
    let out = pgbolt(&[
        "-n",
        "-f",
        &script.path,
        "-c",
        "2",
        "-T",
        "1",
        "--random-seed=3",
        "--sweep=rate:50,200",
        "--sweep-reset=checkpoint",
        &format!("--json={}", path.display()),
    ]);
    let text = stdout(&out);
    assert!(out.status.success(), "{}{text}", stderr(&out));
    assert_eq!(
        stderr(&out).matches("starting checkpoint...end.").count(),
        2,
        "{}",
        stderr(&out)
    );
    let result = json(&path);
    assert_eq!(steps_field(&result, "rate"), [50.0, 200.0]);
    let tps: Vec<f64> = result["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["result"]["tps"].as_f64().unwrap())
        .collect();
    assert!(
        tps[0] > 20.0 && tps[0] < 90.0 && tps[1] > 120.0 && tps[1] < 300.0,
        "{tps:?}"
    );
    assert_eq!(result["sweep"]["reset"], "checkpoint");
}

#[test]
fn the_preflight_checks_the_largest_step_before_the_first() {
    let script = select_script();
    let out = pgbolt(&[
        "-n",
        "-f",
        &script.path,
        "-T",
        "1",
        "--sweep=clients:1,5000",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(!stderr(&out).contains("step 1"), "{}", stderr(&out));
    assert!(stderr(&out).contains("5000"), "{}", stderr(&out));
    // Regression: the hint said "Run with fewer clients (-c N)", an
    // option a sweep of clients refuses.
    assert!(
        stderr(&out).contains("hint: Sweep to at most "),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("(-c "), "{}", stderr(&out));
}

#[test]
fn auto_stops_when_throughput_stops_growing() {
    let (text, result) = sweep(
        &lock_script(),
        &["-D", "ms=5", "-D", "lock=2", "--sweep=clients:auto"],
    );
    assert!(
        text.contains("\nstopped: throughput stopped growing at "),
        "{text}"
    );
    let clients: Vec<u64> = steps_field(&result, "clients")
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect();
    assert!(clients.len() >= 4 && clients.len() <= 7, "{clients:?}");
    assert_eq!(clients[..4], [1, 2, 4, 8]);
    assert_eq!(result["sweep"]["auto"], true);
}

#[test]
fn an_interrupted_sweep_reports_the_steps_done_and_leaves_out_the_partial_one() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let script = select_script();
    let mut cmd = Run::new(
        "postgres",
        &[
            "-n",
            "-f",
            &script.path,
            "-T",
            "1",
            "--sweep=clients:1,2,4,8",
        ],
    )
    .pgbolt_command();
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("pgbolt starts");
    let mut errors = BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    while errors.read_line(&mut line).expect("stderr line") > 0 && !line.starts_with("step 1 ") {
        line.clear();
    }
    // Into step 2's run (its set-up, with -n, takes milliseconds); a
    // signal during a set-up is tested in tests/robust/robust_signals.rs.
    std::thread::sleep(std::time::Duration::from_millis(400));
    // SAFETY: kill(2) on the child this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().expect("pgbolt ends");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(130), "{text}");
    assert!(
        text.contains("\nstopped: interrupted by SIGINT during step 2 of 4, which is left out\n"),
        "{text}"
    );
    assert_eq!(table_clients(&text), [1], "{text}");
}

/// Regression: a set-up connection refused between two steps (here the
/// role lost its login during step 1) ended the sweep with exit status 1
/// and no report, losing the step measured. It ends with status 2, the
/// error, and step 1 in the report and the file.
#[test]
fn a_set_up_failing_between_steps_keeps_the_steps_done() {
    let db = crate::common::server();
    db.psql("CREATE ROLE sweep_loses_login LOGIN")
        .expect("create role");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("sweep.json");
    let script = select_script();
    let mut cmd = Run::new(
        "postgres",
        &[
            "-n",
            "-f",
            &script.path,
            "-T",
            "2",
            "--no-monitor",
            "--sweep=clients:1,2",
            &format!("--json={}", path.display()),
        ],
    )
    .env("PGUSER", "sweep_loses_login")
    .pgbolt_command();
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().expect("pgbolt starts");
    // Step 1's client is connected once it runs its script.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while db
        .psql(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE usename = 'sweep_loses_login' AND query = 'select 1;'",
        )
        .unwrap_or_default()
        .trim()
        == "0"
    {
        assert!(std::time::Instant::now() < deadline, "step 1 never ran");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    db.psql("ALTER ROLE sweep_loses_login NOLOGIN")
        .expect("alter role");
    let out = child.wait_with_output().expect("pgbolt ends");
    let (text, errors) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(2), "{errors}{text}");
    assert!(errors.contains("is not permitted to log in"), "{errors}");
    assert!(
        text.contains("\nstopped: step 2 of 2 could not start ("),
        "{text}"
    );
    assert_eq!(table_clients(&text), [1], "{text}");
    let result = json(&path);
    assert_eq!(steps_field(&result, "clients"), [1]);
    assert!(
        result["sweep"]["stopped"]
            .as_str()
            .unwrap()
            .contains("is not permitted to log in"),
        "{result}"
    );
}

/// Regression: backend state shares at 600 clients rested on about two
/// `pg_stat_activity` samples with no word about it. A run's diagnosis
/// and a sweep's table now say when the shares rest on fewer than 20.
#[test]
fn shares_from_few_samples_say_so() {
    let script = select_script();
    let (text, result) = sweep(&script, &["--sweep=clients:1,2", "--monitor-interval=300"]);
    for point in result["summary"]["points"].as_array().unwrap() {
        let samples = point["backends"]["samples"].as_u64().expect("samples");
        assert!((1..20).contains(&samples), "{point}");
    }
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("clients"))
        .skip(1)
        .take(2)
        .collect();
    assert!(rows.iter().all(|r| r.ends_with('*')), "{text}");
    assert!(
        text.contains("*: backend shares from fewer than 20 samples of pg_stat_activity"),
        "{text}"
    );
    let out = pgbolt(&[
        "-n",
        "-f",
        &script.path,
        "-T",
        "1",
        "--monitor-interval=300",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out)
            .contains("samples only: too few for these shares to be more than a rough picture"),
        "{}",
        stdout(&out)
    );
}

/// `--warmup` in a plain run: the warm-up runs first and counts nowhere,
/// neither in the report nor in the transaction log.
#[test]
fn a_plain_run_warms_up_unmeasured() {
    let script = select_script();
    let dir = tempfile::tempdir().expect("temp dir");
    let prefix = dir.path().join("warm");
    let path = dir.path().join("run.json");
    let out = pgbolt(&[
        "-n",
        "-f",
        &script.path,
        "-T",
        "1",
        "-c",
        "2",
        "--warmup=1",
        "-l",
        &format!("--log-prefix={}", prefix.display()),
        &format!("--json={}", path.display()),
    ]);
    let (text, err) = (stdout(&out), stderr(&out));
    assert!(out.status.success(), "{err}{text}");
    assert!(
        err.lines()
            .any(|l| l.starts_with("warm-up: 1 s, ") && l.ends_with(" tps, not counted")),
        "{err}"
    );
    let result = json(&path);
    assert_eq!(result["options"]["warmup_s"], 1);
    let processed = result["counts"]["total"].as_u64().expect("total");
    let logged: usize = std::fs::read_dir(dir.path())
        .expect("log dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("warm.")
        })
        .map(|p| std::fs::read_to_string(p).expect("log").lines().count())
        .sum();
    assert_eq!(
        logged as u64, processed,
        "only measured transactions are logged"
    );
}

/// `--repeat-order=shuffle`: each pass a permutation drawn from the seed,
/// the same for the same `--random-seed`.
#[test]
fn shuffled_repeats_follow_the_seed() {
    let script = select_script();
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("sweep.json");
    let out = pgbolt(&[
        "-n",
        "-f",
        &script.path,
        "-t",
        "20",
        "--sweep=clients:1,2,3",
        "--repeat=3",
        "--repeat-order=shuffle",
        "--random-seed=5",
        &format!("--json={}", path.display()),
    ]);
    let text = stdout(&out);
    assert!(out.status.success(), "{}{text}", stderr(&out));
    assert!(text.contains(", 3 repeats (shuffle order)"), "{text}");
    let result = json(&path);
    assert_eq!(result["sweep"]["order"], "shuffle");
    let run: Vec<u64> = steps_field(&result, "clients")
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect();
    let expected: Vec<u64> = pgbolt::study::shuffled(&[1.0, 2.0, 3.0], 3, 5)
        .iter()
        .map(|s| s.0 as u64)
        .collect();
    assert_eq!(run, expected);
}

/// `-l` in a sweep: each step's log under a prefix of its own, with the
/// step's transactions only; the warm-up logs nothing.
#[test]
fn each_step_logs_under_its_own_prefix() {
    let script = select_script();
    let dir = tempfile::tempdir().expect("temp dir");
    let prefix = dir.path().join("tx");
    let path = dir.path().join("sweep.json");
    let out = pgbolt(&[
        "-n",
        "-f",
        &script.path,
        "-t",
        "25",
        "--warmup=1",
        "--sweep=clients:1,2",
        "-l",
        &format!("--log-prefix={}", prefix.display()),
        &format!("--json={}", path.display()),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut files: Vec<(String, usize)> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("tx."))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let step = name.split('.').nth(1).expect("step").to_owned();
            (
                step,
                std::fs::read_to_string(&p).expect("log").lines().count(),
            )
        })
        .collect();
    files.sort();
    // One thread per client: 25 transactions per client in each file.
    assert_eq!(
        files,
        [
            ("step1".to_owned(), 25),
            ("step2".to_owned(), 25),
            ("step2".to_owned(), 25)
        ],
        "{files:?}"
    );
}
