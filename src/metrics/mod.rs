//! Live metrics: a Prometheus endpoint (`--metrics-listen`) that shows a
//! run, a study's steps or a fleet's generator while it runs.
//!
//! # Why it reads the interval series
//! The report's figures come from the worker threads' recorders; the live
//! figures come from the same recorders, handed over by each thread every
//! [`BEAT_US`] and as it ends ([`live`]). The latency histogram served is
//! the sum of the interval series' histograms, the ones the JSON result
//! keeps per interval, so the live count and sum are the report's exactly
//! and a percentile read from them is within the series' precision of the
//! report's. Recording stays what it was: no allocation, no lock, no
//! atomic per transaction; a hand-over takes one uncontended mutex per
//! thread and beat.
//!
//! # Why its own thread
//! A scrape is answered by the endpoint's thread ([`server`]), never by a
//! worker's event loop, so a slow scraper cannot delay a client and the
//! endpoint answers while nothing runs: during the set-up, between a
//! study's steps and after the end. The port is bound before anything
//! connects, so a port in use refuses the run (exit 1); after the run the
//! endpoint waits for one more scrape (at most `--metrics-linger`), so the
//! scraper sees the final figures, then closes its port and its thread
//! ends.
//!
//! # Names
//! OpenTelemetry's database-client conventions where they exist
//! (`db_client_operation_duration_seconds` with `db_system_name` and
//! `db_namespace`; `error_type` and `db_response_status_code` on failed
//! transactions), pgbolt's own under `pgbolt_`. Latency leaves as a
//! histogram, never as percentile gauges: histograms of several
//! generators add up, percentiles do not ([`expose`]). docs/metrics.md
//! lists every metric.
//!
//! The engine finds the endpoint through [`current`] (set while an
//! [`Endpoint`] lives), so that nothing between `app` and the worker
//! threads carries it; a study labels each run before it starts with
//! [`label_next_run`].

mod expose;
mod live;
mod protobuf;
mod push;
mod server;

use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use expose::NATIVE_SCHEMA;
pub use live::{Beat, Live, RunLabels, BEAT_US};
pub use server::ListenError;

use expose::Fixed;
use push::Pusher;
use server::Server;

/// The endpoint of the process, while one is open.
static CURRENT: Mutex<Option<Arc<Live>>> = Mutex::new(None);

/// The live figures the runs of this process hand over to, if an
/// endpoint is open.
pub fn current() -> Option<Arc<Live>> {
    CURRENT.lock().ok().and_then(|c| c.clone())
}

/// Labels the next run of the process (does nothing without an endpoint).
pub fn label_next_run(labels: RunLabels) {
    if let Some(live) = current() {
        live.label_next_run(labels);
    }
}

/// Names the database the clients use (`db.namespace`), once it is
/// known (a throwaway instance's, after it started).
pub fn set_namespace(namespace: String) {
    if let Some(live) = current() {
        live.state().namespace = namespace;
    }
}

/// An open endpoint.
pub struct Endpoint {
    live: Arc<Live>,
    server: Option<Server>,
    pusher: Option<Pusher>,
    linger: Duration,
}

/// What the endpoint labels every scrape with.
#[derive(Clone, Debug, Default)]
pub struct Identity {
    /// `db.namespace`: the database name the clients connect to.
    pub namespace: String,
    /// A fleet's generator: its index and the number of generators.
    pub generator: Option<(u32, u32)>,
}

/// Opens the endpoint of `settings` (the port is bound before this
/// returns) and starts the pushing.
pub fn listen(
    settings: &crate::config::metrics::Metrics,
    identity: Identity,
) -> Result<Endpoint, ListenError> {
    let live = Arc::new(Live::default());
    let constant = identity
        .generator
        .map(|(index, _)| vec![("generator".to_owned(), index.to_string())])
        .unwrap_or_default();
    live.state().namespace = identity.namespace;
    let fixed = Fixed {
        constant,
        generator: identity.generator,
    };
    let server = match settings.listen {
        Some(addr) => Some(Server::start(addr, Arc::clone(&live), fixed.clone())?),
        None => None,
    };
    let pusher = match &settings.push {
        Some(url) => Some(
            Pusher::start(url.clone(), Arc::clone(&live), fixed).map_err(ListenError::Thread)?,
        ),
        None => None,
    };
    if let Ok(mut c) = CURRENT.lock() {
        *c = Some(Arc::clone(&live));
    }
    Ok(Endpoint {
        live,
        server,
        pusher,
        linger: settings.linger,
    })
}

impl Endpoint {
    /// Every run is over: sends the final figures (`--metrics-push`),
    /// waits for one more scrape (at most the linger), then closes the
    /// port and ends the threads.
    pub fn finish(mut self) {
        if let Some(mut pusher) = self.pusher.take() {
            self.live.end();
            pusher.stop();
        }
        if let Some(mut server) = self.server.take() {
            self.live.finish(self.linger);
            server.stop();
        }
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        if let Ok(mut c) = CURRENT.lock() {
            *c = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// Threads of this process named as the endpoint's.
    fn endpoint_threads() -> usize {
        std::fs::read_dir("/proc/self/task").map_or(0, |tasks| {
            tasks
                .filter_map(Result::ok)
                .filter(|t| {
                    std::fs::read_to_string(t.path().join("comm"))
                        .is_ok_and(|name| name.trim() == "pgbolt-metrics")
                })
                .count()
        })
    }

    fn scrape(addr: std::net::SocketAddr, accept: &str) -> String {
        let mut s = std::net::TcpStream::connect(addr).expect("connects");
        write!(s, "GET /metrics HTTP/1.1\r\nAccept: {accept}\r\n\r\n").expect("request");
        let mut answer = Vec::new();
        s.read_to_end(&mut answer).expect("answer");
        String::from_utf8_lossy(&answer).into_owned()
    }

    #[test]
    fn the_endpoint_serves_until_a_scrape_after_the_end_then_leaves_nothing() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a port");
        let settings = crate::config::metrics::Metrics {
            listen: Some(port),
            push: None,
            linger: Duration::from_secs(60),
        };
        let endpoint = listen(&settings, Identity::default()).expect("listens");
        let text = scrape(port, "text/plain");
        assert_eq!(endpoint_threads(), 1);
        assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
        assert!(text.contains("pgbolt_running 0"), "{text}");
        let protobuf = scrape(port, "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3");
        assert!(protobuf.contains("encoding=delimited"), "{protobuf}");
        let scraper = std::thread::spawn(move || {
            while current().is_some_and(|l| !l.state().finished) {
                std::thread::sleep(Duration::from_millis(10));
            }
            scrape(port, "text/plain")
        });
        endpoint.finish();
        assert!(scraper.join().expect("scraper").contains("200 OK"));
        assert!(
            std::net::TcpStream::connect(port).is_err(),
            "port still open"
        );
        assert!(current().is_none());
        assert_eq!(endpoint_threads(), 0);
    }

    #[test]
    fn a_port_in_use_is_refused_with_the_option_named() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        let settings = crate::config::metrics::Metrics {
            listen: Some(taken.local_addr().expect("address")),
            push: None,
            linger: Duration::ZERO,
        };
        let Err(e) = listen(&settings, Identity::default()) else {
            panic!("listened on a port in use");
        };
        assert!(
            e.to_string()
                .contains("for --metrics-listen: Address already in use"),
            "{e}"
        );
    }
}
