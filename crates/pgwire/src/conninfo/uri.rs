//! Connection URIs:
//! `postgresql://[user[:password]@][host][:port][,...][/dbname][?key=value&...]`.
//!
//! Like libpq, the parser is a scan rather than a general URI library: the
//! host list (`h1:p1,h2:p2`, `[::1]:5433`) is collected into the same
//! comma-separated `host` and `port` strings that a `key=value` string would
//! give, and percent-decoding happens per component after splitting, so
//! `%2Fvar%2Frun%2Fpostgresql` as a host is a socket directory. Unknown
//! query keys fail with libpq's `invalid URI query parameter`; `ssl=true`
//! means `sslmode=require`, for JDBC compatibility.

use super::parse::store;
use super::{ConnOptions, Error};

const PREFIXES: [&str; 2] = ["postgresql://", "postgres://"];

/// The length of the URI prefix `s` starts with, or 0.
pub(crate) fn prefix_len(s: &str) -> usize {
    PREFIXES
        .iter()
        .find(|p| s.starts_with(*p))
        .map_or(0, |p| p.len())
}

/// `uri` with its passwords replaced by `****`, for messages: the one in
/// `user:password@` and the value of any `password` query parameter. An
/// `@` in a query parameter's value (`?password=p@ss`) ends what libpq
/// takes for the user part; a `?` there before any `:` shows it is a
/// query, hidden whole up to its next `&`.
pub(crate) fn redact(uri: &str) -> String {
    let start = prefix_len(uri);
    let mut out = uri[..start].to_owned();
    let mut rest = &uri[start..];
    if let Some(end) = rest
        .find(['@', '/'])
        .filter(|&e| rest.as_bytes()[e] == b'@')
    {
        let user = &rest[..end];
        if let Some(colon) = user
            .find(':')
            .filter(|&c| user.find('?').map_or(true, |q| c < q))
        {
            out.push_str(&user[..colon]);
            out.push_str(":****@");
            rest = &rest[end + 1..];
        }
    }
    out.push_str(&redact_query(rest));
    out
}

/// `text` with the value of every `password` parameter of the query that
/// follows its first `?` replaced by `****`.
fn redact_query(text: &str) -> String {
    let Some(q) = text.find('?') else {
        return text.to_owned();
    };
    let params: Vec<String> = text[q + 1..]
        .split('&')
        .map(|param| match param.split_once('=') {
            Some((key, _)) if decode(key, false).is_ok_and(|k| k == "password") => {
                format!("{key}=****")
            }
            _ => param.to_owned(),
        })
        .collect();
    format!("{}{}", &text[..=q], params.join("&"))
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decodes `%xy` escapes. `secret` hides the text in error messages.
pub(crate) fn decode(text: &str, secret: bool) -> Result<String, Error> {
    let shown = || {
        if secret {
            "****".to_owned()
        } else {
            text.to_owned()
        }
    };
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'%' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let hi = b.get(i + 1).copied().and_then(hex);
        let lo = b.get(i + 2).copied().and_then(hex);
        let (Some(hi), Some(lo)) = (hi, lo) else {
            return Err(Error::InvalidPercentEncoding { text: shown() });
        };
        let c = (hi << 4) | lo;
        if c == 0 {
            return Err(Error::PercentEncodedNul { text: shown() });
        }
        out.push(c);
        i += 3;
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn store_decoded(options: &mut ConnOptions, key: &str, raw: &str) -> Result<(), Error> {
    let value = decode(raw, key == "password")?;
    store(options, key, &value)
}

/// Parses a URI that starts with one of the two prefixes.
pub(crate) fn parse(uri: &str) -> Result<ConnOptions, Error> {
    let b = uri.as_bytes();
    let n = b.len();
    let at = |i: usize| if i < n { b[i] } else { 0 };
    let mut options = ConnOptions::new();
    let mut p = prefix_len(uri);

    p = credentials(uri, p, &mut options)?;

    // Hosts and ports, separated by commas.
    let mut hosts = String::new();
    let mut ports = String::new();
    let mut terminator;
    loop {
        let host;
        if at(p) == b'[' {
            let (bracketed, after) = ipv6_host(uri, p)?;
            host = bracketed;
            p = after;
        } else {
            let start = p;
            while p < n && !matches!(b[p], b':' | b'/' | b'?' | b',') {
                p += 1;
            }
            host = &uri[start..p];
        }
        terminator = at(p);
        hosts.push_str(host);
        if terminator == b':' {
            p += 1;
            let start = p;
            while p < n && !matches!(b[p], b'/' | b'?' | b',') {
                p += 1;
            }
            ports.push_str(&uri[start..p]);
            terminator = at(p);
        }
        if terminator != b',' {
            break;
        }
        p += 1;
        hosts.push(',');
        ports.push(',');
    }
    if !hosts.is_empty() {
        store_decoded(&mut options, "host", &hosts)?;
    }
    if !ports.is_empty() {
        store_decoded(&mut options, "port", &ports)?;
    }

    // "/dbname"; an empty one is not set at all, so PGDATABASE still applies.
    if terminator != 0 && terminator != b'?' {
        p += 1;
        let start = p;
        while p < n && b[p] != b'?' {
            p += 1;
        }
        terminator = at(p);
        if p > start {
            store_decoded(&mut options, "dbname", &uri[start..p])?;
        }
    }

    if terminator != 0 {
        parse_query(&uri[p + 1..], &mut options)?;
    }
    Ok(options)
}

/// `user[:password]@` at `p`, if an `@` comes before any `/`; returns
/// where the host list starts.
fn credentials(uri: &str, p: usize, options: &mut ConnOptions) -> Result<usize, Error> {
    let Some(end) = uri[p..].find(['@', '/']).map(|i| p + i) else {
        return Ok(p);
    };
    if uri.as_bytes()[end] != b'@' {
        return Ok(p);
    }
    let credentials = &uri[p..end];
    let (user, password) = match credentials.find(':') {
        Some(colon) => (&credentials[..colon], Some(&credentials[colon + 1..])),
        None => (credentials, None),
    };
    if !user.is_empty() {
        store_decoded(options, "user", user)?;
    }
    if let Some(password) = password.filter(|p| !p.is_empty()) {
        store_decoded(options, "password", password)?;
    }
    Ok(end + 1)
}

/// `[address]` starting at `open`: the address and the index after `]`,
/// which must be followed by nothing or one of `:/?,`.
fn ipv6_host(uri: &str, open: usize) -> Result<(&str, usize), Error> {
    let b = uri.as_bytes();
    let start = open + 1;
    let close = match uri[start..].find(']') {
        Some(i) => start + i,
        None => return Err(Error::UnterminatedIpv6 { uri: redact(uri) }),
    };
    if close == start {
        return Err(Error::EmptyIpv6 { uri: redact(uri) });
    }
    let after = close + 1;
    if after < b.len() && !matches!(b[after], b':' | b'/' | b'?' | b',') {
        let character = uri[after..].chars().next().unwrap_or('?');
        return Err(Error::UnexpectedUriCharacter {
            character,
            position: after + 1,
            uri: redact(uri),
        });
    }
    Ok((&uri[start..close], after))
}

fn parse_query(query: &str, options: &mut ConnOptions) -> Result<(), Error> {
    let mut rest = query;
    while !rest.is_empty() {
        let (param, next) = match rest.find('&') {
            Some(amp) => (&rest[..amp], &rest[amp + 1..]),
            None => (rest, ""),
        };
        rest = next;
        let Some(eq) = param.find('=') else {
            return Err(Error::UriMissingEquals {
                parameter: param.to_owned(),
            });
        };
        let (raw_key, raw_value) = (&param[..eq], &param[eq + 1..]);
        if raw_value.contains('=') {
            return Err(Error::UriExtraEquals {
                parameter: raw_key.to_owned(),
            });
        }
        let key = decode(raw_key, false)?;
        let value = decode(raw_value, key == "password")?;
        let (key, value) = if key == "ssl" && value == "true" {
            ("sslmode".to_owned(), "require".to_owned())
        } else {
            (key, value)
        };
        store(options, &key, &value).map_err(|e| match e {
            Error::InvalidOption { key } => Error::InvalidUriParameter { key },
            other => other,
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::parse::parse as parse_any;
    use super::*;

    fn pairs(o: &ConnOptions) -> Vec<(String, String)> {
        o.iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    #[test]
    fn valid_uris() {
        let cases: &[(&str, &[(&str, &str)])] = &[
            // Examples from the libpq documentation.
            ("postgresql://", &[]),
            ("postgresql://localhost", &[("host", "localhost")]),
            (
                "postgresql://localhost:5433",
                &[("host", "localhost"), ("port", "5433")],
            ),
            (
                "postgresql://localhost/mydb",
                &[("host", "localhost"), ("dbname", "mydb")],
            ),
            (
                "postgresql://user@localhost",
                &[("user", "user"), ("host", "localhost")],
            ),
            (
                "postgresql://user:secret@localhost",
                &[("user", "user"), ("password", "secret"), ("host", "localhost")],
            ),
            (
                "postgresql://other@localhost/otherdb?connect_timeout=10&application_name=myapp",
                &[
                    ("user", "other"),
                    ("host", "localhost"),
                    ("dbname", "otherdb"),
                    ("connect_timeout", "10"),
                    ("application_name", "myapp"),
                ],
            ),
            (
                "postgresql://host1:123,host2:456/somedb?target_session_attrs=any&application_name=myapp",
                &[
                    ("host", "host1,host2"),
                    ("port", "123,456"),
                    ("dbname", "somedb"),
                    ("target_session_attrs", "any"),
                    ("application_name", "myapp"),
                ],
            ),
            (
                "postgresql:///mydb?host=localhost&port=5433",
                &[("dbname", "mydb"), ("host", "localhost"), ("port", "5433")],
            ),
            (
                "postgresql://[2001:db8::1234]/database",
                &[("host", "2001:db8::1234"), ("dbname", "database")],
            ),
            (
                "postgresql://[::1]:5433,h2/db",
                &[("host", "::1,h2"), ("port", "5433,"), ("dbname", "db")],
            ),
            (
                "postgresql:///dbname?host=/var/lib/postgresql",
                &[("dbname", "dbname"), ("host", "/var/lib/postgresql")],
            ),
            (
                "postgresql://%2Fvar%2Flib%2Fpostgresql/dbname",
                &[("host", "/var/lib/postgresql"), ("dbname", "dbname")],
            ),
            (
                "postgres://a%40b:p%3Aw%2Fd@h",
                &[("user", "a@b"), ("password", "p:w/d"), ("host", "h")],
            ),
            ("postgresql://h1,h2", &[("host", "h1,h2"), ("port", ",")]),
            ("postgresql://:5433", &[("port", "5433")]),
            ("postgresql://h/", &[("host", "h")]),
            ("postgresql://h?", &[("host", "h")]),
            ("postgresql://@h", &[("host", "h")]),
            ("postgresql://u:@h", &[("user", "u"), ("host", "h")]),
            ("postgresql://h/db?ssl=true", &[("host", "h"), ("dbname", "db"), ("sslmode", "require")]),
            ("postgresql://?requiressl=1", &[("sslmode", "require")]),
            ("postgresql://?options=-c%20x%3D1&", &[("options", "-c x=1")]),
            ("postgresql://?user=&dbname=d", &[("user", ""), ("dbname", "d")]),
        ];
        for (input, want) in cases {
            let got = parse_any(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            let mut want: Vec<(String, String)> = want
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            want.sort();
            assert_eq!(pairs(&got), want, "{input:?}");
        }
    }

    #[test]
    fn invalid_uris() {
        let cases = [
            (
                "postgresql://[::1",
                "end of string reached when looking for matching \"]\" in IPv6 host address in URI: \"postgresql://[::1\"",
            ),
            (
                "postgresql://[]/db",
                "IPv6 host address may not be empty in URI: \"postgresql://[]/db\"",
            ),
            (
                "postgresql://[::1]x",
                "unexpected character \"x\" at position 19 in URI (expected \":\" or \"/\"): \"postgresql://[::1]x\"",
            ),
            (
                "postgresql://u:pw@[::1]x",
                "unexpected character \"x\" at position 24 in URI (expected \":\" or \"/\"): \"postgresql://u:****@[::1]x\"",
            ),
            ("postgresql://?ssl=false", "invalid URI query parameter: \"ssl\""),
            (
                "postgresql://h/db?colour=blue",
                "invalid URI query parameter: \"colour\"",
            ),
            (
                "postgresql://h/db?a=b=c",
                "extra key/value separator \"=\" in URI query parameter: \"a\"",
            ),
            (
                "postgresql://h/db?port",
                "missing key/value separator \"=\" in URI query parameter: \"port\"",
            ),
            (
                "postgresql://h/db?&port=1",
                "missing key/value separator \"=\" in URI query parameter: \"\"",
            ),
            ("postgresql://h/d%zz", "invalid percent-encoded token: \"d%zz\""),
            ("postgresql://h/d%4", "invalid percent-encoded token: \"d%4\""),
            (
                "postgresql://h/d%00",
                "forbidden value %00 in percent-encoded value: \"d%00\"",
            ),
            ("postgresql://u:se%zzcret@h", "invalid percent-encoded token: \"****\""),
            // Regression: a password given as a query parameter was shown.
            (
                "postgresql://[::1]x/db?password=secret",
                "unexpected character \"x\" at position 19 in URI (expected \":\" or \"/\"): \"postgresql://[::1]x/db?password=****\"",
            ),
            (
                "postgresql://u@[::1/db?password=secret",
                "end of string reached when looking for matching \"]\" in IPv6 host address in URI: \"postgresql://u@[::1/db?password=****\"",
            ),
        ];
        for (input, want) in cases {
            let err = parse_any(input).expect_err(input);
            assert_eq!(err.to_string(), want, "{input:?}");
        }
    }

    #[test]
    fn redaction_hides_only_the_password() {
        assert_eq!(redact("postgresql://u:pw@h/db"), "postgresql://u:****@h/db");
        assert_eq!(redact("postgresql://u@h/db"), "postgresql://u@h/db");
        assert_eq!(redact("postgresql://h/a@b:c"), "postgresql://h/a@b:c");
        assert_eq!(
            redact("postgresql://u@h/db?host=x&password=pw&pass%77ord=pw2&port=1"),
            "postgresql://u@h/db?host=x&password=****&pass%77ord=****&port=1"
        );
        assert_eq!(
            redact("postgresql://u:a?b@h/db?x"),
            "postgresql://u:****@h/db?x"
        );
        // An `@` in a query value: what libpq takes for the user part.
        assert_eq!(
            redact("postgresql://h?password=p@ss"),
            "postgresql://h?password=****"
        );
        assert_eq!(
            redact("postgresql://h?password=s3cret&x=1@y"),
            "postgresql://h?password=****&x=1@y"
        );
        assert_eq!(
            redact("postgresql://h?password=a:b@c"),
            "postgresql://h?password=****"
        );
        assert_eq!(
            redact("postgresql://u:pw@h?password=x@y"),
            "postgresql://u:****@h?password=****"
        );
    }
}
