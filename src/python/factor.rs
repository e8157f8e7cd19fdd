//! Factors of the kernel `ΦΦ'`: the Nyström factor (at once, or in two steps for a factor
//! made by chunks elsewhere), one chunk's part of the factored operator's products, and a
//! factor held elsewhere, read through a Python object.

use super::common::{interruptible, order_of, parse_kernel, reporting};
use crate::error::Error;
use crate::kernel::Kernel;
use crate::operator::FactorSource;
use crate::real::Real;
use ndarray::Array2;
use numpy::{IntoPyArray, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::sync::Mutex;

/// Whether `factor` is an object that holds a factor elsewhere (the methods of
/// [`PyFactorSource`], or of the rows with their statistics, `super::rows::PyFactorRows`)
/// rather than an array.
pub(super) fn is_factor_holder(factor: &Bound<'_, PyAny>) -> bool {
    let has = |name: &str| factor.hasattr(name).unwrap_or(false);
    (has("multiply") && has("column_forms")) || (has("advance") && has("moments"))
}

/// The name of a factor holder's `dtype`.
pub(super) fn holder_dtype(factor: &Bound<'_, PyAny>) -> PyResult<String> {
    let dtype = factor
        .getattr("dtype")
        .map_err(|_| PyTypeError::new_err("factor: a factor holder needs a dtype"))?;
    Ok(dtype.str()?.to_string())
}

/// A factor `Φ` held elsewhere, read through a Python object: `shape` (`(m, p)`), `dtype`,
/// and the methods `multiply(rhs)` (`(r, m)` → `(r, m)`: `ΦΦ'x` for each row `x`),
/// `rows(picks)` (int64 → `(len(picks), m)`), `diagonal()` (`(m,)`) and
/// `column_forms(weights)` (`(m,)` or None → `(m,)`), all in `dtype`. The selection calls
/// them from its own thread, taking the GIL for each call (the calling thread, which
/// polls for signals, leaves it between polls); one-vs-rest selections side by side call
/// them one at a time through the GIL. An exception is kept here to be raised as it is.
pub(super) struct PyFactorSource<F> {
    holder: Py<PyAny>,
    m: usize,
    p: usize,
    raised: Mutex<Option<PyErr>>,
    dtype: std::marker::PhantomData<F>,
}

impl<F: Real + numpy::Element> PyFactorSource<F> {
    pub(super) fn of(holder: &Bound<'_, PyAny>) -> PyResult<Self> {
        let (m, p): (usize, usize) = holder
            .getattr("shape")
            .and_then(|shape| shape.extract())
            .map_err(|_| PyTypeError::new_err("factor: a factor holder needs a shape (m, p)"))?;
        if m == 0 || p == 0 {
            return Err(PyValueError::new_err(format!(
                "factor: must have at least one row and one column, got shape ({m}, {p})"
            )));
        }
        Ok(PyFactorSource {
            holder: holder.clone().unbind(),
            m,
            p,
            raised: Mutex::new(None),
            dtype: std::marker::PhantomData,
        })
    }

    /// The exception a call raised, if any (the first).
    pub(super) fn take_raised(&self) -> Option<PyErr> {
        self.raised
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// `holder.method(*args)` as rows of `F`, with the GIL; an exception is kept and
    /// becomes [`Error::External`].
    fn call(
        &self,
        method: &str,
        args: impl for<'py> FnOnce(Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyTuple>>,
    ) -> Result<Vec<Vec<F>>, Error> {
        Python::attach(|py| {
            let answer = args(py)
                .and_then(|args| self.holder.bind(py).call_method1(method, args))
                .and_then(|result| {
                    let array = result.cast_into::<numpy::PyArrayDyn<F>>().map_err(|_| {
                        PyTypeError::new_err(format!(
                            "factor: its {method} must return a NumPy array of {}",
                            std::any::type_name::<F>()
                        ))
                    })?;
                    let view = array.readonly();
                    let view = view.as_array();
                    Ok(match view.ndim() {
                        1 => vec![view.iter().copied().collect()],
                        _ => view
                            .outer_iter()
                            .map(|row| row.iter().copied().collect())
                            .collect(),
                    })
                });
            answer.map_err(|error| {
                let message = error.to_string();
                let mut raised = self
                    .raised
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                raised.get_or_insert(error);
                Error::External(message)
            })
        })
    }
}

impl<F: Real + numpy::Element> FactorSource<F> for PyFactorSource<F> {
    fn rows_count(&self) -> usize {
        self.m
    }

    fn width(&self) -> usize {
        self.p
    }

    fn multiply(&self, rhs: &[&[F]]) -> Result<Vec<Vec<F>>, Error> {
        let m = self.m;
        self.call("multiply", |py| {
            let stacked = Array2::from_shape_fn((rhs.len(), m), |(j, i)| rhs[j][i]);
            pyo3::types::PyTuple::new(py, [stacked.into_pyarray(py)])
        })
    }

    fn rows(&self, picks: &[usize]) -> Result<Vec<Vec<F>>, Error> {
        self.call("rows", |py| {
            let picks: Vec<i64> = picks.iter().map(|&i| i as i64).collect();
            pyo3::types::PyTuple::new(py, [picks.into_pyarray(py)])
        })
    }

    fn diagonal(&self) -> Result<Vec<F>, Error> {
        let mut rows = self.call("diagonal", |py| Ok(pyo3::types::PyTuple::empty(py)))?;
        Ok(rows.pop().unwrap_or_default())
    }

    fn column_forms(&self, weights: Option<&[F]>) -> Result<Vec<F>, Error> {
        let mut rows = self.call("column_forms", |py| match weights {
            Some(weights) => {
                pyo3::types::PyTuple::new(py, [weights.to_vec().into_pyarray(py).into_any()])
            }
            None => pyo3::types::PyTuple::new(py, [py.None().into_bound(py)]),
        })?;
        Ok(rows.pop().unwrap_or_default())
    }
}

fn nystroem_typed<'py, F: Real + numpy::Element>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, F>,
    pool: &[usize],
    (kernel, n_threads): (Kernel, usize),
    report: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let view = x.as_array();
    let factor = reporting(py, report, |stop, progress| {
        crate::factor::nystroem_with_progress(view, pool, &kernel, n_threads, stop, progress)
    })?;
    Ok(factor.into_pyarray(py).into_any())
}

/// The Nyström factor `Φ = K[:, pool] W`, `W W' = K[pool, pool]⁺` (eigenvalues below
/// 1e-12 of the largest, 1e-6 in float32, dropped), of the named kernel over the rows of
/// `x` (float64 or float32; `Φ` in its dtype, `m × p'` with `p' ≤ len(pool)`), built in
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
    if let Ok(x64) = x.extract::<PyReadonlyArray2<f64>>() {
        return nystroem_typed(py, x64, &pool, (kernel, n_threads), progress);
    }
    if let Ok(x32) = x.extract::<PyReadonlyArray2<f32>>() {
        return nystroem_typed(py, x32, &pool, (kernel, n_threads), progress);
    }
    Err(PyTypeError::new_err(
        "X: must be a 2-D float32 or float64 NumPy array",
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

/// What one chunk of rows of a factor held by chunks computes: the in-memory factored
/// operator's own per-block arithmetic ([`crate::operator`]) on the chunk's rows `Φ_c`.
enum BlockOperation {
    /// `Φ_c'X_c` (`(r, p)`) of the rows `X_c` (`(r, m_c)`).
    TransposeTimes,
    /// `Φ_c Y` (`(r, m_c)`) of the rows `Y` (`(r, p)`).
    Times,
    /// `Φ_c'W_cΦ_c` (`(p, p)`) of the weights `W_c` (`(m_c,)`, or None).
    WeightedGram,
    /// `Φ_{c,i} G Φ_{c,i}'` (`(m_c,)`) of `G` (`(p, p)`).
    FormsWith,
    /// `‖Φ_{c,i}‖²` (`(m_c,)`).
    RowNorms,
}

fn block_typed<'py, F: Real + numpy::Element>(
    py: Python<'py>,
    operation: BlockOperation,
    factor: PyReadonlyArray2<'py, F>,
    operand: Option<&Bound<'py, PyAny>>,
    n_threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let factor = factor.as_array();
    let (m, p) = factor.dim();
    let phi = factor
        .to_slice()
        .ok_or_else(|| PyValueError::new_err("factor: must be a C-contiguous (row-major) array"))?;
    if p == 0 {
        return Err(PyValueError::new_err(
            "factor: must have at least one column",
        ));
    }
    let dtype = std::any::type_name::<F>();
    let operand_2d = |rows_of: usize, name: &str| -> PyResult<Array2<F>> {
        let array = operand
            .ok_or_else(|| PyValueError::new_err(format!("{name}: is required")))?
            .extract::<PyReadonlyArray2<'py, F>>()
            .map_err(|_| PyTypeError::new_err(format!("{name}: must be a 2-D {dtype} array")))?;
        let array = array.as_array();
        if array.ncols() != rows_of {
            return Err(PyValueError::new_err(format!(
                "{name}: must have {rows_of} columns, got {}",
                array.ncols()
            )));
        }
        Ok(array.as_standard_layout().into_owned())
    };
    let pool = crate::pool::shared(n_threads.max(1))?;
    let vectors = |rows: Vec<Vec<F>>, width: usize| {
        Array2::from_shape_fn((rows.len(), width), |(j, i)| rows[j][i])
            .into_pyarray(py)
            .into_any()
    };
    Ok(match operation {
        BlockOperation::TransposeTimes => {
            let rhs = operand_2d(m, "rhs")?;
            let rows: Vec<&[F]> = rhs
                .outer_iter()
                .map(|r| r.to_slice().expect("rows of a standard-layout array"))
                .collect();
            vectors(
                py.detach(|| crate::operator::factor_transpose_times(&pool, phi, p, &rows)),
                p,
            )
        }
        BlockOperation::Times => {
            let ys = operand_2d(p, "ys")?;
            let ys: Vec<Vec<F>> = ys.outer_iter().map(|r| r.to_vec()).collect();
            vectors(
                py.detach(|| crate::operator::factor_times(&pool, phi, p, &ys)),
                m,
            )
        }
        BlockOperation::WeightedGram => {
            let weights: Option<Vec<F>> = match operand.filter(|w| !w.is_none()) {
                None => None,
                Some(weights) => {
                    let weights = weights.extract::<PyReadonlyArray1<'py, F>>().map_err(|_| {
                        PyTypeError::new_err(format!("weights: must be a 1-D {dtype} array"))
                    })?;
                    if weights.len()? != m {
                        return Err(PyValueError::new_err(format!(
                            "weights: must have one value per row of the factor ({m})"
                        )));
                    }
                    Some(weights.as_array().to_vec())
                }
            };
            let gram = py.detach(|| {
                crate::operator::factor_weighted_gram(&pool, phi, p, weights.as_deref())
            });
            gram.into_pyarray(py).into_any()
        }
        BlockOperation::FormsWith => {
            let gram = operand_2d(p, "gram")?;
            if gram.nrows() != p {
                return Err(PyValueError::new_err(format!("gram: must be {p}×{p}")));
            }
            let forms =
                py.detach(|| crate::operator::factor_forms_with(&pool, phi, p, gram.view()));
            forms.into_pyarray(py).into_any()
        }
        BlockOperation::RowNorms => crate::operator::factor_row_norms(phi, p)
            .into_pyarray(py)
            .into_any(),
    })
}

/// One chunk's part of an operation of the factored kernel operator, on the chunk's rows
/// `factor` (`Φ_c`, C-contiguous float32 or float64), with the in-memory operator's own
/// arithmetic: `"transpose_times"` (`Φ_c'X_c`, `operand` the `(r, m_c)` right-hand
/// sides; `(r, p)`), `"times"` (`Φ_c Y`, `operand` `(r, p)`; `(r, m_c)`),
/// `"weighted_gram"` (`Φ_c'W_cΦ_c`, `operand` the `(m_c,)` weights or None; `(p, p)`),
/// `"forms_with"` (`Φ_{c,i} G Φ_{c,i}'`, `operand` `G`; `(m_c,)`) or `"row_norms"`
/// (`‖Φ_{c,i}‖²`; `(m_c,)`). The operand has the factor's dtype.
#[pyfunction]
#[pyo3(signature = (operation, factor, operand=None, *, n_threads=1))]
fn factor_block<'py>(
    py: Python<'py>,
    operation: &str,
    factor: &Bound<'py, PyAny>,
    operand: Option<&Bound<'py, PyAny>>,
    n_threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let operation = match operation {
        "transpose_times" => BlockOperation::TransposeTimes,
        "times" => BlockOperation::Times,
        "weighted_gram" => BlockOperation::WeightedGram,
        "forms_with" => BlockOperation::FormsWith,
        "row_norms" => BlockOperation::RowNorms,
        other => {
            return Err(PyValueError::new_err(format!(
                "operation: expected one of transpose_times, times, weighted_gram, forms_with, row_norms; got {other:?}"
            )))
        }
    };
    if let Ok(phi) = factor.extract::<PyReadonlyArray2<f64>>() {
        return block_typed(py, operation, phi, operand, n_threads);
    }
    if let Ok(phi) = factor.extract::<PyReadonlyArray2<f32>>() {
        return block_typed(py, operation, phi, operand, n_threads);
    }
    Err(PyTypeError::new_err(
        "factor: must be a 2-D float32 or float64 NumPy array",
    ))
}

/// Adds the factor functions to `_core`.
pub(super) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(nystroem_factor, module)?)?;
    module.add_function(wrap_pyfunction!(nystroem_whitening, module)?)?;
    module.add_function(wrap_pyfunction!(nystroem_rows, module)?)?;
    module.add_function(wrap_pyfunction!(factor_block, module)?)?;
    Ok(())
}
