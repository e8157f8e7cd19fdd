"""Cross-validated choice of ``gamma``, ``k`` and ``reg``: :class:`GreedyKFDACV`.

The greedy selection is nested: a :class:`~gkfda.GreedyKFDA` fitted with the largest ``k``
holds every smaller model, each of them a ``k×k`` solve away (its *sparsity path*). So
the search fits one selection per fold and ``gamma``, and scores every ``k`` up to the
ceiling from it. ``reg`` enters only the discriminant, not the selection, so each value of
its grid refits the discriminant on the same bases (``O(m k²)``), with no new selection.
"""

from __future__ import annotations

import numbers
import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin, _fit_context, clone
from sklearn.metrics import check_scoring, get_scorer_names, log_loss
from sklearn.model_selection import StratifiedKFold, check_cv
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metaestimators import _safe_split
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import check_is_fitted

from ._kernels import _default_gamma, uses_gamma, validate_input
from ._sparse import accepts_sparse
from ._factor import DEFAULT_FACTOR_RANK
from ._training import factor_rank_for
from ._validation import encoded_classes
from .estimator import GreedyKFDA
from ._atomic import fits_atomically

#: The range of the default gamma grid, as powers of 2 times the data's scale.
GAMMA_EXPONENTS = (-7.0, -1.0)

#: The ceiling of ``k`` when ``max_k=None`` (further capped by the training-fold size).
DEFAULT_MAX_K = 100

_EPSILON = np.finfo(np.float64).eps

# Scorers computed straight from the path's decision values, with no model copied per k.
_PATH_SCORINGS = (None, "accuracy", "neg_log_loss")


class GreedyKFDACV(ClassifierMixin, TransformerMixin, BaseEstimator):
    """:class:`~gkfda.GreedyKFDA` with ``gamma``, ``k`` and optionally ``reg`` chosen by
    cross-validation, then refitted on all the data.

    For each fold and each ``gamma`` one selection of ``max_k`` bases is fitted; every
    ``k`` from 1 to ``max_k`` is then scored on the held-out fold from that one fit (the
    truncated models equal separate fits with that ``k``; see
    :meth:`GreedyKFDA.decision_path <gkfda.GreedyKFDA.decision_path>`), and so is every
    ``reg`` of the grid, which changes the discriminant but not the selection. The
    search therefore costs ``n_splits × len(gamma grid)`` selections, whatever the
    numbers of ``k`` and ``reg`` values. The candidates and their scores are those of
    ``GridSearchCV(GreedyKFDA(), {"gamma": ..., "k": range(1, max_k + 1), "reg": ...})``
    on the same folds (to rounding; with ``stages > 1``, only while no pick inside a
    stage is skipped as degenerate), apart from how ties are broken (below).

    Parameters
    ----------
    gammas : int or array-like of float, default=4
        The ``gamma`` grid of the kernels that have one (``rbf``, ``poly``, ``sigmoid``,
        ``laplacian``, ``chi2``). An int ``n`` asks for
        ``n`` values relative to the data's scale ``s = 1 / (n_features · Var(X))``
        (scikit-learn's ``gamma="scale"``, computed on the ``X`` given to ``fit``):
        ``s · 2**e`` with ``n`` exponents ``e`` evenly spaced from -7 to -1 (the default
        4: ``s/128, s/32, s/8, s/2``; a single value is ``s/16``). On standardised data
        the best ``gamma`` of this model, as of ``SVC``, lay in that range on the
        benchmarks of ``benches/bench_cv.py``; a wider kernel (small ``gamma``) also
        makes the selection stop early, at little cost, when the kernel's rank runs out.
        An array gives the values themselves (positive). The ``linear``, ``cosine``,
        ``additive_chi2``, ``precomputed`` and callable kernels have no ``gamma``: leave it
        an int, and none is searched.
    max_k : int or None, default=None
        The largest number of bases; every ``k`` from 1 to ``max_k`` is a candidate.
        ``None`` means ``min(100, smallest training fold)``: the selection's time grows
        with ``max_k``, and each one-vs-rest class of a multiclass problem makes its
        own. 100 is the smallest ceiling (in steps of 25) that brought the data sets of
        ``benches/bench_cv.py`` within 1.5 points of an SVC grid in at most twice its
        time. With many classes on one shared basis it can bind (on digits the chosen
        ``k`` was 75–100, and ``max_k=200`` gained 0.8 points for about twice the search
        time: docs/defaults.md), which a ``best_params_["k"]`` near ``max_k_`` shows. A
        value larger than the smallest training fold is lowered to it, with a warning.
    regs : array-like of float or None, default=None
        The ``reg`` grid (non-negative); ``None`` searches none and uses
        :class:`~gkfda.GreedyKFDA`'s default ``1e-4``.
    cv : int, cross-validation generator or iterable, default=5
        As in :class:`~sklearn.model_selection.GridSearchCV`: an int is a
        :class:`~sklearn.model_selection.StratifiedKFold` with that many folds.
    scoring : str, callable or None, default=None
        ``None`` (accuracy), ``"accuracy"`` and ``"neg_log_loss"`` are computed from the
        decision values of the path; any other scikit-learn scorer name or callable
        ``scorer(estimator, X, y)`` scores a :meth:`GreedyKFDA.truncate
        <gkfda.GreedyKFDA.truncate>` copy per ``k`` (slower).
    n_jobs : int or None, default=None
        Processes (joblib) over the ``(fold, gamma)`` fits; ``None`` means one. Each fit
        uses the cores its process is given (all of them when ``n_jobs`` is one; joblib
        shares them out between its workers).
    criterion, deflation, stages, kernel, degree, coef0, priors, multiclass, dtype, random_state
        Passed to every :class:`~gkfda.GreedyKFDA` fit; see there.
    solver, factor_rank, factor_pool
        Passed to every :class:`~gkfda.GreedyKFDA` fit, of the folds and the refit: each
        resolves ``solver="auto"`` and ``factor_rank="auto"`` for its own number of samples
        (docs/scale.md).
    verbose : bool or int, default=False
        Passed to every :class:`~gkfda.GreedyKFDA` fit: progress bars on stderr of each
        fit's factor and selection.

    Attributes
    ----------
    cv_results_ : dict of ndarrays
        As :class:`~sklearn.model_selection.GridSearchCV`'s (importable into a pandas
        ``DataFrame``), one entry per ``(gamma, k, reg)`` with ``gamma`` varying slowest and
        ``reg`` fastest: ``params``, ``param_gamma``, ``param_k``, ``param_reg``,
        ``split{i}_test_score``, ``mean_test_score``, ``std_test_score``,
        ``rank_test_score``, ``mean_fit_time``, ``std_fit_time``, ``mean_score_time``,
        ``std_score_time``. A fit serves every ``k`` and ``reg`` of its ``gamma``: the fit
        time of a candidate is that whole fit's, and its score time that path's scoring
        time divided among its candidates.
    best_params_ : dict
        ``{"gamma": ..., "k": ..., "reg": ...}`` of the best mean score. Ties go to the
        smaller ``k`` (the sparser model), then the smaller ``gamma`` (the smoother
        kernel), then the larger ``reg``.
    best_score_ : float
    best_index_ : int
        Index of the best candidate in ``cv_results_``.
    best_estimator_ : GreedyKFDA
        Fitted on all the data with ``best_params_``; ``predict``, ``predict_proba``,
        ``predict_log_proba``, ``decision_function``, ``transform`` and ``score`` are its.
    refit_time_ : float
        Seconds of that fit.
    max_k_ : int
        The ``k`` ceiling used.
    gammas_ : ndarray
        The ``gamma`` grid used (``[None]`` for kernels without one).
    n_splits_ : int
    solver_ : {"dense", "factored"}
        The solver of the refit, ``best_estimator_.solver_``.
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has feature names.

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from gkfda import GreedyKFDACV
    >>> X, y = make_moons(n_samples=300, noise=0.25, random_state=0)
    >>> search = GreedyKFDACV(gammas=[0.5, 2.0, 8.0], max_k=30, cv=3).fit(X, y)
    >>> sorted(search.best_params_)
    ['gamma', 'k', 'reg']
    >>> len(search.cv_results_["params"])  # 3 gammas × 30 values of k
    90
    >>> bool(search.best_score_ > 0.85), search.best_estimator_.k_ == search.best_params_["k"]
    (True, True)
    >>> search.predict_proba(X[:2]).sum(axis=1).round(6).tolist()
    [1.0, 1.0]
    """

    _parameter_constraints: dict = {
        "gammas": [Interval(numbers.Integral, 1, None, closed="left"), "array-like"],
        "max_k": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "regs": ["array-like", None],
        "cv": ["cv_object"],
        "scoring": [StrOptions(set(get_scorer_names())), callable, None],
        # The parameters passed on to every fit: GreedyKFDA's own rules, stated once there.
        **{
            name: GreedyKFDA._parameter_constraints[name]
            for name in ("n_jobs", "criterion", "deflation", "stages", "kernel", "degree", "coef0",
                         "priors", "multiclass", "dtype", "random_state", "solver", "factor_rank", "factor_pool",
                         "verbose")
        },
    }

    def __init__(
        self,
        gammas=4,
        max_k=None,
        regs=None,
        cv=5,
        scoring=None,
        n_jobs=None,
        criterion="optimal",
        deflation="projection",
        stages=1,
        kernel="rbf",
        degree=None,
        coef0=None,
        priors=None,
        multiclass="shared",
        dtype="float64",
        random_state=None,
        solver="auto",
        factor_rank=DEFAULT_FACTOR_RANK,
        factor_pool="rpcholesky",
        verbose=False,
    ):
        self.gammas = gammas
        self.max_k = max_k
        self.regs = regs
        self.cv = cv
        self.scoring = scoring
        self.n_jobs = n_jobs
        self.criterion = criterion
        self.deflation = deflation
        self.stages = stages
        self.kernel = kernel
        self.degree = degree
        self.coef0 = coef0
        self.priors = priors
        self.multiclass = multiclass
        self.dtype = dtype
        self.random_state = random_state
        self.solver = solver
        self.factor_rank = factor_rank
        self.factor_pool = factor_pool
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.kernel == "precomputed"
        tags.input_tags.sparse = accepts_sparse(self.kernel)
        return tags

    def _base_estimator(self):
        return GreedyKFDA(
            criterion=self.criterion,
            deflation=self.deflation,
            stages=self.stages,
            kernel=self.kernel,
            degree=self.degree,
            coef0=self.coef0,
            priors=self.priors,
            multiclass=self.multiclass,
            dtype=self.dtype,
            random_state=self.random_state,
            solver=self.solver,
            factor_rank=self.factor_rank,
            factor_pool=self.factor_pool,
            verbose=self.verbose,
        )

    # -- the grid ---------------------------------------------------------------------

    def _gamma_grid(self, X):
        if isinstance(self.gammas, numbers.Integral):
            if not uses_gamma(self.kernel):
                return [None]
            exponents = np.linspace(*GAMMA_EXPONENTS, self.gammas) if self.gammas > 1 else [np.mean(GAMMA_EXPONENTS)]
            return (_default_gamma(X) * 2.0 ** np.asarray(exponents)).tolist()
        if not uses_gamma(self.kernel):
            name = "callable" if callable(self.kernel) else repr(self.kernel)
            raise ValueError(f"gammas: the {name} kernel has no gamma; leave gammas an int")
        return _positive_grid(self.gammas, "gammas", strictly=True).tolist()

    def _reg_grid(self):
        if self.regs is None:
            return [GreedyKFDA().reg]
        return _positive_grid(self.regs, "regs", strictly=False).tolist()

    def _check_splits(self, X, y, groups):
        cv = check_cv(self.cv, y, classifier=True)
        n_samples = X.shape[0]
        if groups is not None and np.shape(groups)[:1] != (n_samples,):
            raise ValueError(f"groups: must have one value per sample of X ({n_samples}), got shape {np.shape(groups)}")
        try:
            n_splits = cv.get_n_splits(X, y, groups)
        except ValueError as error:
            raise _splitter_error(error) from error
        if n_splits > n_samples:
            raise ValueError(f"cv: {n_splits} folds need at least {n_splits} samples, got {n_samples}")
        if isinstance(cv, StratifiedKFold):
            labels, counts = np.unique(y, return_counts=True)
            fewest = int(np.argmin(counts))
            if counts[fewest] < n_splits:
                label = labels.tolist()[fewest]
                raise ValueError(
                    f"cv: class {label!r} has {counts[fewest]} members, fewer than the {n_splits} "
                    "folds; use fewer folds (cv=...) or more samples"
                )
        try:
            splits = [(np.asarray(train), np.asarray(test)) for train, test in cv.split(X, y, groups)]
        except ValueError as error:  # other splitters' checks of the classes or groups
            raise _splitter_error(error) from error
        for i, (train, test) in enumerate(splits):
            if len(np.unique(y[train])) < 2:
                raise ValueError(f"cv: the training set of split {i} has only one class")
            unseen = np.setdiff1d(y[test], y[train])
            if self.scoring == "neg_log_loss" and len(unseen):
                # GridSearchCV scores such a split NaN: its model gives the class no probability.
                raise ValueError(
                    f"y: class {unseen.tolist()[0]!r} is in the test set of split {i} but not in its training "
                    "set, so scoring='neg_log_loss' cannot score it; use a stratified cv"
                )
        return splits

    def _k_ceiling(self, splits):
        smallest = min(len(train) for train, _ in splits)
        if self.max_k is None:
            return min(DEFAULT_MAX_K, smallest)
        if self.max_k > smallest:
            warnings.warn(
                f"max_k={self.max_k} is more than the smallest training fold ({smallest} "
                f"samples); using max_k={smallest}",
                UserWarning,
                stacklevel=5,  # _k_ceiling, fit, scikit-learn's and fits_atomically's wrappers, the caller
            )
            return smallest
        return int(self.max_k)

    # -- fit --------------------------------------------------------------------------

    @fits_atomically
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, groups=None):
        """Score every ``(gamma, k, reg)`` by cross-validation and refit the best.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_samples)
            Training data, or the training kernel when ``kernel="precomputed"``.
        y : array-like of shape (n_samples,)
        groups : array-like of shape (n_samples,), default=None
            Group labels, for group splitters given as ``cv``.

        Returns
        -------
        self : GreedyKFDACV
        """
        X, y = validate_input(self, X, reset=True, y=y)
        encoded_classes(y)  # at least two classes
        gammas = self._gamma_grid(X)
        regs = self._reg_grid()
        splits = self._check_splits(X, y, groups)
        max_k = self._k_ceiling(splits)
        if self.solver == "factored" and self.kernel != "linear":
            factor_rank_for(self.factor_rank, max_k, X.shape[0], "max_k")  # each fold fits max_k bases on the factor
        base = self._base_estimator()
        scorer = None if self.scoring in _PATH_SCORINGS else check_scoring(base, self.scoring)

        tasks = [(split, g) for split in range(len(splits)) for g in range(len(gammas))]
        results = Parallel(n_jobs=self.n_jobs)(
            delayed(_fit_and_score_path)(
                base, X, y, *splits[split], gammas[g], max_k, regs, self.scoring, scorer
            )
            for split, g in tasks
        )
        # scores[split, gamma, k - 1, reg]: the order of cv_results_ once flattened.
        shape = (len(splits), len(gammas), max_k, len(regs))
        scores = np.empty(shape)
        fit_times = np.empty(shape[:2])
        score_times = np.empty(shape[:2])
        for (split, g), (path_scores, fit_time, score_time) in zip(tasks, results):
            scores[split, g] = path_scores
            fit_times[split, g] = fit_time
            score_times[split, g] = score_time / (max_k * len(regs))
        self._store_results(scores.reshape(len(splits), -1), fit_times, score_times, gammas, max_k, regs)

        self.best_estimator_ = clone(base).set_params(**self.best_params_)
        start = time.perf_counter()
        self.best_estimator_.fit(X, y)
        self.refit_time_ = time.perf_counter() - start
        self.classes_ = self.best_estimator_.classes_
        self.solver_ = self.best_estimator_.solver_
        self.gammas_ = np.array(gammas, dtype=object if gammas == [None] else np.float64)
        self.max_k_ = max_k
        self.n_splits_ = len(splits)
        return self

    def _store_results(self, split_scores, fit_times, score_times, gammas, max_k, regs):
        """``cv_results_`` and the best candidate from ``split_scores[split, candidate]``."""
        grid = [(g, k, r) for g in gammas for k in range(1, max_k + 1) for r in regs]
        per_candidate = max_k * len(regs)
        results = {}

        def times(name, values):  # (split, gamma) → one value per candidate
            repeated = np.repeat(values, per_candidate, axis=1)
            results[f"mean_{name}"] = repeated.mean(axis=0)
            results[f"std_{name}"] = repeated.std(axis=0)

        times("fit_time", fit_times)
        times("score_time", score_times)
        for position, name in enumerate(("gamma", "k", "reg")):
            values = np.empty(len(grid), dtype=object)
            values[:] = [candidate[position] for candidate in grid]
            results[f"param_{name}"] = np.ma.MaskedArray(values, mask=False)
        results["params"] = [{"gamma": g, "k": k, "reg": r} for g, k, r in grid]
        for split, row in enumerate(split_scores):
            results[f"split{split}_test_score"] = row
        mean = split_scores.mean(axis=0)
        results["mean_test_score"] = mean
        results["std_test_score"] = split_scores.std(axis=0)
        # Ranks as GridSearchCV's: ties share the best rank, NaN scores come last.
        finite = np.where(np.isnan(mean), -np.inf, mean)
        order = np.argsort(-finite, kind="stable")
        ranks = np.empty(len(mean), dtype=np.int32)
        ranks[order] = 1 + np.searchsorted(-finite[order], -finite[order], side="left")
        results["rank_test_score"] = ranks
        self.cv_results_ = results

        best = np.flatnonzero(finite == finite.max())
        gamma_order = [0] if gammas == [None] else np.argsort(np.argsort(gammas, kind="stable"))
        keys = [(grid[i][1], gamma_order[i // per_candidate], -grid[i][2]) for i in best]
        self.best_index_ = int(best[min(range(len(best)), key=keys.__getitem__)])
        self.best_params_ = dict(results["params"][self.best_index_])
        self.best_score_ = float(mean[self.best_index_])

    # -- the best estimator's methods -------------------------------------------------

    def _delegate(self, method, X, *args):
        check_is_fitted(self)
        X = validate_input(self, X, reset=False)
        return getattr(self.best_estimator_, method)(X, *args)

    def predict(self, X):
        """Class labels of :attr:`best_estimator_`."""
        return self._delegate("predict", X)

    def predict_proba(self, X):
        """Class probabilities of :attr:`best_estimator_`."""
        return self._delegate("predict_proba", X)

    def predict_log_proba(self, X):
        """Log class probabilities of :attr:`best_estimator_`."""
        return self._delegate("predict_log_proba", X)

    def decision_function(self, X):
        """Decision values of :attr:`best_estimator_`."""
        return self._delegate("decision_function", X)

    def transform(self, X):
        """Nyström features of :attr:`best_estimator_`."""
        return self._delegate("transform", X)

    def score(self, X, y):
        """Accuracy of :attr:`best_estimator_` on ``(X, y)``."""
        return self._delegate("score", X, y)


def _splitter_error(error):
    """A splitter's ``ValueError`` with the argument at fault in front."""
    argument = "groups" if "'groups'" in str(error) else "cv"  # "The 'groups' parameter should not be None."
    return ValueError(f"{argument}: {error}")


def _positive_grid(values, name, strictly):
    grid = np.asarray(values, dtype=object)
    try:
        grid = grid.astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: must be a list of numbers, got {values!r}") from None
    if grid.ndim != 1 or grid.size == 0:
        raise ValueError(f"{name}: must be a non-empty 1-D list of numbers, got {values!r}")
    if not np.all(np.isfinite(grid)) or np.any(grid <= 0 if strictly else grid < 0):
        kind = "positive" if strictly else "non-negative"
        raise ValueError(f"{name}: every value must be finite and {kind}, got {grid.tolist()}")
    return grid


def _fit_and_score_path(base, X, y, train, test, gamma, max_k, regs, scoring, scorer):
    """Fit one selection of ``max_k`` bases on ``train`` and score every ``(k, reg)`` on
    ``test``: ``(scores[k - 1, reg], fit seconds, scoring seconds)``."""
    estimator = clone(base).set_params(gamma=gamma, k=max_k)
    X_train, y_train = _safe_split(estimator, X, y, train)
    X_test, y_test = _safe_split(estimator, X, y, test, train)
    start = time.perf_counter()
    estimator.fit(X_train, y_train)
    fit_time = time.perf_counter() - start
    start = time.perf_counter()
    scores = np.empty((max_k, len(regs)))
    for r, reg in enumerate(regs):
        # The selection does not depend on reg: the same bases, the discriminants refitted.
        model = estimator if reg == estimator.reg else estimator._refitted_with_reg(reg, X_train, y_train)
        if scorer is None:
            scores[:, r] = _path_scores(model, X_test, y_test, max_k, scoring)
        else:
            scores[:, r] = [scorer(model.truncate(k), X_test, y_test) for k in range(1, max_k + 1)]
    return scores, fit_time, time.perf_counter() - start


def _path_scores(estimator, X, y, max_k, scoring):
    """Accuracy or minus the log loss of the model truncated at every ``k`` up to
    ``max_k``: what ``predict`` and ``predict_proba`` of the truncated models give."""
    classes = estimator.classes_
    probabilities = estimator.proba_path(X, ks=np.arange(1, max_k + 1))
    if scoring == "neg_log_loss":
        log_loss(y, probabilities[0], labels=classes)  # y's checks
        true = probabilities[:, np.arange(len(y)), np.searchsorted(classes, y)]
        # log_loss(y, probabilities, labels=classes) for every k, without its per-call checks.
        return np.mean(np.log(np.clip(true, _EPSILON, 1.0 - _EPSILON)), axis=1)
    predictions = classes[np.argmax(probabilities, axis=2)]
    return np.mean(predictions == np.asarray(y)[None, :], axis=1)
