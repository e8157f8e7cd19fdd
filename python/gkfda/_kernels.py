"""Kernel and parameter helpers shared by the estimators (``GreedyKFDA`` and the
matching-pursuit family): the kernels and their parameters' rules, parameter constraints
that refuse booleans, dtype conversion that refuses overflow, scikit-learn's
``gamma="scale"`` and ``"auto"``, and checks of kernel values.

The core computes ``rbf``, ``linear`` and ``poly`` (integral degree); scikit-learn's other
kernels (``sigmoid``, ``laplacian``, ``cosine``, ``chi2``, ``additive_chi2``, and ``poly``
of a fractional degree) go through ``sklearn.metrics.pairwise.pairwise_kernels``; a model
with one of those can be neither saved to a model file nor exported to ONNX."""

from __future__ import annotations

import re
import weakref
from numbers import Integral, Real

import numpy as np
from scipy import sparse
from sklearn.metrics.pairwise import pairwise_kernels
from sklearn.utils._param_validation import Interval, StrOptions, validate_parameter_constraints
from sklearn.utils.validation import validate_data

from . import _core
from . import _sparse
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


#: scikit-learn's name of a kernel the core computes under another name.
_ALIASES = {"polynomial": "poly"}
#: The parameters each named kernel uses (scikit-learn's ``KERNEL_PARAMS``); the core
#: computes the first three, ``pairwise_kernels`` the others.
_USES = {
    "rbf": ("gamma",), "linear": (), "poly": ("gamma", "degree", "coef0"),
    "sigmoid": ("gamma", "coef0"), "laplacian": ("gamma",), "cosine": (), "chi2": ("gamma",), "additive_chi2": (),
}
#: Every kernel name an estimator takes, besides ``"precomputed"`` and a callable.
KERNEL_NAMES = (*_USES, *_ALIASES)
#: The kernel parameters' rules, the same for every estimator. ``None`` is the kernel's
#: own default (``degree=3``, ``coef0=1``; ``gamma``: see :func:`resolve_gamma`).
KERNEL_CONSTRAINTS: dict = {
    "kernel": [StrOptions({*KERNEL_NAMES, "precomputed"}), callable],
    "gamma": [_Number(Real, 0, np.inf, closed="neither"), StrOptions({"scale", "auto"}), None],
    "degree": [_Number(Real, 1, _LARGEST_DEGREE, closed="both"), None],
    "coef0": [_Number(Real, -np.inf, np.inf, closed="neither"), None],
}
_DEFAULTS = {"degree": 3, "coef0": 1.0}


def canonical_kernel(kernel) -> str:
    """The kernel's name: ``"callable"``, ``"precomputed"``, or its name with aliases resolved."""
    return "callable" if callable(kernel) else _ALIASES.get(kernel, kernel)


def core_kernel(kernel, degree) -> str | None:
    """The core's name of the kernel when the core computes it (``poly`` only of an
    integral degree), else None."""
    name = canonical_kernel(kernel)
    if name in ("rbf", "linear") or name == "poly" and float(_DEFAULTS["degree"] if degree is None else degree).is_integer():
        return name
    return None


def check_kernel_arguments(estimator):
    """Nystroem's rules for the kernel's parameters: none of ``gamma``, ``degree`` and
    ``coef0`` with a callable or precomputed kernel (a callable takes its own from
    ``kernel_params``), and in ``kernel_params`` of a named kernel only the parameters it
    uses, each valid as the constructor's."""
    kernel = estimator.kernel
    kernel_params = getattr(estimator, "kernel_params", None)
    name = type(estimator).__name__
    if callable(kernel) or kernel == "precomputed":
        given = [parameter for parameter in ("gamma", "degree", "coef0") if getattr(estimator, parameter) is not None]
        if given:
            raise ValueError(
                f"{given[0]}: don't pass gamma, coef0 or degree to {name} with a callable or precomputed kernel"
                + ("; a callable takes its parameters from kernel_params" if hasattr(estimator, "kernel_params") else "")
            )
        if kernel == "precomputed" and kernel_params:
            raise ValueError(f"kernel_params: a precomputed kernel takes no parameters, got {sorted(kernel_params)}")
        return
    if kernel_params:
        uses = _USES[canonical_kernel(kernel)]
        unused = sorted(set(kernel_params) - set(uses))
        if unused:
            takes = ", ".join(uses) if uses else "no parameters"
            raise ValueError(f"kernel_params: the {kernel!r} kernel takes {takes}; got {unused}")
        validate_parameter_constraints(
            {parameter: KERNEL_CONSTRAINTS[parameter] for parameter in kernel_params}, kernel_params,
            caller_name=f"{name}'s kernel_params",
        )


def given_kernel_parameter(estimator, parameter):
    """``gamma``, ``degree`` or ``coef0`` as given: the constructor's, else that of
    ``kernel_params`` (as Nystroem), else None."""
    value = getattr(estimator, parameter)
    if value is None and not callable(estimator.kernel):
        value = (getattr(estimator, "kernel_params", None) or {}).get(parameter)
    return value


def kernel_parameters(estimator, gamma) -> dict:
    """What :func:`kernel_between` takes of a fitted estimator's kernel: its ``gamma`` (as
    resolved at fit), ``degree`` and ``coef0`` (``None``: the kernel's defaults), and a
    callable's ``kernel_params``."""
    params = {"gamma": gamma}
    for parameter, default in _DEFAULTS.items():
        value = given_kernel_parameter(estimator, parameter)
        params[parameter] = default if value is None else value
    if float(params["degree"]).is_integer():
        params["degree"] = int(params["degree"])
    params["coef0"] = float(params["coef0"])
    if callable(estimator.kernel):
        params["kernel_params"] = dict(getattr(estimator, "kernel_params", None) or {})
    return params


def portable_kernel(estimator, gamma, action) -> dict:
    """The kernel as a model file and an ONNX graph hold it (``kernel``, ``gamma``,
    ``degree``, ``coef0``); a ValueError naming ``kernel`` for one the core does not
    compute (``action``: what cannot be done)."""
    kernel = estimator.kernel
    params = kernel_parameters(estimator, gamma)
    if kernel == "precomputed":
        name = "precomputed"
    else:
        name = None if callable(kernel) else core_kernel(kernel, params["degree"])
        if name is None:
            shown = "a callable" if callable(kernel) else repr(kernel)
            if canonical_kernel(kernel) == "poly":
                shown = f"{shown} of the fractional degree {params['degree']!r}"
            raise ValueError(
                f"kernel: a model with {shown} kernel cannot be {action}: only the built-in kernels rbf, linear "
                "and poly (integral degree) can, or kernel='precomputed' with the kernel computed beforehand"
            )
    degree = params["degree"]
    return {"kernel": name, "gamma": float(gamma), "degree": int(degree), "coef0": float(params["coef0"])}


def _convert(A, dtype, argument):
    """``A`` as a C-contiguous array of ``dtype`` (a CSR ``A``: its values, the index arrays
    shared), refusing values that overflow it."""
    if sparse.issparse(A):
        if A.dtype == dtype:
            return _sparse.as_dtype(A, dtype)
        values = None
    else:
        A = np.asarray(A)
        if A.dtype == dtype:
            return np.ascontiguousarray(A)
    # A is finite (checked before); one reduction finds an overflow without an m×m temporary.
    with np.errstate(over="ignore", invalid="ignore"):
        if sparse.issparse(A):
            converted = _sparse.as_dtype(A, dtype)
            values = converted.data
        else:
            converted = values = np.ascontiguousarray(A, dtype=dtype)
        total = values.sum(dtype=np.float64)
    if not np.isfinite(total):
        raise ValueError(
            f"{argument}: has values beyond the range of {np.dtype(dtype).name}; "
            "scale them or use dtype='float64'"
        )
    return converted


def _default_gamma(X, argument="X") -> float:
    """``1 / (n_features · Var(X))`` like ``SVC(gamma="scale")``; 1 for constant X."""
    with np.errstate(over="ignore", invalid="ignore"):
        variance = _sparse.variance(X) if sparse.issparse(X) else float(X.var(dtype=np.float64))
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
        raise ValueError(kernel_overflow_message(argument, K.dtype))
    return K


def kernel_overflow_message(argument, dtype) -> str:
    """The refusal of a training kernel whose values overflow ``dtype`` (dense or factored)."""
    dtype = np.dtype(dtype)
    return (f"{argument}: the kernel matrix overflows {dtype.name}; scale the features"
            + (" or use dtype='float64'" if dtype == np.float32 else ""))


def finite_outputs(values, argument="X"):
    """``values``, a model's outputs for the rows of ``argument`` (whose kernel values are
    finite), or a ValueError blaming the model when one is not finite: a model whose
    coefficients are huge (a crafted or damaged file) overflows on ordinary inputs."""
    finite = np.isfinite(values)
    if not finite.all():
        rows = finite.reshape(len(values), -1).all(axis=1)
        _refuse_outputs(int(np.flatnonzero(~rows)[0]), argument)
    return values


def _refuse_outputs(row, argument):
    raise ValueError(
        f"{argument}: row {row}: the model's outputs overflow float64 though its kernel values are finite: "
        "the model's coefficients are too large"
    )


# Rows of kernel values computed at a time when an expansion's overflow is traced to its cause.
_TRACED_ROWS = 1024


# A model's bases indexed by feature for sparse rows (`_core.PreparedPoints`), kept while
# their array lives, at most `_PREPARED_LIMIT` of them: indexing k dense bases of width d
# costs O(k·d), which would be nearly all of a one-row prediction of wide sparse rows. The
# key is the array itself (a fitted model never changes its bases' rows in place).
_PREPARED = {}
_PREPARED_LIMIT = 16


def prepared_points(points, kernel, gamma, degree, coef0):
    """``points`` indexed for sparse rows with the kernel's parameters, from the cache when
    the same array was prepared with them before."""
    params = dict(kernel=kernel, gamma=float(gamma), degree=int(degree), coef0=float(coef0))
    key = id(points)
    cached = _PREPARED.get(key)
    if cached is not None and cached[0]() is points and cached[1] == params:
        return cached[2]
    prepared = _core.PreparedPoints(points, **params)
    reference = weakref.ref(points, lambda _, key=key: _PREPARED.pop(key, None))
    while len(_PREPARED) >= _PREPARED_LIMIT:
        _PREPARED.pop(next(iter(_PREPARED)), None)
    _PREPARED[key] = (reference, params, prepared)
    return prepared


def kernel_expansion(X, points, weights, bias, *, kernel, gamma, degree, coef0, link="identity", n_threads=1,
                     argument="X"):
    """The core's ``Σ_j weights[j] κ(x, points_j) + bias`` (or with ``link`` the class
    probabilities) of the finite rows of ``X`` (sparse rows against the points indexed once,
    :func:`prepared_points`). The core refuses outputs that are not finite as an overflow of
    ``X``'s kernel values; where those are finite the model's outputs are blamed instead."""
    try:
        if sparse.issparse(X) and points.shape[0]:
            prepared = prepared_points(points, kernel, gamma, degree, coef0)
            return prepared.expansion(X, weights, bias, link=link, n_threads=n_threads)
        return _core.kernel_expansion(X, points, weights, bias, kernel=kernel, gamma=gamma, degree=degree,
                                      coef0=coef0, link=link, n_threads=n_threads)
    except ValueError as error:
        if "overflow" not in str(error) or not np.isfinite(X.data if sparse.issparse(X) else X).all():
            raise
        for start in range(0, X.shape[0], _TRACED_ROWS):
            K = _core.kernel_matrix(X[start : start + _TRACED_ROWS], points, kernel=kernel, gamma=gamma,
                                    degree=degree, coef0=float(coef0), n_threads=n_threads)
            if not np.isfinite(K).all():
                raise  # the kernel values overflow: the core's message says so
            with np.errstate(all="ignore"):
                values = np.asarray(K, dtype=np.float64) @ weights + bias
            rows = np.isfinite(values).all(axis=1)
            if not rows.all():
                _refuse_outputs(start + int(np.flatnonzero(~rows)[0]), argument)
        raise


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


def precomputed_training_kernel(K, dtype, k, selections, argument="X", n_threads=1):
    """A precomputed training kernel in ``dtype``, checked square, finite, symmetric and
    PSD (on ``n_threads`` threads); the caller's array when it has ``dtype`` already, else a
    copy, counted in the memory check of a fit of ``k`` picks for each of ``selections``
    problems."""
    m = K.shape[0]
    copy_bytes = 0 if np.asarray(K).dtype == dtype else m * m * np.dtype(dtype).itemsize
    check_fit_fits(m, k, selections, dtype, copy_bytes, argument=argument)
    K = _convert(K, dtype, argument)
    check_precomputed_kernel(K, argument=argument, n_threads=n_threads)
    return K


def precomputed_columns(K, columns, n_train, argument="X"):
    """The ``columns`` (training indices) of ``K``, a precomputed kernel between new
    points and the ``n_train`` training points."""
    if K.ndim != 2 or K.shape[1] != n_train:
        raise ValueError(
            f"{argument}: a precomputed kernel must have {n_train} columns (training samples), got shape {K.shape}"
        )
    return K[:, columns]


class NotPositiveSemiDefinite(ValueError):
    """A named kernel (not a callable's, not a precomputed one) whose training kernel is not
    positive semi-definite; a class of its own so that a caller can fall back without
    matching the message."""


def kernel_between(X, Z, kernel, params, dtype, threads, argument="X", rows=False):
    """``K(X, Z)`` in ``dtype`` for a kernel name (``params``: ``gamma``, ``degree``,
    ``coef0``, and a callable's ``kernel_params``) or a callable; ``Z=None`` is the
    training kernel of ``X``, exactly symmetric for the core's kernels and checked
    symmetric and PSD for the others; ``argument`` names ``X`` in the messages. A callable
    is ``kernel(A, B)`` of two matrices (as ``SVC``'s), or with ``rows`` ``kernel(a, b)``
    of two rows (as ``Nystroem``'s, through ``pairwise_kernels``)."""
    name = None if callable(kernel) else core_kernel(kernel, params["degree"])
    if name is None:
        other = X if Z is None else Z
        if callable(kernel):
            extra = params.get("kernel_params", {})
            values = pairwise_kernels(X, Z, metric=kernel, **extra) if rows else kernel(X, other, **extra)
            K = _check_callable_output(values, (X.shape[0], other.shape[0]))
        else:
            parameters = {parameter: params[parameter] for parameter in ("gamma", "degree", "coef0")}
            K = np.asarray(pairwise_kernels(X, Z, metric=canonical_kernel(kernel), filter_params=True, **parameters),
                           dtype=np.float64)
            if not np.all(np.isfinite(K)):
                hint = " (a fractional degree needs gamma x·z + coef0 ≥ 0)" if canonical_kernel(kernel) == "poly" else ""
                raise ValueError(
                    f"{argument}: its {kernel!r} kernel has NaN or infinite values; scale the features or change "
                    f"the kernel's parameters{hint}"
                )
        K = _convert(K, dtype, "kernel")
        if Z is None:
            try:
                check_precomputed_kernel(K, argument="kernel")
            except ValueError as error:
                if callable(kernel):
                    raise
                # additive_chi2 is never PSD, sigmoid not always: the greedy criteria need a Gram matrix.
                detail = str(error).split("; ", 1)[-1]
                raise NotPositiveSemiDefinite(
                    f"kernel: the {kernel!r} kernel of {argument} is not positive semi-definite ({detail}), "
                    "which the greedy selection needs"
                ) from None
        return K
    arrays = [_convert(X, dtype, argument)] + ([] if Z is None else [_convert(Z, dtype, argument)])
    core = dict(kernel=name, gamma=params["gamma"], degree=params["degree"], coef0=float(params["coef0"]))
    if sparse.issparse(arrays[0]) and Z is not None and isinstance(arrays[1], np.ndarray) and len(arrays[1]):
        # Sparse rows against a model's dense points (a transform): the points indexed once.
        K = prepared_points(arrays[1], **core).kernel(arrays[0], n_threads=threads)
    else:
        K = _core.kernel_matrix(*arrays, **core, n_threads=threads)
    return _check_overflow(K, argument)


def kernel_diagonal(X, kernel, params, rows=False):
    """``κ(x, x)`` of each row of ``X`` (float64), for a kernel :func:`kernel_between` takes."""
    name = canonical_kernel(kernel)
    if not sparse.issparse(X):
        X = np.asarray(X, dtype=np.float64)
    if name in ("rbf", "laplacian", "chi2"):
        return np.ones(X.shape[0])
    if name in ("linear", "poly"):
        squared = _sparse.row_squared_norms(X) if sparse.issparse(X) else np.einsum("ij,ij->i", X, X)
        return squared if name == "linear" else (params["gamma"] * squared + params["coef0"]) ** params["degree"]
    return np.array([float(kernel_between(X[i:i + 1], X[i:i + 1], kernel, params, np.float64, 1, rows=rows)[0, 0])
                     for i in range(X.shape[0])])


def validate_input(estimator, X, reset, y="no_validation", **options):
    """scikit-learn's ``validate_data`` of ``X`` (and ``y``, even when None, so that
    ``fit(X, None)`` gets scikit-learn's "requires y"), its message prefixed with the
    argument at fault unless it starts with its name. A sparse ``X`` (any SciPy format) is
    taken as a canonical CSR (:func:`_sparse.canonical_csr`) where the estimator's kernel
    takes one, else refused with scikit-learn's message."""
    dtype = [np.float64, np.float32]
    options.setdefault("accept_sparse", "csr" if _sparse.accepts_sparse(estimator.kernel) else False)
    try:
        if not (isinstance(y, str) and y == "no_validation"):
            validated = validate_data(estimator, X, y, dtype=dtype, ensure_min_samples=2, reset=reset, **options)
        else:
            validated = validate_data(estimator, X, dtype=dtype, reset=reset, **options)
    except (TypeError, ValueError) as error:
        message = str(error)
        if re.match(r"[Xy]\b", message):  # "X has 2 features, …", "y should be a 1d array, …"
            raise
        if "inconsistent numbers of samples" in message:
            argument = "X, y"
        else:  # "Input y contains NaN", "… requires y to be passed …"
            argument = "y" if re.search(r"\by\b", message) and not re.search(r"\bX\b", message) else "X"
        raise type(error)(f"{argument}: {message}") from error
    if isinstance(validated, tuple):
        X, y = validated
        return (_sparse.canonical_csr(X) if sparse.issparse(X) else X), y
    return _sparse.canonical_csr(validated) if sparse.issparse(validated) else validated


def uses_gamma(kernel) -> bool:
    return not callable(kernel) and "gamma" in _USES.get(canonical_kernel(kernel), ())


def resolve_gamma(gamma, kernel, X, dtype, argument="X", default="scale") -> float:
    """The ``gamma`` a fit uses: a number as given; ``"scale"``, ``1 / (n_features ·
    X.var())``, and ``"auto"``, ``1 / n_features``, as ``SVC``'s; ``None`` is ``default``
    (``"scale"`` for the classifiers, ``"auto"``, the kernel's own default, for
    ``GreedyNystroem``), but 1 for ``chi2``, as scikit-learn's; 1 (unused) for kernels
    without a ``gamma``."""
    if gamma is not None and not isinstance(gamma, str):
        return float(gamma)
    if not uses_gamma(kernel):
        return 1.0  # not used by the linear, cosine, additive_chi2, precomputed and callable kernels
    if gamma is None:
        if canonical_kernel(kernel) == "chi2":
            return 1.0
        gamma = default
    if gamma == "auto":
        return 1.0 / X.shape[1]
    resolved = _default_gamma(X, argument)
    if dtype == np.float32 and resolved > float(np.finfo(np.float32).max):
        # Not the user's gamma: the data's scale made it, so the data is named.
        raise ValueError(
            f"{argument}: its variance is so small that gamma='scale' ({resolved:.3g}) is beyond the "
            "range of float32; scale the features or use dtype='float64'"
        )
    return resolved
