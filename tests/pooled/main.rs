//! Runs through PgBouncer: servers with the pgbench tables behind a
//! pooler, pgbolt's `--temp-pgbouncer`, and the pooled run compared with
//! pgbench's.

#[path = "../common/mod.rs"]
mod common;
#[path = "../html_support/mod.rs"]
mod html_support;

mod pooler;
mod pooler_diff;
mod pooling;
