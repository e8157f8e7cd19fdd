//! The Nyström factor of a kernel: `Φ = K[:, P] W` with `W W' = K[P, P]⁺`, so that
//! `ΦΦ' = K[:, P] K[P, P]⁺ K[P, :]`, the kernel's Nyström approximation on the pool `P`
//! (docs/scale.md). Built in row blocks, never `m×m`.

use crate::error::{check_stop, Error, Result};
use crate::kernel::{self, gemm, Kernel, Rows};
use crate::operator::allocate_factor;
use crate::progress::Progress;
use crate::real::Real;
use crate::tuning::FACTOR_BLOCK_ROWS;
use faer::{Mat, Side};
use ndarray::{s, Array2, ArrayView2, Axis};
use rayon::prelude::*;
use std::ops::Range;
use std::sync::atomic::AtomicBool;

/// Relative floor of the pool kernel's eigenvalues: directions of `K[P, P]` below
/// `floor · λ_max` (rounding, duplicated or nearly duplicated pool points) are dropped
/// rather than amplified by `λ^{-1/2}`; the float32 floor is its rounding level.
fn eigenvalue_floor<F: Real>() -> f64 {
    if std::mem::size_of::<F>() == 4 {
        1e-6
    } else {
        1e-12
    }
}

/// `W` (`p × p'`, `p' ≤ p`): `K[P, P] = U Λ U'`, `W = U_+ Λ_+^{-1/2}` over the eigenvalues
/// above the floor, in float64 whatever `F`.
fn pool_whitening<F: Real>(pool_kernel: &Array2<F>) -> Result<Array2<F>> {
    let p = pool_kernel.nrows();
    let gram = Mat::<f64>::from_fn(p, p, |i, j| pool_kernel[[i, j]].as_f64());
    let eigen = gram.self_adjoint_eigen(Side::Lower).map_err(|_| {
        Error::invalid(
            "factor_rank",
            "the pool's kernel matrix has no eigendecomposition",
        )
    })?;
    let (vectors, values) = (eigen.U(), eigen.S().column_vector());
    let largest = (0..p).map(|l| values[l]).fold(0.0f64, f64::max);
    if !(largest.is_finite() && largest > 0.0) {
        return Err(Error::invalid(
            "X",
            "the kernel of the factor's pool points is zero or not finite",
        ));
    }
    let floor = eigenvalue_floor::<F>() * largest;
    // Largest eigenvalues first: the factor's leading columns carry most of the kernel.
    let kept: Vec<usize> = (0..p).rev().filter(|&l| values[l] > floor).collect();
    Ok(Array2::from_shape_fn((p, kept.len()), |(i, c)| {
        let l = kept[c];
        F::from_f64(vectors[(i, l)] / values[l].sqrt())
    }))
}

/// The Nyström factor of `kernel` over the rows of `x` on the pool `pool` (indices of
/// rows of `x`): `Φ` (`m × p'`, row-major, `p' ≤ |pool|` after the eigenvalue floor), each
/// block of rows its cross kernel with the pool times `W`, one block a task. Gives up
/// with [`Error::Interrupted`] once `stop` is raised; the factor is allocated fallibly
/// ([`Error::OutOfMemory`]). The same as [`nystroem_whitening`] of the pool's points, then
/// [`nystroem_rows_with_stop`] of `x`: a factor made by chunks of rows on other machines
/// has the same rows.
pub fn nystroem_with_stop<F: Real>(
    x: ArrayView2<F>,
    pool: &[usize],
    kernel: &Kernel,
    n_threads: usize,
    stop: &AtomicBool,
) -> Result<Array2<F>> {
    nystroem_with_progress(x, pool, kernel, n_threads, stop, &Progress::new())
}

/// [`nystroem_with_stop`], which counts its blocks of rows in `progress` (all of them to
/// do once the pool's whitening is known, one done as each block is written) for a caller
/// on another thread to read.
pub fn nystroem_with_progress<F: Real>(
    x: ArrayView2<F>,
    pool: &[usize],
    kernel: &Kernel,
    n_threads: usize,
    stop: &AtomicBool,
    progress: &Progress,
) -> Result<Array2<F>> {
    kernel.validate_for::<F>()?;
    check_pool(pool, x.nrows())?;
    let points = x.select(Axis(0), pool);
    let whitening = nystroem_whitening(points.view(), kernel, n_threads)?;
    nystroem_rows_with_progress(
        x,
        points.view(),
        whitening.view(),
        kernel,
        n_threads,
        stop,
        progress,
    )
}

/// Refuses an empty pool, one larger than the `m` rows or naming a row past them.
fn check_pool(pool: &[usize], m: usize) -> Result<()> {
    if pool.is_empty() || pool.len() > m {
        return Err(Error::invalid(
            "factor_rank",
            format!(
                "must be between 1 and {m} (the sample size), got {}",
                pool.len()
            ),
        ));
    }
    if let Some(&bad) = pool.iter().find(|&&i| i >= m) {
        return Err(Error::invalid(
            "pool",
            format!("index {bad} is not below the sample size {m}"),
        ));
    }
    Ok(())
}

/// [`nystroem_with_progress`] of rows of either kind. The pool of sparse rows stays sparse
/// (indexed by feature): its kernel, and each block's cross kernel with it, are the sparse
/// path's ([`kernel::cross_rows_with_stop`]), so that a wide sparse `X` is never made dense.
pub fn nystroem_of_rows_with_progress<F: Real>(
    x: &Rows<'_, F>,
    pool: &[usize],
    kernel: &Kernel,
    n_threads: usize,
    stop: &AtomicBool,
    progress: &Progress,
) -> Result<Array2<F>> {
    let x = match x {
        Rows::Dense(x) => {
            return nystroem_with_progress(*x, pool, kernel, n_threads, stop, progress)
        }
        Rows::Csr(x) => x,
    };
    kernel.validate_for::<F>()?;
    check_pool(pool, x.nrows())?;
    let (pool_kernel, points) = kernel::pool_csr(x, pool, kernel, n_threads)?;
    let whitening = pool_whitening(&pool_kernel)?;
    factor_rows(
        x.nrows(),
        whitening.view(),
        |rows| kernel::cross_csr_prepared(&x.rows(rows), &points, kernel, 1, stop),
        n_threads,
        stop,
        progress,
    )
}

/// `W` of the pool `points` (`p × p'`, `p' ≤ p`): `K[P, P] = UΛU'` in float64, `W =
/// U₊Λ₊^{-1/2}` over the eigenvalues above the floor, largest first.
pub fn nystroem_whitening<F: Real>(
    points: ArrayView2<F>,
    kernel: &Kernel,
    n_threads: usize,
) -> Result<Array2<F>> {
    kernel.validate_for::<F>()?;
    if points.nrows() == 0 {
        return Err(Error::invalid(
            "factor_rank",
            "must be at least 1: the pool has no points",
        ));
    }
    let pool_kernel = kernel::cross(points, points, kernel, n_threads)?;
    pool_whitening(&pool_kernel)
}

/// The rows of `Φ` of the rows of `x`: each fixed block of rows its cross kernel with the
/// pool `points`, times `whitening` ([`nystroem_whitening`] of the points), one block a
/// task. A row depends only on itself, the points and `W`, so that chunks of rows made
/// apart are the rows of the whole. Gives up with [`Error::Interrupted`] once `stop` is
/// raised; the rows are allocated fallibly ([`Error::OutOfMemory`]).
pub fn nystroem_rows_with_stop<F: Real>(
    x: ArrayView2<F>,
    points: ArrayView2<F>,
    whitening: ArrayView2<F>,
    kernel: &Kernel,
    n_threads: usize,
    stop: &AtomicBool,
) -> Result<Array2<F>> {
    nystroem_rows_with_progress(
        x,
        points,
        whitening,
        kernel,
        n_threads,
        stop,
        &Progress::new(),
    )
}

/// [`nystroem_rows_with_stop`], which counts its blocks of rows in `progress` (all of them
/// to do at the start, one done as each block is written).
pub fn nystroem_rows_with_progress<F: Real>(
    x: ArrayView2<F>,
    points: ArrayView2<F>,
    whitening: ArrayView2<F>,
    kernel: &Kernel,
    n_threads: usize,
    stop: &AtomicBool,
    progress: &Progress,
) -> Result<Array2<F>> {
    kernel.validate_for::<F>()?;
    if points.ncols() != x.ncols() || whitening.nrows() != points.nrows() {
        return Err(Error::invalid(
            "whitening",
            format!(
                "must have one row per pool point ({} points of {} features, X has {}), got {} rows",
                points.nrows(),
                points.ncols(),
                x.ncols(),
                whitening.nrows()
            ),
        ));
    }
    factor_rows(
        x.nrows(),
        whitening,
        |rows| kernel::cross(x.slice(s![rows, ..]), points, kernel, 1),
        n_threads,
        stop,
        progress,
    )
}

/// The `m` rows of `Φ`: each fixed block of rows its `cross` kernel with the pool times
/// `whitening`, one block a task, counted in `progress`.
fn factor_rows<F: Real>(
    m: usize,
    whitening: ArrayView2<F>,
    cross: impl Fn(Range<usize>) -> Result<Array2<F>> + Sync,
    n_threads: usize,
    stop: &AtomicBool,
    progress: &Progress,
) -> Result<Array2<F>> {
    let mut factor = allocate_factor::<F>(m, whitening.ncols())?;
    let thread_pool = crate::pool::shared(n_threads)?;
    progress.add_total(m.div_ceil(FACTOR_BLOCK_ROWS));
    thread_pool.install(|| {
        factor
            .axis_chunks_iter_mut(Axis(0), FACTOR_BLOCK_ROWS)
            .into_par_iter()
            .enumerate()
            .try_for_each(|(b, block)| -> Result<()> {
                check_stop(stop)?;
                let rows = b * FACTOR_BLOCK_ROWS..b * FACTOR_BLOCK_ROWS + block.nrows();
                gemm(block, cross(rows)?.view(), whitening);
                progress.advance(1);
                Ok(())
            })
    })?;
    check_stop(stop)?;
    Ok(factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_of_every_point_reproduces_the_kernel() {
        let x = Array2::from_shape_fn((40, 3), |(i, j)| ((i * 7 + j * 3) % 11) as f64 / 5.0);
        let kernel = Kernel::Rbf { gamma: 0.4 };
        let pool: Vec<usize> = (0..40).collect();
        let stop = AtomicBool::new(false);
        let phi = nystroem_with_stop(x.view(), &pool, &kernel, 2, &stop).unwrap();
        let exact = kernel::cross(x.view(), x.view(), &kernel, 1).unwrap();
        let approx = phi.dot(&phi.t());
        let error = (&approx - &exact)
            .iter()
            .fold(0.0f64, |a, v| a.max(v.abs()));
        assert!(error < 1e-6, "{error}");
        // Each pool point's own row is exact whatever the pool.
        let small = [3usize, 17, 29];
        let phi = nystroem_with_stop(x.view(), &small, &kernel, 1, &stop).unwrap();
        let approx = phi.dot(&phi.t());
        for &i in &small {
            for &j in &small {
                assert!((approx[[i, j]] - exact[[i, j]]).abs() < 1e-9);
            }
        }
        let error = nystroem_with_stop(x.view(), &[40], &kernel, 1, &stop).unwrap_err();
        assert!(error.to_string().starts_with("pool: "), "{error}");
        let error = nystroem_with_stop(x.view(), &[], &kernel, 1, &stop).unwrap_err();
        assert!(error.to_string().starts_with("factor_rank: "), "{error}");
        // The rows of chunks made apart, from the pool's points and W, are the whole's.
        let points = x.select(Axis(0), &small);
        let whitening = nystroem_whitening(points.view(), &kernel, 1).unwrap();
        for chunk in [0..1, 1..17, 17..40] {
            let rows = nystroem_rows_with_stop(
                x.slice(s![chunk.clone(), ..]),
                points.view(),
                whitening.view(),
                &kernel,
                1,
                &stop,
            )
            .unwrap();
            assert_eq!(rows, phi.slice(s![chunk, ..]));
        }
        let raised = AtomicBool::new(true);
        let error = nystroem_with_stop(x.view(), &small, &kernel, 1, &raised).unwrap_err();
        assert_eq!(error, Error::Interrupted);
    }

    #[test]
    fn the_factor_counts_its_blocks() {
        let m = 2 * FACTOR_BLOCK_ROWS + 5;
        let x = Array2::from_shape_fn((m, 2), |(i, j)| ((i * 5 + j) % 13) as f64 / 6.0);
        let (progress, stop) = (Progress::new(), AtomicBool::new(false));
        let kernel = Kernel::Rbf { gamma: 0.5 };
        nystroem_with_progress(x.view(), &[0, 7, 300], &kernel, 2, &stop, &progress).unwrap();
        assert_eq!(progress.get(), (3, 3));
    }

    #[test]
    fn the_factor_of_sparse_rows_is_the_factor_of_their_dense_copy() {
        let m = FACTOR_BLOCK_ROWS + 30;
        let dense = Array2::from_shape_fn((m, 12), |(i, j)| {
            if (i * 7 + j * 5) % 4 == 0 {
                ((i * 3 + j) % 11) as f64 / 4.0 - 1.0
            } else {
                0.0
            }
        });
        let (mut indptr, mut indices, mut data) = (vec![0i32], Vec::new(), Vec::new());
        for row in dense.rows() {
            for (j, &v) in row.iter().enumerate().filter(|(_, v)| **v != 0.0) {
                indices.push(j as i64);
                data.push(v);
            }
            indptr.push(indices.len() as i32);
        }
        let csr = crate::csr::CsrView::new(
            (m, 12),
            crate::csr::Indices::I32(&indptr),
            crate::csr::Indices::I64(&indices),
            &data,
            "X",
        )
        .unwrap();
        let (stop, progress) = (AtomicBool::new(false), Progress::new());
        let pool = [5usize, 900, 17, 1030, 2];
        for kernel in [
            Kernel::Rbf { gamma: 0.3 },
            Kernel::Linear,
            Kernel::Poly {
                gamma: 0.5,
                degree: 2,
                coef0: 1.0,
            },
        ] {
            let of_dense = nystroem_with_stop(dense.view(), &pool, &kernel, 1, &stop).unwrap();
            let of_csr = nystroem_of_rows_with_progress(
                &Rows::Csr(csr.clone()),
                &pool,
                &kernel,
                2,
                &stop,
                &progress,
            )
            .unwrap();
            assert_eq!(of_dense.dim(), of_csr.dim(), "{kernel:?}");
            // The factor is fixed up to the signs of W's columns, which rounding could flip:
            // compare ΦΦ', the approximation itself.
            let (a, b) = (of_dense.dot(&of_dense.t()), of_csr.dot(&of_csr.t()));
            let largest = a
                .iter()
                .zip(&b)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            assert!(largest < 1e-9, "{kernel:?}: {largest}");
        }
        let error = nystroem_of_rows_with_progress(
            &Rows::Csr(csr.clone()),
            &[m],
            &Kernel::Linear,
            1,
            &stop,
            &progress,
        )
        .unwrap_err();
        assert!(error.to_string().starts_with("pool: "), "{error}");
    }
}
