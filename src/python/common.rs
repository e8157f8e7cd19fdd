//! What every binding shares: the core's errors as Python exceptions, the work run with
//! the GIL released and watched for signals and progress, and the arguments that several
//! bindings read alike (kernels, index orders, class codes, a kernel or its factor).

use crate::error::Error;
use crate::kernel::Kernel;
use crate::progress::Progress;
use crate::tuning::{SIGNAL_POLL, WATCHED_KERNEL_WORK};
use numpy::PyReadonlyArray1;
use pyo3::exceptions::{
    PyKeyboardInterrupt, PyMemoryError, PyOSError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

impl From<Error> for PyErr {
    fn from(error: Error) -> PyErr {
        match error {
            Error::InvalidArgument { .. } => PyValueError::new_err(error.to_string()),
            Error::OutOfMemory { .. } => PyMemoryError::new_err(error.to_string()),
            // Only reached if the stop flag was raised without a handler's exception.
            Error::Interrupted => PyKeyboardInterrupt::new_err(error.to_string()),
            Error::Io { .. } => PyOSError::new_err(error.to_string()),
            Error::InvalidModel(_) => PyValueError::new_err(error.to_string()),
            Error::Unsupported(_) => PyTypeError::new_err(error.to_string()),
            Error::External(_) => PyRuntimeError::new_err(error.to_string()),
        }
    }
}

/// Runs `work` with the GIL released, on a scoped thread, while this thread looks for
/// signals every [`SIGNAL_POLL`]. Python runs signal handlers only on its main thread, and
/// the core's loops run on its own pool, so they cannot look themselves: when a handler
/// raises (Ctrl-C's `KeyboardInterrupt`), the stop flag asks the core to give up at its
/// next check, and the handler's exception is raised here once the work has returned.
pub(super) fn interruptible<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(&AtomicBool) -> Result<T, Error> + Send,
) -> PyResult<T> {
    reporting(py, None, |stop, _| work(stop))
}

/// [`interruptible`] for work that counts its progress: with a `report` callback, each
/// poll that finds the count changed calls `report(done, total)` (with the GIL), and the
/// last count is reported once the work has returned `Ok`; an exception it raises stops
/// the work as a signal handler's does. Without one, the count is never read.
pub(super) fn reporting<T: Send>(
    py: Python<'_>,
    report: Option<&Bound<'_, PyAny>>,
    work: impl FnOnce(&AtomicBool, &Progress) -> Result<T, Error> + Send,
) -> PyResult<T> {
    let stop = AtomicBool::new(false);
    let progress = Progress::new();
    let report: Option<Py<PyAny>> = report.filter(|r| !r.is_none()).map(|r| r.clone().unbind());
    let (outcome, raised) = py.detach(|| {
        std::thread::scope(|scope| {
            let (done, finished) = mpsc::channel::<()>();
            let (stop, progress) = (&stop, &progress);
            let worker = scope.spawn(move || {
                let result = work(stop, progress);
                // The receiver outlives the worker: it is joined below.
                let _ = done.send(());
                result
            });
            let mut raised: Option<PyErr> = None;
            let mut reported = None;
            let mut poll = |last: bool| {
                if raised.is_some() {
                    return;
                }
                let outcome = Python::attach(|py| {
                    if !last {
                        py.check_signals()?;
                    }
                    let now = progress.get();
                    match &report {
                        Some(report) if reported != Some(now) => {
                            reported = Some(now);
                            report.call1(py, now).map(drop)
                        }
                        _ => Ok(()),
                    }
                });
                if let Err(error) = outcome {
                    raised = Some(error);
                    stop.store(true, Ordering::Relaxed);
                }
            };
            while let Err(mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(SIGNAL_POLL) {
                poll(false);
            }
            let joined = worker.join();
            // The whole count of work that ended well (a refusal reports nothing more).
            if report.is_some() && matches!(joined, Ok(Ok(_))) {
                poll(true);
            }
            (joined, raised)
        })
    });
    // A panic in the core resumes here, where pyo3 turns it into a `PanicException`.
    let result = outcome.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    match raised {
        Some(error) => Err(error),
        None => Ok(result?),
    }
}

/// A kernel call of `rows × columns × features` run with the GIL released: watched for
/// signals ([`interruptible`]) from [`WATCHED_KERNEL_WORK`] on, else on this thread with a
/// stop flag nobody raises.
pub(super) fn kernel_call<T: Send>(
    py: Python<'_>,
    (rows, columns, features): (usize, usize, usize),
    work: impl FnOnce(&AtomicBool) -> Result<T, Error> + Send,
) -> PyResult<T> {
    let size = rows.saturating_mul(columns).saturating_mul(features.max(1));
    if size < WATCHED_KERNEL_WORK {
        return Ok(py.detach(|| work(&AtomicBool::new(false)))?);
    }
    interruptible(py, work)
}

pub(super) fn parse_kernel(name: &str, gamma: f64, degree: u32, coef0: f64) -> PyResult<Kernel> {
    Ok(Kernel::from_name(name, gamma, degree, coef0)?)
}

/// The one of `kernel` and `factor` given, and whether it is the factor.
pub(super) fn kernel_or_factor<'a, 'py>(
    kernel: Option<&'a Bound<'py, PyAny>>,
    factor: Option<&'a Bound<'py, PyAny>>,
) -> PyResult<(&'a Bound<'py, PyAny>, bool)> {
    match (
        kernel.filter(|k| !k.is_none()),
        factor.filter(|f| !f.is_none()),
    ) {
        (Some(kernel), None) => Ok((kernel, false)),
        (None, Some(factor)) => Ok((factor, true)),
        (Some(_), Some(_)) => Err(PyValueError::new_err(
            "factor: give either the kernel or its factor, not both (pass None as the kernel)",
        )),
        (None, None) => Err(PyValueError::new_err(
            "K: a kernel matrix or a factor (factor=) is required",
        )),
    }
}

/// A priority order from NumPy's int64 indices (`argument` names them in errors).
pub(super) fn order_of<'a>(
    indices: impl IntoIterator<Item = &'a i64>,
    argument: &str,
) -> PyResult<Vec<usize>> {
    indices
        .into_iter()
        .map(|&i| {
            usize::try_from(i).map_err(|_| {
                PyValueError::new_err(format!("{argument}: indices must be non-negative"))
            })
        })
        .collect()
}

/// The class codes of `greedy_select`'s `y`: a boolean array's True as 1 and False as 0,
/// or an integer array's codes, which must be non-negative (the core checks that every
/// class from 0 to the largest code is present).
pub(super) fn class_codes(y: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
    fn codes<'a, T: Copy + TryInto<u32> + 'a>(
        values: impl IntoIterator<Item = &'a T>,
    ) -> PyResult<Vec<u32>> {
        values
            .into_iter()
            .map(|&code| {
                code.try_into().map_err(|_| {
                    PyValueError::new_err("y: class codes must be non-negative (and below 2**32)")
                })
            })
            .collect()
    }
    if let Ok(y) = y.extract::<PyReadonlyArray1<'_, bool>>() {
        return Ok(y.as_array().iter().map(|&p| u32::from(p)).collect());
    }
    if let Ok(y) = y.extract::<PyReadonlyArray1<'_, i64>>() {
        return codes(y.as_array().iter());
    }
    if let Ok(y) = y.extract::<PyReadonlyArray1<'_, i32>>() {
        return codes(y.as_array().iter());
    }
    Err(PyTypeError::new_err(
        "y: must be a 1-D NumPy array of booleans or of integer class codes (int64 or int32)",
    ))
}
