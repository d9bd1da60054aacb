//! The checks a result passes when it is read back from a file, before
//! any renderer, comparison or merge works on it.
//!
//! A result file is the user's to keep, edit or receive from elsewhere, so
//! its fields are input like any other: JSON gives their types, not their
//! sense. The renderers divide by the series' interval width, place
//! intervals and events on a time axis, and draw the swept values on an
//! axis of their own; a width of 0 made the rates infinite and the
//! axis's ticks endless, a negative one inverted a clamp. Rather than
//! have every renderer defend itself, a result that reaches them has
//! passed these checks: each names the field at fault (as a JSON path,
//! `steps[2].result.series.width_us`) and what it must be, and the caller
//! adds the file's name.
//!
//! The limits are far beyond anything pgbolt writes (a year-long interval,
//! a run of a hundred years) and only keep the arithmetic finite and the
//! loops short.

use std::fmt;

use crate::model::run::{ReportError, RunResult};
use crate::model::sweep::SweepResult;
use crate::model::targets::TargetsResult;

/// The widest interval a series may have: a year, in µs.
const MAX_WIDTH_US: i64 = 366 * 24 * 3600 * 1_000_000;
/// The longest time a result may span: a hundred years, in µs (and, as
/// seconds, the largest offset an interval or event may have).
const MAX_SPAN_US: i64 = 100 * 366 * 24 * 3600 * 1_000_000;
/// The largest swept value: far above any count of clients or threads, or
/// any rate a machine sustains.
const MAX_SWEPT_VALUE: f64 = 1e12;

/// A field of a result that no pgbolt writes and no renderer can draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// Its JSON path.
    pub field: String,
    /// What it must be.
    pub problem: String,
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "field {} {}", self.field, self.problem)
    }
}

impl std::error::Error for Invalid {}

impl From<Invalid> for ReportError {
    fn from(e: Invalid) -> Self {
        ReportError::Field {
            field: e.field,
            problem: e.problem,
        }
    }
}

/// A result kind whose fields can be checked.
pub trait Check {
    fn check(&self) -> Result<(), Invalid>;
}

/// `value` of field `prefix` + `name` within `low..=high` µs.
fn within(prefix: &str, name: &str, value: i64, low: i64, high: i64) -> Result<(), Invalid> {
    if (low..=high).contains(&value) {
        return Ok(());
    }
    Err(Invalid {
        field: format!("{prefix}{name}"),
        problem: format!("is {value}: it must be from {low} to {high} µs"),
    })
}

/// `value` of field `prefix` + `name` within `low..=high`.
fn within_f(prefix: &str, name: &str, value: f64, low: f64, high: f64) -> Result<(), Invalid> {
    if (low..=high).contains(&value) {
        return Ok(());
    }
    Err(Invalid {
        field: format!("{prefix}{name}"),
        problem: format!(
            "is {}: it must be from {} to {}",
            show(value),
            show(low),
            show(high)
        ),
    })
}

/// A number as a person reads it: large ones with an exponent.
fn show(v: f64) -> String {
    if v.abs() >= 1e9 {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// A run's result whose fields start at `prefix` (empty at the top).
fn run(r: &RunResult, prefix: &str) -> Result<(), Invalid> {
    let t = &r.timings;
    within(
        prefix,
        "timings.bench_duration_us",
        t.bench_duration_us,
        0,
        MAX_SPAN_US,
    )?;
    within(
        prefix,
        "timings.initial_connection_us",
        t.initial_connection_us,
        0,
        MAX_SPAN_US,
    )?;
    within(
        prefix,
        "timings.total_connection_us",
        t.total_connection_us,
        0,
        MAX_SPAN_US,
    )?;
    within(
        prefix,
        "series.width_us",
        r.series.width_us,
        1,
        MAX_WIDTH_US,
    )?;
    let max_offset_s = (MAX_SPAN_US / 1_000_000) as f64;
    for (n, i) in r.series.intervals.iter().enumerate() {
        let name = format!("series.intervals[{n}].offset_s");
        within_f(prefix, &name, i.offset_s, -max_offset_s, max_offset_s)?;
    }
    let windows = r
        .generators
        .iter()
        .enumerate()
        .map(|(n, g)| {
            (
                format!("generators[{n}]"),
                g.window_start_us,
                g.window_end_us,
            )
        })
        .chain(
            r.generator
                .iter()
                .map(|g| ("generator".to_owned(), g.window_start_us, g.window_end_us)),
        );
    for (at, start, end) in windows {
        for (field, us) in [("window_start_us", start), ("window_end_us", end)] {
            let name = format!("{at}.{field} (from series.start_us)");
            let from_series = us.saturating_sub(r.series.start_us);
            within(prefix, &name, from_series, -MAX_SPAN_US, MAX_SPAN_US)?;
        }
    }
    if let Some(o) = &r.outage {
        outage(o, r.series.start_us, prefix)?;
    }
    let Some(d) = &r.diagnosis else {
        return Ok(());
    };
    if let Some(a) = &d.activity {
        within(
            prefix,
            "diagnosis.activity.width_us",
            a.width_us,
            1,
            MAX_WIDTH_US,
        )?;
        let from_series = a.start_us.saturating_sub(r.series.start_us);
        within(
            prefix,
            "diagnosis.activity.start_us (from series.start_us)",
            from_series,
            -MAX_SPAN_US,
            MAX_SPAN_US,
        )?;
    }
    for (n, e) in d.events.iter().enumerate() {
        let name = format!("diagnosis.events[{n}].at_us (from series.start_us)");
        let from_series = e.at_us.saturating_sub(r.series.start_us);
        within(prefix, &name, from_series, -MAX_SPAN_US, MAX_SPAN_US)?;
    }
    Ok(())
}

/// The largest count of transactions a commit check may hold: far above
/// any run, and small enough that differences of counts stay exact.
const MAX_COUNT: i64 = 1 << 53;

/// `--reconnect`'s outage: every moment near the series (the renderers
/// subtract them from each other and place them on a time axis), the
/// downtimes within a span, the commit counts within [`MAX_COUNT`].
fn outage(
    o: &crate::model::failover::Outage,
    series_start: i64,
    prefix: &str,
) -> Result<(), Invalid> {
    let moment = |name: String, us: Option<i64>| match us {
        Some(us) => {
            let from_series = us.saturating_sub(series_start);
            within(
                prefix,
                &format!("{name} (from series.start_us)"),
                from_series,
                -MAX_SPAN_US,
                MAX_SPAN_US,
            )
        }
        None => Ok(()),
    };
    moment("outage.start_us".into(), o.start_us)?;
    moment("outage.end_us".into(), o.end_us)?;
    if let Some(g) = &o.server_gap {
        moment(
            "outage.server_gap.last_before_us".into(),
            Some(g.last_before_us),
        )?;
        moment(
            "outage.server_gap.first_after_us".into(),
            Some(g.first_after_us),
        )?;
    }
    for (n, c) in o.clients.iter().enumerate() {
        let at = format!("outage.clients[{n}].");
        moment(
            format!("{at}last_commit_before_us"),
            c.last_commit_before_us,
        )?;
        moment(format!("{at}first_error_us"), c.first_error_us)?;
        moment(format!("{at}reconnected_us"), c.reconnected_us)?;
        moment(
            format!("{at}first_commit_after_us"),
            c.first_commit_after_us,
        )?;
    }
    for (name, us) in [
        ("downtime_p50_us", o.downtime_p50_us),
        ("downtime_p99_us", o.downtime_p99_us),
        ("downtime_max_us", o.downtime_max_us),
    ] {
        if let Some(us) = us {
            within(prefix, &format!("outage.{name}"), us, 0, MAX_SPAN_US)?;
        }
    }
    if let Some(c) = &o.commit_check {
        let counts = [
            ("before", c.before),
            ("after", c.after),
            (
                "acknowledged",
                i64::try_from(c.acknowledged).unwrap_or(i64::MAX),
            ),
            ("in_doubt", i64::try_from(c.in_doubt).unwrap_or(i64::MAX)),
        ];
        for (name, n) in counts {
            if !(0..=MAX_COUNT).contains(&n) {
                return Err(Invalid {
                    field: format!("{prefix}outage.commit_check.{name}"),
                    problem: format!("is {n}: it must be from 0 to {MAX_COUNT}"),
                });
            }
        }
    }
    Ok(())
}

/// A sweep's result whose fields start at `prefix`.
fn sweep(s: &SweepResult, prefix: &str) -> Result<(), Invalid> {
    for (n, step) in s.steps.iter().enumerate() {
        let at = format!("{prefix}steps[{n}].");
        within_f(&at, "value", step.value, 0.0, MAX_SWEPT_VALUE)?;
        run(&step.result, &format!("{at}result."))?;
    }
    for (n, p) in s.summary.points.iter().enumerate() {
        let name = format!("summary.points[{n}].value");
        within_f(prefix, &name, p.value, 0.0, MAX_SWEPT_VALUE)?;
    }
    for (n, slo) in s.sweep.slo.iter().enumerate() {
        let name = format!("sweep.slo[{n}].limit_ms");
        within_f(prefix, &name, slo.limit_ms, 0.0, 1e12)?;
    }
    Ok(())
}

impl Check for RunResult {
    fn check(&self) -> Result<(), Invalid> {
        run(self, "")
    }
}

impl Check for SweepResult {
    fn check(&self) -> Result<(), Invalid> {
        sweep(self, "")
    }
}

impl Check for TargetsResult {
    fn check(&self) -> Result<(), Invalid> {
        for (n, t) in self.targets.iter().enumerate() {
            sweep(&t.sweep, &format!("targets[{n}].sweep."))?;
        }
        for (n, row) in self.comparison.rows.iter().enumerate() {
            let name = format!("comparison.rows[{n}].value");
            within_f("", &name, row.value, 0.0, MAX_SWEPT_VALUE)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Check;
    use crate::model::failover::{ClientOutage, CommitCheck, Outage};

    /// A crafted file's outage moments far from its series, or commit
    /// counts past any run, would overflow the renderers' arithmetic:
    /// each is refused, naming its field; what a run writes passes.
    #[test]
    fn an_outage_out_of_range_is_refused_by_field() {
        let mut r = crate::compare::tests::run(&[100.0], &[(1000, 10)]);
        let start = r.series.start_us;
        let client = |error: i64| ClientOutage {
            first_error_us: Some(error),
            first_commit_after_us: Some(error + 1_500_000),
            ..ClientOutage::default()
        };
        r.outage = Some(Outage::from_clients(vec![client(start + 1_000_000)]));
        assert!(r.check().is_ok());
        r.outage = Some(Outage::from_clients(vec![client(i64::MAX / 2)]));
        let err = r.check().expect_err("refused").to_string();
        assert!(err.contains("outage.start_us"), "{err}");
        let mut outage = Outage::from_clients(vec![client(start)]);
        outage.commit_check = Some(CommitCheck {
            counted_by: "pgbench_history rows".into(),
            before: i64::MIN,
            after: 0,
            acknowledged: 1,
            in_doubt: 0,
        });
        r.outage = Some(outage);
        let err = r.check().expect_err("refused").to_string();
        assert!(err.contains("outage.commit_check.before"), "{err}");
    }
}
