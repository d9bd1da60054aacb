//! No input makes the expression parser or evaluator panic: arbitrary text,
//! and random well-formed expressions built from the language's pieces
//! (evaluated with variables holding arbitrary values and texts).

use pgbolt::expr::vars::{VarNames, Variables};
use pgbolt::expr::{parse, EvalContext, EvalStack, Value};
use pgbolt::random::PrngState;
use proptest::prelude::*;

fn evaluate(text: &str, values: &[Value], texts: &[String], seed: u64) {
    let mut names = VarNames::new();
    let Ok(expr) = parse(text, &mut names) else {
        return;
    };
    let mut vars = Variables::new(&names);
    for (slot, v) in values.iter().enumerate().take(names.len()) {
        vars.set(slot, *v);
    }
    for (i, t) in texts.iter().enumerate() {
        if let Some(slot) = names.lookup(&format!("t{i}")) {
            vars.set_text(slot, t);
        }
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

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::Int),
        any::<f64>().prop_map(Value::Double),
        prop_oneof![
            Just(0i64),
            Just(-1),
            Just(1),
            Just(i64::MIN),
            Just(i64::MAX)
        ]
        .prop_map(Value::Int),
    ]
}

fn leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|i| i.to_string()),
        any::<f64>().prop_map(|d| format!("{d:e}")),
        prop_oneof![
            Just("0"),
            Just("1"),
            Just("-1"),
            Just("9223372036854775807"),
            Just("-9223372036854775808"),
            Just("0.0"),
            Just("1e308"),
            Just("null"),
            Just("true"),
            Just("false"),
            Just("pi()"),
            Just("sqrt(-1)"),
            Just("(1e308 * 10)"),
            Just(":v0"),
            Just(":v1"),
            Just(":t0"),
            Just(":t1"),
            Just(":unset"),
        ]
        .prop_map(str::to_owned),
    ]
}

const FUNCTIONS: &[&str] = &[
    "abs",
    "debug",
    "double",
    "exp",
    "greatest",
    "hash",
    "hash_fnv1a",
    "hash_murmur2",
    "int",
    "least",
    "ln",
    "mod",
    "permute",
    "pow",
    "power",
    "random",
    "random_exponential",
    "random_gaussian",
    "random_zipfian",
    "sqrt",
];

const BINARY: &[&str] = &[
    "+", "-", "*", "/", "%", "=", "<>", "!=", "<", "<=", ">", ">=", "|", "#", "&", "<<", ">>",
    "and", "or",
];

fn expression() -> impl Strategy<Value = String> {
    leaf().prop_recursive(6, 64, 4, |inner| {
        prop_oneof![
            (inner.clone(), prop::sample::select(BINARY), inner.clone())
                .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            (
                prop::sample::select(&["-", "+", "~", "not "][..]),
                inner.clone()
            )
                .prop_map(|(op, a)| format!("{op}({a})")),
            (
                prop::sample::select(&[" is null", " is not true", " isnull", " notnull"][..]),
                inner.clone()
            )
                .prop_map(|(op, a)| format!("({a}){op}")),
            (
                prop::sample::select(FUNCTIONS),
                prop::collection::vec(inner.clone(), 0..4)
            )
                .prop_map(|(f, args)| format!("{f}({})", args.join(", "))),
            (inner.clone(), inner.clone(), inner)
                .prop_map(|(c, t, e)| format!("case when {c} then {t} else {e} end")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_text_never_panics(text in ".{0,80}", seed in any::<u64>()) {
        evaluate(&text, &[], &[], seed);
    }

    #[test]
    fn arbitrary_bytes_of_the_language_never_panic(
        text in "[0-9a-z:.+*/%<>=!|#&~(),' \\\\\n-]{0,60}",
    ) {
        evaluate(&text, &[Value::Int(1)], &[], 1);
    }

    #[test]
    fn generated_expressions_never_panic(
        text in expression(),
        values in prop::collection::vec(value(), 0..4),
        texts in prop::collection::vec(".{0,12}", 0..3),
        seed in any::<u64>(),
    ) {
        evaluate(&text, &values, &texts, seed);
    }
}
