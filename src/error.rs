//! The one error type of the core; the binding maps each variant to a Python exception.

/// Everything that can go wrong in the core, with the argument it concerns.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// A parameter or input array is invalid (maps to `ValueError`).
    #[error("{argument}: {message}")]
    InvalidArgument {
        argument: &'static str,
        message: String,
    },
    /// An allocation was refused before it was attempted or by the allocator
    /// (maps to `MemoryError`).
    #[error("{what} needs {bytes} bytes ({gib:.2} GiB), which could not be allocated", gib = *.bytes as f64 / 1073741824.0)]
    OutOfMemory { what: &'static str, bytes: usize },
    /// The caller raised the stop flag of a long call (`*_with_stop`) before it finished;
    /// the binding raises the exception of the signal handler that asked for it.
    #[error("stopped on request before the end")]
    Interrupted,
    /// A model file could not be read (maps to `OSError`).
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    /// A model file's bytes are not a valid model: the message names what is wrong
    /// (maps to `ValueError`).
    #[error("invalid model file: {0}")]
    InvalidModel(String),
    /// The holder of a factor held elsewhere ([`crate::operator::FactorSource`]) failed: a
    /// lost worker, a timeout; the message is its own (maps to `RuntimeError`, unless the
    /// binding has the holder's own exception to raise).
    #[error("factor: its holder failed: {0}")]
    External(String),
    /// The model does not do what was asked of it, e.g. `predict_proba` of a regressor
    /// (maps to `TypeError`).
    #[error("{0}")]
    Unsupported(String),
}

/// Result alias of the core.
pub type Result<T> = std::result::Result<T, Error>;

/// `Err(Error::Interrupted)` once the caller has raised `stop` (a long call's flag, looked at
/// between its steps: a Ctrl-C must not wait for the whole call).
pub(crate) fn check_stop(stop: &std::sync::atomic::AtomicBool) -> Result<()> {
    if stop.load(std::sync::atomic::Ordering::Relaxed) {
        Err(Error::Interrupted)
    } else {
        Ok(())
    }
}

impl Error {
    pub(crate) fn invalid(argument: &'static str, message: impl Into<String>) -> Self {
        Error::InvalidArgument {
            argument,
            message: message.into(),
        }
    }

    /// This error as one of problem `c` of several ([`crate::selection::select_many`]): an
    /// argument of that problem alone (`y`, `random_order`) says which problem it is.
    pub(crate) fn in_problem(self, c: usize) -> Self {
        match self {
            Error::InvalidArgument {
                argument: argument @ ("y" | "random_order"),
                message,
            } => Error::InvalidArgument {
                argument,
                message: format!("problem {c}: {message}"),
            },
            other => other,
        }
    }
}

/// A zero-filled vector of `len` elements, or [`Error::OutOfMemory`] instead of an abort.
/// The zeros come from the allocator (`calloc`): a large buffer is fresh pages that the OS
/// zeroes when they are first touched, by the threads that then fill them, rather than a
/// pass of zero writes on one thread first (~0.2 s of a 1.6 s 8,000 × 8,000 cross kernel).
pub(crate) fn try_zeroed<T: bytemuck::Zeroable>(len: usize, what: &'static str) -> Result<Vec<T>> {
    let bytes = len.saturating_mul(std::mem::size_of::<T>());
    bytemuck::allocation::try_zeroed_vec(len).map_err(|()| Error::OutOfMemory { what, bytes })
}
