//! Test helpers shared by the integration tests and the unit tests of the selection and passes: seeded
//! problems and explicit deflation, a dense oracle that writes every deflated kernel.

#![allow(dead_code)]

use gkfda::kernel::{gram, Kernel};
use gkfda::selection::{select, select_classes, Selection};
use gkfda::{Criterion, Deflation, GreedyParams, Real, Result};
use ndarray::{Array2, ArrayView2};

/// An `m×m` symmetric kernel of varied entries in `[0, 1)`, row-major.
pub fn symmetric_kernel(m: usize) -> Vec<f64> {
    (0..m * m)
        .map(|t| {
            let (i, l) = (t / m, t % m);
            ((i.min(l) * 7919 + i.max(l) * 31) % 97) as f64 / 97.0
        })
        .collect()
}

/// Uniform numbers in `[0, 1)` from a seeded linear congruential generator.
pub fn uniform_stream(seed: u64) -> impl FnMut() -> f64 {
    let mut state = seed;
    move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    }
}

pub fn problem(m: usize, d: usize, seed: u64) -> (Array2<f64>, Vec<bool>) {
    let mut uniform = uniform_stream(seed.wrapping_add(1));
    let x = Array2::from_shape_fn((m, d), |_| 2.0 * uniform() - 1.0);
    let labels = (0..m)
        .map(|i| x[[i, 0]] + 0.5 * (3.0 * x[[i, 1]]).sin() + 0.3 * (uniform() - 0.5) > 0.0)
        .collect();
    (
        gram(x.view(), &Kernel::Rbf { gamma: 1.5 }, 1).unwrap(),
        labels,
    )
}

/// Labels of a problem: two-class (`bool`, `true` as class code 1) or class codes.
pub trait Labels {
    /// The labels as class codes.
    fn codes(&self) -> Vec<u32>;
    /// The engine's selection for these labels: [`select`] for `bool`s, else
    /// [`select_classes`].
    fn select<F: Real>(&self, kernel: ArrayView2<F>, params: &GreedyParams) -> Result<Selection>;
}

impl Labels for [bool] {
    fn codes(&self) -> Vec<u32> {
        self.iter().map(|&p| u32::from(p)).collect()
    }
    fn select<F: Real>(&self, kernel: ArrayView2<F>, params: &GreedyParams) -> Result<Selection> {
        select(kernel, self, params)
    }
}

impl Labels for [u32] {
    fn codes(&self) -> Vec<u32> {
        self.to_vec()
    }
    fn select<F: Real>(&self, kernel: ArrayView2<F>, params: &GreedyParams) -> Result<Selection> {
        select_classes(kernel, self, params)
    }
}

impl<T> Labels for Vec<T>
where
    [T]: Labels,
{
    fn codes(&self) -> Vec<u32> {
        self.as_slice().codes()
    }
    fn select<F: Real>(&self, kernel: ArrayView2<F>, params: &GreedyParams) -> Result<Selection> {
        self.as_slice().select(kernel, params)
    }
}

/// Explicit deflation, straight from the equations: the oracle of the implicit engines. It
/// holds `K_t` itself. For `C` classes of sizes `m_c`, `D_j = w_c = H/m_c` on class `c` (`H`
/// the harmonic mean of the sizes), and column `c` of `K_t` scores `Σ_{c<c'} (s_c − s_c')²`
/// over `Σ_j D_j c_j² − Σ_c (w_c/m_c) s_c²`, `s_c` its sum over class `c`.
pub struct ExplicitKernel {
    pub kt: Array2<f64>,
    classes: Vec<u32>,
    sizes: Vec<f64>,
    class_weight: Vec<f64>,
    /// The earlier unit directions of the `ortho-*` deflations.
    directions: Vec<Vec<f64>>,
}

impl ExplicitKernel {
    pub fn new(kernel: &Array2<f64>, classes: &[u32]) -> Self {
        let n_classes = classes.iter().max().map_or(0, |&c| c as usize + 1);
        let mut sizes = vec![0.0f64; n_classes];
        classes.iter().for_each(|&c| sizes[c as usize] += 1.0);
        let harmonic = n_classes as f64 / sizes.iter().map(|size| 1.0 / size).sum::<f64>();
        let class_weight = sizes.iter().map(|size| harmonic / size).collect();
        ExplicitKernel {
            kt: kernel.clone(),
            classes: classes.to_vec(),
            sizes,
            class_weight,
            directions: Vec::new(),
        }
    }

    /// `(numerator, denominator, d)` of column `i` of `K_t`.
    pub fn stats(&self, i: usize) -> (f64, f64, f64) {
        let (m, n_classes) = (self.kt.nrows(), self.sizes.len());
        let col = self.kt.column(i);
        let mut sums = vec![0.0f64; n_classes];
        (0..m).for_each(|j| sums[self.classes[j] as usize] += col[j]);
        let d: f64 = (0..m)
            .map(|j| self.class_weight[self.classes[j] as usize] * col[j] * col[j])
            .sum();
        let mut numerator = 0.0;
        for c in 0..n_classes {
            for other in c + 1..n_classes {
                numerator += (sums[c] - sums[other]).powi(2);
            }
        }
        let scatter: f64 = (0..n_classes)
            .map(|c| self.class_weight[c] / self.sizes[c] * sums[c] * sums[c])
            .sum();
        (numerator, d - scatter, d)
    }

    /// The score (higher is better) of column `i` by `criterion` (not `random`).
    pub fn score(&self, i: usize, criterion: Criterion) -> f64 {
        let (numerator, denominator, _) = self.stats(i);
        match criterion {
            Criterion::Optimal => numerator / denominator,
            Criterion::Pseudo => numerator,
            Criterion::Reverse => -(numerator / denominator),
            Criterion::ReversePseudo => -numerator,
            Criterion::Random => f64::NAN,
        }
    }

    /// Deflates `K_t` by its column `i` with `deflation`; false (and nothing deflated) when
    /// an `ortho-*` residual is numerically zero (below `tol`).
    pub fn deflate(&mut self, i: usize, deflation: Deflation, tol: f64) -> bool {
        let m = self.kt.nrows();
        let column = self.kt.column(i).to_vec();
        let norm = column.iter().map(|v| v * v).sum::<f64>().sqrt();
        let tau: Vec<f64> = column.iter().map(|v| v / norm).collect();
        let mut x = tau.clone();
        if matches!(
            deflation,
            Deflation::OrthoHotelling | Deflation::OrthoProjection | Deflation::OrthoSchur
        ) {
            for q in &self.directions {
                let c: f64 = q.iter().zip(&tau).map(|(a, b)| a * b).sum();
                x.iter_mut().zip(q).for_each(|(x, q)| *x -= c * q);
            }
            let n2: f64 = x.iter().map(|v| v * v).sum();
            if n2 <= tol {
                return false;
            }
            x.iter_mut().for_each(|v| *v /= n2.sqrt());
            self.directions.push(x.clone());
        }
        let xv = ndarray::Array1::from(x);
        let kt = &self.kt;
        let ktx = kt.dot(&xv);
        let kttx = kt.t().dot(&xv);
        let lambda = xv.dot(&ktx);
        let outer = |u: &ndarray::Array1<f64>, v: &ndarray::Array1<f64>| {
            Array2::from_shape_fn((m, m), |(r, c)| u[r] * v[c])
        };
        use Deflation::*;
        match deflation {
            None => {}
            Hotelling | OrthoHotelling => self.kt = kt - &(outer(&xv, &xv) * lambda),
            Projection | OrthoProjection => self.kt = kt - &outer(&xv, &kttx),
            Schur | OrthoSchur if lambda > 0.0 => self.kt = kt - &(outer(&ktx, &kttx) / lambda),
            Schur | OrthoSchur => {}
        }
        true
    }
}

/// The selection of explicit deflation ([`ExplicitKernel`]): the oracle of the engines.
pub fn explicit_select<L: Labels + ?Sized>(
    kernel: &Array2<f64>,
    labels: &L,
    params: &GreedyParams,
) -> Vec<usize> {
    let m = kernel.nrows();
    let tol = params.tol.unwrap_or(f64::DEFAULT_TOL);
    let mut oracle = ExplicitKernel::new(kernel, &labels.codes());
    let threshold: Vec<f64> = (0..m).map(|i| tol * oracle.stats(i).2).collect();
    let (mut blocked, mut chosen) = (vec![false; m], Vec::new());
    while chosen.len() < params.k {
        let mut scored = Vec::new();
        for i in (0..m).filter(|&i| !blocked[i]) {
            let (_, denominator, d) = oracle.stats(i);
            if d <= threshold[i] || (params.criterion.uses_ratio() && denominator <= threshold[i]) {
                continue;
            }
            assert!(params.criterion != Criterion::Random, "not tested here");
            scored.push((oracle.score(i, params.criterion), i));
        }
        if scored.is_empty() {
            break;
        }
        scored.sort_by(|(sa, ia), (sb, ib)| sb.total_cmp(sa).then(ia.cmp(ib)));
        let take = params.stages.min(params.k - chosen.len());
        for (s, &(_, i)) in scored.iter().take(take).enumerate() {
            blocked[i] = true;
            if s > 0 && oracle.stats(i).2 <= threshold[i] {
                continue;
            }
            if oracle.deflate(i, params.deflation, tol) {
                chosen.push(i);
            }
        }
    }
    chosen
}

/// The criterion's score (higher is better) of every column of `kernel` deflated
/// explicitly by `prefix`, in order.
pub fn explicit_scores(
    kernel: &Array2<f64>,
    codes: &[u32],
    criterion: Criterion,
    deflation: Deflation,
    prefix: &[usize],
) -> Vec<f64> {
    let mut oracle = ExplicitKernel::new(kernel, codes);
    for &i in prefix {
        oracle.deflate(i, deflation, f64::DEFAULT_TOL);
    }
    (0..kernel.nrows())
        .map(|i| oracle.score(i, criterion))
        .collect()
}

/// Every scored criterion × deflation × stage count picks what explicit deflation picks.
pub fn assert_selects_as_explicit<L: Labels + ?Sized>(
    kernel: &Array2<f64>,
    labels: &L,
    params: &GreedyParams,
    label: &str,
) {
    let expected = explicit_select(kernel, labels, params);
    let actual = labels.select(kernel.view(), params).unwrap().indices;
    let GreedyParams {
        criterion,
        deflation,
        stages,
        ..
    } = params;
    assert_eq!(
        actual, expected,
        "{criterion:?} {deflation:?} S={stages} {label}"
    );
}

pub fn assert_matches_explicit<L: Labels + ?Sized>(
    kernel: &Array2<f64>,
    labels: &L,
    k: usize,
    stage_counts: &[usize],
    label: &str,
) {
    let criteria: Vec<Criterion> = Criterion::ALL
        .iter()
        .map(|&(c, _)| c)
        .filter(|&c| c != Criterion::Random)
        .collect();
    let deflations: Vec<Deflation> = Deflation::ALL.iter().map(|&(d, _)| d).collect();
    let cases = (&criteria[..], &deflations[..], stage_counts);
    assert_cases_match_explicit(kernel, labels, k, cases, label);
}

/// Every criterion × deflation × stage count of `cases` selects as explicit deflation.
pub fn assert_cases_match_explicit<L: Labels + ?Sized>(
    kernel: &Array2<f64>,
    labels: &L,
    k: usize,
    (criteria, deflations, stage_counts): (&[Criterion], &[Deflation], &[usize]),
    label: &str,
) {
    for &criterion in criteria {
        for &deflation in deflations {
            for &stages in stage_counts {
                let params = GreedyParams {
                    k,
                    criterion,
                    deflation,
                    stages,
                    n_threads: 2,
                    ..GreedyParams::default()
                };
                assert_selects_as_explicit(kernel, labels, &params, label);
            }
        }
    }
}

/// The problem with the positive class first, as `GreedyKFDA.fit` orders its kernel.
pub fn class_sorted_problem(m: usize, d: usize, seed: u64) -> (Array2<f64>, Vec<bool>) {
    let (kernel, positive) = problem(m, d, seed);
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by_key(|&i| !positive[i]);
    let sorted = Array2::from_shape_fn((m, m), |(i, j)| kernel[[order[i], order[j]]]);
    (sorted, order.iter().map(|&i| positive[i]).collect())
}

/// The `pseudo` criterion's parameters, on two threads.
pub fn pseudo_params(k: usize, deflation: Deflation, stages: usize) -> GreedyParams {
    GreedyParams {
        k,
        criterion: Criterion::Pseudo,
        deflation,
        stages,
        n_threads: 2,
        ..GreedyParams::default()
    }
}

/// A kernel ordered by class and the one-vs-rest labels of its `classes` classes.
pub fn one_vs_rest_problem(m: usize, classes: usize, seed: u64) -> (Array2<f64>, Vec<Vec<bool>>) {
    let (kernel, codes) = classes_problem(m, classes, seed, true);
    let labels = (0..classes as u32)
        .map(|c| codes.iter().map(|&code| code == c).collect())
        .collect();
    (kernel, labels)
}

/// A `classes`-class problem: its kernel and class codes, the samples ordered by class
/// when `sorted` (as `GreedyKFDA.fit` orders them), else in the order drawn.
pub fn classes_problem(
    m: usize,
    classes: usize,
    seed: u64,
    sorted: bool,
) -> (Array2<f64>, Vec<u32>) {
    let mut uniform = uniform_stream(seed.wrapping_add(11));
    let x = Array2::from_shape_fn((m, 3), |_| 2.0 * uniform() - 1.0);
    // Class c: the angle of (x0, x1) in the c-th of `classes` sectors, blurred by x2.
    let class_of = |i: usize| {
        let angle = x[[i, 1]].atan2(x[[i, 0]]) + 0.4 * x[[i, 2]] + std::f64::consts::PI;
        (((angle / std::f64::consts::TAU * classes as f64) as usize) % classes) as u32
    };
    let mut order: Vec<usize> = (0..m).collect();
    if sorted {
        order.sort_by_key(|&i| class_of(i));
    }
    let x = x.select(ndarray::Axis(0), &order);
    let codes = order.iter().map(|&i| class_of(i)).collect();
    (
        gram(x.view(), &Kernel::Rbf { gamma: 1.5 }, 1).unwrap(),
        codes,
    )
}

pub fn problems_of<'l>(
    labels: &'l [Vec<bool>],
    params: &GreedyParams,
) -> Vec<(&'l [bool], GreedyParams)> {
    labels
        .iter()
        .map(|positive| (positive.as_slice(), params.clone()))
        .collect()
}
