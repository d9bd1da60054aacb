//! The HTML report: one offline file that shows a run at a glance.
//!
//! The third renderer of the result model, beside the text and the JSON:
//! it reads nothing but a [`RunResult`], so a report written at the end of
//! a run (`--html`) and one rendered later from the saved JSON
//! (`--render`) are the same page, apart from the time stamp of the
//! rendering.
//!
//! The page is self-contained and safe by construction:
//! - inline CSS and inline SVG ([`svg`]), no script that runs, and a
//!   `Content-Security-Policy` that forbids every network request, so it
//!   opens anywhere offline, with JavaScript disabled, and prints;
//! - every text from outside (script names, commands, SQL, server
//!   strings, the command line) goes through [`escape::esc`];
//! - the JSON result is embedded in a `<script type="application/json">`
//!   element ([`escape::script_data`]), so the page is also the data.
//!
//! Sections are functions from the result to HTML, listed in [`SECTIONS`]
//! in page order; each lives in the module of its subject ([`summary`]:
//! header and key figures, [`diagnosis`]: the findings, the server
//! backends' states over time and the counters, [`time`]: the run over
//! time, [`distribution`]: latency distribution and percentile spectrum,
//! [`tables`]: scripts, commands, schedule and connections). A later
//! feature adds its pages the same way: a sweep's steps, a comparison or a
//! merged result's generators become a module with a section function
//! added to the list (a result kind of its own gets a list of its own),
//! and use [`svg::Chart`] for their charts. Budgets (tested): a one-hour
//! run's page stays under 400 KB and 5,000 SVG elements; a chart draws
//! each series as one polyline, whatever the number of points.

mod comparison;
mod diagnosis;
mod distribution;
pub mod escape;
mod frame;
mod outage;
mod summary;
pub mod svg;
mod sweep;
mod sweep_comparison;
mod tables;
mod targets;
mod time;

use std::fmt::Write as _;

use crate::model::run::{ReportError, RunResult};

pub use comparison::render_comparison_html;
pub use sweep::render_sweep_html;
pub use sweep_comparison::render_sweep_comparison_html;
pub use targets::render_targets_html;

/// A section of the page: its HTML, or nothing when it does not apply.
type Section = fn(&RunResult) -> Result<Option<String>, ReportError>;

/// The sections of a run's page, in order.
const SECTIONS: &[Section] = &[
    summary::header,
    summary::key_figures,
    diagnosis::findings,
    outage::section,
    time::throughput,
    diagnosis::backend_states,
    time::latency,
    distribution::histogram,
    distribution::spectrum,
    tables::scripts,
    tables::schedule,
    tables::connections,
    tables::generators,
    diagnosis::counters,
];

/// Forbids every fetch, connection, image, frame, form and script (all
/// fall back to `default-src`); allows only the page's own inline styles.
const CONTENT_SECURITY_POLICY: &str =
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'none'; base-uri 'none'";

const STYLE: &str = include_str!("style.css");

/// The page of `result`; `rendered_at` is shown in its footer (µs since
/// the Unix epoch).
pub fn render_html(result: &RunResult, rendered_at_us: i64) -> Result<String, ReportError> {
    let json = super::to_compact_json(result)?;
    let mut out = page_start(&summary::title(result), json.len());
    for section in SECTIONS {
        if let Some(html) = section(result)? {
            out.push_str(&html);
        }
    }
    page_end(&mut out, "result", &json, rendered_at_us);
    Ok(out)
}

/// The page's head, up to the start of its content; `data_len` is the
/// size of the JSON it will embed.
fn page_start(title: &str, data_len: usize) -> String {
    let mut out = String::with_capacity(data_len + 64 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CONTENT_SECURITY_POLICY}\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head><body><main>",
        escape::esc(title)
    );
    out
}

/// The footer and the embedded JSON (`what` names it in the footer).
fn page_end(out: &mut String, what: &str, json: &str, rendered_at_us: i64) {
    let _ = write!(
        out,
        "<footer>Rendered by pgbolt {} at {}. The {what} is embedded in this page as JSON (element <code>#pgbolt-result</code>).</footer></main>\
         <script type=\"application/json\" id=\"pgbolt-result\">{}</script></body></html>",
        escape::esc(env!("CARGO_PKG_VERSION")),
        crate::wallclock::utc(rendered_at_us),
        escape::script_data(json)
    );
    out.push('\n');
}

/// The JSON result embedded in a page written by [`render_html`] (still
/// escaped as [`escape::script_data`] left it, which JSON reads as it is).
pub fn embedded_json(page: &str) -> Option<&str> {
    const START: &str = "<script type=\"application/json\" id=\"pgbolt-result\">";
    let start = page.find(START)? + START.len();
    let len = page[start..].find("</script>")?;
    Some(&page[start..start + len])
}
