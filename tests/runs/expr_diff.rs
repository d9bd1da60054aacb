//! Differential suite: pgbolt's expressions against the real pgbench.
//!
//! Each test runs pgbench (the machine's PostgreSQL 15 `pgbench`) on a
//! throwaway server with a script of `\set` commands whose values are
//! printed by `debug()`, and compares what it prints on standard error
//! (debug lines, error messages, syntax error carets) with what pgbolt's
//! expression library produces for the same script, seed and variables.

#[path = "../expr_support/cases.rs"]
mod cases;
#[path = "../expr_support/harness.rs"]
mod harness;

use crate::common;
use harness::{compare, Run};
use pgbolt::expr::parse;
use pgbolt::expr::vars::VarNames;

fn debug_all(exprs: &[&str]) -> Vec<String> {
    exprs.iter().map(|e| format!("debug({e})")).collect()
}

#[test]
fn values_operators_and_functions_match_pgbench() {
    assert!(cases::VALUES.len() >= 300, "{} cases", cases::VALUES.len());
    compare(&Run::seed(1), &debug_all(cases::VALUES));
}

#[test]
fn evaluation_errors_match_pgbench() {
    for expr in cases::ERRORS {
        let exprs = vec![
            "debug(1)".to_owned(),
            format!("debug({expr})"),
            "debug(2)".to_owned(),
        ];
        compare(&Run::seed(3), &exprs);
    }
}

#[test]
fn defined_variables_convert_as_in_pgbench() {
    let mut run = Run::seed(4);
    run.defines = cases::DEFINES
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    compare(&run, &debug_all(cases::DEFINED_VALUES));
}

#[test]
fn malformed_defined_variables_fail_as_in_pgbench() {
    for (name, value) in cases::BAD_DEFINES {
        let mut run = Run::seed(5);
        run.defines = vec![(name.to_string(), value.to_string())];
        compare(&run, &debug_all(&["1", &format!(":{name}"), "2"]));
    }
}

/// The random functions over their parameters, for many seeds.
fn random_exprs() -> Vec<String> {
    let mut exprs = Vec::new();
    for (min, max) in [
        (1i64, 10i64),
        (-5000, 5000),
        (1, 100000),
        (0, 1),
        (7, 7),
        (0, 4611686018427387904),
    ] {
        exprs.push(format!("random({min}, {max})"));
        exprs.push(format!("random({min}, {max})"));
    }
    for param in ["2.0", "2.5", "5", "10", "100.5"] {
        exprs.push(format!("random_gaussian(1, 100, {param})"));
        exprs.push(format!("random_gaussian(-1000, 1000000, {param})"));
    }
    for param in ["0.001", "0.1", "1", "5", "50"] {
        exprs.push(format!("random_exponential(1, 100, {param})"));
        exprs.push(format!("random_exponential(-10, 1000000, {param})"));
    }
    for param in ["1.001", "1.01", "1.5", "2", "3.7", "10", "1000"] {
        exprs.push(format!("random_zipfian(1, 100, {param})"));
        exprs.push(format!("random_zipfian(1000, 1000000, {param})"));
    }
    exprs.push("random_zipfian(5, 5, 1.5)".to_owned());
    exprs.push("hash(:client_id)".to_owned());
    exprs.push("hash_fnv1a(:random_seed)".to_owned());
    exprs.push("permute(3, 1000)".to_owned());
    debug_all(&exprs.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn random_functions_match_pgbench_over_many_seeds() {
    let exprs = random_exprs();
    let seeds = [
        0u64,
        1,
        2,
        3,
        7,
        42,
        1000,
        5432,
        65535,
        123456789,
        4294967296,
        9223372036854775807,
        9223372036854775808,
        18446744073709551615,
        271828182845,
        314159265358979,
    ];
    for seed in seeds {
        let mut run = Run::seed(seed);
        run.transactions = 2;
        compare(&run, &exprs);
    }
}

#[test]
fn permute_matches_pgbench_over_many_sizes() {
    let mut exprs = Vec::new();
    for size in 1..=130i64 {
        exprs.push(format!("permute({}, {size}, {})", size / 3, size * 7919));
        exprs.push(format!("permute({}, {size})", size - 1));
    }
    for bits in 2..63 {
        let p = 1i64 << bits;
        for size in [p - 1, p, p + 1] {
            exprs.push(format!("permute({}, {size}, {bits})", size / 2 + 1));
        }
    }
    let exprs: Vec<&str> = exprs.iter().map(String::as_str).collect();
    compare(&Run::seed(6), &debug_all(&exprs));
}

#[test]
fn per_client_states_match_pgbench_with_several_clients_and_threads() {
    let exprs = debug_all(&[
        ":client_id * 10000000000 + random(1, 1000000)",
        ":client_id * 10000000000 + random_gaussian(1, 1000000, 3)",
        ":client_id * 10000000000 + random(1, 1000000)",
        "hash(:client_id)",
    ]);
    for (seed, clients, threads) in [(11, 3, 1), (12, 4, 2), (13, 5, 3), (14, 2, 8)] {
        let mut run = Run::seed(seed);
        run.clients = clients;
        run.threads = threads;
        run.transactions = 3;
        compare(&run, &exprs);
    }
    let mut run = Run::seed(15);
    run.clients = 2;
    run.defines = vec![("default_seed".to_owned(), "99".to_owned())];
    compare(&run, &exprs);
}

/// Expressions pgbench rejects when it reads the script.
const SYNTAX_ERRORS: &[&str] = &[
    "1 +",
    "(1",
    "1)",
    "1 2",
    "abc",
    "abc(1)",
    "foo + 1",
    "random(1)",
    "random(1, 2, 3)",
    "pi(1)",
    "least()",
    "greatest()",
    "hash()",
    "hash(1, 2, 3)",
    "permute(1)",
    "permute(1, 2, 3, 4)",
    "abs()",
    "1 $ 2",
    "1 @",
    ":",
    "1 < 2 < 3",
    "1 = 2 <> 3",
    "1 <= 2 >= 3",
    "case when 1 then 2",
    "case 1 when 1 then 2 end",
    "case else 1 end",
    "case when 1 then 2 else 3",
    "1 is 2",
    "1 is not 2",
    "1 ~ 2",
    "9223372036854775808",
    "-(9223372036854775808)",
    "99999999999999999999",
    "1e400",
    "1e-400",
    "1.5e-320",
    "1..2",
    "1.2.3",
    "f(",
    "random(1,)",
    "random(,1)",
    "1 +\t",
    "((((1)))",
    "'a'",
    "\"a\"",
    "1 == 2",
    "true is maybe",
    "a.b",
    "hash(1) x",
    "1 isnull 2",
    "not",
    "- ",
    "1e",
    "case when true then 1 end end",
    "1 'abc' 2",
    "1 \"a'b\" 2",
    "1 'a''b' 2",
    "1 'a\\'b' 2",
    "1 '' 2",
    "1 'ab",
    "1 `a` 2",
    "f(,)",
    "random(,,1)",
    "random(, 1, 2, 3)",
    "1 \\x",
    "1 $a",
    "1 ;",
    "1 ! 2",
    "1 2 $",
    "abc .",
    "abc 1",
    "foo(1) $",
    "random(1).",
    "(1 $",
    "1 {a} 2",
    "1 !! 2",
    "1 $$ab$$ 2",
    "1 + 99999999999999999999",
    "abc 1e999",
    "1 < 2 = true",
    "1 :: 2",
];

#[test]
fn syntax_errors_match_pgbench_message_and_caret() {
    let dir = tempfile::tempdir().expect("temporary directory");
    for expr in SYNTAX_ERRORS {
        let path = dir.path().join("s.sql");
        let line = format!("\\set x {expr}");
        std::fs::write(&path, format!("{line}\n")).expect("script written");
        let path_arg = path.display().to_string();
        let out = common::Run::new("postgres", &["-n", "-t1", "-f", &path_arg]).pgbench();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{expr:?}: {stderr}");
        let lines: Vec<&str> = stderr.lines().collect();
        let prefix = format!("pgbench: error: {}:1: ", path.display());
        let message = lines[0]
            .strip_prefix(&prefix)
            .and_then(|m| m.strip_suffix(" in command \"set\""))
            .unwrap_or_else(|| panic!("{expr:?}: unexpected first line {:?}", lines[0]));
        let caret = lines[2].find('^').expect("caret line");

        let err = parse(expr, &mut VarNames::new()).expect_err(expr);
        assert_eq!(err.to_string(), message, "{expr:?}");
        assert_eq!(err.column + "\\set x ".len(), caret, "caret of {expr:?}");
    }
}

/// pgbench's weighted choice of the next script (`chooseScript`).
fn choose_script(rng: &mut pgbolt::random::PrngState, weights: &[i64]) -> usize {
    let total: i64 = weights.iter().sum();
    let mut w = rng.uniform(0, total - 1);
    let mut i = 0;
    loop {
        w -= weights[i];
        i += 1;
        if w < 0 {
            return i - 1;
        }
    }
}

/// The per-thread state that picks scripts is drawn after the clients'
/// states and `default_seed`: the sequence of scripts pgbench runs shows it.
#[test]
fn script_choice_state_matches_pgbench() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let weights = [1i64, 3, 2];
    let mut files = Vec::new();
    for i in 0..weights.len() {
        let path = dir.path().join(format!("s{i}.sql"));
        std::fs::write(&path, "\\set x debug(1)\n").expect("script written");
        files.push(path);
    }
    for (seed, clients, defined_seed) in [(21u64, 1usize, false), (22, 3, false), (23, 2, true)] {
        let transactions = 30;
        let mut cmd = common::Run::new("postgres", &["-n", "-j1"]).pgbench_command();
        cmd.arg(format!("-c{clients}"))
            .arg(format!("-t{transactions}"))
            .arg(format!("--random-seed={seed}"));
        if defined_seed {
            cmd.arg("-Ddefault_seed=5");
        }
        for (path, w) in files.iter().zip(weights) {
            cmd.arg("-f").arg(format!("{}@{w}", path.display()));
        }
        let out = cmd.output().expect("pgbench runs");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let theirs: Vec<usize> = String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter_map(|l| l.strip_prefix("debug(script="))
            .map(|l| {
                l[..l.find(',').expect("comma")]
                    .parse()
                    .expect("script number")
            })
            .collect();
        let states = pgbolt::random::RandomStates::new(seed, clients, 1, defined_seed);
        let mut choose = states.threads[0].choose;
        let ours: Vec<usize> = (0..clients * transactions)
            .map(|_| choose_script(&mut choose, &weights))
            .collect();
        assert_eq!(ours, theirs, "seed {seed}, {clients} clients");
    }
}
