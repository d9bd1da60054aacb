//! Runs through PgBouncer and `-i`: servers with the pgbench tables behind
//! a pooler, and the initialization compared table by table with
//! pgbench's on a server set up for deterministic `vacuum`.

#[path = "../common/mod.rs"]
mod common;
#[path = "../html_support/mod.rs"]
mod html_support;
#[path = "../init_support/mod.rs"]
mod init_support;

mod init;
mod init_failures;
mod pooler;
mod pooler_diff;
mod pooling;
