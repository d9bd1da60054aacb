//! Errors of connection-option parsing and resolution.
//!
//! Each variant's message uses libpq's wording, so that a user who knows
//! `psql`'s or `pgbench`'s complaints recognizes ours. Messages never contain
//! a password: URIs are shown with their password replaced by `****`.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// Why a set of connection options could not be parsed or resolved.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A `key=value` string has a key with no `=` after it.
    MissingEquals { key: String },
    /// A single-quoted value in a `key=value` string never ends.
    UnterminatedQuote,
    /// A key that libpq does not know.
    InvalidOption { key: String },
    /// A URI query parameter whose key libpq does not know.
    InvalidUriParameter { key: String },
    /// A URI query parameter with two `=`.
    UriExtraEquals { parameter: String },
    /// A URI query parameter with no `=`.
    UriMissingEquals { parameter: String },
    /// A `%` not followed by two hexadecimal digits.
    InvalidPercentEncoding { text: String },
    /// `%00` in a URI.
    PercentEncodedNul { text: String },
    /// `[` with no matching `]` in a URI (the URI is shown redacted).
    UnterminatedIpv6 { uri: String },
    /// `[]` in a URI.
    EmptyIpv6 { uri: String },
    /// Something other than `:`, `/`, `?` or `,` after `[address]`.
    UnexpectedUriCharacter {
        character: char,
        position: usize,
        uri: String,
    },
    /// A value not among those an enumerated option accepts.
    InvalidValue { key: &'static str, value: String },
    /// A value that must be an integer and is not.
    InvalidInteger { key: &'static str, value: String },
    /// A port outside 1..=65535.
    InvalidPort { value: String },
    /// `hostaddr` that is not a numeric IPv4 or IPv6 address.
    InvalidHostAddr { value: String, reason: String },
    /// The `host` list and the `hostaddr` list differ in length.
    HostCountMismatch { hosts: usize, hostaddrs: usize },
    /// The `port` list has neither one entry nor one per host.
    PortCountMismatch { ports: usize, hosts: usize },
    /// `sslrootcert=system` with an sslmode weaker than verify-full.
    WeakSslModeForSystemRoot { sslmode: String },
    /// `sslnegotiation=direct` with an sslmode that allows plaintext.
    WeakSslModeForDirect { sslmode: String },
    /// `ssl_min_protocol_version` above `ssl_max_protocol_version`.
    InvalidSslProtocolRange,
    /// `gssencmode=require`: pgbolt has no GSSAPI support.
    GssEncRequired { value: String },
    /// `require_auth` mixes `!method` and `method`.
    RequireAuthNegativeMixed { method: String },
    /// `require_auth` mixes `method` after `!method`.
    RequireAuthPositiveMixed { method: String },
    /// `require_auth` names a method twice.
    RequireAuthDuplicate { method: String },
    /// The named service is in no service file.
    ServiceNotFound { service: String },
    /// `PGSERVICEFILE` (or `servicefile`) names a file that cannot be opened.
    ServiceFileNotFound { path: PathBuf },
    /// A line of a service file is not `key=value` with a known key.
    ServiceFileSyntax { path: PathBuf, line: usize },
    /// A service file entry sets `service`.
    ServiceFileNested { path: PathBuf, line: usize },
    /// A service file line of 1023 bytes or more.
    ServiceFileLineTooLong { path: PathBuf, line: usize },
    /// A service file exists but reading it failed.
    ServiceFileRead { path: PathBuf, source: io::Error },
    /// The operating system user name could not be found (no `user` given).
    NoUserName { uid: u32 },
    /// An option libpq knows but pgbolt does not implement.
    Unsupported {
        key: &'static str,
        reason: &'static str,
    },
    /// A value of an option that pgbolt does not implement.
    UnsupportedValue {
        key: &'static str,
        value: String,
        reason: &'static str,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Error::*;
        match self {
            MissingEquals { key } => {
                write!(f, "missing \"=\" after \"{key}\" in connection info string")
            }
            UnterminatedQuote => f.write_str("unterminated quoted string in connection info string"),
            InvalidOption { key } => write!(f, "invalid connection option \"{key}\""),
            InvalidUriParameter { key } => write!(f, "invalid URI query parameter: \"{key}\""),
            UriExtraEquals { parameter } => write!(
                f,
                "extra key/value separator \"=\" in URI query parameter: \"{parameter}\""
            ),
            UriMissingEquals { parameter } => write!(
                f,
                "missing key/value separator \"=\" in URI query parameter: \"{parameter}\""
            ),
            InvalidPercentEncoding { text } => {
                write!(f, "invalid percent-encoded token: \"{text}\"")
            }
            PercentEncodedNul { text } => {
                write!(f, "forbidden value %00 in percent-encoded value: \"{text}\"")
            }
            UnterminatedIpv6 { uri } => write!(
                f,
                "end of string reached when looking for matching \"]\" in IPv6 host address in URI: \"{uri}\""
            ),
            EmptyIpv6 { uri } => {
                write!(f, "IPv6 host address may not be empty in URI: \"{uri}\"")
            }
            UnexpectedUriCharacter {
                character,
                position,
                uri,
            } => write!(
                f,
                "unexpected character \"{character}\" at position {position} in URI (expected \":\" or \"/\"): \"{uri}\""
            ),
            InvalidValue { key, value } => write!(f, "invalid {key} value: \"{value}\""),
            InvalidInteger { key, value } => write!(
                f,
                "invalid integer value \"{value}\" for connection option \"{key}\""
            ),
            InvalidPort { value } => write!(f, "invalid port number: \"{value}\""),
            InvalidHostAddr { value, reason } => {
                write!(f, "could not parse network address \"{value}\": {reason}")
            }
            HostCountMismatch { hosts, hostaddrs } => write!(
                f,
                "could not match {hosts} host names to {hostaddrs} hostaddr values"
            ),
            PortCountMismatch { ports, hosts } => {
                write!(f, "could not match {ports} port numbers to {hosts} hosts")
            }
            WeakSslModeForSystemRoot { sslmode } => write!(
                f,
                "weak sslmode \"{sslmode}\" may not be used with sslrootcert=system (use \"verify-full\")"
            ),
            WeakSslModeForDirect { sslmode } => write!(
                f,
                "weak sslmode \"{sslmode}\" may not be used with sslnegotiation=direct (use \"require\", \"verify-ca\", or \"verify-full\")"
            ),
            InvalidSslProtocolRange => f.write_str("invalid SSL protocol version range"),
            GssEncRequired { value } => write!(
                f,
                "gssencmode value \"{value}\" invalid when GSSAPI support is not compiled in"
            ),
            RequireAuthNegativeMixed { method } => write!(
                f,
                "negative require_auth method \"{method}\" cannot be mixed with non-negative methods"
            ),
            RequireAuthPositiveMixed { method } => write!(
                f,
                "require_auth method \"{method}\" cannot be mixed with negative methods"
            ),
            RequireAuthDuplicate { method } => write!(
                f,
                "require_auth method \"{method}\" is specified more than once"
            ),
            ServiceNotFound { service } => {
                write!(f, "definition of service \"{service}\" not found")
            }
            ServiceFileNotFound { path } => {
                write!(f, "service file \"{}\" not found", path.display())
            }
            ServiceFileSyntax { path, line } => write!(
                f,
                "syntax error in service file \"{}\", line {line}",
                path.display()
            ),
            ServiceFileNested { path, line } => write!(
                f,
                "nested service specifications not supported in service file \"{}\", line {line}",
                path.display()
            ),
            ServiceFileLineTooLong { path, line } => write!(
                f,
                "line {line} too long in service file \"{}\"",
                path.display()
            ),
            ServiceFileRead { path, source } => write!(
                f,
                "could not read service file \"{}\": {source}",
                path.display()
            ),
            NoUserName { uid } => write!(f, "local user with ID {uid} does not exist"),
            Unsupported { key, reason } => write!(
                f,
                "connection option \"{key}\" is not supported by pgbolt: {reason}"
            ),
            UnsupportedValue { key, value, reason } => write!(
                f,
                "{key} value \"{value}\" is not supported by pgbolt: {reason}"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::ServiceFileRead { source, .. } => Some(source),
            _ => None,
        }
    }
}
