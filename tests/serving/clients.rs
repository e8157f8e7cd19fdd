//! One model, many threads; the C ABI.

use gkfda::capi;

use crate::spec::*;

#[test]
fn eight_threads_share_one_model() {
    let model = spec("GreedyKFDA", "classifier", "rbf", "ovr", 3, "float64")
        .load()
        .unwrap();
    let n = 200;
    let x = inputs(n);
    let sequential = model.predict_proba(&x, n).unwrap();
    let rows: Vec<Vec<f64>> = (0..n)
        .map(|i| model.predict_proba(&x[i * D..(i + 1) * D], 1).unwrap())
        .collect();
    let model = std::sync::Arc::new(model);
    std::thread::scope(|scope| {
        for t in 0..8 {
            let model = std::sync::Arc::clone(&model);
            let (x, sequential, rows) = (&x, &sequential, &rows);
            scope.spawn(move || {
                for round in 0..20 {
                    assert_eq!(&model.predict_proba(x, n).unwrap(), sequential);
                    let i = (t * 31 + round * 7) % n;
                    assert_eq!(
                        model.predict_proba(&x[i * D..(i + 1) * D], 1).unwrap(),
                        rows[i]
                    );
                }
            });
        }
    });
}

#[test]
fn the_c_abi_predicts_as_the_model_and_reports_errors() {
    use std::ffi::{CStr, CString};
    let s = spec("GreedyKFDA", "classifier", "rbf", "ovr", 3, "float64");
    let bytes = s.bytes();
    let model = s.load().unwrap();
    let n = 4;
    let x = inputs(n);
    unsafe {
        let mut handle = std::ptr::null_mut();
        assert_eq!(
            capi::gkfda_model_from_bytes(bytes.as_ptr(), bytes.len(), &mut handle),
            capi::GKFDA_OK
        );
        assert_eq!(capi::gkfda_n_classes(handle), 3);
        assert_eq!(capi::gkfda_n_features(handle), D);
        assert_eq!(capi::gkfda_n_outputs(handle), 3);
        assert_eq!(capi::gkfda_task(handle), 0);
        assert_eq!(
            CStr::from_ptr(capi::gkfda_class_label(handle, 1)).to_str(),
            Ok("b")
        );
        assert!(capi::gkfda_class_label(handle, 3).is_null());
        let mut p = vec![0.0; n * 3];
        assert_eq!(
            capi::gkfda_predict_proba(handle, x.as_ptr(), n, D, p.as_mut_ptr()),
            capi::GKFDA_OK
        );
        assert_eq!(p, model.predict_proba(&x, n).unwrap());
        assert_eq!(CStr::from_ptr(capi::gkfda_last_error()).to_str(), Ok(""));
        let mut z = vec![0.0; n * 3];
        assert_eq!(
            capi::gkfda_decision_function(handle, x.as_ptr(), n, D, z.as_mut_ptr()),
            0
        );
        assert_eq!(z, model.decision_function(&x, n).unwrap());
        let mut labels = vec![9usize; n];
        assert_eq!(
            capi::gkfda_predict(handle, x.as_ptr(), n, D, labels.as_mut_ptr()),
            0
        );
        assert_eq!(labels, model.predict(&x, n).unwrap());
        // Errors: status, message, output untouched.
        let mut t = vec![7.0; n * 3];
        assert_eq!(
            capi::gkfda_transform(handle, x.as_ptr(), n, D, t.as_mut_ptr()),
            capi::GKFDA_ERROR_UNSUPPORTED
        );
        assert!(t.iter().all(|&v| v == 7.0));
        let message = CStr::from_ptr(capi::gkfda_last_error()).to_string_lossy();
        assert!(message.contains("transform"), "{message}");
        assert_eq!(
            capi::gkfda_predict_proba(handle, x.as_ptr(), n, D + 1, p.as_mut_ptr()),
            capi::GKFDA_ERROR_INPUT
        );
        let mut bad = x.clone();
        bad[D] = f64::NAN;
        assert_eq!(
            capi::gkfda_predict_proba(handle, bad.as_ptr(), n, D, p.as_mut_ptr()),
            capi::GKFDA_ERROR_INPUT
        );
        assert!(CStr::from_ptr(capi::gkfda_last_error())
            .to_string_lossy()
            .contains("row 1"));
        assert_eq!(
            capi::gkfda_predict_proba(handle, x.as_ptr(), usize::MAX, D, p.as_mut_ptr()),
            capi::GKFDA_ERROR_INPUT
        );
        assert_eq!(
            capi::gkfda_predict_proba(handle, std::ptr::null(), n, D, p.as_mut_ptr()),
            capi::GKFDA_ERROR_NULL
        );
        assert_eq!(
            capi::gkfda_predict_proba(handle, x.as_ptr(), n, D, std::ptr::null_mut()),
            capi::GKFDA_ERROR_NULL
        );
        assert_eq!(
            capi::gkfda_predict_proba(std::ptr::null(), x.as_ptr(), n, D, p.as_mut_ptr()),
            capi::GKFDA_ERROR_NULL
        );
        assert_eq!(capi::gkfda_n_classes(std::ptr::null()), 0);
        assert_eq!(capi::gkfda_task(std::ptr::null()), -1);
        assert!(capi::gkfda_class_label(std::ptr::null(), 0).is_null());
        capi::gkfda_model_free(handle);
        capi::gkfda_model_free(std::ptr::null_mut());

        let mut untouched = std::ptr::null_mut();
        assert_eq!(
            capi::gkfda_model_from_bytes(bytes.as_ptr(), bytes.len() - 1, &mut untouched),
            capi::GKFDA_ERROR_MODEL
        );
        assert!(untouched.is_null());
        assert_eq!(
            capi::gkfda_model_from_bytes(std::ptr::null(), 0, &mut untouched),
            capi::GKFDA_ERROR_NULL
        );
        let path = CString::new("/nonexistent/model.gkfda").unwrap();
        assert_eq!(
            capi::gkfda_model_load(path.as_ptr(), &mut untouched),
            capi::GKFDA_ERROR_IO
        );
        assert_eq!(
            capi::gkfda_model_load(std::ptr::null(), &mut untouched),
            capi::GKFDA_ERROR_NULL
        );
        assert!(untouched.is_null());
        let path = CString::new(fixtures().join("kpca.gkfda").to_str().unwrap()).unwrap();
        assert_eq!(capi::gkfda_model_load(path.as_ptr(), &mut untouched), 0);
        assert_eq!(capi::gkfda_task(untouched), 2);
        assert_eq!(capi::gkfda_n_classes(untouched), 0);
        capi::gkfda_model_free(untouched);
    }
}
