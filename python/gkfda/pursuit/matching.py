"""Kernel matching pursuit: least-squares regression on ``k`` kernel columns chosen greedily,
and its loss bound."""

from __future__ import annotations

import re
from numbers import Real

import numpy as np
from sklearn.base import RegressorMixin, _fit_context
from sklearn.utils.validation import check_is_fitted, column_or_1d

from .._kernels import (
    _count,
    finite_outputs,
    validate_input,
)
from .._factor import DEFAULT_FACTOR_RANK
from .._validation import check_full_state, check_scored_samples
from .._atomic import fits_atomically

from ._base import (
    _KernelPursuit,
    _select,
    matching_pursuit_bound,
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
    factor_rank : "auto" or int, default="auto"
        ``p``, the rank of the Nyström factor of ``rbf`` and ``poly`` kernels (at most
        ``n_samples``): ``"auto"`` chooses it from the number of bases asked for, as
        :class:`GreedyKFDA`'s; an int below that number is a ValueError.
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

    @fits_atomically
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
        factor = None
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
        self._warn_if_short(len(indices), k, factor)
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
        with np.errstate(over="ignore", invalid="ignore"):
            return finite_outputs(self._cross(X, self.support_, self.support_vectors_) @ self.coef_ + self.intercept_)

    def score(self, X, y, sample_weight=None):
        """The coefficient of determination R² of ``predict(X)`` against ``y`` (scikit-learn's)."""
        check_scored_samples(X, y, sample_weight, values="targets")
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
        if len(y) != X.shape[0]:
            raise ValueError(f"y: has {len(y)} values but X has {X.shape[0]} samples")
        self._check_training_rows(X.shape[0])
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
