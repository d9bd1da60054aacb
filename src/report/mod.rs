//! Reports: every rendering of every result kind, and the one reader and
//! writer of result files.
//!
//! Each result kind of `crate::model` (a run, a sweep, targets compared,
//! a comparison of two results, a merged fleet) is the single value its
//! outputs are rendered from, so the text, the JSON and the page cannot
//! disagree:
//! - [`text`]: pgbench 18's final report line for line and pgbolt's lines
//!   after it, and the text (or Markdown) of every other kind;
//! - [`json`]: a run's result with a `schema_version`, exact sums and
//!   serialized histograms, read back ([`from_json`]) and added exactly
//!   ([`merge`]);
//! - [`html`]: one self-contained page per kind, with charts, which
//!   embeds the JSON;
//! - [`check`]: the fields of a result read back, checked before anything
//!   draws or compares it;
//! - [`files`]: the `--json` and `--html` files of every mode, checked
//!   before the work starts and written whole after it ([`atomic`]: a
//!   temporary file renamed over the target), and [`overlap`]: outputs
//!   that would overwrite an input or each other.
//!
//! It uses the model, the settings, the statistics and the computations
//! of [`crate::compare`] and [`crate::diagnose`]; it runs nothing.

mod atomic;
pub mod bounded;
pub mod check;
pub mod files;
pub mod html;
pub mod json;
pub mod overlap;
pub mod text;

pub use html::{render_comparison_html, render_html};
pub use json::{from_json, merge, read_result, to_compact_json, to_json};
