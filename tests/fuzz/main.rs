//! Property-based fuzzing of every parser of outside input, of the
//! result-file readers, and of the client against a fake server; `make
//! fuzz` runs this binary with many more cases (`PGBOLT_FUZZ_CASES`). No
//! PostgreSQL server.

mod results_fuzz;
mod robust_fakeserver;
mod robust_fuzz;
