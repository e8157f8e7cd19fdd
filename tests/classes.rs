//! Selections over `C ≥ 2` classes sharing one basis: explicit deflation as the oracle for
//! three and four classes, in class order and shuffled, and the two-class problem as the
//! class codes 0 and 1.

mod common;

use common::*;
use gkfda::selection::{select, select_classes, select_classes_with_stop};
use gkfda::{Criterion, Deflation, Error, GreedyParams};
use std::sync::atomic::AtomicBool;

/// Every scored criterion × deflation × stages 1, 2 and 5.
fn assert_all_cases_match_explicit(m: usize, n_classes: usize, sorted: bool, seed: u64, k: usize) {
    let (kernel, classes) = classes_problem(m, n_classes, seed, sorted);
    for c in 0..n_classes as u32 {
        assert!(classes.contains(&c), "class {c} drawn");
    }
    let label = format!("C={n_classes} m={m} sorted={sorted} seed={seed}");
    assert_matches_explicit(&kernel, &classes, k, &[1, 2, 5], &label);
}

#[test]
fn three_classes_select_as_explicit_deflation() {
    assert_all_cases_match_explicit(83, 3, false, 1, 15);
    // Long enough runs that the passes split by class (and the set-up takes one pass).
    assert_all_cases_match_explicit(200, 3, true, 2, 12);
}

#[test]
fn four_classes_select_as_explicit_deflation() {
    assert_all_cases_match_explicit(97, 4, false, 3, 15);
    assert_all_cases_match_explicit(260, 4, true, 4, 12);
}

#[test]
fn two_class_codes_select_as_the_booleans_they_stand_for() {
    for (m, sorted, seed) in [(90, false, 5), (150, true, 6)] {
        let (kernel, classes) = classes_problem(m, 2, seed, sorted);
        let positive: Vec<bool> = classes.iter().map(|&c| c == 1).collect();
        for &(criterion, _) in &Criterion::ALL {
            for &(deflation, name) in &Deflation::ALL {
                for stages in [1, 3] {
                    let params = GreedyParams {
                        k: 15,
                        criterion,
                        deflation,
                        stages,
                        n_threads: 2,
                        ..GreedyParams::default()
                    };
                    let by_codes = select_classes(kernel.view(), &classes, &params).unwrap();
                    let by_booleans = select(kernel.view(), &positive, &params).unwrap();
                    assert_eq!(by_codes, by_booleans, "{criterion:?} {name} S={stages}");
                }
            }
        }
    }
}

#[test]
fn f32_and_f64_choose_the_same_bases_for_four_classes() {
    for sorted in [false, true] {
        let (kernel, classes) = classes_problem(280, 4, 8, sorted);
        let kernel32 = kernel.mapv(|v| v as f32);
        for &(deflation, name) in &Deflation::ALL {
            for stages in [1, 2, 5] {
                let params = GreedyParams {
                    k: 8,
                    deflation,
                    stages,
                    ..GreedyParams::default()
                };
                let a = select_classes(kernel.view(), &classes, &params).unwrap();
                let b = select_classes(kernel32.view(), &classes, &params).unwrap();
                assert_eq!(a.indices, b.indices, "{name} S={stages} sorted={sorted}");
            }
        }
    }
}

#[test]
fn the_set_up_reads_the_kernel_once_in_class_order_and_twice_shuffled() {
    // `none` takes no pass after the set-up; `pseudo` schur one a pick.
    for (sorted, set_up) in [(true, 1), (false, 2)] {
        let (kernel, classes) = classes_problem(320, 5, 9, sorted);
        let none = GreedyParams {
            k: 10,
            deflation: Deflation::None,
            ..GreedyParams::default()
        };
        let selection = select_classes(kernel.view(), &classes, &none).unwrap();
        assert_eq!(selection.kernel_passes, set_up, "sorted={sorted}");
        let schur = pseudo_params(10, Deflation::Schur, 1);
        let selection = select_classes(kernel.view(), &classes, &schur).unwrap();
        assert_eq!(selection.kernel_passes, set_up + 10, "sorted={sorted}");
        assert_eq!(
            selection.indices,
            explicit_select(&kernel, &classes, &schur),
            "sorted={sorted}"
        );
    }
}

#[test]
fn the_random_criterion_takes_the_order_over_classes() {
    let (kernel, classes) = classes_problem(120, 3, 10, true);
    let order: Vec<usize> = (0..120).rev().collect();
    for &(deflation, name) in &Deflation::ALL {
        let params = GreedyParams {
            k: 6,
            criterion: Criterion::Random,
            deflation,
            random_order: Some(order.clone()),
            ..GreedyParams::default()
        };
        let selection = select_classes(kernel.view(), &classes, &params).unwrap();
        assert_eq!(selection.indices, order[..6], "{name}");
    }
}

#[test]
fn a_raised_stop_flag_ends_a_selection_over_classes() {
    let (kernel, classes) = classes_problem(200, 3, 11, true);
    for &(deflation, name) in &Deflation::ALL {
        let params = GreedyParams {
            k: 10,
            deflation,
            stages: 2,
            ..GreedyParams::default()
        };
        let raised = AtomicBool::new(true);
        assert_eq!(
            select_classes_with_stop(kernel.view(), &classes, &params, &raised),
            Err(Error::Interrupted),
            "{name}"
        );
    }
}

#[test]
fn class_codes_that_skip_a_class_or_name_one_class_are_refused() {
    let (kernel, classes) = classes_problem(30, 3, 12, false);
    let refused =
        |classes: &[u32]| match select_classes(kernel.view(), classes, &GreedyParams::default()) {
            Err(Error::InvalidArgument { argument, message }) => (argument, message),
            other => panic!("expected a refusal, got {other:?}"),
        };
    let skipping: Vec<u32> = classes
        .iter()
        .map(|&c| if c == 1 { 3 } else { c })
        .collect();
    let (argument, message) = refused(&skipping);
    assert_eq!(argument, "y");
    assert!(message.contains("class 1"), "{message}");
    assert_eq!(refused(&[0; 30]).0, "y");
    assert_eq!(refused(&[2; 30]).0, "y");
    let mut too_large = classes.clone();
    too_large[4] = 30;
    assert_eq!(refused(&too_large).0, "y");
    assert_eq!(refused(&classes[..29]).0, "y");
}
