//! Merging the option sources and turning the result into a [`Config`].
//!
//! The order is libpq's `conninfo_add_defaults` followed by
//! `pqConnectOptions2`: explicit options, then the service file entry for
//! any key still unset, then the `PG*` environment, then compiled-in
//! defaults; a key explicitly set to an empty value counts as set and so
//! blocks the later sources. Ports and `hostaddr` values are checked as
//! each host's turn comes, as libpq checks them (see [`port`] and
//! [`host_address`]). A
//! `connect_timeout` that is not an integer is kept for the first attempt
//! to report, as libpq reports it. The TCP socket options are kept as
//! written and read as each TCP connection opens, as libpq reads them: a
//! Unix socket never looks at them, and a bad value fails that attempt
//! only.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::options::KEYWORDS;
use super::values::{self, int_option, AuthRequirement};
use super::{
    service, Config, ConnOptions, Env, Error, Host, HostKind, HostSpelling, Secret, SslMode,
    SslNegotiation, TcpOptions,
};

/// Options libpq knows and pgbolt does not implement, rejected when set to
/// a non-empty value: (keyword, reason).
const UNSUPPORTED: &[(&str, &str)] = &[
    ("sslpassword", "encrypted client keys are not supported"),
    ("sslkeylogfile", "TLS key logging is not supported"),
    ("krbsrvname", "GSSAPI and Kerberos are not supported"),
    ("gsslib", "GSSAPI and Kerberos are not supported"),
    (
        "scram_client_key",
        "SCRAM key pass-through is not supported",
    ),
    (
        "scram_server_key",
        "SCRAM key pass-through is not supported",
    ),
    ("oauth_issuer", "OAuth authentication is not supported"),
    ("oauth_client_id", "OAuth authentication is not supported"),
    (
        "oauth_client_secret",
        "OAuth authentication is not supported",
    ),
    ("oauth_scope", "OAuth authentication is not supported"),
];

/// Environment variables libpq sends as startup parameters: (variable,
/// parameter).
const ENVIRONMENT_PARAMETERS: [(&str, &str); 3] = [
    ("PGDATESTYLE", "datestyle"),
    ("PGTZ", "timezone"),
    ("PGGEQO", "geqo"),
];

/// Resolves explicit options (from [`super::parse`] or
/// [`super::from_params`]) against the service file, the environment and
/// the defaults, and checks every value.
pub fn resolve(explicit: &ConnOptions, env: &Env) -> Result<Config, Error> {
    let options = with_defaults(explicit, env)?;
    build(&options, env)
}

/// The options after the service file, environment and compiled-in
/// defaults have filled the gaps (libpq's `conninfo_add_defaults`).
/// Options pgbolt does not implement are rejected here, before defaults
/// are added, so only what the user set can fail.
pub fn with_defaults(explicit: &ConnOptions, env: &Env) -> Result<ConnOptions, Error> {
    let mut o = explicit.clone();
    service::apply(&mut o, env)?;
    for kw in KEYWORDS {
        if let Some(value) = kw.env.and_then(|var| env.var(var)) {
            o.set_if_absent(kw.name, value);
        }
    }
    let mut sslmode_defaulted = !o.contains("sslmode");
    if sslmode_defaulted && env.var("PGREQUIRESSL").is_some_and(|v| v.starts_with('1')) {
        o.set_if_absent("sslmode", "require");
        sslmode_defaulted = false;
    }
    reject_unsupported(&o)?;
    for kw in KEYWORDS {
        if let Some(default) = kw.default {
            o.set_if_absent(kw.name, default);
        }
    }
    if sslmode_defaulted && o.get("sslrootcert") == Some("system") {
        o.set("sslmode", "verify-full")?;
    }
    Ok(o)
}

fn reject_unsupported(o: &ConnOptions) -> Result<(), Error> {
    for (key, reason) in UNSUPPORTED {
        if o.get_nonempty(key).is_some() {
            return Err(Error::Unsupported { key, reason });
        }
    }
    if o.get_nonempty("replication")
        .is_some_and(|v| !server_reads_as_false(v))
    {
        return Err(Error::Unsupported {
            key: "replication",
            reason: "replication connections are not supported",
        });
    }
    if let Some(v) = o.get("gssdelegation").filter(|v| v.starts_with('1')) {
        return Err(Error::UnsupportedValue {
            key: "gssdelegation",
            value: v.to_owned(),
            reason: "GSSAPI and Kerberos are not supported",
        });
    }
    Ok(())
}

/// Whether the server takes `value` for a false boolean (its `parse_bool`:
/// any case, a prefix of `false` or `no`, `of`/`off`, or `0`). libpq sends
/// `replication` as written, so such a value asks for an ordinary session.
fn server_reads_as_false(value: &str) -> bool {
    let v = value.to_ascii_lowercase();
    let prefix_of = |word: &str, min: usize| v.len() >= min && word.starts_with(v.as_str());
    v == "0" || prefix_of("false", 1) || prefix_of("no", 1) || prefix_of("off", 2)
}

/// A `hostaddr` entry read as libpq reads it when the host's turn comes
/// (a bad one skips the host): the system resolver with
/// `AI_NUMERICHOST`, so every form it takes as an address is one
/// (`127.1`, `0x7f.0.0.1`, `2130706433`) and nothing is looked up; its
/// message when it refuses. An IPv6 zone identifier (`fe80::1%eth0`) is
/// refused: a connection target here is an address without a scope.
pub fn host_address(text: &str) -> Result<IpAddr, Error> {
    let invalid = |reason: String| Error::InvalidHostAddr {
        value: text.to_owned(),
        reason,
    };
    let resolver_says = |code: libc::c_int| {
        // SAFETY: gai_strerror returns a static, NUL-terminated string.
        let message = unsafe { std::ffi::CStr::from_ptr(libc::gai_strerror(code)) };
        invalid(message.to_string_lossy().into_owned())
    };
    let c_text = std::ffi::CString::new(text).map_err(|_| resolver_says(libc::EAI_NONAME))?;
    // SAFETY: an all-zero addrinfo is a valid "no hints" value.
    let mut hints: libc::addrinfo = unsafe { std::mem::zeroed() };
    hints.ai_flags = libc::AI_NUMERICHOST;
    hints.ai_family = libc::AF_UNSPEC;
    hints.ai_socktype = libc::SOCK_STREAM;
    let mut list: *mut libc::addrinfo = std::ptr::null_mut();
    // SAFETY: valid C string, hints and out-pointer; the list is freed below.
    let rc = unsafe { libc::getaddrinfo(c_text.as_ptr(), std::ptr::null(), &hints, &mut list) };
    if rc != 0 {
        return Err(resolver_says(rc));
    }
    // SAFETY: on success the list holds at least one entry whose ai_addr
    // points to a sockaddr of its ai_family.
    let found = unsafe {
        let entry = &*list;
        match entry.ai_family {
            libc::AF_INET => {
                let sin = &*entry.ai_addr.cast::<libc::sockaddr_in>();
                let ip = std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
                Some((IpAddr::V4(ip), 0))
            }
            libc::AF_INET6 => {
                let sin6 = &*entry.ai_addr.cast::<libc::sockaddr_in6>();
                let ip = std::net::Ipv6Addr::from(sin6.sin6_addr.s6_addr);
                Some((IpAddr::V6(ip), sin6.sin6_scope_id))
            }
            _ => None,
        }
    };
    // SAFETY: the list came from getaddrinfo and is freed once.
    unsafe { libc::freeaddrinfo(list) };
    match found {
        Some((_, scope)) if scope != 0 => Err(invalid(
            "IPv6 zone identifiers are not supported by pgbolt".to_owned(),
        )),
        Some((ip, _)) => Ok(ip),
        None => Err(resolver_says(libc::EAI_NONAME)),
    }
}

fn split(list: &str) -> Vec<&str> {
    list.split(',').collect()
}

fn path(o: &ConnOptions, key: &str) -> Option<PathBuf> {
    o.get_nonempty(key).map(PathBuf::from)
}

fn string(o: &ConnOptions, key: &str) -> Option<String> {
    o.get_nonempty(key).map(str::to_owned)
}

/// The host list, libpq's way: `hostaddr` (if set) fixes the count and
/// `host` must match it; a single port applies to every host.
fn hosts(o: &ConnOptions, default_socket_dir: &Path) -> Result<Vec<HostSpelling>, Error> {
    let names = o.get_nonempty("host").map(split);
    let addrs = o.get_nonempty("hostaddr").map(split);
    let count = match (&addrs, &names) {
        (Some(a), _) => a.len(),
        (None, Some(h)) => h.len(),
        (None, None) => 1,
    };
    if let (Some(a), Some(h)) = (&addrs, &names) {
        if a.len() != h.len() {
            return Err(Error::HostCountMismatch {
                hosts: h.len(),
                hostaddrs: a.len(),
            });
        }
    }
    let ports = match o.get_nonempty("port").map(split) {
        Some(p) if p.len() == 1 => vec![p[0]; count],
        Some(p) if p.len() == count => p,
        Some(p) => {
            return Err(Error::PortCountMismatch {
                ports: p.len(),
                hosts: count,
            })
        }
        None => vec![""; count],
    };
    let mut hosts = Vec::with_capacity(count);
    for (i, port_text) in ports.into_iter().enumerate() {
        let name = names.as_ref().map(|n| n[i]).filter(|s| !s.is_empty());
        let addr = addrs.as_ref().map(|a| a[i]).filter(|s| !s.is_empty());
        let kind = match (addr, name) {
            // A bad `hostaddr` is reported when the host's turn comes, as
            // libpq reports it (see [`host_address`]); until then the host
            // has no address.
            (Some(addr), name) => HostKind::Tcp {
                name: name.map(str::to_owned),
                addr: host_address(addr).ok(),
            },
            (None, Some(name)) if name.starts_with(['/', '@']) => {
                HostKind::Unix(PathBuf::from(name))
            }
            (None, Some(name)) => HostKind::Tcp {
                name: Some(name.to_owned()),
                addr: None,
            },
            (None, None) => HostKind::Unix(default_socket_dir.to_path_buf()),
        };
        // A bad port is reported when the host's turn comes, as libpq
        // reports it; until then the host holds port 0.
        let host = Host {
            kind,
            port: port(port_text).unwrap_or(0),
        };
        hosts.push(HostSpelling {
            host,
            name: name.or(addr).unwrap_or_default().to_owned(),
            hostaddr: addr.unwrap_or_default().to_owned(),
            port: if port_text.is_empty() {
                "5432"
            } else {
                port_text
            }
            .to_owned(),
        });
    }
    Ok(hosts)
}

/// A port as libpq reads it when it comes to that host: empty means 5432;
/// a value that is not an integer ends the connection
/// (`invalid integer value`), one out of range skips the host (`invalid
/// port number`).
pub fn port(text: &str) -> Result<u16, Error> {
    if text.is_empty() {
        return Ok(5432);
    }
    let n = int_option("port", text)?;
    u16::try_from(n)
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| Error::InvalidPort {
            value: text.to_owned(),
        })
}

fn build(o: &ConnOptions, env: &Env) -> Result<Config, Error> {
    let default_socket_dir = env.default_socket_dir();
    let spellings = hosts(o, &default_socket_dir)?;
    let hosts = spellings.iter().map(|s| s.host.clone()).collect();
    let user = match o.get_nonempty("user") {
        Some(user) => user.to_owned(),
        None => env.os_user()?.to_owned(),
    };
    let dbname = o.get_nonempty("dbname").unwrap_or(&user).to_owned();
    let mut c = Config::new(hosts, user, dbname);
    c.default_socket_dir = default_socket_dir;
    c.host_spellings = spellings;
    c.password = o.get_nonempty("password").map(Secret::new);
    c.passfile = path(o, "passfile").or_else(|| env.home_dir().map(|h| h.join(".pgpass")));
    // An empty application_name still counts: it hides the fallback, and
    // then no name is sent at all (libpq's startup packet skips empty names).
    c.application_name = o.get("application_name").map(str::to_owned);
    c.fallback_application_name = string(o, "fallback_application_name");
    c.options = string(o, "options");
    c.requirepeer = string(o, "requirepeer");

    c.require_auth = string(o, "require_auth");
    AuthRequirement::parse(c.require_auth.as_deref().unwrap_or(""))?;
    c.channel_binding = values::channel_binding(o.get("channel_binding").unwrap_or("prefer"))?;
    apply_tls(&mut c, o)?;
    check_gssencmode(o.get("gssencmode").unwrap_or("disable"))?;
    c.target_session_attrs =
        values::target_session_attrs(o.get("target_session_attrs").unwrap_or("any"))?;
    c.load_balance_random = load_balance_hosts(o.get("load_balance_hosts").unwrap_or("disable"))?;
    check_protocol_versions(o)?;
    // libpq takes `auto` from the process's LC_CTYPE locale. A program
    // that never calls setlocale (pgbench, pgbolt) runs in the "C" locale,
    // for which libpq picks SQL_ASCII, whatever LANG or LC_ALL say.
    c.client_encoding = string(o, "client_encoding").map(|e| {
        if e == "auto" {
            "SQL_ASCII".to_owned()
        } else {
            e
        }
    });
    apply_timeouts(&mut c, o);
    c.environment_parameters = ENVIRONMENT_PARAMETERS
        .iter()
        .filter_map(|(var, name)| {
            let value = env.var(var)?;
            (!value.eq_ignore_ascii_case("default")).then(|| (*name, value.to_owned()))
        })
        .collect();
    Ok(c)
}

/// The TLS settings, checked in libpq's order.
fn apply_tls(c: &mut Config, o: &ConnOptions) -> Result<(), Error> {
    c.sslmode = values::sslmode(o.get("sslmode").unwrap_or("prefer"))?;
    c.sslnegotiation = values::sslnegotiation(o.get("sslnegotiation").unwrap_or("postgres"))?;
    let mode_text = || o.get("sslmode").unwrap_or("prefer").to_owned();
    if c.sslnegotiation == SslNegotiation::Direct
        && matches!(
            c.sslmode,
            SslMode::Disable | SslMode::Allow | SslMode::Prefer
        )
    {
        return Err(Error::WeakSslModeForDirect {
            sslmode: mode_text(),
        });
    }
    if o.get("sslrootcert") == Some("system") && c.sslmode != SslMode::VerifyFull {
        return Err(Error::WeakSslModeForSystemRoot {
            sslmode: mode_text(),
        });
    }
    let min = o.get("ssl_min_protocol_version").unwrap_or("");
    let max = o.get("ssl_max_protocol_version").unwrap_or("");
    c.ssl_min_protocol_version = values::ssl_protocol_version("ssl_min_protocol_version", min)?;
    c.ssl_max_protocol_version = values::ssl_protocol_version("ssl_max_protocol_version", max)?;
    if let (Some(min), Some(max)) = (c.ssl_min_protocol_version, c.ssl_max_protocol_version) {
        if min > max {
            return Err(Error::InvalidSslProtocolRange);
        }
    }
    c.sslcertmode = values::sslcertmode(o.get("sslcertmode").unwrap_or("allow"))?;
    c.sslrootcert = path(o, "sslrootcert");
    c.sslcert = path(o, "sslcert");
    c.sslkey = path(o, "sslkey");
    c.sslcrl = path(o, "sslcrl");
    c.sslcrldir = path(o, "sslcrldir");
    c.sslsni = o.get("sslsni").is_some_and(|v| v.starts_with('1'));
    Ok(())
}

/// `connect_timeout` (values 1 become 2, as in libpq; 0 or less means
/// none) and the TCP keepalive and user-timeout settings.
fn apply_timeouts(c: &mut Config, o: &ConnOptions) {
    c.connect_timeout = None;
    c.invalid_connect_timeout = None;
    if let Some(v) = o.get("connect_timeout") {
        match values::c_int(v) {
            Some(t) if t > 0 => c.connect_timeout = Some(Duration::from_secs(t.max(2) as u64)),
            Some(_) => {}
            None => c.invalid_connect_timeout = Some(v.to_owned()),
        }
    }
    let written = |key: &str| o.get(key).map(str::to_owned);
    c.tcp = TcpOptions {
        keepalives: written("keepalives"),
        keepalives_idle: written("keepalives_idle"),
        keepalives_interval: written("keepalives_interval"),
        keepalives_count: written("keepalives_count"),
        tcp_user_timeout: written("tcp_user_timeout"),
    };
}

fn check_gssencmode(value: &str) -> Result<(), Error> {
    match value {
        "disable" | "prefer" => Ok(()),
        "require" => Err(Error::GssEncRequired {
            value: value.to_owned(),
        }),
        _ => Err(Error::InvalidValue {
            key: "gssencmode",
            value: value.to_owned(),
        }),
    }
}

/// Whether `load_balance_hosts` asks for a random order.
fn load_balance_hosts(value: &str) -> Result<bool, Error> {
    match value {
        "disable" => Ok(false),
        "random" => Ok(true),
        _ => Err(Error::InvalidValue {
            key: "load_balance_hosts",
            value: value.to_owned(),
        }),
    }
}

/// `min_protocol_version` / `max_protocol_version` (PostgreSQL 18): pgbolt
/// speaks protocol 3.0, which satisfies any maximum but no minimum above it.
fn check_protocol_versions(o: &ConnOptions) -> Result<(), Error> {
    for key in ["min_protocol_version", "max_protocol_version"] {
        let Some(value) = o.get_nonempty(key) else {
            continue;
        };
        if !matches!(value, "3.0" | "3.2" | "latest") {
            return Err(Error::InvalidValue {
                key,
                value: value.to_owned(),
            });
        }
        if key == "min_protocol_version" && value != "3.0" {
            return Err(Error::UnsupportedValue {
                key,
                value: value.to_owned(),
                reason: "only protocol version 3.0 is spoken",
            });
        }
    }
    Ok(())
}
