//! Parity with Python: the fixtures' predictions, and their truncations refused.

use gkfda::model::Float;
use gkfda::Model;
use serde_json::Value;

use crate::spec::*;

#[test]
fn python_parity() {
    let text = std::fs::read_to_string(fixtures().join("expected.json")).unwrap();
    let expected: Value = serde_json::from_str(&text).unwrap();
    let models = expected["models"].as_array().unwrap();
    assert!(models.len() >= 12);
    // float32 kernel values come from the SIMD level's exp, which rounds in float32: at
    // another level than Python's run they agree to float32's precision only.
    let same_level = expected["simd_level"] == gkfda::simd::simd_level().name();
    for entry in models {
        let file = entry["file"].as_str().unwrap();
        let model = Model::load(fixtures().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let x = floats(&entry["X"]);
        let n = entry["X"].as_array().unwrap().len();
        // Each row alone too: predictions must not depend on the batch.
        for rows in [n, 1] {
            for start in (0..n).step_by(rows) {
                let xs = &x[start * model.n_features()..(start + rows) * model.n_features()];
                let check = |key: &str, actual: Vec<f64>| {
                    let all = floats(&entry[key]);
                    let width = all.len() / n;
                    let expected = &all[start * width..(start + rows) * width];
                    let tolerance = if same_level || model.dtype() == Float::F64 {
                        1e-12
                    } else {
                        1e-6
                    };
                    assert_close(&actual, expected, tolerance, &format!("{file} {key}"));
                };
                if !entry["predict_proba"].is_null() {
                    check("predict_proba", model.predict_proba(xs, rows).unwrap());
                    check(
                        "decision_function",
                        model.decision_function(xs, rows).unwrap(),
                    );
                    let labels = model.predict(xs, rows).unwrap();
                    let expected: Vec<usize> = entry["predict"].as_array().unwrap()
                        [start..start + rows]
                        .iter()
                        .map(|v| v.as_u64().unwrap() as usize)
                        .collect();
                    assert_eq!(labels, expected, "{file} predict");
                    let classes: Vec<&str> = entry["classes"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_str().unwrap())
                        .collect();
                    assert_eq!(model.classes(), classes, "{file} classes");
                } else if !entry["decision_function"].is_null() {
                    check(
                        "decision_function",
                        model.decision_function(xs, rows).unwrap(),
                    );
                } else {
                    check("transform", model.transform(xs, rows).unwrap());
                }
            }
        }
    }
}

#[test]
fn every_fixture_resists_truncation() {
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "gkfda") {
            let bytes = std::fs::read(&path).unwrap();
            assert!(Model::from_bytes(&bytes).is_ok(), "{path:?}");
            for len in (0..bytes.len()).step_by(7) {
                assert!(
                    Model::from_bytes(&bytes[..len]).is_err(),
                    "{path:?} at {len}"
                );
            }
        }
    }
}
