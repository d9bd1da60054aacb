//! Settings of the live metrics: `--metrics-listen` and `--metrics-linger`.

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
    pub listen: SocketAddr,
    /// `--metrics-linger=SECS`: after the run, the endpoint waits for one
    /// more scrape at most this long, so the last interval reaches the
    /// scraper.
    pub linger: Duration,
}
