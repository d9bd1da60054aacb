//! The comparison drawn from the targets' sweeps: per step, each target's
//! throughput and percentiles beside the first target's (the baseline),
//! their ratios, and the crossover. Pure functions over the sweeps'
//! points, so a saved file gives the same answers.

use crate::model::sweep::Point;
use crate::model::targets::{Cell, Comparison, Crossover, Row};

/// The comparison of `targets` (each with its sweep's points); the first
/// is the baseline.
pub fn compare(targets: &[(&str, &[Point])]) -> Comparison {
    let Some(&(baseline, base_points)) = targets.first() else {
        return Comparison::default();
    };
    let mut values: Vec<f64> = targets
        .iter()
        .flat_map(|(_, points)| points.iter().map(|p| p.value))
        .collect();
    values.sort_by(f64::total_cmp);
    values.dedup();
    let at = |points: &[Point], v: f64| points.iter().find(|p| p.value == v).cloned();
    let rows = values
        .iter()
        .map(|&value| {
            let base = at(base_points, value);
            let cells = targets
                .iter()
                .map(|(_, points)| {
                    at(points, value).map(|p| {
                        let ratio = |a: f64, b: f64| (b > 0.0).then(|| a / b);
                        Cell {
                            tps: p.tps,
                            tps_min: p.tps_min,
                            tps_max: p.tps_max,
                            p50_ms: p.p50_ms,
                            p99_ms: p.p99_ms,
                            failed: p.failed,
                            tps_ratio: base.as_ref().and_then(|b| ratio(p.tps, b.tps)),
                            p99_ratio: base.as_ref().and_then(|b| ratio(p.p99_ms, b.p99_ms)),
                        }
                    })
                })
                .collect();
            Row { value, cells }
        })
        .collect();
    // Every pair, the earlier target as the baseline: with
    // `--connect-dimension` the pair that matters may be `direct-C`
    // against `pgbouncer-C`.
    let crossovers = targets
        .iter()
        .enumerate()
        .flat_map(|(i, &(base, base_points))| {
            targets[i + 1..]
                .iter()
                .map(move |&(name, points)| Crossover {
                    target: name.to_owned(),
                    baseline: base.to_owned(),
                    target_ahead_from: ahead_from(points, base_points),
                    baseline_ahead_from: ahead_from(base_points, points),
                    target_ahead_at: ahead_at(points, base_points),
                    baseline_ahead_at: ahead_at(base_points, points),
                })
        })
        .collect();
    Comparison {
        baseline: baseline.to_owned(),
        rows,
        crossovers,
        unjudged: None,
    }
}

/// Each value both measured, ascending, with whether `a` beats `b` there
/// beyond the spread (its lowest repeat above `b`'s highest).
fn beats(a: &[Point], b: &[Point]) -> Vec<(f64, bool)> {
    let mut common: Vec<(f64, bool)> = a
        .iter()
        .filter_map(|p| {
            b.iter()
                .find(|q| q.value == p.value)
                .map(|q| (p.value, p.tps_min > q.tps_max))
        })
        .collect();
    common.sort_by(|x, y| x.0.total_cmp(&y.0));
    common
}

/// Every value at which `a` beats `b` beyond the spread.
fn ahead_at(a: &[Point], b: &[Point]) -> Vec<f64> {
    beats(a, b)
        .into_iter()
        .filter_map(|(value, ahead)| ahead.then_some(value))
        .collect()
}

/// The smallest value from which `a` beats `b` beyond the spread at
/// every value both measured, up to the largest; `None` if `a` is not
/// ahead at the largest.
fn ahead_from(a: &[Point], b: &[Point]) -> Option<f64> {
    let common = beats(a, b);
    let mut from = None;
    for (value, ahead) in common.iter().rev() {
        if !ahead {
            break;
        }
        from = Some(*value);
    }
    from
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(value: f64, tps: &[f64], p99: f64) -> Point {
        let mean = tps.iter().sum::<f64>() / tps.len() as f64;
        Point {
            value,
            clients: value as u32,
            threads: 1,
            rate: None,
            repeats: tps.len() as u32,
            measured_s: Some(1.0),
            tps: mean,
            tps_stddev: None,
            tps_min: tps.iter().copied().fold(f64::INFINITY, f64::min),
            tps_max: tps.iter().copied().fold(0.0, f64::max),
            p50_ms: p99 / 2.0,
            p90_ms: p99,
            p99_ms: p99,
            p99_9_ms: p99,
            failed: 0,
            failure_ratio: 0.0,
            in_flight: 0.0,
            little_ratio: 0.0,
            slo_ms: Vec::new(),
            slo_met: None,
            client_cpu: None,
            client_cpu_wait: None,
            backends: None,
            findings: Vec::new(),
        }
    }

    #[test]
    fn the_pooler_overtakes_from_the_step_it_stays_ahead() {
        // The seed study's shape: direct ahead at few clients, the
        // pooler ahead once direct connections collapse.
        let direct = [
            point(8.0, &[1000.0, 1010.0], 1.0),
            point(64.0, &[900.0, 950.0], 10.0),
            point(256.0, &[300.0, 320.0], 80.0),
            point(512.0, &[200.0, 210.0], 200.0),
        ];
        let pooled = [
            point(8.0, &[800.0, 820.0], 1.2),
            point(64.0, &[930.0, 960.0], 9.0),
            point(256.0, &[850.0, 870.0], 30.0),
            point(512.0, &[840.0, 860.0], 60.0),
        ];
        let c = compare(&[("direct", &direct), ("pgbouncer", &pooled)]);
        assert_eq!(c.baseline, "direct");
        assert_eq!(c.rows.len(), 4);
        let cell = c.rows[2].cells[1].as_ref().unwrap();
        assert!((cell.tps_ratio.unwrap() - 860.0 / 310.0).abs() < 1e-9);
        assert!((cell.p99_ratio.unwrap() - 30.0 / 80.0).abs() < 1e-9);
        // At 64 the spreads overlap: the crossover is 256, not 64.
        assert_eq!(c.crossovers[0].target_ahead_from, Some(256.0));
        assert_eq!(c.crossovers[0].baseline_ahead_from, None);
    }

    #[test]
    fn a_target_ahead_everywhere_is_ahead_from_the_first_value() {
        let a = [point(1.0, &[10.0], 1.0), point(2.0, &[20.0], 1.0)];
        let b = [point(1.0, &[5.0], 1.0), point(2.0, &[5.0], 1.0)];
        let c = compare(&[("b", &b), ("a", &a)]);
        assert_eq!(c.crossovers[0].target_ahead_from, Some(1.0));
        assert_eq!(c.crossovers[0].baseline_ahead_from, None);
    }

    #[test]
    fn every_pair_of_targets_has_its_crossover() {
        let a = [point(1.0, &[10.0], 1.0)];
        let b = [point(1.0, &[5.0], 1.0)];
        let c = [point(1.0, &[20.0], 1.0)];
        let cmp = compare(&[("a", &a), ("b", &b), ("c", &c)]);
        let pairs: Vec<(&str, &str)> = cmp
            .crossovers
            .iter()
            .map(|x| (x.baseline.as_str(), x.target.as_str()))
            .collect();
        assert_eq!(pairs, [("a", "b"), ("a", "c"), ("b", "c")]);
        assert_eq!(cmp.crossovers[2].target_ahead_from, Some(1.0));
    }

    #[test]
    fn a_missing_step_leaves_an_empty_cell() {
        let a = [point(1.0, &[10.0], 1.0), point(2.0, &[20.0], 1.0)];
        let b = [point(1.0, &[5.0], 1.0)];
        let c = compare(&[("a", &a), ("b", &b)]);
        assert!(c.rows[1].cells[1].is_none());
        assert_eq!(c.crossovers[0].baseline_ahead_from, Some(1.0));
    }

    /// Regression: direct beat the pooler beyond the repeats' spread at
    /// one step, not at the largest, and the report said "crossover:
    /// none". That step is now named.
    #[test]
    fn a_win_beyond_the_spread_at_one_step_is_reported() {
        let direct = [
            point(8.0, &[100.0, 104.0], 1.0),
            point(64.0, &[300.0, 310.0], 1.0),
            point(256.0, &[200.0, 260.0], 1.0),
        ];
        let pooled = [
            point(8.0, &[98.0, 106.0], 1.0),
            point(64.0, &[200.0, 220.0], 1.0),
            point(256.0, &[230.0, 250.0], 1.0),
        ];
        let c = compare(&[("direct", &direct), ("pgbouncer", &pooled)]);
        let x = &c.crossovers[0];
        assert_eq!((x.target_ahead_from, x.baseline_ahead_from), (None, None));
        assert_eq!(x.baseline_ahead_at, [64.0]);
        assert!(x.target_ahead_at.is_empty());
        assert_eq!(
            crate::report::text::targets::crossover_text(x, "clients"),
            "none from one value on; direct beats pgbouncer beyond the spread at 64 clients"
        );
        let same = compare(&[("direct", &direct[..1]), ("pgbouncer", &pooled[..1])]);
        assert_eq!(
            crate::report::text::targets::crossover_text(&same.crossovers[0], "clients"),
            "none: pgbouncer and direct are within the repeats' spread at every clients value"
        );
    }
}
