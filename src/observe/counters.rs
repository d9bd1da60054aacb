//! The counters read at the start and the end of the measured window, and
//! their differences. Each view is read by a query of its own, so a view
//! this server lacks or this role may not read costs only its own figures.
//! The checkpoint and table counters are also read every second in
//! between ([`read_events`]) to place checkpoints and vacuums on the
//! timeline (see `events`).

use std::collections::BTreeMap;

use pgwire::blocking::{Client, Row};

use crate::model::diagnosis::{
    CheckpointCounters, DatabaseCounters, ServerCounters, TableCounters, WalCounters,
};

const DATABASE: &str = "select xact_commit, xact_rollback, blks_read, blks_hit, temp_files, \
    temp_bytes, deadlocks, conflicts, tup_inserted + tup_updated + tup_deleted \
    from pg_catalog.pg_stat_database where datname = pg_catalog.current_database()";
const WAL: &str = "select wal_records, wal_fpi, wal_bytes from pg_catalog.pg_stat_wal";
/// The checkpoint counters, with the server's clock (µs since the epoch)
/// to place the tables' time stamps on pgbolt's.
const CHECKPOINTER: &str = "select num_timed, num_requested, \
    extract(epoch from pg_catalog.clock_timestamp()) * 1e6 from pg_catalog.pg_stat_checkpointer";
const BGWRITER: &str = "select checkpoints_timed, checkpoints_req, \
    extract(epoch from pg_catalog.clock_timestamp()) * 1e6 from pg_catalog.pg_stat_bgwriter";
const TABLES: &str = "select relname, n_dead_tup, autovacuum_count, autoanalyze_count, \
    vacuum_count, analyze_count, extract(epoch from last_autovacuum) * 1e6, \
    extract(epoch from last_autoanalyze) * 1e6, extract(epoch from last_vacuum) * 1e6, \
    extract(epoch from last_analyze) * 1e6 from pg_catalog.pg_stat_user_tables \
    where relname like 'pgbench\\_%' order by relname";

/// One reading of every counter the role could read.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    pub(super) database: Option<Vec<i64>>,
    pub(super) wal: Option<Vec<i64>>,
    /// Timed and requested.
    pub(super) checkpoints: Option<Vec<i64>>,
    /// Per table: dead tuples, autovacuums, autoanalyzes, vacuums,
    /// analyzes, then the last of each as µs since the epoch (0: never).
    pub(super) tables: BTreeMap<String, Vec<i64>>,
    pub(super) io: Option<super::io::Reading>,
    /// The server's clock as it read the checkpoint counters.
    pub(super) server_clock_us: Option<i64>,
    /// pgbolt's clock then, µs since the epoch.
    pub(super) taken_us: i64,
}

/// Runs the queries on `client`; what failed is named in `missing` (once:
/// `missing` is only added to when it does not hold the line yet).
/// `queries` counts the transactions the queries committed.
pub fn read(
    client: &mut Client,
    version_num: u32,
    missing: &mut Vec<String>,
    queries: &mut i64,
) -> Reading {
    let mut reading = read_events(client, version_num, missing, queries);
    let mut run =
        |sql: &str, what: &str, missing: &mut Vec<String>| run(client, sql, what, missing, queries);
    reading.database = first(run(DATABASE, "pg_stat_database", missing));
    if version_num >= 140_000 {
        reading.wal = first(run(WAL, "pg_stat_wal", missing));
    } else {
        super::note(missing, "pg_stat_wal: needs PostgreSQL 14 or newer");
    }
    match super::io::sql(version_num) {
        Some(sql) => reading.io = run(sql, "pg_stat_io", missing).map(super::io::reading),
        None => super::note(missing, "pg_stat_io: needs PostgreSQL 16 or newer"),
    }
    reading
}

/// The counters that make events (checkpoints, the tables' vacuums and
/// analyzes) and the server's clock, with pgbolt's time of the reading.
pub fn read_events(
    client: &mut Client,
    version_num: u32,
    missing: &mut Vec<String>,
    queries: &mut i64,
) -> Reading {
    let before = crate::wallclock::now_us();
    let checkpoints = if version_num >= 170_000 {
        first(run(
            client,
            CHECKPOINTER,
            "pg_stat_checkpointer",
            missing,
            queries,
        ))
    } else {
        first(run(client, BGWRITER, "pg_stat_bgwriter", missing, queries))
    };
    let after = crate::wallclock::now_us();
    let mut reading = Reading {
        server_clock_us: checkpoints.as_ref().and_then(|c| c.get(2).copied()),
        checkpoints: checkpoints.map(|mut c| {
            c.truncate(2);
            c
        }),
        taken_us: before + (after - before) / 2,
        ..Reading::default()
    };
    for row in run(client, TABLES, "pg_stat_user_tables", missing, queries).unwrap_or_default() {
        if let Some(Some(name)) = row.first() {
            reading
                .tables
                .insert(name.clone(), numbers(row[1..].to_vec()));
        }
    }
    reading
}

/// Runs `sql`; on an error notes `what` and why in `missing` (once) and
/// gives `None`.
fn run(
    client: &mut Client,
    sql: &str,
    what: &str,
    missing: &mut Vec<String>,
    queries: &mut i64,
) -> Option<Vec<Row>> {
    match client.simple_query(sql) {
        Ok(rows) => {
            *queries += 1;
            Some(rows)
        }
        Err(e) => {
            super::note(missing, &format!("{what}: {}", super::why(&e)));
            None
        }
    }
}

/// The first row's values as numbers.
fn first(rows: Option<Vec<Row>>) -> Option<Vec<i64>> {
    rows.and_then(|r| r.into_iter().next()).map(numbers)
}

/// The database counters alone, read on the set-up connection before the
/// clients start, so that the window's commits are all counted however
/// late the monitor connects. `None` when the query failed.
/// On PostgreSQL 15 and newer the connection's own statistics are flushed
/// first, so that its earlier transactions are not counted in the window.
///
/// `pg_stat_statements` is read there too, first, so that the database
/// reading is the last transaction of the set-up connection.
pub fn read_database(client: &mut Client) -> Option<DatabaseStart> {
    let version = client
        .parameter("server_version")
        .map_or(0, super::version_number);
    let mut missing = Vec::new();
    let statements = super::statements::read(client, version, &mut missing, &mut 0);
    if version >= 150_000 {
        let _ = client.simple_query("select pg_catalog.pg_stat_force_next_flush()");
    }
    let rows = client.simple_query(DATABASE).ok()?;
    let database = rows.into_iter().next().map(numbers)?;
    Some(DatabaseStart {
        database,
        statements,
        missing,
    })
}

/// What the set-up connection read before the run (see [`read_database`]).
#[derive(Debug, Clone)]
pub struct DatabaseStart {
    database: Vec<i64>,
    pub statements: Option<super::statements::Reading>,
    /// What it could not read.
    pub missing: Vec<String>,
}

impl Reading {
    /// Puts `start`'s database counters in place of this reading's.
    pub fn with_database(mut self, start: &DatabaseStart) -> Reading {
        self.database = Some(start.database.clone());
        self
    }
}

/// A row's values as integers (0 for a null or a non-number).
pub(super) fn numbers(row: Row) -> Vec<i64> {
    row.into_iter()
        .map(|v| {
            v.as_deref()
                .and_then(|v| v.parse::<f64>().ok())
                .map_or(0, |f| f as i64)
        })
        .collect()
}

/// `end - start` field by field, when both readings have the view.
fn delta(start: &Option<Vec<i64>>, end: &Option<Vec<i64>>) -> Option<Vec<i64>> {
    match (start, end) {
        (Some(s), Some(e)) if s.len() == e.len() => {
            Some(s.iter().zip(e).map(|(s, e)| e - s).collect())
        }
        _ => None,
    }
}

/// The changes between two readings. `monitor_commits` is the number of
/// pgbolt's own transactions (the monitor's, the set-up connection's
/// reading) between the two database readings.
pub fn changes(
    start: &Reading,
    end: &Reading,
    monitor_commits: i64,
) -> (ServerCounters, Vec<TableCounters>) {
    let at = |v: &[i64], i: usize| v.get(i).copied().unwrap_or(0);
    let counters = ServerCounters {
        database: delta(&start.database, &end.database).map(|d| DatabaseCounters {
            xact_commit: at(&d, 0),
            xact_rollback: at(&d, 1),
            blks_read: at(&d, 2),
            blks_hit: at(&d, 3),
            temp_files: at(&d, 4),
            temp_bytes: at(&d, 5),
            deadlocks: at(&d, 6),
            conflicts: at(&d, 7),
            rows_written: at(&d, 8),
            monitor_commits,
        }),
        wal: delta(&start.wal, &end.wal).map(|d| WalCounters {
            records: at(&d, 0),
            full_page_images: at(&d, 1),
            bytes: at(&d, 2),
        }),
        checkpoints: delta(&start.checkpoints, &end.checkpoints).map(|d| CheckpointCounters {
            timed: at(&d, 0),
            requested: at(&d, 1),
        }),
        io: match (&start.io, &end.io) {
            (Some(s), Some(e)) => super::io::changes(s, e),
            _ => Vec::new(),
        },
    };
    let tables = end
        .tables
        .iter()
        .map(|(name, e)| {
            let s = start
                .tables
                .get(name)
                .cloned()
                .unwrap_or_else(|| vec![0; e.len()]);
            let d = |i: usize| at(e, i) - at(&s, i);
            TableCounters {
                table: name.clone(),
                dead_tuples: at(e, 0),
                autovacuums: d(1),
                autoanalyzes: d(2),
                vacuums: d(3),
                analyzes: d(4),
            }
        })
        .collect();
    (counters, tables)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_end_minus_start_and_a_view_read_once_gives_none() {
        let start = Reading {
            database: Some(vec![10, 1, 5, 100, 0, 0, 0, 0, 7]),
            wal: None,
            checkpoints: Some(vec![3, 4]),
            tables: BTreeMap::from([("pgbench_branches".to_owned(), vec![9, 1, 1, 0, 0])]),
            ..Reading::default()
        };
        let end = Reading {
            database: Some(vec![110, 3, 6, 300, 1, 8192, 0, 0, 57]),
            wal: Some(vec![1, 2, 3]),
            checkpoints: Some(vec![3, 5]),
            tables: BTreeMap::from([("pgbench_branches".to_owned(), vec![2, 2, 1, 1, 0])]),
            ..Reading::default()
        };
        let (c, t) = changes(&start, &end, 12);
        let db = c.database.expect("database");
        assert_eq!(
            (db.xact_commit, db.xact_rollback, db.rows_written),
            (100, 2, 50)
        );
        assert_eq!(db.monitor_commits, 12);
        assert!(c.wal.is_none());
        assert_eq!(c.checkpoints.map(|c| c.requested), Some(1));
        assert_eq!(t[0].dead_tuples, 2);
        assert_eq!((t[0].autovacuums, t[0].vacuums), (1, 1));
    }
}
