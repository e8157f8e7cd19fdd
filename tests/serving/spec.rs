//! Writing files per the specification, and predicting by hand what they must predict.

use gkfda::{Error, Model, Task};
use safetensors::tensor::TensorView;
use safetensors::Dtype;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::PathBuf;

/// A tensor of the file: dtype, shape, little-endian bytes.
#[derive(Clone)]
pub struct Tensor(pub Dtype, pub Vec<usize>, pub Vec<u8>);

pub fn f64s(shape: &[usize], values: &[f64]) -> Tensor {
    Tensor(
        Dtype::F64,
        shape.to_vec(),
        values.iter().flat_map(|v| v.to_le_bytes()).collect(),
    )
}

pub fn f32s(shape: &[usize], values: &[f64]) -> Tensor {
    Tensor(
        Dtype::F32,
        shape.to_vec(),
        values
            .iter()
            .flat_map(|&v| (v as f32).to_le_bytes())
            .collect(),
    )
}

pub fn i64s(shape: &[usize], values: &[i64]) -> Tensor {
    Tensor(
        Dtype::I64,
        shape.to_vec(),
        values.iter().flat_map(|v| v.to_le_bytes()).collect(),
    )
}

/// A model file: its metadata (`__metadata__.gkfda`) and tensors.
#[derive(Clone)]
pub struct Spec {
    pub meta: Value,
    pub tensors: Vec<(String, Tensor)>,
}

impl Spec {
    /// The file, sealed with its checksum (unless the spec has its own `checksum`).
    pub fn bytes(&self) -> Vec<u8> {
        let mut tensors = self.tensors.clone();
        let sealed = !tensors.iter().any(|(name, _)| name == "checksum");
        if sealed {
            tensors.push((
                "checksum".to_string(),
                Tensor(Dtype::U8, vec![32], vec![0; 32]),
            ));
        }
        let views: Vec<_> = tensors
            .iter()
            .map(|(name, Tensor(dtype, shape, data))| {
                (
                    name.clone(),
                    TensorView::new(*dtype, shape.clone(), data).expect("consistent tensor"),
                )
            })
            .collect();
        let metadata = HashMap::from([("gkfda".to_string(), self.meta.to_string())]);
        let mut bytes = safetensors::serialize(views, Some(metadata)).expect("serializable");
        if sealed {
            gkfda::model::seal(&mut bytes).expect("a checksum tensor");
        }
        bytes
    }

    pub fn load(&self) -> gkfda::Result<Model> {
        Model::from_bytes(&self.bytes())
    }

    pub fn predictor(&mut self) -> &mut Value {
        &mut self.meta["predictor"]
    }

    pub fn set(&mut self, name: &str, tensor: Tensor) -> &mut Self {
        self.tensors.retain(|(n, _)| n != name);
        self.tensors.push((name.to_string(), tensor));
        self
    }

    pub fn remove(&mut self, name: &str) -> &mut Self {
        self.tensors.retain(|(n, _)| n != name);
        self
    }
}

/// Deterministic values in [-1, 1).
pub fn values(seed: u64, n: usize) -> Vec<f64> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

pub const D: usize = 5;
pub const K: usize = 4;

/// A model file of the given predictor; `points` in `dtype`, weights `K × outputs`.
pub fn spec(
    estimator: &str,
    task: &str,
    kernel: &str,
    link: &str,
    outputs: usize,
    dtype: &str,
) -> Spec {
    let classes = match link {
        "logistic" => json!({"kind": "int", "values": [0, 1]}),
        "softmax" | "ovr" => {
            let labels = &["a", "b", "c", "d", "e"][..outputs];
            json!({"kind": "str", "values": labels})
        }
        _ => Value::Null,
    };
    let meta = json!({
        "format": "gkfda", "format_version": 1, "gkfda_version": "0.1.0",
        "estimator": estimator, "lean": true, "params": {"kernel": kernel},
        "predictor": {
            "task": task, "kernel": kernel, "gamma": 0.7, "degree": 2, "coef0": 0.5,
            "dtype": dtype, "n_features": D, "n_bases": K, "n_outputs": outputs,
            "link": link, "classes": classes
        },
        "state": {}
    });
    let points = values(1, K * D).iter().map(|v| 2.0 * v).collect::<Vec<_>>();
    let mut tensors = vec![];
    if kernel == "precomputed" {
        tensors.push(("predict.columns".to_string(), i64s(&[K], &[2, 0, 1, 4])));
    } else if dtype == "float32" {
        tensors.push(("predict.points".to_string(), f32s(&[K, D], &points)));
    } else {
        tensors.push(("predict.points".to_string(), f64s(&[K, D], &points)));
    }
    tensors.push((
        "predict.weights".to_string(),
        f64s(&[K, outputs], &values(2, K * outputs)),
    ));
    tensors.push((
        "predict.bias".to_string(),
        f64s(&[outputs], &values(3, outputs)),
    ));
    Spec { meta, tensors }
}

/// The estimator whose predictor is of `task`.
pub fn estimator_for(task: &str) -> &'static str {
    match task {
        "regressor" => "KernelMatchingPursuit",
        "transformer" => "GreedyNystroem",
        _ => "GreedyKFDA",
    }
}

pub fn binary_rbf() -> Spec {
    spec("GreedyKFDA", "classifier", "rbf", "logistic", 1, "float64")
}

/// A SparseKernelCCA file: lower, center and all.
pub fn cca() -> Spec {
    let mut s = spec(
        "SparseKernelCCA",
        "transformer",
        "rbf",
        "identity",
        2,
        "float64",
    );
    s.set("predict.lower", f64s(&[K, K], &lower()));
    s.set("predict.center", f64s(&[K], &values(5, K)));
    s
}

/// A lower triangular factor with a clear diagonal.
pub fn lower() -> Vec<f64> {
    let v = values(4, K * K);
    (0..K * K)
        .map(|t| {
            let (i, j) = (t / K, t % K);
            match i.cmp(&j) {
                std::cmp::Ordering::Less => 0.0,
                std::cmp::Ordering::Equal => 1.5 + v[t],
                std::cmp::Ordering::Greater => 0.3 * v[t],
            }
        })
        .collect()
}

pub fn tensor_f64(spec: &Spec, name: &str) -> Option<Vec<f64>> {
    spec.tensors
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, t)| match t.0 {
            Dtype::F64 => {
                t.2.chunks(8)
                    .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
                    .collect()
            }
            Dtype::F32 => {
                t.2.chunks(4)
                    .map(|b| f32::from_le_bytes(b.try_into().unwrap()) as f64)
                    .collect()
            }
            _ => {
                t.2.chunks(8)
                    .map(|b| i64::from_le_bytes(b.try_into().unwrap()) as f64)
                    .collect()
            }
        })
}

/// The specification's steps 1-5 computed plainly in f64 (`z` per row).
pub fn by_hand(spec: &Spec, x: &[f64]) -> Vec<Vec<f64>> {
    let p = &spec.meta["predictor"];
    let (k, d, c) = (
        p["n_bases"].as_u64().unwrap() as usize,
        p["n_features"].as_u64().unwrap() as usize,
        p["n_outputs"].as_u64().unwrap() as usize,
    );
    let (gamma, degree, coef0) = (
        p["gamma"].as_f64().unwrap(),
        p["degree"].as_u64().unwrap() as i32,
        p["coef0"].as_f64().unwrap(),
    );
    let f32_model = p["dtype"] == "float32";
    let weights = tensor_f64(spec, "predict.weights").unwrap();
    let bias = tensor_f64(spec, "predict.bias").unwrap();
    x.chunks(d)
        .map(|row| {
            let row: Vec<f64> = row
                .iter()
                .map(|&v| if f32_model { v as f32 as f64 } else { v })
                .collect();
            let mut v: Vec<f64> = match p["kernel"].as_str().unwrap() {
                "precomputed" => tensor_f64(spec, "predict.columns")
                    .unwrap()
                    .iter()
                    .map(|&j| row[j as usize])
                    .collect(),
                kernel => {
                    let points = tensor_f64(spec, "predict.points").unwrap();
                    points
                        .chunks(d)
                        .map(|s| {
                            let dot: f64 = row.iter().zip(s).map(|(a, b)| a * b).sum();
                            let dist: f64 = row.iter().zip(s).map(|(a, b)| (a - b).powi(2)).sum();
                            match kernel {
                                "rbf" => (-gamma * dist).exp(),
                                "linear" => dot,
                                "poly" => (gamma * dot + coef0).powi(degree),
                                _ => unreachable!(),
                            }
                        })
                        .collect()
                }
            };
            if let Some(l) = tensor_f64(spec, "predict.lower") {
                for i in 0..k {
                    let s: f64 = (0..i).map(|j| l[i * k + j] * v[j]).sum();
                    v[i] = (v[i] - s) / l[i * k + i];
                }
            }
            if let Some(center) = tensor_f64(spec, "predict.center") {
                v.iter_mut().zip(&center).for_each(|(v, c)| *v -= c);
            }
            let mut z: Vec<f64> = (0..c)
                .map(|o| bias[o] + (0..k).map(|j| v[j] * weights[j * c + o]).sum::<f64>())
                .collect();
            if let (Some(slope), Some(offset)) = (
                tensor_f64(spec, "predict.slope"),
                tensor_f64(spec, "predict.offset"),
            ) {
                for o in 0..c {
                    z[o] = slope[o] * z[o] + offset[o];
                }
            }
            z
        })
        .collect()
}

pub fn probabilities_by_hand(link: &str, z: &[f64]) -> Vec<f64> {
    let sigma = |t: f64| 1.0 / (1.0 + (-t).exp());
    match link {
        "logistic" => vec![1.0 - sigma(z[0]), sigma(z[0])],
        "softmax" => {
            let e: Vec<f64> = z.iter().map(|v| v.exp()).collect();
            let s: f64 = e.iter().sum();
            e.iter().map(|v| v / s).collect()
        }
        "ovr" => {
            let e: Vec<f64> = z.iter().map(|&v| sigma(v)).collect();
            let s: f64 = e.iter().sum();
            e.iter().map(|v| v / s).collect()
        }
        _ => unreachable!(),
    }
}

pub fn assert_close(actual: &[f64], expected: &[f64], tolerance: f64, what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what}: lengths");
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        let scale = e.abs().max(1.0);
        assert!(
            (a - e).abs() <= tolerance * scale,
            "{what}[{i}]: {a} against {e} (difference {:e})",
            (a - e).abs()
        );
    }
}

pub fn inputs(n: usize) -> Vec<f64> {
    values(9, n * D).iter().map(|v| 3.0 * v).collect()
}

/// Checks a model against the hand computation on a few rows.
pub fn check_by_hand(spec: &Spec, tolerance: f64) {
    let model = spec.load().unwrap_or_else(|e| panic!("load: {e}"));
    let n = 5;
    let x = inputs(n);
    let z: Vec<f64> = by_hand(spec, &x).concat();
    let link = spec.meta["predictor"]["link"].as_str().unwrap();
    match model.task() {
        Task::Classifier => {
            assert_close(&model.decision_function(&x, n).unwrap(), &z, tolerance, "z");
            let expected: Vec<f64> = z
                .chunks(model.n_outputs())
                .flat_map(|z| probabilities_by_hand(link, z))
                .collect();
            let p = model.predict_proba(&x, n).unwrap();
            assert_close(&p, &expected, tolerance, "probabilities");
            let labels = model.predict(&x, n).unwrap();
            for (row, &label) in p.chunks(model.n_classes()).zip(&labels) {
                assert!(row.iter().all(|&q| q <= row[label]));
            }
            let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            let p32 = model.predict_proba_f32(&x32, n).unwrap();
            assert_eq!(p32.len(), p.len());
            assert!(model.transform(&x, n).is_err());
        }
        Task::Regressor => {
            assert_close(&model.decision_function(&x, n).unwrap(), &z, tolerance, "z");
            assert!(matches!(
                model.predict_proba(&x, n),
                Err(Error::Unsupported(_))
            ));
            assert!(model.predict(&x, n).is_err());
        }
        Task::Transformer => {
            assert_close(&model.transform(&x, n).unwrap(), &z, tolerance, "features");
            assert!(model.decision_function(&x, n).is_err());
            assert!(model.predict_proba(&x, n).is_err());
        }
    }
}

pub fn refused(s: &Spec, what: &str) {
    match s.load() {
        Err(Error::InvalidModel(message)) => assert!(!message.is_empty()),
        Err(other) => panic!("{what}: refused as {other:?}, not InvalidModel"),
        Ok(_) => panic!("{what}: accepted"),
    }
}

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/models")
}

pub fn floats(value: &Value) -> Vec<f64> {
    match value {
        Value::Array(items) => items.iter().flat_map(floats).collect(),
        Value::Number(n) => vec![n.as_f64().unwrap()],
        other => panic!("not a number: {other}"),
    }
}
