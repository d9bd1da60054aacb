//! Throwaway servers: the `tempdb` library the other tests start theirs
//! with, and pgbolt's `--temp-instance`.

#[path = "../common/mod.rs"]
mod common;
#[path = "../tempinst_support/mod.rs"]
mod tempinst_support;

mod temp_instance;
mod tempdb;
mod tempinst_edges;
mod tempinst_privacy;
