//! The set-up connection: what pgbench does on one blocking connection
//! before the clients connect. It prints the version line, checks that the
//! server can take the clients (pgbolt's preflight), reads the scale and
//! partitioning from the pgbench tables when a builtin script runs, and
//! vacuums.

use std::io::Write;

use pgwire::blocking::Client;
use pgwire::libpq_text::libpq_message;
use pgwire::Connector;

use crate::config::{Connection, VacuumBeforeRun};

use super::error::{EngineError, Preflight, COUNT_BRANCHES};
use crate::program::log;

/// How `pgbench_accounts` is partitioned, as [`table_info`] found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableInfo {
    pub scale: i64,
    /// `range` or `hash`, with the number of partitions.
    pub partitioning: Option<(String, u32)>,
}

/// The connector for the command line's connection options.
/// Resolves the connection options and opens the set-up connection,
/// asking for a password as pgbench does when the server wants one that
/// was not given; the connector returned carries it to the clients.
pub fn connect(conn: &Connection) -> Result<(Connector, Client), EngineError> {
    let mut config = crate::config::connection::resolve(conn).map_err(EngineError::ConnOptions)?;
    let mut connector = Connector::new(&config).map_err(EngineError::SetupConnection)?;
    let client = crate::prompt::connect_asking(&mut config, |config| {
        if connector.config().password != config.password {
            connector = Connector::new(config)?;
        }
        let mut warnings = Vec::new();
        let client = Client::connect_with(&connector, &mut warnings);
        for w in warnings {
            crate::program::ewriteln!("{w}");
        }
        client
    })
    .map_err(EngineError::SetupConnection)?;
    let mut client = client;
    show_notices(client.take_notices());
    Ok((connector, client))
}

/// pgbench's version line, with pgbolt's name and version; on standard
/// error when standard output carries the JSON results (`--json=-`).
pub fn print_version(client: &Client, to_stderr: bool) {
    let server = client.parameter("server_version").unwrap_or("unknown");
    let line = format!(
        "{} ({}, server {server})\n",
        crate::program::PROGRAM,
        env!("CARGO_PKG_VERSION")
    );
    if to_stderr {
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    } else {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(line.as_bytes());
        let _ = out.flush();
    }
}

/// Settings recorded in every result, so that a comparison of two runs can
/// say which of them differ: the ones that most often explain a change in
/// throughput or latency.
const RECORDED_SETTINGS: &[&str] = &[
    "shared_buffers",
    "work_mem",
    "effective_cache_size",
    "max_connections",
    "synchronous_commit",
    "fsync",
    "full_page_writes",
    "wal_level",
    "max_wal_size",
    "checkpoint_timeout",
    "huge_pages",
    "jit",
];

/// [`RECORDED_SETTINGS`] as `SHOW` prints them (read when the preflight
/// is on). A server that refuses the query (a pooler's console) gives none;
/// the run goes on. The notices the query draws are dropped, as the
/// preflight's are.
pub fn server_settings(client: &mut Client) -> std::collections::BTreeMap<String, String> {
    let query = format!(
        "select name, pg_catalog.current_setting(name) from pg_catalog.pg_settings \
         where name in ('{}')",
        RECORDED_SETTINGS.join("', '")
    );
    let mut settings = std::collections::BTreeMap::new();
    if let Ok(rows) = client.simple_query(&query) {
        for row in rows {
            if let [Some(name), Some(value)] = row.as_slice() {
                settings.insert(name.clone(), value.clone());
            }
        }
    }
    drop(client.take_notices());
    settings
}

/// Checks that the server can accept `clients` more connections from this
/// user once the set-up connection is closed.
///
/// Behind a connection pooler the clients do not become backends of
/// their own, so there is nothing to check: the pooler queues clients
/// beyond its server connections, and refuses those beyond its own limit
/// with its own error when they connect, as it would for pgbench. A
/// pooler shows itself in the process id of the startup's BackendKeyData
/// ([`crate::observe::pooler::behind_pooler`]):
/// it hands out keys of its own (to route cancel requests), so the id
/// differs from `pg_backend_pid()` of the backend that answers, whereas a
/// server gives the backend's own.
///
/// The process id is asked for first, in a query of its own and short: a
/// server that refuses it with an error is no PostgreSQL backend (such as
/// pgbouncer's admin console, database `pgbouncer`, which answers only its
/// `SHOW` commands), so there is nothing to check either and the run goes
/// on as pgbench's would. The admin console ends the session instead of
/// answering a query as long as the check itself, which is why that one
/// comes second.
///
/// A check whose query fails is skipped: the server refused it for a
/// reason of its own (a `statement_timeout` shorter than the query,
/// serializable transactions on a hot standby, ...) that pgbench meets
/// in its own first query or in the clients' first statements, and
/// reports there with its own words and exit status.
///
/// The notices these queries draw (`LOG:  statement: ...` under
/// `client_min_messages=log`) are dropped: they are about pgbolt's own
/// queries, which pgbench does not run.
///
/// Returns the connection slots left once the clients are connected, when
/// it could count them (the monitor takes one only if there is one).
pub fn preflight(
    client: &mut Client,
    clients: u32,
    temp_instance: bool,
) -> Result<Option<i64>, EngineError> {
    let result = check_room(client, clients, temp_instance);
    drop(client.take_notices());
    result
}

fn check_room(
    client: &mut Client,
    clients: u32,
    temp_instance: bool,
) -> Result<Option<i64>, EngineError> {
    let Ok(rows) = client.simple_query("select pg_catalog.pg_backend_pid()") else {
        return Ok(None);
    };
    let pid = rows
        .first()
        .and_then(|row| row.first())
        .and_then(|v| v.as_deref())
        .and_then(|v| v.parse::<i64>().ok());
    if pid != Some(i64::from(client.connection().backend_pid())) {
        return Ok(None);
    }
    const QUERY: &str = "select current_setting('max_connections')::int, \
        case when r.rolsuper then 0 else \
          current_setting('superuser_reserved_connections')::int + \
          case when exists (select 1 from pg_catalog.pg_roles where rolname = 'pg_use_reserved_connections') \
               and pg_catalog.pg_has_role(current_user, 'pg_use_reserved_connections', 'member') \
            then 0 else coalesce(current_setting('reserved_connections', true)::int, 0) end \
        end, \
        (select count(*) from pg_catalog.pg_stat_activity where backend_type = 'client backend') - 1, \
        case when exists (select 1 from pg_catalog.pg_roles where rolname = 'pg_use_reserved_connections') \
          then not pg_catalog.pg_has_role(current_user, 'pg_use_reserved_connections', 'member') \
          else false end, \
        r.rolsuper \
        from pg_catalog.pg_roles r where r.rolname = current_user";
    let Ok(rows) = client.simple_query(QUERY) else {
        return Ok(None);
    };
    let number = |row: &[Option<String>], i: usize| -> i64 {
        row.get(i)
            .and_then(|v| v.as_deref())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    let check = Preflight {
        clients,
        max_connections: number(row, 0),
        reserved: number(row, 1),
        in_use: number(row, 2),
        role_slots: row.get(3).and_then(|v| v.as_deref()) == Some("t"),
        superuser: row.get(4).and_then(|v| v.as_deref()) == Some("t"),
        temp_instance,
        swept: false,
    };
    if i64::from(clients) > check.available() {
        return Err(EngineError::Preflight(check));
    }
    Ok(Some(check.available() - i64::from(clients)))
}

/// pgbench's `GetTableInfo`: the scale is the number of branches, and the
/// partitioning of the first `pgbench_accounts` in the search path.
pub fn table_info(
    client: &mut Client,
    dbname: &str,
    scale_given: bool,
) -> Result<TableInfo, EngineError> {
    let rows = client.simple_query(COUNT_BRANCHES);
    // Notices are shown as they come, before the error or the vacuum, as
    // libpq's notice processor shows them.
    show_notices(client.take_notices());
    let rows = rows.map_err(|error| {
        let missing_table_in = (error.sqlstate() == Some("42P01")).then(|| dbname.to_owned());
        EngineError::CountBranches {
            error,
            missing_table_in,
        }
    })?;
    let text = rows
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .unwrap_or_default();
    let scale = i64::from(crate::cnum::atoi(&text));
    if scale < 0 {
        return Err(EngineError::InvalidBranchCount(text));
    }
    if scale_given {
        log::warning(format_args!(
            "scale option ignored, using count from pgbench_branches table ({scale})"
        ));
    }
    let partition_query = "select o.n, p.partstrat, pg_catalog.count(i.inhparent) \
        from pg_catalog.pg_class as c \
        join pg_catalog.pg_namespace as n on (n.oid = c.relnamespace) \
        cross join lateral (select pg_catalog.array_position(pg_catalog.current_schemas(true), n.nspname)) as o(n) \
        left join pg_catalog.pg_partitioned_table as p on (p.partrelid = c.oid) \
        left join pg_catalog.pg_inherits as i on (c.oid = i.inhparent) \
        where c.relname = 'pgbench_accounts' and o.n is not null \
        group by 1, 2 order by 1 asc limit 1";
    let partition_rows = client.simple_query(partition_query);
    show_notices(client.take_notices());
    let partitioning = match partition_rows {
        Err(_) => None,
        Ok(rows) => {
            let Some(row) = rows.first() else {
                return Err(EngineError::NoAccountsTable {
                    dbname: dbname.to_owned(),
                });
            };
            let count = row.get(2).cloned().flatten().unwrap_or_default();
            match row.get(1).cloned().flatten().as_deref() {
                None => None,
                Some("r") => Some(("range".to_owned(), crate::cnum::atoi(&count) as u32)),
                Some("h") => Some(("hash".to_owned(), crate::cnum::atoi(&count) as u32)),
                Some(other) => return Err(EngineError::PartitionMethod(other.to_owned())),
            }
        }
    };
    Ok(TableInfo {
        scale,
        partitioning,
    })
}

/// The vacuum pgbench runs before a benchmark; failures are reported and
/// ignored, as pgbench's `tryExecuteStatement` does.
pub fn vacuum(client: &mut Client, vacuum: VacuumBeforeRun) {
    if vacuum == VacuumBeforeRun::Skip {
        return;
    }
    crate::program::ewrite!("starting vacuum...");
    for sql in [
        "vacuum pgbench_branches",
        "vacuum pgbench_tellers",
        "truncate pgbench_history",
    ] {
        try_execute(client, sql);
    }
    crate::program::ewriteln!("end.");
    if vacuum == VacuumBeforeRun::IncludingAccounts {
        crate::program::ewrite!("starting vacuum pgbench_accounts...");
        try_execute(client, "vacuum analyze pgbench_accounts");
        crate::program::ewriteln!("end.");
    }
}

/// A sweep's `--sweep-reset=checkpoint`: a `CHECKPOINT` after the vacuum,
/// so that no step pays for the pages an earlier step dirtied. A failure
/// (a role that may not checkpoint) is reported and ignored, as the
/// vacuum's are.
pub fn checkpoint(client: &mut Client) {
    crate::program::ewrite!("starting checkpoint...");
    try_execute(client, "checkpoint");
    crate::program::ewriteln!("end.");
}

/// Writes notices where libpq's default notice processor puts them, in
/// its words: those a session sent as it started (a long
/// `application_name` truncated) and those of set-up statements.
pub fn show_notices(notices: Vec<pgwire::DbError>) {
    for notice in notices {
        crate::program::ewrite!("{}", libpq_message(&notice, None, false));
    }
}

fn try_execute(client: &mut Client, sql: &str) {
    let result = client.execute(sql);
    // Warnings (`skipping "pgbench_tellers" --- only table or database
    // owner can vacuum it`) go where libpq's notice processor puts them.
    show_notices(client.take_notices());
    if let Err(e) = result {
        log::error(format_args!("{e}"));
        log::detail(format_args!("(ignoring this error and continuing anyway)"));
    }
}
