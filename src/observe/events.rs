//! Checkpoints, vacuums and analyzes placed on the run's timeline.
//!
//! The monitor reads the checkpoint counters and the `pgbench_*` tables'
//! vacuum and analyze counters at the start, every [`TICK`] while it
//! samples, and at the end. A counter that moved between two readings is
//! an event:
//! - a vacuum or an analyze ended at the table's `last_*` time stamp,
//!   which the server sets as it ends; the server's clock is read with
//!   the counters, so the time is put on pgbolt's clock whatever the two
//!   clocks say;
//! - a checkpoint has no time stamp in the statistics views, so it is
//!   placed at the reading that first showed it: it started at most one
//!   tick before (`within_ms`). The checkpointer counts a checkpoint as
//!   it starts (its first report comes during its spread writes), so
//!   the mark is the start, not the end, of a checkpoint's writes.

use std::time::Duration;

use super::counters::Reading;
use crate::model::diagnosis::ServerEvent;

/// How often the event counters are read while the monitor samples.
pub const TICK: Duration = Duration::from_secs(1);

/// Each table counter that makes an event: its kind, its index among a
/// table's values, and the index of its `last_*` time stamp.
const TABLE_EVENTS: [(&str, usize, usize); 4] = [
    ("autovacuum", 1, 5),
    ("autoanalyze", 2, 6),
    ("vacuum", 3, 7),
    ("analyze", 4, 8),
];

/// The readings seen so far and the events drawn from them.
#[derive(Debug, Default)]
pub struct Timeline {
    last: Option<Reading>,
    events: Vec<ServerEvent>,
}

impl Timeline {
    /// Takes the next reading: every counter that moved since the last one
    /// is an event. A reading whose queries failed is passed over (the
    /// next one is compared with the last good one), and a table it lacks
    /// keeps its last counters.
    pub fn see(&mut self, mut reading: Reading) {
        if let Some(last) = self.last.take() {
            if reading.checkpoints.is_none() && last.checkpoints.is_some() {
                self.last = Some(last);
                return;
            }
            self.events.extend(events_between(&last, &reading));
            for (table, values) in last.tables {
                reading.tables.entry(table).or_insert(values);
            }
        }
        self.last = Some(reading);
    }

    /// The events, oldest first.
    pub fn finish(mut self) -> Vec<ServerEvent> {
        self.events.sort_by_key(|e| e.at_us);
        self.events
    }
}

/// The events between two readings.
fn events_between(before: &Reading, after: &Reading) -> Vec<ServerEvent> {
    let mut events = Vec::new();
    let within_ms = (after.taken_us - before.taken_us).max(0) / 1000;
    if let (Some(b), Some(a)) = (&before.checkpoints, &after.checkpoints) {
        for (i, cause) in ["timed", "requested"].into_iter().enumerate() {
            let count = a.get(i).copied().unwrap_or(0) - b.get(i).copied().unwrap_or(0);
            if count > 0 {
                events.push(ServerEvent {
                    kind: "checkpoint".to_owned(),
                    cause: Some(cause.to_owned()),
                    table: None,
                    count,
                    at_us: after.taken_us,
                    within_ms,
                });
            }
        }
    }
    // The server's clock against pgbolt's, as of the later reading.
    let offset = after.server_clock_us.map(|s| after.taken_us - s);
    for (table, a) in &after.tables {
        let b = before.tables.get(table);
        let value = |v: Option<&Vec<i64>>, i: usize| v.and_then(|v| v.get(i)).copied().unwrap_or(0);
        for (kind, count_at, stamp_at) in TABLE_EVENTS {
            let count = value(Some(a), count_at) - value(b, count_at);
            if count <= 0 {
                continue;
            }
            let stamp = value(Some(a), stamp_at);
            let (at_us, within_ms) = match offset {
                Some(offset) if stamp > 0 => (stamp + offset, 0),
                _ => (after.taken_us, within_ms),
            };
            events.push(ServerEvent {
                kind: kind.to_owned(),
                cause: None,
                table: Some(table.clone()),
                count,
                at_us,
                within_ms,
            });
        }
    }
    events
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn reading(taken_us: i64, checkpoints: [i64; 2], accounts: [i64; 9]) -> Reading {
        Reading {
            checkpoints: Some(checkpoints.to_vec()),
            tables: BTreeMap::from([("pgbench_accounts".to_owned(), accounts.to_vec())]),
            server_clock_us: Some(taken_us - 500),
            taken_us,
            ..Reading::default()
        }
    }

    #[test]
    fn counters_that_moved_are_events_at_their_time() {
        let mut t = Timeline::default();
        t.see(reading(1_000_000, [3, 4], [0, 1, 1, 0, 0, 0, 0, 0, 0]));
        t.see(reading(2_000_000, [3, 4], [0, 1, 1, 0, 0, 0, 0, 0, 0]));
        // A requested checkpoint, and a manual vacuum that ended at 2.4 s
        // on the server's clock (500 µs behind pgbolt's).
        t.see(reading(
            3_000_000,
            [3, 5],
            [0, 1, 1, 1, 0, 0, 0, 2_400_000, 0],
        ));
        let events = t.finish();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].label(), "vacuum of pgbench_accounts");
        assert_eq!((events[0].at_us, events[0].within_ms), (2_400_500, 0));
        assert_eq!(events[1].label(), "checkpoint (requested)");
        assert_eq!((events[1].at_us, events[1].within_ms), (3_000_000, 1000));
    }

    /// Regression: a tick whose queries failed read as counters at zero,
    /// and the next one as every vacuum since the table was made.
    #[test]
    fn a_failed_reading_is_passed_over() {
        let mut t = Timeline::default();
        t.see(reading(1_000_000, [3, 4], [0, 1, 1, 1, 0, 0, 0, 0, 0]));
        t.see(Reading {
            taken_us: 2_000_000,
            ..Reading::default()
        });
        t.see(reading(3_000_000, [3, 4], [0, 1, 1, 1, 0, 0, 0, 0, 0]));
        let mut no_tables = reading(4_000_000, [3, 4], [0; 9]);
        no_tables.tables.clear();
        t.see(no_tables);
        t.see(reading(5_000_000, [3, 4], [0, 1, 1, 1, 0, 0, 0, 0, 0]));
        assert_eq!(t.finish(), Vec::new());
    }

    #[test]
    fn a_counter_without_a_time_stamp_is_placed_at_its_reading() {
        let mut t = Timeline::default();
        t.see(reading(1_000_000, [0, 0], [0, 0, 0, 0, 0, 0, 0, 0, 0]));
        t.see(reading(1_500_000, [2, 0], [0, 0, 2, 0, 0, 0, 0, 0, 0]));
        let events = t.finish();
        assert_eq!(events[0].label(), "checkpoint (timed) ×2");
        assert_eq!(events[1].label(), "autoanalyze of pgbench_accounts ×2");
        assert_eq!((events[1].at_us, events[1].within_ms), (1_500_000, 500));
    }
}
