//! Hostile result files never panic `--render`, `--compare` or `--merge`:
//! real results (a run, a sweep, two generators of one run, in `seeds/`)
//! are mutated, field by field (extreme numbers, wrong types, missing
//! keys, arrays cut short or grown) and byte by byte (cut, spliced), and
//! fed to the functions those modes call on a file's text
//! ([`pgbolt::app::render_page`], [`pgbolt::app::compare_texts`],
//! [`pgbolt::app::merge_texts`], then the merged result's JSON and page).
//! An error is fine; a panic fails. `PGBOLT_FUZZ_CASES` cases, as the
//! other fuzz targets.

use pgbolt::config::{Compare, Mode};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;

const SEEDS: [&str; 4] = [
    include_str!("seeds/run.json"),
    include_str!("seeds/sweep.json"),
    include_str!("seeds/generator0.json"),
    include_str!("seeds/generator1.json"),
];

fn runner() -> TestRunner {
    let cases = std::env::var("PGBOLT_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

/// What one mutation puts at a node.
#[derive(Clone, Debug)]
enum Change {
    Set(Value),
    Remove,
    Duplicate,
    Truncate,
}

fn values() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec![
            Value::from(0),
            Value::from(1),
            Value::from(-1),
            Value::from(7),
            Value::from(u32::MAX),
            Value::from(u64::MAX),
            Value::from(i64::MIN),
            Value::from(i64::MAX),
            Value::from(1u64 << 53),
            Value::from(1e308),
            Value::from(-1e308),
            Value::from(5e-324),
            Value::from(0.5),
            Value::Null,
            Value::Bool(true),
            Value::from(""),
            Value::from("run"),
            Value::from("sweep"),
            Value::from("targets"),
            Value::from("HISTv2"),
            Value::Array(Vec::new()),
            Value::Object(serde_json::Map::new()),
        ]),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        any::<String>().prop_map(Value::from),
    ]
}

fn changes() -> impl Strategy<Value = Vec<(usize, Change)>> {
    prop::collection::vec(
        (
            any::<usize>(),
            prop_oneof![
                6 => values().prop_map(Change::Set),
                1 => Just(Change::Remove),
                1 => Just(Change::Duplicate),
                1 => Just(Change::Truncate),
            ],
        ),
        1..6,
    )
}

/// The JSON pointers of every node of `value`.
fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let key = key.replace('~', "~0").replace('/', "~1");
                pointers(child, format!("{at}/{key}"), out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                pointers(child, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

fn apply(value: &mut Value, pick: usize, change: &Change) {
    let mut all = Vec::new();
    pointers(value, String::new(), &mut all);
    let pointer = &all[pick % all.len()];
    let Some(node) = value.pointer_mut(pointer) else {
        return;
    };
    match change {
        Change::Set(new) => *node = new.clone(),
        Change::Duplicate => {
            if let Value::Array(items) = node {
                if let Some(first) = items.first().cloned() {
                    items.push(first);
                }
            }
        }
        Change::Truncate => match node {
            Value::Array(items) => items.truncate(items.len() / 2),
            Value::String(text) => {
                let mut cut = text.len() / 2;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.truncate(cut);
            }
            _ => {}
        },
        Change::Remove => {
            let (parent, key) = pointer.rsplit_once('/').unwrap_or(("", ""));
            match value.pointer_mut(parent) {
                Some(Value::Object(map)) => {
                    map.remove(&key.replace("~1", "/").replace("~0", "~"));
                }
                Some(Value::Array(items)) => {
                    if let Ok(i) = key.parse::<usize>() {
                        if i < items.len() {
                            items.remove(i);
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

/// A seed with its fields changed, then perhaps cut or spliced as text.
fn mutated() -> impl Strategy<Value = (usize, String)> {
    (
        0..SEEDS.len(),
        changes(),
        prop::option::weighted(0.2, (any::<usize>(), any::<String>())),
    )
        .prop_map(|(seed, changes, splice)| {
            let mut value: Value = serde_json::from_str(SEEDS[seed]).expect("seed JSON");
            for (pick, change) in &changes {
                apply(&mut value, *pick, change);
            }
            let mut text = value.to_string();
            if let Some((at, inserted)) = splice {
                let mut at = at % (text.len() + 1);
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                let mut cut = at + (text.len() - at) / 2;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.truncate(cut);
                text.insert_str(at, &inserted);
            }
            (seed, text)
        })
}

fn compare_config() -> Compare {
    let env = pgbolt::cli::Environment::from_process();
    let args = [
        "--compare",
        "a.json",
        "b.json",
        "--html=c.html",
        "--json=c.json",
    ];
    match pgbolt::cli::parse(args.iter().map(std::ffi::OsString::from), &env)
        .expect("a comparison's options")
        .mode
    {
        Mode::Compare(c) => c,
        other => panic!("not a comparison: {other:?}"),
    }
}

#[test]
fn mutated_result_files_never_panic_render_compare_or_merge() {
    let compare = compare_config();
    runner()
        .run(&mutated(), |(seed, text)| {
            let _ = pgbolt::app::render_page(&text, "mutated.json");
            let other = SEEDS[(seed + 1) % SEEDS.len()];
            let _ = pgbolt::app::compare_texts(&compare, [&text, other]);
            let _ = pgbolt::app::compare_texts(&compare, [SEEDS[seed], &text]);
            let generators = [
                ("mutated.json".to_owned(), text.clone()),
                ("generator1.json".to_owned(), SEEDS[3].to_owned()),
            ];
            for allow_partial in [false, true] {
                if let Ok((_, merged)) = pgbolt::app::merge_texts(&generators, allow_partial) {
                    let _ = pgbolt::report::to_json(&merged);
                    let _ = pgbolt::report::render_html(&merged, 0);
                }
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn the_seeds_are_read_compared_and_merged() {
    let compare = compare_config();
    for seed in &SEEDS[..3] {
        pgbolt::app::render_page(seed, "seed.json").expect("render");
    }
    pgbolt::app::compare_texts(&compare, [SEEDS[0], SEEDS[0]]).expect("compare runs");
    pgbolt::app::compare_texts(&compare, [SEEDS[1], SEEDS[1]]).expect("compare sweeps");
    let generators = [
        ("generator0.json".to_owned(), SEEDS[2].to_owned()),
        ("generator1.json".to_owned(), SEEDS[3].to_owned()),
    ];
    pgbolt::app::merge_texts(&generators, false).expect("merge");
}

/// Regression: a sweep whose `summary.best` pointed past its points made
/// the page index out of bounds.
#[test]
fn a_sweep_answer_past_its_points_is_an_error() {
    let mut sweep: Value = serde_json::from_str(SEEDS[1]).expect("seed JSON");
    sweep["summary"]["best"] = 7.into();
    let err = pgbolt::app::render_page(&sweep.to_string(), "sweep.json").unwrap_err();
    assert!(err.to_string().contains("summary.best is 7"), "{err}");
}

/// Regression: a run whose timings added up past `i64::MAX` overflowed
/// the page's time axis.
#[test]
fn timings_past_any_possible_run_are_an_error() {
    let mut run: Value = serde_json::from_str(SEEDS[0]).expect("seed JSON");
    run["timings"]["bench_duration_us"] = i64::MAX.into();
    let err = pgbolt::app::render_page(&run.to_string(), "run.json").unwrap_err();
    assert!(err.to_string().contains("timings."), "{err}");
    run["timings"]["bench_duration_us"] = (-1).into();
    let err = pgbolt::app::render_page(&run.to_string(), "run.json").unwrap_err();
    assert!(
        err.to_string()
            .contains("field timings.bench_duration_us is -1: it must be from 0"),
        "{err}"
    );
}

/// The JSON that the comparison pages of the run seed with itself and of
/// the sweep seed with itself embed.
fn comparison_pages() -> Vec<Value> {
    let compare = compare_config();
    [SEEDS[0], SEEDS[1]]
        .iter()
        .map(|seed| {
            let [_, _, page] =
                pgbolt::app::compare_texts(&compare, [seed, seed]).expect("compared");
            let json = pgbolt::report::html::embedded_json(&page).expect("embedded JSON");
            serde_json::from_str(json).expect("JSON")
        })
        .collect()
}

/// A comparison's page (its comparison and both results embedded) with
/// fields changed never panics `--render`, which draws such pages again.
#[test]
fn mutated_comparison_pages_never_panic_render() {
    let pages = comparison_pages();
    runner()
        .run(&(0..pages.len(), changes()), |(page, changes)| {
            let mut value = pages[page].clone();
            for (pick, change) in &changes {
                apply(&mut value, *pick, change);
            }
            let text = format!(
                "<!DOCTYPE html><script type=\"application/json\" id=\"pgbolt-result\">{value}</script>"
            );
            let _ = pgbolt::app::render_page(&text, "mutated.html");
            Ok(())
        })
        .unwrap();
}
