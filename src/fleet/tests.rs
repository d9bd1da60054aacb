use super::*;

#[test]
fn shares_add_up_to_the_command_line() {
    for (clients, threads, count) in [(10, 4, 3), (7, 7, 7), (100, 1, 4), (5, 2, 2), (64, 8, 5)] {
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

#[test]
fn the_run_id_is_the_workload_and_the_start_time() {
    let one = run_id(None, "4|clients 10|select 1", Some(5));
    assert_eq!(one, run_id(None, "4|clients 10|select 1", Some(5)));
    assert_eq!(one.len(), 16);
    assert_ne!(one, run_id(None, "4|clients 10|select 1", Some(6)));
    assert_ne!(one, run_id(None, "4|clients 12|select 1", Some(5)));
    assert_eq!(run_id(Some("nightly-42"), "x", None), "nightly-42");
}
