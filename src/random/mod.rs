//! pgbench-compatible random numbers.
