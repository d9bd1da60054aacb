//! Hostile input never panics: property-based fuzzing of every parser
//! that reads text or bytes from outside (script files, expressions and
//! their evaluation, connection strings and URIs, password and service
//! files, the server's message stream).
//!
//! Each target runs `PGBOLT_FUZZ_CASES` cases (256 by default, so `make
//! test` stays quick; `make fuzz` runs many more in release mode). Inputs
//! mix the grammar's own pieces with arbitrary text, so the cases reach
//! deep states instead of failing at the first character. Inputs that
//! once broke a parser are kept in [`regressions`] and run every time.

use pgbolt::expr::vars::{VarNames, Variables};
use pgbolt::expr::{parse as parse_expr, EvalContext, EvalStack};
use pgbolt::random::PrngState;
use pgbolt::script::parse_script;
use pgwire::backend::Message;
use pgwire::conninfo::{self, Env};
use pgwire::frame::ReadBuf;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

fn cases() -> u32 {
    std::env::var("PGBOLT_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    })
}

/// Text made of `pieces` and arbitrary strings.
fn text_from(pieces: &'static [&'static str], max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            5 => prop::sample::select(pieces).prop_map(str::to_owned),
            1 => any::<String>(),
            1 => any::<u8>().prop_map(|b| char::from(b).to_string()),
        ],
        0..max,
    )
    .prop_map(|p| p.concat())
}

const SCRIPT_PIECES: &[&str] = &[
    "select ",
    "\n",
    ";",
    "\\;",
    "\\",
    "'",
    "\"",
    "$$",
    "$1",
    "/*",
    "*/",
    "--",
    ":x",
    ":'x'",
    ":\"x\"",
    "::",
    "\\set x ",
    "\\if ",
    "\\elif ",
    "\\else",
    "\\endif",
    "\\sleep ",
    " ms",
    " us",
    "\\gset",
    "\\aset",
    "\\shell ",
    "\\setshell v ",
    "\\startpipeline",
    "\\endpipeline",
    "\\syncpipeline",
    "random(1, 10)",
    "1",
    "-",
    "(",
    ")",
    "9223372036854775807",
];

const EXPR_PIECES: &[&str] = &[
    "1",
    "0",
    "-1",
    "9223372036854775807",
    "-9223372036854775808",
    "1.5",
    "1e308",
    "1e-308",
    ".",
    "e",
    "true",
    "false",
    "null",
    ":x",
    ":t0",
    "+",
    "-",
    "*",
    "/",
    "%",
    "<",
    "<=",
    "=",
    "<>",
    "!=",
    ">",
    ">=",
    "<<",
    ">>",
    "&",
    "|",
    "#",
    "~",
    "and",
    "or",
    "not",
    "is",
    "isnull",
    "notnull",
    "case",
    "when",
    "then",
    "else",
    "end",
    "(",
    ")",
    ",",
    " ",
    "abs(",
    "int(",
    "double(",
    "greatest(",
    "least(",
    "sqrt(",
    "ln(",
    "exp(",
    "pow(",
    "mod(",
    "pi()",
    "random(",
    "random_exponential(",
    "random_gaussian(",
    "random_zipfian(",
    "hash(",
    "hash_fnv1a(",
    "hash_murmur2(",
    "permute(",
    "debug(",
];

const CONNINFO_PIECES: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "user",
    "password",
    "dbname",
    "sslmode",
    "service",
    "connect_timeout",
    "target_session_attrs",
    "load_balance_hosts",
    "options",
    "application_name",
    "=",
    " ",
    "'",
    "\\",
    "\\'",
    ",",
    "localhost",
    "127.0.0.1",
    "::1",
    "[::1]",
    "/tmp",
    "5432",
    "65536",
    "-1",
    "require",
    "verify-full",
    "any",
    "read-write",
    "postgresql://",
    "postgres://",
    "@",
    ":",
    "/",
    "?",
    "&",
    "%",
    "%2F",
    "%zz",
    "%00",
    "[",
    "]",
];

const PGPASS_PIECES: &[&str] = &[
    "*",
    ":",
    "\\",
    "\\:",
    "\\\\",
    "\n",
    "\r\n",
    "#",
    "localhost",
    "127.0.0.1",
    "5432",
    "u",
    "db",
    "secret",
    " ",
];

const SERVICE_PIECES: &[&str] = &[
    "[",
    "]",
    "svc",
    "\n",
    "=",
    "host",
    "port",
    "user",
    "dbname",
    "service",
    "#",
    " ",
    "ldap://",
    "5432",
    "localhost",
];

fn parse_any_script(text: &str) {
    let mut vars = VarNames::new();
    if let Err(e) = parse_script("fuzz.sql", text, 1, &mut vars) {
        // A message for the caller to print after the program's prefix.
        let message = e.to_string();
        assert!(
            !message.is_empty() && !message.starts_with("pgbolt"),
            "{message}"
        );
    }
}

fn eval_any_expression(text: &str, seed: u64, value: i64) {
    let mut names = VarNames::new();
    let Ok(expr) = parse_expr(text, &mut names) else {
        return;
    };
    let mut vars = Variables::new(&names);
    for slot in 0..names.len() {
        vars.set(slot, pgbolt::expr::Value::Int(value));
    }
    let mut rng = PrngState::seeded(seed);
    let mut stack = EvalStack::new();
    let _ = expr.eval(&mut EvalContext {
        vars: &mut vars,
        random: &mut rng,
        stack: &mut stack,
        script_index: 0,
        command_index: 0,
        debug_out: &mut std::io::sink(),
    });
}

/// Parses a connection string and resolves it with `pgpass` and `service`
/// as the password and service files.
fn resolve_any(conninfo: &str, pgpass: &str, service: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let pass_path = dir.path().join("pgpass");
    let service_path = dir.path().join("services");
    std::fs::write(&pass_path, pgpass).expect("write");
    std::fs::write(&service_path, service).expect("write");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pass_path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let env = Env::empty("fuzz")
        .with_var("PGPASSFILE", &pass_path.to_string_lossy())
        .with_var("PGSERVICEFILE", &service_path.to_string_lossy());
    if let Ok(options) = conninfo::parse(conninfo) {
        if let Ok(config) = conninfo::resolve(&options, &env) {
            let _ = format!("{config:?}");
        }
    }
}

/// Feeds `bytes` to a read buffer in chunks of the given sizes and parses
/// every frame, walking into the parts the engine reads.
fn frame_any(bytes: &[u8], chunks: &[usize]) {
    let mut buf = ReadBuf::new();
    let mut at = 0;
    let mut sizes = chunks.iter().copied().cycle();
    while at < bytes.len() {
        let spare = buf.spare();
        let n = sizes
            .next()
            .unwrap_or(1)
            .clamp(1, spare.len())
            .min(bytes.len() - at);
        spare[..n].copy_from_slice(&bytes[at..at + n]);
        buf.filled(n);
        at += n;
        loop {
            match buf.next_frame() {
                Ok(Some(frame)) => walk(Message::parse(frame)),
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
}

fn walk(msg: Result<Message<'_>, pgwire::Error>) {
    match msg {
        Ok(Message::DataRow(row)) => row.columns().for_each(drop),
        Ok(Message::RowDescription(desc)) => desc.fields().for_each(drop),
        Ok(Message::ErrorResponse(f) | Message::NoticeResponse(f)) => {
            f.iter().for_each(drop);
            let _ = pgwire::DbError::from_fields(f).map(|e| e.to_string());
        }
        _ => {}
    }
}

/// Backend messages, well-formed or not, with lengths that lie.
fn message() -> impl Strategy<Value = Vec<u8>> {
    let tag = prop::sample::select(b"RKS2C3dcGHWDIEnNAtsTZ1V\0xv".to_vec());
    let body = prop::collection::vec(any::<u8>(), 0..64);
    (
        tag,
        body,
        prop_oneof![3 => Just(None), 1 => any::<u32>().prop_map(Some)],
    )
        .prop_map(|(tag, body, lie)| {
            let mut m = vec![tag];
            let len = lie.unwrap_or(body.len() as u32 + 4);
            m.extend_from_slice(&len.to_be_bytes());
            m.extend_from_slice(&body);
            m
        })
}

#[test]
fn script_parser_never_panics() {
    runner()
        .run(&text_from(SCRIPT_PIECES, 60), |text| {
            parse_any_script(&text);
            Ok(())
        })
        .unwrap();
}

#[test]
fn expression_parser_and_evaluator_never_panic() {
    runner()
        .run(
            &(text_from(EXPR_PIECES, 40), any::<u64>(), any::<i64>()),
            |(text, seed, value)| {
                eval_any_expression(&text, seed, value);
                parse_any_script(&format!("\\set r {text}\n"));
                Ok(())
            },
        )
        .unwrap();
}

#[test]
fn conninfo_pgpass_and_service_parsers_never_panic() {
    runner()
        .run(
            &(
                text_from(CONNINFO_PIECES, 30),
                text_from(PGPASS_PIECES, 30),
                text_from(SERVICE_PIECES, 30),
            ),
            |(conninfo, pgpass, service)| {
                resolve_any(&conninfo, &pgpass, &service);
                resolve_any(&format!("service=svc {conninfo}"), &pgpass, &service);
                Ok(())
            },
        )
        .unwrap();
}

#[test]
fn message_framer_never_panics() {
    let stream = prop::collection::vec(
        prop_oneof![4 => message(), 1 => prop::collection::vec(any::<u8>(), 0..16)],
        0..20,
    )
    .prop_map(|parts| parts.concat());
    let chunks = prop::collection::vec(1usize..64, 1..8);
    runner()
        .run(&(stream, chunks), |(bytes, chunks)| {
            frame_any(&bytes, &chunks);
            Ok(())
        })
        .unwrap();
}

/// Inputs that once made a parser misbehave, and edge cases worth keeping.
#[test]
fn regressions() {
    for text in [
        "\\set x 9223372036854775807 + 1\n",
        "\\sleep 9223372036854775807 s\n",
        "\\",
        "'",
    ] {
        parse_any_script(text);
    }
    for text in [
        "-9223372036854775808 / -1",
        "-9223372036854775808 % -1",
        "1e309",
        "pow(2, 1e308)",
    ] {
        eval_any_expression(text, 1, i64::MIN);
    }
    for conninfo in [
        "postgresql://[",
        "postgresql://%",
        "host='",
        "port=99999999999999999999",
    ] {
        resolve_any(conninfo, "*:*:*:*:\\", "[svc\nhost");
    }
    frame_any(b"D\xff\xff\xff\xff", &[1]);
    frame_any(b"D\0\0\0\x06\xff\xff", &[7]);
    frame_any(b"T\0\0\0\x06\x7f\xff", &[3]);
}
