//! `pg_stat_io` (PostgreSQL 16 and newer): the server's I/O by backend
//! type, object and context, read at the start and the end of the window.
//! Only the rows that changed are kept, so a run's I/O is a handful of
//! rows (the clients' backends, the checkpointer, autovacuum, ...).
//!
//! PostgreSQL 18 counts bytes itself (a read may cover several blocks)
//! and adds WAL rows; 16 and 17 count operations of `op_bytes` each, so
//! their bytes are the operations times `op_bytes`.

use std::collections::BTreeMap;

use crate::model::diagnosis::IoCounters;

/// `pg_stat_io`'s counters in [`IoCounters`]' order, after the three keys.
const SQL_18: &str = "select backend_type, object, context, reads, read_bytes, writes, \
    write_bytes, extends, extend_bytes, hits, evictions, writebacks, fsyncs \
    from pg_catalog.pg_stat_io";
const SQL_16: &str = "select backend_type, object, context, reads, reads * op_bytes, writes, \
    writes * op_bytes, extends, extends * op_bytes, hits, evictions, writebacks, fsyncs \
    from pg_catalog.pg_stat_io";

/// The query for a server of `version_num`, `None` before 16.
pub fn sql(version_num: u32) -> Option<&'static str> {
    match version_num {
        v if v >= 180_000 => Some(SQL_18),
        v if v >= 160_000 => Some(SQL_16),
        _ => None,
    }
}

/// The counters of each (backend type, object, context).
pub type Reading = BTreeMap<(String, String, String), Vec<i64>>;

/// The rows of a reading: keys from the first three columns, the numbers
/// from the others.
pub fn reading(rows: Vec<pgwire::blocking::Row>) -> Reading {
    rows.into_iter()
        .map(|row| {
            let key = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
            let k = (key(0), key(1), key(2));
            (
                k,
                super::counters::numbers(row.into_iter().skip(3).collect()),
            )
        })
        .collect()
}

/// The rows whose counters changed between `start` and `end`; a row that
/// appeared (PostgreSQL 18 shows WAL rows once used) counts from zero.
pub fn changes(start: &Reading, end: &Reading) -> Vec<IoCounters> {
    end.iter()
        .filter_map(|((backend_type, object, context), e)| {
            let s = start.get(&(backend_type.clone(), object.clone(), context.clone()));
            let d = |i: usize| {
                e.get(i).copied().unwrap_or(0) - s.and_then(|s| s.get(i)).copied().unwrap_or(0)
            };
            let row = IoCounters {
                backend_type: backend_type.clone(),
                object: object.clone(),
                context: context.clone(),
                reads: d(0),
                read_bytes: d(1),
                writes: d(2),
                write_bytes: d(3),
                extends: d(4),
                extend_bytes: d(5),
                hits: d(6),
                evictions: d(7),
                writebacks: d(8),
                fsyncs: d(9),
            };
            (0..10).any(|i| d(i) != 0).then_some(row)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(b: &str, o: &str, c: &str) -> (String, String, String) {
        (b.to_owned(), o.to_owned(), c.to_owned())
    }

    #[test]
    fn only_rows_that_changed_are_kept_and_new_rows_count_from_zero() {
        let start = Reading::from([
            (key("client backend", "relation", "normal"), vec![1; 10]),
            (key("checkpointer", "relation", "normal"), vec![5; 10]),
        ]);
        let mut end = start.clone();
        end.insert(
            key("client backend", "relation", "normal"),
            vec![3, 16384, 1, 8192, 1, 1, 101, 1, 1, 1],
        );
        end.insert(
            key("client backend", "wal", "normal"),
            vec![0, 0, 2, 16384, 0, 0, 0, 0, 0, 2],
        );
        let rows = changes(&start, &end);
        assert_eq!(rows.len(), 2);
        let relation = &rows[0];
        assert_eq!(
            (
                relation.object.as_str(),
                relation.reads,
                relation.read_bytes,
                relation.hits
            ),
            ("relation", 2, 16383, 100)
        );
        assert_eq!((rows[1].object.as_str(), rows[1].fsyncs), ("wal", 2));
        let sums = crate::model::diagnosis::by_backend_type(&rows);
        assert_eq!(
            sums,
            vec![("client backend".to_owned(), [16383, 8191 + 16384, 0, 2])]
        );
    }

    #[test]
    fn servers_before_16_have_no_query() {
        assert_eq!(sql(150_004), None);
        assert_eq!(sql(160_000), Some(SQL_16));
        assert_eq!(sql(180_001), Some(SQL_18));
    }
}
