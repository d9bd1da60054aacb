//! The targets' report as text: each target's sweep table, then the
//! targets side by side with their ratios and crossovers, then the
//! pooler's view of each step.

use std::fmt::Write;

use crate::config::Benchmark;
use crate::model::sweep::value;
use crate::model::targets::{Cell, Crossover, TargetsResult};

/// The whole text report.
pub fn render(result: &TargetsResult, bench: &Benchmark) -> String {
    let mut out = String::new();
    if let Some(why) = &result.stopped {
        let _ = writeln!(out, "stopped: {why}");
    }
    for target in &result.targets {
        let _ = write!(out, "\ntarget {}: {}", target.name, target.conninfo);
        if let Some(p) = &target.pooler {
            let _ = write!(out, " ({}", p.version);
            if let Some(mode) = &p.pool_mode {
                let _ = write!(out, ", {mode} pooling");
            }
            if let Some(n) = p.max_client_conn {
                let _ = write!(out, ", max_client_conn {n}");
            }
            if let Some(n) = p.default_pool_size {
                let _ = write!(out, ", default_pool_size {n}");
            }
            out.push(')');
        }
        out.push('\n');
        out.push_str(&crate::report::text::sweep::render(&target.sweep, bench));
    }
    comparison(&mut out, result);
    pooler_view(&mut out, result);
    out
}

fn comparison(out: &mut String, result: &TargetsResult) {
    let c = &result.comparison;
    if result.targets.len() < 2 || c.rows.is_empty() {
        return;
    }
    let dimension = result
        .targets
        .first()
        .map_or("clients", |t| t.sweep.sweep.dimension.as_str());
    let _ = writeln!(
        out,
        "\ntargets side by side (ratios against {}; tps as mean [min..max] over the repeats):",
        c.baseline
    );
    let _ = write!(out, "{dimension:>8}");
    for (i, t) in result.targets.iter().enumerate() {
        let _ = write!(out, "  {:>26} {:>9}", format!("{} tps", t.name), "p99 ms");
        if i > 0 {
            let _ = write!(out, " {:>7} {:>7}", "tps x", "p99 x");
        }
    }
    out.push('\n');
    for row in &c.rows {
        let _ = write!(out, "{:>8}", value(row.value));
        for (i, cell) in row.cells.iter().enumerate() {
            match cell {
                Some(cell) => cell_text(out, cell, i > 0),
                None => {
                    let _ = write!(out, "  {:>26} {:>9}", "not measured", "-");
                    if i > 0 {
                        let _ = write!(out, " {:>7} {:>7}", "-", "-");
                    }
                }
            }
        }
        out.push('\n');
    }
    for crossover in &c.crossovers {
        let _ = writeln!(out, "crossover: {}", crossover_text(crossover, dimension));
    }
    if let Some(why) = &c.unjudged {
        let _ = writeln!(out, "crossover: not judged: {why}");
    }
}

fn cell_text(out: &mut String, cell: &Cell, ratios: bool) {
    let tps = format!("{:.1} [{:.1}..{:.1}]", cell.tps, cell.tps_min, cell.tps_max);
    let _ = write!(out, "  {tps:>26} {:>9.3}", cell.p99_ms);
    if ratios {
        let ratio = |r: Option<f64>| r.map_or("-".to_owned(), |r| format!("{r:.2}"));
        let _ = write!(
            out,
            " {:>7} {:>7}",
            ratio(cell.tps_ratio),
            ratio(cell.p99_ratio)
        );
    }
}

/// The crossover in words, with every other value where one target
/// beats the other beyond the spread.
pub fn crossover_text(c: &Crossover, dimension: &str) -> String {
    let at = |values: &[f64]| {
        let list: Vec<String> = values.iter().map(|v| value(*v)).collect();
        format!("{} {dimension}", list.join(", "))
    };
    let beats = |winner: &str, loser: &str, values: &[f64]| {
        format!("{winner} beats {loser} beyond the spread at {}", at(values))
    };
    let mut text = match (c.target_ahead_from, c.baseline_ahead_from) {
        (Some(from), _) => format!(
            "{} beats {} from {} {dimension} on",
            c.target,
            c.baseline,
            value(from)
        ),
        (None, Some(from)) => format!(
            "{} beats {} from {} {dimension} on",
            c.baseline,
            c.target,
            value(from)
        ),
        (None, None) if c.target_ahead_at.is_empty() && c.baseline_ahead_at.is_empty() => {
            return format!(
                "none: {} and {} are within the repeats' spread at every {dimension} value",
                c.target, c.baseline
            )
        }
        (None, None) => "none from one value on".to_owned(),
    };
    // The values the sentence above does not already cover.
    let others = |values: &[f64], from: Option<f64>| -> Vec<f64> {
        values
            .iter()
            .copied()
            .filter(|v| from.map_or(true, |f| *v < f))
            .collect()
    };
    let target = others(&c.target_ahead_at, c.target_ahead_from);
    let baseline = others(&c.baseline_ahead_at, c.baseline_ahead_from);
    if !target.is_empty() {
        text.push_str(&format!("; {}", beats(&c.target, &c.baseline, &target)));
    }
    if !baseline.is_empty() {
        text.push_str(&format!("; {}", beats(&c.baseline, &c.target, &baseline)));
    }
    text
}

fn pooler_view(out: &mut String, result: &TargetsResult) {
    for target in result.targets.iter().filter(|t| t.pooler.is_some()) {
        let steps: Vec<_> = result
            .pooler_steps
            .iter()
            .filter(|s| s.target == target.name)
            .collect();
        if steps.is_empty() {
            continue;
        }
        let dimension = target.sweep.sweep.dimension.as_str();
        let _ = writeln!(
            out,
            "\nthe pooler's view ({}; most seen at once over each step):",
            target.name
        );
        let _ = writeln!(
            out,
            "{dimension:>8} {:>6} {:>9} {:>10} {:>9} {:>9} {:>13} {:>6}",
            "repeat", "cl_active", "cl_waiting", "sv_active", "maxwait s", "wait us/xact", "cpu %"
        );
        for step in steps {
            let v = &step.view;
            let wait = v
                .wait_us_per_xact
                .map_or("-".to_owned(), |w| format!("{w:.1}"));
            let cpu = v.cpu_percent.map_or("-".to_owned(), |c| format!("{c:.0}"));
            let _ = writeln!(
                out,
                "{:>8} {:>6} {:>9} {:>10} {:>9} {:>9.3} {:>13} {:>6}",
                value(step.value),
                step.repeat,
                v.cl_active_max,
                v.cl_waiting_max,
                v.sv_active_max,
                v.maxwait_max_s,
                wait,
                cpu
            );
        }
    }
}
