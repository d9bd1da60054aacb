//! The client state machine, pgbench's `advanceConnectionState`.
//!
//! [`advance`] runs a client from state to state until it must wait: for
//! the server, a timer, a child process, or its turn (after each
//! transaction it yields so that a script without SQL cannot starve the
//! thread's other clients). The clock is read lazily, at most once per
//! step, and reset after work that may take time (expressions, children).

use crate::stats::{FailureKind, LogEntry, Outcome, Transaction};

use super::client::{Client, ErrorStatus, State};
use super::env::ThreadEnv;
use super::plan::Plan;
use super::{meta, reconnect, shell, sql};
use crate::program::log;

/// The current time, read at most once until reset.
pub struct Now(i64);

impl Now {
    pub fn new() -> Now {
        Now(0)
    }

    pub fn get(&mut self, env: &ThreadEnv) -> i64 {
        if self.0 == 0 {
            self.0 = env.clock.now_us();
        }
        self.0
    }

    pub fn reset(&mut self) {
        self.0 = 0;
    }

    /// A time just read.
    pub fn at(t: i64) -> Now {
        Now(t)
    }
}

/// pgbench's `getPoissonRand`: a delay whose series approximates a Poisson
/// process with mean `center` µs.
fn poisson_delay(env: &mut ThreadEnv, center: f64) -> i64 {
    let uniform = 1.0 - env.throttle.next_f64();
    (-uniform.ln() * center + 0.5) as i64
}

/// pgbench's `chooseScript`.
fn choose_script(plan: &Plan, env: &mut ThreadEnv) -> usize {
    if plan.scripts.len() == 1 {
        return 0;
    }
    let mut w = env.choose.uniform(0, plan.total_weight - 1);
    let mut i = 0;
    loop {
        w -= i64::from(plan.scripts[i].weight);
        i += 1;
        if w < 0 {
            return i - 1;
        }
    }
}

/// Advances client `idx` until it has to wait.
///
/// One piece on purpose: the `match` is the state machine's table of
/// transitions, one arm per [`State`], as pgbench's
/// `advanceConnectionState` is one `switch`. Every `return` in it is a
/// point where the client waits (for the server, a timer, a child, the
/// pool, a connection), and they can be checked together only when they
/// are in one place; what an arm does beyond choosing the next state is in
/// the functions it calls (`start_transaction`, `start_command`,
/// `end_transaction`, ...).
pub fn advance(c: &mut Client, idx: usize, plan: &Plan, env: &mut ThreadEnv) {
    let mut now = Now::new();
    loop {
        match c.state {
            State::ChooseScript => start_script(c, plan, env),
            State::PrepareThrottle => {
                if prepare_throttle(c, idx, plan, env, &mut now) {
                    return;
                }
            }
            State::Throttle => {
                let t = now.get(env);
                if t < c.scheduled {
                    env.add_timer(c.scheduled, idx);
                    return;
                }
                c.state = if env.over {
                    State::Finished
                } else {
                    State::StartTx
                };
            }
            State::StartTx => start_transaction(c, idx, plan, env, &mut now),
            State::PoolWait => {
                if !pool_wait(c, idx, env, &mut now) {
                    return;
                }
            }
            State::Connect => {
                if !env.poll_connect(c, idx) {
                    return;
                }
                if c.state == State::Connect {
                    let t = env.clock.now_us();
                    env.conn_duration += t - c.connect_start;
                    now = Now(t);
                    c.reset_session();
                    c.state = State::StartTx;
                }
            }
            State::StartCommand => {
                start_command(c, idx, plan, env, &mut now);
                if c.state == State::WaitResult && !c.peer_closed {
                    // The answer cannot be there yet: wait for the socket.
                    return;
                }
            }
            State::WaitResult => {
                if !sql::read_results(c, plan) {
                    return;
                }
            }
            State::Sleep => {
                let t = now.get(env);
                if t < c.sleep_until {
                    env.add_timer(c.sleep_until, idx);
                    return;
                }
                c.state = State::EndCommand;
            }
            State::WaitShell => {
                if !shell::poll(c, idx, env) {
                    return;
                }
                now.reset();
            }
            State::EndCommand => {
                if plan.report_per_command {
                    let t = now.get(env);
                    if t <= env.count_until {
                        env.stats
                            .record_command(c.script, c.command, t - c.command_begun);
                    }
                }
                c.command = c.jump.take().unwrap_or(c.command + 1);
                c.state = State::StartCommand;
            }
            State::Error => {
                sql::after_error(c, plan, env, &mut now);
                if c.state == State::WaitRollback {
                    return;
                }
            }
            State::WaitRollback => {
                if !sql::read_rollback(c, plan, env, &mut now) {
                    return;
                }
            }
            State::Retry => retry(c, plan, env, &mut now),
            State::Failure => {
                if let Some(w) = c.watch.as_mut() {
                    w.failed_with(&c.sqlstate);
                }
                if now.get(env) <= env.count_until {
                    env.stats.record_command_failure(c.script, c.command);
                }
                if plan.verbose_errors {
                    verbose_error(c, plan, env, &mut now, false);
                }
                c.state = State::EndTx;
            }
            State::EndTx => {
                if end_transaction(c, idx, plan, env, &mut now) {
                    return;
                }
            }
            State::Lost => reconnect::lose(c, idx, plan, env, &mut now),
            State::Reconnect => {
                if !reconnect::reconnect(c, idx, env, &mut now) {
                    return;
                }
            }
            State::Finished | State::Aborted => {
                env.close(c, idx);
                return;
            }
        }
    }
}

/// Chooses the script of the next transaction.
fn start_script(c: &mut Client, plan: &Plan, env: &mut ThreadEnv) {
    c.script = choose_script(plan, env);
    c.status = ErrorStatus::None;
    c.tries = 1;
    if plan.debug {
        log::debug(format_args!(
            "client {} executing script \"{}\"",
            c.id, plan.scripts[c.script].name
        ));
    }
    c.state = if env.over {
        State::Finished
    } else if plan.throttle_delay_us > 0.0 {
        State::PrepareThrottle
    } else {
        State::StartTx
    };
}

/// Starts the transaction (connecting first under `-C`, taking a pooled
/// connection under `--pool-size`), remembering the random state in case
/// it is retried.
fn start_transaction(c: &mut Client, idx: usize, plan: &Plan, env: &mut ThreadEnv, now: &mut Now) {
    if c.conn.is_none() {
        if env.pool.is_some() {
            c.asked = now.get(env);
            if env.pool.as_mut().is_some_and(|pool| pool.acquire(c, idx)) {
                env.stats.record_pool_wait(0);
            } else {
                c.state = State::PoolWait;
                return;
            }
        } else {
            // The connection is opened once the thread's pacer gives the
            // client a slot (see `ThreadEnv::poll_connect`).
            c.state = State::Connect;
            return;
        }
    }
    let t = now.get(env);
    c.random_at_start = c.random;
    c.begun = t;
    if plan.throttle_delay_us <= 0.0 {
        // Pooled, the latency counts from the request for a connection.
        c.scheduled = if env.pool.is_some() { c.asked } else { t };
    }
    c.command = 0;
    c.state = State::StartCommand;
}

/// A client waiting for a pooled connection: true when it moved on (it
/// holds one, or the run is over, or the pool has none left), false to
/// wait on.
fn pool_wait(c: &mut Client, idx: usize, env: &mut ThreadEnv, now: &mut Now) -> bool {
    let Some(pool) = env.pool.as_mut() else {
        c.state = State::Aborted;
        return true;
    };
    if env.over {
        // The connection handed to it goes on down the line.
        if let Some(next) = pool.leave(idx) {
            env.runq.push_back(next);
        }
        c.state = State::Finished;
        return true;
    }
    if pool.take_handed(c, idx) {
        let t = now.get(env);
        env.stats.record_pool_wait(t - c.asked);
        c.state = State::StartTx;
        return true;
    }
    if pool.exhausted() {
        log::error(format_args!(
            "client {} aborted: no pooled connection is left",
            c.id
        ));
        c.state = State::Aborted;
        return true;
    }
    false
}

/// Runs the transaction again from its first command, with the random
/// state it started with.
fn retry(c: &mut Client, plan: &Plan, env: &mut ThreadEnv, now: &mut Now) {
    if plan.verbose_errors {
        verbose_error(c, plan, env, now, true);
    }
    c.tries += 1;
    if now.get(env) <= env.count_until {
        env.stats.record_command_retry(c.script, c.command);
    }
    c.random = c.random_at_start;
    c.command = 0;
    c.jump = None;
    c.elif_pending = false;
    c.status = ErrorStatus::None;
    c.state = State::StartCommand;
}

/// Draws the next scheduled start; slots already too late under `-L` are
/// skipped, in a tight loop as in pgbench. Returns true when the client
/// yields its turn: after a skipped slot whose delay rounded to 0, so that
/// a rate so high that every delay does (the schedule then never catches
/// up with the clock) cannot keep the thread from noticing the end of the
/// run or a stop.
fn prepare_throttle(
    c: &mut Client,
    idx: usize,
    plan: &Plan,
    env: &mut ThreadEnv,
    now: &mut Now,
) -> bool {
    let delay = poisson_delay(env, plan.throttle_delay_us);
    // A rate so low that the delay does not fit (`-R 1e-300`) schedules
    // the transaction at the end of time rather than overflowing.
    env.throttle_trigger = env.throttle_trigger.saturating_add(delay);
    c.scheduled = env.throttle_trigger;
    if let Some(limit) = plan.latency_limit_us {
        let t = now.get(env);
        if env.throttle_trigger < t - limit {
            record_transaction(c, env, now, true);
            if env.over || (plan.transactions > 0 && c.count >= plan.transactions) {
                c.state = State::Finished;
                return false;
            }
            if delay > 0 {
                return false;
            }
            env.runq.push_back(idx);
            return true;
        }
    }
    c.state = match env.end_us {
        Some(end) if c.scheduled > end => State::Finished,
        _ => State::Throttle,
    };
    false
}

fn start_command(c: &mut Client, idx: usize, plan: &Plan, env: &mut ThreadEnv, now: &mut Now) {
    let commands = &plan.scripts[c.script].commands;
    let Some(command) = commands.get(c.command) else {
        if c.pipeline.is_some() {
            log::error(format_args!(
                "client {} aborted: end of script reached with pipeline open",
                c.id
            ));
            c.state = State::Aborted;
        } else {
            c.state = State::EndTx;
        }
        return;
    };
    if plan.report_per_command {
        c.command_begun = now.get(env);
    }
    if let crate::script::CommandKind::Sql(command) = &command.kind {
        sql::send(c, plan, command);
    } else {
        meta::execute(c, idx, plan, env, now, &command.kind);
    }
}

/// pgbench's `processXactStats`: accounts for the transaction (or the
/// skipped one) in the thread's statistics and log, unless it ended after
/// a study's measured window.
pub(super) fn record_transaction(
    c: &mut Client,
    env: &mut ThreadEnv,
    now: &mut Now,
    skipped: bool,
) {
    let t = now.get(env);
    if t > env.count_until {
        c.count += 1;
        return;
    }
    let outcome = if skipped {
        Outcome::Skipped
    } else {
        match c.status {
            ErrorStatus::None => Outcome::Committed,
            ErrorStatus::Serialization => Outcome::Failed(FailureKind::Serialization),
            ErrorStatus::Deadlock => Outcome::Failed(FailureKind::Deadlock),
            ErrorStatus::OtherSql => Outcome::Failed(FailureKind::Other),
        }
    };
    let (latency_us, lag_us) = match outcome {
        Outcome::Committed => {
            if let Some(w) = c.watch.as_mut() {
                w.committed(t);
            }
            (t - c.scheduled, c.begun - c.scheduled)
        }
        _ => (0, 0),
    };
    env.stats.record_transaction(&Transaction {
        script: c.script,
        outcome,
        tries: c.tries,
        latency_us,
        lag_us,
        end_us: t,
    });
    c.count += 1;
    env.log_transaction(&LogEntry {
        client_id: c.id,
        transaction_no: c.count,
        script: c.script,
        outcome,
        tries: c.tries,
        latency_us,
        lag_us,
        now_us: t,
    });
}

/// The end of a script: accounting, the transaction-block check, `-C`,
/// and whether another transaction follows. Returns true when the client
/// yields its turn.
fn end_transaction(
    c: &mut Client,
    idx: usize,
    plan: &Plan,
    env: &mut ThreadEnv,
    now: &mut Now,
) -> bool {
    record_transaction(c, env, now, false);
    let in_block = c
        .conn
        .as_ref()
        .is_some_and(|conn| conn.transaction_status() != pgwire::TxStatus::Idle);
    if in_block {
        log::error(format_args!(
            "client {} aborted: end of script reached without completing the last transaction",
            c.id
        ));
        c.state = State::Aborted;
        return false;
    }
    // A connection handed to a waiting client leaves none idle: this
    // client will wait in line behind it, and goes there now instead of
    // yielding first, since no one can be starved by it.
    let mut handed_over = false;
    if let Some(pool) = env.pool.as_mut() {
        if let Some(next) = pool.release(c, idx) {
            env.runq.push_back(next);
            handed_over = true;
        }
    }
    if plan.connect_per_transaction {
        let start = now.get(env);
        env.close(c, idx);
        let t = env.clock.now_us();
        env.conn_duration += t - start;
        *now = Now(t);
    }
    let done = plan.transactions > 0 && c.count >= plan.transactions;
    if done || env.over {
        c.state = State::Finished;
        return false;
    }
    c.state = State::ChooseScript;
    if handed_over {
        return false;
    }
    env.runq.push_back(idx);
    true
}

/// `--verbose-errors` lines about retrying or giving up.
fn verbose_error(c: &Client, plan: &Plan, env: &ThreadEnv, now: &mut Now, retry: bool) {
    let what = if retry {
        "repeats the transaction after the error"
    } else {
        "ends the failed transaction"
    };
    let mut text = format!("client {} {what} (try {}", c.id, c.tries);
    if plan.max_tries != 0 {
        text.push_str(&format!("/{}", plan.max_tries));
    }
    if let Some(limit) = plan.latency_limit_us {
        let used = 100.0 * (now.get(env) - c.scheduled) as f64 / limit as f64;
        text.push_str(&format!(
            ", {used:.3}% of the maximum time of tries was used"
        ));
    }
    text.push(')');
    log::info(format_args!("{text}"));
}
