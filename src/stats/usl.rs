//! The Universal Scalability Law, fitted by nonlinear least squares.
//!
//! X(N) = λN / (1 + σ(N − 1) + κN(N − 1)): λ is the throughput of one
//! client, σ the contention (the share of work that serialises), κ the
//! coherency cost (the pairwise crosstalk that makes throughput fall past
//! the peak N* = √((1 − σ)/κ)).
//!
//! The fit minimises the squared throughput residuals with σ, κ ≥ 0 (as R's
//! `usl` package and usl4j fit it). No crate fits bounded problems this
//! small without pulling in a linear-algebra library, so the solver is
//! ours: Levenberg–Marquardt on three parameters with Marquardt's scaling
//! (the parameters differ by seven orders of magnitude). The bounds are
//! handled by enumerating the faces of the feasible region: the problem is
//! solved with all three parameters free, with κ = 0, with σ = 0 and with
//! both at 0, a parameter that a step would take below 0 is held at 0, and
//! the feasible solution with the least squared error wins. That is exact
//! for a bounded least-squares problem whose faces each have one minimum,
//! which holds for this model from several starting points.

use serde::{Deserialize, Serialize};

/// The fewest distinct client counts the fit accepts: three parameters
/// need a fourth point before R² says anything.
pub const MIN_POINTS: usize = 4;
/// Below this R² the model is said not to fit.
pub const MIN_R_SQUARED: f64 = 0.9;

/// The fitted coefficients and what follows from them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    pub sigma: f64,
    pub kappa: f64,
    pub lambda: f64,
    pub r_squared: f64,
    /// The peak N* = √((1 − σ)/κ); `None` when κ = 0 (throughput grows
    /// without a peak) or σ ≥ 1.
    pub peak_clients: Option<f64>,
    /// X at the integers around N* (one when N* is an integer), with the
    /// higher first when they differ.
    pub around_peak: Vec<(u32, f64)>,
}

impl Fit {
    /// The modelled throughput at `n` clients.
    pub fn throughput(&self, n: f64) -> f64 {
        model(self.lambda, self.sigma, self.kappa, n)
    }

    /// Whether R² is high enough to trust the model.
    pub fn fits(&self) -> bool {
        self.r_squared >= MIN_R_SQUARED
    }
}

/// Why there is no fit.
#[derive(Clone, Debug, PartialEq)]
pub enum FitError {
    /// Fewer than [`MIN_POINTS`] distinct client counts.
    TooFewPoints(usize),
    /// The solver found no finite solution (throughputs all 0, say).
    NoSolution,
}

impl std::fmt::Display for FitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FitError::TooFewPoints(n) => write!(
                f,
                "too few points to fit the USL ({n} client counts, at least {MIN_POINTS} needed)"
            ),
            FitError::NoSolution => f.write_str("the USL could not be fitted to these points"),
        }
    }
}

fn model(lambda: f64, sigma: f64, kappa: f64, n: f64) -> f64 {
    lambda * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))
}

/// Fits the USL to `(clients, throughput)` points (repeats welcome).
pub fn fit(points: &[(f64, f64)]) -> Result<Fit, FitError> {
    let mut distinct: Vec<f64> = points.iter().map(|p| p.0).collect();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    if distinct.len() < MIN_POINTS {
        return Err(FitError::TooFewPoints(distinct.len()));
    }
    let lambda0 = points
        .iter()
        .filter(|p| p.0 == distinct[0])
        .map(|p| p.1 / p.0)
        .fold(0.0, f64::max);
    if !(lambda0 > 0.0 && lambda0.is_finite()) {
        return Err(FitError::NoSolution);
    }
    let mut best: Option<([f64; 3], f64)> = None;
    for free in [[true, true], [true, false], [false, true], [false, false]] {
        for sigma0 in [0.0, 0.05, 0.3] {
            for kappa0 in [0.0, 1e-4, 1e-2] {
                let start = [
                    lambda0,
                    if free[0] { sigma0 } else { 0.0 },
                    if free[1] { kappa0 } else { 0.0 },
                ];
                let p = levenberg_marquardt(points, start, [true, free[0], free[1]]);
                let e = sse(points, &p);
                if e.is_finite() && best.as_ref().map_or(true, |b| e < b.1) {
                    best = Some((p, e));
                }
            }
        }
    }
    let ([lambda, sigma, kappa], error) = best.ok_or(FitError::NoSolution)?;
    let mean = points.iter().map(|p| p.1).sum::<f64>() / points.len() as f64;
    let total: f64 = points.iter().map(|p| (p.1 - mean).powi(2)).sum();
    let r_squared = if total > 0.0 {
        1.0 - error / total
    } else {
        0.0
    };
    let peak_clients = (kappa > 0.0 && sigma < 1.0).then(|| ((1.0 - sigma) / kappa).sqrt());
    let mut fit = Fit {
        sigma,
        kappa,
        lambda,
        r_squared,
        peak_clients,
        around_peak: Vec::new(),
    };
    if let Some(peak) = peak_clients.filter(|p| *p < f64::from(u32::MAX)) {
        let (low, high) = (peak.floor().max(1.0) as u32, peak.ceil().max(1.0) as u32);
        fit.around_peak.push((low, fit.throughput(f64::from(low))));
        if high != low {
            fit.around_peak
                .push((high, fit.throughput(f64::from(high))));
        }
        fit.around_peak.sort_by(|a, b| b.1.total_cmp(&a.1));
    }
    Ok(fit)
}

fn sse(points: &[(f64, f64)], p: &[f64; 3]) -> f64 {
    points
        .iter()
        .map(|&(n, x)| (model(p[0], p[1], p[2], n) - x).powi(2))
        .sum()
}

/// Minimises the squared error over the parameters marked free, holding
/// σ and κ at 0 or above.
fn levenberg_marquardt(points: &[(f64, f64)], start: [f64; 3], free: [bool; 3]) -> [f64; 3] {
    let mut p = start;
    let mut error = sse(points, &p);
    let mut damping = 1e-3;
    for _ in 0..1000 {
        let (jtj, jtr) = normal_equations(points, &p, free);
        let mut improved = false;
        while damping < 1e16 {
            let mut a = jtj;
            for (i, row) in a.iter_mut().enumerate() {
                row[i] += damping * jtj[i][i].max(f64::MIN_POSITIVE);
            }
            let Some(step) = solve3(a, jtr) else {
                damping *= 10.0;
                continue;
            };
            let mut next = p;
            for i in 0..3 {
                if free[i] {
                    next[i] -= step[i];
                }
            }
            next[1] = next[1].max(0.0);
            next[2] = next[2].max(0.0);
            let next_error = sse(points, &next);
            if next_error.is_finite() && next_error <= error {
                let gain = error - next_error;
                p = next;
                error = next_error;
                damping = (damping / 10.0).max(1e-12);
                improved = gain > error * 1e-15;
                break;
            }
            damping *= 10.0;
        }
        if !improved {
            break;
        }
    }
    p
}

/// JᵀJ and Jᵀr of the residuals model − x, with the columns of fixed
/// parameters zeroed (their diagonal set to 1 so the system stays regular).
fn normal_equations(
    points: &[(f64, f64)],
    p: &[f64; 3],
    free: [bool; 3],
) -> ([[f64; 3]; 3], [f64; 3]) {
    let [lambda, sigma, kappa] = *p;
    let mut jtj = [[0.0; 3]; 3];
    let mut jtr = [0.0; 3];
    for &(n, x) in points {
        let d = 1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0);
        let g = n / d;
        let r = lambda * g - x;
        let mut j = [
            g,
            -lambda * g * (n - 1.0) / d,
            -lambda * g * n * (n - 1.0) / d,
        ];
        for (i, on) in free.iter().enumerate() {
            if !on {
                j[i] = 0.0;
            }
        }
        for a in 0..3 {
            jtr[a] += j[a] * r;
            for b in 0..3 {
                jtj[a][b] += j[a] * j[b];
            }
        }
    }
    for (i, on) in free.iter().enumerate() {
        if !on {
            jtj[i][i] = 1.0;
        }
    }
    (jtj, jtr)
}

/// Solves a 3×3 system by Gaussian elimination with partial pivoting.
fn solve3(mut a: [[f64; 3]; 3], mut b: [f64; 3]) -> Option<[f64; 3]> {
    for col in 0..3 {
        let pivot = (col..3).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col].abs() < 1e-300 {
            return None;
        }
        a.swap(col, pivot);
        b.swap(col, pivot);
        for row in col + 1..3 {
            let factor = a[row][col] / a[col][col];
            let pivot_row = a[col];
            for (cell, above) in a[row].iter_mut().zip(pivot_row).skip(col) {
                *cell -= factor * above;
            }
            b[row] -= factor * b[col];
        }
    }
    let mut x = [0.0; 3];
    for row in (0..3).rev() {
        let tail: f64 = (row + 1..3).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - tail) / a[row][row];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

#[cfg(test)]
mod tests;
