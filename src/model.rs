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
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::any::TypeId;
use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::AtomicBool;

/// The tensor holding the SHA-256 of every other byte of the file.
pub const CHECKSUM: &str = "checksum";
/// The largest header a reader accepts (the specification's limit), in bytes.
pub const MAX_HEADER_BYTES: u64 = 16 << 20;
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
    pub fn load(path: impl AsRef<Path>) -> Result<Model> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| Error::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Model::from_bytes(&bytes)
    }

    /// Reads and checks a model file's bytes. Nothing in them is trusted: any
    /// inconsistency is an [`Error::InvalidModel`] naming it.
    pub fn from_bytes(bytes: &[u8]) -> Result<Model> {
        let Some(length) = bytes.get(..8) else {
            return Err(invalid(format!(
                "{} bytes is shorter than the 8-byte header length",
                bytes.len()
            )));
        };
        let header = u64::from_le_bytes(length.try_into().expect("8 bytes"));
        if header > MAX_HEADER_BYTES {
            return Err(invalid(format!(
                "header of {header} bytes exceeds the limit of {MAX_HEADER_BYTES}"
            )));
        }
        if header > (bytes.len() - 8) as u64 {
            return Err(invalid(format!(
                "header of {header} bytes runs past the end of the file ({} bytes)",
                bytes.len()
            )));
        }
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
            Some(map) if map.len() == 1 && map.contains_key("gkfda") => &map["gkfda"],
            Some(map) if map.contains_key("gkfda") => {
                let mut others: Vec<_> = map.keys().filter(|k| *k != "gkfda").collect();
                others.sort();
                return Err(invalid(format!(
                    "__metadata__ has keys other than \"gkfda\": {others:?}"
                )));
            }
            _ => return Err(invalid("__metadata__ has no \"gkfda\" entry")),
        };
        let meta: Value = serde_json::from_str(text)
            .map_err(|e| invalid(format!("the metadata is not JSON: {e}")))?;
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
        let lean = match meta.get("lean") {
            Some(Value::Bool(lean)) => *lean,
            other => return Err(invalid(format!("lean is {}, not a boolean", show(other)))),
        };
        match meta.get("params") {
            None | Some(Value::Object(_)) => {}
            Some(other) => return Err(invalid(format!("params is {other}, not an object"))),
        }
        let predictor = match meta.get("predictor") {
            Some(Value::Object(p)) => p,
            other => return Err(invalid(format!("predictor is {}", show(other)))),
        };
        let state = match meta.get("state") {
            None | Some(Value::Null) => None,
            Some(state @ Value::Object(_)) => Some(state),
            Some(other) => {
                return Err(invalid(format!(
                    "state is {}, not an object",
                    kind_of(other)
                )))
            }
        };
        let mut model = Predictor::parse(predictor)?.read(tensors)?;
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
            Basis::Columns(columns) => {
                let mut values = Array2::<f64>::zeros((n_rows, columns.len()));
                for (i, mut row) in values.rows_mut().into_iter().enumerate() {
                    for (value, &j) in row.iter_mut().zip(columns) {
                        let v = x.get(i * d + j);
                        // Step 1 in `dtype`: a float32 model rounds its input first.
                        *value = match self.float {
                            Float::F32 => narrow(v, i)? as f64,
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
            .map(|(i, &v)| narrow(v, i / d.max(1)))
            .collect::<Result<Vec<f32>>>()
            .map(std::borrow::Cow::Owned),
    }
}

/// `v` in float32, or an error naming the row if it is beyond float32's range.
fn narrow(v: f64, row: usize) -> Result<f32> {
    let narrowed = v as f32;
    if narrowed.is_finite() {
        Ok(narrowed)
    } else {
        Err(Error::invalid(
            "X",
            format!("row {row} has a value ({v}) beyond the range of the model's float32"),
        ))
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
}

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

fn count(p: &Map<String, Value>, key: &str) -> Result<usize> {
    p.get(key)
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| {
            invalid(format!(
                "predictor.{key} is {}, not a non-negative integer",
                show(p.get(key))
            ))
        })
}

fn number(p: &Map<String, Value>, key: &str) -> Result<f64> {
    p.get(key).and_then(Value::as_f64).ok_or_else(|| {
        invalid(format!(
            "predictor.{key} is {}, not a number",
            show(p.get(key))
        ))
    })
}

impl Predictor {
    fn parse(p: &Map<String, Value>) -> Result<Predictor> {
        if let Some(key) = p.keys().find(|k| !PREDICTOR_KEYS.contains(&k.as_str())) {
            return Err(invalid(format!("predictor has an unknown key {key:?}")));
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
        let float = match text("dtype")? {
            "float32" => Float::F32,
            "float64" => Float::F64,
            other => return Err(invalid(format!("predictor.dtype {other:?} is unknown"))),
        };
        let kernel_name = text("kernel")?.to_string();
        // Parameters a kernel does not take may be absent, null or a number.
        for key in ["gamma", "degree", "coef0"] {
            if let Some(v) = p.get(key) {
                if !(v.is_null() || v.is_number()) {
                    return Err(invalid(format!("predictor.{key} is {v}, not a number")));
                }
            }
        }
        let kernel = match kernel_name.as_str() {
            "precomputed" => None,
            "linear" => Some(Kernel::Linear),
            "rbf" => Some(Kernel::Rbf {
                gamma: number(p, "gamma")?,
            }),
            "poly" => {
                let degree = p
                    .get("degree")
                    .and_then(Value::as_u64)
                    .and_then(|d| u32::try_from(d).ok())
                    .ok_or_else(|| {
                        invalid(format!(
                            "predictor.degree is {}, not an integer of at most 2^32 - 1",
                            show(p.get("degree"))
                        ))
                    })?;
                Some(Kernel::from_name(
                    "poly",
                    number(p, "gamma")?,
                    degree,
                    number(p, "coef0")?,
                )?)
            }
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
        let n_features = count(p, "n_features")?;
        let n_bases = count(p, "n_bases")?;
        let n_outputs = count(p, "n_outputs")?;
        if n_features == 0 || n_outputs == 0 {
            return Err(invalid(
                "predictor: n_features and n_outputs must be at least 1",
            ));
        }
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
        let optional = [
            "predict.lower",
            "predict.center",
            "predict.slope",
            "predict.offset",
        ];
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
                if !(expected.contains(&name) || optional.contains(&name)) {
                    return Err(invalid(format!(
                        "tensor {name:?} is not used by this predictor (kernel {:?})",
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
        if let Some(missing) = expected.iter().find(|n| !present.contains_key(*n)) {
            return Err(invalid(format!("tensor {missing:?} is missing")));
        }
        if present.contains_key("predict.slope") != present.contains_key("predict.offset") {
            return Err(invalid(
                "predict.slope and predict.offset must be present together",
            ));
        }
        let f64s = |name: &str, shape: &[usize]| -> Result<Option<Vec<f64>>> {
            let Some(view) = present.get(name) else {
                return Ok(None);
            };
            check_shape(name, view, Dtype::F64, shape)?;
            let values = floats_f64(view.data());
            if values.iter().any(|v| !v.is_finite()) {
                return Err(invalid(format!("tensor {name:?} has a non-finite value")));
            }
            Ok(Some(values))
        };
        let weights = f64s("predict.weights", &[k, c])?.expect("checked present");
        let weights = Array2::from_shape_vec((k, c), weights).expect("shape checked");
        let bias = f64s("predict.bias", &[c])?.expect("checked present");
        let lower = f64s("predict.lower", &[k, k])?;
        if let Some(lower) = &lower {
            for i in 0..k {
                if lower[i * k + i] == 0.0 {
                    return Err(invalid(format!(
                        "predict.lower has a zero on its diagonal (row {i})"
                    )));
                }
                if lower[i * k + i + 1..(i + 1) * k].iter().any(|&v| v != 0.0) {
                    return Err(invalid(format!(
                        "predict.lower is not lower triangular (row {i})"
                    )));
                }
            }
        }
        let center = f64s("predict.center", &[k])?;
        let calibration = match (f64s("predict.slope", &[c])?, f64s("predict.offset", &[c])?) {
            (Some(slope), Some(offset)) => Some((slope, offset)),
            _ => None,
        };
        let basis = match (&self.kernel, self.float) {
            (None, _) => {
                let view = &present["predict.columns"];
                check_shape("predict.columns", view, Dtype::I64, &[k])?;
                let columns = view
                    .data()
                    .chunks_exact(8)
                    .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")))
                    .map(|j| usize::try_from(j).ok().filter(|&j| j < d))
                    .collect::<Option<Vec<usize>>>()
                    .ok_or_else(|| {
                        invalid(format!("predict.columns has an index outside [0, {d})"))
                    })?;
                Basis::Columns(columns)
            }
            (Some(kernel), Float::F64) => {
                let view = &present["predict.points"];
                check_shape("predict.points", view, Dtype::F64, &[k, d])?;
                let points = floats_f64(view.data());
                if points.iter().any(|v| !v.is_finite()) {
                    return Err(invalid("tensor \"predict.points\" has a non-finite value"));
                }
                let points = Array2::from_shape_vec((k, d), points).expect("shape checked");
                Basis::F64(Bases::new(points.view(), kernel))
            }
            (Some(kernel), Float::F32) => {
                let view = &present["predict.points"];
                check_shape("predict.points", view, Dtype::F32, &[k, d])?;
                let points = floats_f32(view.data());
                if points.iter().any(|v| !v.is_finite()) {
                    return Err(invalid("tensor \"predict.points\" has a non-finite value"));
                }
                let points = Array2::from_shape_vec((k, d), points).expect("shape checked");
                Basis::F32(Bases::new(points.view(), kernel))
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
    bytes
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
        .collect()
}

fn floats_f32(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
        .collect()
}

/// `classes`: null, or `{"kind", "values"}` with distinct labels of that kind.
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
    let mut seen = HashSet::new();
    for value in values {
        let label = match (kind, value) {
            (ClassKind::Int, Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
            (ClassKind::Float, Value::Number(n)) if n.as_f64().is_some_and(f64::is_finite) => {
                n.to_string()
            }
            (ClassKind::Bool, Value::Bool(b)) => b.to_string(),
            (ClassKind::Str, Value::String(s)) => s.clone(),
            _ => {
                return Err(invalid(format!(
                    "predictor.classes.values has {} for kind {:?}",
                    show(Some(value)),
                    classes["kind"]
                )))
            }
        };
        if !seen.insert(label.clone()) {
            return Err(invalid(format!(
                "predictor.classes.values has {label:?} twice"
            )));
        }
        labels.push(label);
    }
    Ok((Some(kind), labels))
}

/// The `state` tree's tensor references name present tensors, every `state.*` tensor is
/// referenced, and the floating ones are finite (the reader does not use them otherwise).
fn check_state(state: Option<&Value>, tensors: &SafeTensors) -> Result<()> {
    let mut referenced = HashSet::new();
    if let Some(state) = state {
        collect_references(state, &mut referenced);
    }
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
        "estimator": "GreedyKFDA", "lean": true, "params": {},
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
