//! Corruptions are errors, never panics.

use gkfda::{Error, Model};
use safetensors::tensor::TensorView;
use safetensors::Dtype;
use serde_json::{json, Value};
use std::collections::HashMap;

use crate::spec::*;

/// A change that makes a valid file invalid.
type Corruption = Box<dyn Fn(&mut Spec)>;

#[test]
fn every_truncation_and_byte_flip_is_refused_or_harmless() {
    let mut s = binary_rbf();
    s.meta["state"] = json!({"x": {"__tensor__": "state.x"}});
    s.set("state.x", f64s(&[2], &[1.0, 2.0]));
    let bytes = s.bytes();
    for len in 0..bytes.len() {
        assert!(
            Model::from_bytes(&bytes[..len]).is_err(),
            "truncated at {len}"
        );
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(Model::from_bytes(&longer).is_err());
    // The checksum covers every byte: a flip anywhere is refused.
    for position in 0..bytes.len() {
        for mask in [0x01, 0x80, 0xff] {
            let mut flipped = bytes.clone();
            flipped[position] ^= mask;
            assert!(Model::from_bytes(&flipped).is_err(), "flip at {position}");
        }
    }
}

#[test]
fn the_checksum_is_required_and_checked() {
    let s = binary_rbf();
    let mut unsealed = s.clone();
    unsealed.set("checksum", Tensor(Dtype::U8, vec![32], vec![0; 32]));
    let message = unsealed.load().unwrap_err().to_string();
    assert!(message.contains("checksum"), "{message}");
    let mut no_checksum = s.clone();
    no_checksum.set("other", f64s(&[1], &[1.0]));
    let mut bytes = {
        let views: Vec<_> = no_checksum
            .tensors
            .iter()
            .map(|(n, Tensor(t, shape, data))| {
                (n.clone(), TensorView::new(*t, shape.clone(), data).unwrap())
            })
            .collect();
        let metadata = HashMap::from([("gkfda".to_string(), no_checksum.meta.to_string())]);
        safetensors::serialize(views, Some(metadata)).unwrap()
    };
    assert!(gkfda::model::seal(&mut bytes).is_err());
    assert!(Model::from_bytes(&bytes)
        .unwrap_err()
        .to_string()
        .contains("checksum"));
    for (dtype, shape) in [
        (Dtype::U8, vec![31]),
        (Dtype::I64, vec![4]),
        (Dtype::U8, vec![4, 8]),
    ] {
        let mut wrong = s.clone();
        let size = shape.iter().product::<usize>() * if dtype == Dtype::I64 { 8 } else { 1 };
        wrong.set("checksum", Tensor(dtype, shape, vec![0; size]));
        assert!(wrong.load().is_err());
    }
}

#[test]
fn a_wrong_header_is_refused() {
    let bytes = binary_rbf().bytes();
    let mut huge = bytes.clone();
    huge[..8].copy_from_slice(&(16u64 << 20 | 1).to_le_bytes());
    assert!(Model::from_bytes(&huge)
        .unwrap_err()
        .to_string()
        .contains("limit"));
    let mut past = bytes.clone();
    past[..8].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
    assert!(Model::from_bytes(&past).is_err());
    huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(Model::from_bytes(&huge).is_err());
    // Not JSON metadata; none; another key beside it.
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let mut header: Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let data = &bytes[8 + n..];
    // The header rewritten, then sealed again so that the checks behind the checksum
    // are what refuses it.
    let rebuild = |header: &Value| {
        let text = header.to_string();
        let mut out = (text.len() as u64).to_le_bytes().to_vec();
        out.extend(text.as_bytes());
        out.extend(data);
        let _ = gkfda::model::seal(&mut out);
        out
    };
    assert!(Model::from_bytes(&rebuild(&header)).is_ok());
    header["__metadata__"]["gkfda"] = json!("{not json");
    assert!(Model::from_bytes(&rebuild(&header)).is_err());
    header["__metadata__"]["gkfda"] = json!("[1, 2]");
    assert!(Model::from_bytes(&rebuild(&header)).is_err());
    header["__metadata__"] = json!({"other": "x"});
    assert!(Model::from_bytes(&rebuild(&header)).is_err());
    header.as_object_mut().unwrap().remove("__metadata__");
    assert!(Model::from_bytes(&rebuild(&header)).is_err());
    let mut two = binary_rbf();
    two.meta["state"] = json!(null);
    let mut header: Value = {
        let b = two.bytes();
        let n = u64::from_le_bytes(b[..8].try_into().unwrap()) as usize;
        serde_json::from_slice(&b[8..8 + n]).unwrap()
    };
    header["__metadata__"]["extra"] = json!("1");
    assert!(Model::from_bytes(&rebuild(&header)).is_err());
    // A shape whose product overflows, a dtype the format does not use.
    let mut header: Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    header["predict.bias"]["shape"] = json!([u64::MAX, 2]);
    assert!(Model::from_bytes(&rebuild(&header)).is_err());
    let mut header: Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    header["predict.bias"]["dtype"] = json!("I64");
    assert!(Model::from_bytes(&rebuild(&header)).is_err());
    header["predict.bias"]["dtype"] = json!("U8");
    header["predict.bias"]["shape"] = json!([8]);
    assert!(Model::from_bytes(&rebuild(&header)).is_err());
}

#[test]
fn lying_metadata_is_refused() {
    let cases: Vec<(&str, Corruption)> = vec![
        ("format", Box::new(|s| s.meta["format"] = json!("onnx"))),
        (
            "version 2",
            Box::new(|s| s.meta["format_version"] = json!(2)),
        ),
        (
            "version 1.5",
            Box::new(|s| s.meta["format_version"] = json!(1.5)),
        ),
        (
            "version text",
            Box::new(|s| s.meta["format_version"] = json!("1")),
        ),
        (
            "no version",
            Box::new(|s| {
                s.meta.as_object_mut().unwrap().remove("format_version");
            }),
        ),
        (
            "estimator",
            Box::new(|s| s.meta["estimator"] = json!("SVC")),
        ),
        ("lean", Box::new(|s| s.meta["lean"] = json!("yes"))),
        ("params", Box::new(|s| s.meta["params"] = json!([1]))),
        ("state", Box::new(|s| s.meta["state"] = json!(3))),
        (
            "gkfda_version",
            Box::new(|s| s.meta["gkfda_version"] = json!(1)),
        ),
        ("predictor", Box::new(|s| s.meta["predictor"] = json!([]))),
        (
            "task",
            Box::new(|s| s.predictor()["task"] = json!("ranker")),
        ),
        (
            "task regressor",
            Box::new(|s| s.predictor()["task"] = json!("regressor")),
        ),
        (
            "link",
            Box::new(|s| s.predictor()["link"] = json!("probit")),
        ),
        (
            "link softmax",
            Box::new(|s| s.predictor()["link"] = json!("softmax")),
        ),
        (
            "link identity",
            Box::new(|s| s.predictor()["link"] = json!("identity")),
        ),
        (
            "kernel",
            Box::new(|s| s.predictor()["kernel"] = json!("sigmoid")),
        ),
        (
            "dtype",
            Box::new(|s| s.predictor()["dtype"] = json!("float16")),
        ),
        (
            "dtype f32",
            Box::new(|s| s.predictor()["dtype"] = json!("float32")),
        ),
        (
            "unknown key",
            Box::new(|s| s.predictor()["scale"] = json!(2.0)),
        ),
        ("gamma 0", Box::new(|s| s.predictor()["gamma"] = json!(0.0))),
        (
            "gamma -1",
            Box::new(|s| s.predictor()["gamma"] = json!(-1.0)),
        ),
        (
            "gamma null",
            Box::new(|s| s.predictor()["gamma"] = json!(null)),
        ),
        (
            "gamma text",
            Box::new(|s| s.predictor()["gamma"] = json!("0.5")),
        ),
        (
            "gamma huge",
            Box::new(|s| s.predictor()["gamma"] = json!(1e308 * 10.0)),
        ),
        (
            "n_bases",
            Box::new(|s| s.predictor()["n_bases"] = json!(K + 1)),
        ),
        (
            "n_bases huge",
            Box::new(|s| s.predictor()["n_bases"] = json!(u64::MAX)),
        ),
        (
            "n_bases negative",
            Box::new(|s| s.predictor()["n_bases"] = json!(-1)),
        ),
        (
            "n_features",
            Box::new(|s| s.predictor()["n_features"] = json!(D - 1)),
        ),
        (
            "n_features 0",
            Box::new(|s| s.predictor()["n_features"] = json!(0)),
        ),
        (
            "n_features huge",
            Box::new(|s| s.predictor()["n_features"] = json!(1u64 << 62)),
        ),
        (
            "n_outputs",
            Box::new(|s| s.predictor()["n_outputs"] = json!(2)),
        ),
        (
            "n_outputs 0",
            Box::new(|s| s.predictor()["n_outputs"] = json!(0)),
        ),
        (
            "n_outputs float",
            Box::new(|s| s.predictor()["n_outputs"] = json!(1.0)),
        ),
        (
            "classes null",
            Box::new(|s| s.predictor()["classes"] = json!(null)),
        ),
        (
            "3 classes",
            Box::new(|s| s.predictor()["classes"] = json!({"kind": "int", "values": [0, 1, 2]})),
        ),
        (
            "twice",
            Box::new(|s| s.predictor()["classes"] = json!({"kind": "int", "values": [1, 1]})),
        ),
        (
            "kind",
            Box::new(|s| s.predictor()["classes"] = json!({"kind": "complex", "values": [0, 1]})),
        ),
        (
            "mixed",
            Box::new(|s| s.predictor()["classes"] = json!({"kind": "int", "values": [0, "1"]})),
        ),
        (
            "int 0.5",
            Box::new(|s| s.predictor()["classes"] = json!({"kind": "int", "values": [0, 0.5]})),
        ),
        (
            "classes key",
            Box::new(|s| {
                s.predictor()["classes"] = json!({"kind": "int", "values": [0, 1], "x": 1})
            }),
        ),
        (
            "missing bias",
            Box::new(|s| {
                s.remove("predict.bias");
            }),
        ),
        (
            "missing points",
            Box::new(|s| {
                s.remove("predict.points");
            }),
        ),
        (
            "columns, named kernel",
            Box::new(|s| {
                s.set("predict.columns", i64s(&[K], &[0, 1, 2, 0]));
            }),
        ),
        (
            "unused predict",
            Box::new(|s| {
                s.set("predict.scale", f64s(&[1], &[1.0]));
            }),
        ),
        (
            "other tensor",
            Box::new(|s| {
                s.set("weights", f64s(&[1], &[1.0]));
            }),
        ),
        (
            "unreferenced state",
            Box::new(|s| {
                s.set("state.x", f64s(&[1], &[1.0]));
            }),
        ),
        (
            "missing state",
            Box::new(|s| s.meta["state"] = json!({"a": {"__tensor__": "state.a"}})),
        ),
        (
            "NaN state",
            Box::new(|s| {
                s.meta["state"] = json!({"a": [{"__tensor__": "state.a"}]});
                s.set("state.a", f64s(&[2], &[1.0, f64::NAN]));
            }),
        ),
        (
            "inf f32 state",
            Box::new(|s| {
                s.meta["state"] = json!({"a": {"__tensor__": "state.a"}});
                s.set("state.a", f32s(&[1], &[f64::INFINITY]));
            }),
        ),
        (
            "I32 state",
            Box::new(|s| {
                s.meta["state"] = json!({"a": {"__tensor__": "state.a"}});
                s.set("state.a", Tensor(Dtype::I32, vec![1], vec![0; 4]));
            }),
        ),
        (
            "slope alone",
            Box::new(|s| {
                s.set("predict.slope", f64s(&[1], &[1.0]));
            }),
        ),
        (
            "NaN weight",
            Box::new(|s| {
                s.set("predict.weights", f64s(&[K, 1], &[0.0, f64::NAN, 0.0, 0.0]));
            }),
        ),
        (
            "inf bias",
            Box::new(|s| {
                s.set("predict.bias", f64s(&[1], &[f64::NEG_INFINITY]));
            }),
        ),
        (
            "NaN point",
            Box::new(|s| {
                let mut p = vec![0.0; K * D];
                p[5] = f64::NAN;
                s.set("predict.points", f64s(&[K, D], &p));
            }),
        ),
        (
            "points f32",
            Box::new(|s| {
                s.set("predict.points", f32s(&[K, D], &[0.0; K * D]));
            }),
        ),
        (
            "points transposed",
            Box::new(|s| {
                s.set("predict.points", f64s(&[D, K], &[0.0; K * D]));
            }),
        ),
        (
            "weights flat",
            Box::new(|s| {
                s.set("predict.weights", f64s(&[K], &[0.0; K]));
            }),
        ),
        (
            "weights I64",
            Box::new(|s| {
                s.set("predict.weights", i64s(&[K, 1], &[0; K]));
            }),
        ),
        (
            "bias 2",
            Box::new(|s| {
                s.set("predict.bias", f64s(&[2], &[0.0; 2]));
            }),
        ),
        (
            "lower not triangular",
            Box::new(|s| {
                let mut l = lower();
                l[1] = 0.5;
                s.set("predict.lower", f64s(&[K, K], &l));
            }),
        ),
        (
            "lower zero diagonal",
            Box::new(|s| {
                let mut l = lower();
                l[K + 1] = 0.0;
                s.set("predict.lower", f64s(&[K, K], &l));
            }),
        ),
        (
            "lower NaN",
            Box::new(|s| {
                let mut l = lower();
                l[K] = f64::NAN;
                s.set("predict.lower", f64s(&[K, K], &l));
            }),
        ),
        (
            "lower shape",
            Box::new(|s| {
                s.set("predict.lower", f64s(&[K, K - 1], &[1.0; K * (K - 1)]));
            }),
        ),
        (
            "center shape",
            Box::new(|s| {
                s.set("predict.center", f64s(&[K + 1], &[1.0; K + 1]));
            }),
        ),
    ];
    for (what, corrupt) in &cases {
        // The tensors of a SparseKernelCCA's predictor are corrupted in one of its files.
        let mut s = if what.starts_with("lower") || what.starts_with("center") {
            cca()
        } else {
            binary_rbf()
        };
        corrupt(&mut s);
        refused(&s, what);
    }
    let poly_cases: Vec<(&str, Value)> = vec![
        ("degree 0", json!(0)),
        ("degree 2^40", json!(1u64 << 40)),
        ("degree beyond i32", json!(i32::MAX as u64 + 1)),
        ("degree 2.5", json!(2.5)),
        ("degree null", json!(null)),
    ];
    for (what, degree) in poly_cases {
        let mut s = spec("GreedyKFDA", "classifier", "poly", "logistic", 1, "float64");
        s.predictor()["degree"] = degree;
        refused(&s, what);
    }
    let mut s = spec("GreedyKFDA", "classifier", "poly", "logistic", 1, "float64");
    s.predictor()["coef0"] = json!(null);
    refused(&s, "coef0 null");
    let mut s = spec("GreedyKFDA", "classifier", "rbf", "logistic", 1, "float32");
    s.predictor()["gamma"] = json!(1e39);
    refused(&s, "gamma beyond float32");
    for (what, columns) in [
        ("column -1", vec![0, -1, 1, 2]),
        ("column d", vec![0, 1, D as i64, 2]),
        ("column huge", vec![0, 1, i64::MAX, 2]),
    ] {
        let mut s = spec(
            "GreedyKFDA",
            "classifier",
            "precomputed",
            "logistic",
            1,
            "float64",
        );
        s.set("predict.columns", i64s(&[K], &columns));
        refused(&s, what);
    }
    let mut s = spec(
        "GreedyKFDA",
        "classifier",
        "precomputed",
        "logistic",
        1,
        "float64",
    );
    s.set("predict.points", f64s(&[K, D], &[0.0; K * D]));
    refused(&s, "points, precomputed");
    let mut s = spec(
        "KernelMatchingPursuit",
        "regressor",
        "rbf",
        "identity",
        1,
        "float64",
    );
    s.predictor()["classes"] = json!({"kind": "int", "values": [0, 1]});
    refused(&s, "regressor with classes");
    let mut s = spec(
        "KernelMatchingPursuit",
        "regressor",
        "rbf",
        "identity",
        2,
        "float64",
    );
    s.set("predict.weights", f64s(&[K, 2], &[0.0; 2 * K]));
    s.set("predict.bias", f64s(&[2], &[0.0; 2]));
    refused(&s, "regressor of two outputs");
    let mut s = spec("GreedyKFDA", "classifier", "rbf", "softmax", 2, "float64");
    s.predictor()["classes"] = json!({"kind": "str", "values": ["a", "b"]});
    refused(&s, "softmax of two classes");
    let mut s = spec("GreedyKFDA", "classifier", "rbf", "ovr", 3, "float64");
    s.predictor()["classes"] = json!({"kind": "str", "values": ["a", "b", "c", "d"]});
    refused(&s, "ovr: classes against outputs");
}

#[test]
fn state_may_reference_predictor_tensors() {
    let mut s = binary_rbf();
    s.meta["state"] = json!({
        "w": {"__tensor__": "predict.weights", "transpose": true, "order": "F"},
        "nested": [{"__dict__": {"i": {"__tensor__": "state.i", "dtype": "int32"}}}]
    });
    s.set("state.i", i64s(&[2], &[1, 2]));
    s.set("state.b", Tensor(Dtype::BOOL, vec![2], vec![0, 1]));
    s.meta["state"]["b"] = json!({"__tensor__": "state.b"});
    assert!(s.load().is_ok());
}

#[test]
fn a_missing_file_is_an_io_error() {
    let error = Model::load("/nonexistent/model.gkfda").unwrap_err();
    assert!(matches!(error, Error::Io { .. }), "{error:?}");
}
