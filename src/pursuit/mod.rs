//! The matching-pursuit family on one engine: score every candidate column of the
//! deflated kernel(s), pick the best, deflate, repeat (docs/architecture.md, "The
//! matching-pursuit family").
//!
//! A method is a score over per-column statistics of the current `K_t` plus a deflation.
//! The statistics are general (`Statistic`): linear functionals `c'K_t[:, j]` for fixed
//! vectors `c`, diagonal-weighted quadratic forms `K_t[:, j]'M K_t[:, j]`, the diagonal
//! `K_t[j, j]`, and the cross term `K_{x,t}[:, j]'K_{y,t}[:, j]` of two kernels. As in
//! [`crate::selection`], `K_t = K_0 − Σ_r u_r v_r'` is never written: each pick forms its
//! column from `K_0` and the terms, then updates every statistic in O(m) from one read of
//! each `K_0` with a few right-hand sides, so a pick costs O(m²) whatever the method.
//! Over factors `K_0 = ΦΦ'` in memory the deflation is held in the factor's coordinates
//! instead (`pspace`: `K_t = Φ S_t Φ'`), a pick one pass over each `Φ`.
//!
//! | method ([`Method`])  | score of column `j`                 | deflation              |
//! |----------------------|-------------------------------------|------------------------|
//! | `Matching` (KMP)     | `|c_y'K_t e_j| / ‖K_t e_j‖`         | projection             |
//! | `Components` (SKPCA) | `‖K_t e_j‖² / K_t[j, j]`            | pivot (Schur at `e_i`) |
//! | `Correlation` (SKCCA)| `K_{x,t}e_j'K_{y,t}e_j / (‖·‖‖·‖)`   | projection, per view   |
//! | `Fisher` (MPKFDA)    | the Fisher criteria of the classes  | projection             |
//!
//! `Fisher` is MPKFDA's five criteria with projection deflation written as instances of
//! the general statistics (class-indicator functionals and the `D`-weighted
//! quadratic form): it picks as [`crate::selection::select_classes`] does, which keeps its
//! own implementation of the same statistics for the speed of its fused, class-split passes
//! and its other deflations and stages.

mod engine;
mod pspace;

use crate::error::{Error, Result};
use crate::operator::KernelOperator;
use crate::params::Criterion;
use crate::real::Real;
use crate::selection::FactoredForm;
use engine::PursuitEngine;
use ndarray::ArrayView2;
use pspace::CoordinatesEngine;
use std::sync::atomic::AtomicBool;

/// The methods' names, in [`Method`]'s order, as the bindings take them.
pub const METHODS: [&str; 4] = ["matching", "pca", "correlation", "fisher"];

/// The outcome of a pursuit.
#[derive(Debug, Clone, PartialEq)]
pub struct Pursuit {
    /// Chosen training indices, in selection order.
    pub indices: Vec<usize>,
    /// The score of each pick when it was made (for [`Method::Components`], the drop of
    /// `tr K_t` the pick caused: the reconstruction residual it removed).
    pub scores: Vec<f64>,
    /// True when no admissible column was left before `k` picks.
    pub stopped_early: bool,
    /// Full reads of a kernel made, two kernels counting one each: over a dense kernel or
    /// as terms, one read of each `K_0` to set up and one a pick but the last; over a
    /// factor in memory in the factor's coordinates, the passes over each `Φ`: two to set
    /// up (its `p×p` matrices, then the statistics of `K_0`) and one a pick but the last.
    pub kernel_passes: usize,
}

/// What to pursue over the kernel `K_0` given to [`pursue`].
#[derive(Debug, Clone)]
pub enum Method<'a, F> {
    /// Kernel matching pursuit with pre-fitting: the column whose least-squares fit to
    /// `target` reduces the residual most, projection deflation.
    Matching { target: &'a [F] },
    /// Sparse kernel PCA: the column that removes most of the total squared
    /// reconstruction residual `tr K_t`, pivoted-Cholesky deflation.
    Components,
    /// Sparse kernel CCA: the column whose two views (`K_0` and `second`, on the same
    /// samples) have the largest cosine, `signed` or in absolute value, projection
    /// deflation of each view at the same index.
    Correlation {
        second: KernelOperator<'a, F>,
        signed: bool,
    },
    /// MPKFDA's `criterion` over the classes `classes` (codes `0..C`, every class present,
    /// `C ≥ 2`), projection deflation; [`Criterion::Random`]'s priority order is
    /// [`crate::selection::random_order`]`(m, seed)`, as the selection draws it.
    Fisher {
        classes: &'a [u32],
        criterion: Criterion,
        seed: u64,
    },
}

/// Parameters of a pursuit.
#[derive(Debug, Clone, PartialEq)]
pub struct PursuitParams {
    /// Number of picks (fewer on an early stop).
    pub k: usize,
    /// Relative threshold below which a column counts as explained; `None` takes
    /// [`Real::DEFAULT_TOL`].
    pub tol: Option<f64>,
    /// Threads of the passes over the kernels; results do not depend on it.
    pub n_threads: usize,
}

impl Default for PursuitParams {
    fn default() -> Self {
        PursuitParams {
            k: 10,
            tol: None,
            n_threads: 1,
        }
    }
}

/// Chooses up to `params.k` columns of the symmetric kernel `kernel` (row- or
/// column-major, borrowed, never written) by `method`.
///
/// ```
/// use gkfda::pursuit::{pursue, Method, PursuitParams};
/// use ndarray::array;
///
/// let k = array![[1.0, 0.9, 0.1], [0.9, 1.0, 0.2], [0.1, 0.2, 1.0]];
/// let params = PursuitParams { k: 2, ..PursuitParams::default() };
/// let pursuit = pursue(k.view(), &Method::Components, &params).unwrap();
/// assert_eq!(pursuit.indices, vec![1, 2]);
/// // The first pick removes ‖K e_1‖² / K[1, 1] of the trace.
/// assert!((pursuit.scores[0] - (0.81 + 1.0 + 0.04)).abs() < 1e-12);
/// ```
pub fn pursue<F: Real>(
    kernel: ArrayView2<F>,
    method: &Method<'_, F>,
    params: &PursuitParams,
) -> Result<Pursuit> {
    pursue_with_stop(kernel, method, params, &AtomicBool::new(false))
}

/// [`pursue`], which gives up with [`Error::Interrupted`] once `stop` is raised (it looks
/// before each pick).
pub fn pursue_with_stop<F: Real>(
    kernel: ArrayView2<F>,
    method: &Method<'_, F>,
    params: &PursuitParams,
    stop: &AtomicBool,
) -> Result<Pursuit> {
    let first = KernelOperator::dense_of(&kernel, "K")?;
    pursue_on(first, method, params, stop)
}

/// [`pursue_with_stop`] over any kernel operator: the dense kernel or a factor
/// `K_0 = ΦΦ'` ([`KernelOperator::factored_of`]; for [`Method::Correlation`] both views
/// of one kind), which picks as on the explicit `ΦΦ'` at O(mp) a pick: factors in memory
/// in the factor's coordinates where their `p×p` matrices are affordable
/// ([`FactoredForm::Auto`]).
pub fn pursue_on<F: Real>(
    kernel: KernelOperator<'_, F>,
    method: &Method<'_, F>,
    params: &PursuitParams,
    stop: &AtomicBool,
) -> Result<Pursuit> {
    pursue_in_form(kernel, method, params, stop, FactoredForm::Auto)
}

/// [`pursue_on`] with the form of a pursuit over factors in memory chosen: in the
/// factor's coordinates (`K_t = Φ S_t Φ'`, one pass over each `Φ` a pick) or as rank-one
/// terms of `m`-vectors (`K_t = ΦΦ' − UV'`). `form` is ignored for dense kernels and
/// factors held elsewhere, which keep the terms.
pub fn pursue_in_form<'a, F: Real>(
    kernel: KernelOperator<'a, F>,
    method: &Method<'a, F>,
    params: &PursuitParams,
    stop: &AtomicBool,
    form: FactoredForm,
) -> Result<Pursuit> {
    let m = kernel.m();
    let tol = validate(m, method, params)?;
    let second = match method {
        Method::Correlation { second, .. } => Some(*second),
        _ => None,
    };
    let spec = Spec::of(method, m);
    let in_memory = |kernel: KernelOperator<'a, F>| -> Option<(&'a [F], usize)> {
        match kernel {
            KernelOperator::Factored { factor, p, .. } => Some((factor, p)),
            KernelOperator::Dense { .. }
            | KernelOperator::Sparse(_)
            | KernelOperator::External(_) => None,
        }
    };
    let factors: Option<Vec<(&[F], usize)>> = std::iter::once(kernel)
        .chain(second)
        .map(in_memory)
        .collect();
    if let Some(factors) = factors {
        let widths: Vec<usize> = factors.iter().map(|&(_, p)| p).collect();
        let coordinates = match form {
            FactoredForm::Coordinates => true,
            FactoredForm::Terms => false,
            FactoredForm::Auto => pspace::suits(m, params.k, &widths, &spec),
        };
        if coordinates {
            let mut engine =
                CoordinatesEngine::new(&factors, m, spec, tol, params.n_threads, stop)?;
            let pool = std::sync::Arc::clone(&engine.pool);
            return pool.install(|| engine.run(params.k, stop));
        }
    }
    let mut engine = PursuitEngine::new(kernel, second, spec, tol, params.n_threads, stop)?;
    let pool = std::sync::Arc::clone(&engine.pool);
    pool.install(|| engine.run(params.k, stop))
}

/// A statistic of every column `j` of the current kernel(s).
#[derive(Debug, Clone)]
pub(crate) enum Statistic<F> {
    /// `c'K_t[:, j]` of view `view`.
    Linear { view: usize, c: Vec<F> },
    /// `K_t[:, j]' diag(w) K_t[:, j]` of view `view` (`None`: the identity).
    Quadratic {
        view: usize,
        weights: Option<Vec<F>>,
    },
    /// `K_t[j, j]` of view `view`.
    Diagonal { view: usize },
    /// `K_{0,t}[:, j]'K_{1,t}[:, j]` of the two views.
    Cross,
}

/// How a view's kernel is deflated by the column `τ = K_t[:, i]` of a pick `i`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Deflation {
    /// `K ← (I − qq')K`, `q` the unit `τ` orthogonalised against the earlier `q`s: the
    /// term `u = q`, `v = K_t'q`.
    Projection,
    /// `K ← K − ττ'/τ_i` (Schur at `e_i`, one step of pivoted Cholesky): `u = v = τ/√τ_i`.
    Pivot,
}

/// A method as the engine runs it: its statistics, the score over them, its deflation.
#[derive(Debug, Clone)]
pub(crate) struct Spec<F> {
    pub(crate) statistics: Vec<Statistic<F>>,
    pub(crate) deflation: Deflation,
    pub(crate) views: usize,
    pub(crate) score: Score<F>,
}

/// The score of a column from its statistics (in [`Spec::statistics`]' order), and which
/// columns are admissible: a statistic `guarded` below `tol ×` its value in `K_0` marks a
/// column as numerically explained.
#[derive(Debug, Clone)]
pub(crate) enum Score<F> {
    /// `|ℓ| / √q` of statistics `[ℓ, q]`; guards `q`.
    Matching,
    /// `q / d` of `[q, d]`; guards `d`.
    Components,
    /// `c / √(q_x q_y)` of `[c, q_x, q_y]` (its absolute value unless `signed`); guards
    /// `q_x` and `q_y`.
    Correlation { signed: bool },
    /// Of `[s_0, …, s_{C−1}, d]`: the numerator `Σ_{c<c'} (s_c − s_c')²` over
    /// `d − Σ_c ratio_c s_c²` (`ratio_c = w_c/m_c`), the numerator alone, either negated
    /// (the `reverse` criteria), or `−rank[j]` (`random`); guards `d`, and for `optimal` and
    /// `reverse` the denominator against the same threshold.
    Fisher {
        criterion: Criterion,
        ratios: Vec<F>,
        rank: Vec<usize>,
    },
}

impl<F: Real> Spec<F> {
    fn of(method: &Method<'_, F>, m: usize) -> Self {
        match method {
            Method::Matching { target } => Spec {
                statistics: vec![
                    Statistic::Linear {
                        view: 0,
                        c: target.to_vec(),
                    },
                    Statistic::Quadratic {
                        view: 0,
                        weights: None,
                    },
                ],
                deflation: Deflation::Projection,
                views: 1,
                score: Score::Matching,
            },
            Method::Components => Spec {
                statistics: vec![
                    Statistic::Quadratic {
                        view: 0,
                        weights: None,
                    },
                    Statistic::Diagonal { view: 0 },
                ],
                deflation: Deflation::Pivot,
                views: 1,
                score: Score::Components,
            },
            Method::Correlation { signed, .. } => Spec {
                statistics: vec![
                    Statistic::Cross,
                    Statistic::Quadratic {
                        view: 0,
                        weights: None,
                    },
                    Statistic::Quadratic {
                        view: 1,
                        weights: None,
                    },
                ],
                deflation: Deflation::Projection,
                views: 2,
                score: Score::Correlation { signed: *signed },
            },
            Method::Fisher {
                classes,
                criterion,
                seed,
            } => {
                let n_classes = classes.iter().max().map_or(0, |&c| c as usize + 1);
                let mut counts = vec![0usize; n_classes];
                classes.iter().for_each(|&c| counts[c as usize] += 1);
                // `w_c = H/m_c`, `H` the harmonic mean of the class sizes: the two-class
                // `2m₋/m` on the positive class and `2m₊/m` on the negative.
                let harmonic =
                    n_classes as f64 / counts.iter().map(|&n| 1.0 / n as f64).sum::<f64>();
                let weight_of = |c: usize| harmonic / counts[c] as f64;
                let mut statistics: Vec<Statistic<F>> = (0..n_classes)
                    .map(|c| Statistic::Linear {
                        view: 0,
                        c: (0..m)
                            .map(|j| F::from_f64(f64::from(u8::from(classes[j] as usize == c))))
                            .collect(),
                    })
                    .collect();
                statistics.push(Statistic::Quadratic {
                    view: 0,
                    weights: Some(
                        classes
                            .iter()
                            .map(|&c| F::from_f64(weight_of(c as usize)))
                            .collect(),
                    ),
                });
                let ratios = (0..n_classes)
                    .map(|c| F::from_f64(weight_of(c) / counts[c] as f64))
                    .collect();
                Spec {
                    statistics,
                    deflation: Deflation::Projection,
                    views: 1,
                    score: Score::Fisher {
                        criterion: *criterion,
                        ratios,
                        rank: priority_ranks(*criterion, m, *seed),
                    },
                }
            }
        }
    }
}

impl<F: Real> Score<F> {
    /// The best admissible of `columns`, each `(j, at)`: column `j`, whose statistic `s` is
    /// `values[s][at]` (initially `initial[s][j]`); ties to the first, a NaN score (from a
    /// non-finite kernel) no candidate.
    pub(crate) fn best(
        &self,
        columns: impl Iterator<Item = (usize, usize)>,
        values: &[&[F]],
        initial: &[Vec<F>],
        tol: F,
    ) -> Option<(usize, F)> {
        let mut now = vec![F::zero(); values.len()];
        let mut at_start = vec![F::zero(); values.len()];
        let mut best: Option<(usize, F)> = None;
        for (j, at) in columns {
            for s in 0..values.len() {
                now[s] = values[s][at];
                at_start[s] = initial[s][j];
            }
            let Some(score) = self
                .of(j, &now, &at_start, tol)
                .filter(|score| !score.is_nan())
            else {
                continue;
            };
            if best.is_none_or(|(_, top)| score > top) {
                best = Some((j, score));
            }
        }
        best
    }

    /// The score of column `j`, whose statistics are `values` (initially `initial`), or
    /// `None` when it is not admissible.
    pub(crate) fn of(&self, j: usize, values: &[F], initial: &[F], tol: F) -> Option<F> {
        let above = |s: usize| values[s] > tol * initial[s];
        match self {
            Score::Matching => above(1).then(|| values[0].abs() / values[1].sqrt()),
            Score::Components => above(1).then(|| values[0] / values[1]),
            Score::Correlation { signed } => (above(1) && above(2)).then(|| {
                let cosine = values[0] / (values[1] * values[2]).sqrt();
                if *signed {
                    cosine
                } else {
                    cosine.abs()
                }
            }),
            Score::Fisher {
                criterion,
                ratios,
                rank,
            } => {
                let n_classes = ratios.len();
                let d = n_classes;
                if !above(d) {
                    return None;
                }
                let sums = &values[..n_classes];
                let mean = sums.iter().copied().sum::<F>() / F::from_f64(n_classes as f64);
                let spread: F = sums.iter().map(|&s| (s - mean) * (s - mean)).sum();
                // `Σ_{c<c'} (s_c − s_c')² = C Σ_c (s_c − s̄)²`.
                let numerator = F::from_f64(n_classes as f64) * spread;
                let within = sums
                    .iter()
                    .zip(ratios)
                    .fold(values[d], |rest, (&s, &ratio)| rest - ratio * s * s);
                let place = rank.get(j).copied().unwrap_or(0);
                criterion.score(numerator, within, tol * initial[d], place)
            }
        }
    }
}

/// Each column's place in [`Criterion::Random`]'s priority order (empty for the others).
fn priority_ranks(criterion: Criterion, m: usize, seed: u64) -> Vec<usize> {
    if criterion != Criterion::Random {
        return Vec::new();
    }
    let mut rank = vec![0; m];
    for (position, i) in crate::selection::random_order(m, seed)
        .into_iter()
        .enumerate()
    {
        rank[i] = position;
    }
    rank
}

/// Checks `method` and `params` against a kernel of order `m`; the resolved tolerance.
fn validate<F: Real>(m: usize, method: &Method<'_, F>, params: &PursuitParams) -> Result<F> {
    if params.k == 0 || params.k > m {
        return Err(Error::invalid(
            "k",
            format!(
                "must be between 1 and {m} (the sample size), got {}",
                params.k
            ),
        ));
    }
    if params.n_threads == 0 {
        return Err(Error::invalid("n_jobs", "must be at least 1 thread"));
    }
    let tol = params.tol.unwrap_or(F::DEFAULT_TOL);
    if !(tol.is_finite() && tol >= 0.0) {
        return Err(Error::invalid(
            "tol",
            format!("must be a finite non-negative number, got {tol}"),
        ));
    }
    match method {
        Method::Matching { target } => {
            if target.len() != m {
                return Err(Error::invalid(
                    "y",
                    format!("has {} values but the kernel has {m} rows", target.len()),
                ));
            }
            if !target.iter().all(|v| v.is_finite()) {
                return Err(Error::invalid("y", "must be finite"));
            }
        }
        Method::Correlation { second, .. } => {
            if second.m() != m {
                return Err(Error::invalid(
                    "second_kernel",
                    format!(
                        "must have the first kernel's {m} samples, got {}",
                        second.m()
                    ),
                ));
            }
        }
        Method::Fisher { classes, .. } => {
            if classes.len() != m {
                return Err(Error::invalid(
                    "y",
                    format!("has {} labels but the kernel has {m} rows", classes.len()),
                ));
            }
            crate::params::validate_classes(classes)?;
        }
        Method::Components => {}
    }
    Ok(F::from_f64(tol))
}

#[cfg(test)]
mod tests;
