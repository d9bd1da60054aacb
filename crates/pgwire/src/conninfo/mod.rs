//! Connection options resolved the way libpq resolves them.
//!
//! Sources, strongest first: explicit options (pgbolt's `-h -p -U`, the
//! dbname argument, which may itself be a `key=value` string or a URI),
//! the service file entry named by `service`/`PGSERVICE`, the `PG*`
//! environment, then the compiled-in defaults. The result is a [`Config`]:
//! a host list to try in order, plus everything the connect state machine
//! needs. Passwords are wrapped in [`Secret`] so that no `Debug` or
//! `Display` ever shows one.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// A password or other secret; formatting never reveals it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret itself, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(****)")
    }
}

/// Where one candidate server lives.
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

/// One entry of the host list, tried in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    pub kind: HostKind,
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
    pub sslmode: SslMode,
    pub sslnegotiation: SslNegotiation,
    pub sslrootcert: Option<PathBuf>,
    pub sslcert: Option<PathBuf>,
    pub sslkey: Option<PathBuf>,
    pub sslcrl: Option<PathBuf>,
    pub sslsni: bool,
    pub channel_binding: ChannelBinding,
    pub target_session_attrs: TargetSessionAttrs,
    /// `require_auth`: `None` allows every method.
    pub require_auth: Option<String>,
}
