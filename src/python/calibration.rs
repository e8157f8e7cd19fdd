//! The calibration of a model's probabilities, for every prefix of its bases at once.

use super::common::order_of;
use crate::calibration;
use numpy::{
    IntoPyArray, PyArray2, PyArray3, PyReadonlyArray1, PyReadonlyArray2, PyReadonlyArray3,
};
use pyo3::prelude::*;

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

/// Adds `calibrate` to `_core`.
pub(super) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(calibrate, module)?)
}
