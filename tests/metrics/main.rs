//! Live metrics (`--metrics-listen`, `--metrics-push`) scraped by and
//! pushed to a real Prometheus (the
//! machine's, installed by `make deps`) against the binary's shared
//! server.

#[path = "../common/mod.rs"]
mod common;

mod docs;
mod prometheus;
mod push;
mod scrape;
