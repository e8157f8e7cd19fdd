//! The engine's internals against explicit deflation: passes split by class, stage
//! products over many terms, pass counts, selections sharing passes, fused combinations.

use super::engine::{axpy, axpy_all};
use super::*;
use crate::passes;
use crate::test_common::*;
use crate::tuning::PARALLEL_WORK;
use ndarray::Array2;

#[test]
fn passes_split_by_class_match_explicit_deflation() {
    for seed in 0..2 {
        let (kernel, positive) = class_sorted_problem(203 + seed as usize, 3, seed);
        let classes = class_codes(&positive);
        let engine = Engine::new(
            dense(&kernel.view()),
            &classes,
            1e-9,
            1,
            &AtomicBool::new(false),
        )
        .unwrap();
        assert!(
            engine.class_groups.is_some(),
            "two runs of labels split the passes"
        );
        assert_matches_explicit(
            &kernel,
            &positive,
            12,
            &[1, 4],
            &format!("class-sorted seed={seed}"),
        );
    }
}

#[test]
fn stage_products_with_many_terms_match_explicit_deflation() {
    // Enough picks that a stage-1 pick's products with the earlier terms leave the
    // serial path (terms × m ≥ PARALLEL_WORK) for the sweep split by class.
    let (kernel, positive) = class_sorted_problem(520, 5, 3);
    let k = 150;
    assert!((k - 10) * kernel.nrows() >= PARALLEL_WORK);
    // Hotelling at stages 10 fails here with a 0.1 % error in the products with the
    // earlier terms.
    let deflations = [
        Deflation::Hotelling,
        Deflation::Projection,
        Deflation::OrthoHotelling,
        Deflation::OrthoProjection,
    ];
    let cases = (
        &[Criterion::Optimal, Criterion::Pseudo][..],
        &deflations[..],
        &[1, 10][..],
    );
    assert_cases_match_explicit(&kernel, &positive, k, cases, "many terms");
}

#[test]
fn passes_over_the_kernel_are_one_per_stage_or_two_per_schur_pick() {
    let count = |(kernel, positive): &(Array2<f64>, Vec<bool>), deflation, stages| {
        let params = GreedyParams {
            k: 20,
            deflation,
            stages,
            ..GreedyParams::default()
        };
        select(kernel.view(), positive, &params)
            .unwrap()
            .kernel_passes
    };
    let mixed = problem(90, 3, 7);
    assert_eq!(count(&mixed, Deflation::Projection, 1), 1 + 20);
    assert_eq!(count(&mixed, Deflation::Projection, 5), 1 + 4);
    assert_eq!(count(&mixed, Deflation::OrthoHotelling, 10), 1 + 2);
    // Schur: two passes a pick, the last pick's second one skipped (it would only serve
    // a next stage), less one for each pick whose product came ahead with the previous
    // pick's `h` (a stage's first pick, when it is among the candidates multiplied).
    let schur = |deflation, stages, picks_per_stage: usize| {
        let passes = count(&mixed, deflation, stages);
        let stages_taken = 20 / picks_per_stage;
        let without = 1 + stages_taken * (picks_per_stage + 1) - 1;
        assert!(
            passes <= without && passes >= without - (stages_taken - 1),
            "{deflation:?} S={stages}: {passes}"
        );
        without - passes
    };
    assert!(schur(Deflation::Schur, 1, 1) > 0, "no product came ahead");
    schur(Deflation::Schur, 5, 5);
    schur(Deflation::OrthoSchur, 10, 10);
    assert_eq!(count(&mixed, Deflation::None, 1), 1);
    // With the classes contiguous, the projection family's last stage of three or more
    // picks reads only its picks' rows, where its pass would read full rows (a stage
    // of 5 reads the upper triangle on AVX-512: there the last stage takes its pass).
    let sorted = class_sorted_problem(150, 3, 7);
    let last_stage_read = usize::from(passes::reads_triangle(150, 5));
    assert_eq!(
        count(&sorted, Deflation::Projection, 5),
        1 + 4 - 1 + last_stage_read
    );
    assert_eq!(count(&sorted, Deflation::OrthoProjection, 10), 1 + 2 - 1);
    assert_eq!(count(&sorted, Deflation::Projection, 2), 1 + 10);
    assert_eq!(count(&sorted, Deflation::Hotelling, 5), 1 + 4);
}

/// The dense operator of a test kernel.
fn dense<'k>(kernel: &ArrayView2<'k, f64>) -> KernelOperator<'k, f64> {
    KernelOperator::dense_of(kernel, "K").unwrap()
}

/// [`select_many`] sharing passes whatever the kernel's size (the tests' are small).
fn shared_many(
    kernel: ArrayView2<f64>,
    problems: &[(&[bool], GreedyParams)],
) -> Result<Vec<Selection>> {
    select_many_sharing_from(
        dense(&kernel),
        problems,
        &AtomicBool::new(false),
        &Progress::new(),
        0,
    )
}

#[test]
fn shared_selections_pick_as_explicit_deflation_whatever_their_company_and_threads() {
    let (kernel, labels) = one_vs_rest_problem(240, 4, 3);
    let shared = [
        (Deflation::Schur, 1),
        (Deflation::Schur, 3),
        (Deflation::OrthoSchur, 1),
        (Deflation::OrthoSchur, 3),
        (Deflation::Hotelling, 1),
        (Deflation::Projection, 1),
        (Deflation::OrthoHotelling, 1),
        (Deflation::OrthoProjection, 1),
    ];
    for (deflation, stages) in shared {
        {
            for criterion in [Criterion::Optimal, Criterion::Pseudo] {
                let params = GreedyParams {
                    k: 15,
                    criterion,
                    deflation,
                    stages,
                    ..GreedyParams::default()
                };
                let label = format!("{deflation:?} {criterion:?} S={stages}");
                let together = shared_many(kernel.view(), &problems_of(&labels, &params)).unwrap();
                assert_eq!(together.len(), labels.len());
                for (c, selection) in together.iter().enumerate() {
                    let expected = explicit_select(&kernel, &labels[c], &params);
                    assert_eq!(selection.indices, expected, "{label}, class {c}");
                    // Alone, or on two threads: the same selection, bit for bit.
                    let alone = shared_many(kernel.view(), &problems_of(&labels[c..=c], &params));
                    assert_eq!(alone.unwrap()[0], *selection, "{label}, class {c} alone");
                    let two_threads = GreedyParams {
                        n_threads: 2,
                        ..params.clone()
                    };
                    let solo = select(kernel.view(), &labels[c], &params).unwrap();
                    // Alone, a schur selection that keeps `d` multiplies its next
                    // candidates ahead and may save passes; beside others it does not.
                    let speculates =
                        matches!(params.deflation, Deflation::Schur | Deflation::OrthoSchur)
                            && !params.criterion.checks_candidates_one_by_one();
                    if speculates {
                        assert!(solo.kernel_passes <= selection.kernel_passes, "{label}");
                    } else {
                        assert_eq!(selection.kernel_passes, solo.kernel_passes, "{label}");
                    }
                    let threaded =
                        shared_many(kernel.view(), &problems_of(&labels[c..=c], &two_threads));
                    assert_eq!(threaded.unwrap()[0], *selection, "{label}, class {c}");
                }
            }
        }
    }
}

#[test]
fn shared_selections_come_back_in_order_in_groups_and_beside_unshared_ones() {
    // More problems than share one pass (12), with other deflations among them, and
    // some whose terms fill more than half the kernel's memory (groups of their own).
    let (kernel, labels) = one_vs_rest_problem(150, 3, 8);
    let deflations = [
        Deflation::Schur,
        Deflation::Hotelling,
        Deflation::OrthoSchur,
        Deflation::Projection,
        Deflation::None,
    ];
    let problems: Vec<(&[bool], GreedyParams)> = (0..24)
        .map(|c| {
            let (deflation, stages) = if c < 14 {
                (Deflation::Schur, 1)
            } else {
                (deflations[c % 5], 1 + c % 2)
            };
            let params = GreedyParams {
                // 2·60 terms of 150 values: 0.8 of the kernel's 150² values.
                k: if c % 7 == 3 { 60 } else { 4 + c % 5 },
                deflation,
                stages,
                ..GreedyParams::default()
            };
            (labels[c % 3].as_slice(), params)
        })
        .collect();
    let together = shared_many(kernel.view(), &problems).unwrap();
    assert_eq!(together.len(), problems.len());
    for (c, ((positive, params), selection)) in problems.iter().zip(&together).enumerate() {
        assert_eq!(selection.indices.len(), params.k, "problem {c}");
        if shares_passes(
            &params
                .check::<f64>(kernel.dim(), &class_codes(positive))
                .unwrap(),
        ) {
            let alone = shared_many(kernel.view(), &problems[c..=c]).unwrap();
            assert_eq!(alone[0], *selection, "problem {c}");
        } else {
            let solo = select(kernel.view(), positive, params).unwrap();
            assert_eq!(solo, *selection, "problem {c}");
        }
    }
    assert_eq!(select_many::<f64>(kernel.view(), &[]), Ok(Vec::new()));
    // The random criterion, each problem with its own order: the picks `select` makes.
    let random: Vec<(&[bool], GreedyParams)> = (0..3)
        .map(|c| {
            let params = GreedyParams {
                k: 9,
                criterion: Criterion::Random,
                random_order: Some(random_order(kernel.nrows(), c as u64)),
                ..GreedyParams::default()
            };
            (labels[c].as_slice(), params)
        })
        .collect();
    for ((positive, params), selection) in random
        .iter()
        .zip(shared_many(kernel.view(), &random).unwrap())
    {
        let solo = select(kernel.view(), positive, params).unwrap();
        assert_eq!(selection.indices, solo.indices);
    }
}

#[test]
fn shared_selections_stop_on_request_and_name_a_bad_argument() {
    let (kernel, labels) = one_vs_rest_problem(120, 3, 2);
    let params = GreedyParams {
        k: 10,
        ..GreedyParams::default()
    };
    let problems = problems_of(&labels, &params);
    let raised = AtomicBool::new(true);
    for shared_from_bytes in [0, usize::MAX] {
        assert_eq!(
            select_many_sharing_from(
                dense(&kernel.view()),
                &problems,
                &raised,
                &Progress::new(),
                shared_from_bytes
            ),
            Err(Error::Interrupted)
        );
    }
    // A kernel too small to share its passes: each problem as `select` alone, bit for bit.
    let small = select_many(kernel.view(), &problems).unwrap();
    for ((positive, params), selection) in problems.iter().zip(&small) {
        assert_eq!(*selection, select(kernel.view(), positive, params).unwrap());
    }
    let mut bad = problems.clone();
    bad[2].1.k = 0;
    let error = select_many(kernel.view(), &bad).unwrap_err();
    assert!(error.to_string().starts_with("k: "), "{error}");
    let mut bad = problems.clone();
    bad[1].1.criterion = Criterion::Random;
    bad[1].1.random_order = Some(vec![0; kernel.nrows()]);
    let error = select_many(kernel.view(), &bad).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("random_order: problem 1: must be a permutation"),
        "{error}"
    );
    let mut mixed = problems.clone();
    mixed[1].1.n_threads = 2;
    let error = select_many(kernel.view(), &mixed).unwrap_err();
    assert!(error.to_string().starts_with("n_jobs: "), "{error}");
    let nan = kernel.mapv(|v| if v < 0.3 { f64::NAN } else { v });
    for shared_from_bytes in [0, usize::MAX] {
        let stop = AtomicBool::new(false);
        let error = select_many_sharing_from(
            dense(&nan.view()),
            &problems,
            &stop,
            &Progress::new(),
            shared_from_bytes,
        );
        assert!(error.unwrap_err().to_string().starts_with("K: "));
    }
}

#[test]
fn axpy_all_rounds_as_repeated_axpy() {
    for terms in 0..11 {
        for n in [0usize, 1, 7, 33] {
            let value = |a: usize, b: usize| ((a * 7 + b * 3) % 23) as f64 / 7.0 - 1.3;
            let xs: Vec<Vec<f64>> = (0..terms)
                .map(|q| (0..n).map(|l| value(q, l)).collect())
                .collect();
            let factors: Vec<f64> = (0..terms).map(|q| value(q + 5, 1) * 1.1).collect();
            let mut expected: Vec<f64> = (0..n).map(|l| value(2, l)).collect();
            let mut fused = expected.clone();
            for (&factor, x) in factors.iter().zip(&xs) {
                axpy(&mut expected, factor, x);
            }
            let refs: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
            axpy_all(&mut fused, &factors, &refs);
            assert_eq!(fused, expected, "{terms} terms, n = {n}");
        }
    }
}

#[test]
fn the_moments_of_rows_stop_on_a_raised_flag() {
    let (m, p) = (300, 4);
    let mut uniform = uniform_stream(3);
    let factor: Vec<f64> = (0..m * p).map(|_| uniform()).collect();
    let classes: Vec<u32> = (0..m as u32).map(|i| i % 2).collect();
    let pool = crate::pool::shared(1).unwrap();
    let moments = |flag: bool| {
        rows::Moments::of_rows(
            &pool,
            &factor,
            p,
            &classes,
            &[0.5, 0.5],
            &AtomicBool::new(flag),
        )
    };
    assert!(moments(false).is_ok());
    assert!(matches!(moments(true), Err(Error::Interrupted)));
}

#[test]
fn a_raised_stop_ends_the_terms_engines_set_up_with_interrupted() {
    let (m, p) = (300, 4);
    let mut uniform = uniform_stream(4);
    let factor: Vec<f64> = (0..m * p).map(|_| uniform()).collect();
    let classes: Vec<u32> = (0..m as u32).map(|i| i % 2).collect();
    let engine = |raised: bool| {
        let kernel = KernelOperator::Factored {
            factor: &factor,
            m,
            p,
        };
        Engine::new(kernel, &classes, 1e-9, 1, &AtomicBool::new(raised)).map(|_| ())
    };
    assert!(engine(false).is_ok());
    assert!(matches!(engine(true), Err(Error::Interrupted)));
}
