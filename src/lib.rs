//! pgbolt: a PostgreSQL benchmark client compatible with pgbench.
//!
//! Data flow, one way: argv -> [`cli`] (no side effects) -> a validated
//! [`config::Config`] (scripts parsed, files read, connection options
//! resolved) -> [`app`] picks the mode -> [`targets`] and [`study`] call
//! [`engine`] once per step (worker threads, each owning its clients,
//! random states and statistics; [`observe`] watches the server) -> the
//! plain results of [`model`] -> [`diagnose`] and [`compare`] compute over
//! them -> [`report`] renders and writes them -> exit code.
//!
//! Each top-level module uses only the modules below it; the floors are
//! written once, in `tests/layering.rs`, which holds them against the code.

pub mod app;
pub mod cli;
pub mod cnum;
pub mod compare;
pub mod config;
pub mod decimal;
pub mod diagnose;
pub mod engine;
pub mod expr;
pub mod fleet;
pub mod init;
pub mod metrics;
pub mod model;
pub mod observe;
pub mod oserror;
pub mod program;
mod prompt;
pub mod random;
pub mod report;
pub mod script;
pub mod sigstop;
pub mod stats;
pub mod study;
pub mod targets;
pub mod tempdb;
pub mod wallclock;
