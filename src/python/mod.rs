//! The Python binding: the only module that knows pyo3. Thin functions that borrow
//! NumPy arrays without copying, release the GIL for the work, and map the core's
//! errors to Python exceptions. Input validation of user data (shapes, dtypes,
//! finiteness) happens once, in the Python layer; parameters are checked by the core.

use crate::calibration;
use crate::checks;
use crate::error::Error;
use crate::kernel::{self, Kernel};
use crate::link::Link;
use crate::operator::{ExternalFactor, FactorSource, KernelOperator};
use crate::parsimonious;
use crate::progress::Progress;
use crate::pursuit::{self, Method, PursuitParams};
use crate::real::Real;
use crate::selection;
use crate::simd;
use crate::{Criterion, Deflation, GreedyParams};
use ndarray::Array2;
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyReadonlyArray3,
};
use pyo3::exceptions::{
    PyKeyboardInterrupt, PyMemoryError, PyOSError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

mod predictor;

/// How often a long call looks for signals (Ctrl-C) while the core works.
const SIGNAL_POLL: Duration = Duration::from_millis(50);
/// Kernel matrices and expansions of fewer entries than this (times features) run without
/// the signal watch: a thread spawn (~15 µs) is not worth it for a call of a few ms.
const WATCHED_KERNEL_WORK: usize = 1 << 26;

impl From<Error> for PyErr {
    fn from(error: Error) -> PyErr {
        match error {
            Error::InvalidArgument { .. } => PyValueError::new_err(error.to_string()),
            Error::OutOfMemory { .. } => PyMemoryError::new_err(error.to_string()),
            // Only reached if the stop flag was raised without a handler's exception.
            Error::Interrupted => PyKeyboardInterrupt::new_err(error.to_string()),
            Error::Io { .. } => PyOSError::new_err(error.to_string()),
            Error::InvalidModel(_) => PyValueError::new_err(error.to_string()),
            Error::Unsupported(_) => PyTypeError::new_err(error.to_string()),
            Error::External(_) => PyRuntimeError::new_err(error.to_string()),
        }
    }
}

/// Runs `work` with the GIL released, on a scoped thread, while this thread looks for
/// signals every [`SIGNAL_POLL`]. Python runs signal handlers only on its main thread, and
/// the core's loops run on its own pool, so they cannot look themselves: when a handler
/// raises (Ctrl-C's `KeyboardInterrupt`), the stop flag asks the core to give up at its
/// next check, and the handler's exception is raised here once the work has returned.
fn interruptible<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(&AtomicBool) -> Result<T, Error> + Send,
) -> PyResult<T> {
    reporting(py, None, |stop, _| work(stop))
}

/// [`interruptible`] for work that counts its progress: with a `report` callback, each
/// poll that finds the count changed calls `report(done, total)` (with the GIL), and the
/// last count is reported once the work has returned `Ok`; an exception it raises stops
/// the work as a signal handler's does. Without one, the count is never read.
fn reporting<T: Send>(
    py: Python<'_>,
    report: Option<&Bound<'_, PyAny>>,
    work: impl FnOnce(&AtomicBool, &Progress) -> Result<T, Error> + Send,
) -> PyResult<T> {
    let stop = AtomicBool::new(false);
    let progress = Progress::new();
    let report: Option<Py<PyAny>> = report.filter(|r| !r.is_none()).map(|r| r.clone().unbind());
    let (outcome, raised) = py.detach(|| {
        std::thread::scope(|scope| {
            let (done, finished) = mpsc::channel::<()>();
            let (stop, progress) = (&stop, &progress);
            let worker = scope.spawn(move || {
                let result = work(stop, progress);
                // The receiver outlives the worker: it is joined below.
                let _ = done.send(());
                result
            });
            let mut raised: Option<PyErr> = None;
            let mut reported = None;
            let mut poll = |last: bool| {
                if raised.is_some() {
                    return;
                }
                let outcome = Python::attach(|py| {
                    if !last {
                        py.check_signals()?;
                    }
                    let now = progress.get();
                    match &report {
                        Some(report) if reported != Some(now) => {
                            reported = Some(now);
                            report.call1(py, now).map(drop)
                        }
                        _ => Ok(()),
                    }
                });
                if let Err(error) = outcome {
                    raised = Some(error);
                    stop.store(true, Ordering::Relaxed);
                }
            };
            while let Err(mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(SIGNAL_POLL) {
                poll(false);
            }
            let joined = worker.join();
            // The whole count of work that ended well (a refusal reports nothing more).
            if report.is_some() && matches!(joined, Ok(Ok(_))) {
                poll(true);
            }
            (joined, raised)
        })
    });
    // A panic in the core resumes here, where pyo3 turns it into a `PanicException`.
    let result = outcome.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    match raised {
        Some(error) => Err(error),
        None => Ok(result?),
    }
}

/// A kernel call of `rows × columns × features` run with the GIL released: watched for
/// signals ([`interruptible`]) from [`WATCHED_KERNEL_WORK`] on, else on this thread with a
/// stop flag nobody raises.
fn kernel_call<T: Send>(
    py: Python<'_>,
    (rows, columns, features): (usize, usize, usize),
    work: impl FnOnce(&AtomicBool) -> Result<T, Error> + Send,
) -> PyResult<T> {
    let size = rows.saturating_mul(columns).saturating_mul(features.max(1));
    if size < WATCHED_KERNEL_WORK {
        return Ok(py.detach(|| work(&AtomicBool::new(false)))?);
    }
    interruptible(py, work)
}

fn parse_kernel(name: &str, gamma: f64, degree: u32, coef0: f64) -> PyResult<Kernel> {
    Ok(Kernel::from_name(name, gamma, degree, coef0)?)
}

fn kernel_typed<'py, F: Real + numpy::Element>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, F>,
    z: Option<PyReadonlyArray2<'py, F>>,
    kernel: Kernel,
    n_threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let x_view = x.as_array();
    let Some(z) = &z else {
        // The m×m matrix is NumPy's own zeroed array (a `MemoryError` if it cannot be had),
        // filled with the GIL released: fresh pages that NumPy advises as huge pages, so the
        // passes that stream it take far fewer TLB misses, first touched by the threads
        // that compute them rather than by a zeroing pass on one thread. Later fits in a
        // process are 1.08–1.11× faster than on a `Vec` of 4 KiB pages, the first one the
        // same.
        let m = x_view.nrows();
        let dtype = numpy::dtype::<F>(py);
        let gram = py
            .import("numpy")?
            .call_method1("zeros", ((m, m), dtype))?
            .cast_into::<PyArray2<F>>()?;
        {
            let mut guard = gram.readwrite();
            let out = guard.as_array_mut();
            kernel_call(py, (m, m, x_view.ncols()), |stop| {
                kernel::gram_into_with_stop(x_view, &kernel, n_threads, out, stop)
            })?;
        }
        return Ok(gram.into_any());
    };
    let z_view = z.as_array();
    let size = (x_view.nrows(), z_view.nrows(), x_view.ncols());
    let result = kernel_call(py, size, |stop| {
        kernel::cross_with_stop(x_view, z_view, &kernel, n_threads, stop)
    })?;
    Ok(result.into_pyarray(py).into_any())
}

/// Kernel matrix of the rows of `x` (with themselves, or against `z`), float32 or float64.
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
    if let Ok(x64) = x.extract::<PyReadonlyArray2<f64>>() {
        let z64 = z
            .map(|z| z.extract::<PyReadonlyArray2<f64>>())
            .transpose()
            .map_err(|_| PyTypeError::new_err("z: must be a 2-D float64 array like x"))?;
        return kernel_typed(py, x64, z64, kernel, n_threads);
    }
    if let Ok(x32) = x.extract::<PyReadonlyArray2<f32>>() {
        let z32 = z
            .map(|z| z.extract::<PyReadonlyArray2<f32>>())
            .transpose()
            .map_err(|_| PyTypeError::new_err("z: must be a 2-D float32 array like x"))?;
        return kernel_typed(py, x32, z32, kernel, n_threads);
    }
    Err(PyTypeError::new_err(
        "x: must be a 2-D float32 or float64 NumPy array",
    ))
}

#[allow(clippy::too_many_arguments)]
fn expansion_typed<'py, F: Real + numpy::Element>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, F>,
    basis: PyReadonlyArray2<'py, F>,
    weights: PyReadonlyArray2<'py, f64>,
    bias: PyReadonlyArray1<'py, f64>,
    kernel: Kernel,
    link: Link,
    n_threads: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let (x, basis, weights) = (x.as_array(), basis.as_array(), weights.as_array());
    // Checked here rather than in NumPy: one pass over the rows costs less than a second
    // call into NumPy for a one-row prediction.
    if !x.iter().all(|value| value.as_f64().is_finite()) {
        return Err(PyValueError::new_err("X: contains NaN or infinity"));
    }
    let bias = bias.as_array().to_vec();
    // One-row calls are too short to be worth releasing the GIL (the estimators skip their
    // thread-count look-up up to the same size: `_ONE_THREAD_ROWS`).
    let result = if x.nrows() <= 64 {
        kernel::expansion(x, basis, weights, &bias, &kernel, 1)?
    } else {
        kernel_call(py, (x.nrows(), basis.nrows(), x.ncols()), |stop| {
            kernel::expansion_with_stop(x, basis, weights, &bias, &kernel, n_threads, stop)
        })?
    };
    if link == Link::Identity {
        return Ok(result.into_pyarray(py).into_any());
    }
    let (rows, outputs) = result.dim();
    let values = result.as_slice().expect("a new array is contiguous");
    let probabilities = Array2::from_shape_vec(
        (rows, link.width(outputs)),
        link.apply_rows(values, outputs),
    )
    .expect("the link gives width values a row");
    Ok(probabilities.into_pyarray(py).into_any())
}

/// Decision values `Σ_j weights[j, c] κ(x, basis_j) + bias[c]` of fitted models (float64),
/// or with `link` (`logistic`, `softmax`, `ovr`) the class probabilities they give.
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
    if let (Ok(x64), Ok(basis64)) = (
        x.extract::<PyReadonlyArray2<f64>>(),
        basis.extract::<PyReadonlyArray2<f64>>(),
    ) {
        return expansion_typed(py, x64, basis64, weights, bias, kernel, link, n_threads);
    }
    if let (Ok(x32), Ok(basis32)) = (
        x.extract::<PyReadonlyArray2<f32>>(),
        basis.extract::<PyReadonlyArray2<f32>>(),
    ) {
        return expansion_typed(py, x32, basis32, weights, bias, kernel, link, n_threads);
    }
    Err(PyTypeError::new_err(
        "x: x and basis must be 2-D arrays of one dtype, float32 or float64",
    ))
}

/// A calibration's score weights `(B, C − 1, C)` and biases `(B, C)`.
type CalibrationArrays<'py> = (Bound<'py, PyArray3<f64>>, Bound<'py, PyArray2<f64>>);

/// The calibration of every prefix `b` of a model (float64): `(A, c)` of shapes
/// `(B, C − 1, C)` and `(B, C)` from its leave-one-out and fitted scores `(B, m, C − 1)`.
#[pyfunction]
#[pyo3(signature = (left_out, own, codes, targets, log_priors, *, shrinkage, n_threads=1))]
#[allow(clippy::too_many_arguments)]
fn calibrate<'py>(
    py: Python<'py>,
    left_out: PyReadonlyArray3<'py, f64>,
    own: PyReadonlyArray3<'py, f64>,
    codes: PyReadonlyArray1<'py, i64>,
    targets: PyReadonlyArray2<'py, f64>,
    log_priors: PyReadonlyArray1<'py, f64>,
    shrinkage: f64,
    n_threads: usize,
) -> PyResult<CalibrationArrays<'py>> {
    let codes = order_of(codes.as_array().iter(), "codes")?;
    let priors = log_priors.as_array().to_vec();
    let (left_out, own, targets) = (left_out.as_array(), own.as_array(), targets.as_array());
    let classes = calibration::Classes {
        codes: &codes,
        targets,
        log_priors: &priors,
        shrinkage,
    };
    let (weights, bias) =
        py.detach(|| calibration::calibrate(left_out, own, &classes, n_threads))?;
    Ok((weights.into_pyarray(py), bias.into_pyarray(py)))
}

/// kFDA_q's coefficients, objective per step and steps.
type MmTuple<'py> = (Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>, usize);

/// kFDA_q's majorize–minimize iteration ([`parsimonious::mm_fit`]): the coefficients, the
/// objective at the start and after each step, and the steps; run with the GIL released
/// and watched for Ctrl-C.
#[pyfunction]
#[pyo3(signature = (kernel, gram, products, targets, start, *, q, rho, tol, max_iter, penalize_bias, prune))]
#[allow(clippy::too_many_arguments)]
fn parsimonious_fit<'py>(
    py: Python<'py>,
    kernel: PyReadonlyArray2<'py, f64>,
    gram: PyReadonlyArray2<'py, f64>,
    products: PyReadonlyArray1<'py, f64>,
    targets: PyReadonlyArray1<'py, f64>,
    start: PyReadonlyArray1<'py, f64>,
    q: f64,
    rho: f64,
    tol: f64,
    max_iter: usize,
    penalize_bias: bool,
    prune: f64,
) -> PyResult<MmTuple<'py>> {
    let params = parsimonious::MmParams {
        q,
        rho,
        tol,
        max_iter,
        penalize_bias,
        prune,
    };
    let problem = parsimonious::MmProblem {
        kernel: kernel.as_array(),
        gram: gram.as_array(),
        products: products.as_array(),
        targets: targets.as_array(),
        start: start.as_array(),
    };
    let fit = interruptible(py, |stop| parsimonious::mm_fit(&problem, &params, stop))?;
    Ok((
        fit.omega.into_pyarray(py),
        fit.objective.into_pyarray(py),
        fit.iterations,
    ))
}

/// A selection's indices, whether it stopped early, and its passes over the kernel.
type SelectionTuple<'py> = (Bound<'py, PyArray1<i64>>, bool, usize);

fn selection_tuple(py: Python<'_>, selection: selection::Selection) -> SelectionTuple<'_> {
    let indices: Vec<i64> = selection.indices.iter().map(|&i| i as i64).collect();
    (
        indices.into_pyarray(py),
        selection.stopped_early,
        selection.kernel_passes,
    )
}

/// The selections a call asks for: one over class codes ([`selection::select_classes`]),
/// or two-class problems that may share passes ([`selection::select_many`]).
enum Problems<'a> {
    Classes(&'a [u32], GreedyParams),
    TwoClass(&'a [(&'a [bool], GreedyParams)]),
}

fn select_typed<'py, F: Real + numpy::Element>(
    py: Python<'py>,
    kernel: PyReadonlyArray2<'py, F>,
    factored: bool,
    problems: &Problems<'_>,
    report: Option<&Bound<'py, PyAny>>,
) -> PyResult<Vec<SelectionTuple<'py>>> {
    let view = kernel.as_array();
    let operator = if factored {
        KernelOperator::factored_of(&view, "factor")?
    } else {
        KernelOperator::dense_of(&view, "K")?
    };
    // Always watched: a selection's length depends on more than the kernel's size (k,
    // stages, deflation), and a thread spawn is little beside even a small one.
    let selections = reporting(py, report, |stop, progress| match problems {
        Problems::Classes(classes, params) => Ok(vec![selection::select_classes_with_progress(
            operator, classes, params, stop, progress,
        )?]),
        Problems::TwoClass(problems) => {
            selection::select_many_with_progress(operator, problems, stop, progress)
        }
    })?;
    Ok(selections
        .into_iter()
        .map(|selection| selection_tuple(py, selection))
        .collect())
}

/// The selections of `problems` over `kernel` or, given instead, over the kernel `ΦΦ'` of
/// `factor`; float64 or float32. `progress(done, total)`, when given, is called as picks
/// are made ([`reporting`]).
fn select_any<'py>(
    py: Python<'py>,
    kernel: Option<&Bound<'py, PyAny>>,
    factor: Option<&Bound<'py, PyAny>>,
    problems: &Problems<'_>,
    progress: Option<&Bound<'py, PyAny>>,
) -> PyResult<Vec<SelectionTuple<'py>>> {
    let (array, factored) = kernel_or_factor(kernel, factor)?;
    if factored && is_factor_holder(array) {
        return match holder_dtype(array)?.as_str() {
            "float64" => select_external::<f64>(py, array, problems, progress),
            "float32" => select_external::<f32>(py, array, problems, progress),
            other => Err(PyTypeError::new_err(format!(
                "factor: its dtype must be float32 or float64, got {other}"
            ))),
        };
    }
    if let Ok(k64) = array.extract::<PyReadonlyArray2<f64>>() {
        return select_typed(py, k64, factored, problems, progress);
    }
    if let Ok(k32) = array.extract::<PyReadonlyArray2<f32>>() {
        return select_typed(py, k32, factored, problems, progress);
    }
    let argument = if factored { "factor" } else { "K" };
    Err(PyTypeError::new_err(format!(
        "{argument}: must be a 2-D float32 or float64 NumPy array"
    )))
}

/// Whether `factor` is an object that holds a factor elsewhere (the methods of
/// [`PyFactorSource`]) rather than an array.
fn is_factor_holder(factor: &Bound<'_, PyAny>) -> bool {
    factor.hasattr("multiply").unwrap_or(false) && factor.hasattr("column_forms").unwrap_or(false)
}

/// The name of a factor holder's `dtype`.
fn holder_dtype(factor: &Bound<'_, PyAny>) -> PyResult<String> {
    let dtype = factor
        .getattr("dtype")
        .map_err(|_| PyTypeError::new_err("factor: a factor holder needs a dtype"))?;
    Ok(dtype.str()?.to_string())
}

/// The selections of `problems` over the kernel `ΦΦ'` of a factor held elsewhere: the
/// Python object `holder` ([`PyFactorSource`]), called from the selection's thread.
fn select_external<'py, F: Real + numpy::Element>(
    py: Python<'py>,
    holder: &Bound<'py, PyAny>,
    problems: &Problems<'_>,
    report: Option<&Bound<'py, PyAny>>,
) -> PyResult<Vec<SelectionTuple<'py>>> {
    let source = PyFactorSource::<F>::of(holder)?;
    let selections = reporting(py, report, |stop, progress| {
        let external = ExternalFactor::new(&source, stop);
        let operator = external.operator();
        let outcome = match problems {
            Problems::Classes(classes, params) => {
                selection::select_classes_with_progress(operator, classes, params, stop, progress)
                    .map(|s| vec![s])
            }
            Problems::TwoClass(problems) => {
                selection::select_many_with_progress(operator, problems, stop, progress)
            }
        };
        external.outcome(outcome)
    });
    // The holder's own exception (a worker's error, a timeout) rather than its summary;
    // a signal's exception (Ctrl-C) comes first, from `interruptible`.
    let selections = match (selections, source.take_raised()) {
        (Err(error), Some(raised)) if error.is_instance_of::<PyRuntimeError>(py) => {
            return Err(raised)
        }
        (outcome, _) => outcome?,
    };
    Ok(selections
        .into_iter()
        .map(|selection| selection_tuple(py, selection))
        .collect())
}

/// A factor `Φ` held elsewhere, read through a Python object: `shape` (`(m, p)`), `dtype`,
/// and the methods `multiply(rhs)` (`(r, m)` → `(r, m)`: `ΦΦ'x` for each row `x`),
/// `rows(picks)` (int64 → `(len(picks), m)`), `diagonal()` (`(m,)`) and
/// `column_forms(weights)` (`(m,)` or None → `(m,)`), all in `dtype`. The selection calls
/// them from its own thread, taking the GIL for each call (the calling thread, which
/// polls for signals, leaves it between polls); one-vs-rest selections side by side call
/// them one at a time through the GIL. An exception is kept here to be raised as it is.
struct PyFactorSource<F> {
    holder: Py<PyAny>,
    m: usize,
    p: usize,
    raised: Mutex<Option<PyErr>>,
    dtype: std::marker::PhantomData<F>,
}

impl<F: Real + numpy::Element> PyFactorSource<F> {
    fn of(holder: &Bound<'_, PyAny>) -> PyResult<Self> {
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
    fn take_raised(&self) -> Option<PyErr> {
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

/// The one of `kernel` and `factor` given, and whether it is the factor.
fn kernel_or_factor<'a, 'py>(
    kernel: Option<&'a Bound<'py, PyAny>>,
    factor: Option<&'a Bound<'py, PyAny>>,
) -> PyResult<(&'a Bound<'py, PyAny>, bool)> {
    match (
        kernel.filter(|k| !k.is_none()),
        factor.filter(|f| !f.is_none()),
    ) {
        (Some(kernel), None) => Ok((kernel, false)),
        (None, Some(factor)) => Ok((factor, true)),
        (Some(_), Some(_)) => Err(PyValueError::new_err(
            "factor: give either the kernel or its factor, not both (pass None as the kernel)",
        )),
        (None, None) => Err(PyValueError::new_err(
            "K: a kernel matrix or a factor (factor=) is required",
        )),
    }
}

/// A priority order from NumPy's int64 indices (`argument` names them in errors).
fn order_of<'a>(
    indices: impl IntoIterator<Item = &'a i64>,
    argument: &str,
) -> PyResult<Vec<usize>> {
    indices
        .into_iter()
        .map(|&i| {
            usize::try_from(i).map_err(|_| {
                PyValueError::new_err(format!("{argument}: indices must be non-negative"))
            })
        })
        .collect()
}

/// The selection parameters of the Python signature (negative counts become 0, which the
/// core rejects with a message naming them).
#[allow(clippy::too_many_arguments)]
fn params_of(
    k: i64,
    criterion: &str,
    deflation: &str,
    stages: i64,
    random_order: Option<Vec<usize>>,
    seed: u64,
    tol: Option<f64>,
    n_threads: i64,
) -> PyResult<GreedyParams> {
    let count = |value: i64| usize::try_from(value).unwrap_or(0);
    Ok(GreedyParams {
        k: count(k),
        criterion: criterion.parse()?,
        deflation: deflation.parse()?,
        stages: count(stages),
        random_order,
        seed,
        tol,
        n_threads: count(n_threads),
    })
}

/// Greedy basis selection over a precomputed symmetric kernel (borrowed, not copied).
///
/// `y` is either a 1-D boolean array, True for the positive class, or a 1-D integer array
/// (int64 or int32) of class codes `0..C-1`, every class present, `C >= 2`: the `C` classes
/// share one basis, scored by the Fisher criterion of its class sums. Two classes as codes
/// are the boolean problem with code 1 for True and 0 for False (the same picks). Returns
/// `(indices, stopped_early, kernel_passes)`. When the classes of `y` come in long runs (as
/// `GreedyKFDA.fit` orders them), each pass splits the kernel's rows by class and does
/// half the multiply-adds. With `factor` (an `m×p` C-contiguous array `Φ`, and `kernel`
/// None) the kernel is `ΦΦ'`, never formed: each product costs O(mp). `progress`, a
/// callable, is called `progress(picks_done, picks_to_do)` every 50 ms while the count
/// changes, and once at the end.
#[pyfunction]
#[pyo3(signature = (kernel, y, k, *, criterion="optimal", deflation="schur", stages=1, random_order=None, seed=0, tol=None, n_threads=1, factor=None, progress=None))]
#[allow(clippy::too_many_arguments)]
fn greedy_select<'py>(
    py: Python<'py>,
    kernel: Option<&Bound<'py, PyAny>>,
    y: &Bound<'py, PyAny>,
    k: i64,
    criterion: &str,
    deflation: &str,
    stages: i64,
    random_order: Option<PyReadonlyArray1<'py, i64>>,
    seed: u64,
    tol: Option<f64>,
    n_threads: i64,
    factor: Option<&Bound<'py, PyAny>>,
    progress: Option<&Bound<'py, PyAny>>,
) -> PyResult<SelectionTuple<'py>> {
    let classes = class_codes(y)?;
    let random_order = random_order
        .map(|order| order_of(order.as_array().iter(), "random_order"))
        .transpose()?;
    let params = params_of(
        k,
        criterion,
        deflation,
        stages,
        random_order,
        seed,
        tol,
        n_threads,
    )?;
    let problems = Problems::Classes(&classes, params);
    let mut selections = select_any(py, kernel, factor, &problems, progress)?;
    Ok(selections.remove(0))
}

/// The class codes of `greedy_select`'s `y`: a boolean array's True as 1 and False as 0,
/// or an integer array's codes, which must be non-negative (the core checks that every
/// class from 0 to the largest code is present).
fn class_codes(y: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
    fn codes<'a, T: Copy + TryInto<u32> + 'a>(
        values: impl IntoIterator<Item = &'a T>,
    ) -> PyResult<Vec<u32>> {
        values
            .into_iter()
            .map(|&code| {
                code.try_into().map_err(|_| {
                    PyValueError::new_err("y: class codes must be non-negative (and below 2**32)")
                })
            })
            .collect()
    }
    if let Ok(y) = y.extract::<PyReadonlyArray1<'_, bool>>() {
        return Ok(y.as_array().iter().map(|&p| u32::from(p)).collect());
    }
    if let Ok(y) = y.extract::<PyReadonlyArray1<'_, i64>>() {
        return codes(y.as_array().iter());
    }
    if let Ok(y) = y.extract::<PyReadonlyArray1<'_, i32>>() {
        return codes(y.as_array().iter());
    }
    Err(PyTypeError::new_err(
        "y: must be a 1-D NumPy array of booleans or of integer class codes (int64 or int32)",
    ))
}

/// [`greedy_select`] for the one-vs-rest problems `y[c]` (the rows of a 2-D boolean
/// array, as the core names the labels in its errors) over one kernel: the schur family's
/// selections run side by side and share each pass over the kernel. `random_order[c]` is
/// problem `c`'s priority order.
///
/// Returns one `(indices, stopped_early, kernel_passes)` per problem. `factor` as in
/// `greedy_select`; `progress` counts the picks of every problem.
#[pyfunction]
#[pyo3(signature = (kernel, y, k, *, criterion="optimal", deflation="schur", stages=1, random_order=None, seed=0, tol=None, n_threads=1, factor=None, progress=None))]
#[allow(clippy::too_many_arguments)]
fn greedy_select_many<'py>(
    py: Python<'py>,
    kernel: Option<&Bound<'py, PyAny>>,
    y: &Bound<'py, PyAny>,
    k: i64,
    criterion: &str,
    deflation: &str,
    stages: i64,
    random_order: Option<PyReadonlyArray2<'py, i64>>,
    seed: u64,
    tol: Option<f64>,
    n_threads: i64,
    factor: Option<&Bound<'py, PyAny>>,
    progress: Option<&Bound<'py, PyAny>>,
) -> PyResult<Vec<SelectionTuple<'py>>> {
    let y: PyReadonlyArray2<'py, bool> = y
        .extract()
        .map_err(|_| PyTypeError::new_err("y: must be a 2-D boolean NumPy array"))?;
    let y = y.as_array();
    let orders = match &random_order {
        None => None,
        Some(orders) => {
            let orders = orders.as_array();
            if orders.nrows() != y.nrows() {
                return Err(PyValueError::new_err(format!(
                    "random_order: needs one row per problem ({}), got {}",
                    y.nrows(),
                    orders.nrows()
                )));
            }
            Some(
                orders
                    .rows()
                    .into_iter()
                    .map(|row| order_of(row, "random_order"))
                    .collect::<PyResult<Vec<_>>>()?,
            )
        }
    };
    let labels: Vec<Vec<bool>> = y.rows().into_iter().map(|row| row.to_vec()).collect();
    let mut problems = Vec::with_capacity(labels.len());
    for (c, positive) in labels.iter().enumerate() {
        let order = orders.as_ref().map(|orders| orders[c].clone());
        // Without given orders, each problem's is drawn from a seed of its own.
        let seed = seed.wrapping_add(c as u64);
        let params = params_of(k, criterion, deflation, stages, order, seed, tol, n_threads)?;
        problems.push((positive.as_slice(), params));
    }
    select_any(py, kernel, factor, &Problems::TwoClass(&problems), progress)
}

/// What [`pursuit_select`] returns: `(indices, scores, stopped_early, kernel_passes)`.
type PursuitTuple<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<f64>>,
    bool,
    usize,
);

/// What [`pursuit_select`] pursues, besides the kernel.
struct PursuitInputs<'a, 'py> {
    method: &'a str,
    target: Option<&'a Bound<'py, PyAny>>,
    second: Option<&'a Bound<'py, PyAny>>,
    /// Whether the kernels are given as factors (`factor`, `second_factor`).
    factored: bool,
    classes: Option<&'a [u32]>,
    criterion: &'a str,
    seed: u64,
    signed: bool,
}

/// The pursuit of `inputs` over `kernel`, typed.
fn pursue_typed<'py, F: Real + numpy::Element>(
    py: Python<'py>,
    kernel: PyReadonlyArray2<'py, F>,
    inputs: &PursuitInputs<'_, 'py>,
    params: &PursuitParams,
) -> PyResult<PursuitTuple<'py>> {
    let dtype = std::any::type_name::<F>();
    let same_dtype = |argument: &str| {
        PyTypeError::new_err(format!(
            "{argument}: must be a NumPy array of the kernel's dtype ({dtype})"
        ))
    };
    let method = inputs.method;
    let target: Option<PyReadonlyArray1<'py, F>> = inputs
        .target
        .map(|t| t.extract().map_err(|_| same_dtype("target")))
        .transpose()?;
    let second: Option<PyReadonlyArray2<'py, F>> = inputs
        .second
        .map(|t| t.extract().map_err(|_| same_dtype("second_kernel")))
        .transpose()?;
    let missing = |argument: &str| {
        PyValueError::new_err(format!("{argument}: is required by the method {method:?}"))
    };
    let target_slice = target
        .as_ref()
        .map(|t| {
            t.as_slice()
                .map_err(|_| PyValueError::new_err("y: must be contiguous"))
        })
        .transpose()?;
    let method = match method {
        "matching" => Method::Matching {
            target: target_slice.ok_or_else(|| missing("target"))?,
        },
        "pca" => Method::Components,
        "correlation" => {
            let name = if inputs.factored {
                "second_factor"
            } else {
                "second_kernel"
            };
            let second = second.as_ref().ok_or_else(|| missing(name))?.as_array();
            let second = if inputs.factored {
                KernelOperator::factored_of(&second, name)?
            } else {
                KernelOperator::dense_of(&second, name)?
            };
            Method::Correlation {
                second,
                signed: inputs.signed,
            }
        }
        "fisher" => Method::Fisher {
            classes: inputs.classes.ok_or_else(|| missing("classes"))?,
            criterion: inputs.criterion.parse()?,
            seed: inputs.seed,
        },
        other => {
            return Err(PyValueError::new_err(format!(
                "method: expected one of {:?}, got {other:?}",
                pursuit::METHODS
            )))
        }
    };
    let view = kernel.as_array();
    let operator = if inputs.factored {
        KernelOperator::factored_of(&view, "factor")?
    } else {
        KernelOperator::dense_of(&view, "K")?
    };
    let outcome = interruptible(py, |stop| {
        pursuit::pursue_on(operator, &method, params, stop)
    })?;
    let indices: Vec<i64> = outcome.indices.iter().map(|&i| i as i64).collect();
    Ok((
        indices.into_pyarray(py),
        outcome.scores.into_pyarray(py),
        outcome.stopped_early,
        outcome.kernel_passes,
    ))
}

/// A greedy pursuit over a precomputed symmetric kernel (borrowed, not copied), float64 or
/// float32: `method` is `"matching"` (kernel matching pursuit of `target`, projection
/// deflation), `"pca"` (sparse kernel PCA, pivoted-Cholesky deflation), `"correlation"`
/// (sparse kernel CCA of `kernel` and `second_kernel`, the same samples in two views;
/// `signed=False` ranks by the cosine's absolute value) or `"fisher"` (the KFDA
/// `criterion` of the integer class codes `classes`, projection deflation; `random` draws
/// its order from `seed` as `greedy_select` does). A column counts as explained when its guarded statistic falls to `tol` times
/// its value in the kernel. Returns `(indices, scores, stopped_early, kernel_passes)`,
/// `scores[s]` the score of pick `s` when it was made. With `factor` (and `kernel` None)
/// the kernel is `ΦΦ'` of the `m×p` factor, never formed (and `second_factor` the second
/// view's).
#[pyfunction]
#[pyo3(signature = (method, kernel, k, *, target=None, second_kernel=None, classes=None, criterion="optimal", seed=0, signed=true, tol=None, n_threads=1, factor=None, second_factor=None))]
#[allow(clippy::too_many_arguments)]
fn pursuit_select<'py>(
    py: Python<'py>,
    method: &str,
    kernel: Option<&Bound<'py, PyAny>>,
    k: i64,
    target: Option<&Bound<'py, PyAny>>,
    second_kernel: Option<&Bound<'py, PyAny>>,
    classes: Option<&Bound<'py, PyAny>>,
    criterion: &str,
    seed: u64,
    signed: bool,
    tol: Option<f64>,
    n_threads: i64,
    factor: Option<&Bound<'py, PyAny>>,
    second_factor: Option<&Bound<'py, PyAny>>,
) -> PyResult<PursuitTuple<'py>> {
    let (kernel, factored) = kernel_or_factor(kernel, factor)?;
    let count = |value: i64| usize::try_from(value).unwrap_or(0);
    let params = PursuitParams {
        k: count(k),
        tol,
        n_threads: count(n_threads),
    };
    let classes = classes.map(class_codes).transpose()?;
    let inputs = PursuitInputs {
        method,
        target,
        second: if factored {
            second_factor
        } else {
            second_kernel
        },
        factored,
        classes: classes.as_deref(),
        criterion,
        seed,
        signed,
    };
    if let Ok(k64) = kernel.extract::<PyReadonlyArray2<f64>>() {
        return pursue_typed(py, k64, &inputs, &params);
    }
    if let Ok(k32) = kernel.extract::<PyReadonlyArray2<f32>>() {
        return pursue_typed(py, k32, &inputs, &params);
    }
    let argument = if factored { "factor" } else { "K" };
    Err(PyTypeError::new_err(format!(
        "{argument}: must be a 2-D float32 or float64 NumPy array"
    )))
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

/// Default relative tolerance of the numerical guards for a dtype name.
#[pyfunction]
fn default_tol(dtype: &str) -> PyResult<f64> {
    match dtype {
        "float32" => Ok(<f32 as Real>::DEFAULT_TOL),
        "float64" => Ok(<f64 as Real>::DEFAULT_TOL),
        other => Err(PyValueError::new_err(format!(
            "dtype: expected float32 or float64, got {other:?}"
        ))),
    }
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

/// Reads a model file's bytes with the Rust reader (`Model::from_bytes`), the one the
/// Rust crate and the C ABI use: `(estimator, task, n_features, n_bases, n_outputs,
/// classes)` of a file it accepts, its refusal as `ValueError` otherwise. The tests
/// compare its verdicts with `gkfda.load`'s on crafted files.
#[pyfunction]
fn read_model_bytes(
    py: Python<'_>,
    data: &[u8],
) -> PyResult<(String, String, usize, usize, usize, Vec<String>)> {
    let model = py.detach(|| crate::model::Model::from_bytes(data))?;
    let task = match model.task() {
        crate::model::Task::Classifier => "classifier",
        crate::model::Task::Regressor => "regressor",
        crate::model::Task::Transformer => "transformer",
    };
    Ok((
        model.estimator().to_string(),
        task.to_string(),
        model.n_features(),
        model.n_bases(),
        model.n_outputs(),
        model.classes().to_vec(),
    ))
}

/// The instruction-set level the engine runs at (`avx512`, `avx2` or `none`): the CPU's,
/// capped by the environment variable `GKFDA_SIMD` as read when the module was imported.
#[pyfunction]
fn simd_level() -> &'static str {
    simd::simd_level().name()
}

/// The levels' names, from the lowest, and the environment variable that caps them.
#[pyfunction]
fn simd_levels() -> (Vec<&'static str>, &'static str) {
    let names = simd::SimdLevel::ALL.iter().map(|level| level.name());
    (names.collect(), simd::SIMD_VARIABLE)
}

/// The names of the core's criteria, deflations and kernels, in their tables' order: the
/// one list of them the Python package reads (`CRITERIA`, `DEFLATIONS`, `KERNELS`).
fn parameter_names() -> [(&'static str, Vec<&'static str>); 3] {
    fn names<T>(all: &[(T, &'static str)]) -> Vec<&'static str> {
        all.iter().map(|(_, name)| *name).collect()
    }
    [
        ("CRITERIA", names(&Criterion::ALL)),
        ("DEFLATIONS", names(&Deflation::ALL)),
        ("KERNELS", Kernel::NAMES.to_vec()),
    ]
}

#[pymodule]
fn _core(module: &Bound<'_, PyModule>) -> PyResult<()> {
    // The level is fixed here, at import, in the importing thread: `GKFDA_SIMD` is read
    // before any thread of the package runs (and before a later `putenv` could race it).
    simd::simd_level();
    for (attribute, names) in parameter_names() {
        module.add(attribute, pyo3::types::PyTuple::new(module.py(), names)?)?;
    }
    // The most one-vs-rest selections that run at once: the memory estimate counts them.
    module.add("SHARED_SELECTIONS", crate::tuning::SHARED_SELECTIONS)?;
    module.add_function(wrap_pyfunction!(kernel_matrix, module)?)?;
    module.add_function(wrap_pyfunction!(greedy_select, module)?)?;
    module.add_function(wrap_pyfunction!(greedy_select_many, module)?)?;
    module.add_function(wrap_pyfunction!(kernel_expansion, module)?)?;
    module.add_function(wrap_pyfunction!(kernel_checks, module)?)?;
    module.add_function(wrap_pyfunction!(calibrate, module)?)?;
    module.add_function(wrap_pyfunction!(parsimonious_fit, module)?)?;
    module.add_function(wrap_pyfunction!(pursuit_select, module)?)?;
    module.add_function(wrap_pyfunction!(nystroem_factor, module)?)?;
    module.add_function(wrap_pyfunction!(nystroem_whitening, module)?)?;
    module.add_function(wrap_pyfunction!(nystroem_rows, module)?)?;
    module.add_function(wrap_pyfunction!(factor_block, module)?)?;
    module.add(
        "PURSUIT_METHODS",
        pyo3::types::PyTuple::new(module.py(), pursuit::METHODS)?,
    )?;
    module.add_function(wrap_pyfunction!(read_model_bytes, module)?)?;
    predictor::register(module)?;
    module.add_function(wrap_pyfunction!(default_tol, module)?)?;
    module.add_function(wrap_pyfunction!(simd_level, module)?)?;
    module.add_function(wrap_pyfunction!(simd_levels, module)?)?;
    Ok(())
}
