//! Connection strings in `key=value` form, and libpq's "expand dbname"
//! merge of explicit keyword/value pairs.
//!
//! The scanner follows libpq's byte for byte: keys end at `=` or white
//! space; a value is either a run of non-space characters or a single-quoted
//! string; a backslash takes the next character literally in both. There is
//! no separator between pairs other than optional white space, so
//! `a='x'b=y` is two pairs, exactly as libpq reads it.

use std::ops::Range;

use super::uri;
use super::{ConnOptions, Error};

/// White space as C's `isspace` sees it in the C locale.
pub(crate) fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// True if `s` is a connection string rather than a plain database name:
/// it starts with a URI prefix or contains `=` (libpq's test).
pub fn is_connection_string(s: &str) -> bool {
    uri::prefix_len(s) != 0 || s.contains('=')
}

/// Parses a connection string, `key=value` or URI, into the options it sets
/// (no defaults added), like libpq's `PQconninfoParse`.
pub fn parse(conninfo: &str) -> Result<ConnOptions, Error> {
    if uri::prefix_len(conninfo) != 0 {
        uri::parse(conninfo)
    } else {
        parse_key_value(conninfo)
    }
}

/// `s` as given, with the value of every password in it replaced by
/// `****` when it is a connection string (a URI's `user:password@` and
/// `password` parameters, a `key=value` string's `password` values, quoted
/// or not, even in a string that does not parse), for showing it.
pub fn redact(s: &str) -> String {
    if uri::prefix_len(s) != 0 {
        return uri::redact(s);
    }
    if !s.contains('=') {
        return s.to_owned();
    }
    let b = s.as_bytes();
    let n = b.len();
    let mut out = String::with_capacity(n);
    let mut shown = 0;
    let mut p = 0;
    while let Some((key, value)) = next_key(b, p) {
        let key = &s[key];
        let value_start = match value {
            Ok(start) => start,
            Err(next) => {
                p = next;
                continue;
            }
        };
        p = value_start;
        let quoted = p < n && b[p] == b'\'';
        if quoted {
            p += 1;
        }
        while p < n {
            match b[p] {
                b'\\' => p += 2,
                b'\'' if quoted => {
                    p += 1;
                    break;
                }
                c if !quoted && is_c_space(c) => break,
                _ => p += 1,
            }
        }
        p = p.min(n);
        if key == "password" {
            out.push_str(&s[shown..value_start]);
            out.push_str("****");
            shown = p;
        }
    }
    out.push_str(&s[shown..]);
    out
}

/// The next key of a `key=value` string from `p` on (after any spaces):
/// its range, and where its value starts (after `=` and the spaces around
/// it), or, when no `=` follows the key, where scanning goes on. `None` at
/// the end of the string.
fn next_key(b: &[u8], p: usize) -> Option<(Range<usize>, Result<usize, usize>)> {
    let start = skip_c_spaces(b, p);
    if start >= b.len() {
        return None;
    }
    let mut end = start;
    while end < b.len() && b[end] != b'=' && !is_c_space(b[end]) {
        end += 1;
    }
    let after = skip_c_spaces(b, end);
    let value = if after < b.len() && b[after] == b'=' {
        Ok(skip_c_spaces(b, after + 1))
    } else {
        Err(after)
    };
    Some((start..end, value))
}

/// The first position from `p` on that is not a space (as C's `isspace`).
fn skip_c_spaces(b: &[u8], mut p: usize) -> usize {
    while p < b.len() && is_c_space(b[p]) {
        p += 1;
    }
    p
}

/// Stores one pair as libpq's `conninfo_storeval` does: the obsolete
/// `requiressl` becomes `sslmode`.
pub(crate) fn store(options: &mut ConnOptions, key: &str, value: &str) -> Result<(), Error> {
    if key == "requiressl" {
        let mode = if value.starts_with('1') {
            "require"
        } else {
            "prefer"
        };
        return options.set("sslmode", mode);
    }
    options.set(key, value)
}

fn parse_key_value(conninfo: &str) -> Result<ConnOptions, Error> {
    let b = conninfo.as_bytes();
    let n = b.len();
    let mut options = ConnOptions::new();
    let mut p = 0;
    while let Some((key, value)) = next_key(b, p) {
        let key = &conninfo[key];
        let Ok(start) = value else {
            return Err(Error::MissingEquals {
                key: key.to_owned(),
            });
        };
        p = start;
        let mut value = Vec::new();
        if p < n && b[p] == b'\'' {
            p += 1;
            loop {
                if p >= n {
                    return Err(Error::UnterminatedQuote);
                }
                match b[p] {
                    b'\\' => {
                        p += 1;
                        if p < n {
                            value.push(b[p]);
                            p += 1;
                        }
                    }
                    b'\'' => {
                        p += 1;
                        break;
                    }
                    c => {
                        value.push(c);
                        p += 1;
                    }
                }
            }
        } else {
            while p < n {
                match b[p] {
                    c if is_c_space(c) => {
                        p += 1;
                        break;
                    }
                    b'\\' => {
                        p += 1;
                        if p < n {
                            value.push(b[p]);
                            p += 1;
                        }
                    }
                    c => {
                        value.push(c);
                        p += 1;
                    }
                }
            }
        }
        store(&mut options, key, &String::from_utf8_lossy(&value))?;
    }
    Ok(options)
}

/// Merges explicit keyword/value pairs the way libpq's `PQconnectdbParams`
/// does with `expand_dbname` set: pairs with an empty value are skipped;
/// the first `dbname` whose value is a connection string is replaced by the
/// options that string sets (overriding earlier pairs), and later pairs
/// override it in turn. pgbench passes `host`, `port`, `user`, `password`,
/// `dbname`, `fallback_application_name` in that order, so a connection
/// string given as the dbname argument wins over `-h -p -U`.
pub fn from_params<'a, I>(params: I, expand_dbname: bool) -> Result<ConnOptions, Error>
where
    I: IntoIterator<Item = (&'a str, &'a str)>,
{
    let params: Vec<(&str, &str)> = params.into_iter().collect();
    let mut expanded = None;
    if expand_dbname {
        if let Some((_, value)) = params.iter().find(|(k, _)| *k == "dbname") {
            if is_connection_string(value) {
                expanded = Some(parse(value)?);
            }
        }
    }
    let mut options = ConnOptions::new();
    for (key, value) in params {
        if value.is_empty() {
            continue;
        }
        if key == "dbname" {
            if let Some(expanded) = expanded.take() {
                options.override_with(&expanded);
                continue;
            }
        }
        options.set(key, value)?;
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(o: &ConnOptions) -> Vec<(String, String)> {
        o.iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    fn expect(list: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = list
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn valid_key_value_strings() {
        let cases: &[(&str, &[(&str, &str)])] = &[
            ("", &[]),
            ("   ", &[]),
            // Examples from the libpq documentation.
            (
                "host=localhost port=5432 dbname=mydb connect_timeout=10",
                &[
                    ("host", "localhost"),
                    ("port", "5432"),
                    ("dbname", "mydb"),
                    ("connect_timeout", "10"),
                ],
            ),
            (
                "host=localhost port=5432 dbname=mydb",
                &[("host", "localhost"), ("port", "5432"), ("dbname", "mydb")],
            ),
            (
                "host=localhost,otherhost port=5432,5433",
                &[("host", "localhost,otherhost"), ("port", "5432,5433")],
            ),
            ("dbname = mydb", &[("dbname", "mydb")]),
            ("dbname= mydb", &[("dbname", "mydb")]),
            ("\tdbname\n=\r\x0bmydb\x0c", &[("dbname", "mydb")]),
            ("password='' user=bob", &[("password", ""), ("user", "bob")]),
            ("password=", &[("password", "")]),
            ("password= user=bob", &[("password", "user=bob")]),
            ("options='-c geqo=off'", &[("options", "-c geqo=off")]),
            ("options='it\\'s'", &[("options", "it's")]),
            ("options='back\\\\slash'", &[("options", "back\\slash")]),
            ("user=a\\ b", &[("user", "a b")]),
            ("user=a\\'b", &[("user", "a'b")]),
            ("user=trailing\\", &[("user", "trailing")]),
            ("user=it's", &[("user", "it's")]),
            ("user='a'dbname=b", &[("user", "a"), ("dbname", "b")]),
            ("user=a user=b", &[("user", "b")]),
            ("user=é dbname='日本'", &[("user", "é"), ("dbname", "日本")]),
            ("requiressl=1", &[("sslmode", "require")]),
            ("requiressl=0", &[("sslmode", "prefer")]),
            ("sslmode=require requiressl=0", &[("sslmode", "prefer")]),
            ("host=/tmp", &[("host", "/tmp")]),
        ];
        for (input, want) in cases {
            let got = parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            assert_eq!(pairs(&got), expect(want), "{input:?}");
        }
    }

    #[test]
    fn invalid_key_value_strings() {
        let cases = [
            (
                "mydb",
                "missing \"=\" after \"mydb\" in connection info string",
            ),
            (
                "host localhost",
                "missing \"=\" after \"host\" in connection info string",
            ),
            (
                "host=a port",
                "missing \"=\" after \"port\" in connection info string",
            ),
            ("=x", "invalid connection option \"\""),
            ("bad_key=1", "invalid connection option \"bad_key\""),
            ("Host=x", "invalid connection option \"Host\""),
            (
                "user='bob",
                "unterminated quoted string in connection info string",
            ),
            (
                "user='bob\\'",
                "unterminated quoted string in connection info string",
            ),
        ];
        for (input, want) in cases {
            let err = parse(input).expect_err(input);
            assert_eq!(err.to_string(), want, "{input:?}");
        }
    }

    #[test]
    fn redaction_hides_every_password_and_nothing_else() {
        let cases = [
            ("mydb", "mydb"),
            (
                "host=h password=pw dbname=d",
                "host=h password=**** dbname=d",
            ),
            ("password = 'a b\\' c' user=u", "password = **** user=u"),
            ("password=a\\ b user=u", "password=**** user=u"),
            ("garbage password=pw", "garbage password=****"),
            ("password='unterminated", "password=****"),
            ("password=", "password=****"),
            ("postgresql://u:pw@h/d", "postgresql://u:****@h/d"),
        ];
        for (given, shown) in cases {
            assert_eq!(redact(given), shown, "{given:?}");
        }
    }

    #[test]
    fn recognizes_connection_strings_like_libpq() {
        assert!(is_connection_string("dbname=x"));
        assert!(is_connection_string("postgresql://"));
        assert!(is_connection_string("postgres://h"));
        assert!(is_connection_string("weird=name"));
        assert!(!is_connection_string("mydb"));
        assert!(!is_connection_string("postgresql:/x"));
        assert!(!is_connection_string(""));
    }

    #[test]
    fn params_in_pgbench_order() {
        type Pairs<'a> = &'a [(&'a str, &'a str)];
        let cases: &[(Pairs, Pairs)] = &[
            // Plain dbname: everything as given, empty values skipped.
            (
                &[("host", "h"), ("port", ""), ("user", "u"), ("dbname", "db")],
                &[("host", "h"), ("user", "u"), ("dbname", "db")],
            ),
            // An expanded dbname overrides earlier explicit keys ...
            (
                &[
                    ("host", "h"),
                    ("user", "u"),
                    ("dbname", "host=other dbname=real"),
                ],
                &[("host", "other"), ("user", "u"), ("dbname", "real")],
            ),
            // ... but later keys override it.
            (
                &[
                    ("dbname", "postgresql://x@h1/d?application_name=a"),
                    ("user", "later"),
                    ("fallback_application_name", "pgbolt"),
                ],
                &[
                    ("host", "h1"),
                    ("user", "later"),
                    ("dbname", "d"),
                    ("application_name", "a"),
                    ("fallback_application_name", "pgbolt"),
                ],
            ),
            // An explicitly empty key in the expanded string still overrides.
            (
                &[("host", "h"), ("dbname", "host='' dbname=d")],
                &[("host", ""), ("dbname", "d")],
            ),
            // Only the first dbname is expanded.
            (
                &[("dbname", "dbname=a"), ("dbname", "user=b")],
                &[("dbname", "user=b")],
            ),
        ];
        for (params, want) in cases {
            let got = from_params(params.iter().copied(), true)
                .unwrap_or_else(|e| panic!("{params:?}: {e}"));
            assert_eq!(pairs(&got), expect(want), "{params:?}");
        }
    }

    #[test]
    fn params_without_expansion_keep_dbname_verbatim() {
        let got = from_params([("dbname", "host=x")], false).expect("valid");
        assert_eq!(got.get("dbname"), Some("host=x"));
        assert_eq!(got.get("host"), None);
    }

    #[test]
    fn params_errors() {
        let err = from_params([("colour", "x")], true).unwrap_err();
        assert_eq!(err.to_string(), "invalid connection option \"colour\"");
        // The array form does not translate requiressl.
        let err = from_params([("requiressl", "1")], true).unwrap_err();
        assert_eq!(err.to_string(), "invalid connection option \"requiressl\"");
        let err = from_params([("dbname", "bogus=1")], true).unwrap_err();
        assert_eq!(err.to_string(), "invalid connection option \"bogus\"");
        // Empty values are skipped before the keyword is checked.
        assert!(from_params([("colour", "")], true)
            .expect("skipped")
            .is_empty());
    }
}
