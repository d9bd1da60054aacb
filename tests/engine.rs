//! The benchmark engine against a real server, with the real pgbench as the
//! oracle.

mod engine_support;

use engine_support::*;

#[test]
fn transactions_processed_match_pgbench() {
    let db = database(Some(1));
    for args in [
        &["-n", "-t", "5", "-c", "1"][..],
        &["-n", "-t", "7", "-c", "3", "-j", "2"],
        &["-n", "-t", "4", "-c", "4", "-j", "4", "-M", "extended"],
        &["-n", "-t", "4", "-c", "2", "-M", "prepared", "-S"],
        &["-n", "-t", "3", "-c", "2", "-N"],
    ] {
        let ours = pgbolt(&db, args);
        let theirs = pgbench(&db, args);
        assert_eq!(ours.status.code(), Some(0), "{args:?}: {}", stderr(&ours));
        assert_eq!(
            theirs.status.code(),
            Some(0),
            "{args:?}: {}",
            stderr(&theirs)
        );
        let key = "number of transactions actually processed:";
        assert_eq!(
            line(&stdout(&ours), key),
            line(&stdout(&theirs), key),
            "{args:?}\n{}",
            stdout(&ours)
        );
        for prefix in [
            "transaction type:",
            "query mode:",
            "number of clients:",
            "number of threads:",
        ] {
            assert_eq!(line(&stdout(&ours), prefix), line(&stdout(&theirs), prefix));
        }
    }
}

#[test]
fn tpcb_ledger_balances_for_several_client_and_thread_counts() {
    let db = database(Some(1));
    for args in [
        &["-n", "-t", "10", "-c", "1"][..],
        &["-n", "-t", "10", "-c", "5", "-j", "2"],
        &["-n", "-t", "6", "-c", "8", "-j", "3", "-M", "prepared"],
        &["-n", "-t", "5", "-c", "3", "-j", "3", "-M", "extended"],
    ] {
        let out = pgbolt(&db, args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        let l = ledger(&db);
        assert!(
            l.iter().all(|v| v == &l[0]),
            "{args:?}: ledger does not balance: {l:?}"
        );
    }
    let history = sql(&db, "select count(*) from pgbench_history");
    assert_eq!(history, (10 + 50 + 48 + 15).to_string());
}
