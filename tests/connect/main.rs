//! Connecting: the protocol layer (pgwire), authentication, TLS and
//! connection strings, each module with the servers its configuration
//! needs (auth methods, certificates, `log_connections`).

#[path = "../common/mod.rs"]
mod common;
#[path = "../conninfo_support/mod.rs"]
mod conninfo_support;
#[path = "../pgwire_support/mod.rs"]
mod pgwire_support;
#[path = "../tls_support/mod.rs"]
mod tls_support;

mod auth_diff;
mod conninfo_diff;
mod pgwire_connect;
mod pgwire_query;
mod pgwire_tls;
mod tls_diff;
