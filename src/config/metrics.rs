//! Settings of the live metrics: `--metrics-listen`, `--metrics-linger`
//! and `--metrics-push`.

use std::net::SocketAddr;
use std::time::Duration;

/// How long the endpoint stays open after the run when nobody scrapes it,
/// unless `--metrics-linger` says otherwise: the interval of the scrape
/// configuration most Prometheus setups start from.
pub const DEFAULT_LINGER: Duration = Duration::from_secs(15);

/// Where and how long the live figures are served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metrics {
    /// `--metrics-listen=ADDR:PORT`: the address of the Prometheus endpoint.
    pub listen: Option<SocketAddr>,
    /// `--metrics-push=URL`: where to send the figures by remote write.
    pub push: Option<PushUrl>,
    /// `--metrics-linger=SECS`: after the run, the endpoint waits for one
    /// more scrape at most this long, so the last interval reaches the
    /// scraper.
    pub linger: Duration,
}

/// A remote-write URL: plain HTTP, a host (resolved when sending) and a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushUrl {
    /// `HOST:PORT`, the port 80 when the URL names none.
    pub authority: String,
    /// The path and query, `/` at least.
    pub path: String,
}

impl PushUrl {
    /// Reads `http://HOST[:PORT][/PATH]`; `None` for anything else (https
    /// among them: no TLS here yet).
    pub fn parse(url: &str) -> Option<PushUrl> {
        let rest = url.strip_prefix("http://")?;
        let (authority, path) = match rest.find('/') {
            Some(at) => (&rest[..at], &rest[at..]),
            None => (rest, "/"),
        };
        if authority.is_empty() || authority.contains('@') {
            return None;
        }
        let has_port = match authority.rfind(':') {
            Some(at) => !authority.ends_with(']') && authority[at + 1..].parse::<u16>().is_ok(),
            None => false,
        };
        let authority = if has_port {
            authority.to_owned()
        } else {
            format!("{authority}:80")
        };
        Some(PushUrl {
            authority,
            path: path.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::PushUrl;

    #[test]
    fn push_urls() {
        let cases: &[(&str, Option<(&str, &str)>)] = &[
            (
                "http://prometheus:9090/api/v1/write",
                Some(("prometheus:9090", "/api/v1/write")),
            ),
            ("http://10.0.0.1/write", Some(("10.0.0.1:80", "/write"))),
            ("http://[::1]:9090", Some(("[::1]:9090", "/"))),
            ("https://prometheus:9090/api/v1/write", None),
            ("http://user:secret@prometheus/api/v1/write", None),
            ("prometheus:9090", None),
            ("http:///write", None),
        ];
        for (url, expected) in cases {
            let parsed = PushUrl::parse(url);
            let parsed = parsed
                .as_ref()
                .map(|p| (p.authority.as_str(), p.path.as_str()));
            assert_eq!(parsed, *expected, "{url}");
        }
    }
}
