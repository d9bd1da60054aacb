//! Backend states from `pg_stat_activity`: one sample is a few rows of
//! (state, wait event type, wait event, number of backends), each counted
//! in exactly one class of [`StateCounts`].

use crate::model::diagnosis::{Activity, StateCounts};

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

    /// Adds one sample taken at `at_us`.
    pub fn add(&mut self, at_us: i64, sample: &StateCounts) {
        let a = &mut self.activity;
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
    fn samples_fall_in_their_second() {
        let mut log = ActivityLog::new(10_000_000);
        let one = StateCounts {
            on_cpu: 1,
            ..StateCounts::default()
        };
        log.add(10_100_000, &one);
        log.add(12_500_000, &one);
        let a = log.finish();
        assert_eq!(a.intervals.len(), 3);
        assert_eq!(a.intervals[1].total(), 0);
        assert_eq!(a.intervals[2].on_cpu, 1);
        assert_eq!(a.total.on_cpu, 2);
    }
}
