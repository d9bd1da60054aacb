//! Reports: one result model, several renderings.
//!
//! [`RunResult::build`] turns the merged statistics of a run and the
//! resolved options into a [`RunResult`], the single value every output is
//! rendered from, so the text, the JSON and any later format cannot
//! disagree:
//! - [`render_pgbench`] prints pgbench 18's final report, line for line;
//! - [`render_percentiles`] prints pgbolt's extra percentile lines
//!   ([`render_text`] prints both, or only pgbench's with `pgbench_output`);
//! - [`to_json`] writes the model with a `schema_version`, exact sums and
//!   serialized histograms, and [`from_json`] and [`merge`] read results
//!   back and add them exactly;
//! - [`render_html`] writes one self-contained HTML page with charts
//!   ([`html`]), which embeds the JSON.
//!
//! The model never holds a password: besides the options that shape the
//! workload it records the command line ([`redacted_command_line`]) with
//! every password in it replaced by `****`.

pub mod files;
pub mod html;
pub mod json;
pub mod text;

pub use html::{render_comparison_html, render_html};
pub use json::{from_json, merge, read_result, to_compact_json, to_json};
