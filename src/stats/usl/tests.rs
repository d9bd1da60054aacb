use super::*;

/// `value` rounded to `digits` significant digits.
fn significant(value: f64, digits: i32) -> f64 {
    if value == 0.0 {
        return 0.0;
    }
    let scale = 10f64.powi(digits - 1 - value.abs().log10().floor() as i32);
    (value * scale).round() / scale
}

fn assert_digits(actual: f64, expected: f64, digits: i32) {
    assert_eq!(
        significant(actual, digits),
        significant(expected, digits),
        "{actual} is not {expected} to {digits} significant digits"
    );
}

/// The Cisco benchmark from Baron Schwartz's "Practical Scalability
/// Analysis with the Universal Scalability Law", as usl4j's tests use it,
/// with the coefficients the book lists.
const CISCO: [(f64, f64); 32] = [
    (1.0, 955.16),
    (2.0, 1878.91),
    (3.0, 2688.01),
    (4.0, 3548.68),
    (5.0, 4315.54),
    (6.0, 5130.43),
    (7.0, 5931.37),
    (8.0, 6531.08),
    (9.0, 7219.8),
    (10.0, 7867.61),
    (11.0, 8278.71),
    (12.0, 8646.7),
    (13.0, 9047.84),
    (14.0, 9426.55),
    (15.0, 9645.37),
    (16.0, 9897.24),
    (17.0, 10097.6),
    (18.0, 10240.5),
    (19.0, 10532.39),
    (20.0, 10798.52),
    (21.0, 11151.43),
    (22.0, 11518.63),
    (23.0, 11806.0),
    (24.0, 12089.37),
    (25.0, 12075.41),
    (26.0, 12177.29),
    (27.0, 12211.41),
    (28.0, 12158.93),
    (29.0, 12155.27),
    (30.0, 12118.04),
    (31.0, 12140.4),
    (32.0, 12074.39),
];

#[test]
fn the_cisco_benchmark_gives_the_books_coefficients() {
    let fit = fit(&CISCO).unwrap();
    assert_digits(fit.sigma, 0.02671591, 4);
    assert_digits(fit.kappa, 7.690945e-4, 4);
    assert_digits(fit.lambda, 995.6486, 4);
    let peak = fit.peak_clients.unwrap();
    assert_eq!(peak.floor(), 35.0);
    assert_digits(fit.throughput(35.0), 12341.7456, 4);
    assert!(fit.fits());
}

/// R's `usl` package, `usl(throughput ~ load, specsdm91)`: the SPEC SDM91
/// benchmark from Gunther's "Guerrilla Capacity Planning"; its summary
/// prints alpha (σ) 2.773e-02, beta (κ) 1.044e-04, gamma (λ) 90.00 and
/// R² 0.9896.
#[test]
fn the_spec_sdm91_benchmark_gives_the_r_packages_coefficients() {
    let specsdm91 = [
        (1.0, 64.9),
        (18.0, 995.9),
        (36.0, 1652.4),
        (72.0, 1853.2),
        (108.0, 1828.9),
        (144.0, 1775.0),
        (216.0, 1702.2),
    ];
    let fit = fit(&specsdm91).unwrap();
    assert_digits(fit.sigma, 2.773e-2, 4);
    assert_digits(fit.kappa, 1.044e-4, 4);
    assert_digits(fit.lambda, 90.00, 4);
    assert_digits(fit.r_squared, 0.9896, 4);
}

#[test]
fn noiseless_curves_give_back_their_coefficients() {
    for (lambda, sigma, kappa) in [
        (1000.0, 0.05, 0.001),
        (12.5, 0.0, 0.02),
        (40000.0, 0.3, 0.0),
        (500.0, 0.0, 0.0),
        (2500.0, 0.01, 0.00005),
    ] {
        let points: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
            .into_iter()
            .map(|n| (n, model(lambda, sigma, kappa, n)))
            .collect();
        let fit = fit(&points).unwrap();
        assert!((fit.lambda - lambda).abs() <= lambda * 1e-6, "{fit:?}");
        assert!((fit.sigma - sigma).abs() <= 1e-7, "{fit:?}");
        assert!((fit.kappa - kappa).abs() <= 1e-9, "{fit:?}");
        assert!(fit.r_squared > 0.999_999, "{fit:?}");
    }
}

#[test]
fn the_peak_is_reported_with_the_integers_around_it() {
    let points: Vec<(f64, f64)> = (1..=10)
        .map(|n| (f64::from(n), model(100.0, 0.1, 0.01, f64::from(n))))
        .collect();
    let fit = fit(&points).unwrap();
    let peak = fit.peak_clients.unwrap();
    assert!((peak - 90f64.sqrt()).abs() < 1e-4);
    let clients: Vec<u32> = fit.around_peak.iter().map(|p| p.0).collect();
    assert_eq!(clients, [9, 10]);
    assert!(fit.around_peak[0].1 >= fit.around_peak[1].1);
}

#[test]
fn a_curve_with_no_peak_has_no_peak() {
    let points: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0]
        .into_iter()
        .map(|n| (n, 100.0 * n))
        .collect();
    let fit = fit(&points).unwrap();
    assert_eq!(fit.peak_clients, None);
    assert!(fit.around_peak.is_empty());
}

/// Throughput that rises again after falling is no USL curve: the fit is
/// reported with its low R², not forced, and the coefficients stay in
/// bounds.
#[test]
fn data_the_model_cannot_fit_is_reported_as_such() {
    let zigzag = [
        (1.0, 100.0),
        (2.0, 900.0),
        (4.0, 150.0),
        (8.0, 950.0),
        (16.0, 120.0),
        (32.0, 980.0),
    ];
    let fit = fit(&zigzag).unwrap();
    assert!(!fit.fits(), "{fit:?}");
    assert!(fit.sigma >= 0.0 && fit.kappa >= 0.0);
}

#[test]
fn throughput_that_grows_faster_than_linearly_holds_the_bounds() {
    let points: Vec<(f64, f64)> = [1.0, 2.0, 3.0, 4.0, 5.0]
        .into_iter()
        .map(|n| (n, 10.0 * n * n))
        .collect();
    let fit = fit(&points).unwrap();
    assert_eq!((fit.sigma, fit.kappa), (0.0, 0.0));
}

#[test]
fn too_few_client_counts_are_refused() {
    let points = [(1.0, 10.0), (2.0, 19.0), (2.0, 18.0), (4.0, 30.0)];
    assert_eq!(fit(&points), Err(FitError::TooFewPoints(3)));
    assert_eq!(fit(&[]), Err(FitError::TooFewPoints(0)));
    assert_eq!(
        fit(&[(1.0, 0.0), (2.0, 0.0), (3.0, 0.0), (4.0, 0.0)]),
        Err(FitError::NoSolution)
    );
}
