//! The command line against the real pgbench: invalid options and
//! combinations must fail in both with exit status 1 and the same message
//! (pgbench's name replaced by pgbolt's).
//!
//! pgbench checks options before it connects; `PGHOST` points to a
//! directory that does not exist so that it could never reach a server.
//! The oracle is pgbench 18 ([`common::pgbench_path`]); pgbolt's own
//! additions (`--continue-on-error` from PostgreSQL 19) are checked against
//! pgbolt alone.

use std::process::{Command, Output};

use crate::common::pgbench_path;

fn run(program: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(program);
    command
        .args(args)
        .env_clear()
        .env("PGHOST", "/nonexistent/pgbolt-cli-test")
        .env("LC_ALL", "C");
    for (key, value) in env {
        command.env(key, value);
    }
    command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"))
}

fn pgbolt(args: &[&str]) -> Output {
    run(env!("CARGO_BIN_EXE_pgbolt"), args, &[])
}

/// pgbench's stderr with its program name replaced by pgbolt's.
fn as_pgbolt(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    text.lines()
        .map(|line| {
            let rest = line
                .strip_prefix(&format!("{}: ", pgbench_path()))
                .or_else(|| line.strip_prefix("pgbench: "));
            let line = match rest {
                Some(rest) => format!("pgbolt: {rest}"),
                None => line.to_string(),
            };
            format!(
                "{}\n",
                line.replace("Try \"pgbench --help\"", "Try \"pgbolt --help\"")
            )
        })
        .collect()
}

/// Standard error, with the path pgbolt was started by (which the option
/// parser's complaints start with, as pgbench's) shortened to `pgbolt`.
fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .map(
            |line| match line.strip_prefix(env!("CARGO_BIN_EXE_pgbolt")) {
                Some(rest) => format!("pgbolt{rest}\n"),
                None => format!("{line}\n"),
            },
        )
        .collect()
}

/// Invalid command lines; pgbolt must print exactly what pgbench prints.
const INVALID: &[&[&str]] = &[
    // getopt's own complaints
    &["--s"],
    &["--t"],
    &["--p"],
    &["--i"],
    &["--l"],
    &["--r"],
    &["--f"],
    &["--s=3"],
    &["--c"],
    &["--foo"],
    &["--foo=bar"],
    &["-x"],
    &["-S@2"],
    &["-c"],
    &["-nc"],
    &["--client"],
    &["--cli"],
    &["--connect=3"],
    &["--con=3"],
    &["-c1", "--help"],
    &["-c1", "-?"],
    &["-n", "-V"],
    &["--cli=4", "--xx"],
    &["a", "b"],
    &["-c", "1", "--", "x", "y"],
    // values of single options
    &["-c", "x"],
    &["-c", "0"],
    &["-c", "99999999999"],
    &["-c", "3x"],
    &["-c", " "],
    &["--client="],
    &["-c", "x", "-j", "y"],
    &["-j", "x"],
    &["-j", "0"],
    &["-s", "x"],
    &["-i", "-s", "0"],
    &["-t", "0"],
    &["-t", "x"],
    &["-T", "x"],
    &["-T", "0"],
    &["-P", "0"],
    &["-R", "0"],
    &["-R", "x"],
    &["-R", "-5"],
    &["-L", "-1"],
    &["-L", "x"],
    &["-F", "5"],
    &["-i", "-F", "101"],
    &["-F", "x"],
    &["--max-tries=-1"],
    &["--sampling-rate=2"],
    &["--sampling-rate=0"],
    &["--aggregate-interval=0"],
    &["--partitions=-1"],
    &["--partitions=x"],
    &["--random-seed=x"],
    &["--random-seed=5x"],
    &["--random-seed="],
    &["-M", "foo"],
    &["--partition-method=x"],
    &["-D", "x"],
    &["-D", "=1"],
    &["-D", "a="],
    &["-D", "1a=3"],
    &["-D", "a b=3"],
    &["-I", "x"],
    &["-I", ""],
    &["-i", "-I", "dtx"],
    &["-b", "tpcb@x"],
    &["-b", "tpcb@"],
    &["-b", "tpcb@-1"],
    &["-b", "tpcb@99999999999"],
    &["-b", "tpcb-like@0"],
    // builtin names are looked up as the option is met, before later
    // options and the mode checks
    &["-b", "nosuch", "-c", "x"],
    &["-b", "s", "-t", "1", "-T", "1"],
    &["-i", "-b", "nosuch"],
    &["-b", "nosuch@x"],
    // combinations
    &["-t", "1", "-T", "1"],
    &["-i", "-c", "1"],
    &["-i", "-S"],
    &["-C", "-i"],
    &["-i", "-d", "x", "-l"],
    &["-F", "50"],
    &["-q"],
    &["--foreign-keys"],
    &["--unlogged-tables"],
    &["--tablespace=x"],
    &["-I", "d t"],
    &["-i", "--partition-method=hash"],
    &["--sampling-rate=0.5"],
    &["--aggregate-interval=1"],
    &["--log-prefix=x"],
    &["-l", "--sampling-rate=0.5", "--aggregate-interval=1"],
    &["-l", "--aggregate-interval=5", "-T", "3"],
    &["-l", "--aggregate-interval=2", "-T", "3"],
    &["--progress-timestamp"],
    &["--max-tries=0"],
    &["--max-tries=x"],
    &["-d", "x", "y"],
    // pgbench 18's -c/--client (15 said --clients)
    &["-c", "0"],
    &["-c", "abc"],
    &["--client=-1"],
    // PG17 made -d mean --dbname (it was --debug) and added --exit-on-abort
    &["-d"],
    &["--d"],
    &["-i", "--exit-on-abort"],
    &["--e=1"],
    // connection options that cannot be resolved: pgbench's second line
    // names what the connection was for
    &["-t", "1", "-p", "99999"],
    &["-t", "1", "-p", "abc"],
    &["-t", "1", "sslmode=bogus"],
    &["-i", "-p", "99999"],
    &["-i", "service=pgbolt_no_such_service"],
];

#[test]
fn invalid_command_lines_fail_like_pgbench() {
    let mut failures = Vec::new();
    for args in INVALID {
        let reference = run(pgbench_path(), args, &[]);
        let ours = pgbolt(args);
        let want = as_pgbolt(&reference.stderr);
        assert_eq!(reference.status.code(), Some(1), "pgbench {args:?}: {want}");
        assert!(
            !want.contains("connection to server"),
            "pgbench {args:?} got as far as connecting: {want}"
        );
        if ours.status.code() != Some(1) || stderr(&ours) != want {
            failures.push(format!(
                "{args:?}\n  pgbench: {want:?}\n  pgbolt:  {:?} (exit {:?})",
                stderr(&ours),
                ours.status.code()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn invalid_random_seed_in_the_environment_fails_like_pgbench() {
    let env = [("PGBENCH_RANDOM_SEED", "nope")];
    let reference = run(pgbench_path(), &["-c", "1"], &env);
    let ours = run(env!("CARGO_BIN_EXE_pgbolt"), &["-c", "1"], &env);
    assert_eq!(reference.status.code(), Some(1));
    assert_eq!(ours.status.code(), Some(1));
    assert_eq!(stderr(&ours), as_pgbolt(&reference.stderr));
}

/// PG19 adds --continue-on-error, which pgbolt accepts without changing
/// pgbench 18's abbreviations (`--e=1` above).
#[test]
fn pgbench_19_continue_on_error() {
    let cases: &[(&[&str], &str)] = &[(
        &["-i", "--continue-on-error"],
        "pgbolt: error: some of the specified options cannot be used in initialization (-i) mode\n",
    )];
    for (args, first_line) in cases {
        let ours = pgbolt(args);
        assert_eq!(ours.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&ours).starts_with(first_line),
            "{args:?}: {}",
            stderr(&ours)
        );
    }
}

#[test]
fn help_and_version() {
    let help = pgbolt(&["--help"]);
    assert_eq!(help.status.code(), Some(0));
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(text.contains("Usage:\n  pgbolt [OPTION]... [DBNAME]\n"));
    // pgbench's own tests look for these words
    assert!(text.contains("benchmarking tool for PostgreSQL"));
    assert!(text.contains("\nReport bugs to "), "{text}");
    assert!(text.ends_with("pgbolt home page: see README.md in pgbolt's sources.\n"));
    assert_eq!(pgbolt(&["-?"]).stdout, help.stdout);
    for line in text.lines() {
        assert!(line.chars().count() <= 80, "wider than a terminal: {line}");
    }

    let version = pgbolt(&["-V"]);
    assert_eq!(version.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&version.stdout),
        format!(
            "pgbolt {} (compatible with pgbench 18.6)\n",
            env!("CARGO_PKG_VERSION")
        )
    );
}

/// Installed as `pgbench` (a symbolic link, for wrappers that call
/// `pgbench`), pgbolt names itself as pgbench does, after the last part of
/// its `argv[0]`: its messages are then pgbench 18's, byte for byte, and
/// its `--version` line has pgbench's shape, the compatible pgbench
/// version as third word (docs/compatibility.md).
#[test]
fn started_as_pgbench_it_names_itself_pgbench() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("pgbench");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_pgbolt"), &link).unwrap();
    let link = link.to_str().unwrap();
    let cases = [
        &["-c", "0"][..],
        &["-c", "abc"],
        &["-i", "-t", "1"],
        &["-C", "-T", "x"],
        &["--x"],
        &["-c"],
    ];
    for args in cases {
        let theirs = run(pgbench_path(), args, &[]);
        let ours = run(link, args, &[]);
        assert_eq!(ours.status.code(), theirs.status.code(), "{args:?}");
        // The option parser's complaints start with the path as given.
        let theirs = String::from_utf8_lossy(&theirs.stderr).replace(pgbench_path(), "PATH");
        let ours = String::from_utf8_lossy(&ours.stderr).replace(link, "PATH");
        assert_eq!(ours, theirs, "{args:?}");
    }
    let version = String::from_utf8_lossy(&run(link, &["--version"], &[]).stdout).into_owned();
    assert_eq!(
        version,
        format!(
            "pgbench (PostgreSQL) 18.6 (pgbolt {})\n",
            env!("CARGO_PKG_VERSION")
        )
    );
    let help = String::from_utf8_lossy(&run(link, &["--help"], &[]).stdout).into_owned();
    assert!(
        help.starts_with("pgbench is a benchmarking tool for PostgreSQL"),
        "{help}"
    );
    assert!(
        help.contains("Usage:\n  pgbench [OPTION]... [DBNAME]\n"),
        "{help}"
    );
}

/// Valid command lines that need parts of pgbolt not built yet are refused
/// by name, never run with an option ignored.
#[test]
fn unbuilt_features_are_refused_by_name() {
    let cases: &[(&[&str], &str)] = &[
        (&["-i", "--io=uring"], "--io=uring with -i"),
        (&["-i", "--busy-poll=on"], "--busy-poll=on with -i"),
        (
            &["--io=uring", "--busy-poll=on", "-t", "1"],
            "--busy-poll=on with --io=uring",
        ),
    ];
    for (args, feature) in cases {
        let ours = pgbolt(args);
        assert_eq!(ours.status.code(), Some(1), "{args:?}");
        assert_eq!(
            stderr(&ours),
            format!("pgbolt: error: {feature} is not supported yet\n"),
            "{args:?}"
        );
    }
}

/// `-b list` and `--show-script` print the builtins to standard error as
/// pgbench does, and fail like it on an unknown or ambiguous name.
#[test]
fn builtin_listings_match_pgbench() {
    let cases: &[&[&str]] = &[
        &["-b", "list"],
        &["--show-script=tpcb-like"],
        &["--show-script=se"],
        &["--show-script", "simple"],
        &["--show-script=s"],
        &["--show-script=nosuch"],
    ];
    for args in cases {
        let theirs = run(pgbench_path(), args, &[]);
        let ours = pgbolt(args);
        assert_eq!(ours.status.code(), theirs.status.code(), "{args:?}");
        assert_eq!(stderr(&ours), as_pgbolt(&theirs.stderr), "{args:?}");
        assert!(ours.stdout.is_empty(), "{args:?}");
    }
}

/// Command lines pgbench accepts, some of them surprising; pgbolt must
/// accept them too: both get as far as connecting (to a server that is not
/// there) and fail there with the same exit status.
const VALID: &[&[&str]] = &[
    &["-D", "é=1"],
    &["-D", "a=1=2"],
    &["-R", "1x"],
    &["-R", " 5"],
    &["-R", "1e400"],
    &["-L", "1e-9"],
    &["-c", " 3 "],
    &["--random-seed=-1"],
    &["--random-seed=+5"],
    &["--max-tries=1x"],
    &["--max-tries=99999999999"],
    &["--max-tries=0", "-T", "10"],
    &["-i", "-q", "-n", "--debug"],
    &["-i", "-s", "5", "-F", "10", "--partitions=0", "-I", "d t"],
    &["-l", "--aggregate-interval=2", "-T", "4", "--log-prefix=x"],
    &["-j", "100", "-c", "3"],
    &["--", "-c"],
    &["-"],
    &["--no", "--fa", "--ve", "--tr", "7"],
    &["mydb", "-nS", "-c2"],
];

#[test]
fn valid_command_lines_are_accepted_like_pgbench() {
    for args in VALID {
        let theirs = run(pgbench_path(), args, &[]);
        let reference = String::from_utf8_lossy(&theirs.stderr);
        assert!(
            reference.contains("connection to server"),
            "pgbench {args:?} refused: {reference}"
        );
        let output = pgbolt(args);
        let ours = stderr(&output);
        assert!(
            ours.contains("connection to server"),
            "pgbolt {args:?} refused: {ours}"
        );
        assert_eq!(output.status.code(), theirs.status.code(), "{args:?}");
    }
}
