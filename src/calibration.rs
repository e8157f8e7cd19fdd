//! The probability calibration of every prefix of a fitted model: from the leave-one-out
//! scores of its discriminant, an LDA (its covariance shrunk toward its mean eigenvalue),
//! one temperature fitted by cross-entropy, and a guard against calibrations that
//! misclassify the training points' own scores. The Python layer builds the scores
//! (running sums over the features); docs/architecture.md, "The discriminant and its
//! calibration", gives the definitions.
//!
//! Written here, not in NumPy, because a model calibrates every prefix of its path: `k`
//! small problems over `m × C` values each, where NumPy's temporaries (a dozen passes over
//! the whole `k × m × C` block) cost more than the selection they follow (digits: 0.35 s
//! at k = 100 and 10 classes; a full KFDA at m = 1,000: 0.8 s). Here one prefix is one
//! task, its buffers `m × C`, each Newton step one vector `exp` over them and one fused pass.

use crate::error::{Error, Result};
use ndarray::{s, Array2, Array3, ArrayView2, ArrayView3};
use rayon::prelude::*;

/// Newton steps at most per prefix; they converge in about five from `T = 1`, two or three
/// from the last prefix's `T`.
const MAX_STEPS: usize = 50;
/// A prefix's temperature is done when its step is at most this fraction of `T`.
const RELATIVE_STEP: f64 = 1e-8;
/// Consecutive prefixes solved in order by one task, each starting from the last one's
/// `T` (neighbouring prefixes differ by one basis). Fixed, so that no result depends on
/// the thread count.
const PREFIXES_PER_TASK: usize = 16;

/// The training set's side of the calibration, shared by every prefix.
pub struct Classes<'a> {
    /// Each training point's class, `0..C`.
    pub codes: &'a [usize],
    /// Each point's smoothed targets (`m × C`, rows summing to 1).
    pub targets: ArrayView2<'a, f64>,
    /// The log of the training frequencies of the classes.
    pub log_priors: &'a [f64],
    /// How far the scores' covariance is shrunk toward its mean eigenvalue, in `[0, 1]`.
    pub shrinkage: f64,
}

/// `(A, c)` of every prefix `b`: the log-probabilities of scores `s` are
/// `s·A[b] + c[b] + log π` up to a constant. `left_out[b]` and `own[b]` are the
/// leave-one-out and the fitted scores of the training points (`m × D`, `D = C − 1`).
pub fn calibrate(
    left_out: ArrayView3<f64>,
    own: ArrayView3<f64>,
    classes: &Classes,
    n_threads: usize,
) -> Result<(Array3<f64>, Array2<f64>)> {
    let (prefixes, m, dims) = left_out.dim();
    let n_classes = classes.log_priors.len();
    if own.dim() != left_out.dim() {
        return Err(Error::invalid(
            "own",
            format!("must have the shape of left_out, {:?}", left_out.dim()),
        ));
    }
    if n_classes != dims + 1
        || classes.codes.len() != m
        || classes.targets.dim() != (m, n_classes)
        || classes.codes.iter().any(|&c| c >= n_classes)
    {
        return Err(Error::invalid(
            "codes",
            format!(
                "{m} codes in 0..{} and {m}×{} targets are needed",
                dims + 1,
                dims + 1
            ),
        ));
    }
    let pool = crate::pool::shared(n_threads)?;
    let indices: Vec<usize> = (0..prefixes).collect();
    let solved: Vec<(Vec<f64>, Vec<f64>)> = pool.install(|| {
        indices
            .par_chunks(PREFIXES_PER_TASK)
            .flat_map_iter(|chunk| {
                let mut start = 1.0;
                chunk.iter().map(move |&b| {
                    let prefix = Prefix::of(left_out.slice(s![b, .., ..]), classes);
                    let temperature = prefix.temperature(classes, start);
                    start = temperature;
                    prefix.calibration(temperature, own.slice(s![b, .., ..]), classes)
                })
            })
            .collect()
    });
    let mut weights = Array3::zeros((prefixes, dims, n_classes));
    let mut bias = Array2::zeros((prefixes, n_classes));
    for (b, (a, c)) in solved.into_iter().enumerate() {
        weights
            .slice_mut(s![b, .., ..])
            .iter_mut()
            .zip(a)
            .for_each(|(w, a)| *w = a);
        bias.slice_mut(s![b, ..])
            .iter_mut()
            .zip(c)
            .for_each(|(w, c)| *w = c);
    }
    Ok((weights, bias))
}

/// The LDA of one prefix's leave-one-out scores.
struct Prefix {
    /// The scores' mean (`D`), by which they are centred.
    centre: Vec<f64>,
    /// `P = Σ⁻¹M'`, `D × C` row-major.
    precision_means: Vec<f64>,
    /// `½ M_c Σ⁻¹ M_c'` per class.
    half_quadratic: Vec<f64>,
    /// `z_ic = (s_i − centre)·P_c − half_quadratic_c`, `m × C` row-major.
    log_odds: Vec<f64>,
}

impl Prefix {
    fn of(scores: ArrayView2<f64>, classes: &Classes) -> Prefix {
        let (m, dims) = scores.dim();
        let n_classes = dims + 1;
        let mut centre = vec![0.0; dims];
        for row in scores.outer_iter() {
            centre.iter_mut().zip(row).for_each(|(c, &s)| *c += s);
        }
        centre.iter_mut().for_each(|c| *c /= m as f64);
        // Class means of the centred scores.
        let mut means = vec![0.0; n_classes * dims];
        let mut counts = vec![0.0_f64; n_classes];
        for (row, &code) in scores.outer_iter().zip(classes.codes) {
            counts[code] += 1.0;
            for d in 0..dims {
                means[code * dims + d] += row[d] - centre[d];
            }
        }
        for (c, &count) in counts.iter().enumerate() {
            means[c * dims..(c + 1) * dims]
                .iter_mut()
                .for_each(|v| *v /= count.max(1.0));
        }
        // The pooled covariance, its scale, then the shrinkage.
        let mut covariance = vec![0.0; dims * dims];
        let mut scale = 0.0;
        let mut residual = vec![0.0; dims];
        for (row, &code) in scores.outer_iter().zip(classes.codes) {
            for d in 0..dims {
                let centred = row[d] - centre[d];
                scale += centred * centred;
                residual[d] = centred - means[code * dims + d];
            }
            // The lower triangle only; mirrored below.
            for d in 0..dims {
                for e in 0..=d {
                    covariance[d * dims + e] += residual[d] * residual[e];
                }
            }
        }
        for d in 0..dims {
            for e in 0..d {
                covariance[e * dims + d] = covariance[d * dims + e];
            }
        }
        covariance.iter_mut().for_each(|v| *v /= m as f64);
        scale /= m as f64;
        let trace: f64 = (0..dims).map(|d| covariance[d * dims + d]).sum();
        let floor = 1e-9 * trace / dims as f64 + 1e-12 * scale + 1e-300;
        let mean_eigenvalue = classes.shrinkage * trace / dims as f64 + floor;
        covariance
            .iter_mut()
            .for_each(|v| *v *= 1.0 - classes.shrinkage);
        for d in 0..dims {
            covariance[d * dims + d] += mean_eigenvalue;
        }
        let precision_means = solve_spd(&covariance, &means, dims, n_classes);
        let half_quadratic: Vec<f64> = (0..n_classes)
            .map(|c| {
                (0..dims)
                    .map(|d| means[c * dims + d] * precision_means[d * n_classes + c])
                    .sum::<f64>()
                    / 2.0
            })
            .collect();
        let mut log_odds = vec![0.0; m * n_classes];
        for (z, row) in log_odds
            .chunks_exact_mut(n_classes)
            .zip(scores.outer_iter())
        {
            z.iter_mut().zip(&half_quadratic).for_each(|(z, h)| *z = -h);
            for d in 0..dims {
                let x = row[d] - centre[d];
                let weights = &precision_means[d * n_classes..(d + 1) * n_classes];
                z.iter_mut().zip(weights).for_each(|(z, w)| *z += x * w);
            }
        }
        Prefix {
            centre,
            precision_means,
            half_quadratic,
            log_odds,
        }
    }

    /// The `T ≥ 0` minimising the cross-entropy of `softmax(T z_i + log π)` to the targets:
    /// safeguarded Newton from `start`. Each step stays within a factor 8 of the last (the
    /// loss is flat far out, and `T` stays ≥ 0); where the probabilities saturate (the
    /// curvature vanishes or rounds below zero) it goes by the gradient's sign.
    fn temperature(&self, classes: &Classes, start: f64) -> f64 {
        let n_classes = classes.log_priors.len();
        let mut weights = vec![0.0; self.log_odds.len()];
        let mut t = if start > 0.0 && start.is_finite() {
            start
        } else {
            1.0
        };
        for _ in 0..MAX_STEPS {
            softmax_weights(&mut weights, &self.log_odds, classes.log_priors, t);
            let (mut gradient, mut curvature) = (0.0, 0.0);
            for ((row, weights), target) in self
                .log_odds
                .chunks_exact(n_classes)
                .zip(weights.chunks_exact(n_classes))
                .zip(classes.targets.outer_iter())
            {
                let total: f64 = weights.iter().sum();
                // d/dT = Σ_c (p_c − t_c) z_c, d²/dT² = Σ_c p_c z_c² − (Σ_c p_c z_c)².
                let (mut expected, mut second) = (0.0, 0.0);
                for ((&weight, &value), &wanted) in weights.iter().zip(row).zip(target) {
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

    /// `(A, c)` for the temperature `t`, or zeros where the calibration ranks the training
    /// points' own scores worse than the priors alone: features that explain each point by
    /// itself alone (a kernel far too narrow) give leave-one-out scores that anti-correlate
    /// with the classes, and a calibration that learned that would misclassify the very
    /// points it was fitted on.
    fn calibration(&self, t: f64, own: ArrayView2<f64>, classes: &Classes) -> (Vec<f64>, Vec<f64>) {
        let n_classes = classes.log_priors.len();
        let dims = n_classes - 1;
        let weights: Vec<f64> = self.precision_means.iter().map(|p| t * p).collect();
        let bias: Vec<f64> = (0..n_classes)
            .map(|c| {
                let shift: f64 = (0..dims)
                    .map(|d| self.centre[d] * self.precision_means[d * n_classes + c])
                    .sum();
                -t * (self.half_quadratic[c] + shift)
            })
            .collect();
        // The own scores' log-probabilities, up to their rows' constants.
        let mut values = vec![0.0; own.nrows() * n_classes];
        for (values, row) in values.chunks_exact_mut(n_classes).zip(own.outer_iter()) {
            values.copy_from_slice(&bias);
            for d in 0..dims {
                let row_weights = &weights[d * n_classes..(d + 1) * n_classes];
                values
                    .iter_mut()
                    .zip(row_weights)
                    .for_each(|(v, w)| *v += row[d] * w);
            }
        }
        let mut probabilities = vec![0.0; values.len()];
        softmax_weights(&mut probabilities, &values, classes.log_priors, 1.0);
        let (mut own_loss, mut prior_loss) = (0.0, 0.0);
        for ((row, weights), &code) in values
            .chunks_exact(n_classes)
            .zip(probabilities.chunks_exact(n_classes))
            .zip(classes.codes)
        {
            // log p_code = (v_code + log π_code) − largest − log Σ weights.
            let largest = row
                .iter()
                .zip(classes.log_priors)
                .map(|(v, p)| v + p)
                .fold(f64::NEG_INFINITY, f64::max);
            let total: f64 = weights.iter().sum();
            own_loss -= row[code] + classes.log_priors[code] - largest - total.ln();
            prior_loss -= classes.log_priors[code];
        }
        if own_loss > prior_loss {
            (vec![0.0; weights.len()], vec![0.0; n_classes])
        } else {
            (weights, bias)
        }
    }
}

/// `exp(t·z_ic + log π_c − max_c)` into `weights`, row by row (`z` is `m × C` row-major): the
/// unnormalised softmax of each row, by the crate's vector `exp` over the whole block.
fn softmax_weights(weights: &mut [f64], z: &[f64], log_priors: &[f64], t: f64) {
    let n_classes = log_priors.len();
    for (weights, row) in weights
        .chunks_exact_mut(n_classes)
        .zip(z.chunks_exact(n_classes))
    {
        let mut largest = f64::NEG_INFINITY;
        for ((w, &value), &prior) in weights.iter_mut().zip(row).zip(log_priors) {
            *w = t * value + prior;
            largest = largest.max(*w);
        }
        weights.iter_mut().for_each(|w| *w -= largest);
    }
    crate::simd::exp::exp_in_place_f64(weights);
}

/// `X` with `A X = B` for a symmetric positive definite `A` (`n × n`) and `B'` given as
/// `columns × n` row-major (one right-hand side a row); `X` is `n × columns` row-major. By
/// Cholesky: `n` is the number of classes less one, small.
fn solve_spd(a: &[f64], b_transposed: &[f64], n: usize, columns: usize) -> Vec<f64> {
    let mut lower = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let mut sum = a[i * n + j];
            for k in 0..j {
                sum -= lower[i * n + k] * lower[j * n + k];
            }
            lower[i * n + j] = if i == j {
                sum.max(f64::MIN_POSITIVE).sqrt()
            } else {
                sum / lower[j * n + j]
            };
        }
    }
    let mut x = vec![0.0; n * columns];
    let mut y = vec![0.0; n];
    for c in 0..columns {
        for i in 0..n {
            let mut sum = b_transposed[c * n + i];
            for k in 0..i {
                sum -= lower[i * n + k] * y[k];
            }
            y[i] = sum / lower[i * n + i];
        }
        for i in (0..n).rev() {
            let mut sum = y[i];
            for k in i + 1..n {
                sum -= lower[k * n + i] * x[k * columns + c];
            }
            x[i * columns + c] = sum / lower[i * n + i];
        }
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    fn noise(seed: u64) -> impl FnMut() -> f64 {
        let mut state = seed;
        move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        }
    }

    struct Problem {
        codes: Vec<usize>,
        targets: Array2<f64>,
        log_priors: Vec<f64>,
    }

    fn problem(m: usize, n_classes: usize) -> Problem {
        let codes: Vec<usize> = (0..m).map(|i| i % n_classes).collect();
        let mut targets = Array2::from_elem((m, n_classes), 0.1 / (n_classes - 1) as f64);
        for (i, &c) in codes.iter().enumerate() {
            targets[[i, c]] = 0.9;
        }
        let log_priors = vec![(1.0 / n_classes as f64).ln(); n_classes];
        Problem {
            codes,
            targets,
            log_priors,
        }
    }

    /// The cross-entropy at temperature `t` of a prefix's log-odds.
    fn loss(prefix: &Prefix, p: &Problem, t: f64) -> f64 {
        let n = p.log_priors.len();
        let mut weights = vec![0.0; prefix.log_odds.len()];
        softmax_weights(&mut weights, &prefix.log_odds, &p.log_priors, t);
        let mut total = 0.0;
        for (row, target) in weights.chunks_exact(n).zip(p.targets.outer_iter()) {
            let sum: f64 = row.iter().sum();
            total -= target
                .iter()
                .zip(row)
                .map(|(w, e)| w * (e / sum).ln())
                .sum::<f64>();
        }
        total
    }

    #[test]
    fn each_temperature_minimises_its_cross_entropy_on_any_thread_count() {
        let (m, n_classes) = (60, 3);
        let p = problem(m, n_classes);
        let mut next = noise(7);
        // Three prefixes: informative scores at two scales, and noise.
        let mut scores = Array3::zeros((3, m, n_classes - 1));
        for i in 0..m {
            for d in 0..n_classes - 1 {
                let signal = if p.codes[i] == d + 1 { 1.0 } else { 0.0 };
                scores[[0, i, d]] = signal + 0.5 * next();
                scores[[1, i, d]] = 50.0 * (signal + 0.5 * next());
                scores[[2, i, d]] = next();
            }
        }
        let classes = Classes {
            codes: &p.codes,
            targets: p.targets.view(),
            log_priors: &p.log_priors,
            shrinkage: 0.3,
        };
        for b in 0..3 {
            let prefix = Prefix::of(scores.slice(s![b, .., ..]), &classes);
            let t = prefix.temperature(&classes, 1.0);
            assert!(t > 0.0 && t.is_finite());
            for nearby in [t * 0.999, t * 1.001] {
                assert!(loss(&prefix, &p, t) <= loss(&prefix, &p, nearby) + 1e-12);
            }
        }
        let one = calibrate(scores.view(), scores.view(), &classes, 1).unwrap();
        let two = calibrate(scores.view(), scores.view(), &classes, 2).unwrap();
        assert_eq!(one, two);
        // The informative prefixes rank their own class first on average.
        assert!(one.0.slice(s![0, .., ..]).iter().any(|&w| w != 0.0));
    }

    #[test]
    fn scores_that_anti_correlate_with_the_classes_keep_the_priors() {
        let (m, n_classes) = (40, 2);
        let p = problem(m, n_classes);
        let classes = Classes {
            codes: &p.codes,
            targets: p.targets.view(),
            log_priors: &p.log_priors,
            shrinkage: 0.3,
        };
        let left_out = Array3::from_shape_fn(
            (1, m, 1),
            |(_, i, _)| {
                if p.codes[i] == 1 {
                    -1.0
                } else {
                    1.0
                }
            },
        );
        let own = left_out.mapv(|s| -s); // the fit itself separates the classes the right way
        let (weights, bias) = calibrate(left_out.view(), own.view(), &classes, 1).unwrap();
        assert!(weights.iter().chain(bias.iter()).all(|&v| v == 0.0));
        let (weights, _) = calibrate(own.view(), own.view(), &classes, 1).unwrap();
        assert!(weights[[0, 0, 1]] > weights[[0, 0, 0]]);
    }

    #[test]
    fn saturated_scores_get_a_finite_temperature() {
        let m = 4;
        let p = problem(m, 2);
        let classes = Classes {
            codes: &p.codes,
            targets: p.targets.view(),
            log_priors: &p.log_priors,
            shrinkage: 0.3,
        };
        let scores =
            Array3::from_shape_fn((1, m, 1), |(_, i, _)| if i % 2 == 1 { 1e9 } else { -1e9 });
        let (weights, _) = calibrate(scores.view(), scores.view(), &classes, 1).unwrap();
        assert!(weights.iter().all(|w| w.is_finite()));
    }

    #[test]
    fn the_solve_inverts_a_small_spd_matrix() {
        let a = [4.0, 1.0, 1.0, 3.0];
        let b_transposed = [1.0, 2.0, 0.0, 1.0]; // right-hand sides (1, 2) and (0, 1)
        let x = solve_spd(&a, &b_transposed, 2, 2);
        for c in 0..2 {
            for i in 0..2 {
                let product: f64 = (0..2).map(|k| a[i * 2 + k] * x[k * 2 + c]).sum();
                assert!((product - b_transposed[c * 2 + i]).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn shapes_that_disagree_are_refused() {
        let p = problem(4, 3);
        let classes = Classes {
            codes: &p.codes,
            targets: p.targets.view(),
            log_priors: &p.log_priors,
            shrinkage: 0.3,
        };
        let scores = Array3::<f64>::zeros((2, 4, 2));
        assert!(calibrate(scores.view(), scores.slice(s![.., ..3, ..]), &classes, 1).is_err());
        let wrong = Array3::<f64>::zeros((2, 4, 3));
        assert!(calibrate(wrong.view(), wrong.view(), &classes, 1).is_err());
    }
}
