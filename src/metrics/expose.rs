//! The exposition: the live figures as Prometheus metric families, for
//! `prometheus-client`'s text encoder and for the protobuf encoding of
//! [`super::protobuf`] (native histograms, when the scraper asks for it).
//!
//! Latency leaves as a histogram built from the interval series'
//! histograms (HdrHistogram buckets at 1 significant digit, see
//! `crate::stats::interval_histogram`). Each of their buckets is counted
//! at its middle value (HdrHistogram's "median equivalent"), into the
//! classic buckets at OpenTelemetry's advised boundaries and into native
//! buckets of [`NATIVE_SCHEMA`]. The count and the sum are exact; where a
//! value falls within a bucket is known to the series' precision.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, MetricEncoder, NativeHistogram, NativeHistogramBuckets, NoLabelSet,
};
use prometheus_client::metrics::MetricType;

use super::live::{Live, LiveRun, ThreadFigures};
use crate::model::diagnosis::{OtherSessions, StateCounts};
use crate::stats::{Counters, IntervalHistogram};

/// OpenTelemetry's advised bucket boundaries of `db.client.operation.duration`, s.
pub const CLASSIC_BOUNDS: [f64; 9] = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0];

/// Native buckets grow by 2^(2^-4), 4.4% each: finer than that, they
/// would only split the series' own buckets (up to 6.25% wide).
pub const NATIVE_SCHEMA: i32 = 4;

/// The zero bucket's width. Never 0, so that a histogram holding no value
/// yet is still a native one (Prometheus takes a histogram without any
/// native field for a classic one).
pub const ZERO_THRESHOLD: f64 = 2.938_735_877_055_719e-39; // 2^-128, as Prometheus's Go client

/// The latency histogram's name and help.
pub const DURATION_NAME: &str = "db_client_operation_duration_seconds";
pub const DURATION_HELP: &str = "Latency of committed transactions, from their scheduled start (OpenTelemetry db.client.operation.duration)";

/// What every scrape shows besides the runs.
#[derive(Clone, Debug)]
pub struct Fixed {
    pub constant: Vec<(String, String)>,
    pub generator: Option<(u32, u32)>,
}

/// One run as a scrape shows it: its labels, its scripts' names and its
/// threads' figures added up.
#[derive(Debug)]
pub struct RunFigures {
    pub labels: Vec<(String, String)>,
    pub scripts: Vec<String>,
    pub figures: ThreadFigures,
}

/// The figures of one scrape: constant labels, each run's totals and the
/// process's own.
#[derive(Debug)]
pub struct Exposition {
    /// Labels on every series (the generator of a fleet).
    pub constant: Vec<(String, String)>,
    /// `db.namespace`: the database the clients use.
    pub namespace: String,
    /// Each run's labels, script names and totals, oldest first.
    pub runs: Vec<RunFigures>,
    /// A run is going on.
    pub running: bool,
    /// The process's CPU time, s.
    pub cpu_seconds: f64,
    /// A fleet's generator: its index and the generator count.
    pub generator: Option<(u32, u32)>,
    /// The labels of the current step of a study.
    pub step: Option<super::live::RunLabels>,
    /// The monitor's latest sample of the run going on.
    pub backends: Option<Backends>,
}

/// The monitor's latest activity sample, with the labels of its run.
#[derive(Debug)]
pub struct Backends {
    pub labels: Vec<(String, String)>,
    pub run: StateCounts,
    /// None before PostgreSQL 10, which does not tell them apart.
    pub others: Option<OtherSessions>,
}

impl Exposition {
    /// The live figures as of now.
    pub fn of(live: &Live, fixed: &Fixed) -> Exposition {
        let (runs, running, step, namespace, backends) = {
            let state = live.state();
            let backends = match (&state.backends, state.runs.last()) {
                (Some((run, others)), Some(last)) if state.running => Some(Backends {
                    labels: last.labels.pairs(),
                    run: run.clone(),
                    others: others.clone(),
                }),
                _ => None,
            };
            (
                state.runs.clone(),
                state.running,
                state.step.clone(),
                state.namespace.clone(),
                backends,
            )
        };
        Exposition {
            constant: fixed.constant.clone(),
            namespace,
            runs: Self::of_runs(&runs),
            running,
            cpu_seconds: crate::observe::cpu::process_cpu_us() as f64 / 1e6,
            generator: fixed.generator,
            step,
            backends,
        }
    }

    fn of_runs(runs: &[std::sync::Arc<LiveRun>]) -> Vec<RunFigures> {
        runs.iter()
            .map(|run| RunFigures {
                labels: run.labels.pairs(),
                scripts: run.scripts.clone(),
                figures: run.total(),
            })
            .collect()
    }

    fn labels(&self, run: &[(String, String)], extra: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut labels = self.constant.clone();
        labels.extend(run.iter().cloned());
        labels.extend(
            extra
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        labels
    }
}

/// A value each histogram bucket stands for, s: its middle.
fn middle_seconds(low_us: u64, next_us: u64) -> f64 {
    (low_us as f64 + (next_us - low_us) as f64 / 2.0) / 1e6
}

/// The classic buckets (upper bound, count in it) of `h`, `+Inf` last.
pub fn classic_buckets(h: &IntervalHistogram) -> Vec<(f64, u64)> {
    let mut buckets: Vec<(f64, u64)> = CLASSIC_BOUNDS
        .iter()
        .chain(std::iter::once(&f64::INFINITY))
        .map(|b| (*b, 0))
        .collect();
    for (low, next, count) in h.buckets() {
        let value = middle_seconds(low, next);
        if let Some(bucket) = buckets.iter_mut().find(|(bound, _)| value <= *bound) {
            bucket.1 += count;
        }
    }
    buckets
}

/// The index of the native bucket holding `value` (> 0): bucket `i`
/// holds (2^((i-1)/2^schema), 2^(i/2^schema)].
pub fn native_index(value: f64) -> i32 {
    (value.log2() * f64::from(1u32 << NATIVE_SCHEMA)).ceil() as i32
}

/// The positive native buckets of `h` as spans (offset, length) and
/// deltas between neighbouring counts, as the protobuf format wants them.
pub fn native_buckets(h: &IntervalHistogram) -> (Vec<(i32, u32)>, Vec<i64>) {
    let mut counts: Vec<(i32, u64)> = Vec::new();
    for (low, next, count) in h.buckets() {
        let index = native_index(middle_seconds(low, next));
        match counts.last_mut() {
            Some((last, c)) if *last == index => *c += count,
            _ => counts.push((index, count)),
        }
    }
    let mut spans: Vec<(i32, u32)> = Vec::new();
    let mut deltas = Vec::with_capacity(counts.len());
    let mut previous: Option<(i32, u64)> = None;
    for (index, count) in counts {
        match previous {
            Some((p, _)) if index == p + 1 => {
                if let Some(span) = spans.last_mut() {
                    span.1 += 1;
                }
            }
            Some((p, _)) => spans.push((index - p - 1, 1)),
            None => spans.push((index, 1)),
        }
        let before = previous.map_or(0, |(_, c)| c);
        deltas.push(count as i64 - before as i64);
        previous = Some((index, count));
    }
    (spans, deltas)
}

/// Transaction counts of one script by outcome, with the SQLSTATE of a
/// failure where it has one.
fn outcomes(c: &Counters) -> [(&'static str, &'static str, &'static str, u64); 5] {
    [
        ("committed", "", "", c.committed),
        ("skipped", "", "", c.skipped),
        (
            "failed",
            "serialization_failure",
            "40001",
            c.serialization_failures,
        ),
        ("failed", "deadlock_detected", "40P01", c.deadlock_failures),
        ("failed", "other", "", c.other_failures),
    ]
}

/// A counter or gauge value.
pub enum Value {
    Counter(f64),
    CounterInt(u64),
    Gauge(f64),
}

impl Value {
    pub fn as_f64(&self) -> f64 {
        match self {
            Value::Counter(v) | Value::Gauge(v) => *v,
            Value::CounterInt(v) => *v as f64,
        }
    }

    fn encode(&self, m: &mut MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        match self {
            Value::Counter(v) => m.encode_counter::<NoLabelSet, _, f64>(v, None),
            Value::CounterInt(v) => m.encode_counter::<NoLabelSet, _, f64>(v, None),
            Value::Gauge(v) => m.encode_gauge(v),
        }
    }
}

/// A family of counters or gauges: its name (without a counter's
/// `_total`), help, type and series.
pub struct Family {
    pub name: &'static str,
    pub help: &'static str,
    pub kind: MetricType,
    pub series: Vec<(Vec<(String, String)>, Value)>,
}

impl Family {
    fn new(name: &'static str, help: &'static str, kind: MetricType) -> Family {
        Family {
            name,
            help,
            kind,
            series: Vec::new(),
        }
    }

    fn encode(&self, encoder: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        if self.series.is_empty() {
            return Ok(());
        }
        let mut m = encoder.encode_descriptor(self.name, self.help, None, self.kind)?;
        for (labels, value) in &self.series {
            value.encode(&mut m.encode_family(labels)?)?;
        }
        Ok(())
    }
}

impl Exposition {
    fn encode_duration(&self, encoder: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let mut m =
            encoder.encode_descriptor(DURATION_NAME, DURATION_HELP, None, MetricType::Histogram)?;
        for run in &self.runs {
            let figures = &run.figures;
            let labels = self.duration_labels(run);
            let (spans, deltas) = native_buckets(&figures.latency);
            let native = NativeHistogram {
                schema: NATIVE_SCHEMA,
                zero_threshold: ZERO_THRESHOLD,
                zero_count: 0,
                negative: NativeHistogramBuckets {
                    spans: &[],
                    deltas: &[],
                },
                positive: NativeHistogramBuckets {
                    spans: &spans,
                    deltas: &deltas,
                },
                created: None,
            };
            let mut s = m.encode_family(&labels)?;
            s.encode_histogram_with_native::<NoLabelSet>(
                figures.latency_sum_us as f64 / 1e6,
                figures.latency.len(),
                &classic_buckets(&figures.latency),
                None,
                native,
            )?;
        }
        Ok(())
    }

    /// The labels of a run's latency histogram.
    pub fn duration_labels(&self, run: &RunFigures) -> Vec<(String, String)> {
        self.labels(
            &run.labels,
            &[
                ("db_system_name", "postgresql"),
                ("db_namespace", &self.namespace),
            ],
        )
    }

    /// Every counter and gauge family.
    pub fn families(&self) -> Vec<Family> {
        let mut transactions = Family::new("pgbolt_transactions", "Transactions by script and outcome (a retried one counts once, under its final outcome)", MetricType::Counter);
        let mut retried = Family::new(
            "pgbolt_transactions_retried",
            "Transactions retried at least once",
            MetricType::Counter,
        );
        let mut retries = Family::new(
            "pgbolt_retries",
            "Retries over all transactions",
            MetricType::Counter,
        );
        let mut lag = Family::new(
            "pgbolt_schedule_lag_seconds",
            "Sum of the schedule lag of committed transactions (-R)",
            MetricType::Counter,
        );
        let mut connected = Family::new(
            "pgbolt_clients_connected",
            "Clients with a connection",
            MetricType::Gauge,
        );
        for RunFigures {
            labels: run,
            scripts,
            figures,
        } in &self.runs
        {
            for (name, counts) in scripts.iter().zip(&figures.scripts) {
                for (outcome, error_type, sqlstate, n) in outcomes(counts) {
                    let mut extra = vec![("script", name.as_str()), ("outcome", outcome)];
                    if !error_type.is_empty() {
                        extra.push(("error_type", error_type));
                    }
                    if !sqlstate.is_empty() {
                        extra.push(("db_response_status_code", sqlstate));
                    }
                    transactions
                        .series
                        .push((self.labels(run, &extra), Value::CounterInt(n)));
                }
                let labels = self.labels(run, &[("script", name.as_str())]);
                retried
                    .series
                    .push((labels.clone(), Value::CounterInt(counts.retried)));
                retries
                    .series
                    .push((labels, Value::CounterInt(counts.retries)));
            }
            let labels = self.labels(run, &[]);
            lag.series.push((
                labels.clone(),
                Value::Counter(figures.lag_sum_us as f64 / 1e6),
            ));
            connected
                .series
                .push((labels, Value::Gauge(f64::from(figures.connected))));
        }
        let constant = self.labels(&[], &[]);
        let mut cpu = Family::new(
            "pgbolt_client_cpu_seconds",
            "CPU time of the pgbolt process (user and system)",
            MetricType::Counter,
        );
        cpu.series
            .push((constant.clone(), Value::Counter(self.cpu_seconds)));
        let mut running = Family::new(
            "pgbolt_running",
            "1 while a run is going on, 0 between runs and after the last",
            MetricType::Gauge,
        );
        running
            .series
            .push((constant, Value::Gauge(if self.running { 1.0 } else { 0.0 })));
        let mut generator = Family::new(
            "pgbolt_generator_index",
            "This generator's index in its fleet",
            MetricType::Gauge,
        );
        if let Some((index, count)) = self.generator {
            let labels = self.labels(&[], &[("generators", &count.to_string())]);
            generator
                .series
                .push((labels, Value::Gauge(f64::from(index))));
        }
        let mut step = Family::new(
            "pgbolt_study_step",
            "The study's current step, from 1",
            MetricType::Gauge,
        );
        if let Some(current) = &self.step {
            let index = current.step.unwrap_or_default();
            // The step's labels but `phase` (a warm-up is the same step)
            // and `step` itself, which is the value.
            let labels: Vec<(String, String)> = current
                .pairs()
                .into_iter()
                .filter(|(name, _)| name != "phase" && name != "step")
                .collect();
            step.series
                .push((self.labels(&labels, &[]), Value::Gauge(index as f64)));
        }
        vec![
            transactions,
            retried,
            retries,
            lag,
            connected,
            cpu,
            running,
            generator,
            step,
            self.backend_family(),
        ]
    }

    /// The backends of the monitor's latest sample, by whose they are and
    /// by state (the diagnosis's classes), while a run goes on.
    fn backend_family(&self) -> Family {
        let mut family = Family::new(
            "pgbolt_server_backends",
            "Backends of the run's database in each state at the monitor's latest sample, by kind (the run's clients, autovacuum, other sessions)",
            MetricType::Gauge,
        );
        let Some(b) = &self.backends else {
            return family;
        };
        let mut kinds = vec![("run", &b.run)];
        if let Some(others) = &b.others {
            kinds.push(("autovacuum", &others.autovacuum));
            kinds.push(("same_name", &others.same_name));
            kinds.push(("other_clients", &others.other_clients));
        }
        for (kind, counts) in kinds {
            let fixed = [
                ("on_cpu", counts.on_cpu),
                ("client", counts.client),
                ("idle_in_transaction", counts.idle_in_transaction),
                ("other", counts.other),
            ];
            let waits = counts
                .waiting
                .iter()
                .map(|(wait, n)| (("waiting", wait.as_str()), *n));
            let states = fixed.into_iter().map(|(state, n)| ((state, ""), n));
            for ((state, wait), n) in states.chain(waits) {
                let mut extra = vec![("kind", kind), ("state", state)];
                if !wait.is_empty() {
                    extra.push(("wait_event_type", wait));
                }
                family
                    .series
                    .push((self.labels(&b.labels, &extra), Value::Gauge(n as f64)));
            }
        }
        family
    }
}

impl Collector for Exposition {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        self.encode_duration(&mut encoder)?;
        for family in self.families() {
            family.encode(&mut encoder)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::IntervalRecorder;

    fn histogram(values_us: &[i64]) -> IntervalHistogram {
        let mut r = IntervalRecorder::new();
        for v in values_us {
            r.record(*v);
        }
        r.take()
    }

    #[test]
    fn classic_buckets_count_every_value_once() {
        let h = histogram(&[500, 900, 3_000, 20_000, 20_000, 2_000_000, 50_000_000]);
        let buckets = classic_buckets(&h);
        let counts: Vec<u64> = buckets.iter().map(|b| b.1).collect();
        assert_eq!(counts, [2, 1, 0, 2, 0, 0, 0, 1, 0, 1]);
        assert_eq!(buckets.last().map(|b| b.0), Some(f64::INFINITY));
    }

    #[test]
    fn native_buckets_hold_each_value_in_the_bucket_of_its_middle() {
        let h = histogram(&[1_000, 1_000, 1_030, 8_000]);
        let (spans, deltas) = native_buckets(&h);
        // 1 ms is 2^-9.97: bucket ceil(-9.97 * 16) = -159; 1.03 ms -158
        // (with 1 ms in one series bucket, 1.03 ms in the next); 8 ms
        // -111 (its series bucket's middle is above 2^-7 s).
        let index = |v: f64| native_index(v);
        assert_eq!(index(0.001_015_5), -159);
        let mut expanded = Vec::new();
        let mut at = 0;
        let mut count = 0i64;
        let mut deltas = deltas.iter();
        for (i, (offset, length)) in spans.iter().enumerate() {
            at += offset + if i == 0 { 0 } else { 1 };
            for n in 0..*length {
                count += deltas.next().expect("a delta per bucket");
                expanded.push((at + n as i32, count));
            }
            at += *length as i32 - 1;
        }
        let total: i64 = expanded.iter().map(|b| b.1).sum();
        assert_eq!(total, 4);
        assert_eq!(expanded.first().map(|b| b.1), Some(2));
        for window in expanded.windows(2) {
            assert!(window[0].0 < window[1].0, "{expanded:?}");
        }
    }

    #[test]
    fn the_latest_samples_backends_are_served_by_kind_and_state() {
        let mut e = Exposition {
            constant: Vec::new(),
            namespace: "bench".to_owned(),
            runs: Vec::new(),
            running: true,
            cpu_seconds: 0.0,
            generator: None,
            step: None,
            backends: None,
        };
        assert!(e.backend_family().series.is_empty());
        let mut run = StateCounts {
            on_cpu: 3,
            client: 5,
            ..StateCounts::default()
        };
        run.waiting.insert("Lock".to_owned(), 2);
        let mut others = OtherSessions::default();
        others.autovacuum.on_cpu = 1;
        e.backends = Some(Backends {
            labels: vec![("phase".to_owned(), "measured".to_owned())],
            run: run.clone(),
            others: None,
        });
        // Before PostgreSQL 10: the run's backends only.
        assert_eq!(e.backend_family().series.len(), 4 + 1);
        e.backends = Some(Backends {
            labels: vec![("phase".to_owned(), "measured".to_owned())],
            run,
            others: Some(others),
        });
        let family = e.backend_family();
        let value = |wanted: &[(&str, &str)]| {
            family
                .series
                .iter()
                .filter(|(labels, _)| {
                    wanted
                        .iter()
                        .all(|(k, v)| labels.iter().any(|(lk, lv)| lk == k && lv == v))
                })
                .map(|(_, v)| v.as_f64())
                .sum::<f64>()
        };
        assert_eq!(value(&[("kind", "run")]), 10.0);
        assert_eq!(
            value(&[
                ("kind", "run"),
                ("state", "waiting"),
                ("wait_event_type", "Lock")
            ]),
            2.0
        );
        assert_eq!(value(&[("kind", "autovacuum"), ("state", "on_cpu")]), 1.0);
        assert_eq!(
            value(&[("kind", "other_clients"), ("phase", "measured")]),
            0.0
        );
        assert_eq!(family.series.len(), 4 * 4 + 1);
    }

    #[test]
    fn an_empty_histogram_has_no_native_bucket() {
        assert_eq!(
            native_buckets(&IntervalHistogram::default()),
            (vec![], vec![])
        );
    }
}
