//! The SQL commands of custom scripts as the server receives them, with the
//! real pgbench as the oracle: what variables are replaced with in each
//! query mode, what ends up in the database, and what both programs print.

use crate::engine_support::*;

/// Runs `text` once with `program` in each of `modes` against `db` and
/// returns the rows of `t` (the bytes of `v` in hex), emptying it.
fn rows_in(
    db: &str,
    program: fn(&str, &[&str]) -> std::process::Output,
    text: &str,
    modes: &[&str],
) -> String {
    let file = script(text);
    for mode in modes {
        let out = program(db, &["-n", "-t", "1", "-M", mode, "-f", &file.path]);
        assert!(out.status.success(), "-M {mode}: {}", stderr(&out));
    }
    let rows = sql(
        db,
        "select m, encode(textsend(v), 'hex') from t order by 1, 2",
    );
    sql(db, "truncate t");
    rows
}

/// Regression: values that `\gset` and `\aset` store were made UTF-8 (each
/// byte that was not became U+FFFD), so in a `LATIN1` or `SQL_ASCII`
/// database a value read and written back changed; pgbench keeps the
/// server's bytes, in the SQL text and in parameters alike.
#[test]
fn stored_values_keep_the_servers_bytes() {
    let read = "SELECT convert_from('\\xe978', 'LATIN1') AS v \\gset\n\
                SELECT convert_from('\\xff', 'LATIN1') AS w \\aset\n";
    let in_text = format!("{read}INSERT INTO t VALUES ('text', ':v:w');\n");
    let as_parameters = format!("{read}INSERT INTO t VALUES ('param', :v || :w);\n");
    for encoding in ["LATIN1", "SQL_ASCII"] {
        let db = database_in(encoding);
        let run = |program| {
            rows_in(&db, program, &in_text, &["simple"])
                + "\n"
                + &rows_in(&db, program, &as_parameters, &["extended", "prepared"])
        };
        let (ours, theirs) = (run(pgbolt), run(pgbench));
        assert_eq!(ours, theirs, "{encoding}");
        assert_eq!(
            ours, "text|e978ff\nparam|e978ff\nparam|e978ff",
            "{encoding}"
        );
    }
}

/// Both programs' exit status and standard error for one run of `text`
/// with `--debug`, with each run of `receiving` lines made one (pgbench
/// prints one per poll of the socket while it waits, pgbolt one per wait)
/// and without the set-up line (it names the server's directory, whose
/// name holds `pgbolt`).
fn debug_run(text: &str, args: &[&str]) -> ((Option<i32>, String), (Option<i32>, String)) {
    let mut full = vec!["--debug", "-t", "1"];
    full.extend_from_slice(args);
    let ((ours_code, ours), (theirs_code, theirs)) = both_fail(text, &full);
    let keep = |s: String| {
        let mut kept = String::new();
        let mut last = "";
        for l in s.lines().filter(|l| !l.contains(" pghost: ")) {
            if !(l.ends_with(" receiving") && l == last) {
                kept.push_str(l);
                kept.push('\n');
            }
            last = l;
        }
        kept
    };
    ((ours_code, keep(ours)), (theirs_code, keep(theirs)))
}

/// Regression: a letter right after a number or a `$n` parameter opened a
/// special string (`1e'...'` an `E'...'` string with backslash escapes),
/// so a semicolon or a meta command after it was swallowed into the
/// command; psql's lexer, which pgbench uses, reads `1e` as one token
/// ("trailing junk") and the quote as a plain string.
#[test]
fn a_letter_stuck_to_a_number_opens_no_string() {
    let scripts = [
        "select 1e'a\\';select 1;\n",
        "select 1e'a\\';select 1;\n\\set x 1\n",
        "select 1.5e'a\\';select 1;\n",
        "select 1.e'a\\';select 1;\n",
        "select .5e'a\\';select 1;\n",
        "select $1e'a\\';select 1;\n",
        "select 1_0e'a\\';select 1;\n",
        "select 1..e'a\\';select 1;\n",
        "select 0x'a\\';select 1;\n",
    ];
    for text in scripts {
        let (ours, theirs) = debug_run(text, &[]);
        assert_eq!(ours, theirs, "{text:?}");
        assert_eq!(ours.0, Some(2), "{text:?}");
    }
}

/// pgbench 18's lexer takes a vertical tab for whitespace (pgbench 15's
/// did not), so it may separate the parts of a string continued on the
/// next line: here the `E'...'` string goes on and holds the semicolon.
#[test]
fn a_vertical_tab_is_whitespace_as_in_pgbench_18() {
    use pgbolt::expr::vars::VarNames;
    use pgbolt::script::{parse_script, CommandKind};
    let cases: [(&str, &[&str]); 3] = [
        (
            "select E'a'\x0b\n'\\';' as x;\n",
            &["select E'a'\x0b\n'\\';' as x;"],
        ),
        ("\x0b select 1;\x0b\n", &["select 1;"]),
        ("select 1 \x0b-- c\x0b\n;\n", &["select 1 \x0b-- c\x0b\n;"]),
    ];
    for (text, commands) in cases {
        let script = parse_script("v.sql", text, 1, &mut VarNames::new()).expect("parses");
        let got: Vec<&str> = script
            .commands
            .iter()
            .map(|c| match &c.kind {
                CommandKind::Sql(sql) => sql.text.as_str(),
                _ => "(meta)",
            })
            .collect();
        assert_eq!(got, commands, "{text:?}");
    }
}

/// Regressions: a server error or notice holding bytes that are not UTF-8
/// (a `LATIN1` database quoting a value) was dropped: the client aborted
/// with an empty message and the notice went unseen; and a simple query
/// whose text was not UTF-8 (a value `\gset` read substituted into it) got
/// ` at character N` instead of libpq's `LINE 1:` excerpt. pgbench prints
/// the server's bytes, which pgbolt shows as U+FFFD (both are read here
/// with replacement characters).
#[test]
fn server_messages_in_another_encoding_are_shown() {
    let db = database_in("LATIN1");
    let cases: [(&str, &[&str], Option<i32>, &str); 3] = [
        (
            "do $$ begin raise notice 'n: %', chr(233); end $$;\nselect 1;\n",
            &["simple", "extended"],
            Some(0),
            "NOTICE:  n: \u{fffd}\n",
        ),
        (
            "select chr(233)::int;\n",
            &["simple", "extended"],
            Some(2),
            "ERROR:  invalid input syntax for type integer: \"\u{fffd}\"\n",
        ),
        (
            "select chr(233) as v \\gset\nselect ':v', 1 + 'x';\n",
            &["simple"],
            Some(2),
            "\"x\"\nLINE 1: select '\u{fffd}', 1 + 'x';\n                        ^\n",
        ),
    ];
    for (text, modes, code, message) in cases {
        let file = script(text);
        for mode in modes {
            let args = ["-n", "-t", "1", "-M", mode, "-f", file.path.as_str()];
            let (ours, theirs) = (pgbolt(&db, &args), pgbench(&db, &args));
            let lines = |out: &std::process::Output, name: &str| {
                (out.status.code(), stderr(out).replace(name, "PROG"))
            };
            assert_eq!(lines(&ours, "pgbolt"), lines(&theirs, "pgbench"), "{text}");
            assert_eq!(ours.status.code(), code, "{text}");
            assert!(stderr(&ours).contains(message), "{text}: {}", stderr(&ours));
        }
    }
}

/// Regression: `\gset` on a column whose name is not UTF-8 (a `LATIN1`
/// database) took it for an empty name and aborted the client with
/// `gset: invalid variable name: ""`; pgbench stores it under that name
/// (which no UTF-8 script can refer to) and stores the other columns.
#[test]
fn gset_takes_column_names_in_another_encoding() {
    let db = database_in("LATIN1");
    sql(
        &db,
        "do $$ begin execute format('create table colt (%I int, b int)', chr(233)); end $$; \
         insert into colt values (7, 8)",
    );
    let text = "SELECT * FROM colt \\gset\nINSERT INTO t VALUES ('gset', :b);\n";
    let (ours, theirs) = (
        rows_in(&db, pgbolt, text, &["simple", "extended", "prepared"]),
        rows_in(&db, pgbench, text, &["simple", "extended", "prepared"]),
    );
    assert_eq!(ours, theirs);
    assert_eq!(ours, "gset|38\ngset|38\ngset|38");
}

/// Regression: a notification whose payload is not UTF-8 (a `LATIN1`
/// database) was a protocol error that aborted the client; pgbench, which
/// ignores notifications, runs on.
#[test]
fn notifications_in_another_encoding_are_ignored() {
    let db = database_in("LATIN1");
    let text = "LISTEN pgbolt_c;\nSELECT pg_notify('pgbolt_c', chr(233));\n\
                INSERT INTO t VALUES ('after', 'x');\n";
    let (ours, theirs) = (
        rows_in(&db, pgbolt, text, &["simple", "extended", "prepared"]),
        rows_in(&db, pgbench, text, &["simple", "extended", "prepared"]),
    );
    assert_eq!(ours, theirs);
    assert_eq!(ours, "after|78\nafter|78\nafter|78");
}

/// Regression: `--debug` said nothing when a pipeline's synchronisation
/// point came back; pgbench 18 prints `pipeline ending, ongoing syncs: N`
/// there, counting down to 1 at `\endpipeline`.
#[test]
fn debug_shows_the_end_of_each_pipeline() {
    let text = "\\startpipeline\nselect 1;\nselect 2;\n\\endpipeline\nselect 3;\n";
    for mode in ["extended", "prepared"] {
        let (ours, theirs) = debug_run(text, &["-M", mode, "-t", "2"]);
        let ending = "PROG: client 0 pipeline ending, ongoing syncs: 1\n";
        assert_eq!(ours.1.matches(ending).count(), 2, "-M {mode}: {}", ours.1);
        assert_eq!(ours, theirs, "-M {mode}");
    }
    let text = "\\startpipeline\nselect 1;\n\\syncpipeline\nselect 2;\n\\endpipeline\n";
    let (ours, theirs) = debug_run(text, &["-M", "extended"]);
    assert!(
        ours.1.contains("pipeline ending, ongoing syncs: 2\n"),
        "{}",
        ours.1
    );
    assert_eq!(ours, theirs);
}

/// Regression: a statement with more than 255 variables was refused under
/// `-M extended` as its script was read, before a later script's syntax
/// error; pgbench reads every script first and turns variables into
/// parameters afterwards, so it reports the syntax error.
#[test]
fn too_many_parameters_are_found_once_every_script_is_read() {
    let vars: Vec<String> = (0..256).map(|i| format!(":v{i}")).collect();
    let many = script(&format!("select {};\n", vars.join(",")));
    let bad = script("\\set x\n");
    let db = database(None);
    for (first, second, phrase) in [
        (&many, &bad, "syntax error in command \"set\""),
        (&bad, &many, "syntax error in command \"set\""),
        (
            &many,
            &many,
            "statement has too many arguments (maximum is 255)",
        ),
    ] {
        let args = [
            "-n",
            "-t",
            "1",
            "-M",
            "extended",
            "-f",
            &first.path,
            "-f",
            &second.path,
        ];
        let (ours, theirs) = (pgbolt(&db, &args), pgbench(&db, &args));
        let text = |out: &std::process::Output, name: &str| {
            (out.status.code(), stderr(out).replace(name, "PROG"))
        };
        assert_eq!(text(&ours, "pgbolt"), text(&theirs, "pgbench"), "{phrase}");
        assert_eq!(ours.status.code(), Some(1));
        assert!(stderr(&ours).contains(phrase), "{}", stderr(&ours));
    }
}
