//! `--metrics-push`: the live figures sent by Prometheus remote write
//! (protocol 1.0: a protobuf `WriteRequest`, snappy block compression,
//! plain HTTP) every [`PUSH_EVERY`] and once more at the end, from a
//! thread of its own.
//!
//! No maintained crate sends native histograms by remote write, so the
//! few messages needed are declared here with `prost`'s derive, with the
//! field numbers of Prometheus's `prompb/types.proto`. Latency goes as a
//! native histogram (the scrape's buckets), counters and gauges as float
//! samples; a float series that leaves the figures (a backend state no
//! longer seen, a run over) gets Prometheus's staleness marker once. A
//! 4xx answer drops that batch (resending it cannot help); a
//! 5xx or a connection failure is tried again at the next beat, and after
//! [`GIVE_UP_AFTER`] failures in a row the pushing stops with one warning.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use prometheus_client::metrics::MetricType;
use prost::Message;

use super::expose::{
    native_buckets, Exposition, Fixed, DURATION_NAME, NATIVE_SCHEMA, ZERO_THRESHOLD,
};
use super::live::Live;
use crate::config::metrics::PushUrl;

/// How often the figures are sent.
pub const PUSH_EVERY: Duration = Duration::from_secs(1);

/// Failed sends in a row after which the pushing stops.
const GIVE_UP_AFTER: u32 = 10;

/// How long one send may take.
const IO_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Clone, PartialEq, Message)]
struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    timeseries: Vec<TimeSeries>,
}

#[derive(Clone, PartialEq, Message)]
struct TimeSeries {
    #[prost(message, repeated, tag = "1")]
    labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    samples: Vec<Sample>,
    #[prost(message, repeated, tag = "4")]
    histograms: Vec<Histogram>,
}

#[derive(Clone, PartialEq, Message)]
struct Label {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    value: String,
}

#[derive(Clone, PartialEq, Message)]
struct Sample {
    #[prost(double, tag = "1")]
    value: f64,
    #[prost(int64, tag = "2")]
    timestamp: i64,
}

/// An integer-count native histogram (`count_int`, `zero_count_int`).
#[derive(Clone, PartialEq, Message)]
struct Histogram {
    #[prost(uint64, tag = "1")]
    count_int: u64,
    #[prost(double, tag = "3")]
    sum: f64,
    #[prost(sint32, tag = "4")]
    schema: i32,
    #[prost(double, tag = "5")]
    zero_threshold: f64,
    #[prost(uint64, tag = "6")]
    zero_count_int: u64,
    #[prost(message, repeated, tag = "11")]
    positive_spans: Vec<BucketSpan>,
    #[prost(sint64, repeated, tag = "12")]
    positive_deltas: Vec<i64>,
    #[prost(int64, tag = "15")]
    timestamp: i64,
}

#[derive(Clone, PartialEq, Message)]
struct BucketSpan {
    #[prost(sint32, tag = "1")]
    offset: i32,
    #[prost(uint32, tag = "2")]
    length: u32,
}

/// The pushing thread and how to stop it.
pub struct Pusher {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Pusher {
    pub fn start(url: PushUrl, live: Arc<Live>, fixed: Fixed) -> std::io::Result<Pusher> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let thread = {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("pgbolt-push".to_owned())
                .spawn(move || push_until_stopped(&url, &live, &fixed, &stop))?
        };
        Ok(Pusher {
            stop,
            thread: Some(thread),
        })
    }

    /// Sends the final figures and ends the thread.
    pub fn stop(&mut self) {
        let (flag, wake) = &*self.stop;
        if let Ok(mut stopped) = flag.lock() {
            *stopped = true;
        }
        wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Pusher {
    fn drop(&mut self) {
        self.stop();
    }
}

fn push_until_stopped(url: &PushUrl, live: &Live, fixed: &Fixed, stop: &(Mutex<bool>, Condvar)) {
    let (flag, wake) = stop;
    let mut failures = 0;
    let mut last_ms = 0;
    let mut sent = Vec::new();
    let mut next = Instant::now() + PUSH_EVERY;
    loop {
        let stopped = {
            let Ok(mut stopped) = flag.lock() else {
                return;
            };
            while !*stopped {
                let left = next.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                stopped = match wake.wait_timeout(stopped, left) {
                    Ok((s, _)) => s,
                    Err(_) => return,
                };
            }
            *stopped
        };
        next += PUSH_EVERY;
        // Samples of a series must go in increasing time order.
        let now_ms = (crate::wallclock::now_us() / 1000).max(last_ms + 1);
        last_ms = now_ms;
        if failures < GIVE_UP_AFTER {
            let mut batch = request(&Exposition::of(live, fixed), now_ms);
            sent = mark_stale(&mut batch, sent, now_ms);
            match send(url, &batch) {
                Ok(()) => failures = 0,
                Err(Failure::Refused(why)) => {
                    crate::program::log::warning(format_args!(
                        "--metrics-push: the receiver refused the figures ({why}); they are dropped"
                    ));
                }
                Err(Failure::Unavailable(why)) => {
                    failures += 1;
                    if failures == GIVE_UP_AFTER {
                        crate::program::log::warning(format_args!(
                            "--metrics-push: {GIVE_UP_AFTER} sends failed in a row ({why}); no more are sent"
                        ));
                    }
                }
            }
        }
        if stopped {
            return;
        }
    }
}

/// The figures as remote-write time series at `now_ms`.
fn request(e: &Exposition, now_ms: i64) -> WriteRequest {
    let mut series = Vec::new();
    for family in e.families() {
        // The text and protobuf encoders add `_total` to a counter's name.
        let suffix = if family.kind == MetricType::Counter {
            "_total"
        } else {
            ""
        };
        let name = format!("{}{suffix}", family.name);
        for (labels, value) in family.series {
            series.push(TimeSeries {
                labels: sorted(&name, labels),
                samples: vec![Sample {
                    value: value.as_f64(),
                    timestamp: now_ms,
                }],
                histograms: Vec::new(),
            });
        }
    }
    for run in &e.runs {
        let (spans, deltas) = native_buckets(&run.figures.latency);
        series.push(TimeSeries {
            labels: sorted(DURATION_NAME, e.duration_labels(run)),
            samples: Vec::new(),
            histograms: vec![Histogram {
                count_int: run.figures.latency.len(),
                sum: run.figures.latency_sum_us as f64 / 1e6,
                schema: NATIVE_SCHEMA,
                zero_threshold: ZERO_THRESHOLD,
                zero_count_int: 0,
                positive_spans: spans
                    .into_iter()
                    .map(|(offset, length)| BucketSpan { offset, length })
                    .collect(),
                positive_deltas: deltas,
                timestamp: now_ms,
            }],
        });
    }
    WriteRequest { timeseries: series }
}

/// Prometheus's staleness marker: a NaN that no arithmetic yields. A
/// scraper marks a series stale itself when a scrape no longer has it;
/// remote write must say so, or the receiver keeps showing the series'
/// last value for minutes (a backend state no longer seen, a run over).
const STALE_NAN: u64 = 0x7ff0_0000_0000_0002;

/// Adds a staleness marker at `now_ms` for each float series of `sent`
/// (the label sets of the last batch) that `batch` no longer has; returns
/// the label sets of `batch`'s float series, for the next batch.
fn mark_stale(batch: &mut WriteRequest, sent: Vec<Vec<Label>>, now_ms: i64) -> Vec<Vec<Label>> {
    let now: Vec<Vec<Label>> = batch
        .timeseries
        .iter()
        .filter(|s| !s.samples.is_empty())
        .map(|s| s.labels.clone())
        .collect();
    for labels in sent.into_iter().filter(|l| !now.contains(l)) {
        batch.timeseries.push(TimeSeries {
            labels,
            samples: vec![Sample {
                value: f64::from_bits(STALE_NAN),
                timestamp: now_ms,
            }],
            histograms: Vec::new(),
        });
    }
    now
}

/// The labels with the metric's name, sorted by name as receivers want.
fn sorted(name: &str, labels: Vec<(String, String)>) -> Vec<Label> {
    let mut labels: Vec<Label> = labels
        .into_iter()
        .map(|(name, value)| Label { name, value })
        .collect();
    labels.push(Label {
        name: "__name__".to_owned(),
        value: name.to_owned(),
    });
    labels.sort_by(|a, b| a.name.cmp(&b.name));
    labels
}

enum Failure {
    /// A 4xx answer: this batch will never be taken.
    Refused(String),
    /// No answer, or a 5xx: the receiver may take a later batch.
    Unavailable(String),
}

/// POSTs `request`, snappy-compressed.
fn send(url: &PushUrl, request: &WriteRequest) -> Result<(), Failure> {
    let body = snap::raw::Encoder::new()
        .compress_vec(&request.encode_to_vec())
        .map_err(|e| Failure::Unavailable(e.to_string()))?;
    let unavailable = |e: std::io::Error| Failure::Unavailable(crate::oserror::os_message(&e));
    let addr = std::net::ToSocketAddrs::to_socket_addrs(&url.authority)
        .map_err(unavailable)?
        .next()
        .ok_or_else(|| Failure::Unavailable(format!("{} has no address", url.authority)))?;
    let mut stream = TcpStream::connect_timeout(&addr, IO_TIMEOUT).map_err(unavailable)?;
    stream
        .set_read_timeout(Some(IO_TIMEOUT))
        .map_err(unavailable)?;
    stream
        .set_write_timeout(Some(IO_TIMEOUT))
        .map_err(unavailable)?;
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/x-protobuf\r\nContent-Encoding: snappy\r\nX-Prometheus-Remote-Write-Version: 0.1.0\r\nUser-Agent: pgbolt/{}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        url.path,
        url.authority,
        env!("CARGO_PKG_VERSION"),
        body.len()
    );
    stream.write_all(head.as_bytes()).map_err(unavailable)?;
    stream.write_all(&body).map_err(unavailable)?;
    let mut answer = Vec::new();
    let _ = stream.take(64 * 1024).read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    let status: u16 = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Failure::Unavailable("no HTTP answer".to_owned()))?;
    let why = || {
        let body = answer.split("\r\n\r\n").nth(1).unwrap_or("").trim();
        format!(
            "HTTP {status}: {}",
            body.chars().take(200).collect::<String>()
        )
    };
    match status {
        200..=299 => Ok(()),
        400..=499 => Err(Failure::Refused(why())),
        _ => Err(Failure::Unavailable(why())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(name: &str) -> TimeSeries {
        TimeSeries {
            labels: sorted(name, Vec::new()),
            samples: vec![Sample {
                value: 1.0,
                timestamp: 1,
            }],
            histograms: Vec::new(),
        }
    }

    #[test]
    fn a_series_that_leaves_the_figures_is_marked_stale_once() {
        let mut first = WriteRequest {
            timeseries: vec![series("a"), series("b")],
        };
        let sent = mark_stale(&mut first, Vec::new(), 1);
        assert_eq!(first.timeseries.len(), 2);
        let mut second = WriteRequest {
            timeseries: vec![series("a")],
        };
        let sent = mark_stale(&mut second, sent, 2);
        let stale = &second.timeseries[1];
        assert_eq!(stale.labels, sorted("b", Vec::new()));
        assert_eq!(stale.samples[0].value.to_bits(), STALE_NAN);
        assert_eq!(stale.samples[0].timestamp, 2);
        let mut third = WriteRequest {
            timeseries: vec![series("a")],
        };
        mark_stale(&mut third, sent, 3);
        assert_eq!(third.timeseries.len(), 1, "marked stale only once");
    }
}
