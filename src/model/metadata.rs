//! The metadata and the predictor's tensors, checked on their own and against each other,
//! into a [`Model`].

use super::{
    estimator_predictor, invalid, Basis, ClassKind, EstimatorPredictor, Float, Model, Task,
    CHECKSUM, ESTIMATORS, FORMAT, FORMAT_VERSION, MAX_COUNT, MAX_DEGREE, METADATA_KEYS,
    PRECOMPUTED, PREDICTOR_KEYS,
};
use crate::error::Result;
use crate::kernel::{Bases, Kernel};
use crate::link::Link;
use ndarray::Array2;
use safetensors::tensor::TensorView;
use safetensors::{Dtype, SafeTensors};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

impl Model {
    pub(super) fn from_parts(meta: &Value, tensors: &SafeTensors) -> Result<Model> {
        let meta = meta
            .as_object()
            .ok_or_else(|| invalid("the metadata is not a JSON object"))?;
        match meta.get("format") {
            Some(Value::String(f)) if f == FORMAT => {}
            other => {
                return Err(invalid(format!(
                    "format is {}, not \"{FORMAT}\"",
                    show(other)
                )))
            }
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
            Some(Value::String(e)) => estimator_predictor(e),
            _ => None,
        };
        let estimator = match estimator {
            Some(estimator) => estimator,
            None => {
                return Err(invalid(format!(
                    "estimator is {}; expected one of {}",
                    show(meta.get("estimator")),
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
        let predictor = Predictor::parse(predictor, estimator)?;
        check_priors(params.get("priors"), predictor.classes.len())?;
        let mut model = predictor.read(tensors)?;
        model.estimator = estimator.estimator.to_string();
        model.gkfda_version = gkfda_version;
        model.lean = lean;
        check_state(state, tensors)?;
        Ok(model)
    }
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
    fn parse(p: &Map<String, Value>, expected: &EstimatorPredictor) -> Result<Predictor> {
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
        let task = text("task")?;
        let task = Task::ALL
            .into_iter()
            .find(|t| t.name() == task)
            .ok_or_else(|| invalid(format!("predictor.task {task:?} is unknown")))?;
        let link = text("link")?;
        let link = Link::from_name(link)
            .map_err(|_| invalid(format!("predictor.link {link:?} is unknown")))?;
        let estimator = expected.estimator;
        if task != expected.task {
            return Err(invalid(format!(
                "predictor.task is {:?}; a {estimator} is a {}",
                task.name(),
                expected.task.name()
            )));
        }
        if !expected.links.contains(&link) {
            return Err(invalid(format!(
                "predictor.link {:?} is not a link of a {estimator}",
                link.name()
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
            PRECOMPUTED => None,
            "linear" => Some(Kernel::Linear),
            "rbf" => Some(Kernel::Rbf { gamma }),
            "poly" => Some(Kernel::Poly {
                gamma,
                degree,
                coef0,
            }),
            other => {
                return Err(invalid(format!(
                    "predictor.kernel {other:?} is unknown; expected one of {}, {PRECOMPUTED}",
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
            optional: expected.optional,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::PREDICTORS;
    use serde_json::json;

    /// A `predictor` object of `task` and `link`, its outputs and classes as the link needs.
    fn predictor_json(task: Task, link: Link) -> Map<String, Value> {
        let (n_outputs, classes) = match link {
            Link::Logistic => (1, json!({"kind": "int", "values": [0, 1]})),
            Link::Softmax | Link::Ovr => (3, json!({"kind": "int", "values": [0, 1, 2]})),
            Link::Identity => (1, Value::Null),
        };
        let value = json!({
            "task": task.name(), "kernel": "rbf", "gamma": 0.5, "degree": 3, "coef0": 0.0,
            "dtype": "float64", "n_features": 2, "n_bases": 1, "n_outputs": n_outputs,
            "link": link.name(), "classes": classes,
        });
        value.as_object().unwrap().clone()
    }

    #[test]
    fn predictors_table_agrees_with_the_checks() {
        assert_eq!(
            ESTIMATORS.to_vec(),
            PREDICTORS.iter().map(|p| p.estimator).collect::<Vec<_>>()
        );
        let distinct: HashSet<_> = ESTIMATORS.iter().collect();
        assert_eq!(distinct.len(), ESTIMATORS.len());
        let links = [Link::Identity, Link::Logistic, Link::Softmax, Link::Ovr];
        for expected in &PREDICTORS {
            assert_eq!(estimator_predictor(expected.estimator), Some(expected));
            assert!(!expected.links.is_empty(), "{}", expected.estimator);
            // What `read` knows as optional tensors.
            for name in expected.optional {
                assert!(
                    [
                        "predict.lower",
                        "predict.center",
                        "predict.slope",
                        "predict.offset"
                    ]
                    .contains(name),
                    "{}: {name}",
                    expected.estimator
                );
            }
            for link in links {
                let parsed = Predictor::parse(&predictor_json(expected.task, link), expected);
                assert_eq!(
                    parsed.is_ok(),
                    expected.links.contains(&link),
                    "{} with link {}",
                    expected.estimator,
                    link.name()
                );
            }
            for task in Task::ALL {
                let link = expected.links[0];
                let parsed = Predictor::parse(&predictor_json(task, link), expected);
                assert_eq!(
                    parsed.is_ok(),
                    task == expected.task,
                    "{}",
                    expected.estimator
                );
            }
        }
        assert!(estimator_predictor("SVC").is_none());
    }
}
