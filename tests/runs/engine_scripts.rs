//! Custom scripts at run time, with the real pgbench as the oracle: meta
//! commands, pipelines, run-time errors, `\sleep`, `\gset` and the shell
//! commands.

use crate::engine_support::*;

#[test]
fn meta_commands_match_pgbench() {
    let text = r"\set a 5
SELECT :a + 1 AS b \gset
\if :b = 7
  \set c 100
\elif :b = 6
  \set c 200
\else
  \set c 300
\endif
\setshell d expr 40 + :a
\shell true
SELECT 10 AS x, 20 AS y \aset
\sleep 1 ms
INSERT INTO t VALUES (:client_id, :b, :c, :d, :x || '-' || :y);
";
    for mode in ["simple", "extended", "prepared"] {
        let (ours, theirs) = both_into_table(text, &["-t", "3", "-c", "2", "-M", mode]);
        assert_eq!(ours, theirs, "-M {mode}");
        assert_eq!(ours.lines().count(), 6);
        assert!(ours.contains("|6|200|45|10-20"), "{ours}");
    }
    let compound = r"SELECT 10 AS x \; SELECT 1 WHERE false \; SELECT 20 AS y \aset
INSERT INTO t VALUES (:client_id, :x, :y, NULL, NULL);
";
    let (ours, theirs) = both_into_table(compound, &["-t", "2", "-c", "2"]);
    assert_eq!(ours, theirs);
    assert!(ours.contains("|10|20||"), "{ours}");
}

#[test]
fn pipelines_match_pgbench() {
    let text = r"\startpipeline
BEGIN;
INSERT INTO t VALUES (:client_id, 'one', NULL, NULL, NULL);
INSERT INTO t VALUES (:client_id, 'two', NULL, NULL, NULL);
END;
\endpipeline
";
    for mode in ["extended", "prepared"] {
        let (ours, theirs) = both_into_table(text, &["-t", "4", "-c", "2", "-M", mode]);
        assert_eq!(ours, theirs, "-M {mode}");
        assert_eq!(ours.lines().count(), 16);
    }
    // \syncpipeline came with pgbench 17, so pgbolt alone runs it.
    let synced = r"\startpipeline
INSERT INTO t VALUES (:client_id, 'one', NULL, NULL, NULL);
\syncpipeline
INSERT INTO t VALUES (:client_id, 'two', NULL, NULL, NULL);
\endpipeline
";
    let db = database(None);
    sql(
        &db,
        "create table t (client int, a text, b text, c text, d text)",
    );
    let file = script(synced);
    for mode in ["extended", "prepared"] {
        let out = pgbolt(
            &db,
            &["-n", "-t", "3", "-c", "2", "-M", mode, "-f", &file.path],
        );
        assert!(out.status.success(), "{}", stderr(&out));
    }
    assert_eq!(sql(&db, "select count(*) from t"), "24");
    let db = database(None);
    let file = script(text);
    let ours = pgbolt(&db, &["-n", "-t", "1", "-f", &file.path]);
    assert_eq!(ours.status.code(), Some(2));
    assert!(
        stderr(&ours).contains(
            "client 0 aborted in command 0 (startpipeline) of script 0; cannot use pipeline mode \
             with the simple query protocol"
        ),
        "{}",
        stderr(&ours)
    );
}

/// Regression: with `-M prepared`, a statement of a pipeline that failed
/// to prepare (its Parse is sent as the pipeline starts) was reported with
/// ` at character N` and no excerpt; pgbench prepares it with `PQprepare`
/// and prints the server's error with libpq's `LINE n:` excerpt of the
/// statement, as pgbolt does for a statement that fails to prepare outside
/// a pipeline (see docs/compatibility.md for the rest of the message).
#[test]
fn a_pipeline_statement_that_fails_to_prepare_gets_its_excerpt() {
    let cases = [
        (
            "\\startpipeline\nSELECT 1;\nSELECT 2;\nSELEC 3 FROM x;\nSELECT 4;\n\\endpipeline\n",
            "ERROR:  syntax error at or near \"SELEC\"\nLINE 1: SELEC 3 FROM x;\n        ^\n",
        ),
        (
            "\\startpipeline\nSELECT 1;\n\\set x 5\nSELECT * FROM nosuch_t WHERE a = :x;\n\\endpipeline\n",
            "ERROR:  relation \"nosuch_t\" does not exist\n\
             LINE 1: SELECT * FROM nosuch_t WHERE a = $1;\n                      ^\n",
        ),
    ];
    for (text, excerpt) in cases {
        let (ours, theirs) = both_fail(text, &["-t", "1", "-M", "prepared"]);
        assert_eq!((ours.0, theirs.0), (Some(2), Some(2)), "{text}");
        assert!(theirs.1.contains(excerpt), "{text}: pgbench: {}", theirs.1);
        assert!(ours.1.contains(excerpt), "{text}: {}", ours.1);
    }
}

/// Regression: with `-M prepared`, the statements of a pipeline were
/// prepared under one Sync and the first failure aborted the client, even
/// for a statement the run never reaches; pgbench prepares them one by one,
/// logs a failure and goes on (the statement fails again only if it runs).
#[test]
fn a_pipeline_statement_that_fails_to_prepare_is_logged_and_skipped() {
    let cases = [
        (
            "\\startpipeline\n\\if false\nSELEC 1;\n\\endif\nSELECT 2;\n\\endpipeline\n",
            Some(0),
        ),
        (
            "\\startpipeline\nSELECT 1;\nSELEC 2;\nSELECT 3;\n\\endpipeline\n",
            Some(2),
        ),
    ];
    for (text, code) in cases {
        let (ours, theirs) = both_fail(text, &["-t", "2", "-M", "prepared"]);
        assert_eq!(ours, theirs, "{text}");
        assert_eq!(ours.0, code, "{text}: {}", ours.1);
        assert!(
            ours.1.contains("syntax error at or near \"SELEC\""),
            "{}",
            ours.1
        );
    }
}

/// Found with pgbench 18 as the oracle: under `-M prepared` a statement
/// whose preparation fails is logged (pgbench's own `PQprepare`), then
/// executed anyway, and the client aborts on the statement that does not
/// exist; pgbolt aborted on the preparation's error.
#[test]
fn a_statement_that_fails_to_prepare_aborts_on_the_missing_statement() {
    let (ours, theirs) = both_fail("SELECT 1 + ;\n", &["-t", "2", "-c", "1", "-M", "prepared"]);
    assert_eq!(ours, theirs);
    assert_eq!(ours.0, Some(2));
    assert!(
        ours.1.starts_with(
            "PROG: error: ERROR:  syntax error at or near \";\"\nLINE 1: SELECT 1 + ;\n"
        ),
        "{}",
        ours.1
    );
    assert!(
        ours.1.contains(
            "PROG: error: client 0 script 0 aborted in command 0 query 0: \
             ERROR:  prepared statement \"P_0\" does not exist\n"
        ),
        "{}",
        ours.1
    );
}

#[test]
fn run_time_errors_match_pgbench() {
    let cases: &[(&str, &str)] = &[
        ("SELECT 1 WHERE false \\gset\n", "expected one row, got 0"),
        (
            "SELECT 1 AS a UNION SELECT 2 \\gset\n",
            "expected one row, got 2",
        ),
        (
            "BEGIN;\n",
            "end of script reached without completing the last transaction",
        ),
        (
            "\\setshell x echo nope\n",
            "shell command must return an integer",
        ),
        ("\\set x 1 / 0\n", "division by zero"),
        ("\\sleep :undefined_var\n", "undefined variable"),
    ];
    for (text, phrase) in cases {
        let (ours, theirs) = both_fail(text, &["-t", "2", "-c", "1"]);
        assert_eq!(ours.0, theirs.0, "{text}: {}", ours.1);
        assert_eq!(ours.0, Some(2), "{text}");
        assert!(ours.1.contains(phrase), "{text}: {}", ours.1);
        let first = |s: &str| {
            s.lines()
                .find(|l| l.contains("error:") && !l.contains("Run was aborted"))
                .map(str::to_owned)
        };
        assert_eq!(first(&ours.1), first(&theirs.1), "{text}");
    }
}

/// Regression: `\sleep` lengths were computed in 64 bits, so `\sleep 2148
/// s` slept for 36 minutes; pgbench multiplies in a 32-bit `int` that wraps
/// (negative: no sleep at all). Under `-T 1` both run many transactions.
#[test]
fn sleep_lengths_wrap_as_in_pgbench() {
    let db = database(None);
    let file = script("\\sleep 2148 s\n\\sleep :x ms\nSELECT 1;\n");
    let args = ["-n", "-T", "1", "-D", "x=2147484", "-f", file.path.as_str()];
    for out in [pgbolt(&db, &args), pgbench(&db, &args)] {
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(processed(&out) > 1, "{}", stdout(&out));
    }
}

/// Regression: columns whose `\gset`/`\aset` variable name pgbench refuses
/// (`"1x"`, `"b c"`) were skipped; pgbench aborts the client with
/// `gset: invalid variable name` and `error storing into variable`.
#[test]
fn gset_into_an_invalid_variable_name_aborts_as_in_pgbench() {
    let cases = [
        "SELECT 1 AS \"1x\" \\gset\n",
        "SELECT 1 AS a, 2 AS \"b c\" \\gset p_\n",
        "SELECT 1 AS a \\; SELECT 2 AS \"b c\" \\aset\n",
        "SELECT 1 AS \"b c\" \\; SELECT 1 / 0 \\aset\n",
    ];
    for text in cases {
        for mode in ["simple", "extended"] {
            let (ours, theirs) = both_fail(text, &["-t", "1", "-M", mode]);
            assert_eq!(ours, theirs, "{text} -M {mode}");
            assert_eq!(ours.0, Some(2), "{text}");
        }
    }
    // Valid once prefixed, or in an empty `\aset` result: stored or skipped.
    let fine = "SELECT 1 AS \"1x\" \\gset p_\nSELECT 2 AS \"b c\" WHERE false \\aset\n";
    let (ours, theirs) = both_fail(fine, &["-t", "1"]);
    assert_eq!((ours.0, theirs.0), (Some(0), Some(0)), "{}", ours.1);
}

/// Regressions: `\shell` and `\setshell` ran the shell as `/bin/sh`, so
/// its own messages read `/bin/sh: 1: ...` where pgbench's (run by
/// `system()` and `popen()`) read `sh: 1: ...`; `\setshell` into a name
/// pgbench refuses aborted the client without pgbench's `setshell: invalid
/// variable name: "1x"` line.
#[test]
fn shell_command_failures_read_as_in_pgbench() {
    let cases = [
        (
            "\\shell nosuch_command_x\n",
            "sh: 1: nosuch_command_x: not found",
        ),
        (
            "\\setshell v nosuch_command_x\n",
            "sh: 1: nosuch_command_x: not found",
        ),
        (
            "\\setshell 1x echo 5\n",
            "setshell: invalid variable name: \"1x\"",
        ),
    ];
    for (text, expected) in cases {
        let (ours, theirs) = both_fail(text, &["-t", "1"]);
        assert_eq!(ours, theirs, "{text}");
        assert!(ours.1.contains(expected), "{text}: {}", ours.1);
    }
}

/// Regression: `\setshell` output was checked as text, so a vertical tab
/// after the number was refused and a NUL byte kept the rest of the line;
/// pgbench reads the first line as a C string (a NUL ends it) and allows
/// any C blank after the number; output that is not UTF-8 was quoted in
/// the error message with replacement characters.
#[test]
fn setshell_output_is_read_as_a_c_string() {
    let outputs = [
        ("5\\v", Some(0)),
        ("5\\0abc", Some(0)),
        ("\\0005", Some(2)),
        ("5 \\f\\r\\t\\n", Some(0)),
        ("\\n5", Some(0)),
        ("", Some(2)),
    ];
    for (output, code) in outputs {
        let text = format!("\\setshell x printf '{output}'\n\\set y debug(:x)\n");
        let (ours, theirs) = both_fail(&text, &["-t", "1"]);
        assert_eq!(ours, theirs, "{text}");
        assert_eq!(ours.0, code, "{text}: {}", ours.1);
    }
    // Output that is not UTF-8 is quoted byte for byte.
    let db = database(None);
    let file = script("\\setshell x printf '\\377'\n");
    let args = ["-n", "-t", "1", "-f", file.path.as_str()];
    let (ours, theirs) = (pgbolt(&db, &args), pgbench(&db, &args));
    let quoted = b"(not \"\xff\")\n";
    for out in [ours, theirs] {
        assert_eq!(out.status.code(), Some(2));
        assert!(
            out.stderr.windows(quoted.len()).any(|w| w == quoted),
            "{}",
            stderr(&out)
        );
    }
}
