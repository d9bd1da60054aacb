//! Errors of the client layer: an opaque [`Error`] with a [`ErrorKind`], a
//! cause, and accessors such as [`Error::sqlstate`].
//!
//! Messages use libpq's wording where users know it (`Connection refused`,
//! `FATAL:  password authentication failed for user "x"`, `server does not
//! support SSL, but SSL was required`), because pgbench prints libpq's message
//! verbatim and scripts and people match on it. A failed connection attempt
//! names the server it tried (`connection to server at "h" (addr), port N
//! failed: ...`), and with several candidate servers the messages of all
//! attempts are joined, one per line, as libpq does.

use std::fmt;
use std::io;

/// What went wrong, coarsely; the message says the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A socket operation failed.
    Io,
    /// The server closed the connection.
    Closed,
    /// The server sent something this client cannot make sense of.
    Protocol,
    /// TLS failed: handshake, certificate verification, or TLS configuration.
    Tls,
    /// `sslmode` demanded TLS and the server does not offer it.
    SslNotSupported,
    /// Authentication could not proceed on the client side (no password,
    /// unsupported method, channel binding or `require_auth` unmet, forged
    /// server signature).
    Auth,
    /// The server reported an error (ErrorResponse).
    Db,
    /// `connect_timeout` expired.
    Timeout,
    /// The server does not have the `target_session_attrs` asked for.
    SessionAttrs,
    /// The configuration cannot be used (missing root certificate, an option
    /// not supported by this client).
    Config,
    /// Every candidate server failed; the message lists each attempt.
    Connect,
    /// The connection is in a state where the requested operation is not
    /// possible (a protocol misuse by the caller).
    State,
}

/// A PostgreSQL error or notice, with every field the server sent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DbError {
    /// Severity, localized (`S`).
    pub severity: String,
    /// Severity, never localized (`V`, PostgreSQL 9.6+).
    pub severity_nonlocalized: Option<String>,
    /// The SQLSTATE code (`C`).
    pub code: String,
    /// Primary message (`M`).
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
    /// 1-based character position in the query (`P`).
    pub position: Option<u32>,
    pub internal_position: Option<u32>,
    pub internal_query: Option<String>,
    /// Context (`W`).
    pub where_: Option<String>,
    pub schema: Option<String>,
    pub table: Option<String>,
    pub column: Option<String>,
    pub datatype: Option<String>,
    pub constraint: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub routine: Option<String>,
}

impl DbError {
    /// Collects the fields of an ErrorResponse or NoticeResponse body.
    pub fn from_fields(fields: crate::backend::Fields<'_>) -> Result<DbError, Error> {
        let mut e = DbError::default();
        for field in fields.iter() {
            let (code, value) = field?;
            let owned = || Some(value.clone().into_owned());
            match code {
                b'S' => e.severity = value.into_owned(),
                b'V' => e.severity_nonlocalized = owned(),
                b'C' => e.code = value.into_owned(),
                b'M' => e.message = value.into_owned(),
                b'D' => e.detail = owned(),
                b'H' => e.hint = owned(),
                b'P' => e.position = value.parse().ok(),
                b'p' => e.internal_position = value.parse().ok(),
                b'q' => e.internal_query = owned(),
                b'W' => e.where_ = owned(),
                b's' => e.schema = owned(),
                b't' => e.table = owned(),
                b'c' => e.column = owned(),
                b'd' => e.datatype = owned(),
                b'n' => e.constraint = owned(),
                b'F' => e.file = owned(),
                b'L' => e.line = value.parse().ok(),
                b'R' => e.routine = owned(),
                _ => {}
            }
        }
        Ok(e)
    }
}

/// libpq's default verbosity: `SEVERITY:  message`, then DETAIL and HINT
/// lines when present.
impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:  {}", self.severity, self.message)?;
        if let Some(detail) = &self.detail {
            write!(f, "\nDETAIL:  {detail}")?;
        }
        if let Some(hint) = &self.hint {
            write!(f, "\nHINT:  {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for DbError {}

/// One failed attempt in a host list: which server, and why.
#[derive(Debug)]
pub struct Attempt {
    /// `on socket "/tmp/.s.PGSQL.5432"` or `at "host" (addr), port N`;
    /// `None` when the attempt failed before a server was chosen (a host
    /// name that does not resolve).
    pub target: Option<String>,
    pub error: Error,
}

impl fmt::Display for Attempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.target {
            Some(target) => write!(f, "connection to server {target} failed: {}", self.error),
            None => write!(f, "{}", self.error),
        }
    }
}

#[derive(Debug)]
enum Cause {
    Io(io::Error),
    Tls(rustls::Error),
    Db(Box<DbError>),
    Message(String),
    Attempts(Vec<Attempt>),
}

/// An error of the client layer.
pub struct Error(Box<Inner>);

#[derive(Debug)]
struct Inner {
    kind: ErrorKind,
    cause: Cause,
    /// A second line libpq adds after some messages (a tab-indented hint).
    hint: Option<&'static str>,
    /// The server closed the connection right after sending this error.
    closed_after: Option<&'static str>,
    /// A line libpq adds after a server's error (`password retrieved from
    /// file "..."`).
    note: Option<String>,
    /// The exchange had reached the point of needing a password and none
    /// was given (libpq's `password_needed` with no password).
    password_wanted: bool,
}

/// libpq's words when the server asks for a password and there is none.
const NO_PASSWORD: &str = "fe_sendauth: no password supplied";

/// libpq's words for a connection the server closed.
const CLOSED_TEXT: &str = "server closed the connection unexpectedly\n\tThis probably means the \
    server terminated abnormally\n\tbefore or while processing the request.";

/// libpq's words for a TLS session the server closed (OpenSSL's
/// `SSL_ERROR_ZERO_RETURN`).
const TLS_CLOSED_TEXT: &str = "SSL connection has been closed unexpectedly";

impl Error {
    fn new(kind: ErrorKind, cause: Cause) -> Error {
        Error(Box::new(Inner {
            kind,
            cause,
            hint: None,
            closed_after: None,
            note: None,
            password_wanted: false,
        }))
    }

    /// Marks an error that came after the exchange had chosen a method
    /// needing a password, when none was given: as libpq's
    /// `PQconnectionNeedsPassword`, [`Error::needs_password`] then says yes
    /// (pgbench asks for one and tries again).
    pub(crate) fn wanting_password(mut self, wanted: bool) -> Error {
        self.0.password_wanted = wanted;
        self
    }

    /// Marks an error after which the server closed the connection (as it
    /// does after a FATAL error); `end` is the error that met the end.
    pub(crate) fn then_closed(mut self, end: &Error) -> Error {
        self.0.closed_after = Some(end.end_text());
        self
    }

    /// libpq's words for the end of a connection that ended `self`: the
    /// end of a TLS session the server closed properly, or of the stream.
    fn end_text(&self) -> &'static str {
        match &self.0.cause {
            Cause::Message(m) if m == TLS_CLOSED_TEXT => TLS_CLOSED_TEXT,
            _ => CLOSED_TEXT,
        }
    }

    /// Whether the server closed the connection right after reporting this
    /// error, as it does after a FATAL one (a pooler such as pgbouncer
    /// does the same with its own errors). libpq then follows the server's
    /// message with its `server closed the connection unexpectedly` lines,
    /// which `Display` and [`crate::libpq_text::query_failure`] add too.
    pub fn closed_after(&self) -> bool {
        self.0.closed_after.is_some()
    }

    pub(crate) fn with_hint(mut self, hint: &'static str) -> Error {
        self.0.hint = Some(hint);
        self
    }

    pub(crate) fn with_note(mut self, note: String) -> Error {
        self.0.note = Some(note);
        self
    }

    pub(crate) fn io(e: io::Error) -> Error {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            return Error::closed();
        }
        Error::new(ErrorKind::Io, Cause::Io(e))
    }

    /// libpq's words for the closed connection that followed this error,
    /// if it was followed by one.
    pub(crate) fn closed_after_text(&self) -> Option<&'static str> {
        self.0.closed_after
    }

    /// A socket option the system refused, in libpq's words:
    /// `setsockopt(TCP_KEEPIDLE) failed: Invalid argument`.
    pub(crate) fn socket_option(name: &str, e: io::Error) -> Error {
        Error::new(
            ErrorKind::Io,
            Cause::Message(format!("setsockopt({name}) failed: {}", strerror(&e))),
        )
    }

    pub(crate) fn closed() -> Error {
        Error::new(ErrorKind::Closed, Cause::Message(CLOSED_TEXT.into()))
    }

    /// The server ended the TLS session properly (close_notify), then the
    /// connection: OpenSSL's clean closure, which libpq reports in words
    /// of its own, not as a crash.
    pub(crate) fn tls_closed() -> Error {
        Error::new(ErrorKind::Closed, Cause::Message(TLS_CLOSED_TEXT.into()))
    }

    pub(crate) fn protocol(msg: impl Into<String>) -> Error {
        Error::new(ErrorKind::Protocol, Cause::Message(msg.into()))
    }

    pub(crate) fn tls(e: rustls::Error) -> Error {
        Error::new(ErrorKind::Tls, Cause::Tls(e))
    }

    pub(crate) fn tls_msg(msg: impl Into<String>) -> Error {
        Error::new(ErrorKind::Tls, Cause::Message(msg.into()))
    }

    pub(crate) fn ssl_not_supported() -> Error {
        Error::new(
            ErrorKind::SslNotSupported,
            Cause::Message("server does not support SSL, but SSL was required".into()),
        )
    }

    pub(crate) fn auth(msg: impl Into<String>) -> Error {
        Error::new(ErrorKind::Auth, Cause::Message(msg.into()))
    }

    /// The server asked for a password and none was given.
    pub(crate) fn no_password() -> Error {
        Error::auth(NO_PASSWORD).wanting_password(true)
    }

    pub(crate) fn db(e: DbError) -> Error {
        Error::new(ErrorKind::Db, Cause::Db(Box::new(e)))
    }

    pub(crate) fn timeout() -> Error {
        Error::new(ErrorKind::Timeout, Cause::Message("timeout expired".into()))
    }

    pub(crate) fn session_attrs(msg: &str) -> Error {
        Error::new(ErrorKind::SessionAttrs, Cause::Message(msg.into()))
    }

    pub(crate) fn config(msg: impl Into<String>) -> Error {
        Error::new(ErrorKind::Config, Cause::Message(msg.into()))
    }

    pub(crate) fn state(msg: &str) -> Error {
        Error::new(ErrorKind::State, Cause::Message(msg.into()))
    }

    pub(crate) fn attempts(attempts: Vec<Attempt>) -> Error {
        Error::new(ErrorKind::Connect, Cause::Attempts(attempts))
    }

    pub fn kind(&self) -> ErrorKind {
        self.0.kind
    }

    /// The server's error, if the server reported one. For a failed host
    /// list, the error of the last attempt that got one.
    pub fn db_error(&self) -> Option<&DbError> {
        match &self.0.cause {
            Cause::Db(e) => Some(e),
            Cause::Attempts(list) => list.iter().rev().find_map(|a| a.error.db_error()),
            _ => None,
        }
    }

    /// The SQLSTATE of the server's error, if any.
    pub fn sqlstate(&self) -> Option<&str> {
        self.db_error().map(|e| e.code.as_str())
    }

    /// Whether the connection failed only because the server asked for a
    /// password and none was given (libpq's `PQconnectionNeedsPassword`):
    /// a program may then ask its user for one and try again. For a host
    /// list, the last attempt decides.
    pub fn needs_password(&self) -> bool {
        match &self.0.cause {
            Cause::Message(_) => self.0.password_wanted,
            Cause::Attempts(list) => list.last().is_some_and(|a| a.error.needs_password()),
            _ => false,
        }
    }

    /// The attempts of a failed host list, in the order they were made.
    pub fn attempts_made(&self) -> &[Attempt] {
        match &self.0.cause {
            Cause::Attempts(list) => list,
            _ => &[],
        }
    }

    /// Whether a send failed because the server had closed its end (broken
    /// pipe, connection reset). Whatever the server sent before closing,
    /// such as the FATAL message that says why, may still be read.
    pub fn peer_gone(&self) -> bool {
        self.io_error().is_some_and(|e| {
            matches!(
                e.kind(),
                io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
            )
        })
    }

    /// The underlying I/O error, if this is one.
    pub fn io_error(&self) -> Option<&io::Error> {
        match &self.0.cause {
            Cause::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.0.kind)
            .field("cause", &self.0.cause)
            .finish()
    }
}

/// An OS error as libpq shows it: `strerror` text without Rust's
/// `(os error N)` suffix.
/// An I/O error in libpq's words: the system's text without Rust's
/// ` (os error N)`, except that a connection reset or a broken pipe, on
/// a read or a write, is libpq's `server closed the connection
/// unexpectedly` (a server that ends with our bytes unread resets the
/// connection: a Unix socket whose listener closes while the connection
/// waits to be accepted, as during a shutdown).
fn write_io(f: &mut fmt::Formatter<'_>, e: &io::Error) -> fmt::Result {
    if matches!(
        e.kind(),
        io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
    ) {
        return f.write_str(CLOSED_TEXT);
    }
    // A TLS failure after the handshake (an alert refusing our certificate
    // under TLS 1.3) comes through the socket reads.
    if let Some(tls) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        return write!(f, "SSL error: {}", crate::tls::reason_text(tls));
    }
    f.write_str(&strerror(e))
}

/// An I/O error as C's `strerror` words it (Rust's text without its
/// ` (os error N)` tail), as libpq shows system errors.
pub(crate) fn strerror(e: &io::Error) -> String {
    let mut text = e.to_string();
    if let Some(i) = text.find(" (os error ") {
        text.truncate(i);
    }
    text
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0.cause {
            Cause::Io(e) => write_io(f, e)?,
            Cause::Tls(e) => write!(f, "SSL error: {}", crate::tls::reason_text(e))?,
            Cause::Db(e) => write!(f, "{e}")?,
            Cause::Message(m) => f.write_str(m)?,
            Cause::Attempts(list) => {
                for (i, a) in list.iter().enumerate() {
                    if i > 0 {
                        f.write_str("\n")?;
                    }
                    write!(f, "{a}")?;
                }
            }
        }
        if let Some(hint) = self.0.hint {
            write!(f, "\n\t{hint}")?;
        }
        if let Some(end) = self.0.closed_after {
            write!(f, "\n{end}")?;
        }
        if let Some(note) = &self.0.note {
            write!(f, "\n{note}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0.cause {
            Cause::Io(e) => Some(e),
            Cause::Tls(e) => Some(e),
            Cause::Db(e) => Some(&**e),
            Cause::Attempts(list) => list.last().map(|a| &a.error as _),
            Cause::Message(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Fields;

    fn refused(target: &str, hint: &'static str) -> Attempt {
        Attempt {
            target: Some(target.into()),
            error: Error::io(io::Error::from_raw_os_error(libc::ECONNREFUSED)).with_hint(hint),
        }
    }

    #[test]
    fn messages_read_like_libpq() {
        let tcp_hint = "Is the server running on that host and accepting TCP/IP connections?";
        let sock_hint = "Is the server running locally and accepting connections on that socket?";
        let fatal = DbError {
            severity: "FATAL".into(),
            code: "28P01".into(),
            message: "password authentication failed for user \"bob\"".into(),
            ..DbError::default()
        };
        let cases: Vec<(Error, &str)> = vec![
            (
                Error::attempts(vec![Attempt {
                    target: Some("on socket \"/tmp/.s.PGSQL.5432\"".into()),
                    error: Error::io(io::Error::from_raw_os_error(libc::ENOENT))
                        .with_hint(sock_hint),
                }]),
                "connection to server on socket \"/tmp/.s.PGSQL.5432\" failed: No such file \
                 or directory\n\tIs the server running locally and accepting connections on \
                 that socket?",
            ),
            (
                Error::attempts(vec![
                    refused("at \"localhost\" (::1), port 5433", tcp_hint),
                    refused("at \"localhost\" (127.0.0.1), port 5433", tcp_hint),
                ]),
                "connection to server at \"localhost\" (::1), port 5433 failed: Connection \
                 refused\n\tIs the server running on that host and accepting TCP/IP \
                 connections?\nconnection to server at \"localhost\" (127.0.0.1), port 5433 \
                 failed: Connection refused\n\tIs the server running on that host and \
                 accepting TCP/IP connections?",
            ),
            (
                Error::attempts(vec![Attempt {
                    target: Some("at \"db\" (10.0.0.1), port 5432".into()),
                    error: Error::db(fatal.clone()),
                }]),
                "connection to server at \"db\" (10.0.0.1), port 5432 failed: FATAL:  \
                 password authentication failed for user \"bob\"",
            ),
            (
                Error::attempts(vec![Attempt {
                    target: Some("on socket \"/tmp/.s.PGSQL.5432\"".into()),
                    error: Error::io(io::Error::from_raw_os_error(libc::ECONNRESET)),
                }]),
                "connection to server on socket \"/tmp/.s.PGSQL.5432\" failed: server closed \
                 the connection unexpectedly\n\tThis probably means the server terminated \
                 abnormally\n\tbefore or while processing the request.",
            ),
            (
                Error::io(io::Error::from_raw_os_error(libc::EPIPE)),
                CLOSED_TEXT,
            ),
            (
                Error::ssl_not_supported(),
                "server does not support SSL, but SSL was required",
            ),
            (
                Error::db(DbError {
                    detail: Some("Key (aid)=(1) already exists.".into()),
                    hint: Some("Try again.".into()),
                    ..fatal
                }),
                "FATAL:  password authentication failed for user \"bob\"\nDETAIL:  Key \
                 (aid)=(1) already exists.\nHINT:  Try again.",
            ),
        ];
        for (err, want) in cases {
            assert_eq!(err.to_string(), want);
        }
    }

    #[test]
    fn sqlstate_reaches_through_a_host_list() {
        let body = b"SFATAL\0VFATAL\0C3D000\0Mdatabase \"nope\" does not exist\0\0";
        let db = DbError::from_fields(Fields::new(body)).unwrap();
        assert_eq!(db.severity_nonlocalized.as_deref(), Some("FATAL"));
        let err = Error::attempts(vec![
            refused("at \"a\", port 1", "x"),
            Attempt {
                target: Some("at \"b\", port 2".into()),
                error: Error::db(db),
            },
        ]);
        assert_eq!(err.kind(), ErrorKind::Connect);
        assert_eq!(err.sqlstate(), Some("3D000"));
        assert_eq!(err.attempts_made().len(), 2);
    }
}
