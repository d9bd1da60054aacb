//! Running the real pgbench and pgbolt's expression library side by side.
//!
//! pgbench runs a script of `\set` commands (`-n -t T -c C -j J
//! --random-seed=K`) against a throwaway server; its `debug()` lines and
//! error messages come from standard error. pgbolt evaluates the same
//! commands with the random states pgbench gives each client for that seed
//! and the variables pgbench predefines (`scale`, `client_id`,
//! `default_seed`, `random_seed`, plus the `-D` ones), and writes the same
//! lines.

use std::io::Write;
use std::process::Output;

use pgbolt::expr::vars::{VarNames, Variables};
use pgbolt::expr::{parse, EvalContext, EvalStack, Expr, Value};
use pgbolt::random::RandomStates;

use crate::common;

/// How pgbench is run.
#[derive(Debug, Clone)]
pub struct Run {
    pub seed: u64,
    pub clients: usize,
    pub threads: usize,
    pub transactions: usize,
    pub defines: Vec<(String, String)>,
}

impl Run {
    pub fn seed(seed: u64) -> Self {
        Run {
            seed,
            clients: 1,
            threads: 1,
            transactions: 1,
            defines: Vec::new(),
        }
    }
}

/// What a run printed that users see: `debug()` lines and error messages
/// (without the `pgbench: error: ` prefix and the client abort line).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Seen {
    pub debug: Vec<String>,
    pub errors: Vec<String>,
}

/// The script: one `\set vN <expr>` per expression.
pub fn script(exprs: &[String]) -> String {
    exprs
        .iter()
        .enumerate()
        .map(|(i, e)| format!("\\set v{i} {e}\n"))
        .collect()
}

pub fn run_pgbench(run: &Run, script_text: &str) -> (Output, Seen) {
    let mut file = tempfile::NamedTempFile::new().expect("temporary script file");
    file.write_all(script_text.as_bytes())
        .expect("script written");
    let mut args = vec![
        "-n".to_owned(),
        "-f".to_owned(),
        file.path().display().to_string(),
        format!("--random-seed={}", run.seed),
        format!("-t{}", run.transactions),
        format!("-c{}", run.clients),
        format!("-j{}", run.threads),
    ];
    for (name, value) in &run.defines {
        args.push(format!("-D{name}={value}"));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = common::Run::new("postgres", &args).pgbench();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let mut seen = Seen::default();
    for line in stderr.lines() {
        if line.starts_with("debug(") {
            seen.debug.push(line.to_owned());
        } else if let Some(msg) = line.strip_prefix("pgbench: error: ") {
            if !msg.starts_with("client ") && !msg.starts_with("Run was aborted") {
                seen.errors.push(msg.to_owned());
            }
        }
    }
    (out, seen)
}

/// Parses every expression, panicking with the offending one if pgbolt
/// rejects it.
pub fn parse_all(exprs: &[String], names: &mut VarNames) -> Vec<Expr> {
    exprs
        .iter()
        .map(|e| parse(e, names).unwrap_or_else(|err| panic!("pgbolt rejects {e:?}: {err}")))
        .collect()
}

/// pgbolt's side of a run.
pub fn run_pgbolt(run: &Run, exprs: &[String]) -> Seen {
    let mut names = VarNames::new();
    let program = parse_all(exprs, &mut names);
    let targets: Vec<usize> = (0..exprs.len())
        .map(|i| names.slot(&format!("v{i}")))
        .collect();
    let defined = |n: &str| run.defines.iter().any(|(d, _)| d == n);
    let states = RandomStates::new(run.seed, run.clients, run.threads, defined("default_seed"));
    let mut seen = Seen::default();
    for client in 0..run.clients {
        let mut vars = Variables::new(&names);
        for (name, value) in &run.defines {
            vars.set_text(names.slot(name), value);
        }
        let builtins = [
            ("scale", Some(1)),
            ("client_id", Some(client as i64)),
            ("default_seed", states.default_seed),
            ("random_seed", Some(states.random_seed)),
        ];
        for (name, value) in builtins {
            if let (false, Some(v)) = (defined(name), value) {
                vars.set(names.slot(name), Value::Int(v));
            }
        }
        let mut rng = states.clients[client];
        let mut stack = EvalStack::new();
        let mut out = Vec::new();
        'transactions: for _ in 0..run.transactions {
            for (i, expr) in program.iter().enumerate() {
                let mut cx = EvalContext {
                    vars: &mut vars,
                    random: &mut rng,
                    stack: &mut stack,
                    script_index: 0,
                    command_index: i,
                    debug_out: &mut out,
                };
                match expr.eval(&mut cx) {
                    Ok(v) => vars.set(targets[i], v),
                    Err(e) => {
                        seen.errors.extend(e.message(&names));
                        break 'transactions;
                    }
                }
            }
        }
        seen.debug
            .extend(String::from_utf8_lossy(&out).lines().map(str::to_owned));
    }
    seen
}

/// The `int N`, `double X`, ... parts of debug lines, sorted.
fn debug_values(text: &str) -> Vec<String> {
    let re = regex::Regex::new(r"(int|double|boolean) \S+|null").expect("valid regex");
    let mut values: Vec<String> = re.find_iter(text).map(|m| m.as_str().to_owned()).collect();
    values.sort();
    values
}

/// Runs both and compares; on mismatch, reports the first differing line
/// with its expression.
pub fn compare(run: &Run, exprs: &[String]) {
    let (out, mut theirs) = run_pgbench(run, &script(exprs));
    let mut ours = run_pgbolt(run, exprs);
    if run.clients > 1 {
        // Clients of different threads write to stderr concurrently and
        // pgbench writes a debug line in two pieces, so compare the values
        // printed, in any order.
        theirs.debug = debug_values(&String::from_utf8_lossy(&out.stderr));
        ours.debug = debug_values(&ours.debug.join("\n"));
    }
    let expected_code = if theirs.errors.is_empty() { 0 } else { 2 };
    assert_eq!(
        out.status.code(),
        Some(expected_code),
        "pgbench exit status; stderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (i, (t, o)) in theirs.debug.iter().zip(&ours.debug).enumerate() {
        let expr = exprs
            .get(i % exprs.len().max(1))
            .map(String::as_str)
            .unwrap_or("");
        assert_eq!(o, t, "line {i} (expression {expr:?}), run {run:?}");
    }
    assert_eq!(
        ours.debug.len(),
        theirs.debug.len(),
        "number of debug lines, run {run:?}"
    );
    assert_eq!(ours.errors, theirs.errors, "errors, run {run:?}");
}
