//! The top statements by server time over the run, from the
//! `pg_stat_statements` extension when it is installed in the run's
//! database and readable: its counters read at the start and the end, and
//! the differences per statement.

use std::collections::BTreeMap;

use pgwire::blocking::Client;

use crate::model::diagnosis::StatementTime;

/// How many statements the diagnosis lists.
pub const TOP: usize = 5;

/// Calls and total execution time (ms) per statement (by `queryid`), with
/// its text (its first 200 characters) and whether it is one of the
/// monitor's own (judged by the server on the whole text).
#[derive(Debug, Clone, Default)]
pub struct Reading(BTreeMap<String, (String, i64, f64, bool)>);

/// Reads the extension's counters; `None`, with the reason in `missing`,
/// when it is not installed here or cannot be read.
pub fn read(
    client: &mut Client,
    version_num: u32,
    missing: &mut Vec<String>,
    queries: &mut i64,
) -> Option<Reading> {
    let installed = client
        .simple_query(
            "select count(*) from pg_catalog.pg_extension where extname = 'pg_stat_statements'",
        )
        .ok()?;
    *queries += 1;
    if installed
        .first()
        .and_then(|r| r.first())
        .cloned()
        .flatten()
        .as_deref()
        != Some("1")
    {
        super::note(
            missing,
            "pg_stat_statements: not installed in this database",
        );
        return None;
    }
    let time = if version_num >= 130_000 {
        "total_exec_time"
    } else {
        "total_time"
    };
    let sql = format!(
        "select queryid, calls, {time}, left(query, 200), \
         strpos(query, 'pg_catalog.pg_stat_') > 0 or strpos(query, 'from pg_stat_statements') > 0 \
         from pg_stat_statements \
         where dbid = (select oid from pg_catalog.pg_database \
         where datname = pg_catalog.current_database()) and queryid is not null"
    );
    match client.simple_query(&sql) {
        Ok(rows) => {
            *queries += 1;
            let mut reading = Reading::default();
            for row in rows {
                let text = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
                reading.0.insert(
                    text(0),
                    (
                        text(3),
                        text(1).parse().unwrap_or(0),
                        text(2).parse().unwrap_or(0.0),
                        text(4) == "t",
                    ),
                );
            }
            Some(reading)
        }
        Err(e) => {
            super::note(missing, &format!("pg_stat_statements: {}", super::why(&e)));
            None
        }
    }
}

/// Whether `query` is one of the monitor's own (they all read
/// `pg_catalog.pg_stat_*` views or this extension's). The server judges
/// the whole text too: a long statement's view may come after the 200
/// characters read back (regression: the monitor's activity sample was
/// listed among the workload's top statements).
fn monitors_own(query: &str) -> bool {
    query.contains("pg_catalog.pg_stat_") || query.contains("from pg_stat_statements")
}

/// The [`TOP`] statements by execution time between the two readings, the
/// monitor's own left out.
pub fn top(start: &Reading, end: &Reading) -> Vec<StatementTime> {
    let mut changed: Vec<StatementTime> = end
        .0
        .iter()
        .filter(|(_, (query, _, _, own))| !own && !monitors_own(query))
        .filter_map(|(id, (query, calls, total, _))| {
            let (c0, t0) = start.0.get(id).map_or((0, 0.0), |s| (s.1, s.2));
            let calls = calls - c0;
            (calls > 0).then(|| StatementTime {
                query: query.clone(),
                calls,
                total_ms: total - t0,
                mean_ms: (total - t0) / calls as f64,
            })
        })
        .collect();
    changed.sort_by(|a, b| b.total_ms.total_cmp(&a.total_ms));
    changed.truncate(TOP);
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_statements_are_those_that_took_the_most_time_in_between() {
        let entry = |q: &str, calls, total| (q.to_owned(), calls, total, false);
        let start = Reading(BTreeMap::from([
            ("1".to_owned(), entry("select a", 10, 5.0)),
            ("2".to_owned(), entry("update b", 1, 100.0)),
        ]));
        let end = Reading(BTreeMap::from([
            ("1".to_owned(), entry("select a", 110, 55.0)),
            ("2".to_owned(), entry("update b", 1, 100.0)),
            ("3".to_owned(), entry("insert c", 4, 8.0)),
            (
                "4".to_owned(),
                entry("select count(*) from pg_catalog.pg_stat_activity", 9, 90.0),
            ),
            (
                "5".to_owned(),
                ("select a_long_list_of_columns".to_owned(), 9, 95.0, true),
            ),
        ]));
        let top = top(&start, &end);
        assert_eq!(top.len(), 2);
        assert_eq!((top[0].query.as_str(), top[0].calls), ("select a", 100));
        assert!((top[0].mean_ms - 0.5).abs() < 1e-9);
        assert_eq!(top[1].query, "insert c");
    }
}
