//! Live metrics (`--metrics-listen`) scraped by a real Prometheus (the
//! machine's, installed by `make deps`) against the binary's shared
//! server.

#[path = "../common/mod.rs"]
mod common;

mod prometheus;
mod scrape;
