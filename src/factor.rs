//! The Nyström factor of a kernel: `Φ = K[:, P] W` with `W W' = K[P, P]⁺`, so that
//! `ΦΦ' = K[:, P] K[P, P]⁺ K[P, :]`, the kernel's Nyström approximation on the pool `P`
//! (docs/scale.md). Built in row blocks, never `m×m`.

use crate::error::{Error, Result};
use crate::kernel::{self, gemm, Kernel};
use crate::operator::allocate_factor;
use crate::progress::Progress;
use crate::real::Real;
use crate::tuning::FACTOR_BLOCK_ROWS;
use faer::{Mat, Side};
use ndarray::{s, Array2, ArrayView2, Axis};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

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
    let m = x.nrows();
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
    let width = whitening.ncols();
    let mut factor = allocate_factor::<F>(x.nrows(), width)?;
    let thread_pool = crate::pool::shared(n_threads)?;
    progress.add_total(x.nrows().div_ceil(FACTOR_BLOCK_ROWS));
    thread_pool.install(|| {
        factor
            .axis_chunks_iter_mut(Axis(0), FACTOR_BLOCK_ROWS)
            .into_par_iter()
            .enumerate()
            .try_for_each(|(b, block)| -> Result<()> {
                if stop.load(Ordering::Relaxed) {
                    return Err(Error::Interrupted);
                }
                let rows = b * FACTOR_BLOCK_ROWS..b * FACTOR_BLOCK_ROWS + block.nrows();
                let cross = kernel::cross(x.slice(s![rows, ..]), points, kernel, 1)?;
                gemm(block, cross.view(), whitening);
                progress.advance(1);
                Ok(())
            })
    })?;
    if stop.load(Ordering::Relaxed) {
        return Err(Error::Interrupted);
    }
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
}
