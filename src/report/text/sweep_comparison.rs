//! A comparison of sweeps as text and as Markdown: the two sweeps, what
//! differs between them, the steps measured on one side only, one table of
//! every matched step's changes, each step's verdict and rank test, the
//! methods, the fitted curves side by side, and the verdict last.

use std::fmt::Write;

use super::comparison::{
    aligned, cell, code, differences_markdown, differences_text, distribution_line, row,
};
use super::escape::line;
use crate::compare::sweep::{SweepComparison, SweepSide};
use crate::compare::Verdict;
use crate::config::Metric;
use crate::model::sweep::value;

const HEADER: [&str; 7] = [
    "step",
    "metric",
    "baseline",
    "candidate",
    "change",
    "95% interval",
    "outcome",
];

/// The terminal report.
pub fn render_text(c: &SweepComparison) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "baseline:  {} ({})",
        line(&c.baseline.source),
        line(&side_summary(c, &c.baseline))
    );
    let _ = writeln!(
        out,
        "candidate: {} ({})",
        line(&c.candidate.source),
        line(&side_summary(c, &c.candidate))
    );
    differences_text(&mut out, "sweeps", &c.differences);
    for line in unmatched_lines(c) {
        let _ = writeln!(out, "{line}");
    }
    if !c.steps.is_empty() {
        let rows: Vec<Vec<String>> = std::iter::once(HEADER.map(str::to_owned).to_vec())
            .chain(table_rows(c).into_iter().map(|(.., r)| r.to_vec()))
            .collect();
        out.push_str(&aligned(&rows, &[0, 1, 6]));
    }
    for line in step_lines(c)
        .iter()
        .chain(&method_lines(c))
        .chain(&fit_lines(c))
    {
        let _ = writeln!(out, "{line}");
    }
    for caveat in &c.caveats {
        let _ = writeln!(out, "note: {caveat}");
    }
    let _ = writeln!(out, "{}", verdict_line(c));
    out
}

/// The Markdown report, for a pull-request comment.
pub fn render_markdown(c: &SweepComparison) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "### pgbolt comparison of sweeps of {}: {}\n",
        cell(&c.dimension),
        c.verdict.describe()
    );
    for (name, s) in [("baseline", &c.baseline), ("candidate", &c.candidate)] {
        let _ = writeln!(
            out,
            "- {name}: `{}` ({})",
            code(&s.source),
            cell(&side_summary(c, s))
        );
    }
    differences_markdown(&mut out, "sweeps", &c.differences);
    let unmatched = unmatched_lines(c);
    if !unmatched.is_empty() {
        out.push('\n');
        for line in unmatched {
            let _ = writeln!(out, "- {}", cell(&line));
        }
    }
    if !c.steps.is_empty() {
        let _ = writeln!(out, "\n| {} |", HEADER.join(" | "));
        let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---|");
        for (.., r) in table_rows(c) {
            let cells: Vec<String> = r.iter().map(|s| cell(s)).collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
    }
    out.push('\n');
    for line in step_lines(c).iter().chain(&method_lines(c)) {
        let _ = writeln!(out, "- {}", cell(line));
    }
    let fits = fit_rows(c);
    if !fits.is_empty() {
        let _ = writeln!(out, "\n| USL fit | baseline | candidate |\n|---|---:|---:|");
        for r in fits {
            let cells: Vec<String> = r.iter().map(|s| cell(s)).collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
        out.push('\n');
    }
    for line in best_and_notes(c) {
        let _ = writeln!(out, "- {}", cell(&line));
    }
    for caveat in &c.caveats {
        let _ = writeln!(out, "- note: {}", cell(caveat));
    }
    let _ = writeln!(out, "\n**{}**", cell(&verdict_line(c)));
    out
}

/// One sweep in a line: its values, repeats and runs.
pub fn side_summary(c: &SweepComparison, s: &SweepSide) -> String {
    let values: Vec<String> = s.values.iter().map(|v| value(*v)).collect();
    let mut line = format!(
        "sweep of {}: {}{}; {} repeat{}; {} run{}",
        c.dimension,
        if s.auto { "auto, " } else { "" },
        if values.is_empty() {
            "no step".to_owned()
        } else {
            values.join(", ")
        },
        s.repeat,
        if s.repeat == 1 { "" } else { "s" },
        s.runs,
        if s.runs == 1 { "" } else { "s" }
    );
    if let Some(why) = &s.stopped {
        let _ = write!(line, "; stopped: {why}");
    }
    line
}

/// The steps measured on one side only.
pub fn unmatched_lines(c: &SweepComparison) -> Vec<String> {
    [
        ("baseline", &c.only_in_baseline),
        ("candidate", &c.only_in_candidate),
    ]
    .into_iter()
    .filter(|(_, keys)| !keys.is_empty())
    .map(|(side, keys)| {
        let steps: Vec<String> = keys.iter().map(|k| value(k.value)).collect();
        format!(
            "steps only in the {side} (not compared): {} {}",
            steps.join(", "),
            c.dimension
        )
    })
    .collect()
}

/// The rows of the table of changes, each with the index of its step and
/// its metric: the step's name on its first row only.
pub fn table_rows(c: &SweepComparison) -> Vec<(usize, Metric, [String; 7])> {
    let mut rows = Vec::new();
    for (i, s) in c.steps.iter().enumerate() {
        for (j, m) in s.metrics.iter().enumerate() {
            let [name, baseline, candidate, change, interval, outcome] = row(m);
            let step = if j == 0 {
                s.step.describe(&c.dimension)
            } else {
                String::new()
            };
            rows.push((
                i,
                m.metric,
                [step, name, baseline, candidate, change, interval, outcome],
            ));
        }
    }
    rows
}

/// Each step's verdict and the rank test of its whole latency
/// distributions.
pub fn step_lines(c: &SweepComparison) -> Vec<String> {
    c.steps
        .iter()
        .map(|s| {
            let mut line = format!(
                "{}: {}",
                s.step.describe(&c.dimension),
                s.verdict.describe()
            );
            if let Some(d) = &s.latency_distribution {
                let _ = write!(line, "; {}", distribution_line(d));
            }
            line
        })
        .collect()
}

/// One line per method used: the metrics and steps it served, and how.
pub fn method_lines(c: &SweepComparison) -> Vec<String> {
    let mut methods: Vec<(&str, Vec<&str>, Vec<String>)> = Vec::new();
    for s in &c.steps {
        for m in &s.metrics {
            let at = value(s.step.value);
            match methods.iter_mut().find(|(method, ..)| *method == m.method) {
                Some((_, metrics, steps)) => {
                    if !metrics.contains(&m.metric.name()) {
                        metrics.push(m.metric.name());
                    }
                    if !steps.contains(&at) {
                        steps.push(at);
                    }
                }
                None => methods.push((&m.method, vec![m.metric.name()], vec![at])),
            }
        }
    }
    methods
        .into_iter()
        .map(|(method, metrics, steps)| {
            let at = if steps.len() == c.steps.len() {
                "every step".to_owned()
            } else {
                format!("{} {}", steps.join(", "), c.dimension)
            };
            format!("method ({}; {at}): {method}", metrics.join(", "))
        })
        .collect()
}

/// The two fits side by side: name, baseline, candidate. Empty when
/// neither side has a fit. N* and X(N*) are left out of a fit that does
/// not hold.
pub fn fit_rows(c: &SweepComparison) -> Vec<[String; 3]> {
    if c.baseline.fit.is_none() && c.candidate.fit.is_none() {
        return Vec::new();
    }
    let names = [
        "sigma",
        "kappa",
        "lambda (tps)",
        "R²",
        "N* (clients)",
        "X(N*) (tps)",
    ];
    let [a, b] = [&c.baseline, &c.candidate].map(fit_column);
    names
        .into_iter()
        .zip(a.into_iter().zip(b))
        .map(|(name, (a, b))| [name.to_owned(), a, b])
        .collect()
}

/// A side's figures of [`fit_rows`].
fn fit_column(s: &SweepSide) -> [String; 6] {
    let dash = || "-".to_owned();
    let Some(f) = &s.fit else {
        return std::array::from_fn(|_| dash());
    };
    let holds = s.fit_note.is_none();
    [
        format!("{:.5}", f.sigma),
        format!("{:.6}", f.kappa),
        format!("{:.1}", f.lambda),
        format!("{:.4}", f.r_squared),
        match (holds, f.peak_clients) {
            (false, _) => dash(),
            (true, Some(n)) => format!("{n:.1}"),
            (true, None) => "none (kappa 0)".to_owned(),
        },
        match (holds, s.peak_throughput) {
            (true, Some(x)) => format!("{x:.1}"),
            _ => dash(),
        },
    ]
}

/// The best measured points, and each side's note on its fit (the same
/// note once when both sides have it).
pub fn best_and_notes(c: &SweepComparison) -> Vec<String> {
    let best = |s: &SweepSide| {
        s.best.as_ref().map_or("none".to_owned(), |b| {
            format!("{} {} ({:.1} tps)", value(b.value), c.dimension, b.tps)
        })
    };
    let mut lines = vec![format!(
        "best measured: {} -> {}",
        best(&c.baseline),
        best(&c.candidate)
    )];
    match (&c.baseline.fit_note, &c.candidate.fit_note) {
        (Some(a), Some(b)) if a == b => lines.push(format!("USL, both sweeps: {a}")),
        (a, b) => {
            for (side, note) in [("baseline", a), ("candidate", b)] {
                if let Some(note) = note {
                    lines.push(format!("USL, {side}: {note}"));
                }
            }
        }
    }
    if c.baseline.fit.is_some() || c.candidate.fit.is_some() {
        lines.push(
            "the fits carry no interval, so no change of them is stated: the steps' changes are the evidence"
                .to_owned(),
        );
    }
    lines
}

/// The fits as aligned text lines, then the best points and the notes.
fn fit_lines(c: &SweepComparison) -> Vec<String> {
    let rows = fit_rows(c);
    let mut lines = Vec::new();
    if !rows.is_empty() {
        let table: Vec<Vec<String>> = std::iter::once(vec![
            "USL fit".to_owned(),
            "baseline".to_owned(),
            "candidate".to_owned(),
        ])
        .chain(rows.into_iter().map(|r| r.to_vec()))
        .collect();
        lines.extend(aligned(&table, &[0]).lines().map(str::to_owned));
    }
    lines.extend(best_and_notes(c));
    lines
}

/// The verdict, its basis and how the steps went.
pub fn verdict_line(c: &SweepComparison) -> String {
    let metrics: Vec<&str> = c.verdict_metrics.iter().map(|m| m.name()).collect();
    let tally: Vec<String> = [
        Verdict::Regressed,
        Verdict::Improved,
        Verdict::NoSignificantChange,
        Verdict::Undetermined,
    ]
    .into_iter()
    .filter_map(|v| {
        let n = c.steps.iter().filter(|s| s.verdict == v).count();
        (n > 0).then(|| format!("{n} {}", v.describe()))
    })
    .collect();
    let tally = if tally.is_empty() {
        "no step measured on both sides".to_owned()
    } else {
        tally.join(", ")
    };
    format!(
        "verdict ({}; threshold {}%; over {} step{}): {} ({tally})",
        metrics.join(", "),
        c.threshold * 100.0,
        c.steps.len(),
        if c.steps.len() == 1 { "" } else { "s" },
        c.verdict.describe()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::sweep::compare_sweeps;
    use crate::compare::sweep::tests::{compared, step, sweep, usl_sweep};
    use crate::compare::tests::options;

    #[test]
    fn half_the_throughput_at_every_step_is_a_regression_in_the_verdict_line() {
        let c = compared(&usl_sweep(1.0, 1), &usl_sweep(0.5, 2));
        let text = render_text(&c);
        assert!(
            text.contains(
                "verdict (tps, p99; threshold 3%; over 4 steps): regressed (4 regressed)"
            ),
            "{text}"
        );
    }

    #[test]
    fn one_regressed_step_and_one_improved_read_as_a_regression() {
        let a = sweep(vec![step(1, 1, 1000.0, 1), step(2, 1, 1800.0, 1)], 1);
        let b = sweep(vec![step(1, 1, 1300.0, 1), step(2, 1, 1500.0, 1)], 1);
        let c = compare_sweeps(&a, &b, ["a", "b"], &options(&[Metric::Tps])).expect("comparable");
        assert!(verdict_line(&c).ends_with("regressed (1 regressed, 1 improved)"));
    }

    #[test]
    fn steps_on_one_side_only_are_listed_in_the_text() {
        let a = sweep(vec![step(1, 1, 1000.0, 1), step(2, 1, 1800.0, 1)], 1);
        let b = sweep(vec![step(2, 1, 1800.0, 1), step(4, 1, 2900.0, 1)], 1);
        let c = compared(&a, &b);
        assert!(render_text(&c).contains("steps only in the baseline (not compared): 1 clients"));
        let c = compared(&a, &sweep(Vec::new(), 1));
        assert!(render_text(&c).contains("(sweep of clients: no step; 1 repeat; 0 runs)"));
    }

    #[test]
    fn fits_are_set_side_by_side_and_a_fit_that_does_not_hold_says_so() {
        let a = usl_sweep(1.0, 1);
        let mut b = usl_sweep(1.0, 1);
        b.summary.fit_note = Some("the USL does not fit these points".to_owned());
        let c = compared(&a, &b);
        let rows = fit_rows(&c);
        let peak = rows
            .iter()
            .find(|r| r[0] == "N* (clients)")
            .expect("N* row");
        assert_ne!(peak[1], "-");
        assert_eq!(peak[2], "-");
        let text = render_text(&c);
        assert!(
            text.contains("USL, candidate: the USL does not fit these points"),
            "{text}"
        );
        assert!(text.contains("best measured: 8 clients"), "{text}");
        let md = render_markdown(&c);
        assert!(
            md.starts_with("### pgbolt comparison of sweeps of clients: no significant change"),
            "{md}"
        );
        assert!(md.contains("| USL fit | baseline | candidate |"), "{md}");
    }
}
