//! Comparisons of synthetic sweeps whose true changes are known.

use super::*;
use crate::compare::tests::{latencies, options, run, wobbly};
use crate::compare::Outcome;
use crate::config::study::Dimension;
use crate::model::run::RunResult;
use crate::model::sweep::summarize;
use crate::model::sweep::{SweepInfo, SweepResult, KIND};

/// A step of `value` clients, repeat `repeat`, at about `tps` with
/// latencies scaled by `scale`.
pub(crate) fn step(value: u32, repeat: u32, tps: f64, scale: i64) -> StepResult {
    let mut result = run(&wobbly(tps, 20), &latencies(scale));
    result.options.clients = value;
    StepResult {
        value: f64::from(value),
        repeat,
        result,
    }
}

/// A clients sweep of `steps`, `repeat` runs each.
pub(crate) fn sweep(steps: Vec<StepResult>, repeat: u32) -> SweepResult {
    let summary = summarize(Dimension::Clients, &steps, &[]);
    SweepResult {
        schema_version: crate::model::run::SCHEMA_VERSION,
        kind: KIND.to_owned(),
        tool: "pgbolt".to_owned(),
        tool_version: "test".to_owned(),
        sweep: SweepInfo {
            dimension: "clients".to_owned(),
            auto: false,
            warmup_s: 0,
            repeat,
            order: "alternate".to_owned(),
            reset: "vacuum".to_owned(),
            slo: Vec::new(),
            stopped: None,
        },
        steps,
        summary,
    }
}

/// Clients 1, 2, 4, 8 along a USL curve times `factor`, latencies scaled
/// by `scale`, one run per value.
pub(crate) fn usl_sweep(factor: f64, scale: i64) -> SweepResult {
    let curve = [(1, 1000.0), (2, 1800.0), (4, 2900.0), (8, 3300.0)];
    sweep(
        curve
            .iter()
            .map(|&(c, t)| step(c, 1, t * factor, scale))
            .collect(),
        1,
    )
}

pub(crate) fn compared(a: &SweepResult, b: &SweepResult) -> SweepComparison {
    compare_sweeps(
        a,
        b,
        ["a.json", "b.json"],
        &options(&[Metric::Tps, Metric::P99]),
    )
    .expect("comparable")
}

fn tps(s: &StepComparison) -> &MetricChange {
    &s.metrics[0]
}

#[test]
fn a_sweep_against_itself_is_no_significant_change_at_every_step() {
    let a = usl_sweep(1.0, 1);
    let c = compared(&a, &a);
    assert_eq!(c.steps.len(), 4);
    for s in &c.steps {
        assert_eq!(s.verdict, Verdict::NoSignificantChange, "{s:?}");
        let e = tps(s).change.expect("interval");
        assert!(e.low <= 0.0 && e.high >= 0.0, "{e:?}");
    }
    assert_eq!(c.verdict, Verdict::NoSignificantChange);
    assert!(c.differences.is_empty() && c.only_in_baseline.is_empty());
    assert_eq!(c.baseline.fit, c.candidate.fit);
}

#[test]
fn half_the_throughput_at_every_step_regresses_every_step() {
    let c = compared(&usl_sweep(1.0, 1), &usl_sweep(0.5, 2));
    for s in &c.steps {
        assert_eq!(s.verdict, Verdict::Regressed, "{s:?}");
        let e = tps(s).change.expect("interval");
        assert!(e.low <= -0.5 && e.high >= -0.5, "{e:?}");
        assert!(tps(s).method.starts_with("Welch t over batch means"));
    }
    assert_eq!(c.verdict, Verdict::Regressed);
    let lambda = |s: &SweepSide| s.fit.as_ref().expect("fit").lambda;
    assert!((lambda(&c.candidate) / lambda(&c.baseline) - 0.5).abs() < 0.01);
}

#[test]
fn a_regression_at_one_step_is_a_regression_whatever_the_others_did() {
    let a = sweep(vec![step(1, 1, 1000.0, 1), step(2, 1, 1800.0, 1)], 1);
    let b = sweep(vec![step(1, 1, 1300.0, 1), step(2, 1, 1500.0, 1)], 1);
    let c = compare_sweeps(&a, &b, ["a", "b"], &options(&[Metric::Tps])).expect("comparable");
    let verdicts: Vec<Verdict> = c.steps.iter().map(|s| s.verdict).collect();
    assert_eq!(verdicts, [Verdict::Improved, Verdict::Regressed]);
    assert_eq!(c.verdict, Verdict::Regressed);
}

/// Repeats whose level differs from run to run by far more than the two
/// sweeps differ: batch means within each run would call the change
/// significant, Welch over the repeats sees the spread between runs.
#[test]
fn repeats_on_both_sides_are_the_units_of_welchs_interval() {
    let levels = [1000.0, 1150.0, 900.0];
    let repeated = |shift: f64| {
        sweep(
            levels
                .iter()
                .enumerate()
                .map(|(i, l)| step(4, i as u32 + 1, l * shift, 1))
                .collect(),
            3,
        )
    };
    let (a, b) = (repeated(1.0), repeated(1.05));
    let c = compared(&a, &b);
    let s = &c.steps[0];
    assert_eq!((s.baseline_runs, s.candidate_runs), (3, 3));
    assert_eq!(tps(s).method, "Welch t over repeats: 3 and 3 runs");
    let e = tps(s).change.expect("interval");
    assert!((e.value - 0.05).abs() < 1e-9 && e.low < 0.0, "{e:?}");
    assert_eq!(tps(s).outcome, Outcome::NoSignificantChange);
    assert!(s.metrics[3]
        .method
        .ends_with("Welch t over the percentiles of 3 and 3 repeats"));

    // Repeated on one side only: the repeats' spread still counts.
    let one = sweep(vec![step(4, 1, 1000.0, 1)], 1);
    let c = compared(&one, &b);
    let t = tps(&c.steps[0]);
    assert_eq!(
        t.method,
        "Welch t over the baseline's batch means (10 batches of 2 s) and the candidate's 3 repeats"
    );
    assert_eq!(t.outcome, Outcome::NoSignificantChange, "{t:?}");
    assert!(c.steps[0].metrics[3]
        .method
        .ends_with("the baseline's 10 batches of intervals and the candidate's 3 repeats"));
}

#[test]
fn steps_on_one_side_only_are_listed_not_compared() {
    let a = sweep(vec![step(1, 1, 1000.0, 1), step(2, 1, 1800.0, 1)], 1);
    let b = sweep(vec![step(2, 1, 1800.0, 1), step(4, 1, 2900.0, 1)], 1);
    let c = compared(&a, &b);
    assert_eq!(c.steps.len(), 1);
    assert_eq!(c.steps[0].step, StepKey { value: 2.0 });
    assert_eq!(c.only_in_baseline, [StepKey { value: 1.0 }]);
    assert_eq!(c.only_in_candidate, [StepKey { value: 4.0 }]);
    assert_eq!(c.differences[0].what, "swept values");
    assert_eq!(
        (
            c.differences[0].baseline.as_str(),
            c.differences[0].candidate.as_str()
        ),
        ("1, 2", "2, 4")
    );

    let c = compared(&a, &sweep(vec![step(8, 1, 3000.0, 1)], 1));
    assert!(c.steps.is_empty());
    assert_eq!(c.verdict, Verdict::Undetermined);
    let c = compared(&a, &sweep(Vec::new(), 1));
    assert_eq!(c.verdict, Verdict::Undetermined);
}

#[test]
fn sweeps_of_different_options_are_refused() {
    let a = usl_sweep(1.0, 1);
    let mut b = a.clone();
    b.sweep.dimension = "threads".to_owned();
    let err = compare_sweeps(&a, &b, ["a", "b"], &options(&[Metric::Tps])).expect_err("refused");
    assert_eq!(
        err,
        CompareError::DifferentDimensions(["clients".into(), "threads".into()])
    );
    assert!(err.to_string().contains("clients against threads"), "{err}");
}

#[test]
fn different_scripts_are_refused_unless_allowed_and_run_differences_are_listed_once() {
    let a = usl_sweep(1.0, 1);
    let mut b = a.clone();
    b.sweep.warmup_s = 5;
    for s in &mut b.steps {
        s.result.options.rate = Some(50.0);
        s.result.options.warmup_s = 5;
    }
    let c = compared(&a, &b);
    let listed: Vec<&str> = c.differences.iter().map(|d| d.what.as_str()).collect();
    assert_eq!(listed, ["warm-up", "rate"]);
    for s in &mut b.steps {
        s.result.options.scripts[0].sha256 = Some("cd".repeat(32));
    }
    let err = compare_sweeps(&a, &b, ["a", "b"], &options(&[Metric::Tps])).expect_err("refused");
    assert!(matches!(err, CompareError::DifferentScripts(_)), "{err}");
}

fn single(clients: u32) -> RunResult {
    let mut r = run(&wobbly(1000.0, 20), &latencies(1));
    r.options.clients = clients;
    r
}

#[test]
fn a_single_run_meets_the_step_of_its_clients() {
    let s = sweep(
        vec![
            step(2, 1, 1800.0, 1),
            step(4, 1, 2900.0, 1),
            step(4, 2, 2950.0, 1),
        ],
        2,
    );
    let found = find_step(&s, &single(4)).expect("a step of 4 clients");
    assert_eq!((found.key.value, found.runs.len()), (4.0, 2));
    let err = find_step(&s, &single(3)).expect_err("no step of 3 clients");
    assert_eq!(
        err.to_string().lines().next(),
        Some("the run's clients (3) matches no step of the sweep (its steps: 2, 4)")
    );
    let mut rate = s.clone();
    rate.sweep.dimension = "rate".to_owned();
    let err = find_step(&rate, &single(4)).expect_err("no rate");
    assert!(err.to_string().starts_with("the run has no rate"), "{err}");
    let empty = sweep(Vec::new(), 1);
    let err = find_step(&empty, &single(4)).expect_err("no step at all");
    assert!(
        err.to_string().contains("(it has no measured step)"),
        "{err}"
    );
}
