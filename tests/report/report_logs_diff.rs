//! Transaction logs (`-l`, `--aggregate-interval`) of the pgbolt binary
//! against the real pgbench's: the same command lines against one
//! throwaway server, and the log files' names, lines and columns compared.

use crate::report_support::logs::*;
use crate::report_support::*;

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
        let ours = log_files(&run, Program::Pgbolt, prefix);
        let theirs = log_files(&run, Program::Pgbench, prefix);
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
    let ours = columns(log_files(&run, Program::Pgbolt, "pgbench_log"));
    let theirs = columns(log_files(&run, Program::Pgbench, "pgbench_log"));
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
        let ours = log_files(&run, Program::Pgbolt, prefix);
        let theirs = log_files(&run, Program::Pgbench, prefix);
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
