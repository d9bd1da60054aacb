//! Sizes and counts at and past pgbench's limits, run through both
//! programs: scripts of thousands of commands, statements with hundreds of
//! variables in each query mode, meta commands with hundreds of words,
//! thousands of `-D` definitions, wide and long results, and option values
//! at the edges of their ranges. Each case runs the real pgbench and
//! pgbolt with the same arguments against the test binary's throwaway
//! server and compares the exit status and standard error (the program's
//! name and version line aside). No case depends on timing.

use crate::limits_support::{both, files};

/// `n` copies of `item` joined by `sep`.
fn repeat(item: &str, sep: &str, n: usize) -> String {
    vec![item; n].join(sep)
}

/// Runs each case (label, script, arguments before `-f s.sql`) through
/// both programs; every difference is collected and reported at once.
fn compare_scripts(cases: &[(&str, String, &[&str])]) {
    let mut differences = Vec::new();
    for (label, script, args) in cases {
        let dir = files(&[("s.sql", script.as_bytes())]);
        let mut full: Vec<&str> = args.to_vec();
        full.extend(["-n", "-f", "s.sql"]);
        if !full.contains(&"-T") && !full.contains(&"-t") {
            full.extend(["-t", "1"]);
        }
        let (theirs, ours) = both(dir.path(), &full);
        assert_ne!(ours.status, None, "{label}: pgbolt was killed by a signal");
        if (theirs.status, &theirs.messages) != (ours.status, &ours.messages) {
            differences.push(format!(
                "{label}:\npgbench (exit {:?}):\n{}pgbolt (exit {:?}):\n{}",
                theirs.status, theirs.messages, ours.status, ours.messages
            ));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

/// Ten thousand distinct `-D` names, one of them given twice (the last
/// value wins), all visible to the script.
#[test]
fn ten_thousand_defines_are_read_as_pgbench_reads_them() {
    let dir = files(&[(
        "s.sql",
        b"\\set x debug(:v0 + :v4999 + :v9999)\nselect :x;\n",
    )]);
    let defines: Vec<String> = (0..10_000)
        .map(|i| format!("v{i}={i}"))
        .chain(["v0=700000".to_owned()])
        .collect();
    let mut args = vec!["-n", "-t", "1", "-f", "s.sql"];
    for d in &defines {
        args.extend(["-D", d.as_str()]);
    }
    let (theirs, ours) = both(dir.path(), &args);
    assert_eq!(ours.status, Some(0), "{}", ours.messages);
    assert!(
        ours.messages.contains("int 714998"),
        "debug() shows the sum: {}",
        ours.messages
    );
    assert_eq!(
        (theirs.status, theirs.messages),
        (ours.status, ours.messages)
    );
}

/// pgbench's limit of 255 variables per statement holds under the extended
/// and prepared protocols only, counting every occurrence.
#[test]
fn variables_per_statement_are_limited_as_in_pgbench() {
    let select = |n: usize| format!("\\set v 1\nselect {};\n", repeat(":v", ",", n));
    let distinct = |n: usize| {
        let sets: String = (0..n).map(|i| format!("\\set v{i} {i}\n")).collect();
        let sum: Vec<String> = (0..n).map(|i| format!(":v{i}")).collect();
        format!("{sets}select {};\n", sum.join("+"))
    };
    let mut cases: Vec<(&str, String, &[&str])> = Vec::new();
    for args in [
        &["-M", "simple"][..],
        &["-M", "extended"][..],
        &["-M", "prepared"][..],
    ] {
        cases.push(("255 uses of one variable", select(255), args));
        cases.push(("256 uses of one variable", select(256), args));
        cases.push(("1000 uses of one variable", select(1000), args));
        cases.push(("256 distinct variables", distinct(256), args));
        cases.push((
            "256 undefined variables",
            format!("select {};\n", repeat(":nope", ",", 256)),
            args,
        ));
    }
    // The server's own limit on a select list is the one met here.
    cases.push(("65536 uses in simple mode", select(65_536), &[]));
    compare_scripts(&cases);
}

/// Meta commands with many words: pgbench takes at most 255 words after
/// the command name.
#[test]
fn meta_commands_with_many_words_fail_as_in_pgbench() {
    let words = |n: usize| repeat("a", " ", n);
    let mut cases: Vec<(&str, String, &[&str])> = Vec::new();
    for n in [254, 255, 256, 1000] {
        cases.push((
            "setshell",
            format!("\\setshell x echo 1 {}\n", words(n)),
            &[],
        ));
        cases.push(("shell", format!("\\shell true {}\n", words(n)), &[]));
        cases.push(("set", format!("\\set x 1 {}\n", words(n)), &[]));
    }
    cases.push((
        "shell with 300 variables",
        format!("\\set v 7\n\\shell true {}\n", repeat(":v", " ", 300)),
        &[],
    ));
    cases.push((
        "shell command of 100,000 bytes",
        format!("\\shell echo {} > /dev/null\n", "y".repeat(100_000)),
        &[],
    ));
    cases.push((
        "setshell command of 100,000 bytes",
        format!("\\setshell x echo 5 #{}\n", "y".repeat(100_000)),
        &[],
    ));
    compare_scripts(&cases);
}

/// Long scripts, long lines, long names and wide or long results.
#[test]
fn large_scripts_and_results_match_pgbench() {
    let columns = |n: usize| {
        let list: Vec<String> = (0..n).map(|i| format!("{i} as c{i}")).collect();
        list.join(",")
    };
    let long_name = "v".repeat(10_000);
    let cases: Vec<(&str, String, &[&str])> = vec![
        ("10,000 statements", "select 1;\n".repeat(10_000), &[]),
        (
            "10,000 distinct variables",
            (0..10_000).map(|i| format!("\\set v{i} {i}\n")).collect(),
            &[],
        ),
        (
            "1 MB statement",
            format!("select length('{}');\n", "x".repeat(1 << 20)),
            &["-M", "prepared"],
        ),
        (
            "statement of 20,000 lines",
            format!("select\n{}1;\n", "1+\n".repeat(20_000)),
            &[],
        ),
        (
            "variable name of 10,000 characters",
            format!("\\set {long_name} 3\nselect :{long_name};\n"),
            &["-M", "extended"],
        ),
        (
            "1664 columns into \\gset",
            format!("select {} \\gset\nselect :c1663;\n", columns(1664)),
            &[],
        ),
        (
            "1665 columns into \\gset",
            format!("select {} \\gset\n", columns(1665)),
            &[],
        ),
        (
            "a million rows into \\gset",
            "select generate_series(1, 1000000) as v \\gset\n".to_owned(),
            &[],
        ),
        (
            "a million rows, extended",
            "select generate_series(1, 1000000);\n".to_owned(),
            &["-M", "extended"],
        ),
        (
            "1000 nested \\if",
            format!(
                "{}select 1;\n{}",
                "\\if 1\n".repeat(1000),
                "\\endif\n".repeat(1000)
            ),
            &[],
        ),
        (
            "10 MB \\gset value out of range in \\set",
            "select repeat('7', 10000000) as v \\gset\n\\set y :v + 1\n".to_owned(),
            &[],
        ),
    ];
    compare_scripts(&cases);
}

/// Runs pgbolt alone on `script` with `-n -t 1`.
fn pgbolt_alone(script: &str) -> crate::limits_support::Outcome {
    let dir = files(&[("s.sql", script.as_bytes())]);
    crate::limits_support::run(
        crate::limits_support::Program::Pgbolt,
        dir.path(),
        &["-n", "-t", "1", "-f", "s.sql"],
    )
}

/// pgbench crashes evaluating a long chain of additions (its evaluator
/// recurses once per operator); pgbolt evaluates it.
#[test]
fn a_chain_of_a_hundred_thousand_additions_is_evaluated() {
    let out = pgbolt_alone(&format!("\\set x debug({}1)\n", "1+".repeat(100_000)));
    assert_eq!(out.status, Some(0), "{}", out.messages);
    assert!(out.messages.contains("int 100001"), "{}", out.messages);
}

/// Nesting past pgbolt's limit is a script error naming the file, line
/// and command, never a crash, however deep.
#[test]
fn deep_nesting_is_a_script_error() {
    let cases = [
        format!("\\set x {}1{}\n", "(".repeat(10_000), ")".repeat(10_000)),
        format!("\\set x {}1\n", "-".repeat(100_000)),
        format!("\\set x {}1{}\n", "abs(".repeat(5_000), ")".repeat(5_000)),
        format!(
            "\\set x {}1{}\n",
            "case when true then ".repeat(3_000),
            " end".repeat(3_000)
        ),
    ];
    for script in cases {
        let out = pgbolt_alone(&script);
        assert_eq!(out.status, Some(1), "{}", out.messages);
        assert!(
            out.messages.starts_with(
                "PROG: error: s.sql:1: expression is too deeply nested in command \"set\"\n"
            ),
            "{}",
            out.messages
        );
    }
}

/// A syntax error past column 65,535 of a line: the caret line is as
/// long as pgbench's (a format width that large once made pgbolt panic).
#[test]
fn syntax_errors_far_into_a_long_line_match_pgbench() {
    let cases: Vec<(&str, String, &[&str])> = vec![
        (
            "unexpected character at column 100,010",
            format!("\\set x 1{}+ @\n", " ".repeat(100_000)),
            &[],
        ),
        (
            "double constant of 100,000 digits",
            format!("\\set x debug(0.{}1)\n", "0".repeat(100_000)),
            &[],
        ),
        (
            "time unit of 70,000 characters",
            format!("select 1;\n\\sleep 1 {}\n", "x".repeat(70_000)),
            &[],
        ),
        (
            "\\if with 40,000 terms",
            format!("\\if {}\n\\endif\n", "1 ".repeat(40_000)),
            &[],
        ),
    ];
    compare_scripts(&cases);
}

/// Runs both programs with `args` in `dir` and returns the differences in
/// exit status and messages, if any.
fn difference(dir: &std::path::Path, label: &str, args: &[&str]) -> Option<String> {
    let (theirs, ours) = both(dir, args);
    assert_ne!(ours.status, None, "{label}: pgbolt was killed by a signal");
    ((theirs.status, &theirs.messages) != (ours.status, &ours.messages)).then(|| {
        format!(
            "{label}:\npgbench (exit {:?}):\n{}pgbolt (exit {:?}):\n{}",
            theirs.status, theirs.messages, ours.status, ours.messages
        )
    })
}

/// Script counts and weights at their limits, and script files that are
/// not ordinary scripts: a directory, `/dev/null`, a file starting with a
/// byte order mark (sent to the server as it is), one of only comments.
#[test]
fn script_counts_weights_and_odd_files_match_pgbench() {
    let dir = files(&[
        ("s.sql", b"select 1;\n"),
        ("bom.sql", b"\xef\xbb\xbfselect 1;\n"),
        ("comments.sql", b"-- a\n-- b\n"),
        ("c-comment.sql", b"/* only this */\n"),
    ]);
    let many = |n: usize, script: &'static str| -> Vec<&'static str> {
        (0..n).flat_map(|_| ["-f", script]).collect()
    };
    let mut cases: Vec<(&str, Vec<&str>)> = vec![
        ("128 scripts", many(128, "s.sql")),
        ("129 scripts", many(129, "s.sql")),
        ("128 files and a builtin", {
            let mut a = many(128, "s.sql");
            a.extend(["-b", "select-only"]);
            a
        }),
        ("weight 2^31 - 1", vec!["-f", "s.sql@2147483647"]),
        ("weight 2^31", vec!["-f", "s.sql@2147483648"]),
        ("weight -1", vec!["-f", "s.sql@-1"]),
        (
            "weights adding up past 2^31",
            vec!["-f", "s.sql@2147483647", "-f", "s.sql@2147483647"],
        ),
        ("a directory", vec!["-f", "."]),
        ("/dev/null", vec!["-f", "/dev/null"]),
        ("an empty name", vec!["-f", ""]),
        ("a byte order mark", vec!["-f", "bom.sql"]),
        ("only comments", vec!["-f", "comments.sql"]),
        ("only a C comment", vec!["-f", "c-comment.sql"]),
        (
            "more threads than clients",
            vec!["-f", "s.sql", "-c", "3", "-j", "100"],
        ),
        ("-j 2^31 - 1", vec!["-f", "s.sql", "-j", "2147483647"]),
        ("-P 2^31 - 1", vec!["-f", "s.sql", "-P", "2147483647"]),
        (
            "--aggregate-interval 2^31 - 1",
            vec![
                "-f",
                "s.sql",
                "-l",
                "--aggregate-interval",
                "2147483647",
                "--log-prefix",
                "agg",
            ],
        ),
        ("-s 2^31 - 1", vec!["-f", "s.sql", "-s", "2147483647"]),
        ("-s 2^31", vec!["-f", "s.sql", "-s", "2147483648"]),
        ("-t 2^31", vec!["-f", "s.sql", "-t", "2147483648"]),
        ("-T 2^31", vec!["-f", "s.sql", "-T", "2147483648"]),
    ];
    let mut differences = Vec::new();
    for (label, args) in cases.iter_mut() {
        if !args.contains(&"-t") && !args.contains(&"-T") {
            args.extend(["-t", "1"]);
        }
        args.push("-n");
        differences.extend(difference(dir.path(), label, args));
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

/// A script read from a named pipe, once per program.
#[test]
fn a_script_from_a_fifo_runs_as_in_pgbench() {
    let dir = files(&[]);
    let fifo = dir.path().join("f.sql");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
    let mut outcomes = Vec::new();
    for program in [
        crate::limits_support::Program::Pgbench,
        crate::limits_support::Program::Pgbolt,
    ] {
        let path = fifo.clone();
        let writer = std::thread::spawn(move || std::fs::write(path, "\\set x debug(41 + 1)\n"));
        outcomes.push(crate::limits_support::run(
            program,
            dir.path(),
            &["-n", "-t", "1", "-f", "f.sql"],
        ));
        writer.join().expect("writer").expect("write to the fifo");
    }
    assert_eq!(outcomes[1].status, Some(0), "{}", outcomes[1].messages);
    assert!(
        outcomes[1].messages.contains("int 42"),
        "{}",
        outcomes[1].messages
    );
    assert_eq!(
        (outcomes[0].status, &outcomes[0].messages),
        (outcomes[1].status, &outcomes[1].messages)
    );
}
