//! Shared helpers of the binary-level report tests: one database
//! initialized once with the real `pgbench -i -s 1` for the tests that
//! only read or whose writes do not matter, fresh initialized databases
//! for the tests that contend, failures on purpose, and the comparison of
//! reports, JSON results and log files. The server and [`Run`] are
//! `tests/common`'s.

#![allow(dead_code)]

use std::sync::OnceLock;

pub mod compare;
pub mod json;
pub mod logs;

pub use crate::common::{
    line, messages, new_database, pgbench_path, script_file as script, server, stderr, stdout,
    Program, Run, ScriptFile,
};

/// Waits until a backend of application `app` on the shared server is on
/// its second statement like `statement` (see the common helper).
pub fn wait_for_second_statement(app: &str, statement: &str) {
    crate::common::wait_for_second_statement(server(), app, statement);
}

/// `fail_if(condition, sqlstate)` raises an error with that SQLSTATE when
/// the condition holds: failures raised on purpose, at places a seeded
/// script chooses, so both programs meet the same ones.
pub const FAIL_IF: &str = "CREATE FUNCTION fail_if(fail boolean, code text) RETURNS int
LANGUAGE plpgsql AS $$
BEGIN
    IF fail THEN
        RAISE EXCEPTION 'failing on purpose (%)', code USING ERRCODE = code;
    END IF;
    RETURN 0;
END $$;";

/// A new database initialized with `pgbench -i -s 1`.
pub fn fresh_database() -> String {
    initialized_database(&[])
}

/// A new database initialized with `pgbench -i -s 1` and `more` options.
pub fn initialized_database(more: &[&str]) -> String {
    let args: Vec<&str> = ["-s", "1"].iter().chain(more).copied().collect();
    crate::common::bench_database(server(), &args)
}

/// The database every test may share: initialized once.
pub fn shared_database() -> &'static str {
    static DB: OnceLock<String> = OnceLock::new();
    DB.get_or_init(fresh_database)
}

/// Updates of a handful of rows in one transaction: under SERIALIZABLE,
/// concurrent clients get serialization failures. The pause between the
/// read and the write keeps transactions open long enough to overlap
/// however the clients happen to be scheduled.
pub const CONTENDED: &str = "\\set aid random(1, 4)
BEGIN;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
\\sleep 1 ms
UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;
END;
";

pub const SERIALIZABLE: &str = "-c default_transaction_isolation=serializable";
