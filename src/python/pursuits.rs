//! The matching-pursuit family on one engine: kernel matching pursuit, sparse kernel PCA
//! and CCA, and the pursuit engine's KFDA.

use super::common::{class_codes, interruptible, kernel_or_factor};
use super::sparse::{factor_operator, is_sparse, RowsArg};
use crate::kernel::Rows;
use crate::operator::KernelOperator;
use crate::pursuit::{self, Method, PursuitParams};
use crate::real::Real;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

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
    kernel: RowsArg<'py, F>,
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
    let second_name = if inputs.factored {
        "second_factor"
    } else {
        "second_kernel"
    };
    let second: Option<PyReadonlyArray2<'py, F>> = inputs
        .second
        .map(|t| t.extract().map_err(|_| same_dtype(second_name)))
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
            let name = second_name;
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
    let factored = inputs.factored;
    let rows = kernel.view(if factored { "factor" } else { "K" })?;
    let outcome = interruptible(py, |stop| {
        let mut sparse = None;
        let operator = match &rows {
            Rows::Dense(view) if !factored => KernelOperator::dense_of(view, "K")?,
            rows => factor_operator(rows, &mut sparse, params.n_threads, "factor", stop)?,
        };
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
/// view's); a SciPy CSR `factor` is `X` of the linear kernel `XX'`.
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
    let argument = if factored { "factor" } else { "K" };
    if factored || !is_sparse(kernel) {
        if let Some(rows) = RowsArg::<f64>::extract(kernel, argument)? {
            return pursue_typed(py, rows, &inputs, &params);
        }
        if let Some(rows) = RowsArg::<f32>::extract(kernel, argument)? {
            return pursue_typed(py, rows, &inputs, &params);
        }
    }
    let sparse = if factored { " or SciPy CSR matrix" } else { "" };
    Err(PyTypeError::new_err(format!(
        "{argument}: must be a 2-D float32 or float64 NumPy array{sparse}"
    )))
}

/// Adds `pursuit_select` and the methods' names to `_core`.
pub(super) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(pursuit_select, module)?)?;
    module.add(
        "PURSUIT_METHODS",
        pyo3::types::PyTuple::new(module.py(), pursuit::METHODS)?,
    )
}
