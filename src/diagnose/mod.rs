//! The run's diagnosis: what was measured and whether to trust it.
//!
//! `crate::model::diagnosis` holds the figures (the monitor's view of the
//! server, the client's own CPU) and the findings. The findings
//! ([`findings`]) are pure functions of a `RunResult` with its diagnosis,
//! so they are tested on synthetic results and recomputed the same from a
//! saved JSON. They use the model and the statistics, nothing else; the
//! text section and the HTML panels are `crate::report`'s.

mod findings;
mod machine;
#[cfg(test)]
pub(crate) mod tests;

pub use findings::findings;
