"""Sparse kernel PCA: the subspace of ``n_components`` training points chosen by pivoted
Cholesky, its rotated Nyström features and its compression bound."""

from __future__ import annotations

import math
import warnings
from numbers import Real

import numpy as np
from scipy.linalg import eigh
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin, _fit_context
from sklearn.utils import Bunch
from sklearn.utils.validation import check_array, check_is_fitted

from .._kernels import (
    _count,
    finite_outputs,
    validate_input,
)
from .._factor import DEFAULT_FACTOR_RANK
from .._atomic import fits_atomically
from .._validation import (
    check_full_state,
)

from ._base import (
    _KernelPursuit,
    _cholesky,
    _features,
    _select,
    _sign_by_largest,
)
from .matching import _check_bound_arguments


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

    @fits_atomically
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
        factor = None
        if self.solver_ == "dense":
            K = self._training_kernel(X, k)
            indices, scores, stopped_early = _select("pca", K, k, self._threads())
            diagonal = np.diagonal(K).astype(np.float64)
        else:
            factor = self._training_factor(X, k, "n_components")
            indices, scores, stopped_early = _select("pca", None, k, self._threads(), factor=factor)
            diagonal = self._self_kernel(X)
        if len(indices) == 0:  # every diagonal entry, so (PSD) every entry, is 0
            raise ValueError(f"{self._blamed()}: the kernel matrix of the training set is zero: no point can be chosen")
        self._warn_if_short(len(indices), k, factor)
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
        with np.errstate(over="ignore", invalid="ignore"):
            return finite_outputs(_features(self._factor, self._cross(X, self.support_, self.support_vectors_))
                                  @ self.rotation_)

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
        with np.errstate(over="ignore", invalid="ignore"):
            Z = finite_outputs(_features(self._factor, self._cross(X, self.support_, self.support_vectors_)))
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
        if diagonal.shape != (X.shape[0],):
            raise ValueError(f"self_kernel: must have one value per row of X ({X.shape[0]}), got shape {diagonal.shape}")
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
