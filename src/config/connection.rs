//! The connection options of the command line, resolved as pgbench resolves
//! them: `-h -p -U` and the database name handed to libpq's rules (the
//! name may itself be a connection string or URI), the database defaulted
//! the way pgbench defaults it, and `pgbolt` as the fallback application
//! name. Initialization and the run engine both connect through this.

use pgwire::conninfo::{self, Env};

use super::Connection;
use crate::program::PROGRAM;

/// Resolves `conn` against the process environment, service file and
/// password file.
pub fn resolve(conn: &Connection) -> Result<conninfo::Config, conninfo::Error> {
    let env = Env::from_process();
    let dbname = match &conn.dbname {
        Some(name) => name.clone(),
        None => env.pgbench_dbname()?,
    };
    let passfile = conn
        .passfile
        .as_ref()
        .map(|path| path.to_string_lossy().into_owned());
    let mut params: Vec<(&str, &str)> = Vec::with_capacity(6);
    if let Some(host) = &conn.host {
        params.push(("host", host));
    }
    if let Some(port) = &conn.port {
        params.push(("port", port));
    }
    if let Some(user) = &conn.user {
        params.push(("user", user));
    }
    if let Some(passfile) = &passfile {
        params.push(("passfile", passfile));
    }
    params.push(("dbname", &dbname));
    params.push(("fallback_application_name", PROGRAM.as_str()));
    let options = conninfo::from_params(params, true)?;
    conninfo::resolve(&options, &env)
}
