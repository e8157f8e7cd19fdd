//! Time of the kernel blocks (`kernel::gram_into`, `kernel::cross`, `kernel::expansion`,
//! the Gram by faer's GEMM, the others by ndarray's) against a yardstick, in turns:
//! `cargo run --release --example kernel_speed -- 7` (pairs; 7 if omitted).
//!
//! The Gram and cross kernels are timed against the memory floor of their output: a plain
//! parallel write of the same matrix on the same number of threads. Expansions (decision
//! values, `k = 50` basis points) are timed against the naive loop that sums
//! `w_j exp(−γ‖x − b_j‖²)` point by point; the one-row case is the latency of predicting
//! a single point. Each line gives the medians of `pairs` alternating runs, the median of
//! the per-pair ratios and their range.

use gkfda::kernel::{self, Kernel};
use gkfda::Real;
use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;
use std::time::Instant;

fn points<F: Real>(n: usize, d: usize, seed: u64) -> Array2<F> {
    let mut state = seed;
    Array2::from_shape_fn((n, d), |_| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        F::from_f64(((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0)
    })
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Mean time per call of `run` over `reps` calls: in milliseconds, or in microseconds
/// when `reps > 1` (the one-row latencies).
fn time_ms(reps: usize, run: &mut dyn FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..reps {
        run();
    }
    let unit = if reps > 1 { 1e6 } else { 1e3 };
    start.elapsed().as_secs_f64() * unit / reps as f64
}

/// Times `ours` and `yardstick` in alternating pairs (which goes first alternates too) and
/// prints one table row.
fn compare(
    label: &str,
    pairs: usize,
    reps: usize,
    ours: &mut dyn FnMut(),
    yardstick: &mut dyn FnMut(),
) {
    time_ms(reps, ours);
    time_ms(reps, yardstick);
    let (mut a, mut b, mut ratios) = (vec![], vec![], vec![]);
    for pair in 0..pairs {
        let (x, y) = if pair % 2 == 0 {
            let x = time_ms(reps, ours);
            (x, time_ms(reps, yardstick))
        } else {
            let y = time_ms(reps, yardstick);
            (time_ms(reps, ours), y)
        };
        a.push(x);
        b.push(y);
        ratios.push(x / y);
    }
    let low = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let high = ratios.iter().copied().fold(0.0, f64::max);
    println!(
        "| {label} | {:.4} | {:.4} | {:.3} | {low:.2}–{high:.2} |",
        median(&mut a),
        median(&mut b),
        median(&mut ratios)
    );
}

/// The memory floor of an output: every element written once, on `threads` threads.
fn fill<F: Real>(out: &mut Array2<F>, pool: &rayon::ThreadPool) {
    let values = out.as_slice_mut().expect("standard layout");
    pool.install(|| {
        values
            .par_chunks_mut(1 << 14)
            .for_each(|c| c.fill(F::one()))
    });
}

/// Decision values by the definition, one point and one basis point at a time.
fn naive_expansion<F: Real>(
    x: ArrayView2<F>,
    basis: ArrayView2<F>,
    weights: &[f64],
    gamma: f64,
) -> Vec<f64> {
    x.rows()
        .into_iter()
        .map(|point| {
            basis
                .rows()
                .into_iter()
                .zip(weights)
                .map(|(b, w)| {
                    let distance: f64 = point
                        .iter()
                        .zip(b)
                        .map(|(p, q)| (*p - *q).as_f64().powi(2))
                        .sum();
                    w * (-gamma * distance).exp()
                })
                .sum()
        })
        .collect()
}

fn matrices<F: Real>(pairs: usize) {
    let dtype = std::any::type_name::<F>();
    for d in [20, 200] {
        let kern = Kernel::Rbf {
            gamma: 1.0 / d as f64,
        };
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("pool");
            let m = 4000;
            let x = points::<F>(m, d, 1);
            let (mut out, mut floor) = (Array2::<F>::zeros((m, m)), Array2::<F>::zeros((m, m)));
            compare(
                &format!("gram rbf | {m}×{d} | {dtype} | {threads}"),
                pairs,
                1,
                &mut || kernel::gram_into(x.view(), &kern, threads, out.view_mut()).expect("gram"),
                &mut || fill(&mut floor, &pool),
            );
            let z = points::<F>(1000, d, 2);
            let mut floor = Array2::<F>::zeros((m, 1000));
            compare(
                &format!("cross rbf | {m}×1000×{d} | {dtype} | {threads}"),
                pairs,
                1,
                &mut || drop(kernel::cross(x.view(), z.view(), &kern, threads).expect("cross")),
                &mut || fill(&mut floor, &pool),
            );
        }
    }
}

fn expansions<F: Real>(pairs: usize) {
    let dtype = std::any::type_name::<F>();
    for d in [20, 200] {
        let gamma = 1.0 / d as f64;
        let kern = Kernel::Rbf { gamma };
        let basis = points::<F>(50, d, 2);
        let weights = points::<f64>(50, 1, 3);
        let column = weights.column(0).to_vec();
        for (n, reps) in [(1, 2000), (20_000, 1)] {
            let x = points::<F>(n, d, 1);
            let unit = if n == 1 { "1 row, µs/call" } else { "ms" };
            compare(
                &format!("expansion rbf k=50 ({unit}) | {n}×{d} | {dtype} | 1"),
                pairs,
                reps,
                &mut || {
                    let values =
                        kernel::expansion(x.view(), basis.view(), weights.view(), &[0.0], &kern, 1);
                    std::hint::black_box(values.expect("expansion"));
                },
                &mut || {
                    drop(std::hint::black_box(naive_expansion(
                        x.view(),
                        basis.view(),
                        &column,
                        gamma,
                    )))
                },
            );
        }
    }
}

fn main() {
    let pairs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(7);
    // faer picks its GEMM kernels at run time: AVX-512 where present, else AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    println!(
        "avx512f: {}",
        std::arch::is_x86_feature_detected!("avx512f")
    );
    println!("| operation | size | dtype | threads | gkfda ms | yardstick ms | ratio | range |");
    println!("|---|---|---|---|---|---|---|---|");
    matrices::<f64>(pairs);
    matrices::<f32>(pairs);
    expansions::<f64>(pairs);
    expansions::<f32>(pairs);
}
