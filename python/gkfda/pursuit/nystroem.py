"""``GreedyNystroem``: scikit-learn's ``Nystroem`` with landmarks chosen greedily."""

from __future__ import annotations

import warnings

import numpy as np
from scipy.linalg import svd
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted, column_or_1d

from .. import _core
from .._sparse import dense_rows
from .._core import CRITERIA, DEFLATIONS
from .._kernels import (
    NotPositiveSemiDefinite,
    _count,
    finite_outputs,
    validate_input,
)
from .._factor import DEFAULT_FACTOR_RANK
from ..estimator import DEFAULT_DEFLATION
from .._atomic import fits_atomically
from .._validation import (
    encoded_classes,
)

from ._base import (
    _KernelPursuit,
    _check_squares,
    _select,
)


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
        continuous target (``type_of_target(y) == "continuous"``), ``pca`` without ``y``;
        ``random``, with a warning, for a kernel that is not positive semi-definite
        (``additive_chi2``), which the greedy criteria need.
        ``pca`` and ``random`` (uniform landmarks, as ``Nystroem``'s) ignore ``y``;
        ``matching`` (the landmarks of :class:`KernelMatchingPursuit` for the centred target)
        and the Fisher criteria need it.
    deflation : "auto" or one of ``gkfda.DEFLATIONS``, default="auto"
        Of a Fisher selection: ``auto`` is ``GreedyKFDA``'s default, ``projection``. ``pca`` and ``matching`` have their
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

    @fits_atomically
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
        if criterion not in ("random", "pca", "matching"):
            labels = _class_labels(y)
        elif criterion == "matching":
            target = _float_target(y)
        if criterion != "random" and self.solver_ == "dense":
            try:
                K = self._training_kernel(X, k)
            except NotPositiveSemiDefinite as error:
                if self.criterion != "auto":
                    raise
                # Nystroem's uniform choice needs no Gram matrix (additive_chi2's never is one).
                warnings.warn(
                    f"{error}; GreedyNystroem(criterion='auto') chose its {k} landmarks uniformly at random, "
                    "as Nystroem does (criterion='random')",
                    UserWarning,
                    stacklevel=4,
                )
                criterion = "random"
        if criterion == "random":
            if self._precomputed():  # checked, and read for the landmarks' kernel
                K = self._training_kernel(X, k)
            else:  # no training kernel needed
                self._gamma = self._resolve_gamma(X)
            indices = check_random_state(self.random_state).permutation(m)[:k].astype(np.int64)
            stopped_early = False
        else:
            if self.solver_ != "dense":
                factor = self._training_factor(X, k, "n_components")
            dtype = (K if factor is None else factor).dtype
            if criterion == "pca":
                indices, _, stopped_early = _select("pca", K, k, self._threads(), factor=factor)
            elif criterion == "matching":
                centred = np.ascontiguousarray(target - target.mean(), dtype=dtype)
                indices, _, stopped_early = _select("matching", K, k, self._threads(), target=centred, factor=factor)
            else:
                deflation = DEFAULT_DEFLATION if self.deflation == "auto" else self.deflation
                if K is not None:
                    _check_squares(K)
                indices, stopped_early, _ = _core.greedy_select(
                    K, labels, k, criterion=criterion, deflation=deflation, n_threads=self._threads(), factor=factor
                )
                indices = np.asarray(indices, dtype=np.int64)
        self._warn_if_short(len(indices), k, factor)
        # As Nystroem's, even precomputed: the landmarks' rows of X (of the kernel, then).
        self.components_ = dense_rows(X, indices)  # dense of a sparse X too (Nystroem keeps it sparse)
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

    def transform(self, X):
        """``K(X, components_) @ normalization_.T``: shape ``(n, n_components_)``."""
        check_is_fitted(self)
        X = validate_input(self, X, reset=False)
        with np.errstate(over="ignore", invalid="ignore"):
            return finite_outputs(self._cross(X, self.component_indices_, self.components_) @ self.normalization_.T)
