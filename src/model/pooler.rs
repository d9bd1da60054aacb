//! What a PgBouncer's admin console told about the pooler (its version and
//! settings) and what it showed during a step (pools, waits, its CPU), as
//! result files hold them. `crate::observe::pooler` reads the console.

use serde::{Deserialize, Serialize};

/// What the console says about the pooler.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PoolerInfo {
    /// As `SHOW VERSION` gives it (`PgBouncer 1.18.0`).
    pub version: String,
    pub pool_mode: Option<String>,
    pub max_client_conn: Option<u32>,
    pub default_pool_size: Option<u32>,
    /// Absent before PgBouncer 1.21, which keeps no prepared statements.
    pub max_prepared_statements: Option<u32>,
}

impl PoolerInfo {
    /// Whether clients' named prepared statements survive the pooling:
    /// session pooling, or PgBouncer 1.21 and later with
    /// `max_prepared_statements` above 0.
    pub fn keeps_prepared_statements(&self) -> bool {
        if self.pool_mode.as_deref() == Some("session") {
            return true;
        }
        let recent = crate::tempdb::parse_version(&self.version).is_some_and(|v| v >= (1, 21, 0));
        recent && self.max_prepared_statements.unwrap_or(0) > 0
    }
}

/// What the pooler showed during one step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PoolerView {
    /// `SHOW POOLS` readings taken.
    pub samples: u32,
    /// The most clients seen at once in a transaction on a server
    /// connection, waiting for one, and server connections busy.
    pub cl_active_max: u64,
    pub cl_waiting_max: u64,
    pub sv_active_max: u64,
    /// The longest wait of a client, in seconds (`maxwait`).
    pub maxwait_max_s: f64,
    /// Clients' wait for a server connection per transaction, µs, from
    /// `SHOW STATS`'s totals over the step.
    pub wait_us_per_xact: Option<f64>,
    /// The pooler's CPU over the step, in % of one CPU (a local pooler
    /// whose process is known).
    pub cpu_percent: Option<f64>,
}
