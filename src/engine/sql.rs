//! Sending SQL commands in the three query modes and reading their results.
//!
//! Everything is encoded into the connection's reused write buffer and sent
//! with one write per command (or per pipeline, at `\endpipeline`):
//! - simple: one Query whose text has the variables substituted in place;
//! - extended: Parse (unnamed), Bind, Execute, Sync;
//! - prepared: Parse of `P_<n>` the first time a command runs on a
//!   connection, in the same write as its Bind, Execute and Sync (pgbench
//!   prepares with a separate round trip). A Parse that fails is logged
//!   and the command sent again without it, as pgbench executes after a
//!   failed `PQprepare`: behind a pooler, where the name is taken on the
//!   server connection, that runs the statement found; otherwise the
//!   execution fails on the missing statement (`prepared statement "P_0"
//!   does not exist`), which aborts the client. Inside a pipeline the statements are prepared as it starts,
//!   each Parse under a Sync of its own (pgbench's `PQprepare` per
//!   statement), so one that fails is logged and the others go on.
//!   A statement to be prepared on a connection whose backend had
//!   already ended is reported as pgbench's separate prepare round trip
//!   reports it (`prepare_met_closed_connection`).
//!
//! `\gset` and `\aset` commands also send Describe so the column names come
//! back with the extended protocols. Results are framed in place; only the
//! values stored by `\gset`/`\aset` are copied, into reused buffers. What
//! each message of the results does is in `results`.

mod results;

use pgwire::libpq_text::libpq_message;
use pgwire::{ErrorKind, Message, TxStatus};

use crate::script::QueryMode;
use crate::script::{CommandKind, ResultVars, SqlCommand, SqlPiece};

use super::client::{Client, ErrorStatus, Response, State};
use super::env::ThreadEnv;
use super::machine::Now;
use super::plan::Plan;
use super::reconnect::Cause;
use crate::program::log;
use results::{handle, store_row, Sent};

/// Flush a pipeline's buffer once it holds this much.
const PIPELINE_FLUSH_BYTES: usize = 64 * 1024;

/// pgbench's `commandFailed`.
pub fn command_failed(c: &Client, what: &str, message: &str) {
    log::error(format_args!(
        "client {} aborted in command {} ({what}) of script {}; {message}",
        c.id, c.command, c.script
    ));
}

/// Sends SQL command `command` of the client's script.
pub fn send(c: &mut Client, plan: &Plan, command: &SqlCommand) {
    let stores = !matches!(command.results, ResultVars::Discard);
    if c.pipeline.is_some() && stores {
        let (what, text) = match command.results {
            ResultVars::Gset { .. } => ("gset", "\\gset is not allowed in pipeline mode"),
            _ => ("aset", "\\aset is not allowed in pipeline mode"),
        };
        command_failed(c, what, text);
        c.state = State::Aborted;
        return;
    }
    let Ok(parse_sent) = encode(c, plan, command, stores) else {
        if lost(c, Cause::Lost) {
            return;
        }
        command_failed(c, "SQL", "SQL command send failed");
        c.state = State::Aborted;
        return;
    };
    let Some(conn) = c.conn.as_mut() else {
        c.state = State::Aborted;
        return;
    };
    let in_pipeline = c.pipeline.is_some();
    if in_pipeline {
        c.pipeline_sent.push(c.command);
    }
    if in_pipeline && conn.unflushed_output() < PIPELINE_FLUSH_BYTES {
        c.state = State::EndCommand;
        return;
    }
    if flush_or_defer(conn, &mut c.peer_closed).is_err() {
        if lost(c, Cause::Lost) {
            return;
        }
        command_failed(c, "SQL", "SQL command send failed");
        c.state = State::Aborted;
        return;
    }
    if in_pipeline {
        c.state = State::EndCommand;
        return;
    }
    c.response.reset(1);
    c.response.parse_pending = parse_sent;
    c.response.closed_before_send = c.peer_closed;
    c.response.send_cut = conn.sent_in_part();
    if plan.debug {
        log::debug(format_args!("client {} receiving", c.id));
    }
    c.state = State::WaitResult;
}

/// Sends what is buffered. A server that has closed its end is not an
/// error yet: as libpq does, the unsent output is dropped and the failure
/// is reported by the read that follows, which finds the server's last
/// message (the FATAL that says why the backend ended) before the end of
/// the stream.
pub fn flush_or_defer(
    conn: &mut pgwire::Connection,
    peer_closed: &mut bool,
) -> Result<(), pgwire::Error> {
    match conn.flush() {
        Ok(_) => Ok(()),
        Err(e) if e.peer_gone() => {
            conn.discard_output();
            *peer_closed = true;
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Encodes the command for the query mode; Sync is added outside a
/// pipeline. True when a Parse of a named statement went out with it
/// (`-M prepared`, the command's first run on this connection).
fn encode(
    c: &mut Client,
    plan: &Plan,
    command: &SqlCommand,
    describe: bool,
) -> Result<bool, pgwire::Error> {
    let Client {
        conn,
        vars,
        sql,
        prepared,
        pipeline,
        id,
        script,
        command: index,
        ..
    } = c;
    let Some(conn) = conn.as_mut() else {
        return Ok(false);
    };
    let mut parse_sent = false;
    match plan.query_mode {
        QueryMode::Simple => {
            substitute(sql, vars, command);
            if plan.debug {
                let mut line = format!("client {id} sending ").into_bytes();
                line.extend_from_slice(sql);
                log::debug_bytes(&line);
            }
            conn.query(&sql[..])?;
            return Ok(false);
        }
        QueryMode::Extended => {
            if plan.debug {
                log::debug(format_args!(
                    "client {id} sending {}",
                    command.extended_text
                ));
            }
            conn.parse("", &command.extended_text, &[])?;
        }
        QueryMode::Prepared => {
            let done = &mut prepared[*script][*index];
            parse_sent = prepare_once(conn, plan, command, done, *id, *script, *index)?;
        }
    }
    let statement = match plan.query_mode {
        QueryMode::Prepared => plan.prepared_names[*script][*index]
            .as_deref()
            .unwrap_or_default(),
        _ => "",
    };
    conn.bind_execute(
        statement,
        command.params.len(),
        |i, out| vars.write_sql(command.params[i], out),
        describe,
        pipeline.is_none(),
    )?;
    Ok(parse_sent)
}

/// The text of a simple-mode query, with the variables' values written in
/// place (or the variable as written, when it has no value), into the
/// client's reused buffer.
fn substitute(sql: &mut Vec<u8>, vars: &crate::expr::vars::Variables, command: &SqlCommand) {
    sql.clear();
    for piece in &command.pieces {
        match piece {
            SqlPiece::Text(text) => sql.extend_from_slice(text.as_bytes()),
            SqlPiece::Var { slot, written } => {
                if !vars.write_sql(*slot, sql) {
                    sql.extend_from_slice(written.as_bytes());
                }
            }
        }
    }
}

/// `-M prepared`: the Parse of statement `P_<n>` the first time the
/// command runs on this connection (`done` says whether it has); true when
/// it went out.
fn prepare_once(
    conn: &mut pgwire::Connection,
    plan: &Plan,
    command: &SqlCommand,
    done: &mut bool,
    id: u32,
    script: usize,
    index: usize,
) -> Result<bool, pgwire::Error> {
    let name = plan.prepared_names[script][index]
        .as_deref()
        .unwrap_or_default();
    let mut parse_sent = false;
    if !*done {
        if plan.debug {
            log::debug(format_args!("client {id} preparing {name}"));
        }
        conn.parse(name, &command.extended_text, &[])?;
        *done = true;
        parse_sent = true;
    }
    if plan.debug {
        log::debug(format_args!("client {id} sending {name}"));
    }
    Ok(parse_sent)
}

/// Reads what has arrived; true when the client moved on (results complete
/// or the client aborted), false to wait for more.
pub fn read_results(c: &mut Client, plan: &Plan) -> bool {
    match drain(c, plan) {
        Ok(false) => false,
        Ok(true) => {
            finish_results(c, plan);
            if !c.response.after_abort.is_empty() {
                crate::program::ewrite!("{}", c.response.after_abort);
            }
            true
        }
        Err(_) if c.response.copy_met && c.response.copy_error => {
            // The server ended the connection after the COPY failed (the
            // next statement of a pipeline arrived in the middle of it).
            copy_aborted(c);
            true
        }
        Err(_) if lost(c, Cause::Lost) => true,
        Err(e) if send_failed(&c.response, &e, c.pipeline.is_some()) => {
            if c.pipeline.is_some() {
                command_failed(c, "endpipeline", "failed to send a pipeline sync");
            } else {
                command_failed(c, "SQL", "SQL command send failed");
            }
            c.state = State::Aborted;
            true
        }
        Err(e) => {
            let as_prepare = c.response.closed_before_send
                && matches!(e.kind(), ErrorKind::Closed)
                && prepare_met_closed_connection(c, &e);
            if !as_prepare {
                report_failure(c, &e);
            }
            c.state = State::Aborted;
            true
        }
    }
}

/// A client that met a COPY aborts; PQendcopy has shown the COPY's own
/// failure (a statement trigger's error, or the server's refusal of a
/// message that came in the middle of the COPY) as a notice; errors of
/// the statements after it are not shown.
fn copy_aborted(c: &mut Client) {
    if c.response.copy_error {
        if let Some((_, _, error)) = c.response.error.take() {
            crate::program::ewrite!("{error}\n");
        }
    }
    c.state = State::Aborted;
}

/// Whether pgbench would have failed to send the statement whose results
/// end in `e`: the connection ended before the whole statement went out,
/// and the server said nothing pgbolt read (the FATAL of a terminated
/// backend is shown instead, as libpq shows it). A reset (a Unix socket,
/// or a TCP peer that answered with RST) fails libpq's write at once; a
/// plain end of stream is met by the write only inside a pipeline (its
/// Sync goes out last, after the end), while outside one the TCP stack
/// takes the rest of the statement and libpq finds the end as it reads
/// (`perhaps the backend died while processing`).
fn send_failed(r: &Response, e: &pgwire::Error, pipeline: bool) -> bool {
    r.send_cut
        && r.error.is_none()
        && match e.kind() {
            ErrorKind::Io => true,
            ErrorKind::Closed => pipeline,
            _ => false,
        }
}

/// A connection whose backend had ended while the client was idle, and a
/// statement (or a pipeline's statements) still to be prepared on it:
/// pgbench prepares with `PQprepare`, a round trip of its own, which reads
/// the server's last words (if any) and the end of the connection and
/// logs them; each further `PQprepare` of the pipeline finds no
/// connection, and the statement (the pipeline's first) cannot be sent.
/// Prints those lines and returns true, or returns false when nothing
/// was to be prepared.
fn prepare_met_closed_connection(c: &mut Client, e: &pgwire::Error) -> bool {
    let statements = if c.pipeline.is_some() {
        c.pipeline_prepared.len()
    } else {
        usize::from(c.response.parse_pending)
    };
    if statements == 0 {
        return false;
    }
    match c.response.error.take() {
        Some((_, _, message)) => log::error(format_args!("{message}\n{e}")),
        None => log::error(format_args!("{e}")),
    }
    for _ in 1..statements {
        log::error(format_args!("no connection to the server"));
    }
    if c.pipeline.is_some() {
        if let Some(&first) = c.pipeline_sent.first() {
            c.command = first;
        }
    }
    command_failed(c, "SQL", "SQL command send failed");
    true
}

/// The client's abort line for results that ended in an error.
fn report_failure(c: &Client, e: &pgwire::Error) {
    if let Some((_, qry, message)) = &c.response.error {
        log::error(format_args!(
            "client {} script {} aborted in command {} query {qry}: {message}",
            c.id, c.script, c.command
        ));
    } else {
        // A connection that broke or ended says nothing more than
        // pgbench's line (libpq's "server closed the connection
        // unexpectedly" stays inside PQconsumeInput there).
        if !matches!(e.kind(), ErrorKind::Io | ErrorKind::Closed) {
            log::error(format_args!("{e}"));
        }
        command_failed(c, "SQL", "perhaps the backend died while processing");
    }
}

/// Flushes pending output, then reads and handles messages until all the
/// expected ReadyForQuery messages are in (true) or the socket is drained
/// (false).
fn drain(c: &mut Client, plan: &Plan) -> Result<bool, pgwire::Error> {
    let Client {
        id,
        conn,
        response,
        vars,
        script,
        command,
        peer_closed,
        sql,
        pipeline,
        pipeline_sent,
        pipeline_prepared,
        ..
    } = c;
    let Some(conn) = conn.as_mut() else {
        response.abort = Some("the connection is closed".to_owned());
        return Ok(true);
    };
    if conn.pending_output() > 0 {
        // A partial write continues on writability; reading goes on
        // meanwhile, as the server may be waiting for us to read first.
        flush_or_defer(conn, peer_closed)?;
        response.send_cut = conn.sent_in_part();
    }
    let commands = &plan.scripts[*script].commands;
    let (store, query) = match (&commands[*command].kind, *pipeline) {
        (CommandKind::Sql(cmd), None) => (
            &cmd.results,
            Sent {
                client: *id,
                mode: plan.query_mode,
                command: Some(cmd),
                simple_text: sql,
                encoding: conn.client_encoding(),
                pipeline: None,
                prepared: &[],
            },
        ),
        _ => (
            &ResultVars::Discard,
            Sent {
                client: *id,
                mode: plan.query_mode,
                command: None,
                simple_text: &[],
                encoding: conn.client_encoding(),
                pipeline: pipeline.map(|_| (commands.as_slice(), pipeline_sent.as_slice())),
                prepared: pipeline_prepared,
            },
        ),
    };
    let pipelined = pipeline.map(|_| pipeline_sent.len());
    Reading {
        response,
        vars,
        store,
        query,
        pipelined,
    }
    .read(conn, plan, peer_closed)
}

/// What `drain` hands each message to: the client's response so far, where
/// `\gset`/`\aset` store, and what was sent.
struct Reading<'a, 'b> {
    response: &'a mut Response,
    vars: &'a mut crate::expr::vars::Variables,
    store: &'a ResultVars,
    query: Sent<'b>,
    /// The queries sent in the pipeline these results end, if they end one.
    pipelined: Option<usize>,
}

impl Reading<'_, '_> {
    /// Reads and handles messages until all the expected ReadyForQuery
    /// messages are in (true) or the socket is drained (false).
    #[inline]
    fn read(
        &mut self,
        conn: &mut pgwire::Connection,
        plan: &Plan,
        peer_closed: &mut bool,
    ) -> Result<bool, pgwire::Error> {
        loop {
            if self.buffered(conn, plan, *peer_closed)? {
                return Ok(true);
            }
            if self.response.copy_in {
                end_copy_in(conn, self.response, self.query.mode, peer_closed)?;
            }
            match conn.fill()? {
                pgwire::Fill::WouldBlock => return Ok(false),
                pgwire::Fill::Drained if !*peer_closed => {
                    if self.buffered(conn, plan, *peer_closed)? {
                        return Ok(true);
                    }
                    if self.response.copy_in {
                        // A CopyInResponse came in this read: the server
                        // waits for our CopyDone before it says anything
                        // more.
                        continue;
                    }
                    return Ok(false);
                }
                pgwire::Fill::Drained | pgwire::Fill::More => {}
            }
        }
    }

    /// Handles the whole messages already read; true once the last
    /// expected ReadyForQuery was among them (and what came after it in
    /// the same read has been handled too).
    #[inline]
    fn buffered(
        &mut self,
        conn: &mut pgwire::Connection,
        plan: &Plan,
        peer_closed: bool,
    ) -> Result<bool, pgwire::Error> {
        while let Some(msg) = conn.next_message()? {
            self.response.send_cut &= !peer_closed;
            if handle(msg, self.response, self.vars, self.store, &self.query, plan) {
                read_while_idle(conn, self.response, plan, self.pipelined)?;
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// A COPY FROM STDIN met: pgbench leaves the copy state with PQendcopy,
/// which sends CopyDone: the server ends the COPY with no rows, as a
/// success (statement triggers fire, an implicit transaction commits).
fn end_copy_in(
    conn: &mut pgwire::Connection,
    response: &mut Response,
    mode: QueryMode,
    peer_closed: &mut bool,
) -> Result<(), pgwire::Error> {
    response.copy_in = false;
    conn.copy_done();
    if mode != QueryMode::Simple {
        // In copy-in mode the server ignored every Sync sent after
        // the COPY (a pipeline's), and waits for one after it (libpq
        // sends this Sync too when it ends a COPY in extended mode):
        // its ReadyForQuery is the last one to come.
        conn.sync();
        response.syncs_left = 1;
    }
    flush_or_defer(conn, peer_closed)
}

/// What becomes of the messages that came in the same read as the last
/// ReadyForQuery.
#[derive(Clone, Copy)]
enum Idle {
    Shown,
    /// Kept for after the line that aborts the client.
    AfterAbort,
    Dropped,
}

/// Handles the messages that came in the same read as the last
/// ReadyForQuery, as libpq does when pgbench asks for a result after the
/// last one: no query is in flight, so an error is only shown, in libpq's
/// notice form. That is how a backend terminated just after answering
/// shows up (its FATAL follows the ReadyForQuery); the client then fails on
/// its next command, with `perhaps the backend died while processing`.
/// Messages that arrive later are not waited for (libpq would show them as
/// a next command starts). `pipelined`: the queries sent in the pipeline
/// these results end, if they end one.
fn read_while_idle(
    conn: &mut pgwire::Connection,
    r: &mut Response,
    plan: &Plan,
    pipelined: Option<usize>,
) -> Result<(), pgwire::Error> {
    let idle = idle_messages(r, plan, pipelined);
    while let Some(msg) = conn.next_message()? {
        if let Message::ErrorResponse(fields) | Message::NoticeResponse(fields) = msg {
            if let Ok(e) = pgwire::DbError::from_fields(fields) {
                match idle {
                    Idle::Shown => crate::program::ewrite!("{}", libpq_message(&e, None, false)),
                    Idle::AfterAbort => r.after_abort.push_str(&libpq_message(&e, None, false)),
                    Idle::Dropped => {}
                }
            }
        }
    }
    Ok(())
}

/// When the results abort the client, pgbench drains the connection with
/// `PQgetResult` before giving up on it, and libpq parses what it holds
/// then: outside a pipeline that shows these messages (before the abort
/// line, as pgbench reads one result ahead). Inside a pipeline the abort
/// line comes first and the drain stops at the end of the next query's
/// results, so they are shown, after that line, only when no query of the
/// pipeline follows the failing one. A client that goes on shows them at
/// once.
fn idle_messages(r: &Response, plan: &Plan, pipelined: Option<usize>) -> Idle {
    let goes_on = !r.copy_met
        && (r.parse_failed
            || r.error
                .as_ref()
                .map_or(true, |(status, _, _)| survivable(*status, plan)));
    match pipelined {
        None => Idle::Shown,
        Some(_) if goes_on => Idle::Shown,
        Some(queries) if r.results as usize + 1 >= queries => Idle::AfterAbort,
        Some(_) => Idle::Dropped,
    }
}

/// SQLSTATE `read_only_sql_transaction`: a standby refused to write.
const READ_ONLY: &[u8; 5] = b"25006";

/// Under `--reconnect`, a client that must leave its connection goes to
/// `State::Lost` instead of aborting (see [`super::reconnect`]): true
/// when it did.
pub fn lost(c: &mut Client, cause: Cause) -> bool {
    let Some(w) = c.watch.as_mut() else {
        return false;
    };
    w.cause = cause;
    c.state = State::Lost;
    true
}

/// Whether an error leaves the client running: it is retried, or passed
/// over under `--continue-on-error`.
fn survivable(status: ErrorStatus, plan: &Plan) -> bool {
    status.can_retry() || (plan.continue_on_error && status == ErrorStatus::OtherSql)
}

/// All results are in: decide what comes next.
///
/// A Parse sent with the command that fails: pgbench prepares with a
/// round trip of its own, logs the failure and executes anyway. Behind a
/// pooler in transaction pooling the name is taken on the server
/// connection (other clients prepared it there), and the execution runs
/// the statement found (the same text, prepared by another pgbench
/// client); otherwise the execution fails because the statement does not
/// exist. The server skipped the Bind and Execute sent after the failed
/// Parse, so they go again, on their own.
fn finish_results(c: &mut Client, plan: &Plan) {
    c.pipeline = None;
    if c.response.abort.is_some() && lost(c, Cause::Lost) {
        return;
    }
    if let Some(message) = c.response.abort.take() {
        log::error(format_args!("{message}"));
        c.state = State::Aborted;
        return;
    }
    if c.response.copy_met {
        copy_aborted(c);
        return;
    }
    if c.response.parse_failed {
        if let Some((_, _, message)) = c.response.error.take() {
            log::error(format_args!("{message}"));
        }
        if let CommandKind::Sql(command) = &plan.scripts[c.script].commands[c.command].kind {
            send(c, plan, command);
            return;
        }
    }
    if let Some((qry, name)) = c.response.store_failed.take() {
        store_failed(c, "aset", qry, &name);
        return;
    }
    if c.response.error.is_some() && c.response.sqlstate == *READ_ONLY && lost(c, Cause::ReadOnly) {
        return;
    }
    if let Some((status, qry, message)) = c.response.error.take() {
        c.status = status;
        c.sqlstate = c.response.sqlstate;
        if survivable(status, plan) {
            if plan.verbose_errors {
                log::info(format_args!(
                    "client {} got an error in command {} (SQL) of script {}; {message}",
                    c.id, c.command, c.script
                ));
            }
            c.state = State::Error;
        } else {
            log::error(format_args!(
                "client {} script {} aborted in command {} query {qry}: {message}",
                c.id, c.script, c.command
            ));
            c.state = State::Aborted;
        }
        return;
    }
    let command = &plan.scripts[c.script].commands[c.command];
    if let crate::script::CommandKind::Sql(sql) = &command.kind {
        if let ResultVars::Gset { .. } = sql.results {
            let last = c.response.results.saturating_sub(1);
            if c.response.last_rows != 1 {
                log::error(format_args!(
                    "client {} script {} command {} query {last}: expected one row, got {}",
                    c.id, c.script, c.command, c.response.last_rows
                ));
                c.state = State::Aborted;
                return;
            }
            if let Some(name) = c.response.bad_name.take() {
                store_failed(c, "gset", last, &name);
                return;
            }
            store_row(&c.response, &mut c.vars);
        }
    }
    c.state = State::EndCommand;
}

/// A `\gset`/`\aset` column whose variable name pgbench refuses: the
/// client aborts with pgbench's two messages.
fn store_failed(c: &mut Client, what: &str, qry: u32, name: &str) {
    log::error(format_args!("{what}: invalid variable name: \"{name}\""));
    log::error(format_args!(
        "client {} script {} command {} query {qry}: error storing into variable {name}",
        c.id, c.script, c.command
    ));
    c.state = State::Aborted;
}

/// pgbench's `CSTATE_ERROR`: roll back an open transaction block, then
/// retry or fail the transaction.
pub fn after_error(c: &mut Client, plan: &Plan, env: &mut ThreadEnv, now: &mut Now) {
    let status = c.conn.as_ref().map(|conn| conn.transaction_status());
    match status {
        Some(TxStatus::InTransaction | TxStatus::Failed) => {
            let Some(conn) = c.conn.as_mut() else {
                return;
            };
            let sent = conn.query("ROLLBACK").and_then(|()| conn.flush());
            if sent.is_err() && lost(c, Cause::Lost) {
                return;
            }
            if sent.is_err() {
                log::error(format_args!(
                    "client {} aborted: failed to send sql command for rolling back the failed transaction",
                    c.id
                ));
                c.state = State::Aborted;
                return;
            }
            c.response.reset(1);
            c.state = State::WaitRollback;
        }
        Some(TxStatus::Idle) => c.state = retry_or_fail(c, plan, env, now),
        None if lost(c, Cause::Lost) => {}
        None => {
            log::error(format_args!(
                "client {} aborted while receiving the transaction status",
                c.id
            ));
            c.state = State::Aborted;
        }
    }
}

/// Reads the answer to the ROLLBACK; true when the client moved on.
pub fn read_rollback(c: &mut Client, plan: &Plan, env: &mut ThreadEnv, now: &mut Now) -> bool {
    let status = c.status;
    match drain(c, plan) {
        Ok(false) => false,
        Ok(true) => {
            if let Some((_, _, message)) = c.response.error.take() {
                log::error(format_args!(
                    "client {} aborted while rolling back the transaction after an error; {message}",
                    c.id
                ));
                c.state = State::Aborted;
            } else {
                c.status = status;
                c.state = retry_or_fail(c, plan, env, now);
            }
            true
        }
        Err(_) if lost(c, Cause::Lost) => true,
        Err(_) => {
            log::error(format_args!(
                "client {} aborted while rolling back the transaction after an error; perhaps the backend died while processing",
                c.id
            ));
            c.state = State::Aborted;
            true
        }
    }
}

/// pgbench's `doRetry`, and the end of the run winning over both.
fn retry_or_fail(c: &Client, plan: &Plan, env: &ThreadEnv, now: &mut Now) -> State {
    if env.over {
        return State::Finished;
    }
    let can_retry = c.status.can_retry()
        && !(plan.max_tries != 0 && c.tries >= plan.max_tries)
        && !plan
            .latency_limit_us
            .is_some_and(|limit| now.get(env) - c.scheduled > limit);
    if can_retry {
        State::Retry
    } else {
        State::Failure
    }
}
