//! Failed and retried transactions, pgbolt against the real pgbench.
//!
//! The failures are raised on purpose by a function (`fail_if`) with the
//! SQLSTATE of a serialization failure or a deadlock, so which try of
//! which transaction fails depends only on the script's variables and the
//! random seed, never on timing: a counter `n` that a retry does not
//! reset (pgbench keeps the variables of the failed try) and `random()`,
//! whose state a retry does reset. Counts, per-command columns, log lines
//! and messages are then compared exactly between the two programs; only
//! durations are masked. Several clients run one per thread, since
//! clients sharing a thread share its script-choosing generator in the
//! order they happen to finish.

use crate::report_support::compare::{ours_without_additions, re, report_lines};
use crate::report_support::logs::log_files;
use crate::report_support::*;

/// Every third try fails with a serialization failure (a retry passes);
/// then one transaction in five fails with a deadlock, again on every try
/// since a retry draws the same random number.
const COUNTER: &str = "\\set n :n + 1
BEGIN;
SELECT fail_if(:n % 3 = 0, '40001');
\\set r random(1, 5)
SELECT fail_if(:r = 1, '40P01');
END;
";

/// One transaction in four fails inside an `\if` branch, on every try.
const BRANCH: &str = "\\set r random(1, 4)
\\if :r = 1
SELECT fail_if(true, '40001');
\\else
SELECT 1;
\\endif
";

/// The counter's transaction in a pipeline: the error comes with
/// `\endpipeline`.
const PIPELINE: &str = "\\set n :n + 1
\\set r random(1, 5)
\\startpipeline
BEGIN;
SELECT fail_if(:n % 3 = 0, '40001');
SELECT fail_if(:r = 1, '40P01');
END;
\\endpipeline
";

/// Every fourth try fails; its retry passes (for unlimited tries).
const ONCE: &str = "\\set n :n + 1
SELECT fail_if(:n % 4 = 0, '40001');
";

/// Every try fails.
const ALWAYS: &str = "BEGIN;\nSELECT fail_if(true, '40001');\nEND;\n";

/// A database with `fail_if`; the scripts need no tables.
fn database() -> String {
    let db = new_database(server());
    server().psql_in(&db, FAIL_IF).expect("create fail_if");
    db
}

/// The scripts, as files: FILE1 to FILE5 in the cases' arguments.
fn scripts() -> Vec<ScriptFile> {
    [
        ("counter.sql", COUNTER),
        ("branch.sql", BRANCH),
        ("pipeline.sql", PIPELINE),
        ("once.sql", ONCE),
        ("always.sql", ALWAYS),
    ]
    .iter()
    .map(|(name, text)| script(name, text))
    .collect()
}

/// The case's arguments with FILEn replaced by the script's path, after
/// the options every case shares.
fn arguments(args: &[&str], files: &[ScriptFile]) -> Vec<String> {
    ["-n", "-D", "n=0", "--random-seed=7"]
        .iter()
        .chain(args)
        .map(|a| {
            let mut a = (*a).to_owned();
            for (i, f) in files.iter().enumerate() {
                a = a.replace(&format!("FILE{}", i + 1), &f.path);
            }
            a
        })
        .collect()
}

/// A report line with its durations masked: latencies, connection times,
/// rates and the per-command averages. Counts stay.
fn untimed(line: &str) -> String {
    const TIMED: &[&str] = &[
        "latency average",
        "latency stddev",
        " - latency average",
        " - latency stddev",
        "initial connection time",
        "average connection time",
        "rate limit schedule lag",
        "tps = ",
    ];
    let number = re(r"\d+\.\d+");
    if TIMED.iter().any(|p| line.starts_with(p)) {
        return number.replace_all(line, "T").into_owned();
    }
    let per_command = re(r"^   +-?\d+\.\d{3}  ");
    let line = per_command.replace(line, "   T  ");
    re(r"tps = \d+\.\d+")
        .replace_all(&line, "tps = T")
        .into_owned()
}

/// Standard error with the program's name and the share of `-L` used by
/// the tries masked; sorted when several threads write to it.
fn messages(text: &str, program: &str, sorted: bool) -> Vec<String> {
    let share = re(r"\d+\.\d{3}% of the maximum time");
    let mut lines: Vec<String> = text
        .lines()
        .map(|l| {
            let l = l
                .strip_prefix(program)
                .map_or(l.to_owned(), |rest| format!("PROG{rest}"));
            share.replace_all(&l, "S% of the maximum time").into_owned()
        })
        .collect();
    if sorted {
        lines.sort();
    }
    lines
}

/// Runs both programs and compares exit status, report and messages.
fn same_as_pgbench(db: &str, args: &[String]) {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let what = args.join(" ");
    let run = Run::new(db, &args);
    let (ours, theirs) = (run.pgbolt(), run.pgbench());
    assert_eq!(
        ours.status.code(),
        theirs.status.code(),
        "{what}: exit status\n{}\n{}",
        stderr(&ours),
        stderr(&theirs)
    );
    let (ours_text, theirs_text) = (stdout(&ours), stdout(&theirs));
    let rate = args.contains(&"-R");
    let mine: Vec<String> = ours_without_additions(&ours_text, rate)
        .iter()
        .map(|l| untimed(l))
        .collect();
    let expected: Vec<String> = report_lines(&theirs_text)
        .iter()
        .skip(1)
        .map(|l| untimed(l))
        .collect();
    assert_eq!(
        mine, expected,
        "{what}\n--- pgbolt\n{ours_text}\n--- pgbench\n{theirs_text}"
    );
    let threads = args.contains(&"-j");
    assert_eq!(
        messages(&stderr(&ours), "pgbolt", threads),
        messages(&stderr(&theirs), "pgbench", threads),
        "{what}: standard error"
    );
}

#[test]
fn failures_and_retries_are_counted_as_pgbench_counts_them() {
    let db = database();
    let files = scripts();
    let cases: &[&[&str]] = &[
        &[
            "-t",
            "30",
            "-f",
            "FILE1",
            "--max-tries=3",
            "-r",
            "--failures-detailed",
            "--verbose-errors",
        ],
        &[
            "-t",
            "30",
            "-f",
            "FILE1",
            "-M",
            "extended",
            "--max-tries=2",
            "-r",
        ],
        &[
            "-t",
            "30",
            "-f",
            "FILE1",
            "-M",
            "prepared",
            "-r",
            "--failures-detailed",
        ],
        &[
            "-t",
            "20",
            "-f",
            "FILE1",
            "-c",
            "2",
            "-j",
            "2",
            "--max-tries=3",
            "-r",
        ],
        &[
            "-t",
            "20",
            "-f",
            "FILE1@3",
            "-f",
            "FILE2@1",
            "-c",
            "2",
            "-j",
            "2",
            "--max-tries=2",
            "--failures-detailed",
            "-r",
        ],
        &[
            "-t",
            "20",
            "-f",
            "FILE2",
            "-M",
            "prepared",
            "--max-tries=2",
            "--verbose-errors",
        ],
        &[
            "-t",
            "20",
            "-f",
            "FILE3",
            "-M",
            "extended",
            "--max-tries=2",
            "-r",
            "--verbose-errors",
        ],
        &["-t", "10", "-f", "FILE1", "-C", "--max-tries=2", "-r"],
        &[
            "-t",
            "20",
            "-f",
            "FILE1",
            "-R",
            "5000",
            "-L",
            "5000",
            "--max-tries=3",
            "--failures-detailed",
        ],
        &[
            "-t",
            "20",
            "-f",
            "FILE4",
            "--max-tries=0",
            "-L",
            "5000",
            "-r",
            "--verbose-errors",
        ],
    ];
    for case in cases {
        same_as_pgbench(&db, &arguments(case, &files));
    }
}

/// pgbench 18 goes on with the latency, connection time and `-r` lines
/// when every transaction failed (pgbench 15 stopped after the retry
/// counts).
#[test]
fn a_run_where_every_transaction_failed_reports_as_pgbench_18() {
    let db = database();
    let files = scripts();
    let per_command = [
        "statement latencies in milliseconds, failures and retries:",
        "   T           0          0 BEGIN;",
        "   T           3          3 SELECT fail_if(true, '40001');",
        "   T           0          0 END;",
    ];
    let plain = [
        "latency average = T ms (including failures)",
        "initial connection time = T ms",
        "tps = T (without initial connection time)",
    ];
    // Under -R the lag of no transaction is 0/0: pgbench's printf writes NaN.
    let rated = [
        "number of transactions skipped: 0 (0.000%)",
        "number of transactions above the 5000.0 ms latency limit: 0/0 (0.000%)",
        "rate limit schedule lag: avg NaN (max T) ms",
        "initial connection time = T ms",
        "tps = T (without initial connection time)",
    ];
    let cases: [(&[&str], Vec<&str>); 3] = [
        (&["-M", "simple"], [&plain[..], &per_command[..]].concat()),
        (&["-M", "prepared"], [&plain[..], &per_command[..]].concat()),
        (
            &["-R", "1000", "-L", "5000"],
            [&rated[..], &per_command[..]].concat(),
        ),
    ];
    for (more, tail) in cases {
        let args = arguments(
            &[&["-t", "3", "-f", "FILE5", "--max-tries=2", "-r"], more].concat(),
            &files,
        );
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = Run::new(&db, &args);
        let (ours, theirs) = (run.pgbolt(), run.pgbench());
        assert_eq!(ours.status.code(), Some(0), "{}", stderr(&ours));
        assert_eq!(theirs.status.code(), Some(0), "{}", stderr(&theirs));
        let mine: Vec<String> = ours_without_additions(&stdout(&ours), false)
            .iter()
            .map(|l| untimed(l))
            .collect();
        let expected: Vec<String> = stdout(&theirs).lines().skip(1).map(untimed).collect();
        assert_eq!(mine, expected, "{}", stdout(&ours));
        assert!(
            mine.ends_with(&tail.iter().map(|l| l.to_string()).collect::<Vec<_>>()),
            "{}",
            stdout(&ours)
        );
    }
}

/// The transaction log marks failed transactions as pgbench does
/// (`failed`, or the cause with `--failures-detailed`) and gives each
/// transaction's retries; only times are masked.
#[test]
fn transaction_logs_mark_failures_and_retries_as_pgbench_does() {
    let db = database();
    let files = scripts();
    let cases: &[&[&str]] = &[
        &["-t", "30", "-f", "FILE1", "--max-tries=3", "-l"],
        &["-t", "30", "-f", "FILE1", "--failures-detailed", "-l"],
        &[
            "-t",
            "20",
            "-f",
            "FILE1@2",
            "-f",
            "FILE2@1",
            "-c",
            "2",
            "-j",
            "2",
            "-M",
            "prepared",
            "--max-tries=2",
            "--failures-detailed",
            "-l",
        ],
        &[
            "-t",
            "20",
            "-f",
            "FILE1",
            "-R",
            "5000",
            "-L",
            "5000",
            "--max-tries=2",
            "-l",
        ],
    ];
    for case in cases {
        let args = arguments(case, &files);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = Run::new(&db, &args);
        let rate = args.contains(&"-R");
        // client, transaction, latency or outcome, script, then after the
        // time: the lag under -R and the retries.
        let fields = |files: Vec<(String, Vec<String>)>| -> Vec<(String, Vec<String>)> {
            files
                .into_iter()
                .map(|(suffix, lines)| {
                    let lines = lines
                        .iter()
                        .map(|l| {
                            let mut f: Vec<&str> = l.split(' ').collect();
                            if f.len() > 5 {
                                if f[2].parse::<u64>().is_ok() {
                                    f[2] = "L";
                                }
                                f[4] = "S";
                                f[5] = "U";
                            }
                            if rate && f.len() > 6 {
                                f[6] = "G";
                            }
                            f.join(" ")
                        })
                        .collect();
                    (suffix, lines)
                })
                .collect()
        };
        let mine = fields(log_files(&run, Program::Pgbolt, "pgbench_log"));
        let theirs = fields(log_files(&run, Program::Pgbench, "pgbench_log"));
        assert!(!theirs.is_empty(), "{args:?}");
        assert_eq!(mine, theirs, "{args:?}");
    }
}

/// An error that is not retried aborts the client with the number of the
/// failing query within the pipeline's results: 0 without
/// `\syncpipeline`, and the number of synchronisation points right before
/// it otherwise, as pgbench 18 counts them.
#[test]
fn errors_after_a_pipeline_sync_are_numbered_as_pgbench_18_numbers_them() {
    let db = database();
    let cases = [
        ("", "command 4 query 0"),
        ("\\syncpipeline\n", "command 5 query 1"),
        ("\\syncpipeline\n\\syncpipeline\n", "command 6 query 2"),
    ];
    for (syncs, place) in cases {
        let text = format!(
            "\\startpipeline\nSELECT 1;\n{syncs}SELECT fail_if(true, '22012');\nSELECT 2;\n\\endpipeline\n"
        );
        let file = script("pipeline.sql", &text);
        for mode in ["extended", "prepared"] {
            let args = ["-n", "-t", "2", "-M", mode, "-f", file.path.as_str()];
            let run = Run::new(&db, &args);
            let ours = run.pgbolt();
            assert_eq!(ours.status.code(), Some(2), "{}", stderr(&ours));
            let expected = format!(
                "pgbolt: error: client 0 script 0 aborted in {place}: ERROR:  failing on purpose (22012)"
            );
            assert_eq!(
                stderr(&ours).lines().next(),
                Some(expected.as_str()),
                "{text}"
            );
            let theirs = run.pgbench();
            assert_eq!(theirs.status.code(), Some(2), "{}", stderr(&theirs));
            assert_eq!(
                messages(&stderr(&ours), "pgbolt", false),
                messages(&stderr(&theirs), "pgbench", false),
                "{text}"
            );
        }
    }
}

/// Errors that are never retried abort the client, with pgbench's message
/// (the query's number, the server's text) and exit status, whatever
/// `--max-tries` says; the report covers what ran before.
#[test]
fn errors_that_are_not_retried_abort_the_client_as_in_pgbench() {
    let db = database();
    server()
        .psql_in(
            &db,
            "CREATE TABLE k (id int PRIMARY KEY); INSERT INTO k VALUES (1);",
        )
        .expect("create table");
    let files: Vec<ScriptFile> = [
        ("unique.sql", "INSERT INTO k VALUES (1);\n"),
        ("divide.sql", "SELECT 1;\nSELECT 1/0;\n"),
        (
            "pipeline.sql",
            "\\startpipeline\nSELECT 1;\nSELECT 1/0;\nSELECT 2;\n\\endpipeline\n",
        ),
        ("multi.sql", "SELECT 1\\; SELECT 1/0\\; SELECT 3;\n"),
        (
            "gset.sql",
            "SELECT 1/0 AS x \\gset\n\\if :x = 1\nSELECT 1;\n\\endif\n",
        ),
        ("block.sql", "BEGIN;\nSELECT 1/0;\nEND;\n"),
        (
            "late.sql",
            "\\set r random(1, 5)\nSELECT CASE WHEN :r = 5 THEN 1/0 ELSE 1 END;\n",
        ),
    ]
    .iter()
    .map(|(name, text)| script(name, text))
    .collect();
    let cases: &[&[&str]] = &[
        &["-t", "3", "-f", "FILE1", "-r"],
        &["-t", "3", "-f", "FILE1", "-M", "extended", "--max-tries=2"],
        &[
            "-t",
            "3",
            "-f",
            "FILE1",
            "-M",
            "prepared",
            "--verbose-errors",
        ],
        &["-t", "3", "-f", "FILE2", "-r", "--max-tries=3"],
        &["-t", "3", "-f", "FILE3", "-M", "extended", "-r"],
        &["-t", "3", "-f", "FILE3", "-M", "prepared", "--max-tries=2"],
        &["-t", "3", "-f", "FILE4"],
        &["-t", "3", "-f", "FILE4", "-M", "extended"],
        &["-t", "3", "-f", "FILE5", "-M", "prepared"],
        &[
            "-t",
            "3",
            "-f",
            "FILE6",
            "--max-tries=3",
            "--verbose-errors",
        ],
        &["-t", "20", "-f", "FILE7", "-c", "2", "-j", "2", "-r"],
        &[
            "-t",
            "20",
            "-f",
            "FILE7@1",
            "-f",
            "FILE2@0",
            "-M",
            "prepared",
            "--failures-detailed",
        ],
    ];
    for case in cases {
        same_as_pgbench(&db, &arguments(case, &files));
    }
}

/// `--continue-on-error` (PostgreSQL 19, not in pgbench 15) makes any SQL
/// error fail the transaction as a serialization failure does without
/// retries: the same rollback, counts, `-r` columns and messages as
/// pgbench gives for serialization failures raised at the same places.
#[test]
fn continue_on_error_fails_transactions_as_pgbench_fails_serialization_failures() {
    let db = database();
    let text = |code: &str| {
        format!(
            "\\set r random(1, 4)\nBEGIN;\nSELECT fail_if(:r = 1, '{code}');\nEND;\nSELECT fail_if(:r = 2, '{code}');\n"
        )
    };
    let (other, serialization) = (
        script("other.sql", &text("22012")),
        script("serialization.sql", &text("40001")),
    );
    for more in [
        &["-r", "--verbose-errors"][..],
        &["-M", "prepared", "-c", "2", "-j", "2"],
    ] {
        let common = ["-n", "--random-seed=3", "-t", "20"];
        let ours_args = [
            &common[..],
            more,
            &["-f", other.path.as_str(), "--continue-on-error"],
        ]
        .concat();
        let theirs_args = [&common[..], more, &["-f", serialization.path.as_str()]].concat();
        let ours = Run::new(&db, &ours_args).pgbolt();
        let theirs = Run::new(&db, &theirs_args).pgbench();
        assert_eq!(ours.status.code(), Some(0), "{}", stderr(&ours));
        assert_eq!(theirs.status.code(), Some(0), "{}", stderr(&theirs));
        let report = |lines: Vec<String>| -> Vec<String> {
            lines
                .iter()
                .map(|l| {
                    untimed(
                        &l.replace(&other.path, "FILE")
                            .replace(&serialization.path, "FILE"),
                    )
                })
                .collect()
        };
        let mine = report(ours_without_additions(&stdout(&ours), false));
        let expected = report(report_lines(&stdout(&theirs)).split_off(1));
        assert!(
            expected
                .iter()
                .any(|l| l.starts_with("number of failed transactions: ")
                    && !l.starts_with("number of failed transactions: 0 ")),
            "{}",
            stdout(&theirs)
        );
        let mine_text = mine.join("\n").replace("22012", "CODE");
        let expected_text = expected.join("\n").replace("40001", "CODE");
        assert_eq!(mine_text, expected_text);
        let threads = more.contains(&"-j");
        assert_eq!(
            messages(&stderr(&ours).replace("22012", "CODE"), "pgbolt", threads),
            messages(
                &stderr(&theirs).replace("40001", "CODE"),
                "pgbench",
                threads
            ),
        );
    }
}
