//! Test helpers shared by the integration tests and the unit tests of the selection and passes: seeded
//! problems and explicit deflation, a dense oracle that writes every deflated kernel.

#![allow(dead_code)]

use gkfda::kernel::{gram, Kernel};
use gkfda::selection::select;
use gkfda::{Criterion, Deflation, GreedyParams, Real};
use ndarray::Array2;

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

/// Explicit deflation, straight from the equations: the oracle of the implicit engine.
pub fn explicit_select(
    kernel: &Array2<f64>,
    positive: &[bool],
    params: &GreedyParams,
) -> Vec<usize> {
    let m = kernel.nrows();
    let tol = params.tol.unwrap_or(f64::DEFAULT_TOL);
    let m_pos = positive.iter().filter(|&&p| p).count() as f64;
    let m_neg = m as f64 - m_pos;
    let mf = m as f64;
    let weight: Vec<f64> = positive
        .iter()
        .map(|&p| {
            if p {
                2.0 * m_neg / mf
            } else {
                2.0 * m_pos / mf
            }
        })
        .collect();
    let (alpha, beta) = (2.0 * m_neg / (mf * m_pos), 2.0 * m_pos / (mf * m_neg));
    let stats = |kt: &Array2<f64>, i: usize| {
        let col = kt.column(i);
        let p: f64 = (0..m).filter(|&j| positive[j]).map(|j| col[j]).sum();
        let n: f64 = (0..m).filter(|&j| !positive[j]).map(|j| col[j]).sum();
        let d: f64 = (0..m).map(|j| weight[j] * col[j] * col[j]).sum();
        (p, n, d)
    };
    let mut kt = kernel.clone();
    let threshold: Vec<f64> = (0..m).map(|i| tol * stats(&kt, i).2).collect();
    let (mut blocked, mut chosen, mut directions) =
        (vec![false; m], Vec::new(), Vec::<Vec<f64>>::new());
    while chosen.len() < params.k {
        let mut scored = Vec::new();
        for i in (0..m).filter(|&i| !blocked[i]) {
            let (p, n, d) = stats(&kt, i);
            let (a, denominator) = (p - n, d - alpha * p * p - beta * n * n);
            if d <= threshold[i]
                || (matches!(params.criterion, Criterion::Optimal | Criterion::Reverse)
                    && denominator <= threshold[i])
            {
                continue;
            }
            let score = match params.criterion {
                Criterion::Optimal => a * a / denominator,
                Criterion::Pseudo => a * a,
                Criterion::Reverse => -(a * a / denominator),
                Criterion::ReversePseudo => -(a * a),
                Criterion::Random => unreachable!("not tested here"),
            };
            scored.push((score, i));
        }
        if scored.is_empty() {
            break;
        }
        scored.sort_by(|(sa, ia), (sb, ib)| sb.total_cmp(sa).then(ia.cmp(ib)));
        let take = params.stages.min(params.k - chosen.len());
        for (s, &(_, i)) in scored.iter().take(take).enumerate() {
            blocked[i] = true;
            let column = kt.column(i).to_vec();
            if s > 0 && stats(&kt, i).2 <= threshold[i] {
                continue;
            }
            let norm = column.iter().map(|v| v * v).sum::<f64>().sqrt();
            let tau: Vec<f64> = column.iter().map(|v| v / norm).collect();
            let mut x = tau.clone();
            if matches!(
                params.deflation,
                Deflation::OrthoHotelling | Deflation::OrthoProjection | Deflation::OrthoSchur
            ) {
                for q in &directions {
                    let c: f64 = q.iter().zip(&tau).map(|(a, b)| a * b).sum();
                    x.iter_mut().zip(q).for_each(|(x, q)| *x -= c * q);
                }
                let n2: f64 = x.iter().map(|v| v * v).sum();
                if n2 <= tol {
                    continue;
                }
                x.iter_mut().for_each(|v| *v /= n2.sqrt());
                directions.push(x.clone());
            }
            chosen.push(i);
            let xv = ndarray::Array1::from(x);
            let ktx = kt.dot(&xv);
            let kttx = kt.t().dot(&xv);
            let lambda = xv.dot(&ktx);
            let outer = |u: &ndarray::Array1<f64>, v: &ndarray::Array1<f64>| {
                Array2::from_shape_fn((m, m), |(r, c)| u[r] * v[c])
            };
            use Deflation::*;
            match params.deflation {
                None => {}
                Hotelling | OrthoHotelling => kt = &kt - &(outer(&xv, &xv) * lambda),
                Projection | OrthoProjection => kt = &kt - &outer(&xv, &kttx),
                Schur | OrthoSchur if lambda > 0.0 => kt = &kt - &(outer(&ktx, &kttx) / lambda),
                Schur | OrthoSchur => {}
            }
        }
    }
    chosen
}

/// Every scored criterion × deflation × stage count picks what explicit deflation picks.
pub fn assert_selects_as_explicit(
    kernel: &Array2<f64>,
    positive: &[bool],
    params: &GreedyParams,
    label: &str,
) {
    let expected = explicit_select(kernel, positive, params);
    let actual = select(kernel.view(), positive, params).unwrap().indices;
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

pub fn assert_matches_explicit(
    kernel: &Array2<f64>,
    positive: &[bool],
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
    assert_cases_match_explicit(kernel, positive, k, cases, label);
}

/// Every criterion × deflation × stage count of `cases` selects as explicit deflation.
pub fn assert_cases_match_explicit(
    kernel: &Array2<f64>,
    positive: &[bool],
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
                assert_selects_as_explicit(kernel, positive, &params, label);
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
    let mut uniform = uniform_stream(seed.wrapping_add(11));
    let x = Array2::from_shape_fn((m, 3), |_| 2.0 * uniform() - 1.0);
    // Class c: the angle of (x0, x1) in the c-th of `classes` sectors, blurred by x2.
    let class_of = |i: usize| {
        let angle = x[[i, 1]].atan2(x[[i, 0]]) + 0.4 * x[[i, 2]] + std::f64::consts::PI;
        ((angle / std::f64::consts::TAU * classes as f64) as usize) % classes
    };
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by_key(|&i| class_of(i));
    let sorted = x.select(ndarray::Axis(0), &order);
    let labels = (0..classes)
        .map(|c| order.iter().map(|&i| class_of(i) == c).collect())
        .collect();
    (
        gram(sorted.view(), &Kernel::Rbf { gamma: 1.5 }, 1).unwrap(),
        labels,
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
