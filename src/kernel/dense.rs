//! Kernel matrices of dense rows: the symmetric Gram matrix of a fit and the cross
//! kernels against other points, each block a GEMM and then the kernel's map.

use super::blocks::{allocate, for_blocks, for_each_row_block, gram_centre, squared_norms, Bases};
use super::Kernel;
use crate::error::{check_stop, Error, Result};
use crate::real::Real;
use crate::tuning::KERNEL_BLOCK_ROWS;
use faer::linalg::matmul::matmul;
use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::traits::ComplexField;
use faer::{Accum, MatMut, MatRef, Par};
use ndarray::linalg::general_mat_mul;
use ndarray::{s, Array2, ArrayView2, ArrayViewMut2, Axis};
use rayon::prelude::*;
use std::any::TypeId;
use std::sync::atomic::{AtomicBool, Ordering};

/// `dst = lhs·rhs` by one sequential GEMM: faer's for `f64` and `f32` (0.70-0.85x the time
/// of ndarray's for the Gram blocks of 4,000 x 20 and x 200 points: `examples/kernel_speed`),
/// ndarray's for any other [`Real`]. Only the Gram matrix takes it: faer sends one row to
/// another kernel than a block, so the cross kernels and expansions, whose rows must not
/// depend on the batch they come in, keep ndarray's.
pub(crate) fn gemm<F: Real>(dst: ArrayViewMut2<F>, lhs: ArrayView2<F>, rhs: ArrayView2<F>) {
    structured_product(dst, Structure::Full, lhs, rhs);
}

/// `dst`'s lower triangle (the diagonal included) `= block'·block`, the rest of `dst` left
/// as it was: half a GEMM's multiply-adds for a symmetric product (faer's triangular
/// product, 0.53-0.57x the time of its GEMM at 1,024 x 1,000 in `f32`).
pub(crate) fn gram_lower<F: Real>(dst: ArrayViewMut2<F>, block: ArrayView2<F>) {
    structured_product(dst, Structure::LowerResult, block.t(), block);
}

/// `dst = lhs·tril(rhs)`, `rhs`'s strict upper triangle never read: half a GEMM's
/// multiply-adds, as [`gram_lower`].
pub(crate) fn times_lower<F: Real>(dst: ArrayViewMut2<F>, lhs: ArrayView2<F>, rhs: ArrayView2<F>) {
    structured_product(dst, Structure::LowerRight, lhs, rhs);
}

/// Which triangle a product computes or reads.
#[derive(Clone, Copy)]
enum Structure {
    Full,
    /// Only the result's lower triangle.
    LowerResult,
    /// The right operand's lower triangle alone.
    LowerRight,
}

fn structured_product<F: Real>(
    mut dst: ArrayViewMut2<F>,
    structure: Structure,
    lhs: ArrayView2<F>,
    rhs: ArrayView2<F>,
) {
    /// Runs the product as `T` when `F` is `T`; says whether it did.
    fn as_type<F: 'static, T: ComplexField + 'static>(
        dst: &mut ArrayViewMut2<F>,
        structure: Structure,
        lhs: &ArrayView2<F>,
        rhs: &ArrayView2<F>,
    ) -> bool {
        if TypeId::of::<F>() != TypeId::of::<T>() {
            return false;
        }
        // SAFETY: `F` is `T`; the views' pointers, shapes and strides describe live arrays
        // for the duration of the call, and `dst` is borrowed mutably.
        unsafe {
            let (lhs, rhs) = (faer_ref::<F, T>(lhs), faer_ref::<F, T>(rhs));
            let dst = MatMut::from_raw_parts_mut(
                dst.as_mut_ptr().cast::<T>(),
                dst.nrows(),
                dst.ncols(),
                dst.strides()[0],
                dst.strides()[1],
            );
            let one = faer::traits::math_utils::one::<T>();
            let (whole, lower) = (BlockStructure::Rectangular, BlockStructure::TriangularLower);
            match structure {
                Structure::Full => matmul(dst, Accum::Replace, lhs, rhs, one, Par::Seq),
                Structure::LowerResult => triangular::matmul(
                    dst,
                    lower,
                    Accum::Replace,
                    lhs,
                    whole,
                    rhs,
                    whole,
                    one,
                    Par::Seq,
                ),
                Structure::LowerRight => triangular::matmul(
                    dst,
                    whole,
                    Accum::Replace,
                    lhs,
                    whole,
                    rhs,
                    lower,
                    one,
                    Par::Seq,
                ),
            }
        }
        true
    }
    /// # Safety
    /// `F` is `T`.
    unsafe fn faer_ref<'a, F, T>(view: &'a ArrayView2<F>) -> MatRef<'a, T> {
        MatRef::from_raw_parts(
            view.as_ptr().cast::<T>(),
            view.nrows(),
            view.ncols(),
            view.strides()[0],
            view.strides()[1],
        )
    }
    if as_type::<F, f64>(&mut dst, structure, &lhs, &rhs)
        || as_type::<F, f32>(&mut dst, structure, &lhs, &rhs)
    {
        return;
    }
    match structure {
        Structure::LowerRight => {
            let lower =
                Array2::from_shape_fn(
                    rhs.raw_dim(),
                    |(i, j)| {
                        if j <= i {
                            rhs[(i, j)]
                        } else {
                            F::zero()
                        }
                    },
                );
            general_mat_mul(F::one(), &lhs, &lower, F::zero(), &mut dst);
        }
        Structure::Full | Structure::LowerResult => {
            general_mat_mul(F::one(), &lhs, &rhs, F::zero(), &mut dst);
        }
    }
}

/// The cross kernel `K[i, j] = κ(x_i, z_j)` (`n×p`), e.g. test points against bases.
pub fn cross<F: Real>(
    x: ArrayView2<F>,
    z: ArrayView2<F>,
    kernel: &Kernel,
    n_threads: usize,
) -> Result<Array2<F>> {
    cross_with_stop(x, z, kernel, n_threads, &AtomicBool::new(false))
}

/// [`cross`], which gives up with [`Error::Interrupted`] once `stop` is raised from another
/// thread: each block of rows looks at it first.
pub fn cross_with_stop<F: Real>(
    x: ArrayView2<F>,
    z: ArrayView2<F>,
    kernel: &Kernel,
    n_threads: usize,
    stop: &AtomicBool,
) -> Result<Array2<F>> {
    kernel.validate_for::<F>()?;
    if x.ncols() != z.ncols() {
        return Err(Error::invalid(
            "X",
            format!(
                "has {} features but the other set has {}",
                x.ncols(),
                z.ncols()
            ),
        ));
    }
    cross_prepared(x, &Bases::new(z, kernel), kernel, n_threads, stop)
}

/// [`cross_with_stop`] against prepared bases; `x` has their number of features.
pub(crate) fn cross_prepared<F: Real>(
    x: ArrayView2<F>,
    bases: &Bases<F>,
    kernel: &Kernel,
    n_threads: usize,
    stop: &AtomicBool,
) -> Result<Array2<F>> {
    kernel.validate_for::<F>()?;
    let mut out = allocate::<F>(x.nrows(), bases.len())?;
    let x = for_blocks(x, kernel, bases.centre());
    let (x, z) = (x.view(), bases.points());
    let (norms_x, norms_z) = (squared_norms(x), bases.norms());
    let work = |b: usize, mut block: ArrayViewMut2<F>| {
        let rows = b * KERNEL_BLOCK_ROWS..b * KERNEL_BLOCK_ROWS + block.nrows();
        // ndarray's GEMM here, not faer's: a row's values must not depend on the rows
        // computed with it (faer takes another kernel for one row than for a block), so
        // that a prediction is the same alone or in a batch.
        general_mat_mul(
            F::one(),
            &x.slice(s![rows.clone(), ..]),
            &z.t(),
            F::zero(),
            &mut block,
        );
        kernel.map_block(block, &norms_x[rows], norms_z);
    };
    for_each_row_block(out.view_mut(), n_threads, stop, work)?;
    Ok(out)
}

/// Raw pointer to the Gram buffer, shared by the mirroring tasks.
struct SharedBuffer<F>(*mut F);
// SAFETY: the mirroring tasks write disjoint lower-triangle entries and only read
// upper-triangle entries, which no task writes (see `gram`).
unsafe impl<F> Send for SharedBuffer<F> {}
unsafe impl<F> Sync for SharedBuffer<F> {}

/// The symmetric Gram matrix `K[i, j] = κ(x_i, x_j)` (`m×m`), exactly symmetric.
pub fn gram<F: Real>(x: ArrayView2<F>, kernel: &Kernel, n_threads: usize) -> Result<Array2<F>> {
    let m = x.nrows();
    let mut out = allocate::<F>(m, m)?;
    gram_into(x, kernel, n_threads, out.view_mut())?;
    Ok(out)
}

/// [`gram`] into `out`, an `m×m` array in standard (row-major, contiguous) layout that the
/// caller allocated: every element is written. The Python binding passes NumPy's own
/// zeroed array, whose pages are first touched here, by the threads that compute them.
pub fn gram_into<F: Real>(
    x: ArrayView2<F>,
    kernel: &Kernel,
    n_threads: usize,
    out: ArrayViewMut2<F>,
) -> Result<()> {
    gram_into_with_stop(x, kernel, n_threads, out, &AtomicBool::new(false))
}

/// [`gram_into`], which gives up with [`Error::Interrupted`] (`out` then partly written)
/// once `stop` is raised from another thread: each block of rows looks at it first.
pub fn gram_into_with_stop<F: Real>(
    x: ArrayView2<F>,
    kernel: &Kernel,
    n_threads: usize,
    mut out: ArrayViewMut2<F>,
    stop: &AtomicBool,
) -> Result<()> {
    kernel.validate_for::<F>()?;
    let m = x.nrows();
    check_gram_out(&out, m)?;
    let centre = gram_centre(x, kernel);
    let x = for_blocks(x, kernel, centre.as_deref());
    let x = x.view();
    let norms = squared_norms(x);
    let pool = crate::pool::shared(n_threads)?;
    pool.install(|| {
        // Upper block triangle: block row b covers columns from its own diagonal on.
        out.axis_chunks_iter_mut(Axis(0), KERNEL_BLOCK_ROWS)
            .into_par_iter()
            .enumerate()
            .for_each(|(b, mut block)| {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let start = b * KERNEL_BLOCK_ROWS;
                let rows = start..start + block.nrows();
                let mut upper = block.slice_mut(s![.., start..]);
                gemm(
                    upper.view_mut(),
                    x.slice(s![rows.clone(), ..]),
                    x.slice(s![start.., ..]).t(),
                );
                kernel.map_block(upper.view_mut(), &norms[rows], &norms[start..]);
                if let Kernel::Rbf { .. } = kernel {
                    for local in 0..block.nrows() {
                        block[[local, start + local]] = F::one();
                    }
                }
            });
        mirror_lower(out.view_mut(), stop);
    });
    check_stop(stop)?;
    Ok(())
}

/// Refuses an `out` for an `m × m` Gram matrix that is not contiguous and `m × m`.
pub(super) fn check_gram_out<F>(out: &ArrayViewMut2<F>, m: usize) -> Result<()> {
    if out.dim() != (m, m) || !out.is_standard_layout() {
        return Err(Error::invalid(
            "out",
            format!(
                "must be a contiguous {m}×{m} row-major array, got shape {:?}",
                out.dim()
            ),
        ));
    }
    Ok(())
}

/// Copies the upper triangle of the square `out` onto its lower one, tile by tile for cache
/// locality, in parallel on the current thread pool; skips the tiles left once `stop` is
/// raised.
pub(super) fn mirror_lower<F: Real>(mut out: ArrayViewMut2<F>, stop: &AtomicBool) {
    let m = out.nrows();
    debug_assert!(out.dim() == (m, m) && out.is_standard_layout());
    let buffer = SharedBuffer(out.as_mut_ptr());
    let buffer = &buffer;
    (0..m.div_ceil(KERNEL_BLOCK_ROWS))
        .into_par_iter()
        .for_each(|bi| {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let rows = bi * KERNEL_BLOCK_ROWS..((bi + 1) * KERNEL_BLOCK_ROWS).min(m);
            for bj in 0..=bi {
                let cols = bj * KERNEL_BLOCK_ROWS..((bj + 1) * KERNEL_BLOCK_ROWS).min(m);
                for i in rows.clone() {
                    for j in cols.clone().take_while(|&j| j < i) {
                        // SAFETY: writes (i, j) with j < i, only from the task owning row
                        // i; reads (j, i) with j < i, an upper entry nobody writes now.
                        unsafe { *buffer.0.add(i * m + j) = *buffer.0.add(j * m + i) };
                    }
                }
            }
        });
}
