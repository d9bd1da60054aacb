//! The pgbolt binary against the real pgbench binary: the same command
//! lines against one throwaway server, and what a user sees compared.
//!
//! Reports are compared line by line with every number masked, so both
//! tools must print the same lines, in the same order, with the same
//! labels; counts that do not depend on timing (transactions per client,
//! weights, per-script counts under a fixed seed, command texts) are
//! compared exactly. pgbench 15 is the oracle; where pgbench 18, which
//! pgbolt follows, prints differently, pgbench 15's lines are rewritten to
//! 18's by [`pgbench15_to_18`] before comparing. The lines pgbolt adds (its
//! version line, the percentile lines) are checked on their own and then
//! removed.

mod report_support;

use std::collections::BTreeSet;
use std::sync::OnceLock;

use regex::Regex;
use report_support::*;

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("valid regex")
}

fn number() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| re(r"\d+(\.\d+)?"))
}

/// Every number replaced by `N`.
fn mask(line: &str) -> String {
    number().replace_all(line, "N").into_owned()
}

/// The command text of a `-r` line in pgbench 18's layout
/// (`   %11.3f  %10d[ %10d] %s`), or `None` if the line is not one.
fn per_command(line: &str, retries: bool) -> Option<&str> {
    let field = |from: usize, to: usize, float: bool| -> Option<()> {
        let s = line.get(from..to)?;
        let t = s.trim_start();
        let ok = if float {
            t.parse::<f64>().is_ok() && t.contains('.')
        } else {
            t.parse::<u64>().is_ok()
        };
        ok.then_some(())
    };
    if !line.starts_with("   ") {
        return None;
    }
    field(3, 14, true)?;
    if line.get(14..16)? != "  " {
        return None;
    }
    field(16, 26, false)?;
    let mut at = 26;
    if retries {
        if line.get(26..27)? != " " {
            return None;
        }
        field(27, 37, false)?;
        at = 37;
    }
    line.get(at..)?.strip_prefix(' ')
}

/// pgbench 15's report rewritten into pgbench 18's layout. Two mappings,
/// both differences between the versions (docs/compatibility.md, "Reports
/// and logs"):
///
/// 1. Per-script header. 15: ` - N transactions (P% of total, tps = X)`,
///    N counting committed transactions only. 18: ` - T transactions (Q% of
///    total)` with T = committed + failed + skipped of the script and Q its
///    share of all transactions, then ` - number of transactions actually
///    processed: N (tps = X)`. T is computed from the script's own failed
///    and skipped lines that follow, Q from the summary's counts.
/// 2. `-r` lines. 15: `   %11.3f  %10d  %s`, or with retries
///    `   %11.3f  %10d  %10d  %s`; 18: one space instead of two before the
///    retries column and before the command text.
/// 3. A run in which no transaction ran: 15 still prints `number of failed
///    transactions: 0 (NaN%)`; 18 stops after the processed line.
fn pgbench15_to_18(report: &str) -> Vec<String> {
    let lines: Vec<&str> = report.lines().collect();
    let retries = !lines.contains(&"maximum number of tries: 1");
    let count = |prefix: &str, from: usize, to: usize| -> u64 {
        lines[from..to]
            .iter()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|rest| rest.split([' ', '/']).next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let all = count(
        "number of transactions actually processed: ",
        0,
        lines.len(),
    ) + count("number of failed transactions: ", 0, lines.len())
        + count("number of transactions skipped: ", 0, lines.len());
    let header = re(r"^ - (\d+) transactions \((\d+\.\d)% of total, tps = (\d+\.\d+)\)$");
    let r15 = re(r"^   ( *-?\d+\.\d{3})  ( *\d+)(?:  ( *\d+))?  (.*)$");
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if let Some(c) = header.captures(l) {
            let end = lines[i + 1..]
                .iter()
                .position(|l| !l.starts_with(" - ") || l.contains(" transactions ("))
                .map_or(lines.len(), |p| i + 1 + p);
            let committed: u64 = c[1].parse().expect("count");
            let total = committed
                + count(" - number of failed transactions: ", i + 1, end)
                + count(" - number of transactions skipped: ", i + 1, end);
            let share = if all > 0 {
                100.0 * total as f64 / all as f64
            } else {
                0.0
            };
            out.push(format!(" - {total} transactions ({share:.1}% of total)"));
            out.push(format!(
                " - number of transactions actually processed: {committed} (tps = {})",
                &c[3]
            ));
        } else if *l == "number of failed transactions: 0 (NaN%)" {
            continue;
        } else if let Some(c) = r15.captures(l).filter(|c| c.get(3).is_some() == retries) {
            let mut line = format!("   {:>11}  {:>10}", c[1].trim(), c[2].trim());
            if let Some(r) = c.get(3) {
                line.push_str(&format!(" {:>10}", r.as_str().trim()));
            }
            line.push(' ');
            line.push_str(&c[4]);
            out.push(line);
        } else {
            out.push((*l).to_owned());
        }
    }
    out
}

/// pgbolt's report with its own lines checked and removed: the version
/// line first, the percentile lines last.
fn ours_without_additions(report: &str, rate: bool) -> Vec<String> {
    let mut lines: Vec<&str> = report.lines().collect();
    assert!(
        re(r"^pgbolt \(\d+\.\d+\.\d+, server \d+\.\d+.*\)$").is_match(lines[0]),
        "version line: {report}"
    );
    lines.remove(0);
    let dist = r"p50 = \d+\.\d{3} ms, p90 = \d+\.\d{3} ms, p99 = \d+\.\d{3} ms, p99\.9 = \d+\.\d{3} ms, max = \d+\.\d{3} ms$";
    let added = re(&format!(
        r"^(latency|service time|schedule lag|SQL script \d+ latency) percentiles: {dist}"
    ));
    let first_added = lines
        .iter()
        .position(|l| added.is_match(l))
        .unwrap_or(lines.len());
    let extra: Vec<&str> = lines.split_off(first_added);
    assert!(
        extra.iter().all(|l| added.is_match(l)),
        "pgbolt's lines come last: {report}"
    );
    let processed = line(report, "number of transactions actually processed: ")
        .and_then(|l| l.split([' ', '/']).nth(5))
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0);
    if processed > 0 {
        let expected: Vec<&str> = if rate {
            vec!["latency", "service time", "schedule lag"]
        } else {
            vec!["latency"]
        };
        let summary: Vec<&str> = extra
            .iter()
            .filter(|l| !l.starts_with("SQL script"))
            .map(|l| l.split(" percentiles:").next().unwrap_or_default())
            .collect();
        assert_eq!(summary, expected, "{report}");
        let scripts_run = lines
            .iter()
            .filter_map(|l| l.strip_prefix(" - number of transactions actually processed: "))
            .filter(|rest| !rest.starts_with("0 "))
            .count();
        assert_eq!(
            extra.iter().filter(|l| l.starts_with("SQL script")).count(),
            scripts_run,
            "{report}"
        );
    }
    lines.into_iter().map(str::to_owned).collect()
}

/// The report with numbers masked, `-r` columns replaced by a marker.
fn shape(lines: &[String], retries: bool) -> Vec<String> {
    lines
        .iter()
        .map(|l| match per_command(l, retries) {
            Some(command) => format!("[-r columns] {}", mask(command)),
            None => mask(l),
        })
        .collect()
}

/// Report lines that never depend on timing, compared exactly: the run's
/// parameters, weights, command texts, and the lines starting with one of
/// `exact` (with `tps = X` masked).
fn fixed_lines(lines: &[String], retries: bool, exact: &[&str]) -> Vec<String> {
    const ALWAYS: &[&str] = &[
        "transaction type:",
        "scaling factor:",
        "query mode:",
        "number of clients:",
        "number of threads:",
        "maximum number of tries:",
        "number of transactions per client:",
        "duration:",
        "SQL script ",
        " - weight:",
        "statement latencies",
        " - statement latencies",
    ];
    let tps = re(r"tps = \d+\.\d+");
    lines
        .iter()
        .filter_map(|l| {
            if let Some(command) = per_command(l, retries) {
                return Some(command.to_owned());
            }
            ALWAYS
                .iter()
                .chain(exact)
                .any(|p| l.starts_with(p))
                .then(|| tps.replace_all(l, "tps = N").into_owned())
        })
        .collect()
}

/// One command line run by both programs.
struct Case<'a> {
    args: &'a [&'a str],
    /// Report lines (by prefix) whose numbers must be equal too.
    exact: &'a [&'a str],
}

const PROCESSED: &str = "number of transactions actually processed:";
const NO_FAILURES: &str = "number of failed transactions:";
const PER_SCRIPT: &str = " - number of transactions actually processed:";

/// What `compare` saw, for further checks.
struct Seen {
    ours: String,
    ours_err: String,
    theirs_err: String,
}

/// Runs both programs and compares what they print.
fn compare(run: &Run, case: &Case<'_>) -> Seen {
    let ours = run.pgbolt();
    let theirs = run.pgbench();
    let what = case.args.join(" ");
    assert_eq!(
        ours.status.code(),
        theirs.status.code(),
        "{what}: exit status\n{}\n{}",
        stderr(&ours),
        stderr(&theirs)
    );
    // 2: a client aborted, and the report covers what ran until then.
    assert!(
        matches!(ours.status.code(), Some(0 | 2)),
        "{what}: {}",
        stderr(&ours)
    );
    let (ours_text, theirs_text) = (stdout(&ours), stdout(&theirs));
    let rate = case.args.iter().any(|a| a.starts_with("-R"));
    let mine = ours_without_additions(&ours_text, rate);
    let mut expected = pgbench15_to_18(&theirs_text);
    assert!(
        re(r"^pgbench \(\d+\.\d+.*\)$").is_match(&expected[0]),
        "{theirs_text}"
    );
    expected.remove(0);
    let retries = !theirs_text.contains("maximum number of tries: 1\n");
    assert_eq!(
        shape(&mine, retries),
        shape(&expected, retries),
        "{what}: report lines differ\n--- pgbolt\n{ours_text}\n--- pgbench\n{theirs_text}"
    );
    assert_eq!(
        fixed_lines(&mine, retries, case.exact),
        fixed_lines(&expected, retries, case.exact),
        "{what}\n--- pgbolt\n{ours_text}\n--- pgbench\n{theirs_text}"
    );
    let (ours_err, theirs_err) = (stderr(&ours), stderr(&theirs));
    let other = |text: &str, name: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.starts_with("progress: "))
            .map(|l| match l.strip_prefix(name) {
                Some(rest) => mask(&format!("PROG{rest}")),
                None => mask(l),
            })
            .collect()
    };
    assert_eq!(
        other(&ours_err, "pgbolt"),
        other(&theirs_err, "pgbench"),
        "{what}: standard error"
    );
    if case.args.contains(&"-t") {
        let plain = Run {
            args: [&run.args[..], &["--pgbench-output".to_owned()]].concat(),
            ..run.clone()
        };
        let out = plain.pgbolt();
        assert_eq!(
            out.status.code(),
            ours.status.code(),
            "{what}: {}",
            stderr(&out)
        );
        let text = stdout(&out);
        let lines: Vec<String> = text.lines().skip(1).map(str::to_owned).collect();
        assert!(text.starts_with("pgbolt ("), "{text}");
        assert_eq!(
            shape(&lines, retries),
            shape(&expected, retries),
            "{what} --pgbench-output\n{text}"
        );
    }
    Seen {
        ours: ours_text,
        ours_err,
        theirs_err,
    }
}

fn run_cases(dbname: &str, cases: &[Case<'_>], files: &[&ScriptFile]) -> usize {
    let dir = tempfile::tempdir().expect("temp dir");
    for case in cases {
        let args: Vec<String> = case
            .args
            .iter()
            .map(|a| {
                let mut a = (*a).to_owned();
                for (i, f) in files.iter().enumerate() {
                    a = a.replace(&format!("FILE{}", i + 1), &f.path);
                }
                a
            })
            .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        compare(&Run::new(dbname, &args).in_dir(dir.path()), case);
    }
    cases.len()
}

const SEEDED: &[&str] = &[PROCESSED, NO_FAILURES, PER_SCRIPT, " - number of failed"];

#[test]
fn reports_under_transaction_counts_match_pgbench() {
    let reads = script(
        "reads.sql",
        "\\set aid random(1, 100000)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n",
    );
    let touch = script(
        "touch.sql",
        "\\set tid random(1, 10)\nBEGIN;\nUPDATE pgbench_tellers SET tbalance = tbalance WHERE tid = :tid;\nEND;\n",
    );
    let aborts = script(
        "aborts.sql",
        "SELECT CASE WHEN :client_id = 0 THEN 1/0 ELSE 1 END;\n",
    );
    let exact = &[PROCESSED, NO_FAILURES][..];
    let cases = [
        // Custom scripts report -s as the scale; builtins warn and use the
        // table's.
        Case {
            args: &["-n", "-t", "3", "-f", "FILE1", "-s", "5"],
            exact,
        },
        Case {
            args: &["-n", "-t", "3", "-S", "-s", "5"],
            exact,
        },
        // Client 0 aborts at once; the others finish.
        Case {
            args: &["-n", "-t", "5", "-c", "3", "-f", "FILE3"],
            exact,
        },
        Case {
            args: &["-n", "-t", "5", "-c", "1", "-f", "FILE3", "-r"],
            exact,
        },
        Case {
            args: &["-n", "-t", "20", "-S"],
            exact,
        },
        Case {
            args: &["-n", "-t", "10", "-c", "4", "-j", "2"],
            exact,
        },
        Case {
            args: &["-n", "-t", "10", "-c", "2", "-N"],
            exact,
        },
        Case {
            args: &["-n", "-t", "10", "-c", "2", "-r"],
            exact,
        },
        Case {
            args: &["-n", "-t", "10", "-c", "2", "-S", "-M", "extended"],
            exact,
        },
        Case {
            args: &["-n", "-t", "10", "-c", "2", "-M", "prepared", "-r"],
            exact,
        },
        Case {
            args: &["-n", "-t", "10", "-c", "2", "-S", "-C"],
            exact,
        },
        Case {
            args: &[
                "-n",
                "-t",
                "5",
                "-c",
                "2",
                "-C",
                "-M",
                "prepared",
                "-r",
                "-b",
                "simple-update",
            ],
            exact,
        },
        Case {
            args: &[
                "-n",
                "-t",
                "30",
                "-c",
                "1",
                "--random-seed=5",
                "-b",
                "simple-update@2",
                "-b",
                "select-only@3",
            ],
            exact: SEEDED,
        },
        Case {
            args: &[
                "-n",
                "-t",
                "12",
                "-c",
                "3",
                "-j",
                "3",
                "--random-seed=9",
                "-M",
                "prepared",
                "-r",
                "-b",
                "tpcb-like@1",
                "-b",
                "select-only@1",
            ],
            exact: SEEDED,
        },
        Case {
            args: &[
                "-n",
                "-t",
                "20",
                "-c",
                "2",
                "-j",
                "2",
                "--random-seed=11",
                "-f",
                "FILE1@1",
                "-f",
                "FILE2@4",
                "-r",
            ],
            exact: SEEDED,
        },
        Case {
            args: &[
                "-n",
                "-t",
                "10",
                "-c",
                "2",
                "-j",
                "2",
                "-f",
                "FILE1",
                "-r",
                "--max-tries=3",
            ],
            exact,
        },
        Case {
            args: &["-n", "-t", "10", "-c", "2", "-S", "--failures-detailed"],
            exact,
        },
        Case {
            args: &["-n", "-t", "20", "-c", "2", "-S", "-R", "500"],
            exact,
        },
        Case {
            args: &["-n", "-t", "20", "-c", "2", "-S", "-R", "500", "-L", "50"],
            exact: &[],
        },
        Case {
            args: &["-n", "-t", "10", "-S", "-l"],
            exact,
        },
        Case {
            args: &["-n", "-t", "10", "-S", "-l", "--aggregate-interval=1"],
            exact,
        },
        Case {
            args: &["-n", "-t", "10", "-S", "-l", "--sampling-rate=0.5"],
            exact,
        },
        Case {
            args: &["-t", "5", "-S"],
            exact,
        },
        Case {
            args: &[
                "-n", "-t", "10", "-c", "3", "-j", "3", "-M", "extended", "-N", "-r",
            ],
            exact,
        },
    ];
    let n = run_cases(shared_database(), &cases, &[&reads, &touch, &aborts]);
    assert_eq!(n, 24);
}

#[test]
fn reports_of_timed_runs_match_pgbench() {
    let cases = [
        Case {
            args: &["-n", "-T", "2", "-S", "-c", "4", "-j", "2"],
            exact: &[],
        },
        Case {
            args: &["-n", "-T", "2", "-S", "-c", "2", "-R", "200"],
            exact: &[NO_FAILURES],
        },
        Case {
            args: &["-n", "-T", "2", "-S", "-c", "2", "-R", "200", "-L", "5"],
            exact: &[NO_FAILURES],
        },
        Case {
            args: &[
                "-n",
                "-T",
                "2",
                "-c",
                "2",
                "-b",
                "simple-update@2",
                "-b",
                "select-only@3",
                "-r",
            ],
            exact: &[NO_FAILURES],
        },
        // At one transaction per 1000 s the first one is almost surely
        // scheduled after the end: nothing runs, the report stops early.
        Case {
            args: &["-n", "-T", "1", "-S", "-R", "0.001"],
            exact: &[PROCESSED],
        },
    ];
    let n = run_cases(shared_database(), &cases, &[]);
    assert_eq!(n, 5);
}

#[test]
fn partitioned_tables_are_reported_as_pgbench_reports_them() {
    let exact = &[PROCESSED, "partition method:", "partitions:"][..];
    for method in ["range", "hash"] {
        let db = initialized_database(&["--partitions=3", &format!("--partition-method={method}")]);
        let cases = [Case {
            args: &["-n", "-t", "10", "-c", "2", "-S"],
            exact,
        }];
        run_cases(&db, &cases, &[]);
    }
}

/// Progress lines every second: the same shape from both tools. A run at
/// full speed ends at its duration, so pgbolt prints one line per second
/// (pgbench does unless its last transaction ends before its alarm
/// fires). Under `-R` a client stops once its next scheduled start falls
/// after the end, so the last second may end without a line, in both.
#[test]
fn progress_lines_match_pgbench() {
    let db = shared_database();
    for (args, lines) in [
        (&["-n", "-T", "2", "-S", "-c", "2", "-P", "1"][..], 2..=2),
        (
            &[
                "-n",
                "-T",
                "2",
                "-S",
                "-c",
                "2",
                "-j",
                "2",
                "-P",
                "1",
                "-R",
                "300",
                "-L",
                "20",
                "--max-tries=2",
            ],
            1..=2,
        ),
    ] {
        let case = Case {
            args,
            exact: &[NO_FAILURES],
        };
        let seen = compare(&Run::new(db, args), &case);
        let (ours, theirs) = (seen.ours_err, seen.theirs_err);
        let progress = |text: &str| -> Vec<String> {
            text.lines()
                .filter(|l| l.starts_with("progress: "))
                .map(mask)
                .collect()
        };
        let (mine, expected) = (progress(&ours), progress(&theirs));
        assert!(lines.contains(&mine.len()), "{ours}");
        assert!(!expected.is_empty(), "{theirs}");
        let shapes = |lines: &[String]| lines.iter().cloned().collect::<BTreeSet<_>>();
        assert_eq!(shapes(&mine), shapes(&expected), "{ours}\n{theirs}");
        assert_eq!(shapes(&mine).len(), 1, "{ours}");
    }
}

/// Serialization failures under SERIALIZABLE: failures, retries and
/// their per-command columns are reported as pgbench reports them.
#[test]
fn reports_with_failures_and_retries_match_pgbench() {
    let db = fresh_database();
    let file = script("contended.sql", CONTENDED);
    let f = file.path.as_str();
    let cases: [&[&str]; 5] = [
        &[
            "-n",
            "-t",
            "30",
            "-c",
            "4",
            "-j",
            "2",
            "-f",
            f,
            "--failures-detailed",
            "-r",
        ],
        &["-n", "-t", "30", "-c", "4", "-j", "2", "-f", f],
        &[
            "-n",
            "-T",
            "2",
            "-c",
            "4",
            "-j",
            "2",
            "-f",
            f,
            "--max-tries=5",
            "--failures-detailed",
            "-r",
        ],
        &[
            "-n",
            "-T",
            "2",
            "-c",
            "4",
            "-j",
            "2",
            "-f",
            f,
            "--max-tries=0",
            "-b",
            "select-only@1",
        ],
        &[
            "-n",
            "-t",
            "20",
            "-c",
            "4",
            "-j",
            "2",
            "-f",
            f,
            "--max-tries=3",
            "-R",
            "400",
            "-L",
            "20",
            "--failures-detailed",
        ],
    ];
    let mut failed = 0;
    for args in cases {
        let run = Run::new(&db, args).env("PGOPTIONS", SERIALIZABLE);
        let out = compare(&run, &Case { args, exact: &[] }).ours;
        // Under -t the number of transactions asked for is fixed.
        if let Some(l) = line(&out, PROCESSED).filter(|_| args.contains(&"-t")) {
            let asked: u64 = args[2].parse::<u64>().unwrap_or(0) * 4;
            assert!(l.ends_with(&format!("/{asked}")), "{l}");
        }
        if line(&out, "number of failed transactions: 0 ").is_none() {
            failed += 1;
        }
    }
    assert!(failed > 0, "the contended script never failed");
}

/// One `-l` command line and what its log lines hold.
struct LogCase<'a> {
    args: &'a [&'a str],
    prefix: Option<&'a str>,
    serializable: bool,
    /// Lines per run when every transaction is logged and counted by `-t`.
    lines: Option<usize>,
}

/// The regular expression every line of a per-transaction log must match
/// with these options.
fn log_line_regex(args: &[&str]) -> Regex {
    let has = |p: &str| args.iter().any(|a| a.starts_with(p));
    let rate = has("-R");
    let retries = args
        .iter()
        .any(|a| a.starts_with("--max-tries") && *a != "--max-tries=1");
    let mut time = vec![r"\d+"];
    if rate && has("-L") {
        time.push("skipped");
    }
    if has("--failures-detailed") {
        time.extend(["serialization", "deadlock"]);
    } else {
        time.push("failed");
    }
    re(&format!(
        r"^\d+ \d+ ({}) \d+ \d+ \d+{}{}$",
        time.join("|"),
        if rate { r" \d+" } else { "" },
        if retries { r" \d+" } else { "" },
    ))
}

/// Checks an aggregated log line: 15 integer columns, and 0 in the
/// columns that do not apply to the options.
fn check_aggregate(line: &str, args: &[&str]) {
    let has = |p: &str| args.iter().any(|a| a.starts_with(p));
    let cols: Vec<&str> = line.split(' ').collect();
    assert_eq!(cols.len(), 15, "{line}");
    assert!(cols.iter().all(|c| c.parse::<u64>().is_ok()), "{line}");
    let zero = |range: std::ops::Range<usize>| range.clone().all(|i| cols[i] == "0");
    if !has("-R") {
        assert!(zero(6..10), "lag columns without -R: {line}");
    }
    if !(has("-R") && has("-L")) {
        assert!(zero(10..11), "skipped without -R and -L: {line}");
    }
    if !has("--max-tries") {
        assert!(zero(11..13), "retry columns with one try: {line}");
    }
    if !has("--failures-detailed") {
        assert!(
            zero(13..15),
            "failure columns without --failures-detailed: {line}"
        );
    }
}

/// Runs one tool in a fresh directory; returns its log files as
/// (name suffix after the process id, lines).
fn log_files(run: &Run, ours: bool, prefix: &str) -> Vec<(String, Vec<String>)> {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = run.clone().in_dir(dir.path());
    let (pid, out) = run.spawn(ours);
    assert!(
        out.status.success(),
        "{}: {}",
        if ours { "pgbolt" } else { "pgbench" },
        stderr(&out)
    );
    let name = re(&format!(r"^{}\.{pid}(\.\d+)?$", regex::escape(prefix)));
    let mut files: Vec<(String, Vec<String>)> = std::fs::read_dir(dir.path())
        .expect("read dir")
        .map(|e| {
            let e = e.expect("dir entry");
            let file = e.file_name().to_string_lossy().into_owned();
            let c = name
                .captures(&file)
                .unwrap_or_else(|| panic!("unexpected file {file} (pid {pid})"));
            let text = std::fs::read_to_string(e.path()).expect("log file");
            let suffix = c.get(1).map_or("", |m| m.as_str()).to_owned();
            (suffix, text.lines().map(str::to_owned).collect())
        })
        .collect();
    files.sort();
    files
}

#[test]
fn transaction_logs_match_pgbench() {
    let file = script("contended.sql", CONTENDED);
    let f = file.path.as_str();
    let contended_db = fresh_database();
    let cases = [
        LogCase {
            args: &["-n", "-t", "20", "-c", "2", "-j", "2", "-S", "-l"],
            prefix: None,
            serializable: false,
            lines: Some(40),
        },
        LogCase {
            args: &[
                "-n",
                "-t",
                "10",
                "-c",
                "4",
                "-j",
                "2",
                "-M",
                "prepared",
                "-l",
                "--log-prefix=mylog",
            ],
            prefix: Some("mylog"),
            serializable: false,
            lines: Some(40),
        },
        LogCase {
            args: &[
                "-n",
                "-T",
                "2",
                "-c",
                "2",
                "-j",
                "2",
                "-S",
                "-l",
                "-R",
                "200",
                "-L",
                "5",
                "--log-prefix=rate",
            ],
            prefix: Some("rate"),
            serializable: false,
            lines: None,
        },
        LogCase {
            args: &[
                "-n",
                "-t",
                "20",
                "-c",
                "4",
                "-j",
                "2",
                "-f",
                f,
                "-l",
                "--max-tries=3",
                "--failures-detailed",
            ],
            prefix: None,
            serializable: true,
            lines: Some(80),
        },
        LogCase {
            args: &["-n", "-t", "20", "-c", "4", "-j", "2", "-f", f, "-l"],
            prefix: None,
            serializable: true,
            lines: Some(80),
        },
        LogCase {
            args: &[
                "-n",
                "-t",
                "100",
                "-c",
                "2",
                "-S",
                "-l",
                "--sampling-rate=0.5",
            ],
            prefix: None,
            serializable: false,
            lines: None,
        },
    ];
    for case in &cases {
        let db = if case.serializable {
            contended_db.as_str()
        } else {
            shared_database()
        };
        let mut run = Run::new(db, case.args);
        if case.serializable {
            run = run.env("PGOPTIONS", SERIALIZABLE);
        }
        let prefix = case.prefix.unwrap_or("pgbench_log");
        let what = case.args.join(" ");
        let ours = log_files(&run, true, prefix);
        let theirs = log_files(&run, false, prefix);
        let suffixes = |files: &[(String, Vec<String>)]| -> Vec<String> {
            files.iter().map(|(s, _)| s.clone()).collect()
        };
        assert_eq!(suffixes(&ours), suffixes(&theirs), "{what}: file names");
        let shape = log_line_regex(case.args);
        for (tool, files) in [("pgbolt", &ours), ("pgbench", &theirs)] {
            let lines: Vec<&String> = files.iter().flat_map(|(_, l)| l).collect();
            assert!(!lines.is_empty(), "{what}: {tool} logged nothing");
            for l in &lines {
                assert!(shape.is_match(l), "{what}: {tool} line {l:?} vs {shape}");
            }
            if let Some(n) = case.lines {
                assert_eq!(lines.len(), n, "{what}: {tool}");
            }
            // Four clients updating four rows under SERIALIZABLE with one
            // try each: some fail, and the log says so.
            if case.serializable && !what.contains("--max-tries") {
                assert!(
                    lines.iter().any(|l| l.contains(" failed ")),
                    "{what}: {tool} logged no failure"
                );
            }
        }
    }
}

/// Under a fixed seed each thread chooses the same scripts in the same
/// order, so the logs agree on client, transaction number and script.
#[test]
fn seeded_logs_agree_on_every_transaction() {
    let args = [
        "-n",
        "-t",
        "15",
        "-c",
        "2",
        "-j",
        "2",
        "--random-seed=4",
        "-b",
        "select-only@1",
        "-b",
        "simple-update@2",
        "-l",
    ];
    let run = Run::new(shared_database(), &args);
    let columns = |files: Vec<(String, Vec<String>)>| -> Vec<(String, Vec<String>)> {
        files
            .into_iter()
            .map(|(suffix, lines)| {
                let kept = lines
                    .iter()
                    .map(|l| {
                        let f: Vec<&str> = l.split(' ').collect();
                        format!("{} {} {}", f[0], f[1], f[3])
                    })
                    .collect();
                (suffix, kept)
            })
            .collect()
    };
    let ours = columns(log_files(&run, true, "pgbench_log"));
    let theirs = columns(log_files(&run, false, "pgbench_log"));
    assert_eq!(ours, theirs);
    assert_eq!(ours.len(), 2);
    assert!(ours.iter().all(|(_, l)| l.len() == 15));
}

#[test]
fn aggregated_logs_match_pgbench() {
    let file = script("contended.sql", CONTENDED);
    let f = file.path.as_str();
    let contended_db = fresh_database();
    let cases: [(&[&str], bool); 2] = [
        (
            &[
                "-n",
                "-T",
                "2",
                "-c",
                "2",
                "-j",
                "2",
                "-S",
                "-l",
                "--aggregate-interval=1",
            ],
            false,
        ),
        (
            &[
                "-n",
                "-T",
                "3",
                "-c",
                "4",
                "-j",
                "2",
                "-f",
                f,
                "-l",
                "--aggregate-interval=1",
                "-R",
                "300",
                "-L",
                "20",
                "--max-tries=2",
                "--failures-detailed",
                "--log-prefix=agg",
            ],
            true,
        ),
    ];
    for (args, serializable) in cases {
        let (db, prefix) = if serializable {
            (contended_db.as_str(), "agg")
        } else {
            (shared_database(), "pgbench_log")
        };
        let mut run = Run::new(db, args);
        if serializable {
            run = run.env("PGOPTIONS", SERIALIZABLE);
        }
        let ours = log_files(&run, true, prefix);
        let theirs = log_files(&run, false, prefix);
        let suffixes = |files: &[(String, Vec<String>)]| -> Vec<String> {
            files.iter().map(|(s, _)| s.clone()).collect()
        };
        assert_eq!(suffixes(&ours), suffixes(&theirs), "{args:?}: file names");
        assert_eq!(ours.len(), 2);
        for (tool, files) in [("pgbolt", &ours), ("pgbench", &theirs)] {
            let lines: Vec<&String> = files.iter().flat_map(|(_, l)| l).collect();
            assert!(!lines.is_empty(), "{args:?}: {tool} wrote no interval");
            for (_, file_lines) in files.iter() {
                let starts: Vec<u64> = file_lines
                    .iter()
                    .map(|l| {
                        check_aggregate(l, args);
                        l.split(' ')
                            .next()
                            .and_then(|s| s.parse().ok())
                            .unwrap_or(0)
                    })
                    .collect();
                assert!(
                    starts.windows(2).all(|w| w[1] == w[0] + 1),
                    "{tool}: one line per second, none left out: {file_lines:?}"
                );
            }
        }
    }
}

/// The number after `prefix` on the report line starting with it.
fn figure(report: &str, prefix: &str) -> String {
    line(report, prefix)
        .and_then(|l| l[prefix.len()..].split([' ', '/']).next())
        .unwrap_or_else(|| panic!("no line {prefix:?} in\n{report}"))
        .to_owned()
}

/// The JSON result agrees with the text report of the same run.
fn check_json(json: &serde_json::Value, report: &str, rate: bool) {
    const TOP: &[&str] = &[
        "schema_version",
        "tool",
        "tool_version",
        "merged_runs",
        "options",
        "timings",
        "aborted",
        "counts",
        "tps",
        "latency",
        "service_time",
        "lag",
        "scripts",
        "series",
    ];
    for field in TOP {
        assert!(json.get(field).is_some(), "no {field} in {json}");
    }
    assert_eq!(json["schema_version"], 1);
    assert_eq!(json["tool"], "pgbolt");
    assert_eq!(json["merged_runs"], 1);
    assert_eq!(json["aborted"], false);
    let counts = &json["counts"];
    let processed = figure(report, "number of transactions actually processed: ");
    assert_eq!(counts["committed"].to_string(), processed);
    assert_eq!(
        counts["failed"].to_string(),
        figure(report, "number of failed transactions: ")
    );
    let total = counts["total"].as_u64().expect("total");
    assert_eq!(
        total,
        counts["committed"].as_u64().unwrap_or(0)
            + counts["failed"].as_u64().unwrap_or(0)
            + counts["skipped"].as_u64().unwrap_or(0)
    );
    let tps = json["tps"].as_f64().expect("tps");
    assert_eq!(format!("{tps:.6}"), figure(report, "tps = "));
    let average = if rate {
        json["latency"]["average_ms"].as_f64().expect("average")
    } else {
        // Without -R, -P or -L pgbench's average is computed from the run
        // time: duration × clients / transactions.
        let duration = json["timings"]["bench_duration_us"]
            .as_f64()
            .expect("duration");
        let clients = json["options"]["clients"].as_f64().expect("clients");
        duration * clients / total as f64 / 1000.0
    };
    assert_eq!(
        format!("{average:.3}"),
        figure(report, "latency average = ")
    );
    if rate {
        let stddev = json["latency"]["stddev_ms"].as_f64().expect("stddev");
        assert_eq!(format!("{stddev:.3}"), figure(report, "latency stddev = "));
    }
    let per_script: Vec<String> = report
        .lines()
        .filter_map(|l| l.strip_prefix(" - number of transactions actually processed: "))
        .map(|rest| rest.split(' ').next().unwrap_or_default().to_owned())
        .collect();
    let scripts = json["scripts"].as_array().expect("scripts");
    if !per_script.is_empty() {
        let committed: Vec<String> = scripts
            .iter()
            .map(|s| s["counts"]["committed"].to_string())
            .collect();
        assert_eq!(committed, per_script);
    }
}

#[test]
fn json_results_agree_with_the_text_report() {
    let db = shared_database();
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("result.json");
    let json_arg = format!("--json={}", file.display());
    for (args, rate) in [
        (&["-n", "-t", "50", "-c", "2", "-j", "2", "-S"][..], false),
        (
            &[
                "-n",
                "-T",
                "2",
                "-c",
                "2",
                "-R",
                "200",
                "-b",
                "simple-update@1",
                "-b",
                "select-only@1",
                "-r",
            ],
            true,
        ),
    ] {
        let full: Vec<&str> = args.iter().copied().chain([json_arg.as_str()]).collect();
        let out = Run::new(db, &full).pgbolt();
        assert!(out.status.success(), "{}", stderr(&out));
        let text = std::fs::read_to_string(&file).expect("JSON file written");
        let json: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        check_json(&json, &stdout(&out), rate);
        let options = &json["options"];
        assert_eq!(options["clients"], 2);
        assert_eq!(
            options["scripts"].as_array().map(Vec::len),
            Some(if rate { 2 } else { 1 })
        );
        assert_eq!(options["report_per_command"], rate);
        if rate {
            assert_eq!(options["limit"]["duration_seconds"], 2);
            assert_eq!(options["rate"], 200.0);
        } else {
            assert_eq!(options["limit"]["transactions_per_client"], 50);
            assert_eq!(options["rate"], serde_json::Value::Null);
        }
    }
}

#[test]
fn json_to_standard_output_moves_the_report_to_standard_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = Run::new(
        shared_database(),
        &["-n", "-t", "20", "-c", "2", "-S", "--json=-"],
    )
    .in_dir(dir.path());
    let out = run.pgbolt();
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("standard output is JSON");
    let report = stderr(&out);
    assert!(report.starts_with("pgbolt ("), "{report}");
    check_json(&json, &report, false);
    assert_eq!(
        line(&report, "number of transactions actually processed: "),
        Some("number of transactions actually processed: 40/40")
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).expect("dir").count(),
        0,
        "no file named -"
    );
}

/// The resident set size of a process in kB, from `/proc/PID/status`.
fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("process status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS line")
}

/// A minute at full speed: statistics are fixed-size histograms and
/// counters, so memory does not grow with the number of transactions.
#[test]
fn memory_stays_constant_over_a_long_run() {
    use std::time::{Duration, Instant};
    let run = Run::new(
        shared_database(),
        &["-n", "-S", "-T", "60", "-c", "4", "-j", "2"],
    );
    let child = run
        .pgbolt_command()
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("pgbolt starts");
    let started = Instant::now();
    let pid = child.id();
    let at = |seconds: u64| {
        let wait = Duration::from_secs(seconds).saturating_sub(started.elapsed());
        std::thread::sleep(wait);
        rss_kb(pid)
    };
    let early = at(10);
    let late = at(58);
    let out = child.wait_with_output().expect("pgbolt ends");
    assert!(out.status.success(), "{}", stderr(&out));
    let processed: u64 = figure(&stdout(&out), "number of transactions actually processed: ")
        .parse()
        .expect("count");
    assert!(processed > 0);
    let growth = late.abs_diff(early);
    assert!(
        growth <= 2048 || growth * 20 <= early,
        "RSS {early} kB at 10 s, {late} kB at 58 s after {processed} transactions"
    );
}
