//! Backend states from `pg_stat_activity`: one sample is a few rows of
//! (state, wait event type, wait event, number of backends), each counted
//! in exactly one class of [`StateCounts`].

use crate::model::diagnosis::{Activity, OtherSessions, StateCounts};

/// Width of the per-interval buckets.
pub const BUCKET_US: i64 = 1_000_000;

/// Counts `n` backends seen in `state`, waiting on `wait_type`/`wait_event`
/// (empty when not waiting).
pub fn classify(counts: &mut StateCounts, state: &str, wait_type: &str, wait_event: &str, n: u64) {
    match state {
        "active" if wait_event == "ClientRead" || wait_type == "Client" => counts.client += n,
        "active" if wait_type.is_empty() => counts.on_cpu += n,
        "active" => *counts.waiting.entry(wait_type.to_owned()).or_default() += n,
        "idle" => counts.client += n,
        s if s.starts_with("idle in transaction") => counts.idle_in_transaction += n,
        _ => counts.other += n,
    }
}

/// Whose backend a row of the activity query counts (its first column):
/// the run's, or another session's by kind. The monitor's own kind
/// (pgbolt's monitors, this one's and other generators') is not counted.
pub fn count_row(
    run: &mut StateCounts,
    others: &mut OtherSessions,
    whose: &str,
    state: (&str, &str, &str),
    n: u64,
) {
    let counts = match whose {
        "run" => run,
        "autovacuum" => &mut others.autovacuum,
        "named" => &mut others.same_name,
        "other" => &mut others.other_clients,
        _ => return,
    };
    classify(counts, state.0, state.1, state.2, n);
}

/// The samples so far, in one-second buckets from the start of the window.
#[derive(Debug, Clone)]
pub struct ActivityLog {
    activity: Activity,
}

impl ActivityLog {
    pub fn new(start_us: i64) -> Self {
        ActivityLog {
            activity: Activity {
                start_us,
                width_us: BUCKET_US,
                ..Activity::default()
            },
        }
    }

    /// Adds one sample taken at `at_us`: the run's backends, and the
    /// other sessions seen with them.
    pub fn add(&mut self, at_us: i64, sample: &StateCounts, others: &OtherSessions) {
        let a = &mut self.activity;
        a.others.autovacuum.add(&others.autovacuum);
        a.others.same_name.add(&others.same_name);
        a.others.other_clients.add(&others.other_clients);
        let index = ((at_us - a.start_us).max(0) / a.width_us) as usize;
        if a.intervals.len() <= index {
            a.intervals.resize(index + 1, StateCounts::default());
        }
        a.intervals[index].add(sample);
        a.total.add(sample);
    }

    pub fn finish(self) -> Activity {
        self.activity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_state_lands_in_one_class() {
        let mut c = StateCounts::default();
        let rows = [
            ("active", "", "", 3),
            ("active", "IO", "DataFileRead", 2),
            ("active", "LWLock", "WALWrite", 1),
            ("active", "Client", "ClientRead", 1),
            ("idle", "Client", "ClientRead", 5),
            ("idle in transaction", "Client", "ClientRead", 4),
            ("idle in transaction (aborted)", "Client", "ClientRead", 1),
            ("", "", "", 1),
        ];
        for (state, t, e, n) in rows {
            classify(&mut c, state, t, e, n);
        }
        assert_eq!(c.on_cpu, 3);
        assert_eq!(c.waiting.get("IO"), Some(&2));
        assert_eq!(c.waiting.get("LWLock"), Some(&1));
        assert_eq!(c.client, 6);
        assert_eq!(c.idle_in_transaction, 5);
        assert_eq!(c.other, 1);
        assert_eq!(c.total(), 18);
    }

    #[test]
    fn each_row_counts_for_its_kind_and_the_monitors_for_none() {
        let (mut run, mut others) = (StateCounts::default(), OtherSessions::default());
        let rows = [
            ("run", "active", 2),
            ("autovacuum", "active", 1),
            ("named", "idle", 4),
            ("other", "active", 3),
            ("monitor", "active", 5),
        ];
        for (whose, state, n) in rows {
            count_row(&mut run, &mut others, whose, (state, "", ""), n);
        }
        assert_eq!(run.on_cpu, 2);
        assert_eq!(others.autovacuum.on_cpu, 1);
        assert_eq!(others.same_name.client, 4);
        assert_eq!(others.other_clients.on_cpu, 3);
        assert_eq!(others.clients_busy(), 3);
    }

    #[test]
    fn samples_fall_in_their_second() {
        let mut log = ActivityLog::new(10_000_000);
        let one = StateCounts {
            on_cpu: 1,
            ..StateCounts::default()
        };
        let none = OtherSessions::default();
        log.add(10_100_000, &one, &none);
        log.add(12_500_000, &one, &none);
        let a = log.finish();
        assert_eq!(a.intervals.len(), 3);
        assert_eq!(a.intervals[1].total(), 0);
        assert_eq!(a.intervals[2].on_cpu, 1);
        assert_eq!(a.total.on_cpu, 2);
    }
}
