//! The run's diagnosis on real servers (PostgreSQL 18 and 15): each test
//! provokes a finding (a forced CHECKPOINT, a manual VACUUM and another
//! session's commits during the run, scale 1 under tpcb-like with 8
//! clients, a lock held with pg_sleep, one thread driving many clients, a
//! rate the server cannot serve) and checks the figures that do not
//! depend on timing, with the checkpoints and vacuums on the timeline and
//! the server's I/O; a throttled read-only run reports none; the monitor
//! covers the measured window only (not the wait for `--start-at`, not a
//! sweep's warm-up), never fails a run, stays out of a server without a
//! free slot and out of `--pgbench-output`.
//!
//! Checkpoints are server-wide and a busy test skews another's timing, so
//! the tests take turns ([`turn`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use crate::common::{
    builder15, new_database, pgbolt_path, stderr, stdout, wait_for_second_statement, Run,
};
use pgbolt::model::diagnosis::{Diagnosis, Finding};
use pgbolt::model::run::RunResult;
use pgbolt::tempdb::TempDb;

fn server18() -> &'static TempDb {
    static DB: OnceLock<TempDb> = OnceLock::new();
    DB.get_or_init(|| {
        pgbolt::tempdb::install_signal_cleanup().expect("signal clean-up");
        TempDb::builder()
            .setting("fsync", "off")
            .setting("shared_preload_libraries", "pg_stat_statements")
            .start()
            .expect("PostgreSQL 18 starts")
    })
}

fn server15() -> &'static TempDb {
    static DB: OnceLock<TempDb> = OnceLock::new();
    DB.get_or_init(|| {
        pgbolt::tempdb::install_signal_cleanup().expect("signal clean-up");
        builder15()
            .setting("fsync", "off")
            .start()
            .expect("PostgreSQL 15 starts")
    })
}

fn turn() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// A new database of `db` initialized at scale 1 by pgbolt (after
/// pgbench's `-i`, the six-slot server of
/// [`the_monitor_never_takes_a_clients_slot_and_can_be_turned_off`] was
/// seen still counting its backend: `too many clients`).
fn bench_database(db: &TempDb) -> String {
    let name = new_database(db);
    let out = pgbolt(db, &name, &["-i", "-q", "-s", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    name
}

fn command(db: &TempDb, dbname: &str, args: &[&str]) -> Command {
    Run::on(db, dbname, args).pgbolt_command()
}

fn pgbolt(db: &TempDb, dbname: &str, args: &[&str]) -> Output {
    command(db, dbname, args).output().expect("pgbolt runs")
}

/// Runs a benchmark with `--json`, calling `during` once the clients are
/// under way; the output and the result.
fn run_json(
    db: &TempDb,
    dbname: &str,
    args: &[&str],
    during: impl FnOnce(),
) -> (Output, RunResult) {
    let json = scratch(db, "result.json");
    let json_arg = format!("--json={}", json.display());
    let mut all = args.to_vec();
    all.push(&json_arg);
    let child = command(db, dbname, &all)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("pgbolt starts");
    during();
    let out = child.wait_with_output().expect("pgbolt ends");
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    (out, read(&json))
}

/// Runs `script` (a custom script's text) with `args` and `-n` in a new
/// database of `db`, with `--json`; the output and the result.
fn run_script(db: &TempDb, script: &str, args: &[&str]) -> (Output, RunResult) {
    let dbname = new_database(db);
    let path = scratch(db, "script.sql");
    std::fs::write(&path, script).expect("script");
    let path = path.display().to_string();
    let mut all = vec!["-n", "-f", &path];
    all.extend_from_slice(args);
    run_json(db, &dbname, &all, || {})
}

/// A path for a file of this test under the server's directory, unique
/// in this process.
fn scratch(db: &TempDb, name: &str) -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    db.root().join(format!("diagnose-{n}-{name}"))
}

fn read(path: &Path) -> RunResult {
    let text = std::fs::read_to_string(path).expect("result file");
    pgbolt::report::from_json(&text).expect("result reads")
}

fn diagnosis(r: &RunResult) -> &Diagnosis {
    r.diagnosis.as_ref().expect("a diagnosis")
}

fn finding<'a>(r: &'a RunResult, id: &str) -> &'a Finding {
    diagnosis(r)
        .findings
        .iter()
        .find(|f| f.id == id)
        .unwrap_or_else(|| panic!("no {id} finding in {:#?}", diagnosis(r).findings))
}

/// What the monitor could not read, besides the server's CPU (which
/// depends on how the server is reached) and pg_stat_statements (installed
/// only where a test installs it).
fn missing(d: &Diagnosis) -> Vec<&String> {
    d.monitor
        .missing
        .iter()
        .filter(|m| !m.starts_with("server CPU") && !m.starts_with("pg_stat_statements"))
        .collect()
}

/// A CHECKPOINT (of a page the test dirtied), a VACUUM and 300
/// transactions of another session while a throttled select-only run goes
/// on: each counted, each a finding; the checkpoint and the vacuum on the
/// timeline (in the JSON, the findings and the HTML charts), and the
/// checkpointer's writes in pg_stat_io (16 and newer; older servers say
/// they lack it).
fn checkpoint_vacuum_and_commits(db: &TempDb, version: u32) {
    let _turn = turn();
    let dbname = bench_database(db);
    let others = "select 1;\n".repeat(300);
    let mut during = (0, 0);
    let (out, r) = run_json(
        db,
        &dbname,
        &["-S", "-c", "2", "-j", "1", "-R", "500", "-T", "5"],
        || {
            wait_for_second_statement(db, "pgbolt", "SELECT abalance%");
            during.0 = pgbolt::wallclock::now_us();
            db.psql_in(&dbname, "UPDATE pgbench_branches SET bbalance = bbalance")
                .expect("update");
            db.psql("CHECKPOINT").expect("checkpoint");
            db.psql_in(&dbname, "VACUUM pgbench_accounts")
                .expect("vacuum");
            during.1 = pgbolt::wallclock::now_us();
            db.psql_in(&dbname, &others).expect("other commits");
        },
    );
    let d = diagnosis(&r);
    assert!(d.monitor.ran, "{:?}", d.monitor);
    let io_missing = "pg_stat_io: needs PostgreSQL 16 or newer".to_owned();
    let expected_missing = if version < 16 {
        vec![&io_missing]
    } else {
        vec![]
    };
    assert_eq!(missing(d), expected_missing);
    let counters = d.counters.as_ref().expect("counters");
    assert!(counters.checkpoints.expect("checkpoints").requested >= 1);
    assert!(finding(&r, "checkpoint").figures["requested"] >= 1.0);
    let accounts = d
        .tables
        .iter()
        .find(|t| t.table == "pgbench_accounts")
        .expect("pgbench_accounts counted");
    assert_eq!(accounts.vacuums, 1);
    assert_eq!(finding(&r, "vacuum").figures["vacuums"], 1.0);
    let others = finding(&r, "commits-disagree").figures["others"];
    assert!((300.0..320.0).contains(&others), "{others}");

    // The vacuum at the server's time stamp, between the test's clock
    // readings around it; the checkpoint at most a second after it was
    // counted, so within a second of them.
    let vacuum = d
        .events
        .iter()
        .find(|e| e.kind == "vacuum" && e.table.as_deref() == Some("pgbench_accounts"))
        .unwrap_or_else(|| panic!("{:?}", d.events));
    assert_eq!(vacuum.within_ms, 0);
    assert!(
        (during.0..=during.1).contains(&vacuum.at_us),
        "{vacuum:?} {during:?}"
    );
    let checkpoint = d
        .events
        .iter()
        .find(|e| e.kind == "checkpoint" && e.cause.as_deref() == Some("requested"))
        .unwrap_or_else(|| panic!("{:?}", d.events));
    assert!(
        (during.0..=during.1 + 1_100_000).contains(&checkpoint.at_us),
        "{checkpoint:?} {during:?}"
    );
    let origin = r.context.started_us.expect("start");
    let at = finding(&r, "vacuum").figures["first_at_s"];
    assert!((at - (vacuum.at_us - origin) as f64 / 1e6).abs() < 1e-6);
    assert!(finding(&r, "checkpoint").summary.contains(" at "));
    let page = render(db, &r);
    assert!(page.contains(">checkpoint</text>"), "no checkpoint marker");
    assert!(page.contains(">vacuum</text>"), "no vacuum marker");

    if version >= 16 {
        let io = |backend: &str| {
            counters
                .io
                .iter()
                .filter(|i| i.backend_type == backend && i.object == "relation")
                .fold((0, 0), |(w, h), i| (w + i.writes, h + i.hits))
        };
        assert!(io("checkpointer").0 >= 1, "{:?}", counters.io);
        assert!(io("client backend").1 >= 1000, "{:?}", counters.io);
        let text = stdout(&out);
        let line = text
            .lines()
            .find(|l| l.starts_with("  server I/O: "))
            .unwrap_or_else(|| panic!("no I/O line in {text}"));
        assert!(line.contains("client backend "), "{line}");
    } else {
        assert!(counters.io.is_empty());
    }
}

/// The HTML page of `r`, rendered from its JSON.
fn render(db: &TempDb, r: &RunResult) -> String {
    let json = scratch(db, "render.json");
    std::fs::write(&json, pgbolt::report::to_compact_json(r).expect("json")).expect("write");
    let html = scratch(db, "render.html");
    let out = Command::new(pgbolt_path())
        .arg(format!("--render={}", json.display()))
        .arg(format!("--html={}", html.display()))
        .output()
        .expect("pgbolt renders");
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::read_to_string(html).expect("page")
}

#[test]
fn checkpoint_vacuum_and_another_sessions_commits_are_found_on_18() {
    checkpoint_vacuum_and_commits(server18(), 18);
}

#[test]
fn checkpoint_vacuum_and_another_sessions_commits_are_found_on_15() {
    checkpoint_vacuum_and_commits(server15(), 15);
}

fn scale_below_clients(db: &TempDb) {
    let _turn = turn();
    let dbname = bench_database(db);
    let (out, r) = run_json(db, &dbname, &["-c", "8", "-j", "2", "-t", "20"], || {});
    let f = finding(&r, "scale-below-clients");
    assert_eq!((f.figures["scale"], f.figures["clients"]), (1.0, 8.0));
    assert!(
        stdout(&out).contains("warning: scale 1 below 8 clients"),
        "{}",
        stdout(&out)
    );
    let db_counters = diagnosis(&r)
        .counters
        .as_ref()
        .and_then(|c| c.database)
        .expect("database counters");
    assert!(db_counters.rows_written >= 8 * 20 * 4, "{db_counters:?}");
}

#[test]
fn scale_1_with_8_clients_under_tpcb_like_is_found_on_18() {
    scale_below_clients(server18());
}

/// With pg_stat_statements installed, the run's statements are listed
/// with their calls; where it is not, the report says so.
#[test]
fn the_top_statements_come_from_pg_stat_statements_when_installed() {
    let _turn = turn();
    let db = server18();
    let dbname = bench_database(db);
    let (_, r) = run_json(db, &dbname, &["-S", "-c", "2", "-t", "50"], || {});
    assert!(diagnosis(&r).statements.is_empty());
    assert!(diagnosis(&r)
        .monitor
        .missing
        .iter()
        .any(|m| m == "pg_stat_statements: not installed in this database"));
    db.psql_in(&dbname, "CREATE EXTENSION pg_stat_statements")
        .expect("extension");
    let (out, r) = run_json(db, &dbname, &["-S", "-c", "2", "-t", "50"], || {});
    let select = diagnosis(&r)
        .statements
        .iter()
        .find(|s| s.query.contains("pgbench_accounts"))
        .unwrap_or_else(|| panic!("{:?}", diagnosis(&r).statements));
    assert_eq!(select.calls, 100);
    assert!(
        stdout(&out).contains("  top statement: "),
        "{}",
        stdout(&out)
    );
    // Regression: the monitor's own statements were told apart by their
    // first 200 characters, and its long activity sample was listed among
    // the workload's. A run long enough for many samples lists none.
    let (_, r) = run_json(db, &dbname, &["-S", "-c", "2", "-T", "2"], || {});
    for s in &diagnosis(&r).statements {
        assert!(
            !s.query.contains("pg_stat") && !s.query.contains("wait_event"),
            "{:?}",
            diagnosis(&r).statements
        );
    }
}

#[test]
fn scale_1_with_8_clients_under_tpcb_like_is_found_on_15() {
    scale_below_clients(server15());
}

/// A lock held for two seconds with pg_sleep: the throttled clients fall
/// behind schedule, and the slow transactions of the run are the ones of
/// that moment (a stall, and a schedule lag that slow transactions
/// explain); the monitor saw the backends wait on the lock.
#[test]
fn a_stall_is_named_and_its_lock_waits_seen() {
    let _turn = turn();
    let db = server18();
    let dbname = bench_database(db);
    let (_, r) = run_json(
        db,
        &dbname,
        &["-S", "-c", "2", "-j", "1", "-R", "400", "-T", "8"],
        || {
            wait_for_second_statement(db, "pgbolt", "SELECT abalance%");
            std::thread::sleep(std::time::Duration::from_secs(2));
            db.psql_in(
                &dbname,
                "BEGIN; LOCK TABLE pgbench_accounts; SELECT pg_sleep(2); COMMIT",
            )
            .expect("lock held");
        },
    );
    let stall = finding(&r, "stall");
    assert!(stall.figures["share"] >= 0.75);
    // The clients fell behind while the lock was held: a stall that
    // passed, unless the machine starved pgbolt itself.
    let lag = finding(&r, "schedule-lag");
    if diagnosis(&r)
        .findings
        .iter()
        .all(|f| f.id != "client-saturated")
    {
        assert_eq!(lag.severity, pgbolt::model::diagnosis::Severity::Warning);
        assert!(lag.summary.contains("slow transactions held up"), "{lag:?}");
    }
    let activity = diagnosis(&r).activity.as_ref().expect("activity");
    assert!(
        activity.total.waiting.get("Lock").copied().unwrap_or(0) > 0,
        "{activity:?}"
    );
}

/// One thread, 8 clients, a script without SQL: the thread works all the
/// time it gets a CPU, and waits for one the rest of the time. How the two
/// split depends on the machine; the finding must say what the figures
/// say.
#[test]
fn one_thread_driving_many_clients_is_reported_as_the_figure_says() {
    let _turn = turn();
    let db = server18();
    let (_, r) = run_script(
        db,
        "\\set a random(1, 1000)\n\\set b :a * 2\n",
        &["-c", "8", "-j", "1", "-T", "2"],
    );
    let d = diagnosis(&r);
    assert_eq!(d.client.thread_cpu_s.len(), 1);
    let wall = r.timings.bench_duration_us as f64 / 1e6;
    let queued = d.client.thread_runqueue_s.first().copied().unwrap_or(0.0);
    let share = (d.client.thread_cpu_s[0] + queued) / wall;
    assert!(d.client.thread_cpu_s[0] > 0.0);
    let found = d
        .findings
        .iter()
        .find(|f| f.id == "client-saturated" || f.id == "machine-saturated");
    assert_eq!(found.is_some(), share > 0.8, "share {share}: {found:?}");
    if let Some(f) = found {
        assert!((f.figures["busy_share"] - share).abs() < 1e-9);
    }
}

/// Regression: the monitor counted every backend whose application_name
/// was pgbolt's as the run's (a pooler's idle server connections from an
/// earlier run, another program), which skewed the state shares. It now
/// counts the backends its clients' connections got: another session of
/// the same name, asleep in `pg_sleep` through the whole run, is not
/// among them.
#[test]
fn a_session_of_the_same_name_is_not_the_runs() {
    let _turn = turn();
    let db = server18();
    let dbname = new_database(db);
    let mut other = db.command("psql");
    other
        .env("PGDATABASE", &dbname)
        .env("PGAPPNAME", "pgbolt")
        .args(["-X", "-q", "-c", "select pg_sleep(6)"])
        .stdout(std::process::Stdio::null());
    let mut other = other.spawn().expect("psql starts");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while db
        .psql("select count(*) from pg_stat_activity where wait_event = 'PgSleep'")
        .unwrap_or_default()
        .trim()
        == "0"
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the other session never slept"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let path = scratch(db, "select.sql");
    std::fs::write(&path, "select 1;\n").expect("script");
    let path = path.display().to_string();
    let (_, r) = run_json(
        db,
        &dbname,
        &["-n", "-f", &path, "-c", "2", "-T", "2"],
        || {},
    );
    let _ = other.kill();
    let _ = other.wait();
    let d = diagnosis(&r);
    let activity = d.activity.as_ref().expect("activity");
    assert!(activity.total.total() > 0, "{activity:?}");
    assert!(
        !activity.total.waiting.contains_key("Timeout"),
        "{:?}",
        activity.total
    );
}

/// Regression: on a machine overloaded by its server's backends, "client
/// saturated: thread 0 ran 5% of the run and waited 95% for a CPU". At
/// ten clients per CPU of a select-only script, pgbolt's one thread waits
/// for a CPU more than it runs while the machine's CPUs are full: that is
/// the machine's saturation, never the client's.
#[test]
fn ten_clients_per_cpu_saturate_the_machine_not_the_client() {
    let _turn = turn();
    let db = server18();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let clients = (10 * cpus).to_string();
    let (out, r) = run_script(db, "select 1;\n", &["-c", &clients, "-j", "1", "-T", "2"]);
    let d = diagnosis(&r);
    let wall = r.timings.bench_duration_us as f64 / 1e6;
    let (cpu, queued) = (
        d.client.thread_cpu_s[0] / wall,
        d.client.thread_runqueue_s.first().copied().unwrap_or(0.0) / wall,
    );
    let machine = d.client.machine_busy_share.expect("/proc/stat is read");
    let ids: Vec<&str> = d.findings.iter().map(|f| f.id.as_str()).collect();
    let figures = format!("cpu {cpu}, wait {queued}, machine {machine}: {ids:?}");
    if queued > cpu && machine >= 0.9 {
        assert!(!ids.contains(&"client-saturated"), "{figures}");
        assert_eq!(
            ids.contains(&"machine-saturated"),
            cpu + queued > 0.8,
            "{figures}"
        );
    } else {
        assert!(!ids.contains(&"machine-saturated"), "{figures}");
    }
    // On the project's 2-CPU machine the thread waits most of the run.
    if cpus <= 2 {
        assert!(ids.contains(&"machine-saturated"), "{figures}");
        let text = stdout(&out);
        assert!(text.contains("machine saturated: thread 0 ran "), "{text}");
    }
}

/// A throttled read-only run long enough for its percentiles, on a quiet
/// server: nothing to report, and the shares add up.
#[test]
fn a_clean_run_reports_no_finding() {
    let _turn = turn();
    let db = server18();
    let dbname = bench_database(db);
    let (out, r) = run_json(
        db,
        &dbname,
        &[
            "-S", "-c", "8", "-j", "2", "-R", "1000", "-T", "12", "--warmup", "2",
        ],
        || {},
    );
    let d = diagnosis(&r);
    // Without the warm-up, the first second's cold caches made a
    // `cold-start` finding now and then. On a machine busier than its CPUs (other test binaries, builds)
    // real stalls happen, and reporting them is right; elsewhere nothing
    // may be reported.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let load: f64 = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0);
    let from_the_machine = [
        "stall",
        "cold-start",
        "schedule-lag",
        "client-shares-machine",
        "client-saturated",
        "machine-saturated",
    ];
    let unexplained: Vec<&str> = d
        .findings
        .iter()
        .map(|f| f.id.as_str())
        .filter(|id| load <= cpus || !from_the_machine.contains(id))
        .collect();
    assert_eq!(
        unexplained,
        Vec::<&str>::new(),
        "load {load}: {}",
        stdout(&out)
    );
    if d.findings.is_empty() {
        assert!(stdout(&out).contains("  findings: none\n"));
    }
    let a = d.activity.as_ref().expect("activity");
    assert!(a.total.total() > 0);
    assert_eq!(
        a.intervals.iter().map(|i| i.total()).sum::<u64>(),
        a.total.total()
    );
    assert!(d.server_cpu.is_some(), "{:?}", d.monitor.missing);
}

/// With no connection slot left for it the monitor stays away (the run
/// is not refused); `--no-monitor` opens nothing; `--pgbench-output`
/// prints no diagnosis.
#[test]
fn the_monitor_never_takes_a_clients_slot_and_can_be_turned_off() {
    let _turn = turn();
    let db = TempDb::builder()
        .setting("fsync", "off")
        .setting("max_connections", "6")
        .start()
        .expect("small server starts");
    let dbname = bench_database(&db);
    // The superuser may take every slot, the reserved ones included.
    let (out, r) = run_json(&db, &dbname, &["-S", "-c", "6", "-t", "10"], || {});
    let d = diagnosis(&r);
    assert!(!d.monitor.ran);
    assert!(
        d.monitor
            .missing
            .iter()
            .any(|m| m.contains("connection slot")),
        "{:?}",
        d.monitor.missing
    );
    assert!(stdout(&out).contains("not measured: monitor: not started"));

    let (_, r) = run_json(
        &db,
        &dbname,
        &["-S", "-c", "1", "-t", "10", "--no-monitor"],
        || {},
    );
    let d = diagnosis(&r);
    assert_eq!(d.monitor.interval_ms, None);
    assert!(d.activity.is_none() && d.counters.is_none());

    let out = pgbolt(
        &db,
        &dbname,
        &["-S", "-c", "1", "-t", "10", "--pgbench-output"],
    );
    assert!(out.status.success());
    assert!(!stdout(&out).contains("diagnosis"), "{}", stdout(&out));
}

/// The monitor's backend terminated mid-run: the run goes on and ends
/// well, and the report says what is missing.
#[test]
fn a_monitor_that_loses_its_connection_never_fails_the_run() {
    let _turn = turn();
    let db = server18();
    let dbname = bench_database(db);
    let (out, r) = run_json(
        db,
        &dbname,
        &["-S", "-c", "1", "-R", "200", "-T", "3"],
        || {
            wait_for_second_statement(db, "pgbolt", "SELECT abalance%");
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            while !db
                .psql(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                     WHERE application_name = 'pgbolt-monitor'",
                )
                .unwrap_or_default()
                .contains('1')
            {
                assert!(std::time::Instant::now() < deadline, "no monitor seen");
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        },
    );
    let d = diagnosis(&r);
    assert!(d.monitor.ran);
    assert!(
        d.monitor
            .missing
            .iter()
            .any(|m| m.starts_with("connection lost after")),
        "{:?}",
        d.monitor.missing
    );
    assert!(d.counters.is_none());
    assert!(stdout(&out).contains("not measured: connection lost after"));
}

/// A rate the server cannot serve: one client, 100 transactions per
/// second asked, each a 20 ms pg_sleep. The schedule is lost for good
/// (critical), and the figures say the client was busy all the time.
#[test]
fn a_rate_the_server_cannot_serve_is_a_schedule_lag_finding() {
    let _turn = turn();
    let db = server18();
    let (out, r) = run_script(
        db,
        "SELECT pg_sleep(0.02);\n",
        &["-c", "1", "-R", "100", "-T", "3"],
    );
    let f = finding(&r, "schedule-lag");
    assert_eq!(f.severity, pgbolt::model::diagnosis::Severity::Critical);
    assert!((f.figures["client_interval_ms"] - 10.0).abs() < 1e-9);
    assert!(f.figures["lag_p99_ms"] > 100.0, "{f:?}");
    assert!(f.figures["clients_busy"] >= 0.9, "{f:?}");
    assert!(
        stdout(&out).contains("critical: schedule lag p99 "),
        "{}",
        stdout(&out)
    );
}

/// Under --start-at the monitor connects during the wait (once the
/// clients are connected), but counts and samples from the start: 200 commits of another session during the
/// wait are not the run's, and the samples and the server's CPU cover the
/// 2 s run, not the 2.5 s before it.
#[test]
fn the_wait_for_start_at_is_not_in_the_diagnosis() {
    let _turn = turn();
    let db = server18();
    let dbname = bench_database(db);
    let start_at = pgbolt::wallclock::now_us() + 2_500_000;
    let start_arg = format!("--start-at={}", start_at as f64 / 1e6);
    let others = "select 1;\n".repeat(200);
    let (_, r) = run_json(
        db,
        &dbname,
        &["-S", "-c", "1", "-R", "100", "-T", "2", &start_arg],
        || {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
            while !db
                .psql(
                    "SELECT count(*) FROM pg_stat_activity \
                     WHERE application_name = 'pgbolt-monitor'",
                )
                .unwrap_or_default()
                .contains('1')
            {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the monitor never connected"
                );
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            db.psql_in(&dbname, &others).expect("other commits");
            assert!(
                pgbolt::wallclock::now_us() < start_at - 200_000,
                "the other session's commits ran into the run"
            );
        },
    );
    let d = diagnosis(&r);
    assert!(
        d.findings.iter().all(|f| f.id != "commits-disagree"),
        "{:#?}",
        d.findings
    );
    let db_counters = d
        .counters
        .as_ref()
        .and_then(|c| c.database)
        .expect("database");
    assert!(
        db_counters.xact_commit < r.counts.counters.committed as i64 + 100,
        "{db_counters:?}"
    );
    let a = d.activity.as_ref().expect("activity");
    assert!(a.start_us >= start_at, "{} {start_at}", a.start_us);
    // About 20 samples in 2 s, not 45 in 4.5.
    assert!(d.monitor.samples <= 30, "{} samples", d.monitor.samples);
    if let Some(cpu) = d.server_cpu {
        assert!(cpu.wall_s < 3.5, "{cpu:?}");
    }
}

/// A sweep's warm-up is a run of its own: the measured step's diagnosis
/// counts the step's commits and samples only.
#[test]
fn a_sweeps_warm_up_is_not_in_its_steps_diagnosis() {
    let _turn = turn();
    let db = server18();
    let dbname = bench_database(db);
    let json = scratch(db, "sweep.json");
    let out = pgbolt(
        db,
        &dbname,
        &[
            "-S",
            "-R",
            "100",
            "-T",
            "2",
            "--sweep=clients:1",
            "--warmup=1",
            &format!("--json={}", json.display()),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let sweep: pgbolt::model::sweep::SweepResult =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("sweep file"))
            .expect("sweep reads");
    let step = &sweep.steps[0].result;
    let d = diagnosis(step);
    let db_counters = d
        .counters
        .as_ref()
        .and_then(|c| c.database)
        .expect("database");
    let committed = step.counts.counters.committed as i64;
    let others = db_counters.xact_commit - committed - db_counters.monitor_commits;
    assert!(others.abs() <= 11, "{db_counters:?}, {committed} committed");
    // At most one sample per 100 ms of the 2 s step; the warm-up's second
    // would add ten.
    assert!(d.monitor.samples <= 25, "{} samples", d.monitor.samples);
}
