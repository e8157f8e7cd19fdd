//! Prediction from a model file, without Python.
//!
//! [`Model`] reads the file that `gkfda.save` writes (the contract is
//! `docs/model-format.md`), checks every part of it before use, and predicts through
//! `&self`: one loaded model serves any number of threads at once, without a lock.
//!
//! ```
//! # fn main() -> gkfda::Result<()> {
//! # let bytes = gkfda::model::example_file();
//! use gkfda::{Model, Task};
//!
//! let model = Model::from_bytes(&bytes)?; // or Model::load("model.gkfda")?
//! assert_eq!(model.task(), Task::Classifier);
//! assert_eq!(model.classes(), ["0", "1"]);
//! let x = [0.0, 0.0, 1.0, 1.0]; // two rows of two features, row-major
//! let probabilities = model.predict_proba(&x, 2)?; // 2 rows × 2 classes
//! assert!((probabilities[0] + probabilities[1] - 1.0).abs() < 1e-15);
//! let labels = model.predict(&x, 2)?; // indices into classes()
//! assert_eq!(labels.len(), 2);
//! # Ok(())
//! # }
//! ```
//!
//! Prediction follows the specification's six steps. A named kernel with neither
//! `predict.lower` nor `predict.center` runs as one kernel expansion, the very code (and
//! arithmetic) of the Python estimators' `_core.kernel_expansion`, so its outputs equal
//! Python's bit for bit; the bases' centring and squared norms are computed once at load.

use crate::error::{Error, Result};
use crate::kernel::{self, Bases, Kernel};
use crate::link::Link;
use crate::real::Real;
use crate::tuning::DIRECT_EXPANSION_ROWS;
use ndarray::{Array2, ArrayView2};
use safetensors::tensor::TensorView;
use safetensors::{Dtype, SafeTensors};
use serde::de::{Deserializer as _, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};
use std::any::TypeId;
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::AtomicBool;

/// The tensor holding the SHA-256 of every other byte of the file.
pub const CHECKSUM: &str = "checksum";
/// The largest header a reader accepts (the specification's limit), in bytes.
pub const MAX_HEADER_BYTES: u64 = 16 << 20;
/// The largest `n_features`, `n_bases` and `n_outputs` (the Python reader's bound too:
/// every such count is exact in a float64).
pub const MAX_COUNT: u64 = 1 << 53;
/// The largest `degree` of a predictor (`powi` takes an `i32`).
pub const MAX_DEGREE: u64 = i32::MAX as u64;
/// The most dimensions of a tensor.
pub const MAX_DIMENSIONS: usize = 4;
/// The one version of the format this reader knows.
pub const FORMAT_VERSION: u64 = 1;
/// The estimators whose files this reader accepts (the `estimator` key).
pub const ESTIMATORS: [&str; 7] = [
    "GreedyKFDA",
    "GreedyKFDACV",
    "ParsimoniousKFDA",
    "KernelMatchingPursuit",
    "GreedyNystroem",
    "SparseKernelPCA",
    "SparseKernelCCA",
];

/// What a model predicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Task {
    /// Class probabilities and labels ([`Model::predict_proba`], [`Model::predict`]).
    Classifier,
    /// One value per row ([`Model::decision_function`]).
    Regressor,
    /// Features ([`Model::transform`]).
    Transformer,
}

/// The floating-point type of a model's kernel values (`dtype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Float {
    F32,
    F64,
}

/// The type of a classifier's labels (`classes.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassKind {
    Int,
    Float,
    Bool,
    Str,
}

/// The bases of step 1, prepared for the kernel blocks.
#[derive(Debug, Clone)]
enum Basis {
    F64(Bases<f64>),
    F32(Bases<f32>),
    /// `precomputed`: the input's columns at these indices.
    Columns(Vec<usize>),
    /// No bases: `z` is the bias. Nothing is prepared, so no allocation at load grows
    /// with `n_features`, which then no tensor bounds.
    Empty,
}

/// A fitted model read from a model file: immutable, `Send + Sync`, predicting through
/// `&self`.
///
/// Inputs are row-major `n_rows × n_features` slices; outputs are row-major too. Every
/// method checks the input's length and that every value is finite (an error names the
/// first bad row), and refuses outputs that overflow.
#[derive(Debug, Clone)]
pub struct Model {
    estimator: String,
    gkfda_version: String,
    lean: bool,
    task: Task,
    link: Link,
    kernel_name: String,
    kernel: Option<Kernel>,
    float: Float,
    n_features: usize,
    n_outputs: usize,
    class_kind: Option<ClassKind>,
    classes: Vec<String>,
    basis: Basis,
    /// `n_bases × n_bases`, row-major, lower triangular with a finite non-zero diagonal.
    lower: Option<Vec<f64>>,
    center: Option<Vec<f64>>,
    weights: Array2<f64>,
    bias: Vec<f64>,
    /// `(slope, offset)`.
    calibration: Option<(Vec<f64>, Vec<f64>)>,
    n_threads: usize,
}

// One model serves many threads: nothing in it is mutated after load.
const _: fn() = || {
    fn shared_across_threads<T: Send + Sync>() {}
    shared_across_threads::<Model>();
};

fn invalid(message: impl Into<String>) -> Error {
    Error::InvalidModel(message.into())
}

/// The input rows of a call, in the type the caller holds them.
#[derive(Clone, Copy)]
enum Rows<'a> {
    F64(&'a [f64]),
    F32(&'a [f32]),
}

impl Rows<'_> {
    fn len(&self) -> usize {
        match self {
            Rows::F64(x) => x.len(),
            Rows::F32(x) => x.len(),
        }
    }

    fn get(&self, i: usize) -> f64 {
        match self {
            Rows::F64(x) => x[i],
            Rows::F32(x) => x[i] as f64,
        }
    }
}

impl Model {
    /// Reads and checks the model file at `path`.
    ///
    /// Only a regular file is read (a FIFO or a device would block or never end), and
    /// only as many bytes as its header accounts for: the 8-byte length, then the header
    /// (at most [`MAX_HEADER_BYTES`]), then the tensors' bytes; a file of another size is
    /// refused before its data is read. Errors name `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<Model> {
        let path = path.as_ref();
        let named = |error: Error| match error {
            Error::InvalidModel(message) => {
                Error::InvalidModel(format!("{}: {message}", path.display()))
            }
            other => other,
        };
        let bytes = read_file(path).map_err(named)?;
        Model::from_bytes(&bytes).map_err(named)
    }

    /// Reads and checks a model file's bytes. Nothing in them is trusted: any
    /// inconsistency is an [`Error::InvalidModel`] naming it.
    pub fn from_bytes(bytes: &[u8]) -> Result<Model> {
        let header = header_length(bytes.first_chunk::<8>(), bytes.len() as u64)?;
        let data = check_header(bytes.get(8..8 + header).unwrap_or_default())?;
        check_size(header, data, bytes.len() as u64)?;
        let (header, metadata) = SafeTensors::read_metadata(bytes)
            .map_err(|e| invalid(format!("not a safetensors file: {e}")))?;
        let range = checksum_range(header, &metadata)?;
        if checksum(bytes, range.clone())[..] != bytes[range] {
            return Err(invalid(
                "corrupted: its bytes do not match its SHA-256 checksum",
            ));
        }
        let tensors = SafeTensors::deserialize(bytes)
            .map_err(|e| invalid(format!("not a safetensors file: {e}")))?;
        let text = match metadata.metadata() {
            Some(map) if map.len() == 1 && map.contains_key("gkfda") => {
                map.get("gkfda").map_or("", String::as_str)
            }
            Some(map) if map.contains_key("gkfda") => {
                let mut others: Vec<_> = map.keys().filter(|k| *k != "gkfda").collect();
                others.sort();
                return Err(invalid(format!(
                    "__metadata__ has keys other than \"gkfda\": {others:?}"
                )));
            }
            _ => return Err(invalid("__metadata__ has no \"gkfda\" entry")),
        };
        let meta = unique_json(text).map_err(|e| {
            invalid(format!(
                "the metadata is not JSON without repeated keys: {e}"
            ))
        })?;
        Model::from_parts(&meta, &tensors)
    }

    fn from_parts(meta: &Value, tensors: &SafeTensors) -> Result<Model> {
        let meta = meta
            .as_object()
            .ok_or_else(|| invalid("the metadata is not a JSON object"))?;
        match meta.get("format") {
            Some(Value::String(f)) if f == "gkfda" => {}
            other => return Err(invalid(format!("format is {}, not \"gkfda\"", show(other)))),
        }
        match meta.get("format_version").and_then(Value::as_u64) {
            Some(FORMAT_VERSION) => {}
            _ => {
                return Err(invalid(format!(
                    "format_version is {}; this reader knows version {FORMAT_VERSION}",
                    show(meta.get("format_version"))
                )))
            }
        }
        let gkfda_version = match meta.get("gkfda_version") {
            Some(Value::String(v)) => v.clone(),
            other => return Err(invalid(format!("gkfda_version is {}", show(other)))),
        };
        let estimator = match meta.get("estimator") {
            Some(Value::String(e)) if ESTIMATORS.contains(&e.as_str()) => e.clone(),
            other => {
                return Err(invalid(format!(
                    "estimator is {}; expected one of {}",
                    show(other),
                    ESTIMATORS.join(", ")
                )))
            }
        };
        if let Some(key) = meta.keys().find(|k| !METADATA_KEYS.contains(&k.as_str())) {
            return Err(invalid(format!("the metadata has an unknown key {key:?}")));
        }
        let lean = match meta.get("lean") {
            Some(Value::Bool(lean)) => *lean,
            other => return Err(invalid(format!("lean is {}, not a boolean", show(other)))),
        };
        let params = match meta.get("params") {
            Some(Value::Object(params)) => params,
            other => return Err(invalid(format!("params is {}, not an object", show(other)))),
        };
        let predictor = match meta.get("predictor") {
            Some(Value::Object(p)) => p,
            other => return Err(invalid(format!("predictor is {}", show(other)))),
        };
        let state = match meta.get("state") {
            Some(state @ Value::Object(_)) => state,
            Some(other) => {
                return Err(invalid(format!(
                    "state is {}, not an object",
                    kind_of(other)
                )))
            }
            None => return Err(invalid("state is missing")),
        };
        let predictor = Predictor::parse(predictor, &estimator)?;
        check_priors(params.get("priors"), predictor.classes.len())?;
        let mut model = predictor.read(tensors)?;
        model.estimator = estimator;
        model.gkfda_version = gkfda_version;
        model.lean = lean;
        check_state(state, tensors)?;
        Ok(model)
    }

    /// This model predicting with `n_threads` threads per call (at least one; the
    /// default is one: a service parallelises across requests). Results do not depend on
    /// it.
    pub fn with_threads(mut self, n_threads: usize) -> Model {
        self.n_threads = n_threads.max(1);
        self
    }

    /// Threads per call ([`Model::with_threads`]).
    pub fn n_threads(&self) -> usize {
        self.n_threads
    }

    /// Columns of an input row: the features, or for a `precomputed` kernel the
    /// training samples.
    pub fn n_features(&self) -> usize {
        self.n_features
    }

    /// Classes of a classifier; 0 for regressors and transformers.
    pub fn n_classes(&self) -> usize {
        self.classes.len()
    }

    /// The labels, in the order of the probabilities' columns: a string label as it is,
    /// a number as its JSON text, a boolean as `"true"` or `"false"`. Empty for
    /// regressors and transformers.
    pub fn classes(&self) -> &[String] {
        &self.classes
    }

    /// The labels' type; `None` for regressors and transformers.
    pub fn class_kind(&self) -> Option<ClassKind> {
        self.class_kind
    }

    /// Columns of `z`: 1 for a two-class (logistic) model or a regressor, one per class
    /// otherwise, one per feature for a transformer.
    pub fn n_outputs(&self) -> usize {
        self.n_outputs
    }

    /// The bases of the kernel expansion.
    pub fn n_bases(&self) -> usize {
        self.weights.nrows()
    }

    pub fn task(&self) -> Task {
        self.task
    }

    pub fn link(&self) -> Link {
        self.link
    }

    /// The estimator that wrote the file, e.g. `"GreedyKFDA"`.
    pub fn estimator(&self) -> &str {
        &self.estimator
    }

    /// The kernel's name: `rbf`, `linear`, `poly` or `precomputed`.
    pub fn kernel_name(&self) -> &str {
        &self.kernel_name
    }

    /// The kernel and its parameters; `None` for `precomputed`.
    pub fn kernel(&self) -> Option<Kernel> {
        self.kernel
    }

    /// The type the kernel values are computed in.
    pub fn dtype(&self) -> Float {
        self.float
    }

    /// Whether the file held only the predictor (`lean`).
    pub fn is_lean(&self) -> bool {
        self.lean
    }

    /// The gkfda version that wrote the file.
    pub fn gkfda_version(&self) -> &str {
        &self.gkfda_version
    }

    /// `z`, the decision values of a classifier or the values of a regressor:
    /// `n_rows × n_outputs`, row-major (for a two-class model, one log-odds per row).
    pub fn decision_function(&self, x: &[f64], n_rows: usize) -> Result<Vec<f64>> {
        self.require(&[Task::Classifier, Task::Regressor], "decision_function")?;
        Ok(self
            .outputs(Rows::F64(x), n_rows)?
            .into_raw_vec_and_offset()
            .0)
    }

    /// The probabilities of the classes, `n_rows × n_classes`, row-major.
    pub fn predict_proba(&self, x: &[f64], n_rows: usize) -> Result<Vec<f64>> {
        self.require(&[Task::Classifier], "predict_proba")?;
        let z = self.outputs(Rows::F64(x), n_rows)?;
        Ok(self.probabilities(&z))
    }

    /// [`Model::predict_proba`] of `float32` rows, as `float32`. A `float32` model takes
    /// them as they are; a `float64` one widens them. The link runs in `float64`.
    pub fn predict_proba_f32(&self, x: &[f32], n_rows: usize) -> Result<Vec<f32>> {
        self.require(&[Task::Classifier], "predict_proba")?;
        let z = self.outputs(Rows::F32(x), n_rows)?;
        Ok(self.probabilities(&z).iter().map(|&p| p as f32).collect())
    }

    /// The predicted classes, as indices into [`Model::classes`]: the first class of
    /// largest probability.
    pub fn predict(&self, x: &[f64], n_rows: usize) -> Result<Vec<usize>> {
        self.require(&[Task::Classifier], "predict")?;
        let z = self.outputs(Rows::F64(x), n_rows)?;
        let classes = self.n_classes();
        Ok(self
            .probabilities(&z)
            .chunks_exact(classes)
            .map(|row| {
                let mut best = 0;
                for (c, &p) in row.iter().enumerate() {
                    if p > row[best] {
                        best = c;
                    }
                }
                best
            })
            .collect())
    }

    /// The features of a transformer, `n_rows × n_outputs`, row-major.
    pub fn transform(&self, x: &[f64], n_rows: usize) -> Result<Vec<f64>> {
        self.require(&[Task::Transformer], "transform")?;
        Ok(self
            .outputs(Rows::F64(x), n_rows)?
            .into_raw_vec_and_offset()
            .0)
    }

    fn require(&self, tasks: &[Task], method: &str) -> Result<()> {
        if tasks.contains(&self.task) {
            return Ok(());
        }
        let task = match self.task {
            Task::Classifier => "a classifier",
            Task::Regressor => "a regressor",
            Task::Transformer => "a transformer",
        };
        Err(Error::Unsupported(format!(
            "{method}: the model ({}) is {task}",
            self.estimator
        )))
    }

    /// Steps 1-5: `z`, `n_rows × n_outputs`.
    fn outputs(&self, x: Rows, n_rows: usize) -> Result<Array2<f64>> {
        let d = self.n_features;
        if n_rows.checked_mul(d) != Some(x.len()) {
            return Err(Error::invalid(
                "X",
                format!(
                    "has {} values, not n_rows × n_features = {n_rows} × {d}",
                    x.len()
                ),
            ));
        }
        if let Some(i) = (0..x.len()).find(|&i| !x.get(i).is_finite()) {
            return Err(Error::invalid(
                "X",
                format!("row {} has a non-finite value at column {}", i / d, i % d),
            ));
        }
        n_rows
            .checked_mul(self.n_outputs.max(self.n_classes()))
            .filter(|&n| n <= isize::MAX as usize / 8)
            .ok_or(Error::OutOfMemory {
                what: "the outputs",
                bytes: usize::MAX,
            })?;
        let stop = AtomicBool::new(false);
        let direct = self.lower.is_none() && self.center.is_none();
        let mut z = match &self.basis {
            Basis::F64(bases) => {
                let x = as_f64(x);
                let x = ArrayView2::from_shape((n_rows, d), &x).expect("length checked");
                if direct {
                    self.expand(x, bases, &stop)?
                } else {
                    let values = kernel::cross_prepared(
                        x,
                        bases,
                        self.kernel.as_ref().expect("named kernel"),
                        self.n_threads,
                        &stop,
                    )?;
                    self.linear(values)?
                }
            }
            Basis::F32(bases) => {
                let x = as_f32(x, d)?;
                let x = ArrayView2::from_shape((n_rows, d), &x).expect("length checked");
                if direct {
                    self.expand(x, bases, &stop)?
                } else {
                    let kernel = self.kernel.as_ref().expect("named kernel");
                    let values = kernel::cross_prepared(x, bases, kernel, self.n_threads, &stop)?;
                    self.linear(values.mapv(f64::from))?
                }
            }
            Basis::Empty => {
                if let (Float::F32, Rows::F64(x)) = (self.float, x) {
                    for (i, &v) in x.iter().enumerate() {
                        narrow(v, i / d, i % d)?;
                    }
                }
                self.linear(Array2::zeros((n_rows, 0)))?
            }
            Basis::Columns(columns) => {
                let mut values = Array2::<f64>::zeros((n_rows, columns.len()));
                for (i, mut row) in values.rows_mut().into_iter().enumerate() {
                    for (value, &j) in row.iter_mut().zip(columns) {
                        let v = x.get(i * d + j);
                        // Step 1 in `dtype`: a float32 model rounds its input first.
                        *value = match self.float {
                            Float::F32 => narrow(v, i, j)? as f64,
                            Float::F64 => v,
                        };
                    }
                }
                self.linear(values)?
            }
        };
        if let Some((slope, offset)) = &self.calibration {
            for mut row in z.rows_mut() {
                for ((value, &s), &o) in row.iter_mut().zip(slope).zip(offset) {
                    *value = s * *value + o;
                }
            }
        }
        if let Some(i) = z
            .rows()
            .into_iter()
            .position(|row| !row.iter().all(|v| v.is_finite()))
        {
            return Err(Error::invalid(
                "X",
                format!("row {i}: the model's outputs overflow; scale the features"),
            ));
        }
        Ok(z)
    }

    /// Steps 1 and 4 as one kernel expansion: Python's own call, or for a few float64 rows
    /// the direct loop (the same arithmetic to rounding).
    fn expand<F: Real>(
        &self,
        x: ArrayView2<F>,
        bases: &Bases<F>,
        stop: &AtomicBool,
    ) -> Result<Array2<f64>> {
        let kernel = self.kernel.as_ref().expect("named kernel");
        // float64 only: in float32 another order of the sums changes the kernel values by
        // float32's rounding (~1e-7), and a row would no longer agree with Python's to 1e-12.
        if x.nrows() <= DIRECT_EXPANSION_ROWS && TypeId::of::<F>() == TypeId::of::<f64>() {
            return kernel::expansion_direct(x, bases, self.weights.view(), &self.bias, kernel);
        }
        kernel::expansion_prepared(
            x,
            bases,
            self.weights.view(),
            &self.bias,
            kernel,
            self.n_threads,
            stop,
        )
    }

    /// Steps 2-4 on the kernel values `v` (`n × n_bases`, float64).
    fn linear(&self, mut v: Array2<f64>) -> Result<Array2<f64>> {
        let k = self.n_bases();
        if let Some(lower) = &self.lower {
            for mut row in v.rows_mut() {
                let row = row.as_slice_mut().expect("standard layout");
                for i in 0..k {
                    let li = &lower[i * k..i * k + i];
                    let sum: f64 = li.iter().zip(&row[..i]).map(|(l, v)| l * v).sum();
                    row[i] = (row[i] - sum) / lower[i * k + i];
                }
            }
        }
        if let Some(center) = &self.center {
            for mut row in v.rows_mut() {
                row -= &ndarray::ArrayView1::from(center);
            }
        }
        let mut z = v.dot(&self.weights);
        for mut row in z.rows_mut() {
            row += &ndarray::ArrayView1::from(&self.bias);
        }
        Ok(z)
    }

    /// Step 6 for every row of `z`, row-major `n × n_classes`.
    fn probabilities(&self, z: &Array2<f64>) -> Vec<f64> {
        let values = z.as_slice().expect("standard layout");
        self.link.apply_rows(values, self.n_outputs)
    }
}

fn as_f64(x: Rows) -> std::borrow::Cow<[f64]> {
    match x {
        Rows::F64(x) => std::borrow::Cow::Borrowed(x),
        Rows::F32(x) => std::borrow::Cow::Owned(x.iter().map(|&v| v as f64).collect()),
    }
}

fn as_f32(x: Rows, d: usize) -> Result<std::borrow::Cow<[f32]>> {
    match x {
        Rows::F32(x) => Ok(std::borrow::Cow::Borrowed(x)),
        Rows::F64(x) => x
            .iter()
            .enumerate()
            .map(|(i, &v)| narrow(v, i / d.max(1), i % d.max(1)))
            .collect::<Result<Vec<f32>>>()
            .map(std::borrow::Cow::Owned),
    }
}

/// `v` in float32, or an error naming its row and column if it is beyond float32's range
/// (the value in short scientific form: it has some 300 digits).
fn narrow(v: f64, row: usize, column: usize) -> Result<f32> {
    let narrowed = v as f32;
    if narrowed.is_finite() {
        Ok(narrowed)
    } else {
        Err(Error::invalid(
            "X",
            format!(
                "row {row} has a value ({v:.3e}) at column {column} beyond the range of the \
                 model's float32"
            ),
        ))
    }
}

/// The header's length from the file's first 8 bytes (`None`: the file is shorter),
/// checked against the limit and against the file's `size`.
fn header_length(first: Option<&[u8; 8]>, size: u64) -> Result<usize> {
    let Some(first) = first else {
        return Err(invalid(format!(
            "{size} bytes is shorter than the 8-byte header length"
        )));
    };
    let header = u64::from_le_bytes(*first);
    if header > MAX_HEADER_BYTES {
        return Err(invalid(format!(
            "header of {header} bytes exceeds the limit of {MAX_HEADER_BYTES}"
        )));
    }
    if header > size - 8 {
        return Err(invalid(format!(
            "header of {header} bytes runs past the end of the file ({size} bytes)"
        )));
    }
    usize::try_from(header).map_err(|_| invalid("the header does not fit in memory"))
}

/// The rules of the header the safetensors crate lets through: no key twice (the crate
/// keeps the last), each tensor's entry exactly `dtype`, `shape` and `data_offsets`, at
/// most [`MAX_DIMENSIONS`] dimensions. Returns the end of the tensors' data (the largest
/// end offset), which the crate checks against the rest of the header.
fn check_header(header: &[u8]) -> Result<u64> {
    let text = std::str::from_utf8(header).map_err(|e| {
        invalid(format!(
            "not a safetensors file: the header is not UTF-8: {e}"
        ))
    })?;
    let header = unique_json(text).map_err(|e| {
        invalid(format!(
            "not a safetensors file: the header is not JSON without repeated keys: {e}"
        ))
    })?;
    let Value::Object(entries) = header else {
        return Err(invalid(
            "not a safetensors file: the header is not a JSON object",
        ));
    };
    let mut end = 0;
    for (name, entry) in entries.iter().filter(|(name, _)| *name != "__metadata__") {
        let entry = match entry {
            Value::Object(entry)
                if entry.len() == 3
                    && ["dtype", "shape", "data_offsets"]
                        .iter()
                        .all(|key| entry.contains_key(*key)) =>
            {
                entry
            }
            _ => {
                return Err(invalid(format!(
                    "tensor {name:?}: its header entry must have exactly dtype, shape and \
                     data_offsets"
                )))
            }
        };
        if let Some(Value::Array(shape)) = entry.get("shape") {
            if shape.len() > MAX_DIMENSIONS {
                return Err(invalid(format!(
                    "tensor {name:?} has {} dimensions; the format allows at most \
                     {MAX_DIMENSIONS}",
                    shape.len()
                )));
            }
        }
        if let Some(Value::Array(offsets)) = entry.get("data_offsets") {
            if let Some(stop) = offsets.get(1).and_then(Value::as_u64) {
                end = u64::max(end, stop);
            }
        }
    }
    Ok(end)
}

/// A file of `size` bytes holds exactly its header's `header` bytes and `data` bytes of
/// tensors after the 8-byte length.
fn check_size(header: usize, data: u64, size: u64) -> Result<()> {
    let expected = (8 + header as u64).saturating_add(data);
    if size > expected {
        return Err(invalid(format!(
            "the file has {size} bytes, more than the {expected} its header accounts for"
        )));
    }
    if size < expected {
        return Err(invalid(format!(
            "truncated: the file has {size} bytes, fewer than the {expected} its header \
             accounts for"
        )));
    }
    Ok(())
}

/// The bytes of the model file at `path`, read as [`Model::load`] says: a regular file
/// only, and never more bytes than its header accounts for.
fn read_file(path: &Path) -> Result<Vec<u8>> {
    let io = |message: String| Error::Io {
        path: path.display().to_string(),
        message,
    };
    // The type is checked before opening: opening a FIFO for reading blocks until a
    // writer comes.
    let regular = |kind: std::fs::FileType| {
        if kind.is_file() {
            Ok(())
        } else {
            let what = if kind.is_dir() {
                "a directory"
            } else if kind.is_symlink() {
                "a symbolic link"
            } else {
                "a FIFO, socket or device"
            };
            Err(io(format!(
                "is not a regular file (it is {what}); a model file is read from a regular file"
            )))
        }
    };
    let metadata = std::fs::metadata(path).map_err(|e| io(e.to_string()))?;
    regular(metadata.file_type())?;
    let mut file = std::fs::File::open(path).map_err(|e| io(e.to_string()))?;
    // The path may name another file by now: the opened one is checked again.
    let metadata = file.metadata().map_err(|e| io(e.to_string()))?;
    regular(metadata.file_type())?;
    let size = metadata.len();
    let mut first = [0u8; 8];
    let length = header_length(
        match size {
            0..8 => None,
            _ => {
                file.read_exact(&mut first).map_err(|e| io(e.to_string()))?;
                Some(&first)
            }
        },
        size,
    )?;
    let mut header = Vec::new();
    (&mut file)
        .take(length as u64)
        .read_to_end(&mut header)
        .map_err(|e| io(e.to_string()))?;
    if header.len() != length {
        return Err(io("the file shrank while it was read".to_string()));
    }
    let data = check_header(&header)?;
    check_size(length, data, size)?;
    let data_length =
        usize::try_from(data).map_err(|_| invalid("the data does not fit in memory"))?;
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(8 + length + data_length)
        .map_err(|_| Error::OutOfMemory {
            what: "the model file",
            bytes: 8 + length + data_length,
        })?;
    bytes.extend_from_slice(&first);
    bytes.extend_from_slice(&header);
    (&mut file)
        .take(data)
        .read_to_end(&mut bytes)
        .map_err(|e| io(e.to_string()))?;
    let mut more = [0u8; 1];
    let grown = file.read(&mut more).map_err(|e| io(e.to_string()))? != 0;
    if bytes.len() as u64 != size || grown {
        return Err(io("the file changed size while it was read".to_string()));
    }
    Ok(bytes)
}

/// `text` as JSON, refused if an object has a key twice (`serde_json::Value` would keep
/// the last silently, where the Python reader refuses).
fn unique_json(text: &str) -> serde_json::Result<Value> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = deserializer.deserialize_any(UniqueKeys)?;
    deserializer.end()?;
    Ok(value)
}

/// Builds a [`Value`] as `serde_json` does, but refuses a repeated key.
struct UniqueKeys;

impl<'de> serde::de::DeserializeSeed<'de> for UniqueKeys {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> std::result::Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for UniqueKeys {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> std::result::Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> std::result::Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> std::result::Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> std::result::Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom(format!("{v} is not a JSON number")))
    }

    fn visit_str<E>(self, v: &str) -> std::result::Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> std::result::Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Value, A::Error> {
        let mut values = Vec::new();
        while let Some(value) = seq.next_element_seed(UniqueKeys)? {
            values.push(value);
        }
        Ok(Value::Array(values))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(A::Error::custom(format!(
                    "the key {key:?} appears twice in an object"
                )));
            }
            let value = map.next_value_seed(UniqueKeys)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// The byte range of the `checksum` tensor in the file, which must be `U8` of shape `[32]`.
fn checksum_range(header: usize, metadata: &safetensors::tensor::Metadata) -> Result<Range<usize>> {
    match metadata.info(CHECKSUM) {
        Some(info) if info.dtype == Dtype::U8 && info.shape == [32] => {
            let (begin, end) = info.data_offsets;
            Ok(8 + header + begin..8 + header + end)
        }
        _ => Err(invalid(format!(
            "the header has no {CHECKSUM:?} tensor of 32 bytes (U8)"
        ))),
    }
}

/// The SHA-256 of `bytes` without those of `range`.
fn checksum(bytes: &[u8], range: Range<usize>) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(&bytes[..range.start]);
    hasher.update(&bytes[range.end..]);
    hasher.finalize().into()
}

/// Writes into a model file's `checksum` tensor the SHA-256 of every other byte, as a
/// writer does last (it wrote the tensor as 32 zeros first). An error if `bytes` is not
/// a safetensors file with such a tensor.
pub fn seal(bytes: &mut [u8]) -> Result<()> {
    let (header, metadata) = SafeTensors::read_metadata(bytes)
        .map_err(|e| invalid(format!("not a safetensors file: {e}")))?;
    let range = checksum_range(header, &metadata)?;
    let digest = checksum(bytes, range.clone());
    bytes[range].copy_from_slice(&digest);
    Ok(())
}

fn show(value: Option<&Value>) -> String {
    match value {
        None => "missing".to_string(),
        Some(v) => {
            let text = v.to_string();
            if text.len() > 80 {
                format!("{}…", text.chars().take(80).collect::<String>())
            } else {
                text
            }
        }
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The `predictor` object, checked on its own (the tensors come next).
struct Predictor {
    task: Task,
    link: Link,
    kernel_name: String,
    kernel: Option<Kernel>,
    float: Float,
    n_features: usize,
    n_bases: usize,
    n_outputs: usize,
    class_kind: Option<ClassKind>,
    classes: Vec<String>,
    /// The optional `predict.*` tensors this estimator's predictor may have.
    optional: &'static [&'static str],
}

const METADATA_KEYS: [&str; 8] = [
    "format",
    "format_version",
    "gkfda_version",
    "estimator",
    "lean",
    "params",
    "predictor",
    "state",
];

const PREDICTOR_KEYS: [&str; 11] = [
    "task",
    "kernel",
    "gamma",
    "degree",
    "coef0",
    "dtype",
    "n_features",
    "n_bases",
    "n_outputs",
    "link",
    "classes",
];

/// What each estimator's predictor is: its task, its links, the optional tensors it has.
fn estimator_predictor(estimator: &str) -> (Task, &'static [Link], &'static [&'static str]) {
    const CLASSIFIER: &[Link] = &[Link::Logistic, Link::Softmax, Link::Ovr];
    match estimator {
        "ParsimoniousKFDA" => (
            Task::Classifier,
            &[Link::Logistic, Link::Ovr],
            &["predict.slope", "predict.offset"],
        ),
        "KernelMatchingPursuit" => (Task::Regressor, &[Link::Identity], &[]),
        "GreedyNystroem" => (Task::Transformer, &[Link::Identity], &[]),
        "SparseKernelPCA" => (Task::Transformer, &[Link::Identity], &["predict.lower"]),
        "SparseKernelCCA" => (
            Task::Transformer,
            &[Link::Identity],
            &["predict.lower", "predict.center"],
        ),
        // GreedyKFDA, GreedyKFDACV
        _ => (Task::Classifier, CLASSIFIER, &[]),
    }
}

/// `predictor.<key>`: an integer from `smallest` to [`MAX_COUNT`].
fn count(p: &Map<String, Value>, key: &str, smallest: u64) -> Result<usize> {
    p.get(key)
        .and_then(Value::as_u64)
        .filter(|n| (smallest..=MAX_COUNT).contains(n))
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| {
            invalid(format!(
                "predictor.{key} is {}, not an integer from {smallest} to 2^53",
                show(p.get(key))
            ))
        })
}

/// `predictor.<key>`: a finite number.
fn number(p: &Map<String, Value>, key: &str) -> Result<f64> {
    p.get(key)
        .and_then(Value::as_f64)
        .filter(|v| v.is_finite())
        .ok_or_else(|| {
            invalid(format!(
                "predictor.{key} is {}, not a finite number",
                show(p.get(key))
            ))
        })
}

impl Predictor {
    fn parse(p: &Map<String, Value>, estimator: &str) -> Result<Predictor> {
        if let Some(key) = p.keys().find(|k| !PREDICTOR_KEYS.contains(&k.as_str())) {
            return Err(invalid(format!("predictor has an unknown key {key:?}")));
        }
        if let Some(key) = PREDICTOR_KEYS.iter().find(|k| !p.contains_key(**k)) {
            return Err(invalid(format!("predictor.{key} is missing")));
        }
        let text = |key: &str| match p.get(key) {
            Some(Value::String(s)) => Ok(s.as_str()),
            other => Err(invalid(format!(
                "predictor.{key} is {}, not a string",
                show(other)
            ))),
        };
        let task = match text("task")? {
            "classifier" => Task::Classifier,
            "regressor" => Task::Regressor,
            "transformer" => Task::Transformer,
            other => return Err(invalid(format!("predictor.task {other:?} is unknown"))),
        };
        let link = match text("link")? {
            "logistic" => Link::Logistic,
            "softmax" => Link::Softmax,
            "ovr" => Link::Ovr,
            "identity" => Link::Identity,
            other => return Err(invalid(format!("predictor.link {other:?} is unknown"))),
        };
        let (expected_task, links, optional) = estimator_predictor(estimator);
        if task != expected_task {
            return Err(invalid(format!(
                "predictor.task is {:?}; a {estimator} is a {}",
                text("task")?,
                match expected_task {
                    Task::Classifier => "classifier",
                    Task::Regressor => "regressor",
                    Task::Transformer => "transformer",
                }
            )));
        }
        if !links.contains(&link) {
            return Err(invalid(format!(
                "predictor.link {:?} is not a link of a {estimator}",
                text("link")?
            )));
        }
        let float = match text("dtype")? {
            "float32" => Float::F32,
            "float64" => Float::F64,
            other => return Err(invalid(format!("predictor.dtype {other:?} is unknown"))),
        };
        let kernel_name = text("kernel")?.to_string();
        // Every kernel's file holds all three parameters, used or not (one rule for every
        // reader).
        let gamma = number(p, "gamma")?;
        if gamma <= 0.0 {
            return Err(invalid(format!(
                "predictor.gamma is {gamma}, not a positive finite number"
            )));
        }
        let degree = p
            .get("degree")
            .and_then(Value::as_u64)
            .filter(|d| (1..=MAX_DEGREE).contains(d))
            .and_then(|d| u32::try_from(d).ok())
            .ok_or_else(|| {
                invalid(format!(
                    "predictor.degree is {}, not an integer from 1 to {MAX_DEGREE}",
                    show(p.get("degree"))
                ))
            })?;
        let coef0 = number(p, "coef0")?;
        let kernel = match kernel_name.as_str() {
            "precomputed" => None,
            "linear" => Some(Kernel::Linear),
            "rbf" => Some(Kernel::Rbf { gamma }),
            "poly" => Some(Kernel::Poly {
                gamma,
                degree,
                coef0,
            }),
            other => {
                return Err(invalid(format!(
                    "predictor.kernel {other:?} is unknown; expected one of {}, precomputed",
                    Kernel::NAMES.join(", ")
                )))
            }
        };
        if let Some(kernel) = &kernel {
            let checked = match float {
                Float::F32 => kernel.validate_for::<f32>(),
                Float::F64 => kernel.validate_for::<f64>(),
            };
            checked.map_err(|e| invalid(format!("predictor: {e}")))?;
        }
        let n_features = count(p, "n_features", 1)?;
        let n_bases = count(p, "n_bases", 0)?;
        let n_outputs = count(p, "n_outputs", 1)?;
        let (class_kind, classes) = parse_classes(p.get("classes"))?;
        let n_classes = classes.len();
        let consistent = match (task, link) {
            (Task::Classifier, Link::Logistic) => n_outputs == 1 && n_classes == 2,
            (Task::Classifier, Link::Softmax | Link::Ovr) => {
                n_classes >= 3 && n_outputs == n_classes
            }
            (Task::Regressor, Link::Identity) => n_outputs == 1 && class_kind.is_none(),
            (Task::Transformer, Link::Identity) => class_kind.is_none(),
            _ => false,
        };
        if !consistent || (task == Task::Classifier) != class_kind.is_some() {
            return Err(invalid(format!(
                "predictor: task {:?} with link {:?}, {n_outputs} outputs and {} classes \
                 is not a valid combination",
                text("task")?,
                text("link")?,
                if class_kind.is_some() {
                    n_classes.to_string()
                } else {
                    "null".to_string()
                }
            )));
        }
        Ok(Predictor {
            task,
            link,
            kernel_name,
            kernel,
            float,
            n_features,
            n_bases,
            n_outputs,
            class_kind,
            classes,
            optional,
        })
    }

    /// The predictor's tensors, checked against it and against each other.
    fn read(self, tensors: &SafeTensors) -> Result<Model> {
        let (k, d, c) = (self.n_bases, self.n_features, self.n_outputs);
        let mut expected: Vec<&str> = vec!["predict.weights", "predict.bias"];
        expected.push(if self.kernel.is_some() {
            "predict.points"
        } else {
            "predict.columns"
        });
        let mut present = HashMap::new();
        for (name, view) in tensors.iter() {
            if name == CHECKSUM {
                continue;
            }
            if ![Dtype::F64, Dtype::F32, Dtype::I64, Dtype::BOOL, Dtype::U8].contains(&view.dtype())
            {
                return Err(invalid(format!(
                    "tensor {name:?} has dtype {:?}; the format uses F64, F32, I64, BOOL and U8",
                    view.dtype()
                )));
            }
            if name.starts_with("predict.") {
                if !(expected.contains(&name) || self.optional.contains(&name)) {
                    return Err(invalid(format!(
                        "tensor {name:?} is not part of this predictor (kernel {:?})",
                        self.kernel_name
                    )));
                }
                present.insert(name, view);
            } else if !name.starts_with("state.") {
                return Err(invalid(format!(
                    "tensor {name:?} is neither a predict.* nor a state.* tensor"
                )));
            }
        }
        // What the estimator's predictor always has: SparseKernelPCA's lower, ...
        if let Some(missing) = expected
            .iter()
            .chain(self.optional)
            .find(|n| !present.contains_key(*n))
        {
            return Err(invalid(format!("tensor {missing:?} is missing")));
        }
        let tensor = |name: &str| {
            present
                .get(name)
                .ok_or_else(|| invalid(format!("tensor {name:?} is missing")))
        };
        let f64s = |name: &str, shape: &[usize]| -> Result<Vec<f64>> {
            let view = tensor(name)?;
            check_shape(name, view, Dtype::F64, shape)?;
            let values = floats_f64(view.data());
            if values.iter().any(|v| !v.is_finite()) {
                return Err(invalid(format!("tensor {name:?} has a non-finite value")));
            }
            Ok(values)
        };
        let optional = |name: &str, shape: &[usize]| -> Result<Option<Vec<f64>>> {
            if self.optional.contains(&name) {
                f64s(name, shape).map(Some)
            } else {
                Ok(None)
            }
        };
        let weights = Array2::from_shape_vec((k, c), f64s("predict.weights", &[k, c])?)
            .map_err(|e| invalid(format!("tensor \"predict.weights\": {e}")))?;
        let bias = f64s("predict.bias", &[c])?;
        let lower = optional("predict.lower", &[k, k])?;
        if let Some(lower) = &lower {
            for (i, row) in lower.chunks_exact(k.max(1)).enumerate() {
                // Positive as the Python reader requires (a Cholesky factor's diagonal).
                if row.get(i).is_none_or(|&v| v <= 0.0) {
                    return Err(invalid(format!(
                        "predict.lower has a diagonal value that is not positive (row {i})"
                    )));
                }
                if row.iter().skip(i + 1).any(|&v| v != 0.0) {
                    return Err(invalid(format!(
                        "predict.lower is not lower triangular (row {i})"
                    )));
                }
            }
        }
        let center = optional("predict.center", &[k])?;
        let calibration = match (
            optional("predict.slope", &[c])?,
            optional("predict.offset", &[c])?,
        ) {
            (Some(slope), Some(offset)) => Some((slope, offset)),
            _ => None,
        };
        let basis = match (&self.kernel, self.float) {
            (None, _) => {
                let view = tensor("predict.columns")?;
                check_shape("predict.columns", view, Dtype::I64, &[k])?;
                let (chunks, _) = view.data().as_chunks::<8>();
                let columns = chunks
                    .iter()
                    .map(|b| i64::from_le_bytes(*b))
                    .map(|j| usize::try_from(j).ok().filter(|&j| j < d))
                    .collect::<Option<Vec<usize>>>()
                    .ok_or_else(|| {
                        invalid(format!("predict.columns has an index outside [0, {d})"))
                    })?;
                let mut seen = HashSet::with_capacity(columns.len());
                if let Some(j) = columns.iter().find(|&&j| !seen.insert(j)) {
                    return Err(invalid(format!("predict.columns has the index {j} twice")));
                }
                Basis::Columns(columns)
            }
            (Some(kernel), float) => {
                let view = tensor("predict.points")?;
                let dtype = match float {
                    Float::F64 => Dtype::F64,
                    Float::F32 => Dtype::F32,
                };
                check_shape("predict.points", view, dtype, &[k, d])?;
                let shape_error = |e| invalid(format!("tensor \"predict.points\": {e}"));
                let non_finite = || invalid("tensor \"predict.points\" has a non-finite value");
                if k == 0 {
                    Basis::Empty
                } else if float == Float::F64 {
                    let points = floats_f64(view.data());
                    if points.iter().any(|v| !v.is_finite()) {
                        return Err(non_finite());
                    }
                    let points = Array2::from_shape_vec((k, d), points).map_err(shape_error)?;
                    Basis::F64(Bases::new(points.view(), kernel))
                } else {
                    let points = floats_f32(view.data());
                    if points.iter().any(|v| !v.is_finite()) {
                        return Err(non_finite());
                    }
                    let points = Array2::from_shape_vec((k, d), points).map_err(shape_error)?;
                    Basis::F32(Bases::new(points.view(), kernel))
                }
            }
        };
        Ok(Model {
            estimator: String::new(),
            gkfda_version: String::new(),
            lean: false,
            task: self.task,
            link: self.link,
            kernel_name: self.kernel_name,
            kernel: self.kernel,
            float: self.float,
            n_features: d,
            n_outputs: c,
            class_kind: self.class_kind,
            classes: self.classes,
            basis,
            lower,
            center,
            weights,
            bias,
            calibration,
            n_threads: 1,
        })
    }
}

fn check_shape(name: &str, view: &TensorView, dtype: Dtype, shape: &[usize]) -> Result<()> {
    if view.dtype() != dtype || view.shape() != shape {
        return Err(invalid(format!(
            "tensor {name:?} is {:?} of shape {:?}; the predictor needs {dtype:?} of shape {shape:?}",
            view.dtype(),
            view.shape()
        )));
    }
    Ok(())
}

fn floats_f64(bytes: &[u8]) -> Vec<f64> {
    let (chunks, _) = bytes.as_chunks::<8>();
    chunks.iter().map(|b| f64::from_le_bytes(*b)).collect()
}

fn floats_f32(bytes: &[u8]) -> Vec<f32> {
    let (chunks, _) = bytes.as_chunks::<4>();
    chunks.iter().map(|b| f32::from_le_bytes(*b)).collect()
}

/// `classes`: null, or `{"kind", "values"}` with labels of that kind in strictly
/// increasing order (as `np.unique` gives them, which the Python reader requires): numbers
/// by value, so `1` and `1.0` of kind float are one label; strings by code point (UTF-8
/// byte order), after dropping trailing U+0000, which a NumPy string array drops.
fn parse_classes(classes: Option<&Value>) -> Result<(Option<ClassKind>, Vec<String>)> {
    let classes = match classes {
        Some(Value::Null) => return Ok((None, Vec::new())),
        Some(Value::Object(c)) => c,
        other => {
            return Err(invalid(format!(
                "predictor.classes is {}, not null or an object",
                show(other)
            )))
        }
    };
    if let Some(key) = classes.keys().find(|k| *k != "kind" && *k != "values") {
        return Err(invalid(format!(
            "predictor.classes has an unknown key {key:?}"
        )));
    }
    let kind = match classes.get("kind").and_then(Value::as_str) {
        Some("int") => ClassKind::Int,
        Some("float") => ClassKind::Float,
        Some("bool") => ClassKind::Bool,
        Some("str") => ClassKind::Str,
        _ => {
            return Err(invalid(format!(
                "predictor.classes.kind is {}; expected int, float, bool or str",
                show(classes.get("kind"))
            )))
        }
    };
    let Some(Value::Array(values)) = classes.get("values") else {
        return Err(invalid("predictor.classes.values is not an array"));
    };
    let mut labels = Vec::with_capacity(values.len());
    let mut previous: Option<Label> = None;
    for (i, value) in values.iter().enumerate() {
        let label = match (kind, value) {
            (ClassKind::Int, Value::Number(n)) if n.is_i64() => {
                n.as_i64().map(|v| (Label::Int(v), n.to_string()))
            }
            (ClassKind::Float, Value::Number(n)) => n
                .as_f64()
                .filter(|v| v.is_finite())
                .map(|v| (Label::Float(v), n.to_string())),
            (ClassKind::Bool, Value::Bool(b)) => Some((Label::Bool(*b), b.to_string())),
            (ClassKind::Str, Value::String(s)) => {
                let s = s.trim_end_matches('\0');
                Some((Label::Str(s.to_string()), s.to_string()))
            }
            _ => None,
        };
        let Some((label, text)) = label else {
            return Err(invalid(format!(
                "predictor.classes.values has {} for kind {}",
                show(Some(value)),
                show(classes.get("kind"))
            )));
        };
        if let Some(previous) = &previous {
            if !previous.before(&label) {
                return Err(invalid(format!(
                    "predictor.classes.values: label {i} ({}) does not come after the one \
                     before it; the labels must be distinct and increasing",
                    show(Some(value))
                )));
            }
        }
        previous = Some(label);
        labels.push(text);
    }
    Ok((Some(kind), labels))
}

/// A class label as its kind orders it.
enum Label {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
}

impl Label {
    fn before(&self, next: &Label) -> bool {
        match (self, next) {
            (Label::Int(a), Label::Int(b)) => a < b,
            (Label::Float(a), Label::Float(b)) => a < b,
            (Label::Bool(a), Label::Bool(b)) => a < b,
            (Label::Str(a), Label::Str(b)) => a < b,
            _ => false,
        }
    }
}

/// `params.priors`, when present and not null: one positive finite number per class,
/// summing to 1 within 1e-6 (the estimator's own rule).
fn check_priors(priors: Option<&Value>, n_classes: usize) -> Result<()> {
    let priors = match priors {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(priors)) => priors,
        Some(other) => {
            return Err(invalid(format!(
                "params.priors is {}, not a list of numbers",
                show(Some(other))
            )))
        }
    };
    if priors.len() != n_classes {
        return Err(invalid(format!(
            "params.priors has {} values; the model has {n_classes} classes",
            priors.len()
        )));
    }
    let mut sum = 0.0;
    for prior in priors {
        match prior.as_f64() {
            Some(p) if p.is_finite() && p > 0.0 && !prior.is_boolean() => sum += p,
            _ => {
                return Err(invalid(format!(
                    "params.priors has {}; every prior must be a positive finite number",
                    show(Some(prior))
                )))
            }
        }
    }
    if (sum - 1.0).abs() > 1e-6 {
        return Err(invalid(format!("params.priors sums to {sum}, not 1")));
    }
    Ok(())
}

/// The `state` tree's tensor references name present tensors, every `state.*` tensor is
/// referenced, and the floating ones are finite (the reader does not use them otherwise).
fn check_state(state: &Value, tensors: &SafeTensors) -> Result<()> {
    let mut referenced = HashSet::new();
    collect_references(state, &mut referenced);
    for name in &referenced {
        if tensors.tensor(name).is_err() {
            return Err(invalid(format!(
                "the state references tensor {name:?}, which is missing"
            )));
        }
    }
    for (name, view) in tensors.iter() {
        if !name.starts_with("state.") {
            continue;
        }
        if !referenced.contains(name) {
            return Err(invalid(format!(
                "tensor {name:?} is not referenced by the state"
            )));
        }
        let finite = match view.dtype() {
            Dtype::F64 => floats_f64(view.data()).iter().all(|v| v.is_finite()),
            Dtype::F32 => floats_f32(view.data()).iter().all(|v| v.is_finite()),
            _ => true,
        };
        if !finite {
            return Err(invalid(format!("tensor {name:?} has a non-finite value")));
        }
    }
    Ok(())
}

fn collect_references<'a>(value: &'a Value, out: &mut HashSet<&'a str>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(name)) = map.get("__tensor__") {
                out.insert(name);
            }
            for v in map.values() {
                collect_references(v, out);
            }
        }
        Value::Array(values) => {
            for v in values {
                collect_references(v, out);
            }
        }
        _ => {}
    }
}

/// The bytes of a small two-class RBF model file (two bases in two features), for the
/// documentation's examples.
#[doc(hidden)]
pub fn example_file() -> Vec<u8> {
    let predictor = serde_json::json!({
        "format": "gkfda", "format_version": 1, "gkfda_version": "0.1.0",
        "estimator": "GreedyKFDA", "lean": true, "params": {}, "state": {},
        "predictor": {
            "task": "classifier", "kernel": "rbf", "gamma": 0.5, "degree": 3, "coef0": 1.0,
            "dtype": "float64", "n_features": 2, "n_bases": 2, "n_outputs": 1,
            "link": "logistic", "classes": {"kind": "int", "values": [0, 1]}
        }
    });
    let bytes = |v: &[f64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let tensors = [
        (
            "predict.points",
            Dtype::F64,
            vec![2, 2],
            bytes(&[0.0, 0.0, 1.0, 1.0]),
        ),
        (
            "predict.weights",
            Dtype::F64,
            vec![2, 1],
            bytes(&[-2.0, 2.0]),
        ),
        ("predict.bias", Dtype::F64, vec![1], bytes(&[0.1])),
        (CHECKSUM, Dtype::U8, vec![32], vec![0; 32]),
    ];
    let views: Vec<_> = tensors
        .iter()
        .map(|(name, dtype, shape, data)| {
            let view = TensorView::new(*dtype, shape.clone(), data).expect("consistent");
            (*name, view)
        })
        .collect();
    let metadata = HashMap::from([("gkfda".to_string(), predictor.to_string())]);
    let mut file = safetensors::serialize(views, Some(metadata)).expect("a valid file");
    seal(&mut file).expect("a checksum tensor");
    file
}
