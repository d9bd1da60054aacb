//! Targets: the same benchmark against several places (a server and a
//! pooler in front of it, two servers, ...), run fairly and compared
//! (`--target`, `--temp-pgbouncer`).
//!
//! # How a comparison goes
//! - Every target is a connection string or URI with libpq's semantics;
//!   the command line's `-h`, `-p` and `-U` fill in what it leaves out. A
//!   run without `--sweep` is a sweep of one step, the run's clients.
//! - Before the first step, each target is checked: a PgBouncer (its
//!   admin console answers, see [`crate::observe::pooler`]) whose `max_client_conn` is
//!   below the largest step's clients would refuse the rest, which looks
//!   like a collapse, and `-M prepared` through transaction or statement
//!   pooling cannot work on a PgBouncer older than 1.21 or with
//!   `max_prepared_statements = 0`: both are refused with the reason. A
//!   target that is no pooler gets the engine's preflight for the largest
//!   step (plus the server connections of the throwaway PgBouncer in front
//!   of the same server, which hold slots too).
//! - The steps run interleaved: each step once per target, the targets'
//!   order alternating from step to step, with the same scripts, options
//!   and random seed (drawn once when none was given), so neither a
//!   drifting server nor the order favours one. `--connect-dimension` runs
//!   each target twice, the second time with `-C`, as `NAME-C`.
//!   Each target's steps make a sweep of their own ([`crate::study`]), with
//!   all its answers; a failed step ends the whole comparison, as does a
//!   step whose set-up fails after earlier steps (exit status 2, the
//!   steps done reported) or a signal (128 plus its number). A comparison
//!   that stopped early draws no crossover (it would speak for values
//!   never measured), shows the values a target lacks as not measured,
//!   and leaves out the pooler's view of the step it stopped in.
//! - While a step runs against a PgBouncer, a thread samples its console
//!   ([`crate::observe::pooler::Sampler`]): `SHOW POOLS` every 200 ms and `SHOW STATS`
//!   at both ends, and the pooler's CPU from `/proc` when it runs here
//!   (pgbolt started it, or it listens on the Unix socket the target
//!   names and its process is ours to see). The sample spans the step's
//!   warm-up too.
//! - The report (the crossover of `crossover`, `report::text::targets`, and the page of
//!   [`crate::report::html::render_targets_html`]) puts the targets side
//!   by side per step, with ratios against the first target and the
//!   crossover.
//!
//! In the layering it sits above `crate::study` (each target's steps are a
//! sweep) and uses the engine, `crate::observe::pooler`, the model and
//! the settings; printing and writing the targets' result is
//! `crate::app`'s.

mod crossover;

use std::time::Duration;

use crate::config::study::{Dimension, Order, Reset, Study, Sweep, Values};
use crate::config::target::Target;
use crate::config::{Benchmark, Config, Connection};
use crate::engine::EngineError;
use crate::model::pooler::PoolerInfo;
use crate::model::targets::{PoolerStep, TargetResult, TargetsResult};
use crate::observe::pooler::{Console, Sampler};
use crate::study::Sweeper;

/// How often the pooler's console is read during a step.
const SAMPLE_EVERY: Duration = Duration::from_millis(200);

/// Why a comparison could not run.
#[derive(Debug)]
pub enum Error {
    Engine(EngineError),
    /// A target refused before the first step, with the reason.
    Target {
        name: String,
        reason: String,
    },
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Engine(e) => write!(f, "{e}"),
            Error::Target { name, reason } => write!(f, "target \"{name}\": {reason}"),
        }
    }
}

impl From<EngineError> for Error {
    fn from(e: EngineError) -> Self {
        Error::Engine(e)
    }
}

/// A target ready to run.
struct Prepared {
    target: Target,
    config: Config,
    /// The benchmark as this target runs it (`-C` or not).
    bench: Benchmark,
    resolved: pgwire::conninfo::Config,
    pooler: Option<PoolerInfo>,
    /// The pooler's process when it runs here (for its CPU).
    pooler_pid: Option<i32>,
}

/// The checks made before the first step (see the module's doc), alone:
/// before a throwaway instance's tables are loaded, so that a refusal
/// costs no loading.
pub fn refusals(config: &Config, bench: &Benchmark) -> Result<(), Error> {
    let study = bench.study.clone().unwrap_or_else(|| one_step(bench));
    checked_targets(config, bench, &study).map(|_| ())
}

/// Each target prepared (its settings and pooler view) and, unless
/// `--no-preflight`, checked for the largest step of `study`.
fn checked_targets(
    config: &Config,
    bench: &Benchmark,
    study: &Study,
) -> Result<Vec<Prepared>, Error> {
    let largest = study.largest_clients().unwrap_or(bench.clients);
    let prepared = variants(bench)
        .into_iter()
        .map(|(target, bench)| prepare(config, target, bench))
        .collect::<Result<Vec<_>, Error>>()?;
    if config.preflight {
        preflight(&prepared, bench, largest)?;
    }
    Ok(prepared)
}

/// Runs the benchmark (or each step of its sweep) once per target: the
/// targets' result and the exit status (0, or the first failed step's).
pub fn run(config: &Config, bench: &Benchmark) -> Result<(TargetsResult, i32), Error> {
    let study = bench.study.clone().unwrap_or_else(|| one_step(bench));
    let largest = study.largest_clients().unwrap_or(bench.clients);
    // One seed for every step of every target (drawn now when the user
    // gave `time`, `rand` or none), so that they all run the same
    // random sequences.
    let seed = bench
        .random_seed
        .unwrap_or(crate::random::RandomSeed::Time)
        .resolve()
        .map_err(EngineError::Seed)?;
    let mut bench = bench.clone();
    bench.random_seed = Some(crate::random::RandomSeed::Value(seed));
    let bench = &bench;
    let prepared = checked_targets(config, bench, &study)?;
    let Values::List(values) = &study.sweep.values else {
        return Err(Error::Engine(EngineError::Report(
            "--sweep=clients:auto with targets is not supported yet".into(),
        )));
    };
    let mut runner = Runner {
        targets: &prepared,
        sweepers: prepared
            .iter()
            .map(|p| Sweeper::new(&p.config, &p.bench, &study, Some(p.target.name.clone())))
            .collect(),
        pooler_steps: Vec::new(),
        stopped: None,
    };
    let between = crate::engine::install_between();
    let order = crate::study::step_order(&study, values, bench.random_seed)?;
    let status = runner.run(&order, largest)?;
    drop(between);
    Ok((runner.finish(), status))
}

/// The comparison under way: one sweep per target.
struct Runner<'a> {
    targets: &'a [Prepared],
    sweepers: Vec<Sweeper<'a>>,
    pooler_steps: Vec<PoolerStep>,
    /// Why the comparison ended early.
    stopped: Option<String>,
}

impl Runner<'_> {
    /// Runs every step once per target, in `order`; a failed step ends
    /// it. Returns the exit status.
    fn run(&mut self, order: &[(f64, u32)], largest: u32) -> Result<i32, Error> {
        let total = order.len() * self.targets.len();
        let mut index = 0;
        for (i, &(value, repeat)) in order.iter().enumerate() {
            // The targets' order alternates, so that neither always runs
            // right after the other.
            let mut turn: Vec<usize> = (0..self.targets.len()).collect();
            if i % 2 == 1 {
                turn.reverse();
            }
            for t in turn {
                index += 1;
                // Each target's first step checks for the largest.
                let preflight = (i == 0).then_some(largest);
                let step = format!("step {index} of {total} ({})", self.targets[t].target.name);
                let (status, why) = match self.step(t, value, repeat, (index, total), preflight) {
                    Err(Error::Engine(e)) if index > 1 => {
                        (2, crate::study::could_not_start(&e, &step))
                    }
                    other => {
                        let status = other?;
                        (status, crate::study::left_out(status, &step))
                    }
                };
                if status != 0 {
                    for s in &mut self.sweepers {
                        s.stop(why.clone());
                    }
                    self.stopped = Some(why);
                    return Ok(status);
                }
            }
        }
        Ok(0)
    }

    /// One step on target `t`, its pooler sampled meanwhile.
    fn step(
        &mut self,
        t: usize,
        value: f64,
        repeat: u32,
        at: (usize, usize),
        preflight: Option<u32>,
    ) -> Result<i32, Error> {
        let p = &self.targets[t];
        let sampler = p.pooler.as_ref().and_then(|_| {
            Console::open(&p.resolved).map(|c| Sampler::start(c, SAMPLE_EVERY, p.pooler_pid))
        });
        let status = self.sweepers[t].step(value, repeat, at, preflight);
        let view = sampler.and_then(Sampler::finish);
        // The view of a step left out (interrupted, failed) is left out
        // with it.
        if let (Some(view), Ok(0)) = (view, &status) {
            crate::program::ewriteln!(
                "  {}: cl_active {}, cl_waiting {}, sv_active {}, maxwait {:.3} s{}{}",
                p.target.name,
                view.cl_active_max,
                view.cl_waiting_max,
                view.sv_active_max,
                view.maxwait_max_s,
                view.wait_us_per_xact
                    .map_or(String::new(), |w| format!(", wait {w:.1} us/xact")),
                view.cpu_percent
                    .map_or(String::new(), |c| format!(", pooler cpu {c:.0}%"))
            );
            self.pooler_steps.push(PoolerStep {
                target: p.target.name.clone(),
                value,
                repeat,
                view,
            });
        }
        Ok(status?)
    }

    /// The result of the steps run, with the comparison.
    fn finish(self) -> TargetsResult {
        let targets: Vec<TargetResult> = self
            .targets
            .iter()
            .zip(self.sweepers)
            .map(|(p, s)| TargetResult {
                name: p.target.name.clone(),
                conninfo: p.target.shown(),
                pooler: p.pooler.clone(),
                sweep: s.finish(),
            })
            .collect();
        let points: Vec<(&str, &[crate::model::sweep::Point])> = targets
            .iter()
            .map(|t| (t.name.as_str(), t.sweep.summary.points.as_slice()))
            .collect();
        let mut comparison = crossover::compare(&points);
        if self.stopped.is_some() {
            comparison.crossovers.clear();
            comparison.unjudged = Some(
                "the comparison stopped before its last step, and a crossover would speak \
                 for the values not measured"
                    .to_owned(),
            );
        }
        TargetsResult {
            schema_version: crate::model::run::SCHEMA_VERSION,
            kind: crate::model::targets::KIND.to_owned(),
            tool: "pgbolt".to_owned(),
            tool_version: env!("CARGO_PKG_VERSION").to_owned(),
            targets,
            comparison,
            pooler_steps: self.pooler_steps,
            stopped: self.stopped,
        }
    }
}

/// A plain run as a sweep of one step: its clients.
fn one_step(bench: &Benchmark) -> Study {
    Study {
        sweep: Sweep {
            dimension: Dimension::Clients,
            values: Values::List(vec![f64::from(bench.clients)]),
        },
        repeat: 1,
        order: Order::Alternate,
        reset: Reset::Vacuum,
        slo: Vec::new(),
        jobs: Some(bench.threads),
    }
}

/// The targets as run: each once, or under `--connect-dimension` each
/// with its connections kept and then as `NAME-C` with `-C`.
fn variants(bench: &Benchmark) -> Vec<(Target, Benchmark)> {
    let mut out = Vec::new();
    for target in &bench.targets {
        out.push((target.clone(), bench.clone()));
        if bench.connect_dimension {
            let mut with_c = target.clone();
            with_c.name.push_str("-C");
            let mut per_transaction = bench.clone();
            per_transaction.connect_per_transaction = true;
            out.push((with_c, per_transaction));
        }
    }
    out
}

/// The target's configuration, resolved connection, and its pooler's
/// console when it has one.
fn prepare(config: &Config, target: Target, bench: Benchmark) -> Result<Prepared, Error> {
    let mut own = config.clone();
    own.connection = Connection {
        dbname: Some(target.conninfo.clone()),
        ..config.connection.clone()
    };
    let resolved =
        crate::config::connection::resolve(&own.connection).map_err(|e| Error::Target {
            name: target.name.clone(),
            reason: e.to_string(),
        })?;
    let pooler = Console::open(&resolved).and_then(|mut c| c.info());
    let pooler_pid = match pooler {
        Some(_) => target
            .pid
            .or_else(|| crate::observe::pooler::local_pid(&resolved)),
        None => None,
    };
    Ok(Prepared {
        pooler_pid,
        target,
        config: own,
        bench,
        resolved,
        pooler,
    })
}

/// The checks made before the first step (see the module's doc).
fn preflight(targets: &[Prepared], bench: &Benchmark, largest: u32) -> Result<(), Error> {
    // The throwaway PgBouncer's server connections take slots of the
    // server the direct target checks.
    // (Counted once per pooler: under `--connect-dimension` it is two
    // targets.)
    let mut poolers: Vec<(i32, u32)> = targets
        .iter()
        .filter_map(|t| Some((t.target.pid?, t.pooler.as_ref()?.default_pool_size?)))
        .collect();
    poolers.sort_unstable();
    poolers.dedup();
    let pooled: u32 = poolers.iter().map(|p| p.1).sum();
    for t in targets {
        let refuse = |reason: String| Error::Target {
            name: t.target.name.clone(),
            reason,
        };
        match &t.pooler {
            Some(pooler) => {
                // pgbolt's own console and monitor sessions are clients too.
                let needed = largest + 1 + u32::from(bench.monitor.is_some());
                if let Some(max) = pooler.max_client_conn.filter(|&m| m < needed) {
                    return Err(refuse(format!(
                        "its max_client_conn is {max}, below the {largest} clients of the \
                         largest step (and pgbolt's console and monitor sessions): the pooler \
                         would refuse \
                         the rest with \"no more connections allowed\", which looks like a \
                         collapse. Raise max_client_conn to at least {needed} in pgbouncer.ini."
                    )));
                }
                if bench.query_mode == crate::script::QueryMode::Prepared
                    && !pooler.keeps_prepared_statements()
                {
                    return Err(refuse(crate::observe::pooler::prepared_refusal(pooler)));
                }
            }
            None => {
                let swept = bench
                    .study
                    .as_ref()
                    .and_then(Study::largest_clients)
                    .is_some();
                crate::engine::preflight_only(&t.config, largest + pooled, swept).map_err(|e| {
                    let counted = if pooled > 0 {
                        format!(
                            " (the largest step's {largest} clients and the throwaway \
                             PgBouncer's {pooled} server connections)"
                        )
                    } else {
                        String::new()
                    };
                    refuse(format!("{e}").replacen(
                        " more connections",
                        &format!(" more connections{counted}"),
                        1,
                    ))
                })?;
            }
        }
    }
    Ok(())
}
