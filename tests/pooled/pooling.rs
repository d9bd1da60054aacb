//! Targets and the throwaway PgBouncer (`--target`, `--temp-pgbouncer`)
//! against real servers and Debian's real pgbouncer: the comparison and
//! its result file and page (opened in headless Chromium), the checks
//! made before the first step, and the teardown on every way a run ends.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common;

use crate::common::pgbouncer::{initialized_server, Bouncer, PoolMode};
use crate::common::{pgbolt_path, stderr, stdout, without_pg_env};
use pgbolt::tempdb::{self, TempDb};

/// A server of our own for the tests that bring their own pooler.
fn server() -> &'static TempDb {
    static SERVER: OnceLock<Result<TempDb, tempdb::Error>> = OnceLock::new();
    match SERVER.get_or_init(|| initialized_server(Some(40))) {
        Ok(db) => db,
        Err(e) => panic!("cannot start a throwaway server: {e}"),
    }
}

/// pgbolt with `args` under `--temp-instance --temp-pgbouncer...`, small
/// and fast: scale 1, fsync off.
fn temp_pgbouncer(args: &[&str]) -> Command {
    let mut command = without_pg_env(pgbolt_path());
    command
        .env("TMPDIR", std::env::temp_dir())
        .args([
            "--temp-instance",
            "-s",
            "1",
            "--temp-instance-setting=fsync=off",
        ])
        .args(args);
    command
}

fn run(command: &mut Command) -> Output {
    command.output().expect("pgbolt runs")
}

/// The pooler's directory, from the line that announces it.
fn pooler_dir(text: &str) -> PathBuf {
    let line = text
        .lines()
        .find(|l| l.starts_with("pgbolt: throwaway PgBouncer"))
        .unwrap_or_else(|| panic!("no PgBouncer line in:\n{text}"));
    let dir = line
        .split(" in ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .expect("the directory");
    PathBuf::from(dir)
}

/// Processes whose command line names `dir`: a pgbouncer started with its
/// configuration file there, and the watchdog that would remove it.
fn processes_in(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter_map(|e| {
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            cmdline
                .contains(&needle)
                .then(|| format!("{}: {cmdline}", e.file_name().to_string_lossy()))
        })
        .collect()
}

fn assert_torn_down(dir: &Path) {
    // The teardown is over before pgbolt exits; give the kernel a moment
    // to reap what was killed (a loaded machine may take a while).
    let deadline = Instant::now() + Duration::from_secs(60);
    while !processes_in(dir).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(processes_in(dir), Vec::<String>::new(), "left running");
    assert!(!dir.exists(), "{} left behind", dir.display());
}

/// Without pgbouncer, `--temp-pgbouncer` says where it looked and which
/// package brings it, before any server is made.
#[test]
fn a_missing_pgbouncer_names_the_package() {
    let out = run(temp_pgbouncer(&["--temp-pgbouncer", "-S", "-t", "1"])
        .env("PGBOLT_PGBOUNCER_DIRS", "/nonexistent/sbin"));
    let errors = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{errors}");
    assert_eq!(
        errors,
        "pgbolt: error: could not start the throwaway instance: pgbouncer was not found \
         (searched /nonexistent/sbin); install the Debian package \"pgbouncer\" (apt-get \
         install pgbouncer, or make deps)\n"
    );
}

/// Direct against the throwaway PgBouncer over a sweep of clients: every
/// step runs on both, the report compares them, the result file holds
/// both sweeps, the comparison and the pooler's view, and nothing is
/// left behind.
#[test]
fn a_sweep_compares_direct_and_the_throwaway_pgbouncer() {
    let json = tempfile::NamedTempFile::new().expect("a temporary file");
    let pages = tempfile::tempdir().expect("a temporary directory");
    let html = pages.path().join("targets.html");
    let out = run(&mut temp_pgbouncer(&[
        "--temp-pgbouncer",
        "--pool-size=3",
        "-S",
        "-T",
        "1",
        "--sweep=clients:2,12",
        &format!("--json={}", json.path().display()),
        &format!("--html={}", html.display()),
    ]));
    let (text, errors) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{errors}");
    assert!(
        errors.contains("transaction pooling, default_pool_size 3, max_client_conn 22"),
        "{errors}"
    );
    for step in [
        "step 1 of 4 (direct): 2 clients",
        "step 2 of 4 (pgbouncer): 2 clients",
        "step 3 of 4 (pgbouncer): 12 clients",
        "step 4 of 4 (direct): 12 clients",
    ] {
        assert!(errors.contains(step), "{step} missing:\n{errors}");
    }
    assert!(
        text.contains("targets side by side (ratios against direct"),
        "{text}"
    );
    assert!(text.contains("crossover: "), "{text}");
    assert!(text.contains("the pooler's view (pgbouncer"), "{text}");

    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json.path()).unwrap()).unwrap();
    assert_eq!(result["kind"], "targets");
    let targets = result["targets"].as_array().unwrap();
    let names: Vec<&str> = targets
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["direct", "pgbouncer"]);
    for t in targets {
        let steps = t["sweep"]["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 2, "{t}");
        // The monitor samples through the pooler too (with plain queries:
        // its prepared sample would meet servers that never saw it).
        for step in steps {
            let monitor = &step["result"]["diagnosis"]["monitor"];
            assert!(monitor["samples"].as_u64().unwrap() > 0, "{monitor}");
            // Regression: the step's length took in the monitor's 2 s wait
            // for the pooler's backends to leave (they never do), which
            // made pgbouncer's tps 40% low.
            let length = step["result"]["timings"]["bench_duration_us"]
                .as_i64()
                .unwrap();
            assert!(length < 2_000_000, "a -T 1 step lasted {length} us");
            let pooled = t["name"] == "pgbouncer";
            let missing = monitor["missing"].to_string();
            assert_eq!(
                missing.contains("through a connection pooler"),
                pooled,
                "{missing}"
            );
            // Through the pooler the server's counters lag (its backends
            // stay), either way: no commit comparison.
            assert_eq!(monitor["pooled"], pooled, "{monitor}");
            let findings = step["result"]["diagnosis"]["findings"].to_string();
            assert!(
                !(pooled && findings.contains("commits-disagree")),
                "{findings}"
            );
        }
    }
    assert!(targets[0]["pooler"].is_null());
    assert_eq!(targets[1]["pooler"]["pool_mode"], "transaction");
    assert_eq!(targets[1]["pooler"]["default_pool_size"], 3);
    let rows = result["comparison"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows[1]["cells"][1]["tps_ratio"].as_f64().unwrap() > 0.0);
    let views = result["pooler_steps"].as_array().unwrap();
    assert_eq!(views.len(), 2, "{views:?}");
    // At 12 clients on 3 server connections, never more than 3 busy.
    let busy = views.iter().find(|v| v["value"] == 12.0).unwrap();
    let sv_active = busy["view"]["sv_active_max"].as_u64().unwrap();
    assert!((1..=3).contains(&sv_active), "{busy}");
    assert!(busy["view"]["cpu_percent"].as_f64().is_some(), "{busy}");
    assert_torn_down(&pooler_dir(&errors));

    // The page, written during the run and again from the JSON file.
    crate::html_support::browse(&html).assert_clean("the targets' page");
    let page = std::fs::read_to_string(&html).unwrap();
    let again = tempfile::NamedTempFile::new().expect("a temporary file");
    let rendered = run(Command::new(pgbolt_path()).args([
        format!("--render={}", json.path().display()),
        format!("--html={}", again.path().display()),
    ]));
    assert_eq!(rendered.status.code(), Some(0), "{}", stderr(&rendered));
    let again = std::fs::read_to_string(again.path()).unwrap();
    for page in [&page, &again] {
        assert!(page.contains("<h1>Targets compared: direct, pgbouncer</h1>"));
        assert!(page.contains("<h2>The pooler's view</h2>"));
        assert!(page.contains("\"kind\":\"targets\""));
    }

    // --compare takes one target's sweep as FILE#TARGET; the file alone
    // is refused with the names to choose from.
    let file = json.path().display().to_string();
    let compared = run(Command::new(pgbolt_path()).args([
        "--compare".to_owned(),
        format!("{file}#direct"),
        format!("{file}#pgbouncer"),
    ]));
    let text = stdout(&compared);
    assert_eq!(compared.status.code(), Some(0), "{}", stderr(&compared));
    assert!(
        text.contains(&format!(
            "baseline:  {file}#direct (sweep of clients: 2, 12;"
        )),
        "{text}"
    );
    assert!(
        text.contains("\nverdict (tps, p99; threshold 3%; over 2 steps): "),
        "{text}"
    );
    let whole = run(Command::new(pgbolt_path()).args(["--compare", &file, &file]));
    assert_eq!(whole.status.code(), Some(1));
    assert!(
        stderr(&whole)
            .contains("holds the steps of several targets (direct, pgbouncer): name one as"),
        "{}",
        stderr(&whole)
    );
}

/// Regression: a study's step measured `-T` minus the time its clients
/// took to connect (at `-T 5`, 2.09 s at 600 clients direct, 5.0 s
/// through the pooler), so the targets compared unlike lengths. At 200
/// clients each target's step now measures `-T` from its last
/// connection, within 2%, in the file and in the table.
#[test]
fn every_target_measures_t_from_its_last_connection_at_200_clients() {
    let json = tempfile::NamedTempFile::new().expect("a temporary file");
    let out = run(&mut temp_pgbouncer(&[
        "--temp-pgbouncer",
        "--pool-size=2",
        "-S",
        "-c",
        "200",
        "-T",
        "2",
        "--no-monitor",
        &format!("--json={}", json.path().display()),
    ]));
    let (text, errors) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{errors}");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json.path()).unwrap()).unwrap();
    for t in result["targets"].as_array().unwrap() {
        let step = &t["sweep"]["steps"][0]["result"];
        assert_eq!(step["options"]["clients"], 200, "{step}");
        let length = step["timings"]["bench_duration_us"].as_f64().unwrap() / 1e6;
        assert!((length - 2.0).abs() <= 0.04, "{}: {length} s", t["name"]);
        let shown = t["sweep"]["summary"]["points"][0]["measured_s"]
            .as_f64()
            .unwrap();
        assert_eq!(shown, length, "{}", t["name"]);
    }
    assert_eq!(
        text.matches("measured steps of 2 s from the last connection")
            .count(),
        2,
        "{text}"
    );
    assert!(text.contains(" clients threads   secs "), "{text}");
    assert_torn_down(&pooler_dir(&errors));
}

/// The server allows fewer connections than the direct target's largest
/// step: the preflight refuses before the tables are loaded (the pooled
/// target would have run), with a hint a sweep can follow; with room
/// enough the same sweep runs.
#[test]
fn the_preflight_refuses_a_direct_target_the_server_cannot_take() {
    let args = [
        "--temp-pgbouncer",
        "--pool-size=2",
        "-S",
        "-T",
        "1",
        "--sweep=clients:4,30",
    ];
    let out = run(temp_pgbouncer(&args).arg("--temp-instance-setting=max_connections=20"));
    let errors = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{errors}");
    assert!(
        errors.contains(
            "target \"direct\": the server cannot accept 32 more connections (the largest \
             step's 30 clients and the throwaway PgBouncer's 2 server connections)"
        ),
        "{errors}"
    );
    assert!(!errors.contains("step 1 of"), "{errors}");
    // Regression: refused only after the tables were loaded, with a hint
    // to give -c, which a sweep of clients cannot be given.
    assert!(!errors.contains("generating data"), "{errors}");
    assert!(errors.contains("hint: Sweep to at most "), "{errors}");
    assert!(!errors.contains("-c "), "{errors}");
    assert_torn_down(&pooler_dir(&errors));

    let out = run(temp_pgbouncer(&args).arg("--temp-instance-setting=max_connections=50"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("step 4 of 4 (direct): 30 clients"));
}

/// PgBouncer 1.18 keeps no prepared statements in transaction pooling:
/// `-M prepared` is refused before the run, with the reason and what to
/// use instead; in session pooling it runs.
#[test]
fn prepared_statements_are_refused_through_transaction_pooling_on_pgbouncer_1_18() {
    let out = run(&mut temp_pgbouncer(&[
        "--temp-pgbouncer",
        "-M",
        "prepared",
        "-S",
        "-c",
        "2",
        "-t",
        "5",
    ]));
    let errors = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{errors}");
    assert!(
        errors.contains(
            "pgbolt: error: target \"pgbouncer\": -M prepared cannot work through PgBouncer \
             1.18.0 in transaction pooling"
        ),
        "{errors}"
    );
    assert!(errors.contains("Use -M extended"), "{errors}");
    assert!(!errors.contains("step 1 of"), "{errors}");
    // Known before the tables are loaded, refused before.
    assert!(!errors.contains("generating data"), "{errors}");

    let out = run(&mut temp_pgbouncer(&[
        "--temp-pgbouncer=session",
        "-M",
        "prepared",
        "-S",
        "-c",
        "2",
        "-t",
        "5",
    ]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("target pgbouncer: "));
}

/// Starts a run of one step per target (`-T 4`) and reads its standard
/// error until the direct step is over: the pooler's step starts then.
/// Returns pgbolt, the rest of its standard error, the pooler's
/// directory and what was read.
fn until_the_pooled_step() -> (
    std::process::Child,
    BufReader<std::process::ChildStderr>,
    PathBuf,
    String,
) {
    let mut child = temp_pgbouncer(&["--temp-pgbouncer", "-S", "-c", "2", "-T", "4"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pgbolt starts");
    let mut errors = String::new();
    let mut reader = BufReader::new(child.stderr.take().unwrap());
    let mut dir = None;
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap_or(0) > 0 {
        errors.push_str(&line);
        if line.starts_with("pgbolt: throwaway PgBouncer") {
            dir = Some(pooler_dir(&line));
        }
        if line.starts_with("step 1 of 2 (direct)") {
            break;
        }
        line.clear();
    }
    let dir = dir.unwrap_or_else(|| panic!("no PgBouncer line:\n{errors}"));
    std::thread::sleep(Duration::from_millis(1500));
    (child, reader, dir, errors)
}

/// The throwaway server's directory (its socket's), from the pooler's
/// configuration.
fn server_dir(pooler_dir: &Path) -> PathBuf {
    let ini = std::fs::read_to_string(pooler_dir.join("pgbouncer.ini")).expect("pgbouncer.ini");
    let host = ini
        .split_whitespace()
        .find_map(|w| w.strip_prefix("host="))
        .expect("host= in pgbouncer.ini");
    PathBuf::from(host)
}

/// Ctrl-C while the pooler's step runs, and pgbolt killed outright: the
/// pooler and the server are stopped and their directories removed
/// (by the signal's clean-up, then by the watchdogs).
///
/// Regression: after Ctrl-C the report called the steps never run
/// "failed" and drew a crossover from the values measured before the
/// stop. It says the comparison was interrupted, shows pgbouncer's
/// missing step as not measured, draws no crossover, keeps no pooler view
/// of the step left out, and exits with 130.
#[test]
fn a_run_stopped_by_a_signal_leaves_no_pooler_behind() {
    for signal in [libc::SIGINT, libc::SIGKILL] {
        let (mut child, _reader, dir, errors) = until_the_pooled_step();
        let server = server_dir(&dir);
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, signal) };
        let mut stdout = child.stdout.take().expect("stdout");
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).unwrap();
        let status = child.wait().expect("pgbolt ends");
        assert!(!status.success(), "signal {signal}: {errors}");
        if signal == libc::SIGINT {
            assert_eq!(status.code(), Some(130), "{errors}\n{text}");
            for expected in [
                "stopped: interrupted by SIGINT during step 2 of 2 (pgbouncer), which is left out",
                "crossover: not judged: the comparison stopped before its last step",
                "not measured",
            ] {
                assert!(text.contains(expected), "{expected}:\n{text}");
            }
            assert!(!text.contains("failed ("), "{text}");
            assert!(!text.contains("crossover: none"), "{text}");
            assert!(!text.contains("the pooler's view"), "{text}");
        }
        let deadline = Instant::now() + Duration::from_secs(15);
        while (dir.exists() || server.exists()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_torn_down(&dir);
        assert_torn_down(&server);
    }
}

/// `--connect-dimension`: each target also runs with `-C`, as `NAME-C`,
/// and the comparison has four targets.
#[test]
fn the_connect_dimension_runs_each_target_with_and_without_c() {
    let out = run(&mut temp_pgbouncer(&[
        "--temp-pgbouncer",
        "--connect-dimension",
        "-S",
        "-c",
        "2",
        "-T",
        "1",
        "--json=-",
    ]));
    let errors = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{errors}");
    for step in [
        "step 1 of 4 (direct)",
        "step 2 of 4 (direct-C)",
        "step 3 of 4 (pgbouncer)",
        "step 4 of 4 (pgbouncer-C)",
    ] {
        assert!(errors.contains(step), "{step} missing:\n{errors}");
    }
    let result: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let connect: Vec<(&str, bool)> = result["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let step = &t["sweep"]["steps"][0]["result"]["options"];
            (
                t["name"].as_str().unwrap(),
                step["connect_per_transaction"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        connect,
        [
            ("direct", false),
            ("direct-C", true),
            ("pgbouncer", false),
            ("pgbouncer-C", true)
        ]
    );
    // Every pair: pgbouncer-C against direct-C among them.
    let pairs: Vec<(&str, &str)> = result["comparison"]["crossovers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["baseline"].as_str().unwrap(),
                c["target"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(pairs.len(), 6);
    assert!(pairs.contains(&("direct-C", "pgbouncer-C")), "{pairs:?}");
}

/// The pooler killed in the middle of its step: the step is reported
/// failed, the run ends with pgbench's status for errors during the run
/// (2), the report of the steps done is printed, and the pooler's and
/// the server's directories are gone, with nothing left running.
#[test]
fn a_pgbouncer_killed_mid_step_fails_the_step_and_is_torn_down() {
    let (child, mut reader, dir, mut errors) = until_the_pooled_step();
    let pids: Vec<i32> = processes_in(&dir)
        .iter()
        .filter(|p| p.contains("pgbouncer.ini"))
        .filter_map(|p| p.split(':').next()?.parse().ok())
        .collect();
    assert_eq!(pids.len(), 1, "{errors}");
    // SAFETY: signalling a process found above.
    unsafe { libc::kill(pids[0], libc::SIGKILL) };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut reader, &mut rest).unwrap();
    errors.push_str(&rest);
    let out = child.wait_with_output().expect("pgbolt ends");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(2), "{errors}\n{text}");
    assert!(
        text.contains("stopped: step 2 of 2 (pgbouncer) failed (exit status 2)"),
        "{text}"
    );
    let server_dir = text
        .lines()
        .find_map(|l| l.strip_prefix("target direct: host="))
        .and_then(|rest| rest.split(' ').next())
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("no direct target in:\n{text}"));
    assert_torn_down(&dir);
    assert_torn_down(&server_dir);
}

/// Targets named on the command line: a server and a PgBouncer of the
/// test's own whose console the user may read. A `max_client_conn` below
/// the largest step is refused before the first step, with the password
/// of the connection string never shown; with room enough both run.
#[test]
fn named_targets_are_checked_then_compared() {
    let bouncer = Bouncer::builder()
        .pool_mode(PoolMode::Transaction)
        .max_client_conn(6)
        .default_pool_size(2)
        .setting("admin_users", server().superuser())
        .start(server());
    let db = server();
    let direct = format!(
        "--target=direct=host={} port={} user={} dbname=postgres password={}",
        db.socket_dir().display(),
        db.port(),
        db.superuser(),
        db.superuser_password()
    );
    let pooled = format!(
        "--target=pool=host={} port={} user={} dbname=postgres password=s3cret-unused",
        bouncer.socket_dir().display(),
        bouncer.port(),
        db.superuser()
    );
    let mut command = bouncer.command(pgbolt_path());
    command.args([&direct, &pooled, "-S", "-T", "1", "--sweep=clients:2,8"]);
    let out = run(&mut command);
    let errors = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{errors}");
    assert!(
        errors.contains("target \"pool\": its max_client_conn is 6, below the 8 clients"),
        "{errors}"
    );
    assert!(!errors.contains("step 1 of"), "{errors}");

    let mut command = bouncer.command(pgbolt_path());
    command.args([
        &direct,
        &pooled,
        "-S",
        "-T",
        "1",
        "--sweep=clients:1,4",
        "--json=-",
    ]);
    let out = run(&mut command);
    let (json, errors) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{errors}");
    let result: serde_json::Value = serde_json::from_str(&json).unwrap();
    // A local pooler's CPU is found through its Unix socket.
    let views = result["pooler_steps"].as_array().unwrap();
    assert_eq!(views.len(), 2, "{views:?}");
    assert!(
        views
            .iter()
            .all(|v| v["target"] == "pool" && v["view"]["cpu_percent"].as_f64().is_some()),
        "{views:?}"
    );
    let text = errors;
    assert!(
        text.contains("targets side by side (ratios against direct"),
        "{text}"
    );
    assert!(text.contains("target pool: host="), "{text}");
    for secret in [db.superuser_password(), "s3cret-unused"] {
        assert!(!text.contains(secret) && !json.contains(secret), "{text}");
    }
}

/// A plain run pointed at a pooler in transaction pooling with `-M
/// prepared` is told once, before the clients connect, why that cannot
/// work and what to use instead; in session pooling nothing is said.
#[test]
fn a_plain_prepared_run_through_transaction_pooling_is_warned_once() {
    let args = ["-S", "-M", "prepared", "-c", "3", "-t", "5"];
    let bouncer = Bouncer::builder()
        .pool_mode(PoolMode::Transaction)
        .default_pool_size(2)
        .start(server());
    let out = common::pgbouncer::run(&bouncer, pgbolt_path(), &args);
    let errors = stderr(&out);
    assert_eq!(
        errors.matches("-M prepared cannot work").count(),
        1,
        "{errors}"
    );
    let warning = errors.find("-M prepared cannot work").unwrap();
    let first_client_error = errors.find("client ").unwrap_or(errors.len());
    assert!(warning < first_client_error, "{errors}");
    assert!(errors.contains("Use -M extended"), "{errors}");

    let bouncer = Bouncer::builder()
        .pool_mode(PoolMode::Session)
        .default_pool_size(3)
        .start(server());
    let out = common::pgbouncer::run(&bouncer, pgbolt_path(), &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("cannot work"), "{}", stderr(&out));

    // Regression: a session pool of one server connection, which the
    // set-up connection holds, made the second session's query wait for
    // PgBouncer's query_wait_timeout; it is given up instead.
    let bouncer = Bouncer::builder()
        .pool_mode(PoolMode::Session)
        .default_pool_size(1)
        .setting("query_wait_timeout", "600")
        .start(server());
    let mut child = bouncer
        .command(pgbolt_path())
        .args(["-S", "-M", "prepared", "-c", "1", "-t", "5"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pgbolt starts");
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().expect("pgbolt runs").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("pgbolt waited for the pool's only server connection");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().expect("pgbolt ends");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("cannot work"), "{}", stderr(&out));
    // Regression: the monitor's session took that server connection
    // before the client's first query now and then, and the client waited
    // for it until the end of the run that could not end.
    assert!(
        stdout(&out).contains("monitor: not started behind a pooler"),
        "{}",
        stdout(&out)
    );
}
