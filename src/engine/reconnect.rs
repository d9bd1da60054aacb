//! `--reconnect`: a client that loses its connection opens another and
//! goes on, and keeps the timeline of the outage it went through.
//!
//! # Two states of the client state machine
//! A lost connection is not a special case of the paths that meet it
//! (sending, reading results, rolling back): each of them, where it would
//! abort the client, moves it to [`State::Lost`] instead when the option
//! is on, and the machine does the rest in two states:
//! - `Lost` ([`lose`]): the transaction is classified and accounted for
//!   as failed (pgbench's "other" failures, so its counts still add up),
//!   the connection is closed, and the client goes to `Reconnect` (or is
//!   finished, if that was its last transaction or the run is over).
//! - `Reconnect` ([`reconnect`]): a connection is opened through the
//!   thread's connect pacer with the whole conninfo, as libpq opens one:
//!   the host list in order (or shuffled under `load_balance_hosts`),
//!   skipping hosts that do not match `target_session_attrs`. A failed
//!   attempt is tried again after a backoff that doubles from
//!   [`FIRST_BACKOFF_US`] to [`MAX_BACKOFF_US`] (short, as the outage is
//!   measured to the first commit after it); a client with no connection
//!   `--reconnect`'s wait after its first error aborts. Connected, it
//!   chooses its next script: under `-R` the thread's schedule has gone on
//!   meanwhile, so the transactions due during the outage are late (and
//!   skipped under `-L`) exactly as pgbench counts them, and the rate
//!   resumes rather than restarts.
//!
//! The first client of a thread that connects again wakes the thread's
//! other clients waiting out their backoff ([`Waiting`]): the server is
//! back, and the clients' first commits after the outage, which measure
//! it, should not be spread over a backoff each.
//!
//! # Classes of failure
//! A connection lost while a statement was in flight leaves the
//! transaction **in doubt** when that statement would have committed it:
//! a `COMMIT`/`END`, or a statement sent outside a transaction block that
//! changes something (it commits on its own). Otherwise (the statement
//! never reached a live server, or it was inside a block before its
//! `COMMIT`, or it commits nothing: `BEGIN`, `SELECT`, `SET`, ...) the
//! transaction did **not commit**. A server that refuses to write
//! (SQLSTATE 25006, a primary demoted to a standby) is **read-only**: the
//! client closes that connection and looks for a read-write one. Errors
//! that come with an answer and leave the client running (retried or
//! tolerated) are counted by SQLSTATE.
//!
//! # The timeline
//! Each client keeps the moments of its first outage in a [`Watch`], a
//! few integers written where the client already reads the clock; the
//! run's figures are computed after the run by
//! `crate::model::failover::Outage::from_clients`.

use pgwire::TxStatus;

use crate::model::failover::{ClientOutage, FailureClass};
use crate::program::log;
use crate::script::CommandKind;

use super::client::{Client, ErrorStatus, State};
use super::env::{Opening, ThreadEnv};
use super::machine::{record_transaction, Now};
use super::plan::Plan;

/// The first wait after a failed connection attempt, µs.
pub const FIRST_BACKOFF_US: i64 = 10_000;
/// The longest wait between two attempts, µs.
pub const MAX_BACKOFF_US: i64 = 100_000;

/// The clients of a thread that wait to try again, and when a client of
/// the thread last connected again.
#[derive(Debug, Default)]
pub struct Waiting {
    clients: Vec<usize>,
    connected_us: i64,
}

/// Why a client left its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// The connection broke or the server ended it.
    Lost,
    /// The server refused to write (SQLSTATE 25006).
    ReadOnly,
}

/// A client's outage in progress and behind it.
#[derive(Debug)]
pub struct Watch {
    /// `--reconnect`'s wait, µs.
    max_wait_us: i64,
    /// Its last commit so far.
    last_commit_us: Option<i64>,
    /// Waiting for the first commit after the first outage.
    awaiting_commit: bool,
    /// Why the current connection is being left.
    pub cause: Cause,
    /// The next attempt, and the wait after it if it fails.
    retry_at_us: i64,
    /// When its last attempt failed.
    failed_us: i64,
    backoff_us: i64,
    /// When the client gives up.
    give_up_at_us: i64,
    /// Entries of the host list before and after the first outage.
    host_before: Option<usize>,
    host_after: Option<usize>,
    /// What the report shows (hosts filled in at the end).
    record: ClientOutage,
}

impl Watch {
    pub fn new(client: u32, max_wait_us: i64) -> Watch {
        Watch {
            max_wait_us,
            last_commit_us: None,
            awaiting_commit: false,
            cause: Cause::Lost,
            retry_at_us: 0,
            failed_us: 0,
            backoff_us: FIRST_BACKOFF_US,
            give_up_at_us: 0,
            host_before: None,
            host_after: None,
            record: ClientOutage {
                client,
                ..ClientOutage::default()
            },
        }
    }

    /// A commit at `t`.
    #[inline]
    pub fn committed(&mut self, t: i64) {
        self.last_commit_us = Some(t);
        if self.awaiting_commit {
            self.awaiting_commit = false;
            self.record.first_commit_after_us = Some(t);
        }
    }

    /// A transaction failed on an SQL error with an answer.
    pub fn failed_with(&mut self, sqlstate: &[u8; 5]) {
        let state = std::str::from_utf8(sqlstate).unwrap_or("?????");
        self.record.failures.add_sqlstate(state);
    }

    /// The timeline for the report; `hosts` names the host list's entries.
    pub fn outage(&self, hosts: &[String]) -> ClientOutage {
        let name = |i: Option<usize>| i.and_then(|i| hosts.get(i)).cloned().unwrap_or_default();
        ClientOutage {
            host_before: name(self.host_before),
            host_after: name(self.host_after),
            ..self.record.clone()
        }
    }
}

/// `State::Lost`: classifies and accounts for the transaction, closes the
/// connection, and moves on to `Reconnect` (or to the end).
pub fn lose(c: &mut Client, idx: usize, plan: &Plan, env: &mut ThreadEnv, now: &mut Now) {
    let t = now.get(env);
    let class = classify(c, plan);
    let host = c.conn.as_ref().map(|conn| conn.host_index());
    let said = c.response.error.take().map(|(_, _, text)| text);
    let what = match class {
        FailureClass::NotCommitted => "not committed",
        FailureClass::InDoubt => "in doubt",
        FailureClass::ReadOnly => "refused by a read-only server",
    };
    log::error(format_args!(
        "client {} left its connection in command {} of script {} (transaction {what}); reconnecting",
        c.id, c.command, c.script
    ));
    if let Some(text) = said {
        log::error(format_args!("{text}"));
    }
    env.close(c, idx);
    c.pipeline = None;
    c.pipeline_sent.clear();
    c.pipeline_prepared.clear();
    c.jump = None;
    c.elif_pending = false;
    if let Some(w) = c.watch.as_mut() {
        w.record.failures.add(class);
        w.record.outages += 1;
        if w.record.first_error_us.is_none() {
            w.record.first_error_us = Some(t);
            w.record.last_commit_before_us = w.last_commit_us;
            w.host_before = host;
        }
        w.retry_at_us = t;
        w.backoff_us = FIRST_BACKOFF_US;
        w.give_up_at_us = t.saturating_add(w.max_wait_us);
    }
    c.status = ErrorStatus::OtherSql;
    record_transaction(c, env, now, false);
    let done = plan.transactions > 0 && c.count >= plan.transactions;
    c.state = if done || env.over {
        State::Finished
    } else {
        env.reconnecting.clients.push(idx);
        State::Reconnect
    };
}

/// `State::Reconnect`: tries to open a connection; false while the
/// client waits (for its backoff or the attempt).
pub fn reconnect(c: &mut Client, idx: usize, env: &mut ThreadEnv, now: &mut Now) -> bool {
    let t = now.get(env);
    let Some((give_up_at, retry_at, max_wait, failed)) = c
        .watch
        .as_ref()
        .map(|w| (w.give_up_at_us, w.retry_at_us, w.max_wait_us, w.failed_us))
    else {
        c.state = State::Aborted;
        return true;
    };
    if env.over {
        env.abandon_connect(c, idx);
        c.state = State::Finished;
        return true;
    }
    if t >= give_up_at {
        env.abandon_connect(c, idx);
        if let Some(w) = c.watch.as_mut() {
            w.record.gave_up = true;
        }
        log::error(format_args!(
            "client {} aborted: no connection within {:.3} s of losing it",
            c.id,
            max_wait as f64 / 1e6
        ));
        c.state = State::Aborted;
        return true;
    }
    // Another client of the thread connected since this one's last
    // failure: the backoff is over.
    let woken = env.reconnecting.connected_us > failed;
    if c.connecting.is_none() && t < retry_at && !woken {
        env.add_timer(retry_at.min(give_up_at), idx);
        return false;
    }
    let opening = env.open(c, idx);
    let Some(w) = c.watch.as_mut() else {
        return true;
    };
    match opening {
        Opening::Waiting => {
            let wake = env.end_us.map_or(give_up_at, |end| end.min(give_up_at));
            env.add_timer(wake, idx);
            false
        }
        Opening::Failed(e) => {
            // Only the first failed attempt after a loss is shown: the
            // others say the same.
            let t = env.clock.now_us();
            *now = Now::at(t);
            if w.backoff_us == FIRST_BACKOFF_US {
                log::error(format_args!("client {} could not reconnect yet: {e}", c.id));
            }
            w.failed_us = t;
            w.retry_at_us = t + w.backoff_us;
            w.backoff_us = (w.backoff_us * 2).min(MAX_BACKOFF_US);
            env.add_timer(w.retry_at_us.min(give_up_at), idx);
            false
        }
        Opening::Open => {
            if c.state != State::Reconnect {
                // The new connection could not be watched: it aborted.
                return true;
            }
            let t = env.clock.now_us();
            *now = Now::at(t);
            env.reconnecting.connected_us = t;
            for other in env.reconnecting.clients.drain(..) {
                if other != idx {
                    env.runq.push_back(other);
                }
            }
            if w.record.reconnected_us.is_none() {
                w.record.reconnected_us = Some(t);
                w.host_after = c.conn.as_ref().map(|conn| conn.host_index());
                w.awaiting_commit = true;
            }
            c.reset_session();
            c.state = State::ChooseScript;
            true
        }
    }
}

/// The host list's entries as the report names them: `host:port` as
/// written (the socket directory, or the address, when no name was).
pub fn host_names(config: &pgwire::conninfo::Config) -> Vec<String> {
    use pgwire::conninfo::HostKind;
    config
        .hosts
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let written = config.host_spellings.get(i);
            let name = match (written, &host.kind) {
                (Some(w), _) if !w.name.is_empty() => w.name.clone(),
                (_, HostKind::Unix(dir)) => dir.display().to_string(),
                (
                    _,
                    HostKind::Tcp {
                        name: Some(name), ..
                    },
                ) => name.clone(),
                (
                    _,
                    HostKind::Tcp {
                        addr: Some(addr), ..
                    },
                ) => addr.to_string(),
                (_, HostKind::Tcp { .. }) => String::new(),
            };
            format!("{name}:{}", host.port)
        })
        .collect()
}

/// The class of the transaction whose connection is being left.
fn classify(c: &Client, plan: &Plan) -> FailureClass {
    let cause = c.watch.as_ref().map_or(Cause::Lost, |w| w.cause);
    if cause == Cause::ReadOnly {
        return FailureClass::ReadOnly;
    }
    if c.response.closed_before_send {
        return FailureClass::NotCommitted;
    }
    let in_block = c
        .conn
        .as_ref()
        .is_some_and(|conn| conn.transaction_status() != TxStatus::Idle);
    let text = match plan.scripts[c.script]
        .commands
        .get(c.command)
        .map(|cmd| &cmd.kind)
    {
        Some(CommandKind::Sql(sql)) => sql.extended_text.as_str(),
        _ => "",
    };
    if commits(text, in_block) {
        FailureClass::InDoubt
    } else {
        FailureClass::NotCommitted
    }
}

/// Whether a statement, sent inside a transaction block or not, commits
/// when it succeeds.
fn commits(text: &str, in_block: bool) -> bool {
    let text = text.trim_start();
    let end = text
        .find(|ch: char| !ch.is_ascii_alphabetic())
        .unwrap_or(text.len());
    let word = &text[..end];
    let is = |w: &str| word.eq_ignore_ascii_case(w);
    if is("commit") || is("end") {
        return true;
    }
    let commits_nothing = [
        "",
        "begin",
        "start",
        "rollback",
        "abort",
        "select",
        "show",
        "set",
        "reset",
        "savepoint",
        "release",
    ];
    !in_block && !commits_nothing.iter().any(|w| is(w))
}

#[cfg(test)]
mod tests {
    use super::commits;

    #[test]
    fn what_commits_when_its_answer_is_lost() {
        let cases = [
            ("END;", true, true),
            ("commit", false, true),
            ("UPDATE t SET a = 1", true, false),
            ("UPDATE t SET a = 1", false, true),
            ("insert into t values (1)", false, true),
            ("BEGIN;", false, false),
            ("SELECT abalance FROM pgbench_accounts", false, false),
            ("  rollback", true, false),
        ];
        for (text, in_block, expected) in cases {
            assert_eq!(
                commits(text, in_block),
                expected,
                "{text} in block {in_block}"
            );
        }
    }
}
