//! kFDA_q (`ParsimoniousKFDA`): its majorize–minimize iteration.

use super::common::interruptible;
use crate::parsimonious;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

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

/// Adds `parsimonious_fit` to `_core`.
pub(super) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(parsimonious_fit, module)?)
}
