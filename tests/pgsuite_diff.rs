//! Cases in the spirit of PostgreSQL's own pgbench test suite, pgbolt
//! against the real pgbench: scripts that fail while the run is under way
//! (meta commands, `\gset`, `COPY`), under each query mode, with exit
//! statuses, messages and what the server was left with compared.
//!
//! Every case runs in a database of its own on the test binary's shared
//! server, with no tables unless the case creates them, and `-n` so that
//! neither program looks for pgbench's tables.

mod engine_support;

use engine_support::*;

/// The query modes every case runs under.
const MODES: [&str; 3] = ["simple", "extended", "prepared"];

/// Exit status and standard error, with the program's name at the start of
/// a line replaced by `PROG`.
fn outcome(out: &std::process::Output, program: &str) -> (Option<i32>, String) {
    let messages = stderr(out)
        .lines()
        .map(|l| match l.strip_prefix(program) {
            Some(rest) => format!("PROG{rest}\n"),
            None => format!("{l}\n"),
        })
        .collect();
    (out.status.code(), messages)
}

/// Runs both programs on `text` with `args`; returns pgbench's and
/// pgbolt's outcome.
fn both(db: &str, text: &str, args: &[&str]) -> ((Option<i32>, String), (Option<i32>, String)) {
    let file = script(text);
    let mut all: Vec<&str> = vec!["-n", "-f", file.path.as_str()];
    all.extend_from_slice(args);
    let theirs = pgbench(db, &all);
    let ours = pgbolt(db, &all);
    (outcome(&theirs, "pgbench"), outcome(&ours, "pgbolt"))
}

/// A `COPY ... FROM STDIN` in a script aborts the client with pgbench's
/// message and exit status 2, in every query mode. pgbench 18 leaves the
/// copy state with `PQendcopy`, which ends the COPY with no rows as a
/// success; pgbolt does the same, so the COPY's statement trigger fires
/// once per run and the server logs no error. (pgbench 15 closes the
/// connection in the middle of the COPY, so its trigger never fires; that
/// count is not compared.)
#[test]
fn copy_from_stdin_aborts_the_client_and_ends_the_copy_as_pgbench_18() {
    let db = database(None);
    sql(
        &db,
        "create table t (a int); create table fired (n int);
         create function note() returns trigger language plpgsql as
           $$ begin insert into fired values (1); return null; end $$;
         create trigger note after insert on t for each statement execute function note();",
    );
    for mode in MODES {
        let (theirs, ours) = both(&db, "COPY t FROM STDIN;\n", &["-t", "1", "-M", mode]);
        assert_eq!(ours, theirs, "-M {mode}");
        assert_eq!(ours.0, Some(2), "-M {mode}");
        assert!(
            ours.1
                .contains("COPY is not supported in pgbench, aborting"),
            "-M {mode}: {}",
            ours.1
        );
        sql(&db, "delete from fired");
        let again = pgbolt(
            &db,
            &[
                "-n",
                "-t",
                "1",
                "-M",
                mode,
                "-f",
                script("COPY t FROM STDIN;\n").path.as_str(),
            ],
        );
        assert_eq!(again.status.code(), Some(2), "-M {mode}");
        assert_eq!(
            sql(&db, "select count(*) from fired"),
            "1",
            "-M {mode}: the COPY ends as a success"
        );
        assert_eq!(sql(&db, "select count(*) from t"), "0", "-M {mode}");
    }
}
