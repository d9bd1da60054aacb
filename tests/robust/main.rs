//! Robustness: failures of the server, the network and the client during a
//! run, signals, secrets and options, on the binary's shared server or,
//! for tests that stop or freeze the server, on one of the test's own.

#[path = "../common/mod.rs"]
mod common;
#[path = "../failpaths_support/mod.rs"]
mod failpaths_support;
#[path = "../robust_support/mod.rs"]
mod robust_support;

mod failpaths_diff;
mod robust_connections;
mod robust_faults;
mod robust_logs;
mod robust_options;
mod robust_secrets;
mod robust_signals;
mod throttle_diff;
