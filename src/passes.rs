//! One read of the kernel for many right-hand sides: `out_j = K x_j`.
//!
//! Hand-written rather than a BLAS/faer GEMM for two reasons: every output element is a
//! dot product summed in one fixed order whatever the number of threads (rows are split
//! between threads, never the reduction), so the selection does not depend on
//! `n_threads`; and all right-hand sides of a pick or a stage share one streaming read
//! of `K`, which is the cost floor of the greedy loop (DESIGN §4).

use crate::real::Real;
use ndarray::linalg::general_mat_mul;
use ndarray::{s, Array2, ArrayView2, Axis};
use rayon::prelude::*;

/// Lanes of independent partial sums: enough for the compiler to vectorise the loop.
const LANES: usize = 8;
/// Rows per parallel task: large enough to amortise scheduling, small enough to balance.
const ROWS_PER_TASK: usize = 32;

/// Dot products of `row` with up to four vectors at once, in a fixed summation order
/// (eight partial sums, reduced pairwise, then the tail).
///
/// On x86-64 with AVX2 and FMA (checked at run time) explicit SIMD code does the same
/// sums with fused multiply-adds; a given machine always takes the same path, so results
/// never depend on the thread count.
#[inline]
pub(crate) fn dots<F: Real, const R: usize>(row: &[F], rhs: [&[F]; R]) -> [F; R] {
    debug_assert!(rhs.iter().all(|x| x.len() == row.len()));
    F::dots(row, rhs)
}

/// Per-type dot kernels: SIMD where the CPU has it, the portable loop otherwise.
pub trait Dots: Sized {
    fn dots<const R: usize>(row: &[Self], rhs: [&[Self]; R]) -> [Self; R];
}

impl Dots for f64 {
    #[inline]
    fn dots<const R: usize>(row: &[f64], rhs: [&[f64]; R]) -> [f64; R] {
        #[cfg(target_arch = "x86_64")]
        if has_fma() {
            // SAFETY: AVX2 and FMA are available (checked just above).
            return unsafe { simd::dots_f64(row, rhs) };
        }
        portable_dots(row, rhs)
    }
}

impl Dots for f32 {
    #[inline]
    fn dots<const R: usize>(row: &[f32], rhs: [&[f32]; R]) -> [f32; R] {
        #[cfg(target_arch = "x86_64")]
        if has_fma() {
            // SAFETY: AVX2 and FMA are available (checked just above).
            return unsafe { simd::dots_f32(row, rhs) };
        }
        portable_dots(row, rhs)
    }
}

#[cfg(target_arch = "x86_64")]
fn has_fma() -> bool {
    // `is_x86_feature_detected!` caches its answer: a relaxed atomic load.
    is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")
}

fn reduce_lanes<F: Real>(mut lanes: [F; LANES]) -> F {
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for lane in 0..width {
            lanes[lane] += lanes[lane + width];
        }
    }
    lanes[0]
}

fn portable_dots<F: Real, const R: usize>(row: &[F], rhs: [&[F]; R]) -> [F; R] {
    let n = row.len();
    let body = n - n % LANES;
    let mut acc = [[F::zero(); LANES]; R];
    for (chunk_index, row_chunk) in row[..body].chunks_exact(LANES).enumerate() {
        let base = chunk_index * LANES;
        for (lane_acc, x) in acc.iter_mut().zip(rhs.iter()) {
            for ((a, r), v) in lane_acc
                .iter_mut()
                .zip(row_chunk)
                .zip(&x[base..base + LANES])
            {
                *a += *r * *v;
            }
        }
    }
    let mut result = [F::zero(); R];
    for ((sum, lanes), x) in result.iter_mut().zip(acc).zip(rhs.iter()) {
        *sum = reduce_lanes(lanes);
        for (value, xv) in row[body..].iter().zip(&x[body..]) {
            *sum += *value * *xv;
        }
    }
    result
}

#[cfg(target_arch = "x86_64")]
mod simd {
    use super::{reduce_lanes, LANES};
    use std::arch::x86_64::*;

    /// Eight f64 partial sums per right-hand side in two 4-wide registers.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dots_f64<const R: usize>(row: &[f64], rhs: [&[f64]; R]) -> [f64; R] {
        let n = row.len();
        let body = n - n % LANES;
        let mut low = [_mm256_setzero_pd(); R];
        let mut high = [_mm256_setzero_pd(); R];
        let mut i = 0;
        while i < body {
            // SAFETY: i + 8 <= body <= n, and every rhs has length n.
            unsafe {
                let r0 = _mm256_loadu_pd(row.as_ptr().add(i));
                let r1 = _mm256_loadu_pd(row.as_ptr().add(i + 4));
                for j in 0..R {
                    let x = rhs[j].as_ptr().add(i);
                    low[j] = _mm256_fmadd_pd(r0, _mm256_loadu_pd(x), low[j]);
                    high[j] = _mm256_fmadd_pd(r1, _mm256_loadu_pd(x.add(4)), high[j]);
                }
            }
            i += LANES;
        }
        let mut result = [0.0; R];
        for j in 0..R {
            let mut lanes = [0.0f64; LANES];
            // SAFETY: `lanes` holds exactly two 4-wide vectors.
            unsafe {
                _mm256_storeu_pd(lanes.as_mut_ptr(), low[j]);
                _mm256_storeu_pd(lanes.as_mut_ptr().add(4), high[j]);
            }
            let mut sum = reduce_lanes(lanes);
            for l in body..n {
                sum = row[l].mul_add(rhs[j][l], sum);
            }
            result[j] = sum;
        }
        result
    }

    /// Eight f32 partial sums per right-hand side in one 8-wide register.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dots_f32<const R: usize>(row: &[f32], rhs: [&[f32]; R]) -> [f32; R] {
        let n = row.len();
        let body = n - n % LANES;
        let mut acc = [_mm256_setzero_ps(); R];
        let mut i = 0;
        while i < body {
            // SAFETY: i + 8 <= body <= n, and every rhs has length n.
            unsafe {
                let r = _mm256_loadu_ps(row.as_ptr().add(i));
                for j in 0..R {
                    acc[j] = _mm256_fmadd_ps(r, _mm256_loadu_ps(rhs[j].as_ptr().add(i)), acc[j]);
                }
            }
            i += LANES;
        }
        let mut result = [0.0; R];
        for j in 0..R {
            let mut lanes = [0.0f32; LANES];
            // SAFETY: `lanes` holds exactly one 8-wide vector.
            unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), acc[j]) };
            let mut sum = reduce_lanes(lanes);
            for l in body..n {
                sum = row[l].mul_add(rhs[j][l], sum);
            }
            result[j] = sum;
        }
        result
    }
}

/// `K · x_j` for every right-hand side, with `K` row-major `m×m`; one pass over `K`.
///
/// Returns the products, one vector per right-hand side.
pub(crate) fn multiply<F: Real>(
    pool: &rayon::ThreadPool,
    kernel: &[F],
    m: usize,
    rhs: &[&[F]],
) -> Vec<Vec<F>> {
    let r = rhs.len();
    if r == 0 {
        return Vec::new();
    }
    debug_assert!(rhs.iter().all(|x| x.len() == m));
    debug_assert_eq!(kernel.len(), m * m);
    if r >= GEMM_MIN_RHS {
        return multiply_gemm(pool, kernel, m, rhs);
    }
    // Row-major output (m × r) so that each task owns a contiguous slice.
    let mut out = vec![F::zero(); m * r];
    pool.install(|| {
        out.par_chunks_mut(ROWS_PER_TASK * r)
            .enumerate()
            .for_each(|(task, out_rows)| {
                let first_row = task * ROWS_PER_TASK;
                for (offset, out_row) in out_rows.chunks_exact_mut(r).enumerate() {
                    let i = first_row + offset;
                    let row = &kernel[i * m..(i + 1) * m];
                    let mut j = 0;
                    while j + 4 <= r {
                        let d = dots(row, [rhs[j], rhs[j + 1], rhs[j + 2], rhs[j + 3]]);
                        out_row[j..j + 4].copy_from_slice(&d);
                        j += 4;
                    }
                    while j + 2 <= r {
                        let d = dots(row, [rhs[j], rhs[j + 1]]);
                        out_row[j..j + 2].copy_from_slice(&d);
                        j += 2;
                    }
                    if j < r {
                        out_row[j] = dots(row, [rhs[j]])[0];
                    }
                }
            });
    });
    (0..r)
        .map(|j| (0..m).map(|i| out[i * r + j]).collect())
        .collect()
}

/// From this many right-hand sides on (a fused stage), a pass is compute-bound: a
/// register-blocked GEMM (matrixmultiply, through ndarray) beats the row dots, which
/// would stream every right-hand side from L2 for each row.
const GEMM_MIN_RHS: usize = 6;
/// Rows per GEMM task. Blocks are fixed, and each is one sequential GEMM, so the result
/// does not depend on the number of threads.
const GEMM_ROWS: usize = 128;

fn multiply_gemm<F: Real>(
    pool: &rayon::ThreadPool,
    kernel: &[F],
    m: usize,
    rhs: &[&[F]],
) -> Vec<Vec<F>> {
    let r = rhs.len();
    let mut stacked = Vec::with_capacity(m * r);
    for x in rhs {
        stacked.extend_from_slice(x);
    }
    // `stacked` is r×m row-major, i.e. the m×r right-hand side in column-major order.
    let x = ArrayView2::from_shape((r, m), &stacked)
        .expect("r·m values")
        .reversed_axes();
    let k = ArrayView2::from_shape((m, m), kernel).expect("m·m values");
    let mut out = Array2::<F>::zeros((m, r));
    pool.install(|| {
        out.axis_chunks_iter_mut(Axis(0), GEMM_ROWS)
            .into_par_iter()
            .enumerate()
            .for_each(|(b, mut block)| {
                let rows = b * GEMM_ROWS..b * GEMM_ROWS + block.nrows();
                general_mat_mul(F::one(), &k.slice(s![rows, ..]), &x, F::zero(), &mut block);
            });
    });
    out.columns()
        .into_iter()
        .map(|column| column.to_vec())
        .collect()
}

/// Per-row statistics of the initial kernel in one pass: `(Σ_{j∈+} K_ij, Σ_{j∈−} K_ij,
/// Σ_j D_j K_ij²)`, which for a symmetric `K` are the column statistics.
pub(crate) fn column_statistics<F: Real>(
    pool: &rayon::ThreadPool,
    kernel: &[F],
    m: usize,
    positive: &[F],
    negative: &[F],
    weight: &[F],
) -> (Vec<F>, Vec<F>, Vec<F>) {
    let mut stats = vec![F::zero(); 3 * m];
    pool.install(|| {
        stats
            .par_chunks_mut(3 * ROWS_PER_TASK)
            .enumerate()
            .for_each(|(task, out_rows)| {
                for (offset, out) in out_rows.chunks_exact_mut(3).enumerate() {
                    let i = task * ROWS_PER_TASK + offset;
                    let row = &kernel[i * m..(i + 1) * m];
                    let [p, n] = dots(row, [positive, negative]);
                    let mut d = F::zero();
                    for (value, w) in row.iter().zip(weight) {
                        d += *w * *value * *value;
                    }
                    out[0] = p;
                    out[1] = n;
                    out[2] = d;
                }
            });
    });
    let p = (0..m).map(|i| stats[3 * i]).collect();
    let n = (0..m).map(|i| stats[3 * i + 1]).collect();
    let d = (0..m).map(|i| stats[3 * i + 2]).collect();
    (p, n, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    }

    #[test]
    fn multiply_matches_naive_for_odd_sizes_and_any_thread_count() {
        for &m in &[1usize, 3, 19, 67] {
            let kernel: Vec<f64> = (0..m * m)
                .map(|t| ((t * 7919) % 97) as f64 / 97.0)
                .collect();
            let xs: Vec<Vec<f64>> = (0..7)
                .map(|j| (0..m).map(|i| ((i + 3 * j) % 11) as f64 - 5.0).collect())
                .collect();
            for r in 1..=7 {
                let rhs: Vec<&[f64]> = xs[..r].iter().map(|x| x.as_slice()).collect();
                let one = multiply(&pool(1), &kernel, m, &rhs);
                let two = multiply(&pool(2), &kernel, m, &rhs);
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
}
