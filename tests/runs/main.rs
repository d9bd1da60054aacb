//! Benchmark runs, scripts, expressions and the command line, each compared
//! with pgbench's: every module works in databases of its own on the
//! binary's one shared PostgreSQL 18 server.

#[path = "../common/mod.rs"]
mod common;
#[path = "../engine_support/mod.rs"]
mod engine_support;
#[path = "../limits_support/mod.rs"]
mod limits_support;

mod cli;
mod encoding_diff;
mod engine;
mod engine_scripts;
mod expr_diff;
mod expr_edges_diff;
mod expr_proptest;
mod expr_unit;
mod limits_diff;
mod pgsuite_diff;
mod pipeline_diff;
mod script_commands;
mod script_errors;
mod script_proptest;
mod sql_text_diff;
