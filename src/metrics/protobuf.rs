//! The protobuf exposition: what a scraper that asks for
//! `io.prometheus.client.MetricFamily` gets (and the only format that
//! carries native histograms), as length-delimited messages.
//!
//! The messages are declared here with `prost`'s derive and the field
//! numbers of Prometheus's `io/prometheus/client/metrics.proto`, as
//! [`super::push`] declares remote write's; `prost` encodes them.
//! `prometheus-client` has the same encoder behind a feature, but that
//! feature compiles the `.proto` files at build time with a protobuf
//! compiler built from source (protox and prost-build: about a fifth of
//! the whole test build), for six small messages. The families and their
//! series are the text exposition's ([`Exposition::families`]), so both
//! formats always show the same figures; only the encoding differs.

use prometheus_client::metrics::MetricType;
use prost::Message;

use super::expose::{
    classic_buckets, native_buckets, Exposition, DURATION_HELP, DURATION_NAME, NATIVE_SCHEMA,
    ZERO_THRESHOLD,
};

#[derive(Clone, PartialEq, Message)]
struct MetricFamily {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    help: String,
    /// COUNTER 0, GAUGE 1, HISTOGRAM 4.
    #[prost(int32, tag = "3")]
    kind: i32,
    #[prost(message, repeated, tag = "4")]
    metric: Vec<Metric>,
}

#[derive(Clone, PartialEq, Message)]
struct Metric {
    #[prost(message, repeated, tag = "1")]
    label: Vec<LabelPair>,
    #[prost(message, optional, tag = "2")]
    gauge: Option<Single>,
    #[prost(message, optional, tag = "3")]
    counter: Option<Single>,
    #[prost(message, optional, tag = "7")]
    histogram: Option<Histogram>,
}

#[derive(Clone, PartialEq, Message)]
struct LabelPair {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    value: String,
}

/// A gauge's or a counter's value (field 1 of both messages).
#[derive(Clone, PartialEq, Message)]
struct Single {
    #[prost(double, tag = "1")]
    value: f64,
}

#[derive(Clone, PartialEq, Message)]
struct Histogram {
    #[prost(uint64, tag = "1")]
    sample_count: u64,
    #[prost(double, tag = "2")]
    sample_sum: f64,
    #[prost(message, repeated, tag = "3")]
    bucket: Vec<Bucket>,
    #[prost(sint32, tag = "5")]
    schema: i32,
    #[prost(double, tag = "6")]
    zero_threshold: f64,
    #[prost(uint64, tag = "7")]
    zero_count: u64,
    #[prost(message, repeated, tag = "12")]
    positive_span: Vec<BucketSpan>,
    #[prost(sint64, repeated, tag = "13")]
    positive_delta: Vec<i64>,
}

#[derive(Clone, PartialEq, Message)]
struct Bucket {
    #[prost(uint64, tag = "1")]
    cumulative_count: u64,
    #[prost(double, tag = "2")]
    upper_bound: f64,
}

#[derive(Clone, PartialEq, Message)]
struct BucketSpan {
    #[prost(sint32, tag = "1")]
    offset: i32,
    #[prost(uint32, tag = "2")]
    length: u32,
}

fn labels(pairs: Vec<(String, String)>) -> Vec<LabelPair> {
    pairs
        .into_iter()
        .map(|(name, value)| LabelPair { name, value })
        .collect()
}

/// The latency family: one histogram per run, classic and native buckets.
fn duration(e: &Exposition) -> MetricFamily {
    let metric = e
        .runs
        .iter()
        .map(|run| {
            let latency = &run.figures.latency;
            let (spans, deltas) = native_buckets(latency);
            let mut cumulative = 0;
            let bucket = classic_buckets(latency)
                .into_iter()
                .map(|(upper_bound, count)| {
                    cumulative += count;
                    Bucket {
                        cumulative_count: cumulative,
                        upper_bound,
                    }
                })
                .collect();
            Metric {
                label: labels(e.duration_labels(run)),
                histogram: Some(Histogram {
                    sample_count: latency.len(),
                    sample_sum: run.figures.latency_sum_us as f64 / 1e6,
                    bucket,
                    schema: NATIVE_SCHEMA,
                    zero_threshold: ZERO_THRESHOLD,
                    zero_count: 0,
                    positive_span: spans
                        .into_iter()
                        .map(|(offset, length)| BucketSpan { offset, length })
                        .collect(),
                    positive_delta: deltas,
                }),
                ..Metric::default()
            }
        })
        .collect();
    MetricFamily {
        name: DURATION_NAME.to_owned(),
        help: DURATION_HELP.to_owned(),
        kind: 4,
        metric,
    }
}

/// The scrape's body: every family that has a series, each message
/// preceded by its length.
pub fn encode(e: &Exposition) -> Vec<u8> {
    let mut families = vec![duration(e)];
    for family in e.families() {
        let counter = family.kind == MetricType::Counter;
        let metric = family
            .series
            .into_iter()
            .map(|(pairs, value)| {
                let single = Some(Single {
                    value: value.as_f64(),
                });
                Metric {
                    label: labels(pairs),
                    counter: if counter { single.clone() } else { None },
                    gauge: if counter { None } else { single },
                    ..Metric::default()
                }
            })
            .collect();
        families.push(MetricFamily {
            name: family.name.to_owned() + if counter { "_total" } else { "" },
            help: family.help.to_owned(),
            kind: if counter { 0 } else { 1 },
            metric,
        });
    }
    let mut body = Vec::new();
    for family in families.iter().filter(|f| !f.metric.is_empty()) {
        // Writing into a Vec cannot run out of room.
        let _ = family.encode_length_delimited(&mut body);
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::expose::RunFigures;
    use crate::metrics::live::ThreadFigures;
    use crate::stats::IntervalRecorder;

    fn exposition() -> Exposition {
        let mut recorder = IntervalRecorder::new();
        for us in [800, 2_000, 2_000, 30_000] {
            recorder.record(us);
        }
        Exposition {
            constant: vec![("generator".to_owned(), "1".to_owned())],
            namespace: "bench".to_owned(),
            runs: vec![RunFigures {
                labels: vec![("phase".to_owned(), "measured".to_owned())],
                scripts: vec!["<builtin: select only>".to_owned()],
                figures: ThreadFigures {
                    scripts: vec![crate::stats::Counters {
                        committed: 4,
                        ..Default::default()
                    }],
                    latency: recorder.take(),
                    latency_sum_us: 34_800,
                    lag_sum_us: 0,
                    connected: 2,
                },
            }],
            running: true,
            cpu_seconds: 1.5,
            generator: None,
            step: None,
            backends: None,
        }
    }

    fn decode(mut body: &[u8]) -> Vec<MetricFamily> {
        let mut families = Vec::new();
        while !body.is_empty() {
            families.push(MetricFamily::decode_length_delimited(&mut body).expect("a family"));
        }
        families
    }

    #[test]
    fn the_latency_histogram_carries_classic_and_native_buckets() {
        let families = decode(&encode(&exposition()));
        let duration = &families[0];
        assert_eq!(duration.name, "db_client_operation_duration_seconds");
        assert_eq!(duration.kind, 4);
        let h = duration.metric[0].histogram.as_ref().expect("a histogram");
        assert_eq!(h.sample_count, 4);
        assert!((h.sample_sum - 0.0348).abs() < 1e-12);
        let last = h.bucket.last().expect("buckets");
        assert_eq!(
            (last.upper_bound, last.cumulative_count),
            (f64::INFINITY, 4)
        );
        assert_eq!(h.bucket[0].cumulative_count, 1, "{:?}", h.bucket);
        assert_eq!(h.schema, NATIVE_SCHEMA);
        assert!(h.zero_threshold > 0.0);
        assert!(h.positive_delta.iter().sum::<i64>() > 0);
        let labels: Vec<&str> = duration.metric[0]
            .label
            .iter()
            .map(|l| l.name.as_str())
            .collect();
        assert_eq!(
            labels,
            ["generator", "phase", "db_system_name", "db_namespace"]
        );
    }

    #[test]
    fn counters_end_in_total_and_empty_families_are_left_out() {
        let families = decode(&encode(&exposition()));
        let names: Vec<&str> = families.iter().map(|f| f.name.as_str()).collect();
        assert!(names.contains(&"pgbolt_transactions_total"), "{names:?}");
        assert!(names.contains(&"pgbolt_clients_connected"), "{names:?}");
        assert!(!names.contains(&"pgbolt_generator_index"), "{names:?}");
        let committed = families
            .iter()
            .find(|f| f.name == "pgbolt_transactions_total")
            .and_then(|f| {
                f.metric.iter().find(|m| {
                    m.label
                        .iter()
                        .any(|l| l.name == "outcome" && l.value == "committed")
                })
            })
            .and_then(|m| m.counter.as_ref())
            .map(|c| c.value);
        assert_eq!(committed, Some(4.0));
        let connected = families
            .iter()
            .find(|f| f.name == "pgbolt_clients_connected")
            .and_then(|f| f.metric[0].gauge.as_ref())
            .map(|g| g.value);
        assert_eq!(connected, Some(2.0));
    }
}
