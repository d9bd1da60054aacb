//! One connection of the initialization: pgwire's blocking client, with
//! server errors and notices worded as libpq words them for pgbench.

use std::time::{Duration, Instant};

use pgwire::blocking::{wait, Client};
use pgwire::conninfo::Config;
use pgwire::{Fill, Interest, Message};

use super::rows::CHUNK_BYTES;
use super::InitError;
use pgwire::libpq_text::{libpq_message, query_failure};

pub struct Session {
    client: Client,
    server_version: u32,
    _cancel: crate::sigstop::Cancellable,
}

/// libpq's wording of a failure of `sql`.
fn failure_text(error: &pgwire::Error, sql: &str) -> String {
    query_failure(error, Some(sql))
}

/// What libpq shows when `PQendcopy` fails: the server's error alone.
/// libpq reads only that error there, not on to the end of the connection,
/// so a backend that ended with a FATAL error gets no `server closed the
/// connection unexpectedly` lines, unlike a failed query.
fn copy_end_text(error: &pgwire::Error, sql: &str) -> String {
    match error.db_error() {
        Some(db) => libpq_message(db, Some(sql), true),
        None => failure_text(error, sql),
    }
}

/// `PQserverVersion`: `15.4` is 150004, `9.6.2` is 90602.
fn version_number(text: &str) -> u32 {
    let mut parts = text
        .split(|c: char| !c.is_ascii_digit())
        .take_while(|p| !p.is_empty())
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    if major >= 10 {
        major * 10000 + minor
    } else {
        major * 10000 + minor * 100 + parts.next().unwrap_or(0)
    }
}

impl Session {
    /// A further connection (a parallel job, the WAL flusher). What the
    /// server says as it starts is what it said to the first connection,
    /// which printed it: pgbench has that one connection only.
    pub fn connect(config: &Config) -> Result<Session, InitError> {
        let mut session = Client::connect(config)
            .map(Session::new)
            .map_err(InitError::Connect)?;
        session.client.take_notices();
        Ok(session)
    }

    /// The first connection: asks for a password as pgbench does when the
    /// server wants one that was not given, and keeps it in `config` for
    /// the connections that follow.
    pub fn connect_asking(config: &mut Config) -> Result<Session, InitError> {
        crate::prompt::connect_asking(config, Client::connect)
            .map(Session::new)
            .map_err(InitError::Connect)
    }

    fn new(client: Client) -> Session {
        let server_version = client.parameter("server_version").map_or(0, version_number);
        let cancel = crate::sigstop::cancel_on_stop(client.cancel_token());
        Session {
            client,
            server_version,
            _cancel: cancel,
        }
    }

    /// The server's version as `PQserverVersion` gives it.
    pub fn server_version_num(&self) -> u32 {
        self.server_version
    }

    /// Runs one statement that returns no rows.
    pub fn execute(&mut self, sql: &str) -> Result<(), InitError> {
        crate::sigstop::wait_if_stopping();
        match self.client.execute(sql) {
            Ok(_) => Ok(()),
            Err(e) => Err(InitError::Query {
                sql: sql.to_string(),
                message: failure_text(&e, sql),
            }),
        }
    }

    /// pgbench's look-up of a table's `relkind` (`r` for a plain table, `p`
    /// for a partitioned one), with the table name as a parameter.
    pub fn relkind(&mut self, table: &str) -> Result<String, InitError> {
        const SQL: &str =
            "SELECT relkind FROM pg_catalog.pg_class WHERE oid=$1::pg_catalog.regclass";
        crate::sigstop::wait_if_stopping();
        let rows = self
            .client
            .prepare("", SQL)
            .and_then(|()| self.client.query_prepared("", &[Some(table)]));
        match rows {
            Ok(rows) => Ok(rows
                .into_iter()
                .next()
                .and_then(|row| row.into_iter().next().flatten())
                .unwrap_or_default()),
            Err(e) => Err(InitError::Query {
                sql: SQL.to_string(),
                message: failure_text(&e, SQL),
            }),
        }
    }

    /// Runs `COPY ... FROM STDIN` (`sql`), sending what `fill` appends to a
    /// buffer, one buffer at a time, until `fill` says no rows remain.
    /// Sending only fails when the connection is gone ([`InitError::CopyData`]);
    /// a server error during the COPY is read at its end.
    pub fn copy_in(
        &mut self,
        sql: &str,
        mut fill: impl FnMut(&mut Vec<u8>) -> bool,
    ) -> Result<(), InitError> {
        crate::sigstop::wait_if_stopping();
        let mut copy = self.client.copy_in(sql).map_err(|e| InitError::CopyStart {
            message: failure_text(&e, sql),
        })?;
        let mut buf = Vec::with_capacity(CHUNK_BYTES + 64);
        loop {
            buf.clear();
            let more = fill(&mut buf);
            if copy.write(&buf).is_err() {
                return Err(InitError::CopyData);
            }
            if !more {
                break;
            }
        }
        match copy.finish() {
            Ok(_) => Ok(()),
            Err(e) => Err(InitError::CopyEnd {
                message: copy_end_text(&e, sql),
            }),
        }
    }

    /// Whether the session answers a Sync within `limit`: false when
    /// nothing came back in time. A pooler in session mode lets a client
    /// in without a server connection and holds its first message until
    /// one is free; if the pool is held by the other connections of this
    /// same initialization, that is never (until the pooler's
    /// `query_wait_timeout`, two minutes by default, ends it).
    pub fn answers_within(&mut self, limit: Duration) -> Result<bool, InitError> {
        let deadline = Instant::now() + limit;
        let conn = self.client.connection();
        conn.sync();
        while !conn.flush().map_err(InitError::Connect)? {
            if Instant::now() >= deadline {
                return Ok(false);
            }
            wait(conn.fd(), Interest::Write, Some(deadline)).map_err(InitError::Connect)?;
        }
        loop {
            while let Some(msg) = conn.next_message().map_err(InitError::Connect)? {
                if let Message::ReadyForQuery(_) = msg {
                    return Ok(true);
                }
            }
            if conn.fill().map_err(InitError::Connect)? == Fill::WouldBlock {
                if Instant::now() >= deadline {
                    return Ok(false);
                }
                wait(conn.fd(), Interest::Read, Some(deadline)).map_err(InitError::Connect)?;
            }
        }
    }

    /// Ends the session, waiting at most `limit` for the server to end its
    /// backend (see [`pgwire::blocking::Client::close_and_wait`]).
    pub fn close_and_wait(self, limit: std::time::Duration) {
        self.client
            .close_and_wait(std::time::Instant::now() + limit);
    }

    /// The notices received since the last call, each as libpq prints it.
    pub fn take_notices(&mut self) -> Vec<String> {
        self.client
            .take_notices()
            .iter()
            .map(|notice| libpq_message(notice, None, false))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::version_number;

    #[test]
    fn server_versions_as_libpq_numbers_them() {
        let cases = [
            ("15.18 (Debian 15.18-1.pgdg120+1)", 150018),
            ("18beta1", 180000),
            ("16.2", 160002),
            ("9.6.24", 90624),
        ];
        for (text, number) in cases {
            assert_eq!(version_number(text), number, "{text}");
        }
    }
}
