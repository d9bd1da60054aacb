//! pgbolt: a PostgreSQL benchmark client compatible with pgbench.
//!
//! Data flow: argv -> [`cli`] (no side effects) -> a validated configuration
//! (scripts parsed, files read, connection options resolved) -> the engine
//! (worker threads, each owning its clients, random states and statistics)
//! -> merged statistics -> the report model -> renderers -> exit code.

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
