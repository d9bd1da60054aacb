//! An established session: a write buffer the caller encodes into, a read
//! buffer framed in place, and nothing else.
//!
//! The hot path of a benchmark transaction is: encode Bind/Execute/Sync (or a
//! Query) into [`Connection::write_buf`] with the helpers here or with
//! [`crate::frontend`]; [`Connection::flush`] (one `send`/`sendmsg` for all of
//! it); on readability [`Connection::fill`] (one `recv`), then
//! [`Connection::next_message`] until ReadyForQuery. No step allocates once
//! the buffers have grown to the workload's size.
//!
//! An external driver (pgbolt's io_uring loop) can take the socket I/O over
//! for a plain (non-TLS) session with [`Connection::set_external_io`]: then
//! `flush` and `fill` make no system call; the driver takes the encoded
//! output with [`Connection::take_output`] once `flush` has asked for it
//! ([`Connection::output_flushed`]), receives into
//! [`Connection::recv_target`] and reports each read with
//! [`Connection::received`]. Message framing is the same in both modes.

use std::os::fd::RawFd;

use bytes::{BufMut, BytesMut};
use postgres_protocol::message::frontend;

use crate::backend::{Message, TxStatus};
use crate::cancel::CancelToken;
use crate::error::Error;
use crate::frame::ReadBuf;
use crate::libpq_text::ClientEncoding;
use crate::transport::{Got, Stream};

/// What a [`Connection::fill`] brought.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// Data arrived and the socket had no more: frame it, and wait for the
    /// next readiness before filling again (an edge-triggered poller will
    /// signal when more arrives).
    Drained,
    /// Data arrived and more may be waiting: frame it, then fill again.
    More,
    /// Nothing to read: wait for readiness.
    WouldBlock,
}

/// An established session.
pub struct Connection {
    stream: Stream,
    wbuf: BytesMut,
    /// Where [`Connection::bind_execute`] assembles its messages.
    scratch: Vec<u8>,
    rbuf: ReadBuf,
    params: Vec<(String, String)>,
    cancel: CancelToken,
    tx: TxStatus,
    closed: bool,
    /// Socket I/O is done by an external driver.
    external: bool,
    /// What the external driver's last read or write ended with, when it
    /// ended the session (end of file or an error); `fill` reports it.
    external_end: Option<std::io::Error>,
    /// How much of the output the external driver may send: what there was
    /// when [`Connection::flush`] was last called. Output encoded after it
    /// (a pipeline's statements before its end) waits, as it does in the
    /// write buffer when this side writes the socket.
    flushed: usize,
    /// The socket holds the start of a message whose rest is still in the
    /// write buffer: nothing else may be written before that rest
    /// (Terminate would land inside the message, and could complete it).
    cut: bool,
    /// The entry of the configuration's host list this session reached.
    host_index: usize,
    /// The `client_encoding` the server last reported.
    client_encoding: ClientEncoding,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("fd", &self.stream.fd())
            .field("backend_pid", &self.cancel.process_id())
            .field("tls", &self.stream.tls().is_some())
            .finish()
    }
}

/// Records a ParameterStatus value, allocating only when it changes.
pub(crate) fn set_param(params: &mut Vec<(String, String)>, name: &str, value: &str) {
    match params.iter_mut().find(|(n, _)| n == name) {
        Some((_, v)) if v == value => {}
        Some((_, v)) => *v = value.to_owned(),
        None => params.push((name.to_owned(), value.to_owned())),
    }
}

/// Records a ParameterStatus. Rare (a `SET` of a reported setting), so
/// kept out of the path every message takes.
#[cold]
#[inline(never)]
fn parameter_status(
    params: &mut Vec<(String, String)>,
    encoding: &mut ClientEncoding,
    name: &str,
    value: &str,
) {
    if name == "client_encoding" {
        *encoding = ClientEncoding::from_name(value);
    }
    set_param(params, name, value)
}

fn encode_err(e: std::io::Error) -> Error {
    Error::state(&format!("cannot encode message: {e}"))
}

impl Connection {
    pub(crate) fn new(
        stream: Stream,
        wbuf: BytesMut,
        rbuf: ReadBuf,
        params: Vec<(String, String)>,
        cancel: CancelToken,
        host_index: usize,
    ) -> Connection {
        let client_encoding = params
            .iter()
            .find(|(name, _)| name == "client_encoding")
            .map_or(ClientEncoding::default(), |(_, value)| {
                ClientEncoding::from_name(value)
            });
        Connection {
            client_encoding,
            stream,
            wbuf,
            scratch: Vec::with_capacity(256),
            rbuf,
            params,
            cancel,
            tx: TxStatus::Idle,
            closed: false,
            external: false,
            external_end: None,
            flushed: 0,
            cut: false,
            host_index,
        }
    }

    /// Which entry of [`crate::conninfo::Config::hosts`] this session is
    /// connected to (libpq's `PQhost` and `PQport` name that entry).
    pub fn host_index(&self) -> usize {
        self.host_index
    }

    /// The socket to register with a poller. It never changes.
    pub fn fd(&self) -> RawFd {
        self.stream.fd()
    }

    /// Whether the session runs over TLS.
    pub fn is_tls(&self) -> bool {
        self.stream.tls().is_some()
    }

    /// The buffer frontend messages are encoded into; [`Connection::flush`]
    /// sends it.
    pub fn write_buf(&mut self) -> &mut BytesMut {
        &mut self.wbuf
    }

    /// Sends what is buffered, as far as the socket takes it. `Ok(true)`:
    /// all sent; `Ok(false)`: wait for writability and flush again.
    pub fn flush(&mut self) -> Result<bool, Error> {
        if self.external {
            self.flushed = self.wbuf.len();
            return Ok(self.wbuf.is_empty());
        }
        let before = self.wbuf.len();
        let written = self.stream.write(&mut self.wbuf).map_err(Error::io);
        // Output left after some was taken (by the socket, or by a TLS
        // layer, which takes at most its buffer's worth) starts inside a
        // message, or may: a write can stop at a message boundary too,
        // and then the cost is only a Terminate not sent.
        self.cut = !self.wbuf.is_empty() && (self.cut || self.wbuf.len() < before);
        written
    }

    /// Drops the output not sent yet: after the server has closed its end,
    /// nothing more can be delivered.
    pub fn discard_output(&mut self) {
        self.wbuf.clear();
        self.flushed = 0;
    }

    /// Whether the start of a message has gone out and its rest has not
    /// (also when the rest was dropped because the server closed its end).
    pub fn sent_in_part(&self) -> bool {
        self.cut
    }

    /// Bytes encoded but not yet handed to the socket.
    pub fn pending_output(&self) -> usize {
        self.wbuf.len()
    }

    /// Bytes encoded since the last [`Connection::flush`]. The same as
    /// [`Connection::pending_output`] when this side writes the socket; with
    /// an external driver, output flushed but not yet taken is not counted.
    pub fn unflushed_output(&self) -> usize {
        self.wbuf.len().saturating_sub(self.flushed)
    }

    /// One read from the socket into the read buffer.
    pub fn fill(&mut self) -> Result<Fill, Error> {
        if self.external {
            return match self.external_end.take() {
                None => Ok(Fill::WouldBlock),
                Some(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(Error::closed()),
                Some(e) => Err(Error::io(e)),
            };
        }
        match self.stream.read(self.rbuf.spare()).map_err(Error::io)? {
            Got::Data { n, drained } => {
                self.rbuf.filled(n);
                Ok(if drained { Fill::Drained } else { Fill::More })
            }
            Got::WouldBlock => Ok(Fill::WouldBlock),
            Got::Eof => Err(Error::closed()),
            Got::TlsEnd => Err(Error::tls_closed()),
        }
    }

    /// Hands the socket I/O of a plain session to an external driver (or
    /// takes it back). Refused (false) for TLS sessions, whose records only
    /// the TLS layer can read and write.
    pub fn set_external_io(&mut self, on: bool) -> bool {
        if on && self.is_tls() {
            return false;
        }
        self.external = on;
        true
    }

    /// Whether an external driver does the socket I/O.
    pub fn is_external_io(&self) -> bool {
        self.external
    }

    /// Whether the external driver should send the output now: there is
    /// some, and [`Connection::flush`] asked for it.
    pub fn output_flushed(&self) -> bool {
        self.flushed > 0
    }

    /// Moves the flushed output into `out` (which must be empty) for the
    /// external driver to send, leaving `out`'s old, empty buffer in its
    /// place: the two buffers take turns and nothing is allocated. Output
    /// encoded after the flush stays.
    pub fn take_output(&mut self, out: &mut BytesMut) {
        debug_assert!(out.is_empty());
        std::mem::swap(&mut self.wbuf, out);
        if self.flushed < out.len() {
            // Only a pipeline's flush leaves output behind it; rare enough
            // for the copy.
            let newer = out.split_off(self.flushed);
            self.wbuf.extend_from_slice(&newer);
        }
        self.flushed = 0;
    }

    /// Takes back the part of `out` (from [`Connection::take_output`]) that
    /// the driver could not send, ahead of any newer output, and asks for
    /// all of it to be sent: the rest of a flushed message cannot wait.
    /// `cut`: the driver has sent the start of the first message of what
    /// it hands back.
    pub fn untake_output(&mut self, out: &mut BytesMut, cut: bool) {
        self.cut = cut && !out.is_empty();
        if out.is_empty() {
            return;
        }
        let newer = self.wbuf.split();
        self.wbuf.extend_from_slice(out);
        self.wbuf.extend_from_slice(&newer);
        self.flushed += out.len();
        out.clear();
    }

    /// Where the external driver should receive into: free space after the
    /// unread input. It must not be touched by anything else until the
    /// driver reports the read with [`Connection::received`].
    pub fn recv_target(&mut self) -> &mut [u8] {
        self.rbuf.spare()
    }

    /// Reports an external read into [`Connection::recv_target`]: `Ok(0)` is
    /// the end of the stream, an error ends the session; both surface from
    /// the next [`Connection::fill`]. Also takes a failed external write.
    pub fn received(&mut self, result: std::io::Result<usize>) {
        match result {
            Ok(0) => {
                self.external_end = Some(std::io::ErrorKind::UnexpectedEof.into());
            }
            Ok(n) => self.rbuf.filled(n),
            Err(e) => self.external_end = Some(e),
        }
    }

    /// The next whole backend message in the read buffer, if any. Tracks
    /// ReadyForQuery's transaction status and ParameterStatus updates on the
    /// way (see [`Connection::parameter`]).
    #[inline]
    pub fn next_message(&mut self) -> Result<Option<Message<'_>>, Error> {
        let Some(frame) = self.rbuf.next_frame()? else {
            return Ok(None);
        };
        let msg = Message::parse(frame)?;
        match msg {
            Message::ReadyForQuery(tx) => self.tx = tx,
            Message::ParameterStatus { name, value } => {
                parameter_status(&mut self.params, &mut self.client_encoding, name, value)
            }
            _ => {}
        }
        Ok(Some(msg))
    }

    /// Whether unframed bytes are in the read buffer.
    pub fn has_buffered_input(&self) -> bool {
        !self.rbuf.is_empty()
    }

    /// The session's client encoding, as the server last reported it
    /// (libpq words error excerpts in it).
    pub fn client_encoding(&self) -> ClientEncoding {
        self.client_encoding
    }

    /// A server parameter as last reported (`server_version`,
    /// `in_hot_standby`, `integer_datetimes`, ...).
    pub fn parameter(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every server parameter as last reported.
    pub fn parameters(&self) -> impl Iterator<Item = (&str, &str)> {
        self.params.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// The server process id (BackendKeyData).
    pub fn backend_pid(&self) -> i32 {
        self.cancel.process_id()
    }

    /// The transaction status of the last ReadyForQuery.
    pub fn transaction_status(&self) -> TxStatus {
        self.tx
    }

    /// What another thread needs to cancel this session's query.
    pub fn cancel_token(&self) -> CancelToken {
        self.cancel.clone()
    }

    /// Encodes a simple Query. The text goes out byte for byte, so it
    /// need not be UTF-8 (the server checks it against the client
    /// encoding, as it does for libpq's queries).
    pub fn query(&mut self, sql: impl AsRef<[u8]>) -> Result<(), Error> {
        let sql = sql.as_ref();
        if sql.contains(&0) {
            return Err(Error::state(
                "cannot encode message: string contains embedded null",
            ));
        }
        let len = i32::try_from(sql.len() + 5)
            .map_err(|_| Error::state("cannot encode message: value too large to transmit"))?;
        self.wbuf.reserve(sql.len() + 6);
        self.wbuf.put_u8(b'Q');
        self.wbuf.put_i32(len);
        self.wbuf.extend_from_slice(sql);
        self.wbuf.put_u8(0);
        Ok(())
    }

    /// Encodes Parse; `param_types` may be empty to let the server infer.
    pub fn parse(&mut self, statement: &str, sql: &str, param_types: &[u32]) -> Result<(), Error> {
        frontend::parse(statement, sql, param_types.iter().copied(), &mut self.wbuf)
            .map_err(encode_err)
    }

    /// Encodes the run of one statement in the extended protocol: Bind of
    /// the unnamed portal to `statement` (`""`: the unnamed one) with
    /// `nparams` text parameters and text results, Describe of the portal
    /// when `describe`, Execute of all rows, and Sync when `sync`.
    ///
    /// `write_param(i, out)` appends the text of parameter `i` to `out` and
    /// returns true, or returns false for SQL NULL (anything it appended is
    /// then dropped). Up to 65,535 parameters, as the protocol allows. The
    /// values are written in place: this is every statement's hot path, so
    /// the messages are assembled in a reused buffer and copied into the
    /// output once.
    pub fn bind_execute<F>(
        &mut self,
        statement: &str,
        nparams: usize,
        mut write_param: F,
        describe: bool,
        sync: bool,
    ) -> Result<(), Error>
    where
        F: FnMut(usize, &mut Vec<u8>) -> bool,
    {
        let too_long = || Error::state("cannot encode message: value too large to transmit");
        if statement.as_bytes().contains(&0) {
            return Err(Error::state(
                "cannot encode message: string contains embedded null",
            ));
        }
        let count = u16::try_from(nparams).map_err(|_| too_long())?;
        let m = &mut self.scratch;
        m.clear();
        m.extend_from_slice(b"B\0\0\0\0\0");
        m.extend_from_slice(statement.as_bytes());
        m.extend_from_slice(&[0, 0, 0]);
        m.extend_from_slice(&count.to_be_bytes());
        for i in 0..nparams {
            let at = m.len();
            m.extend_from_slice(&[0; 4]);
            let len = if write_param(i, m) {
                i32::try_from(m.len() - at - 4).map_err(|_| too_long())?
            } else {
                m.truncate(at + 4);
                -1
            };
            m[at..at + 4].copy_from_slice(&len.to_be_bytes());
        }
        m.extend_from_slice(&[0, 0]);
        let len = i32::try_from(m.len() - 1).map_err(|_| too_long())?;
        m[1..5].copy_from_slice(&len.to_be_bytes());
        if describe {
            m.extend_from_slice(b"D\0\0\0\x06P\0");
        }
        m.extend_from_slice(b"E\0\0\0\x09\0\0\0\0\0");
        if sync {
            m.extend_from_slice(b"S\0\0\0\x04");
        }
        self.wbuf.extend_from_slice(m);
        Ok(())
    }

    /// Encodes Describe of a prepared statement.
    pub fn describe_statement(&mut self, statement: &str) -> Result<(), Error> {
        frontend::describe(b'S', statement, &mut self.wbuf).map_err(encode_err)
    }

    /// Encodes Close of a prepared statement.
    pub fn close_statement(&mut self, statement: &str) -> Result<(), Error> {
        frontend::close(b'S', statement, &mut self.wbuf).map_err(encode_err)
    }

    /// Encodes Close of a portal.
    pub fn close_portal(&mut self, portal: &str) -> Result<(), Error> {
        frontend::close(b'P', portal, &mut self.wbuf).map_err(encode_err)
    }

    /// Encodes Sync.
    pub fn sync(&mut self) {
        frontend::sync(&mut self.wbuf);
    }

    /// Encodes Flush (the protocol message: asks the server to send what it
    /// has without waiting for Sync).
    pub fn flush_message(&mut self) {
        frontend::flush(&mut self.wbuf);
    }

    /// Encodes CopyData carrying `data`.
    pub fn copy_data(&mut self, data: &[u8]) -> Result<(), Error> {
        let len = i32::try_from(data.len() + 4)
            .map_err(|_| Error::state("COPY data chunk larger than 2 GB"))?;
        self.wbuf.reserve(data.len() + 5);
        self.wbuf.put_u8(b'd');
        self.wbuf.put_i32(len);
        self.wbuf.put_slice(data);
        Ok(())
    }

    /// Encodes CopyDone.
    pub fn copy_done(&mut self) {
        frontend::copy_done(&mut self.wbuf);
    }

    /// Encodes CopyFail with an error message for the server.
    pub fn copy_fail(&mut self, message: &str) -> Result<(), Error> {
        frontend::copy_fail(message, &mut self.wbuf).map_err(encode_err)
    }

    /// Sends Terminate (best effort, without blocking) and closes the socket.
    pub fn close(mut self) {
        self.terminate();
    }

    /// Ends the session without sending Terminate, for an external driver
    /// whose send is still in flight: Terminate could land in the middle
    /// of the message that send carries. The server sees the socket close.
    pub fn abandon(mut self) {
        self.closed = true;
    }

    /// Sends Terminate (best effort, without blocking) and ends the
    /// session, keeping the socket open until the connection is dropped:
    /// the server can still deliver what it answers to messages sent
    /// before, instead of failing on a closed socket. After a message sent
    /// in part, nothing is sent: the server sees the stream end inside
    /// that message.
    pub fn terminate(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        if self.cut {
            return;
        }
        self.wbuf.clear();
        frontend::terminate(&mut self.wbuf);
        let _ = self.stream.write(&mut self.wbuf);
        self.stream.close_tls();
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.terminate();
    }
}
