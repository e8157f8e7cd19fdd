//! The passes' internals: symmetric passes against full ones, the rows of a pass at its
//! picks, combinations.

use super::*;

use crate::test_common::symmetric_kernel;

#[test]
fn symmetric_passes_match_full_passes_for_any_bands_groups_and_threads() {
    // One workspace for all the two-thread passes below, as an engine keeps it: what a
    // pass leaves in its buffers must not reach the next one, of whatever shape.
    let mut workspace = Workspace::default();
    for &m in &[601usize, 1, 2, 5, 37, 130] {
        let kernel = symmetric_kernel(m);
        let labels: Vec<bool> = (0..m).map(|i| (i / 9) % 3 == 0 || i < m / 3).collect();
        let class_groups = vec![
            ColumnGroup::of_class::<f64>(&labels, true),
            ColumnGroup::of_class::<f64>(&labels, false),
        ];
        let xs: Vec<Vec<f64>> = (0..NARROW_SYMMETRIC_MAX)
            .map(|j| (0..m).map(|i| ((i + 5 * j) % 7) as f64 - 3.0).collect())
            .collect();
        // One class alone leaves columns (and rows) in no group.
        let one_class = vec![ColumnGroup::of_class::<f64>(&labels, false)];
        for groups in [vec![ColumnGroup::all::<f64>(m)], class_groups, one_class] {
            // Narrow tiles but on AVX-512, where 2 to 4 take the wide ones.
            for r in 1..=NARROW_SYMMETRIC_MAX {
                let rhs: Vec<&[f64]> = xs[..r].iter().map(Vec::as_slice).collect();
                assert_symmetric_matches_full(&kernel, m, &rhs, &groups, 1e-9, &mut workspace);
            }
        }
    }
}

/// `symmetric_products` of `rhs` with 1, 3 and 16 bands: the same on one thread and on
/// two (the two-thread passes share `workspace`), and within `tolerance` of full rows.
fn assert_symmetric_matches_full<F: Real>(
    kernel: &[F],
    m: usize,
    rhs: &[&[F]],
    groups: &[ColumnGroup],
    tolerance: f64,
    workspace: &mut Workspace<F>,
) {
    let r = rhs.len();
    let row = |i: usize| &kernel[i * m..(i + 1) * m];
    let full = products(&pool(1), m, row, rhs, groups, &mut Workspace::default());
    for bands in [1, 3, 16] {
        let one = symmetric_products(
            &pool(1),
            kernel,
            m,
            rhs,
            groups,
            bands,
            &mut Workspace::default(),
        );
        let two = symmetric_products(&pool(2), kernel, m, rhs, groups, bands, workspace);
        assert_eq!(one, two, "thread count changed the result (m={m}, r={r})");
        assert_eq!(one.concat().concat().len(), full.concat().concat().len());
        for (a, b) in one
            .iter()
            .flatten()
            .flatten()
            .zip(full.iter().flatten().flatten())
        {
            let (a, b) = (a.as_f64(), b.as_f64());
            assert!(
                (a - b).abs() <= tolerance * (1.0 + b.abs()),
                "{a} vs {b} (m={m}, r={r}, bands={bands})"
            );
        }
    }
}

fn check_wide_symmetric_passes<F: Real>(tolerance: f64) {
    let mut workspace = Workspace::default();
    for &m in &[601usize, 64, 65, 130, 257] {
        let kernel: Vec<F> = symmetric_kernel(m).into_iter().map(F::from_f64).collect();
        let contiguous: Vec<bool> = (0..m).map(|i| i < m / 3 + 1).collect();
        let interleaved: Vec<bool> = (0..m).map(|i| (i / 9) % 3 == 0 || i < m / 3).collect();
        let split = |labels: &[bool]| {
            vec![
                ColumnGroup::of_class::<F>(labels, true),
                ColumnGroup::of_class::<F>(labels, false),
            ]
        };
        let xs: Vec<Vec<F>> = (0..WIDE_SYMMETRIC_MAX)
            .map(|j| {
                (0..m)
                    .map(|i| F::from_f64(((i * 3 + 5 * j) % 7) as f64 - 3.0))
                    .collect()
            })
            .collect();
        // One class alone leaves columns in no group: full rows, the same sums.
        let one_class = vec![ColumnGroup::of_class::<F>(&contiguous, false)];
        let all = vec![ColumnGroup::all::<F>(m)];
        for groups in [all, split(&contiguous), split(&interleaved), one_class] {
            // The wide tiles on AVX-512; elsewhere narrow ones (2 to 4) or full rows.
            for r in 2..=WIDE_SYMMETRIC_MAX {
                let rhs: Vec<&[F]> = xs[..r].iter().map(Vec::as_slice).collect();
                assert_symmetric_matches_full(&kernel, m, &rhs, &groups, tolerance, &mut workspace);
            }
        }
    }
}

#[test]
fn wide_symmetric_passes_match_full_passes_for_any_bands_groups_and_threads() {
    check_wide_symmetric_passes::<f64>(1e-9);
    check_wide_symmetric_passes::<f32>(1e-3);
}

#[test]
fn symmetric_f32_passes_match_full_passes() {
    let m = 301;
    let kernel: Vec<f32> = symmetric_kernel(m).into_iter().map(|v| v as f32).collect();
    let x: Vec<f32> = (0..m).map(|i| (i % 7) as f32 - 3.0).collect();
    let groups = [ColumnGroup::all::<f32>(m)];
    let row = |i: usize| &kernel[i * m..(i + 1) * m];
    let full = products(&pool(1), m, row, &[&x], &groups, &mut Workspace::default());
    let triangle = symmetric_products(
        &pool(2),
        &kernel,
        m,
        &[&x],
        &groups,
        5,
        &mut Workspace::default(),
    );
    for (a, b) in triangle[0][0].iter().zip(&full[0][0]) {
        assert!((a - b).abs() <= 1e-4 * (1.0 + b.abs()), "{a} vs {b}");
    }
}

fn check_products_at_rows<F: Real>(widths: &[usize]) {
    let m = 130;
    let kernel: Vec<F> = symmetric_kernel(m).into_iter().map(F::from_f64).collect();
    let labels: Vec<bool> = (0..m).map(|i| i < 57).collect();
    let groups = [
        ColumnGroup::of_class::<F>(&labels, true),
        ColumnGroup::of_class::<F>(&labels, false),
    ];
    let vectors = |count: usize, seed: usize| -> Vec<Vec<F>> {
        (0..count)
            .map(|j| {
                (0..m)
                    .map(|i| F::from_f64(((i * 3 + 5 * j + seed) % 11) as f64 / 7.0 - 0.7))
                    .collect()
            })
            .collect()
    };
    let widest = widths.iter().copied().max().unwrap_or(0);
    let (xs, extra) = (vectors(widest, 0), vectors(3, 4));
    let picks = [77, 3, 129, 40, 41, 0, 100];
    for &r in widths {
        let rhs: Vec<&[F]> = xs[..r].iter().map(Vec::as_slice).collect();
        let mut workspace = Workspace::default();
        // The pass reading full rows, as `multiply_groups_with_rows` does for any width
        // without AVX-512 and beyond the wide symmetric passes' widths with it.
        let row = |i: usize| &kernel[i * m..(i + 1) * m];
        let (whole, whole_extra) =
            products_and_extra_rows(&pool(2), m, row, &extra, &rhs, &groups, &mut workspace);
        let (at_picks, at_extra) = multiply_groups_at_rows(
            &pool(2),
            &kernel,
            m,
            &picks,
            &extra,
            &rhs,
            &groups,
            &mut workspace,
        );
        assert_eq!(at_extra, whole_extra, "r={r}");
        for (g, by_rhs) in at_picks.iter().enumerate() {
            for (j, out) in by_rhs.iter().enumerate() {
                let expected: Vec<F> = picks.iter().map(|&i| whole[g][j][i]).collect();
                assert_eq!(out, &expected, "r={r} g={g} j={j}");
            }
        }
    }
}

#[test]
fn products_at_rows_are_the_pass_rows_bit_for_bit() {
    // Every packed tile shape: 4 × 3, 6 × 2 and 6 × 1 vectors, one block or several.
    check_products_at_rows::<f64>(&[3, 5, 10, 13]);
    check_products_at_rows::<f32>(&[3, 9, 10, 17, 30]);
}

#[test]
fn combinations_are_the_ordered_fused_sums_for_any_number_of_outputs() {
    // Each element must be `out − c_0 v_0 − c_1 v_1 − …`, one rounding per term in
    // that order, whichever tile (or none) covers it: the engine's results may not
    // depend on how many outputs a combination has or where a chunk starts.
    fn check<F: Real>() {
        let value = |a: usize, b: usize| F::from_f64(((a * 7 + b * 5) % 23) as f64 / 7.0 - 1.5);
        for n in [0usize, 1, 3, 4, 7, 8, 9, 16, 17, 37] {
            for outputs in 1..=12 {
                for terms in [0usize, 1, 3, 5, 13] {
                    let vectors: Vec<Vec<F>> = (0..terms)
                        .map(|r| (0..n).map(|l| value(r, l)).collect())
                        .collect();
                    let coefficients: Vec<Vec<F>> = (0..outputs)
                        .map(|s| (0..terms).map(|r| value(s + 11, r + 3)).collect())
                        .collect();
                    let init: Vec<Vec<F>> = (0..outputs)
                        .map(|s| (0..n).map(|l| value(s + 2, l + 1)).collect())
                        .collect();
                    let mut expected = init.clone();
                    for (out, c) in expected.iter_mut().zip(&coefficients) {
                        for (l, value) in out.iter_mut().enumerate() {
                            for (vector, &c) in vectors.iter().zip(c) {
                                *value = (-c).mul_add(vector[l], *value);
                            }
                        }
                    }
                    let mut outs = init.clone();
                    let mut pieces: Vec<&mut [F]> =
                        outs.iter_mut().map(Vec::as_mut_slice).collect();
                    let terms_here: Vec<&[F]> = vectors.iter().map(Vec::as_slice).collect();
                    let c: Vec<&[F]> = coefficients.iter().map(Vec::as_slice).collect();
                    combine_chunk(&mut pieces, &terms_here, &c);
                    assert!(
                        outs == expected,
                        "n = {n}, {outputs} outputs, {terms} terms"
                    );
                }
            }
        }
    }
    check::<f64>();
    check::<f32>();
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}
