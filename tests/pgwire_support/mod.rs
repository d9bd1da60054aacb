//! Helpers shared by the pgwire integration tests: configurations resolved
//! hermetically (no environment, no home directory files) from a
//! connection string, and connecting with the blocking client.

#![allow(dead_code)]

use std::path::Path;

use pgwire::blocking::Client;
use pgwire::conninfo::{self, Config, Env};
use pgwire::{Connector, Error};

/// An environment with no `PG*` variables and an empty home directory.
pub fn env() -> Env {
    let home = std::env::temp_dir().join("pgwire-tests-empty-home");
    let _ = std::fs::create_dir_all(&home);
    Env::empty("root").with_passwd_home(home)
}

/// Resolves `conninfo` as libpq would, without consulting the process
/// environment.
pub fn config(conninfo: &str) -> Config {
    let options = conninfo::parse(conninfo).expect("valid connection string");
    conninfo::resolve(&options, &env()).expect("resolvable connection string")
}

pub fn connect(conninfo: &str) -> Result<Client, Error> {
    Client::connect(&config(conninfo))
}

/// Connects and returns the warnings too.
pub fn connect_warned(conninfo: &str) -> (Result<Client, Error>, Vec<String>) {
    let mut warnings = Vec::new();
    let result =
        Connector::new(&config(conninfo)).and_then(|c| Client::connect_with(&c, &mut warnings));
    (result, warnings)
}

/// The one value of a one-row, one-column query.
pub fn value(client: &mut Client, sql: &str) -> String {
    let rows = client.simple_query(sql).expect("query runs");
    rows[0][0].clone().expect("not null")
}

pub fn socket_dir(db: &pgbolt::tempdb::TempDb) -> &Path {
    db.socket_dir()
}
