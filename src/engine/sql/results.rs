//! What each backend message of a command's results does to the client's
//! [`Response`]: rows kept for `\gset`/`\aset`, the first error in libpq's
//! wording, COPY refused, ReadyForQuery counted. The loop that reads the
//! messages, and what the client does once they are all in, stay in
//! `engine/sql.rs`; this is the per-message half, run once for every
//! message a command brings back. Values are kept in the client's reused
//! buffers; only a server's error or notice, or a column name `\gset`
//! cannot store into, is worded into a new string.

use pgwire::libpq_text::{libpq_message_in, ClientEncoding};
use pgwire::Message;

use crate::script::QueryMode;
use crate::script::{valid_variable_name, Command, CommandKind, ResultVars, SqlCommand};

use crate::engine::client::{ErrorStatus, Response};
use crate::engine::plan::Plan;
use crate::program::log;

/// What was sent for the command whose results are read, kept for the
/// `LINE n:` excerpt of a server error and only looked at then, and by
/// which client (for `--debug` lines).
pub(super) struct Sent<'a> {
    pub(super) client: u32,
    pub(super) mode: QueryMode,
    /// The SQL command read outside a pipeline.
    pub(super) command: Option<&'a SqlCommand>,
    /// The substituted text of a simple-mode query.
    pub(super) simple_text: &'a [u8],
    /// The session's client encoding, in which libpq measures the
    /// excerpt of a failed query.
    pub(super) encoding: ClientEncoding,
    /// Inside a pipeline: the script's commands and the indexes of those
    /// sent, in the order their results come back.
    pub(super) pipeline: Option<(&'a [Command], &'a [usize])>,
    /// Inside a pipeline: the commands prepared (Parse, then one Sync) as
    /// it started, before the results of `pipeline`.
    pub(super) prepared: &'a [usize],
}

impl<'a> Sent<'a> {
    /// The text libpq would remember for the query a message answers:
    /// what was sent in simple mode, the text with `$n` parameters
    /// otherwise. Inside a pipeline that is the statement being prepared
    /// while the Parses sent as it started are answered (pgbench prepares
    /// them with `PQprepare`, which keeps the text), then the statement
    /// that produced result number `r.results`; libpq keeps no text for a
    /// prepared statement executed in a pipeline (`PQsendQueryPrepared`),
    /// so there is none. A simple-mode text that is not UTF-8 (a value
    /// `\gset` read from a `LATIN1` database substituted into it) shows
    /// U+FFFD for its bad bytes.
    fn text(&self, r: &Response) -> Option<&'a [u8]> {
        let command = match self.pipeline {
            None => self.command?,
            Some((commands, sent)) => {
                let index = match self.prepared.get(r.syncs_seen as usize) {
                    Some(&index) => index,
                    _ if self.mode == QueryMode::Prepared => return None,
                    _ => *sent.get(r.results as usize)?,
                };
                match &commands.get(index)?.kind {
                    CommandKind::Sql(cmd) => cmd,
                    _ => return None,
                }
            }
        };
        match self.mode {
            QueryMode::Simple => Some(self.simple_text),
            _ => Some(command.extended_text.as_bytes()),
        }
    }

    /// Whether the messages read answer the statements prepared as the
    /// pipeline started (one Sync each) rather than the pipeline itself.
    fn preparing(&self, r: &Response) -> bool {
        self.pipeline.is_some() && (r.syncs_seen as usize) < self.prepared.len()
    }

    /// pgbench's query number in its abort message: results read so far
    /// for the command; inside a pipeline it restarts at each query, after
    /// the synchronisation points just before it.
    fn number(&self, r: &Response) -> u32 {
        if self.pipeline.is_some() {
            r.syncs_since_result
        } else {
            r.results
        }
    }
}

/// Handles one message; true once the last expected ReadyForQuery came.
pub(super) fn handle(
    msg: Message<'_>,
    r: &mut Response,
    vars: &mut crate::expr::vars::Variables,
    store: &ResultVars,
    query: &Sent<'_>,
    plan: &Plan,
) -> bool {
    let (prefix, aset) = match store {
        ResultVars::Discard => (None, false),
        ResultVars::Gset { prefix } => (Some(prefix.as_str()), false),
        ResultVars::Aset { prefix } => (Some(prefix.as_str()), true),
    };
    match msg {
        Message::RowDescription(desc) => {
            r.rows = 0;
            if let Some(prefix) = prefix {
                columns_to_store(r, &desc, prefix, plan);
            }
        }
        Message::DataRow(row) => {
            r.rows += 1;
            if prefix.is_some() && r.error.is_none() {
                keep_row(r, &row);
            }
        }
        Message::ParseComplete => r.parse_pending = false,
        Message::CommandComplete(_) | Message::EmptyQueryResponse => end_result(r, vars, aset),
        Message::ErrorResponse(fields)
            if query.preparing(r) && r.closed_before_send && r.error.is_none() =>
        {
            // The backend's last words on a connection that was already
            // closed: reported with the end of the connection.
            record_error(r, &fields, query);
        }
        Message::ErrorResponse(fields) if query.preparing(r) => {
            // pgbench prepares a pipeline's statements one by one as it
            // starts, logs a failure and goes on; the statement fails again
            // if it runs (its prepared statement does not exist).
            if let Ok(e) = pgwire::DbError::from_fields(fields) {
                log::error(format_args!(
                    "{}",
                    libpq_message_in(&e, query.text(r), true, query.encoding)
                ));
            }
        }
        Message::ErrorResponse(fields) if r.error.is_none() => {
            record_error(r, &fields, query);
            r.copy_error = r.copy_open;
        }
        Message::NoticeResponse(fields) => {
            if let Ok(notice) = pgwire::DbError::from_fields(fields) {
                crate::program::ewrite!(
                    "{}",
                    libpq_message_in(&notice, query.text(r), false, query.encoding)
                );
            }
        }
        Message::CopyInResponse { .. } | Message::CopyBothResponse { .. } => {
            r.copy_in = true;
            copy_not_supported(r);
        }
        // The server sends all of a COPY TO STDOUT without waiting for
        // anything: libpq's PQendcopy sends nothing for it either.
        Message::CopyOutResponse { .. } => copy_not_supported(r),
        Message::ReadyForQuery(_) => return ready_for_query(r, query, plan),
        _ => {}
    }
    false
}

/// `\gset`/`\aset`: keeps the values of a row (the last one is stored
/// once the result is complete), in the reused buffer of each column.
fn keep_row(r: &mut Response, row: &pgwire::backend::DataRow<'_>) {
    for (i, value) in row.columns().enumerate() {
        if let Some(buf) = r.values.get_mut(i) {
            buf.clear();
            if let Ok(Some(v)) = value {
                buf.extend_from_slice(v);
            }
        }
    }
}

/// The end of one result (CommandComplete or EmptyQueryResponse): counted
/// unless an error came first; `\aset` stores its last row now, each
/// result in turn.
fn end_result(r: &mut Response, vars: &mut crate::expr::vars::Variables, aset: bool) {
    if r.error.is_none() {
        if aset && r.rows > 0 && r.store_failed.is_none() {
            match r.bad_name.take() {
                Some(name) => r.store_failed = Some((r.results, name)),
                None => store_row(r, vars),
            }
        }
        r.last_rows = r.rows;
        r.results += 1;
    }
    r.copy_open = false;
    r.rows = 0;
    r.syncs_since_result = 0;
}

/// A ReadyForQuery: one synchronisation point less to wait for; true once
/// it was the last one expected.
fn ready_for_query(r: &mut Response, query: &Sent<'_>, plan: &Plan) -> bool {
    if !query.preparing(r) {
        let failed = r.error.is_some() || r.copy_met || r.store_failed.is_some();
        if plan.debug && query.pipeline.is_some() && !failed {
            log::debug(format_args!(
                "client {} pipeline ending, ongoing syncs: {}",
                query.client, r.syncs_left
            ));
            // pgbench goes back to waiting for the next results,
            // which it says.
            if r.syncs_left > 1 {
                log::debug(format_args!("client {} receiving", query.client));
            }
        }
        r.syncs_since_result += 1;
    }
    r.syncs_seen += 1;
    r.syncs_left = r.syncs_left.saturating_sub(1);
    r.syncs_left == 0
}

/// A COPY met in a script aborts the client; pgbench says so as the COPY
/// starts (once, for the first COPY of a compound query), before the
/// notices that ending it draws.
fn copy_not_supported(r: &mut Response) {
    r.copy_open = true;
    if !r.copy_met {
        r.copy_met = true;
        log::error(format_args!("COPY is not supported in pgbench, aborting"));
    }
}

/// `\gset`/`\aset`: the variable slot of each column of the result about
/// to come, and the first column name that is no valid variable name.
fn columns_to_store(
    r: &mut Response,
    desc: &pgwire::backend::RowDescription<'_>,
    prefix: &str,
    plan: &Plan,
) {
    r.columns.clear();
    r.bad_name = None;
    for name in desc.column_names() {
        r.name_buf.clear();
        r.name_buf.push_str(prefix);
        r.name_buf.push_str(&name);
        r.columns.push(plan.names.lookup(&r.name_buf));
        if r.bad_name.is_none() && !valid_variable_name(&r.name_buf) {
            r.bad_name = Some(r.name_buf.clone());
        }
    }
    if r.values.len() < r.columns.len() {
        r.values.resize_with(r.columns.len(), Vec::new);
    }
}

/// The command's first error: its status for the retry logic, the query
/// number and libpq's wording of it, and whether it is the command's own
/// Parse that failed.
fn record_error(r: &mut Response, fields: &pgwire::backend::Fields<'_>, query: &Sent<'_>) {
    r.parse_failed = r.parse_pending;
    let code = fields.get(b'C');
    let status = ErrorStatus::from_sqlstate(code);
    if let Some(code) = code.filter(|code| code.len() == 5) {
        r.sqlstate.copy_from_slice(code.as_bytes());
    }
    let text = pgwire::DbError::from_fields(*fields)
        .map(|e| {
            let mut text = libpq_message_in(&e, query.text(r), true, query.encoding);
            text.pop();
            text
        })
        .unwrap_or_default();
    r.error = Some((status, query.number(r), text));
}

/// Stores the last row of the current result into the variables.
pub(super) fn store_row(r: &Response, vars: &mut crate::expr::vars::Variables) {
    for (slot, value) in r.columns.iter().zip(&r.values) {
        if let Some(slot) = slot {
            vars.set_text(*slot, value);
        }
    }
}
