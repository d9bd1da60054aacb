//! SQL from the tests through pgwire's blocking client, without a `psql`
//! process per statement: polling loops and the `-i` comparisons run
//! thousands of statements, and a process with its own connection and
//! password exchange for each one cost more than the statements.

use pgbolt::tempdb::TempDb;
use pgwire::blocking::Client;
use pgwire::conninfo::{Config, Host, HostKind, Secret};
use pgwire::Error;

/// A session in one database of a test server, as its superuser through
/// its socket.
pub struct Session(Client);

impl Session {
    /// Connects to `dbname` on `db`; a database's `idle_session_timeout`
    /// (set by some cases) does not end the session between statements.
    pub fn open(db: &TempDb, dbname: &str) -> Session {
        let host = Host {
            kind: HostKind::Unix(db.socket_dir().to_path_buf()),
            port: db.port(),
        };
        let mut config = Config::new(vec![host], db.superuser(), dbname);
        config.password = Some(Secret::new(db.superuser_password()));
        let client =
            Client::connect(&config).unwrap_or_else(|e| panic!("cannot connect to {dbname}: {e}"));
        let mut session = Session(client);
        session.query("set idle_session_timeout = 0");
        session
    }

    /// Runs `sql` (one or more statements, sent at once as `psql -c` sends
    /// them) and returns the rows as `psql -A -t` prints them: one line per
    /// row, columns joined by `|`, NULL as nothing. Fails the test on an
    /// error.
    pub fn query(&mut self, sql: &str) -> String {
        self.try_query(sql)
            .unwrap_or_else(|e| panic!("SQL failed on {sql}: {e}"))
    }

    /// [`Self::query`], giving the error back.
    pub fn try_query(&mut self, sql: &str) -> Result<String, Error> {
        let mut text = String::new();
        for row in self.0.simple_query(sql)? {
            let values: Vec<&str> = row.iter().map(|v| v.as_deref().unwrap_or("")).collect();
            text.push_str(&values.join("|"));
            text.push('\n');
        }
        Ok(text)
    }
}
