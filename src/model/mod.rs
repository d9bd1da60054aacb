//! The plain result types: a run, its diagnosis, a sweep, the targets
//! compared, a fleet's generators and a pooler's view.
//!
//! Every mode produces one of these and every renderer reads them, so they
//! sit below both: the engine, a study, the targets and the merge build
//! them, `crate::report` renders and writes them, `crate::compare` and
//! `crate::diagnose` compute over them. They hold data and the arithmetic
//! that belongs to the data (percentiles from a histogram, a share of
//! backend samples); they may use `crate::stats` and `crate::config`, and
//! nothing that runs, renders or writes.

pub mod diagnosis;
pub mod failover;
pub mod generators;
pub mod pooler;
pub mod run;
pub mod sweep;
pub mod targets;
