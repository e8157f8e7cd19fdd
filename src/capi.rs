//! The C ABI over [`Model`]: the functions `include/gkfda.h` declares.
//!
//! Every function checks its pointers, catches any panic (none crosses into C) and
//! returns a status: [`GKFDA_OK`] or an error code, whose message
//! [`gkfda_last_error`] gives on the same thread. A `gkfda_model` is immutable once
//! loaded: any number of threads may predict from one at once.

use crate::error::Error;
use crate::model::{Model, Task};
use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

pub const GKFDA_OK: c_int = 0;
/// A required pointer was null.
pub const GKFDA_ERROR_NULL: c_int = 1;
/// The model file could not be read.
pub const GKFDA_ERROR_IO: c_int = 2;
/// The bytes are not a valid model file.
pub const GKFDA_ERROR_MODEL: c_int = 3;
/// The input is invalid: wrong number of features, a non-finite value, outputs that
/// overflow.
pub const GKFDA_ERROR_INPUT: c_int = 4;
/// The model does not do that (e.g. probabilities of a regressor).
pub const GKFDA_ERROR_UNSUPPORTED: c_int = 5;
/// An allocation failed.
pub const GKFDA_ERROR_MEMORY: c_int = 6;
/// A bug: a panic was caught at the boundary.
pub const GKFDA_ERROR_INTERNAL: c_int = 7;

/// The C handle: the model and its labels as C strings.
#[allow(non_camel_case_types)]
pub struct gkfda_model {
    model: Model,
    labels: Vec<CString>,
}

impl gkfda_model {
    fn new(model: Model) -> gkfda_model {
        let labels = model
            .classes()
            .iter()
            .map(|label| c_string(label.as_bytes()))
            .collect();
        gkfda_model { model, labels }
    }

    /// The Rust model behind the handle.
    pub fn model(&self) -> &Model {
        &self.model
    }
}

/// `bytes` as a C string, cut at its first NUL.
fn c_string(bytes: &[u8]) -> CString {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    CString::new(&bytes[..end]).expect("no NUL before the end")
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_error(message: &str) {
    LAST_ERROR.with(|last| *last.borrow_mut() = c_string(message.as_bytes()));
}

type Failure = (c_int, String);

fn null(argument: &str) -> Failure {
    (GKFDA_ERROR_NULL, format!("{argument}: is a null pointer"))
}

impl From<Error> for Failure {
    fn from(error: Error) -> Failure {
        let code = match error {
            Error::InvalidArgument { .. } => GKFDA_ERROR_INPUT,
            Error::OutOfMemory { .. } => GKFDA_ERROR_MEMORY,
            Error::Io { .. } => GKFDA_ERROR_IO,
            Error::InvalidModel(_) => GKFDA_ERROR_MODEL,
            Error::Unsupported(_) => GKFDA_ERROR_UNSUPPORTED,
            // Neither is reached by the C API: it serves models, it neither stops nor
            // reads a factor held elsewhere.
            Error::Interrupted | Error::External(_) => GKFDA_ERROR_INTERNAL,
        };
        (code, error.to_string())
    }
}

/// Runs `work` with the thread's last error cleared, catching any panic; its status.
fn status(work: impl FnOnce() -> Result<(), Failure>) -> c_int {
    set_error("");
    match catch_unwind(AssertUnwindSafe(work)) {
        Ok(Ok(())) => GKFDA_OK,
        Ok(Err((code, message))) => {
            set_error(&message);
            code
        }
        Err(_) => {
            set_error("internal error: a panic was caught at the C boundary");
            GKFDA_ERROR_INTERNAL
        }
    }
}

/// Runs an accessor, catching any panic; `fallback` on a null model or a panic.
fn query<T>(fallback: T, work: impl FnOnce() -> Option<T>) -> T {
    catch_unwind(AssertUnwindSafe(work))
        .ok()
        .flatten()
        .unwrap_or(fallback)
}

/// Loads the model file at `path` into a new handle written to `*out` (freed by
/// [`gkfda_model_free`]); `*out` is untouched on error. Reads as [`Model::load`]: a
/// regular file only, and no more of it than its header accounts for.
///
/// # Safety
/// `path` is null or a NUL-terminated string; `out` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn gkfda_model_load(
    path: *const c_char,
    out: *mut *mut gkfda_model,
) -> c_int {
    status(|| {
        if path.is_null() {
            return Err(null("path"));
        }
        if out.is_null() {
            return Err(null("out"));
        }
        let path = CStr::from_ptr(path);
        #[cfg(unix)]
        let model = {
            use std::os::unix::ffi::OsStrExt;
            Model::load(std::ffi::OsStr::from_bytes(path.to_bytes()))?
        };
        #[cfg(not(unix))]
        let model = Model::load(
            path.to_str()
                .map_err(|_| (GKFDA_ERROR_IO, "path: is not valid UTF-8".to_string()))?,
        )?;
        *out = Box::into_raw(Box::new(gkfda_model::new(model)));
        Ok(())
    })
}

/// Reads a model from the `len` bytes at `data` (copied: the caller may free them
/// after) into a new handle written to `*out`; `*out` is untouched on error.
///
/// # Safety
/// `data` is null or valid for reads of `len` bytes; `out` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn gkfda_model_from_bytes(
    data: *const u8,
    len: usize,
    out: *mut *mut gkfda_model,
) -> c_int {
    status(|| {
        if data.is_null() {
            return Err(null("data"));
        }
        if out.is_null() {
            return Err(null("out"));
        }
        if len > isize::MAX as usize {
            return Err((GKFDA_ERROR_MODEL, "len: is beyond any buffer".to_string()));
        }
        let model = Model::from_bytes(std::slice::from_raw_parts(data, len))?;
        *out = Box::into_raw(Box::new(gkfda_model::new(model)));
        Ok(())
    })
}

/// Frees a handle; null is ignored.
///
/// # Safety
/// `model` is null or a handle from this library not freed before, used by no other
/// thread during or after the call.
#[no_mangle]
pub unsafe extern "C" fn gkfda_model_free(model: *mut gkfda_model) {
    if !model.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(model))));
    }
}

/// The message of the thread's last failed call, or `""` after a success: valid until
/// the thread's next call into the library (other than this one).
#[no_mangle]
pub extern "C" fn gkfda_last_error() -> *const c_char {
    LAST_ERROR.with(|last| last.borrow().as_ptr())
}

/// The input `n_rows × n_features` at `x` and the `out` buffer of `n_rows × width`
/// elements, checked; `run` fills the results, copied to `out`.
///
/// # Safety
/// As the prediction functions' contract.
unsafe fn predict_into<T: Copy>(
    model: *const gkfda_model,
    x: *const f64,
    n_rows: usize,
    n_features: usize,
    out: *mut T,
    width: impl Fn(&Model) -> usize,
    run: impl Fn(&Model, &[f64]) -> crate::Result<Vec<T>>,
) -> c_int {
    status(|| {
        if model.is_null() {
            return Err(null("model"));
        }
        if x.is_null() {
            return Err(null("x"));
        }
        if out.is_null() {
            return Err(null("out"));
        }
        let model = &(*model).model;
        if n_features != model.n_features() {
            return Err((
                GKFDA_ERROR_INPUT,
                format!(
                    "n_features: is {n_features}; the model takes {}",
                    model.n_features()
                ),
            ));
        }
        let too_large = || {
            (
                GKFDA_ERROR_INPUT,
                format!("n_rows: {n_rows} rows are beyond any buffer"),
            )
        };
        let len = n_rows
            .checked_mul(n_features)
            .filter(|&n| n <= isize::MAX as usize / 8)
            .ok_or_else(too_large)?;
        let out_len = n_rows
            .checked_mul(width(model))
            .filter(|&n| n <= isize::MAX as usize / 8)
            .ok_or_else(too_large)?;
        let values = run(model, std::slice::from_raw_parts(x, len))?;
        debug_assert_eq!(values.len(), out_len);
        std::slice::from_raw_parts_mut(out, out_len).copy_from_slice(&values);
        Ok(())
    })
}

/// The class probabilities of `n_rows` rows of `n_features` values at `x` (row-major),
/// written to `out` (`n_rows × gkfda_n_classes` doubles, row-major). Classifiers only.
///
/// # Safety
/// `model` is null or a live handle; `x` is null or valid for reads of
/// `n_rows × n_features` doubles; `out` is null or valid for writes of
/// `n_rows × gkfda_n_classes(model)` doubles, not overlapping `x`.
#[no_mangle]
pub unsafe extern "C" fn gkfda_predict_proba(
    model: *const gkfda_model,
    x: *const f64,
    n_rows: usize,
    n_features: usize,
    out: *mut f64,
) -> c_int {
    predict_into(
        model,
        x,
        n_rows,
        n_features,
        out,
        Model::n_classes,
        |m, x| m.predict_proba(x, n_rows),
    )
}

/// The decision values `z` (`n_rows × gkfda_n_outputs` doubles) of a classifier or
/// regressor.
///
/// # Safety
/// As [`gkfda_predict_proba`], with `out` valid for `n_rows × gkfda_n_outputs(model)`
/// doubles.
#[no_mangle]
pub unsafe extern "C" fn gkfda_decision_function(
    model: *const gkfda_model,
    x: *const f64,
    n_rows: usize,
    n_features: usize,
    out: *mut f64,
) -> c_int {
    predict_into(
        model,
        x,
        n_rows,
        n_features,
        out,
        Model::n_outputs,
        |m, x| m.decision_function(x, n_rows),
    )
}

/// The predicted classes (`n_rows` indices for [`gkfda_class_label`]) of a classifier.
///
/// # Safety
/// As [`gkfda_predict_proba`], with `out` valid for `n_rows` `size_t`s.
#[no_mangle]
pub unsafe extern "C" fn gkfda_predict(
    model: *const gkfda_model,
    x: *const f64,
    n_rows: usize,
    n_features: usize,
    out: *mut usize,
) -> c_int {
    predict_into(
        model,
        x,
        n_rows,
        n_features,
        out,
        |_| 1,
        |m, x| m.predict(x, n_rows),
    )
}

/// The features (`n_rows × gkfda_n_outputs` doubles) of a transformer.
///
/// # Safety
/// As [`gkfda_decision_function`].
#[no_mangle]
pub unsafe extern "C" fn gkfda_transform(
    model: *const gkfda_model,
    x: *const f64,
    n_rows: usize,
    n_features: usize,
    out: *mut f64,
) -> c_int {
    predict_into(
        model,
        x,
        n_rows,
        n_features,
        out,
        Model::n_outputs,
        |m, x| m.transform(x, n_rows),
    )
}

/// Classes of a classifier; 0 otherwise or for a null model.
///
/// # Safety
/// `model` is null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn gkfda_n_classes(model: *const gkfda_model) -> usize {
    query(0, || model.as_ref().map(|m| m.model.n_classes()))
}

/// Values per input row; 0 for a null model.
///
/// # Safety
/// `model` is null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn gkfda_n_features(model: *const gkfda_model) -> usize {
    query(0, || model.as_ref().map(|m| m.model.n_features()))
}

/// Decision values or features per row; 0 for a null model.
///
/// # Safety
/// `model` is null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn gkfda_n_outputs(model: *const gkfda_model) -> usize {
    query(0, || model.as_ref().map(|m| m.model.n_outputs()))
}

/// The task: 0 classifier, 1 regressor, 2 transformer; -1 for a null model.
///
/// # Safety
/// `model` is null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn gkfda_task(model: *const gkfda_model) -> c_int {
    query(-1, || {
        model.as_ref().map(|m| match m.model.task() {
            Task::Classifier => 0,
            Task::Regressor => 1,
            Task::Transformer => 2,
        })
    })
}

/// The label of class `i` (see `Model::classes`), valid as long as the model; null for
/// a null model or `i` out of range.
///
/// # Safety
/// `model` is null or a live handle.
#[no_mangle]
pub unsafe extern "C" fn gkfda_class_label(model: *const gkfda_model, i: usize) -> *const c_char {
    query(std::ptr::null(), || {
        model
            .as_ref()
            .and_then(|m| m.labels.get(i))
            .map(|label| label.as_ptr())
    })
}
