//! The pursuits of the matching-pursuit family on a factor against the dense engine.

use crate::common::ExplicitKernel;
use crate::factors::*;
use gkfda::operator::KernelOperator;
use gkfda::pursuit::{pursue, pursue_in_form, pursue_on, Method, PursuitParams};
use gkfda::selection::FactoredForm;
use gkfda::{Criterion, Deflation, Real};
use ndarray::Array2;
use std::sync::atomic::AtomicBool;

/// The score of every column of `kernel` (and `second`, for the correlations) deflated
/// explicitly by `prefix` as the pursuit `name` deflates (projection, or pivot for
/// `pca`): NaN for the chosen and inadmissible columns (`tests/common`'s oracle for the
/// Fisher criteria).
fn explicit_pursuit_scores(
    (kernel, second): (&Array2<f64>, &Array2<f64>),
    name: &str,
    (target, codes): (&[f64], &[u32]),
    prefix: &[usize],
) -> Vec<f64> {
    let m = kernel.nrows();
    let tol = f64::DEFAULT_TOL;
    if let Some(criterion) = name.strip_prefix("fisher ") {
        let criterion = Criterion::ALL
            .map(|(c, _)| c)
            .into_iter()
            .find(|c| format!("{c:?}") == criterion)
            .expect("a criterion");
        if criterion == Criterion::Random {
            return vec![f64::NAN; m];
        }
        let mut oracle = ExplicitKernel::new(kernel, codes);
        for &i in prefix {
            oracle.deflate(i, Deflation::Projection, tol);
        }
        return (0..m)
            .map(|i| {
                let d = oracle.stats(i).2;
                let d0: f64 = ExplicitKernel::new(kernel, codes).stats(i).2;
                if prefix.contains(&i) || d <= tol * d0 {
                    f64::NAN
                } else {
                    oracle.score(i, criterion)
                }
            })
            .collect();
    }
    let project = |k: &Array2<f64>, i: usize| {
        let tau = k.column(i).to_owned();
        let q = &tau / tau.dot(&tau).sqrt();
        let qk = q.dot(k);
        k - &(q
            .insert_axis(ndarray::Axis(1))
            .dot(&qk.insert_axis(ndarray::Axis(0))))
    };
    let (mut kx, mut ky) = (kernel.clone(), second.clone());
    for &i in prefix {
        if name == "pca" {
            let u = kx.column(i).to_owned() / kx[[i, i]].sqrt();
            kx = &kx
                - &(u
                    .clone()
                    .insert_axis(ndarray::Axis(1))
                    .dot(&u.insert_axis(ndarray::Axis(0))));
        } else {
            kx = project(&kx, i);
            ky = project(&ky, i);
        }
    }
    let norm2 = |k: &Array2<f64>, j: usize| k.column(j).dot(&k.column(j));
    let y = ndarray::ArrayView1::from(target);
    (0..m)
        .map(|j| {
            let (qx, qy) = (norm2(&kx, j), norm2(&ky, j));
            let (qx0, qy0) = (norm2(kernel, j), norm2(second, j));
            let score = match name {
                _ if prefix.contains(&j) => None,
                "matching" => (qx > tol * qx0).then(|| kx.column(j).dot(&y).abs() / qx.sqrt()),
                "pca" => (kx[[j, j]] > tol * kernel[[j, j]]).then(|| qx / kx[[j, j]]),
                _ => (qx > tol * qx0 && qy > tol * qy0).then(|| {
                    let cosine = kx.column(j).dot(&ky.column(j)) / (qx * qy).sqrt();
                    if name == "correlation" {
                        cosine
                    } else {
                        cosine.abs()
                    }
                }),
            };
            score.unwrap_or(f64::NAN)
        })
        .collect()
}

/// Whether two pursuits first part where their picks' scores tie to the relative
/// `tolerance` on the explicit kernels deflated by the picks before (picks compared as
/// their `reps`).
fn pursuits_tie(
    kernels: (&Array2<f64>, &Array2<f64>),
    name: &str,
    problem: (&[f64], &[u32]),
    (first, second): (&[usize], &[usize]),
    reps: &[usize],
    tolerance: f64,
) -> bool {
    let Some(t) = (0..first.len().min(second.len())).find(|&t| reps[first[t]] != reps[second[t]])
    else {
        return false; // one is a prefix of the other: an early stop, not a tie
    };
    let scores = explicit_pursuit_scores(kernels, name, problem, &first[..t]);
    let (a, b) = (scores[first[t]], scores[second[t]]);
    a.is_finite()
        && b.is_finite()
        && (a - b).abs() <= tolerance * a.abs().max(b.abs()).max(f64::MIN_POSITIVE)
}

/// The pursuits on factors in memory, in the factor's coordinates, against the dense
/// engine on the explicit `ΦΦ'` and against the terms form on the same factor: every
/// method × float64 and float32 × one and two threads × four factors (full rank, rank 5
/// and rank 3 below `k`, duplicated rows), `m` past a block of rows. The coordinates' picks
/// do not depend on the thread count; they equal the others' wherever the scores do not
/// tie (past the rank of a rank-deficient factor, every column of the ratio scores ties:
/// see `agree`), and where they part, the parting is a tie on the explicit kernel.
#[test]
fn factored_pursuits_pick_as_dense() {
    fn run<F: Real>(label: &str) -> usize {
        let m = 1_300;
        let single = std::mem::size_of::<F>() == 4;
        let tolerance = if single { FLOAT32_TIE } else { 1e-6 };
        let (mut compared, mut as_dense, mut as_terms, mut tied) = (0, 0, 0, 0);
        for kind in 0..4 {
            let seed = 300 + kind as u64;
            let phi = if kind == 3 {
                random_factor(m, 20, 3, 40, seed)
            } else {
                factor(m, 20, kind, seed)
            };
            let psi = factor(m, 16, (kind + 1) % 3, seed + 1);
            let (rank, second_rank) = (numerical_rank(&phi), numerical_rank(&psi));
            let reps = representatives(&phi);
            let reps_both: Vec<usize> = {
                let both = ndarray::concatenate![ndarray::Axis(1), phi, psi];
                representatives(&both)
            };
            let (kernel, second) = (explicit(&phi), explicit(&psi));
            let (phi_f, psi_f): (Array2<F>, Array2<F>) =
                (phi.mapv(F::from_f64), psi.mapv(F::from_f64));
            let (kernel_f, second_f): (Array2<F>, Array2<F>) =
                (kernel.mapv(F::from_f64), second.mapv(F::from_f64));
            let operator = KernelOperator::factored_of(&phi_f.view(), "factor").unwrap();
            let second_factored = KernelOperator::factored_of(&psi_f.view(), "second").unwrap();
            let second_dense = KernelOperator::dense_of(&second_f.view(), "second").unwrap();
            let target64: Vec<f64> = phi.column(0).iter().map(|v| v.sin()).collect();
            let target: Vec<F> = target64.iter().map(|&v| F::from_f64(v)).collect();
            let codes = classes(m, 3, false, seed);
            let mut cases: Vec<(String, Method<'_, F>, Method<'_, F>)> = vec![
                (
                    "matching".into(),
                    Method::Matching { target: &target },
                    Method::Matching { target: &target },
                ),
                ("pca".into(), Method::Components, Method::Components),
            ];
            for (name, signed) in [("correlation", true), ("correlation-abs", false)] {
                cases.push((
                    name.into(),
                    Method::Correlation {
                        second: second_dense,
                        signed,
                    },
                    Method::Correlation {
                        second: second_factored,
                        signed,
                    },
                ));
            }
            for criterion in Criterion::ALL.map(|(c, _)| c) {
                let fisher = Method::Fisher {
                    classes: &codes,
                    criterion,
                    seed: 4,
                };
                cases.push((format!("fisher {criterion:?}"), fisher.clone(), fisher));
            }
            for (name, dense_method, factored_method) in &cases {
                let stop = AtomicBool::new(false);
                let in_form = |form: FactoredForm, n_threads: usize| {
                    let params = PursuitParams {
                        k: 10,
                        n_threads,
                        ..PursuitParams::default()
                    };
                    pursue_in_form(operator, factored_method, &params, &stop, form).unwrap()
                };
                let params = PursuitParams {
                    k: 10,
                    ..PursuitParams::default()
                };
                let dense = pursue(kernel_f.view(), dense_method, &params).unwrap();
                let terms = in_form(FactoredForm::Terms, 1);
                let coordinates = in_form(FactoredForm::Coordinates, 1);
                let threaded = in_form(FactoredForm::Coordinates, 2);
                assert_eq!(
                    coordinates, threaded,
                    "{label} kind={kind} {name}: thread count"
                );
                // `pursue_on` takes the coordinates for a factor this narrow.
                let auto = pursue_on(operator, factored_method, &params, &stop).unwrap();
                assert_eq!(auto, coordinates, "{label} kind={kind} {name}: auto");
                let two_views = name.starts_with("correlation");
                let views = 1 + usize::from(two_views);
                if !coordinates.stopped_early {
                    // Two passes over each `Φ` to set up, one a pick but the last.
                    assert_eq!(coordinates.kernel_passes, views * (2 + params.k - 1));
                }
                let reps = if two_views { &reps_both } else { &reps };
                let same = |p: &[usize]| -> Vec<usize> { p.iter().map(|&i| reps[i]).collect() };
                // A rank-one residual ties every column for the scores that are ratios of
                // forms of the same degree (KMP, SKPCA, the Fisher ratios): see `agree`.
                let ratio = !name.contains("Pseudo") && !name.contains("Random");
                let rank = if two_views {
                    rank.min(second_rank)
                } else {
                    rank
                };
                let deficient = rank < 16;
                let tie = (deficient && ratio && !two_views).then_some(rank);
                // Past a rank-deficient factor's rank the columns are rounding noise (the
                // residuals ~1e-6 of the kernel's in float64 here, its scores ratios of
                // noise): the picks up to it are compared, in float32 those before it.
                let cut = |p: &[usize]| -> Vec<usize> {
                    match (deficient, single) {
                        (false, _) => p.to_vec(),
                        (true, false) => p[..p.len().min(rank)].to_vec(),
                        (true, true) => p[..p.len().min(rank - 1)].to_vec(),
                    }
                };
                let coordinates_picks = cut(&coordinates.indices);
                for (other, count) in [(&dense, &mut as_dense), (&terms, &mut as_terms)] {
                    compared += 1;
                    let other_picks = cut(&other.indices);
                    if agree(&same(&other_picks), &same(&coordinates_picks), tie) {
                        *count += 1;
                        continue;
                    }
                    assert!(
                        pursuits_tie(
                            (&kernel, &second),
                            name,
                            (&target64, &codes),
                            (&other_picks, &coordinates_picks),
                            reps,
                            tolerance,
                        ),
                        "{label} kind={kind} rank={rank} {name}: other {:?} {:?} coordinates {:?} {:?}",
                        other.indices,
                        other.scores,
                        coordinates.indices,
                        coordinates.scores,
                    );
                    tied += 1;
                }
                if !single && same(&dense.indices) == same(&coordinates.indices) {
                    let before_tie = if deficient { rank - 1 } else { usize::MAX };
                    for (a, b) in dense
                        .scores
                        .iter()
                        .zip(&coordinates.scores)
                        .take(before_tie)
                    {
                        assert!((a - b).abs() <= 1e-8 * a.abs().max(1.0), "{name}: {a} {b}");
                    }
                }
            }
        }
        println!(
            "{label} pursuits: {as_dense} of {n} pick as dense, {as_terms} of {n} as terms, \
             {tied} part at a tie",
            n = compared / 2
        );
        compared
    }
    assert_eq!(run::<f64>("float64"), 2 * 4 * 9);
    assert_eq!(run::<f32>("float32"), 2 * 4 * 9);
}

#[test]
fn factored_operator_refuses_bad_factors_and_mixed_views() {
    let empty = Array2::<f64>::zeros((5, 0));
    let error = KernelOperator::factored_of(&empty.view(), "factor").unwrap_err();
    assert!(error.to_string().starts_with("factor: "), "{error}");
    let nan = Array2::from_elem((5, 2), f64::NAN);
    assert!(KernelOperator::factored_of(&nan.view(), "factor").is_err());
    let fortran = Array2::<f64>::zeros((5, 3)).reversed_axes();
    assert!(KernelOperator::factored_of(&fortran.view(), "factor").is_err());
    let phi = factor(20, 4, 0, 1);
    let kernel = explicit(&phi);
    let operator = KernelOperator::factored_of(&phi.view(), "factor").unwrap();
    let method = Method::Correlation {
        second: KernelOperator::dense_of(&kernel.view(), "second_kernel").unwrap(),
        signed: true,
    };
    let params = PursuitParams {
        k: 3,
        ..PursuitParams::default()
    };
    let error = pursue_on(operator, &method, &params, &AtomicBool::new(false)).unwrap_err();
    assert!(error.to_string().starts_with("second_kernel: "), "{error}");
}
