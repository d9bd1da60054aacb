//! Several load generators running one benchmark together.
//!
//! pgbolt does not orchestrate machines: an existing orchestrator (a
//! Kubernetes Indexed Job, `ssh`, GNU `parallel`) starts `N` copies of the
//! same command line, each told its index (`--generator=I/N`, or
//! `--generators=N` with the index in `JOB_COMPLETION_INDEX`). Each copy
//! computes its share from the command line alone, so the copies need not
//! talk to each other:
//!
//! - **clients and threads** are dealt to the generators the way pgbench
//!   deals clients to threads (generator `I` gets `ceil(left / (N - I))`
//!   of what is left), so the totals are exactly the command line's; each
//!   generator runs at least one thread, so the fleet runs at least `N`;
//! - **`-R`** is split in proportion to the threads (every thread of the
//!   fleet runs the schedule one thread of a single run of the whole
//!   command line would); `-t` is per client and stays as given;
//! - **random states**: the fleet draws the states of a single run of the
//!   whole command line (`clients_total` clients, `threads_total` threads,
//!   in pgbench's order from the seed) and each generator takes its
//!   clients' and threads' states from it, so with `--random-seed=N` the
//!   generators together draw exactly what one process would and never the
//!   same stream twice;
//! - **`client_id`** is global: generator `I`'s clients are numbered after
//!   those of generators `0..I`, so scripts that partition data by
//!   `:client_id` work unchanged.
//!
//! `--start-at` makes every generator connect its clients, run its
//! preflight, then wait until that wall-clock time before it starts; one
//! that is ready later than [`crate::config::fleet::LATE_TOLERANCE_US`] after it refuses to run
//! rather than measure another window. The offline `--merge` adds the
//! results exactly ([`merge`]).
//!
//! A generator's share is computed from the settings (`crate::config::fleet`);
//! this module holds the merge, which uses the model and the report's exact
//! addition of run results, and the fleet's diagnosis ([`diagnosis`]),
//! drawn with the diagnosis's findings; reading the files and writing the
//! merged one is `crate::app`'s.

pub mod diagnosis;
pub mod merge;
