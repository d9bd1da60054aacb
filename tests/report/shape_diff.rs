//! The shape of a run against the real pgbench: how clients, threads,
//! scripts and connections are set up and reported. Each test runs pgbolt
//! and pgbench with the same command line and compares what a user sees:
//! exit codes, report lines, warnings and errors, the connections the
//! server saw, and the rows a seeded run leaves behind. Nothing here
//! depends on timing: numbers that do are masked by the shared report
//! helpers, and only counts fixed by the command line are compared
//! exactly.

use std::process::Output;

use crate::report_support::compare::*;
use crate::report_support::*;

/// Runs both tools and checks that they exit with `status` and print the
/// same messages; returns pgbolt's messages.
fn same_messages(run: &Run, status: i32) -> String {
    let (ours, theirs) = (run.pgbolt(), run.pgbench());
    let what = run.args.join(" ");
    assert_eq!(
        ours.status.code(),
        Some(status),
        "{what}: {}",
        stderr(&ours)
    );
    assert_eq!(
        theirs.status.code(),
        Some(status),
        "{what}: {}",
        stderr(&theirs)
    );
    let mine = messages(&ours, Program::Pgbolt);
    assert_eq!(mine, messages(&theirs, Program::Pgbench), "{what}");
    mine
}

/// A new database initialized with `pgbench -i -s 1`, then changed by `sql`.
fn altered_database(sql: &str) -> String {
    let db = fresh_database();
    server().psql_in(&db, sql).expect("alter database");
    db
}

/// Clients spread over threads, reconnections, builtin and file scripts
/// mixed with weights, and `-s`/`-D scale` given for a run.
#[test]
fn run_shapes_report_as_pgbench_reports_them() {
    let one = script("one.sql", "SELECT 1;\n");
    let exact = &[PROCESSED, NO_FAILURES][..];
    let cases = [
        // More threads than clients: one thread per client.
        Case {
            args: &["-n", "-t", "3", "-c", "2", "-j", "4"],
            exact,
        },
        // Clients not divisible by threads.
        Case {
            args: &["-n", "-t", "3", "-c", "5", "-j", "3", "-S"],
            exact,
        },
        Case {
            args: &["-n", "-t", "3", "-c", "3", "-j", "2", "-C"],
            exact,
        },
        // Prepared statements are prepared again on every new connection.
        Case {
            args: &[
                "-n", "-t", "3", "-c", "2", "-j", "2", "-C", "-M", "prepared", "-S", "-r",
            ],
            exact,
        },
        // A builtin script warns that -s gives way to the table's count.
        Case {
            args: &["-n", "-t", "2", "-N", "-s", "3"],
            exact,
        },
        // -D scale wins over -s and over the table.
        Case {
            args: &["-n", "-t", "2", "-c", "2", "-S", "-D", "scale=7", "-s", "3"],
            exact,
        },
        // The vacuum of the branches and tellers, and of the accounts (-v).
        Case {
            args: &["-t", "2", "-S", "-v"],
            exact,
        },
        Case {
            args: &["-n", "-t", "4", "-S", "-f", "FILE1", "--random-seed=3"],
            exact: SEEDED,
        },
        Case {
            args: &[
                "-n",
                "-t",
                "6",
                "-c",
                "2",
                "-j",
                "2",
                "-b",
                "si@2",
                "-f",
                "FILE1@3",
                "--random-seed=3",
            ],
            exact: SEEDED,
        },
        // The largest weights: their sum does not overflow.
        Case {
            args: &[
                "-n",
                "-t",
                "20",
                "-b",
                "tpcb@2147483647",
                "-b",
                "si@2147483647",
                "--random-seed=5",
            ],
            exact: SEEDED,
        },
    ];
    let db = fresh_database();
    assert_eq!(run_cases(&db, &cases, &[&one]), 10);
}

/// Partitioned `pgbench_accounts`: `partition method` and `partitions`
/// lines for builtin scripts only, also for a partitioned table with no
/// partition at all.
#[test]
fn partition_lines_match_pgbench() {
    let one = script("one.sql", "SELECT 1;\n");
    let exact = &[PROCESSED, "partition method:", "partitions:"][..];
    let cases = [
        Case {
            args: &["-n", "-t", "3", "-c", "2", "-S"],
            exact,
        },
        Case {
            args: &["-n", "-t", "3"],
            exact,
        },
        Case {
            args: &["-n", "-t", "3", "-f", "FILE1"],
            exact,
        },
    ];
    let zero = altered_database(
        "DROP TABLE pgbench_accounts; \
         CREATE TABLE pgbench_accounts (aid int NOT NULL, bid int, abalance int, \
         filler char(84)) PARTITION BY HASH (aid)",
    );
    for db in [
        initialized_database(&["--partitions=2"]),
        initialized_database(&["--partitions=3", "--partition-method=hash"]),
        zero,
    ] {
        run_cases(&db, &cases, &[&one]);
    }
}

/// Command lines refused before the run: the same message and exit
/// status 1.
#[test]
fn setup_errors_match_pgbench() {
    let db = fresh_database();
    let cases: &[&[&str]] = &[
        &["-j", "0"],
        &["-c", "0"],
        &["-t", "2", "-T", "1"],
        &["-T", "1", "-t", "2"],
        &["-t", "0"],
        &["-t", "2147483648"],
        &["-s", "0"],
        &["-b", "s"],
        &["-b", "nope"],
        &["-b", ""],
        &["-b", "tpcb@0"],
        &["-b", "si@0", "-b", "se@0"],
        &["-b", "tpcb@-1"],
        &["-b", "tpcb@x"],
        &["-b", "tpcb@"],
        &["-b", "tpcb@2147483648"],
        &["-b", "se@1@2"],
        &["-n", "-t", "1", "--partitions=2"],
        &["-i", "-C"],
        &["-i", "-j", "2"],
    ];
    for args in cases {
        same_messages(&Run::new(&db, args), 1);
    }
}

/// Databases that cannot run the builtin scripts, and a database that
/// does not exist.
#[test]
fn missing_tables_and_databases_are_refused_as_pgbench_refuses_them() {
    let bare = new_database(server());
    let no_branches = altered_database("DROP TABLE pgbench_branches");
    let cases: &[(&str, &[&str], &str)] = &[
        (
            &bare,
            &["-n", "-t", "1"],
            "Perhaps you need to do initialization",
        ),
        (
            &bare,
            &["-n", "-t", "1", "-S", "-s", "3"],
            "pgbench_branches",
        ),
        (
            &no_branches,
            &["-n", "-t", "1"],
            "could not count number of branches",
        ),
        (
            "shape_no_such_database",
            &["-n", "-t", "1", "-S"],
            "could not create connection for setup",
        ),
        (
            "shape_no_such_database",
            &["-n", "-t", "1", "-C"],
            "could not create connection for setup",
        ),
    ];
    for (db, args, phrase) in cases {
        let mine = same_messages(&Run::new(db, args), 1);
        assert!(mine.contains(phrase), "{args:?}: {mine}");
    }
}

/// pgbench 18 quotes `"search_path"` in this message (pgbench 15 did not).
#[test]
fn a_missing_accounts_table_is_reported_with_pgbench_18s_wording() {
    let db = altered_database("DROP TABLE pgbench_accounts");
    let run = Run::new(&db, &["-n", "-t", "1"]);
    let (ours, theirs) = (run.pgbolt(), run.pgbench());
    assert_eq!(ours.status.code(), Some(1));
    assert_eq!(theirs.status.code(), Some(1));
    let expected = messages(&theirs, Program::Pgbench);
    assert!(
        expected.starts_with("PROG: error: no pgbench_accounts table found in \"search_path\"\n"),
        "{expected}"
    );
    assert_eq!(messages(&ours, Program::Pgbolt), expected);
}

/// `-b list` and `--show-script`: the same text on standard error, the
/// same exit status, and options after them never looked at.
#[test]
fn listing_and_showing_builtin_scripts_match_pgbench() {
    let cases: &[(&[&str], i32)] = &[
        (&["-b", "list"], 0),
        (&["-b", "list", "-c", "x"], 0),
        (&["-b", "se", "-b", "list"], 0),
        (&["-b", "nope", "-b", "list"], 1),
        (&["--show-script=tpcb-like"], 0),
        (&["--show-script=si"], 0),
        (&["--show-script=se", "-c", "0"], 0),
        (&["--show-script=s"], 1),
        (&["--show-script=nope"], 1),
        (&["--show-script="], 1),
    ];
    for (args, status) in cases {
        let run = Run::new("shape_never_connected", args);
        let mine = same_messages(&run, *status);
        assert!(!mine.is_empty(), "{args:?}");
        assert!(run.pgbolt().stdout.is_empty(), "{args:?}");
    }
}

/// Runs both tools and compares exit status, report lines (numbers
/// masked) and messages as they are, including those inside `starting
/// vacuum...end.`;
/// returns pgbolt's report and messages.
fn compare_with_vacuum(run: &Run) -> (String, String) {
    let (ours, theirs) = (run.pgbolt(), run.pgbench());
    let what = run.args.join(" ");
    assert_eq!(ours.status.code(), theirs.status.code(), "{what}");
    let report = stdout(&ours);
    let mine = ours_without_additions(&report, false);
    let expected = report_lines(&stdout(&theirs));
    assert_eq!(
        shape(&mine, false),
        shape(&expected[1..], false),
        "{what}\n{report}"
    );
    let mine = messages(&ours, Program::Pgbolt);
    assert_eq!(mine, messages(&theirs, Program::Pgbench), "{what}");
    (report, mine)
}

/// The vacuum before a run in databases that lack some tables: libpq's
/// error lines inside `starting vacuum...end.`, the run going on.
#[test]
fn vacuum_failures_are_worded_as_pgbench_words_them() {
    let one = script("one.sql", "SELECT 1;\n");
    let bare = new_database(server());
    for args in [
        &["-t", "2", "-f", &one.path][..],
        &["-t", "2", "-v", "-f", &one.path],
    ] {
        let (_, messages) = compare_with_vacuum(&Run::new(&bare, args));
        assert!(
            messages.starts_with(
                "starting vacuum...PROG: error: ERROR:  relation \"pgbench_branches\" does not exist\n"
            ),
            "{messages}"
        );
    }
    // No history table: the vacuum goes on, the first INSERT aborts.
    let no_history = altered_database("DROP TABLE pgbench_history");
    let (_, messages) = compare_with_vacuum(&Run::new(&no_history, &["-t", "2"]));
    assert!(
        messages.contains("client 0 script 0 aborted in command 9 query 0"),
        "{messages}"
    );
    // No branches row: scale 0, the builtin's random() range is empty.
    let empty = altered_database("TRUNCATE pgbench_branches");
    let (_, messages) = compare_with_vacuum(&Run::new(&empty, &["-t", "2", "-s", "4"]));
    assert!(
        messages.starts_with(
            "PROG: warning: scale option ignored, using count from pgbench_branches table (0)\n"
        ),
        "{messages}"
    );
    // More branches than the scale -i gave: their count is the scale.
    let more = altered_database("INSERT INTO pgbench_branches VALUES (2, 0), (3, 0)");
    let (report, _) = compare_with_vacuum(&Run::new(&more, &["-n", "-t", "2", "-s", "4"]));
    assert!(report.contains("\nscaling factor: 3\n"), "{report}");
}

/// Two copies of one initialized database.
fn twin_databases() -> (String, String) {
    let source = fresh_database();
    let twins = (format!("{source}_ours"), format!("{source}_theirs"));
    for twin in [&twins.0, &twins.1] {
        server()
            .psql(&format!("CREATE DATABASE {twin} TEMPLATE {source}"))
            .expect("copy database");
    }
    twins
}

fn rows(db: &str, query: &str) -> String {
    server().psql_in(db, query).expect("query")
}

const HISTORY_IN_ORDER: &str = "SELECT tid, bid, aid, delta FROM pgbench_history ORDER BY ctid";
const HISTORY: &str = "SELECT tid, bid, aid, delta FROM pgbench_history ORDER BY 1, 2, 3, 4";
const BALANCES: &str = "SELECT 'a', aid, abalance FROM pgbench_accounts WHERE abalance <> 0 \
     UNION ALL SELECT 't', tid, tbalance FROM pgbench_tellers \
     UNION ALL SELECT 'b', bid, bbalance FROM pgbench_branches ORDER BY 1, 2";

/// The TPC-B-like script under one seed: the same history rows (in the
/// same order for one client) and the same balances. With one client per
/// thread every client draws from its own random state, so several
/// clients leave the same rows too.
#[test]
fn seeded_runs_leave_the_same_rows_as_pgbench() {
    let cases: &[(&[&str], &str, usize)] = &[
        (
            &["-n", "--random-seed=7", "-c", "1", "-t", "50"],
            HISTORY_IN_ORDER,
            50,
        ),
        (
            &["-n", "--random-seed=7", "-c", "3", "-j", "3", "-t", "20"],
            HISTORY,
            60,
        ),
        (
            &[
                "-n",
                "--random-seed=9",
                "-c",
                "4",
                "-j",
                "4",
                "-t",
                "10",
                "-b",
                "tpcb@2",
                "-b",
                "simple@3",
                "-b",
                "select",
            ],
            HISTORY,
            0,
        ),
    ];
    for (args, history, count) in cases {
        let (ours, theirs) = twin_databases();
        let mine = Run::new(&ours, args).pgbolt();
        assert!(mine.status.success(), "{}", stderr(&mine));
        let out = Run::new(&theirs, args).pgbench();
        assert!(out.status.success(), "{}", stderr(&out));
        let expected = rows(&theirs, history);
        if *count > 0 {
            assert_eq!(expected.lines().count(), *count, "{args:?}");
        }
        assert_eq!(rows(&ours, history), expected, "{args:?}");
        assert_eq!(rows(&ours, BALANCES), rows(&theirs, BALANCES), "{args:?}");
    }
}

/// Sessions the server counted in `db` so far, once no backend is left
/// in it (a backend is counted as it exits, just after the client).
fn sessions(db: &str) -> (u64, u64) {
    let read = || -> (u64, u64) {
        let text = server()
            .psql(&format!(
                "SELECT sessions, sessions_abandoned FROM pg_stat_database \
                 WHERE datname = '{db}'"
            ))
            .expect("read statistics");
        let last = text.lines().last().unwrap_or_default().to_owned();
        let mut fields = last.split('|').map(|f| f.trim().parse().unwrap_or(0));
        (fields.next().unwrap_or(0), fields.next().unwrap_or(0))
    };
    // A backend's counts are in once it has left pg_stat_activity (it
    // flushes its statistics before it gives up its slot).
    for _ in 0..150 {
        let left = server()
            .psql(&format!(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = '{db}'"
            ))
            .expect("read activity");
        if left.lines().any(|l| l.trim() == "0") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    read()
}

/// How many connections a run opens (one for the set-up, one per client,
/// or one per transaction under `-C`), and that each is closed cleanly.
#[test]
fn runs_open_as_many_connections_as_pgbench() {
    let meta = script("meta.sql", "\\set x 1\n");
    let fails = script("fails.sql", "SELECT 1/0;\n");
    let db = fresh_database();
    let cases: &[(&[&str], u64)] = &[
        (&["-n", "-t", "3", "-c", "2"], 3),
        (&["-n", "-t", "3", "-c", "2", "-C"], 7),
        (&["-t", "3", "-c", "3", "-j", "2", "-C", "-S"], 10),
        (
            &[
                "-n", "-t", "3", "-c", "2", "-j", "4", "-C", "-M", "prepared", "-S",
            ],
            7,
        ),
        // A script without SQL still connects for each transaction.
        (&["-n", "-t", "3", "-C", "-f", &meta.path], 4),
        // An aborted client does not reconnect.
        (&["-n", "-t", "3", "-c", "2", "-C", "-f", &fails.path], 3),
    ];
    for (args, expected) in cases {
        let run = Run::new(&db, args);
        let before = sessions(&db);
        let out = run.pgbench();
        let middle = sessions(&db);
        // The monitor's connection is a session of its own (see
        // docs/diagnosis.md): the connections compared are the clients'.
        let mine = run
            .pgbolt_command()
            .arg("--no-monitor")
            .output()
            .expect("pgbolt runs");
        let after = sessions(&db);
        assert_eq!(mine.status.code(), out.status.code(), "{args:?}");
        let theirs = (middle.0 - before.0, middle.1 - before.1);
        assert_eq!(theirs, (*expected, 0), "pgbench {args:?}");
        assert_eq!((after.0 - middle.0, after.1 - middle.1), theirs, "{args:?}");
    }
}

/// Under `-C`, a client whose next connection is refused aborts with
/// libpq's message and `client N aborted while establishing connection`;
/// the report covers the transactions before, and the exit status is 2.
#[test]
fn a_refused_reconnection_aborts_the_client_as_in_pgbench() {
    let role = "shape_reconnect";
    let db = "shape_reconnect_db";
    server()
        .psql(&format!(
            "CREATE ROLE {role} LOGIN; CREATE DATABASE {db} OWNER {role}"
        ))
        .expect("create role and database");
    let revoke = script(
        "revoke.sql",
        &format!("REVOKE CONNECT ON DATABASE {db} FROM PUBLIC, {role};\n"),
    );
    let grant = || {
        server()
            .psql(&format!("GRANT CONNECT ON DATABASE {db} TO PUBLIC, {role}"))
            .expect("grant");
    };
    let run = Run::new(db, &["-n", "-C", "-t", "3", "-f", &revoke.path]).env("PGUSER", role);
    grant();
    let mine = run.pgbolt();
    grant();
    let theirs = run.pgbench();
    grant();
    assert_eq!(mine.status.code(), Some(2), "{}", stderr(&mine));
    assert_eq!(theirs.status.code(), Some(2), "{}", stderr(&theirs));
    let processed = "number of transactions actually processed: 1/3";
    assert!(stdout(&theirs).contains(processed), "{}", stdout(&theirs));
    assert!(stdout(&mine).contains(processed), "{}", stdout(&mine));
    let expected = messages(&theirs, Program::Pgbench);
    assert!(
        expected.contains("PROG: error: client 0 aborted while establishing connection"),
        "{expected}"
    );
    assert_eq!(messages(&mine, Program::Pgbolt), expected);
}

/// `-t` times `-c` beyond 2147483647: pgbench 15 to 18 compute the
/// expected count in 32 bits and print it wrapped; pgbolt prints the
/// real count (docs/compatibility.md).
#[test]
fn the_expected_transaction_count_does_not_wrap() {
    let fails = script("fails.sql", "SELECT 1/0;\n");
    let db = fresh_database();
    let run = Run::new(
        &db,
        &["-n", "-t", "2147483647", "-c", "2", "-f", &fails.path],
    );
    let (ours, theirs) = (run.pgbolt(), run.pgbench());
    assert_eq!(ours.status.code(), Some(2));
    assert_eq!(theirs.status.code(), Some(2));
    let processed = |out: &Output| line(&stdout(out), PROCESSED).map(str::to_owned);
    assert_eq!(
        processed(&theirs).as_deref(),
        Some("number of transactions actually processed: 0/-2")
    );
    assert_eq!(
        processed(&ours).as_deref(),
        Some("number of transactions actually processed: 0/4294967294")
    );
}
