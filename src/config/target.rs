//! `--target=NAME=CONNINFO`: a named place to run the benchmark.

use std::fmt;

/// The longest target name: it heads a column of the reports.
const MAX_NAME: usize = 24;

/// One target: its name and its connection string or URI, as given.
#[derive(Clone, PartialEq, Eq)]
pub struct Target {
    pub name: String,
    /// libpq semantics: a `key=value` string or a URI; the command line's
    /// `-h`, `-p`, `-U` fill in what it leaves out.
    pub conninfo: String,
    /// The pooler's process when pgbolt started it (`--temp-pgbouncer`),
    /// for its CPU.
    pub pid: Option<i32>,
}

impl Target {
    /// The connection string with its passwords replaced, for showing.
    pub fn shown(&self) -> String {
        pgwire::conninfo::redact(&self.conninfo)
    }
}

/// `text` with every password hidden: a connection string or URI, or a
/// target's `NAME=CONNINFO`, whose URI a connection string's parser
/// would take for the value of a key named NAME.
pub fn redact(text: &str) -> String {
    if let Some((name, rest)) = text.split_once('=') {
        if rest.starts_with("postgresql://") || rest.starts_with("postgres://") {
            return format!("{name}={}", pgwire::conninfo::redact(rest));
        }
    }
    pgwire::conninfo::redact(text)
}

/// Never the password.
impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Target")
            .field("name", &self.name)
            .field("conninfo", &self.shown())
            .finish()
    }
}

/// Parses `NAME=CONNINFO`; the error is the reason, for the command line.
pub fn parse_target(text: &str) -> Result<Target, String> {
    let (name, conninfo) = text
        .split_once('=')
        .ok_or("expected NAME=CONNINFO, such as direct=\"host=db1 port=5432\"")?;
    if name.is_empty()
        || name.len() > MAX_NAME
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "a target's name is 1 to {MAX_NAME} letters, digits, - or _ (got \"{name}\")"
        ));
    }
    if conninfo.trim().is_empty() {
        return Err(format!("target \"{name}\" has no connection string"));
    }
    if !pgwire::conninfo::is_connection_string(conninfo) {
        return Err(format!(
            "target \"{name}\": \"{conninfo}\" is not a connection string (key=value) or URI"
        ));
    }
    pgwire::conninfo::parse(conninfo)
        .map_err(|e| format!("target \"{name}\": {e}"))
        .map(|_| Target {
            name: name.to_owned(),
            conninfo: conninfo.to_owned(),
            pid: None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_never_show_their_password() {
        let t = parse_target("pool=host=/tmp port=6432 password=s3cret").unwrap();
        assert_eq!(t.name, "pool");
        assert_eq!(t.conninfo, "host=/tmp port=6432 password=s3cret");
        assert!(!format!("{t:?}").contains("s3cret"));
        assert!(!t.shown().contains("s3cret"));
        let uri = parse_target("db=postgresql://u:s3cret@h:5432/bench").unwrap();
        assert!(!uri.shown().contains("s3cret"), "{}", uri.shown());
        for (bad, why) in [
            ("direct", "expected NAME=CONNINFO"),
            ("=host=x", "1 to 24 letters"),
            ("a b=host=x", "1 to 24 letters"),
            ("x=", "no connection string"),
            ("x=bench", "not a connection string"),
            ("x=host='unclosed", "target \"x\""),
        ] {
            let err = parse_target(bad).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }
}
