//! What every block computation of a kernel shares: row blocks run in parallel and
//! watched for a stop, the RBF centre both sets move by, and bases prepared once.

use super::Kernel;
use crate::error::{check_stop, try_zeroed, Error, Result};
use crate::real::Real;
use crate::tuning::KERNEL_BLOCK_ROWS;
use ndarray::{Array2, ArrayView2, ArrayViewMut2, Axis, CowArray, Ix2};
use rayon::prelude::*;
use std::any::TypeId;
use std::sync::atomic::{AtomicBool, Ordering};

pub(super) fn squared_norms<F: Real>(x: ArrayView2<F>) -> Vec<F> {
    x.rows().into_iter().map(|r| r.dot(&r)).collect()
}

/// `x` as the kernel blocks should see it: moved by `-centre` for an RBF, as it is
/// otherwise. The RBF depends only on `x − z`, and `‖x‖² + ‖z‖² − 2x·z` cancels the digits
/// that the common offset of both sets takes (float32: kernel errors of 0.3 at an offset of
/// 1e3; float64: 1e-4 at 1e6), so both sets move by the same centre, computed in float64.
/// The centre is the mean of the set the model holds (the training points, the bases),
/// never of the points being predicted, so that a prediction does not depend on its batch.
pub(super) fn for_blocks<'a, F: Real>(
    x: ArrayView2<'a, F>,
    kernel: &Kernel,
    centre: Option<&[f64]>,
) -> CowArray<'a, F, Ix2> {
    match centre {
        Some(centre) if matches!(kernel, Kernel::Rbf { .. }) => {
            let mut moved = x.as_standard_layout().into_owned();
            for mut row in moved.rows_mut() {
                for (value, &c) in row.iter_mut().zip(centre) {
                    *value = F::from_f64(value.as_f64() - c);
                }
            }
            CowArray::from(moved)
        }
        _ => CowArray::from(x),
    }
}

/// The float64 mean of the rows of `z` when the kernel is an RBF: the centre of
/// [`for_blocks`], by which every prediction path ([`Bases`]) moves both sets.
pub(super) fn rbf_centre<F: Real>(z: ArrayView2<F>, kernel: &Kernel) -> Option<Vec<f64>> {
    if !matches!(kernel, Kernel::Rbf { .. }) {
        return None;
    }
    // Row by row (each feature summed in the rows' order): contiguous reads.
    let mut sums = vec![0.0; z.ncols()];
    for row in z.rows() {
        for (sum, value) in sums.iter_mut().zip(row) {
            *sum += value.as_f64();
        }
    }
    let rows = z.nrows().max(1) as f64;
    Some(sums.into_iter().map(|sum| sum / rows).collect())
}

/// [`rbf_centre`] for the Gram matrix of a fit, in float32 only: float64 Gram matrices are
/// computed from the points as they are, so that a fit's selection (and its ties) is that
/// of `gkfda.reference`, whose kernels are not moved.
pub(super) fn gram_centre<F: Real>(x: ArrayView2<F>, kernel: &Kernel) -> Option<Vec<f64>> {
    if TypeId::of::<F>() != TypeId::of::<f32>() {
        return None;
    }
    rbf_centre(x, kernel)
}

pub(super) fn allocate<F: Real>(rows: usize, cols: usize) -> Result<Array2<F>> {
    let len = rows.checked_mul(cols).ok_or(Error::OutOfMemory {
        what: "the kernel matrix",
        bytes: usize::MAX,
    })?;
    let buffer = try_zeroed::<F>(len, "the kernel matrix")?;
    Ok(Array2::from_shape_vec((rows, cols), buffer).expect("length matches shape"))
}

/// Runs `work(block_index, rows)` over blocks of `KERNEL_BLOCK_ROWS` rows of `out`, in parallel when
/// there is more than one block and more than one thread. Small jobs run on the calling
/// thread: starting a thread pool would cost more than the work. Each block first looks
/// at `stop`; once it is raised the blocks left are skipped and the call gives up with
/// [`Error::Interrupted`].
pub(super) fn for_each_row_block<T: Send + Sync>(
    mut out: ArrayViewMut2<T>,
    n_threads: usize,
    stop: &AtomicBool,
    work: impl Fn(usize, ArrayViewMut2<T>) + Sync,
) -> Result<()> {
    let work = |b: usize, block: ArrayViewMut2<T>| {
        if !stop.load(Ordering::Relaxed) {
            work(b, block);
        }
    };
    if n_threads <= 1 || out.nrows() <= KERNEL_BLOCK_ROWS {
        for (b, block) in out
            .axis_chunks_iter_mut(Axis(0), KERNEL_BLOCK_ROWS)
            .enumerate()
        {
            work(b, block);
        }
    } else {
        crate::pool::shared(n_threads)?.install(|| {
            out.axis_chunks_iter_mut(Axis(0), KERNEL_BLOCK_ROWS)
                .into_par_iter()
                .enumerate()
                .for_each(|(b, block)| work(b, block));
        });
    }
    check_stop(stop)?;
    Ok(())
}

/// A set of points on the right of a cross kernel or expansion, as its blocks see them:
/// moved by the RBF centre (see `for_blocks`), with their squared norms. Made
/// once, it saves a model the O(k·d) of both per prediction; the values are those
/// [`cross`] and [`expansion`] compute, bit for bit.
#[derive(Debug, Clone)]
pub(crate) struct Bases<F> {
    points: Array2<F>,
    centre: Option<Vec<f64>>,
    norms: Vec<F>,
}

impl<F: Real> Bases<F> {
    pub(crate) fn new(points: ArrayView2<F>, kernel: &Kernel) -> Self {
        let centre = rbf_centre(points, kernel);
        let points = for_blocks(points, kernel, centre.as_deref()).into_owned();
        let norms = squared_norms(points.view());
        Bases {
            points,
            centre,
            norms,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.points.nrows()
    }

    /// The points as the blocks see them (moved by the centre, if any).
    pub(crate) fn points(&self) -> ArrayView2<'_, F> {
        self.points.view()
    }

    pub(crate) fn centre(&self) -> Option<&[f64]> {
        self.centre.as_deref()
    }

    pub(crate) fn norms(&self) -> &[F] {
        &self.norms
    }
}
