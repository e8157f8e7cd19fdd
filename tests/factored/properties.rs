//! Random factors, as properties: the factored picks are the dense picks.

use crate::factors::*;
use gkfda::operator::KernelOperator;
use gkfda::selection::{select_classes, select_classes_on};
use gkfda::{Criterion, Deflation, GreedyParams};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use std::sync::atomic::AtomicBool;

proptest! {
    // A fixed seed, so that every run tests the same cases (and the cases of
    // properties.proptest-regressions, beside this file, first); PROPTEST_CASES=n samples more.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(40),
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x6b_6664_6100),
        // Beside the source: the default looks for a main.rs, and would put it in tests/.
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    /// Random factors (rank-deficient, duplicated rows, `p` from 1, `m` around and past
    /// a block of rows, a class of one to three points): the factored picks are the dense
    /// picks on the explicit `ΦΦ'` (f64) for every criterion × deflation × stages ∈ {1, 2,
    /// 3} wherever the scores do not tie (or on the other side of a tie), and the float32
    /// factored selection returns distinct indices below `m` without panicking.
    #[test]
    fn random_factors_pick_as_their_explicit_kernel(
        m in prop_oneof![3 => 3usize..60, 1 => 1020usize..1060],
        p in 1usize..9,
        rank_cut in 0usize..4,
        duplicated in 0usize..6,
        n_classes in 2u32..4,
        few in proptest::option::of(1usize..4),
        k in 1usize..10,
        seed in 0u64..1_000_000,
    ) {
        let rank = p.saturating_sub(rank_cut).max(1);
        let phi = random_factor(m, p, rank, duplicated, seed);
        let rank = numerical_rank(&phi);
        let codes = codes_with_a_small_class(m, n_classes, few);
        let reps = representatives(&phi);
        let same = |picks: &[usize]| -> Vec<usize> { picks.iter().map(|&i| reps[i]).collect() };
        let kernel = explicit(&phi);
        let operator = KernelOperator::factored_of(&phi.view(), "factor").unwrap();
        let phi32 = phi.mapv(|v| v as f32);
        let operator32 = KernelOperator::factored_of(&phi32.view(), "factor").unwrap();
        let stop = AtomicBool::new(false);
        for criterion in Criterion::ALL.map(|(c, _)| c) {
            for deflation in Deflation::ALL.map(|(d, _)| d) {
                for stages in 1..=3 {
                    let params = GreedyParams {
                        k: k.min(m),
                        criterion,
                        deflation,
                        stages,
                        seed,
                        ..GreedyParams::default()
                    };
                    let dense = select_classes(kernel.view(), &codes, &params).unwrap();
                    let factored = select_classes_on(operator, &codes, &params, &stop).unwrap();
                    let (d, f) = (same(&dense.indices), same(&factored.indices));
                    prop_assert!(
                        agree_at_rank(&d, &f, rank, criterion, deflation)
                            || tie_at_divergence(&kernel, &codes, &params, &dense.indices, &factored.indices, &reps),
                        "m={m} p={p} rank={rank} {criterion:?} {deflation:?} S={stages}: dense {:?} factored {:?}",
                        dense.indices, factored.indices
                    );
                    let single = select_classes_on(operator32, &codes, &params, &stop).unwrap();
                    let mut seen = vec![false; m];
                    prop_assert!(single.indices.len() <= params.k);
                    for &i in &single.indices {
                        prop_assert!(i < m && !std::mem::replace(&mut seen[i], true));
                    }
                }
            }
        }
    }
}
