//! The option keywords libpq knows, and a bag of raw option values.
//!
//! The keyword table mirrors libpq's (PostgreSQL 18): every keyword libpq
//! accepts is accepted here too, so a connection string that works with
//! `pgbench` never fails with "invalid connection option". Whether pgbolt
//! *implements* an option is decided later, in resolution, where an option
//! it cannot honour is rejected by name.

use std::collections::BTreeMap;
use std::fmt;

use super::Error;

/// One keyword: its name, its environment variable and its compiled-in
/// default, as in libpq's option table.
#[derive(Debug)]
pub(crate) struct Keyword {
    pub name: &'static str,
    pub env: Option<&'static str>,
    pub default: Option<&'static str>,
}

const fn kw(
    name: &'static str,
    env: Option<&'static str>,
    default: Option<&'static str>,
) -> Keyword {
    Keyword { name, env, default }
}

/// libpq's keywords, in libpq's order. `gssencmode` defaults to `disable`
/// as in a libpq built without GSSAPI, which pgbolt resembles.
pub(crate) const KEYWORDS: &[Keyword] = &[
    kw("service", Some("PGSERVICE"), None),
    kw("servicefile", None, None),
    kw("user", Some("PGUSER"), None),
    kw("password", Some("PGPASSWORD"), None),
    kw("passfile", Some("PGPASSFILE"), None),
    kw("channel_binding", Some("PGCHANNELBINDING"), Some("prefer")),
    kw("connect_timeout", Some("PGCONNECT_TIMEOUT"), None),
    kw("dbname", Some("PGDATABASE"), None),
    kw("host", Some("PGHOST"), None),
    kw("hostaddr", Some("PGHOSTADDR"), None),
    kw("port", Some("PGPORT"), Some("5432")),
    kw("client_encoding", Some("PGCLIENTENCODING"), None),
    kw("options", Some("PGOPTIONS"), Some("")),
    kw("application_name", Some("PGAPPNAME"), None),
    kw("fallback_application_name", None, None),
    kw("keepalives", None, None),
    kw("keepalives_idle", None, None),
    kw("keepalives_interval", None, None),
    kw("keepalives_count", None, None),
    kw("tcp_user_timeout", None, None),
    kw("sslmode", Some("PGSSLMODE"), Some("prefer")),
    kw("sslnegotiation", Some("PGSSLNEGOTIATION"), Some("postgres")),
    kw("sslcompression", Some("PGSSLCOMPRESSION"), Some("0")),
    kw("sslcert", Some("PGSSLCERT"), None),
    kw("sslkey", Some("PGSSLKEY"), None),
    kw("sslcertmode", Some("PGSSLCERTMODE"), Some("allow")),
    kw("sslpassword", None, None),
    kw("sslkeylogfile", None, None),
    kw("sslrootcert", Some("PGSSLROOTCERT"), None),
    kw("sslcrl", Some("PGSSLCRL"), None),
    kw("sslcrldir", Some("PGSSLCRLDIR"), None),
    kw("sslsni", Some("PGSSLSNI"), Some("1")),
    kw("requirepeer", Some("PGREQUIREPEER"), None),
    kw("require_auth", Some("PGREQUIREAUTH"), None),
    kw(
        "ssl_min_protocol_version",
        Some("PGSSLMINPROTOCOLVERSION"),
        Some("TLSv1.2"),
    ),
    kw(
        "ssl_max_protocol_version",
        Some("PGSSLMAXPROTOCOLVERSION"),
        None,
    ),
    kw("min_protocol_version", Some("PGMINPROTOCOLVERSION"), None),
    kw("max_protocol_version", Some("PGMAXPROTOCOLVERSION"), None),
    kw("gssencmode", Some("PGGSSENCMODE"), Some("disable")),
    kw("krbsrvname", Some("PGKRBSRVNAME"), None),
    kw("gsslib", Some("PGGSSLIB"), None),
    kw("gssdelegation", Some("PGGSSDELEGATION"), Some("0")),
    kw("replication", None, None),
    kw(
        "target_session_attrs",
        Some("PGTARGETSESSIONATTRS"),
        Some("any"),
    ),
    kw(
        "load_balance_hosts",
        Some("PGLOADBALANCEHOSTS"),
        Some("disable"),
    ),
    kw("scram_client_key", None, None),
    kw("scram_server_key", None, None),
    kw("oauth_issuer", None, None),
    kw("oauth_client_id", None, None),
    kw("oauth_client_secret", None, None),
    kw("oauth_scope", None, None),
];

/// Keywords whose values are secrets and are never shown.
const SECRET_KEYWORDS: &[&str] = &[
    "password",
    "sslpassword",
    "scram_client_key",
    "scram_server_key",
    "oauth_client_secret",
];

/// The canonical `&'static str` of a known keyword.
pub(crate) fn keyword(name: &str) -> Option<&'static Keyword> {
    KEYWORDS.iter().find(|k| k.name == name)
}

/// Raw option values by keyword, as a connection string, a service file
/// entry or the environment gives them. A key may be present with an empty
/// value: libpq distinguishes "set to empty" (which blocks the environment
/// and service file) from "not set".
///
/// `Debug` shows every value except secrets such as `password`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ConnOptions {
    values: BTreeMap<&'static str, String>,
}

impl ConnOptions {
    pub fn new() -> Self {
        Self::default()
    }

    /// The value of `key`, if set (possibly empty).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// The value of `key` if set and not empty.
    pub fn get_nonempty(&self, key: &str) -> Option<&str> {
        self.get(key).filter(|v| !v.is_empty())
    }

    /// Sets `key`, replacing any earlier value. Unknown keys are refused
    /// with libpq's `invalid connection option` error.
    pub fn set(&mut self, key: &str, value: impl Into<String>) -> Result<(), Error> {
        let k = keyword(key).ok_or_else(|| Error::InvalidOption {
            key: key.to_owned(),
        })?;
        self.values.insert(k.name, value.into());
        Ok(())
    }

    /// Sets `key` only if it has no value yet (the way a service file and
    /// the environment fill gaps). Returns false for an unknown key.
    pub(crate) fn set_if_absent(&mut self, key: &str, value: &str) -> bool {
        match keyword(key) {
            Some(k) => {
                self.values
                    .entry(k.name)
                    .or_insert_with(|| value.to_owned());
                true
            }
            None => false,
        }
    }

    pub(crate) fn contains(&self, key: &str) -> bool {
        self.values.contains_key(key)
    }

    /// The keys that are set, with their values.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.values.iter().map(|(k, v)| (*k, v.as_str()))
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Overwrites this bag's values with every value set in `other`.
    pub(crate) fn override_with(&mut self, other: &ConnOptions) {
        for (k, v) in &other.values {
            self.values.insert(k, v.clone());
        }
    }
}

impl fmt::Debug for ConnOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for (k, v) in &self.values {
            if SECRET_KEYWORDS.contains(k) {
                map.entry(k, &"****");
            } else {
                map.entry(k, v);
            }
        }
        map.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_redacts_every_secret() {
        let mut o = ConnOptions::new();
        for key in SECRET_KEYWORDS {
            o.set(key, "hunter2").expect("known keyword");
        }
        o.set("user", "alice").expect("known keyword");
        let shown = format!("{o:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("alice"), "{shown}");
    }

    #[test]
    fn unknown_key_is_refused_by_name() {
        let err = ConnOptions::new().set("colour", "blue").unwrap_err();
        assert_eq!(err.to_string(), "invalid connection option \"colour\"");
    }

    #[test]
    fn every_secret_keyword_is_a_keyword() {
        for key in SECRET_KEYWORDS {
            assert!(keyword(key).is_some(), "{key}");
        }
    }
}
