//! What a file may not be.

use gkfda::capi;
use gkfda::{Error, Model};
use safetensors::tensor::TensorView;
use safetensors::Dtype;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::PathBuf;

use crate::spec::*;

/// A fresh directory under the system's temporary one, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let path = std::env::temp_dir().join(format!("gkfda-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Scratch(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `gkfda_model_load` of `path`: its status and message.
fn c_load(path: &std::path::Path) -> (i32, String) {
    use std::ffi::{CStr, CString};
    let path = CString::new(path.to_str().unwrap()).unwrap();
    let mut handle = std::ptr::null_mut();
    unsafe {
        let status = capi::gkfda_model_load(path.as_ptr(), &mut handle);
        assert!(handle.is_null());
        let message = CStr::from_ptr(capi::gkfda_last_error()).to_string_lossy();
        (status, message.into_owned())
    }
}

#[test]
fn only_a_regular_file_is_read() {
    let scratch = Scratch::new("special");
    let fifo = scratch.0.join("model.fifo");
    // Opening a FIFO for reading blocks until a writer comes: the type is checked first,
    // so this returns at once.
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let zero = PathBuf::from("/dev/zero");
    for path in [&fifo, &zero, &scratch.0] {
        let error = Model::load(path).unwrap_err();
        let message = error.to_string();
        assert!(matches!(error, Error::Io { .. }), "{error:?}");
        assert!(message.contains(path.to_str().unwrap()), "{message}");
        assert!(message.contains("not a regular file"), "{message}");
        let (status, message) = c_load(path);
        assert_eq!(status, capi::GKFDA_ERROR_IO);
        assert!(message.contains("not a regular file"), "{message}");
    }
}

#[test]
fn a_file_of_another_size_than_its_header_says_is_refused() {
    let scratch = Scratch::new("size");
    let bytes = binary_rbf().bytes();
    let path = scratch.0.join("model.gkfda");
    std::fs::write(&path, &bytes).unwrap();
    assert!(Model::load(&path).is_ok());
    let mut longer = bytes.clone();
    longer.extend([0; 5]);
    std::fs::write(&path, &longer).unwrap();
    let n = bytes.len();
    for error in [
        Model::load(&path).unwrap_err(),
        Model::from_bytes(&longer).unwrap_err(),
    ] {
        let message = error.to_string();
        assert!(matches!(error, Error::InvalidModel(_)), "{error:?}");
        assert!(
            message.contains(&format!("{} bytes", n + 5)) && message.contains(&n.to_string()),
            "{message}"
        );
    }
    assert!(Model::load(&path)
        .unwrap_err()
        .to_string()
        .contains(path.to_str().unwrap()));
    let (status, message) = c_load(&path);
    assert_eq!(status, capi::GKFDA_ERROR_MODEL);
    assert!(message.contains(&format!("{} bytes", n + 5)), "{message}");
    // Shorter, or a header length beyond the limit: refused before the data is read.
    std::fs::write(&path, &bytes[..n - 1]).unwrap();
    assert!(Model::load(&path)
        .unwrap_err()
        .to_string()
        .contains("truncated"));
    let mut huge = bytes.clone();
    huge[..8].copy_from_slice(&(16u64 << 20 | 1).to_le_bytes());
    std::fs::write(&path, &huge).unwrap();
    assert!(Model::load(&path)
        .unwrap_err()
        .to_string()
        .contains("limit"));
    std::fs::write(&path, [1, 2, 3]).unwrap();
    assert!(Model::load(&path)
        .unwrap_err()
        .to_string()
        .contains("shorter"));
}

#[test]
fn dimensions_beyond_any_array_are_refused_without_a_panic() {
    // No bases: no tensor bounds n_features.
    for (n_features, dtype) in [
        ((1u64 << 63) + 5, "float64"),
        (1 << 53 | 1, "float64"),
        (u64::MAX, "float32"),
    ] {
        let mut s = binary_rbf();
        s.predictor()["n_bases"] = json!(0);
        s.predictor()["dtype"] = json!(dtype);
        s.predictor()["n_features"] = json!(n_features);
        let points = Tensor(
            if dtype == "float32" {
                Dtype::F32
            } else {
                Dtype::F64
            },
            vec![0, n_features as usize],
            vec![],
        );
        s.set("predict.points", points);
        s.set("predict.weights", f64s(&[0, 1], &[]));
        let message = s.load().unwrap_err().to_string();
        assert!(message.contains("n_features"), "{message}");
    }
    // Up to 2^53 it loads, and nothing at load grows with n_features (a float32 RBF's
    // centre would be 2^40 floats).
    let mut s = binary_rbf();
    s.predictor()["n_bases"] = json!(0);
    s.predictor()["dtype"] = json!("float32");
    s.predictor()["n_features"] = json!(1u64 << 40);
    s.set(
        "predict.points",
        Tensor(Dtype::F32, vec![0, 1 << 40], vec![]),
    );
    s.set("predict.weights", f64s(&[0, 1], &[]));
    let model = s.load().unwrap();
    assert_eq!(model.n_features(), 1 << 40);
    assert_eq!(model.n_bases(), 0);
    assert!(model.predict_proba(&[0.0; D], 1).is_err());
    for (key, value) in [
        ("n_bases", json!(1u64 << 62)),
        ("n_bases", json!(-1)),
        ("n_outputs", json!((1u64 << 63) + 5)),
        ("n_features", json!(3.0)),
        ("n_bases", json!(4.5)),
    ] {
        let mut s = binary_rbf();
        s.predictor()[key] = value;
        refused(&s, key);
    }
    // Dimensions that disagree with the tensors, though each fits.
    let mut s = binary_rbf();
    s.predictor()["n_bases"] = json!(0);
    refused(&s, "n_bases against the tensors");
    let mut s = binary_rbf();
    s.set("predict.weights", f64s(&[0, 1], &[]));
    refused(&s, "weights without bases");
}

/// `s` with its metadata written as `text` instead, sealed again.
fn with_metadata_text(s: &Spec, text: &str) -> Vec<u8> {
    let mut views = s.tensors.clone();
    views.push((
        "checksum".to_string(),
        Tensor(Dtype::U8, vec![32], vec![0; 32]),
    ));
    let views: Vec<_> = views
        .iter()
        .map(|(name, Tensor(dtype, shape, data))| {
            (
                name.clone(),
                TensorView::new(*dtype, shape.clone(), data).unwrap(),
            )
        })
        .collect();
    let metadata = HashMap::from([("gkfda".to_string(), text.to_string())]);
    let mut bytes = safetensors::serialize(views, Some(metadata)).unwrap();
    gkfda::model::seal(&mut bytes).unwrap();
    bytes
}

/// `bytes` with its header replaced by `header` (text), sealed again.
fn with_header_text(bytes: &[u8], header: &str) -> Vec<u8> {
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend(header.as_bytes());
    out.extend(&bytes[8 + n..]);
    gkfda::model::seal(&mut out).unwrap();
    out
}

fn refused_naming(bytes: &[u8], what: &str, name: &str) {
    match Model::from_bytes(bytes) {
        Err(Error::InvalidModel(message)) => {
            assert!(message.contains(name), "{what}: {message}")
        }
        other => panic!("{what}: {other:?}"),
    }
}

#[test]
fn the_python_readers_rules_hold_here_too() {
    // A key twice: in the metadata (at any depth), in the header.
    let s = binary_rbf();
    let text = s.meta.to_string();
    assert!(Model::from_bytes(&with_metadata_text(&s, &text)).is_ok());
    let twice = text.replacen("\"lean\":true", "\"lean\":true,\"lean\":true", 1);
    assert_ne!(twice, text);
    refused_naming(&with_metadata_text(&s, &twice), "metadata key", "\"lean\"");
    let twice = text.replacen("\"n_bases\":4", "\"n_bases\":4,\"n_bases\":4", 1);
    assert_ne!(twice, text);
    refused_naming(&with_metadata_text(&s, &twice), "predictor key", "n_bases");
    let bytes = s.bytes();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header = std::str::from_utf8(&bytes[8..8 + n]).unwrap();
    let entry_start = header.find("\"predict.bias\"").unwrap();
    let entry_end = entry_start + header[entry_start..].find('}').unwrap() + 1;
    let entry = &header[entry_start..entry_end];
    let twice = format!("{},{entry}{}", &header[..entry_end], &header[entry_end..]);
    refused_naming(
        &with_header_text(&bytes, &twice),
        "header key",
        "predict.bias",
    );
    let extra = header.replacen("\"dtype\"", "\"extra\":1,\"dtype\"", 1);
    refused_naming(
        &with_header_text(&bytes, &extra),
        "entry key",
        "dtype, shape",
    );

    // Repeated precomputed columns.
    let mut p = spec(
        "GreedyKFDA",
        "classifier",
        "precomputed",
        "logistic",
        1,
        "float64",
    );
    assert!(p.load().is_ok());
    p.set("predict.columns", i64s(&[K], &[2, 0, 1, 0]));
    refused_naming(&p.bytes(), "columns", "predict.columns");

    // predict.lower's diagonal positive.
    for diagonal in [-1.0, 0.0, -0.0] {
        let mut s = cca();
        let mut l = lower();
        l[2 * K + 2] = diagonal;
        s.set("predict.lower", f64s(&[K, K], &l));
        refused_naming(&s.bytes(), "lower", "predict.lower");
    }

    // Labels strictly increasing, of their kind.
    let labels: Vec<(Value, Option<[&str; 2]>)> = vec![
        (json!({"kind": "int", "values": [1, 0]}), None),
        (json!({"kind": "int", "values": [1, 1.0]}), None),
        (json!({"kind": "int", "values": [0, u64::MAX]}), None),
        (json!({"kind": "float", "values": [1, 1.0]}), None),
        (json!({"kind": "float", "values": [2.5, -1.0]}), None),
        (json!({"kind": "float", "values": [-0.0, 0.0]}), None),
        (
            json!({"kind": "float", "values": [9007199254740992u64, 9007199254740993u64]}),
            None,
        ),
        (json!({"kind": "bool", "values": [true, false]}), None),
        (json!({"kind": "str", "values": ["b", "a"]}), None),
        (json!({"kind": "str", "values": ["a", "a\u{0}"]}), None),
        (
            json!({"kind": "str", "values": ["\u{ffff}", "\u{10000}"]}),
            Some(["\u{ffff}", "\u{10000}"]),
        ),
        (
            json!({"kind": "str", "values": ["a\u{0}", "b"]}),
            Some(["a", "b"]),
        ),
        (
            json!({"kind": "float", "values": [1, 2.5]}),
            Some(["1", "2.5"]),
        ),
        (json!({"kind": "int", "values": [-3, 7]}), Some(["-3", "7"])),
    ];
    for (classes, expected) in labels {
        let mut s = binary_rbf();
        s.predictor()["classes"] = classes.clone();
        match expected {
            None => refused_naming(&s.bytes(), &classes.to_string(), "classes.values"),
            Some(expected) => assert_eq!(s.load().unwrap().classes(), expected, "{classes}"),
        }
    }

    // degree, gamma and coef0 on every kernel.
    for kernel in ["rbf", "linear", "precomputed"] {
        for degree in [
            json!(0),
            json!(1u64 << 31),
            json!(2.0),
            json!(null),
            json!(-1),
        ] {
            let mut s = spec("GreedyKFDA", "classifier", kernel, "logistic", 1, "float64");
            assert!(s.load().is_ok(), "{kernel}");
            s.predictor()["degree"] = degree;
            refused_naming(&s.bytes(), kernel, "predictor.degree");
        }
        for (key, value) in [
            ("gamma", json!(0.0)),
            ("gamma", json!(null)),
            ("coef0", json!(null)),
            ("coef0", json!("1")),
        ] {
            let mut s = spec("GreedyKFDA", "classifier", kernel, "logistic", 1, "float64");
            s.predictor()[key] = value;
            refused_naming(&s.bytes(), kernel, key);
            s.predictor().as_object_mut().unwrap().remove(key);
            refused_naming(&s.bytes(), kernel, key);
        }
    }
    let mut s = spec("GreedyKFDA", "classifier", "poly", "logistic", 1, "float64");
    s.predictor()["degree"] = json!(i32::MAX);
    assert!(s.load().is_ok());

    // params.priors: one positive finite number per class, summing to 1.
    for priors in [json!(null), json!([0.25, 0.75]), json!([0.5, 0.5000005])] {
        let mut s = binary_rbf();
        s.meta["params"]["priors"] = priors.clone();
        assert!(s.load().is_ok(), "{priors}");
    }
    for priors in [
        json!([1.0]),
        json!([0.2, 0.3, 0.5]),
        json!([0.5, 0.6]),
        json!([1.5, -0.5]),
        json!([0.0, 1.0]),
        json!(["0.5", "0.5"]),
        json!([[0.5, 0.5]]),
        json!(0.5),
        json!([true, false]),
    ] {
        let mut s = binary_rbf();
        s.meta["params"]["priors"] = priors.clone();
        refused_naming(&s.bytes(), &priors.to_string(), "params.priors");
    }

    // The estimator's predictor: its task, its links, its tensors.
    let mut s = binary_rbf();
    s.meta["estimator"] = json!("KernelMatchingPursuit");
    refused_naming(&s.bytes(), "task", "predictor.task");
    let mut s = spec(
        "ParsimoniousKFDA",
        "classifier",
        "rbf",
        "softmax",
        3,
        "float64",
    );
    s.set("predict.slope", f64s(&[3], &[1.0; 3]));
    s.set("predict.offset", f64s(&[3], &[0.0; 3]));
    refused_naming(&s.bytes(), "link", "predictor.link");
    let mut s = binary_rbf();
    s.set("predict.lower", f64s(&[K, K], &lower()));
    refused_naming(&s.bytes(), "lower of a GreedyKFDA", "predict.lower");
    let mut s = cca();
    s.remove("predict.center");
    refused_naming(&s.bytes(), "CCA without center", "predict.center");

    // The metadata's keys, and state.
    for key in ["params", "state"] {
        let mut s = binary_rbf();
        s.meta.as_object_mut().unwrap().remove(key);
        refused_naming(&s.bytes(), key, key);
    }
    let mut s = binary_rbf();
    s.meta["state"] = json!(null);
    refused_naming(&s.bytes(), "state null", "state");
    let mut s = binary_rbf();
    s.meta["extra"] = json!(1);
    refused_naming(&s.bytes(), "extra key", "extra");

    // At most four dimensions.
    let mut s = binary_rbf();
    s.meta["state"] = json!({"a": {"__tensor__": "state.a"}});
    s.set("state.a", f64s(&[1, 1, 1, 1, 2], &[1.0, 2.0]));
    refused_naming(&s.bytes(), "5 dimensions", "dimensions");
    s.set("state.a", f64s(&[1, 1, 1, 2], &[1.0, 2.0]));
    assert!(s.load().is_ok());
}
