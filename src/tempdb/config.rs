//! The server configuration files we write: `pg_hba.conf` (replaced) and
//! `pgbolt.conf` (included from the end of `postgresql.conf`, so our values
//! win over initdb's; rewritten and reloaded to switch certificates).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::os::{self, ServerOwner};
use super::{AuthMethod, Error, PasswordEncryption};

/// Settings that make a throwaway server fast; each can be overridden.
const FAST_DEFAULTS: [(&str, &str); 4] = [
    ("fsync", "off"),
    ("synchronous_commit", "off"),
    ("full_page_writes", "off"),
    ("shared_buffers", "32MB"),
];

/// The certificate files the server is pointed at.
#[derive(Debug, Clone)]
pub(crate) struct ServerSsl {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub ca: PathBuf,
}

/// Everything that goes into `pgbolt.conf`.
#[derive(Debug, Clone)]
pub(crate) struct ServerConfig {
    pub port: u16,
    pub tcp: bool,
    pub socket_dir: PathBuf,
    pub password_encryption: PasswordEncryption,
    pub ssl: Option<ServerSsl>,
    /// Whether [`FAST_DEFAULTS`] are written.
    pub fast_settings: bool,
    /// The caller's `name = value` pairs, written last.
    pub settings: Vec<(String, String)>,
}

impl ServerConfig {
    fn render(&self) -> String {
        let mut out = String::from("# Written by pgbolt's throwaway-instance module.\n");
        let listen = if self.tcp { "127.0.0.1" } else { "" };
        let socket_dir = self.socket_dir.to_string_lossy();
        let port = self.port.to_string();
        let mut line = |name: &str, value: &str| {
            let _ = writeln!(out, "{name} = {}", quote_value(value));
        };
        line("listen_addresses", listen);
        line("port", &port);
        line("unix_socket_directories", &socket_dir);
        line("password_encryption", self.password_encryption.setting());
        if self.fast_settings {
            for (name, value) in FAST_DEFAULTS {
                line(name, value);
            }
        }
        if let Some(ssl) = &self.ssl {
            line("ssl", "on");
            line("ssl_cert_file", &ssl.cert.to_string_lossy());
            line("ssl_key_file", &ssl.key.to_string_lossy());
            line("ssl_ca_file", &ssl.ca.to_string_lossy());
        }
        for (name, value) in &self.settings {
            line(name, value);
        }
        out
    }

    /// Writes `pgbolt.conf` into `data_dir`.
    pub fn write(&self, data_dir: &Path, owner: &ServerOwner) -> Result<(), Error> {
        let path = data_dir.join(super::cluster::PGBOLT_CONF);
        os::write_file(&path, self.render().as_bytes(), 0o600)?;
        owner.chown(&path)
    }
}

/// Appends the include of `pgbolt.conf` to a fresh `postgresql.conf`.
pub(crate) fn include_pgbolt_conf(data_dir: &Path) -> Result<(), Error> {
    use std::io::Write;
    let path = data_dir.join("postgresql.conf");
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
    writeln!(file, "\ninclude '{}'", super::cluster::PGBOLT_CONF)
        .map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

/// Replaces `pg_hba.conf`: one line for the socket, one per loopback address.
pub(crate) fn write_hba(
    data_dir: &Path,
    owner: &ServerOwner,
    local: AuthMethod,
    host: AuthMethod,
    host_ssl_only: bool,
) -> Result<(), Error> {
    let kind = if host_ssl_only { "hostssl" } else { "host" };
    let mut text = String::from("# Written by pgbolt's throwaway-instance module.\n");
    let _ = writeln!(text, "local all all {}", local.hba_keyword());
    for address in ["127.0.0.1/32", "::1/128"] {
        let _ = writeln!(text, "{kind} all all {address} {}", host.hba_keyword());
    }
    let path = data_dir.join("pg_hba.conf");
    os::write_file(&path, text.as_bytes(), 0o600)?;
    owner.chown(&path)
}

/// A value in `postgresql.conf` syntax: single-quoted, with `'` and `\`
/// escaped.
fn quote_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('\'');
    for c in value.chars() {
        match c {
            '\'' => out.push_str("''"),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Checks a setting before it reaches the file: names are identifiers
/// (letters, digits, `_`, and `.` for extension settings) and not one of
/// the `include` directives; values are one line.
pub(crate) fn check_setting(name: &str, value: &str) -> Result<(), Error> {
    let name_ok = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    if !name_ok {
        return Err(Error::InvalidOption {
            option: "server setting",
            reason: format!("\"{name}\" is not a valid parameter name"),
        });
    }
    // Not settings but directives of the file format: they would read
    // another file into the configuration.
    if ["include", "include_if_exists", "include_dir"]
        .iter()
        .any(|directive| name.eq_ignore_ascii_case(directive))
    {
        return Err(Error::InvalidOption {
            option: "server setting",
            reason: format!("\"{name}\" is a configuration file directive, not a setting"),
        });
    }
    if value.contains(['\n', '\r', '\0']) {
        return Err(Error::InvalidOption {
            option: "server setting",
            reason: format!("the value of \"{name}\" must be a single line"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_quoted_for_postgresql_conf() {
        let cases = [
            ("off", "'off'"),
            ("", "''"),
            ("it's", "'it''s'"),
            ("a\\b", "'a\\\\b'"),
            ("/tmp/x y", "'/tmp/x y'"),
        ];
        for (value, want) in cases {
            assert_eq!(quote_value(value), want, "{value:?}");
        }
    }

    #[test]
    fn setting_names_and_values_are_checked() {
        let cases = [
            ("max_connections", "10", true),
            ("pg_stat_statements.max", "100", true),
            ("_x", "1", true),
            ("", "1", false),
            ("1abc", "1", false),
            ("work mem", "1", false),
            ("a=b", "1", false),
            ("work_mem", "1\nfsync = on", false),
            ("include", "/etc/passwd", false),
            ("Include_Dir", "/etc", false),
            ("include_if_exists", "x.conf", false),
        ];
        for (name, value, ok) in cases {
            assert_eq!(check_setting(name, value).is_ok(), ok, "{name:?}={value:?}");
        }
    }

    #[test]
    fn user_settings_come_after_defaults() {
        let config = ServerConfig {
            port: 5432,
            tcp: false,
            socket_dir: PathBuf::from("/tmp/s"),
            password_encryption: PasswordEncryption::ScramSha256,
            ssl: None,
            fast_settings: true,
            settings: vec![("fsync".to_string(), "on".to_string())],
        };
        let text = config.render();
        let default = text.find("fsync = 'off'").unwrap();
        let user = text.find("fsync = 'on'").unwrap();
        assert!(default < user, "{text}");
        assert!(text.contains("listen_addresses = ''"), "{text}");
    }

    #[test]
    fn without_fast_settings_the_server_keeps_its_defaults() {
        let config = ServerConfig {
            port: 5432,
            tcp: false,
            socket_dir: PathBuf::from("/tmp/s"),
            password_encryption: PasswordEncryption::ScramSha256,
            ssl: None,
            fast_settings: false,
            settings: Vec::new(),
        };
        let text = config.render();
        for (name, _) in FAST_DEFAULTS {
            assert!(!text.contains(name), "{name} in {text}");
        }
    }
}
