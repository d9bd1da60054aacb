//! Golden tests of the text report (pgbench 18's lines plus pgbolt's
//! percentiles) and of the JSON result, built from synthetic statistics.

use pgbolt::report::{from_json, merge, to_json};

use pgbolt::report::text::run::{render_pgbench, render_text};

use pgbolt::model::run::{RunResult, Timings};

use pgbolt::model::run::{RunLimit, RunOptions, ScriptInfo, SCHEMA_VERSION};
use pgbolt::stats::{FailureKind, Outcome, StatsLayout, ThreadStats, Transaction};

fn select_only() -> ScriptInfo {
    ScriptInfo {
        name: "<builtin: select only>".into(),
        weight: 1,
        commands: vec![
            "\\set aid random(1, 100000 * :scale)".into(),
            "SELECT abalance FROM pgbench_accounts WHERE aid = :aid;".into(),
        ],
        sha256: None,
    }
}

fn simple_update() -> ScriptInfo {
    ScriptInfo {
        name: "<builtin: simple update>".into(),
        weight: 3,
        commands: vec!["BEGIN;".into(), "END;".into()],
        sha256: None,
    }
}

fn options(scripts: Vec<ScriptInfo>) -> RunOptions {
    RunOptions {
        scripts,
        scale: 1,
        partitioning: None,
        query_mode: "simple".into(),
        clients: 2,
        threads: 1,
        max_tries: 1,
        limit: RunLimit::TransactionsPerClient(2),
        rate: None,
        latency_limit_us: None,
        progress_s: None,
        connect_per_transaction: false,
        pool_size: None,
        failures_detailed: false,
        report_per_command: false,
        continue_on_error: false,
        warmup_s: 0,
        variables: Default::default(),
    }
}

fn timings() -> Timings {
    Timings {
        bench_duration_us: 2_000_000,
        initial_connection_us: 3_500,
        total_connection_us: 8_000,
    }
}

fn committed(script: usize, latency_us: i64, lag_us: i64) -> Transaction {
    Transaction {
        script,
        outcome: Outcome::Committed,
        tries: 1,
        latency_us,
        lag_us,
        end_us: 1_000_000,
    }
}

/// Two threads: latencies 1, 2, 3 and 4 ms with 0.1 ms lag, split between them.
fn four_transactions(o: &RunOptions, extra: &[Transaction]) -> ThreadStats {
    let layout = StatsLayout {
        commands_per_script: o.scripts.iter().map(|s| s.commands.len()).collect(),
        latency_limit_us: o.latency_limit_us,
        start_us: 0,
        throttled: true,
        series: true,
    };
    let mut a = ThreadStats::new(&layout);
    let mut b = ThreadStats::new(&layout);
    for (i, ms) in [1, 2, 3, 4].into_iter().enumerate() {
        let t = if i % 2 == 0 { &mut a } else { &mut b };
        t.record_transaction(&committed(0, ms * 1000, 100));
        t.record_command(0, 0, 2);
        t.record_command(0, 1, ms * 1000 - 50);
    }
    for tx in extra {
        b.record_transaction(tx);
    }
    a.merge(&b).unwrap();
    a
}

fn report(o: RunOptions, extra: &[Transaction]) -> RunResult {
    let stats = four_transactions(&o, extra);
    RunResult::build(o, timings(), false, &stats).unwrap()
}

#[test]
fn transactions_per_client_without_measurement() {
    let r = report(options(vec![select_only()]), &[]);
    assert_eq!(
        render_text(&r, false),
        "transaction type: <builtin: select only>
scaling factor: 1
query mode: simple
number of clients: 2
number of threads: 1
maximum number of tries: 1
number of transactions per client: 2
number of transactions actually processed: 4/4
number of failed transactions: 0 (0.000%)
latency average = 1000.000 ms
initial connection time = 3.500 ms
tps = 2.000000 (without initial connection time)
latency percentiles: p50 = 2.000 ms, p90 = 4.000 ms, p99 = 4.000 ms, p99.9 = 4.000 ms, max = 4.000 ms
"
    );
    assert!(!render_text(&r, true).contains("percentiles"));
}

#[test]
fn rate_limit_latency_limit_retries_and_detailed_failures() {
    let mut o = options(vec![select_only()]);
    o.limit = RunLimit::DurationSeconds(2);
    o.rate = Some(100.0);
    o.latency_limit_us = Some(2_500);
    o.max_tries = 3;
    o.failures_detailed = true;
    o.progress_s = Some(1);
    let extra = [
        Transaction {
            outcome: Outcome::Skipped,
            ..committed(0, 0, 0)
        },
        Transaction {
            outcome: Outcome::Failed(FailureKind::Serialization),
            tries: 3,
            ..committed(0, 0, 0)
        },
        Transaction {
            tries: 2,
            ..committed(0, 5_000, 1_000)
        },
    ];
    let r = report(o, &extra);
    assert_eq!(
        render_pgbench(&r),
        "transaction type: <builtin: select only>
scaling factor: 1
query mode: simple
number of clients: 2
number of threads: 1
maximum number of tries: 3
duration: 2 s
number of transactions actually processed: 5
number of failed transactions: 1 (14.286%)
number of serialization failures: 1 (14.286%)
number of deadlock failures: 0 (0.000%)
number of transactions retried: 2 (28.571%)
total number of retries: 3
number of transactions skipped: 1 (14.286%)
number of transactions above the 2.5 ms latency limit: 3/5 (60.000%)
latency average = 3.000 ms
latency stddev = 1.414 ms
rate limit schedule lag: avg 0.280 (max 1.000) ms
initial connection time = 3.500 ms
tps = 2.500000 (without initial connection time)
"
    );
    let extras = render_text(&r, false);
    let tail: Vec<&str> = extras.lines().skip(20).collect();
    assert_eq!(
        tail,
        [
            "latency percentiles: p50 = 3.001 ms, p90 = 5.000 ms, p99 = 5.000 ms, p99.9 = 5.000 ms, max = 5.000 ms",
            "service time percentiles: p50 = 2.901 ms, p90 = 4.000 ms, p99 = 4.000 ms, p99.9 = 4.000 ms, max = 4.000 ms",
            "schedule lag percentiles: p50 = 0.100 ms, p90 = 1.000 ms, p99 = 1.000 ms, p99.9 = 1.000 ms, max = 1.000 ms",
        ]
    );
}

#[test]
fn several_scripts_with_per_command_latencies() {
    let mut o = options(vec![select_only(), simple_update()]);
    o.report_per_command = true;
    let r = report(o, &[]);
    let text = render_pgbench(&r);
    let sections: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("SQL script 1"))
        .collect();
    assert!(text.starts_with("transaction type: multiple scripts\n"));
    assert_eq!(
        sections,
        [
            "SQL script 1: <builtin: select only>",
            " - weight: 1 (targets 25.0% of total)",
            " - 4 transactions (100.0% of total)",
            " - number of transactions actually processed: 4 (tps = 2.000000)",
            " - number of failed transactions: 0 (0.000%)",
            " - latency average = 2.500 ms",
            " - latency stddev = 1.118 ms",
            " - statement latencies in milliseconds and failures:",
            "         0.002           0 \\set aid random(1, 100000 * :scale)",
            "         2.450           0 SELECT abalance FROM pgbench_accounts WHERE aid = :aid;",
            "SQL script 2: <builtin: simple update>",
            " - weight: 3 (targets 75.0% of total)",
            " - 0 transactions (0.0% of total)",
            " - statement latencies in milliseconds and failures:",
            "         0.000           0 BEGIN;",
            "         0.000           0 END;",
        ]
    );
}

#[test]
fn single_script_per_command_with_retries_and_reconnections() {
    let mut o = options(vec![select_only()]);
    o.report_per_command = true;
    o.max_tries = 0;
    o.connect_per_transaction = true;
    let r = report(o, &[]);
    let text = render_pgbench(&r);
    let tail: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("latency average"))
        .collect();
    assert_eq!(
        tail,
        [
            "latency average = 1000.000 ms",
            "average connection time = 2.000 ms",
            "tps = 2.000000 (including reconnection times)",
            "statement latencies in milliseconds, failures and retries:",
            "         0.002           0          0 \\set aid random(1, 100000 * :scale)",
            "         2.450           0          0 SELECT abalance FROM pgbench_accounts WHERE aid = :aid;",
        ]
    );
    assert!(
        !text.contains("maximum number of tries"),
        "0 (unlimited) tries are not printed"
    );
    assert!(
        text.contains("number of transactions retried: 0 (0.000%)\ntotal number of retries: 0\n")
    );
}

#[test]
fn nothing_processed_stops_after_the_counts() {
    let o = options(vec![select_only()]);
    let layout = StatsLayout {
        commands_per_script: vec![2],
        latency_limit_us: None,
        start_us: 0,
        throttled: false,
        series: true,
    };
    let r = RunResult::build(o, timings(), true, &ThreadStats::new(&layout)).unwrap();
    assert!(render_text(&r, false).ends_with("number of transactions actually processed: 0/4\n"));
}

#[test]
fn json_has_the_schema_version_and_the_text_counts() {
    let mut o = options(vec![select_only()]);
    o.max_tries = 2;
    let extra = [Transaction {
        outcome: Outcome::Failed(FailureKind::Deadlock),
        tries: 2,
        ..committed(0, 0, 0)
    }];
    let r = report(o, &extra);
    let json = to_json(&r).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["schema_version"], SCHEMA_VERSION);
    assert_eq!(v["counts"]["committed"], 4);
    assert_eq!(v["counts"]["failed"], 1);
    assert_eq!(v["counts"]["retries"], 1);
    assert_eq!(v["latency"]["percentiles"]["max"], 4.0);
    assert!(v["options"].get("password").is_none());
    let text = render_pgbench(&r);
    assert!(text.contains("number of transactions actually processed: 4/4\n"));
    assert!(text.contains("number of failed transactions: 1 (20.000%)\n"));
    assert!(text.contains("total number of retries: 1\n"));
    assert_eq!(from_json(&json).unwrap(), r);

    let wrong = json.replacen(
        &format!("\"schema_version\": {SCHEMA_VERSION}"),
        "\"schema_version\": 999",
        1,
    );
    assert!(from_json(&wrong)
        .unwrap_err()
        .to_string()
        .contains("schema version 999"));
    assert!(from_json("{").is_err());
}

#[test]
fn merged_results_equal_one_run_recording_everything() {
    let o = options(vec![select_only()]);
    let layout = StatsLayout {
        commands_per_script: vec![2],
        latency_limit_us: None,
        start_us: 0,
        throttled: false,
        series: true,
    };
    let (mut a, mut b, mut all) = (
        ThreadStats::new(&layout),
        ThreadStats::new(&layout),
        ThreadStats::new(&layout),
    );
    for i in 0..1000i64 {
        let tx = Transaction {
            end_us: i * 10_000,
            ..committed(0, 100 + i * 37 % 5000, 0)
        };
        all.record_transaction(&tx);
        if i < 400 {
            a.record_transaction(&tx)
        } else {
            b.record_transaction(&tx)
        }
    }
    let mut o2 = o.clone();
    o2.clients = 1;
    let mut o1 = o.clone();
    o1.clients = 1;
    let ra = RunResult::build(o1, timings(), false, &a).unwrap();
    let rb = RunResult::build(o2, timings(), false, &b).unwrap();
    let round_trip: Vec<RunResult> = [ra, rb]
        .iter()
        .map(|r| from_json(&to_json(r).unwrap()).unwrap())
        .collect();
    let merged = merge(&round_trip).unwrap();
    let mut expected = RunResult::build(o, timings(), false, &all).unwrap();
    expected.options.threads = 2;
    expected.merged_runs = 2;
    expected.timings.total_connection_us *= 2;
    assert_eq!(merged, expected);
    assert_eq!(render_text(&merged, false), render_text(&expected, false));

    let mut other = round_trip[0].clone();
    other.options.scripts.push(simple_update());
    assert!(merge(&[round_trip[0].clone(), other]).is_err());
    assert!(merge(&[]).is_err());
}
