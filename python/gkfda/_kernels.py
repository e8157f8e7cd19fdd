"""Kernel and parameter helpers shared by the estimators (``GreedyKFDA`` and the
matching-pursuit family): parameter constraints that refuse booleans, dtype conversion
that refuses overflow, scikit-learn's ``gamma="scale"``, and checks of kernel values."""

from __future__ import annotations

import re
from numbers import Integral

import numpy as np
from scipy import sparse
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import validate_data

from . import _core
from ._validation import check_fit_fits, check_precomputed_kernel


class _Number(Interval):
    """scikit-learn's ``Interval`` without booleans: ``k=True`` is a mistake, not ``k=1``."""

    def is_satisfied_by(self, val):
        return not isinstance(val, (bool, np.bool_)) and super().is_satisfied_by(val)


# The largest count the core takes (an int64 at the binding), and the largest degree (the
# exponent of a power in the core is an int32): bounds checked here, before any cast.
_LARGEST_COUNT = np.iinfo(np.int64).max
_LARGEST_DEGREE = np.iinfo(np.int32).max
# Threads: far more than any machine has, far less than overflows the thread count.
_LARGEST_THREADS = 2**20


def _count(minimum=1, maximum=_LARGEST_COUNT):
    return _Number(Integral, minimum, maximum, closed="both")


def _convert(A, dtype, argument):
    """``A`` as a C-contiguous array of ``dtype``, refusing values that overflow it."""
    A = np.asarray(A)
    if A.dtype == dtype:
        return np.ascontiguousarray(A)
    # A is finite (checked before); one reduction finds an overflow without an m×m temporary.
    with np.errstate(over="ignore", invalid="ignore"):
        converted = np.ascontiguousarray(A, dtype=dtype)
        total = converted.sum(dtype=np.float64)
    if not np.isfinite(total):
        raise ValueError(
            f"{argument}: has values beyond the range of {np.dtype(dtype).name}; "
            "scale them or use dtype='float64'"
        )
    return converted


def _default_gamma(X, argument="X") -> float:
    """``1 / (n_features · Var(X))`` like ``SVC(gamma="scale")``; 1 for constant X."""
    with np.errstate(over="ignore", invalid="ignore"):
        variance = float(X.var(dtype=np.float64))
    if not np.isfinite(variance):
        raise ValueError(f"{argument}: the variance of the features overflows float64; scale the features")
    gamma = 1.0 / (X.shape[1] * variance) if variance > 0 else 1.0
    return gamma if np.isfinite(gamma) else 1.0  # subnormal variance: X is constant too


def _check_overflow(K, argument="X"):
    """A built-in kernel of finite X is finite unless its entries overflowed the dtype."""
    # One reduction with no m×m temporary: NaN and inf propagate to the sum.
    with np.errstate(over="ignore", invalid="ignore"):
        total = K.sum(dtype=np.float64)
    if not np.isfinite(total):
        raise ValueError(
            f"{argument}: the kernel matrix overflows {K.dtype.name}; scale the features"
            + (" or use dtype='float64'" if K.dtype == np.float32 else "")
        )
    return K


def _check_callable_output(K, shape):
    """A callable kernel's output as a float64 array, checked of ``shape`` and finite."""
    if sparse.issparse(K):  # densified, as SVC does with a callable kernel's output
        K = K.toarray()
    try:
        K = np.asarray(K)
        if K.dtype.kind not in "biufO":  # strings, complex numbers, dates
            raise TypeError
        K = K.astype(np.float64)
    except (TypeError, ValueError):
        kind = f"an array of dtype {K.dtype}" if isinstance(K, np.ndarray) else type(K).__name__
        raise ValueError(f"kernel: the callable must return a matrix of real numbers, got {kind}") from None
    if K.shape != shape:
        raise ValueError(f"kernel: the callable must return a matrix of shape {shape}, got {K.shape}")
    if not np.all(np.isfinite(K)):
        raise ValueError("kernel: the callable returned NaN or infinite values")
    return K


def precomputed_training_kernel(K, dtype, k, selections, argument="X"):
    """A precomputed training kernel in ``dtype``, checked square, finite, symmetric and
    PSD; the caller's array when it has ``dtype`` already, else a copy, counted in the
    memory check of a fit of ``k`` picks for each of ``selections`` problems."""
    m = K.shape[0]
    copy_bytes = 0 if np.asarray(K).dtype == dtype else m * m * np.dtype(dtype).itemsize
    check_fit_fits(m, k, selections, dtype, copy_bytes, argument=argument)
    K = _convert(K, dtype, argument)
    check_precomputed_kernel(K, argument=argument)
    return K


def precomputed_columns(K, columns, n_train, argument="X"):
    """The ``columns`` (training indices) of ``K``, a precomputed kernel between new
    points and the ``n_train`` training points."""
    if K.ndim != 2 or K.shape[1] != n_train:
        raise ValueError(
            f"{argument}: a precomputed kernel must have {n_train} columns (training samples), got shape {K.shape}"
        )
    return K[:, columns]


def kernel_between(X, Z, kernel, params, dtype, threads, argument="X"):
    """``K(X, Z)`` in ``dtype`` for a built-in kernel name (``params``: ``gamma``,
    ``degree``, ``coef0``) or a callable; ``Z=None`` is the training kernel of ``X``,
    exactly symmetric for a built-in kernel and checked symmetric and PSD for a callable;
    ``argument`` names ``X`` in the messages."""
    if callable(kernel):
        other = X if Z is None else Z
        K = _check_callable_output(kernel(X, other), (len(X), len(other)))
        K = _convert(K, dtype, "kernel")
        if Z is None:
            check_precomputed_kernel(K, argument="kernel")
        return K
    arrays = [_convert(X, dtype, argument)] + ([] if Z is None else [_convert(Z, dtype, argument)])
    return _check_overflow(_core.kernel_matrix(*arrays, kernel=kernel, **params, n_threads=threads), argument)


def validate_input(estimator, X, reset, y="no_validation", **options):
    """scikit-learn's ``validate_data`` of ``X`` (and ``y``, even when None, so that
    ``fit(X, None)`` gets scikit-learn's "requires y"), its message prefixed with the
    argument at fault unless it starts with its name."""
    dtype = [np.float64, np.float32]
    try:
        if not (isinstance(y, str) and y == "no_validation"):
            return validate_data(estimator, X, y, dtype=dtype, ensure_min_samples=2, reset=reset, **options)
        return validate_data(estimator, X, dtype=dtype, reset=reset, **options)
    except (TypeError, ValueError) as error:
        message = str(error)
        if re.match(r"[Xy]\b", message):  # "X has 2 features, …", "y should be a 1d array, …"
            raise
        if "inconsistent numbers of samples" in message:
            argument = "X, y"
        else:  # "Input y contains NaN", "… requires y to be passed …"
            argument = "y" if re.search(r"\by\b", message) and not re.search(r"\bX\b", message) else "X"
        raise type(error)(f"{argument}: {message}") from error


def resolve_gamma(gamma, kernel_name, X, dtype, argument="X") -> float:
    """The ``gamma`` a fit uses: the given one, ``gamma="scale"`` from ``X`` when None for
    ``rbf`` and ``poly``, and 1 (unused) for the other kernels."""
    if gamma is not None:
        return float(gamma)
    if kernel_name not in ("rbf", "poly"):
        return 1.0  # not used by the linear, precomputed and callable kernels
    resolved = _default_gamma(X, argument)
    if dtype == np.float32 and resolved > float(np.finfo(np.float32).max):
        # Not the user's gamma: the data's scale made it, so the data is named.
        raise ValueError(
            f"{argument}: its variance is so small that gamma='scale' ({resolved:.3g}) is beyond the "
            "range of float32; scale the features or use dtype='float64'"
        )
    return resolved
