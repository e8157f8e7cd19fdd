//! Factors of the kernel `ΦΦ'`: the Nyström factor (at once, or in two steps for a factor
//! made by chunks elsewhere), and the recognition of a factor held elsewhere (read by
//! `super::rows`).

use super::common::{interruptible, order_of, parse_kernel, reporting};
use super::sparse::RowsArg;
use crate::kernel::Kernel;
use crate::real::Real;
use numpy::{IntoPyArray, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

/// Whether `factor` is an object that holds a factor's rows elsewhere, with the selection's
/// statistics beside them (`super::rows::PyFactorRows`), rather than an array.
pub(super) fn is_factor_holder(factor: &Bound<'_, PyAny>) -> bool {
    let has = |name: &str| factor.hasattr(name).unwrap_or(false);
    has("advance") && has("moments") && has("start")
}

/// The name of a factor holder's `dtype`.
pub(super) fn holder_dtype(factor: &Bound<'_, PyAny>) -> PyResult<String> {
    let dtype = factor
        .getattr("dtype")
        .map_err(|_| PyTypeError::new_err("factor: a factor holder needs a dtype"))?;
    Ok(dtype.str()?.to_string())
}

fn nystroem_typed<'py, F: Real + numpy::Element>(
    py: Python<'py>,
    x: RowsArg<'py, F>,
    pool: &[usize],
    (kernel, n_threads): (Kernel, usize),
    report: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let rows = x.view("X")?;
    let factor = reporting(py, report, |stop, progress| {
        crate::factor::nystroem_of_rows_with_progress(
            &rows, pool, &kernel, n_threads, stop, progress,
        )
    })?;
    Ok(factor.into_pyarray(py).into_any())
}

/// The Nyström factor `Φ = K[:, pool] W`, `W W' = K[pool, pool]⁺` (eigenvalues below
/// 1e-12 of the largest, 1e-6 in float32, dropped), of the named kernel over the rows of
/// `x` (float64 or float32, a NumPy array or a SciPy CSR matrix; `Φ` in its dtype, `m × p'` with `p' ≤ len(pool)`), built in
/// blocks of rows with the GIL released, never `m×m`. `ΦΦ'` is the kernel's Nyström
/// approximation on the pool, exact on the pool's rows. `progress`, a callable, is called
/// `progress(blocks_done, blocks)` as `greedy_select`'s is.
#[pyfunction]
#[pyo3(signature = (x, pool, kernel, *, gamma=1.0, degree=3, coef0=1.0, n_threads=1, progress=None))]
#[allow(clippy::too_many_arguments)]
fn nystroem_factor<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    pool: PyReadonlyArray1<'py, i64>,
    kernel: &str,
    gamma: f64,
    degree: u32,
    coef0: f64,
    n_threads: i64,
    progress: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let kernel = parse_kernel(kernel, gamma, degree, coef0)?;
    let pool = order_of(pool.as_array().iter(), "pool")?;
    let n_threads = usize::try_from(n_threads).unwrap_or(0);
    if n_threads == 0 {
        return Err(PyValueError::new_err("n_jobs: must be at least 1 thread"));
    }
    if let Some(x64) = RowsArg::<f64>::extract(x, "X")? {
        return nystroem_typed(py, x64, &pool, (kernel, n_threads), progress);
    }
    if let Some(x32) = RowsArg::<f32>::extract(x, "X")? {
        return nystroem_typed(py, x32, &pool, (kernel, n_threads), progress);
    }
    Err(PyTypeError::new_err(
        "X: must be a 2-D float32 or float64 NumPy array or SciPy CSR matrix",
    ))
}

/// The Nyström factor in two steps, for a factor made by chunks of rows on other machines
/// with the same rows as `nystroem_factor`'s: `W` of the pool's points, once (float64
/// eigendecomposition; `p × p'` in the points' dtype).
#[pyfunction]
#[pyo3(signature = (points, kernel, *, gamma=1.0, degree=3, coef0=1.0, n_threads=1))]
fn nystroem_whitening<'py>(
    py: Python<'py>,
    points: &Bound<'py, PyAny>,
    kernel: &str,
    gamma: f64,
    degree: u32,
    coef0: f64,
    n_threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let kernel = parse_kernel(kernel, gamma, degree, coef0)?;
    fn typed<'py, F: Real + numpy::Element>(
        py: Python<'py>,
        points: PyReadonlyArray2<'py, F>,
        kernel: &Kernel,
        n_threads: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let points = points.as_array();
        let whitening =
            py.detach(|| crate::factor::nystroem_whitening(points, kernel, n_threads))?;
        Ok(whitening.into_pyarray(py).into_any())
    }
    if let Ok(points) = points.extract::<PyReadonlyArray2<f64>>() {
        return typed(py, points, &kernel, n_threads);
    }
    if let Ok(points) = points.extract::<PyReadonlyArray2<f32>>() {
        return typed(py, points, &kernel, n_threads);
    }
    Err(PyTypeError::new_err(
        "points: must be a 2-D float32 or float64 NumPy array",
    ))
}

/// The rows of the Nyström factor of the rows of `x`, given the pool's `points` and their
/// `whitening` (`nystroem_whitening`), all of one dtype: the rows `nystroem_factor` gives
/// them, bit for bit.
#[pyfunction]
#[pyo3(signature = (x, points, whitening, kernel, *, gamma=1.0, degree=3, coef0=1.0, n_threads=1))]
#[allow(clippy::too_many_arguments)]
fn nystroem_rows<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    points: &Bound<'py, PyAny>,
    whitening: &Bound<'py, PyAny>,
    kernel: &str,
    gamma: f64,
    degree: u32,
    coef0: f64,
    n_threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let kernel = parse_kernel(kernel, gamma, degree, coef0)?;
    fn typed<'py, F: Real + numpy::Element>(
        py: Python<'py>,
        arrays: [&Bound<'py, PyAny>; 3],
        kernel: &Kernel,
        n_threads: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let same = |array: &Bound<'py, PyAny>, argument: &str| {
            array.extract::<PyReadonlyArray2<'py, F>>().map_err(|_| {
                PyTypeError::new_err(format!("{argument}: must be a 2-D array of X's dtype"))
            })
        };
        let (x, points, whitening) = (
            same(arrays[0], "X")?,
            same(arrays[1], "points")?,
            same(arrays[2], "whitening")?,
        );
        let (x, points, whitening) = (x.as_array(), points.as_array(), whitening.as_array());
        let rows = interruptible(py, |stop| {
            crate::factor::nystroem_rows_with_stop(x, points, whitening, kernel, n_threads, stop)
        })?;
        Ok(rows.into_pyarray(py).into_any())
    }
    let arrays = [x, points, whitening];
    if x.extract::<PyReadonlyArray2<f64>>().is_ok() {
        return typed::<f64>(py, arrays, &kernel, n_threads);
    }
    if x.extract::<PyReadonlyArray2<f32>>().is_ok() {
        return typed::<f32>(py, arrays, &kernel, n_threads);
    }
    Err(PyTypeError::new_err(
        "X: must be a 2-D float32 or float64 NumPy array",
    ))
}

/// Adds the factor functions to `_core`.
pub(super) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(nystroem_factor, module)?)?;
    module.add_function(wrap_pyfunction!(nystroem_whitening, module)?)?;
    module.add_function(wrap_pyfunction!(nystroem_rows, module)?)?;
    Ok(())
}
