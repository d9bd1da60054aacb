//! A generator's place in a fleet (`--generator=I/N`, `--generators=N`):
//! its share of the command line's clients, threads and rate, computed
//! from the command line alone so that the generators need not talk to
//! each other. See `crate::fleet` for why the shares are dealt this way.

/// How late a generator may be ready after `--start-at` and still run.
pub const LATE_TOLERANCE_US: i64 = 1_000_000;

/// Generator `index`'s part of a fleet of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    pub index: u32,
    pub count: u32,
    /// The command line's clients and threads (threads at least `count`).
    pub clients_total: u32,
    pub threads_total: u32,
    /// Global number of this generator's first client and first thread.
    pub client_offset: u32,
    pub thread_offset: u32,
    /// This generator's clients and threads.
    pub clients: u32,
    pub threads: u32,
}

/// The `k`-th of `parts` shares of `total` dealt as pgbench deals clients
/// to threads: its offset and size.
fn deal(total: u32, parts: u32, k: u32) -> (u32, u32) {
    let mut dealt = 0;
    for i in 0..parts {
        let n = (total - dealt + parts - i - 1) / (parts - i);
        if i == k {
            return (dealt, n);
        }
        dealt += n;
    }
    (dealt, 0)
}

impl Share {
    /// Generator `index` of `count` running `clients` clients on
    /// `threads` threads in all (`threads` <= `clients`, `count` <=
    /// `clients`, `index` < `count`).
    pub fn new(index: u32, count: u32, clients: u32, threads: u32) -> Share {
        let threads_total = threads.max(count);
        let (client_offset, own_clients) = deal(clients, count, index);
        let (thread_offset, own_threads) = deal(threads_total, count, index);
        Share {
            index,
            count,
            clients_total: clients,
            threads_total,
            client_offset,
            thread_offset,
            clients: own_clients,
            threads: own_threads.min(own_clients),
        }
    }

    /// This generator's part of the fleet's `-R`.
    pub fn rate(&self, rate: f64) -> f64 {
        rate * f64::from(self.threads) / f64::from(self.threads_total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_to_the_command_line() {
        for (clients, threads, count) in [(10, 4, 3), (7, 7, 7), (100, 1, 4), (5, 2, 2), (64, 8, 5)]
        {
            let shares: Vec<Share> = (0..count)
                .map(|i| Share::new(i, count, clients, threads))
                .collect();
            assert_eq!(shares.iter().map(|s| s.clients).sum::<u32>(), clients);
            let threads_total = threads.max(count);
            assert_eq!(shares.iter().map(|s| s.threads).sum::<u32>(), threads_total);
            let mut next_client = 0;
            let mut next_thread = 0;
            for s in &shares {
                assert_eq!(s.client_offset, next_client);
                assert_eq!(s.thread_offset, next_thread);
                assert!(s.threads >= 1 && s.threads <= s.clients, "{s:?}");
                next_client += s.clients;
                next_thread += s.threads;
            }
            let rate: f64 = shares.iter().map(|s| s.rate(1000.0)).sum();
            assert!((rate - 1000.0).abs() < 1e-9, "{rate}");
        }
        // Dealt as pgbench deals clients to threads: the first get more.
        let s: Vec<u32> = (0..3).map(|i| Share::new(i, 3, 10, 3).clients).collect();
        assert_eq!(s, [4, 3, 3]);
    }
}
