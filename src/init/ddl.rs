//! The SQL text of every initialization statement.
//!
//! The text is pgbench's, byte for byte (including the odd `aid    int`
//! spacing), because a failing statement is echoed to the user as
//! `Query was: ...` and because the server records some of it (constraint
//! and partition definitions). Nothing here touches the network.

use super::{PartitionMethod, NACCOUNTS, NBRANCHES, NTELLERS};

/// From this scale on, account ids (`aid`) are `bigint`.
pub const SCALE_32BIT_THRESHOLD: u32 = 20000;

/// The four tables, in the order pgbench creates them.
pub const TABLES: [&str; 4] = [
    "pgbench_history",
    "pgbench_tellers",
    "pgbench_accounts",
    "pgbench_branches",
];

/// Drops the four tables in one statement, so foreign keys between them do
/// not matter. Nothing else is dropped.
pub const DROP_TABLES: &str =
    "drop table if exists pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers";

/// Empties the four tables in one statement, for the same reason.
pub const TRUNCATE_TABLES: &str =
    "truncate table pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers";

/// The foreign keys of `--foreign-keys` / step `f`, in pgbench's order.
pub const FOREIGN_KEYS: [&str; 5] = [
    "alter table pgbench_tellers add constraint pgbench_tellers_bid_fkey foreign key (bid) references pgbench_branches",
    "alter table pgbench_accounts add constraint pgbench_accounts_bid_fkey foreign key (bid) references pgbench_branches",
    "alter table pgbench_history add constraint pgbench_history_bid_fkey foreign key (bid) references pgbench_branches",
    "alter table pgbench_history add constraint pgbench_history_tid_fkey foreign key (tid) references pgbench_tellers",
    "alter table pgbench_history add constraint pgbench_history_aid_fkey foreign key (aid) references pgbench_accounts",
];

/// The tables in the order step `v` vacuums them.
pub const VACUUM_ORDER: [&str; 4] = [
    "pgbench_branches",
    "pgbench_tellers",
    "pgbench_accounts",
    "pgbench_history",
];

struct TableDdl {
    name: &'static str,
    small_columns: &'static str,
    big_columns: &'static str,
    fillfactor: bool,
}

const TABLE_DDL: [TableDdl; 4] = [
    TableDdl {
        name: "pgbench_history",
        small_columns: "tid int,bid int,aid    int,delta int,mtime timestamp,filler char(22)",
        big_columns: "tid int,bid int,aid bigint,delta int,mtime timestamp,filler char(22)",
        fillfactor: false,
    },
    TableDdl {
        name: "pgbench_tellers",
        small_columns: "tid int not null,bid int,tbalance int,filler char(84)",
        big_columns: "tid int not null,bid int,tbalance int,filler char(84)",
        fillfactor: true,
    },
    TableDdl {
        name: "pgbench_accounts",
        small_columns: "aid    int not null,bid int,abalance int,filler char(84)",
        big_columns: "aid bigint not null,bid int,abalance int,filler char(84)",
        fillfactor: true,
    },
    TableDdl {
        name: "pgbench_branches",
        small_columns: "bid int not null,bbalance int,filler char(88)",
        big_columns: "bid int not null,bbalance int,filler char(88)",
        fillfactor: true,
    },
];

/// Quotes an identifier the way libpq's `PQescapeIdentifier` does: always
/// in double quotes, inner double quotes doubled.
pub fn quote_identifier(name: &str) -> String {
    let mut quoted = String::with_capacity(name.len() + 2);
    quoted.push('"');
    for c in name.chars() {
        if c == '"' {
            quoted.push('"');
        }
        quoted.push(c);
    }
    quoted.push('"');
    quoted
}

/// Everything that shapes the schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schema {
    pub scale: u32,
    pub fillfactor: u32,
    pub unlogged: bool,
    pub tablespace: Option<String>,
    pub index_tablespace: Option<String>,
    /// `None` when `pgbench_accounts` is a plain table.
    pub partitioning: Option<(PartitionMethod, u32)>,
}

impl Schema {
    /// Total rows of `pgbench_accounts`.
    pub fn accounts(&self) -> i64 {
        NACCOUNTS * i64::from(self.scale)
    }

    /// `create table` statements for the four tables, then the partitions.
    pub fn create_tables(&self) -> Vec<String> {
        let big = self.scale >= SCALE_32BIT_THRESHOLD;
        let mut statements = Vec::with_capacity(4);
        for ddl in &TABLE_DDL {
            let unlogged = self.unlogged && self.partitioning.is_none();
            let mut sql = format!(
                "create{} table {}({})",
                if unlogged { " unlogged" } else { "" },
                ddl.name,
                if big {
                    ddl.big_columns
                } else {
                    ddl.small_columns
                }
            );
            match self.partitioning {
                Some((method, _)) if ddl.name == "pgbench_accounts" => {
                    sql.push_str(&format!(" partition by {} (aid)", method.keyword()));
                }
                _ if ddl.fillfactor => {
                    sql.push_str(&format!(" with (fillfactor={})", self.fillfactor));
                }
                _ => {}
            }
            if let Some(tablespace) = &self.tablespace {
                sql.push_str(" tablespace ");
                sql.push_str(&quote_identifier(tablespace));
            }
            statements.push(sql);
        }
        statements
    }

    /// `create table ... partition of pgbench_accounts` statements, one per
    /// partition (empty when the table is not partitioned).
    pub fn create_partitions(&self) -> Vec<String> {
        let Some((method, count)) = self.partitioning else {
            return Vec::new();
        };
        let unlogged = if self.unlogged { " unlogged" } else { "" };
        (1..=count)
            .map(|p| {
                let mut sql = format!(
                    "create{unlogged} table pgbench_accounts_{p}\n  partition of pgbench_accounts\n  for values "
                );
                match method {
                    PartitionMethod::Range => {
                        let size = self.range_partition_size();
                        let from = if p == 1 {
                            "minvalue".to_string()
                        } else {
                            (i64::from(p - 1) * size + 1).to_string()
                        };
                        let to = if p < count {
                            (i64::from(p) * size + 1).to_string()
                        } else {
                            "maxvalue".to_string()
                        };
                        sql.push_str(&format!("from ({from}) to ({to})"));
                    }
                    PartitionMethod::Hash => {
                        sql.push_str(&format!("with (modulus {count}, remainder {})", p - 1));
                    }
                }
                sql.push_str(&format!(" with (fillfactor={})", self.fillfactor));
                sql
            })
            .collect()
    }

    /// Rows per range partition (the last one may hold fewer).
    pub fn range_partition_size(&self) -> i64 {
        let partitions = match self.partitioning {
            Some((_, n)) => i64::from(n.max(1)),
            None => 1,
        };
        (self.accounts() + partitions - 1) / partitions
    }

    /// The account ids `[first, last]` that range partition `p` (1-based)
    /// receives, or `None` when it stays empty.
    pub fn range_partition_rows(&self, p: u32) -> Option<(i64, i64)> {
        let size = self.range_partition_size();
        let first = i64::from(p - 1) * size + 1;
        let last = (i64::from(p) * size).min(self.accounts());
        (first <= last).then_some((first, last))
    }

    /// The three `insert ... select ... generate_series` statements of step
    /// `G`, for branches, tellers and accounts.
    pub fn server_side_inserts(&self) -> [String; 3] {
        let scale = i64::from(self.scale);
        [
            format!(
                "insert into pgbench_branches(bid,bbalance) select bid, 0 from generate_series(1, {}) as bid",
                NBRANCHES * scale
            ),
            format!(
                "insert into pgbench_tellers(tid,bid,tbalance) select tid, (tid - 1) / {NTELLERS} + 1, 0 from generate_series(1, {}) as tid",
                NTELLERS * scale
            ),
            format!(
                "insert into pgbench_accounts(aid,bid,abalance,filler) select aid, (aid - 1) / {NACCOUNTS} + 1, 0, '' from generate_series(1, {}) as aid",
                self.accounts()
            ),
        ]
    }

    fn index_tablespace_clause(&self) -> String {
        match &self.index_tablespace {
            Some(ts) => format!(" using index tablespace {}", quote_identifier(ts)),
            None => String::new(),
        }
    }

    /// The primary keys of step `p`: branches, tellers, accounts.
    pub fn primary_keys(&self) -> [String; 3] {
        let ts = self.index_tablespace_clause();
        [
            format!("alter table pgbench_branches add primary key (bid){ts}"),
            format!("alter table pgbench_tellers add primary key (tid){ts}"),
            format!("alter table pgbench_accounts add primary key (aid){ts}"),
        ]
    }

    /// The primary key of one partition, built ahead of the partitioned
    /// table's own key, which then adopts it instead of building it again.
    pub fn partition_primary_key(&self, p: u32) -> String {
        format!(
            "alter table pgbench_accounts_{p} add primary key (aid){}",
            self.index_tablespace_clause()
        )
    }
}

/// `COPY` of one table from standard input; `freeze` when the table was
/// created or emptied in the same transaction and is a plain table.
pub fn copy_statement(table: &str, freeze: bool) -> String {
    if freeze {
        format!("copy {table} from stdin with (freeze on)")
    } else {
        format!("copy {table} from stdin")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Schema {
        Schema {
            scale: 1,
            fillfactor: 100,
            unlogged: false,
            tablespace: None,
            index_tablespace: None,
            partitioning: None,
        }
    }

    #[test]
    fn default_tables_match_pgbench() {
        assert_eq!(
            schema().create_tables(),
            [
                "create table pgbench_history(tid int,bid int,aid    int,delta int,mtime timestamp,filler char(22))",
                "create table pgbench_tellers(tid int not null,bid int,tbalance int,filler char(84)) with (fillfactor=100)",
                "create table pgbench_accounts(aid    int not null,bid int,abalance int,filler char(84)) with (fillfactor=100)",
                "create table pgbench_branches(bid int not null,bbalance int,filler char(88)) with (fillfactor=100)",
            ]
        );
    }

    #[test]
    fn big_scale_unlogged_tablespace() {
        let s = Schema {
            scale: 20000,
            fillfactor: 80,
            unlogged: true,
            tablespace: Some("my \"ts\"".into()),
            ..schema()
        };
        let tables = s.create_tables();
        assert_eq!(
            tables[0],
            "create unlogged table pgbench_history(tid int,bid int,aid bigint,delta int,mtime timestamp,filler char(22)) tablespace \"my \"\"ts\"\"\""
        );
        assert_eq!(
            tables[2],
            "create unlogged table pgbench_accounts(aid bigint not null,bid int,abalance int,filler char(84)) with (fillfactor=80) tablespace \"my \"\"ts\"\"\""
        );
        let small = Schema { scale: 19999, ..s };
        assert!(small.create_tables()[2].contains("aid    int not null"));
    }

    #[test]
    fn range_partitions_cover_every_account() {
        let s = Schema {
            scale: 2,
            unlogged: true,
            partitioning: Some((PartitionMethod::Range, 3)),
            ..schema()
        };
        assert_eq!(
            s.create_tables()[2],
            "create table pgbench_accounts(aid    int not null,bid int,abalance int,filler char(84)) partition by range (aid)"
        );
        assert_eq!(
            s.create_partitions(),
            [
                "create unlogged table pgbench_accounts_1\n  partition of pgbench_accounts\n  for values from (minvalue) to (66668) with (fillfactor=100)",
                "create unlogged table pgbench_accounts_2\n  partition of pgbench_accounts\n  for values from (66668) to (133335) with (fillfactor=100)",
                "create unlogged table pgbench_accounts_3\n  partition of pgbench_accounts\n  for values from (133335) to (maxvalue) with (fillfactor=100)",
            ]
        );
        assert_eq!(s.range_partition_rows(1), Some((1, 66667)));
        assert_eq!(s.range_partition_rows(3), Some((133335, 200000)));
    }

    #[test]
    fn range_partitions_beyond_the_rows_stay_empty() {
        let s = Schema {
            partitioning: Some((PartitionMethod::Range, 300000)),
            ..schema()
        };
        assert_eq!(s.range_partition_rows(100000), Some((100000, 100000)));
        assert_eq!(s.range_partition_rows(100001), None);
    }

    #[test]
    fn hash_partitions() {
        let s = Schema {
            fillfactor: 90,
            partitioning: Some((PartitionMethod::Hash, 2)),
            ..schema()
        };
        assert_eq!(
            s.create_partitions()[1],
            "create table pgbench_accounts_2\n  partition of pgbench_accounts\n  for values with (modulus 2, remainder 1) with (fillfactor=90)"
        );
    }

    #[test]
    fn keys_and_generation() {
        let s = Schema {
            scale: 3,
            index_tablespace: Some("fast".into()),
            ..schema()
        };
        assert_eq!(
            s.primary_keys()[2],
            "alter table pgbench_accounts add primary key (aid) using index tablespace \"fast\""
        );
        assert_eq!(
            s.partition_primary_key(4),
            "alter table pgbench_accounts_4 add primary key (aid) using index tablespace \"fast\""
        );
        assert_eq!(
            s.server_side_inserts()[2],
            "insert into pgbench_accounts(aid,bid,abalance,filler) select aid, (aid - 1) / 100000 + 1, 0, '' from generate_series(1, 300000) as aid"
        );
        assert_eq!(
            copy_statement("pgbench_tellers", true),
            "copy pgbench_tellers from stdin with (freeze on)"
        );
    }
}
