//! `-i` compared table by table with pgbench's, on a server set up for
//! deterministic `vacuum` whose tests take turns (`init_support`'s
//! `exclusive`), and `-i` through PgBouncer. A binary of its own: the
//! turns leave one test thread idle, and the timed pooler tests of
//! `pooled` are not held up by `-i`'s load.

#[path = "../common/mod.rs"]
mod common;
#[path = "../init_support/mod.rs"]
mod init_support;

mod init;
mod init_failures;
