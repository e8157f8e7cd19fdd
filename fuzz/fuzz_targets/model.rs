//! `Model::from_bytes` on any bytes, then a prediction of a fixed row when it loads: both
//! must return `Ok` or `Err`, never panic. The input is also resealed (its checksum tensor
//! rewritten), so that mutations reach the checks behind the checksum; seed with the files
//! of tests/data/models.
#![no_main]

use gkfda::{Model, Task};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    run(data);
    let mut sealed = data.to_vec();
    if gkfda::model::seal(&mut sealed).is_ok() {
        run(&sealed);
    }
});

fn run(bytes: &[u8]) {
    let Ok(model) = Model::from_bytes(bytes) else {
        return;
    };
    let d = model.n_features();
    // A precomputed kernel's rows can be as wide as any usize the file claims.
    if d > 1 << 16 {
        return;
    }
    let row: Vec<f64> = (0..d).map(|j| (j % 5) as f64 * 0.5 - 1.0).collect();
    let rows: Vec<f64> = row.iter().chain(&row).copied().collect();
    for (x, n) in [(&row, 1), (&rows, 2)] {
        let outputs = match model.task() {
            Task::Classifier => {
                let p = model.predict_proba(x, n);
                if let Ok(p) = &p {
                    assert_eq!(p.len(), n * model.n_classes());
                    assert!(p.iter().all(|v| v.is_finite() && *v >= 0.0 && *v <= 1.0));
                    let labels = model.predict(x, n).expect("predict as predict_proba");
                    assert!(labels.iter().all(|&c| c < model.n_classes()));
                }
                model.decision_function(x, n)
            }
            Task::Regressor => model.decision_function(x, n),
            Task::Transformer => model.transform(x, n),
        };
        if let Ok(z) = outputs {
            assert_eq!(z.len(), n * model.n_outputs());
            assert!(z.iter().all(|v| v.is_finite()));
        }
    }
}
