//! Running a command line with both programs and comparing their reports:
//! masking numbers and checking pgbolt's own lines before removing them.

use std::sync::OnceLock;

use regex::Regex;

use super::*;

pub fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("valid regex")
}

pub fn number() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| re(r"\d+(\.\d+)?"))
}

/// Every number replaced by `N`.
pub fn mask(line: &str) -> String {
    number().replace_all(line, "N").into_owned()
}

/// The command text of a `-r` line in pgbench 18's layout
/// (`   %11.3f  %10d[ %10d] %s`), or `None` if the line is not one.
pub fn per_command(line: &str, retries: bool) -> Option<&str> {
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

/// pgbench's report as lines, to compare with
/// [`ours_without_additions`].
pub fn report_lines(report: &str) -> Vec<String> {
    report.lines().map(str::to_owned).collect()
}

/// pgbolt's report with its own lines checked and removed: the version
/// line first, the percentile lines last.
pub fn ours_without_additions(report: &str, rate: bool) -> Vec<String> {
    let report = &crate::common::without_diagnosis(report);
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
pub fn shape(lines: &[String], retries: bool) -> Vec<String> {
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
pub fn fixed_lines(lines: &[String], retries: bool, exact: &[&str]) -> Vec<String> {
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
pub struct Case<'a> {
    pub args: &'a [&'a str],
    /// Report lines (by prefix) whose numbers must be equal too.
    pub exact: &'a [&'a str],
}

pub const PROCESSED: &str = "number of transactions actually processed:";
pub const NO_FAILURES: &str = "number of failed transactions:";
pub const PER_SCRIPT: &str = " - number of transactions actually processed:";

/// What `compare` saw, for further checks.
pub struct Seen {
    pub ours: String,
    pub ours_err: String,
    pub theirs_err: String,
}

/// Runs both programs and compares what they print: the report with
/// numbers masked (save the `exact` lines), standard error as it is apart
/// from the progress lines.
pub fn compare(run: &Run, case: &Case<'_>) -> Seen {
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
    let mut expected = report_lines(&theirs_text);
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
                Some(rest) => format!("PROG{rest}"),
                None => l.to_owned(),
            })
            .collect()
    };
    assert_eq!(
        other(&ours_err, "pgbolt"),
        other(&theirs_err, "pgbench"),
        "{what}: standard error"
    );
    if case.args.contains(&"-t") {
        let out = run.clone().arg("--pgbench-output").pgbolt();
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

pub fn run_cases(dbname: &str, cases: &[Case<'_>], files: &[&ScriptFile]) -> usize {
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

pub const SEEDED: &[&str] = &[PROCESSED, NO_FAILURES, PER_SCRIPT, " - number of failed"];
