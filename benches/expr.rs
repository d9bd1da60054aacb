//! Cost of the tpcb-like script's four `\set` commands, evaluated as the
//! engine evaluates them: parsed once, then evaluated against one client's
//! variables, random state and value stack. Prints nanoseconds per `\set`.
//!
//! Run with `cargo bench --bench expr`.

use std::hint::black_box;
use std::time::Instant;

use pgbolt::expr::vars::{VarNames, Variables};
use pgbolt::expr::{parse, EvalContext, EvalStack, Value};
use pgbolt::random::PrngState;

const SETS: &[(&str, &str)] = &[
    ("aid", "random(1, 100000 * :scale)"),
    ("bid", "random(1, 1 * :scale)"),
    ("tid", "random(1, 10 * :scale)"),
    ("delta", "random(-5000, 5000)"),
];

fn main() {
    let mut names = VarNames::new();
    let scale = names.slot("scale");
    let program: Vec<(usize, _)> = SETS
        .iter()
        .map(|(var, text)| {
            let expr = parse(text, &mut names).expect("tpcb-like expressions parse");
            (names.slot(var), expr)
        })
        .collect();
    let mut vars = Variables::new(&names);
    vars.set(scale, Value::Int(1));
    let mut rng = PrngState::seeded(42);
    let mut stack = EvalStack::new();
    let mut sink = std::io::sink();

    let mut run = |transactions: u64| {
        let start = Instant::now();
        for _ in 0..transactions {
            for (target, expr) in &program {
                let mut cx = EvalContext {
                    vars: &mut vars,
                    random: &mut rng,
                    stack: &mut stack,
                    script_index: 0,
                    command_index: 0,
                    debug_out: &mut sink,
                };
                let value = expr
                    .eval(black_box(&mut cx))
                    .expect("tpcb-like expressions evaluate");
                vars.set(*target, black_box(value));
            }
        }
        start.elapsed()
    };

    run(100_000);
    let transactions = 5_000_000u64;
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let elapsed = run(transactions);
        let per_set = elapsed.as_nanos() as f64 / (transactions * SETS.len() as u64) as f64;
        best = best.min(per_set);
    }
    println!(
        "tpcb-like \\set: {best:.1} ns per \\set (best of 5 runs of {transactions} transactions)"
    );
}
