//! The latency of `predict_proba` from a model file, through the Rust API and the C ABI,
//! against a hand-written floor.
//!
//!     cargo run --release --example serving_latency -- [MODEL.gkfda ...]
//!
//! Prints one JSON line per model: median nanoseconds of a one-row call (batches of
//! calls, the median of the batches' means) and of a 1,000-row call, each through
//! `Model::predict_proba` and `gkfda_predict_proba`. For a two-class RBF model in float64
//! without `predict.lower` it also times the floor: one loop over the model's own arrays
//! (read here with the safetensors crate) computing the k squared distances, the k
//! exponentials, the weighted sum and the logistic, and nothing else. Without arguments it
//! measures a synthetic two-class RBF model of k = 50 bases in d = 20 features.

use gkfda::capi;
use gkfda::{Model, Task};
use safetensors::tensor::TensorView;
use safetensors::{Dtype, SafeTensors};
use std::hint::black_box;
use std::time::Instant;

const ROW_CALLS: usize = 20_000;
const ROW_BATCHES: usize = 10;
const BATCH_ROWS: usize = 1_000;
const BATCH_REPEATS: usize = 30;

fn main() {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        measure("synthetic k=50 d=20", &synthetic(50, 20));
    }
    for path in paths {
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        measure(&path, &bytes);
    }
}

/// Median ns per call of `call`, timed in `batches` batches of `calls` calls.
fn median_ns(batches: usize, calls: usize, mut call: impl FnMut(usize)) -> f64 {
    for i in 0..calls.min(1000) {
        call(i);
    }
    let mut means: Vec<f64> = (0..batches)
        .map(|_| {
            let start = Instant::now();
            for i in 0..calls {
                call(i);
            }
            start.elapsed().as_nanos() as f64 / calls as f64
        })
        .collect();
    means.sort_by(f64::total_cmp);
    means[means.len() / 2]
}

fn inputs(rows: usize, d: usize) -> Vec<f64> {
    (0..rows * d)
        .map(|i| ((i * 7919 % 1000) as f64 / 500.0 - 1.0) * 1.5)
        .collect()
}

fn measure(name: &str, bytes: &[u8]) {
    let model = Model::from_bytes(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    // Parsing, the checksum and every check of the file, from bytes already in memory.
    let load = median_ns(5, 20, |_| {
        black_box(Model::from_bytes(black_box(bytes)).expect("loads"));
    });
    let d = model.n_features();
    let x = inputs(BATCH_ROWS, d);
    let rows_in = |i: usize| &x[(i % BATCH_ROWS) * d..(i % BATCH_ROWS + 1) * d];
    let classifier = model.task() == Task::Classifier;
    let width = if classifier {
        model.n_classes()
    } else {
        model.n_outputs()
    };
    let rust = |x: &[f64], n: usize| {
        if classifier {
            model.predict_proba(x, n)
        } else if model.task() == Task::Regressor {
            model.decision_function(x, n)
        } else {
            model.transform(x, n)
        }
        .expect("prediction")
    };
    let rust_row = median_ns(ROW_BATCHES, ROW_CALLS / ROW_BATCHES, |i| {
        black_box(rust(black_box(rows_in(i)), 1));
    });
    let rust_batch = median_ns(BATCH_REPEATS, 1, |_| {
        black_box(rust(black_box(&x), BATCH_ROWS));
    });

    let mut handle = std::ptr::null_mut();
    // SAFETY: valid pointers; the handle is freed below and used by this thread only.
    let status = unsafe { capi::gkfda_model_from_bytes(bytes.as_ptr(), bytes.len(), &mut handle) };
    assert_eq!(status, capi::GKFDA_OK);
    let mut out = vec![0.0; BATCH_ROWS * width];
    let c_call = |x: &[f64], n: usize, out: &mut [f64]| {
        // SAFETY: `x` holds n × d values and `out` n × width.
        let status = unsafe {
            if classifier {
                capi::gkfda_predict_proba(handle, x.as_ptr(), n, d, out.as_mut_ptr())
            } else if model.task() == Task::Regressor {
                capi::gkfda_decision_function(handle, x.as_ptr(), n, d, out.as_mut_ptr())
            } else {
                capi::gkfda_transform(handle, x.as_ptr(), n, d, out.as_mut_ptr())
            }
        };
        assert_eq!(status, capi::GKFDA_OK);
    };
    let c_row = median_ns(ROW_BATCHES, ROW_CALLS / ROW_BATCHES, |i| {
        c_call(black_box(rows_in(i)), 1, &mut out);
        black_box(&out);
    });
    let c_batch = median_ns(BATCH_REPEATS, 1, |_| {
        c_call(black_box(&x), BATCH_ROWS, &mut out);
        black_box(&out);
    });
    // SAFETY: the handle came from gkfda_model_from_bytes and is not used after.
    unsafe { capi::gkfda_model_free(handle) };

    let floor = Floor::of(bytes).map(|floor| {
        let mut probabilities = [0.0; 2];
        let reference = model.predict_proba(&x[..d], 1).expect("one row");
        floor.predict(&x[..d], &mut probabilities);
        let agreement = (probabilities[1] - reference[1]).abs();
        assert!(agreement < 1e-12, "the floor disagrees by {agreement}");
        median_ns(ROW_BATCHES, ROW_CALLS / ROW_BATCHES, |i| {
            floor.predict(black_box(rows_in(i)), &mut probabilities);
            black_box(&probabilities);
        })
    });
    let number = |v: Option<f64>| v.map_or("null".to_string(), |v| format!("{v:.0}"));
    println!(
        "{{\"model\": {name:?}, \"estimator\": {:?}, \"kernel\": {:?}, \"dtype\": {:?}, \
         \"k\": {}, \"d\": {d}, \"rust_row_ns\": {rust_row:.0}, \"rust_batch_{BATCH_ROWS}_ns\": \
         {rust_batch:.0}, \"c_row_ns\": {c_row:.0}, \"c_batch_{BATCH_ROWS}_ns\": {c_batch:.0}, \
         \"floor_row_ns\": {}, \"rust_row_over_floor\": {}, \"load_ns\": {load:.0}}}",
        model.estimator(),
        model.kernel_name(),
        format!("{:?}", model.dtype()),
        model.n_bases(),
        number(floor),
        floor.map_or("null".to_string(), |f| format!("{:.2}", rust_row / f)),
    );
}

/// The two-class RBF predictor as plain arrays, read from the file itself.
struct Floor {
    gamma: f64,
    d: usize,
    points: Vec<f64>,
    weights: Vec<f64>,
    bias: f64,
}

impl Floor {
    fn of(bytes: &[u8]) -> Option<Floor> {
        let (_, metadata) = SafeTensors::read_metadata(bytes).ok()?;
        let meta: serde_json::Value =
            serde_json::from_str(metadata.metadata().as_ref()?.get("gkfda")?).ok()?;
        let p = &meta["predictor"];
        if p["kernel"] != "rbf" || p["link"] != "logistic" || p["dtype"] != "float64" {
            return None;
        }
        let tensors = SafeTensors::deserialize(bytes).ok()?;
        if tensors
            .names()
            .iter()
            .any(|n| ["predict.lower", "predict.center", "predict.slope"].contains(n))
        {
            return None;
        }
        let read = |name: &str| -> Option<Vec<f64>> {
            let view = tensors.tensor(name).ok()?;
            Some(
                view.data()
                    .chunks_exact(8)
                    .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
                    .collect(),
            )
        };
        Some(Floor {
            gamma: p["gamma"].as_f64()?,
            d: p["n_features"].as_u64()? as usize,
            points: read("predict.points")?,
            weights: read("predict.weights")?,
            bias: read("predict.bias")?[0],
        })
    }

    fn predict(&self, x: &[f64], out: &mut [f64; 2]) {
        let mut z = self.bias;
        for (point, &w) in self.points.chunks_exact(self.d).zip(&self.weights) {
            let mut distance = 0.0;
            for (a, b) in x.iter().zip(point) {
                let t = a - b;
                distance += t * t;
            }
            z += w * (-self.gamma * distance).exp();
        }
        let positive = 1.0 / (1.0 + (-z).exp());
        *out = [1.0 - positive, positive];
    }
}

/// A two-class RBF model file of `k` bases in `d` features (docs/model-format.md).
fn synthetic(k: usize, d: usize) -> Vec<u8> {
    let meta = serde_json::json!({
        "format": "gkfda", "format_version": 1, "gkfda_version": "0.1.0",
        "estimator": "GreedyKFDA", "lean": true, "params": {},
        "predictor": {
            "task": "classifier", "kernel": "rbf", "gamma": 0.05, "degree": 3, "coef0": 1.0,
            "dtype": "float64", "n_features": d, "n_bases": k, "n_outputs": 1,
            "link": "logistic", "classes": {"kind": "int", "values": [0, 1]}
        },
        "state": {}
    });
    let le = |v: Vec<f64>| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let points = le(inputs(k, d).iter().map(|v| v * 0.9 + 0.1).collect());
    let weights = le((0..k).map(|j| (j as f64 * 0.37).sin()).collect());
    let bias = le(vec![0.2]);
    let zeros = vec![0u8; 32];
    let tensors = [
        ("predict.points", Dtype::F64, vec![k, d], &points),
        ("predict.weights", Dtype::F64, vec![k, 1], &weights),
        ("predict.bias", Dtype::F64, vec![1], &bias),
        (gkfda::model::CHECKSUM, Dtype::U8, vec![32], &zeros),
    ]
    .map(|(name, dtype, shape, data)| (name, TensorView::new(dtype, shape, data).unwrap()));
    let metadata = std::collections::HashMap::from([("gkfda".to_string(), meta.to_string())]);
    let mut file = safetensors::serialize(tensors, Some(metadata)).unwrap();
    gkfda::model::seal(&mut file).unwrap();
    file
}
