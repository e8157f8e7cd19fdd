//! Kernel expansions `Σ_j weights[j, c] κ(x, basis_j) + bias[c]`: the decision values of
//! fitted models, without the `n×k` kernel; blocked GEMMs, or a direct loop for a few rows.

use super::blocks::{for_blocks, for_each_row_block, squared_norms, Bases};
use super::Kernel;
use crate::error::{try_zeroed, Error, Result};
use crate::real::Real;
use crate::tuning::KERNEL_BLOCK_ROWS;
use ndarray::linalg::general_mat_mul;
use ndarray::{s, Array2, ArrayView2, ArrayViewMut2};
use std::sync::atomic::AtomicBool;

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
    check_shapes(x.ncols(), basis.dim(), weights, bias)?;
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

/// Refuses rows of `width` features against `basis` of another width, or `weights` and
/// `bias` that do not match the bases and each other.
pub(super) fn check_shapes(
    width: usize,
    (bases, bases_width): (usize, usize),
    weights: ArrayView2<f64>,
    bias: &[f64],
) -> Result<()> {
    if width != bases_width {
        return Err(Error::invalid(
            "X",
            format!("has {width} features but the model was fitted with {bases_width}"),
        ));
    }
    let (k, classes) = weights.dim();
    if k != bases || bias.len() != classes {
        return Err(Error::invalid(
            "weights",
            format!(
                "shape ({k}, {classes}) does not match {bases} bases and {} biases",
                bias.len()
            ),
        ));
    }
    Ok(())
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
    for_each_row_block(out.view_mut(), n_threads, stop, work)?;
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
pub(super) fn refuse_overflow<F: Real>(out: Array2<f64>) -> Result<Array2<f64>> {
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
