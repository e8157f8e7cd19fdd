//! The public selection API against explicit deflation (a dense oracle): every criterion,
//! deflation and stage count, early stops, stop requests, argument errors.

mod common;

use common::*;
use gkfda::kernel::Kernel;
use gkfda::selection::{random_order, select, select_many, select_with_stop, Selection};
use gkfda::{Criterion, Deflation, Error, GreedyParams};
use ndarray::Array2;
use proptest::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

#[test]
fn implicit_engine_matches_explicit_deflation() {
    for seed in 0..3 {
        let (kernel, positive) = problem(61 + 10 * seed as usize, 3, seed);
        assert_matches_explicit(&kernel, &positive, 15, &[1, 2, 5], &format!("seed={seed}"));
    }
}

#[test]
fn a_last_stage_that_skips_a_pick_is_done_again_from_the_whole_pass() {
    // The projection family's last stage reads only its picks' rows; a copy of the best
    // point, picked with it and then explained by it, leaves the stage one short.
    let (kernel, positive) = class_sorted_problem(150, 3, 5);
    let best = select(
        kernel.view(),
        &positive,
        &pseudo_params(1, Deflation::None, 1),
    )
    .unwrap()
    .indices[0];
    let order: Vec<usize> = (0..kernel.nrows())
        .flat_map(|i| vec![i; 1 + usize::from(i == best)])
        .collect();
    let kernel = Array2::from_shape_fn((order.len(), order.len()), |(a, b)| {
        kernel[[order[a], order[b]]]
    });
    let positive: Vec<bool> = order.iter().map(|&i| positive[i]).collect();
    // A stage of 8 reads full rows on any CPU, so its last stage takes the shortcut (a
    // stage of 4 reads the triangle on AVX-512, and takes its pass there).
    let cases = [Deflation::Projection, Deflation::OrthoProjection]
        .into_iter()
        .flat_map(|deflation| [(deflation, 4), (deflation, 8)]);
    for (deflation, k) in cases {
        let params = pseudo_params(k, deflation, k);
        let selection = select(kernel.view(), &positive, &params).unwrap();
        assert!(selection.indices.contains(&best), "{deflation:?}");
        assert!(!selection.indices.contains(&(best + 1)), "{deflation:?}");
        assert_eq!(selection.indices.len(), k);
        // The statistics, the stage's whole pass, and a stage of one pick.
        assert_eq!(selection.kernel_passes, 3, "{deflation:?}");
        assert_selects_as_explicit(&kernel, &positive, &params, "a copy of the best point");
    }
}

#[test]
fn schur_picks_ranked_without_d_take_one_pass_and_stop_as_explicit_deflation() {
    // `pseudo` and `random` rank without `d`: one pass a schur pick, none for `h`.
    let (kernel, positive) = problem(90, 3, 7);
    for (deflation, stages) in [
        (Deflation::Schur, 1),
        (Deflation::Schur, 5),
        (Deflation::OrthoSchur, 10),
    ] {
        let params = pseudo_params(20, deflation, stages);
        let selection = select(kernel.view(), &positive, &params).unwrap();
        assert_eq!(selection.kernel_passes, 1 + 20, "{deflation:?} S={stages}");
        assert_eq!(
            selection.indices,
            explicit_select(&kernel, &positive, &params),
            "{deflation:?} S={stages}"
        );
        let random = GreedyParams {
            criterion: Criterion::Random,
            ..params.clone()
        };
        assert_eq!(
            select(kernel.view(), &positive, &random)
                .unwrap()
                .kernel_passes,
            1 + 20
        );
    }
    // A kernel of rank 3: after three picks every column is explained, and the checks
    // one by one find no admissible candidate, as explicit deflation finds none.
    let x = Array2::from_shape_fn((60, 3), |(i, j)| ((i * 7 + j * 13) % 11) as f64 - 5.0);
    let kernel = x.dot(&x.t());
    let positive: Vec<bool> = (0..60).map(|i| i % 3 == 0).collect();
    for deflation in [Deflation::Schur, Deflation::OrthoSchur] {
        for stages in [1, 2] {
            let params = pseudo_params(10, deflation, stages);
            let selection = select(kernel.view(), &positive, &params).unwrap();
            assert!(selection.stopped_early, "{deflation:?} S={stages}");
            assert!(selection.indices.len() <= 3, "{deflation:?} S={stages}");
            assert_eq!(
                selection.indices,
                explicit_select(&kernel, &positive, &params),
                "{deflation:?} S={stages}"
            );
        }
    }
}

#[test]
fn f32_and_f64_choose_the_same_bases_on_a_well_conditioned_problem() {
    let (kernel, positive) = problem(80, 3, 11);
    let kernel32 = kernel.mapv(|v| v as f32);
    for &(deflation, name) in &Deflation::ALL {
        let params = GreedyParams {
            k: 8,
            deflation,
            ..GreedyParams::default()
        };
        let a = select(kernel.view(), &positive, &params).unwrap().indices;
        let b = select(kernel32.view(), &positive, &params).unwrap().indices;
        assert_eq!(a, b, "{name}");
    }
}

#[test]
fn column_major_kernels_are_read_as_their_transpose() {
    let (kernel, positive) = problem(50, 2, 3);
    let fortran = kernel.t().as_standard_layout().into_owned().reversed_axes();
    assert!(fortran.as_slice().is_none());
    let params = GreedyParams {
        k: 10,
        ..GreedyParams::default()
    };
    assert_eq!(
        select(fortran.view(), &positive, &params).unwrap(),
        select(kernel.view(), &positive, &params).unwrap()
    );
}

#[test]
fn a_raised_stop_flag_ends_the_selection_and_a_lowered_one_changes_nothing() {
    let (kernel, positive) = class_sorted_problem(120, 3, 5);
    for &(deflation, name) in &Deflation::ALL {
        for stages in [1, 4] {
            let params = GreedyParams {
                k: 12,
                deflation,
                stages,
                ..GreedyParams::default()
            };
            let raised = AtomicBool::new(true);
            assert_eq!(
                select_with_stop(kernel.view(), &positive, &params, &raised),
                Err(Error::Interrupted),
                "{name}, stages {stages}"
            );
            let lowered = AtomicBool::new(false);
            assert_eq!(
                select_with_stop(kernel.view(), &positive, &params, &lowered),
                select(kernel.view(), &positive, &params),
                "{name}, stages {stages}"
            );
        }
    }
}

#[test]
fn a_schur_stage_stops_between_its_picks() {
    // One stage of every pick: only the check before each schur pick can see the flag,
    // raised while the stage runs (its 2 × 400 passes and their sweeps over up to 400
    // terms take far longer than 20 ms; 30 features: no pick is numerically explained).
    let (kernel, positive) = class_sorted_problem(400, 30, 9);
    let params = GreedyParams {
        k: 400,
        deflation: Deflation::Schur,
        stages: 400,
        ..GreedyParams::default()
    };
    let stop = AtomicBool::new(false);
    let result = std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            stop.store(true, Ordering::Relaxed);
        });
        select_with_stop(kernel.view(), &positive, &params, &stop)
    });
    assert_eq!(result, Err(Error::Interrupted));
}

#[test]
fn invalid_parameters_name_the_argument() {
    let (kernel, positive) = problem(20, 2, 1);
    let run = |params: GreedyParams, positive: &[bool]| {
        select(kernel.view(), positive, &params).unwrap_err()
    };
    let argument = |e: Error| match e {
        Error::InvalidArgument { argument, .. } => argument,
        other => panic!("unexpected {other:?}"),
    };
    assert_eq!(
        argument(run(
            GreedyParams {
                k: 0,
                ..Default::default()
            },
            &positive
        )),
        "k"
    );
    assert_eq!(
        argument(run(
            GreedyParams {
                k: 21,
                ..Default::default()
            },
            &positive
        )),
        "k"
    );
    assert_eq!(
        argument(run(
            GreedyParams {
                stages: 0,
                ..Default::default()
            },
            &positive
        )),
        "stages"
    );
    assert_eq!(argument(run(GreedyParams::default(), &positive[..5])), "y");
    assert_eq!(argument(run(GreedyParams::default(), &[true; 20])), "y");
    let bad_order = GreedyParams {
        criterion: Criterion::Random,
        random_order: Some(vec![0; 20]),
        ..Default::default()
    };
    assert_eq!(argument(run(bad_order, &positive)), "random_order");
    let stray_order = GreedyParams {
        random_order: Some((0..20).collect()),
        ..Default::default()
    };
    assert_eq!(argument(run(stray_order, &positive)), "random_order");
    let no_threads = GreedyParams {
        n_threads: 0,
        ..Default::default()
    };
    assert_eq!(argument(run(no_threads, &positive)), "n_jobs");
    let mut poisoned = kernel.clone();
    poisoned[[3, 4]] = f64::NAN;
    let poisoned_error = select(poisoned.view(), &positive, &GreedyParams::default());
    assert_eq!(argument(poisoned_error.unwrap_err()), "K");
    assert_eq!(
        argument("best".parse::<Criterion>().unwrap_err()),
        "criterion"
    );
    assert_eq!(
        argument("qr".parse::<Deflation>().unwrap_err()),
        "deflation"
    );
    let rectangular = Array2::<f64>::zeros((3, 4));
    assert_eq!(
        argument(select(rectangular.view(), &positive[..3], &GreedyParams::default()).unwrap_err()),
        "K"
    );
}

#[test]
fn random_order_is_a_seeded_permutation() {
    let a = random_order(100, 5);
    let mut sorted = a.clone();
    sorted.sort();
    assert_eq!(sorted, (0..100).collect::<Vec<_>>());
    assert_eq!(a, random_order(100, 5));
    assert_ne!(a, random_order(100, 6));
}

#[test]
fn public_types_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<GreedyParams>();
    check::<Selection>();
    check::<Kernel>();
    check::<Error>();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn any_problem_gives_distinct_in_range_indices_without_panicking(
        m in 2usize..40, seed in 0u64..1000, k_frac in 0.0f64..1.0, stages in 1usize..6,
        criterion in 0usize..5, deflation in 0usize..7, duplicate in proptest::bool::ANY,
    ) {
        let (mut kernel, mut positive) = problem(m, 2, seed);
        positive[0] = true;
        positive[m - 1] = false;
        if duplicate && m > 2 {
            // Two identical points: degenerate columns must be skipped, not crash.
            let row = kernel.row(0).to_owned();
            kernel.row_mut(1).assign(&row);
            let column = kernel.column(0).to_owned();
            kernel.column_mut(1).assign(&column);
        }
        let k = 1 + ((m - 1) as f64 * k_frac) as usize;
        let params = GreedyParams {
            k, stages, criterion: Criterion::ALL[criterion].0, deflation: Deflation::ALL[deflation].0,
            seed, ..GreedyParams::default()
        };
        let selection = select(kernel.view(), &positive, &params).unwrap();
        let mut seen = vec![false; m];
        prop_assert!(selection.indices.len() <= k);
        for &i in &selection.indices {
            prop_assert!(i < m && !std::mem::replace(&mut seen[i], true));
        }
    }
}

#[test]
fn names_parse_and_display_as_listed() {
    for (criterion, name) in Criterion::ALL {
        assert_eq!(criterion.to_string(), name);
        assert_eq!(name.parse::<Criterion>().unwrap(), criterion);
    }
    for (deflation, name) in Deflation::ALL {
        assert_eq!(deflation.to_string(), name);
        assert_eq!(name.parse::<Deflation>().unwrap(), deflation);
    }
    assert_eq!(Deflation::ALL[6], (Deflation::OrthoSchur, "ortho-schur"));
    assert!("schurr".parse::<Deflation>().is_err());
}

#[test]
fn no_problems_make_no_selections_whatever_the_kernel() {
    // A fuzz finding: an empty `select_many` refused a strided kernel before it looked at
    // its (no) problems.
    let wide = Array2::<f64>::eye(6);
    let strided = wide.slice(ndarray::s![..3, ..;2]);
    assert_eq!(select_many(strided, &[]), Ok(Vec::new()));
    let labels = [true, false, true];
    let params = GreedyParams {
        k: 1,
        ..GreedyParams::default()
    };
    let error = select_many(strided, &[(&labels[..], params)]).unwrap_err();
    assert!(error.to_string().starts_with("K: "), "{error}");
}
