//! Edges of scripts and their settings, run through both programs.
//!
//! Each case runs the real pgbench and the pgbolt binary with the same
//! arguments against the test binary's throwaway server and compares their
//! exit status and standard error (the program's name and the version line
//! taken out).

use crate::common::{script_file, stderr, Program, Run};

/// Exit status and standard error of `program` run with `args` in the
/// shared server's `postgres` database, in pgbolt's words.
fn run(program: Program, args: &[&str]) -> (Option<i32>, String) {
    let out = Run::new("postgres", args).output(program);
    let name = program.name();
    let stderr = stderr(&out)
        .replace(name, "pgbolt")
        .lines()
        .filter(|l| !l.starts_with(&format!("{name} (")))
        .map(|l| format!("{l}\n"))
        .collect();
    (out.status.code(), stderr)
}

/// Runs both on `args`; the differences found, if any.
fn compare(args: &[&str]) -> Option<String> {
    let theirs = run(Program::Pgbench, args);
    let ours = run(Program::Pgbolt, args);
    (theirs != ours).then(|| {
        format!(
            "{args:?}\npgbench (exit {:?}):\n{}pgbolt (exit {:?}):\n{}",
            theirs.0, theirs.1, ours.0, ours.1
        )
    })
}

/// pgbench prints `setting random seed to N` the moment it reads a
/// `--random-seed` option, and reads `-f` scripts as it meets them: an
/// error in an option or a script after the seed comes after its line, one
/// before it comes alone.
#[test]
fn random_seed_line_is_printed_where_pgbench_meets_the_option() {
    let ok = script_file("ok.sql", "\\set x 1\n");
    let bad = script_file("bad.sql", "\\set x (\n");
    let (ok, bad) = (ok.path.as_str(), bad.path.as_str());
    let cases: &[&[&str]] = &[
        &["--random-seed=1", "-c", "0"],
        &["-c", "0", "--random-seed=1"],
        &["--random-seed=1", "-D", "x="],
        &["--random-seed=1", "-M", "bogus"],
        &["--random-seed=1", "-t1", "-T1"],
        &["--random-seed=1", "-n", "x", "y"],
        &["--random-seed=1", "--random-seed=2", "-j", "0"],
        &["--random-seed=1", "--random-seed=bad"],
        &["--random-seed=1", "-i"],
        &["-f", bad, "--random-seed=1"],
        &["-f", "no-such-file.sql", "--random-seed=1"],
        &["-f", ok, "--random-seed=1", "-f", bad, "--random-seed=2"],
        &["-n", "-t1", "-f", ok, "--random-seed=3", "--random-seed=4"],
        &["--random-seed=5", "-b", "list"],
    ];
    let failures: Vec<String> = cases.iter().filter_map(|args| compare(args)).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `--debug` shows each meta command as pgbench keeps it: its words one
/// space apart, `\set` with its variable only, `\if`/`\elif` bare; and
/// `\setshell`'s result line (a value's newline and all); the seed and
/// set-up lines. No level word before the message. The whole standard
/// error is compared.
#[test]
fn debug_lines_of_meta_commands_match_pgbench() {
    let script = script_file(
        "debug.sql",
        "\\set x 1 + 2\n\\sleep   1\tms\n\\setshell y echo 4\n\\setshell w nproc\n\
         \\shell true :x\n\\if :x = 3\n\\set z debug(:y)\n\\elif 1\n\\else\n\\endif\n\
         \\setshell v \\\n printf '%s' 12\n",
    );
    let args = [
        "-n",
        "-t1",
        "--debug",
        "--random-seed=1",
        "-f",
        &script.path,
    ];
    let (code, theirs) = run(Program::Pgbench, &args);
    let (our_code, ours) = run(Program::Pgbolt, &args);
    assert_eq!((our_code, &ours), (code, &theirs));
    assert!(theirs.lines().count() >= 10, "{theirs}");
}
