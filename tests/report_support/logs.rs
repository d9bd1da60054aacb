//! Transaction logs (`-l`) of either program: the files a run leaves, and
//! the line formats expected for the options used.

use regex::Regex;

use super::compare::re;
use super::*;

/// One `-l` command line and what its log lines hold.
pub struct LogCase<'a> {
    pub args: &'a [&'a str],
    pub prefix: Option<&'a str>,
    pub serializable: bool,
    /// Lines per run when every transaction is logged and counted by `-t`.
    pub lines: Option<usize>,
}

/// The regular expression every line of a per-transaction log must match
/// with these options.
pub fn log_line_regex(args: &[&str]) -> Regex {
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
pub fn check_aggregate(line: &str, args: &[&str]) {
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
pub fn log_files(run: &Run, program: Program, prefix: &str) -> Vec<(String, Vec<String>)> {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = run.clone().in_dir(dir.path());
    let (pid, out) = run.spawn(program);
    assert!(out.status.success(), "{}: {}", program.name(), stderr(&out));
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
