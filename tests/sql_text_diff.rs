//! The SQL commands of custom scripts as the server receives them, with the
//! real pgbench as the oracle: what variables are replaced with in each
//! query mode, what ends up in the database, and what both programs print.

mod engine_support;

use engine_support::*;

/// A fresh database in `encoding` (collation C) with table
/// `t (m text, v text)`.
fn database_in(encoding: &str) -> String {
    let name = database(None);
    let latin = format!("{name}_{}", encoding.to_lowercase().replace('_', ""));
    server()
        .psql(&format!(
            "CREATE DATABASE {latin} ENCODING '{encoding}' LOCALE 'C' TEMPLATE template0"
        ))
        .expect("create database");
    sql(&latin, "create table t (m text, v text)");
    latin
}

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
