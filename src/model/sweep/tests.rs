use super::*;
use crate::model::run::{Counts, Distribution, Series, Timings};
use crate::model::run::{RunLimit, RunOptions};
use crate::stats::{Counters, SimpleStats};

/// A run of `clients` at `tps` whose transactions all took `latency_us`.
fn run(clients: u32, tps: f64, latency_us: i64, failed: u64) -> RunResult {
    let mut h = LatencyHistogram::new();
    let mut stats = SimpleStats::default();
    for _ in 0..100 {
        h.record(latency_us);
        stats.add(latency_us);
    }
    let distribution = Distribution::new(stats, &h).unwrap();
    let counters = Counters {
        committed: 100,
        ..Counters::default()
    };
    RunResult {
        schema_version: crate::model::run::SCHEMA_VERSION,
        tool: "pgbolt".to_owned(),
        tool_version: "test".to_owned(),
        merged_runs: 1,
        context: Default::default(),
        options: RunOptions::for_test(Vec::new(), clients, 1, RunLimit::DurationSeconds(1)),
        timings: Timings::default(),
        aborted: false,
        counts: Counts {
            counters,
            failed,
            total: 100 + failed,
            latency_late: 0,
        },
        tps,
        latency: distribution.clone(),
        service_time: distribution.clone(),
        lag: distribution,
        pool_wait: None,
        scripts: Vec::new(),
        series: Series {
            start_us: 0,
            width_us: 1_000_000,
            intervals: Vec::new(),
        },
        generator: None,
        generators: Vec::new(),
        diagnosis: None,
        outage: None,
    }
}

fn step(value: u32, repeat: u32, tps: f64, latency_us: i64) -> StepResult {
    StepResult {
        value: f64::from(value),
        repeat,
        result: run(value, tps, latency_us, 0),
    }
}

#[test]
fn repeats_pool_into_one_point_with_their_spread() {
    let steps = [step(2, 1, 100.0, 1000), step(2, 2, 110.0, 3000)];
    let p = &summarize(Dimension::Clients, &steps, &[]).points[0];
    assert_eq!(
        (p.repeats, p.tps, p.tps_min, p.tps_max),
        (2, 105.0, 100.0, 110.0)
    );
    assert!((p.tps_stddev.unwrap() - 50f64.sqrt()).abs() < 1e-9);
    assert!((p.p50_ms - 1.0).abs() < 0.01 && (p.p99_ms - 3.0).abs() < 0.01);
    // Little: (100 tps × 1 ms + 110 tps × 3 ms) / 2 repeats, over 2 clients.
    assert!((p.little_ratio - 0.1075).abs() < 1e-9, "{p:?}");
}

#[test]
fn the_best_the_smallest_near_it_and_the_fit() {
    let tps = [
        (1, 1000.0),
        (2, 1900.0),
        (4, 3400.0),
        (8, 5000.0),
        (16, 5150.0),
        (32, 4800.0),
    ];
    let steps: Vec<StepResult> = tps.iter().map(|&(c, t)| step(c, 1, t, 1000)).collect();
    let s = summarize(Dimension::Clients, &steps, &[]);
    assert_eq!(s.points[s.best.unwrap()].clients, 16);
    assert_eq!(s.points[s.near_best.unwrap()].clients, 8);
    let fit = s.fit.unwrap();
    assert!(fit.fits() && s.fit_note.is_none(), "{fit:?}");
    let peak = fit.peak_clients.unwrap();
    assert!((10.0..25.0).contains(&peak), "{peak}");
}

#[test]
fn too_few_points_and_other_dimensions_say_why_there_is_no_fit() {
    let steps = [step(1, 1, 10.0, 1000), step(2, 1, 20.0, 1000)];
    let s = summarize(Dimension::Clients, &steps, &[]);
    assert!(s.fit.is_none());
    assert!(s.fit_note.unwrap().contains("too few points"));
    let s = summarize(Dimension::Rate, &steps, &[]);
    assert!(s.fit_note.unwrap().contains("for clients sweeps"));
}

#[test]
fn the_slo_picks_the_highest_throughput_that_met_it() {
    let steps = [
        step(1, 1, 100.0, 2000),
        step(2, 1, 180.0, 8000),
        step(4, 1, 200.0, 20000),
    ];
    let slo = crate::config::study::parse_slo("p99<10ms").unwrap();
    let s = summarize(Dimension::Clients, &steps, &slo);
    let met: Vec<Option<bool>> = s.points.iter().map(|p| p.slo_met).collect();
    assert_eq!(met, [Some(true), Some(true), Some(false)]);
    assert_eq!(s.points[s.best_within_slo.unwrap()].clients, 2);
}

#[test]
fn steps_that_fail_too_often_are_no_answer() {
    let mut failing = step(4, 1, 900.0, 1000);
    failing.result = run(4, 900.0, 1000, 5);
    let steps = [step(1, 1, 100.0, 1000), failing];
    let s = summarize(Dimension::Clients, &steps, &[]);
    assert_eq!(s.points[s.best.unwrap()].clients, 1);
}

#[test]
fn a_plateau_is_no_gain_over_3_steps_or_under_2_percent_over_5() {
    assert!(!plateau(&[100.0, 200.0, 400.0]));
    assert!(plateau(&[100.0, 200.0, 190.0, 195.0, 199.0]));
    assert!(!plateau(&[100.0, 200.0, 190.0, 195.0, 201.0]));
    assert!(plateau(&[100.0, 200.0, 201.0, 202.0, 202.5, 203.0, 203.5]));
    assert!(!plateau(&[100.0, 200.0, 201.0, 202.0, 202.5, 203.0, 205.0]));
}

/// A diagnosis with the busiest thread at `cpu_s` over a 2 s window, the
/// backends' samples `on_cpu` and `client`, and findings of `severities`.
fn diagnosed(cpu_s: f64, on_cpu: u64, client: u64, severities: &[(&str, Severity)]) -> RunResult {
    use crate::model::diagnosis::{Activity, Diagnosis, Finding};
    let mut r = run(2, 100.0, 1000, 0);
    r.timings.bench_duration_us = 2_000_000;
    let mut d = Diagnosis::default();
    d.client.thread_cpu_s = vec![0.1, cpu_s];
    d.activity = Some(Activity {
        total: StateCounts {
            on_cpu,
            client,
            ..StateCounts::default()
        },
        ..Activity::default()
    });
    d.findings = severities
        .iter()
        .map(|&(id, severity)| Finding {
            id: id.to_owned(),
            severity,
            summary: String::new(),
            figures: Default::default(),
            why: String::new(),
            action: String::new(),
        })
        .collect();
    r.diagnosis = Some(d);
    r
}

#[test]
fn a_point_carries_its_load_from_the_repeats_diagnoses() {
    let a = diagnosed(1.0, 10, 30, &[("client-saturated", Severity::Warning)]);
    let b = diagnosed(
        1.8,
        30,
        30,
        &[
            ("short-run", Severity::Info),
            ("checkpoint", Severity::Warning),
        ],
    );
    let p = point(2.0, &[&a, &b], &[]).unwrap();
    // The busiest thread: 50% and 90% of the 2 s window.
    assert!((p.client_cpu.unwrap() - 0.7).abs() < 1e-12);
    // 40 of 100 samples on CPU, 60 waiting for the client.
    let shares = p.backends.unwrap();
    assert!((shares.on_cpu - 0.4).abs() < 1e-12);
    assert!((shares.client - 0.6).abs() < 1e-12);
    assert_eq!(shares.waiting, 0.0);
    // Warnings and worse, each once; information is left out.
    assert_eq!(p.findings, ["checkpoint", "client-saturated"]);
    // Without diagnoses there is nothing to show.
    let plain = point(2.0, &[&run(2, 100.0, 1000, 0)], &[]).unwrap();
    assert_eq!((plain.client_cpu, plain.backends), (None, None));
    assert!(plain.findings.is_empty());
}
