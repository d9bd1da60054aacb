//! Meta commands at run time: `\set`, `\sleep`, `\if` and its branches,
//! `\shell`/`\setshell` (started here, finished in [`super::shell`]) and the
//! pipeline commands, with pgbench's error messages.

use crate::expr::{EvalContext, Expr, Value};
use crate::script::QueryMode;
use crate::script::{CommandKind, SleepTime, Target, TimeUnit};

use super::client::{Client, State};
use super::env::ThreadEnv;
use super::machine::Now;
use super::plan::Plan;
use super::reconnect::Cause;
use super::shell;
use super::sql::{command_failed, flush_or_defer, lost};
use crate::program::log;

/// Runs meta command `kind` and sets the client's next state.
pub fn execute(
    c: &mut Client,
    idx: usize,
    plan: &Plan,
    env: &mut ThreadEnv,
    now: &mut Now,
    kind: &CommandKind,
) {
    if plan.debug {
        let text = &plan.scripts[c.script].commands[c.command].words;
        log::debug(format_args!("client {} executing {text}", c.id));
    }
    c.state = State::EndCommand;
    match kind {
        CommandKind::Sql(_) => {}
        CommandKind::Set { target, expr } => {
            if let Some(value) = evaluate(c, plan, expr, "set") {
                assign(c, plan, *target, value, "set");
            }
            now.reset();
        }
        CommandKind::Sleep { duration, unit } => {
            if let Some(usec) = sleep_time(c, plan, *duration, *unit) {
                c.sleep_until = now.get(env) + usec;
                c.state = State::Sleep;
            } else {
                command_failed(c, "sleep", "execution of meta-command failed");
                c.state = State::Aborted;
            }
        }
        CommandKind::If {
            condition,
            false_target,
        } => {
            branch(c, plan, condition, *false_target, "if");
            now.reset();
        }
        CommandKind::Elif {
            condition,
            false_target,
            end,
        } => {
            if std::mem::take(&mut c.elif_pending) {
                branch(c, plan, condition, *false_target, "elif");
                now.reset();
            } else {
                c.jump = Some(*end);
            }
        }
        CommandKind::Else { end } => c.jump = Some(*end),
        CommandKind::Endif => {}
        CommandKind::Shell { command } => shell::start(c, idx, plan, env, command, None),
        CommandKind::SetShell { target, command } => {
            shell::start(c, idx, plan, env, command, Some(*target))
        }
        CommandKind::StartPipeline => start_pipeline(c, plan),
        CommandKind::SyncPipeline => match (c.pipeline, c.conn.as_mut()) {
            (Some(n), Some(conn)) => {
                conn.sync();
                c.pipeline = Some(n + 1);
            }
            _ => {
                command_failed(c, "syncpipeline", "not in pipeline mode");
                c.state = State::Aborted;
            }
        },
        CommandKind::EndPipeline => end_pipeline(c, plan),
    }
}

/// Evaluates `\if`, or an `\elif` reached as the target of a false
/// condition; a false condition continues at `false_target`, where an
/// `\elif` is evaluated in turn.
fn branch(c: &mut Client, plan: &Plan, condition: &Expr, false_target: usize, name: &str) {
    let Some(value) = evaluate(c, plan, condition, name) else {
        return;
    };
    if value.truth() {
        return;
    }
    c.jump = Some(false_target);
    c.elif_pending = matches!(
        plan.scripts[c.script]
            .commands
            .get(false_target)
            .map(|cmd| &cmd.kind),
        Some(CommandKind::Elif { .. })
    );
}

/// Evaluates an expression; on failure logs pgbench's messages and aborts.
fn evaluate(c: &mut Client, plan: &Plan, expr: &Expr, name: &str) -> Option<Value> {
    let mut stderr = std::io::stderr();
    let mut cx = EvalContext {
        vars: &mut c.vars,
        random: &mut c.random,
        stack: &mut c.stack,
        script_index: c.script,
        command_index: c.command,
        debug_out: &mut stderr,
    };
    match expr.eval(&mut cx) {
        Ok(v) => Some(v),
        Err(e) => {
            if let Some(message) = e.message_bytes(&plan.names) {
                log::error_bytes(&message);
            }
            command_failed(c, name, "evaluation of meta-command failed");
            c.state = State::Aborted;
            None
        }
    }
}

/// Stores a value, checking the name as pgbench does on first assignment.
fn assign(c: &mut Client, plan: &Plan, target: Target, value: Value, context: &str) -> bool {
    if !target.valid_name {
        log::error(format_args!(
            "{context}: invalid variable name: \"{}\"",
            plan.names.name(target.slot)
        ));
        command_failed(c, context, "assignment of meta-command failed");
        c.state = State::Aborted;
        return false;
    }
    c.vars.set(target.slot, value);
    true
}

/// pgbench's `evaluateSleep`, in µs.
fn sleep_time(c: &mut Client, plan: &Plan, duration: SleepTime, unit: TimeUnit) -> Option<i64> {
    let amount = match duration {
        SleepTime::Constant(n) => n,
        SleepTime::Var(slot) => {
            c.sql.clear();
            let name = plan.names.name(slot);
            if !c.vars.write_sql(slot, &mut c.sql) {
                log::error(format_args!("sleep: undefined variable \"{name}\""));
                return None;
            }
            let n = crate::cnum::atoi(&String::from_utf8_lossy(&c.sql));
            if n == 0 && !c.sql.first().is_some_and(u8::is_ascii_digit) {
                // The value is quoted as it is, UTF-8 or not, as pgbench does.
                let mut message = b"sleep: invalid sleep time \"".to_vec();
                message.extend_from_slice(&c.sql);
                message.extend_from_slice(format!("\" for variable \"{name}\"").as_bytes());
                log::error_bytes(&message);
                return None;
            }
            n
        }
    };
    Some(unit.sleep_micros(amount))
}

fn start_pipeline(c: &mut Client, plan: &Plan) {
    if plan.query_mode == QueryMode::Simple {
        command_failed(
            c,
            "startpipeline",
            "cannot use pipeline mode with the simple query protocol",
        );
        c.state = State::Aborted;
        return;
    }
    let mut syncs = 0;
    c.pipeline_prepared.clear();
    if plan.query_mode == QueryMode::Prepared && c.pipeline.is_none() {
        match prepare_pipeline(c, plan) {
            Ok(n) => syncs = n,
            Err(_) => {
                command_failed(c, "startpipeline", "failed to enter pipeline mode");
                c.state = State::Aborted;
                return;
            }
        }
    }
    if c.pipeline.is_some() {
        command_failed(c, "startpipeline", "already in pipeline mode");
        c.state = State::Aborted;
        return;
    }
    c.pipeline = Some(syncs);
    c.pipeline_sent.clear();
}

/// Prepares the commands up to the next `\endpipeline` before the pipeline
/// starts, each in a transaction of its own, as pgbench's `PQprepare` calls
/// do (so that a `BEGIN ISOLATION LEVEL SERIALIZABLE` in the pipeline still
/// comes first, and a statement that fails to prepare leaves the others
/// prepared); returns the number of Syncs sent, one per statement.
fn prepare_pipeline(c: &mut Client, plan: &Plan) -> Result<u32, pgwire::Error> {
    let Some(conn) = c.conn.as_mut() else {
        return Ok(0);
    };
    let commands = &plan.scripts[c.script].commands;
    let mut syncs = 0;
    for (i, command) in commands.iter().enumerate().skip(c.command + 1) {
        match &command.kind {
            CommandKind::EndPipeline => break,
            CommandKind::Sql(sql) if !c.prepared[c.script][i] => {
                let name = plan.prepared_names[c.script][i]
                    .as_deref()
                    .unwrap_or_default();
                if plan.debug {
                    log::debug(format_args!("client {} preparing {name}", c.id));
                }
                conn.parse(name, &sql.extended_text, &[])?;
                conn.sync();
                c.prepared[c.script][i] = true;
                c.pipeline_prepared.push(i);
                syncs += 1;
            }
            _ => {}
        }
    }
    Ok(syncs)
}

fn end_pipeline(c: &mut Client, plan: &Plan) {
    let (Some(n), Some(conn)) = (c.pipeline, c.conn.as_mut()) else {
        command_failed(c, "endpipeline", "not in pipeline mode");
        c.state = State::Aborted;
        return;
    };
    conn.sync();
    if flush_or_defer(conn, &mut c.peer_closed).is_err() {
        if lost(c, Cause::Lost) {
            return;
        }
        command_failed(c, "endpipeline", "failed to send a pipeline sync");
        c.state = State::Aborted;
        return;
    }
    c.response.reset(n + 1);
    c.response.closed_before_send = c.peer_closed;
    c.response.send_cut = conn.sent_in_part();
    if plan.debug {
        log::debug(format_args!("client {} receiving", c.id));
    }
    c.state = State::WaitResult;
}
