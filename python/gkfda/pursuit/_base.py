"""What the matching-pursuit estimators share: the engine's call, the checks of its kernels,
the Nyström features of the chosen points, and the base class with the kernel parameters,
validation, the training kernel and the dense-or-factored choice."""

from __future__ import annotations

import math
import warnings
from numbers import Integral, Real

import numpy as np
from scipy.linalg import cholesky, solve_triangular
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Options, StrOptions, validate_params

from .. import _core
from .._kernels import (
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
    precomputed_columns,
    resolve_gamma,
)
from .._factor import FACTOR_RANK_CONSTRAINT, POOLS, SOLVERS
from .._training import (
    checked_training_factor,
    dense_training_kernel,
    more_than_samples_message,
    short_selection_message,
    solver_for,
)
from .._sparse import accepts_sparse, dense_rows
from .._validation import thread_count



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
        "factor_rank": FACTOR_RANK_CONSTRAINT,
        "factor_pool": [StrOptions(set(POOLS))],
        "random_state": ["random_state"],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Cross-validation then cuts a precomputed kernel into K[train, train] and K[test, train].
        tags.input_tags.pairwise = self._precomputed()
        tags.input_tags.sparse = accepts_sparse(self.kernel)
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
        self._gamma = self._resolve_gamma(X, argument)
        return dense_training_kernel(X, self.kernel, self._kernel_params(), self._dtype(), self._threads(), k,
                                     kernels, matrices=kernels, argument=argument, rows=self._callable_rows)

    def _core_kernel(self):
        """The core's name of the kernel, None for one it does not compute (precomputed, callable)."""
        if callable(self.kernel) or self._precomputed():
            return None
        return core_kernel(self.kernel, given_kernel_parameter(self, "degree"))

    def _resolved_solver(self, m, k):
        """``solver`` for a fit of ``m`` samples and ``k`` picks, by GreedyKFDA's rule."""
        return solver_for(self.solver, self.kernel, self._core_kernel(), m, k, 1, self._dtype())

    def _training_factor(self, X, k, k_name="k"):
        """``Φ`` with ``ΦΦ'`` the training kernel of ``X``, as GreedyKFDA's (in the engine's
        dtype); first ``gamma``, and the check that the factor and ``k`` picks fit in memory."""
        self._gamma = self._resolve_gamma(X)
        return checked_training_factor(X, self._core_kernel(), self._kernel_params(), self._dtype(), self._threads(),
                                       k, 1, self.factor_rank, self.factor_pool, check_random_state(self.random_state),
                                       k_name=k_name)

    def _points(self, X, indices):
        """The training points ``X[indices]`` a model keeps: none of a precomputed kernel,
        whose prediction input already holds their columns."""
        return np.empty((len(indices), 0)) if self._precomputed() else dense_rows(X, indices)

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
            warnings.warn(more_than_samples_message(name, value, m), UserWarning, stacklevel=5)
            return m
        return int(value)

    def _warn_if_short(self, chosen, wanted, factor=None):
        """Warn when the selection chose fewer than ``wanted`` points, saying why; ``factor``:
        the ``Φ`` of a factored fit, whose rank bounds it."""
        if chosen < wanted:
            linear = self._core_kernel() == "linear"
            features = self.n_features_in_ if linear else None
            factor_rank = None if factor is None or linear else int(factor.shape[1])
            warnings.warn(short_selection_message(chosen, wanted, features, factor_rank), UserWarning, stacklevel=5)

    def _check_training_rows(self, n, argument="X"):
        if n != self.n_samples_fit_:
            raise ValueError(
                f"{argument}: the bound needs the training set ({self.n_samples_fit_} samples), got {n} samples"
            )
