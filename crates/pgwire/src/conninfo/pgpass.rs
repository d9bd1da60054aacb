//! The password file (`~/.pgpass`, `PGPASSFILE`, `passfile`).
//!
//! Each line is `host:port:database:user:password`; a field that is
//! exactly `*` matches anything, `\:` and `\\` stand for `:` and `\`, lines
//! starting with `#` are comments, and the first matching line wins (an
//! empty password there means none, as libpq discards it). As in
//! libpq, the host `localhost` also matches a Unix-socket connection to the
//! default socket directory (compared as text, without canonicalizing the
//! path), and a file that group or others may access is ignored with a
//! warning. Host and port are compared as the user wrote them (see
//! [`HostSpelling`](super::HostSpelling)), as libpq does. Warnings are handed
//! back to the caller, never printed.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::{Config, Host, HostKind, Secret};

impl Config {
    /// The password to use for `host`: the `password` option if set, else
    /// the first matching line of the password file. The connection code
    /// calls this once per host attempt; any warning about the password
    /// file is appended to `warnings` (libpq's wording, without newline).
    pub fn password_for(&self, host: &Host, warnings: &mut Vec<String>) -> Option<Secret> {
        if let Some(password) = &self.password {
            return Some(password.clone());
        }
        let file = self.passfile.as_deref()?;
        let spelling = self
            .hosts
            .iter()
            .position(|h| std::ptr::eq(h, host))
            .and_then(|i| self.host_spellings.get(i))
            .filter(|s| s.host == *host);
        let (host_name, port) = match spelling {
            Some(s) => (s.name.clone(), s.port.clone()),
            None => (parsed_name(host), host.port.to_string()),
        };
        let default_dir = self.default_socket_dir.to_string_lossy();
        let host_name = if host_name.is_empty()
            || (host_name.starts_with(['/', '@']) && host_name == default_dir)
        {
            "localhost".to_owned()
        } else {
            host_name
        };
        lookup(file, &host_name, &port, &self.dbname, &self.user, warnings)
    }
}

/// The password file's host key for an entry known only by its parsed
/// values.
fn parsed_name(host: &Host) -> String {
    match &host.kind {
        HostKind::Unix(dir) => dir.to_string_lossy().into_owned(),
        HostKind::Tcp {
            name: Some(name), ..
        } => name.clone(),
        HostKind::Tcp {
            name: None,
            addr: Some(addr),
        } => addr.to_string(),
        HostKind::Tcp {
            name: None,
            addr: None,
        } => String::new(),
    }
}

/// Looks `host:port:dbname:user` up in the password file at `path`.
/// A missing file is silently no match; an unsafe one is a warning.
pub(crate) fn lookup(
    path: &Path,
    host: &str,
    port: &str,
    dbname: &str,
    user: &str,
    warnings: &mut Vec<String>,
) -> Option<Secret> {
    if dbname.is_empty() || user.is_empty() {
        return None;
    }
    let meta = fs::metadata(path).ok()?;
    if !meta.is_file() {
        warnings.push(format!(
            "WARNING: password file \"{}\" is not a plain file",
            path.display()
        ));
        return None;
    }
    if meta.permissions().mode() & 0o077 != 0 {
        warnings.push(format!(
            "WARNING: password file \"{}\" has group or world access; permissions should be u=rw (0600) or less",
            path.display()
        ));
        return None;
    }
    let contents = fs::read(path).ok()?;
    for line in contents.split(|b| *b == b'\n') {
        if line.first() == Some(&b'#') {
            continue;
        }
        let mut end = line.len();
        while end > 0 && matches!(line[end - 1], b'\r' | b'\n') {
            end -= 1;
        }
        let line = &line[..end];
        if line.is_empty() {
            continue;
        }
        let rest = [host, port, dbname, user]
            .iter()
            .try_fold(line, |rest, token| match_field(rest, token.as_bytes()));
        if let Some(rest) = rest {
            // The first matching line decides; an empty password there
            // means no password at all, as libpq discards it.
            let password = unescape_password(rest);
            return (!password.is_empty()).then(|| Secret::from_bytes(password));
        }
    }
    None
}

/// Matches the first field of `line` against `token`; on a match returns
/// the rest of the line after the field's `:`.
fn match_field<'a>(line: &'a [u8], token: &[u8]) -> Option<&'a [u8]> {
    if line.starts_with(b"*:") {
        return Some(&line[2..]);
    }
    let mut i = 0;
    let mut t = 0;
    while i < line.len() {
        let escaped = line[i] == b'\\';
        if escaped {
            i += 1;
        }
        let c = line.get(i).copied();
        if c == Some(b':') && !escaped && t == token.len() {
            return Some(&line[i + 1..]);
        }
        if t == token.len() || c != Some(token[t]) {
            return None;
        }
        i += 1;
        t += 1;
    }
    None
}

/// The password field: up to the first unescaped `:`, escapes removed,
/// bytes as they are (libpq does not ask for UTF-8).
fn unescape_password(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() && field[i] != b':' {
        if field[i] == b'\\' && i + 1 < field.len() {
            i += 1;
        }
        out.push(field[i]);
        i += 1;
    }
    out
}
