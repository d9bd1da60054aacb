//! `--merge`: the results of a fleet's generators added into the result of
//! the whole benchmark.
//!
//! Counts, exact sums and histograms add ([`crate::report::merge`]), so the
//! merged percentiles are those of every transaction of the fleet, not an
//! average of percentiles; the series are placed on wall-clock intervals.
//! Before adding, the results are checked to be one run's: the same run id
//! and number of generators, no index twice, none missing (unless
//! `--allow-partial`, and then the report names the missing ones), the
//! same scripts and schema version, and measured windows that start and
//! end together within [`window_tolerance_us`].
//!
//! A result file is read from outside, so nothing in it is trusted before
//! it is checked ([`check_fields`]): a fleet has from 1 to
//! [`MAX_GENERATORS`] generators (a `generator.count` of 4294967295 would
//! otherwise make a list of four billion missing ones), each index is
//! below the count, and the counts that are added (clients, threads,
//! transactions, failures, ...) are added first with checked arithmetic,
//! so a sum that would wrap is refused naming the file and the field.

use std::fmt;

use crate::model::generators::{GeneratorInfo, GeneratorSummary};
use crate::model::run::RunResult;
use crate::report;

/// The most generators a fleet may have.
pub const MAX_GENERATORS: u32 = 100_000;

/// Why results cannot be merged.
#[derive(Debug, Clone, PartialEq)]
pub enum MergeError {
    /// A file could not be read or is not a result.
    Read {
        path: String,
        message: String,
    },
    /// A count or an index that cannot be: the file, the field, its value
    /// and what it must be.
    BadField {
        path: String,
        field: &'static str,
        value: u64,
        must: String,
    },
    /// Adding this field of this file to the others' would overflow.
    SumOverflows {
        path: String,
        field: String,
    },
    /// A result without generator information (an older pgbolt).
    NoGenerator {
        path: String,
    },
    SchemaVersions {
        first: (String, u32),
        other: (String, u32),
    },
    DifferentRuns {
        first: (String, String),
        other: (String, String),
    },
    DifferentCounts {
        first: (String, u32),
        other: (String, u32),
    },
    DuplicateIndex {
        index: u32,
        paths: [String; 2],
    },
    Missing {
        missing: Vec<u32>,
        count: u32,
    },
    WindowsApart {
        spread_us: i64,
        tolerance_us: i64,
    },
    /// The library merge refused (different scripts).
    Report(String),
}

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MergeError::Read { path, message } => write!(f, "result file \"{path}\": {message}"),
            MergeError::BadField {
                path,
                field,
                value,
                must,
            } => write!(
                f,
                "result file \"{path}\": {field} is {value}, which cannot be: it must be {must}"
            ),
            MergeError::SumOverflows { path, field } => write!(
                f,
                "result file \"{path}\": its {field} added to the other files' is too large to count; \
                 it cannot be a real result"
            ),
            MergeError::NoGenerator { path } => write!(
                f,
                "result file \"{path}\" does not say which generator wrote it (written by an older pgbolt)"
            ),
            MergeError::SchemaVersions { first, other } => write!(
                f,
                "results of different schema versions: \"{}\" has {}, \"{}\" has {}",
                first.0, first.1, other.0, other.1
            ),
            MergeError::DifferentRuns { first, other } => write!(
                f,
                "results of different runs: \"{}\" is of run {}, \"{}\" of run {} (generators of one run share their command line and --start-at, or --run-id)",
                first.0, first.1, other.0, other.1
            ),
            MergeError::DifferentCounts { first, other } => write!(
                f,
                "results of fleets of different sizes: \"{}\" is one of {}, \"{}\" one of {}",
                first.0, first.1, other.0, other.1
            ),
            MergeError::DuplicateIndex { index, paths } => write!(
                f,
                "generator {index} appears twice: \"{}\" and \"{}\"",
                paths[0], paths[1]
            ),
            MergeError::Missing { missing, count } => write!(
                f,
                "generator{} {} of {count} missing; merge the others anyway with --allow-partial",
                if missing.len() == 1 { "" } else { "s" },
                crate::report::text::generators::list(missing)
            ),
            MergeError::WindowsApart {
                spread_us,
                tolerance_us,
            } => write!(
                f,
                "the generators' measured windows do not line up: their starts or ends are {:.3} s apart, more than the {:.3} s allowed (start them together with --start-at)",
                *spread_us as f64 / 1e6,
                *tolerance_us as f64 / 1e6
            ),
            MergeError::Report(message) => f.write_str(message),
        }
    }
}

/// How far apart the generators' windows may start or end: a tenth of the
/// shortest window, at least 1 s.
pub fn window_tolerance_us(windows: &[(i64, i64)]) -> i64 {
    let shortest = windows.iter().map(|(s, e)| e - s).min().unwrap_or(0);
    (shortest / 10).max(crate::config::fleet::LATE_TOLERANCE_US)
}

/// A result with the file it came from and the generator that wrote it.
type Entry<'a> = (&'a str, &'a GeneratorInfo, &'a RunResult);

/// The merged result of `results` (each with the file it came from), and
/// the indexes of the generators missing from it.
pub fn merge_results(
    results: &[(String, RunResult)],
    allow_partial: bool,
) -> Result<(RunResult, Vec<u32>), MergeError> {
    let mut infos = generator_infos(results)?;
    check_fields(&infos)?;
    check_one_run(&infos)?;
    infos.sort_by_key(|(_, info, _)| info.index);
    let missing = missing_generators(&infos, allow_partial)?;
    check_windows(&infos)?;
    let sorted: Vec<RunResult> = infos.iter().map(|(_, _, r)| (*r).clone()).collect();
    let mut merged = report::merge(&sorted).map_err(|e| MergeError::Report(e.to_string()))?;
    merged.generators = infos.iter().map(generator_summary).collect();
    merged.generator = None;
    let generators: Vec<(u32, &RunResult)> = infos.iter().map(|(_, i, r)| (i.index, *r)).collect();
    super::diagnosis::diagnose_fleet(&mut merged, &generators);
    Ok((merged, missing))
}

/// Each result with the generator that wrote it; an error for the first
/// result that does not say.
fn generator_infos(results: &[(String, RunResult)]) -> Result<Vec<Entry<'_>>, MergeError> {
    let mut infos: Vec<Entry<'_>> = Vec::new();
    for (path, r) in results {
        let info = r
            .generator
            .as_ref()
            .ok_or_else(|| MergeError::NoGenerator { path: path.clone() })?;
        infos.push((path, info, r));
    }
    Ok(infos)
}

/// Checks what a file says before anything uses it: the generator's count
/// and index, and that the counts the merge adds do not overflow.
fn check_fields(infos: &[Entry<'_>]) -> Result<(), MergeError> {
    for &(path, info, _) in infos {
        if !(1..=MAX_GENERATORS).contains(&info.count) {
            return Err(MergeError::BadField {
                path: path.to_owned(),
                field: "generator.count",
                value: info.count.into(),
                must: format!("from 1 to {MAX_GENERATORS}"),
            });
        }
        if info.index >= info.count {
            return Err(MergeError::BadField {
                path: path.to_owned(),
                field: "generator.index",
                value: info.index.into(),
                must: format!("below generator.count ({})", info.count),
            });
        }
    }
    let mut sums = Sums::default();
    for &(path, _, r) in infos {
        sums.add(r).map_err(|field| MergeError::SumOverflows {
            path: path.to_owned(),
            field,
        })?;
    }
    Ok(())
}

/// The running totals of what [`report::merge`] adds, each checked.
#[derive(Default)]
struct Sums {
    clients: u32,
    threads: u32,
    merged_runs: u32,
    connection_us: i64,
    counts: Vec<u64>,
    scripts: Vec<Vec<u64>>,
}

impl Sums {
    /// Adds `r`; the name of the first field that would overflow.
    fn add(&mut self, r: &RunResult) -> Result<(), String> {
        let o = &r.options;
        self.clients = checked(self.clients.checked_add(o.clients), "options.clients")?;
        self.threads = checked(self.threads.checked_add(o.threads), "options.threads")?;
        self.merged_runs = checked(self.merged_runs.checked_add(r.merged_runs), "merged_runs")?;
        self.connection_us = checked(
            self.connection_us
                .checked_add(r.timings.total_connection_us),
            "timings.total_connection_us",
        )?;
        add_counts(&mut self.counts, &r.counts, "counts")?;
        self.scripts
            .resize(r.scripts.len().max(self.scripts.len()), Vec::new());
        for (i, (sum, script)) in self.scripts.iter_mut().zip(&r.scripts).enumerate() {
            add_counts(sum, &script.counts, &format!("scripts[{i}].counts"))?;
            sum.resize(COUNT_FIELDS + 2 * script.commands.len(), 0);
            let commands = sum[COUNT_FIELDS..].chunks_mut(2).zip(&script.commands);
            for (j, (total, command)) in commands.enumerate() {
                let field = |name| format!("scripts[{i}].commands[{j}].{name}");
                total[0] = checked(total[0].checked_add(command.failures), &field("failures"))?;
                total[1] = checked(total[1].checked_add(command.retries), &field("retries"))?;
            }
        }
        Ok(())
    }
}

fn checked<T>(sum: Option<T>, field: &str) -> Result<T, String> {
    sum.ok_or_else(|| field.to_owned())
}

/// How many fields of a [`crate::model::run::Counts`] [`add_counts`] adds.
const COUNT_FIELDS: usize = 10;

/// Adds each of `counts`' fields to the first [`COUNT_FIELDS`] of `sum`
/// (in their order), checked, and checks the failures and the total that
/// are computed from the sums.
fn add_counts(
    sum: &mut Vec<u64>,
    counts: &crate::model::run::Counts,
    prefix: &str,
) -> Result<(), String> {
    let c = &counts.counters;
    let fields = [
        ("committed", c.committed),
        ("skipped", c.skipped),
        ("retried", c.retried),
        ("retries", c.retries),
        ("serialization_failures", c.serialization_failures),
        ("deadlock_failures", c.deadlock_failures),
        ("other_failures", c.other_failures),
        ("failed", counts.failed),
        ("total", counts.total),
        ("latency_late", counts.latency_late),
    ];
    if sum.len() < COUNT_FIELDS {
        sum.resize(COUNT_FIELDS, 0);
    }
    for (total, (name, value)) in sum.iter_mut().zip(fields) {
        *total = checked(total.checked_add(value), &format!("{prefix}.{name}"))?;
    }
    let failures = sum[4]
        .checked_add(sum[5])
        .and_then(|n| n.checked_add(sum[6]));
    let failures = checked(failures, &format!("{prefix}.failed"))?;
    let total = sum[0]
        .checked_add(sum[1])
        .and_then(|n| n.checked_add(failures));
    checked(total, &format!("{prefix}.total")).map(|_| ())
}

/// Checks that every result is of the first's run: the same schema
/// version, run id, scripts and number of generators.
fn check_one_run(infos: &[Entry<'_>]) -> Result<(), MergeError> {
    let (first_path, first, first_result) = infos[0];
    for &(path, info, r) in &infos[1..] {
        if r.schema_version != first_result.schema_version {
            return Err(MergeError::SchemaVersions {
                first: (first_path.to_owned(), first_result.schema_version),
                other: (path.to_owned(), r.schema_version),
            });
        }
        if info.run_id != first.run_id {
            return Err(MergeError::DifferentRuns {
                first: (first_path.to_owned(), first.run_id.clone()),
                other: (path.to_owned(), info.run_id.clone()),
            });
        }
        if r.options.scripts != first_result.options.scripts {
            return Err(MergeError::Report(
                crate::model::run::ReportError::ScriptsDiffer.to_string(),
            ));
        }
        if info.count != first.count {
            return Err(MergeError::DifferentCounts {
                first: (first_path.to_owned(), first.count),
                other: (path.to_owned(), info.count),
            });
        }
    }
    Ok(())
}

/// The indexes of the generators missing from `sorted` (sorted by index,
/// of one run); an error when one appears twice, or when some are missing
/// and `allow_partial` is not set.
fn missing_generators(sorted: &[Entry<'_>], allow_partial: bool) -> Result<Vec<u32>, MergeError> {
    for pair in sorted.windows(2) {
        if pair[0].1.index == pair[1].1.index {
            return Err(MergeError::DuplicateIndex {
                index: pair[0].1.index,
                paths: [pair[0].0.to_owned(), pair[1].0.to_owned()],
            });
        }
    }
    let count = sorted[0].1.count;
    let missing: Vec<u32> = (0..count)
        .filter(|i| !sorted.iter().any(|(_, info, _)| info.index == *i))
        .collect();
    if !missing.is_empty() && !allow_partial {
        return Err(MergeError::Missing { missing, count });
    }
    Ok(missing)
}

/// Checks that the generators' measured windows start and end together,
/// within [`window_tolerance_us`].
fn check_windows(infos: &[Entry<'_>]) -> Result<(), MergeError> {
    let windows: Vec<(i64, i64)> = infos
        .iter()
        .map(|(_, i, _)| (i.window_start_us, i.window_end_us))
        .collect();
    let spread = |f: fn(&(i64, i64)) -> i64| {
        let values = windows.iter().map(f);
        values.clone().max().unwrap_or(0) - values.min().unwrap_or(0)
    };
    let spread_us = spread(|w| w.0).max(spread(|w| w.1));
    let tolerance_us = window_tolerance_us(&windows);
    if spread_us > tolerance_us {
        return Err(MergeError::WindowsApart {
            spread_us,
            tolerance_us,
        });
    }
    Ok(())
}

/// One generator's line in the merged result.
fn generator_summary(&(path, info, r): &Entry<'_>) -> GeneratorSummary {
    GeneratorSummary {
        index: info.index,
        source: path.to_owned(),
        clients: r.options.clients,
        threads: r.options.threads,
        committed: r.counts.counters.committed,
        tps: r.tps,
        window_start_us: info.window_start_us,
        window_end_us: info.window_end_us,
        cpu_s: r.diagnosis.as_ref().map(|d| d.client.process_cpu_s),
        saturated: r.diagnosis.as_ref().and_then(|d| {
            d.findings
                .iter()
                .find(|f| f.id == "client-saturated")
                .map(|f| f.severity.name().to_owned())
        }),
    }
}
