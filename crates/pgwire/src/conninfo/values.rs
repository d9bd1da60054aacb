//! Interpreting single option values: integers the way libpq's
//! `pqParseIntParam` reads them, the enumerated options, and
//! `require_auth`.

use std::time::Duration;

use super::parse::is_c_space;
use super::{
    ChannelBinding, Error, SslCertMode, SslMode, SslNegotiation, SslProtocolVersion,
    TargetSessionAttrs,
};

/// An integer as `strtol` base 10 reads it, with leading and trailing
/// white space allowed and nothing else; `None` if it is not one or does
/// not fit in 32 bits.
pub(crate) fn c_int(value: &str) -> Option<i32> {
    let b = value.as_bytes();
    let mut start = 0;
    while start < b.len() && is_c_space(b[start]) {
        start += 1;
    }
    let mut end = b.len();
    while end > start && is_c_space(b[end - 1]) {
        end -= 1;
    }
    let text = &value[start..end];
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    text.parse::<i64>().ok().and_then(|n| i32::try_from(n).ok())
}

/// [`c_int`] or libpq's `invalid integer value` error naming `key`.
pub(crate) fn int_option(key: &'static str, value: &str) -> Result<i32, Error> {
    c_int(value).ok_or_else(|| Error::InvalidInteger {
        key,
        value: value.to_owned(),
    })
}

/// The TCP socket options as written: `keepalives`, `keepalives_idle`,
/// `keepalives_interval`, `keepalives_count`, `tcp_user_timeout`.
///
/// libpq reads them only as it opens a TCP socket, in that order, and a
/// bad value fails that attempt (the next address or host is tried), so a
/// connection over a Unix socket never looks at them. With keepalives
/// off, the others, `tcp_user_timeout` included, are not read or applied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TcpOptions {
    pub keepalives: Option<String>,
    pub keepalives_idle: Option<String>,
    pub keepalives_interval: Option<String>,
    pub keepalives_count: Option<String>,
    pub tcp_user_timeout: Option<String>,
}

impl TcpOptions {
    /// Whether to turn keepalives on: unless `keepalives` is an integer
    /// equal to 0 (any other integer, negative ones too, means on).
    pub fn keepalives(&self) -> Result<bool, Error> {
        match self.keepalives.as_deref() {
            None => Ok(true),
            Some(v) => Ok(int_option("keepalives", v)? != 0),
        }
    }

    /// `keepalives_idle` in seconds (negative counts as 0).
    pub fn idle(&self) -> Result<Option<Duration>, Error> {
        non_negative("keepalives_idle", &self.keepalives_idle).map(|n| n.map(Duration::from_secs))
    }

    /// `keepalives_interval` in seconds (negative counts as 0).
    pub fn interval(&self) -> Result<Option<Duration>, Error> {
        non_negative("keepalives_interval", &self.keepalives_interval)
            .map(|n| n.map(Duration::from_secs))
    }

    /// `keepalives_count` (negative counts as 0).
    pub fn count(&self) -> Result<Option<u32>, Error> {
        non_negative("keepalives_count", &self.keepalives_count).map(|n| n.map(|n| n as u32))
    }

    /// `tcp_user_timeout` in milliseconds (negative counts as 0).
    pub fn user_timeout(&self) -> Result<Option<Duration>, Error> {
        non_negative("tcp_user_timeout", &self.tcp_user_timeout)
            .map(|n| n.map(Duration::from_millis))
    }
}

/// An integer option clamped at 0, as libpq's socket-option setters do.
fn non_negative(key: &'static str, value: &Option<String>) -> Result<Option<u64>, Error> {
    match value.as_deref() {
        None => Ok(None),
        Some(v) => Ok(Some(int_option(key, v)?.max(0) as u64)),
    }
}

fn invalid(key: &'static str, value: &str) -> Error {
    Error::InvalidValue {
        key,
        value: value.to_owned(),
    }
}

pub(crate) fn sslmode(value: &str) -> Result<SslMode, Error> {
    Ok(match value {
        "disable" => SslMode::Disable,
        "allow" => SslMode::Allow,
        "prefer" => SslMode::Prefer,
        "require" => SslMode::Require,
        "verify-ca" => SslMode::VerifyCa,
        "verify-full" => SslMode::VerifyFull,
        _ => return Err(invalid("sslmode", value)),
    })
}

pub(crate) fn sslnegotiation(value: &str) -> Result<SslNegotiation, Error> {
    match value {
        "postgres" => Ok(SslNegotiation::Postgres),
        "direct" => Ok(SslNegotiation::Direct),
        _ => Err(invalid("sslnegotiation", value)),
    }
}

pub(crate) fn channel_binding(value: &str) -> Result<ChannelBinding, Error> {
    match value {
        "disable" => Ok(ChannelBinding::Disable),
        "prefer" => Ok(ChannelBinding::Prefer),
        "require" => Ok(ChannelBinding::Require),
        _ => Err(invalid("channel_binding", value)),
    }
}

pub(crate) fn sslcertmode(value: &str) -> Result<SslCertMode, Error> {
    match value {
        "disable" => Ok(SslCertMode::Disable),
        "allow" => Ok(SslCertMode::Allow),
        "require" => Ok(SslCertMode::Require),
        _ => Err(invalid("sslcertmode", value)),
    }
}

pub(crate) fn target_session_attrs(value: &str) -> Result<TargetSessionAttrs, Error> {
    Ok(match value {
        "any" => TargetSessionAttrs::Any,
        "read-write" => TargetSessionAttrs::ReadWrite,
        "read-only" => TargetSessionAttrs::ReadOnly,
        "primary" => TargetSessionAttrs::Primary,
        "standby" => TargetSessionAttrs::Standby,
        "prefer-standby" => TargetSessionAttrs::PreferStandby,
        _ => return Err(invalid("target_session_attrs", value)),
    })
}

/// `ssl_min_protocol_version` / `ssl_max_protocol_version`: case-insensitive;
/// empty means unset.
pub(crate) fn ssl_protocol_version(
    key: &'static str,
    value: &str,
) -> Result<Option<SslProtocolVersion>, Error> {
    let v = match value.to_ascii_lowercase().as_str() {
        "" => return Ok(None),
        "tlsv1" => SslProtocolVersion::Tls1,
        "tlsv1.1" => SslProtocolVersion::Tls1_1,
        "tlsv1.2" => SslProtocolVersion::Tls1_2,
        "tlsv1.3" => SslProtocolVersion::Tls1_3,
        _ => return Err(invalid(key, value)),
    };
    Ok(Some(v))
}

/// An authentication request `require_auth` can allow or refuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthMethod {
    /// Cleartext password.
    Password,
    Md5,
    Gss,
    Sspi,
    /// A SASL request, whatever its mechanisms: allowed when `require_auth`
    /// allows any SASL mechanism (`scram-sha-256` or `oauth`), as libpq 18
    /// decides before it picks one.
    ScramSha256,
}

impl AuthMethod {
    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A SASL mechanism `require_auth` can name. pgbolt speaks only
/// SCRAM-SHA-256 (with or without channel binding); `oauth` is accepted in
/// the list so that a libpq 18 `require_auth` means the same here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SaslMechanism {
    ScramSha256,
    OAuthBearer,
}

impl SaslMechanism {
    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

const ALL_MECHANISMS: u8 = 0b11;

/// What `require_auth` allows, in libpq's terms: a set of allowed methods,
/// a set of allowed SASL mechanisms and whether the server must ask for
/// authentication at all (`none`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AuthRequirement {
    allowed: u8,
    mechanisms: u8,
    auth_required: bool,
}

impl Default for AuthRequirement {
    /// No `require_auth`: every method, and no authentication, is allowed.
    fn default() -> Self {
        AuthRequirement {
            allowed: u8::MAX,
            mechanisms: ALL_MECHANISMS,
            auth_required: false,
        }
    }
}

impl AuthRequirement {
    /// Whether the server may authenticate the client with `method`.
    pub fn allows(&self, method: AuthMethod) -> bool {
        match method {
            AuthMethod::ScramSha256 => self.mechanisms != 0,
            _ => self.allowed & method.bit() != 0,
        }
    }

    /// Whether the SASL exchange may use `mechanism` once it is chosen.
    pub fn allows_mechanism(&self, mechanism: SaslMechanism) -> bool {
        self.mechanisms & mechanism.bit() != 0
    }

    /// Whether a server that asks for no authentication (trust, or a
    /// certificate only) is acceptable.
    pub fn allows_no_authentication(&self) -> bool {
        !self.auth_required
    }

    /// Parses a `require_auth` list with libpq's rules: all methods negated
    /// (`!md5,!password`) or none; no method twice; `none` allowed.
    pub fn parse(value: &str) -> Result<AuthRequirement, Error> {
        if value.is_empty() {
            return Ok(AuthRequirement::default());
        }
        let mut req = AuthRequirement {
            allowed: 0,
            mechanisms: 0,
            auth_required: true,
        };
        let mut negated = false;
        for (i, part) in value.split(',').enumerate() {
            let method = match part.strip_prefix('!') {
                Some(rest) => {
                    if i == 0 {
                        req = AuthRequirement::default();
                    } else if !negated {
                        return Err(Error::RequireAuthNegativeMixed {
                            method: part.to_owned(),
                        });
                    }
                    negated = true;
                    rest
                }
                None if negated => {
                    return Err(Error::RequireAuthPositiveMixed {
                        method: part.to_owned(),
                    })
                }
                None => part,
            };
            let duplicate = || Error::RequireAuthDuplicate {
                method: part.to_owned(),
            };
            let (set, bit) = match method {
                "password" => (&mut req.allowed, AuthMethod::Password.bit()),
                "md5" => (&mut req.allowed, AuthMethod::Md5.bit()),
                "gss" => (&mut req.allowed, AuthMethod::Gss.bit()),
                "sspi" => (&mut req.allowed, AuthMethod::Sspi.bit()),
                "scram-sha-256" => (&mut req.mechanisms, SaslMechanism::ScramSha256.bit()),
                "oauth" => (&mut req.mechanisms, SaslMechanism::OAuthBearer.bit()),
                "none" => {
                    if req.auth_required == negated {
                        return Err(duplicate());
                    }
                    req.auth_required = negated;
                    continue;
                }
                _ => return Err(invalid("require_auth", method)),
            };
            // Negated lists start from everything and remove; positive
            // ones start from nothing and add. Either way, a change that
            // changes nothing means the method was named twice.
            if (*set & bit != 0) != negated {
                return Err(duplicate());
            }
            *set ^= bit;
        }
        Ok(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_like_strtol() {
        let cases = [
            ("10", Some(10)),
            ("  10 ", Some(10)),
            ("\t-3\n", Some(-3)),
            ("+7", Some(7)),
            ("2147483647", Some(i32::MAX)),
            ("2147483648", None),
            ("", None),
            (" ", None),
            ("1x", None),
            ("1 2", None),
            ("0x10", None),
            ("-", None),
        ];
        for (input, want) in cases {
            assert_eq!(c_int(input), want, "{input:?}");
        }
    }

    #[test]
    fn tcp_option_values() {
        let on = |v: &str| {
            TcpOptions {
                keepalives: Some(v.to_owned()),
                ..TcpOptions::default()
            }
            .keepalives()
            .map_err(|e| e.to_string())
        };
        let cases = [
            ("1", Ok(true)),
            ("0", Ok(false)),
            (" 5", Ok(true)),
            ("00", Ok(false)),
            ("-1", Ok(true)),
            // White space around the number is allowed, as libpq allows it
            // for every integer option.
            ("1 ", Ok(true)),
            (" 0 ", Ok(false)),
        ];
        for (input, want) in cases {
            assert_eq!(on(input), want, "{input:?}");
        }
        for bad in ["", "yes", "1x", "99999999999"] {
            assert_eq!(
                on(bad),
                Err(format!(
                    "invalid integer value \"{bad}\" for connection option \"keepalives\""
                ))
            );
        }
        assert_eq!(TcpOptions::default().keepalives().ok(), Some(true));
        let o = TcpOptions {
            keepalives_idle: Some("30".into()),
            keepalives_interval: Some("-1".into()),
            keepalives_count: Some("4".into()),
            tcp_user_timeout: Some("1500".into()),
            ..TcpOptions::default()
        };
        assert_eq!(o.idle().ok(), Some(Some(Duration::from_secs(30))));
        assert_eq!(o.interval().ok(), Some(Some(Duration::ZERO)));
        assert_eq!(o.count().ok(), Some(Some(4)));
        assert_eq!(
            o.user_timeout().ok(),
            Some(Some(Duration::from_millis(1500)))
        );
        let soon = TcpOptions {
            keepalives_idle: Some("soon".into()),
            ..TcpOptions::default()
        };
        assert_eq!(
            soon.idle().map_err(|e| e.to_string()),
            Err("invalid integer value \"soon\" for connection option \"keepalives_idle\"".into())
        );
    }

    #[test]
    fn require_auth_lists() {
        use AuthMethod::*;
        let r = AuthRequirement::parse("scram-sha-256").expect("valid");
        assert!(r.allows(ScramSha256) && !r.allows(Md5) && !r.allows_no_authentication());
        let r = AuthRequirement::parse("!password,!md5").expect("valid");
        assert!(r.allows(ScramSha256) && !r.allows(Md5) && !r.allows(Password));
        assert!(r.allows_no_authentication());
        let r = AuthRequirement::parse("md5,none").expect("valid");
        assert!(r.allows(Md5) && r.allows_no_authentication());
        let r = AuthRequirement::parse("!none").expect("valid");
        assert!(r.allows(Md5) && !r.allows_no_authentication());
        let r = AuthRequirement::parse("!scram-sha-256").expect("valid");
        assert!(r.allows(ScramSha256) && !r.allows_mechanism(SaslMechanism::ScramSha256));
        assert!(r.allows_mechanism(SaslMechanism::OAuthBearer));
        let r = AuthRequirement::parse("!scram-sha-256,!oauth").expect("valid");
        assert!(!r.allows(ScramSha256) && r.allows(Password));
        let r = AuthRequirement::parse("oauth").expect("valid");
        assert!(r.allows(ScramSha256) && !r.allows_mechanism(SaslMechanism::ScramSha256));
        let r = AuthRequirement::parse("password").expect("valid");
        assert!(!r.allows(ScramSha256));
        let errors = [
            ("md5,!password", "negative require_auth method \"!password\" cannot be mixed with non-negative methods"),
            ("!md5,password", "require_auth method \"password\" cannot be mixed with negative methods"),
            ("md5,md5", "require_auth method \"md5\" is specified more than once"),
            ("!none,!none", "require_auth method \"!none\" is specified more than once"),
            ("none,none", "require_auth method \"none\" is specified more than once"),
            ("oauth,oauth", "require_auth method \"oauth\" is specified more than once"),
            ("!oauth,!oauth", "require_auth method \"!oauth\" is specified more than once"),
            ("kerberos", "invalid require_auth value: \"kerberos\""),
            ("md5,", "invalid require_auth value: \"\""),
        ];
        for (input, want) in errors {
            let err = AuthRequirement::parse(input).expect_err(input);
            assert_eq!(err.to_string(), want, "{input:?}");
        }
    }

    #[test]
    fn enumerated_values_name_key_and_value() {
        assert_eq!(
            sslmode("x").unwrap_err().to_string(),
            "invalid sslmode value: \"x\""
        );
        assert_eq!(
            target_session_attrs("readwrite").unwrap_err().to_string(),
            "invalid target_session_attrs value: \"readwrite\""
        );
        assert_eq!(
            ssl_protocol_version("ssl_min_protocol_version", "TLSv2")
                .unwrap_err()
                .to_string(),
            "invalid ssl_min_protocol_version value: \"TLSv2\""
        );
        assert_eq!(
            ssl_protocol_version("ssl_max_protocol_version", "tlsV1.3").expect("valid"),
            Some(SslProtocolVersion::Tls1_3)
        );
    }
}
