//! Rows of the three generated tables in COPY text format.
//!
//! The rows are pgbench's: `filler` is NULL (`\N`) in branches and tellers
//! and an empty string (blank-padded by the server to `char(84)`) in
//! accounts; balances are 0. Measured on PostgreSQL 15, the server parses
//! this text format faster than the equivalent binary format (whose rows
//! are twice as long), and the server is the bottleneck of a load, so text
//! it is. Digits are written by hand into a reused buffer: no formatting
//! machinery per row.

use super::hash::hash_partition_of;
use super::{NACCOUNTS, NTELLERS};

/// Which table a row belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    Branches,
    Tellers,
    Accounts,
}

impl Table {
    pub fn name(self) -> &'static str {
        match self {
            Table::Branches => "pgbench_branches",
            Table::Tellers => "pgbench_tellers",
            Table::Accounts => "pgbench_accounts",
        }
    }
}

/// Appends the row with 0-based index `k` of `table`.
pub fn push_row(buf: &mut Vec<u8>, table: Table, k: i64) {
    crate::decimal::push_i64(buf, k + 1);
    match table {
        Table::Branches => buf.extend_from_slice(b"\t0\t\\N\n"),
        Table::Tellers => {
            buf.push(b'\t');
            crate::decimal::push_i64(buf, k / NTELLERS + 1);
            buf.extend_from_slice(b"\t0\t\\N\n");
        }
        Table::Accounts => {
            buf.push(b'\t');
            crate::decimal::push_i64(buf, k / NACCOUNTS + 1);
            buf.extend_from_slice(b"\t0\t\n");
        }
    }
}

/// Bytes of rows gathered before they are sent as one COPY data message.
pub const CHUNK_BYTES: usize = 256 * 1024;

/// The rows of `table` whose 1-based ids fall in a list of inclusive
/// ranges (and, optionally, in some hash partitions), produced a buffer at
/// a time, in ascending id order.
pub struct RowSource {
    table: Table,
    ranges: Vec<(i64, i64)>,
    /// `(modulus, wanted[remainder])`: keep only these hash partitions.
    hash_filter: Option<(u32, Vec<bool>)>,
    range: usize,
    next: i64,
    done: i64,
}

impl RowSource {
    pub fn new(table: Table, ranges: Vec<(i64, i64)>) -> RowSource {
        let next = ranges.first().map_or(1, |r| r.0);
        RowSource {
            table,
            ranges,
            hash_filter: None,
            range: 0,
            next,
            done: 0,
        }
    }

    /// Accounts `1..=total` that PostgreSQL routes to the hash partitions
    /// whose remainders are `remainders`, out of `modulus`.
    pub fn hash_partitions(total: i64, modulus: u32, remainders: &[u32]) -> RowSource {
        let mut wanted = vec![false; modulus as usize];
        for &r in remainders {
            wanted[r as usize] = true;
        }
        RowSource {
            hash_filter: Some((modulus, wanted)),
            ..RowSource::new(Table::Accounts, vec![(1, total)])
        }
    }

    fn keeps(&self, id: i64) -> bool {
        match &self.hash_filter {
            Some((modulus, wanted)) => wanted[hash_partition_of(id, *modulus) as usize],
            None => true,
        }
    }

    /// Appends rows to `buf` until it holds about [`CHUNK_BYTES`]; returns
    /// whether rows remain.
    pub fn fill(&mut self, buf: &mut Vec<u8>) -> bool {
        while let Some(&(_, last)) = self.ranges.get(self.range) {
            while self.next <= last {
                if buf.len() >= CHUNK_BYTES {
                    return true;
                }
                if self.keeps(self.next) {
                    push_row(buf, self.table, self.next - 1);
                    self.done += 1;
                }
                self.next += 1;
            }
            self.range += 1;
            if let Some(&(first, _)) = self.ranges.get(self.range) {
                self.next = first;
            }
        }
        false
    }

    /// Rows appended so far.
    pub fn rows_done(&self) -> i64 {
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_cover_their_ranges_in_order() {
        let mut source = RowSource::new(Table::Branches, vec![(1, 3), (7, 8)]);
        let mut buf = Vec::new();
        assert!(!source.fill(&mut buf));
        assert_eq!(source.rows_done(), 5);
        let ids: Vec<&str> = std::str::from_utf8(&buf)
            .unwrap()
            .lines()
            .map(|l| l.split('\t').next().unwrap())
            .collect();
        assert_eq!(ids, ["1", "2", "3", "7", "8"]);

        let mut big = RowSource::new(Table::Accounts, vec![(1, 100_000)]);
        let mut chunks = 0;
        loop {
            let mut buf = Vec::new();
            let more = big.fill(&mut buf);
            assert!(buf.len() < CHUNK_BYTES + 64);
            chunks += 1;
            if !more {
                break;
            }
        }
        assert!(chunks > 1);
        assert_eq!(big.rows_done(), 100_000);
    }

    #[test]
    fn hash_sources_split_the_accounts() {
        let mut seen = Vec::new();
        for remainders in [&[0u32, 2][..], &[1][..]] {
            let mut source = RowSource::hash_partitions(20, 3, remainders);
            let mut buf = Vec::new();
            assert!(!source.fill(&mut buf));
            let ids: Vec<i64> = std::str::from_utf8(&buf)
                .unwrap()
                .lines()
                .map(|l| l.split('\t').next().unwrap().parse().unwrap())
                .collect();
            assert!(ids.windows(2).all(|w| w[0] < w[1]));
            assert_eq!(source.rows_done(), ids.len() as i64);
            seen.extend(ids);
        }
        seen.sort();
        assert_eq!(seen, (1..=20).collect::<Vec<i64>>());
    }

    #[test]
    fn rows_match_pgbench_copy_text() {
        let cases = [
            (Table::Branches, 0, "1\t0\t\\N\n"),
            (Table::Tellers, 9, "10\t1\t0\t\\N\n"),
            (Table::Tellers, 10, "11\t2\t0\t\\N\n"),
            (Table::Accounts, 99_999, "100000\t1\t0\t\n"),
            (Table::Accounts, 100_000, "100001\t2\t0\t\n"),
            (Table::Accounts, 9_999_999_999, "10000000000\t100000\t0\t\n"),
        ];
        for (table, k, expected) in cases {
            let mut buf = Vec::new();
            push_row(&mut buf, table, k);
            assert_eq!(String::from_utf8(buf).unwrap(), expected);
        }
    }
}
