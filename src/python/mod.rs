//! The Python binding: the only module that knows pyo3. Thin functions that borrow
//! NumPy arrays without copying, release the GIL for the work, and map the core's
//! errors to Python exceptions. Input validation of user data (shapes, dtypes,
//! finiteness) happens once, in the Python layer; parameters are checked by the core.
//!
//! One module an area, as the Python package is split: `common` (errors, the GIL released
//! and watched, shared arguments), `kernels`, `selection`, `factor`, `pursuits`,
//! `calibration`, `parsimonious` (kFDA_q), `predictor` (model files), `sparse` (SciPy CSR
//! rows, borrowed) and `rows` (the
//! selection over rows of a factor held elsewhere, on the workers and on the driver); here, what
//! `_core` says of the core itself (its names, tolerances and SIMD level).

use crate::real::Real;
use crate::simd;
use crate::{Criterion, Deflation, Kernel};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

mod calibration;
mod common;
mod factor;
mod kernels;
mod parsimonious;
mod predictor;
mod pursuits;
mod rows;
mod selection;
mod sparse;

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
/// one list of them the Python package reads (`CRITERIA`, `DEFLATIONS`, `KERNELS`), and
/// the criteria whose score is a ratio over the within-class scatter (`RATIO_CRITERIA`,
/// [`Criterion::uses_ratio`]), whose guard the reference applies as the engines do.
fn parameter_names() -> [(&'static str, Vec<&'static str>); 4] {
    fn names<T>(all: &[(T, &'static str)]) -> Vec<&'static str> {
        all.iter().map(|(_, name)| *name).collect()
    }
    let ratios = Criterion::ALL
        .iter()
        .filter(|(criterion, _)| criterion.uses_ratio());
    [
        ("CRITERIA", names(&Criterion::ALL)),
        ("RATIO_CRITERIA", ratios.map(|(_, name)| *name).collect()),
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
    // The rows of a kernel expansion run on the calling thread: the estimators skip their
    // thread-count look-up up to as many.
    module.add("ONE_THREAD_ROWS", crate::tuning::ONE_THREAD_ROWS)?;
    kernels::register(module)?;
    selection::register(module)?;
    factor::register(module)?;
    pursuits::register(module)?;
    calibration::register(module)?;
    parsimonious::register(module)?;
    predictor::register(module)?;
    rows::register(module)?;
    module.add_class::<sparse::PreparedPoints>()?;
    module.add_function(wrap_pyfunction!(default_tol, module)?)?;
    module.add_function(wrap_pyfunction!(simd_level, module)?)?;
    module.add_function(wrap_pyfunction!(simd_levels, module)?)?;
    Ok(())
}
