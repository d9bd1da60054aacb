//! One attempt at one address: socket connect, SSL negotiation, TLS
//! handshake, startup and authentication, then the `target_session_attrs`
//! check.
//!
//! Phases, in order (each may be skipped):
//! - `Queued`: a Unix-domain listener's accept queue was full (`connect`
//!   failed with `EAGAIN`, which on such a socket means "try again", not an
//!   error). The socket is still unconnected and there is nothing to wait
//!   for on it (an unconnected socket reports itself writable and hung
//!   up), so the caller is told the listener is busy and chooses when to
//!   try `connect` again on the same socket; `connect_timeout` runs from
//!   the first try.
//! - `Connecting`: the non-blocking `connect` is in flight; writable means
//!   done, `SO_ERROR` says how it went.
//! - `SslReply`: SSLRequest sent; exactly one byte is read back (`S` or `N`),
//!   never more, so that no plaintext can be slipped in before TLS starts.
//! - `Handshake`: rustls handshake (directly after connecting with
//!   `sslnegotiation=direct`).
//! - `Startup`: the startup message is sent; authentication requests are
//!   answered; ParameterStatus and BackendKeyData are collected until
//!   ReadyForQuery.
//! - `SessionCheck`: only when `target_session_attrs` needs a query because
//!   the server (before PostgreSQL 14) does not report `in_hot_standby` and
//!   `default_transaction_read_only`.

use std::time::Instant;

use bytes::BytesMut;
use postgres_protocol::message::frontend;
use rustls::ClientConnection;
use socket2::{Socket, TcpKeepalive, Type};

use super::{attempt_timeout, Candidate, Interest, Shared};
use crate::auth::{AuthContext, Exchange};
use crate::backend::{AuthRequest, Message};
use crate::cancel::CancelToken;
use crate::connection::{set_param, Connection};
use crate::conninfo::{Config, HostKind, SslMode, SslNegotiation, TargetSessionAttrs, TcpOptions};
use crate::error::{strerror, DbError, Error, ErrorKind};
use crate::frame::ReadBuf;
use crate::transport::{Got, HandshakeError, Stream};

/// Where the list of hosts goes after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum After {
    NextAddress,
    NextHost,
    Stop,
}

/// The server is starting up, shutting down or recovering (57P03): libpq
/// tries the next host, with no other encryption on this one.
pub(crate) fn is_not_ready(error: &Error) -> bool {
    error.sqlstate() == Some("57P03")
}

pub(crate) enum Step {
    Wait(Interest),
    /// The listener's queue is full: try again later (see `Phase::Queued`).
    Busy,
    Ready,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Queued,
    Connecting,
    SslReply,
    Handshake,
    Startup,
    SessionCheck(Question),
}

/// What a session check asks the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Question {
    /// `SHOW transaction_read_only`
    ReadOnly,
    /// `SELECT pg_is_in_recovery()`
    Standby,
}

pub(crate) struct Try {
    candidate: Candidate,
    stream: Stream,
    phase: Phase,
    /// This attempt uses (or is negotiating) TLS.
    tls: bool,
    /// This attempt is already the `sslmode` fallback.
    retried: bool,
    /// The startup message names the application (libpq drops it and
    /// tries again when a server refuses it; see [`Try::retry_without_appname`]).
    send_appname: bool,
    /// The server accepted the authentication (AuthenticationOk).
    authenticated: bool,
    /// The server asked for a password and the one sent came from the
    /// password file.
    file_password_sent: bool,
    wbuf: BytesMut,
    rbuf: ReadBuf,
    auth: Exchange,
    password: Option<crate::conninfo::Secret>,
    params: Vec<(String, String)>,
    /// Notices the server sent while the session started (a truncated
    /// `application_name`), for the caller to show as libpq's notice
    /// processor shows them.
    pub(crate) notices: Vec<DbError>,
    key: (i32, i32),
    deadline: Option<Instant>,
    answer: Option<bool>,
    timeout: Option<std::time::Duration>,
}

const TCP_HINT: &str = "Is the server running on that host and accepting TCP/IP connections?";
const UNIX_HINT: &str = "Is the server running locally and accepting connections on that socket?";

impl Try {
    /// Opens a socket to `candidate` and starts connecting.
    pub(crate) fn start(
        shared: &Shared,
        candidate: Candidate,
        tls: bool,
        warnings: &mut Vec<String>,
    ) -> Result<Try, Box<(Candidate, Error)>> {
        let config = &shared.config;
        let mut found = Vec::new();
        let password = config.password_for(&config.hosts[candidate.host_index], &mut found);
        for w in found {
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
        let (sock, phase) = match open(config, &candidate) {
            Ok(opened) => opened,
            Err(e) => return Err(Box::new((candidate, e))),
        };
        let timeout = attempt_timeout(config);
        Ok(Try {
            candidate,
            stream: Stream::new(sock),
            phase,
            tls,
            retried: false,
            send_appname: true,
            authenticated: false,
            file_password_sent: false,
            wbuf: BytesMut::with_capacity(1024),
            rbuf: ReadBuf::new(),
            auth: Exchange::default(),
            password,
            params: Vec::new(),
            notices: Vec::new(),
            key: (0, 0),
            deadline: timeout.map(|t| Instant::now() + t),
            answer: None,
            timeout,
        })
    }

    /// Starts the socket connection again on a new socket when the
    /// current one has not connected yet (its handshake was dropped by a
    /// listener whose queue was full): true when it did. The deadline is
    /// kept. A new socket that cannot be opened leaves the old one.
    pub(crate) fn redial(&mut self, config: &Config) -> bool {
        if self.phase != Phase::Connecting || !matches!(self.connected(), Ok(false)) {
            return false;
        }
        let Ok((sock, phase)) = open(config, &self.candidate) else {
            return false;
        };
        self.stream = Stream::new(sock);
        self.phase = phase;
        true
    }

    pub(crate) fn fd(&self) -> std::os::fd::RawFd {
        self.stream.fd()
    }

    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    pub(crate) fn target(&self) -> &str {
        &self.candidate.target
    }

    pub(crate) fn into_candidate(self) -> Candidate {
        self.candidate
    }

    /// Whether `sslmode` wants this failed attempt repeated at the same
    /// address, and if so whether with TLS. Only failures before the
    /// server accepted the authentication count, as in libpq: an error
    /// after it (an unknown database or role, a bad setting) is the
    /// server's answer whatever the encryption, so it is reported once.
    pub(crate) fn fallback(&self, config: &Config, error: &Error) -> Option<bool> {
        if self.retried || self.authenticated || self.candidate.tls_name.is_none() {
            return None;
        }
        // As libpq: a failed handshake, or the server's error in reply to
        // the startup message. A TLS session that breaks after the
        // handshake (the server refusing our certificate under TLS 1.3) is
        // not retried: libpq reads it as a broken connection.
        let refused = match self.phase {
            Phase::Handshake => matches!(
                error.kind(),
                ErrorKind::Tls | ErrorKind::Closed | ErrorKind::Io
            ),
            Phase::Startup => error.kind() == ErrorKind::Db,
            _ => false,
        };
        match config.sslmode {
            SslMode::Prefer if self.tls && refused => Some(false),
            SslMode::Allow if !self.tls && self.phase == Phase::Startup => {
                (error.kind() == ErrorKind::Db).then_some(true)
            }
            _ => None,
        }
    }

    pub(crate) fn mark_retry(&mut self) {
        self.retried = true;
    }

    /// libpq's answer to a server that refuses the application name (as
    /// servers before 9.0 did): an error with SQLSTATE 42704 once the
    /// authentication has succeeded makes it connect to the same address
    /// again without `application_name`. Today the same code means an
    /// unknown setting in `options`, so the second attempt fails the same
    /// way and both failures are reported, as libpq reports them.
    pub(crate) fn retry_without_appname(&self, config: &Config, error: &Error) -> bool {
        self.send_appname
            && self.authenticated
            && config.effective_application_name().is_some()
            && error.kind() == ErrorKind::Db
            && error.sqlstate() == Some("42704")
    }

    /// Makes this attempt the repetition of a failed one without the
    /// application name, keeping its place in the `sslmode` fallback.
    pub(crate) fn repeat_without_appname(&mut self, retried: bool) {
        self.send_appname = false;
        self.retried = retried;
    }

    pub(crate) fn retried(&self) -> bool {
        self.retried
    }

    pub(crate) fn uses_tls(&self) -> bool {
        self.tls
    }

    /// Where libpq goes after this failure: to the next address when the
    /// server could not be reached or `connect_timeout` expired; to the
    /// next host, skipping this one's other addresses, when the server is
    /// not ready yet (57P03) or is not the kind `target_session_attrs` asks
    /// for. Once a server was reached, any other failure (a TLS handshake,
    /// authentication, a `requirepeer` mismatch) ends the whole list, as
    /// the libpq documentation states.
    pub(crate) fn after(&self, error: &Error) -> After {
        if is_not_ready(error)
            || matches!(self.phase, Phase::SessionCheck(_))
            || error.kind() == ErrorKind::SessionAttrs
        {
            After::NextHost
        } else if (matches!(self.phase, Phase::Queued | Phase::Connecting)
            && error.kind() != ErrorKind::Config)
            || error.kind() == ErrorKind::Timeout
        {
            After::NextAddress
        } else {
            After::Stop
        }
    }

    /// Advances until the attempt must wait, succeeds or fails.
    pub(crate) fn step(&mut self, shared: &Shared, any_server: bool) -> Result<Step, Error> {
        let config = &shared.config;
        loop {
            if self.phase == Phase::Queued {
                match connect(self.stream.socket(), &self.candidate)? {
                    Phase::Queued => return Ok(Step::Busy),
                    phase => self.phase = phase,
                }
            }
            if self.phase == Phase::Connecting {
                if !self.connected()? {
                    return Ok(Step::Wait(Interest::Write));
                }
                self.begin(shared)?;
            }
            if !self.stream.write(&mut self.wbuf).map_err(Error::io)? {
                return Ok(Step::Wait(Interest::Write));
            }
            match self.phase {
                Phase::Queued | Phase::Connecting => {}
                Phase::SslReply => match self.stream.read_byte().map_err(Error::io)? {
                    None => return Ok(Step::Wait(Interest::Read)),
                    Some(b'S') => self.start_tls(shared)?,
                    Some(b'N') => {
                        if matches!(
                            config.sslmode,
                            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull
                        ) {
                            return Err(Error::ssl_not_supported());
                        }
                        self.tls = false;
                        self.queue_startup(config)?;
                    }
                    Some(b'E') => {
                        // An old server's error in reply to SSLRequest: read
                        // it as a startup error.
                        self.rbuf.spare()[0] = b'E';
                        self.rbuf.filled(1);
                        self.phase = Phase::Startup;
                    }
                    Some(other) => {
                        return Err(Error::protocol(format!(
                            "received invalid response to SSL negotiation: {}",
                            other.escape_ascii()
                        )))
                    }
                },
                Phase::Handshake => match self.stream.handshake() {
                    Ok(Some(true)) => return Ok(Step::Wait(Interest::Write)),
                    Ok(Some(false)) => return Ok(Step::Wait(Interest::Read)),
                    Ok(None) => {
                        self.check_peer_name(config)?;
                        self.queue_startup(config)?
                    }
                    // The server hung up in the middle of the handshake
                    // (a server before 17 reading a direct TLS hello as a
                    // startup packet): libpq's OpenSSL words.
                    Err(HandshakeError::Io(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                        return Err(Error::tls_msg("SSL error: unexpected eof while reading"))
                    }
                    Err(HandshakeError::Io(e)) => return Err(Error::io(e)),
                    Err(HandshakeError::Tls(rustls::Error::General(msg))) => {
                        return Err(Error::tls_msg(msg))
                    }
                    Err(HandshakeError::Tls(e)) => {
                        return Err(Error::tls_msg(crate::tls::handshake_message(&e, config)))
                    }
                },
                Phase::Startup | Phase::SessionCheck(_) => {
                    if let Some(step) = self.process(config, any_server)? {
                        return Ok(step);
                    }
                    if !self.wbuf.is_empty() {
                        continue;
                    }
                    match self.stream.read(self.rbuf.spare()).map_err(Error::io)? {
                        Got::Data { n, .. } => self.rbuf.filled(n),
                        Got::WouldBlock => return Ok(Step::Wait(Interest::Read)),
                        Got::Eof => return Err(Error::closed()),
                        Got::TlsEnd => return Err(Error::tls_closed()),
                    }
                }
            }
        }
    }

    fn connected(&self) -> Result<bool, Error> {
        let sock = self.stream.socket();
        if let Some(e) = sock.take_error().map_err(Error::io)? {
            return Err(connect_error(e, &self.candidate));
        }
        match sock.peer_addr() {
            Ok(_) => Ok(true),
            Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => Ok(false),
            Err(e) => Err(connect_error(e, &self.candidate)),
        }
    }

    /// The socket is connected: ask for TLS or send the startup message.
    fn begin(&mut self, shared: &Shared) -> Result<(), Error> {
        if let Some(required) = shared.config.requirepeer.as_deref() {
            if !required.is_empty() && self.candidate.addr.is_unix() {
                check_peer(self.stream.socket(), required)?;
            }
        }
        if !self.tls {
            return self.queue_startup(&shared.config);
        }
        if shared.config.sslnegotiation == SslNegotiation::Direct {
            return self.start_tls(shared);
        }
        frontend::ssl_request(&mut self.wbuf);
        self.phase = Phase::SslReply;
        Ok(())
    }

    /// `verify-full`: the server certificate must name the `host` given
    /// for this attempt (checked once the handshake is done, as in libpq).
    fn check_peer_name(&self, config: &Config) -> Result<(), Error> {
        if config.sslmode != SslMode::VerifyFull {
            return Ok(());
        }
        let host = match &config.hosts[self.candidate.host_index].kind {
            HostKind::Tcp { name, .. } => name.as_deref(),
            HostKind::Unix(_) => None,
        };
        let cert = server_certificate(&self.stream)
            .ok_or_else(|| Error::tls_msg("server did not send a certificate"))?;
        crate::tls::check_peer_name(cert, host)
    }

    fn start_tls(&mut self, shared: &Shared) -> Result<(), Error> {
        let tls_config = match &shared.tls {
            Ok(Some(c)) => c.clone(),
            Ok(None) => return Err(Error::state("TLS requested with sslmode=disable")),
            Err((ErrorKind::Tls, msg)) => {
                self.phase = Phase::Handshake;
                return Err(Error::tls_msg(msg.clone()));
            }
            Err((_, msg)) => return Err(Error::config(msg.clone())),
        };
        let name = self.candidate.tls_name.as_deref().unwrap_or("localhost");
        let server_name = crate::tls::server_name(name)?;
        let conn = ClientConnection::new(tls_config, server_name).map_err(Error::tls)?;
        self.stream.start_tls(conn);
        self.phase = Phase::Handshake;
        Ok(())
    }

    /// The startup message, with its parameters in libpq's order (the
    /// server applies settings in that order, so it decides which of two
    /// bad ones is reported).
    fn queue_startup(&mut self, config: &Config) -> Result<(), Error> {
        let mut params: Vec<(&str, &str)> = vec![("user", &config.user)];
        if !config.dbname.is_empty() {
            params.push(("database", &config.dbname));
        }
        if let Some(options) = config.options.as_deref() {
            params.push(("options", options));
        }
        if let Some(app) = config
            .effective_application_name()
            .filter(|app| self.send_appname && !app.is_empty())
        {
            params.push(("application_name", app));
        }
        if let Some(encoding) = config.client_encoding.as_deref() {
            params.push(("client_encoding", encoding));
        }
        for (name, value) in &config.environment_parameters {
            params.push((name, value));
        }
        frontend::startup_message(params, &mut self.wbuf)
            .map_err(|e| Error::config(format!("invalid startup parameter: {e}")))?;
        self.phase = Phase::Startup;
        Ok(())
    }

    /// Handles the buffered messages; stops early when a reply must be sent.
    fn process(&mut self, config: &Config, any_server: bool) -> Result<Option<Step>, Error> {
        while let Some(frame) = self.rbuf.next_frame()? {
            match (self.phase, Message::parse(frame)?) {
                (_, Message::ErrorResponse(fields)) => {
                    let e = DbError::from_fields(fields)?;
                    return Err(server_error(config, self.file_password_sent, e));
                }
                (_, Message::NoticeResponse(fields)) => {
                    if let Ok(notice) = DbError::from_fields(fields) {
                        self.notices.push(notice);
                    }
                }
                (_, Message::ParameterStatus { name, value }) => {
                    set_param(&mut self.params, name, value)
                }
                (Phase::Startup, Message::Authentication(req)) => {
                    match req {
                        AuthRequest::Ok => self.authenticated = true,
                        AuthRequest::Cleartext | AuthRequest::Md5 { .. } | AuthRequest::Sasl(_) => {
                            self.file_password_sent =
                                config.password.is_none() && self.password.is_some();
                        }
                        _ => {}
                    }
                    let server_cert = server_certificate(&self.stream);
                    let ctx = AuthContext {
                        user: &config.user,
                        password: self.password.as_ref(),
                        server_cert,
                        channel_binding: config.channel_binding,
                        require_auth: config.require_auth.as_deref(),
                        requirement: config
                            .auth_requirement()
                            .map_err(|e| Error::config(e.to_string()))?,
                    };
                    self.auth.step(req, &ctx, &mut self.wbuf)?;
                    if !self.wbuf.is_empty() {
                        return Ok(None);
                    }
                }
                (
                    Phase::Startup,
                    Message::BackendKeyData {
                        process_id,
                        secret_key,
                    },
                ) => self.key = (process_id, secret_key),
                (Phase::Startup, Message::ReadyForQuery(_)) => {
                    return self.session_check(config, any_server)
                }
                (Phase::SessionCheck(_), Message::RowDescription(_))
                | (Phase::SessionCheck(_), Message::CommandComplete(_)) => {}
                (Phase::SessionCheck(q), Message::DataRow(row)) => {
                    let value = row.columns().next().transpose()?.flatten();
                    let yes: &[u8] = match q {
                        Question::ReadOnly => b"on",
                        Question::Standby => b"t",
                    };
                    self.answer = Some(value == Some(yes));
                }
                (Phase::SessionCheck(_), Message::ReadyForQuery(_)) => {
                    let answer = self.answer.ok_or_else(|| {
                        Error::protocol("no answer to the target_session_attrs query")
                    })?;
                    return self.judge(config, any_server, answer).map(Some);
                }
                (_, other) => {
                    return Err(Error::protocol(format!(
                        "unexpected message from server during startup: {other:?}"
                    )))
                }
            }
        }
        Ok(None)
    }

    fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// After the first ReadyForQuery: accept the server, or find out
    /// whether it has the `target_session_attrs` wanted.
    fn session_check(&mut self, config: &Config, any_server: bool) -> Result<Option<Step>, Error> {
        let attrs = effective_attrs(config, any_server);
        let is_on = |v: Option<&str>| v.map(|v| v == "on");
        let (known, question, sql) = match attrs {
            TargetSessionAttrs::Any => return Ok(Some(Step::Ready)),
            TargetSessionAttrs::ReadWrite | TargetSessionAttrs::ReadOnly => {
                let known = match (
                    is_on(self.param("default_transaction_read_only")),
                    is_on(self.param("in_hot_standby")),
                ) {
                    (Some(a), Some(b)) => Some(a || b),
                    _ => None,
                };
                (known, Question::ReadOnly, "SHOW transaction_read_only")
            }
            _ => (
                is_on(self.param("in_hot_standby")),
                Question::Standby,
                "SELECT pg_catalog.pg_is_in_recovery()",
            ),
        };
        if let Some(answer) = known {
            return self.judge(config, any_server, answer).map(Some);
        }
        frontend::query(sql, &mut self.wbuf)
            .map_err(|e| Error::protocol(format!("could not encode query: {e}")))?;
        self.phase = Phase::SessionCheck(question);
        Ok(None)
    }

    /// `answer` is "read-only" or "in hot standby", whichever was asked.
    fn judge(&mut self, config: &Config, any_server: bool, answer: bool) -> Result<Step, Error> {
        let (ok, why) = match effective_attrs(config, any_server) {
            TargetSessionAttrs::Any => (true, ""),
            TargetSessionAttrs::ReadWrite => (!answer, "session is read-only"),
            TargetSessionAttrs::ReadOnly => (answer, "session is not read-only"),
            TargetSessionAttrs::Primary => (!answer, "server is in hot standby mode"),
            TargetSessionAttrs::Standby | TargetSessionAttrs::PreferStandby => {
                (answer, "server is not in hot standby mode")
            }
        };
        if ok {
            return Ok(Step::Ready);
        }
        frontend::terminate(&mut self.wbuf);
        let _ = self.stream.write(&mut self.wbuf);
        Err(Error::session_attrs(why))
    }

    pub(crate) fn into_connection(self) -> Connection {
        let cancel = CancelToken::new(
            self.candidate.addr.clone(),
            self.key.0,
            self.key.1,
            self.timeout,
        );
        Connection::new(
            self.stream,
            self.wbuf,
            self.rbuf,
            self.params,
            cancel,
            self.candidate.host_index,
        )
    }
}

fn effective_attrs(config: &Config, any_server: bool) -> TargetSessionAttrs {
    if any_server {
        TargetSessionAttrs::Any
    } else {
        config.target_session_attrs
    }
}

fn connect_error(e: std::io::Error, candidate: &Candidate) -> Error {
    let hint = if candidate.tls_name.is_some() {
        TCP_HINT
    } else {
        UNIX_HINT
    };
    Error::io(e).with_hint(hint)
}

/// A non-blocking socket with `connect` under way (or queued, see
/// [`connect`]). The TCP options are
/// read and applied in libpq's order; a value that is not an integer, or a
/// socket option the system refuses (`keepalives_idle=0` is EINVAL on
/// Linux, `setsockopt(TCP_KEEPIDLE) failed: ...`), fails the attempt.
fn open(config: &Config, candidate: &Candidate) -> Result<(Socket, Phase), Error> {
    let failed = |e| connect_error(e, candidate);
    let sock = Socket::new(candidate.addr.domain(), Type::STREAM, None).map_err(failed)?;
    sock.set_nonblocking(true).map_err(failed)?;
    if candidate.tls_name.is_some() {
        let option = |name| move |e| Error::socket_option(name, e);
        sock.set_nodelay(true).map_err(option("TCP_NODELAY"))?;
        apply_tcp_options(&sock, &config.tcp)?;
    }
    let phase = connect(&sock, candidate)?;
    Ok((sock, phase))
}

/// Starts `connect`: `Connecting` when it is under way or done,
/// `Queued` when a Unix-domain listener's accept queue is full. Only
/// EINPROGRESS means "under way": after EAGAIN the connect did not happen,
/// and waiting for writability would spin. Over TCP, EAGAIN (no free
/// local port) is an error, as in libpq.
fn connect(sock: &Socket, candidate: &Candidate) -> Result<Phase, Error> {
    match sock.connect(&candidate.addr) {
        Ok(()) => Ok(Phase::Connecting),
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(Phase::Connecting),
        Err(e) if e.raw_os_error() == Some(libc::EAGAIN) && candidate.addr.is_unix() => {
            Ok(Phase::Queued)
        }
        Err(e) => Err(connect_error(e, candidate)),
    }
}

/// libpq's sequence: with keepalives off nothing else is read, not even
/// `tcp_user_timeout`; otherwise each keepalive setting in turn, then the
/// user timeout.
fn apply_tcp_options(sock: &Socket, tcp: &TcpOptions) -> Result<(), Error> {
    let option = |name| move |e| Error::socket_option(name, e);
    let invalid = |e: crate::conninfo::Error| Error::config(e.to_string());
    if !tcp.keepalives().map_err(invalid)? {
        return Ok(());
    }
    sock.set_keepalive(true).map_err(option("SO_KEEPALIVE"))?;
    if let Some(t) = tcp.idle().map_err(invalid)? {
        let ka = TcpKeepalive::new().with_time(t);
        sock.set_tcp_keepalive(&ka)
            .map_err(option("TCP_KEEPIDLE"))?;
    }
    if let Some(t) = tcp.interval().map_err(invalid)? {
        let ka = TcpKeepalive::new().with_interval(t);
        sock.set_tcp_keepalive(&ka)
            .map_err(option("TCP_KEEPINTVL"))?;
    }
    if let Some(n) = tcp.count().map_err(invalid)? {
        let ka = TcpKeepalive::new().with_retries(n);
        sock.set_tcp_keepalive(&ka).map_err(option("TCP_KEEPCNT"))?;
    }
    if let Some(t) = tcp.user_timeout().map_err(invalid)? {
        sock.set_tcp_user_timeout(Some(t))
            .map_err(option("TCP_USER_TIMEOUT"))?;
    }
    Ok(())
}

/// The server's error; a wrong password that came from the password
/// file gets libpq's line naming the file.
fn server_error(config: &Config, file_password_sent: bool, e: DbError) -> Error {
    let from_file = file_password_sent && e.code == "28P01";
    let err = Error::db(e);
    match config.passfile.as_deref().filter(|_| from_file) {
        Some(file) => err.with_note(format!(
            "password retrieved from file \"{}\"",
            file.display()
        )),
        None => err,
    }
}

/// `requirepeer`: the server process at the other end of a Unix socket
/// must run as this OS user (its credentials come from the kernel).
fn check_peer(socket: &Socket, required: &str) -> Result<(), Error> {
    use std::os::fd::AsRawFd;
    // SAFETY: an all-zero ucred is a valid value for getsockopt to fill.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: the pointers are valid for the length passed with them.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(Error::config(format!(
            "could not get peer credentials: {}",
            strerror(&std::io::Error::last_os_error())
        )));
    }
    let Some((name, _)) = crate::conninfo::passwd_entry(cred.uid) else {
        return Err(Error::config(format!(
            "local user with ID {} does not exist",
            cred.uid
        )));
    };
    if name != required {
        return Err(Error::config(format!(
            "requirepeer specifies \"{required}\", but actual peer user name is \"{name}\""
        )));
    }
    Ok(())
}

/// The certificate the server presented in the TLS session of `stream`.
fn server_certificate(stream: &Stream) -> Option<&[u8]> {
    stream
        .tls()
        .and_then(|t| t.peer_certificates())
        .and_then(|c| c.first())
        .map(|c| c.as_ref())
}
