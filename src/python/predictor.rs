//! `gkfda._core.Predictor`: a model file read by the Rust reader and served through
//! [`Model`], without the estimators (and so without scikit-learn) in the process; and
//! the Rust reader's verdict on a file's bytes, for the tests; and the table of each
//! estimator's predictor, which the Python reader checks a file by.

use crate::error::Error;
use crate::kernel::Kernel;
use crate::link::Link;
use crate::model::{self, ClassKind, Model, Task, PREDICTORS};
use numpy::{
    IntoPyArray, PyArrayDescrMethods, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyAttributeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

/// A fitted model read from a model file, predicting through the Rust core.
///
/// Immutable but for ``n_threads``; any number of Python threads may predict with one
/// ``Predictor`` at once (the GIL is released while it computes).
#[pyclass(module = "gkfda._core", name = "Predictor", frozen)]
pub(crate) struct Predictor {
    /// Swapped whole when `n_threads` changes; calls in flight keep their own `Arc`.
    model: RwLock<Arc<Model>>,
    classes: Option<Py<PyAny>>,
    feature_names: Option<Vec<String>>,
}

/// The rows of a call as one row-major float64 slice: the caller's array when it already is
/// one, a C-ordered float64 copy otherwise.
struct Rows<'a> {
    values: Cow<'a, [f64]>,
    n_rows: usize,
}

/// `state.feature_names_in_` of the metadata, when it is `n_features` strings (as
/// `gkfda.save` writes scikit-learn's attribute: an `__array__` of strings, or a list).
fn feature_names(bytes: &[u8], n_features: usize) -> Option<Vec<String>> {
    let (_, metadata) = safetensors::SafeTensors::read_metadata(bytes).ok()?;
    let text = metadata.metadata().as_ref()?.get("gkfda")?;
    let meta: serde_json::Value = serde_json::from_str(text).ok()?;
    let node = meta.get("state")?.get("feature_names_in_")?;
    let values = match node.get("__array__") {
        Some(array) => array.get("values")?,
        None => node,
    };
    let names: Vec<String> = values
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(str::to_string))
        .collect::<Option<_>>()?;
    (names.len() == n_features).then_some(names)
}

/// The labels as a NumPy array of their kind (int64, float64, bool or str).
fn class_array(py: Python<'_>, model: &Model) -> PyResult<Option<Py<PyAny>>> {
    let Some(kind) = model.class_kind() else {
        return Ok(None);
    };
    let labels = model.classes();
    let bad =
        |label: &str| PyValueError::new_err(format!("classes: label {label:?} is not of its kind"));
    let array = match kind {
        ClassKind::Int => {
            let values: Vec<i64> = labels
                .iter()
                .map(|l| l.parse().map_err(|_| bad(l)))
                .collect::<PyResult<_>>()?;
            values.into_pyarray(py).into_any()
        }
        ClassKind::Float => {
            let values: Vec<f64> = labels
                .iter()
                .map(|l| l.parse().map_err(|_| bad(l)))
                .collect::<PyResult<_>>()?;
            values.into_pyarray(py).into_any()
        }
        ClassKind::Bool => {
            let values: Vec<bool> = labels.iter().map(|l| l == "true").collect();
            values.into_pyarray(py).into_any()
        }
        ClassKind::Str => py
            .import("numpy")?
            .getattr("array")?
            .call1((labels.to_vec(),))?,
    };
    Ok(Some(array.unbind()))
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

impl Predictor {
    fn new(py: Python<'_>, model: Model, bytes: &[u8]) -> PyResult<Predictor> {
        let feature_names = feature_names(bytes, model.n_features());
        let classes = class_array(py, &model)?;
        Ok(Predictor {
            model: RwLock::new(Arc::new(model.with_threads(default_threads()))),
            classes,
            feature_names,
        })
    }

    fn model(&self) -> Arc<Model> {
        Arc::clone(&self.model.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// `x` as rows of `n_features` values: a 2-D array, or a 1-D array as one row.
    fn rows<'a>(
        &self,
        model: &Model,
        x: &'a Bound<'_, PyAny>,
        f64_view: &'a Option<PyReadonlyArrayDyn<'_, f64>>,
    ) -> PyResult<Rows<'a>> {
        let d = model.n_features();
        let shape_of = |shape: &[usize]| -> PyResult<usize> {
            let (n_rows, width) = match *shape {
                [width] => (1, width),
                [n_rows, width] => (n_rows, width),
                _ => {
                    return Err(PyValueError::new_err(format!(
                        "X: expected a 2-D array (or one row as a 1-D array), got {} dimensions",
                        shape.len()
                    )))
                }
            };
            if width != d {
                return Err(PyValueError::new_err(format!(
                    "X has {width} features, but this model expects {d}"
                )));
            }
            Ok(n_rows)
        };
        if let Some(array) = f64_view {
            let n_rows = shape_of(array.shape())?;
            let values = match array.as_slice() {
                Ok(slice) if array.is_c_contiguous() => Cow::Borrowed(slice),
                _ => Cow::Owned(array.as_array().iter().copied().collect()),
            };
            return Ok(Rows { values, n_rows });
        }
        if let Ok(array) = x.extract::<PyReadonlyArrayDyn<'_, f32>>() {
            let n_rows = shape_of(array.shape())?;
            let values = array.as_array().iter().map(|&v| f64::from(v)).collect();
            return Ok(Rows {
                values: Cow::Owned(values),
                n_rows,
            });
        }
        Err(PyTypeError::new_err(
            "X: expected a float32 or float64 array",
        ))
    }

    /// Runs `work` on the rows of `x` with the GIL released.
    fn call<T: Send>(
        &self,
        x: &Bound<'_, PyAny>,
        work: impl FnOnce(&Model, &[f64], usize) -> Result<T, Error> + Send,
    ) -> PyResult<(T, usize)> {
        let py = x.py();
        let model = self.model();
        if super::sparse::is_sparse(x) {
            return Err(PyTypeError::new_err(
                "X: a Predictor takes dense rows, not a sparse matrix: densify them \
                 (X.toarray()), or predict with the estimator gkfda.load gives, which takes it",
            ));
        }
        let converted;
        let x = match x.cast::<numpy::PyUntypedArray>() {
            Ok(array)
                if array.dtype().is_equiv_to(&numpy::dtype::<f64>(py))
                    || array.dtype().is_equiv_to(&numpy::dtype::<f32>(py)) =>
            {
                x
            }
            _ => {
                // Lists, integers, booleans: NumPy's own conversion, as scikit-learn's.
                converted = py
                    .import("numpy")?
                    .getattr("asarray")?
                    .call1((x, "float64"))
                    .map_err(|e| {
                        PyValueError::new_err(format!("X: not an array of numbers: {e}"))
                    })?;
                &converted
            }
        };
        let f64_view = x.extract::<PyReadonlyArrayDyn<'_, f64>>().ok();
        let rows = self.rows(&model, x, &f64_view)?;
        let n_rows = rows.n_rows;
        let values: &[f64] = &rows.values;
        let result = py.detach(|| work(&model, values, n_rows))?;
        Ok((result, n_rows))
    }

    fn require(&self, task: Task, method: &str) -> PyResult<()> {
        let model = self.model();
        if model.task() == task {
            return Ok(());
        }
        Err(PyAttributeError::new_err(format!(
            "{method}: this model is a {} ({}); it has no {method}",
            model.task().name(),
            model.estimator()
        )))
    }
}

/// An `n × width` row-major result as a 2-D array.
fn matrix<'py>(
    py: Python<'py>,
    values: Vec<f64>,
    n_rows: usize,
    width: usize,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(values.into_pyarray(py).reshape([n_rows, width])?.into_any())
}

/// Log-probabilities from the outputs `z` (row-major, `n_outputs` per row), as the
/// estimators compute them: SciPy's `log_expit`, `log_softmax` and `logsumexp`.
fn log_probabilities(link: Link, z: &[f64], n_outputs: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(link.width(n_outputs) * z.len() / n_outputs.max(1));
    for row in z.chunks_exact(n_outputs.max(1)) {
        match link {
            Link::Logistic => {
                out.push(crate::link::log_expit(-row[0]));
                out.push(crate::link::log_expit(row[0]));
            }
            Link::Softmax => {
                let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let sum: f64 = row.iter().map(|v| (v - max).exp()).sum();
                out.extend(row.iter().map(|v| (v - max) - sum.ln()));
            }
            Link::Ovr => {
                let logs: Vec<f64> = row.iter().map(|&v| crate::link::log_expit(v)).collect();
                let max = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let total = max + logs.iter().map(|v| (v - max).exp()).sum::<f64>().ln();
                out.extend(logs.iter().map(|v| v - total));
            }
            Link::Identity => out.extend_from_slice(row),
        }
    }
    out
}

#[pymethods]
impl Predictor {
    /// Reads and checks the model file at ``path`` (``OSError`` if it cannot be read,
    /// ``ValueError`` naming the path and the fault if it is not a valid model file).
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Predictor> {
        let (model, bytes) = py.detach(|| -> Result<(Model, Vec<u8>), Error> {
            let model = Model::load(&path)?;
            // The bytes again for the metadata the model does not keep (the feature
            // names): the file was just read, so this is a read from the page cache.
            let bytes = std::fs::read(&path).map_err(|e| Error::Io {
                path: path.display().to_string(),
                message: e.to_string(),
            })?;
            Ok((model, bytes))
        })?;
        Predictor::new(py, model, &bytes)
    }

    /// Reads and checks a model file's bytes (``ValueError`` naming the fault).
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Predictor> {
        let model = py.detach(|| Model::from_bytes(data))?;
        Predictor::new(py, model, data)
    }

    /// ``"classifier"``, ``"regressor"`` or ``"transformer"``.
    #[getter]
    fn task(&self) -> &'static str {
        self.model().task().name()
    }

    /// The estimator that wrote the file, e.g. ``"GreedyKFDA"``.
    #[getter]
    fn estimator(&self) -> String {
        self.model().estimator().to_string()
    }

    #[getter]
    fn n_features_in_(&self) -> usize {
        self.model().n_features()
    }

    /// The columns ``transform`` returns (a transformer), or the outputs of
    /// ``decision_function`` (one per class; one for two classes and regressors).
    #[getter]
    fn n_outputs(&self) -> usize {
        self.model().n_outputs()
    }

    /// The labels (classifiers only; ``AttributeError`` otherwise).
    #[getter]
    fn classes_(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.classes
            .as_ref()
            .map(|c| c.clone_ref(py))
            .ok_or_else(|| PyAttributeError::new_err("classes_: this model is not a classifier"))
    }

    /// The feature names the model was fitted with (``AttributeError`` when it was fitted
    /// on an array without them).
    #[getter]
    fn feature_names_in_<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match &self.feature_names {
            Some(names) => py
                .import("numpy")?
                .getattr("array")?
                .call1((names.clone(), "object")),
            None => Err(PyAttributeError::new_err(
                "feature_names_in_: the model was fitted without feature names",
            )),
        }
    }

    /// Threads per call (default: the CPUs); results do not depend on it.
    #[getter]
    fn n_threads(&self) -> usize {
        self.model().n_threads()
    }

    #[setter]
    fn set_n_threads(&self, py: Python<'_>, n_threads: usize) -> PyResult<()> {
        if n_threads == 0 {
            return Err(PyValueError::new_err("n_threads: must be at least 1"));
        }
        let model = self.model();
        let updated = py.detach(|| Arc::new((*model).clone().with_threads(n_threads)));
        *self.model.write().unwrap_or_else(|e| e.into_inner()) = updated;
        Ok(())
    }

    /// Class probabilities, ``(n_rows, n_classes)`` float64.
    fn predict_proba<'py>(&self, x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.require(Task::Classifier, "predict_proba")?;
        let (values, n_rows) = self.call(x, |m, x, n| m.predict_proba(x, n))?;
        matrix(x.py(), values, n_rows, self.model().n_classes())
    }

    /// Logarithms of the class probabilities, without rounding to ``-inf``.
    fn predict_log_proba<'py>(&self, x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.require(Task::Classifier, "predict_log_proba")?;
        let (values, n_rows) = self.call(x, |m, x, n| {
            let z = m.decision_function(x, n)?;
            Ok(log_probabilities(m.link(), &z, m.n_outputs()))
        })?;
        matrix(x.py(), values, n_rows, self.model().n_classes())
    }

    /// Decision values: a classifier's log-odds (two classes: ``(n_rows,)``) or
    /// per-class scores (``(n_rows, n_classes)``); a regressor's values.
    fn decision_function<'py>(&self, x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let task = self.model().task();
        if task == Task::Transformer {
            self.require(Task::Classifier, "decision_function")?;
        }
        let (values, n_rows) = self.call(x, |m, x, n| m.decision_function(x, n))?;
        let width = self.model().n_outputs();
        if width == 1 {
            return Ok(values.into_pyarray(x.py()).into_any());
        }
        matrix(x.py(), values, n_rows, width)
    }

    /// Labels (a classifier: of ``classes_``) or values (a regressor), ``(n_rows,)``.
    fn predict<'py>(&self, x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = x.py();
        match self.model().task() {
            Task::Classifier => {
                let (indices, _) = self.call(x, |m, x, n| m.predict(x, n))?;
                let classes = self.classes.as_ref().expect("a classifier has labels");
                classes
                    .bind(py)
                    .call_method1("take", (indices.into_pyarray(py),))
            }
            Task::Regressor => {
                let (values, _) = self.call(x, |m, x, n| m.decision_function(x, n))?;
                Ok(values.into_pyarray(py).into_any())
            }
            Task::Transformer => Err(PyAttributeError::new_err(format!(
                "predict: this model is a transformer ({}); it has no predict",
                self.model().estimator()
            ))),
        }
    }

    /// Features of a transformer, ``(n_rows, n_outputs)``.
    fn transform<'py>(&self, x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.require(Task::Transformer, "transform")?;
        let (values, n_rows) = self.call(x, |m, x, n| m.transform(x, n))?;
        matrix(x.py(), values, n_rows, self.model().n_outputs())
    }

    fn __repr__(&self) -> String {
        let model = self.model();
        format!(
            "Predictor({}, {}, n_features_in_={}, n_bases={}, n_threads={})",
            model.estimator(),
            model.task().name(),
            model.n_features(),
            model.n_bases(),
            model.n_threads()
        )
    }
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
    let model = py.detach(|| Model::from_bytes(data))?;
    Ok((
        model.estimator().to_string(),
        model.task().name().to_string(),
        model.n_features(),
        model.n_bases(),
        model.n_outputs(),
        model.classes().to_vec(),
    ))
}

/// Each estimator's predictor, as the Rust reader checks it (`crate::model::PREDICTORS`):
/// `{estimator: (task, links, optional tensors)}`, the names as a file holds them.
#[pyfunction]
fn estimator_predictors(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let table = PyDict::new(py);
    for predictor in &PREDICTORS {
        let links = PyTuple::new(py, predictor.links.iter().map(|link| link.name()))?;
        let optional = PyTuple::new(py, predictor.optional)?;
        table.set_item(
            predictor.estimator,
            (predictor.task.name(), links, optional),
        )?;
    }
    Ok(table)
}

/// The model file's constants as the Rust reader holds them, which the Python reader and
/// writer read rather than write again: `format`, `format_version`, `checksum` (the tensor
/// of the file's SHA-256), `max_header_bytes`, `max_count` (of `n_features`, `n_bases`,
/// `n_outputs`), `max_degree`, `metadata_keys` and `predictor_keys`.
#[pyfunction]
fn model_format(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let constants = PyDict::new(py);
    constants.set_item("format", model::FORMAT)?;
    constants.set_item("format_version", model::FORMAT_VERSION)?;
    constants.set_item("checksum", model::CHECKSUM)?;
    constants.set_item("max_header_bytes", model::MAX_HEADER_BYTES)?;
    constants.set_item("max_count", model::MAX_COUNT)?;
    constants.set_item("max_degree", model::MAX_DEGREE)?;
    let kernels: Vec<&str> = Kernel::NAMES
        .into_iter()
        .chain([model::PRECOMPUTED])
        .collect();
    constants.set_item("kernels", PyTuple::new(py, kernels)?)?;
    constants.set_item("metadata_keys", PyTuple::new(py, model::METADATA_KEYS)?)?;
    constants.set_item("predictor_keys", PyTuple::new(py, model::PREDICTOR_KEYS)?)?;
    Ok(constants)
}

/// Adds `Predictor`, `read_model_bytes`, `estimator_predictors` and `model_format` to `_core`.
pub(super) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Predictor>()?;
    module.add_function(wrap_pyfunction!(read_model_bytes, module)?)?;
    module.add_function(wrap_pyfunction!(estimator_predictors, module)?)?;
    module.add_function(wrap_pyfunction!(model_format, module)?)
}
