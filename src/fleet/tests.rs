use super::*;

#[test]
fn the_run_id_is_the_workload_and_the_start_time() {
    let one = run_id(None, "4|clients 10|select 1", Some(5));
    assert_eq!(one, run_id(None, "4|clients 10|select 1", Some(5)));
    assert_eq!(one.len(), 16);
    assert_ne!(one, run_id(None, "4|clients 10|select 1", Some(6)));
    assert_ne!(one, run_id(None, "4|clients 12|select 1", Some(5)));
    assert_eq!(run_id(Some("nightly-42"), "x", None), "nightly-42");
}
