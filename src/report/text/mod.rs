//! Every text rendering: pgbench's report of a run and pgbolt's lines
//! after it, and the reports of a sweep, targets compared, a comparison
//! (text and Markdown), the diagnosis and a merged fleet's generators.

pub mod comparison;
pub mod diagnosis;
pub mod escape;
pub mod generators;
pub mod outage;
pub mod run;
pub mod sweep;
pub mod sweep_comparison;
pub mod targets;
