//! A small blocking client for set-up work (`pgbolt -i`, tools, tests).
//!
//! It is the same non-blocking [`Connecting`]/[`Connection`] machinery,
//! driven by `poll(2)` on the one socket: there is no second protocol
//! implementation. Errors from the server are collected until ReadyForQuery
//! so the session is left usable.

use std::time::{Duration, Instant};

use crate::backend::Message;
use crate::cancel::CancelToken;
use crate::connect::{ConnectProgress, Connector, Interest};
use crate::connection::{Connection, Fill};
use crate::conninfo::Config;
use crate::error::{DbError, Error, ErrorKind};

/// The first and the longest pause before a connection whose listener's
/// accept queue was full tries again; each busy answer doubles it.
const BUSY_PAUSE_MIN: Duration = Duration::from_millis(1);
const BUSY_PAUSE_MAX: Duration = Duration::from_millis(64);

/// A result row of text values; `None` is SQL NULL.
pub type Row = Vec<Option<String>>;

/// Waits until `fd` is ready for `interest`, or until `deadline`.
pub fn wait(
    fd: std::os::fd::RawFd,
    interest: Interest,
    deadline: Option<Instant>,
) -> Result<(), Error> {
    let events = match interest {
        Interest::Read => libc::POLLIN,
        Interest::Write => libc::POLLOUT,
    };
    loop {
        let timeout = match deadline {
            None => -1,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                i32::try_from(left.as_millis().saturating_add(1)).unwrap_or(i32::MAX)
            }
        };
        let mut pfd = libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        let n = unsafe { libc::poll(&mut pfd, 1, timeout) };
        if n >= 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(Error::io(e));
        }
    }
}

/// The error to report when reading failed with `error` after the server
/// had reported `failure`: the server's error, marked, when the server
/// then closed the connection (as after a FATAL error), so that its message
/// is not lost behind "server closed the connection".
fn closed_after(failure: Option<Error>, error: Error) -> Error {
    match failure {
        Some(failure) if error.kind() == ErrorKind::Closed => failure.then_closed(&error),
        _ => error,
    }
}

/// A blocking session.
#[derive(Debug)]
pub struct Client {
    conn: Connection,
    notices: Vec<DbError>,
}

impl Client {
    /// Connects with libpq's rules (host list, sslmode, target_session_attrs),
    /// dropping warnings; see [`Client::connect_with`] to see them.
    pub fn connect(config: &Config) -> Result<Client, Error> {
        Client::connect_with(&Connector::new(config)?, &mut Vec::new())
    }

    /// Connects with a prepared [`Connector`]. Warnings (an unsafe password
    /// file, in libpq's words) are appended to `warnings` whether or not the
    /// connection succeeds, for the caller to show as libpq would.
    pub fn connect_with(
        connector: &Connector,
        warnings: &mut Vec<String>,
    ) -> Result<Client, Error> {
        let mut connecting = connector.connect();
        let mut pause = BUSY_PAUSE_MIN;
        let result = loop {
            match connecting.poll() {
                Ok(ConnectProgress::Wait { fd, interest, .. }) => {
                    if let Err(e) = wait(fd, interest, connecting.deadline()) {
                        break Err(e);
                    }
                }
                Ok(ConnectProgress::Busy) => {
                    let left = connecting
                        .deadline()
                        .map(|d| d.saturating_duration_since(Instant::now()));
                    std::thread::sleep(left.map_or(pause, |l| l.min(pause)));
                    pause = (pause * 2).min(BUSY_PAUSE_MAX);
                }
                Ok(ConnectProgress::Ready(conn)) => {
                    break Ok(Client {
                        conn: *conn,
                        notices: connecting.take_notices(),
                    })
                }
                Err(e) => break Err(e),
            }
        };
        warnings.extend(connecting.take_warnings());
        result
    }

    /// Which entry of the configuration's host list this session reached.
    pub fn host_index(&self) -> usize {
        self.conn.host_index()
    }

    /// Notices the server sent since the last call.
    pub fn take_notices(&mut self) -> Vec<DbError> {
        std::mem::take(&mut self.notices)
    }

    pub fn connection(&mut self) -> &mut Connection {
        &mut self.conn
    }

    pub fn into_connection(self) -> Connection {
        self.conn
    }

    pub fn cancel_token(&self) -> CancelToken {
        self.conn.cancel_token()
    }

    /// A server parameter as last reported.
    pub fn parameter(&self, name: &str) -> Option<&str> {
        self.conn.parameter(name)
    }

    fn send(&mut self) -> Result<(), Error> {
        while !self.conn.flush()? {
            wait(self.conn.fd(), Interest::Write, None)?;
        }
        Ok(())
    }

    /// Reads messages until ReadyForQuery, handing each other message to
    /// `on`; the first ErrorResponse becomes the result.
    fn receive(
        &mut self,
        mut on: impl FnMut(Message<'_>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let mut failure = None;
        loop {
            while let Some(msg) = self.conn.next_message()? {
                match msg {
                    Message::ReadyForQuery(_) => return failure.map_or(Ok(()), Err),
                    Message::ErrorResponse(fields) => {
                        let e = Error::db(DbError::from_fields(fields)?);
                        failure.get_or_insert(e);
                    }
                    Message::NoticeResponse(fields) => {
                        self.notices.push(DbError::from_fields(fields)?)
                    }
                    Message::CopyInResponse { .. } | Message::CopyBothResponse { .. } => {
                        // Only copy_in feeds COPY FROM STDIN; refuse it here so
                        // the session does not hang waiting for data.
                        self.conn
                            .copy_fail("COPY FROM STDIN is not supported by this call")?;
                        self.send()?;
                    }
                    other if failure.is_none() => on(other)?,
                    _ => {}
                }
            }
            match self.conn.fill() {
                Ok(Fill::WouldBlock) => wait(self.conn.fd(), Interest::Read, None)?,
                Ok(_) => {}
                Err(e) => return Err(closed_after(failure, e)),
            }
        }
    }

    /// Runs `sql` (one or more statements) with the simple protocol and
    /// returns the rows of all of them.
    pub fn simple_query(&mut self, sql: &str) -> Result<Vec<Row>, Error> {
        self.conn.query(sql)?;
        self.send()?;
        let mut rows = Vec::new();
        self.receive(|msg| collect_row(msg, &mut rows))?;
        Ok(rows)
    }

    /// Runs one statement with the simple protocol and returns its column
    /// names with its rows (for results whose columns vary between server
    /// versions, such as a pooler's `SHOW` commands).
    pub fn simple_query_named(&mut self, sql: &str) -> Result<(Vec<String>, Vec<Row>), Error> {
        self.conn.query(sql)?;
        self.send()?;
        let mut names = Vec::new();
        let mut rows = Vec::new();
        self.receive(|msg| {
            if let Message::RowDescription(desc) = &msg {
                names = desc.column_names().map(|n| n.into_owned()).collect();
            }
            collect_row(msg, &mut rows)
        })?;
        Ok((names, rows))
    }

    /// Runs `sql` and returns the row count of its last command (`INSERT 0
    /// 5` gives 5; commands without a count give 0).
    pub fn execute(&mut self, sql: &str) -> Result<u64, Error> {
        self.conn.query(sql)?;
        self.send()?;
        let mut count = 0;
        self.receive(|msg| {
            if let Message::CommandComplete(tag) = msg {
                count = tag_count(tag);
            }
            Ok(())
        })?;
        Ok(count)
    }

    /// Prepares a named statement (Parse, Sync).
    pub fn prepare(&mut self, name: &str, sql: &str) -> Result<(), Error> {
        self.conn.parse(name, sql, &[])?;
        self.conn.sync();
        self.send()?;
        self.receive(|_| Ok(()))
    }

    /// Runs a prepared statement with text parameters (Bind, Execute, Sync)
    /// and returns its rows.
    pub fn query_prepared(
        &mut self,
        name: &str,
        params: &[Option<&str>],
    ) -> Result<Vec<Row>, Error> {
        let write_param = |i: usize, out: &mut Vec<u8>| match params[i] {
            Some(p) => {
                out.extend_from_slice(p.as_bytes());
                true
            }
            None => false,
        };
        self.conn
            .bind_execute(name, params.len(), write_param, false, true)?;
        self.send()?;
        let mut rows = Vec::new();
        self.receive(|msg| collect_row(msg, &mut rows))?;
        Ok(rows)
    }

    /// Starts `COPY ... FROM STDIN`; stream data with [`CopyIn::write`].
    pub fn copy_in(&mut self, sql: &str) -> Result<CopyIn<'_>, Error> {
        self.conn.query(sql)?;
        self.send()?;
        loop {
            while let Some(msg) = self.conn.next_message()? {
                match msg {
                    Message::CopyInResponse { .. } => return Ok(CopyIn { client: self }),
                    Message::NoticeResponse(fields) => {
                        self.notices.push(DbError::from_fields(fields)?)
                    }
                    Message::ErrorResponse(fields) => {
                        let e = Error::db(DbError::from_fields(fields)?);
                        return Err(match self.receive(|_| Ok(())) {
                            Ok(()) => e,
                            Err(after) => closed_after(Some(e), after),
                        });
                    }
                    Message::ReadyForQuery(_) => {
                        return Err(Error::state("the statement did not start COPY FROM STDIN"))
                    }
                    _ => {}
                }
            }
            if self.conn.fill()? == Fill::WouldBlock {
                wait(self.conn.fd(), Interest::Read, None)?;
            }
        }
    }

    /// Sends Terminate and closes the connection.
    pub fn close(self) {
        self.conn.close();
    }

    /// Sends Terminate, then waits until the server has closed the
    /// connection or `deadline` has passed. A backend closes its socket
    /// only once it has left the server's process array, so after a
    /// timely return its connection no longer counts against
    /// `max_connections` or a role's `CONNECTION LIMIT`.
    pub fn close_and_wait(self, deadline: Instant) {
        // SAFETY: duplicates a descriptor this client owns; the copy keeps
        // the socket open after `close` so the server's end can be seen.
        let fd = unsafe { libc::dup(self.conn.fd()) };
        self.conn.close();
        if fd < 0 {
            return;
        }
        let mut scratch = [0u8; 256];
        while Instant::now() < deadline && wait(fd, Interest::Read, Some(deadline)).is_ok() {
            // SAFETY: reads into a local buffer from the descriptor above.
            let n = unsafe { libc::read(fd, scratch.as_mut_ptr().cast(), scratch.len()) };
            if n == 0 {
                break;
            }
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                ) {
                    break;
                }
            }
        }
        // SAFETY: closes the duplicate made above, used by nobody else.
        unsafe { libc::close(fd) };
    }
}

/// Data for `COPY FROM STDIN` in progress (text or binary alike).
pub struct CopyIn<'a> {
    client: &'a mut Client,
}

/// How much COPY data is buffered before it is sent.
const COPY_CHUNK: usize = 64 * 1024;

impl CopyIn<'_> {
    /// Queues `data` (any slicing of the stream); sends when enough is
    /// buffered.
    pub fn write(&mut self, data: &[u8]) -> Result<(), Error> {
        self.client.conn.copy_data(data)?;
        if self.client.conn.pending_output() >= COPY_CHUNK {
            self.client.send()?;
        }
        Ok(())
    }

    /// Ends the data; returns the number of rows copied.
    pub fn finish(self) -> Result<u64, Error> {
        self.client.conn.copy_done();
        self.client.send()?;
        let mut count = 0;
        self.client.receive(|msg| {
            if let Message::CommandComplete(tag) = msg {
                count = tag_count(tag);
            }
            Ok(())
        })?;
        Ok(count)
    }

    /// Aborts the COPY with `message`; the server reports it as an error,
    /// which is returned.
    pub fn fail(self, message: &str) -> Result<(), Error> {
        self.client.conn.copy_fail(message)?;
        self.client.send()?;
        self.client.receive(|_| Ok(()))
    }
}

fn collect_row(msg: Message<'_>, rows: &mut Vec<Row>) -> Result<(), Error> {
    if let Message::DataRow(row) = msg {
        let mut out = Vec::with_capacity(row.len());
        for col in row.columns() {
            out.push(col?.map(|v| String::from_utf8_lossy(v).into_owned()));
        }
        rows.push(out);
    }
    Ok(())
}

/// The row count at the end of a command tag (`INSERT 0 5`, `UPDATE 3`).
fn tag_count(tag: &[u8]) -> u64 {
    let last = tag.rsplit(|&b| b == b' ').next().unwrap_or_default();
    std::str::from_utf8(last)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}
