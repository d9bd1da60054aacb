//! Connection options resolved the way libpq resolves them.
//!
//! Sources, strongest first: explicit options (pgbolt's `-h -p -U`, the
//! dbname argument, which may itself be a `key=value` string or a URI),
//! the service file entry named by `service`/`PGSERVICE`, the `PG*`
//! environment, then the compiled-in defaults. The result is a [`Config`]:
//! a host list to try in order, plus everything the connect state machine
//! needs. Passwords are wrapped in [`Secret`] so that no `Debug` or
//! `Display` ever shows one.
//!
//! Use: [`parse`] a connection string, or build explicit options with
//! [`from_params`] (libpq's `PQconnectdbParams` with `expand_dbname`), then
//! [`resolve`] them against an [`Env`] snapshot. Per host attempt, the
//! connection asks [`Config::password_for`], which consults the password
//! file and hands back warnings instead of printing them.
//!
//! Three stages, because libpq has three: parsing only knows the syntax and
//! the keyword list (so `invalid connection option` comes first, as in
//! libpq); merging fills gaps in strict source order, where a key set to an
//! empty string still counts as set; building validates values, including
//! those libpq only checks when it starts connecting, so that pgbolt can
//! refuse bad options before the first connection of a benchmark opens.
//! Every keyword libpq 18 knows parses; those pgbolt does not implement are
//! refused by name at resolution instead of being ignored.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

mod env;
mod error;
mod options;
mod parse;
mod pgpass;
mod resolve;
mod service;
#[cfg(test)]
mod tests;
mod uri;
mod values;

pub(crate) use env::passwd_entry;
pub use env::{Env, DEFAULT_SOCKET_DIRS, DEFAULT_SYSCONFDIR};
pub use error::Error;
pub use options::ConnOptions;
pub use parse::{from_params, is_connection_string, parse, redact};
pub use resolve::{host_address, port, resolve, with_defaults};
pub use values::{AuthMethod, AuthRequirement, SaslMechanism, TcpOptions};

/// A password or other secret; formatting never reveals it. It is bytes,
/// not text: a password read from the password file or typed at the prompt
/// is sent as it is, UTF-8 or not, as libpq sends it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into().into_bytes())
    }

    /// A secret that need not be UTF-8.
    pub fn from_bytes(value: Vec<u8>) -> Self {
        Secret(value)
    }

    /// The secret itself, for the one place that must send it.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(****)")
    }
}

/// Where one candidate server lives.
///
/// A `Unix` directory starting with `@` names a socket in Linux's abstract
/// namespace (libpq's rule): the socket is `@DIR/.s.PGSQL.PORT` there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostKind {
    /// A Unix-domain socket directory; the socket is `DIR/.s.PGSQL.PORT`.
    Unix(PathBuf),
    /// A TCP host name (resolved at connect time) and optional `hostaddr`.
    Tcp {
        name: Option<String>,
        addr: Option<std::net::IpAddr>,
    },
}

/// How one entry of the host list was written: the password file's host
/// and port fields are compared with this text, as libpq compares them
/// (`port=05432` does not match a line for `5432`, `hostaddr=0:0:0:0:0:0:0:1`
/// does not match one for `::1`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostSpelling {
    /// The entry this spelling belongs to.
    pub host: Host,
    /// `host` as written, else `hostaddr` as written, else empty.
    pub name: String,
    /// `hostaddr` as written (libpq names the server by it), else empty.
    pub hostaddr: String,
    /// The port as written, `5432` when none was.
    pub port: String,
}

/// One entry of the host list, tried in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    pub kind: HostKind,
    /// 0 when the port as written is not a valid one; connecting reports
    /// it when this host's turn comes (see [`port`]).
    pub port: u16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SslMode {
    Disable,
    Allow,
    #[default]
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SslNegotiation {
    #[default]
    Postgres,
    Direct,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ChannelBinding {
    Disable,
    #[default]
    Prefer,
    Require,
}

/// `sslcertmode`: whether to send a client certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SslCertMode {
    Disable,
    #[default]
    Allow,
    Require,
}

/// A TLS protocol version bound (`ssl_min_protocol_version`,
/// `ssl_max_protocol_version`), ordered from oldest to newest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SslProtocolVersion {
    Tls1,
    Tls1_1,
    Tls1_2,
    Tls1_3,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TargetSessionAttrs {
    #[default]
    Any,
    ReadWrite,
    ReadOnly,
    Primary,
    Standby,
    PreferStandby,
}

/// Everything needed to open a connection, after all sources are merged.
#[derive(Clone, Debug)]
pub struct Config {
    pub hosts: Vec<Host>,
    pub user: String,
    pub dbname: String,
    pub password: Option<Secret>,
    /// The password file to consult when `password` is unset.
    pub passfile: Option<PathBuf>,
    pub application_name: Option<String>,
    pub fallback_application_name: Option<String>,
    /// The `options` startup parameter (command-line options for the backend).
    pub options: Option<String>,
    pub connect_timeout: Option<Duration>,
    /// `connect_timeout` as written when it is not an integer. libpq reads
    /// it once the first attempt is under way and fails the connection
    /// there, so the error names that attempt (see [`crate::Connecting`]).
    pub invalid_connect_timeout: Option<String>,
    pub sslmode: SslMode,
    pub sslnegotiation: SslNegotiation,
    pub sslrootcert: Option<PathBuf>,
    pub sslcert: Option<PathBuf>,
    pub sslkey: Option<PathBuf>,
    pub sslcrl: Option<PathBuf>,
    pub sslsni: bool,
    pub channel_binding: ChannelBinding,
    pub target_session_attrs: TargetSessionAttrs,
    /// `load_balance_hosts=random`: try the hosts, and each host's
    /// addresses, in a random order (a new one for every connection).
    pub load_balance_random: bool,
    /// `require_auth`: `None` allows every method. Already validated; see
    /// [`Config::auth_requirement`] for its meaning.
    pub require_auth: Option<String>,
    /// `client_encoding`, sent as a startup parameter when set.
    pub client_encoding: Option<String>,
    /// The TCP socket options as written, read as each TCP connection opens.
    pub tcp: TcpOptions,
    pub sslcertmode: SslCertMode,
    pub sslcrldir: Option<PathBuf>,
    /// Defaults to TLS 1.2, as in libpq.
    pub ssl_min_protocol_version: Option<SslProtocolVersion>,
    pub ssl_max_protocol_version: Option<SslProtocolVersion>,
    /// `requirepeer`: for Unix sockets, the OS user the server process must
    /// run as (checked with `SO_PEERCRED`).
    pub requirepeer: Option<String>,
    /// Startup parameters libpq takes from the environment: `PGDATESTYLE`
    /// as `datestyle`, `PGTZ` as `timezone`, `PGGEQO` as `geqo` (a value of
    /// `default`, in any case, is not sent). Send them with the others.
    pub environment_parameters: Vec<(&'static str, String)>,
    /// The host list as written, entry by entry, for the password file;
    /// an entry of `hosts` without its spelling here is looked up by its
    /// parsed values.
    pub host_spellings: Vec<HostSpelling>,
    /// The socket directory used when no host was given; a `.pgpass` line
    /// for `localhost` also matches a socket connection to this directory.
    pub default_socket_dir: PathBuf,
}

impl Config {
    /// A configuration for `hosts` with libpq's defaults for everything
    /// else (no password, sslmode prefer, ...).
    pub fn new(hosts: Vec<Host>, user: impl Into<String>, dbname: impl Into<String>) -> Config {
        Config {
            hosts,
            user: user.into(),
            dbname: dbname.into(),
            password: None,
            passfile: None,
            application_name: None,
            fallback_application_name: None,
            options: None,
            connect_timeout: None,
            invalid_connect_timeout: None,
            sslmode: SslMode::default(),
            sslnegotiation: SslNegotiation::default(),
            sslrootcert: None,
            sslcert: None,
            sslkey: None,
            sslcrl: None,
            sslsni: true,
            channel_binding: ChannelBinding::default(),
            target_session_attrs: TargetSessionAttrs::default(),
            load_balance_random: false,
            require_auth: None,
            client_encoding: None,
            tcp: TcpOptions::default(),
            sslcertmode: SslCertMode::default(),
            sslcrldir: None,
            ssl_min_protocol_version: Some(SslProtocolVersion::Tls1_2),
            ssl_max_protocol_version: None,
            requirepeer: None,
            environment_parameters: Vec::new(),
            host_spellings: Vec::new(),
            default_socket_dir: PathBuf::from("/tmp"),
        }
    }

    /// What `require_auth` allows.
    pub fn auth_requirement(&self) -> Result<AuthRequirement, Error> {
        AuthRequirement::parse(self.require_auth.as_deref().unwrap_or(""))
    }

    /// `sslrootcert=system`: trust the operating system's CA store.
    pub fn uses_system_root_certs(&self) -> bool {
        self.sslrootcert
            .as_deref()
            .is_some_and(|p| p.as_os_str() == "system")
    }

    /// The application name: `application_name` if set (even to an empty
    /// value), else `fallback_application_name`. An empty name is not sent.
    pub fn effective_application_name(&self) -> Option<&str> {
        self.application_name
            .as_deref()
            .or(self.fallback_application_name.as_deref())
    }
}
