//! The benchmark run: pgbench's engine on one event loop per thread.
//!
//! # How a run goes
//! 1. [`plan`]: scripts loaded, variables resolved to slots, clients dealt
//!    to threads exactly as pgbench deals them.
//! 2. [`prepare`](mod@prepare), through [`setup`]: one blocking connection
//!    prints the version line, checks the server's connection limit (the
//!    preflight, skipped with `--no-preflight`), reads the scale from
//!    `pgbench_branches` when a builtin script runs, and vacuums; then it
//!    closes.
//! 3. Every client gets pgbench's automatic variables and its own random
//!    state (drawn in pgbench's order from the seed by
//!    [`prepare`](mod@prepare), so `--random-seed` reproduces pgbench's
//!    values); each thread gets its script-choice, throttling and sampling
//!    generators.
//! 4. [`worker`]: each thread opens its clients' connections concurrently
//!    (non-blocking connect state machines on its mio poller, as many at
//!    once as the window of [`pacing`] allows), waits
//!    at a gate until every thread is connected, then runs the client
//!    state machine of [`machine`] until every client is finished or
//!    aborted. Thread 0 is the calling thread, as in pgbench: with `-j 1`
//!    the process stays single-threaded, which the kernel and libc reward
//!    on every system call.
//! 5. [`outcome`]: the per-thread statistics are merged into the run's
//!    [`RunResult`] with what pgbench says of how the run ended
//!    ([`Finished`]); the exit status is pgbench's (2 when a client
//!    aborted). Printing the report and writing the result files is the
//!    caller's (`crate::app`).
//!
//! The engine knows nothing of studies, fleets or files: it takes its
//! settings from `crate::config` (a generator's share included), fills
//! `crate::model`'s shapes, asks `crate::observe` to watch the server and
//! `crate::diagnose` for the findings, hands each thread's figures to
//! `crate::metrics` when a live endpoint is open (on a beat, after a turn
//! of the loop), and uses the script, expression, statistics and program
//! modules below them.
//!
//! # One run among several (`run_step`)
//! A sweep ([`crate::study`]) runs the benchmark many times in one process.
//! [`run_step`] is its seam: the same steps 1 to 4 as [`run`], then the
//! merged [`RunResult`] and the status a plain run would have had, with
//! nothing printed and no result file written. A [`StepSetup`] shapes the
//! set-up connection's work: whether to print the version line (once per
//! sweep), the client count the preflight checks (the sweep's largest, at
//! its first step), a `CHECKPOINT` after the vacuum, and when `-T`
//! starts counting ([`Window`]). [`run`] itself is `prepare`, `execute`
//! and `build_result`, so both share every line.
//!
//! # When `-T` starts
//! pgbench sets a timed run's end before its clients connect, so
//! connecting takes its time out of the measured window: at `-c 500 -T 5`
//! about a second of it on a small machine. A plain run keeps that, to
//! the microsecond. A study compares steps with each other, and a step at
//! 600 clients measured over 2 s against one at 50 over 4.7 s is not like
//! with like; so a study's steps ask for [`Window::FromConnected`]: the
//! end is set by the thread whose clients connect last, `-T` after that
//! moment, before any thread starts (they wait at the start gate for it).
//!
//! # The hot path
//! After the start a transaction allocates nothing and takes no lock: SQL
//! text is written into a reused buffer and Bind parameters straight into
//! the message, each command (or pipeline) is one write, results are
//! framed in place, statistics go to the thread's own recorder (one
//! histogram record per transaction), and the clock is read once per step.
//! Formatting happens only for `--debug`, errors and `-l` log lines (into
//! a buffered writer).
//!
//! # Spinning instead of sleeping (`--busy-poll`)
//! A thread with nothing to do sleeps in `epoll_wait` until the server
//! answers, and waking it costs more than the answer itself on an idle
//! core (most of all in a virtual machine, where the idle core halts and
//! the wake-up is an interrupt through the hypervisor). Measured on the
//! project's machine, `-c 1 -j 1` spent 90 us per point select that way,
//! 37 us when the thread polled without sleeping. Spinning takes a whole
//! core, though, so `auto` considers it only while the pgbolt threads and
//! one server backend per client fit the CPUs this process may use; and
//! because a spinner also keeps a backend off its CPU, which loses when the
//! scheduler would have run both on one CPU, `auto` spins only while trials
//! during the run measure it faster ([`spin`]). The spin is bounded
//! ([`worker::SPIN_BUDGET`]), and it never delays a timer.

mod app_pool;
mod client;
mod clock;
mod commits;
mod env;
pub mod error;
mod linger;
mod machine;
mod meta;
mod monitor;
mod outcome;
mod pacing;
pub mod plan;
mod prepare;
mod progress;
mod reconnect;
mod setup;
mod setup_stop;
mod shared;
mod shell;
mod signals;
mod spin;
mod sql;
mod timer;
mod uring;
mod worker;

use std::collections::{BinaryHeap, VecDeque};
use std::ops::Range;
use std::os::fd::RawFd;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use mio::unix::SourceFd;
use mio::{Interest, Poll, Registry};

use crate::config::{Benchmark, BusyPoll, Config, IoMethod, RunLength};
use crate::model::run::RunResult;
use crate::program::log;
use crate::stats::{LogOptions, ProgressOptions, StatsLayout, ThreadStats, TransactionLog};

use client::Client;
use clock::Clock;
use env::ThreadEnv;
pub use error::EngineError;
use linger::Lingering;
use monitor::start_monitor;
pub use outcome::Finished;
use outcome::{build_result, Ended};
use plan::Plan;
use prepare::{defined, prepare, Prepared};
use shared::Shared;
pub use signals::{install_between, received_between};
use spin::SpinMode;
use worker::WorkerResult;

/// How a plain run ended.
pub enum Ran {
    /// The run's result, complete or not, to report.
    Finished(Box<Finished>),
    /// Nothing to report (the warm-up failed, every client aborted before
    /// recording anything): the exit status.
    Nothing(i32),
}

/// Runs the benchmark as pgbench does (after a `--warmup`, if asked),
/// printing what pgbench prints while it runs; the result is the
/// caller's to report.
pub fn run(config: &Config, bench: &Benchmark) -> Result<Ran, EngineError> {
    let mut setup = StepSetup::pgbench();
    let mut measured = std::borrow::Cow::Borrowed(bench);
    if bench.warmup_s > 0 {
        crate::metrics::label_next_run(crate::metrics::RunLabels {
            warmup: true,
            ..crate::metrics::RunLabels::default()
        });
        let done = run_step(config, &warmup_of(bench), &setup)?;
        match done.result {
            Some(result) if done.status == 0 => crate::program::ewriteln!(
                "warm-up: {} s, {:.1} tps, not counted",
                bench.warmup_s,
                result.tps
            ),
            _ => {
                log::error(format_args!("the warm-up failed; nothing was measured"));
                return Ok(Ran::Nothing(done.status));
            }
        }
        setup.announce = false;
        measured.to_mut().vacuum = crate::config::VacuumBeforeRun::Skip;
    }
    let prepared = prepare(config, &measured, &setup)?;
    let Executed::Ended(ended) = execute(config, &prepared, &measured, setup.window)? else {
        return Ok(Ran::Nothing(2));
    };
    Ok(match build_result(&prepared, &measured, *ended)? {
        Some(finished) => Ran::Finished(Box::new(finished)),
        None => Ran::Nothing(2),
    })
}

/// The unmeasured run before `bench` (`--warmup`): its clients and
/// threads for the warm-up's seconds, without progress lines, logs or a
/// result file.
pub fn warmup_of(bench: &Benchmark) -> Benchmark {
    let mut warmup = bench.clone();
    warmup.length = RunLength::Duration(bench.warmup_s);
    warmup.progress = None;
    warmup.log = None;
    warmup
}

/// How a sweep's step differs from a plain run before its clients connect.
#[derive(Debug, Clone, Copy)]
pub struct StepSetup {
    /// Print pgbench's version line (once per process is enough).
    pub announce: bool,
    /// The client count the preflight checks the connection limit
    /// against, when it is not the step's own (the sweep's largest).
    pub preflight_clients: Option<u32>,
    /// Run `CHECKPOINT` after the vacuum.
    pub checkpoint: bool,
    /// When `-T` starts counting.
    pub window: Window,
}

/// When a timed run's `-T` starts counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// When the run starts, before its clients connect, as pgbench
    /// counts: connecting takes its time out of the measured window.
    FromStart,
    /// When the last client is connected: the measured window lasts `-T`
    /// however long connecting took, so that a study's steps at 10 and at
    /// 500 clients measure equal lengths.
    FromConnected,
}

impl StepSetup {
    /// What pgbench does.
    fn pgbench() -> StepSetup {
        StepSetup {
            announce: true,
            preflight_clients: None,
            checkpoint: false,
            window: Window::FromStart,
        }
    }
}

/// One step's outcome: its result (none when every thread failed) and
/// the exit status a plain run would have had.
pub struct Step {
    pub result: Option<RunResult>,
    pub status: i32,
}

/// Runs one step of a study: the same run as [`run`], with its set-up
/// shaped by `setup`, and its result returned instead of printed; no
/// result file is written. This is the seam [`crate::study`] drives.
pub fn run_step(
    config: &Config,
    bench: &Benchmark,
    setup: &StepSetup,
) -> Result<Step, EngineError> {
    let prepared = prepare(config, bench, setup);
    // A signal during the set-up (it cancels the set-up's statement, so
    // `prepare` may have failed because of it) ends the step unrun.
    if let Some(signo) = signals::received_between() {
        return Ok(Step {
            result: None,
            status: 128 + signo,
        });
    }
    let prepared = prepared?;
    let ended = match execute(config, &prepared, bench, setup.window)? {
        Executed::Ended(ended) => *ended,
        Executed::Aborted => {
            return Ok(Step {
                result: None,
                status: 2,
            })
        }
    };
    let Some(built) = build_result(&prepared, bench, ended)? else {
        return Ok(Step {
            result: None,
            status: 2,
        });
    };
    let status = built.status(false);
    Ok(Step {
        result: Some(built.result),
        status,
    })
}

/// The preflight alone, before a series of runs starts (or before a
/// throwaway instance's tables are loaded): connects as a run's set-up
/// connection does and checks that the server can take `clients` more
/// connections (nothing to check behind a pooler); `swept` when they are
/// a sweep's largest step, for the hint.
pub fn preflight_only(config: &Config, clients: u32, swept: bool) -> Result<(), EngineError> {
    let (_, mut client) = setup::connect(&config.connection)?;
    let checked = setup::preflight(&mut client, clients, config.temp_instance.is_some());
    client.close();
    checked.map(drop).map_err(|e| match e {
        EngineError::Preflight(mut p) => {
            p.swept = swept;
            EngineError::Preflight(p)
        }
        other => other,
    })
}

/// How the threads finished.
enum Executed {
    Ended(Box<Ended>),
    /// A client aborted the run (`--exit-on-abort`); already reported.
    Aborted,
}

/// Starts the threads on a prepared run and waits for them; a timed run's
/// end counts from its start or from its last connection (`window`).
fn execute(
    config: &Config,
    prepared: &Prepared,
    bench: &Benchmark,
    window: Window,
) -> Result<Executed, EngineError> {
    let io_uring = choose_io(config.io)?;
    let spin = if io_uring {
        SpinMode::Never
    } else {
        choose_spin(config.busy_poll, &prepared.plan)
    };
    let clock = Clock::new();
    let start_time = clock.now_us();
    // Under --start-at the run's length counts from that time.
    let begin = bench
        .start_at_us
        .map_or(start_time, |at| at.max(start_time));
    let length_us = prepared.plan.duration.map(|d| d.as_micros() as i64);
    let end_us = match window {
        Window::FromStart => length_us.map(|d| begin + d),
        Window::FromConnected => None,
    };
    let guard = signals::install().map_err(EngineError::Thread)?;
    let mut shared = Shared::new(prepared.plan.threads as usize, end_us);
    if window == Window::FromConnected {
        shared.length_after_connect_us = length_us;
    }
    shared.start_at = bench.start_at_us;
    let shared = Arc::new(shared);
    let process_cpu_start = crate::observe::cpu::process_cpu_us();
    let machine_start = crate::observe::cpu::machine_ticks();
    let wake_fd = guard.wake_fd();
    let live = crate::metrics::current();
    let beats = live.as_ref().map(|l| {
        let scripts = prepared
            .plan
            .scripts
            .iter()
            .map(|s| s.name.clone())
            .collect();
        l.open_run(scripts, prepared.plan.threads as usize)
    });
    // The monitor's samples go to this run's series, never to a later one.
    let sink = live
        .clone()
        .zip(
            beats
                .as_ref()
                .and_then(|b| b.first())
                .map(crate::metrics::Beat::run),
        )
        .map(|(live, run)| {
            Box::new(move |sample: Option<crate::observe::Sample<'_>>| {
                live.sample_backends(&run, sample)
            }) as crate::observe::SampleSink
        });
    let monitor = start_monitor(prepared, bench, &shared, sink);
    let starts = prepared
        .plan
        .client_ranges()
        .into_iter()
        .enumerate()
        .map(|(tid, range)| ThreadStart {
            tid,
            range,
            clock,
            start_time,
            end_us,
            wake_fd,
            io_uring,
            spin,
            live: beats.as_ref().and_then(|b| b.get(tid).cloned()),
        });
    let outcomes = run_threads(prepared, bench, &shared, starts);
    if let Some(l) = &live {
        l.close_run();
    }
    // The run ends with its threads, as pgbench's does: not after the
    // monitor's end readings, which through a pooler wait seconds for
    // backends that never leave.
    let now = clock.now_us();
    // The process's CPU and the machine's share up to here, before the
    // monitor's end readings: their wait for the backends to leave would
    // dilute the machine's share, mostly idle, into a short run's.
    let machine_end = crate::observe::cpu::machine_ticks();
    let process_cpu_us = crate::observe::cpu::process_cpu_us() - process_cpu_start;
    let (results, panicked) = worker_results(outcomes);
    let interrupted_by = signals::received();
    let server_view = monitor.stop();
    drop(guard);
    if let Some(e) = shared.take_start_error() {
        return Err(e);
    }
    if panicked {
        return Err(EngineError::ThreadPanicked);
    }
    if let Some(tid) = shared.abort_thread() {
        log::error(format_args!(
            "Run was aborted due to an error in thread {tid}"
        ));
        return Ok(Executed::Aborted);
    }
    Ok(Executed::Ended(Box::new(Ended {
        results,
        start_time,
        now,
        interrupted_by,
        ready_us: shared.ready_us(),
        window_end_us: shared.length_after_connect_us.and_then(|_| shared.end_us()),
        server_view,
        process_cpu_us,
        machine_busy_share: machine_start
            .zip(machine_end)
            .and_then(|(start, end)| crate::observe::cpu::machine_busy_share(start, end)),
    })))
}

/// What a worker thread's loop returns, or its panic.
type WorkerOutcome = std::thread::Result<Option<WorkerResult>>;

/// Starts a thread for each of `starts` and waits for them all; a thread
/// that fails to start stops the starting and fails the start gate.
///
/// Thread 0 runs on this thread, as pgbench's does: with `-j 1` the
/// process stays single-threaded, which spares every system call the
/// reference counting of a shared descriptor table and libc's
/// cancellation-point bookkeeping.
fn run_threads(
    prepared: &Prepared,
    bench: &Benchmark,
    shared: &Arc<Shared>,
    starts: impl Iterator<Item = ThreadStart>,
) -> Vec<WorkerOutcome> {
    let plan = prepared.plan.clone();
    let mut own = None;
    let mut handles = Vec::new();
    for thread in starts {
        let tid = thread.tid;
        let started = thread_parts(prepared, &plan, bench, &thread).and_then(|parts| {
            if tid == 0 {
                own = Some(parts);
                return Ok(());
            }
            let (clients, env, poll) = parts;
            let (plan, shared) = (plan.clone(), shared.clone());
            std::thread::Builder::new()
                .name(format!("pgbolt-{tid}"))
                .spawn(move || run_worker(plan, shared, clients, env, poll))
                .map(|handle| handles.push(handle))
                .map_err(EngineError::Thread)
        });
        if let Err(e) = started {
            shared.fail_start(e);
            own = None;
            break;
        }
    }
    let mut outcomes = Vec::with_capacity(handles.len() + 1);
    if let Some((clients, env, poll)) = own {
        outcomes.push(run_worker(plan, shared.clone(), clients, env, poll));
    }
    for h in handles {
        outcomes.push(h.join().and_then(|outcome| outcome));
    }
    outcomes
}

/// The results the threads left (a thread that left none adds none), and
/// whether one of them panicked.
fn worker_results(outcomes: Vec<WorkerOutcome>) -> (Vec<WorkerResult>, bool) {
    let mut results = Vec::with_capacity(outcomes.len());
    let mut panicked = false;
    for outcome in outcomes {
        match outcome {
            Ok(Some(r)) => results.push(r),
            Ok(None) => {}
            Err(_) => panicked = true,
        }
    }
    (results, panicked)
}

/// Runs one worker thread's loop. A panic (a bug) is reported through the
/// start gate too, so that threads still waiting there for every thread to
/// connect give up instead of waiting forever.
fn run_worker(
    plan: Arc<Plan>,
    shared: Arc<Shared>,
    clients: Vec<Client>,
    env: ThreadEnv,
    poll: Poll,
) -> std::thread::Result<Option<WorkerResult>> {
    let gate = shared.clone();
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(move || {
        worker::run(plan, shared, clients, env, poll)
    }));
    if outcome.is_err() {
        gate.fail_start(EngineError::ThreadPanicked);
    }
    outcome
}

/// What a thread is started with besides the plan.
struct ThreadStart {
    tid: usize,
    range: Range<u32>,
    clock: Clock,
    start_time: i64,
    end_us: Option<i64>,
    wake_fd: RawFd,
    io_uring: bool,
    spin: SpinMode,
    live: Option<crate::metrics::Beat>,
}

/// Whether the threads drive their connections with io_uring: only when
/// `--io=uring` insists (failing when the kernel or a seccomp filter
/// forbids it). `auto` means epoll: on the machine we measure, io_uring
/// halves the system calls per transaction but lowers neither the client's
/// CPU per transaction nor raises the rate (see docs/performance.md).
fn choose_io(io: IoMethod) -> Result<bool, EngineError> {
    match io {
        IoMethod::Epoll | IoMethod::Auto => Ok(false),
        IoMethod::Uring => uring::probe().map(|()| true).map_err(EngineError::IoUring),
    }
}

/// How the threads wait: `auto` lets them spin, while trials measure it
/// faster (see [`spin`]), when the threads plus one server backend per
/// connection (per client, or per pooled connection) fit the CPUs available
/// to this process, so the spinning never takes a core the server needs
/// when it runs on this machine. Never under
/// `-R`: the rate is fixed, so spinning cannot raise it; it only trades
/// the client's CPU (1.5x pgbench's per transaction at `-c 1 -R 1000`)
/// for its own wake-up, and a rate-limited run is where the client's own
/// load matters most.
fn choose_spin(mode: BusyPoll, plan: &Plan) -> SpinMode {
    match mode {
        BusyPoll::On => SpinMode::Always,
        BusyPoll::Off => SpinMode::Never,
        BusyPoll::Auto => {
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            let throttled = plan.throttle_delay_us > 0.0;
            if !throttled && fits_spare_cpus(plan.threads, plan.connections(), cpus) {
                SpinMode::Adaptive
            } else {
                SpinMode::Never
            }
        }
    }
}

fn fits_spare_cpus(threads: u32, clients: u32, cpus: usize) -> bool {
    u64::from(threads) + u64::from(clients) <= cpus as u64
}

/// A thread's clients, its environment and its poller.
fn thread_parts(
    prepared: &Prepared,
    plan: &Plan,
    bench: &Benchmark,
    t: &ThreadStart,
) -> Result<(Vec<Client>, ThreadEnv, Poll), EngineError> {
    let (poll, registry, sleeper) = thread_poll(t.wake_fd)?;
    let per_script = plan.commands_per_script();
    let clients = thread_clients(prepared, plan, bench, t.range.clone(), &per_script);
    let log = match &bench.log {
        Some(opts) => Some(
            TransactionLog::create(&log_options(bench, opts), t.tid, t.start_time)
                .map_err(EngineError::Log)?,
        ),
        None => None,
    };
    let ts = prepared.states.threads[t.tid];
    let pool = plan.pool_shares().map(|shares| {
        // Pooled sockets' tokens come after the clients', their children's
        // and their lingering connections' (see `worker`).
        app_pool::Pool::new(shares[t.tid] as usize, clients.len(), 3 * clients.len())
    });
    let stats = thread_stats(plan, bench, t.start_time, per_script, pool.is_some());
    let env = ThreadEnv {
        tid: t.tid,
        clock: t.clock,
        registry,
        connector: prepared.connector.clone(),
        clients: clients.len(),
        timers: BinaryHeap::with_capacity(clients.len() * 2 + 4),
        runq: VecDeque::with_capacity(clients.len() + 1),
        pacer: pacing::Pacer::new(clients.len(), plan.threads),
        stats,
        log,
        log_failed: false,
        choose: ts.choose,
        throttle: ts.throttle,
        sample: ts.sample,
        throttle_trigger: 0,
        conn_duration: 0,
        over: false,
        end_us: t.end_us,
        count_until: i64::MAX,
        io_uring: t.io_uring,
        spin: t.spin,
        sleeper,
        ring: None,
        lingering: Lingering::default(),
        pool,
        progress: thread_progress(plan, bench, t.start_time),
        reconnecting: reconnect::Waiting::default(),
        live: t.live.clone(),
    };
    Ok((clients, env, poll))
}

/// A thread's poller, with the signal pipe's wake-up registered; a handle
/// on its registry for the connections, and its timer.
fn thread_poll(wake_fd: RawFd) -> Result<(Poll, Registry, timer::Sleeper), EngineError> {
    let poll = Poll::new().map_err(EngineError::Poll)?;
    poll.registry()
        .register(&mut SourceFd(&wake_fd), worker::SIGNAL, Interest::READABLE)
        .map_err(EngineError::Poll)?;
    let registry = poll.registry().try_clone().map_err(EngineError::Poll)?;
    let sleeper = timer::Sleeper::new(&registry, worker::TIMER).map_err(EngineError::Poll)?;
    Ok((poll, registry, sleeper))
}

/// A thread's clients (those of `range`), each with the starting variables,
/// its `client_id` and its own random state.
fn thread_clients(
    prepared: &Prepared,
    plan: &Plan,
    bench: &Benchmark,
    range: Range<u32>,
    per_script: &[usize],
) -> Vec<Client> {
    range
        .map(|local| {
            // A generator's clients are numbered after the fleet's earlier
            // generators' (see crate::fleet).
            let id = local + bench.fleet.map_or(0, |s| s.client_offset);
            let mut vars = prepared.base.clone();
            if !defined(bench, "client_id") {
                vars.set(plan.slots.client_id, crate::expr::Value::Int(i64::from(id)));
            }
            let mut client = Client::new(
                id,
                vars,
                prepared.states.clients[local as usize],
                per_script,
            );
            client.watch = plan
                .reconnect_wait_us
                .map(|wait| reconnect::Watch::new(id, wait));
            client
        })
        .collect()
}

/// A thread's statistics recorder, shaped by the run's options; with the
/// wait for a pooled connection tracked when the clients share a pool.
fn thread_stats(
    plan: &Plan,
    bench: &Benchmark,
    start_time: i64,
    per_script: Vec<usize>,
    pooled: bool,
) -> ThreadStats {
    let layout = StatsLayout {
        commands_per_script: per_script,
        latency_limit_us: plan.latency_limit_us,
        start_us: start_time,
        throttled: plan.throttle_delay_us > 0.0,
        // The live metrics read the series' histograms too.
        series: bench.json.is_some() || bench.html.is_some() || crate::metrics::current().is_some(),
    };
    let mut stats = ThreadStats::new(&layout);
    if pooled {
        stats.track_pool_wait();
    }
    stats
}

/// A thread's `--progress` reports, when asked for.
fn thread_progress(plan: &Plan, bench: &Benchmark, start_time: i64) -> Option<progress::Progress> {
    bench.progress.map(|interval| {
        progress::Progress::new(
            interval,
            ProgressOptions {
                timestamp: bench.progress_timestamp,
                throttled: bench.rate.is_some(),
                latency_limit: bench.latency_limit.is_some(),
                max_tries: plan.max_tries,
            },
            start_time,
        )
    })
}

fn log_options(bench: &Benchmark, log: &crate::config::TransactionLog) -> LogOptions {
    LogOptions {
        prefix: Some(log.prefix.clone()),
        pid: std::process::id(),
        throttled: bench.rate.is_some(),
        latency_limit: bench.latency_limit.is_some(),
        max_tries: bench.max_tries.unwrap_or(0),
        failures_detailed: bench.failures_detailed,
        continue_on_error: bench.continue_on_error,
        sampling_rate: log.sampling_rate,
        aggregate_interval_s: log.aggregate_interval,
    }
}

#[cfg(test)]
mod tests {
    use super::fits_spare_cpus;

    #[test]
    fn spinning_needs_a_core_for_every_thread_and_backend() {
        assert!(fits_spare_cpus(1, 1, 2));
        assert!(!fits_spare_cpus(1, 2, 2));
        assert!(!fits_spare_cpus(2, 8, 2));
        assert!(fits_spare_cpus(2, 8, 16));
    }
}
