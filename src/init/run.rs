//! The step loop: one step after another, each timed, each announced on
//! standard error with pgbench's words, then the `done in ...` summary.

use std::io::{IsTerminal, Write};
use std::time::Instant;

use pgwire::conninfo::Config;

use super::ddl::{self, Schema};
use super::parallel::{self, Pool, WalFlusher};
use super::progress::Progress;
use super::rows::{RowSource, Table};
use super::session::Session;
use super::{InitError, InitOptions, InitStep, PartitionMethod, NBRANCHES, NTELLERS};

/// COPY FREEZE exists from PostgreSQL 14 on for pgbench's purposes.
const FREEZE_MIN_SERVER_VERSION: u32 = 140000;

/// Runs `-i` with `opts` against the server `conn_config` names, writing
/// pgbench's messages to `out` (meant to be standard error: progress lines
/// overwrite each other when standard error is a terminal).
pub fn run(
    opts: &InitOptions,
    conn_config: &Config,
    out: &mut impl Write,
) -> Result<(), InitError> {
    run_with_terminal(opts, conn_config, out, std::io::stderr().is_terminal())
}

/// [`run`], saying explicitly whether `out` is a terminal.
pub fn run_with_terminal(
    opts: &InitOptions,
    conn_config: &Config,
    out: &mut impl Write,
    terminal: bool,
) -> Result<(), InitError> {
    let schema = opts.schema()?;
    let steps = opts.effective_steps();
    let mut config = conn_config.clone();
    let main = Session::connect_asking(&mut config)?;
    let mut init = Init {
        schema,
        quiet: opts.quiet,
        terminal,
        created_here: false,
        pool: Pool::new(main, &config, opts.job_count()),
    };
    // What the server said as the session started comes first, as libpq
    // prints it on connecting.
    init.pool.flush_notices(out);
    let mut summary = Vec::new();
    let mut total = 0.0;
    for &step in steps.steps() {
        let start = Instant::now();
        init.step(step, out)?;
        let elapsed = start.elapsed().as_secs_f64();
        summary.push(format!("{} {elapsed:.2} s", step.timing_label()));
        total += elapsed;
        init.pool.release();
    }
    say(
        out,
        &format!("done in {total:.2} s ({}).\n", summary.join(", ")),
    );
    Ok(())
}

/// Writes a message to standard error. Like pgbench, a failing standard
/// error does not stop initialization.
pub(super) fn say(out: &mut impl Write, text: &str) {
    let _ = out.write_all(text.as_bytes());
}

struct Init<'a> {
    schema: Schema,
    quiet: bool,
    terminal: bool,
    /// Whether step `t` ran in this invocation, so the partitions of
    /// `pgbench_accounts` are known to be the ones `schema` describes.
    created_here: bool,
    pool: Pool<'a>,
}

impl Init<'_> {
    fn step(&mut self, step: InitStep, out: &mut impl Write) -> Result<(), InitError> {
        match step {
            InitStep::DropTables => {
                say(out, "dropping old tables...\n");
                self.created_here = false;
                self.pool.main_execute(ddl::DROP_TABLES, out)
            }
            InitStep::CreateTables => self.create_tables(out),
            InitStep::ClientSideGenerate => self.generate_client_side(out),
            InitStep::ServerSideGenerate => self.generate_server_side(out),
            InitStep::Vacuum => self.vacuum(out),
            InitStep::PrimaryKeys => self.primary_keys(out),
            InitStep::ForeignKeys => {
                say(out, "creating foreign keys...\n");
                for sql in ddl::FOREIGN_KEYS {
                    self.pool.main_execute(sql, out)?;
                }
                Ok(())
            }
        }
    }

    fn create_tables(&mut self, out: &mut impl Write) -> Result<(), InitError> {
        say(out, "creating tables...\n");
        for sql in self.schema.create_tables() {
            self.pool.main_execute(&sql, out)?;
        }
        if let Some((_, count)) = self.schema.partitioning {
            say(out, &format!("creating {count} partitions...\n"));
            for sql in self.schema.create_partitions() {
                self.pool.main_execute(&sql, out)?;
            }
        }
        self.created_here = true;
        Ok(())
    }

    /// A [`WalFlusher`] for a step that writes much WAL on `connections`
    /// connections, when more than one connection may be used. The step's
    /// connections are opened first, so that where the server or the role
    /// allows no more, it is the flusher that goes without.
    fn wal_flusher(&mut self, connections: usize) -> Result<Option<WalFlusher>, InitError> {
        if self.pool.jobs() <= 1 {
            return Ok(None);
        }
        self.pool.open(connections)?;
        if self.pool.jobs() <= 1 {
            return Ok(None);
        }
        Ok(WalFlusher::start(self.pool.config()))
    }

    /// Opens the connections a step of `tables` statements (plus one per
    /// partition) may use side by side before it chooses its statements:
    /// where the server or the role refuses some, [`known_partitions`]
    /// then sees the lower count, and one connection means pgbench's
    /// statements.
    ///
    /// [`known_partitions`]: Self::known_partitions
    fn open_before_planning(&mut self, tables: usize) -> Result<(), InitError> {
        let partitions = match self.schema.partitioning {
            Some((_, count)) if self.created_here => count as usize,
            _ => 0,
        };
        if self.pool.jobs() > 1 {
            self.pool.open(tables + partitions)?;
        }
        Ok(())
    }

    /// The partitioning of `pgbench_accounts` when its partitions may be
    /// loaded, vacuumed and keyed side by side: this run created them (so
    /// they are the ones the options describe), there are several, and more
    /// than one connection may be used.
    fn known_partitions(&self) -> Option<(PartitionMethod, u32)> {
        match self.schema.partitioning {
            Some((method, count)) if self.created_here && count > 1 && self.pool.jobs() > 1 => {
                Some((method, count))
            }
            _ => None,
        }
    }

    fn generate_client_side(&mut self, out: &mut impl Write) -> Result<(), InitError> {
        say(out, "generating data (client-side)...\n");
        let loaders = self
            .known_partitions()
            .map_or(1, |(_, count)| count as usize);
        let _flusher = self.wal_flusher(loaders)?;
        self.pool.main_execute("begin", out)?;
        self.pool.main_execute(ddl::TRUNCATE_TABLES, out)?;
        let scale = i64::from(self.schema.scale);
        self.copy_on_main(Table::Branches, NBRANCHES * scale, out)?;
        self.copy_on_main(Table::Tellers, NTELLERS * scale, out)?;
        let Some((method, count)) = self.known_partitions() else {
            self.copy_on_main(Table::Accounts, self.schema.accounts(), out)?;
            return self.pool.main_execute("commit", out);
        };
        // The partitions load side by side, each by one connection in
        // ascending order, so the loading transaction ends here.
        self.pool.main_execute("commit", out)?;
        let total = self.schema.accounts();
        let mut progress = self.progress(Table::Accounts, total);
        let schema = &self.schema;
        let source = |loader: usize, loaders: usize| {
            let mine = (0..count).skip(loader).step_by(loaders);
            match method {
                PartitionMethod::Range => RowSource::new(
                    Table::Accounts,
                    mine.filter_map(|r| schema.range_partition_rows(r + 1))
                        .collect(),
                ),
                PartitionMethod::Hash => {
                    RowSource::hash_partitions(total, count, &mine.collect::<Vec<u32>>())
                }
            }
        };
        let loaders = (count as usize).min(self.pool.jobs());
        parallel::load_accounts(&mut self.pool, loaders, source, &mut progress, out)
    }

    fn progress(&self, table: Table, total: i64) -> Progress {
        Progress::new(table.name(), total, self.quiet, self.terminal)
    }

    /// pgbench's COPY of one table on the main connection, inside the
    /// loading transaction: FREEZE when the server has it and the table is
    /// a plain one.
    fn copy_on_main(
        &mut self,
        table: Table,
        total: i64,
        out: &mut impl Write,
    ) -> Result<(), InitError> {
        let freeze = self.pool.main().server_version_num() >= FREEZE_MIN_SERVER_VERSION
            && self.relkind(table.name(), out)? == "r";
        let mut progress = self.progress(table, total);
        let mut source = RowSource::new(table, vec![(1, total)]);
        let main = self.pool.main();
        let result = main.copy_in(&ddl::copy_statement(table.name(), freeze), |buf| {
            let more = source.fill(buf);
            progress.advance(source.rows_done(), out);
            more
        });
        progress.finish(out);
        self.pool.flush_notices(out);
        result
    }

    fn relkind(&mut self, table: &str, out: &mut impl Write) -> Result<String, InitError> {
        let result = self.pool.main().relkind(table);
        self.pool.flush_notices(out);
        result
    }

    fn generate_server_side(&mut self, out: &mut impl Write) -> Result<(), InitError> {
        say(out, "generating data (server-side)...\n");
        let _flusher = self.wal_flusher(1)?;
        self.pool.main_execute("begin", out)?;
        self.pool.main_execute(ddl::TRUNCATE_TABLES, out)?;
        for sql in self.schema.server_side_inserts() {
            self.pool.main_execute(&sql, out)?;
        }
        self.pool.main_execute("commit", out)
    }

    fn vacuum(&mut self, out: &mut impl Write) -> Result<(), InitError> {
        say(out, "vacuuming...\n");
        let mut first: Vec<String> = ddl::VACUUM_ORDER
            .iter()
            .map(|t| format!("vacuum analyze {t}"))
            .collect();
        let mut last = Vec::new();
        self.open_before_planning(first.len())?;
        if let Some((_, count)) = self.known_partitions() {
            // Partitions first, side by side; the parent's own vacuum
            // analyze then finds them vacuumed and analyzes them all.
            last.push(first.remove(2));
            first.extend((1..=count).map(|p| format!("vacuum pgbench_accounts_{p}")));
        }
        parallel::execute_all(&mut self.pool, &first, out)?;
        parallel::execute_all(&mut self.pool, &last, out)
    }

    fn primary_keys(&mut self, out: &mut impl Write) -> Result<(), InitError> {
        say(out, "creating primary keys...\n");
        let mut first: Vec<String> = self.schema.primary_keys().into();
        let mut last = Vec::new();
        self.open_before_planning(first.len())?;
        if let Some((_, count)) = self.known_partitions() {
            // Each partition's key, side by side; the partitioned table's
            // key then adopts them instead of building them one by one.
            last.push(first.remove(2));
            first.extend((1..=count).map(|p| self.schema.partition_primary_key(p)));
        }
        let _flusher = self.wal_flusher(first.len())?;
        // A partition's key that cannot be built fails pgbench's key of the
        // partitioned table, which builds it: the report names that one.
        let partition_keys = first.get(2..).unwrap_or_default();
        parallel::execute_all(&mut self.pool, &first, out).map_err(|e| {
            match (e, last.first()) {
                (InitError::Query { sql, message }, Some(parent))
                    if partition_keys.contains(&sql) =>
                {
                    InitError::Query {
                        sql: parent.clone(),
                        message,
                    }
                }
                (e, _) => e,
            }
        })?;
        parallel::execute_all(&mut self.pool, &last, out)
    }
}
