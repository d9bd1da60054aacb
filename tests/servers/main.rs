//! Servers in other states and versions: hot standbys, PostgreSQL 15, the
//! diagnosis's monitor on servers of its own, and a fleet of generators
//! in network namespaces.

#[path = "../common/mod.rs"]
mod common;
#[path = "../serverstate_support/mod.rs"]
mod serverstate_support;

mod diagnose;
mod fleet;
mod server15_diff;
mod serverstate_diff;
mod versions_diff;
