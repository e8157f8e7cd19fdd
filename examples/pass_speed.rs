//! Time of one pass over an m×m kernel (`passes::multiply`) for several numbers of
//! right-hand sides: `cargo run --release --example pass_speed -- 4000 2` (m, threads).
//! Passes with one or two right-hand sides read only the upper triangle of the symmetric
//! kernel; the throughput printed counts the bytes of the whole kernel. The first line names
//! the instruction set the passes use (`GKFDA_SIMD=avx2` or `none` caps it, [`gkfda::simd`]);
//! the second is the yardstick: a plain read of the kernel on the same threads (a sum, no
//! products).
//! The last lines time wide passes split by class, in `f64` and `f32`, against the same
//! passes reading full rows (`passes::multiply_groups_full_rows`), in turns: on a CPU with
//! AVX-512, 3 to 6 vectors read only the upper triangle.

use gkfda::passes::{multiply, multiply_groups, multiply_groups_full_rows, ColumnGroup, Workspace};
use gkfda::Real;
use rayon::prelude::*;
use std::time::Instant;

fn median_ms(mut run: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..21)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let m: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(4000);
    let threads: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(2);
    let kernel: Vec<f64> = (0..m * m)
        .map(|t| {
            let (i, l) = (t / m, t % m);
            ((i.min(l) * 7919 + i.max(l) * 31) % 97) as f64 / 97.0
        })
        .collect();
    let vectors: Vec<Vec<f64>> = (0..20)
        .map(|j| (0..m).map(|i| ((i + j) % 13) as f64).collect())
        .collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool");
    println!(
        "engine instruction set: {}",
        gkfda::simd::simd_level().name()
    );
    let gigabytes = (m * m * 8) as f64 / 1e9;
    let read_ms = median_ms(|| {
        let sum: f64 = pool.install(|| {
            kernel
                .par_chunks(1 << 16)
                .map(|chunk| {
                    // Eight running sums: one would be bound by the latency of its adds.
                    let mut lanes = [0.0f64; 8];
                    for values in chunk.chunks_exact(8) {
                        lanes
                            .iter_mut()
                            .zip(values)
                            .for_each(|(lane, v)| *lane += v);
                    }
                    lanes.iter().sum::<f64>()
                })
                .sum()
        });
        std::hint::black_box(sum);
    });
    println!(
        "plain read of K: {read_ms:.2} ms ({:.1} GB/s)",
        gigabytes / read_ms * 1e3
    );
    let mut workspace = Workspace::default();
    for r in [1, 2, 4, 20] {
        let rhs: Vec<&[f64]> = vectors[..r].iter().map(Vec::as_slice).collect();
        let ms = median_ms(|| {
            std::hint::black_box(multiply(&pool, &kernel, m, &rhs, &mut workspace));
        });
        println!(
            "{r:>2} right-hand sides: {ms:.2} ms per pass ({:.1} GB/s of K)",
            gigabytes / ms * 1e3
        );
    }
    // `K x` and `K D x` for S vectors with the classes contiguous (as `GreedyKFDA.fit` builds
    // its kernel): one multiply-add per kernel element and vector.
    let labels: Vec<bool> = (0..m).map(|i| i < m / 2).collect();
    let groups = [
        ColumnGroup::of_class::<f64>(&labels, true),
        ColumnGroup::of_class::<f64>(&labels, false),
    ];
    for s in [1, 10] {
        let rhs: Vec<&[f64]> = vectors[..s].iter().map(Vec::as_slice).collect();
        let ms = median_ms(|| {
            std::hint::black_box(multiply_groups(
                &pool,
                &kernel,
                m,
                &rhs,
                &groups,
                &mut workspace,
            ));
        });
        println!(
            "{s:>2} vectors split by class (= {} right-hand sides): {ms:.2} ms per pass ({:.1} GB/s of K, {:.2}x the plain read)",
            2 * s,
            gigabytes / ms * 1e3,
            ms / read_ms
        );
    }
    wide_passes::<f64>(&pool, &kernel, m, &vectors, &labels);
    let kernel32: Vec<f32> = kernel.iter().map(|&v| v as f32).collect();
    let vectors32: Vec<Vec<f32>> = vectors
        .iter()
        .map(|x| x.iter().map(|&v| v as f32).collect())
        .collect();
    wide_passes::<f32>(&pool, &kernel32, m, &vectors32, &labels);
}

/// Wide passes split by class: the upper triangle by the wide symmetric tiles (where the
/// CPU has AVX-512, for 2 to 6 vectors; for 2 the narrow symmetric tiles, and full rows for
/// more, otherwise) against whole rows by the
/// packed tiles, in turns (7 rounds of medians of 21).
fn wide_passes<F: Real>(
    pool: &rayon::ThreadPool,
    kernel: &[F],
    m: usize,
    vectors: &[Vec<F>],
    labels: &[bool],
) {
    let groups = [
        ColumnGroup::of_class::<F>(labels, true),
        ColumnGroup::of_class::<F>(labels, false),
    ];
    let mut workspace = Workspace::default();
    for s in [2, 3, 4, 5, 6, 8, 10, 12, 16, 20] {
        let rhs: Vec<&[F]> = vectors[..s].iter().map(Vec::as_slice).collect();
        let (mut triangle, mut full) = (Vec::new(), Vec::new());
        for _ in 0..7 {
            triangle.push(median_ms(|| {
                std::hint::black_box(multiply_groups(
                    pool,
                    kernel,
                    m,
                    &rhs,
                    &groups,
                    &mut workspace,
                ));
            }));
            full.push(median_ms(|| {
                std::hint::black_box(multiply_groups_full_rows(
                    pool,
                    kernel,
                    m,
                    &rhs,
                    &groups,
                    &mut workspace,
                ));
            }));
        }
        let median = |times: &mut Vec<f64>| {
            times.sort_by(f64::total_cmp);
            times[times.len() / 2]
        };
        let (triangle, full) = (median(&mut triangle), median(&mut full));
        println!(
            "{} {s:>2} vectors split by class: multiply_groups {triangle:.2} ms, full rows {full:.2} ms: {:.2}x",
            std::any::type_name::<F>(),
            full / triangle
        );
    }
}
