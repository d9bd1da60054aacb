//! pgbolt's own results (the JSON file and the percentile lines) checked
//! against the per-transaction log of the same run, and the runs beside
//! the real pgbench with the same arguments: exit status and report lines
//! (numbers masked) agree, and pgbolt's figures agree with its log to the
//! precision docs/json.md states, also for runs that abort, are
//! interrupted or commit nothing.

use std::path::Path;
use std::process::Stdio;

use crate::report_support::compare::{mask, ours_without_additions, report_lines};
use crate::report_support::*;
use crate::results_support::*;
use serde_json::Value;

/// Every third try fails with a serialization failure; one transaction in
/// five fails with a deadlock on every try.
const COUNTER: &str = "\\set n :n + 1
BEGIN;
SELECT fail_if(:n % 3 = 0, '40001');
\\set r random(1, 5)
SELECT fail_if(:r = 1, '40P01');
END;
";

/// The initialized database, with `fail_if` added once.
fn database() -> &'static str {
    static DB: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DB.get_or_init(|| {
        let db = fresh_database();
        server().psql_in(&db, FAIL_IF).expect("create fail_if");
        db
    })
}

/// Reads a result file strictly: serde_json refuses `NaN` and `Infinity`.
fn strict(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not strict JSON ({e}):\n{text}"))
}

/// The lines of the `-l` files a run left in `dir`.
fn log_lines(dir: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(dir).expect("run directory").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("pgbench_log.") {
            let text = std::fs::read_to_string(entry.path()).expect("log");
            lines.extend(text.lines().map(str::to_owned));
        }
    }
    lines
}

/// The strict reading is what keeps `NaN` out: a substring search would
/// also find it inside a base64 histogram.
#[test]
#[should_panic(expected = "not strict JSON")]
fn strict_reading_refuses_nan() {
    strict(r#"{"average_ms": NaN}"#);
}

/// pgbolt's run of `args` with `-l` and `--json`, checked against its own
/// log and report; returns the JSON and the exit status.
fn ours(args: &[String], report_on_stdout: bool) -> (Value, Option<i32>, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut full = args.to_vec();
    full.extend(["-l".into(), "--json=result.json".into()]);
    let full: Vec<&str> = full.iter().map(String::as_str).collect();
    let out = Run::new(database(), &full).in_dir(dir.path()).pgbolt();
    let text = std::fs::read_to_string(dir.path().join("result.json"))
        .unwrap_or_else(|e| panic!("{args:?}: no JSON ({e}): {}", stderr(&out)));
    let json = strict(&text);
    let has = |p: &str| args.iter().any(|a| a.starts_with(p));
    let retries = args
        .iter()
        .any(|a| a.starts_with("--max-tries") && a != "--max-tries=1");
    let rows = parse_log(&log_lines(dir.path()), has("-R"), retries);
    check_against_log(&json, &rows);
    let intervals = json
        .pointer("/series/intervals")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    assert!(
        rows.is_empty() || intervals > 0,
        "{args:?}: logged transactions but no per-second series"
    );
    let report = stdout(&out);
    check_against_report(&json, &report);
    check_documented_fields(&json);
    assert!(report_on_stdout || report.is_empty());
    (json, out.status.code(), report)
}

/// The options every case shares, then the case's, with FILE replaced.
fn arguments(args: &[&str], file: &ScriptFile) -> Vec<String> {
    ["-n", "-D", "n=0", "--random-seed=7"]
        .iter()
        .chain(args)
        .map(|a| a.replace("FILE", &file.path))
        .collect()
}

/// Run shapes of the brief: clients and threads, -t and -T, -R with lag
/// and -L (late and skipped), weighted scripts with -r, retried and failed
/// transactions, -C, aggregated logs, and a run that aborts.
#[test]
fn json_figures_equal_the_transaction_log_and_reports_match_pgbench() {
    let counter = script("counter.sql", COUNTER);
    let cases: &[&[&str]] = &[
        &["-t", "40", "-c", "3", "-j", "2", "-S"],
        &["-T", "1", "-c", "4", "-j", "4", "-S", "-P", "1"],
        &["-T", "1", "-c", "2", "-j", "2", "-R", "400", "-S"],
        &["-T", "1", "-c", "2", "-R", "400", "-L", "0.2", "-S"],
        &[
            "-t",
            "30",
            "-c",
            "2",
            "-b",
            "select-only@3",
            "-b",
            "simple-update@1",
            "-r",
        ],
        &[
            "-t",
            "30",
            "-c",
            "2",
            "-j",
            "2",
            "-f",
            "FILE",
            "--max-tries=3",
            "--failures-detailed",
            "-r",
        ],
        &[
            "-t",
            "20",
            "-c",
            "2",
            "-f",
            "FILE",
            "--max-tries=1",
            "-L",
            "5",
        ],
        &["-t", "15", "-c", "2", "-C", "-S"],
        &["-t", "20", "-c", "2", "-S", "-l", "--aggregate-interval=1"],
    ];
    for case in cases {
        let args = arguments(case, &counter);
        let aggregated = case.iter().any(|a| a.starts_with("--aggregate"));
        let (json, code, report) = if aggregated {
            // Aggregated logs have no per-transaction lines: the JSON is
            // only checked against the report.
            let dir = tempfile::tempdir().expect("temp dir");
            let mut full = args.clone();
            full.extend(["-l".into(), "--json=r.json".into()]);
            let full: Vec<&str> = full.iter().map(String::as_str).collect();
            let out = Run::new(database(), &full).in_dir(dir.path()).pgbolt();
            let json = strict(&std::fs::read_to_string(dir.path().join("r.json")).expect("json"));
            check_against_report(&json, &stdout(&out));
            (json, out.status.code(), stdout(&out))
        } else {
            ours(&args, true)
        };
        assert_eq!(json["aborted"], false, "{case:?}");
        let plain: Vec<&str> = args.iter().map(String::as_str).collect();
        let scratch = tempfile::tempdir().expect("temp dir");
        let theirs = Run::new(database(), &plain)
            .in_dir(scratch.path())
            .pgbench();
        assert_eq!(code, theirs.status.code(), "{case:?}: {}", stderr(&theirs));
        let rate = case.contains(&"-R");
        let masked =
            |lines: Vec<String>| -> Vec<String> { lines.iter().map(|l| mask(l)).collect() };
        assert_eq!(
            masked(ours_without_additions(&report, rate)),
            masked(
                report_lines(&stdout(&theirs))
                    .into_iter()
                    .filter(|l| !l.starts_with("pgbench ("))
                    .collect()
            ),
            "{case:?}"
        );
    }
}

/// Runs that end badly still write a complete, strict JSON result that
/// agrees with the log and the report: a client that aborts (exit 2, as
/// pgbench), every transaction failing, nothing run at all.
#[test]
fn json_is_complete_when_the_run_aborts_fails_or_commits_nothing() {
    let div0 = script(
        "div0.sql",
        "\\set x random(1, 3)\n\\if :x = 1\nSELECT 1/0;\n\\endif\nSELECT 1;\n",
    );
    let always = script(
        "always.sql",
        "BEGIN;\nSELECT fail_if(true, '40001');\nEND;\n",
    );
    let cases: &[(&ScriptFile, &[&str], i32, bool)] = &[
        (
            &div0,
            &["-t", "30", "-c", "4", "-j", "2", "-f", "FILE"],
            2,
            true,
        ),
        (
            &div0,
            &["-T", "1", "-c", "2", "-R", "200", "-L", "5", "-f", "FILE"],
            2,
            true,
        ),
        (
            &always,
            &["-t", "10", "-c", "2", "-f", "FILE", "--max-tries=2"],
            0,
            false,
        ),
        (
            &always,
            &["-T", "1", "-c", "2", "-R", "100", "-f", "FILE"],
            0,
            false,
        ),
        (
            &always,
            &["-T", "1", "-c", "1", "-R", "0.0001", "-S"],
            0,
            false,
        ),
    ];
    for (file, case, code, aborted) in cases {
        let args = arguments(case, file);
        let (json, status, _) = ours(&args, true);
        assert_eq!(status, Some(*code), "{case:?}");
        assert_eq!(json["aborted"], *aborted, "{case:?}");
        let plain: Vec<&str> = args.iter().map(String::as_str).collect();
        let theirs = Run::new(database(), &plain).pgbench();
        assert_eq!(status, theirs.status.code(), "{case:?}");
    }
}

/// SIGINT in the middle of a run: the report and a complete JSON result,
/// marked `aborted`, that agrees with the log (pgbench dies without one).
#[test]
fn json_is_complete_after_sigint() {
    let dir = tempfile::tempdir().expect("temp dir");
    let args = [
        "-n",
        "-T",
        "30",
        "-c",
        "3",
        "-j",
        "2",
        "-R",
        "500",
        "-S",
        "-l",
        "--json=r.json",
    ];
    // An application name of its own: the other tests of this binary use
    // the same database at the same time, and counting their backends as
    // this run's sent the signal before the run had started.
    let app = "results_diff_sigint";
    let child = Run::new(database(), &args)
        .env("PGAPPNAME", app)
        .in_dir(dir.path())
        .pgbolt_command()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pgbolt starts");
    // Interrupt once the run is under way and has committed something,
    // however slowly the machine starts it.
    wait_for_second_statement(app, "SELECT abalance %");
    // SAFETY: kill() with the id of a child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().expect("pgbolt ends");
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let json = strict(&std::fs::read_to_string(dir.path().join("r.json")).expect("json"));
    assert_eq!(json["aborted"], true);
    assert!(json["counts"]["committed"].as_u64() > Some(0), "{json}");
    check_against_log(&json, &parse_log(&log_lines(dir.path()), true, false));
    check_against_report(&json, &stdout(&out));
    check_documented_fields(&json);
}

/// `--sampling-rate` thins the log, never the results.
#[test]
fn sampling_does_not_change_the_json() {
    let dir = tempfile::tempdir().expect("temp dir");
    let args = [
        "-n",
        "-t",
        "200",
        "-c",
        "2",
        "-S",
        "-l",
        "--sampling-rate=0.1",
        "--json=-",
    ];
    let out = Run::new(database(), &args).in_dir(dir.path()).pgbolt();
    assert!(out.status.success(), "{}", stderr(&out));
    let json = strict(&stdout(&out));
    check_against_report(&json, &stderr(&out));
    assert_eq!(json["counts"]["committed"], 400);
    assert_eq!(json["latency"]["stats"]["count"], 400);
    assert!(log_lines(dir.path()).len() < 200);
}

/// Regression: a `--json` path that cannot be written was found out only
/// after the whole run. It now stops pgbolt before the run with status 1,
/// as an unusable `--log-prefix` stops pgbench; an existing file survives
/// a run that ends without results.
#[test]
fn a_json_file_that_cannot_be_opened_stops_before_the_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("missing");
    let theirs = Run::new(
        database(),
        &[
            "-n",
            "-t",
            "5",
            "-S",
            "-l",
            &format!("--log-prefix={}/lg", missing.display()),
        ],
    )
    .pgbench();
    let out = Run::new(
        database(),
        &[
            "-n",
            "-t",
            "5",
            "-S",
            &format!("--json={}/r.json", missing.display()),
        ],
    )
    .pgbolt();
    assert_eq!(out.status.code(), theirs.status.code());
    assert_eq!(out.status.code(), Some(1));
    assert!(line(&stdout(&theirs), "transaction type:").is_none());
    assert!(
        line(&stdout(&out), "transaction type:").is_none(),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains(&format!(
            "pgbolt: error: could not open JSON file \"{}/r.json\": No such file or directory",
            missing.display()
        )),
        "{}",
        stderr(&out)
    );

    let old = dir.path().join("old.json");
    std::fs::write(&old, "previous").expect("write");
    let abort = script("div0.sql", "SELECT 1/0;\n");
    let out = Run::new(
        database(),
        &[
            "-n",
            "-t",
            "5",
            "-f",
            &abort.path,
            "--exit-on-abort",
            &format!("--json={}", old.display()),
        ],
    )
    .pgbolt();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&old).expect("read"), "previous");
}

/// Regression: `--json=/dev/stdout` with standard output redirected to a
/// file emptied that file and wrote the JSON over the report; the JSON now
/// follows the report, and a FIFO's reader gets the results.
#[test]
fn json_to_standard_output_follows_the_report() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("out.txt");
    let status = Run::new(database(), &["-n", "-t", "5", "-S", "--json=/dev/stdout"])
        .pgbolt_command()
        .stdout(std::fs::File::create(&file).expect("create"))
        .stderr(Stdio::null())
        .status()
        .expect("pgbolt runs");
    assert_eq!(status.code(), Some(0));
    let text = std::fs::read_to_string(&file).expect("read");
    let json_at = text.find("{\n").expect("JSON after the report");
    assert!(text[..json_at].contains("transaction type:"), "{text}");
    strict(&text[json_at..]);

    let fifo = dir.path().join("fifo");
    let path = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).expect("path");
    // SAFETY: mkfifo with a NUL-terminated path this test owns.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).expect("read the FIFO"))
    };
    let out = Run::new(
        database(),
        &["-n", "-t", "5", "-S", &format!("--json={}", fifo.display())],
    )
    .pgbolt();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    strict(&reader.join().expect("reader"));
}

/// A password given in the connection string reaches neither the JSON nor
/// the output.
#[test]
fn a_password_never_appears_in_the_results() {
    let dir = tempfile::tempdir().expect("temp dir");
    let conninfo = format!("dbname={} password=s3cr3t-word", database());
    let out = Run::new(
        database(),
        &["-n", "-t", "5", "-S", "--json=r.json", &conninfo],
    )
    .in_dir(dir.path())
    .pgbolt();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(dir.path().join("r.json")).expect("json");
    for seen in [text, stdout(&out), stderr(&out)] {
        assert!(!seen.contains("s3cr3t"), "{seen}");
    }
}
