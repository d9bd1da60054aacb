//! Cases in the spirit of PostgreSQL's own pgbench test suite, pgbolt
//! against the real pgbench: scripts that fail while the run is under way
//! (meta commands, `\gset`, `COPY`), under each query mode, with exit
//! statuses, messages and what the server was left with compared.
//!
//! Every case runs in a database of its own on the test binary's shared
//! server, with no tables unless the case creates them, and `-n` so that
//! neither program looks for pgbench's tables.

use crate::engine_support::*;

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
/// message and exit status 2, in every query mode. pgbench leaves the copy
/// state with `PQendcopy`, which ends the COPY with no rows as a success,
/// so the COPY's statement trigger fires once per run of either program.
/// A `COPY ... TO STDOUT` aborts the same way.
#[test]
fn copy_aborts_the_client_and_ends_the_copy_as_pgbench() {
    let db = database(None);
    sql(
        &db,
        "create table t (a int); create table fired (n int);
         create function note() returns trigger language plpgsql as
           $$ begin insert into fired values (1); return null; end $$;
         create trigger note after insert on t for each statement execute function note();",
    );
    for text in ["COPY t FROM STDIN;\n", "COPY (SELECT 1) TO STDOUT;\n"] {
        for mode in MODES {
            let case = format!("-M {mode}: {text}");
            let before = sql(&db, "select count(*) from fired");
            let file = script(text);
            let args = ["-n", "-t", "1", "-M", mode, "-f", file.path.as_str()];
            let theirs = pgbench(&db, &args);
            let by_pgbench = sql(&db, "select count(*) from fired");
            let ours = pgbolt(&db, &args);
            let by_pgbolt = sql(&db, "select count(*) from fired");
            let (theirs, ours) = (outcome(&theirs, "pgbench"), outcome(&ours, "pgbolt"));
            assert_eq!(ours, theirs, "{case}");
            assert_eq!(ours.0, Some(2), "{case}");
            assert!(
                ours.1
                    .contains("COPY is not supported in pgbench, aborting"),
                "{case}: {}",
                ours.1
            );
            let fired = |after: &str, earlier: &str| {
                after.parse::<u32>().unwrap() - earlier.parse::<u32>().unwrap()
            };
            assert_eq!(
                fired(&by_pgbolt, &by_pgbench),
                fired(&by_pgbench, &before),
                "{case}: triggers fired"
            );
        }
    }
    assert_eq!(
        sql(&db, "select count(*) from fired"),
        "6",
        "one per COPY FROM STDIN run of each program"
    );
    assert_eq!(sql(&db, "select count(*) from t"), "0");
}

/// What ending a COPY draws is shown where pgbench shows it, word for
/// word: a statement trigger's notice and error after the abort line (an
/// error as libpq's `PQendcopy` shows it), the error of a statement after
/// the COPY not at all, and the server's refusal of a pipeline's next
/// statement, which arrived in the middle of the COPY, as the COPY's own.
#[test]
fn what_ending_the_copy_draws_is_shown_as_pgbench_shows_it() {
    let db = database(None);
    sql(
        &db,
        "create table t (a int); create table n (a int); create table p (a int);
         create function boom() returns trigger language plpgsql as
           $$ begin raise exception 'boom'; end $$;
         create trigger boom after insert on t for each statement execute function boom();
         create function note() returns trigger language plpgsql as
           $$ begin raise notice 'copied into n'; return null; end $$;
         create trigger note after insert on n for each statement execute function note();",
    );
    let cases: [(&str, &[&str], &str); 4] = [
        ("COPY t FROM STDIN;\n", &MODES, "\nERROR:  boom\n"),
        (
            "COPY n FROM STDIN;\n",
            &MODES,
            "aborting\nNOTICE:  copied into n\n",
        ),
        (
            "COPY n FROM STDIN \\; SELECT 1/0;\n",
            &["simple"],
            "aborting\nNOTICE:  copied into n\nPROG: error: Run",
        ),
        (
            "\\startpipeline\nSELECT 1;\nCOPY p FROM STDIN;\nSELECT 2;\n\\endpipeline\n",
            &["extended", "prepared"],
            "aborting\nERROR:  unexpected message type",
        ),
    ];
    for (text, modes, shown) in cases {
        for mode in modes {
            let (theirs, ours) = both(&db, text, &["-t", "1", "-M", mode]);
            assert_eq!(ours, theirs, "-M {mode}: {text}");
            assert!(ours.1.contains(shown), "-M {mode}: {text}: {}", ours.1);
        }
    }
}

/// A COPY in a pipeline followed by `\syncpipeline` (pgbench 17 and
/// later, so pgbolt alone): the server ignores the pipeline's Syncs while
/// it waits for the COPY's data, and the client that ended the COPY must
/// not wait for their answers. A client that did would run until `-T`
/// ran out and be cancelled there.
#[test]
fn copy_in_a_pipeline_with_sync_points_aborts_without_waiting() {
    let db = database(None);
    sql(&db, "create table t (a int)");
    let file = script("\\startpipeline\nCOPY t FROM STDIN;\n\\syncpipeline\n\\endpipeline\n");
    for mode in ["extended", "prepared"] {
        let out = pgbolt(
            &db,
            &["-n", "-T", "60", "-M", mode, "-f", file.path.as_str()],
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "-M {mode}: {err}");
        assert!(
            err.contains("COPY is not supported in pgbench, aborting"),
            "-M {mode}: {err}"
        );
        assert!(!err.contains("cancel"), "-M {mode}: {err}");
        assert_eq!(processed(&out), 0, "-M {mode}");
    }
}

/// Scripts that fail at run time, each with the variables they use: a
/// meta command whose evaluation fails, a `\gset` or `\aset` that cannot
/// store, a pipeline misused. Both programs must give the same exit
/// status and the same messages, word for word, in every query mode
/// (compound queries, which `-M prepared` cannot prepare, are in
/// [`FAILING_COMPOUND`]).
const FAILING: &[&str] = &[
    "\\set i 7/0\n",
    "\\set i 5 % 0\n",
    "\\set i :undefined_one\n",
    "\\set i random(9, 2)\n",
    "\\set i random(:lowest, :highest)\n",
    "\\set i random_gaussian(1, 9, 1.5)\n",
    "\\set i random_exponential(1, 9, -1.0)\n",
    "\\set i random_zipfian(1, 9, 0.5)\n",
    "\\set i random_zipfian(1, 9, 1001)\n",
    "\\set i :word * 2\n",
    "\\set b NOT 1.5\n",
    "\\set i FALSE - 1\n",
    "\\set d sqrt(TRUE)\n",
    "\\set i int(-1e30)\n",
    "\\set i (1 << 62) * 2\n",
    "\\set i -(1 << 62) - (1 << 62) - (1 << 62)\n",
    "\\set i (1 << 62) + (1 << 62)\n",
    "\\set i :lowest / -1\n",
    "\\set i permute(3, -1)\n",
    "\\set b :notbool AND true\n",
    "\\set i greatest(0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17)\n",
    "\\setshell v echo seven\n",
    "\\setshell v no-such-command-anywhere\n",
    "\\shell no-such-command-anywhere\n",
    "\\shell echo :undefined_one\n",
    "\\sleep :undefined_one\n",
    "\\sleep :word ms\n",
    "\\if :undefined_one\n\\endif\n",
    "SELECT 1 AS a, 2 AS b UNION SELECT 3, 4 \\gset\n",
    "SELECT 1 AS a WHERE false \\gset\n",
    "SELECT 1 AS \"no good\" \\gset\n",
    "SELECT 2 \\gset\n",
    "\\startpipeline\n\\startpipeline\n\\endpipeline\n",
    "\\endpipeline\n",
    "\\startpipeline\nSELECT 1 \\gset\n\\endpipeline\n",
    "\\startpipeline\nSELECT 1 AS a \\aset\n\\endpipeline\n",
    "\\startpipeline\nSELECT 1;\n",
    "BEGIN;\nSELECT 1;\n",
];

/// Failing scripts with compound queries (`\;`), for the simple and
/// extended modes: under `-M prepared` the preparation fails, which
/// pgbolt reports differently (see docs/compatibility.md).
const FAILING_COMPOUND: &[&str] = &[
    "SELECT 1 AS a WHERE false \\; SELECT 2 AS b WHERE false \\aset\n\\set i :a\n",
    "SELECT 1 AS a \\; SELECT 1/0 \\; SELECT 2 \\gset\n",
    "\\; SELECT 1 AS a \\; SELECT 2 AS a UNION SELECT 3 \\gset\n",
];

#[test]
fn run_time_failures_match_pgbench_in_every_query_mode() {
    let db = database(None);
    let vars = [
        "-D",
        "word=seven",
        "-D",
        "notbool=maybe",
        "-D",
        "lowest=-9223372036854775808",
        "-D",
        "highest=9223372036854775807",
    ];
    let cases = FAILING
        .iter()
        .flat_map(|text| MODES.iter().map(move |mode| (*text, *mode)))
        .chain(
            FAILING_COMPOUND
                .iter()
                .flat_map(|text| MODES[..2].iter().map(move |mode| (*text, *mode))),
        );
    for (text, mode) in cases {
        let mut args = vec!["-t", "2", "-M", mode];
        args.extend_from_slice(&vars);
        let (theirs, ours) = both(&db, text, &args);
        assert_eq!(ours, theirs, "-M {mode}: {text:?}");
        assert_ne!(ours.0, Some(0), "-M {mode}: {text:?}");
    }
}

/// Statements whose fate depends on the implicit transaction a pipeline
/// opens at its first statement: outside it (first in the pipeline) or
/// inside it (after another one). The server's warnings and errors, and
/// so both programs' messages and exit statuses, must match.
const PIPELINE_PLACEMENT: &[&str] = &[
    "\\startpipeline\nSET LOCAL statement_timeout = '1h';\n\\endpipeline\n",
    "\\startpipeline\nSELECT 1;\nSET LOCAL statement_timeout = '1h';\n\\endpipeline\n",
    "\\startpipeline\nLOCK t;\nSELECT 1;\n\\endpipeline\n",
    "\\startpipeline\nSELECT 1;\nLOCK t;\n\\endpipeline\n",
    "\\startpipeline\nVACUUM t;\n\\endpipeline\n",
    "\\startpipeline\nSELECT 1;\nVACUUM t;\n\\endpipeline\n",
    "\\startpipeline\nSAVEPOINT a;\nSELECT 1;\nROLLBACK TO SAVEPOINT a;\n\\endpipeline\n",
    "\\startpipeline\nBEGIN ISOLATION LEVEL SERIALIZABLE;\nSELECT 1;\nSELECT 2;\nEND;\n\\endpipeline\n",
];

#[test]
fn pipeline_statements_meet_the_implicit_transaction_as_with_pgbench() {
    let db = database(None);
    sql(&db, "create table t (a int)");
    for text in PIPELINE_PLACEMENT {
        for mode in &MODES[1..] {
            let (theirs, ours) = both(&db, text, &["-t", "2", "-M", mode]);
            assert_eq!(ours, theirs, "-M {mode}: {text:?}");
        }
    }
}
