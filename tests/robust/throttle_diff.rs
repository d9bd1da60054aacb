//! Rate limits (`-R`), latency limits (`-L`), transaction logs (`-l`) and
//! progress lines (`-P`) against the real pgbench: the same command lines,
//! and what a user sees compared (exit codes, messages, which report lines
//! appear, log and progress line shapes), never timing values.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::robust_support::*;

const LIMIT: Duration = Duration::from_secs(60);

/// Runs pgbench, then pgbolt (with `--pgbench-output`), each in its own new
/// directory where its log files land; gives each run with its directory.
fn both(dbname: &str, args: &[&str]) -> [(&'static str, Finished, tempfile::TempDir); 2] {
    let db = server();
    let run = |name: &'static str, mut cmd: Command| {
        let dir = tempfile::tempdir().expect("temp dir");
        cmd.current_dir(dir.path());
        (name, spawn(cmd).wait(LIMIT), dir)
    };
    let mut ours = pgbolt(db, dbname, args);
    ours.arg("--pgbench-output");
    [
        run("pgbench", pgbench(db, dbname, args)),
        run("pgbolt", ours),
    ]
}

/// The report's lines with the program's own version line left out and
/// every number replaced by `N`.
fn masked_report(out: &str) -> Vec<String> {
    out.lines()
        .skip(1)
        .map(|l| {
            let mut masked = String::new();
            let mut in_number = false;
            for ch in l.chars() {
                let digit = ch.is_ascii_digit() || (in_number && ch == '.');
                if digit && !in_number {
                    masked.push('N');
                } else if !digit {
                    masked.push(ch);
                }
                in_number = digit;
            }
            masked
        })
        .collect()
}

fn fields(lines: &[String]) -> Vec<usize> {
    let mut counts: Vec<usize> = lines.iter().map(|l| l.split(' ').count()).collect();
    counts.dedup();
    counts
}

#[test]
fn bad_rate_log_and_progress_options_are_refused_as_by_pgbench() {
    let cases: &[&[&str]] = &[
        &["-R", "0"],
        &["-R", "-1"],
        &["-R", "abc"],
        &["-L", "0"],
        &["-L", "x"],
        &["-L", "1e-400"],
        &["-P", "0"],
        &["-P", "x"],
        &["-P", "1.5"],
        &["--sampling-rate", "0", "-l"],
        &["--sampling-rate", "1.5", "-l"],
        &["--sampling-rate", "-1", "-l"],
        &["--sampling-rate", "x", "-l"],
        &["--sampling-rate", "0.5"],
        &["-l", "--sampling-rate", "0.5", "--aggregate-interval", "1"],
        &["--aggregate-interval", "0", "-l"],
        &["--aggregate-interval", "x", "-l"],
        &["--aggregate-interval", "2147483648", "-l"],
        &["--aggregate-interval", "1"],
        &["--log-prefix", "x"],
        &["--progress-timestamp"],
        &["-l", "--aggregate-interval", "5", "-T", "3"],
        &["-l", "--aggregate-interval", "2", "-T", "3"],
        &["-i", "-R", "5"],
        &["-i", "-l"],
    ];
    let db = server();
    for args in cases {
        let mut seen = Vec::new();
        for (name, cmd) in [
            ("pgbench", pgbench(db, "postgres", args)),
            ("pgbolt", pgbolt(db, "postgres", args)),
        ] {
            let done = spawn(cmd).wait(LIMIT);
            let err = done.stderr();
            assert_eq!(done.code(), Some(1), "{name} {args:?}: {err}");
            let first = err.lines().next().unwrap_or_default();
            let message = first.strip_prefix(name).unwrap_or(first).to_owned();
            assert!(message.starts_with(": error: "), "{name} {args:?}: {err}");
            seen.push(message);
        }
        assert_eq!(seen[0], seen[1], "{args:?}");
    }
}

/// Regression: pgbolt kept a rate it could not represent (`1e400` reads
/// as infinity) and printed the schedule lag and the `skipped` count, and
/// logged a lag column. pgbench turns the rate into a delay of 0 between
/// transactions, which is no rate limit at all.
#[test]
fn rate_too_large_for_a_double_is_no_rate_limit() {
    let dbname = database(server(), true);
    let args = ["-n", "-S", "-t", "3", "-R", "1e400", "-L", "10", "-l"];
    let runs = both(&dbname, &args);
    for (name, done, dir) in &runs {
        assert_eq!(done.code(), Some(0), "{name}: {}", done.stderr());
        let out = done.stdout();
        assert!(!out.contains("rate limit schedule lag"), "{name}: {out}");
        assert!(!out.contains("transactions skipped"), "{name}: {out}");
        assert!(
            out.contains("number of transactions above the 10.0 ms latency limit: "),
            "{name}: {out}"
        );
        let lines = log_lines(dir.path(), "pgbench_log.");
        assert_eq!(lines.len(), 3, "{name}: {lines:?}");
        assert_eq!(fields(&lines), [6], "{name}: {lines:?}");
    }
    assert_eq!(
        masked_report(&runs[0].1.stdout()),
        masked_report(&runs[1].1.stdout())
    );
}

/// Regression: a rate so low that the delay to the first transaction does
/// not fit in 64 bits made pgbolt's schedule overflow (a panic in debug
/// builds). The transaction is now due after the end of the run, which
/// then ends with none processed. (pgbench's schedule wraps around and it
/// runs unthrottled, with negative latencies.)
#[test]
fn rate_whose_delay_overflows_ends_the_run_cleanly() {
    let dbname = database(server(), true);
    let args = ["-n", "-S", "-T", "1", "-R", "1e-300"];
    for (name, done, _dir) in both(&dbname, &args) {
        let err = done.stderr();
        assert_eq!(done.code(), Some(0), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
        if name == "pgbolt" {
            assert_eq!(processed(&done.stdout()), 0, "{}", done.stdout());
        }
    }
}

/// Regression: with a rate so high that every delay rounds to 0 and a
/// latency limit, pgbolt skipped slots forever without looking at the
/// clock again, so `-T` never ended the run (nor did SIGINT). pgbench
/// stops skipping when its timer fires.
#[test]
fn skipping_at_a_rate_of_zero_delays_ends_with_the_duration() {
    let dbname = database(server(), true);
    let args = ["-n", "-S", "-T", "1", "-R", "1e300", "-L", "1", "-P", "1"];
    for (name, done, _dir) in both(&dbname, &args) {
        assert_eq!(done.code(), Some(0), "{name}: {}", done.stderr());
        let out = done.stdout();
        assert!(
            line(&out, "number of transactions skipped: ").is_some(),
            "{name}: {out}"
        );
    }
}

/// Under `-R` and `-L` with transactions slower than the schedule: the
/// report has the same lines, log lines have the lag column and mark
/// skipped transactions, progress lines carry the lag and skipped count.
#[test]
fn skipped_transactions_are_reported_logged_and_shown_as_by_pgbench() {
    let dbname = database(server(), true);
    let slow = script_in(Path::new("slow.sql"), "SELECT pg_sleep(0.02);\n");
    let args = [
        "-n", "-f", &slow.1, "-R", "200", "-L", "10", "-T", "2", "-c", "2", "-l", "-P", "1",
    ];
    let runs = both(&dbname, &args);
    for (name, done, dir) in &runs {
        assert_eq!(done.code(), Some(0), "{name}: {}", done.stderr());
        let lines = log_lines(dir.path(), "pgbench_log.");
        assert_eq!(fields(&lines), [7], "{name}: {lines:?}");
        assert!(
            lines.iter().any(|l| l.split(' ').nth(2) == Some("skipped")),
            "{name}: {lines:?}"
        );
        let err = done.stderr();
        let progress = line(&err, "progress: ").unwrap_or_default();
        assert_eq!(
            masked_report(&format!("\n{progress}")),
            ["progress: N s, N tps, lat N ms stddev N, N failed, lag N ms, N skipped"],
            "{name}: {err}"
        );
    }
    assert_eq!(
        masked_report(&runs[0].1.stdout()),
        masked_report(&runs[1].1.stdout())
    );
}

/// Aggregated logs under `-R` and `-L`: one line per whole interval of
/// the run (the last, partial one is not written, an empty one is), with
/// the lag and skipped columns.
#[test]
fn aggregated_log_under_rate_and_latency_limits_matches_pgbench() {
    let dbname = database(server(), true);
    let slow = script_in(Path::new("slow.sql"), "SELECT pg_sleep(0.02);\n");
    let args = [
        "-n",
        "-f",
        &slow.1,
        "-R",
        "200",
        "-L",
        "10",
        "-T",
        "2",
        "-l",
        "--aggregate-interval",
        "1",
    ];
    for (name, done, dir) in both(&dbname, &args) {
        assert_eq!(done.code(), Some(0), "{name}: {}", done.stderr());
        let lines = log_lines(dir.path(), "pgbench_log.");
        // The second interval is written unless every client, its next
        // start due after the end, finished before that interval did.
        assert!((1..=2).contains(&lines.len()), "{name}: {lines:?}");
        assert_eq!(fields(&lines), [15], "{name}: {lines:?}");
        // An interval can be empty, as in pgbench, when one transaction
        // outlasts it on a loaded machine: the skips are counted overall.
        let skipped: u64 = lines
            .iter()
            .filter_map(|l| l.split(' ').nth(10)?.parse::<u64>().ok())
            .sum();
        assert!(skipped > 0, "{name}: {lines:?}");
    }
}

/// With one client per thread, which transactions a sampled log keeps
/// depends only on `--random-seed`: both programs keep the same ones, in
/// files with the same names.
#[test]
fn sampled_logs_keep_the_same_transactions_under_a_seed() {
    let dbname = database(server(), true);
    let args = [
        "-n",
        "-S",
        "-t",
        "50",
        "-c",
        "2",
        "-j",
        "2",
        "-l",
        "--log-prefix=sampled",
        "--sampling-rate=0.3",
        "--random-seed=7",
    ];
    let kept = both(&dbname, &args).map(|(name, done, dir)| {
        assert_eq!(done.code(), Some(0), "{name}: {}", done.stderr());
        let mut files: Vec<(String, Vec<String>)> = std::fs::read_dir(dir.path())
            .expect("log dir")
            .flatten()
            .map(|e| {
                let file = e.file_name().to_string_lossy().into_owned();
                let thread = file.split('.').nth(2).unwrap_or("0").to_owned();
                let body = std::fs::read_to_string(e.path()).expect("log file");
                let ids = body
                    .lines()
                    .map(|l| {
                        let cols: Vec<&str> = l.split(' ').collect();
                        // Client, transaction and script; the rest is time.
                        [cols[0], cols[1], cols[3]].join(" ")
                    })
                    .collect();
                (thread, ids)
            })
            .collect();
        files.sort();
        files
    });
    assert_eq!(kept[0].len(), 2, "{:?}", kept[0]);
    assert_eq!(kept[0], kept[1]);
}

/// A script file in a new temporary directory: the directory (kept alive
/// by the caller) and the file's absolute path.
fn script_in(name: &Path, body: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(name);
    std::fs::write(&path, body).expect("write script");
    let path = path.to_string_lossy().into_owned();
    (dir, path)
}
