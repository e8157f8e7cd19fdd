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
//!
//! The module is in three parts: `file` reads the bytes (from a regular file, never more
//! than its header accounts for) and checks the container: the header's limits and
//! rules, JSON without repeated keys, the checksum; `metadata` checks the metadata and the
//! predictor's tensors against each other and builds the [`Model`]; `predicting` runs the
//! six steps.

use crate::error::Error;
use crate::kernel::{Bases, Kernel};
use crate::link::Link;
use ndarray::Array2;

mod file;
mod metadata;
mod predicting;

#[doc(hidden)]
pub use file::example_file;
pub use file::seal;

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
/// The metadata's `format`: what names a gkfda model file.
pub const FORMAT: &str = "gkfda";
/// The `predictor.kernel` of a model whose input rows are kernel values: it has no bases,
/// and its input's columns are picked, not computed (the other names are `Kernel::NAMES`).
pub const PRECOMPUTED: &str = "precomputed";
/// The keys of a file's metadata, every one required.
pub const METADATA_KEYS: [&str; 8] = [
    "format",
    "format_version",
    "gkfda_version",
    "estimator",
    "lean",
    "params",
    "predictor",
    "state",
];

/// The keys of its `predictor`, every one required.
pub const PREDICTOR_KEYS: [&str; 11] = [
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
/// What one estimator's predictor is: its task, the links it may have and the optional
/// `predict.*` tensors it always has (`docs/model-format.md`, "The predictor").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EstimatorPredictor {
    /// The class that writes it (the `estimator` key).
    pub estimator: &'static str,
    pub task: Task,
    pub links: &'static [Link],
    /// Beyond the points (or columns), weights and bias every predictor has.
    pub optional: &'static [&'static str],
}

const CLASSIFIER_LINKS: &[Link] = &[Link::Logistic, Link::Softmax, Link::Ovr];

/// Each estimator's predictor: the one table of them, which this reader checks a file by and
/// the Python reader reads through the binding (`_core.estimator_predictors`).
pub const PREDICTORS: [EstimatorPredictor; 7] = [
    EstimatorPredictor {
        estimator: "GreedyKFDA",
        task: Task::Classifier,
        links: CLASSIFIER_LINKS,
        optional: &[],
    },
    EstimatorPredictor {
        estimator: "GreedyKFDACV",
        task: Task::Classifier,
        links: CLASSIFIER_LINKS,
        optional: &[],
    },
    EstimatorPredictor {
        estimator: "ParsimoniousKFDA",
        task: Task::Classifier,
        links: &[Link::Logistic, Link::Ovr],
        optional: &["predict.slope", "predict.offset"],
    },
    EstimatorPredictor {
        estimator: "KernelMatchingPursuit",
        task: Task::Regressor,
        links: &[Link::Identity],
        optional: &[],
    },
    EstimatorPredictor {
        estimator: "GreedyNystroem",
        task: Task::Transformer,
        links: &[Link::Identity],
        optional: &[],
    },
    EstimatorPredictor {
        estimator: "SparseKernelPCA",
        task: Task::Transformer,
        links: &[Link::Identity],
        optional: &["predict.lower"],
    },
    EstimatorPredictor {
        estimator: "SparseKernelCCA",
        task: Task::Transformer,
        links: &[Link::Identity],
        optional: &["predict.lower", "predict.center"],
    },
];

/// The estimators whose files this reader accepts (the `estimator` key), in the order of
/// [`PREDICTORS`].
pub const ESTIMATORS: [&str; PREDICTORS.len()] = {
    let mut names = [""; PREDICTORS.len()];
    let mut i = 0;
    while i < names.len() {
        names[i] = PREDICTORS[i].estimator;
        i += 1;
    }
    names
};

/// The predictor of `estimator`, if this reader knows it.
pub fn estimator_predictor(estimator: &str) -> Option<&'static EstimatorPredictor> {
    PREDICTORS.iter().find(|p| p.estimator == estimator)
}

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

impl Task {
    pub const ALL: [Task; 3] = [Task::Classifier, Task::Regressor, Task::Transformer];

    /// The name a file's `predictor.task` holds.
    pub fn name(self) -> &'static str {
        match self {
            Task::Classifier => "classifier",
            Task::Regressor => "regressor",
            Task::Transformer => "transformer",
        }
    }
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

impl Model {
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
}
