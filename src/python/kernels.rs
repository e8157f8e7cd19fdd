//! Kernel matrices, the kernel expansion the estimators predict by, and the one-pass
//! checks of a precomputed kernel.

use super::common::{kernel_call, parse_kernel};
use super::sparse::RowsArg;
use crate::checks;
use crate::kernel::{self, Kernel, Rows};
use crate::link::Link;
use crate::real::Real;
use crate::tuning::ONE_THREAD_ROWS;
use ndarray::Array2;
use numpy::{IntoPyArray, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

fn kernel_typed<'py, F: Real + numpy::Element>(
    py: Python<'py>,
    x: RowsArg<'py, F>,
    z: Option<RowsArg<'py, F>>,
    kernel: Kernel,
    n_threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let x_rows = x.view("X")?;
    let Some(z) = &z else {
        // The m×m matrix is NumPy's own zeroed array (a `MemoryError` if it cannot be had),
        // filled with the GIL released: fresh pages that NumPy advises as huge pages, so the
        // passes that stream it take far fewer TLB misses, first touched by the threads
        // that compute them rather than by a zeroing pass on one thread. Later fits in a
        // process are 1.08–1.11× faster than on a `Vec` of 4 KiB pages, the first one the
        // same.
        let m = x_rows.nrows();
        let dtype = numpy::dtype::<F>(py);
        let gram = py
            .import("numpy")?
            .call_method1("zeros", ((m, m), dtype))?
            .cast_into::<PyArray2<F>>()?;
        {
            let mut guard = gram.readwrite();
            let out = guard.as_array_mut();
            kernel_call(py, (m, x.stored(), 1), |stop| {
                kernel::gram_rows_into_with_stop(&x_rows, &kernel, n_threads, out, stop)
            })?;
        }
        return Ok(gram.into_any());
    };
    let z_rows = z.view("z")?;
    let size = (x.stored(), z_rows.nrows(), 1);
    let result = kernel_call(py, size, |stop| {
        kernel::cross_rows_with_stop(&x_rows, &z_rows, &kernel, n_threads, stop)
    })?;
    Ok(result.into_pyarray(py).into_any())
}

/// Kernel matrix of the rows of `x` (with themselves, or against `z`), float32 or float64,
/// each a NumPy array or a SciPy CSR matrix.
#[pyfunction]
#[pyo3(signature = (x, z=None, *, kernel="rbf", gamma=1.0, degree=3, coef0=1.0, n_threads=1))]
#[allow(clippy::too_many_arguments)]
fn kernel_matrix<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    z: Option<&Bound<'py, PyAny>>,
    kernel: &str,
    gamma: f64,
    degree: u32,
    coef0: f64,
    n_threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let kernel = parse_kernel(kernel, gamma, degree, coef0)?;
    fn like_x<'py, F: Real + numpy::Element>(
        z: Option<&Bound<'py, PyAny>>,
        dtype: &str,
    ) -> PyResult<Option<RowsArg<'py, F>>> {
        z.map(|z| {
            RowsArg::<F>::extract(z, "z")?.ok_or_else(|| {
                PyTypeError::new_err(format!("z: must be a 2-D {dtype} array like x"))
            })
        })
        .transpose()
    }
    if let Some(x64) = RowsArg::<f64>::extract(x, "X")? {
        return kernel_typed(py, x64, like_x(z, "float64")?, kernel, n_threads);
    }
    if let Some(x32) = RowsArg::<f32>::extract(x, "X")? {
        return kernel_typed(py, x32, like_x(z, "float32")?, kernel, n_threads);
    }
    Err(PyTypeError::new_err(
        "x: must be a 2-D float32 or float64 NumPy array or SciPy CSR matrix",
    ))
}

#[allow(clippy::too_many_arguments)]
fn expansion_typed<'py, F: Real + numpy::Element>(
    py: Python<'py>,
    x: RowsArg<'py, F>,
    basis: PyReadonlyArray2<'py, F>,
    weights: PyReadonlyArray2<'py, f64>,
    bias: PyReadonlyArray1<'py, f64>,
    kernel: Kernel,
    link: Link,
    n_threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let (basis, weights) = (basis.as_array(), weights.as_array());
    let bias = bias.as_array().to_vec();
    let result = match x.view("X")? {
        Rows::Dense(x) => {
            // Checked here rather than in NumPy: one pass over the rows costs less than a
            // second call into NumPy for a one-row prediction.
            if !x.iter().all(|value| value.as_f64().is_finite()) {
                return Err(PyValueError::new_err("X: contains NaN or infinity"));
            }
            if x.nrows() <= ONE_THREAD_ROWS {
                kernel::expansion(x, basis, weights, &bias, &kernel, 1)?
            } else {
                kernel_call(py, (x.nrows(), basis.nrows(), x.ncols()), |stop| {
                    kernel::expansion_with_stop(x, basis, weights, &bias, &kernel, n_threads, stop)
                })?
            }
        }
        // Checked for finiteness by its view.
        rows => kernel_call(py, (x.stored(), basis.nrows(), 1), |stop| {
            kernel::expansion_rows_with_stop(&rows, basis, weights, &bias, &kernel, n_threads, stop)
        })?,
    };
    Ok(linked(py, result, link))
}

/// Decision values as NumPy gives them back: as they are, or through `link`.
pub(super) fn linked(py: Python<'_>, values: Array2<f64>, link: Link) -> Bound<'_, PyAny> {
    if link == Link::Identity {
        return values.into_pyarray(py).into_any();
    }
    let (rows, outputs) = values.dim();
    let flat = values.as_slice().expect("a new array is contiguous");
    let probabilities =
        Array2::from_shape_vec((rows, link.width(outputs)), link.apply_rows(flat, outputs))
            .expect("the link gives width values a row");
    probabilities.into_pyarray(py).into_any()
}

/// Decision values `Σ_j weights[j, c] κ(x, basis_j) + bias[c]` of fitted models (float64),
/// or with `link` (`logistic`, `softmax`, `ovr`) the class probabilities they give; `x` a
/// NumPy array or a SciPy CSR matrix, `basis` a NumPy array of its dtype.
#[pyfunction]
#[pyo3(signature = (x, basis, weights, bias, *, kernel="rbf", gamma=1.0, degree=3, coef0=1.0, link="identity", n_threads=1))]
#[allow(clippy::too_many_arguments)]
fn kernel_expansion<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    basis: &Bound<'py, PyAny>,
    weights: PyReadonlyArray2<'py, f64>,
    bias: PyReadonlyArray1<'py, f64>,
    kernel: &str,
    gamma: f64,
    degree: u32,
    coef0: f64,
    link: &str,
    n_threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let kernel = parse_kernel(kernel, gamma, degree, coef0)?;
    let link = Link::from_name(link)?;
    if let (Some(x64), Ok(basis64)) = (
        RowsArg::<f64>::extract(x, "X")?,
        basis.extract::<PyReadonlyArray2<f64>>(),
    ) {
        return expansion_typed(py, x64, basis64, weights, bias, kernel, link, n_threads);
    }
    if let (Some(x32), Ok(basis32)) = (
        RowsArg::<f32>::extract(x, "X")?,
        basis.extract::<PyReadonlyArray2<f32>>(),
    ) {
        return expansion_typed(py, x32, basis32, weights, bias, kernel, link, n_threads);
    }
    Err(PyTypeError::new_err(
        "x: x and basis must be 2-D arrays of one dtype, float32 or float64 (x may be SciPy CSR)",
    ))
}

/// What a fit must know of a precomputed kernel, in one pass (`checks::kernel_checks`):
/// `(non_finite, scale, asymmetry, smallest_diagonal, minor_excess, minor_at)`.
type KernelCheckTuple = (Option<(usize, usize)>, f64, f64, f64, f64, (usize, usize));

#[pyfunction]
#[pyo3(signature = (k, *, n_threads=1))]
fn kernel_checks(
    py: Python<'_>,
    k: &Bound<'_, PyAny>,
    n_threads: usize,
) -> PyResult<KernelCheckTuple> {
    let checks = if let Ok(k) = k.extract::<PyReadonlyArray2<f64>>() {
        let k = k.as_array();
        py.detach(|| checks::kernel_checks(k, n_threads))?
    } else if let Ok(k) = k.extract::<PyReadonlyArray2<f32>>() {
        let k = k.as_array();
        py.detach(|| checks::kernel_checks(k, n_threads))?
    } else {
        return Err(PyTypeError::new_err(
            "K: must be a 2-D float32 or float64 NumPy array",
        ));
    };
    Ok((
        checks.non_finite,
        checks.scale,
        checks.asymmetry,
        checks.smallest_diagonal,
        checks.minor_excess,
        checks.minor_at,
    ))
}

/// Adds the kernel functions to `_core`.
pub(super) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(kernel_matrix, module)?)?;
    module.add_function(wrap_pyfunction!(kernel_expansion, module)?)?;
    module.add_function(wrap_pyfunction!(kernel_checks, module)?)?;
    Ok(())
}
