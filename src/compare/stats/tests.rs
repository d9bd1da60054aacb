//! Reference values were computed independently with SciPy 1.x and NumPy:
//! `scipy.stats.ttest_ind(b, a, equal_var=False)` and its
//! `confidence_interval(level)`, `scipy.stats.mannwhitneyu(b, a,
//! use_continuity=False, alternative='two-sided', method='asymptotic')` on
//! the histograms expanded into samples, and a brute-force bootstrap (20,000
//! multinomial resamples of both histograms with NumPy, the same quantile
//! rule) for the percentile intervals.

use super::*;

fn close(actual: f64, expected: f64, tolerance: f64) {
    assert!(
        (actual - expected).abs() <= tolerance * expected.abs().max(1e-300),
        "{actual} is not within {tolerance} of {expected}"
    );
}

#[test]
fn welch_matches_scipy() {
    let a = [10.1, 9.8, 10.4, 10.0, 9.7, 10.3, 10.2, 9.9];
    let b = [10.9, 11.2, 10.5, 11.0, 10.8, 11.4];
    let w = welch(&a, &b, 0.95).expect("two samples");
    close(w.degrees_of_freedom, 9.22954785168866, 1e-9);
    close(w.p_value, 0.00020132066348425327, 1e-6);
    close(w.difference.low, 0.567943254210321, 1e-9);
    close(w.difference.high, 1.2653900791230148, 1e-9);

    let w = welch(&[1.5, 2.5, 2.0, 3.5, 2.5], &[1.0, 2.0, 3.0, 4.0], 0.90).expect("two samples");
    close(w.degrees_of_freedom, 4.554989584442046, 1e-9);
    close(w.p_value, 0.8962838836091092, 1e-6);
    close(w.difference.low, -1.3945153990174872, 1e-9);
    close(w.difference.high, 1.5945153990174865, 1e-9);
}

#[test]
fn welch_needs_two_values_a_side_and_survives_no_spread() {
    assert!(welch(&[1.0], &[1.0, 2.0], 0.95).is_none());
    let w = welch(&[5.0, 5.0], &[7.0, 7.0, 7.0], 0.95).expect("two samples");
    assert_eq!((w.difference.low, w.difference.high), (2.0, 2.0));
    assert_eq!(w.p_value, 0.0);
}

#[test]
fn batch_means_group_consecutive_values_and_drop_the_remainder() {
    let v: Vec<f64> = (1..=11).map(f64::from).collect();
    assert_eq!(batch_means(&v, 5), vec![1.5, 3.5, 5.5, 7.5, 9.5]);
    assert_eq!(batch_means(&v[..3], 10), vec![1.0, 2.0, 3.0]);
    assert!(batch_means(&[], 10).is_empty());
}

fn buckets(pairs: &[(u64, u64)]) -> Buckets {
    Buckets::new(pairs.iter().copied())
}

/// Values 100..=400 with uneven counts, and values about 10% higher
/// with other counts.
fn shifted_pair() -> (Buckets, Buckets) {
    let a = Buckets::new((100u64..=400).map(|v| (v, (v * 37) % 11 + 1)));
    let b = Buckets::new((100u64..=400).map(|v| (v + v / 10, (v * 53) % 7 + 1)));
    (a, b)
}

#[test]
fn quantiles_read_as_hdrhistogram_reads_them() {
    let h = buckets(&[(10, 1), (20, 2), (30, 1)]);
    assert_eq!(h.len(), 4);
    assert_eq!(h.quantile(0.0), Some(10));
    assert_eq!(h.quantile(0.25), Some(10));
    assert_eq!(h.quantile(0.5), Some(20));
    assert_eq!(h.quantile(0.76), Some(30));
    assert_eq!(h.quantile(1.0), Some(30));
    assert_eq!(buckets(&[]).quantile(0.5), None);
}

#[test]
fn mann_whitney_matches_scipy_with_ties() {
    let a = buckets(&[(100, 5), (200, 10), (300, 3), (500, 1)]);
    let b = buckets(&[(150, 4), (200, 8), (300, 6), (800, 2)]);
    let t = mann_whitney(&a, &b).expect("both sides");
    assert_eq!(t.u, 237.0);
    close(t.p_value, 0.16077539962905718, 1e-9);
    close(t.superiority, 237.0 / (19.0 * 20.0), 1e-12);

    let (a, b) = shifted_pair();
    assert_eq!((a.len(), b.len()), (1804, 1204));
    let t = mann_whitney(&a, &b).expect("both sides");
    assert_eq!(t.u, 1247929.5);
    close(t.p_value, 3.967336347314461e-12, 1e-6);
    assert!(t.z > 0.0, "the candidate is the larger");
}

#[test]
fn mann_whitney_of_a_distribution_with_itself_is_no_difference() {
    let (a, _) = shifted_pair();
    let t = mann_whitney(&a, &a).expect("both sides");
    assert_eq!(t.superiority, 0.5);
    assert_eq!(t.p_value, 1.0);
    assert!(mann_whitney(&a, &buckets(&[])).is_none());
}

#[test]
fn the_order_statistic_bootstrap_matches_a_brute_force_bootstrap() {
    let (a, b) = shifted_pair();
    // (quantile, ratio, low, high) from the brute-force bootstrap.
    let reference = [
        (0.5, 1.1, 1.0515873015873016, 1.1475409836065573),
        (0.9, 1.1, 1.0806451612903225, 1.1195652173913044),
        (
            0.99,
            1.0982367758186398,
            1.092964824120603,
            1.1063291139240505,
        ),
    ];
    for (q, ratio, low, high) in reference {
        let e = bootstrap_quantile_ratio(&a, &b, q, 20_000, 0.95, 42).expect("both sides");
        close(e.value, ratio, 1e-12);
        // Two Monte Carlo estimates of the same interval: equal within the
        // histogram's granularity (a value step is under 1% here).
        close(e.low, low, 0.01);
        close(e.high, high, 0.01);
    }
}

#[test]
fn the_bootstrap_is_repeatable_and_covers_no_change_for_equal_sides() {
    let (a, _) = shifted_pair();
    let one = bootstrap_quantile_ratio(&a, &a, 0.99, 2_000, 0.95, 1).expect("both sides");
    let two = bootstrap_quantile_ratio(&a, &a, 0.99, 2_000, 0.95, 1).expect("both sides");
    assert_eq!(one, two);
    assert!(one.low <= 1.0 && one.high >= 1.0, "{one:?}");
    assert!(bootstrap_quantile_ratio(&a, &buckets(&[]), 0.5, 10, 0.95, 1).is_none());
}

#[test]
fn batch_percentiles_give_welchs_interval_on_the_log_scale() {
    let (a, b) = ([100.0, 110.0, 90.0], [200.0, 220.0, 180.0]);
    let e = batch_quantile_ratio(&a, &b, 2.0, 0.95).expect("batches");
    let logs = |v: [f64; 3]| v.map(f64::ln);
    let w = welch(
        &logs([100.0, 110.0, 90.0]),
        &logs([200.0, 220.0, 180.0]),
        0.95,
    )
    .unwrap();
    let half = (w.difference.high - w.difference.low) / 2.0;
    close(e.value, 2.0, 1e-12);
    close(e.low, 2.0 * (-half).exp(), 1e-12);
    close(e.high, 2.0 * half.exp(), 1e-12);
    assert!(batch_quantile_ratio(&a[..1], &b, 2.0, 0.95).is_none());
    assert!(batch_quantile_ratio(&[0.0, 1.0], &b, 2.0, 0.95).is_none());
}
