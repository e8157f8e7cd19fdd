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
}

/// Result alias of the core.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn invalid(argument: &'static str, message: impl Into<String>) -> Self {
        Error::InvalidArgument {
            argument,
            message: message.into(),
        }
    }
}

/// A zero-filled vector of `len` elements, or [`Error::OutOfMemory`] instead of an abort.
pub(crate) fn try_zeroed<F: Copy + Default>(len: usize, what: &'static str) -> Result<Vec<F>> {
    let bytes = len.saturating_mul(std::mem::size_of::<F>());
    let mut buffer = Vec::new();
    buffer
        .try_reserve_exact(len)
        .map_err(|_| Error::OutOfMemory { what, bytes })?;
    buffer.resize(len, F::default());
    Ok(buffer)
}
