//! `--reconnect`: the commits the clients saw, checked against the
//! database after the run, and the server's own view of the write gap.
//!
//! A client that lost its connection after sending `COMMIT` does not know
//! whether the transaction committed; one whose commit was acknowledged
//! knows it did, and a failover that loses it (an asynchronous standby
//! promoted) is the failure a switchover test is for. So the committed
//! transactions are counted on the server before the run (on the set-up
//! connection, after the vacuum) and after it (on a new connection made
//! with the same connection string, which reaches the primary that
//! survived): the count after less the count before is what the server
//! has, to be set against what the clients were told.
//!
//! What counts the committed transactions: for the TPC-B-like builtin,
//! which inserts one `pgbench_history` row per transaction, its rows;
//! for other scripts the query `--committed-query` gives (which must
//! return one number). Without either there is no check.
//!
//! The server-side gap is read from the same table, the way CloudNativePG
//! measures a failover: `pgbench_history.mtime` is the server's clock (the
//! start of each transaction), and the longest time between two
//! consecutive rows written during the run is the time the database took
//! no writes. It is a cross-check of the clients' figure (see
//! `crate::model::failover`), read with one sort of the rows written
//! during the run.

use pgwire::blocking::Client;
use pgwire::Connector;

use crate::config::{Benchmark, ScriptSpec};
use crate::model::failover::{CommitCheck, Outage, ServerGap};
use crate::program::log;

/// How the committed transactions are counted.
#[derive(Debug, Clone)]
pub struct Counting {
    /// What the report calls it.
    pub name: String,
    query: String,
    /// The server's write gap can be read from `pgbench_history`.
    history: bool,
}

const HISTORY_ROWS: &str = "SELECT count(*) FROM pgbench_history";

/// How this run's commits are counted, if they can be: under
/// `--reconnect`, with `--committed-query` or when every script is the
/// TPC-B-like builtin.
pub fn counting(bench: &Benchmark) -> Option<Counting> {
    bench.reconnect?;
    if let Some(query) = &bench.committed_query {
        return Some(Counting {
            name: "--committed-query".to_owned(),
            query: query.clone(),
            history: false,
        });
    }
    let tpcb = |spec: &ScriptSpec| match spec {
        ScriptSpec::Builtin { name, .. } => {
            crate::script::find_builtin(name).is_ok_and(|b| b.name == "tpcb-like")
        }
        ScriptSpec::File { .. } => false,
    };
    (!bench.scripts.is_empty() && bench.scripts.iter().all(tpcb)).then(|| Counting {
        name: "pgbench_history rows".to_owned(),
        query: HISTORY_ROWS.to_owned(),
        history: true,
    })
}

/// The count on `client`; a failure is shown and gives none.
pub fn count(client: &mut Client, counting: &Counting) -> Option<i64> {
    let read = client
        .simple_query(&counting.query)
        .map_err(|e| e.to_string())
        .and_then(|rows| {
            let value = rows.first().and_then(|row| row.first()).cloned().flatten();
            value
                .as_deref()
                .and_then(|v| v.trim().parse::<i64>().ok())
                .ok_or_else(|| format!("it returned {value:?}, not one number"))
        });
    match read {
        Ok(n) => Some(n),
        Err(e) => {
            log::error(format_args!(
                "could not count the committed transactions ({}): {e}",
                counting.name
            ));
            None
        }
    }
}

/// After the run: counts the commits again on the surviving primary and
/// reads the server's write gap since `run_start_us`, into `outage`.
pub fn check(
    connector: &Connector,
    counting: &Counting,
    before: i64,
    acknowledged: u64,
    run_start_us: i64,
    outage: &mut Outage,
) {
    let mut client = match Client::connect_with(connector, &mut Vec::new()) {
        Ok(client) => client,
        Err(e) => {
            log::error(format_args!(
                "could not connect to check the committed transactions: {e}"
            ));
            return;
        }
    };
    if let Some(after) = count(&mut client, counting) {
        outage.commit_check = Some(CommitCheck {
            counted_by: counting.name.clone(),
            before,
            after,
            acknowledged,
            in_doubt: outage.failures.in_doubt,
        });
    }
    if counting.history && outage.start_us.is_some() {
        outage.server_gap = server_gap(&mut client, run_start_us);
    }
    client.close();
}

/// The longest time between two consecutive `pgbench_history` rows
/// written since `since_us`.
fn server_gap(client: &mut Client, since_us: i64) -> Option<ServerGap> {
    let sql = format!(
        "SELECT (extract(epoch FROM prev::timestamptz) * 1e6)::int8, \
                (extract(epoch FROM mtime::timestamptz) * 1e6)::int8 \
         FROM (SELECT mtime, lag(mtime) OVER (ORDER BY mtime) AS prev \
               FROM pgbench_history WHERE mtime::timestamptz >= to_timestamp({})) h \
         WHERE prev IS NOT NULL ORDER BY mtime - prev DESC LIMIT 1",
        since_us as f64 / 1e6
    );
    let rows = match client.simple_query(&sql) {
        Ok(rows) => rows,
        Err(e) => {
            log::error(format_args!("could not read the server's write gap: {e}"));
            return None;
        }
    };
    let row = rows.first()?;
    let value = |i: usize| row.get(i).cloned().flatten()?.parse::<i64>().ok();
    Some(ServerGap {
        last_before_us: value(0)?,
        first_after_us: value(1)?,
    })
}
