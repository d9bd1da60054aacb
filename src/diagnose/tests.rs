//! Findings on synthetic results whose condition is known.

use super::*;
use crate::model::diagnosis::*;
use crate::model::run::RunResult;
use crate::model::run::{Counts, Distribution, IntervalResult, RunContext, Series, Timings};
use crate::model::run::{RunLimit, RunOptions, ScriptInfo};
use crate::stats::{Counters, IntervalRecorder, IntervalStats, LatencyHistogram, SimpleStats};

/// A run of `script` by `clients` clients, one-second intervals, interval
/// `i` recording `latency_us(i)` (value, count) transactions.
pub(crate) fn run(
    script: &str,
    clients: u32,
    seconds: usize,
    latency_us: impl Fn(usize) -> Vec<(i64, u64)>,
) -> RunResult {
    let mut h = LatencyHistogram::new();
    let mut stats = SimpleStats::default();
    let mut intervals = Vec::new();
    for i in 0..seconds {
        let mut rec = IntervalRecorder::new();
        let mut n = 0;
        for (v, count) in latency_us(i) {
            for _ in 0..count {
                h.record(v);
                stats.add(v);
                rec.record(v);
            }
            n += count;
        }
        intervals.push(IntervalResult {
            offset_s: i as f64,
            tps: n as f64,
            latency_average_ms: None,
            stats: IntervalStats::default(),
            latency_histogram: Some(rec.take().encode()),
        });
    }
    let counters = Counters {
        committed: stats.count,
        ..Counters::default()
    };
    let d = Distribution::new(stats, &h).expect("histogram");
    let secs = seconds as f64;
    RunResult {
        schema_version: crate::model::run::SCHEMA_VERSION,
        tool: "pgbolt".to_owned(),
        tool_version: "test".to_owned(),
        merged_runs: 1,
        options: RunOptions::for_test(
            vec![ScriptInfo {
                name: script.to_owned(),
                weight: 1,
                commands: vec![],
                sha256: None,
            }],
            clients,
            1,
            RunLimit::DurationSeconds(seconds as u64),
        ),
        timings: Timings {
            bench_duration_us: seconds as i64 * 1_000_000,
            ..Timings::default()
        },
        aborted: false,
        counts: Counts {
            counters,
            failed: 0,
            total: counters.committed,
            latency_late: 0,
        },
        tps: stats.count as f64 / secs,
        latency: d.clone(),
        service_time: d.clone(),
        lag: d,
        pool_wait: None,
        scripts: vec![],
        series: Series {
            start_us: 0,
            width_us: 1_000_000,
            intervals,
        },
        context: RunContext::default(),
        diagnosis: Some(Diagnosis::default()),
        outage: None,
        generator: None,
        generators: Vec::new(),
    }
}

pub(crate) const SELECT_ONLY: &str = "<builtin: select only>";

/// 4 clients, 100 seconds, each transaction 1 ms: 4000 TPS, Little's law
/// holds, no other condition.
pub(crate) fn clean() -> RunResult {
    run(SELECT_ONLY, 4, 100, |_| vec![(1000, 4000)])
}

fn ids(r: &RunResult) -> Vec<String> {
    findings(r).into_iter().map(|f| f.id).collect()
}

pub(crate) fn diagnosis(r: &mut RunResult) -> &mut Diagnosis {
    r.diagnosis.as_mut().expect("diagnosis")
}

#[test]
fn a_clean_run_has_no_finding() {
    assert_eq!(ids(&clean()), Vec::<String>::new());
}

#[test]
fn a_busy_thread_is_a_warning_and_a_saturated_one_critical() {
    let mut r = clean();
    diagnosis(&mut r).client.thread_cpu_s = vec![50.0, 85.0];
    let f = findings(&r);
    assert_eq!(f[0].id, "client-saturated");
    assert_eq!(f[0].severity, Severity::Warning);
    assert_eq!(f[0].figures["thread"], 1.0);
    diagnosis(&mut r).client.thread_cpu_s = vec![95.0];
    assert_eq!(findings(&r)[0].severity, Severity::Critical);
}

/// A thread that ran 40% of the run and waited 50% for a CPU is as busy as
/// one that ran 90%: the machine could not run it more.
#[test]
fn a_thread_waiting_for_a_cpu_counts_as_busy() {
    let mut r = clean();
    let c = &mut diagnosis(&mut r).client;
    c.thread_cpu_s = vec![40.0];
    c.thread_runqueue_s = vec![50.0];
    let f = findings(&r);
    assert_eq!(f[0].id, "client-saturated");
    assert_eq!(f[0].severity, Severity::Warning);
    assert!((f[0].figures["runqueue_share"] - 0.5).abs() < 1e-9);
    assert!(f[0]
        .summary
        .contains("ran 40% of the run and waited 50% for a CPU"));
}

/// Regression: on a machine overloaded by 500 backends, "client
/// saturated: thread 0 ran 5% of the run and waited 95% for a CPU". A
/// thread that mostly waited while the server's backends filled this
/// machine's CPUs is the machine's saturation; the same thread beside a
/// remote server (its CPU unknown here), or one that mostly ran, is the
/// client's.
#[test]
fn a_thread_waiting_behind_the_servers_backends_is_the_machines_saturation() {
    let mut r = clean();
    let d = diagnosis(&mut r);
    d.client.thread_cpu_s = vec![5.0];
    d.client.thread_runqueue_s = vec![95.0];
    d.client.cpus = 2;
    assert_eq!(ids(&r), ["client-saturated"]);
    let d = diagnosis(&mut r);
    d.server_cpu = Some(ServerCpu {
        cpu_s: 150.0,
        monitor_backend_cpu_s: 1.0,
        wall_s: 100.0,
    });
    d.monitor.samples = 1000;
    d.activity = Some(Activity {
        total: StateCounts {
            on_cpu: 480_000,
            ..StateCounts::default()
        },
        start_us: 0,
        width_us: 1_000_000,
        ..Activity::default()
    });
    let f = findings(&r);
    let found: Vec<&str> = f.iter().map(|f| f.id.as_str()).collect();
    assert!(found.contains(&"machine-saturated"), "{found:?}");
    assert!(!found.contains(&"client-saturated"), "{found:?}");
    let m = f.iter().find(|f| f.id == "machine-saturated").unwrap();
    assert_eq!(m.severity, Severity::Critical);
    assert!(
        m.summary
            .contains("waited 95% for a CPU while this machine's 2 CPUs were full (the server 75% of them, 480.0 of its backends"),
        "{}",
        m.summary
    );
    // Mostly running: pgbolt's own saturation, whatever the machine.
    let c = &mut diagnosis(&mut r).client;
    c.thread_cpu_s = vec![90.0];
    c.thread_runqueue_s = vec![5.0];
    let found = ids(&r);
    assert!(found.contains(&"client-saturated".to_owned()), "{found:?}");
    assert!(
        !found.contains(&"machine-saturated".to_owned()),
        "{found:?}"
    );
}

#[test]
fn a_client_taking_a_quarter_of_a_shared_machine_is_found_only_beside_a_local_server() {
    let mut r = clean();
    let d = diagnosis(&mut r);
    d.client = ClientLoad {
        thread_cpu_s: vec![],
        thread_runqueue_s: vec![],
        process_cpu_s: 60.0,
        process_wall_s: 100.0,
        cpus: 2,
        machine_busy_share: None,
    };
    assert!(ids(&r).is_empty());
    diagnosis(&mut r).server_cpu = Some(ServerCpu::default());
    assert_eq!(ids(&r), ["client-shares-machine"]);
}

#[test]
fn short_read_write_runs_and_few_transactions_are_found() {
    let r = run("<builtin: TPC-B (sort of)>", 1, 5, |_| vec![(1000, 1000)]);
    let found = ids(&r);
    assert!(found.contains(&"run-too-short".to_owned()), "{found:?}");
    assert!(
        found.contains(&"too-few-transactions".to_owned()),
        "{found:?}"
    );
    let mut p = clean();
    p.options.progress_s = Some(20);
    assert_eq!(ids(&p), ["run-too-short"]);
}

/// Regression: a select-only step of a sweep was "a read-write run of
/// 5.0 s": any row written (an analyze's statistics) made a run
/// read-write. A builtin script is what its name says; custom scripts
/// must write a row per 20 transactions.
#[test]
fn a_few_rows_written_do_not_make_a_run_read_write() {
    let written = |script: &str, rows: i64| {
        let mut r = run(script, 1, 5, |_| vec![(1000, 1000)]);
        diagnosis(&mut r).counters = Some(ServerCounters {
            database: Some(DatabaseCounters {
                rows_written: rows,
                ..DatabaseCounters::default()
            }),
            ..ServerCounters::default()
        });
        ids(&r).iter().any(|i| i == "run-too-short")
    };
    assert!(!written(SELECT_ONLY, 500));
    assert!(!written("custom.sql", 249));
    assert!(written("custom.sql", 250));
}

#[test]
fn tpcb_like_with_fewer_branches_than_clients_is_found() {
    let mut r = run("<builtin: TPC-B (sort of)>", 8, 100, |_| vec![(1000, 8000)]);
    r.options.scale = 1;
    let f = findings(&r);
    let s = f
        .iter()
        .find(|f| f.id == "scale-below-clients")
        .expect("found");
    assert_eq!((s.figures["scale"], s.figures["clients"]), (1.0, 8.0));
    r.options.scale = 8;
    assert!(!ids(&r).contains(&"scale-below-clients".to_owned()));
}

#[test]
fn checkpoints_and_vacuums_in_the_window_are_found() {
    let mut r = clean();
    diagnosis(&mut r).counters = Some(ServerCounters {
        checkpoints: Some(CheckpointCounters {
            timed: 0,
            requested: 1,
        }),
        ..ServerCounters::default()
    });
    diagnosis(&mut r).tables = vec![TableCounters {
        table: "pgbench_accounts".to_owned(),
        vacuums: 1,
        ..TableCounters::default()
    }];
    assert_eq!(ids(&r), ["checkpoint", "vacuum"]);
}

#[test]
fn commits_of_other_sessions_are_found_and_the_monitors_own_are_not() {
    let mut r = clean();
    let committed = r.counts.counters.committed as i64;
    let db = |extra: i64| DatabaseCounters {
        xact_commit: committed + 40 + extra,
        monitor_commits: 40,
        ..DatabaseCounters::default()
    };
    diagnosis(&mut r).counters = Some(ServerCounters {
        database: Some(db(0)),
        ..ServerCounters::default()
    });
    assert!(ids(&r).is_empty());
    diagnosis(&mut r).counters.as_mut().unwrap().database = Some(db(5000));
    let f = findings(&r);
    assert_eq!(f[0].id, "commits-disagree");
    assert_eq!(f[0].figures["others"], 5000.0);
    // Fewer are commits not reported yet (a pooler's backends stay
    // connected), not other sessions'.
    diagnosis(&mut r).counters.as_mut().unwrap().database = Some(db(-5000));
    assert!(ids(&r).is_empty());
    // Through a pooler either way round is the counters' lag.
    diagnosis(&mut r).counters.as_mut().unwrap().database = Some(db(5000));
    diagnosis(&mut r).monitor.pooled = true;
    assert!(ids(&r).is_empty());
}

/// `r` with 100 activity samples of its clients, and `others` seen beside
/// them.
fn with_others(r: &mut RunResult, others: OtherSessions) {
    let clients = u64::from(r.options.clients);
    let d = diagnosis(r);
    d.monitor.samples = 100;
    d.activity = Some(Activity {
        total: StateCounts {
            on_cpu: 100 * clients,
            ..StateCounts::default()
        },
        others,
        ..Activity::default()
    });
}

fn busy(on_cpu: u64) -> StateCounts {
    StateCounts {
        on_cpu,
        ..StateCounts::default()
    }
}

fn idle(client: u64) -> StateCounts {
    StateCounts {
        client,
        ..StateCounts::default()
    }
}

/// Regression: autovacuum's commits and those an earlier run's pooler
/// connections reported late were "from other sessions" on a server where
/// nobody else worked, and the vacuum was told twice. With samples that
/// saw no other client busy, autovacuum alone gives no finding and idle
/// sessions an info line that says what the extra commits are.
#[test]
fn extra_commits_with_nobody_else_busy_are_no_other_load() {
    let mut r = clean();
    let committed = r.counts.counters.committed as i64;
    diagnosis(&mut r).counters = Some(ServerCounters {
        database: Some(DatabaseCounters {
            xact_commit: committed + 40 + 5000,
            monitor_commits: 40,
            ..DatabaseCounters::default()
        }),
        ..ServerCounters::default()
    });
    let autovacuum = OtherSessions {
        autovacuum: busy(30),
        ..OtherSessions::default()
    };
    with_others(&mut r, autovacuum.clone());
    assert!(
        !ids(&r).iter().any(|i| i == "commits-disagree"),
        "{:?}",
        ids(&r)
    );
    // Nobody seen at all: sessions between two samples, other work.
    with_others(&mut r, OtherSessions::default());
    let f = findings(&r);
    let c = f.iter().find(|f| f.id == "commits-disagree").unwrap();
    assert_eq!(c.severity, Severity::Warning);
    assert!(
        c.summary
            .ends_with("(none seen by the samples: sessions shorter than their interval)"),
        "{}",
        c.summary
    );
    with_others(
        &mut r,
        OtherSessions {
            same_name: idle(2000),
            ..autovacuum.clone()
        },
    );
    let f = findings(&r);
    let c = f.iter().find(|f| f.id == "commits-disagree").unwrap();
    assert_eq!(c.severity, Severity::Info);
    assert!(
        c.summary
            .contains("no other session worked: 20.0 idle sessions"),
        "{}",
        c.summary
    );
    assert!(!ids(&r).iter().any(|i| i == "other-sessions"));
    // Another client at work makes them another load, named.
    with_others(
        &mut r,
        OtherSessions {
            other_clients: busy(100),
            ..autovacuum
        },
    );
    let f = findings(&r);
    let c = f.iter().find(|f| f.id == "commits-disagree").unwrap();
    assert_eq!(c.severity, Severity::Warning);
    assert!(
        c.summary
            .contains("(seen: 1.0 busy other clients on average)"),
        "{}",
        c.summary
    );
}

/// Other clients busy beside the run are a finding from 5% of its own
/// backend-samples, named by kind; a generator calls the sessions named
/// like its clients its siblings; few samples are said.
#[test]
fn other_sessions_at_work_are_named_by_kind() {
    let mut r = clean();
    r.options.clients = 20;
    with_others(
        &mut r,
        OtherSessions {
            other_clients: busy(99),
            ..OtherSessions::default()
        },
    );
    assert!(!ids(&r).iter().any(|i| i == "other-sessions"));
    with_others(
        &mut r,
        OtherSessions {
            other_clients: busy(100),
            same_name: busy(50),
            ..OtherSessions::default()
        },
    );
    let f = findings(&r);
    let o = f.iter().find(|f| f.id == "other-sessions").unwrap();
    assert!(
        o.summary
            .contains("1.0 busy other clients, 0.5 busy sessions named like the run's clients"),
        "{}",
        o.summary
    );
    r.generator = Some(crate::model::generators::GeneratorInfo {
        index: 1,
        count: 2,
        run_id: "r".to_owned(),
        client_offset: 10,
        start_at_us: None,
        clock: "realtime".to_owned(),
        window_start_us: 0,
        window_end_us: 0,
    });
    diagnosis(&mut r).monitor.samples = 5;
    let f = findings(&r);
    let o = f.iter().find(|f| f.id == "other-sessions").unwrap();
    assert!(
        o.summary.contains("other generators of this run"),
        "{}",
        o.summary
    );
    assert!(
        o.summary.ends_with("(from 5 samples only)"),
        "{}",
        o.summary
    );
}

#[test]
fn time_outside_transactions_breaks_littles_law() {
    let mut r = clean();
    r.options.clients = 8;
    let f = findings(&r);
    assert_eq!(f[0].id, "littles-law");
    assert!((f[0].figures["busy_clients"] - 4.0).abs() < 0.01);
    r.options.rate = Some(100.0);
    assert!(ids(&r).is_empty());
}

#[test]
fn a_stall_interval_is_named() {
    let r = run(SELECT_ONLY, 4, 100, |i| {
        if i == 42 {
            vec![(1000, 3000), (900_000, 100)]
        } else {
            vec![(1000, 4000)]
        }
    });
    let f = findings(&r);
    let s = f.iter().find(|f| f.id == "stall").expect("stall found");
    assert_eq!(s.figures["offset_s"], 42.0);
}

/// The slow transactions of the first second are the start's (cold
/// caches, new backends), and a warm-up is the cure.
#[test]
fn slow_transactions_at_the_start_are_a_cold_start() {
    let mut r = run(SELECT_ONLY, 4, 20, |i| {
        if i == 0 {
            vec![(1000, 3000), (900_000, 100)]
        } else {
            vec![(1000, 4000)]
        }
    });
    let f = findings(&r);
    assert!(!f.iter().any(|f| f.id == "stall"));
    let c = f.iter().find(|f| f.id == "cold-start").expect("cold start");
    assert!(c.action.contains("--warmup"), "{}", c.action);
    r.options.warmup_s = 5;
    let f = findings(&r);
    let c = f.iter().find(|f| f.id == "cold-start").expect("cold start");
    assert!(!c.action.contains("--warmup"), "{}", c.action);
}

/// Regression: an interval in which nothing committed (the one the lock
/// held) has no histogram, and hid the stall after it.
#[test]
fn an_interval_without_commits_does_not_hide_a_stall() {
    let mut r = run(SELECT_ONLY, 4, 10, |i| match i {
        4 => vec![],
        5 => vec![(1000, 2000), (1_500_000, 800)],
        _ => vec![(1000, 4000)],
    });
    r.series.intervals[4].latency_histogram = None;
    let f = findings(&r);
    let s = f.iter().find(|f| f.id == "stall").expect("stall found");
    assert_eq!(s.figures["offset_s"], 5.0);
}

/// A schedule the clients could not keep, busy in transactions all the
/// time (4 clients at 4000 TPS of 1 ms each), is the server's; a lag
/// under one client interval is nothing.
#[test]
fn a_schedule_lag_beyond_a_client_interval_is_found_with_its_cause() {
    let mut r = clean();
    r.options.rate = Some(4000.0);
    assert!(ids(&r).is_empty(), "{:?}", ids(&r));
    let late = run(SELECT_ONLY, 4, 100, |_| vec![(30_000, 4000)]);
    r.lag = late.lag.clone();
    let f = findings(&r);
    assert_eq!(f[0].id, "schedule-lag");
    assert_eq!(f[0].severity, Severity::Critical);
    assert!((f[0].figures["client_interval_ms"] - 1.0).abs() < 1e-9);
    assert!(
        f[0].summary.contains("the server could not keep up"),
        "{}",
        f[0].summary
    );
    r.lag = run(SELECT_ONLY, 4, 100, |_| vec![(30_000, 4000)]).lag;
    r.service_time = run(SELECT_ONLY, 4, 100, |_| vec![(100, 4000)]).service_time;
    let f = findings(&r);
    assert_eq!(f[0].severity, Severity::Warning);
    assert!(
        f[0].summary.contains("queued for a free client"),
        "{}",
        f[0].summary
    );
    diagnosis(&mut r).client.thread_runqueue_s = vec![1.0, 20.0];
    let f = findings(&r);
    assert_eq!(f[0].severity, Severity::Critical);
    assert!(
        f[0].summary.contains("threads waited for a CPU"),
        "{}",
        f[0].summary
    );
}

/// Under `--reconnect`, a lag that comes with an outage is the outage's:
/// a warning that says so, not a claim about the client's CPU; the same
/// lag with no client hit keeps its own cause.
#[test]
fn a_lag_during_an_outage_is_the_outages() {
    use crate::model::failover::{ClientOutage, Outage};
    let mut r = clean();
    r.options.rate = Some(4000.0);
    r.lag = run(SELECT_ONLY, 4, 100, |_| vec![(30_000, 4000)]).lag;
    diagnosis(&mut r).client.thread_runqueue_s = vec![1.0, 20.0];
    r.outage = Some(Outage::from_clients(vec![ClientOutage::default()]));
    let f = findings(&r);
    assert!(
        f[0].summary.contains("could not keep up"),
        "{}",
        f[0].summary
    );
    r.outage = Some(Outage::from_clients(vec![ClientOutage {
        first_error_us: Some(1_000),
        first_commit_after_us: Some(500_000),
        ..ClientOutage::default()
    }]));
    let f = findings(&r);
    assert_eq!(f[0].id, "schedule-lag");
    assert_eq!(f[0].severity, Severity::Warning);
    assert!(
        f[0].summary
            .contains("the clients had no server during the outage"),
        "{}",
        f[0].summary
    );
}

/// A lag that slow transactions explain (their p99 at least half the
/// lag's) is a stall's: a warning however far behind, since it passed.
#[test]
fn a_lag_that_slow_transactions_explain_is_a_passing_stall() {
    let mut r = clean();
    r.options.rate = Some(4000.0);
    r.lag = run(SELECT_ONLY, 4, 100, |_| vec![(100, 3880), (30_000, 120)]).lag;
    r.service_time = run(SELECT_ONLY, 4, 100, |_| vec![(100, 3920), (20_000, 80)]).service_time;
    let f = findings(&r);
    assert_eq!(f[0].id, "schedule-lag");
    assert_eq!(f[0].severity, Severity::Warning);
    assert!(
        f[0].summary.contains("slow transactions held up"),
        "{}",
        f[0].summary
    );
}

#[test]
fn checkpoints_and_vacuums_say_when() {
    let mut r = clean();
    r.context.started_us = Some(10_000_000);
    let d = diagnosis(&mut r);
    d.counters = Some(ServerCounters {
        checkpoints: Some(CheckpointCounters {
            timed: 1,
            requested: 0,
        }),
        ..ServerCounters::default()
    });
    d.events = vec![ServerEvent {
        kind: "checkpoint".to_owned(),
        cause: Some("timed".to_owned()),
        count: 1,
        at_us: 42_500_000,
        within_ms: 1000,
        ..ServerEvent::default()
    }];
    let f = findings(&r);
    assert!(f[0].summary.ends_with(" at 32.5 s"), "{}", f[0].summary);
    assert_eq!(f[0].figures["first_at_s"], 32.5);
}

/// A stall whose transactions were fast on the server (the lag far above
/// their slowest) was pgbolt's own, on a machine that kept its threads
/// waiting for a CPU.
#[test]
fn a_stall_of_pgbolt_itself_is_not_put_on_slow_transactions() {
    let mut r = run(SELECT_ONLY, 4, 100, |i| {
        if i == 42 {
            vec![(1000, 3000), (900_000, 100)]
        } else {
            vec![(1000, 4000)]
        }
    });
    r.options.rate = Some(4000.0);
    r.lag = run(SELECT_ONLY, 4, 100, |_| vec![(100, 3880), (30_000, 120)]).lag;
    r.service_time = run(SELECT_ONLY, 4, 100, |_| vec![(100, 4000)]).service_time;
    diagnosis(&mut r).client.thread_runqueue_s = vec![20.0];
    let f = findings(&r);
    let lag = f
        .iter()
        .find(|f| f.id == "schedule-lag")
        .expect("lag found");
    assert!(
        lag.summary.contains("threads waited for a CPU"),
        "{}",
        lag.summary
    );
    assert!(f.iter().any(|f| f.id == "stall"));
}
