//! The outage a run went through under `--reconnect`: each client's
//! timeline, the classes of its failed transactions, and what they add up
//! to for the run.
//!
//! The engine records, per client, four moments of the first outage it
//! met (its last commit before, its first error, its first successful
//! connection after, its first commit after) and the hosts it was on; the
//! figures of the run are computed here from those timelines alone, by
//! [`Outage::from_clients`], a pure function, so a report of a saved
//! result shows the same figures as the run did.
//!
//! A client's downtime runs from its first error to its first commit
//! after: what the application behind that connection would have lived
//! through. The run's outage runs from the first error of any client to
//! the first commit after of the client that came back last: the time
//! during which some client could not commit. It is the client's view
//! of the server's write gap (the time between the last commit before the
//! switch and the first after, which [`ServerGap`] reads from the
//! server's own timestamps when it can): it starts a little later (a
//! client notices the outage when its next statement fails) and ends a
//! little later (the last client's backoff).
//!
//! A client that met more than one outage counts them (`outages`); the
//! moments are those of the first.

use serde::{Deserialize, Serialize};

/// How a transaction that did not commit failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// The connection was lost before COMMIT went out (or the statement
    /// in flight commits nothing): the transaction did not commit.
    NotCommitted,
    /// The connection was lost after COMMIT (or a statement that commits
    /// on its own) went out and before its answer came: the server may or
    /// may not have committed it.
    InDoubt,
    /// The server refused to write (SQLSTATE 25006): it had become a
    /// standby.
    ReadOnly,
}

/// Failed transactions by class; errors with an answer (neither a lost
/// connection nor a read-only refusal) by SQLSTATE.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureCounts {
    pub not_committed: u64,
    pub in_doubt: u64,
    pub read_only: u64,
    /// `(SQLSTATE, count)`, by SQLSTATE.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_sqlstate: Vec<(String, u64)>,
}

impl FailureCounts {
    /// Counts one transaction of `class`.
    pub fn add(&mut self, class: FailureClass) {
        match class {
            FailureClass::NotCommitted => self.not_committed += 1,
            FailureClass::InDoubt => self.in_doubt += 1,
            FailureClass::ReadOnly => self.read_only += 1,
        }
    }

    /// Counts one transaction that failed with an SQL error `sqlstate`.
    pub fn add_sqlstate(&mut self, sqlstate: &str) {
        self.add_sqlstates(sqlstate, 1);
    }

    fn add_sqlstates(&mut self, sqlstate: &str, n: u64) {
        match self.by_sqlstate.iter_mut().find(|(s, _)| s == sqlstate) {
            Some((_, count)) => *count += n,
            None => {
                self.by_sqlstate.push((sqlstate.to_owned(), n));
                self.by_sqlstate.sort();
            }
        }
    }

    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &FailureCounts) {
        self.not_committed += other.not_committed;
        self.in_doubt += other.in_doubt;
        self.read_only += other.read_only;
        for (state, n) in &other.by_sqlstate {
            self.add_sqlstates(state, *n);
        }
    }

    /// Every failed transaction counted here.
    pub fn total(&self) -> u64 {
        self.not_committed
            + self.in_doubt
            + self.read_only
            + self.by_sqlstate.iter().map(|(_, n)| n).sum::<u64>()
    }
}

/// One client's first outage, µs since the Unix epoch.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientOutage {
    /// `client_id`.
    pub client: u32,
    /// Its last commit before the first error (none if it had not
    /// committed yet).
    pub last_commit_before_us: Option<i64>,
    /// Its first lost connection or read-only refusal.
    pub first_error_us: Option<i64>,
    /// Its first connection opened after that.
    pub reconnected_us: Option<i64>,
    /// Its first commit after that.
    pub first_commit_after_us: Option<i64>,
    /// The host (`host:port`, as written) it was connected to before.
    pub host_before: String,
    /// The host it reconnected to.
    pub host_after: String,
    /// Outages it met (lost connections or refusals followed by a new
    /// connection, and the last one even if it did not come back).
    pub outages: u32,
    /// It gave up: no connection within `--reconnect`'s wait.
    pub gave_up: bool,
    /// Its failed transactions by class.
    pub failures: FailureCounts,
}

impl ClientOutage {
    /// From its first error to its first commit after, µs.
    pub fn downtime_us(&self) -> Option<i64> {
        Some(self.first_commit_after_us? - self.first_error_us?)
    }
}

/// The server's own view of the write gap: the last commit timestamp
/// before the switch and the first after it (for the TPC-B-like script,
/// `pgbench_history.mtime`), µs since the Unix epoch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerGap {
    pub last_before_us: i64,
    pub first_after_us: i64,
}

impl ServerGap {
    pub fn duration_us(&self) -> i64 {
        self.first_after_us - self.last_before_us
    }
}

/// Acknowledged commits checked against the database after the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitCheck {
    /// How the committed transactions were counted (`pgbench_history
    /// rows`, or the query given).
    pub counted_by: String,
    /// The count before the run, on the server the run started on.
    pub before: i64,
    /// The count after the run, on the server that survived.
    pub after: i64,
    /// Transactions the clients saw commit.
    pub acknowledged: u64,
    /// Transactions whose COMMIT went out with no answer.
    pub in_doubt: u64,
}

impl CommitCheck {
    /// Commits found on the server beyond the count before.
    pub fn found(&self) -> i64 {
        self.after - self.before
    }

    /// Acknowledged commits the surviving server does not have.
    pub fn lost(&self) -> i64 {
        (self.acknowledged as i64 - self.found()).max(0)
    }

    /// In-doubt transactions that did commit.
    pub fn in_doubt_committed(&self) -> i64 {
        (self.found() - self.acknowledged as i64).max(0)
    }
}

/// The outage of the run, from its clients' timelines.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Outage {
    /// Every client that met an outage or failed a transaction, by client
    /// number.
    pub clients: Vec<ClientOutage>,
    /// Clients that met one, and of those, how many committed again.
    pub clients_hit: u32,
    pub clients_back: u32,
    /// First error of any client.
    pub start_us: Option<i64>,
    /// First commit after of the client back last (none while a client
    /// hit is not back).
    pub end_us: Option<i64>,
    /// Per-client downtime over the clients that came back, µs.
    pub downtime_p50_us: Option<i64>,
    pub downtime_p99_us: Option<i64>,
    pub downtime_max_us: Option<i64>,
    /// The failed transactions of every client, by class.
    pub failures: FailureCounts,
    /// The server's write gap, when it could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_gap: Option<ServerGap>,
    /// Acknowledged commits checked against the database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_check: Option<CommitCheck>,
}

impl Outage {
    /// The run's figures from its clients' timelines (each client once;
    /// clients that met no outage and failed nothing may be left out).
    pub fn from_clients(mut clients: Vec<ClientOutage>) -> Outage {
        clients.sort_by_key(|c| c.client);
        let mut failures = FailureCounts::default();
        for c in &clients {
            failures.merge(&c.failures);
        }
        let hit: Vec<&ClientOutage> = clients
            .iter()
            .filter(|c| c.first_error_us.is_some())
            .collect();
        let mut downtimes: Vec<i64> = hit.iter().filter_map(|c| c.downtime_us()).collect();
        downtimes.sort_unstable();
        let clients_back = downtimes.len() as u32;
        let start_us = hit.iter().filter_map(|c| c.first_error_us).min();
        let end_us = if downtimes.len() == hit.len() {
            hit.iter().filter_map(|c| c.first_commit_after_us).max()
        } else {
            None
        };
        let clients_hit = hit.len() as u32;
        Outage {
            clients_hit,
            clients_back,
            start_us,
            end_us,
            downtime_p50_us: rank(&downtimes, 0.50),
            downtime_p99_us: rank(&downtimes, 0.99),
            downtime_max_us: downtimes.last().copied(),
            failures,
            server_gap: None,
            commit_check: None,
            clients,
        }
    }

    /// The run's outage, µs: none when no client met one, or one is not
    /// back.
    pub fn duration_us(&self) -> Option<i64> {
        Some(self.end_us? - self.start_us?)
    }
}

/// The nearest-rank percentile of sorted values.
fn rank(sorted: &[i64], q: f64) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len();
    let index = ((q * n as f64).ceil() as usize).clamp(1, n) - 1;
    Some(sorted[index])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(id: u32, error: Option<i64>, back: Option<i64>) -> ClientOutage {
        ClientOutage {
            client: id,
            last_commit_before_us: error.map(|e| e - 5),
            first_error_us: error,
            reconnected_us: back.map(|b| b - 3),
            first_commit_after_us: back,
            outages: u32::from(error.is_some()),
            ..ClientOutage::default()
        }
    }

    #[test]
    fn the_run_outage_spans_the_first_error_to_the_last_client_back() {
        let outage = Outage::from_clients(vec![
            client(2, Some(1_300), Some(2_000)),
            client(0, Some(1_000), Some(1_500)),
            client(1, Some(1_100), Some(3_100)),
            client(3, None, None),
        ]);
        assert_eq!(outage.clients_hit, 3);
        assert_eq!(outage.clients_back, 3);
        assert_eq!(outage.start_us, Some(1_000));
        assert_eq!(outage.end_us, Some(3_100));
        assert_eq!(outage.duration_us(), Some(2_100));
        assert_eq!(outage.downtime_p50_us, Some(700));
        assert_eq!(outage.downtime_p99_us, Some(2_000));
        assert_eq!(outage.downtime_max_us, Some(2_000));
        assert_eq!(outage.clients[0].client, 0);
    }

    #[test]
    fn a_client_not_back_leaves_the_run_outage_open() {
        let outage = Outage::from_clients(vec![
            client(0, Some(1_000), Some(1_500)),
            client(1, Some(1_100), None),
        ]);
        assert_eq!(outage.clients_back, 1);
        assert_eq!(outage.end_us, None);
        assert_eq!(outage.duration_us(), None);
        assert_eq!(outage.downtime_max_us, Some(500));
    }

    #[test]
    fn no_outage_has_no_figures() {
        let outage = Outage::from_clients(vec![client(0, None, None)]);
        assert_eq!(outage.clients_hit, 0);
        assert_eq!(outage.duration_us(), None);
        assert_eq!(outage.downtime_p50_us, None);
    }

    #[test]
    fn failures_merge_by_class_and_sqlstate() {
        let mut a = FailureCounts::default();
        a.add(FailureClass::InDoubt);
        a.add_sqlstate("40001");
        let mut b = FailureCounts::default();
        b.add(FailureClass::NotCommitted);
        b.add(FailureClass::ReadOnly);
        b.add_sqlstate("40001");
        b.add_sqlstate("23505");
        a.merge(&b);
        assert_eq!((a.not_committed, a.in_doubt, a.read_only), (1, 1, 1));
        assert_eq!(
            a.by_sqlstate,
            vec![("23505".to_owned(), 1), ("40001".to_owned(), 2)]
        );
        assert_eq!(a.total(), 6);
    }

    #[test]
    fn the_commit_check_tells_lost_from_in_doubt_committed() {
        let check = |after| CommitCheck {
            counted_by: "pgbench_history rows".into(),
            before: 100,
            after,
            acknowledged: 50,
            in_doubt: 3,
        };
        assert_eq!((check(152).lost(), check(152).in_doubt_committed()), (0, 2));
        assert_eq!((check(148).lost(), check(148).in_doubt_committed()), (2, 0));
    }
}
