//! The temperatures of the probability calibration: per prefix of a fitted model, the
//! `T ≥ 0` that minimises the cross-entropy of `softmax(T z_i + log π)` to smoothed targets.
//!
//! Written here, not in NumPy, because a model calibrates every prefix of its path: `k`
//! one-dimensional problems over `m × C` log-odds each, where NumPy's temporaries (ten
//! passes over the whole `k × m × C` block per Newton step) made the calibration cost more
//! than the selection it follows (digits: 0.35 s at k = 100, 10 classes). One fused pass a
//! step, a prefix per task, does the same arithmetic in a few milliseconds.

use crate::error::{Error, Result};
use ndarray::{ArrayView2, ArrayView3};
use rayon::prelude::*;

/// Newton steps at most per prefix; they converge in about five from `T = 1`, two or three
/// from the last prefix's `T`.
const MAX_STEPS: usize = 50;
/// A prefix is done when its step is at most this fraction of `T`.
const RELATIVE_STEP: f64 = 1e-8;
/// Consecutive prefixes solved in order by one task, each starting from the last one's
/// `T` (neighbouring prefixes differ by one basis). Fixed, so that no result depends on
/// the thread count.
const PREFIXES_PER_TASK: usize = 16;
/// Log-probabilities more than this below a row's largest contribute `< e⁻⁴⁰` each and
/// are not exponentiated.
const NEGLIGIBLE: f64 = 40.0;

/// The temperature of each prefix `b`: `log_odds[b]` is `m × C`, `targets` `m × C` (rows
/// summing to 1), `log_priors` of length `C`. Safeguarded Newton from `T = 1`: each step
/// stays within a factor 8 of the last (the loss is flat far out, and `T` stays ≥ 0), and
/// where the probabilities saturate (the curvature vanishes or rounds below zero) the step
/// goes by the gradient's sign.
pub fn softmax_temperatures(
    log_odds: ArrayView3<f64>,
    targets: ArrayView2<f64>,
    log_priors: &[f64],
    n_threads: usize,
) -> Result<Vec<f64>> {
    let (_, m, classes) = log_odds.dim();
    if targets.dim() != (m, classes) {
        return Err(Error::invalid(
            "targets",
            format!("must have shape ({m}, {classes}), got {:?}", targets.dim()),
        ));
    }
    if log_priors.len() != classes {
        return Err(Error::invalid(
            "log_priors",
            format!("must have {classes} values, got {}", log_priors.len()),
        ));
    }
    let pool = crate::pool::shared(n_threads)?;
    let prefixes: Vec<ArrayView2<f64>> = log_odds.outer_iter().collect();
    Ok(pool.install(|| {
        prefixes
            .par_chunks(PREFIXES_PER_TASK)
            .flat_map_iter(|chunk| {
                let mut start = 1.0;
                chunk.iter().map(move |z| {
                    start = temperature(*z, targets, log_priors, start);
                    start
                })
            })
            .collect()
    }))
}

fn temperature(
    z: ArrayView2<f64>,
    targets: ArrayView2<f64>,
    log_priors: &[f64],
    start: f64,
) -> f64 {
    let classes = log_priors.len();
    let mut logits = vec![0.0; classes];
    let mut t = if start > 0.0 && start.is_finite() {
        start
    } else {
        1.0
    };
    for _ in 0..MAX_STEPS {
        let (mut gradient, mut curvature) = (0.0, 0.0);
        for (row, target) in z.outer_iter().zip(targets.outer_iter()) {
            let mut largest = f64::NEG_INFINITY;
            for ((logit, &value), &prior) in logits.iter_mut().zip(row.iter()).zip(log_priors) {
                *logit = t * value + prior;
                largest = largest.max(*logit);
            }
            let mut total = 0.0;
            for logit in logits.iter_mut() {
                let below = *logit - largest;
                *logit = if below < -NEGLIGIBLE {
                    0.0
                } else {
                    below.exp()
                };
                total += *logit;
            }
            // With p = softmax: d/dT = Σ_c (p_c − t_c) z_c, d²/dT² = Σ_c p_c z_c² − (Σ_c p_c z_c)².
            let (mut expected, mut second) = (0.0, 0.0);
            for ((&weight, &value), &wanted) in logits.iter().zip(row.iter()).zip(target.iter()) {
                let p = weight / total;
                expected += p * value;
                second += p * value * value;
                gradient -= wanted * value;
            }
            gradient += expected;
            curvature += second - expected * expected;
        }
        let newton = if curvature > 0.0 {
            t - gradient / curvature
        } else {
            t * (-3.0 * gradient.signum()).exp2()
        };
        let updated = if newton.is_finite() {
            newton.clamp(t / 8.0, t * 8.0)
        } else {
            t
        };
        let step = (updated - t).abs();
        t = updated;
        if step <= RELATIVE_STEP * t {
            break;
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array2, Array3};

    /// The loss at `t`, for checking the minimum by its neighbours.
    fn loss(z: &Array2<f64>, targets: &Array2<f64>, log_priors: &[f64], t: f64) -> f64 {
        let mut total = 0.0;
        for (row, target) in z.outer_iter().zip(targets.outer_iter()) {
            let logits: Vec<f64> = row.iter().zip(log_priors).map(|(v, p)| t * v + p).collect();
            let largest = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let log_sum = largest + logits.iter().map(|l| (l - largest).exp()).sum::<f64>().ln();
            total -= target
                .iter()
                .zip(&logits)
                .map(|(w, l)| w * (l - log_sum))
                .sum::<f64>();
        }
        total
    }

    #[test]
    fn each_temperature_minimises_its_cross_entropy() {
        let (m, classes) = (40, 3);
        let mut state = 7_u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        };
        let codes: Vec<usize> = (0..m).map(|i| i % classes).collect();
        let mut targets = Array2::from_elem((m, classes), 0.05);
        for (i, &c) in codes.iter().enumerate() {
            targets[[i, c]] = 0.9;
        }
        // Three prefixes: informative log-odds at two scales, and noise.
        let mut z = Array3::zeros((3, m, classes));
        for i in 0..m {
            for c in 0..classes {
                let signal = if codes[i] == c { 2.0 } else { 0.0 };
                z[[0, i, c]] = signal + next();
                z[[1, i, c]] = 50.0 * (signal + next());
                z[[2, i, c]] = next();
            }
        }
        let log_priors = vec![(1.0_f64 / 3.0).ln(); classes];
        let temperatures = softmax_temperatures(z.view(), targets.view(), &log_priors, 2).unwrap();
        for (b, &t) in temperatures.iter().enumerate() {
            let prefix = z.index_axis(ndarray::Axis(0), b).to_owned();
            let here = loss(&prefix, &targets, &log_priors, t);
            assert!(t >= 0.0 && t.is_finite());
            for nearby in [t * 0.999, t * 1.001] {
                assert!(here <= loss(&prefix, &targets, &log_priors, nearby) + 1e-12);
            }
        }
        // The larger scale needs a proportionally smaller temperature.
        assert!(temperatures[1] < temperatures[0] / 10.0);
        assert_eq!(
            temperatures,
            softmax_temperatures(z.view(), targets.view(), &log_priors, 1).unwrap()
        );
    }

    #[test]
    fn saturated_log_odds_get_a_small_finite_temperature() {
        // Separable with huge log-odds: smoothed targets keep the optimum finite.
        let z = Array3::from_shape_fn((1, 4, 2), |(_, i, c)| if i % 2 == c { 1e12 } else { -1e12 });
        let targets = Array2::from_shape_fn((4, 2), |(i, c)| if i % 2 == c { 0.75 } else { 0.25 });
        let t = softmax_temperatures(z.view(), targets.view(), &[0.0, 0.0], 1).unwrap()[0];
        assert!(t > 0.0 && t < 1e-9, "{t}");
    }

    #[test]
    fn shapes_that_disagree_are_refused() {
        let z = Array3::<f64>::zeros((2, 4, 3));
        let targets = Array2::<f64>::zeros((4, 2));
        assert!(softmax_temperatures(z.view(), targets.view(), &[0.0; 3], 1).is_err());
        let targets = Array2::<f64>::zeros((4, 3));
        assert!(softmax_temperatures(z.view(), targets.view(), &[0.0; 2], 1).is_err());
    }
}
