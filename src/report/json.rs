//! JSON output, reading results back, and merging results exactly.
//!
//! A result file carries exact sums and serialized histograms, not only
//! the rounded figures, so results written by several load generators (or
//! several runs) merge into exactly the report one process recording every
//! transaction would have produced.

use super::check::Check;
use crate::model::run::{
    command_result, per_second, series, Counts, Distribution, ReportError, RunContext, RunResult,
    ScriptResult, Series, SCHEMA_VERSION,
};
use crate::stats::{IntervalHistogram, IntervalSeries, LatencyHistogram, SimpleStats};

/// The result as pretty-printed JSON.
pub fn to_json(result: &RunResult) -> Result<String, ReportError> {
    serde_json::to_string_pretty(result).map_err(ReportError::Json)
}

/// Reads a result written by [`to_json`], checking its schema version.
///
/// A version 1 file is read as version 2 without what version 1 did not
/// record: no per-interval histograms and percentiles, no context; its
/// p99.99 figures are computed from its histograms.
pub fn from_json(text: &str) -> Result<RunResult, ReportError> {
    #[derive(serde::Deserialize)]
    struct Version {
        schema_version: u32,
        kind: Option<String>,
    }
    let version: Version = serde_json::from_str(text).map_err(ReportError::Json)?;
    if let Some(kind) = version.kind {
        return Err(ReportError::Kind(kind));
    }
    if !(1..=SCHEMA_VERSION).contains(&version.schema_version) {
        return Err(ReportError::SchemaVersion {
            found: version.schema_version,
        });
    }
    let mut result: RunResult = serde_json::from_str(text).map_err(ReportError::Json)?;
    if result.schema_version == 1 {
        upgrade_version_1(&mut result)?;
    }
    Ok(result)
}

/// Reads a result file: the JSON written by [`to_json`], or an HTML report,
/// whose embedded result is read; its fields pass [`super::check`].
pub fn read_result(text: &str) -> Result<RunResult, ReportError> {
    let result = match super::html::embedded_json(text) {
        Some(json) if text.trim_start().starts_with('<') => from_json(json),
        _ => from_json(text),
    }?;
    result.check()?;
    Ok(result)
}

/// Fills in what version 2 adds and version 1 can give: p99.99.
fn upgrade_version_1(result: &mut RunResult) -> Result<(), ReportError> {
    let mut distributions = vec![
        &mut result.latency,
        &mut result.service_time,
        &mut result.lag,
    ];
    distributions.extend(result.scripts.iter_mut().map(|s| &mut s.latency));
    for d in distributions {
        *d = Distribution::new(d.stats, &d.decode_histogram()?)?;
    }
    result.schema_version = SCHEMA_VERSION;
    Ok(())
}

/// The result as JSON on one line, as the HTML report embeds it.
pub fn to_compact_json(result: &RunResult) -> Result<String, ReportError> {
    serde_json::to_string(result).map_err(ReportError::Json)
}

/// Merges results of runs of the same scripts (for example one per load
/// generator): counts, sums and histograms add; clients and threads add;
/// the benchmarking time is the longest one.
pub fn merge(results: &[RunResult]) -> Result<RunResult, ReportError> {
    let (first, rest) = results.split_first().ok_or(ReportError::NothingToMerge)?;
    let mut merged = first.clone();
    if rest.is_empty() {
        return Ok(merged);
    }
    // Histograms are decoded once, added, and encoded once at the end:
    // encoding is the costly part (deflate), and a fleet has many results.
    let mut latency = Sum::of(&first.latency)?;
    let mut service = Sum::of(&first.service_time)?;
    let mut lag = Sum::of(&first.lag)?;
    let mut pool_wait = first.pool_wait.as_ref().map(Sum::of).transpose()?;
    let mut scripts = first
        .scripts
        .iter()
        .map(|s| Sum::of(&s.latency))
        .collect::<Result<Vec<_>, _>>()?;
    let mut all = series_of(&first.series)?;
    for r in rest {
        if r.options.scripts != merged.options.scripts {
            return Err(ReportError::ScriptsDiffer);
        }
        let o = &mut merged.options;
        o.clients += r.options.clients;
        o.threads += r.options.threads;
        let t = &mut merged.timings;
        t.bench_duration_us = t.bench_duration_us.max(r.timings.bench_duration_us);
        t.initial_connection_us = t.initial_connection_us.max(r.timings.initial_connection_us);
        t.total_connection_us += r.timings.total_connection_us;
        merged.aborted |= r.aborted;
        merged.merged_runs += r.merged_runs;
        merge_counts(&mut merged.counts, &r.counts);
        latency.add(&r.latency)?;
        service.add(&r.service_time)?;
        lag.add(&r.lag)?;
        match (pool_wait.as_mut(), &r.pool_wait) {
            (Some(sum), Some(theirs)) => sum.add(theirs)?,
            (None, Some(theirs)) => pool_wait = Some(Sum::of(theirs)?),
            _ => {}
        }
        for ((mine, sum), theirs) in merged.scripts.iter_mut().zip(&mut scripts).zip(&r.scripts) {
            merge_counts(&mut mine.counts, &theirs.counts);
            sum.add(&theirs.latency)?;
            merge_commands(mine, theirs);
        }
        all.merge(&series_of(&r.series)?);
    }
    merged.context = merged_context(results);
    merged.diagnosis = None;
    merged.outage = None;
    merged.latency = latency.finish()?;
    merged.service_time = service.finish()?;
    merged.lag = lag.finish()?;
    merged.pool_wait = pool_wait.map(Sum::finish).transpose()?;
    for (mine, sum) in merged.scripts.iter_mut().zip(scripts) {
        mine.latency = sum.finish()?;
    }
    merged.series = series(&all);
    let seconds = merged.timings.bench_duration_us as f64 / 1_000_000.0;
    merged.tps = per_second(merged.counts.counters.committed, seconds);
    for s in &mut merged.scripts {
        s.tps = per_second(s.counts.counters.committed, seconds);
    }
    Ok(merged)
}

/// A distribution being added up: exact sums and the decoded histogram.
struct Sum {
    stats: SimpleStats,
    histogram: LatencyHistogram,
}

impl Sum {
    fn of(d: &Distribution) -> Result<Sum, ReportError> {
        Ok(Sum {
            stats: d.stats,
            histogram: d.decode_histogram()?,
        })
    }

    fn add(&mut self, d: &Distribution) -> Result<(), ReportError> {
        if self.stats.count.checked_add(d.stats.count).is_none() {
            return Err(ReportError::Impossible(
                "the latency distributions' counts add up past 2^64".to_owned(),
            ));
        }
        self.stats.merge(&d.stats);
        self.histogram.merge(&d.decode_histogram()?);
        Ok(())
    }

    fn finish(self) -> Result<Distribution, ReportError> {
        Ok(Distribution::new(self.stats, &self.histogram)?)
    }
}

fn series_of(s: &Series) -> Result<IntervalSeries, ReportError> {
    let mut parts = Vec::with_capacity(s.intervals.len());
    for i in &s.intervals {
        let h = match &i.latency_histogram {
            Some(text) => IntervalHistogram::decode(text)?,
            None => IntervalHistogram::default(),
        };
        parts.push((i.stats, h));
    }
    Ok(IntervalSeries::from_parts(s.start_us, s.width_us, &parts))
}

/// What the results' contexts agree on: the server's version and
/// settings when every result names the same, the first start and the
/// last end; no command line (each generator has its own).
fn merged_context(results: &[RunResult]) -> RunContext {
    let same = |f: fn(&RunContext) -> Option<String>| {
        let first = f(&results[0].context)?;
        results[1..]
            .iter()
            .all(|r| f(&r.context).as_ref() == Some(&first))
            .then_some(first)
    };
    let settings = &results[0].context.server_settings;
    let times = |f: fn(&RunContext) -> Option<i64>| results.iter().map(move |r| f(&r.context));
    RunContext {
        command_line: None,
        server_version: same(|c| c.server_version.clone()),
        server_settings: if results
            .iter()
            .all(|r| &r.context.server_settings == settings)
        {
            settings.clone()
        } else {
            Default::default()
        },
        started_us: times(|c| c.started_us)
            .collect::<Option<Vec<_>>>()
            .and_then(|t| t.into_iter().min()),
        ended_us: times(|c| c.ended_us)
            .collect::<Option<Vec<_>>>()
            .and_then(|t| t.into_iter().max()),
    }
}

fn merge_counts(mine: &mut Counts, theirs: &Counts) {
    mine.counters.merge(&theirs.counters);
    mine.latency_late += theirs.latency_late;
    mine.failed = mine.counters.failures();
    mine.total = mine.counters.total();
}

fn merge_commands(mine: &mut ScriptResult, theirs: &ScriptResult) {
    for (m, t) in mine.commands.iter_mut().zip(&theirs.commands) {
        let mut stats = crate::stats::CommandStats {
            latency: m.latency,
            failures: m.failures + t.failures,
            retries: m.retries + t.retries,
        };
        stats.latency.merge(&t.latency);
        *m = command_result(&m.command, stats);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::run::Timings;
    use crate::model::run::{RunLimit, RunOptions, ScriptInfo};
    use crate::stats::{Outcome, StatsLayout, ThreadStats, Transaction};
    use serde_json::Value;

    fn result() -> RunResult {
        let mut stats = ThreadStats::new(&StatsLayout {
            commands_per_script: vec![1],
            latency_limit_us: None,
            throttled: false,
            start_us: 0,
            series: true,
        });
        for i in 0..5_000i64 {
            stats.record_transaction(&Transaction {
                script: 0,
                outcome: Outcome::Committed,
                tries: 1,
                latency_us: 100 + i * 37 % 9_000,
                lag_us: 0,
                end_us: i * 1_000,
            });
        }
        let options = RunOptions {
            scripts: vec![ScriptInfo {
                name: "a.sql".into(),
                weight: 1,
                commands: vec!["SELECT 1;".into()],
                sha256: None,
            }],
            scale: 1,
            partitioning: None,
            query_mode: "simple".into(),
            clients: 1,
            threads: 1,
            max_tries: 1,
            limit: RunLimit::DurationSeconds(5),
            rate: None,
            latency_limit_us: None,
            progress_s: None,
            connect_per_transaction: false,
            pool_size: None,
            failures_detailed: false,
            report_per_command: false,
            continue_on_error: false,
            warmup_s: 0,
            variables: Default::default(),
        };
        let timings = Timings {
            bench_duration_us: 5_000_000,
            ..Timings::default()
        };
        RunResult::build(options, timings, false, &stats).expect("result")
    }

    #[test]
    fn version_2_reads_back_exactly() {
        let r = result();
        assert_eq!(r.schema_version, 2);
        assert!(r
            .series
            .intervals
            .iter()
            .all(|i| i.latency_histogram.is_some()));
        assert_eq!(from_json(&to_json(&r).expect("json")).expect("read"), r);
        assert_eq!(
            read_result(&to_compact_json(&r).expect("json")).expect("read"),
            r
        );
    }

    /// A file of the first layout: no context, no p99.99, no histograms
    /// per interval.
    #[test]
    fn version_1_files_are_still_read() {
        let r = result();
        let mut v: Value = serde_json::from_str(&to_json(&r).expect("json")).expect("value");
        v["schema_version"] = 1.into();
        v.as_object_mut().expect("object").remove("context");
        for d in ["latency", "service_time", "lag"] {
            v[d]["percentiles"]
                .as_object_mut()
                .expect("percentiles")
                .remove("p99_99");
        }
        v["scripts"][0]["latency"]["percentiles"]
            .as_object_mut()
            .expect("percentiles")
            .remove("p99_99");
        for i in v["series"]["intervals"].as_array_mut().expect("intervals") {
            i.as_object_mut()
                .expect("interval")
                .remove("latency_histogram");
        }
        let read = from_json(&v.to_string()).expect("version 1 reads");
        assert_eq!(read.schema_version, SCHEMA_VERSION);
        assert_eq!(read.latency, r.latency);
        assert_eq!(read.scripts, r.scripts);
        assert_eq!(read.context, RunContext::default());
        assert!(read
            .series
            .intervals
            .iter()
            .all(|i| i.latency_histogram.is_none()));
        let page = crate::report::render_html(&read, 0).expect("renders");
        assert!(page.contains("schema version 1"));
    }

    /// Merged results' intervals carry the histograms of both.
    #[test]
    fn merging_adds_the_interval_histograms() {
        let r = result();
        let merged = merge(&[r.clone(), r.clone()]).expect("merge");
        assert_eq!(merged.series.intervals.len(), r.series.intervals.len());
        for (m, one) in merged.series.intervals.iter().zip(&r.series.intervals) {
            let h = IntervalHistogram::decode(m.latency_histogram.as_deref().expect("histogram"))
                .expect("decodes");
            assert_eq!(h.len(), 2 * one.stats.counts.committed);
            assert_eq!(
                m.latency_percentiles().expect("percentiles"),
                one.latency_percentiles().expect("percentiles")
            );
        }
        assert_eq!(merged.context, RunContext::default());
    }

    #[test]
    fn other_versions_are_refused() {
        let mut v: Value = serde_json::from_str(&to_json(&result()).expect("json")).expect("v");
        for version in [0, 3] {
            v["schema_version"] = version.into();
            let err = from_json(&v.to_string()).expect_err("refused");
            assert_eq!(
                err.to_string(),
                format!(
                    "result file has schema version {version}, this pgbolt reads versions 1 to 2"
                )
            );
        }
    }
}
