//! The run's diagnosis: what was measured and whether to trust it.
//!
//! [`model`] holds the figures (the monitor's view of the server from
//! [`crate::observe`], the client's own CPU) and the findings. The
//! findings ([`findings`]) are pure functions of a [`RunResult`] with its
//! diagnosis, so they are tested on synthetic results and recomputed the
//! same from a saved JSON. [`render_text`] prints the short section that
//! follows the text report (never under `--pgbench-output`); the HTML
//! panels live in `report::html::diagnosis`.

mod findings;
#[cfg(test)]
pub(crate) mod tests;

pub use findings::findings;
