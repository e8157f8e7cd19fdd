//! Files written per the specification against the hand computation, also when the
//! features share a large offset.

use gkfda::capi;
use gkfda::model::{ClassKind, Float};
use gkfda::{Link, Model, Task};
use serde_json::json;

use crate::spec::*;

#[test]
fn every_link_and_kernel_matches_the_specification() {
    for dtype in ["float64", "float32"] {
        let tolerance = if dtype == "float32" { 2e-5 } else { 1e-12 };
        for kernel in ["rbf", "linear", "poly", "precomputed"] {
            for (task, link, outputs) in [
                ("classifier", "logistic", 1),
                ("classifier", "softmax", 3),
                ("classifier", "ovr", 3),
                ("regressor", "identity", 1),
                ("transformer", "identity", 2),
            ] {
                let s = spec(estimator_for(task), task, kernel, link, outputs, dtype);
                check_by_hand(&s, tolerance);
            }
        }
    }
}

#[test]
fn lower_center_and_slope_paths_match_the_specification() {
    for dtype in ["float64", "float32"] {
        let tolerance = if dtype == "float32" { 2e-5 } else { 1e-12 };
        for kernel in ["rbf", "poly", "precomputed"] {
            let mut pca = spec(
                "SparseKernelPCA",
                "transformer",
                kernel,
                "identity",
                2,
                dtype,
            );
            pca.set("predict.lower", f64s(&[K, K], &lower()));
            check_by_hand(&pca, tolerance);
            let mut cca = pca.clone();
            cca.meta["estimator"] = json!("SparseKernelCCA");
            cca.set("predict.center", f64s(&[K], &values(5, K)));
            check_by_hand(&cca, tolerance);
            let mut centred_only = spec(
                "SparseKernelCCA",
                "transformer",
                kernel,
                "identity",
                1,
                dtype,
            );
            let mut identity = vec![0.0; K * K];
            identity.iter_mut().step_by(K + 1).for_each(|v| *v = 1.0);
            centred_only.set("predict.lower", f64s(&[K, K], &identity));
            centred_only.set("predict.center", f64s(&[K], &values(6, K)));
            check_by_hand(&centred_only, tolerance);
            for (link, outputs) in [("logistic", 1), ("ovr", 3)] {
                let mut p = spec(
                    "ParsimoniousKFDA",
                    "classifier",
                    kernel,
                    link,
                    outputs,
                    dtype,
                );
                p.set("predict.slope", f64s(&[outputs], &vec![1.7; outputs]));
                p.set("predict.offset", f64s(&[outputs], &values(7, outputs)));
                check_by_hand(&p, tolerance);
            }
        }
    }
}

#[test]
fn a_model_describes_itself() {
    let model = binary_rbf().load().unwrap();
    assert_eq!(model.n_features(), D);
    assert_eq!(model.n_classes(), 2);
    assert_eq!(model.classes(), ["0", "1"]);
    assert_eq!(model.class_kind(), Some(ClassKind::Int));
    assert_eq!(model.n_outputs(), 1);
    assert_eq!(model.n_bases(), K);
    assert_eq!(model.task(), Task::Classifier);
    assert_eq!(model.link(), Link::Logistic);
    assert_eq!(model.estimator(), "GreedyKFDA");
    assert_eq!(model.kernel_name(), "rbf");
    assert_eq!(model.dtype(), Float::F64);
    assert!(model.is_lean());
    assert_eq!(model.n_threads(), 1);
    assert_eq!(model.with_threads(0).n_threads(), 1);
    let mut labels = binary_rbf();
    labels.predictor()["classes"] = json!({"kind": "float", "values": [-1.0, 2.5]});
    assert_eq!(labels.load().unwrap().classes(), ["-1.0", "2.5"]);
    labels.predictor()["classes"] = json!({"kind": "bool", "values": [false, true]});
    assert_eq!(labels.load().unwrap().classes(), ["false", "true"]);
}

#[test]
fn no_bases_predict_the_bias() {
    let mut s = binary_rbf();
    s.predictor()["n_bases"] = json!(0);
    s.set("predict.points", f64s(&[0, D], &[]));
    s.set("predict.weights", f64s(&[0, 1], &[]));
    s.set("predict.bias", f64s(&[1], &[0.25]));
    let model = s.load().unwrap();
    assert_eq!(
        model.decision_function(&inputs(2), 2).unwrap(),
        [0.25, 0.25]
    );
}

#[test]
fn rows_predict_the_same_alone_as_in_a_batch_and_on_any_thread_count() {
    for s in [
        binary_rbf(),
        spec("GreedyKFDA", "classifier", "poly", "softmax", 3, "float64"),
        spec("GreedyKFDA", "classifier", "rbf", "ovr", 3, "float32"),
        {
            let mut s = spec(
                "SparseKernelPCA",
                "transformer",
                "rbf",
                "identity",
                2,
                "float64",
            );
            s.set("predict.lower", f64s(&[K, K], &lower()));
            s
        },
    ] {
        let model = s.load().unwrap();
        let n = 300;
        let x = inputs(n);
        let out = |m: &Model, x: &[f64], n| match m.task() {
            Task::Transformer => m.transform(x, n).unwrap(),
            _ => m.predict_proba(x, n).unwrap(),
        };
        let batch = out(&model, &x, n);
        let threaded = out(&model.clone().with_threads(2), &x, n);
        assert_eq!(batch, threaded);
        let width = batch.len() / n;
        // A float64 row alone takes the direct loop (the same values to rounding); float32
        // rows and the `lower` path run the batch's code.
        let exact = model.dtype() == Float::F32 || model.task() == Task::Transformer;
        for i in [0, 1, 63, 64, 65, 299] {
            let row = out(&model, &x[i * D..(i + 1) * D], 1);
            let expected = &batch[i * width..(i + 1) * width];
            if exact {
                assert_eq!(row, expected, "row {i}");
            } else {
                assert_close(&row, expected, 1e-14, &format!("row {i}"));
            }
            let four = out(&model, &x[i.min(296) * D..(i.min(296) + 4) * D], 4);
            let alone = out(&model, &x[i.min(296) * D..(i.min(296) + 1) * D], 1);
            assert_eq!(four[..width], alone[..], "row {i} in a small batch");
        }
    }
}

#[test]
fn bad_inputs_are_errors_naming_the_row() {
    let model = binary_rbf().load().unwrap();
    let mut x = inputs(4);
    assert!(model.predict_proba(&x[..5], 2).is_err());
    assert!(model.predict_proba(&x, usize::MAX).is_err());
    assert_eq!(model.predict_proba(&[], 0).unwrap(), Vec::<f64>::new());
    x[2 * D + 1] = f64::NAN;
    let message = model.predict_proba(&x, 4).unwrap_err().to_string();
    assert!(message.contains("row 2"), "{message}");
    x[2 * D + 1] = f64::INFINITY;
    assert!(model.predict(&x, 4).is_err());
    // Beyond float32: refused by a float32 model, which converts the input first.
    let f32_model = spec("GreedyKFDA", "classifier", "rbf", "logistic", 1, "float32")
        .load()
        .unwrap();
    let mut x = inputs(3);
    x[D] = 1e300;
    let message = f32_model.predict_proba(&x, 3).unwrap_err().to_string();
    assert!(message.contains("row 1"), "{message}");
    // In short scientific form, not as its 301 digits, with its column; the C ABI's too.
    assert!(message.contains("(1.000e300) at column 0"), "{message}");
    assert!(message.len() < 120, "{message}");
    let bytes = spec("GreedyKFDA", "classifier", "rbf", "logistic", 1, "float32").bytes();
    unsafe {
        let mut handle = std::ptr::null_mut();
        assert_eq!(
            capi::gkfda_model_from_bytes(bytes.as_ptr(), bytes.len(), &mut handle),
            capi::GKFDA_OK
        );
        let mut p = vec![0.0; 6];
        assert_eq!(
            capi::gkfda_predict_proba(handle, x.as_ptr(), 3, D, p.as_mut_ptr()),
            capi::GKFDA_ERROR_INPUT
        );
        let message = std::ffi::CStr::from_ptr(capi::gkfda_last_error()).to_string_lossy();
        assert!(
            message.contains("row 1") && message.contains("1.000e300"),
            "{message}"
        );
        assert!(message.len() < 120, "{message}");
        capi::gkfda_model_free(handle);
    }
    // Outputs that overflow are refused.
    let mut poly = spec("GreedyKFDA", "classifier", "poly", "logistic", 1, "float64");
    poly.predictor()["degree"] = json!(400);
    let model = poly.load().unwrap();
    assert!(model.predict_proba(&[1e3; D], 1).is_err());
    let mut pca = spec(
        "SparseKernelPCA",
        "transformer",
        "linear",
        "identity",
        2,
        "float64",
    );
    pca.set("predict.lower", f64s(&[K, K], &lower()));
    assert!(pca.load().unwrap().transform(&[1e308; D], 1).is_err());
}

/// The largest absolute difference between two sequences of equal length.
fn largest_difference(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max)
}

#[test]
fn every_path_keeps_its_digits_when_the_features_share_an_offset() {
    // Bases and inputs moved by a common offset: no distance changes, so neither may the
    // probabilities, on the batch path, the direct one of 1 to 4 rows and the C ABI's, in
    // float64 to 1e-9 (the offsets the test holds them to: up to 1e6; 1e7 is printed)
    // and in float32 to float32's rounding of the inputs, which the hand computation shares.
    let n = 12;
    for dtype in ["float64", "float32"] {
        for offset in [0.0, 1e3, 1e6, 1e7] {
            let mut s = spec("GreedyKFDA", "classifier", "rbf", "ovr", 3, dtype);
            let points: Vec<f64> = values(1, K * D).iter().map(|v| 2.0 * v + offset).collect();
            let tensor = if dtype == "float32" {
                f32s(&[K, D], &points)
            } else {
                f64s(&[K, D], &points)
            };
            s.set("predict.points", tensor);
            let model = s.load().unwrap();
            let x: Vec<f64> = inputs(n).iter().map(|v| v + offset).collect();
            let expected: Vec<f64> = by_hand(&s, &x)
                .iter()
                .flat_map(|z| probabilities_by_hand("ovr", z))
                .collect();
            let batch = model.predict_proba(&x, n).unwrap();
            let mut direct = vec![];
            let mut c_abi = vec![0.0; n * 3];
            let bytes = s.bytes();
            let mut handle = std::ptr::null_mut();
            // SAFETY: valid buffers of the stated lengths; the handle is freed below.
            unsafe {
                assert_eq!(
                    capi::gkfda_model_from_bytes(bytes.as_ptr(), bytes.len(), &mut handle),
                    capi::GKFDA_OK
                );
            }
            let mut start = 0;
            for rows in [1, 2, 3, 4, 2] {
                let slice = &x[start * D..(start + rows) * D];
                direct.extend(model.predict_proba(slice, rows).unwrap());
                // SAFETY: as above; `rows × D` inputs and `rows × 3` outputs.
                let status = unsafe {
                    capi::gkfda_predict_proba(
                        handle,
                        slice.as_ptr(),
                        rows,
                        D,
                        c_abi[start * 3..].as_mut_ptr(),
                    )
                };
                assert_eq!(status, capi::GKFDA_OK);
                start += rows;
            }
            // SAFETY: the handle came from gkfda_model_from_bytes and is freed once.
            unsafe { capi::gkfda_model_free(handle) };
            let differences = [
                largest_difference(&batch, &expected),
                largest_difference(&direct, &expected),
                largest_difference(&c_abi, &expected),
            ];
            eprintln!(
                "offset {offset:e} {dtype}: max abs difference batch {:.1e}, 1-4 rows {:.1e}, C ABI {:.1e}",
                differences[0], differences[1], differences[2]
            );
            let tolerance = match (dtype, offset) {
                ("float32", _) => 2e-5,
                (_, offset) if offset <= 1e6 => 1e-9,
                _ => 1e-8,
            };
            assert!(
                differences.iter().all(|d| *d <= tolerance),
                "{dtype} at offset {offset:e}: {differences:?}"
            );
        }
    }
}
