//! `-i`: create pgbench's four tables, fill them, vacuum them, add keys.
//!
//! The end state is pgbench's, exactly: the same statements create the same
//! tables, partitions, storage options and constraints (see [`ddl`]); the
//! same rows are loaded by the same kind of statement (COPY with FREEZE
//! where pgbench uses it, `insert ... select generate_series` for `G`); the
//! same messages are printed on standard error, and a failing statement is
//! reported with pgbench's `query failed:` / `Query was:` lines.
//!
//! Where pgbolt is faster, it is by doing independent work at the same time
//! on extra connections, never by doing different work:
//! - steps `v` and `p` run the statements of different tables on separate
//!   connections at once;
//! - when this run created a partitioned `pgbench_accounts` (step `t`),
//!   step `g` loads its partitions on separate connections, each partition
//!   by one connection in ascending `aid` order (so every partition's
//!   physical row order is pgbench's; for hash partitions the loader
//!   computes PostgreSQL's routing, see [`hash`]; pgbench itself uses no
//!   FREEZE for a partitioned table), step `v` vacuums partitions in
//!   parallel before the parent's `vacuum analyze`, and step `p` builds each
//!   partition's key in parallel before the parent's key, which adopts them;
//! - during steps `g`, `G` and `p` a WAL flusher (`parallel::WalFlusher`)
//!   keeps the WAL flushed from its own connection, so the loading backend
//!   does not stop to write it; its empty transactions touch no table (they
//!   only use transaction ids).
//!
//! A plain `pgbench_accounts` is loaded by one connection with COPY FREEZE,
//! as pgbench does: FREEZE needs the table to be emptied in the loading
//! transaction, so it cannot be shared by several loaders, and measured on
//! PostgreSQL 15, parallel loads without FREEZE followed by the freezing
//! vacuum that would make the tuples identical are slower than one frozen
//! load. The row stream itself is generated without per-row formatting
//! machinery and sent in large writes.

pub mod ddl;
mod hash;
mod parallel;
mod progress;
mod rows;
mod run;
mod session;
pub mod steps;

use std::fmt;
use std::num::NonZeroUsize;

pub use run::{run, run_with_terminal};
pub use steps::{InitStep, InitSteps, InitStepsError};

/// Branches per scale unit.
pub const NBRANCHES: i64 = 1;
/// Tellers per scale unit.
pub const NTELLERS: i64 = 10;
/// Accounts per scale unit.
pub const NACCOUNTS: i64 = 100_000;

/// `--partition-method`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionMethod {
    Range,
    Hash,
}

impl PartitionMethod {
    /// Parses the option value, case-insensitively as pgbench does.
    pub fn parse(value: &str) -> Option<PartitionMethod> {
        if value.eq_ignore_ascii_case("range") {
            Some(PartitionMethod::Range)
        } else if value.eq_ignore_ascii_case("hash") {
            Some(PartitionMethod::Hash)
        } else {
            None
        }
    }

    /// The SQL keyword after `partition by`.
    pub fn keyword(self) -> &'static str {
        match self {
            PartitionMethod::Range => "range",
            PartitionMethod::Hash => "hash",
        }
    }
}

/// Everything `-i` needs besides the connection options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InitOptions {
    /// `-s`: scale factor, at least 1.
    pub scale: u32,
    /// `-I`: `None` runs pgbench's default `dtgvp`.
    pub steps: Option<InitSteps>,
    /// `-F`: fillfactor of the tables, 10 to 100.
    pub fillfactor: u32,
    /// `-n`: drop every `v` step.
    pub no_vacuum: bool,
    /// `--foreign-keys`: append an `f` step unless there is one.
    pub foreign_keys: bool,
    /// `--tablespace`.
    pub tablespace: Option<String>,
    /// `--index-tablespace`.
    pub index_tablespace: Option<String>,
    /// `--partition-method`; `None` means range when `partitions > 0`.
    pub partition_method: Option<PartitionMethod>,
    /// `--partitions`: 0 for a plain `pgbench_accounts`.
    pub partitions: u32,
    /// `--unlogged-tables`.
    pub unlogged_tables: bool,
    /// `-q`: a progress line every 5 seconds instead of every 100000 rows.
    pub quiet: bool,
    /// pgbolt's `--init-jobs`: connections used at once where the end state
    /// allows it; `None` picks the number of CPUs, at most 8.
    pub jobs: Option<NonZeroUsize>,
}

impl Default for InitOptions {
    fn default() -> Self {
        InitOptions {
            scale: 1,
            steps: None,
            fillfactor: 100,
            no_vacuum: false,
            foreign_keys: false,
            tablespace: None,
            index_tablespace: None,
            partition_method: None,
            partitions: 0,
            unlogged_tables: false,
            quiet: false,
            jobs: None,
        }
    }
}

impl InitOptions {
    /// The steps that will run, after `-n` and `--foreign-keys`.
    pub fn effective_steps(&self) -> InitSteps {
        let mut steps = self.steps.clone().unwrap_or_else(InitSteps::default_steps);
        if self.no_vacuum {
            steps = steps.without_vacuum();
        }
        if self.foreign_keys {
            steps = steps.with_foreign_keys();
        }
        steps
    }

    /// The schema these options describe, after pgbench's partitioning
    /// rules: `--partition-method` needs `--partitions`, whose method
    /// defaults to range.
    pub fn schema(&self) -> Result<ddl::Schema, InitError> {
        let partitioning = match (self.partitions, self.partition_method) {
            (0, Some(_)) => return Err(InitError::PartitionMethodWithoutPartitions),
            (0, None) => None,
            (n, method) => Some((method.unwrap_or(PartitionMethod::Range), n)),
        };
        Ok(ddl::Schema {
            scale: self.scale,
            fillfactor: self.fillfactor,
            unlogged: self.unlogged_tables,
            tablespace: self.tablespace.clone(),
            index_tablespace: self.index_tablespace.clone(),
            partitioning,
        })
    }

    fn job_count(&self) -> usize {
        match self.jobs {
            Some(n) => n.get(),
            None => std::thread::available_parallelism()
                .map(NonZeroUsize::get)
                .unwrap_or(1)
                .min(8),
        }
    }
}

/// Why initialization stopped. [`InitError::report`] gives the exact lines
/// pgbench prints for the same failure.
#[derive(Debug)]
pub enum InitError {
    /// `--partition-method` without `--partitions`.
    PartitionMethodWithoutPartitions,
    /// No connection could be opened.
    Connect(pgwire::Error),
    /// A statement failed; `message` is libpq's wording of the error.
    Query { sql: String, message: String },
    /// The server refused to start a COPY.
    CopyStart { message: String },
    /// Rows could not be sent during a COPY: the connection broke (the
    /// server ended the backend, say). pgbench says only that
    /// `PQputline` failed, without the reason.
    CopyData,
    /// A COPY failed after it started.
    CopyEnd { message: String },
}

impl fmt::Display for InitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InitError::PartitionMethodWithoutPartitions => {
                f.write_str("--partition-method requires greater than zero --partitions")
            }
            InitError::Connect(e) => write!(f, "{e}"),
            InitError::Query { message, .. } => {
                write!(f, "query failed: {}", message.trim_end_matches('\n'))
            }
            InitError::CopyStart { message } => {
                write!(
                    f,
                    "unexpected copy in result: {}",
                    message.trim_end_matches('\n')
                )
            }
            InitError::CopyData => f.write_str("PQputline failed"),
            InitError::CopyEnd { .. } => f.write_str("PQendcopy failed"),
        }
    }
}

impl std::error::Error for InitError {}

impl InitError {
    /// Everything pgbench prints on standard error for this failure, with
    /// the prefixes of pgbench's logging (`<progname>: error: ...`). A COPY
    /// that fails at its end shows the server's message first, bare, as
    /// libpq's notice processor prints it for pgbench.
    pub fn report(&self, progname: &str) -> String {
        let mut text = match self {
            InitError::CopyEnd { message } => message.clone(),
            _ => String::new(),
        };
        text.push_str(&format!("{progname}: error: {self}\n"));
        match self {
            InitError::Connect(_) => text.push_str(&format!(
                "{progname}: error: could not create connection for initialization\n"
            )),
            InitError::Query { sql, .. } => {
                text.push_str(&format!("{progname}: detail: Query was: {sql}\n"))
            }
            InitError::PartitionMethodWithoutPartitions
            | InitError::CopyStart { .. }
            | InitError::CopyData
            | InitError::CopyEnd { .. } => {}
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitioning_rules_of_pgbench() {
        let cases = [
            (0, None, Ok(None)),
            (3, None, Ok(Some((PartitionMethod::Range, 3)))),
            (
                2,
                Some(PartitionMethod::Hash),
                Ok(Some((PartitionMethod::Hash, 2))),
            ),
            (0, Some(PartitionMethod::Hash), Err(())),
        ];
        for (partitions, partition_method, expected) in cases {
            let opts = InitOptions {
                partitions,
                partition_method,
                ..InitOptions::default()
            };
            let got = opts.schema().map(|s| s.partitioning).map_err(|_| ());
            assert_eq!(got, expected, "{partitions} {partition_method:?}");
        }
        let err = InitOptions {
            partition_method: Some(PartitionMethod::Range),
            ..InitOptions::default()
        }
        .schema()
        .unwrap_err();
        assert_eq!(
            err.report("pgbolt"),
            "pgbolt: error: --partition-method requires greater than zero --partitions\n"
        );
    }

    #[test]
    fn reports_are_pgbench_lines() {
        let query = InitError::Query {
            sql: "drop table x".into(),
            message: "ERROR:  must be owner of table x\n".into(),
        };
        assert_eq!(
            query.report("pgbolt"),
            "pgbolt: error: query failed: ERROR:  must be owner of table x\n\
             pgbolt: detail: Query was: drop table x\n"
        );
        let copy = InitError::CopyEnd {
            message: "ERROR:  boom\nCONTEXT:  COPY t, line 1\n".into(),
        };
        assert_eq!(
            copy.report("pgbolt"),
            "ERROR:  boom\nCONTEXT:  COPY t, line 1\npgbolt: error: PQendcopy failed\n"
        );
        assert_eq!(
            InitError::CopyData.report("pgbolt"),
            "pgbolt: error: PQputline failed\n"
        );
    }

    #[test]
    fn effective_steps_apply_no_vacuum_and_foreign_keys() {
        let opts = InitOptions {
            no_vacuum: true,
            foreign_keys: true,
            ..InitOptions::default()
        };
        assert_eq!(opts.effective_steps().to_string(), "dtgpf");
        assert_eq!(PartitionMethod::parse("HaSh"), Some(PartitionMethod::Hash));
        assert_eq!(PartitionMethod::parse("list"), None);
    }
}
