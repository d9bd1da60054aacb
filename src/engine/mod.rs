//! The benchmark run: pgbench's engine on one event loop per thread.
//!
//! # How a run goes
//! 1. [`plan`]: scripts loaded, variables resolved to slots, clients dealt
//!    to threads exactly as pgbench deals them.
//! 2. [`setup`]: one blocking connection prints the version line, checks
//!    the server's connection limit (the preflight, skipped with
//!    `--no-preflight`), reads the scale from `pgbench_branches` when a
//!    builtin script runs, and vacuums; then it closes.
//! 3. Every client gets pgbench's automatic variables and its own random
//!    state (drawn in pgbench's order from the seed, so `--random-seed`
//!    reproduces pgbench's values); each thread gets its script-choice,
//!    throttling and sampling generators.
//! 4. [`worker`]: each thread opens its clients' connections concurrently
//!    (non-blocking connect state machines on its mio poller, as many at
//!    once as the window of [`pacing`] allows), waits
//!    at a gate until every thread is connected, then runs the client
//!    state machine of [`machine`] until every client is finished or
//!    aborted. Thread 0 is the calling thread, as in pgbench: with `-j 1`
//!    the process stays single-threaded, which the kernel and libc reward
//!    on every system call.
//! 5. [`outcome`]: the per-thread statistics are merged and rendered by
//!    [`crate::report`]; the exit status is pgbench's (2 when a client
//!    aborted).
//!
//! # One run among several (`run_step`)
//! A sweep ([`crate::study`]) runs the benchmark many times in one process.
//! [`run_step`] is its seam: the same steps 1 to 4 as [`run`], then the
//! merged [`RunResult`] and the status a plain run would have had, with
//! nothing printed and no result file written. A [`StepSetup`] shapes the
//! set-up connection's work: whether to print the version line (once per
//! sweep), the client count the preflight checks (the sweep's largest, at
//! its first step) and a `CHECKPOINT` after the vacuum. [`run`] itself is
//! `prepare`, `execute` and the report, so both share every line.
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
mod env;
pub mod error;
mod linger;
mod machine;
mod meta;
mod monitor;
mod outcome;
mod pacing;
pub mod plan;
mod progress;
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
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use mio::unix::SourceFd;
use mio::{Interest, Poll};

use crate::config::{Benchmark, BusyPoll, Config, IoMethod, RunLength};
use crate::expr::vars::Variables;
use crate::model::run::RunResult;
use crate::program::log;
use crate::random::{RandomSeed, RandomStates};
use crate::stats::{LogOptions, ProgressOptions, StatsLayout, ThreadStats, TransactionLog};

use client::Client;
use clock::Clock;
use env::ThreadEnv;
pub use error::EngineError;
use linger::Lingering;
use monitor::start_monitor;
pub use outcome::Finished;
use outcome::{build_result, json_to_stdout, Ended};
use plan::Plan;
use shared::Shared;
pub use signals::{install_between, received_between};
use spin::SpinMode;
use worker::WorkerResult;

/// What the set-up established, for the threads.
struct Prepared {
    plan: Arc<Plan>,
    connector: pgwire::Connector,
    scale: i64,
    partitioning: Option<(String, u32)>,
    server_settings: std::collections::BTreeMap<String, String>,
    states: RandomStates,
    /// The variables every client starts with, `client_id` aside.
    base: Variables,
    /// The server's `server_version`, for the reports.
    server_version: Option<String>,
    /// Connection slots the preflight found left for the monitor.
    spare_slots: Option<i64>,
    /// Why the monitor must not connect, when the set-up found a reason.
    monitor_refused: Option<String>,
    /// `pg_stat_database` as the set-up connection read it last, for the
    /// monitor.
    database_start: Option<crate::observe::DatabaseStart>,
}

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
    let Executed::Ended(ended) = execute(config, &prepared, &measured)? else {
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
}

impl StepSetup {
    /// What pgbench does.
    fn pgbench() -> StepSetup {
        StepSetup {
            announce: true,
            preflight_clients: None,
            checkpoint: false,
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
    let ended = match execute(config, &prepared, bench)? {
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

/// The preflight alone, before a series of runs starts: connects as a
/// run's set-up connection does and checks that the server can take
/// `clients` more connections (nothing to check behind a pooler).
pub fn preflight_only(config: &Config, clients: u32) -> Result<(), EngineError> {
    let (_, mut client) = setup::connect(&config.connection)?;
    let checked = setup::preflight(&mut client, clients, config.temp_instance.is_some());
    client.close();
    checked.map(drop)
}

/// How the threads finished.
enum Executed {
    Ended(Box<Ended>),
    /// A client aborted the run (`--exit-on-abort`); already reported.
    Aborted,
}

/// Starts the threads on a prepared run and waits for them.
fn execute(
    config: &Config,
    prepared: &Prepared,
    bench: &Benchmark,
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
    let end_us = prepared.plan.duration.map(|d| begin + d.as_micros() as i64);
    let guard = signals::install().map_err(EngineError::Thread)?;
    let mut shared = Shared::new(prepared.plan.threads as usize, end_us);
    shared.start_at = bench.start_at_us;
    let shared = Arc::new(shared);
    let process_cpu_start = crate::observe::cpu::process_cpu_us();
    let monitor = start_monitor(prepared, bench, &shared);
    let plan = prepared.plan.clone();
    // Thread 0 runs on this thread, as pgbench's does: with `-j 1` the
    // process stays single-threaded, which spares every system call the
    // reference counting of a shared descriptor table and libc's
    // cancellation-point bookkeeping.
    let mut own = None;
    let mut handles = Vec::new();
    for (tid, range) in plan.client_ranges().into_iter().enumerate() {
        let thread = ThreadStart {
            tid,
            range,
            clock,
            start_time,
            end_us,
            wake_fd: guard.wake_fd(),
            io_uring,
            spin,
        };
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
    // The run ends with its threads, as pgbench's does: not after the
    // monitor's end readings, which through a pooler wait seconds for
    // backends that never leave.
    let now = clock.now_us();
    let mut results = Vec::with_capacity(outcomes.len());
    let mut panicked = false;
    for outcome in outcomes {
        match outcome {
            Ok(Some(r)) => results.push(r),
            Ok(None) => {}
            Err(_) => panicked = true,
        }
    }
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
        server_view,
        process_cpu_us: crate::observe::cpu::process_cpu_us() - process_cpu_start,
    })))
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

/// A host as libpq's `PQhost` names it: the socket directory, the host
/// name, or the address when only `hostaddr` was given.
fn debug_host(kind: &pgwire::conninfo::HostKind) -> String {
    use pgwire::conninfo::HostKind;
    match kind {
        HostKind::Unix(dir) => dir.display().to_string(),
        HostKind::Tcp {
            name: Some(name), ..
        } => name.clone(),
        HostKind::Tcp {
            addr: Some(addr), ..
        } => addr.to_string(),
        HostKind::Tcp { .. } => String::new(),
    }
}

/// pgbench's `setting random seed to N` lines, shown as script loading
/// reaches the point of the command line where each seed was met (a
/// script that fails to load stops pgbench before the seeds after it).
/// The last seed is the one used, already resolved.
struct SeedLines<'a> {
    notes: &'a [crate::config::SeedNote],
    shown: usize,
    used: u64,
}

impl<'a> SeedLines<'a> {
    fn new(notes: &'a [crate::config::SeedNote], used: u64) -> Self {
        SeedLines {
            notes,
            shown: 0,
            used,
        }
    }

    /// Shows the seeds met before the script numbered `scripts`.
    fn show(&mut self, scripts: usize) {
        while let Some(note) = self.notes.get(self.shown) {
            if note.scripts_before > scripts {
                break;
            }
            self.shown += 1;
            let value = if self.shown == self.notes.len() {
                Ok(self.used)
            } else {
                note.seed.resolve()
            };
            if let Ok(value) = value {
                log::info(format_args!("setting random seed to {value}"));
            }
        }
    }
}

/// Everything up to the clients' connections: the seed, the scripts, the
/// set-up connection's work, the random states and the starting variables.
fn prepare(config: &Config, bench: &Benchmark, step: &StepSetup) -> Result<Prepared, EngineError> {
    let seed = bench.random_seed.unwrap_or(RandomSeed::Time);
    let seed_value = seed.resolve().map_err(EngineError::Seed)?;
    let mut seeds = SeedLines::new(&config.seeds, seed_value);
    let plan = Plan::new(bench, config.debug, &mut |scripts| {
        if step.announce {
            seeds.show(scripts)
        }
    })?;
    let (connector, mut setup_client) = setup::connect(&config.connection)?;
    let stop = setup_stop::arm(&setup_client.cancel_token());
    if step.announce {
        setup::print_version(&setup_client, json_to_stdout(bench));
    }
    let server_version = setup_client.parameter("server_version").map(str::to_owned);
    if config.debug {
        let (what, n) = match bench.length {
            RunLength::Transactions(n) => ("nxacts", n),
            RunLength::Duration(s) => ("duration", s),
        };
        // pgbench names the host and port its set-up connection reached
        // (PQhost, PQport): `host`, else `hostaddr`, as written (the
        // default socket directory when neither is), the port as written.
        let cfg = connector.config();
        let index = setup_client.host_index();
        let (host, port) = match (cfg.hosts.get(index), cfg.host_spellings.get(index)) {
            (Some(h), Some(written)) if written.name.is_empty() => {
                (debug_host(&h.kind), written.port.clone())
            }
            (Some(_), Some(written)) => (written.name.clone(), written.port.clone()),
            (Some(h), None) => (debug_host(&h.kind), h.port.to_string()),
            (None, _) => (String::new(), String::new()),
        };
        log::debug(format_args!(
            "pghost: {host} pgport: {port} nclients: {} {what}: {n} dbName: {}",
            plan.clients, cfg.dbname
        ));
    }
    let spare_slots = if config.preflight {
        setup::preflight(
            &mut setup_client,
            step.preflight_clients.unwrap_or(plan.connections()),
            config.temp_instance.is_some(),
        )?
    } else {
        None
    };
    if config.preflight
        && bench.query_mode == crate::script::QueryMode::Prepared
        && step.announce
        && crate::observe::pooler::behind_pooler(&mut setup_client)
    {
        crate::observe::pooler::warn_prepared_through_pooler(&mut setup_client, &connector);
    }
    let monitor_refused = if config.preflight && bench.monitor.is_some() {
        crate::observe::pooler::monitor_refused(&mut setup_client, &connector)
    } else {
        None
    };
    let server_settings = if config.preflight {
        setup::server_settings(&mut setup_client)
    } else {
        Default::default()
    };
    let (scale, partitioning) = if plan.builtin_used {
        let dbname = connector.config().dbname.clone();
        let info = setup::table_info(&mut setup_client, &dbname, bench.scale.is_some())?;
        (info.scale, info.partitioning)
    } else {
        (i64::from(bench.scale.unwrap_or(1)), None)
    };
    setup::vacuum(&mut setup_client, bench.vacuum);
    if step.checkpoint {
        setup::checkpoint(&mut setup_client);
    }
    let database_start = if bench.monitor.is_some()
        && monitor_refused.is_none()
        && spare_slots.map_or(true, |n| n >= 1)
    {
        crate::observe::read_database(&mut setup_client)
    } else {
        None
    };
    drop(stop);
    setup_client.close();
    raise_open_files_limit(bench.open_files_needed(config.io, config.temp_instance.is_some()));
    let states = random_states(bench, &plan, seed_value);
    let base = base_variables(&plan, bench, scale, &states);
    Ok(Prepared {
        plan: Arc::new(plan),
        connector,
        scale,
        partitioning,
        server_settings,
        states,
        base,
        server_version,
        spare_slots,
        monitor_refused,
        database_start,
    })
}

/// pgbench's random states for this run; a generator of a fleet takes
/// its clients' and threads' states from those of the whole fleet (see
/// [`crate::fleet`]).
fn random_states(bench: &Benchmark, plan: &Plan, seed: u64) -> RandomStates {
    let default_seed = defined(bench, "default_seed");
    let Some(share) = &bench.fleet else {
        return RandomStates::new(
            seed,
            plan.clients as usize,
            plan.threads as usize,
            default_seed,
        );
    };
    let mut states = RandomStates::new(
        seed,
        share.clients_total as usize,
        share.threads_total as usize,
        default_seed,
    );
    let (c, t) = (share.client_offset as usize, share.thread_offset as usize);
    states.clients = states.clients[c..c + share.clients as usize].to_vec();
    states.threads = states.threads[t..t + share.threads as usize].to_vec();
    states
}

/// Whether `-D` defined `name`.
fn defined(bench: &Benchmark, name: &str) -> bool {
    bench.variables.iter().any(|d| d.name == name)
}

/// What a thread is started with besides the plan.
struct ThreadStart {
    tid: usize,
    range: std::ops::Range<u32>,
    clock: Clock,
    start_time: i64,
    end_us: Option<i64>,
    wake_fd: std::os::fd::RawFd,
    io_uring: bool,
    spin: SpinMode,
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
    let poll = Poll::new().map_err(EngineError::Poll)?;
    poll.registry()
        .register(
            &mut SourceFd(&t.wake_fd),
            worker::SIGNAL,
            Interest::READABLE,
        )
        .map_err(EngineError::Poll)?;
    let registry = poll.registry().try_clone().map_err(EngineError::Poll)?;
    let sleeper = timer::Sleeper::new(&registry, worker::TIMER).map_err(EngineError::Poll)?;
    let per_script = plan.commands_per_script();
    let clients: Vec<Client> = t
        .range
        .clone()
        .map(|local| {
            // A generator's clients are numbered after the fleet's earlier
            // generators' (see crate::fleet).
            let id = local + bench.fleet.map_or(0, |s| s.client_offset);
            let mut vars = prepared.base.clone();
            if !defined(bench, "client_id") {
                vars.set(plan.slots.client_id, crate::expr::Value::Int(i64::from(id)));
            }
            Client::new(
                id,
                vars,
                prepared.states.clients[local as usize],
                &per_script,
            )
        })
        .collect();
    let log = match &bench.log {
        Some(opts) => Some(
            TransactionLog::create(&log_options(bench, opts), t.tid, t.start_time)
                .map_err(EngineError::Log)?,
        ),
        None => None,
    };
    let layout = StatsLayout {
        commands_per_script: per_script,
        latency_limit_us: plan.latency_limit_us,
        start_us: t.start_time,
        throttled: plan.throttle_delay_us > 0.0,
        series: bench.json.is_some() || bench.html.is_some(),
    };
    let ts = prepared.states.threads[t.tid];
    let pool = plan.pool_shares().map(|shares| {
        // Pooled sockets' tokens come after the clients', their children's
        // and their lingering connections' (see `worker`).
        app_pool::Pool::new(shares[t.tid] as usize, clients.len(), 3 * clients.len())
    });
    let mut stats = ThreadStats::new(&layout);
    if pool.is_some() {
        stats.track_pool_wait();
    }
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
        io_uring: t.io_uring,
        spin: t.spin,
        sleeper,
        ring: None,
        lingering: Lingering::default(),
        pool,
        progress: bench.progress.map(|interval| {
            progress::Progress::new(
                interval,
                ProgressOptions {
                    timestamp: bench.progress_timestamp,
                    throttled: bench.rate.is_some(),
                    latency_limit: bench.latency_limit.is_some(),
                    max_tries: plan.max_tries,
                },
                t.start_time,
            )
        }),
    };
    Ok((clients, env, poll))
}

/// The variables every client starts with: `-D` definitions, then
/// `scale`, `default_seed` and `random_seed` unless `-D` set them
/// (`client_id` is set per client).
fn base_variables(plan: &Plan, bench: &Benchmark, scale: i64, states: &RandomStates) -> Variables {
    use crate::expr::Value;
    let mut vars = Variables::new(&plan.names);
    for def in &bench.variables {
        if let Some(slot) = plan.names.lookup(&def.name) {
            vars.set_text(slot, &def.value);
        }
    }
    if !defined(bench, "scale") {
        vars.set(plan.slots.scale, Value::Int(scale));
    }
    if let Some(seed) = states.default_seed {
        vars.set(plan.slots.default_seed, Value::Int(seed));
    }
    if !defined(bench, "random_seed") {
        vars.set(plan.slots.random_seed, Value::Int(states.random_seed));
    }
    vars
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

/// Raises the soft limit on open files to what the run needs, with room for
/// `\shell` pipes and cancel requests, as far as the hard limit allows (the
/// command line was checked against the hard limit).
fn raise_open_files_limit(needed: u64) {
    let wanted = needed + 64;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the struct we pass.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < wanted {
            limit.rlim_cur = wanted.min(limit.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
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
