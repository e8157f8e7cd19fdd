//! One read of the kernel for many right-hand sides: `out_j = K x_j`.
//!
//! Hand-written rather than a BLAS/faer GEMM for two reasons: every output element is a
//! dot product summed in one fixed order whatever the number of threads (rows are split
//! between threads, never the reduction), so the selection does not depend on
//! `n_threads`; and all right-hand sides of a pick or a stage share one streaming read
//! of `K`, which is the cost floor of the greedy loop (DESIGN §4).

use crate::real::Real;
use rayon::prelude::*;

/// Lanes of independent partial sums: enough for the compiler to vectorise the loop.
const LANES: usize = 8;
/// Rows per parallel task: large enough to amortise scheduling, small enough to balance.
const ROWS_PER_TASK: usize = 32;

/// Dot products of `row` with up to four vectors at once, in a fixed summation order.
pub(crate) fn dots<F: Real, const R: usize>(row: &[F], rhs: [&[F]; R]) -> [F; R] {
    let n = row.len();
    let mut acc = [[F::zero(); LANES]; R];
    let body = n - n % LANES;
    let row_chunks = row[..body].chunks_exact(LANES);
    for (chunk_index, row_chunk) in row_chunks.enumerate() {
        let base = chunk_index * LANES;
        for (lane_acc, x) in acc.iter_mut().zip(rhs.iter()) {
            let x_chunk = &x[base..base + LANES];
            for lane in 0..LANES {
                lane_acc[lane] += row_chunk[lane] * x_chunk[lane];
            }
        }
    }
    let mut result = [F::zero(); R];
    for ((sum, lanes), x) in result.iter_mut().zip(&acc).zip(rhs.iter()) {
        for &partial in lanes {
            *sum += partial;
        }
        for (value, xv) in row[body..].iter().zip(&x[body..]) {
            *sum += *value * *xv;
        }
    }
    result
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
