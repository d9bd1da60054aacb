//! `--reconnect` through real outages: a server restarted during a run,
//! a standby promoted after its primary stopped, and (with the Debian
//! packages) a Patroni cluster switched over; pgbench under the same
//! outage, whose clients abort.

#[path = "../common/mod.rs"]
mod common;

mod patroni;
mod promote;
mod readonly;
mod restart;
mod support;
