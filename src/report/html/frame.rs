//! The frame every page shares, whatever the result kind (a run, a merged
//! fleet, a sweep, targets compared, a comparison): the same header, in
//! the same order, read from a run's result of the page (the run itself,
//! a sweep's first step, the first target's first step, each side of a
//! comparison), then the kind's own key figures, findings, charts and
//! tables.
//!
//! The header says what ran and where: pgbolt's and the server's versions,
//! the command line, the scripts with their SHA-256, the scale, the kind's
//! own lines (clients, steps, targets), the server settings that differ
//! from PostgreSQL's defaults, the time, and the outcome. Each value
//! carries a `data-header` attribute naming it, so a reader (or a test)
//! finds it beside the JSON's. A value the result does not hold (a result
//! of an older pgbolt) is left out rather than shown as "unknown", apart
//! from the server's version, whose absence is itself worth saying.

use std::fmt::Write as _;

use super::escape::esc;
use crate::model::diagnosis::Finding;
use crate::model::run::RunResult;
use crate::wallclock::utc;

/// PostgreSQL's built-in defaults of the settings a run records, as
/// `SHOW` prints them: a setting is shown in the header when it differs.
const DEFAULTS: &[(&str, &str)] = &[
    ("shared_buffers", "128MB"),
    ("work_mem", "4MB"),
    ("effective_cache_size", "4GB"),
    ("max_connections", "100"),
    ("synchronous_commit", "on"),
    ("fsync", "on"),
    ("full_page_writes", "on"),
    ("wal_level", "replica"),
    ("max_wal_size", "1GB"),
    ("checkpoint_timeout", "5min"),
    ("huge_pages", "try"),
    ("jit", "on"),
];

/// A page's header.
pub(super) struct Frame<'a> {
    /// The page's heading, as HTML.
    pub heading: String,
    /// The run the shared lines are read from.
    pub run: &'a RunResult,
    /// Lines of the kind's own, after the scale: a label and its HTML.
    pub lines: Vec<(&'static str, String)>,
    /// From the first start to the last end, µs since the Unix epoch.
    pub span: Option<(i64, i64)>,
    /// The outcome, as HTML.
    pub outcome: String,
    /// A warning above the lines, as HTML.
    pub banner: Option<String>,
}

impl Frame<'_> {
    /// The `<header>`.
    pub fn html(&self) -> String {
        let r = self.run;
        let c = &r.context;
        let mut out = format!("<header><h1>{}</h1>", self.heading);
        if let Some(banner) = &self.banner {
            out.push_str(banner);
        }
        out.push_str("<dl class=\"meta\">");
        let mut item = |label: &str, name: &str, html: &str| {
            let _ = write!(
                out,
                "<dt>{label}</dt><dd data-header=\"{name}\">{html}</dd>"
            );
        };
        let server = c
            .server_version
            .as_deref()
            .map_or("unknown".to_owned(), esc);
        item(
            "Versions",
            "versions",
            &format!("{} {}, server {server}", esc(&r.tool), esc(&r.tool_version)),
        );
        if let Some(line) = &c.command_line {
            item("Command", "command", &format!("<code>{}</code>", esc(line)));
        }
        item("Scripts", "scripts", &scripts(r));
        let partitions = r.options.partitioning.as_ref().map_or(String::new(), |p| {
            format!(" ({} partitions, {})", p.partitions, esc(&p.method))
        });
        item(
            "Scale",
            "scale",
            &format!("{}{partitions}", r.options.scale),
        );
        for (label, html) in &self.lines {
            item(label, &label.to_lowercase().replace(' ', "_"), html);
        }
        let settings = changed_settings(r);
        if !settings.is_empty() {
            item("Settings", "settings", &settings.join(", "));
        }
        if let Some((start, end)) = self.span {
            item("Time", "time", &format!("{} to {}", utc(start), utc(end)));
        }
        item("Outcome", "outcome", &self.outcome);
        out.push_str("</dl></header>");
        out
    }
}

/// The scripts with their weights and SHA-256.
fn scripts(r: &RunResult) -> String {
    let scripts: Vec<String> = r
        .options
        .scripts
        .iter()
        .map(|s| {
            let hash = s.sha256.as_deref().map_or(String::new(), |h| {
                format!(" <code class=\"hash\">sha256 {}</code>", esc(h))
            });
            format!("<code>{}</code> @{}{hash}", esc(&s.name), s.weight)
        })
        .collect();
    scripts.join("<br>")
}

/// The recorded settings that differ from PostgreSQL's defaults, as
/// `name = value`.
fn changed_settings(r: &RunResult) -> Vec<String> {
    r.context
        .server_settings
        .iter()
        .filter(|(name, value)| {
            DEFAULTS
                .iter()
                .find(|(n, _)| n == name)
                .map_or(true, |(_, default)| default != value)
        })
        .map(|(name, value)| format!("{} = {}", esc(name), esc(value)))
        .collect()
}

/// The first start and the last end of `runs`.
pub(super) fn span<'a>(runs: impl Iterator<Item = &'a RunResult>) -> Option<(i64, i64)> {
    runs.filter_map(|r| r.context.started_us.zip(r.context.ended_us))
        .reduce(|(a0, a1), (b0, b1)| (a0.min(b0), a1.max(b1)))
}

/// The findings of several runs (the steps of a sweep), each once, with
/// where it fired (`in the steps`, or whichever word `place` says): a
/// table, or a sentence when there is none (the section around it is the
/// caller's).
pub(super) fn findings_of_steps<'a>(
    steps: impl Iterator<Item = (String, &'a RunResult)>,
    place: &str,
) -> String {
    let mut seen: Vec<(&Finding, Vec<String>)> = Vec::new();
    let mut diagnosed = false;
    for (step, r) in steps {
        let Some(d) = &r.diagnosis else { continue };
        diagnosed = true;
        for f in &d.findings {
            match seen.iter_mut().find(|(g, _)| g.id == f.id) {
                Some((_, at)) => {
                    if !at.contains(&step) {
                        at.push(step.clone());
                    }
                }
                None => seen.push((f, vec![step.clone()])),
            }
        }
    }
    if !diagnosed {
        return format!("<p class=\"note\">No {place} was diagnosed.</p>");
    }
    if seen.is_empty() {
        return format!("<p>No finding in any {place}: nothing suggests these numbers measure something else than the server.</p>");
    }
    let mut out = String::new();
    seen.sort_by_key(|(f, _)| std::cmp::Reverse(f.severity));
    let _ = write!(out, "<table class=\"findings\"><tr><th>severity</th><th>finding (its first {place})</th><th>in the {place}s</th><th>what to do</th></tr>");
    for (f, at) in seen {
        let _ = write!(
            out,
            "<tr><td class=\"label\">{}</td><td class=\"text\">{}</td><td class=\"text\">{}</td><td class=\"text\">{}</td></tr>",
            f.severity.name(),
            esc(&f.summary),
            esc(&at.join(", ")),
            esc(&f.action)
        );
    }
    out.push_str("</table>");
    out
}

/// The header line of one side of a comparison: "Baseline" or
/// "Candidate" (from `name`), the side's colour key (`class`), its file
/// and what it measured.
pub fn side_line(class: &str, name: &str, source: &str, summary: &str) -> (&'static str, String) {
    let label = if name == "baseline" {
        "Baseline"
    } else {
        "Candidate"
    };
    (
        label,
        format!(
            "<span class=\"key {class}\"></span><code>{}</code>: {}",
            esc(source),
            esc(summary)
        ),
    )
}
