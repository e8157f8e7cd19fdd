"""The matching-pursuit family: kernel matching pursuit, sparse kernel PCA and CCA, and a
greedy Nyström transformer.

Each estimator chooses training points greedily with the Rust engine
(``gkfda._core.pursuit_select``, or ``greedy_select`` for the supervised landmarks of
:class:`GreedyNystroem`): score every candidate column of the deflated kernel, take the
best, deflate, repeat. The final model is then fitted on the ORIGINAL kernel's columns of
the chosen points, so a prediction costs one kernel evaluation per chosen point.

- :class:`KernelMatchingPursuit`: least-squares regression on ``k`` kernel columns, and
  its sample-compression bound (:func:`matching_pursuit_bound`).
- :class:`SparseKernelPCA`: the subspace spanned by ``n_components`` training points
  in feature space, its Nyström features and its compression bound for every prefix.
- :class:`SparseKernelCCA`: canonical correlation of two views, each on the Nyström
  features of the same ``k`` paired points.
- :class:`GreedyNystroem`: scikit-learn's ``Nystroem`` with landmarks chosen greedily.

Examples
--------
>>> from gkfda import matching_pursuit_bound
>>> round(matching_pursuit_bound(1000, 10, 0, delta=0.05), 6)
0.43515
"""

from __future__ import annotations

import math
import re
import warnings
from numbers import Integral, Real

import numpy as np
from scipy.linalg import cholesky, eigh, solve_triangular, svd
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, RegressorMixin, TransformerMixin, _fit_context
from sklearn.utils import Bunch, check_random_state
from sklearn.utils._set_output import _wrap_data_with_container
from sklearn.utils._param_validation import Options, StrOptions, validate_params
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_array, check_is_fitted, column_or_1d

from . import _core
from ._core import CRITERIA, DEFLATIONS
from ._kernels import (
    _LARGEST_THREADS,
    _count,
    _Number,
    KERNEL_CONSTRAINTS,
    check_kernel_arguments,
    core_kernel,
    given_kernel_parameter,
    kernel_between,
    kernel_diagonal,
    kernel_parameters,
    _convert,
    precomputed_columns,
    precomputed_training_kernel,
    resolve_gamma,
    validate_input,
)
from ._factor import DEFAULT_FACTOR_RANK, POOLS, SOLVERS, factor_width, resolved_solver, training_factor
from ._validation import (
    available_memory, check_factored_fit_fits, check_fit_fits, check_full_state, encoded_classes, fit_working_bytes,
    thread_count,
)

__all__ = [
    "KernelMatchingPursuit",
    "SparseKernelPCA",
    "SparseKernelCCA",
    "GreedyNystroem",
    "matching_pursuit_bound",
]

_DTYPES = ("float64", "float32")


def _select(method, K, k, threads, **options):
    """The engine's greedy selection, on ``K`` or (``K`` None) on the kernel ``ΦΦ'`` of
    ``options["factor"]``: ``(indices, scores, stopped_early)``."""
    if method != "pca" and K is not None:  # pivoted Cholesky squares no column
        _check_squares(K)
        if "second_kernel" in options:
            _check_squares(options["second_kernel"], "y")
    indices, scores, stopped_early, _ = _core.pursuit_select(method, K, int(k), n_threads=threads, **options)
    return np.asarray(indices, dtype=np.int64), np.asarray(scores, dtype=np.float64), bool(stopped_early)


def _check_squares(K, argument="X"):
    """Refuse a kernel whose columns' squared norms overflow its dtype: the scores of every
    criterion but ``pca`` square them, and with infinite scores no column is admissible (the
    selection would stop at once, blaming the span of the data)."""
    m = K.shape[0]
    if K.size == 0:
        return
    largest = max(float(K.max()), -float(K.min()))
    if largest > math.sqrt(float(np.finfo(K.dtype).max) / m):
        raise ValueError(
            f"{argument}: its kernel has values up to {largest:.3g}, whose squares summed over the {m} samples "
            f"overflow {K.dtype.name}; scale the kernel (or the features)"
            + (" or use dtype='float64'" if K.dtype == np.float32 else "")
        )


@validate_params(
    {
        "m": [_count()],
        "k": [_count(0)],
        "t": [_count(0)],
        "delta": [_Number(Real, 0, 1, closed="neither")],
    },
    prefer_skip_nested_validation=True,
)
def matching_pursuit_bound(m, k, t, delta=0.05):
    """Sample-compression bound on the probability ``P(|f(x) − y| > α)`` of a function
    fitted on the span of ``k`` of ``m`` training points (Hussain & Shawe-Taylor,
    Theorem 4), with ``t`` training points outside those ``k`` whose error exceeds ``α``.

    ``(2/(m−k−t)) [(k+1) log₂(4e(m−k−t)/(k+1)) + k log₂(em/k) + t log₂(e(m−k)/t)
    + log₂(2m²/δ)]``, holding with probability ``1 − δ`` over the training set for ``α``
    fixed before seeing it; terms with ``k = 0`` or ``t = 0`` are 0. The logarithms are
    base 2 (the bound comes from ``2^{−ε(m−k−t)/2}``). Values of 1 or more say nothing;
    ``inf`` when ``m − k − t ≤ 0``.

    Examples
    --------
    >>> from gkfda import matching_pursuit_bound
    >>> [round(matching_pursuit_bound(*args), 6) for args in [(1000, 10, 50), (10000, 20, 100)]]
    [1.068261, 0.264609]
    """
    rest = m - k - t
    if rest <= 0:
        return math.inf
    total = (k + 1) * math.log2(4 * math.e * rest / (k + 1)) + math.log2(2 * m * m / delta)
    if k > 0:
        total += k * math.log2(math.e * m / k)
    if t > 0:
        total += t * math.log2(math.e * (m - k) / t)
    return 2.0 * total / rest


def _cholesky(K_sub, argument="X"):
    """Lower ``L`` with ``L L' = K_sub`` (float64); a jitter of 1e-10 of the mean diagonal
    where rounding (float32 kernels) left the chosen points' kernel not quite positive.
    ``argument`` names the kernel's source in the message of an indefinite one."""
    K_sub = np.asarray(K_sub, dtype=np.float64)
    scale = float(np.mean(np.diagonal(K_sub))) if K_sub.size else 1.0
    for jitter in (0.0, 1e-10, 1e-8, 1e-6):
        try:
            return cholesky(K_sub + jitter * scale * np.eye(len(K_sub)), lower=True)
        except np.linalg.LinAlgError:
            continue
    # A precomputed or callable kernel can pass the checks of its 2×2 minors and still be indefinite.
    raise ValueError(
        f"{argument}: the kernel must be positive semi-definite, but its submatrix of the {len(K_sub)} "
        "chosen points has no Cholesky factor"
    )


def _features(L, cross):
    """Nyström features ``L⁻¹ k(x)`` of the rows of ``cross = K(X, chosen)``."""
    return solve_triangular(L, np.asarray(cross, dtype=np.float64).T, lower=True).T


def _sign_by_largest(V):
    """Columns of ``V`` with their largest-magnitude entry positive (deterministic signs)."""
    rows = np.argmax(np.abs(V), axis=0)
    return V * np.where(V[rows, np.arange(V.shape[1])] < 0, -1.0, 1.0)


class _KernelPursuit(BaseEstimator):
    """What the family shares: the kernel parameters, validation and the training kernel."""

    _kernel_constraints: dict = {
        **KERNEL_CONSTRAINTS,
        "dtype": [
            StrOptions(set(_DTYPES)),
            Options(type, {float, np.float64, np.float32}),
            Options(np.dtype, {np.dtype(name) for name in _DTYPES}),
        ],
        # Any non-zero integer: negative counts back from the number of cores (joblib's way).
        "n_jobs": [_Number(Integral, -_LARGEST_THREADS, -1, closed="both"), _count(1, _LARGEST_THREADS), None],
    }
    # GreedyKFDA's: the same names, values and defaults.
    _solver_constraints: dict = {
        "solver": [StrOptions(set(SOLVERS))],
        "factor_rank": [_count()],
        "factor_pool": [StrOptions(set(POOLS))],
        "random_state": ["random_state"],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Cross-validation then cuts a precomputed kernel into K[train, train] and K[test, train].
        tags.input_tags.pairwise = self._precomputed()
        return tags

    def _precomputed(self):
        return isinstance(self.kernel, str) and self.kernel == "precomputed"

    def _dtype(self):
        return np.dtype(self.dtype).type

    def _threads(self):
        return thread_count(self.n_jobs)

    def _kernel_name(self):
        return "callable" if callable(self.kernel) else self.kernel

    def _blamed(self, argument="X"):
        """The argument a degenerate training kernel is blamed on: the callable, else the data."""
        return "kernel" if callable(self.kernel) else argument

    # gamma=None: "scale", as SVC's (GreedyNystroem: Nystroem's, the kernel's own default).
    _gamma_of_none = "scale"
    # A callable is SVC's kernel(A, B) of two matrices (GreedyNystroem: Nystroem's, of two rows).
    _callable_rows = False

    def _kernel_params(self):
        return kernel_parameters(self, self._gamma)

    def _resolve_gamma(self, X, argument="X"):
        """The ``gamma`` of a fit on ``X`` (a view), once the kernel's parameters are checked."""
        check_kernel_arguments(self)
        gamma = given_kernel_parameter(self, "gamma")
        return resolve_gamma(gamma, self.kernel, X, self._dtype(), argument, default=self._gamma_of_none)

    def _training_kernel(self, X, k, kernels=1, argument="X"):
        """The training kernel of ``X`` (``X`` itself, checked, when precomputed); first
        ``gamma``, and the memory check of a fit with ``kernels`` m×m matrices and ``k`` picks."""
        dtype = self._dtype()
        self._gamma = self._resolve_gamma(X, argument)
        if self._precomputed():
            return precomputed_training_kernel(X, dtype, k, kernels, argument, n_threads=self._threads())
        m = X.shape[0]
        itemsize = np.dtype(dtype).itemsize
        if core_kernel(self.kernel, self._kernel_params()["degree"]) is None:  # float64, then a copy in dtype
            itemsize += 8 if dtype == np.float32 else 0
        check_fit_fits(m, k, kernels, dtype, kernels * m * m * itemsize, argument)
        return kernel_between(X, None, self.kernel, self._kernel_params(), dtype, self._threads(), argument,
                              rows=self._callable_rows)

    def _core_kernel(self):
        """The core's name of the kernel, None for one it does not compute (precomputed, callable)."""
        if callable(self.kernel) or self._precomputed():
            return None
        return core_kernel(self.kernel, given_kernel_parameter(self, "degree"))

    def _resolved_solver(self, m, k):
        """``solver`` for a fit of ``m`` samples and ``k`` picks, by GreedyKFDA's rule."""
        dtype = np.dtype(self._dtype())

        def dense_fits():
            return m * m * dtype.itemsize + fit_working_bytes(m, k, 1, dtype) <= available_memory()

        return resolved_solver(self.solver, self._core_kernel(), self._kernel_name(), m, dense_fits)

    def _training_factor(self, X, k):
        """``Φ`` with ``ΦΦ'`` the training kernel of ``X``, as GreedyKFDA's
        (``training_factor``, in the engine's dtype); first ``gamma``, and the check that
        the factor and ``k`` picks fit in memory."""
        dtype, threads = self._dtype(), self._threads()
        self._gamma = self._resolve_gamma(X)
        X = _convert(X, dtype, "X")
        name = self._core_kernel()
        m, p = len(X), factor_width(name, X.shape[1], len(X), self.factor_rank)
        check_factored_fit_fits(m, p, k, 1, dtype, threads)
        params = {"kernel": name, **self._kernel_params()}
        rng = check_random_state(self.random_state)
        return training_factor(X, dtype, p, self.factor_pool, params, rng, threads)

    def _points(self, X, indices):
        """The training points ``X[indices]`` a model keeps: none of a precomputed kernel,
        whose prediction input already holds their columns."""
        return np.empty((len(indices), 0)) if self._precomputed() else np.array(X[indices])

    def _cross(self, X, support, basis, gamma=None, argument="X"):
        """``K(X, basis)`` as float64, with this fit's kernel (``gamma`` of another view);
        the ``support`` columns of ``X`` when it is a precomputed kernel."""
        if self._precomputed():
            # A precomputed fit's n_features_in_ is its number of training samples.
            return np.asarray(precomputed_columns(X, support, self.n_features_in_, argument), dtype=np.float64)
        params = self._kernel_params() if gamma is None else {**self._kernel_params(), "gamma": gamma}
        return np.asarray(
            kernel_between(X, basis, self.kernel, params, self._dtype(), self._threads(), argument,
                           rows=self._callable_rows),
            dtype=np.float64,
        )

    def _self_kernel(self, X, gamma=None):
        """``κ(x, x)`` of each row of ``X`` (float64)."""
        params = {**self._kernel_params(), "gamma": self._gamma if gamma is None else gamma}
        return kernel_diagonal(X, self.kernel, params, rows=self._callable_rows)

    def _resolved_count(self, name, value, m):
        """``value`` bases, at most ``m`` (lowered with a warning, so a grid works on small folds)."""
        if value > m:
            warnings.warn(
                f"{name}={value} is larger than the number of training samples ({m}): {m} bases are used.",
                UserWarning,
                stacklevel=4,
            )
            return m
        return int(value)

    def _warn_if_short(self, stopped_early, chosen, wanted):
        if stopped_early:
            warnings.warn(
                f"the selection stopped after {chosen} of {wanted} bases: every other training point "
                "is numerically in the span of those chosen. Use a larger gamma or fewer bases.",
                UserWarning,
                stacklevel=4,
            )

    def _check_training_rows(self, n, argument="X"):
        if n != self.n_samples_fit_:
            raise ValueError(
                f"{argument}: the bound needs the training set ({self.n_samples_fit_} samples), got {n} samples"
            )


class KernelMatchingPursuit(RegressorMixin, _KernelPursuit):
    """Kernel matching pursuit (KMP with pre-fitting): least-squares regression on ``k``
    kernel columns chosen greedily.

    Each pick adds the training point whose kernel column most reduces the residual sum of
    squares of the least-squares fit on the columns chosen so far (the column of the
    projection-deflated kernel most aligned with the target), then the final model is the
    least squares of ``y`` on the original kernel's chosen columns:
    ``f(x) = Σ_j coef_j κ(x, x_{support_j}) + intercept``.

    Parameters
    ----------
    k : int, default=50
        Number of kernel columns; lowered, with a warning, to the number of samples.
    kernel : str or callable, default="rbf"
        As :class:`GreedyKFDA`'s: ``rbf``, ``linear``, ``poly`` (alias ``polynomial``),
        ``sigmoid``, ``laplacian``, ``cosine``, ``chi2``, ``additive_chi2``, ``precomputed``,
        or a callable ``kernel(A, B)`` that returns the kernel matrix between the rows of
        ``A`` and ``B``. With ``precomputed``, ``fit``
        and ``loss_bound`` take the ``m×m`` training kernel and ``predict`` takes the
        kernel ``K(X_new, X_train)`` of shape ``(n, m)``, of which it reads the
        ``support_`` columns.
    gamma : float, {"scale", "auto"} or None, default=None
        As :class:`GreedyKFDA`'s: ``None`` is ``"scale"``, ``1 / (n_features * X.var())``.
    degree : float or None, default=None
    coef0 : float or None, default=None
        Degree and constant of ``poly``, ``(gamma x·z + coef0)^degree`` (``None``: 3 and 1),
        and constant of ``sigmoid``. With a callable or precomputed kernel, leave
        ``gamma``, ``degree`` and ``coef0`` None: giving one raises a ValueError.
    fit_intercept : bool, default=False
        Add a constant to the model (not in the original algorithm). The selection then
        matches the centred target, and the final least squares has a constant column.
    dtype : {"float64", "float32"}, default="float64"
        Precision of the kernel matrix and of the selection; the least squares is float64.
    n_jobs : int or None, default=None
        Threads of the kernel and the selection (as ``GreedyKFDA``).
    solver : {"auto", "dense", "factored"}, default="auto"
        As :class:`GreedyKFDA`'s: ``dense`` selects on the ``m×m`` training kernel,
        ``factored`` on a factor ``K ≈ ΦΦ'`` (``Φ`` of ``m × factor_rank``;
        ``kernel="linear"``: ``Φ = X``, exact), O(mp) memory and O(mp) a pick; the model
        is then fitted on the exact kernel columns of the chosen points (``m × k``, never
        ``m×m``). ``auto`` is ``dense`` up to 20,000 samples when the dense kernel fits in
        memory, ``factored`` beyond (docs/scale.md). ``rbf``, ``linear`` and ``poly``
        (integral degree) only: other kernels, precomputed and callable ones, are always
        dense, and ``factored`` with them is a ValueError.
    factor_rank : int, default=1000
        ``p``, the rank of the Nyström factor of ``rbf`` and ``poly`` kernels (at most
        ``n_samples``).
    factor_pool : {"rpcholesky", "greedy", "uniform"}, default="rpcholesky"
        How the factor's pool of ``factor_rank`` points is chosen, as :class:`GreedyKFDA`'s.
    random_state : int, RandomState instance or None, default=None
        Seed of the factor's pool (``solver="factored"`` with ``rbf`` or ``poly``).

    Attributes
    ----------
    support_ : ndarray of shape ``(k_,)``
        Training indices of the chosen columns, in selection order.
    support_vectors_ : ndarray of shape ``(k_, n_features)``
        The chosen training points (shape ``(k_, 0)`` for a precomputed kernel).
    solver_ : {"dense", "factored"}
        The solver the fit used.
    coef_ : ndarray of shape ``(k_,)``
    intercept_ : float
    k_ : int
        Columns used: fewer than ``k`` when every other column became numerically
        dependent on the chosen ones (``stopped_early_``).
    pursuit_scores_ : ndarray of shape ``(k_,)``
        ``|K_t[:, j]'y| / ‖K_t[:, j]‖`` of each pick: its square is the pick's decrease of
        the residual sum of squares.
    stopped_early_ : bool
    n_samples_fit_ : int
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from gkfda import KernelMatchingPursuit
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(2000, 1)); y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=2000)
    >>> model = KernelMatchingPursuit(k=10, gamma=0.5).fit(X, y)
    >>> model.support_.shape, bool(model.score(X, y) > 0.95)
    ((10,), True)

    With probability 95 %, a new point's error exceeds 0.4 with probability at most:

    >>> round(model.loss_bound(X, y, alpha=0.4), 3)
    0.24
    """

    _parameter_constraints: dict = {
        "k": [_count()],
        "fit_intercept": ["boolean"],
        **_KernelPursuit._kernel_constraints,
        **_KernelPursuit._solver_constraints,
    }

    def __init__(self, k=50, kernel="rbf", gamma=None, degree=None, coef0=None, fit_intercept=False,
                 dtype="float64", n_jobs=None, solver="auto", factor_rank=DEFAULT_FACTOR_RANK,
                 factor_pool="rpcholesky", random_state=None):
        self.k = k
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.fit_intercept = fit_intercept
        self.dtype = dtype
        self.n_jobs = n_jobs
        self.solver = solver
        self.factor_rank = factor_rank
        self.factor_pool = factor_pool
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Choose ``k`` columns and fit the least squares on them.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_samples)
            Training data, or the training kernel when ``kernel="precomputed"``.
        y : array-like of shape (n_samples,)
            Real-valued target.

        Returns
        -------
        self
        """
        if y is not None:  # None gets scikit-learn's "requires y to be passed"
            y = _numeric_target(y)
        X, y = validate_input(self, X, reset=True, y=y, y_numeric=True)
        m = X.shape[0]
        k = self._resolved_count("k", self.k, m)
        self.solver_ = self._resolved_solver(m, k)
        target = y - y.mean() if self.fit_intercept else y
        if self.solver_ == "dense":
            K = self._training_kernel(X, k)
            indices, scores, stopped_early = _select(
                "matching", K, k, self._threads(), target=np.ascontiguousarray(target, dtype=K.dtype)
            )
            columns = np.asarray(K[:, indices], dtype=np.float64)
        else:
            factor = self._training_factor(X, k)
            indices, scores, stopped_early = _select(
                "matching", None, k, self._threads(), target=np.ascontiguousarray(target, dtype=factor.dtype),
                factor=factor,
            )
            columns = self._cross(X, indices, X[indices])  # exact, m × k
        self._warn_if_short(stopped_early, len(indices), k)
        if self.fit_intercept:
            means, mean_y = columns.mean(axis=0), y.mean()
            coef = np.linalg.lstsq(columns - means, y - mean_y, rcond=None)[0]
            intercept = float(mean_y - means @ coef)
        else:
            coef, intercept = np.linalg.lstsq(columns, y, rcond=None)[0], 0.0
        self.support_ = indices
        self.support_vectors_ = self._points(X, indices)
        self.coef_ = coef
        self.intercept_ = intercept
        self.k_ = len(indices)
        self.pursuit_scores_ = scores
        self.stopped_early_ = stopped_early
        self.n_samples_fit_ = m
        return self

    def predict(self, X):
        """``Σ_j coef_j κ(x, support_vectors_j) + intercept_`` for each row of ``X``
        (with a precomputed kernel, ``X`` is ``K(X_new, X_train)``: ``(n, n_samples_fit_)``)."""
        check_is_fitted(self)
        X = validate_input(self, X, reset=False)
        return self._cross(X, self.support_, self.support_vectors_) @ self.coef_ + self.intercept_

    def score(self, X, y, sample_weight=None):
        """The coefficient of determination R² of ``predict(X)`` against ``y`` (scikit-learn's)."""
        return super().score(X, _numeric_target(y), sample_weight)

    def loss_bound(self, X, y, alpha, delta=0.05):
        """Bound on ``P(|f(x) − y| > alpha)`` for a new point, from the training set.

        :func:`matching_pursuit_bound` with ``m`` the training set's size, ``k = k_`` and
        ``t`` the training points outside the support whose error exceeds ``alpha``.
        ``alpha`` must be chosen before seeing the data for the bound to hold.

        Parameters
        ----------
        X, y : the training set the model was fitted on (``X``: its kernel when precomputed).
        alpha : float > 0
        delta : float in (0, 1), default=0.05
            The bound holds with probability ``1 − delta``.

        Returns
        -------
        float
        """
        check_is_fitted(self)
        check_full_state(self, "loss_bound")
        _check_bound_arguments(alpha, delta)
        X = validate_input(self, X, reset=False)
        y = _numeric_target(y)  # a NaN would count as no error, and tighten the bound
        if len(y) != len(X):
            raise ValueError(f"y: has {len(y)} values but X has {len(X)} samples")
        self._check_training_rows(len(X))
        errors = np.abs(self.predict(X) - y) > alpha
        errors[self.support_] = False
        return matching_pursuit_bound(self.n_samples_fit_, self.k_, int(errors.sum()), delta)


def _numeric_target(y):
    """A regression target as a 1-D float64 array, refused unless of finite real numbers."""
    try:
        y = column_or_1d(y, warn=True)
    except ValueError as error:  # "y should be a 1d array, …", "Complex data not supported …"
        message = str(error)
        raise ValueError(message if re.match(r"y\b", message) else f"y: {message}") from error
    if y.dtype.kind in "US":
        raise ValueError("y: must be numeric, got strings")
    try:
        y = y.astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"y: must be numeric, got values of dtype {y.dtype}") from None
    if not np.all(np.isfinite(y)):
        raise ValueError("y: must be finite, got NaN or infinity")
    return y


def _check_bound_arguments(alpha, delta):
    if not (isinstance(alpha, Real) and not isinstance(alpha, bool) and 0 < alpha < np.inf):
        raise ValueError(f"alpha: must be a positive number, got {alpha!r}")
    if not (isinstance(delta, Real) and not isinstance(delta, bool) and 0 < delta < 1):
        raise ValueError(f"delta: must be in (0, 1), got {delta!r}")


class SparseKernelPCA(ClassNamePrefixFeaturesOutMixin, TransformerMixin, _KernelPursuit):
    """Sparse kernel PCA: the feature-space subspace spanned by ``n_components`` training
    points chosen greedily.

    Each pick adds the training point whose feature-space direction most reduces the total
    squared distance of the training points to the chosen subspace (the trace of the
    deflated kernel; one step of pivoted Cholesky). The model is that subspace: its
    Nyström features ``z(x) = L⁻¹ k(x)`` (``L L' = K[support_, support_]``), rotated to
    the principal axes of the training features, so that, as in ``KernelPCA``, the first
    column has the largest mean square. As in the original algorithm, nothing is centred:
    the subspace approximates the uncentred second moment.

    Parameters
    ----------
    n_components : int, default=50
        Number of points (and features); lowered, with a warning, to the number of samples.
    kernel, gamma, degree, coef0, dtype, n_jobs
        As :class:`KernelMatchingPursuit`. With ``kernel="precomputed"``, ``fit`` takes the
        ``m×m`` training kernel, and ``transform`` and ``reconstruction_error`` the kernel
        ``K(X_new, X_train)`` of shape ``(n, m)``; ``reconstruction_error`` then needs
        ``self_kernel``, and ``bound_path`` without ``radius`` estimates it from the
        training kernel, with a warning.
    solver, factor_rank, factor_pool, random_state
        As :class:`KernelMatchingPursuit`: with ``factored``, the Cholesky factor of the
        chosen points' kernel and the rotation are computed from their exact kernel columns.

    Attributes
    ----------
    support_ : ndarray of shape ``(n_components_,)``
        Training indices of the chosen points, in selection order.
    support_vectors_ : ndarray of shape ``(n_components_, n_features)``
        The chosen training points (shape ``(n_components_, 0)`` for a precomputed kernel).
    solver_ : {"dense", "factored"}
        The solver the fit used.
    n_components_ : int
        Points used: fewer than ``n_components`` on an early stop (every other point
        numerically in the chosen subspace).
    pursuit_scores_ : ndarray of shape ``(n_components_,)``
        Each pick's decrease of the total squared residual of the training set.
    rotation_ : ndarray of shape ``(n_components_, n_components_)``
        Orthogonal: ``transform(X) = z(X) @ rotation_``.
    explained_variance_ : ndarray of shape ``(n_components_,)``
        Mean square of each feature over the training set, in decreasing order.
    n_samples_fit_, n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from gkfda import SparseKernelPCA
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3))
    >>> pca = SparseKernelPCA(n_components=20, gamma=0.2).fit(X)
    >>> Z = pca.transform(X)
    >>> Z.shape, bool(np.all(np.diff(pca.explained_variance_) <= 0))
    ((200, 20), True)
    >>> bool(pca.reconstruction_error(X) < 0.05)
    True
    >>> path = pca.bound_path(delta=0.05)
    >>> path.bound.shape, bool(np.all(np.diff(path.running_min) <= 0))
    ((20,), True)
    """

    _parameter_constraints: dict = {
        "n_components": [_count()],
        **_KernelPursuit._kernel_constraints,
        **_KernelPursuit._solver_constraints,
    }

    def __init__(self, n_components=50, kernel="rbf", gamma=None, degree=None, coef0=None, dtype="float64",
                 n_jobs=None, solver="auto", factor_rank=DEFAULT_FACTOR_RANK, factor_pool="rpcholesky",
                 random_state=None):
        self.n_components = n_components
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.dtype = dtype
        self.n_jobs = n_jobs
        self.solver = solver
        self.factor_rank = factor_rank
        self.factor_pool = factor_pool
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Choose the points and the features' rotation of ``X`` (the training kernel when
        ``kernel="precomputed"``). ``y`` is ignored.

        Returns
        -------
        self
        """
        X = validate_input(self, X, reset=True, ensure_min_samples=2)
        m = X.shape[0]
        k = self._resolved_count("n_components", self.n_components, m)
        self.solver_ = self._resolved_solver(m, k)
        if self.solver_ == "dense":
            K = self._training_kernel(X, k)
            indices, scores, stopped_early = _select("pca", K, k, self._threads())
            diagonal = np.diagonal(K).astype(np.float64)
        else:
            factor = self._training_factor(X, k)
            indices, scores, stopped_early = _select("pca", None, k, self._threads(), factor=factor)
            diagonal = self._self_kernel(X)
        if len(indices) == 0:  # every diagonal entry, so (PSD) every entry, is 0
            raise ValueError(f"{self._blamed()}: the kernel matrix of the training set is zero: no point can be chosen")
        self._warn_if_short(stopped_early, len(indices), k)
        if self.solver_ == "dense":
            columns = np.asarray(K[:, indices], dtype=np.float64)
        else:  # the exact kernel columns of the chosen points (m × k, never m×m)
            columns = self._cross(X, indices, X[indices])
        self._factor = _cholesky(columns[indices], self._blamed())
        Z = _features(self._factor, columns)
        values, vectors = eigh(Z.T @ Z)
        order = np.argsort(-values, kind="stable")
        self.rotation_ = _sign_by_largest(vectors[:, order])
        self.explained_variance_ = np.maximum(values[order], 0.0) / m
        self.support_ = indices
        self.support_vectors_ = self._points(X, indices)
        self.n_components_ = len(indices)
        self.pursuit_scores_ = scores
        self.stopped_early_ = stopped_early
        self._trace = float(diagonal.sum())
        self._largest_self_kernel = float(diagonal.max())
        self.n_samples_fit_ = m
        return self

    @property
    def _n_features_out(self):
        return self.n_components_

    def transform(self, X):
        """Nyström features of ``X`` on the principal axes: shape ``(n, n_components_)``."""
        check_is_fitted(self)
        X = validate_input(self, X, reset=False)
        return _features(self._factor, self._cross(X, self.support_, self.support_vectors_)) @ self.rotation_

    def reconstruction_error(self, X, self_kernel=None):
        """Mean squared distance ``κ(x, x) − ‖z(x)‖²`` of the rows of ``X`` in feature space
        to the chosen subspace (on the training set, ``trace(K_k) / m``).

        Parameters
        ----------
        X : array-like of shape ``(n, n_features)``, or ``(n, n_samples_fit_)``
            Points, or their kernel ``K(X, X_train)`` when ``kernel="precomputed"``.
        self_kernel : array-like of shape (n,), default=None
            ``κ(x, x)`` of each row of ``X``, which a precomputed cross kernel does not hold
            (on the training set: ``np.diagonal(K)``). Required with ``kernel="precomputed"``;
            refused with the other kernels, whose ``κ(x, x)`` the model computes itself.

        Returns
        -------
        float
        """
        check_is_fitted(self)
        check_full_state(self, "reconstruction_error")
        X = validate_input(self, X, reset=False)
        diagonal = self._checked_self_kernel(X, self_kernel)
        Z = _features(self._factor, self._cross(X, self.support_, self.support_vectors_))
        return float(np.mean(np.maximum(diagonal - np.sum(Z**2, axis=1), 0.0)))

    def _checked_self_kernel(self, X, self_kernel):
        """``κ(x, x)`` of the rows of ``X``: the caller's ``self_kernel`` when precomputed."""
        if not self._precomputed():
            if self_kernel is not None:
                raise ValueError(
                    f"self_kernel: only for kernel='precomputed'; the {self._kernel_name()!r} kernel's "
                    "κ(x, x) is computed from X"
                )
            return self._self_kernel(X)
        if self_kernel is None:
            raise ValueError(
                "self_kernel: required with kernel='precomputed': κ(x, x) of each row of X, which the "
                "kernel between X and the training points does not hold (np.diagonal(K) of a kernel of X)"
            )
        try:
            diagonal = check_array(self_kernel, dtype=np.float64, ensure_2d=False, input_name="self_kernel")
        except (TypeError, ValueError) as error:
            message = str(error)
            raise type(error)(message if "self_kernel" in message else f"self_kernel: {message}") from error
        if diagonal.shape != (len(X),):
            raise ValueError(f"self_kernel: must have one value per row of X ({len(X)}), got shape {diagonal.shape}")
        return diagonal

    def bound_path(self, delta=0.05, radius=None):
        """Sample-compression bound on the expected squared residual of a new point, for the
        subspace of every prefix of the chosen points (Hussain & Shawe-Taylor, Theorem 6 and
        Corollary 1).

        For ``t = 1..n_components_``, with ``Ê(t)`` the mean squared residual of the ``m − t``
        training points outside the first ``t`` chosen ones (the trace of the deflated
        kernel over ``m − t``) and ``L = sup κ(x, x) = radius²`` the range of the squared
        residual::

            Bnd(t) = Ê(t) + sqrt(L² / (2 (m − t)) · [t ln(e m / t) + ln(2 m / δ)])

        With probability ``1 − δ`` the subspace of the first ``t`` points has expected
        residual at most ``min_{s ≤ t} Bnd(s)`` (a larger subspace cannot have a larger
        one), the ``running_min``.

        Parameters
        ----------
        delta : float in (0, 1), default=0.05
        radius : float or None
            ``R``: the largest ``sqrt(κ(x, x))`` over the input space. ``None``: 1 for the
            ``rbf`` kernel; for other kernels the largest over the training set, with a
            warning (the bound then assumes no point lies farther from the origin).

        Returns
        -------
        Bunch with ``n_bases`` (1..n_components_), ``residual`` (Ê), ``bound`` (Bnd),
        ``running_min`` and ``best`` (the ``t`` of the smallest bound).
        """
        check_is_fitted(self)
        check_full_state(self, "bound_path")
        _check_bound_arguments(1.0, delta)
        if radius is None:
            if self.kernel == "rbf":
                radius = 1.0
            else:
                radius = math.sqrt(max(self._largest_self_kernel, 0.0))
                warnings.warn(
                    f"radius=None: estimated as the largest sqrt(K(x, x)) of the training set ({radius:.4g}); "
                    "pass the kernel's radius for a bound that holds",
                    UserWarning,
                    stacklevel=2,
                )
        elif not (isinstance(radius, Real) and not isinstance(radius, bool) and 0 < radius < np.inf):
            raise ValueError(f"radius: must be a positive number, got {radius!r}")
        m = self.n_samples_fit_
        t = np.arange(1, self.n_components_ + 1)
        rest = (m - t).astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            residual = np.maximum(self._trace - np.cumsum(self.pursuit_scores_), 0.0) / rest
            spread = np.sqrt(radius**4 / (2.0 * rest) * (t * np.log(math.e * m / t) + math.log(2.0 * m / delta)))
            bound = np.where(rest > 0, residual + spread, np.inf)
        residual = np.where(rest > 0, residual, 0.0)
        return Bunch(n_bases=t, residual=residual, bound=bound, running_min=np.minimum.accumulate(bound),
                     best=int(t[np.argmin(bound)]))


class SparseKernelCCA(ClassNamePrefixFeaturesOutMixin, TransformerMixin, _KernelPursuit):
    """Sparse kernel CCA: canonical correlation analysis of two views on the Nyström
    features of ``k`` paired training points chosen greedily.

    Each pick adds the pair whose kernel columns in the two (projection-deflated) views
    have the largest cosine, then each view is mapped to its Nyström features on the
    chosen points, and a primal CCA with ``n_components`` directions is solved on them.
    The selection reads the two views' ``m×m`` training kernels: unlike the other estimators
    of the family it has no ``solver="factored"``.

    Parameters
    ----------
    k : int, default=50
        Number of paired points; lowered, with a warning, to the number of samples.
    n_components : int, default=2
        Number of canonical directions, at most ``k``.
    kernel, gamma, degree, coef0
        The kernel of both views, as :class:`KernelMatchingPursuit`; ``gamma=None`` is
        ``1 / (n_features * var)`` of each view separately (``"scale"``; ``"auto"`` is
        ``1 / n_features`` of each view). With ``kernel="precomputed"``
        both views are kernels: ``fit(Kx, Ky)`` takes the two ``m×m`` training kernels, and
        ``transform(Kx_new, Ky_new)`` (and ``score``, ``loss_bound``) the two kernels between
        the new pairs and the training pairs, each of shape ``(n, m)``.
    signed : bool, default=True
        Select by the signed cosine (as in the original algorithm); ``False`` by its
        absolute value.
    center : bool, default=True
        Subtract the training means of the features before the CCA. The original algorithm
        does not; with an ``rbf`` kernel its leading uncentred pair is then the near-constant
        direction with a correlation close to 1, which tells nothing.
    reg : float, default=1e-6
        Ridge added to each view's covariance, relative to its mean eigenvalue.
    dtype, n_jobs
        As :class:`KernelMatchingPursuit`.

    Attributes
    ----------
    support_ : ndarray of shape ``(k_,)``
    x_support_vectors_, y_support_vectors_ : ndarray of shape ``(k_, n_features_in_ / n_features_y_)``
        The chosen pairs' points in each view (shape ``(k_, 0)`` for a precomputed kernel).
    x_weights_, y_weights_ : ndarray of shape ``(k_, n_components)``
        Canonical directions in each view's Nyström features, normalised so that the
        training projections have unit mean square.
    correlations_ : ndarray of shape (n_components,)
        Canonical correlations on the training set, decreasing.
    k_ : int
    pursuit_scores_ : ndarray of shape ``(k_,)``
    stopped_early_ : bool
    n_samples_fit_, n_features_in_, n_features_y_ : int

    ``score(X, y)`` is the mean over the components of the Pearson correlation between the
    two views' projections of ``(X, Y)``.

    Examples
    --------
    >>> import numpy as np
    >>> from gkfda import SparseKernelCCA
    >>> rng = np.random.default_rng(0)
    >>> latent = rng.uniform(-2, 2, size=(300, 1))
    >>> X = np.hstack([np.sin(latent), rng.normal(size=(300, 1))])
    >>> Y = np.hstack([latent ** 2, rng.normal(size=(300, 1))])
    >>> cca = SparseKernelCCA(k=20, n_components=1).fit(X, Y)  # Y: the second view
    >>> x_scores, y_scores = cca.transform(X, Y)
    >>> x_scores.shape, bool(cca.score(X, Y) > 0.8)
    ((300, 1), True)
    """

    _parameter_constraints: dict = {
        "k": [_count()],
        "n_components": [_count()],
        "signed": ["boolean"],
        "center": ["boolean"],
        "reg": [_Number(Real, 0, np.inf, closed="left")],
        **_KernelPursuit._kernel_constraints,
    }

    def __init__(self, k=50, n_components=2, kernel="rbf", gamma=None, degree=None, coef0=None, signed=True,
                 center=True, reg=1e-6, dtype="float64", n_jobs=None):
        self.k = k
        self.n_components = n_components
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.signed = signed
        self.center = center
        self.reg = reg
        self.dtype = dtype
        self.n_jobs = n_jobs

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags

    def _check_y(self, y, n, reset):
        """The second view as a 2-D float array of ``n`` rows (1-D: one feature)."""
        try:
            y = check_array(y, dtype=[np.float64, np.float32], ensure_2d=False, input_name="y")
        except (TypeError, ValueError) as error:
            message = str(error)
            raise type(error)(message if re.match(r"y\b", message) else f"y: {message}") from error
        if y.ndim == 1:
            y = y.reshape(-1, 1)
        if y.ndim != 2:
            raise ValueError(f"y: the second view must be 1-D or 2-D, got shape {y.shape}")
        if len(y) != n:
            raise ValueError(f"X, y: the two views must have the same number of samples, got {n} and {len(y)}")
        if reset:
            self.n_features_y_ = y.shape[1]
        elif y.shape[1] != self.n_features_y_:
            raise ValueError(f"y: has {y.shape[1]} features, but SparseKernelCCA is expecting {self.n_features_y_}")
        return y

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Choose the paired points and fit the CCA.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_x)
        y : array-like of shape (n_samples, n_features_y) or (n_samples,)
            The second view of the same samples (named ``y`` as in scikit-learn's ``CCA``).
            With ``kernel="precomputed"``, ``X`` and ``y`` are the two views' training
            kernels, each of shape ``(n_samples, n_samples)``.

        Returns
        -------
        self
        """
        if y is None:
            raise ValueError("SparseKernelCCA requires y to be passed, but the target y is None (the second view)")
        X = validate_input(self, X, reset=True, ensure_min_samples=2)
        Y = self._check_y(y, len(X), reset=True)
        if self.n_components > self.k:
            raise ValueError(f"n_components: must be at most k ({self.k}), got {self.n_components}")
        m = X.shape[0]
        k = self._resolved_count("k", self.k, m)
        Kx = self._training_kernel(X, k, kernels=2)
        self._x_gamma = self._gamma
        Ky = np.ascontiguousarray(self._training_kernel(Y, k, kernels=1, argument="y"), dtype=Kx.dtype)
        self._y_gamma = self._gamma
        self._gamma = self._x_gamma
        indices, scores, stopped_early = _select(
            "correlation", Kx, k, self._threads(), second_kernel=Ky, signed=bool(self.signed)
        )
        if len(indices) == 0:  # no pair's kernel column is nonzero in both views
            zero = [name for name, K in (("X", Kx), ("y", Ky)) if not K.any()]
            if zero:
                raise ValueError(
                    f"{self._blamed(zero[0])}: the kernel matrix of the training set is zero: no pair can be chosen"
                )
            raise ValueError("X, y: no training pair has a nonzero kernel column in both views: no pair can be chosen")
        self._warn_if_short(stopped_early, len(indices), k)
        n_components = min(int(self.n_components), len(indices))
        if n_components < self.n_components:
            warnings.warn(f"n_components={self.n_components} is more than the {len(indices)} points chosen: "
                          f"{n_components} canonical directions are used.", UserWarning, stacklevel=3)
        self._x_factor = _cholesky(Kx[np.ix_(indices, indices)], self._blamed("X"))
        self._y_factor = _cholesky(Ky[np.ix_(indices, indices)], self._blamed("y"))
        Zx = _features(self._x_factor, Kx[:, indices])
        Zy = _features(self._y_factor, Ky[:, indices])
        self._x_mean = Zx.mean(axis=0) if self.center else np.zeros(Zx.shape[1])
        self._y_mean = Zy.mean(axis=0) if self.center else np.zeros(Zy.shape[1])
        self.x_weights_, self.y_weights_, self.correlations_ = self._cca(
            Zx - self._x_mean, Zy - self._y_mean, n_components
        )
        self.support_ = indices
        self.x_support_vectors_ = self._points(X, indices)
        self.y_support_vectors_ = self._points(Y, indices)
        self.k_ = len(indices)
        self.pursuit_scores_ = scores
        self.stopped_early_ = stopped_early
        self.n_samples_fit_ = m
        return self

    def _cca(self, Zx, Zy, n_components):
        """Primal CCA by whitening each view and an SVD of the whitened cross-covariance."""
        m = len(Zx)

        def whitening(Z):
            C = Z.T @ Z / m
            C = C + float(self.reg) * np.trace(C) / len(C) * np.eye(len(C))
            values, vectors = eigh(C)
            values = np.maximum(values, 1e-12 * max(values.max(), 1e-300))
            return vectors / np.sqrt(values)  # W with W'CW = I

        Wx, Wy = whitening(Zx), whitening(Zy)
        U, S, Vt = svd((Zx @ Wx).T @ (Zy @ Wy) / m)
        x_weights, y_weights = Wx @ U[:, :n_components], Wy @ Vt[:n_components].T
        sign = np.where(x_weights[np.argmax(np.abs(x_weights), axis=0), np.arange(n_components)] < 0, -1.0, 1.0)
        return x_weights * sign, y_weights * sign, S[:n_components]

    @property
    def _n_features_out(self):
        return self.x_weights_.shape[1]

    def transform(self, X, y=None):
        """Canonical projections: of ``X``, or the pair ``(x_scores, y_scores)`` with the
        second view ``y`` (with a precomputed kernel, each view's kernel between the new
        pairs and the training pairs: ``(n, n_samples_fit_)``). With
        ``set_output(transform="pandas")`` both are data frames, their columns
        ``get_feature_names_out()``."""
        scores = self._transform(X, y)
        if y is None:
            return scores
        # scikit-learn's wrapper converts the first of a pair (as CCA's): the second likewise.
        return scores[0], _wrap_data_with_container("transform", scores[1], y, self)

    def _transform(self, X, y=None):
        """``transform``'s arrays, whatever the output configuration."""
        check_is_fitted(self)
        X = validate_input(self, X, reset=False)
        x_features = _features(self._x_factor, self._cross(X, self.support_, self.x_support_vectors_))
        x_scores = (x_features - self._x_mean) @ self.x_weights_
        if y is None:
            return x_scores
        Y = self._check_y(y, len(X), reset=False)
        y_features = _features(
            self._y_factor, self._cross(Y, self.support_, self.y_support_vectors_, gamma=self._y_gamma, argument="y")
        )
        return x_scores, (y_features - self._y_mean) @ self.y_weights_

    def fit_transform(self, X, y=None):
        """``fit(X, y).transform(X, y)``: the pair of the training projections."""
        return self.fit(X, y).transform(X, y)

    def score(self, X, y):
        """Mean over the components of the Pearson correlation of the two views' projections."""
        x_scores, y_scores = self._transform(X, y)
        x_scores = x_scores - x_scores.mean(axis=0)
        y_scores = y_scores - y_scores.mean(axis=0)
        norms = np.sqrt(np.sum(x_scores**2, axis=0) * np.sum(y_scores**2, axis=0))
        with np.errstate(divide="ignore", invalid="ignore"):
            correlations = np.where(norms > 0, np.sum(x_scores * y_scores, axis=0) / norms, 0.0)
        return float(np.mean(correlations))

    def loss_bound(self, X, y, alpha, delta=0.05):
        """Bound on ``P(|f_x(x) − f_y(y)| > alpha)`` for each canonical direction (Hussain &
        Shawe-Taylor, Theorem 9): :func:`matching_pursuit_bound` with ``t`` the training pairs
        outside the support whose projections differ by more than ``alpha`` (in units of the
        projections' root mean square), at ``delta / n_components`` so that all hold at once
        with probability ``1 − delta``.

        Parameters
        ----------
        X, y : the two training views the model was fitted on.
        alpha : float > 0
        delta : float in (0, 1), default=0.05

        Returns
        -------
        ndarray of shape (n_components,)
        """
        check_is_fitted(self)
        check_full_state(self, "loss_bound")
        _check_bound_arguments(alpha, delta)
        x_scores, y_scores = self._transform(X, y)
        self._check_training_rows(len(x_scores))
        errors = np.abs(x_scores - y_scores) > alpha
        errors[self.support_] = False
        d = x_scores.shape[1]
        return np.array([matching_pursuit_bound(self.n_samples_fit_, self.k_, int(t), delta / d)
                         for t in errors.sum(axis=0)])


def _float_target(y):
    """A regression target as float64, its message naming ``y``."""
    try:
        return np.asarray(column_or_1d(y), dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"y: the 'matching' criterion needs a numeric 1-D target: {error}") from error


def _class_labels(y):
    """Class labels as the engine takes them: booleans for two classes, else codes ``0..C-1``."""
    classes, codes = encoded_classes(y)
    return np.ascontiguousarray(codes == 1 if len(classes) == 2 else codes.astype(np.int64))


class GreedyNystroem(ClassNamePrefixFeaturesOutMixin, TransformerMixin, _KernelPursuit):
    """scikit-learn's ``Nystroem`` kernel approximation with landmarks chosen greedily.

    With class labels (``fit(X, y)``, as in a ``Pipeline`` before a classifier), the
    landmarks are the bases of :class:`~gkfda.GreedyKFDA`'s shared multiclass selection,
    chosen for the Fisher criterion of the classes; with a continuous target (before a
    linear regressor), those of :class:`KernelMatchingPursuit`, whose least squares on the
    landmarks' kernel columns is a linear model of these features; without ``y``
    (``fit(X)``), those of :class:`SparseKernelPCA`, chosen to explain the most of the
    kernel. ``transform`` is ``Nystroem``'s: ``K(X, components_) @ normalization_.T``.

    Parameters
    ----------
    n_components : int, default=100
        Number of landmarks; lowered, with a warning, to the number of samples.
    criterion : {"auto", "pca", "matching"} or one of ``gkfda.CRITERIA``, default="auto"
        ``auto``: ``optimal`` (the Fisher ratio) with class labels, ``matching`` with a
        continuous target (``type_of_target(y) == "continuous"``), ``pca`` without ``y``.
        ``pca`` and ``random`` (uniform landmarks, as ``Nystroem``'s) ignore ``y``;
        ``matching`` (the landmarks of :class:`KernelMatchingPursuit` for the centred target)
        and the Fisher criteria need it.
    deflation : "auto" or one of ``gkfda.DEFLATIONS``, default="auto"
        Of a Fisher selection: ``auto`` is ``schur``. ``pca`` and ``matching`` have their
        own deflations (pivoted Cholesky, projection) and take only ``auto``.
    kernel : str or callable, default="rbf"
        ``Nystroem``'s: the names of :class:`KernelMatchingPursuit`, ``precomputed``, or a
        callable ``kernel(a, b, **kernel_params)`` of two rows that returns a number (as
        in ``pairwise_kernels``: one Python call per pair of points, and the greedy
        choice reads the kernel of every pair of training points; ``precomputed`` is
        faster). With ``kernel="precomputed"``, as ``Nystroem``'s:
        ``fit`` takes the ``m×m`` training kernel, whose landmark rows are ``components_``,
        and ``transform`` the kernel ``K(X_new, X_train)`` of shape ``(n, m)``, of which it
        reads the ``component_indices_`` columns. (``Nystroem`` itself fits a precomputed
        kernel only with ``n_components`` equal to ``m``; there, with the same landmarks,
        both give the same features.)
    gamma : float, {"scale", "auto"} or None, default=None
        ``None`` is ``Nystroem``'s: the kernel's own default, ``1 / n_features`` (as
        ``"auto"``) for ``rbf``, ``poly``, ``sigmoid`` and ``laplacian``, 1 for ``chi2``;
        not the ``"scale"``, ``1 / (n_features * X.var())``, of gkfda's other estimators,
        so that ``Nystroem``'s calls give ``Nystroem``'s kernel. ``"scale"`` and
        ``"auto"`` as ``SVC``'s.
    degree, coef0 : float or None, default=None
        Of ``poly`` (``None``: 3 and 1) and ``sigmoid`` (``coef0``; ``None``: 1).
    kernel_params : dict or None, default=None
        ``Nystroem``'s: the keyword arguments of a callable kernel; of a named kernel, its
        ``gamma``, ``degree`` or ``coef0``, which the parameters of the same name override.
        With a callable or precomputed kernel, ``gamma``, ``degree`` and ``coef0`` must be
        None (a ValueError otherwise, as ``Nystroem``'s).
    dtype, n_jobs, solver, factor_rank, factor_pool
        As :class:`KernelMatchingPursuit`: with ``factored``, the ``pca``, ``matching`` and
        Fisher criteria select on the factor, and the landmarks' kernel is computed exactly;
        ``random`` reads no training kernel with either solver.
    random_state : int, RandomState instance or None, default=None
        Seed of the ``random`` criterion and of the factor's pool.

    Attributes
    ----------
    components_ : ndarray of shape ``(n_components_, n_features)``
        The landmarks, in selection order: their rows of the training kernel when it is
        precomputed (shape ``(n_components_, n_samples)``).
    component_indices_ : ndarray of shape ``(n_components_,)``
    normalization_ : ndarray of shape ``(n_components_, n_components_)``
        ``K[components]^(-1/2)``, as ``Nystroem``'s.
    solver_ : {"dense", "factored"}
        The solver the fit used.
    n_components_ : int
    stopped_early_ : bool
    n_features_in_ : int

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    >>> from sklearn.pipeline import make_pipeline
    >>> from gkfda import GreedyNystroem
    >>> X, y = load_iris(return_X_y=True)
    >>> model = make_pipeline(GreedyNystroem(n_components=20), LinearDiscriminantAnalysis()).fit(X, y)
    >>> bool(model.score(X, y) > 0.95)
    True
    >>> GreedyNystroem(n_components=10).fit(X).transform(X).shape
    (150, 10)
    """

    _parameter_constraints: dict = {
        "n_components": [_count()],
        "criterion": [StrOptions({"auto", "pca", "matching", *CRITERIA})],
        "deflation": [StrOptions({"auto", *DEFLATIONS})],
        **_KernelPursuit._kernel_constraints,
        "kernel_params": [dict, None],
        **_KernelPursuit._solver_constraints,
    }
    _gamma_of_none = "auto"
    _callable_rows = True

    def __init__(self, n_components=100, criterion="auto", deflation="auto", kernel="rbf", gamma=None, degree=None,
                 coef0=None, kernel_params=None, dtype="float64", random_state=None, n_jobs=None, solver="auto",
                 factor_rank=DEFAULT_FACTOR_RANK, factor_pool="rpcholesky"):
        self.n_components = n_components
        self.criterion = criterion
        self.deflation = deflation
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.kernel_params = kernel_params
        self.dtype = dtype
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.solver = solver
        self.factor_rank = factor_rank
        self.factor_pool = factor_pool

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Choose the landmarks of ``X`` (the training kernel when ``kernel="precomputed"``):
        for ``y`` (class labels or a continuous target) when given.

        Returns
        -------
        self
        """
        criterion = self.criterion
        supervised = y is not None and criterion not in ("pca", "random")
        if supervised:
            X, y = validate_input(self, X, reset=True, y=y)
            if criterion == "auto":
                criterion = "matching" if type_of_target(y) == "continuous" else "optimal"
        else:
            X = validate_input(self, X, reset=True, ensure_min_samples=2)
            criterion = "pca" if criterion == "auto" else criterion
            if criterion not in ("pca", "random"):
                raise ValueError(f"criterion: {criterion!r} needs labels or a target y; without them use 'auto', "
                                 "'pca' or 'random'")
        own_deflation = {"pca": "pivoted Cholesky", "matching": "projection"}
        if criterion in own_deflation and self.deflation != "auto":
            raise ValueError(
                f"deflation: the {criterion!r} criterion has its own deflation ({own_deflation[criterion]}), "
                f"got {self.deflation!r}; use 'auto'"
            )
        m = X.shape[0]
        k = self._resolved_count("n_components", self.n_components, m)
        self.solver_ = self._resolved_solver(m, k)
        K = factor = None
        if criterion == "random":
            if self._precomputed():  # checked, and read for the landmarks' kernel
                K = self._training_kernel(X, k)
            else:  # no training kernel needed
                self._gamma = self._resolve_gamma(X)
            indices = check_random_state(self.random_state).permutation(m)[:k].astype(np.int64)
            stopped_early = False
        else:
            if criterion == "matching":
                target = _float_target(y)
            elif criterion != "pca":
                labels = _class_labels(y)
            if self.solver_ == "dense":
                K = self._training_kernel(X, k)
            else:
                factor = self._training_factor(X, k)
            dtype = (K if factor is None else factor).dtype
            if criterion == "pca":
                indices, _, stopped_early = _select("pca", K, k, self._threads(), factor=factor)
            elif criterion == "matching":
                centred = np.ascontiguousarray(target - target.mean(), dtype=dtype)
                indices, _, stopped_early = _select("matching", K, k, self._threads(), target=centred, factor=factor)
            else:
                deflation = "schur" if self.deflation == "auto" else self.deflation
                if K is not None:
                    _check_squares(K)
                indices, stopped_early, _ = _core.greedy_select(
                    K, labels, k, criterion=criterion, deflation=deflation, n_threads=self._threads(), factor=factor
                )
                indices = np.asarray(indices, dtype=np.int64)
        self._warn_if_short(stopped_early, len(indices), k)
        # As Nystroem's, even precomputed: the landmarks' rows of X (of the kernel, then).
        self.components_ = np.array(X[indices])
        self.component_indices_ = indices
        if K is not None:  # no kernel value computed twice (a callable's calls are counted)
            landmarks = np.asarray(K[np.ix_(indices, indices)], dtype=np.float64)
        else:
            landmarks = self._cross(self.components_, None, self.components_)
        # Nystroem's normalisation: K_sub^(-1/2) by an SVD, small singular values floored.
        U, S, V = svd(landmarks)
        S = np.maximum(S, 1e-12)
        self.normalization_ = np.dot(U / np.sqrt(S), V)
        self.n_components_ = len(indices)
        self.stopped_early_ = bool(stopped_early)
        return self

    @property
    def _n_features_out(self):
        return self.n_components_

    @property
    def _n_features_out(self):
        return self.n_components_

    def transform(self, X):
        """``K(X, components_) @ normalization_.T``: shape ``(n, n_components_)``."""
        check_is_fitted(self)
        X = validate_input(self, X, reset=False)
        return self._cross(X, self.component_indices_, self.components_) @ self.normalization_.T
