//! Studies: a series of benchmark runs in one command, and the answers
//! drawn from them (`--sweep`).
//!
//! # How a sweep goes
//! Each step is a whole pgbench run of its own through the engine's seam
//! [`crate::engine::run_step`]: the set-up connection vacuums as pgbench
//! does before a run (the small tables, `truncate pgbench_history`, and a
//! `CHECKPOINT` with `--sweep-reset=checkpoint`), the clients connect, the
//! step runs for `-T`/`-t`, and its result comes back instead of being
//! printed. Every other option keeps its meaning in every step but one:
//! a step's `-T` counts from the moment its last client is connected
//! ([`Window::FromConnected`]), where a plain run's counts from its
//! start as pgbench's does, so that every step measures the same length
//! however long its clients took to connect.
//!
//! - The warm-up (`--warmup=SEC`) is a run of its own just before each
//!   measured step, with the step's clients and threads, whose result is
//!   dropped; the measured run that follows skips the vacuum, so nothing
//!   happens between the two but reconnecting.
//! - Repeats are interleaved: values in order, then in reverse, and so on,
//!   so that a server drifting over the sweep (a cache warming, a table
//!   growing) does not favour one end.
//! - The preflight of the first step checks the connection limit against
//!   the largest step of a list, so "too many clients already" never
//!   appears in the middle of a sweep; `auto` checks each step as it
//!   comes.
//! - Threads default per step to min(clients, CPUs), or min(`-j`, clients)
//!   when `-j` was given.
//! - `-l` writes each step's transaction log under a prefix of its own,
//!   the step's number appended (`pgbench_log.step3.PID`); the warm-up
//!   writes none.
//! - A step whose set-up fails after earlier steps were measured (the
//!   server refuses the connection, the role lost its login, a pooler
//!   died) ends the sweep with those steps' report and exit status 2, as
//!   an error during a run does; at the first step it is a set-up
//!   failure like a plain run's (exit status 1, no report).
//! - SIGINT or SIGTERM at any moment ends the sweep with its report: a
//!   signal during a step's run stops it as it stops a plain run; one
//!   during a set-up cancels the set-up's statement
//!   ([`crate::engine::install_between`]). Either way that step is left
//!   out, and the exit status is 128 plus the signal's number.
//!
//! The answers (`crate::model::sweep`) come from the steps' results alone, so a saved
//! sweep gives the same answers when read back. The USL fit is in [`crate::stats::usl`].
//!
//! In the layering it uses the engine for each step, `crate::model::sweep`
//! for its result and answers, and the settings; printing and writing a
//! sweep's result is `crate::app`'s.

use crate::config::study::{Dimension, Order, Reset, Study, Values};
use crate::config::{Benchmark, Config, VacuumBeforeRun};
use crate::engine::{EngineError, StepSetup, Window};
use crate::model::sweep::{StepResult, SweepInfo, SweepResult};

/// The doubling of `auto` stops here whatever the rules say.
const AUTO_LIMIT: f64 = 1024.0;

/// Runs the sweep of `study`: its result, and the exit status a plain
/// run would have had (0, or the first failed step's).
pub fn run(
    config: &Config,
    bench: &Benchmark,
    study: &Study,
) -> Result<(SweepResult, i32), EngineError> {
    let mut sweeper = Sweeper::new(config, bench, study, None);
    let between = crate::engine::install_between();
    let status = match &study.sweep.values {
        Values::List(values) => sweeper.run_list(values)?,
        Values::Auto => sweeper.run_auto()?,
    };
    drop(between);
    Ok((sweeper.finish(), status))
}

/// The state of a sweep under way.
pub(crate) struct Sweeper<'a> {
    config: &'a Config,
    bench: &'a Benchmark,
    study: &'a Study,
    cpus: u32,
    steps: Vec<StepResult>,
    /// Why the sweep ended early.
    stopped: Option<String>,
    /// Whether the version line has been printed.
    announced: bool,
    /// The target whose steps these are, named in each step's line.
    label: Option<String>,
}

impl<'a> Sweeper<'a> {
    /// A sweep with no step run yet.
    pub(crate) fn new(
        config: &'a Config,
        bench: &'a Benchmark,
        study: &'a Study,
        label: Option<String>,
    ) -> Self {
        Sweeper {
            config,
            bench,
            study,
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()) as u32,
            steps: Vec::new(),
            stopped: None,
            announced: false,
            label,
        }
    }

    /// Records why the sweep ended early.
    pub(crate) fn stop(&mut self, why: String) {
        self.stopped = Some(why);
    }

    /// The result of the steps run so far, with the answers.
    pub(crate) fn finish(self) -> SweepResult {
        let study = self.study;
        let summary =
            crate::model::sweep::summarize(study.sweep.dimension, &self.steps, &study.slo);
        SweepResult {
            schema_version: crate::model::run::SCHEMA_VERSION,
            kind: crate::model::sweep::KIND.to_owned(),
            tool: "pgbolt".to_owned(),
            tool_version: env!("CARGO_PKG_VERSION").to_owned(),
            sweep: SweepInfo {
                dimension: study.sweep.dimension.name().to_owned(),
                auto: study.sweep.values == Values::Auto,
                warmup_s: self.bench.warmup_s,
                repeat: study.repeat,
                order: study.order.name().to_owned(),
                reset: match study.reset {
                    Reset::Vacuum => "vacuum",
                    Reset::Checkpoint => "checkpoint",
                }
                .to_owned(),
                slo: study.slo.iter().map(Into::into).collect(),
                stopped: self.stopped,
            },
            steps: self.steps,
            summary,
        }
    }

    /// A list: every value, repeats interleaved; a failed step ends it.
    fn run_list(&mut self, values: &[f64]) -> Result<i32, EngineError> {
        let order = step_order(self.study, values, self.bench.random_seed)?;
        let largest = self.study.largest_clients();
        for (i, &(value, repeat)) in order.iter().enumerate() {
            let preflight = if i == 0 { largest } else { None };
            let status = match self.step(value, repeat, (i + 1, order.len()), preflight) {
                Err(e) if !self.steps.is_empty() => {
                    let step = format!("step {} of {}", i + 1, order.len());
                    self.stopped = Some(could_not_start(&e, &step));
                    return Ok(2);
                }
                other => other?,
            };
            if status != 0 {
                self.stopped = Some(left_out(
                    status,
                    &format!("step {} of {}", i + 1, order.len()),
                ));
                return Ok(status);
            }
        }
        Ok(0)
    }

    /// `auto`: clients doubling from 1 until throughput stops growing, an
    /// SLO fails or failures pass 1%.
    fn run_auto(&mut self) -> Result<i32, EngineError> {
        let mut value = 1.0;
        let mut index = 0;
        let mut means = Vec::new();
        while value <= AUTO_LIMIT {
            for repeat in 1..=self.study.repeat {
                index += 1;
                let status = match self.step(value, repeat, (index, 0), None) {
                    // The connection limit is as far as auto can go.
                    Err(EngineError::Preflight(check)) if !self.steps.is_empty() => {
                        self.stopped = Some(format!("{}", EngineError::Preflight(check)));
                        return Ok(0);
                    }
                    Err(e) if !self.steps.is_empty() => {
                        self.stopped = Some(could_not_start(&e, &format!("step {index}")));
                        return Ok(2);
                    }
                    other => other?,
                };
                if status != 0 {
                    self.stopped = Some(left_out(status, &format!("step {index}")));
                    return Ok(status);
                }
            }
            let runs: Vec<&crate::model::run::RunResult> = self
                .steps
                .iter()
                .filter(|s| s.value == value)
                .map(|s| &s.result)
                .collect();
            let Some(point) = crate::model::sweep::point(value, &runs, &self.study.slo) else {
                break;
            };
            means.push(point.tps);
            if point.failure_ratio > crate::model::sweep::MAX_FAILURE_RATIO {
                self.stopped = Some(format!(
                    "failures passed {}% at {value} clients",
                    crate::model::sweep::MAX_FAILURE_RATIO * 100.0
                ));
                return Ok(0);
            }
            if point.slo_met == Some(false) {
                self.stopped = Some(format!("the SLO failed at {value} clients"));
                return Ok(0);
            }
            if crate::model::sweep::plateau(&means) {
                self.stopped = Some(format!("throughput stopped growing at {value} clients"));
                return Ok(0);
            }
            value *= 2.0;
        }
        Ok(0)
    }

    /// Runs one step (its warm-up first) and keeps its result; returns
    /// the run's exit status.
    pub(crate) fn step(
        &mut self,
        value: f64,
        repeat: u32,
        (index, count): (usize, usize),
        preflight_clients: Option<u32>,
    ) -> Result<i32, EngineError> {
        if let Some(signo) = crate::engine::received_between() {
            return Ok(128 + signo);
        }
        let mut bench = self.step_bench(value);
        // Each step's transaction logs have names of their own:
        // `pgbench_log.step3.PID` and so on.
        if let Some(log) = &mut bench.log {
            log.prefix.push(format!(".step{index}"));
        }
        let setup = StepSetup {
            announce: !self.announced,
            preflight_clients,
            checkpoint: self.study.reset == Reset::Checkpoint,
            window: Window::FromConnected,
        };
        self.announced = true;
        let labels = crate::metrics::RunLabels {
            step: Some(index),
            clients: Some(bench.clients),
            target: self.label.clone(),
            warmup: false,
        };
        if self.bench.warmup_s > 0 {
            crate::metrics::label_next_run(crate::metrics::RunLabels {
                warmup: true,
                ..labels.clone()
            });
            let warmup = crate::engine::warmup_of(&bench);
            let done = crate::engine::run_step(self.config, &warmup, &setup)?;
            if done.status != 0 {
                return Ok(done.status);
            }
            bench.vacuum = VacuumBeforeRun::Skip;
        }
        let setup = StepSetup {
            checkpoint: setup.checkpoint && self.bench.warmup_s == 0,
            announce: false,
            ..setup
        };
        crate::metrics::label_next_run(labels);
        let step = crate::engine::run_step(self.config, &bench, &setup)?;
        // A step that failed or was interrupted is partial: it ends the
        // sweep and is left out of the answers.
        if let (Some(result), 0) = (step.result, step.status) {
            let of = if count > 0 {
                format!(" of {count}")
            } else {
                String::new()
            };
            let label = self
                .label
                .as_ref()
                .map_or(String::new(), |l| format!(" ({l})"));
            crate::program::ewriteln!(
                "step {index}{of}{label}: {} clients, {} threads{}: {:.1} tps, p99 {:.3} ms",
                result.options.clients,
                result.options.threads,
                result.options.rate.map_or(String::new(), |r| format!(
                    ", rate {}",
                    crate::model::sweep::value(r)
                )),
                result.tps,
                result.latency.percentiles.map_or(0.0, |p| p.p99)
            );
            self.steps.push(StepResult {
                value,
                repeat,
                result,
            });
        }
        Ok(step.status)
    }

    /// The benchmark of the step at `value`.
    fn step_bench(&self, value: f64) -> Benchmark {
        // `--json` and `--html` stay: run_step writes no file, and with
        // them the steps record their per-interval series for the file.
        let mut bench = self.bench.clone();
        bench.study = None;
        match self.study.sweep.dimension {
            Dimension::Clients => bench.clients = value as u32,
            Dimension::Threads => {}
            Dimension::Rate => bench.rate = Some(value),
        }
        let cap = match self.study.sweep.dimension {
            Dimension::Threads => value as u32,
            _ => self.study.jobs.unwrap_or(self.cpus),
        };
        bench.threads = cap.min(bench.clients).max(1);
        bench
    }
}

/// Why a sweep ended at `step` (`step 3 of 7`, and its target if any),
/// whose exit status was `status`.
pub(crate) fn left_out(status: i32, step: &str) -> String {
    match status - 128 {
        libc::SIGINT => format!("interrupted by SIGINT during {step}, which is left out"),
        libc::SIGTERM => format!("interrupted by SIGTERM during {step}, which is left out"),
        _ => format!("{step} failed (exit status {status}) and is left out"),
    }
}

/// Why a study ended at `step`, whose set-up failed with `error` (the
/// server refused the connection, the role lost its login, the pooler
/// died) after earlier steps were measured; the error is printed now.
/// Those steps are the study's result and its exit status is 2, as for
/// an error during a run: the failure is not one of the options, which
/// the first step's set-up would have met.
pub(crate) fn could_not_start(error: &EngineError, step: &str) -> String {
    crate::program::log::error(format_args!("{error}"));
    format!("{step} could not start ({error}) and is left out")
}

/// The order of the steps of `study` over `values`: interleaved, or
/// shuffled with `seed` (drawn now when it is not a number).
pub(crate) fn step_order(
    study: &Study,
    values: &[f64],
    seed: Option<crate::random::RandomSeed>,
) -> Result<Vec<(f64, u32)>, EngineError> {
    Ok(match study.order {
        Order::Alternate => interleaved(values, study.repeat),
        Order::Shuffle => {
            let seed = seed
                .unwrap_or(crate::random::RandomSeed::Time)
                .resolve()
                .map_err(EngineError::Seed)?;
            shuffled(values, study.repeat, seed)
        }
    })
}

/// The order of the steps: `repeat` passes over the values, each a
/// permutation drawn from `seed` (Fisher–Yates on pgbench's generator);
/// each step with its repetition number.
pub fn shuffled(values: &[f64], repeat: u32, seed: u64) -> Vec<(f64, u32)> {
    let mut random = crate::random::PrngState::seeded(seed);
    (1..=repeat)
        .flat_map(|r| {
            let mut pass: Vec<(f64, u32)> = values.iter().map(|&v| (v, r)).collect();
            for i in (1..pass.len()).rev() {
                pass.swap(i, random.u64_range(0, i as u64) as usize);
            }
            pass
        })
        .collect()
}

/// The order of the steps: the values, then the values reversed, and so
/// on, `repeat` times; each with its repetition number.
pub fn interleaved(values: &[f64], repeat: u32) -> Vec<(f64, u32)> {
    (1..=repeat)
        .flat_map(|r| {
            let pass: Vec<(f64, u32)> = if r % 2 == 1 {
                values.iter().map(|&v| (v, r)).collect()
            } else {
                values.iter().rev().map(|&v| (v, r)).collect()
            };
            pass
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{interleaved, shuffled};

    #[test]
    fn shuffled_passes_are_permutations_fixed_by_the_seed() {
        let values = [1.0, 2.0, 4.0, 8.0, 16.0];
        let order = shuffled(&values, 3, 7);
        assert_eq!(order, shuffled(&values, 3, 7));
        assert_ne!(order, shuffled(&values, 3, 8));
        for (r, pass) in order.chunks(values.len()).enumerate() {
            let mut seen: Vec<f64> = pass.iter().map(|s| s.0).collect();
            seen.sort_by(f64::total_cmp);
            assert_eq!(seen, values);
            assert!(pass.iter().all(|s| s.1 == r as u32 + 1));
        }
        let passes: Vec<Vec<f64>> = order
            .chunks(values.len())
            .map(|p| p.iter().map(|s| s.0).collect())
            .collect();
        assert!(passes.iter().any(|p| p[..] != values[..]), "{passes:?}");
    }

    #[test]
    fn repeats_alternate_their_order() {
        let order: Vec<f64> = interleaved(&[1.0, 2.0, 4.0], 3)
            .iter()
            .map(|s| s.0)
            .collect();
        assert_eq!(order, [1.0, 2.0, 4.0, 4.0, 2.0, 1.0, 1.0, 2.0, 4.0]);
        let repeats: Vec<u32> = interleaved(&[1.0, 2.0], 2).iter().map(|s| s.1).collect();
        assert_eq!(repeats, [1, 1, 2, 2]);
    }
}
