//! JSON output, reading results back, and merging results exactly.
//!
//! A result file carries exact sums and serialized histograms, not only
//! the rounded figures, so results written by several load generators (or
//! several runs) merge into exactly the report one process recording every
//! transaction would have produced.

use super::model::{
    command_result, per_second, series, Counts, Distribution, ReportError, RunResult, ScriptResult,
    SCHEMA_VERSION,
};
use crate::stats::{IntervalSeries, SimpleStats};

/// The result as pretty-printed JSON.
pub fn to_json(result: &RunResult) -> Result<String, ReportError> {
    serde_json::to_string_pretty(result).map_err(ReportError::Json)
}

/// Reads a result written by [`to_json`], checking its schema version.
pub fn from_json(text: &str) -> Result<RunResult, ReportError> {
    #[derive(serde::Deserialize)]
    struct Version {
        schema_version: u32,
    }
    let version: Version = serde_json::from_str(text).map_err(ReportError::Json)?;
    if version.schema_version != SCHEMA_VERSION {
        return Err(ReportError::SchemaVersion {
            found: version.schema_version,
        });
    }
    serde_json::from_str(text).map_err(ReportError::Json)
}

/// Merges results of runs of the same scripts (for example one per load
/// generator): counts, sums and histograms add; clients and threads add;
/// the benchmarking time is the longest one.
pub fn merge(results: &[RunResult]) -> Result<RunResult, ReportError> {
    let (first, rest) = results.split_first().ok_or(ReportError::NothingToMerge)?;
    let mut merged = first.clone();
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
        merged.latency = merge_distribution(&merged.latency, &r.latency)?;
        merged.service_time = merge_distribution(&merged.service_time, &r.service_time)?;
        merged.lag = merge_distribution(&merged.lag, &r.lag)?;
        for (mine, theirs) in merged.scripts.iter_mut().zip(&r.scripts) {
            merge_script(mine, theirs)?;
        }
        let mut s = IntervalSeries::from_parts(
            merged.series.start_us,
            merged.series.width_us,
            &merged
                .series
                .intervals
                .iter()
                .map(|i| i.stats)
                .collect::<Vec<_>>(),
        );
        s.merge(&IntervalSeries::from_parts(
            r.series.start_us,
            r.series.width_us,
            &r.series
                .intervals
                .iter()
                .map(|i| i.stats)
                .collect::<Vec<_>>(),
        ));
        merged.series = series(&s);
    }
    let seconds = merged.timings.bench_duration_us as f64 / 1_000_000.0;
    merged.tps = per_second(merged.counts.counters.committed, seconds);
    for s in &mut merged.scripts {
        s.tps = per_second(s.counts.counters.committed, seconds);
    }
    Ok(merged)
}

fn merge_counts(mine: &mut Counts, theirs: &Counts) {
    mine.counters.merge(&theirs.counters);
    mine.latency_late += theirs.latency_late;
    mine.failed = mine.counters.failures();
    mine.total = mine.counters.total();
}

fn merge_distribution(a: &Distribution, b: &Distribution) -> Result<Distribution, ReportError> {
    let mut stats: SimpleStats = a.stats;
    stats.merge(&b.stats);
    let mut h = a.decode_histogram()?;
    h.merge(&b.decode_histogram()?);
    Ok(Distribution::new(stats, &h)?)
}

fn merge_script(mine: &mut ScriptResult, theirs: &ScriptResult) -> Result<(), ReportError> {
    merge_counts(&mut mine.counts, &theirs.counts);
    mine.latency = merge_distribution(&mine.latency, &theirs.latency)?;
    for (m, t) in mine.commands.iter_mut().zip(&theirs.commands) {
        let mut stats = crate::stats::CommandStats {
            latency: m.latency,
            failures: m.failures + t.failures,
            retries: m.retries + t.retries,
        };
        stats.latency.merge(&t.latency);
        *m = command_result(&m.command, stats);
    }
    Ok(())
}
