//! Long transactions and option values at their extremes, run through
//! pgbolt and the real pgbench with the same arguments: progress and
//! aggregation intervals as short as the run itself, a transaction longer
//! than an aggregation interval, rates and latency limits at both ends of
//! their ranges, `\sleep` durations past what pgbench's `int` holds, and
//! many threads with one client each. Runs are a few seconds at most; the
//! long measurements (memory over minutes) belong in the documentation,
//! not here. Numbers that depend on timing are masked or bounded, never
//! compared.

use std::process::Output;

use crate::report_support::compare::*;
use crate::report_support::logs::check_aggregate;
use crate::report_support::*;

/// What one program left: its output and its log files (name suffix
/// after the process id, lines), from a run in a fresh directory.
struct Ran {
    out: Output,
    logs: Vec<(String, Vec<String>)>,
}

fn run_with_logs(run: &Run, program: Program) -> Ran {
    let dir = tempfile::tempdir().expect("temp dir");
    let (pid, out) = run.clone().in_dir(dir.path()).spawn(program);
    let name = re(&format!(r"^pgbench_log\.{pid}(\.\d+)?$"));
    let mut logs: Vec<(String, Vec<String>)> = std::fs::read_dir(dir.path())
        .expect("read dir")
        .filter_map(|e| {
            let e = e.expect("dir entry");
            let file = e.file_name().to_string_lossy().into_owned();
            let suffix = name.captures(&file)?.get(1).map_or("", |m| m.as_str());
            let text = std::fs::read_to_string(e.path()).expect("log file");
            Some((suffix.to_owned(), text.lines().map(str::to_owned).collect()))
        })
        .collect();
    logs.sort();
    Ran { out, logs }
}

/// pgbolt's and pgbench's runs of `args` with their logs, after checking
/// that both succeeded with the same report.
fn both_with_logs(args: &[&str]) -> (Ran, Ran) {
    let run = Run::new(shared_database(), args);
    let (ours, theirs) = (
        run_with_logs(&run, Program::Pgbolt),
        run_with_logs(&run, Program::Pgbench),
    );
    same_report(args, &ours.out, &theirs.out, 0);
    (ours, theirs)
}

/// Both programs' reports, in pgbench 18's layout with numbers masked,
/// must be the same, and both must exit with `status`.
fn same_report(args: &[&str], ours: &Output, theirs: &Output, status: i32) {
    let what = args.join(" ");
    assert_eq!(ours.status.code(), Some(status), "{what}: {}", stderr(ours));
    assert_eq!(
        theirs.status.code(),
        Some(status),
        "{what}: {}",
        stderr(theirs)
    );
    let rate = args.contains(&"-R");
    let mine = ours_without_additions(&stdout(ours), rate);
    let mut expected = report_lines(&stdout(theirs));
    expected.remove(0);
    assert_eq!(
        shape(&mine, false),
        shape(&expected, false),
        "{what}\n--- pgbolt\n{}\n--- pgbench\n{}",
        stdout(ours),
        stdout(theirs)
    );
}

/// The first two columns of an aggregated log line: interval start and
/// number of transactions.
fn start_and_count(line: &str) -> (u64, u64) {
    let mut cols = line.split(' ').map(|c| c.parse::<u64>().expect(line));
    (cols.next().expect(line), cols.next().expect(line))
}

/// `-T 1` with `-P 1` and `--aggregate-interval=1`: one interval of each
/// fits the run. Each thread's log holds the interval that ended during
/// the run (two if the run began in the last instants of a second), in
/// pgbench's columns, and pgbolt prints the progress line of that one
/// second (pgbench's last line races with the end of the run, so it
/// prints at most that line).
#[test]
fn progress_and_aggregation_as_long_as_the_run() {
    let args = [
        "-n",
        "-S",
        "-T",
        "1",
        "-P",
        "1",
        "-c",
        "2",
        "-j",
        "2",
        "-l",
        "--aggregate-interval=1",
    ];
    let (ours, theirs) = both_with_logs(&args);
    for (who, ran) in [("pgbolt", &ours), ("pgbench", &theirs)] {
        let suffixes: Vec<&str> = ran.logs.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(suffixes, ["", ".1"], "{who}: one log per thread");
        for (_, lines) in &ran.logs {
            assert!((1..=2).contains(&lines.len()), "{who}: {lines:?}");
            for l in lines {
                check_aggregate(l, &args);
            }
        }
    }
    let progress = |out: &Output| -> Vec<String> {
        stderr(out)
            .lines()
            .filter(|l| l.starts_with("progress: "))
            .map(mask)
            .collect()
    };
    let (mine, theirs) = (progress(&ours.out), progress(&theirs.out));
    assert_eq!(
        mine,
        ["progress: N s, N tps, lat N ms stddev N, N failed"],
        "{}",
        stderr(&ours.out)
    );
    assert!(theirs.len() <= 1 && theirs.iter().all(|l| *l == mine[0]));
}

/// A transaction of 1.5 seconds under `--aggregate-interval=1` and `-T
/// 2`: the second transaction starts before the end and both programs
/// let it finish (2 processed). The log has one line per whole second up
/// to the end, consecutive, including the intervals in which nothing
/// ended (every column 0); the interval in progress at the end is not
/// written, so the second transaction is in the report but not the log.
#[test]
fn transactions_longer_than_an_aggregation_interval() {
    let script = script("long.sql", "\\sleep 1500 ms\nselect 1;\n");
    let args = [
        "-n",
        "-f",
        &script.path,
        "-T",
        "2",
        "-l",
        "--aggregate-interval=1",
    ];
    let (ours, theirs) = both_with_logs(&args);
    for (who, ran) in [("pgbolt", &ours), ("pgbench", &theirs)] {
        assert_eq!(
            line(&stdout(&ran.out), PROCESSED),
            Some("number of transactions actually processed: 2"),
            "{who}"
        );
        let [(_, lines)] = &ran.logs[..] else {
            panic!("{who}: one log file: {:?}", ran.logs)
        };
        assert!((3..=4).contains(&lines.len()), "{who}: {lines:?}");
        let intervals: Vec<(u64, u64)> = lines.iter().map(|l| start_and_count(l)).collect();
        for (l, pair) in lines.iter().zip(intervals.windows(2)) {
            check_aggregate(l, &args);
            assert_eq!(pair[1].0, pair[0].0 + 1, "{who}: {lines:?}");
        }
        let logged: u64 = intervals.iter().map(|(_, n)| n).sum();
        assert!((1..=2).contains(&logged), "{who}: {lines:?}");
        let empty = lines
            .iter()
            .filter(|l| l.split(' ').skip(1).all(|c| c == "0"))
            .count();
        assert!(empty >= 1, "{who}: {lines:?}");
    }
}

/// `-R` and `-L` at the ends of their ranges: rates that schedule every
/// transaction at once, or none within the run; limits that every
/// transaction misses, under a schedule that skips them. `-R 1e308`
/// throttles, with every start due at once; `-R inf` does not throttle
/// at all in either program, so it has no lag lines (it is written
/// `--rate=` so that the shared comparison does not expect pgbolt's lag
/// percentiles).
#[test]
fn rates_and_latency_limits_at_their_extremes() {
    let cases = [
        Case {
            args: &["-n", "-S", "-t", "20", "-R", "1e308"],
            exact: &[PROCESSED],
        },
        Case {
            args: &["-n", "-S", "-t", "20", "--rate=inf"],
            exact: &[PROCESSED],
        },
        Case {
            args: &["-n", "-S", "-T", "1", "-R", "0.001"],
            exact: &[PROCESSED],
        },
        Case {
            args: &["-n", "-S", "-T", "1", "-R", "0.001", "-L", "1", "-P", "1"],
            exact: &[PROCESSED],
        },
        Case {
            args: &["-n", "-S", "-t", "20", "-L", "0.001"],
            exact: &[PROCESSED],
        },
        Case {
            args: &[
                "-n", "-S", "-t", "50", "-c", "2", "-R", "1e9", "-L", "0.001",
            ],
            exact: &[],
        },
        Case {
            args: &["-n", "-S", "-T", "1", "-R", "1000000", "-L", "1"],
            exact: &[],
        },
    ];
    run_cases(shared_database(), &cases, &[]);
}

/// pgbench multiplies a `\sleep` duration into an `int` of microseconds,
/// so one past 2^31 µs wraps: `4295 s` sleeps 32.704 ms, `2148 s` and
/// `-1 s` not at all, a 64-bit literal whatever its low bits give. pgbolt
/// does the same, so these runs end at once in both instead of sleeping
/// for hours.
#[test]
fn sleeps_past_an_int_of_microseconds_wrap_as_in_pgbench() {
    let files: Vec<ScriptFile> = [
        "\\sleep 4295 s",
        "\\sleep 2148 s",
        "\\sleep -1 s",
        "\\sleep 9223372036854775807 us",
        "\\set d 4295\n\\sleep :d s",
    ]
    .iter()
    .enumerate()
    .map(|(i, sleep)| script(&format!("sleep{i}.sql"), &format!("{sleep}\nselect 1;\n")))
    .collect();
    let args = ["FILE1", "FILE2", "FILE3", "FILE4", "FILE5"].map(|f| ["-n", "-t", "2", "-f", f]);
    let cases: Vec<Case<'_>> = args
        .iter()
        .map(|a| Case {
            args: a,
            exact: &[PROCESSED],
        })
        .collect();
    let refs: Vec<&ScriptFile> = files.iter().collect();
    run_cases(shared_database(), &cases, &refs);
}

/// Forty threads of one client each, logging every transaction: the same
/// report, and one log per thread with one line per transaction.
#[test]
fn many_threads_of_one_client_each() {
    let args = ["-n", "-S", "-t", "3", "-c", "40", "-j", "40", "-l"];
    let (ours, theirs) = both_with_logs(&args);
    for (who, ran) in [("pgbolt", &ours), ("pgbench", &theirs)] {
        assert_eq!(ran.logs.len(), 40, "{who}");
        assert!(
            ran.logs.iter().all(|(_, lines)| lines.len() == 3),
            "{who}: {:?}",
            ran.logs
        );
    }
    assert_eq!(
        line(&stdout(&ours.out), PROCESSED),
        Some("number of transactions actually processed: 120/120")
    );
}

/// A latency past the top of the histogram (a transaction of 100 hours,
/// which no test can wait for): the percentiles count it as 24 hours,
/// the maximum and the sums stay exact, and nothing is lost.
#[test]
fn a_latency_beyond_the_histogram_keeps_its_exact_maximum() {
    use pgbolt::model::run::percentiles;
    use pgbolt::stats::{histogram::HIGHEST_US, LatencyHistogram, SimpleStats};

    let hundred_hours_us: i64 = 100 * 3_600_000_000;
    let mut histogram = LatencyHistogram::new();
    let mut sums = SimpleStats::default();
    for latency in [1_000, hundred_hours_us] {
        histogram.record(latency);
        sums.add(latency);
    }
    assert_eq!(histogram.len(), 2);
    let p = percentiles(&histogram, sums.max);
    assert_eq!(p.max, 360_000_000.0);
    assert_eq!(p.p50, 1.0);
    let day_ms = HIGHEST_US as f64 / 1000.0;
    assert!(
        p.p99 >= day_ms && p.p99 < day_ms * 1.001,
        "p99 = {} ms",
        p.p99
    );
    assert_eq!(sums.sum, 1_000 + hundred_hours_us as u64);
}

/// A writer whose bytes can be read while a log holds it.
#[derive(Clone, Default)]
struct Shared(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);

impl std::io::Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Shared {
    fn lines(&self) -> usize {
        self.0.borrow().iter().filter(|&&b| b == b'\n').count()
    }
}

/// In a long run at a low rate the log file keeps up: a line logged a
/// second or more after the file was last written takes the buffered
/// lines with it, where the 64 KiB buffer alone would hold them for
/// hours (pgbench's 4 KiB stdio buffer writes every few dozen lines).
/// Aggregated lines, one a second, reach the file as each interval
/// closes instead of every 20 minutes.
#[test]
fn logs_reach_the_file_within_a_second_of_a_later_line() {
    use pgbolt::stats::{LogEntry, LogOptions, Outcome, TransactionLog};

    let options = |aggregate_interval_s| LogOptions {
        prefix: None,
        pid: 1,
        throttled: false,
        latency_limit: false,
        max_tries: 1,
        failures_detailed: false,
        continue_on_error: false,
        sampling_rate: None,
        aggregate_interval_s,
    };
    let start = 1_700_000_000_000_000;
    let entry = |i: u64, now_us: i64| LogEntry {
        client_id: 0,
        transaction_no: i,
        script: 0,
        outcome: Outcome::Committed,
        tries: 1,
        latency_us: 500,
        lag_us: 0,
        now_us,
    };
    let mut never = || 0.0;

    let file = Shared::default();
    let mut log = TransactionLog::new(file.clone(), "memory".into(), &options(None), start);
    let mut written = Vec::new();
    for (i, at) in [200_000, 700_000, 999_999, 1_000_000, 1_400_000, 2_500_000]
        .into_iter()
        .enumerate()
    {
        log.log(&entry(i as u64 + 1, start + at), &mut never)
            .expect("log");
        written.push(file.lines());
    }
    assert_eq!(written, [0, 0, 0, 4, 4, 6]);

    let file = Shared::default();
    let mut log = TransactionLog::new(file.clone(), "memory".into(), &options(Some(1)), start);
    let mut written = Vec::new();
    for (i, at) in [300_000, 1_100_000, 1_900_000, 2_050_000, 3_200_000]
        .into_iter()
        .enumerate()
    {
        log.log(&entry(i as u64 + 1, start + at), &mut never)
            .expect("log");
        written.push(file.lines());
    }
    assert_eq!(written, [0, 1, 1, 2, 3]);
}
