"""Sparse kernel CCA: canonical correlations of two views on the Nyström features of ``k``
paired points chosen greedily."""

from __future__ import annotations

import re
import warnings
from numbers import Real

import numpy as np
from scipy.linalg import eigh, svd
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin, _fit_context
from sklearn.utils._set_output import _wrap_data_with_container
from sklearn.utils.validation import check_array, check_is_fitted

from .._kernels import (
    _count,
    _Number,
    finite_outputs,
    validate_input,
)
from .._atomic import fits_atomically
from .._validation import (
    check_full_state,
)

from ._base import (
    _KernelPursuit,
    _cholesky,
    _features,
    _select,
    matching_pursuit_bound,
)
from .matching import _check_bound_arguments


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

    @fits_atomically
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
        Y = self._check_y(y, X.shape[0], reset=True)
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
        self._warn_if_short(len(indices), k)
        n_components = min(int(self.n_components), len(indices))
        if n_components < self.n_components:
            warnings.warn(f"n_components={self.n_components} is more than the {len(indices)} points chosen: "
                          f"{n_components} canonical directions are used.", UserWarning, stacklevel=4)
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
        with np.errstate(over="ignore", invalid="ignore"):
            x_scores = finite_outputs((x_features - self._x_mean) @ self.x_weights_)
        if y is None:
            return x_scores
        Y = self._check_y(y, X.shape[0], reset=False)
        y_features = _features(
            self._y_factor, self._cross(Y, self.support_, self.y_support_vectors_, gamma=self._y_gamma, argument="y")
        )
        with np.errstate(over="ignore", invalid="ignore"):
            return x_scores, finite_outputs((y_features - self._y_mean) @ self.y_weights_, "y")

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
