//! Kernel matrices, computed in row blocks in parallel.
//!
//! Each block is one GEMM of a slab of rows against the other set (sequential inside a
//! block so that a value never depends on the thread count; faer's for the Gram matrix,
//! ndarray's elsewhere: see `gemm`), then the kernel's elementwise map. The symmetric Gram matrix computes only the upper block triangle and
//! mirrors it, so it is exactly symmetric and costs half the exponentials.

use crate::error::{try_zeroed, Error, Result};
use crate::real::Real;
use crate::tuning::KERNEL_BLOCK_ROWS;
use faer::linalg::matmul::matmul;
use faer::traits::ComplexField;
use faer::{Accum, MatMut, MatRef, Par};
use ndarray::linalg::general_mat_mul;
use ndarray::{s, Array2, ArrayView2, ArrayViewMut2, Axis, CowArray, Ix2};
use rayon::prelude::*;
use std::any::TypeId;
use std::sync::atomic::{AtomicBool, Ordering};

/// `dst = lhs·rhs` by one sequential GEMM: faer's for `f64` and `f32` (0.70-0.85x the time
/// of ndarray's for the Gram blocks of 4,000 x 20 and x 200 points: `examples/kernel_speed`),
/// ndarray's for any other [`Real`]. Only the Gram matrix takes it: faer sends one row to
/// another kernel than a block, so the cross kernels and expansions, whose rows must not
/// depend on the batch they come in, keep ndarray's.
pub(crate) fn gemm<F: Real>(mut dst: ArrayViewMut2<F>, lhs: ArrayView2<F>, rhs: ArrayView2<F>) {
    /// Runs the product as `T` when `F` is `T`; says whether it did.
    fn as_type<F: 'static, T: ComplexField + 'static>(
        dst: &mut ArrayViewMut2<F>,
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
            matmul(
                dst,
                Accum::Replace,
                lhs,
                rhs,
                faer::traits::math_utils::one::<T>(),
                Par::Seq,
            );
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
    if !(as_type::<F, f64>(&mut dst, &lhs, &rhs) || as_type::<F, f32>(&mut dst, &lhs, &rhs)) {
        general_mat_mul(F::one(), &lhs, &rhs, F::zero(), &mut dst);
    }
}

/// A positive semi-definite kernel function.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kernel {
    /// `x·z`
    Linear,
    /// `exp(-gamma ‖x − z‖²)` (the papers' width `w` is `1/gamma`).
    Rbf { gamma: f64 },
    /// `(gamma x·z + coef0)^degree`
    Poly { gamma: f64, degree: u32, coef0: f64 },
}

impl Kernel {
    /// The kernels' names, as [`Kernel::from_name`] reads them and the Python package lists
    /// them (`gkfda.KERNELS`).
    pub const NAMES: [&'static str; 3] = ["rbf", "linear", "poly"];

    /// The kernel called `name`, with those of the parameters it takes.
    ///
    /// ```
    /// use gkfda::Kernel;
    /// assert_eq!(Kernel::from_name("rbf", 0.5, 3, 1.0), Ok(Kernel::Rbf { gamma: 0.5 }));
    /// assert!(Kernel::from_name("sigmoid", 0.5, 3, 1.0).is_err());
    /// ```
    pub fn from_name(name: &str, gamma: f64, degree: u32, coef0: f64) -> Result<Kernel> {
        match name {
            "rbf" => Ok(Kernel::Rbf { gamma }),
            "linear" => Ok(Kernel::Linear),
            "poly" => Ok(Kernel::Poly {
                gamma,
                degree,
                coef0,
            }),
            other => Err(Error::invalid(
                "kernel",
                format!(
                    "unknown name {other:?}; expected one of {}",
                    Kernel::NAMES.join(", ")
                ),
            )),
        }
    }

    /// Checks the parameters once, before any work.
    pub fn validate(&self) -> Result<()> {
        match *self {
            Kernel::Linear => Ok(()),
            Kernel::Rbf { gamma } | Kernel::Poly { gamma, .. }
                if !(gamma.is_finite() && gamma > 0.0) =>
            {
                Err(Error::invalid(
                    "gamma",
                    format!("must be a positive finite number, got {gamma}"),
                ))
            }
            Kernel::Poly { degree: 0, .. } => Err(Error::invalid("degree", "must be at least 1")),
            // The power is taken by `powi`, whose exponent is an i32.
            Kernel::Poly { degree, .. } if degree > i32::MAX as u32 => Err(Error::invalid(
                "degree",
                format!("must be at most {}, got {degree}", i32::MAX),
            )),
            Kernel::Poly { coef0, .. } if !coef0.is_finite() => Err(Error::invalid(
                "coef0",
                format!("must be finite, got {coef0}"),
            )),
            _ => Ok(()),
        }
    }

    /// [`Kernel::validate`], and a `gamma` that `F` can hold: a float32 `gamma` beyond
    /// `f32::MAX` would be infinite, and `∞ · 0` a NaN kernel value at distance 0.
    pub(crate) fn validate_for<F: Real>(&self) -> Result<()> {
        self.validate()?;
        match *self {
            Kernel::Rbf { gamma } | Kernel::Poly { gamma, .. }
                if gamma > F::max_value().as_f64() =>
            {
                Err(Error::invalid(
                    "gamma",
                    format!(
                        "{gamma} is beyond the range of {}; use float64",
                        std::any::type_name::<F>()
                    ),
                ))
            }
            _ => Ok(()),
        }
    }

    /// Maps inner products (and squared norms, for the RBF) to kernel values in place.
    fn map_block<F: Real>(&self, mut block: ArrayViewMut2<F>, norms_x: &[F], norms_z: &[F]) {
        match *self {
            Kernel::Linear => {}
            Kernel::Rbf { gamma } => {
                let minus_gamma = F::from_f64(-gamma);
                let two = F::from_f64(2.0);
                for (mut row, &nx) in block.rows_mut().into_iter().zip(norms_x) {
                    // exp(−γ (|x|² + |z|² − 2 x·z)) over the row: every caller here maps
                    // blocks of row-major arrays, whose rows are contiguous.
                    let values = row
                        .as_slice_mut()
                        .expect("kernel blocks have contiguous rows");
                    for (value, &nz) in values.iter_mut().zip(norms_z) {
                        // Rounding can make a tiny distance negative: clamp it to 0, but let
                        // a NaN through (`max` would turn it into 0, and its kernel value to 1).
                        let mut distance = nx + nz - two * *value;
                        if distance.is_nan() && ((nx == F::infinity()) != (nz == F::infinity())) {
                            // One squared norm beyond `F`'s range, the other within it, and
                            // a product that overflowed too (∞ − ∞): the points are farther
                            // apart than `F` holds, at kernel value 0, as in a wider type.
                            // Both beyond it (a Gram matrix of such points, whose diagonal
                            // is 1) cannot be told apart: the NaN stays and is refused as
                            // the overflow it is. A NaN point has a NaN norm and keeps it.
                            distance = F::infinity();
                        }
                        *value = minus_gamma
                            * if distance < F::zero() {
                                F::zero()
                            } else {
                                distance
                            };
                    }
                    F::exp_in_place(values);
                }
            }
            Kernel::Poly {
                gamma,
                degree,
                coef0,
            } => {
                let (gamma, coef0) = (F::from_f64(gamma), F::from_f64(coef0));
                block.mapv_inplace(|g| (gamma * g + coef0).powi(degree as i32));
            }
        }
    }
}

fn squared_norms<F: Real>(x: ArrayView2<F>) -> Vec<F> {
    x.rows().into_iter().map(|r| r.dot(&r)).collect()
}

/// `x` as the kernel blocks should see it: moved by `-centre` for an RBF, as it is
/// otherwise. The RBF depends only on `x − z`, and `‖x‖² + ‖z‖² − 2x·z` cancels the digits
/// that the common offset of both sets takes (float32: kernel errors of 0.3 at an offset of
/// 1e3; float64: 1e-4 at 1e6), so both sets move by the same centre, computed in float64.
/// The centre is the mean of the set the model holds (the training points, the bases),
/// never of the points being predicted, so that a prediction does not depend on its batch.
fn for_blocks<'a, F: Real>(
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
fn rbf_centre<F: Real>(z: ArrayView2<F>, kernel: &Kernel) -> Option<Vec<f64>> {
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
fn gram_centre<F: Real>(x: ArrayView2<F>, kernel: &Kernel) -> Option<Vec<f64>> {
    if TypeId::of::<F>() != TypeId::of::<f32>() {
        return None;
    }
    rbf_centre(x, kernel)
}

fn allocate<F: Real>(rows: usize, cols: usize) -> Result<Array2<F>> {
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
fn for_each_row_block<T: Send + Sync>(
    out: &mut Array2<T>,
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
    if stop.load(Ordering::Relaxed) {
        return Err(Error::Interrupted);
    }
    Ok(())
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
    for_each_row_block(&mut out, n_threads, stop, work)?;
    Ok(out)
}

/// Kernel expansions `out[i, c] = Σ_j weights[j, c] κ(x_i, basis_j) + bias[c]` (`n×C`):
/// the decision values of fitted models, without materialising the `n×k` kernel.
///
/// Rows are processed in blocks (one small GEMM and the kernel map per block); with
/// `n_threads == 1` or a single block no thread pool is started, which keeps the latency
/// of one-row predictions low.
pub fn expansion<F: Real>(
    x: ArrayView2<F>,
    basis: ArrayView2<F>,
    weights: ArrayView2<f64>,
    bias: &[f64],
    kernel: &Kernel,
    n_threads: usize,
) -> Result<Array2<f64>> {
    let stop = AtomicBool::new(false);
    expansion_with_stop(x, basis, weights, bias, kernel, n_threads, &stop)
}

/// [`expansion`], which gives up with [`Error::Interrupted`] once `stop` is raised from
/// another thread: each block of rows looks at it first.
pub fn expansion_with_stop<F: Real>(
    x: ArrayView2<F>,
    basis: ArrayView2<F>,
    weights: ArrayView2<f64>,
    bias: &[f64],
    kernel: &Kernel,
    n_threads: usize,
    stop: &AtomicBool,
) -> Result<Array2<f64>> {
    kernel.validate_for::<F>()?;
    if x.ncols() != basis.ncols() {
        return Err(Error::invalid(
            "X",
            format!(
                "has {} features but the model was fitted with {}",
                x.ncols(),
                basis.ncols()
            ),
        ));
    }
    let (k, classes) = weights.dim();
    if k != basis.nrows() || bias.len() != classes {
        return Err(Error::invalid(
            "weights",
            format!(
                "shape ({k}, {classes}) does not match {} bases and {} biases",
                basis.nrows(),
                bias.len()
            ),
        ));
    }
    expansion_prepared(
        x,
        &Bases::new(basis, kernel),
        weights,
        bias,
        kernel,
        n_threads,
        stop,
    )
}

/// [`expansion_with_stop`] against prepared bases; `x` has their number of features and
/// `weights` is `bases × bias.len()`.
pub(crate) fn expansion_prepared<F: Real>(
    x: ArrayView2<F>,
    bases: &Bases<F>,
    weights: ArrayView2<f64>,
    bias: &[f64],
    kernel: &Kernel,
    n_threads: usize,
    stop: &AtomicBool,
) -> Result<Array2<f64>> {
    kernel.validate_for::<F>()?;
    let (k, classes) = weights.dim();
    let n = x.nrows();
    let buffer = try_zeroed::<f64>(n.saturating_mul(classes), "the decision values")?;
    let mut out = Array2::from_shape_vec((n, classes), buffer).expect("length matches shape");
    let x = for_blocks(x, kernel, bases.centre());
    let (x, basis) = (x.view(), bases.points());
    let norms_basis = bases.norms();
    let bias_row = ndarray::ArrayView1::from(bias);
    let work = |b: usize, mut out_block: ArrayViewMut2<f64>| {
        let rows = b * KERNEL_BLOCK_ROWS..b * KERNEL_BLOCK_ROWS + out_block.nrows();
        let x_block = x.slice(s![rows, ..]);
        let mut values = Array2::<F>::zeros((x_block.nrows(), k));
        // ndarray's GEMMs, as in `cross_prepared`: batch-invariant predictions.
        general_mat_mul(F::one(), &x_block, &basis.t(), F::zero(), &mut values);
        kernel.map_block(values.view_mut(), &squared_norms(x_block), norms_basis);
        // The weights are f64 whatever F: the sums run in f64, by a GEMM of the block
        // (f32 values widened first; f64 ones used as they are).
        out_block.assign(&bias_row);
        let widened;
        let values_f64 = match (&values as &dyn std::any::Any).downcast_ref::<Array2<f64>>() {
            Some(values) => values,
            None => {
                widened = values.mapv(|value| value.as_f64());
                &widened
            }
        };
        general_mat_mul(1.0, values_f64, &weights, 1.0, &mut out_block);
    };
    for_each_row_block(&mut out, n_threads, stop, work)?;
    // One look at each of the n·C outputs, nothing beside a row's k kernel values.
    refuse_overflow::<F>(out)
}

/// [`expansion_prepared`] of a few rows, each by one direct pass over the bases: SIMD
/// dot products against each basis, the kernel map of [`Kernel::map_block`] and the
/// weighted sums, with no GEMM set-up (packing the bases cost more than the products for
/// one row: ~2.3x the floor of `examples/serving_latency` at k = 50, d = 20). The sums run
/// in another order than the GEMM's, so a row agrees with [`expansion`] to rounding
/// (~1e-16 relative), not bit for bit; rows predicted this way agree with each other
/// whatever the batch.
pub(crate) fn expansion_direct<F: Real>(
    x: ArrayView2<F>,
    bases: &Bases<F>,
    weights: ArrayView2<f64>,
    bias: &[f64],
    kernel: &Kernel,
) -> Result<Array2<f64>> {
    kernel.validate_for::<F>()?;
    let (k, outputs) = weights.dim();
    let d = x.ncols();
    let mut out = Array2::<f64>::zeros((x.nrows(), outputs));
    let mut row = vec![F::zero(); d];
    let mut values = vec![F::zero(); k];
    for (x_row, mut out_row) in x.rows().into_iter().zip(out.rows_mut()) {
        for (f, (moved, &value)) in row.iter_mut().zip(x_row).enumerate() {
            *moved = match bases.centre() {
                Some(centre) if matches!(kernel, Kernel::Rbf { .. }) => {
                    F::from_f64(value.as_f64() - centre[f])
                }
                _ => value,
            };
        }
        let norm = crate::simd::dots(&row, [&row[..]])[0];
        for (value, basis) in values.iter_mut().zip(bases.points().rows()) {
            let basis = basis.as_slice().expect("bases are row-major");
            *value = crate::simd::dots(&row, [basis])[0];
        }
        let block = ArrayViewMut2::from_shape((1, k), &mut values[..]).expect("one row of k");
        kernel.map_block(block, &[norm], bases.norms());
        for (c, out) in out_row.iter_mut().enumerate() {
            let sum: f64 = values
                .iter()
                .zip(weights.column(c))
                .map(|(v, w)| v.as_f64() * w)
                .sum();
            *out = sum + bias[c];
        }
    }
    refuse_overflow::<F>(out)
}

/// `out`, or an error naming `X` when a value is not finite: finite points whose kernel
/// values overflow `F` (a polynomial of large features, the norms of an RBF in float32)
/// give infinite or NaN sums, refused rather than returned.
fn refuse_overflow<F: Real>(out: Array2<f64>) -> Result<Array2<f64>> {
    if !out.iter().all(|value| value.is_finite()) {
        return Err(Error::invalid(
            "X",
            format!(
                "its kernel values with the model's bases overflow {}; scale the features",
                std::any::type_name::<F>()
            ),
        ));
    }
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
    if out.dim() != (m, m) || !out.is_standard_layout() {
        return Err(Error::invalid(
            "out",
            format!(
                "must be a contiguous {m}×{m} row-major array, got shape {:?}",
                out.dim()
            ),
        ));
    }
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
        // Lower part: K[i, j] = K[j, i] for j < i, tile by tile for cache locality.
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
    });
    if stop.load(Ordering::Relaxed) {
        return Err(Error::Interrupted);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    fn points(n: usize, d: usize, seed: u64) -> Array2<f64> {
        let mut state = seed;
        Array2::from_shape_fn((n, d), |_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
    }

    fn naive(x: &Array2<f64>, z: &Array2<f64>, kernel: &Kernel) -> Array2<f64> {
        Array2::from_shape_fn((x.nrows(), z.nrows()), |(i, j)| {
            let (a, b) = (x.row(i), z.row(j));
            match *kernel {
                Kernel::Linear => a.dot(&b),
                Kernel::Rbf { gamma } => (-gamma * (&a - &b).mapv(|v| v * v).sum()).exp(),
                Kernel::Poly {
                    gamma,
                    degree,
                    coef0,
                } => (gamma * a.dot(&b) + coef0).powi(degree as i32),
            }
        })
    }

    #[test]
    fn gram_and_cross_match_the_definitions_at_odd_sizes() {
        let kernels = [
            Kernel::Linear,
            Kernel::Rbf { gamma: 0.7 },
            Kernel::Poly {
                gamma: 0.5,
                degree: 3,
                coef0: 1.0,
            },
        ];
        for &(n, p, d) in &[(1, 1, 1), (3, 19, 2), (131, 67, 5)] {
            let (x, z) = (points(n, d, 1), points(p, d, 2));
            for kernel in &kernels {
                let g = gram(x.view(), kernel, 2).unwrap();
                let expected = naive(&x, &x, kernel);
                assert!((&g - &expected).iter().all(|e| e.abs() < 1e-12));
                assert_eq!(g, g.t(), "gram must be exactly symmetric");
                let c = cross(x.view(), z.view(), kernel, 2).unwrap();
                assert!((&c - &naive(&x, &z, kernel))
                    .iter()
                    .all(|e| e.abs() < 1e-12));
                assert_eq!(c, cross(x.view(), z.view(), kernel, 1).unwrap());
            }
        }
    }

    #[test]
    fn a_raised_stop_flag_ends_the_kernel_matrix() {
        let x = points(200, 3, 4);
        let mut out = Array2::<f64>::zeros((200, 200));
        let kernel = Kernel::Rbf { gamma: 0.5 };
        let raised = AtomicBool::new(true);
        assert_eq!(
            gram_into_with_stop(x.view(), &kernel, 2, out.view_mut(), &raised),
            Err(Error::Interrupted)
        );
        let lowered = AtomicBool::new(false);
        gram_into_with_stop(x.view(), &kernel, 2, out.view_mut(), &lowered).unwrap();
        assert_eq!(out, gram(x.view(), &kernel, 2).unwrap());
    }

    #[test]
    fn a_raised_stop_flag_ends_cross_kernels_and_expansions_on_any_thread_count() {
        let (x, basis) = (points(150, 3, 8), points(20, 3, 9));
        let weights = points(20, 2, 10);
        let bias = [0.5, -1.0];
        let kernel = Kernel::Rbf { gamma: 0.5 };
        let (raised, lowered) = (AtomicBool::new(true), AtomicBool::new(false));
        for threads in [1, 2] {
            assert_eq!(
                cross_with_stop(x.view(), basis.view(), &kernel, threads, &raised),
                Err(Error::Interrupted)
            );
            assert_eq!(
                cross_with_stop(x.view(), basis.view(), &kernel, threads, &lowered),
                cross(x.view(), basis.view(), &kernel, threads)
            );
            let expand = |stop| {
                expansion_with_stop(
                    x.view(),
                    basis.view(),
                    weights.view(),
                    &bias,
                    &kernel,
                    threads,
                    stop,
                )
            };
            assert_eq!(expand(&raised), Err(Error::Interrupted));
            assert_eq!(
                expand(&lowered),
                expansion(
                    x.view(),
                    basis.view(),
                    weights.view(),
                    &bias,
                    &kernel,
                    threads
                )
            );
        }
    }

    #[test]
    fn expansion_equals_kernel_times_weights() {
        let (x, basis) = (points(150, 4, 5), points(13, 4, 6));
        let weights = points(13, 3, 7);
        let bias = [0.5, -1.0, 2.0];
        let kernel = Kernel::Rbf { gamma: 0.8 };
        let expected = naive(&x, &basis, &kernel).dot(&weights) + ndarray::arr1(&bias);
        for threads in [1, 2] {
            let actual = expansion(
                x.view(),
                basis.view(),
                weights.view(),
                &bias,
                &kernel,
                threads,
            )
            .unwrap();
            assert!((&actual - &expected).iter().all(|e| e.abs() < 1e-12));
        }
        let wrong = expansion(
            x.view(),
            basis.view(),
            weights.slice(s![..5, ..]),
            &bias,
            &kernel,
            1,
        );
        assert!(wrong.is_err());
    }

    #[test]
    fn gram_into_a_caller_array_is_gram_and_refuses_a_wrong_one() {
        let x = points(70, 3, 5);
        let kernel = Kernel::Rbf { gamma: 0.7 };
        let expected = gram(x.view(), &kernel, 2).unwrap();
        let mut out = Array2::from_elem((70, 70), f64::NAN); // every element is written
        gram_into(x.view(), &kernel, 2, out.view_mut()).unwrap();
        assert_eq!(out, expected);
        let mut wrong = Array2::<f64>::zeros((70, 69));
        assert!(gram_into(x.view(), &kernel, 2, wrong.view_mut()).is_err());
        let mut transposed = Array2::<f64>::zeros((70, 70));
        assert!(gram_into(x.view(), &kernel, 2, transposed.view_mut().reversed_axes()).is_err());
    }

    #[test]
    fn f32_kernels_and_single_rows_match_f64() {
        // f32 Gram blocks take faer's f32 GEMM; a row's expansion is the same alone or in a batch.
        let (x, basis) = (points(70, 6, 11), points(9, 6, 12));
        let weights = points(9, 2, 13);
        let (x32, basis32) = (x.mapv(|v| v as f32), basis.mapv(|v| v as f32));
        let bias = [0.25, -0.5];
        for kernel in [Kernel::Linear, Kernel::Rbf { gamma: 0.6 }] {
            let close = |a: &Array2<f32>, b: &Array2<f64>| {
                a.iter().zip(b).all(|(a, b)| (*a as f64 - b).abs() < 1e-5)
            };
            assert!(close(
                &gram(x32.view(), &kernel, 2).unwrap(),
                &naive(&x, &x, &kernel)
            ));
            let g32 = gram(x32.view(), &kernel, 2).unwrap();
            assert_eq!(g32, g32.t());
            assert!(close(
                &cross(x32.view(), basis32.view(), &kernel, 1).unwrap(),
                &naive(&x, &basis, &kernel)
            ));
            let all = expansion(x.view(), basis.view(), weights.view(), &bias, &kernel, 1);
            let all = all.unwrap();
            for i in [0, 33, 69] {
                let one = x.slice(s![i..i + 1, ..]);
                let row = expansion(one, basis.view(), weights.view(), &bias, &kernel, 1);
                let row = row.unwrap();
                assert!((&row.row(0) - &all.row(i)).iter().all(|e| e.abs() < 1e-12));
                let one32 = x32.slice(s![i..i + 1, ..]);
                let row32 = expansion(one32, basis32.view(), weights.view(), &bias, &kernel, 1);
                assert!((&row32.unwrap().row(0) - &all.row(i))
                    .iter()
                    .all(|e| e.abs() < 1e-4));
            }
        }
    }

    #[test]
    fn float32_rbf_kernels_far_from_the_origin_keep_their_digits() {
        let rbf = Kernel::Rbf { gamma: 0.7 };
        for offset in [1e2, 1e3, 1e4] {
            let (x, z) = (points(40, 3, 5), points(7, 3, 6));
            let (x, z) = (x.mapv(|v| v + offset), z.mapv(|v| v + offset));
            let (x32, z32) = (x.mapv(|v| v as f32), z.mapv(|v| v as f32));
            // The float64 kernels of the float32 points: what float32 can be asked to match.
            let (x64, z64) = (x32.mapv(f64::from), z32.mapv(f64::from));
            let close = |a: &Array2<f32>, b: &Array2<f64>| {
                a.iter().zip(b).all(|(a, b)| (*a as f64 - b).abs() < 1e-5)
            };
            assert!(close(
                &gram(x32.view(), &rbf, 2).unwrap(),
                &naive(&x64, &x64, &rbf)
            ));
            let cross32 = cross(x32.view(), z32.view(), &rbf, 1).unwrap();
            assert!(close(&cross32, &naive(&x64, &z64, &rbf)));
            let weights = points(7, 1, 7);
            let values = expansion(x32.view(), z32.view(), weights.view(), &[0.0], &rbf, 1);
            let expected = naive(&x64, &z64, &rbf).dot(&weights);
            let error = (&values.unwrap() - &expected).mapv(f64::abs);
            assert!(error.iter().all(|e| *e < 1e-4), "offset {offset}");
        }
    }

    #[test]
    fn float64_rbf_predictions_far_from_the_origin_keep_their_digits() {
        // Every prediction path (cross kernel, batch expansion, one-row direct expansion)
        // against the difference-then-square definition, the points moved by a common offset.
        let rbf = Kernel::Rbf { gamma: 0.7 };
        let weights = points(7, 2, 7);
        let bias = [0.25, -0.5];
        for offset in [0.0, 1e3, 1e6, 1e7] {
            let (x, z) = (points(40, 3, 5), points(7, 3, 6));
            let (x, z) = (x.mapv(|v| v + offset), z.mapv(|v| v + offset));
            let expected = naive(&x, &z, &rbf);
            // Differences of points 1e7 apart are exact to their own rounding, 1e-9 there.
            let tolerance = if offset > 1e6 { 1e-8 } else { 1e-9 };
            let error = (&cross(x.view(), z.view(), &rbf, 2).unwrap() - &expected).mapv(f64::abs);
            assert!(error.iter().all(|e| *e < tolerance), "offset {offset}");
            let values = expected.dot(&weights) + ndarray::arr1(&bias);
            let batch = expansion(x.view(), z.view(), weights.view(), &bias, &rbf, 1).unwrap();
            let error = (&batch - &values).mapv(f64::abs);
            assert!(error.iter().all(|e| *e < tolerance), "offset {offset}");
            let bases = Bases::new(z.view(), &rbf);
            for i in [0, 17, 38] {
                let one = x.slice(s![i..i + 2, ..]);
                let direct = expansion_direct(one, &bases, weights.view(), &bias, &rbf).unwrap();
                let error = (&direct - &values.slice(s![i..i + 2, ..])).mapv(f64::abs);
                assert!(error.iter().all(|e| *e < tolerance), "offset {offset}");
            }
        }
    }

    #[test]
    fn float32_points_beyond_the_range_of_their_squares_are_at_kernel_value_zero() {
        // Bases on both sides of their centre: the products x·s of a point near f32::MAX
        // overflow to +∞ and −∞, and ‖x‖² to +∞; the point is at kernel value 0, the bias
        // alone, as the float64 kernel gives, not a NaN refused as an overflow.
        let rbf = Kernel::Rbf { gamma: 0.5 };
        let basis = points(6, 3, 2).mapv(|v| (3.0 * v) as f32);
        let weights = points(6, 1, 3);
        for value in [1e30_f32, 3e38, -3e38] {
            let mut far = Array2::from_elem((3, 3), value);
            far[[1, 0]] = -value;
            far[[2, 1]] = 0.5;
            let c = cross(far.view(), basis.view(), &rbf, 1).unwrap();
            assert!(c.iter().all(|v| *v == 0.0), "{value}: {c}");
            let values = expansion(far.view(), basis.view(), weights.view(), &[0.5], &rbf, 1);
            assert!(values.unwrap().iter().all(|v| *v == 0.5), "{value}");
            let bases = Bases::new(basis.view(), &rbf);
            let direct = expansion_direct(far.view(), &bases, weights.view(), &[0.5], &rbf);
            assert!(direct.unwrap().iter().all(|v| *v == 0.5), "{value}");
        }
        // Points both beyond the range (a Gram matrix of them, whose diagonal is 1) are not
        // taken for distant: their kernel is refused as an overflow.
        // (float64: its Gram matrices are not moved to their centre.)
        let huge = Array2::from_elem((2, 3), 1e160_f64);
        let refused = match gram(huge.view(), &rbf, 1) {
            Ok(k) => k.iter().any(|v| v.is_nan()),
            Err(_) => true,
        };
        assert!(refused);
        // A NaN point keeps its NaN.
        let nan = Array2::from_elem((1, 3), f32::NAN);
        assert!(cross(nan.view(), basis.view(), &rbf, 1)
            .unwrap()
            .iter()
            .all(|v| v.is_nan()));
    }

    #[test]
    fn out_of_range_parameters_are_refused_before_any_work() {
        let x = points(5, 3, 1);
        let poly = Kernel::Poly {
            gamma: 1.0,
            degree: u32::MAX,
            coef0: 1.0,
        };
        let error = gram(x.view(), &poly, 1).unwrap_err();
        assert!(matches!(
            error,
            Error::InvalidArgument {
                argument: "degree",
                ..
            }
        ));
        // A gamma float32 cannot hold is refused in float32 and fine in float64.
        let wide = Kernel::Rbf { gamma: 1e39 };
        let error = gram(x.mapv(|v| v as f32).view(), &wide, 1).unwrap_err();
        assert!(matches!(
            error,
            Error::InvalidArgument {
                argument: "gamma",
                ..
            }
        ));
        assert!(gram(x.view(), &wide, 1)
            .unwrap()
            .iter()
            .all(|v| v.is_finite()));
    }

    #[test]
    fn expansions_that_overflow_are_refused_not_returned_as_nan() {
        let basis = points(4, 3, 2);
        let weights = points(4, 1, 3);
        let poly = Kernel::Poly {
            gamma: 1.0,
            degree: 3,
            coef0: 1.0,
        };
        let huge = points(2, 3, 4).mapv(|v| v * 1e200);
        let error = expansion(huge.view(), basis.view(), weights.view(), &[0.0], &poly, 1);
        assert!(matches!(
            error,
            Err(Error::InvalidArgument { argument: "X", .. })
        ));
        // A float32 RBF point too far for float32's squares is at kernel value 0 from
        // every basis (both sets are moved to the bases' centre first): the bias alone.
        let rbf = Kernel::Rbf { gamma: 1.0 };
        let far = Array2::from_elem((2, 3), 1e38_f32);
        let basis32 = Array2::from_elem((4, 3), 3.0_f32);
        let values = expansion(far.view(), basis32.view(), weights.view(), &[0.5], &rbf, 1);
        assert!(values.unwrap().iter().all(|v| *v == 0.5));
        let near = points(2, 3, 4);
        assert!(expansion(near.view(), basis.view(), weights.view(), &[0.0], &poly, 1).is_ok());
    }

    #[test]
    fn a_point_with_a_nan_gives_nan_kernel_values_not_ones() {
        let mut x = points(9, 3, 4);
        x[[2, 1]] = f64::NAN;
        let kernel = Kernel::Rbf { gamma: 0.5 };
        let k = gram(x.view(), &kernel, 1).unwrap();
        for j in (0..9).filter(|&j| j != 2) {
            assert!(
                k[[2, j]].is_nan() && k[[j, 2]].is_nan(),
                "K[2, {j}] = {}",
                k[[2, j]]
            );
            assert!(k[[0, j]].is_finite());
        }
        let c = cross(x.view(), points(4, 3, 8).view(), &kernel, 1).unwrap();
        assert!(c.row(2).iter().all(|v| v.is_nan()));
        assert!(c.row(0).iter().all(|v| v.is_finite()));
    }

    #[test]
    fn bad_parameters_are_errors() {
        let x = points(3, 2, 1);
        assert!(gram(x.view(), &Kernel::Rbf { gamma: -1.0 }, 1).is_err());
        assert!(gram(
            x.view(),
            &Kernel::Poly {
                gamma: 1.0,
                degree: 0,
                coef0: 1.0
            },
            1
        )
        .is_err());
        assert!(cross(x.view(), points(2, 3, 1).view(), &Kernel::Linear, 1).is_err());
    }
}
