//! The set-up of a run ([`prepare`]): everything up to the clients'
//! connections, done once and before any thread starts.
//!
//! The seed is resolved first and pgbench's `setting random seed` lines are
//! shown as the scripts load ([`SeedLines`]), so that a script that fails to
//! load stops the run where pgbench stops. Then one blocking set-up
//! connection does the server's part, in pgbench's order: the version line,
//! the preflight and what it learns about a pooler, the server's settings,
//! the scale from `pgbench_branches`, the vacuum (and a sweep's
//! `CHECKPOINT`), and `pg_stat_database` for the monitor; then it closes.
//! Last come the random states and the variables every client starts with,
//! drawn in pgbench's order from the seed.

use std::collections::BTreeMap;
use std::sync::Arc;

use pgwire::blocking::Client;
use pgwire::Connector;

use crate::config::{Benchmark, Config, RunLength};
use crate::expr::vars::Variables;
use crate::program::log;
use crate::random::{RandomSeed, RandomStates};

use super::outcome::json_to_stdout;
use super::plan::Plan;
use super::{setup, setup_stop, EngineError, StepSetup};

/// What the set-up established, for the threads.
pub(super) struct Prepared {
    pub(super) plan: Arc<Plan>,
    pub(super) connector: Connector,
    pub(super) scale: i64,
    pub(super) partitioning: Option<(String, u32)>,
    pub(super) server_settings: BTreeMap<String, String>,
    pub(super) states: RandomStates,
    /// The variables every client starts with, `client_id` aside.
    pub(super) base: Variables,
    /// The server's `server_version`, for the reports.
    pub(super) server_version: Option<String>,
    /// Connection slots the preflight found left for the monitor.
    pub(super) spare_slots: Option<i64>,
    /// Why the monitor must not connect, when the set-up found a reason.
    pub(super) monitor_refused: Option<String>,
    /// `pg_stat_database` as the set-up connection read it last, for the
    /// monitor.
    pub(super) database_start: Option<crate::observe::DatabaseStart>,
    /// `--reconnect`: how the committed transactions are counted, and
    /// their count before the run.
    pub(super) commits_before: Option<(super::commits::Counting, i64)>,
}

/// Everything up to the clients' connections: the seed, the scripts, the
/// set-up connection's work, the random states and the starting variables.
pub(super) fn prepare(
    config: &Config,
    bench: &Benchmark,
    step: &StepSetup,
) -> Result<Prepared, EngineError> {
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
        debug_setup_connection(bench, &plan, &connector, &setup_client);
    }
    let checked = check_server(config, bench, step, &plan, &connector, &mut setup_client)?;
    let (scale, partitioning) = scale_of(bench, &plan, &connector, &mut setup_client)?;
    setup::vacuum(&mut setup_client, bench.vacuum);
    if step.checkpoint {
        setup::checkpoint(&mut setup_client);
    }
    let commits_before = super::commits::counting(bench).and_then(|counting| {
        super::commits::count(&mut setup_client, &counting).map(|n| (counting, n))
    });
    let database_start = if bench.monitor.is_some()
        && checked.monitor_refused.is_none()
        && checked.spare_slots.map_or(true, |n| n >= 1)
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
        server_settings: checked.server_settings,
        states,
        base,
        server_version,
        spare_slots: checked.spare_slots,
        monitor_refused: checked.monitor_refused,
        database_start,
        commits_before,
    })
}

/// pgbench's `--debug` line on its set-up connection: the host and port it
/// reached (PQhost, PQport), `host`, else `hostaddr`, as written (the
/// default socket directory when neither is), the port as written.
fn debug_setup_connection(bench: &Benchmark, plan: &Plan, connector: &Connector, client: &Client) {
    let (what, n) = match bench.length {
        RunLength::Transactions(n) => ("nxacts", n),
        RunLength::Duration(s) => ("duration", s),
    };
    let cfg = connector.config();
    let index = client.host_index();
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

/// What the set-up connection learns of the server before the vacuum
/// (nothing under `--no-preflight`).
struct ServerChecks {
    /// Connection slots left for the monitor.
    spare_slots: Option<i64>,
    /// Why the monitor must not connect.
    monitor_refused: Option<String>,
    server_settings: BTreeMap<String, String>,
}

/// The preflight: the connection limit (against the sweep's largest client
/// count, when `step` names one), a warning when prepared statements go
/// through a pooler that drops them, whether the monitor may connect, and
/// the server's settings for the reports.
fn check_server(
    config: &Config,
    bench: &Benchmark,
    step: &StepSetup,
    plan: &Plan,
    connector: &Connector,
    client: &mut Client,
) -> Result<ServerChecks, EngineError> {
    let spare_slots = if config.preflight {
        setup::preflight(
            client,
            step.preflight_clients.unwrap_or(plan.connections()),
            config.temp_instance.is_some(),
        )
        .map_err(|e| match e {
            EngineError::Preflight(mut p) => {
                p.swept = step.preflight_clients.is_some();
                EngineError::Preflight(p)
            }
            other => other,
        })?
    } else {
        None
    };
    if config.preflight
        && bench.query_mode == crate::script::QueryMode::Prepared
        && step.announce
        && crate::observe::pooler::behind_pooler(client)
    {
        crate::observe::pooler::warn_prepared_through_pooler(client, connector);
    }
    let monitor_refused = if config.preflight && bench.monitor.is_some() {
        crate::observe::pooler::monitor_refused(client, connector)
    } else {
        None
    };
    let server_settings = if config.preflight {
        setup::server_settings(client)
    } else {
        Default::default()
    };
    Ok(ServerChecks {
        spare_slots,
        monitor_refused,
        server_settings,
    })
}

/// The scale and partitioning: read from `pgbench_branches` when a builtin
/// script runs, else `--scale` (1 by default) and none.
fn scale_of(
    bench: &Benchmark,
    plan: &Plan,
    connector: &Connector,
    client: &mut Client,
) -> Result<(i64, Option<(String, u32)>), EngineError> {
    Ok(if plan.builtin_used {
        let dbname = connector.config().dbname.clone();
        let info = setup::table_info(client, &dbname, bench.scale.is_some())?;
        (info.scale, info.partitioning)
    } else {
        (i64::from(bench.scale.unwrap_or(1)), None)
    })
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
pub(super) fn defined(bench: &Benchmark, name: &str) -> bool {
    bench.variables.iter().any(|d| d.name == name)
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
