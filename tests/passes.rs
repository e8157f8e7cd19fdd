//! The public passes over a kernel: grouped, ordered, wide and plain products against
//! naive sums, for any thread count.

mod common;

use common::symmetric_kernel;
use gkfda::passes::*;
use gkfda::Real;

#[test]
fn grouped_products_are_the_sums_over_each_group_for_any_thread_count() {
    // Two classes, and four (one group per class, in class order).
    for (&m, n_classes) in [5usize, 37, 130].iter().flat_map(|m| [(m, 2u32), (m, 4)]) {
        let kernel = symmetric_kernel(m);
        let labels: Vec<u32> = (0..m as u32).map(|i| (i / 9) % 3 % n_classes).collect();
        let groups: Vec<ColumnGroup> = (0..n_classes)
            .map(|c| ColumnGroup::of_code::<f64>(&labels, c))
            .collect();
        let positive: Vec<bool> = labels.iter().map(|&c| c == 1).collect();
        assert_eq!(groups[1], ColumnGroup::of_class::<f64>(&positive, true));
        let xs: Vec<Vec<f64>> = (0..6)
            .map(|j| (0..m).map(|i| ((i + 5 * j) % 7) as f64 - 3.0).collect())
            .collect();
        for r in 1..=6 {
            let rhs: Vec<&[f64]> = xs[..r].iter().map(Vec::as_slice).collect();
            let one = multiply_groups(
                &pool(1),
                &kernel,
                m,
                &rhs,
                &groups,
                &mut Workspace::default(),
            );
            let two = multiply_groups(
                &pool(2),
                &kernel,
                m,
                &rhs,
                &groups,
                &mut Workspace::default(),
            );
            assert_eq!(one, two, "thread count changed the result");
            for (g, class) in (0..n_classes).enumerate() {
                for j in 0..r {
                    for i in 0..m {
                        let naive: f64 = (0..m)
                            .filter(|&l| labels[l] == class)
                            .map(|l| kernel[i * m + l] * xs[j][l])
                            .sum();
                        assert!((one[g][j][i] - naive).abs() <= 1e-9 * (1.0 + naive.abs()));
                    }
                }
            }
        }
    }
}

#[test]
fn overlapping_groups_give_each_group_its_own_sums() {
    let m = 130;
    let kernel = symmetric_kernel(m);
    let labels: Vec<bool> = (0..m).map(|i| i < 20).collect();
    let groups = [
        ColumnGroup::all::<f64>(m),
        ColumnGroup::of_class::<f64>(&labels, true),
    ];
    let xs: Vec<Vec<f64>> = (0..4)
        .map(|j| (0..m).map(|i| ((i + 3 * j) % 5) as f64 - 2.0).collect())
        .collect();
    for r in [1, 2, 3, 4] {
        let rhs: Vec<&[f64]> = xs[..r].iter().map(Vec::as_slice).collect();
        let mut workspace = Workspace::default();
        let pass = multiply_groups(&pool(2), &kernel, m, &rhs, &groups, &mut workspace);
        let full = multiply_groups_full_rows(&pool(2), &kernel, m, &rhs, &groups, &mut workspace);
        assert_eq!(pass, full, "r={r}");
    }
}

#[test]
fn dot_products_match_naive_dots() {
    let vectors: Vec<Vec<f32>> = (0..9)
        .map(|r| (0..45).map(|i| ((i * r) % 5) as f32 - 2.0).collect())
        .collect();
    let x: Vec<f32> = (0..45).map(|i| (i % 3) as f32).collect();
    let out = dot_products(&pool(2), &vectors, &[&x]);
    for (r, v) in vectors.iter().enumerate() {
        let naive: f32 = v.iter().zip(&x).map(|(a, b)| a * b).sum();
        assert_eq!(out[0][r], naive);
    }
}

/// Output `(i, g, j)` of a wide pass is the running fused sum over the columns of
/// group `g` in ascending order: exactly this fold, whatever the block, tile or threads.
fn ordered_sum<F: Real>(row: &[F], x: &[F], keep: impl Fn(usize) -> bool) -> F {
    (0..row.len())
        .filter(|&l| keep(l))
        .fold(F::zero(), |sum, l| row[l].mul_add(x[l], sum))
}

fn check_wide_passes<F: Real>(widths: &[usize]) {
    // The packed tiles of passes reading full rows (`multiply_groups` reads the upper
    // triangle for up to 4 right-hand sides, 6 on AVX-512). The two-thread passes share one workspace, largest first: nothing a pass leaves
    // in its buffers may reach the next.
    let mut workspace = Workspace::default();
    for &m in &[130usize, 1, 5, 37] {
        let kernel: Vec<F> = symmetric_kernel(m).into_iter().map(F::from_f64).collect();
        let labels: Vec<bool> = (0..m).map(|i| (i / 9) % 3 == 0 || i < m / 3).collect();
        let group_sets = [
            vec![ColumnGroup::all::<F>(m)],
            vec![
                ColumnGroup::of_class::<F>(&labels, true),
                ColumnGroup::of_class::<F>(&labels, false),
            ],
            vec![ColumnGroup::of_class::<F>(&labels, false)],
        ];
        let xs: Vec<Vec<F>> = (0..widths.iter().copied().max().unwrap_or(0))
            .map(|j| {
                (0..m)
                    .map(|i| F::from_f64(((i * 3 + 5 * j) % 11) as f64 / 7.0 - 0.7))
                    .collect()
            })
            .collect();
        for groups in &group_sets {
            for &r in widths {
                let rhs: Vec<&[F]> = xs[..r].iter().map(Vec::as_slice).collect();
                let one = multiply_groups_full_rows(
                    &pool(1),
                    &kernel,
                    m,
                    &rhs,
                    groups,
                    &mut Workspace::default(),
                );
                let two =
                    multiply_groups_full_rows(&pool(2), &kernel, m, &rhs, groups, &mut workspace);
                assert_eq!(one, two, "thread count changed the result");
                for (g, group) in groups.iter().enumerate() {
                    let in_group = |l: usize| group.contains(l);
                    for (j, x) in xs[..r].iter().enumerate() {
                        for i in 0..m {
                            let row = &kernel[i * m..(i + 1) * m];
                            let expected = ordered_sum(row, x, in_group);
                            assert_eq!(one[g][j][i], expected, "m={m} r={r} g={g} j={j} i={i}");
                        }
                    }
                }
            }
        }
    }
}

fn check_passes_in_order<F: Real>() {
    let mut workspace = Workspace::default();
    for &m in &[130usize, 1, 5, 37] {
        let kernel: Vec<F> = symmetric_kernel(m).into_iter().map(F::from_f64).collect();
        let xs: Vec<Vec<F>> = (0..30)
            .map(|j| {
                (0..m)
                    .map(|i| F::from_f64(((i * 3 + 5 * j) % 11) as f64 / 7.0 - 0.7))
                    .collect()
            })
            .collect();
        for r in [1, 2, 3, 5, 12, 13, 30] {
            let rhs: Vec<&[F]> = xs[..r].iter().map(Vec::as_slice).collect();
            let one = multiply_in_order(&pool(1), &kernel, m, &rhs, &mut Workspace::default());
            let two = multiply_in_order(&pool(2), &kernel, m, &rhs, &mut workspace);
            assert_eq!(one, two, "thread count changed the result");
            for (j, x) in xs[..r].iter().enumerate() {
                for i in 0..m {
                    let expected = ordered_sum(&kernel[i * m..(i + 1) * m], x, |_| true);
                    assert_eq!(one[j][i], expected, "m={m} r={r} j={j} i={i}");
                }
            }
        }
    }
}

#[test]
fn passes_in_order_are_the_ordered_sums_for_any_width_and_thread_count() {
    check_passes_in_order::<f64>();
    check_passes_in_order::<f32>();
}

#[test]
fn wide_passes_are_the_ordered_sums_for_any_block_group_and_thread_count() {
    // One, two and three SIMD vectors per block, several blocks, a partial last one.
    check_wide_passes::<f64>(&[3, 4, 5, 8, 9, 12, 13, 27]);
    check_wide_passes::<f32>(&[3, 8, 9, 16, 17, 24, 25, 50]);
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

#[test]
fn multiply_matches_naive_for_odd_sizes_and_any_thread_count() {
    for &m in &[1usize, 3, 19, 67] {
        let kernel = symmetric_kernel(m);
        let xs: Vec<Vec<f64>> = (0..7)
            .map(|j| (0..m).map(|i| ((i + 3 * j) % 11) as f64 - 5.0).collect())
            .collect();
        for r in 1..=7 {
            let rhs: Vec<&[f64]> = xs[..r].iter().map(|x| x.as_slice()).collect();
            let one = multiply(&pool(1), &kernel, m, &rhs, &mut Workspace::default());
            let two = multiply(&pool(2), &kernel, m, &rhs, &mut Workspace::default());
            assert_eq!(one, two, "thread count changed the result");
            for j in 0..r {
                for i in 0..m {
                    let naive: f64 = (0..m).map(|l| kernel[i * m + l] * xs[j][l]).sum();
                    assert!((one[j][i] - naive).abs() <= 1e-9 * (1.0 + naive.abs()));
                }
            }
        }
    }
}
