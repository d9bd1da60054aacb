//! A private Prometheus for one test: its own loopback port, storage
//! directory and scrape configuration (1 s interval), native histograms
//! (unless asked otherwise) and the remote-write receiver on, stopped when dropped. Its HTTP API is
//! read with plain HTTP/1.0 requests.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long a test waits for Prometheus to show a figure.
pub const DEADLINE: Duration = Duration::from_secs(90);

/// Now, in Unix seconds.
pub fn now_s() -> f64 {
    pgbolt::wallclock::now_us() as f64 / 1e6
}

/// A loopback port nobody listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

pub struct Prometheus {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    /// Starts Prometheus scraping `targets` (ADDR:PORT) every second,
    /// native histograms on.
    pub fn start(targets: &[String]) -> Prometheus {
        Prometheus::start_with(targets, true)
    }

    /// Starts Prometheus scraping `targets`, with native histograms or
    /// without (it then scrapes the text format and keeps the classic
    /// buckets).
    pub fn start_with(targets: &[String], native: bool) -> Prometheus {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = dir.path().join("prometheus.yml");
        let targets: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: pgbolt\n    static_configs:\n      - targets: [{}]\n",
                targets.join(", ")
            ),
        )
        .expect("config");
        let port = free_port();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--web.enable-remote-write-receiver")
            .args(native.then_some("--enable-feature=native-histograms"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus starts (make deps installs it)");
        let prometheus = Prometheus {
            child,
            port,
            _dir: dir,
        };
        let start = Instant::now();
        while !prometheus
            .get("/-/ready")
            .is_some_and(|(status, _)| status == 200)
        {
            assert!(start.elapsed() < DEADLINE, "prometheus not ready");
            std::thread::sleep(Duration::from_millis(100));
        }
        prometheus
    }

    /// Its `HOST:PORT`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The status and body of a GET, `None` when nothing answers.
    fn get(&self, path: &str) -> Option<(u16, String)> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        stream
            .write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
            .ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).ok()?;
        let (head, body) = response.split_once("\r\n\r\n")?;
        let status = head.split(' ').nth(1)?.parse().ok()?;
        Some((status, body.to_owned()))
    }

    /// An instant query's result vector: each series' labels and value.
    pub fn query(&self, promql: &str) -> Vec<(Value, f64)> {
        self.query_at(promql, None)
    }

    /// An instant query evaluated at `at` (Unix seconds; now when `None`).
    /// A target that went away gets stale markers at its next scrape,
    /// after which its series vanish from queries of later times: a test
    /// reads the figures of a finished run as of its end.
    pub fn query_at(&self, promql: &str, at: Option<f64>) -> Vec<(Value, f64)> {
        let time = at.map_or(String::new(), |t| format!("&time={t:.3}"));
        let (status, body) = self
            .get(&format!("/api/v1/query?query={}{time}", encode(promql)))
            .expect("prometheus answers");
        assert_eq!(status, 200, "{promql}: {body}");
        let json: Value = serde_json::from_str(&body).expect("JSON");
        json["data"]["result"]
            .as_array()
            .map(|series| {
                series
                    .iter()
                    .map(|s| {
                        let value = s["value"][1].as_str().and_then(|v| v.parse().ok());
                        (s["metric"].clone(), value.unwrap_or(f64::NAN))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Polls `promql` (evaluated at `at`, see [`Prometheus::query_at`])
    /// until `done` holds for its result, within [`DEADLINE`]; the last
    /// result either way.
    pub fn wait_for(
        &self,
        promql: &str,
        at: Option<f64>,
        done: impl Fn(&[(Value, f64)]) -> bool,
    ) -> Vec<(Value, f64)> {
        let start = Instant::now();
        loop {
            let result = self.query_at(promql, at);
            if done(&result) || start.elapsed() > DEADLINE {
                return result;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Percent-encodes a query parameter.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
