//! The pursuit against explicit deflation: `K_t` materialised and rewritten at every pick,
//! every statistic recomputed from it.

use super::*;
use crate::selection::select_classes;
use crate::test_common::uniform_stream;
use crate::{Criterion, Deflation as FamilyDeflation, GreedyParams};
use ndarray::{Array1, Array2, Axis};

/// An RBF kernel of `m` points in `dims` dimensions (seeded), and a target on them.
fn rbf_problem(m: usize, dims: usize, gamma: f64, seed: u64) -> (Array2<f64>, Vec<f64>) {
    let mut uniform = uniform_stream(seed);
    let x = Array2::from_shape_fn((m, dims), |_| 4.0 * uniform() - 2.0);
    let kernel = Array2::from_shape_fn((m, m), |(i, j)| {
        let d2: f64 = (0..dims).map(|c| (x[[i, c]] - x[[j, c]]).powi(2)).sum();
        (-gamma * d2).exp()
    });
    let target = (0..m)
        .map(|i| (2.0 * x[[i, 0]]).sin() + 0.3 * x[[i, 1 % dims]] + 0.1 * (uniform() - 0.5))
        .collect();
    (kernel, target)
}

fn column_norms(k: &Array2<f64>) -> Array1<f64> {
    k.map(|v| v * v).sum_axis(Axis(0))
}

/// The explicit oracle: scores from the materialised `K_t` (and `K_{y,t}`), the best
/// admissible column (ties to the lowest index), then the deflation written out.
fn explicit(
    kernel: &Array2<f64>,
    second: Option<&Array2<f64>>,
    target: Option<&[f64]>,
    method: &str,
    k: usize,
    tol: f64,
) -> (Vec<usize>, Vec<f64>) {
    let m = kernel.nrows();
    let (mut kx, mut ky) = (kernel.clone(), second.cloned());
    let (q0x, q0y) = (column_norms(&kx), ky.as_ref().map(column_norms));
    let d0 = kx.diag().to_owned();
    let (mut indices, mut scores) = (Vec::new(), Vec::new());
    let mut chosen = vec![false; m];
    for _ in 0..k {
        let qx = column_norms(&kx);
        let mut best: Option<(usize, f64)> = None;
        for j in (0..m).filter(|&j| !chosen[j]) {
            let score = match method {
                "matching" => {
                    let y = Array1::from(target.unwrap().to_vec());
                    (qx[j] > tol * q0x[j]).then(|| kx.column(j).dot(&y).abs() / qx[j].sqrt())
                }
                "components" => (kx[[j, j]] > tol * d0[j]).then(|| qx[j] / kx[[j, j]]),
                signed => {
                    let ky = ky.as_ref().unwrap();
                    let qy = column_norms(ky);
                    let q0y = q0y.as_ref().unwrap();
                    (qx[j] > tol * q0x[j] && qy[j] > tol * q0y[j])
                        .then(|| kx.column(j).dot(&ky.column(j)) / (qx[j] * qy[j]).sqrt())
                        .map(|cosine| {
                            if signed == "correlation" {
                                cosine
                            } else {
                                cosine.abs()
                            }
                        })
                }
            };
            if let Some(score) = score {
                if best.is_none_or(|(_, top)| score > top) {
                    best = Some((j, score));
                }
            }
        }
        let Some((i, score)) = best else { break };
        chosen[i] = true;
        indices.push(i);
        scores.push(score);
        let project = |k: &Array2<f64>| {
            let tau = k.column(i).to_owned();
            let q = &tau / tau.dot(&tau).sqrt();
            let qk = q.dot(k);
            k - &(q.insert_axis(Axis(1)).dot(&qk.insert_axis(Axis(0))))
        };
        if method == "components" {
            let tau = kx.column(i).to_owned();
            let u = &tau / tau[i].sqrt();
            kx = &kx - &(u.clone().insert_axis(Axis(1)).dot(&u.insert_axis(Axis(0))));
        } else {
            kx = project(&kx);
            ky = ky.as_ref().map(project);
        }
    }
    (indices, scores)
}

fn assert_close(a: &[f64], b: &[f64], rtol: f64) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= rtol * y.abs().max(1.0), "{x} against {y}");
    }
}

#[test]
fn every_method_picks_as_explicit_deflation() {
    for (m, seed) in [(60, 1), (137, 2)] {
        let (kernel, target) = rbf_problem(m, 3, 0.7, seed);
        let (second, _) = rbf_problem(m, 2, 1.3, seed + 10);
        let k = 25;
        let params = PursuitParams {
            k,
            ..PursuitParams::default()
        };
        let tol = <f64 as Real>::DEFAULT_TOL;
        let cases: [(&str, Method<'_, f64>); 4] = [
            ("matching", Method::Matching { target: &target }),
            ("components", Method::Components),
            (
                "correlation",
                Method::Correlation {
                    second: KernelOperator::dense_of(&second.view(), "second_kernel").unwrap(),
                    signed: true,
                },
            ),
            (
                "correlation-abs",
                Method::Correlation {
                    second: KernelOperator::dense_of(&second.view(), "second_kernel").unwrap(),
                    signed: false,
                },
            ),
        ];
        for (name, method) in &cases {
            let got = pursue(kernel.view(), method, &params).unwrap();
            let expected = explicit(&kernel, Some(&second), Some(&target), name, k, tol);
            assert_eq!(got.indices, expected.0, "{name} m={m}");
            assert_close(&got.scores, &expected.1, 1e-8);
            assert!(!got.stopped_early);
            // One read of each kernel to set up, one a pick but the last.
            let views = 1 + usize::from(name.starts_with("correlation"));
            assert_eq!(got.kernel_passes, views * k);
        }
    }
}

#[test]
fn components_scores_are_the_drops_of_the_trace() {
    // `tr K_t` falls by each pick's score: the residual left is `tr K_0 − Σ scores`, which
    // the explicit Schur complement gives independently.
    let (kernel, _) = rbf_problem(80, 3, 0.5, 4);
    let k = 12;
    let got = pursue(
        kernel.view(),
        &Method::Components,
        &PursuitParams {
            k,
            ..PursuitParams::default()
        },
    )
    .unwrap();
    let idx = &got.indices;
    let sub = Array2::from_shape_fn((k, k), |(a, b)| kernel[[idx[a], idx[b]]]);
    let cross = Array2::from_shape_fn((80, k), |(i, a)| kernel[[i, idx[a]]]);
    // Residual trace `tr(K − C S⁻¹ C')` by solving with the Cholesky factor of `S`.
    let mut lower = Array2::<f64>::zeros((k, k));
    for a in 0..k {
        for b in 0..=a {
            let s: f64 = (0..b).map(|c| lower[[a, c]] * lower[[b, c]]).sum();
            lower[[a, b]] = if a == b {
                (sub[[a, a]] - s).sqrt()
            } else {
                (sub[[a, b]] - s) / lower[[b, b]]
            };
        }
    }
    let mut explained = 0.0;
    for i in 0..80 {
        let mut z = vec![0.0; k];
        for a in 0..k {
            let s: f64 = (0..a).map(|c| lower[[a, c]] * z[c]).sum();
            z[a] = (cross[[i, a]] - s) / lower[[a, a]];
        }
        explained += z.iter().map(|v| v * v).sum::<f64>();
    }
    let total: f64 = got.scores.iter().sum();
    assert!(
        (total - explained).abs() < 1e-8 * explained,
        "{total} {explained}"
    );
}

#[test]
fn every_fisher_criterion_picks_as_the_selection_engine_with_projection() {
    for (m, n_classes, seed) in [(90, 2, 5), (120, 3, 6), (150, 5, 7)] {
        let (kernel, _) = rbf_problem(m, 3, 0.8, seed);
        let mut uniform = uniform_stream(seed + 100);
        let mut classes: Vec<u32> = (0..m).map(|j| (j % n_classes) as u32).collect();
        for j in (1..m).rev() {
            classes.swap(j, (uniform() * (j + 1) as f64) as usize % (j + 1));
        }
        for &(criterion, _) in &Criterion::ALL {
            let k = 20;
            let got = pursue(
                kernel.view(),
                &Method::Fisher {
                    classes: &classes,
                    criterion,
                    seed: seed + 3,
                },
                &PursuitParams {
                    k,
                    ..PursuitParams::default()
                },
            )
            .unwrap();
            let selection = select_classes(
                kernel.view(),
                &classes,
                &GreedyParams {
                    k,
                    criterion,
                    deflation: FamilyDeflation::Projection,
                    seed: seed + 3,
                    ..GreedyParams::default()
                },
            )
            .unwrap();
            assert_eq!(
                got.indices, selection.indices,
                "C={n_classes} {criterion:?}"
            );
        }
    }
}

#[test]
fn float32_picks_as_float64_on_a_clear_problem_and_threads_change_nothing() {
    let (kernel, target) = rbf_problem(120, 2, 0.6, 9);
    let kernel32 = kernel.mapv(|v| v as f32);
    let target32: Vec<f32> = target.iter().map(|&v| v as f32).collect();
    let params = |n_threads| PursuitParams {
        k: 8,
        tol: None,
        n_threads,
    };
    let one = pursue(
        kernel.view(),
        &Method::Matching { target: &target },
        &params(1),
    )
    .unwrap();
    let two = pursue(
        kernel.view(),
        &Method::Matching { target: &target },
        &params(2),
    )
    .unwrap();
    assert_eq!(one, two);
    let single = pursue(
        kernel32.view(),
        &Method::Matching { target: &target32 },
        &params(1),
    )
    .unwrap();
    assert_eq!(single.indices[..4], one.indices[..4]);
}

#[test]
fn bad_input_names_the_argument() {
    let (kernel, target) = rbf_problem(10, 2, 1.0, 3);
    let params = PursuitParams {
        k: 3,
        ..PursuitParams::default()
    };
    let argument = |result: Result<Pursuit>| match result {
        Err(Error::InvalidArgument { argument, .. }) => argument,
        other => panic!("expected an invalid argument, got {other:?}"),
    };
    let short = &target[..9];
    assert_eq!(
        argument(pursue(
            kernel.view(),
            &Method::Matching { target: short },
            &params
        )),
        "y"
    );
    let small = Array2::<f64>::eye(9);
    let method = Method::Correlation {
        second: KernelOperator::dense_of(&small.view(), "second_kernel").unwrap(),
        signed: true,
    };
    assert_eq!(
        argument(pursue(kernel.view(), &method, &params)),
        "second_kernel"
    );
    let too_many = PursuitParams {
        k: 11,
        ..PursuitParams::default()
    };
    assert_eq!(
        argument(pursue(kernel.view(), &Method::Components, &too_many)),
        "k"
    );
    let one_class = vec![0u32; 10];
    let fisher = Method::Fisher {
        classes: &one_class,
        criterion: Criterion::Optimal,
        seed: 0,
    };
    assert_eq!(argument(pursue(kernel.view(), &fisher, &params)), "y");
    let rectangle = Array2::<f64>::zeros((3, 4));
    assert_eq!(
        argument(pursue(rectangle.view(), &Method::Components, &params)),
        "K"
    );
    let stopped = pursue_with_stop(
        kernel.view(),
        &Method::Components,
        &params,
        &AtomicBool::new(true),
    );
    assert_eq!(stopped, Err(Error::Interrupted));
}

#[test]
fn a_kernel_of_low_rank_stops_early() {
    // Rank 3: after three pivots nothing is left to explain.
    let mut uniform = uniform_stream(11);
    let x = Array2::from_shape_fn((30, 3), |_| uniform());
    let kernel = x.dot(&x.t());
    let got = pursue(
        kernel.view(),
        &Method::Components,
        &PursuitParams {
            k: 10,
            ..PursuitParams::default()
        },
    )
    .unwrap();
    assert_eq!(got.indices.len(), 3);
    assert!(got.stopped_early);
}

#[test]
fn a_raised_stop_ends_the_terms_engines_set_up_with_interrupted() {
    let (m, p) = (300, 4);
    let mut uniform = uniform_stream(5);
    let factors: Vec<Vec<f64>> = (0..2)
        .map(|_| (0..m * p).map(|_| uniform()).collect())
        .collect();
    let operator = |view: usize| KernelOperator::Factored {
        factor: &factors[view],
        m,
        p,
    };
    // One view's quadratic forms, and the cross term of two.
    let specs = [
        (
            vec![Statistic::Quadratic {
                view: 0,
                weights: None,
            }],
            1,
            Score::Components,
        ),
        (
            vec![
                Statistic::Cross,
                Statistic::Diagonal { view: 0 },
                Statistic::Diagonal { view: 1 },
            ],
            2,
            Score::Correlation { signed: false },
        ),
    ];
    for (statistics, views, score) in specs {
        let engine = |raised: bool| {
            let spec = Spec::<f64> {
                statistics: statistics.clone(),
                deflation: Deflation::Projection,
                views,
                score: score.clone(),
            };
            let second = (views == 2).then(|| operator(1));
            PursuitEngine::new(operator(0), second, spec, 1e-9, 1, &AtomicBool::new(raised))
        };
        assert!(engine(false).is_ok());
        assert!(matches!(engine(true), Err(Error::Interrupted)));
    }
}
