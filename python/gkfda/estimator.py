"""The scikit-learn estimator :class:`GreedyKFDA`."""

from __future__ import annotations

import copy
import warnings
from numbers import Integral, Real

import numpy as np
from scipy.sparse import issparse
from scipy.special import expit, log_expit, log_softmax, logsumexp, softmax
from sklearn.base import BaseEstimator, ClassifierMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Options, StrOptions
from sklearn.utils.validation import check_is_fitted, column_or_1d

from . import _core
from ._core import CRITERIA, DEFLATIONS
from ._kernels import (
    _LARGEST_THREADS,
    _check_callable_output,
    _convert,
    _count,
    _Number,
    KERNEL_CONSTRAINTS,
    core_kernel,
    finite_outputs,
    kernel_between,
    kernel_expansion,
    kernel_parameters,
    precomputed_columns,
    validate_input,
)
from ._dask import is_dask_input, prepare_dask_training
from ._factor import DEFAULT_FACTOR_RANK, FACTOR_RANK_CONSTRAINT, POOLS, SOLVERS
from ._training import more_than_samples_message, prepare_training, short_selection_message
from ._discriminant import fit_discriminant, one_blas_thread
from ._sparse import accepts_sparse, dense_rows
from ._sparsity_path import SparsityPath
from .bounds import FeatureMoments, FisherDiscriminantBound
from ._validation import check_full_state, check_scored_samples, checked_priors, thread_count
from ._atomic import fits_atomically

DTYPES = ("float64", "float32")
#: ``deflation``'s default, chosen on the study's evidence (docs/defaults.md); ``GreedyNystroem``'s
#: ``deflation="auto"`` is this one too.
DEFAULT_DEFLATION = "projection"
MULTICLASS = ("shared", "ovr")

#: ``k=None``: bases per class with one shared basis (so 50 for two classes), and per
#: problem one-vs-rest.
DEFAULT_K_PER_CLASS = 25
DEFAULT_K_PER_PROBLEM = 50

class GreedyKFDA(
    SparsityPath, FisherDiscriminantBound, ClassifierMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin,
    BaseEstimator,
):
    """Sparse greedy Kernel Fisher Discriminant (matching-pursuit KFDA and its variants).

    Chooses ``k`` training points greedily (a selection ``criterion``, then a
    ``deflation`` of the kernel, ``stages`` points at a time; Diethe 2015, Algorithm 1),
    maps every point into the Nyström subspace of those points, and trains a linear
    Fisher discriminant there. Prediction needs ``k`` kernel evaluations per point.
    The O(m²k) selection runs in Rust with the GIL released.

    Parameters
    ----------
    k : int or None, default=None
        Number of bases (training points) to choose. ``None`` means 25 per class with the
        shared basis (50 for two classes) and 50 per problem one-vs-rest, at most
        ``n_samples``. A larger ``k`` than ``n_samples`` is lowered to it with a warning, so
        a grid over ``k`` works on small folds.
    criterion : {"optimal", "pseudo", "reverse", "reverse-pseudo", "random"}, default="optimal"
        ``optimal`` maximises the Fisher ratio ``(c'y)²/(c'Bc)`` of the deflated kernel
        column (MPKFDA), ``pseudo`` maximises ``(c'y)²``, ``reverse`` and
        ``reverse-pseudo`` minimise them, ``random`` draws uniformly without replacement.
    deflation : {"schur", "projection", "hotelling", "ortho-schur", "ortho-projection", \
"ortho-hotelling", "none"}, default="projection"
        How the kernel is deflated after each pick (see the README's table). ``projection``
        had the lowest mean test error of the 13-set study with ``optimal``, and its
        selection is faster than ``schur``'s (one product with the kernel a pick, against
        two): docs/defaults.md.
    stages : int, default=1
        Bases taken per stage from the stage-start scores (stagewise selection).
    kernel : str or callable, default="rbf"
        ``rbf`` is ``exp(-gamma ||x - z||²)``: the papers' width ``w`` is ``1/gamma``.
        ``rbf``, ``linear`` and ``poly`` (alias ``polynomial``) are computed by the core;
        scikit-learn's ``sigmoid``, ``laplacian``, ``cosine``, ``chi2`` and
        ``additive_chi2`` by ``pairwise_kernels`` (a model with one of those, or a
        ``poly`` of fractional degree, cannot be saved or exported to ONNX; the training
        kernel must be positive semi-definite).
        With ``precomputed``, ``fit`` takes the ``m×m`` training kernel and the
        prediction methods take ``K(X_test, X_train)``. A callable ``kernel(A, B)``
        returns the kernel matrix between the rows of ``A`` and ``B`` (as ``SVC``'s).
    gamma : float, {"scale", "auto"} or None, default=None
        For the kernels that have one (``rbf``, ``poly``, ``sigmoid``, ``laplacian``,
        ``chi2``). ``"scale"`` is ``1 / (n_features * X.var())`` and ``"auto"`` is
        ``1 / n_features``, as ``SVC``'s; ``None`` is ``"scale"`` (1 for ``chi2``, as
        scikit-learn's). :class:`GreedyNystroem`'s ``None`` is ``Nystroem``'s instead.
    degree : float or None, default=None
        Degree of ``poly``: ``(gamma x·z + coef0)^degree``; ``None`` is 3.
    coef0 : float or None, default=None
        Constant of ``poly`` and ``sigmoid``; ``None`` is 1. With a callable or
        precomputed kernel, ``gamma``, ``degree`` and ``coef0`` must be None (a
        ValueError otherwise, as ``Nystroem``'s).
    reg : float, default=1e-4
        Ridge of the Fisher discriminant, relative to the kernel's scale (the mean of
        ``K(x, x)`` over the training set; values below 1e-6 count as 1e-6).
    priors : array-like of shape (n_classes,) or None, default=None
        Class priors in the order of ``classes_``, positive and summing to 1; ``None``
        uses the class frequencies of the training set. They shift the decision
        thresholds and the probabilities, as in scikit-learn's
        ``LinearDiscriminantAnalysis``: a model that learned nothing predicts the most
        probable class.
    multiclass : {"shared", "ovr"}, default="shared"
        With more than two classes: ``shared`` chooses one basis for all classes (the
        criteria generalised to ``C`` classes) and fits one multiclass discriminant on
        its features; ``ovr`` fits a binary model per class, one-vs-rest, each with its
        own basis.
    dtype : {"float64", "float32"}, default="float64"
        Precision of the kernel matrix and of the selection engine (float32 halves
        memory and time). The discriminant itself is solved in float64.
    n_jobs : int or None, default=None
        Threads of the kernel and selection. Unlike scikit-learn, where ``None`` means one
        job, ``None`` uses every available core, or ``OMP_NUM_THREADS`` of them when it is
        set (as joblib does in its worker processes, so that ``GridSearchCV(n_jobs=...)``
        does not oversubscribe the machine); ``-1`` uses every core, ``-2`` all but one;
        a count above the available cores uses them all, no more. Results do not depend
        on it.
    random_state : int, RandomState instance or None, default=None
        Seed of the ``random`` criterion, and of the factor's pool (``solver="factored"``).
    solver : {"auto", "dense", "factored"}, default="auto"
        How the selection reads the kernel. ``dense`` builds the ``m×m`` training kernel
        (O(m²) memory, O(m²) a pick). ``factored`` holds it as a factor ``K ≈ ΦΦ'``
        (``Φ`` of ``m × factor_rank``; ``kernel="linear"``: ``Φ = X``, exact, a sparse ``X``
        read as it is stored, never made dense): O(mp) memory and O(mp) a pick, the bases still chosen among all ``m`` points by the same criteria
        and deflations, the model fitted on the exact kernel columns of the chosen bases.
        ``auto`` is ``dense`` up to 20,000 samples when the dense kernel fits in memory,
        ``factored`` beyond (docs/scale.md). Named kernels only: a precomputed or callable
        kernel is always dense.
    factor_rank : "auto" or int, default="auto"
        ``p``, the rank of the Nyström factor of ``rbf`` and ``poly`` kernels, and of every
        kernel of a sparse ``X`` (at most
        ``n_samples``): the number of pool points whose kernel columns span ``Φ``.
        ``"auto"`` is ``max(2k, 1000)``, lowered to the largest rank whose factor fits in
        the memory available (the memory check of the fit) but never below ``k``
        (docs/scale.md, "Measured", has the accuracy and time along the rank). A factor of
        rank ``p`` holds at most ``p`` bases: an int below ``k`` is a ValueError.
    factor_pool : {"rpcholesky", "greedy", "uniform"}, default="rpcholesky"
        How the factor's pool is chosen, on a uniform subsample of ``8 · factor_rank``
        points (at least 10,000): randomly pivoted Cholesky (pivots drawn in proportion to
        the residual diagonal), greedy pivoted Cholesky (the largest residual diagonal), or
        uniformly.
    verbose : bool or int, default=False
        A progress bar on stderr (tqdm) for each phase of the fit: the pool's choice and the
        factor's rows (``solver="factored"`` with ``rbf`` or ``poly``), the selection's set-up
        and picks, the exact kernel columns, the discriminant and its calibration
        (docs/scale.md, "Progress"). Results do not depend on it.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    priors_ : ndarray of shape (n_classes,)
        The class priors used.
    support_ : ndarray of shape ``(k_,)``, or a list of them (one per class, one-vs-rest)
        Training indices of the chosen bases, in selection order.
    support_vectors_ : ndarray of shape ``(k_, n_features)``, or a list of them
        The chosen training points (shape ``(k_, 0)`` for a precomputed kernel), dense
        whether ``X`` was sparse or not (``SVC`` keeps a sparse fit's sparse).
    n_support_ : ndarray of shape (n_classes,)
        How many chosen bases belong to each class (over all one-vs-rest models).
    k_ : int, or ndarray of shape (n_classes,)
        Bases actually used: less than ``k`` when the selection stopped early.
    coef_ : ndarray of shape ``(1, k_)`` or ``(n_classes, k_)``, or a list of ndarrays of shape ``(k_c,)``
        The decision function's weights on the Nyström features (two classes: of the
        log-odds of ``classes_[1]``; shared multiclass: of each class's log-probability,
        up to a constant, as in ``LinearDiscriminantAnalysis``; one-vs-rest: of each
        class's log-odds against the rest).
    intercept_ : ndarray of shape (1,) or (n_classes,)
    projection_ : ndarray of shape ``(k_, k_)``, or a list of them
        ``R`` with ``R'R = K[support_, support_]⁺``; ``transform(X) = K(X, SV) R'``.
    stopped_early_ : bool
        True when some selection ran out of admissible candidates before ``k``.
    solver_ : {"dense", "factored"}
        The solver the fit used.
    n_features_in_ : int

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from gkfda import GreedyKFDA
    >>> X, y = make_moons(n_samples=300, noise=0.2, random_state=0)
    >>> model = GreedyKFDA(k=20, gamma=2.0).fit(X, y)
    >>> model.k_, model.support_.shape
    (20, (20,))
    >>> bool(model.score(X, y) > 0.9)
    True
    >>> model.predict_proba(X[:2]).sum(axis=1).round(6).tolist()
    [1.0, 1.0]

    Three classes share one basis, and ``transform`` gives its ``k`` features:

    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> model = GreedyKFDA(k=15).fit(X, y)
    >>> model.support_.shape, model.coef_.shape, model.transform(X).shape
    ((15,), (3, 15), (150, 15))
    """

    _parameter_constraints: dict = {
        "k": [_count(), None],
        "criterion": [StrOptions(set(CRITERIA))],
        "deflation": [StrOptions(set(DEFLATIONS))],
        "stages": [_count()],
        **KERNEL_CONSTRAINTS,
        "reg": [_Number(Real, 0, np.inf, closed="left")],
        "priors": ["array-like", None],
        "multiclass": [StrOptions(set(MULTICLASS))],
        "dtype": [
            StrOptions(set(DTYPES)),
            Options(type, {float, np.float64, np.float32}),
            Options(np.dtype, {np.dtype(name) for name in DTYPES}),
        ],
        # Any non-zero integer: negative counts back from the number of cores (joblib's way).
        "n_jobs": [_Number(Integral, -_LARGEST_THREADS, -1, closed="both"), _count(1, _LARGEST_THREADS), None],
        "random_state": ["random_state"],
        "solver": [StrOptions(set(SOLVERS))],
        "factor_rank": FACTOR_RANK_CONSTRAINT,
        "factor_pool": [StrOptions(set(POOLS))],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        k=None,
        criterion="optimal",
        deflation=DEFAULT_DEFLATION,
        stages=1,
        kernel="rbf",
        gamma=None,
        degree=None,
        coef0=None,
        reg=1e-4,
        priors=None,
        multiclass="shared",
        dtype="float64",
        n_jobs=None,
        random_state=None,
        solver="auto",
        factor_rank=DEFAULT_FACTOR_RANK,
        factor_pool="rpcholesky",
        verbose=False,
    ):
        self.k = k
        self.criterion = criterion
        self.deflation = deflation
        self.stages = stages
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.reg = reg
        self.priors = priors
        self.multiclass = multiclass
        self.dtype = dtype
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.solver = solver
        self.factor_rank = factor_rank
        self.factor_pool = factor_pool
        self.verbose = verbose

    # What ``_set_public_attributes`` derives from the models and the bases' training rows:
    # left out of pickles (and copies), so that each array is stored once, and derived again
    # on loading by the same code, so that a loaded model predicts bit for bit the same.
    _DERIVED = (
        "support_", "support_vectors_", "k_", "coef_", "intercept_", "projection_", "n_support_",
        "stopped_early_", "_expansion_weights", "_expansion_bias", "_union_points",
    )

    def __getstate__(self):
        state = super().__getstate__()
        if "_models" not in state:  # loaded from a lean file: nothing to derive its arrays from
            return state
        return {name: value for name, value in state.items() if name not in self._DERIVED}

    def __setstate__(self, state):
        super().__setstate__(state)
        if "_models" in state:
            self._set_public_attributes()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.kernel == "precomputed"
        tags.input_tags.sparse = accepts_sparse(self.kernel)
        return tags

    # -- validation -------------------------------------------------------------------

    def _dtype(self):
        return np.dtype(self.dtype).type

    def _validate_X(self, X, reset, y="no_validation"):
        return validate_input(self, X, reset, y)

    def _kernel_name(self):
        return "callable" if callable(self.kernel) else self.kernel

    # -- kernels ----------------------------------------------------------------------

    def _kernel_params(self):
        params = kernel_parameters(self, self._gamma)
        return {"kernel": core_kernel(self.kernel, params["degree"]) or self.kernel, **params}

    def _cross_kernel(self, X, basis_indices):
        """``K(X, X_train[basis_indices])`` as float64-compatible array."""
        dtype = self._dtype()
        if self.kernel == "precomputed":
            return precomputed_columns(X, basis_indices, self.n_features_in_)
        basis = self._support_points[basis_indices]
        if callable(self.kernel):
            return _check_callable_output(self.kernel(X, basis), (X.shape[0], len(basis)))
        return kernel_between(X, basis, self.kernel, self._kernel_params(), dtype, thread_count(self.n_jobs))

    # -- fit --------------------------------------------------------------------------

    @fits_atomically
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Choose the bases and train the discriminant(s).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_samples)
            Training data, or the training kernel when ``kernel="precomputed"``. A
            ``scipy.sparse`` matrix (any format, taken as CSR) for every kernel but
            ``precomputed``, ``chi2`` and ``additive_chi2``; the kernels of its rows are
            computed without making it dense (docs/scale.md, "Sparse X"). A dask
            array chunked by rows is fitted on the current ``distributed`` client, with the
            factored solver and the factor's rows held by the workers: the in-memory
            factored fit's picks and model (docs/scale.md, "Beyond one machine: Dask").
        y : array-like of shape (n_samples,)
            Class labels (a dask array, or in memory, with a dask ``X``). More than two classes share one basis (``multiclass="shared"``)
            or are handled one-vs-rest (``"ovr"``). On a kernel of 12 MiB or more
            (float64: from ~1,250 samples) the one-vs-rest selections whose picks read
            the kernel one at a time (schur family; the others at ``stages=1``) run side
            by side and share each pass over the kernel.

        Returns
        -------
        self : GreedyKFDA
        """
        rng = check_random_state(self.random_state)
        # A dask X (rows chunked on a distributed cluster) is prepared by _dask.py, its
        # factor held by the workers; the rest of the fit is the same.
        prepare = prepare_dask_training if is_dask_input(X, y) else prepare_training
        problem = prepare(self, X, y, rng)
        self.classes_, self.priors_, self.solver_, self._gamma = problem.classes, problem.priors, problem.solver, problem.gamma
        problems, by_class, threads = problem.problems, problem.by_class, problem.threads
        selections = self._select(problem, rng)
        linear = problem.core_name == "linear"
        # Φ = X (a linear fit) has the features' rank; a Nyström factor its columns'.
        factor_rank = None if problem.factor is None or linear else int(problem.factor.shape[1])
        problem.factor = None  # Φ (m × p) is read by the selection only: let it go
        with problem.progress.phase("exact columns", total=len(by_class), unit="row"):
            columns = problem.columns([support for support, _, _ in selections], self.kernel)
            # Each selection's columns where they are held, and their block of the bases.
            held = [columns(support) for support, _, _ in selections]
        diagonal = problem.diagonal()
        kernel_scale = float(np.mean(diagonal, dtype=np.float64))
        fitted = [
            fit_discriminant(
                *held[c], codes, *self._problem_classes(c),
                by_class[support], float(self.reg), kernel_scale, stopped_early, passes, n_threads=threads,
                progress=problem.progress, return_moments=True,
            )
            for c, (codes, (support, stopped_early, passes)) in enumerate(zip(problems, selections))
        ]
        self._models = [model for model, _ in fitted]
        if any(len(support) == 0 for support, _, _ in selections):
            warnings.warn(
                "the selection chose no basis: every column of the kernel is numerically "
                "explained (a kernel nearly constant over the data); the model predicts the "
                "most probable class for every point. Use a larger gamma or scale the features.",
                UserWarning,
                stacklevel=4,  # fit, scikit-learn's and fits_atomically's wrappers, the caller
            )
        features = self.n_features_in_ if linear else None
        for c, (support, _, _) in enumerate(selections):
            if 0 < len(support) < problem.k:
                which = "" if len(selections) == 1 else f"class {self.classes_.tolist()[c]!r} against the rest: "
                warnings.warn(which + short_selection_message(len(support), problem.k, features, factor_rank),
                              UserWarning, stacklevel=4)
        # What the generalisation bound needs of the training set (two classes only).
        self._feature_moments = None
        if len(self.classes_) == 2:
            (support, _, _), (model, moments) = selections[0], fitted[0]
            largest_norm = float(np.sqrt(max(np.max(diagonal), 0.0)))
            with one_blas_thread(), problem.progress.phase("bound statistics"):
                # The discriminant's per-class moments of the features are the bound's; the
                # bases' own features are their block of the columns, projected.
                support_features = np.asarray(held[0][1], dtype=np.float64) @ model.projection.T
                self._feature_moments = FeatureMoments.from_moments(moments, support_features,
                                                                    problem.codes[support], largest_norm)
        self._fitted_k = problem.k
        union = np.unique(np.concatenate([model.support for model in self._models]))
        # Keep only the training points the models need, indexed by training index.
        self._union_support = union
        self._union_labels = problem.y_index[union]
        self._support_points = None if self.kernel == "precomputed" else _IndexedRows(problem.X, union)
        self._set_public_attributes()
        return self

    def _problem_classes(self, c):
        """``(n_classes, priors)`` of problem ``c``: every class with the shared basis (or
        two classes), class ``c`` against the rest (code 1) one-vs-rest."""
        if len(self.classes_) == 2 or self.multiclass == "shared":
            return len(self.classes_), self.priors_
        return 2, np.array([1.0 - self.priors_[c], self.priors_[c]])

    def _refitted_with_reg(self, reg, X, y):
        """A copy of this fitted model as a fit on ``(X, y)``, the training set, with ``reg``
        gives it: the selection does not depend on ``reg``, so only the discriminants are
        fitted again, on the same bases."""
        model = copy.copy(self)
        model.reg = reg
        X = self._validate_X(X, reset=False)
        y_index = np.searchsorted(self.classes_, column_or_1d(y))
        union = self._union_support
        cross = self._cross_kernel(X, union)
        model._models = []
        for c, old in enumerate(self._models):
            columns = cross[:, np.searchsorted(union, old.support)]
            codes = y_index if len(self._models) == 1 else (y_index == c).astype(np.intp)
            model._models.append(fit_discriminant(
                columns, columns[old.support], codes, *self._problem_classes(c), old.support, float(reg),
                old.kernel_scale, old.stopped_early, old.kernel_passes, projection=old.projection,
                n_threads=thread_count(self.n_jobs),
            ))
        model._set_public_attributes()
        return model

    def _checked_priors(self, y_index, n_classes):
        """The class priors: the given ones, checked, or the training frequencies."""
        return checked_priors(self.priors, y_index, n_classes)

    def _resolved_k(self, n_classes, m):
        """``k`` for ``n_classes`` classes and ``m`` training samples (at most ``m``)."""
        if self.k is None:
            per_problem = n_classes == 2 or self.multiclass == "ovr"
            return min(m, DEFAULT_K_PER_PROBLEM if per_problem else DEFAULT_K_PER_CLASS * n_classes)
        k = int(self.k)
        if k > m:
            warnings.warn(more_than_samples_message("k", k, m), UserWarning, stacklevel=6)
            return m
        return k

    def _select(self, problem, rng):
        """The bases of each of ``problem``'s problems on its kernel, or on the kernel ``ΦΦ'``
        of its factor (row ``i`` is training sample ``problem.by_class[i]``):
        ``(support, stopped_early, kernel_passes)`` per problem of class codes.

        The one-vs-rest problems of a multiclass fit go to the core together, which runs
        those whose passes are bound by memory side by side, sharing each pass over ``K``.
        """
        problems, by_class, k = problem.problems, problem.by_class, problem.k
        orders = None
        if self.criterion == "random":
            # A random priority over training samples, whatever the kernel's row order.
            position = np.empty_like(by_class)
            position[by_class] = np.arange(len(by_class))
            m = len(by_class)
            orders = np.stack([position[rng.permutation(m)] for _ in problems]).astype(np.int64)
        options = dict(
            criterion=self.criterion,
            deflation=self.deflation,
            stages=int(self.stages),
            n_threads=problem.threads,
            factor=problem.factor,
        )
        K = problem.kernel
        try:
            with problem.progress.selection() as report:
                options["progress"] = report
                if len(problems) == 1:
                    (codes,) = problems
                    order = None if orders is None else orders[0]
                    # Two classes go as booleans, the labels the binary engine has always taken.
                    labels = codes == 1 if codes.max() == 1 else codes.astype(np.int64)
                    return [_core.greedy_select(K, np.ascontiguousarray(labels), k, random_order=order, **options)]
                return _core.greedy_select_many(K, np.stack(problems) == 1, k, random_order=orders, **options)
        except ValueError as error:
            if str(error).startswith("K:"):  # the kernel is built from X (or is X)
                raise ValueError(f"X: its kernel {str(error)[3:]}; scale the features") from error
            raise

    def _shared_multiclass(self):
        """One discriminant of more than two classes (log-probabilities, not log-odds)."""
        if "_models" not in self.__dict__:  # loaded from a lean file (gkfda.load)
            return self._lean_link == "softmax"
        return len(self._models) == 1 and len(self.classes_) > 2

    def _set_public_attributes(self):
        models = self._models
        precomputed = self.kernel == "precomputed"

        def points(model):
            return np.empty((len(model.support), 0)) if precomputed else self._support_points[model.support]

        # Each model's outputs: log-probabilities up to a constant (shared multiclass), or
        # the log-odds of its class 1 (two classes; one-vs-rest).
        outputs = []
        for model in models:
            coef, intercept = model.linear()
            if not self._shared_multiclass():
                coef, intercept = coef[:, 1:] - coef[:, :1], intercept[1:] - intercept[:1]
            outputs.append((coef, intercept))
        if len(models) == 1:
            (model,), ((coef, intercept),) = models, outputs
            self.support_ = model.support
            self.support_vectors_ = points(model)
            self.k_ = len(model.support)
            self.coef_ = coef.T.copy()
            self.intercept_ = intercept.copy()
            self.projection_ = model.projection
        else:
            self.support_ = [model.support for model in models]
            self.support_vectors_ = [points(model) for model in models]
            self.k_ = np.array([len(model.support) for model in models])
            self.coef_ = [coef[:, 0].copy() for coef, _ in outputs]
            self.intercept_ = np.array([intercept[0] for _, intercept in outputs])
            self.projection_ = [model.projection for model in models]
        self.n_support_ = np.bincount(self._union_labels, minlength=len(self.classes_))
        # Every output as a kernel expansion over the union of bases: α = R'w.
        union = self._union_support
        self._expansion_weights = np.zeros((len(union), sum(coef.shape[1] for coef, _ in outputs)))
        column = 0
        with one_blas_thread():  # from k ≈ 700 OpenBLAS threads this product, then spins ~0.1 s
            for model, (coef, _) in zip(models, outputs):
                rows = np.searchsorted(union, model.support)
                self._expansion_weights[rows, column : column + coef.shape[1]] = model.projection.T @ coef
                column += coef.shape[1]
        self._expansion_bias = np.concatenate([intercept for _, intercept in outputs]).astype(np.float64)
        if not precomputed:
            self._union_points = np.ascontiguousarray(self._support_points[union], dtype=self._dtype())
        self.stopped_early_ = any(model.stopped_early for model in models)

    # -- prediction -------------------------------------------------------------------

    def _kernel_to_supports(self, X):
        """``K(X, X_train[support])`` of every model, from one kernel against their union."""
        check_is_fitted(self)
        check_full_state(self, "transform")
        X = self._validate_X(X, reset=False)
        union = self._union_support
        cross = np.asarray(self._cross_kernel(X, union), dtype=np.float64)
        return [cross[:, np.searchsorted(union, model.support)] for model in self._models]

    def _link(self):
        """How the outputs become probabilities (the core's names)."""
        if self._shared_multiclass():
            return "softmax"
        return "logistic" if len(self._expansion_bias) == 1 else "ovr"

    def _outputs(self, X, probabilities=False):
        """The models' outputs, one column each (see :meth:`_set_public_attributes`), or with
        ``probabilities`` the class probabilities they give."""
        if "_models" not in self.__dict__:
            check_is_fitted(self)  # raises NotFittedError
        if core_kernel(self.kernel, self.degree) is not None:
            # f(z) = Σ_j α_j κ(z, x_j) + b with α = R'w: one call, k kernel evaluations a row.
            X_ready = self._prediction_input(X)
            # The core runs up to ONE_THREAD_ROWS rows on the calling thread whatever it is
            # given: the thread count (a system call) is looked up only for larger inputs.
            threads = 1 if X_ready.shape[0] <= _core.ONE_THREAD_ROWS else thread_count(self.n_jobs)
            try:
                return kernel_expansion(
                    X_ready, self._union_points, self._expansion_weights, self._expansion_bias,
                    **self._kernel_params(), link=self._link() if probabilities else "identity",
                    n_threads=threads,
                )
            except ValueError:
                if not np.isfinite(X_ready.data if issparse(X_ready) else X_ready).all():
                    self._validate_X(X, reset=False)  # raises scikit-learn's message
                raise
        kernel = np.asarray(self._cross_kernel(self._validate_X(X, reset=False), self._union_support), np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            outputs = finite_outputs(kernel @ self._expansion_weights + self._expansion_bias)
        return self._probabilities(outputs) if probabilities else outputs

    def _prediction_input(self, X):
        """``X`` ready for the Rust kernels; a NumPy array of the right shape takes a fast
        path (shape and dtype checked here, finiteness by the core, which refuses NaN and
        infinity), anything else scikit-learn's full validation."""
        dtype = self._dtype()
        if (
            type(X) is np.ndarray
            and X.ndim == 2
            and X.dtype.kind == "f"
            and X.shape[1] == self.n_features_in_
            and 0 < X.shape[0]
            and "feature_names_in_" not in self.__dict__
        ):
            if X.dtype != dtype or not X.flags.c_contiguous:
                if not np.isfinite(X).all():  # _convert takes finite values
                    self._validate_X(X, reset=False)  # raises scikit-learn's message
                X = _convert(X, dtype, "X")
            return X
        return _convert(self._validate_X(X, reset=False), dtype, "X")

    def decision_function(self, X):
        """Log-odds, or log-probabilities up to a constant: ``argmax`` gives ``predict``.

        Two classes: the log-odds of ``classes_[1]``, shape ``(n_samples,)``. More classes,
        shape ``(n_samples, n_classes)``: with the shared basis, each class's
        log-probability up to a constant per sample (as ``LinearDiscriminantAnalysis``);
        one-vs-rest, each class's log-odds against the rest.
        """
        outputs = self._outputs(X)
        return outputs[:, 0] if len(self.classes_) == 2 else outputs

    def predict(self, X):
        """Class labels: the argmax of :meth:`predict_proba` (where probabilities saturate to
        a tie, the first class among the tied; the decision values order them otherwise)."""
        probabilities = self.predict_proba(X)  # raises NotFittedError first
        return self.classes_[np.argmax(probabilities, axis=1)]

    def score(self, X, y, sample_weight=None):
        """Mean accuracy of ``predict(X)`` against ``y`` (scikit-learn's ``score``)."""
        check_scored_samples(X, y, sample_weight)
        return super().score(X, y, sample_weight)

    def predict_proba(self, X):
        """Calibrated class probabilities, shape ``(n_samples, n_classes)``.

        The discriminant's leave-one-out scores on the training set are calibrated (an
        LDA on them, then a temperature fitted by log-loss), and the class priors added;
        one-vs-rest probabilities are normalised to sum to 1.
        """
        return self._outputs(X, probabilities=True)

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`, computed without rounding to ``-inf``."""
        return self._probabilities(self._outputs(X), log=True)

    def _probabilities(self, outputs, log=False):
        """Probabilities (or their logarithms) from the outputs' columns."""
        if self._shared_multiclass():
            return log_softmax(outputs, axis=-1) if log else softmax(outputs, axis=-1)
        if outputs.shape[-1] == 1:
            log_odds = outputs[..., 0]
            if log:
                return np.stack([log_expit(-log_odds), log_expit(log_odds)], axis=-1)
            # Written in place: np.stack's temporaries cost as much as the kernel for one row.
            probabilities = np.empty(log_odds.shape + (2,))
            expit(log_odds, out=probabilities[..., 1])
            np.subtract(1.0, probabilities[..., 1], out=probabilities[..., 0])
            return probabilities
        return ovr_probabilities(outputs, log)

    @property
    def _n_features_out(self):
        return int(np.sum(self.k_))

    def transform(self, X):
        """Nyström features ``φ(X) = K(X, support_vectors_) R'``: shape ``(n, k_)``.

        One-vs-rest, the features of the classes' models are concatenated.
        """
        kernels = self._kernel_to_supports(X)
        with np.errstate(over="ignore", invalid="ignore"):
            return finite_outputs(np.hstack([model.transform(kernel) for model, kernel in zip(self._models, kernels)]))


def ovr_probabilities(log_odds, log=False):
    """Probabilities (or their logarithms) of one-vs-rest log-odds, normalised to sum to 1."""
    # Scaled by the largest in log space before normalising: where every one-vs-rest
    # log-odds is far below zero, each expit underflows to 0, and 0/0 is NaN.
    log_probabilities = log_expit(log_odds)
    if log:
        return log_probabilities - logsumexp(log_probabilities, axis=-1, keepdims=True)
    probabilities = np.exp(log_probabilities - log_probabilities.max(axis=-1, keepdims=True))
    return probabilities / probabilities.sum(axis=-1, keepdims=True)


class _IndexedRows:
    """Training rows of the bases, addressed by their training indices (pickles small)."""

    def __init__(self, X, indices):
        self.indices = np.asarray(indices, dtype=np.int64)
        self.rows = dense_rows(X, self.indices)  # dense, of a sparse X too: k rows

    def __getitem__(self, training_indices):
        positions = np.searchsorted(self.indices, training_indices)
        return self.rows[positions]

    def subset(self, training_indices):
        smaller = _IndexedRows.__new__(_IndexedRows)
        smaller.indices = np.asarray(training_indices, dtype=np.int64)
        smaller.rows = self[smaller.indices]
        return smaller


def fit(X, y, **params) -> GreedyKFDA:
    """Fit a :class:`GreedyKFDA` in one call: ``gkfda.fit(X, y, k=30, deflation="schur")``.

    Examples
    --------
    >>> import numpy as np, gkfda
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2)); y = (X[:, 0] * X[:, 1] > 0).astype(int)
    >>> model = gkfda.fit(X, y, k=30, gamma=1.0)
    >>> bool(model.score(X, y) > 0.9)
    True
    """
    return GreedyKFDA(**params).fit(X, y)
