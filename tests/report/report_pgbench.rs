//! pgbolt's logs and report lines checked against the real pgbench.
//!
//! The same regular expressions are matched against the lines pgbolt's log
//! writer produces and against the files the real pgbench writes with the
//! same options, and the real pgbench's report is compared line by line
//! (numbers masked) with pgbolt's rendering for the same options. A
//! throwaway cluster of the suite's default server (PostgreSQL 18 from
//! `make deps`) is started for the whole file; the oracle is
//! [`common::pgbench_path`].

use std::path::{Path, PathBuf};
use std::process::Command;

use pgbolt::report::text::run::render_pgbench;

use pgbolt::model::run::{RunResult, Timings};

use pgbolt::model::run::{RunLimit, RunOptions, ScriptInfo};
use pgbolt::stats::{
    log_file_name, FailureKind, LogEntry, LogOptions, Outcome, StatsLayout, ThreadStats,
    Transaction, TransactionLog,
};
use regex::Regex;

use crate::common;

/// A server program of the suite's default server (PostgreSQL 18 from
/// `make deps`, the newest found).
fn server_program(name: &str) -> String {
    let dir = pgbolt::tempdb::find_bin_dir().expect("server programs");
    dir.join(name).to_string_lossy().into_owned()
}

struct Server {
    dir: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = as_postgres(&server_program("pg_ctl"))
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn as_postgres(program: &str) -> Command {
    // PostgreSQL refuses to run as root.
    if unsafe { libc::geteuid() } == 0 {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--", program]);
        c
    } else {
        Command::new(program)
    }
}

fn run_ok(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().expect("command starts");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Starts a throwaway cluster initialized with `pgbench -i`; stopped and
/// removed when dropped.
fn start_server() -> Server {
    let dir = std::env::temp_dir().join(format!("pgbolt-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let server = Server { dir };
    if unsafe { libc::geteuid() } == 0 {
        run_ok(Command::new("chown").arg("postgres").arg(&server.dir));
    }
    let data = server.dir.join("data");
    run_ok(
        as_postgres(&server_program("initdb"))
            .args(["-A", "trust", "-U", "postgres", "-D"])
            .arg(&data),
    );
    let opts = format!(
        "-k {} -c listen_addresses='' -c fsync=off -p 5432",
        server.dir.display()
    );
    run_ok(
        as_postgres(&server_program("pg_ctl"))
            .arg("-D")
            .arg(&data)
            .args(["-w", "-o", &opts, "-l"])
            .arg(server.dir.join("log"))
            .arg("start"),
    );
    run_ok(pgbench(&server.dir).args(["-i", "-q", "-s", "1"]));
    server
}

/// Both comparisons share one server (so it is stopped when the test ends).
#[test]
fn real_pgbench_writes_the_same_logs_and_report_lines() {
    let server = start_server();
    log_lines_have_pgbench_format(&server.dir);
    report_lines_match_pgbench(&server.dir);
}

fn pgbench(socket_dir: &Path) -> Command {
    let mut c = Command::new(common::pgbench_path());
    c.arg("-h")
        .arg(socket_dir)
        .args(["-p", "5432", "-U", "postgres", "-d", "postgres"]);
    c
}

/// Runs pgbench in a fresh directory and returns it with the names and
/// lines of the log files it wrote, plus its stdout.
fn run_pgbench(socket: &Path, args: &[&str]) -> (Vec<(String, Vec<String>)>, String, u32) {
    let cwd = tempfile::tempdir().unwrap();
    let mut cmd = pgbench(socket);
    let child = cmd
        .args(["-n"])
        .args(args)
        .current_dir(cwd.path())
        .output()
        .unwrap();
    assert!(
        child.status.success(),
        "pgbench {args:?}: {}",
        String::from_utf8_lossy(&child.stderr)
    );
    let mut files = Vec::new();
    for entry in std::fs::read_dir(cwd.path()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        files.push((name, text.lines().map(str::to_string).collect()));
    }
    files.sort();
    let stdout = String::from_utf8(child.stdout).unwrap();
    // pgbench's pid is in the file names; recover it from the first one.
    let pid = files
        .first()
        .and_then(|(n, _)| n.split('.').nth(1))
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    (files, stdout, pid)
}

/// A per-transaction log line for these options.
fn transaction_line(o: &LogOptions) -> Regex {
    let time = if o.failures_detailed {
        r"(\d+|skipped|serialization|deadlock|other)"
    } else {
        r"(\d+|skipped|failed)"
    };
    let lag = if o.throttled { r" \d+" } else { "" };
    let retries = if o.max_tries != 1 { r" \d+" } else { "" };
    Regex::new(&format!(
        r"^\d+ \d+ {time} \d+ \d{{10}} \d{{1,6}}{lag}{retries}$"
    ))
    .unwrap()
}

/// An aggregate log line for these options: columns that do not apply are 0.
fn aggregate_line(o: &LogOptions) -> Regex {
    let n = r"\d+";
    let when = |on: bool| if on { n } else { "0" };
    let mut cols = vec![r"\d{10}", n, n, n, n, n];
    cols.extend([when(o.throttled); 4]);
    cols.push(when(o.throttled && o.latency_limit));
    cols.extend([when(o.max_tries != 1); 2]);
    cols.extend([when(o.failures_detailed); 2]);
    if o.continue_on_error {
        cols.push(when(o.failures_detailed));
    }
    Regex::new(&format!("^{}$", cols.join(" "))).unwrap()
}

fn log_options(pid: u32) -> LogOptions {
    LogOptions {
        prefix: None,
        pid,
        throttled: false,
        latency_limit: false,
        max_tries: 1,
        failures_detailed: false,
        continue_on_error: false,
        sampling_rate: None,
        aggregate_interval_s: None,
    }
}

/// Lines pgbolt's writer produces for a mix of outcomes over three seconds.
fn pgbolt_log_lines(o: &LogOptions) -> Vec<String> {
    let start = 1_700_000_000_250_000;
    let mut log = TransactionLog::new(Vec::new(), "memory".into(), o, start);
    let outcomes = [
        Outcome::Committed,
        Outcome::Skipped,
        Outcome::Failed(FailureKind::Serialization),
        Outcome::Failed(FailureKind::Deadlock),
        Outcome::Committed,
    ];
    let mut draws = [0.1, 0.9].into_iter().cycle();
    let mut sample = || draws.next().unwrap_or(0.0);
    for i in 0..60u32 {
        let entry = LogEntry {
            client_id: i % 3,
            transaction_no: u64::from(i / 3 + 1),
            script: (i % 2) as usize,
            outcome: outcomes[i as usize % outcomes.len()],
            tries: 1 + i % 3,
            latency_us: 500 + i64::from(i) * 37,
            lag_us: i64::from(i % 7),
            now_us: start + i64::from(i) * 50_000,
        };
        log.log(&entry, &mut sample).unwrap();
    }
    log.finish(start + 3_100_000).unwrap();
    let bytes = log.into_inner().unwrap();
    String::from_utf8(bytes)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn check_lines(what: &str, lines: &[String], re: &Regex) {
    assert!(!lines.is_empty(), "{what}: no lines");
    for l in lines {
        assert!(re.is_match(l), "{what}: line {l:?} does not match {re}");
    }
}

fn log_lines_have_pgbench_format(socket: &Path) {
    struct Case {
        args: &'static [&'static str],
        files: usize,
        set: fn(&mut LogOptions),
    }
    let cases = [
        Case {
            args: &["-t", "50", "-c", "2", "-j", "2", "-l", "-S"],
            files: 2,
            set: |_| {},
        },
        Case {
            args: &[
                "-T",
                "2",
                "-R",
                "300",
                "-L",
                "1",
                "--max-tries=2",
                "-l",
                "--log-prefix=pfx",
                "-S",
            ],
            files: 1,
            set: |o| {
                o.prefix = Some("pfx".into());
                o.throttled = true;
                o.latency_limit = true;
                o.max_tries = 2;
            },
        },
        Case {
            args: &[
                "-t",
                "100",
                "-l",
                "--sampling-rate=0.5",
                "--failures-detailed",
                "-S",
            ],
            files: 1,
            set: |o| {
                o.sampling_rate = Some(0.5);
                o.failures_detailed = true;
            },
        },
        Case {
            args: &[
                "-T",
                "3",
                "-R",
                "200",
                "-L",
                "2",
                "--aggregate-interval=1",
                "-l",
                "-S",
            ],
            files: 1,
            set: |o| {
                o.throttled = true;
                o.latency_limit = true;
                o.aggregate_interval_s = Some(1);
            },
        },
        Case {
            args: &[
                "-T",
                "2",
                "--aggregate-interval=1",
                "--max-tries=3",
                "--failures-detailed",
                "-l",
                "-S",
            ],
            files: 1,
            set: |o| {
                o.aggregate_interval_s = Some(1);
                o.max_tries = 3;
                o.failures_detailed = true;
            },
        },
    ];
    for case in &cases {
        let (files, _, pid) = run_pgbench(socket, case.args);
        let mut o = log_options(pid);
        (case.set)(&mut o);
        let re = if o.aggregate_interval_s.is_some() {
            aggregate_line(&o)
        } else {
            transaction_line(&o)
        };
        let expected_names: Vec<String> = (0..case.files)
            .map(|t| {
                log_file_name(o.prefix.as_deref(), pid, t)
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        let names: Vec<String> = files.iter().map(|(n, _)| n.clone()).collect();
        assert_eq!(names, expected_names, "pgbench {:?}", case.args);
        for (name, lines) in &files {
            check_lines(&format!("pgbench {:?} {name}", case.args), lines, &re);
        }
        check_lines(
            &format!("pgbolt for {:?}", case.args),
            &pgbolt_log_lines(&o),
            &re,
        );
    }
}

#[test]
fn pgbolt_log_lines_exactly() {
    let mut o = log_options(42);
    o.throttled = true;
    o.max_tries = 3;
    let lines = pgbolt_log_lines(&o);
    assert_eq!(lines[0], "0 1 500 0 1700000000 250000 0 0");
    assert_eq!(lines[1], "1 1 skipped 1 1700000000 300000 1 1");
    assert_eq!(lines[2], "2 1 failed 0 1700000000 350000 2 2");
    o.failures_detailed = true;
    o.sampling_rate = Some(0.5);
    let sampled = pgbolt_log_lines(&o);
    assert_eq!(sampled.len(), 30, "every other draw exceeds the rate");
    assert_eq!(sampled[1], "2 1 serialization 0 1700000000 350000 2 2");

    let mut agg = log_options(42);
    agg.aggregate_interval_s = Some(1);
    agg.max_tries = 3;
    let lines = pgbolt_log_lines(&agg);
    // Intervals cover whole epoch seconds, as pgbench's do: the run starts
    // at .25 s, so the first interval holds 15 transactions (6 committed, 3
    // skipped, 6 failed), the next ones 20; failures not detailed.
    assert_eq!(
        lines.len(),
        3,
        "the unfinished fourth interval is not written"
    );
    assert_eq!(
        lines[0],
        "1700000000 6 4554 3626242 500 1018 0 0 0 0 0 8 12 0 0"
    );
    assert!(lines[1].starts_with("1700000001 8 "), "{}", lines[1]);
    assert_eq!(log_file_name(None, 42, 0), "pgbench_log.42");
    assert_eq!(log_file_name(Some("x/y".as_ref()), 42, 3), "x/y.42.3");
}

/// pgbench counts aggregation intervals from when a thread's clients are
/// connected: a file opened at .25 s whose clients start at 1.95 s writes
/// no interval for the second the connections took; the first starts at
/// 1 s, the whole second before the clients did.
#[test]
fn aggregation_starts_when_the_clients_do() {
    let mut o = log_options(42);
    o.aggregate_interval_s = Some(1);
    let opened = 1_700_000_000_250_000;
    let began = opened + 1_700_000;
    let mut log = TransactionLog::new(Vec::new(), "memory".into(), &o, opened);
    log.begin(began);
    let entry = LogEntry {
        client_id: 0,
        transaction_no: 1,
        script: 0,
        outcome: Outcome::Committed,
        tries: 1,
        latency_us: 700,
        lag_us: 0,
        now_us: began + 100_000,
    };
    log.log(&entry, &mut || 0.0).unwrap();
    log.finish(began + 1_200_000).unwrap();
    let text = String::from_utf8(log.into_inner().unwrap()).unwrap();
    let firsts: Vec<&str> = text.lines().filter_map(|l| l.split(' ').next()).collect();
    assert_eq!(firsts, ["1700000001", "1700000002"], "{text}");
}

#[test]
fn log_file_errors_are_reported() {
    let mut o = log_options(1);
    o.prefix = Some("/nonexistent-dir/pfx".into());
    let err = TransactionLog::create(&o, 0, 0)
        .err()
        .expect("cannot create");
    assert!(err
        .to_string()
        .starts_with("could not open logfile \"/nonexistent-dir/pfx.1\": "));
}

/// The report with every number masked.
fn shape(text: &str) -> Vec<String> {
    let number = Regex::new(r"-?\d+(\.\d+)?|-?nan").unwrap();
    text.lines()
        .filter(|l| !l.starts_with("pgbench (") && !l.starts_with("progress: "))
        .map(|l| number.replace_all(l, "N").into_owned())
        .collect()
}

fn synthetic(o: RunOptions) -> RunResult {
    let layout = StatsLayout {
        commands_per_script: vec![2],
        latency_limit_us: o.latency_limit_us,
        start_us: 0,
        throttled: true,
        series: true,
    };
    let mut stats = ThreadStats::new(&layout);
    for i in 0..10 {
        stats.record_transaction(&Transaction {
            script: 0,
            outcome: Outcome::Committed,
            tries: 1,
            latency_us: 100 + i,
            lag_us: 5,
            end_us: 0,
        });
    }
    let timings = Timings {
        bench_duration_us: 1_000_000,
        initial_connection_us: 1000,
        total_connection_us: 1000,
    };
    RunResult::build(o, timings, false, &stats).unwrap()
}

fn report_lines_match_pgbench(socket: &Path) {
    let base = RunOptions {
        scripts: vec![ScriptInfo {
            name: "<builtin: select only>".into(),
            weight: 1,
            commands: vec![],
            sha256: None,
        }],
        scale: 1,
        partitioning: None,
        query_mode: "simple".into(),
        clients: 2,
        threads: 2,
        max_tries: 1,
        limit: RunLimit::TransactionsPerClient(20),
        rate: None,
        latency_limit_us: None,
        progress_s: None,
        connect_per_transaction: false,
        pool_size: None,
        failures_detailed: false,
        report_per_command: false,
        continue_on_error: false,
        warmup_s: 0,
        variables: Default::default(),
    };
    let cases: Vec<(&[&str], RunOptions)> = vec![
        (&["-t", "20", "-c", "2", "-j", "2", "-S"], base.clone()),
        (
            &["-t", "20", "-c", "2", "-j", "2", "-S", "-C"],
            RunOptions {
                connect_per_transaction: true,
                ..base.clone()
            },
        ),
        (
            &[
                "-T",
                "2",
                "-c",
                "2",
                "-j",
                "2",
                "-S",
                "-R",
                "200",
                "-L",
                "5",
                "--max-tries=3",
                "--failures-detailed",
                "-P",
                "1",
            ],
            RunOptions {
                limit: RunLimit::DurationSeconds(2),
                rate: Some(200.0),
                latency_limit_us: Some(5000),
                max_tries: 3,
                failures_detailed: true,
                progress_s: Some(1),
                ..base.clone()
            },
        ),
        (
            &[
                "-T",
                "1",
                "-c",
                "2",
                "-j",
                "2",
                "-S",
                "-P",
                "1",
                "--max-tries=0",
                "-L",
                "100",
            ],
            RunOptions {
                limit: RunLimit::DurationSeconds(1),
                max_tries: 0,
                latency_limit_us: Some(100_000),
                progress_s: Some(1),
                ..base.clone()
            },
        ),
    ];
    for (args, options) in cases {
        let (_, stdout, _) = run_pgbench(socket, args);
        let ours = render_pgbench(&synthetic(options));
        assert_eq!(
            shape(&ours),
            shape(&stdout),
            "pgbench {args:?}:\n{stdout}\npgbolt:\n{ours}"
        );
    }
}
