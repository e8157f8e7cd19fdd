"""The scikit-learn estimator: the common checks and the behaviour of its methods."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy.special import logsumexp
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.datasets import load_iris, make_blobs, make_moons
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

import gkfda
from gkfda import GreedyKFDA, _core

# -- scikit-learn's common checks -------------------------------------------------------


@parametrize_with_checks(
    [
        GreedyKFDA(k=5),
        GreedyKFDA(k=5, deflation="projection", kernel="linear"),
        GreedyKFDA(k=5, dtype="float32"),
        GreedyKFDA(k=5, criterion="random", deflation="ortho-schur", random_state=0),
        GreedyKFDA(k=5, kernel="poly", degree=2, stages=2, criterion="pseudo"),
    ]
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _precomputed_expected_failures(estimator):
    # The common checks feed a precomputed-kernel estimator matrices that are not
    # kernels; refusing what is not symmetric positive semi-definite is intended, not a defect.
    return {
        "check_estimators_dtypes": (
            "casts the linear kernel X X' to int32/int64; the truncated matrix breaks "
            "|K_ij| <= sqrt(K_ii K_jj), so it is not PSD and is rejected"
        ),
        "check_positive_only_tag_during_fit": (
            "passes -K, whose negative diagonal is not PSD and is rejected"
        ),
        "check_decision_proba_consistency": (
            "fits on raw (80, 4) features without making a kernel of them; a precomputed "
            "kernel must be square"
        ),
    }


@parametrize_with_checks(
    [GreedyKFDA(k=5, kernel="precomputed")],
    expected_failed_checks=_precomputed_expected_failures,
)
def test_sklearn_compatible_precomputed(estimator, check):
    check(estimator)


# -- data ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(n_samples=200, noise=0.2, random_state=0)
    return X, y


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(n_samples=240, centers=4, n_features=3, cluster_std=1.5, random_state=1)
    return X, y


def _assert_log_of(log_proba, proba):
    """``log_proba ≈ log(proba)``; it is the more precise of the two where ``proba`` is tiny."""
    assert np.all(np.isfinite(log_proba))
    assert_allclose(np.exp(log_proba), proba, rtol=1e-9, atol=1e-15)
    confident = proba > 1e-6
    assert_allclose(log_proba[confident], np.log(proba[confident]), rtol=1e-6, atol=1e-9)


# -- persistence --------------------------------------------------------------------


@pytest.mark.parametrize("kernel", ["rbf", "precomputed"])
def test_pickle_round_trip(moons, kernel):
    X, y = moons
    data = rbf_kernel(X, X, gamma=2.0) if kernel == "precomputed" else X
    model = GreedyKFDA(k=15, gamma=None if kernel == "precomputed" else 2.0, kernel=kernel).fit(data, y)
    restored = pickle.loads(pickle.dumps(model))
    assert restored.get_params() == model.get_params()
    assert_array_equal(restored.support_, model.support_)
    assert_array_equal(restored.predict(data), model.predict(data))
    assert_array_equal(restored.decision_function(data), model.decision_function(data))
    assert_array_equal(restored.predict_proba(data), model.predict_proba(data))


def test_pickle_is_small(moons):
    """Only the chosen training points are kept, not the whole training set."""
    X, y = moons
    X = np.repeat(X, 20, axis=0)  # 4000 × 2
    y = np.repeat(y, 20)
    model = GreedyKFDA(k=10, gamma=2.0).fit(X, y)
    assert len(pickle.dumps(model)) < X.nbytes / 4


@pytest.mark.parametrize("centers", [2, 4])
def test_pickle_stores_each_support_vector_once(centers):
    X, y = make_blobs(n_samples=400, centers=centers, n_features=20, cluster_std=4.0, random_state=0)
    model = GreedyKFDA(k=30, gamma=0.01).fit(X, y)
    data = pickle.dumps(model)
    vectors = model.support_vectors_ if centers == 2 else np.vstack(model.support_vectors_)
    # Each chosen training row, as its float64 bytes, is in the pickle once (a row chosen by
    # several one-vs-rest models too: the models share the training rows of their bases).
    assert all(data.count(row.tobytes()) == 1 for row in vectors)
    restored = pickle.loads(data)
    for name in ("support_", "support_vectors_", "coef_", "projection_", "k_", "n_support_"):
        for ours, theirs in zip(np.atleast_1d(getattr(model, name)), np.atleast_1d(getattr(restored, name))):
            assert_array_equal(ours, theirs)
    assert_array_equal(restored.decision_function(X), model.decision_function(X))
    assert_array_equal(restored.decision_path(X, [5, 30]), model.decision_path(X, [5, 30]))


def test_clone_round_trip(moons):
    X, y = moons
    model = GreedyKFDA(k=12, gamma=1.5, deflation="projection", reg=1e-3).fit(X, y)
    copy = clone(model)
    assert copy.get_params() == model.get_params()
    assert not hasattr(copy, "classes_")
    copy.fit(X, y)
    assert_array_equal(copy.support_, model.support_)
    assert_array_equal(copy.predict(X), model.predict(X))
    assert_array_equal(copy.decision_function(X), model.decision_function(X))


# -- multiclass ---------------------------------------------------------------------


def test_shared_multiclass_attributes_and_consistency(blobs):
    X, y = blobs
    model = GreedyKFDA(k=8).fit(X, y)
    n_classes = 4
    assert model.support_.shape == (8,) and len(np.unique(model.support_)) == 8
    assert_array_equal(model.support_vectors_, X[model.support_])
    assert model.k_ == 8 and model.coef_.shape == (n_classes, 8) and model.intercept_.shape == (n_classes,)
    assert model.projection_.shape == (8, 8)
    assert model.n_support_.sum() == 8
    features = model.transform(X)
    assert features.shape == (len(X), 8)
    scores = model.decision_function(X)
    assert scores.shape == (len(X), n_classes)
    # Log-probabilities up to a constant per sample, linear in the features.
    assert_allclose(features @ model.coef_.T + model.intercept_, scores, rtol=1e-9, atol=1e-9)
    proba = model.predict_proba(X)
    assert_allclose(proba, np.exp(scores - logsumexp(scores, axis=1, keepdims=True)), rtol=1e-9, atol=1e-12)
    assert_array_equal(model.predict(X), model.classes_[np.argmax(scores, axis=1)])
    _assert_log_of(model.predict_log_proba(X), proba)
    assert model.score(X, y) > 0.95


def test_shared_multiclass_selection_is_the_core_s_over_class_codes_on_any_thread_count(blobs):
    X, y = blobs
    one = GreedyKFDA(k=12, n_jobs=1).fit(X, y)
    two = GreedyKFDA(k=12, n_jobs=2).fit(X, y)
    assert_array_equal(one.support_, two.support_)
    assert_array_equal(one.decision_function(X), two.decision_function(X))
    by_class = np.argsort(y, kind="stable")  # the fit's kernel order
    K = _core.kernel_matrix(X[by_class], gamma=one._gamma)
    alone, _, _ = _core.greedy_select(K, y[by_class].astype(np.int64), 12, deflation=one.deflation)
    assert_array_equal(by_class[alone], one.support_)


def test_multiclass_attributes_and_consistency(blobs):
    X, y = blobs
    model = GreedyKFDA(k=8, multiclass="ovr").fit(X, y)
    n_classes = 4
    assert_array_equal(model.classes_, np.arange(n_classes))
    assert isinstance(model.support_, list) and len(model.support_) == n_classes
    for support, vectors, coef, projection, k in zip(
        model.support_, model.support_vectors_, model.coef_, model.projection_, model.k_
    ):
        assert support.shape == (k,) and len(np.unique(support)) == k
        assert_array_equal(vectors, X[support])
        assert coef.shape == (k,) and projection.shape == (k, k)
    assert model.k_.shape == (n_classes,)
    assert model.intercept_.shape == (n_classes,)
    union = np.unique(np.concatenate(model.support_))
    assert model.n_support_.sum() == len(union)

    proba = model.predict_proba(X)
    assert proba.shape == (len(X), n_classes)
    assert_allclose(proba.sum(axis=1), 1.0)
    assert np.all((proba >= 0) & (proba <= 1))
    scores = model.decision_function(X)
    assert scores.shape == (len(X), n_classes)
    assert_array_equal(model.predict(X), model.classes_[np.argmax(scores, axis=1)])
    assert_array_equal(np.argmax(proba, axis=1), np.argmax(scores, axis=1))
    _assert_log_of(model.predict_log_proba(X), proba)
    assert model.transform(X).shape == (len(X), int(model.k_.sum()))
    assert model.score(X, y) > 0.95


def test_multiclass_selections_do_not_depend_on_threads_or_class_count(blobs):
    # The one-vs-rest selections go to the core together; each is the same on one thread
    # or two, and the same as its selection alone.
    X, y = blobs
    one = GreedyKFDA(k=12, n_jobs=1, multiclass="ovr").fit(X, y)
    two = GreedyKFDA(k=12, n_jobs=2, multiclass="ovr").fit(X, y)
    for support_one, support_two in zip(one.support_, two.support_):
        assert_array_equal(support_one, support_two)
    assert_array_equal(one.decision_function(X), two.decision_function(X))
    by_class = np.argsort(y, kind="stable")  # the fit's kernel order
    K = _core.kernel_matrix(X[by_class], gamma=one._gamma)
    for c in range(4):
        ((alone, _, _),) = _core.greedy_select_many(K, (y[by_class] == c)[None, :], 12, deflation=one.deflation)
        assert_array_equal(by_class[alone], one.support_[c])
    for deflation in ("hotelling", "ortho-schur"):
        model = GreedyKFDA(k=12, deflation=deflation, multiclass="ovr").fit(X, y)
        assert model.score(X, y) > 0.9


def test_multiclass_fits_with_shared_passes_match_each_selection_alone():
    # 1,300 samples: a 12.9 MiB kernel, from which the one-vs-rest selections share passes.
    X, y = make_blobs(n_samples=1300, centers=3, n_features=4, cluster_std=2.5, random_state=3)
    for deflation in ("schur", "hotelling"):
        one = GreedyKFDA(k=10, deflation=deflation, n_jobs=1, multiclass="ovr").fit(X, y)
        two = GreedyKFDA(k=10, deflation=deflation, n_jobs=2, multiclass="ovr").fit(X, y)
        by_class = np.argsort(y, kind="stable")  # the fit's kernel order
        K = _core.kernel_matrix(X[by_class], gamma=one._gamma)
        for c in range(3):
            assert_array_equal(one.support_[c], two.support_[c])
            ((alone, _, _),) = _core.greedy_select_many(K, (y[by_class] == c)[None, :], 10, deflation=deflation)
            assert_array_equal(by_class[alone], one.support_[c])
        assert_array_equal(one.decision_function(X), two.decision_function(X))
        assert one.score(X, y) > 0.8


def test_iris_string_labels():
    X, y = load_iris(return_X_y=True)
    species = np.array(["setosa", "versicolor", "virginica"])
    names = species[y]
    numeric = GreedyKFDA(k=10).fit(X, y)
    text = GreedyKFDA(k=10).fit(X, names)
    assert_array_equal(text.classes_, species)
    assert text.predict(X).dtype == names.dtype
    assert_array_equal(text.predict(X), species[numeric.predict(X)])
    assert_array_equal(text.decision_function(X), numeric.decision_function(X))
    assert text.score(X, names) > 0.9


def test_binary_string_labels(moons):
    X, y = moons
    labels = np.array(["no", "yes"])[y]
    model = GreedyKFDA(k=10, gamma=2.0).fit(X, labels)
    assert_array_equal(model.classes_, ["no", "yes"])
    assert set(model.predict(X)) <= {"no", "yes"}
    assert_array_equal(model.predict(X) == "yes", model.decision_function(X) > 0)


# -- binary -------------------------------------------------------------------------


def test_binary_methods_agree(moons):
    X, y = moons
    model = GreedyKFDA(k=20, gamma=2.0).fit(X, y)
    assert model.k_ == 20 and model.support_.shape == (20,)
    assert model.coef_.shape == (1, 20) and model.intercept_.shape == (1,)
    assert not model.stopped_early_
    assert model.score(X, y) > 0.9

    X_test, _ = make_moons(n_samples=300, noise=0.3, random_state=1)
    scores = model.decision_function(X_test)
    proba = model.predict_proba(X_test)
    assert scores.shape == (len(X_test),) and proba.shape == (len(X_test), 2)
    assert_allclose(proba.sum(axis=1), 1.0)
    order = np.argsort(scores, kind="stable")
    assert np.all(np.diff(proba[order, 1]) >= 0)
    assert_array_equal(model.predict(X_test), model.classes_[(scores > 0).astype(int)])
    assert_array_equal(proba[:, 1] > 0.5, scores > 0)
    _assert_log_of(model.predict_log_proba(X_test), proba)

    features = model.transform(X_test)
    assert features.shape == (len(X_test), model.k_)
    assert_allclose(features @ model.coef_[0] + model.intercept_[0], scores, rtol=1e-10, atol=1e-12)
    assert_allclose(model.fit_transform(X, y), model.transform(X))


def test_log_proba_far_from_the_data():
    # Far-away points have log-odds of hundreds: predict_proba rounds to 0 and 1 there,
    # predict_log_proba must stay finite and exact.
    X, y = make_moons(n_samples=200, noise=0.05, random_state=0)
    model = GreedyKFDA(k=2, kernel="linear").fit(X, y)
    far = X * 1e4
    log_proba = model.predict_log_proba(far)
    assert np.all(np.isfinite(log_proba))
    assert log_proba.min() < -100
    assert_allclose(np.exp(log_proba), model.predict_proba(far), atol=1e-15)
    assert_allclose(np.logaddexp(log_proba[:, 0], log_proba[:, 1]), 0.0, atol=1e-12)
    iris_X, iris_y = load_iris(return_X_y=True)
    multi = GreedyKFDA(k=10).fit(iris_X, iris_y)
    log_proba = multi.predict_log_proba(iris_X * 5)
    assert np.all(np.isfinite(log_proba))
    assert_allclose(np.exp(log_proba), multi.predict_proba(iris_X * 5), atol=1e-12)


def test_reg_zero_with_duplicate_points(moons):
    # reg=0 and a basis chosen twice-over (duplicates, no deflation) make the
    # within-class matrix singular: the minimum-norm solution is used, not an error.
    X, y = moons
    X = np.vstack([X, X])
    y = np.concatenate([y, y])
    model = GreedyKFDA(k=10, gamma=2.0, reg=0.0, deflation="none", criterion="random", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.fit(X, y)
        assert np.all(np.isfinite(model.decision_function(X)))
    assert model.score(X, y) > 0.8


def test_constant_features():
    # Nothing is selectable in a constant X: no bases, a warning that says so, an honest 0.5.
    X = np.ones((10, 2))
    y = np.array([0, 1] * 5)
    with pytest.warns(UserWarning, match="chose no basis"):
        model = GreedyKFDA(k=3).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        proba = model.predict_proba(X)
    assert model.k_ == 0 and model.stopped_early_
    assert_allclose(proba, 0.5)
    assert model.transform(X).shape == (10, 0)


# -- kernels ------------------------------------------------------------------------


def test_precomputed_matches_rbf(moons):
    X, y = moons
    X_train, X_test, y_train = X[:150], X[150:], y[:150]
    gamma = 1.5
    rbf = GreedyKFDA(k=15, gamma=gamma).fit(X_train, y_train)
    pre = GreedyKFDA(k=15, kernel="precomputed").fit(rbf_kernel(X_train, gamma=gamma), y_train)
    assert_array_equal(pre.support_, rbf.support_)
    assert pre.support_vectors_.shape == (15, 0)
    K_test = rbf_kernel(X_test, X_train, gamma=gamma)
    assert_array_equal(pre.predict(K_test), rbf.predict(X_test))
    assert_allclose(pre.decision_function(K_test), rbf.decision_function(X_test), rtol=1e-6, atol=1e-8)
    assert_allclose(pre.predict_proba(K_test), rbf.predict_proba(X_test), rtol=1e-6, atol=1e-8)


def test_callable_kernel_matches_rbf(moons):
    X, y = moons
    rbf = GreedyKFDA(k=15, gamma=0.5).fit(X, y)
    func = GreedyKFDA(k=15, kernel=lambda A, B: rbf_kernel(A, B, gamma=0.5)).fit(X, y)
    assert_array_equal(func.support_, rbf.support_)
    assert_array_equal(func.predict(X), rbf.predict(X))
    assert_allclose(func.decision_function(X), rbf.decision_function(X), rtol=1e-6, atol=1e-8)


def test_linear_and_poly_kernels_fit(blobs):
    X, y = blobs
    for params in [{"kernel": "linear"}, {"kernel": "poly", "degree": 2, "gamma": 0.1}]:
        model = GreedyKFDA(k=6, deflation="projection", **params).fit(X, y)
        assert model.score(X, y) > 0.7


def test_float32_close_to_float64(moons):
    X, y = moons
    double = GreedyKFDA(k=10, gamma=2.0, dtype="float64").fit(X, y)
    single = GreedyKFDA(k=10, gamma=2.0, dtype="float32").fit(X, y)
    # Well-conditioned (10 well-spread bases of 200): float32 rounding does not change
    # any choice, so the support is identical and only the kernel values differ.
    assert_array_equal(single.support_, double.support_)
    assert_allclose(single.decision_function(X), double.decision_function(X), rtol=1e-3, atol=1e-3)
    assert np.mean(single.predict(X) == double.predict(X)) > 0.99
    # float32 input with the float64 engine is upcast, and vice versa.
    assert_array_equal(GreedyKFDA(k=10, gamma=2.0).fit(X.astype(np.float32), y).support_, double.support_)


@pytest.mark.parametrize("criterion", ["optimal", "random"])
def test_thread_count_does_not_change_results(moons, criterion):
    X, y = moons
    X = np.repeat(X, 3, axis=0) + np.random.default_rng(0).normal(scale=0.01, size=(600, 2))
    y = np.repeat(y, 3)
    params = dict(k=25, gamma=2.0, criterion=criterion, random_state=3)
    one = GreedyKFDA(n_jobs=1, **params).fit(X, y)
    two = GreedyKFDA(n_jobs=2, **params).fit(X, y)
    assert_array_equal(one.support_, two.support_)
    assert_array_equal(one.decision_function(X), two.decision_function(X))
    assert_array_equal(one.predict_proba(X), two.predict_proba(X))


def _fit_and_predict(X, y):
    """A 2-thread fit and batch prediction (module level, so a forked child can run it)."""
    model = GreedyKFDA(k=10, gamma=2.0, n_jobs=2).fit(X, y)
    return model.decision_function(np.repeat(X, 2, axis=0))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_fits_with_threads_of_its_own(moons):
    """The core keeps its thread pools for the process's life; a child made by fork (as
    multiprocessing does on Linux) has none of the parent's threads and must make its own
    instead of waiting forever on the parent's."""
    X, y = moons
    expected = _fit_and_predict(X, y)  # the parent's pools exist from here on
    context = multiprocessing.get_context("fork")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork of a threaded process
        with context.Pool(1) as pool:
            result = pool.apply_async(_fit_and_predict, (X, y))
            assert_array_equal(result.get(timeout=120), expected)


def test_concurrent_callers_share_the_pools_and_get_their_own_results(moons):
    X, y = moons
    expected = _fit_and_predict(X, y)
    with ThreadPoolExecutor(4) as executor:
        results = list(executor.map(lambda _: _fit_and_predict(X, y), range(8)))
    for result in results:
        assert_array_equal(result, expected)


@pytest.mark.parametrize("value, limit", [("1", 1), ("1,1", 1), ("1000", None), ("", None), ("0", None), ("two", None)])
def test_n_jobs_none_follows_omp_num_threads(monkeypatch, moons, value, limit):
    """joblib's worker processes set OMP_NUM_THREADS to cores // n_jobs; ``n_jobs=None``
    follows it so that a parallel grid search does not oversubscribe the machine."""
    from gkfda import _core
    from gkfda._validation import thread_count

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    cores = thread_count(None)
    monkeypatch.setenv("OMP_NUM_THREADS", value)
    expected = cores if limit is None else limit
    assert thread_count(None) == expected
    # Explicit values are kept, up to the cores available.
    assert thread_count(1) == 1 and thread_count(-1) == cores and thread_count(cores + 5) == cores
    seen = []
    original = _core.greedy_select

    def spy(*args, **kwargs):
        seen.append(kwargs["n_threads"])
        return original(*args, **kwargs)

    monkeypatch.setattr(_core, "greedy_select", spy)
    GreedyKFDA(k=10, gamma=2.0).fit(*moons)
    assert seen == [expected]


def test_random_criterion_reproducible(moons):
    X, y = moons
    first = GreedyKFDA(k=30, criterion="random", random_state=42).fit(X, y)
    again = GreedyKFDA(k=30, criterion="random", random_state=42).fit(X, y)
    other = GreedyKFDA(k=30, criterion="random", random_state=7).fit(X, y)
    assert_array_equal(first.support_, again.support_)
    assert len(np.unique(first.support_)) == 30
    assert not np.array_equal(first.support_, other.support_)
    seeded = GreedyKFDA(k=30, criterion="random", random_state=np.random.RandomState(42)).fit(X, y)
    assert_array_equal(seeded.support_, first.support_)


def test_random_criterion_follows_a_seeded_order_of_the_callers_samples(moons):
    # fit orders its kernel by class; the random priority stays one over the caller's rows.
    X, y = moons
    model = GreedyKFDA(k=12, criterion="random", deflation="projection", random_state=3).fit(X, y)
    expected = np.random.RandomState(3).permutation(len(X))[:12]
    assert_array_equal(model.support_, expected)
    assert_allclose(model.support_vectors_, X[expected])


def test_class_ordering_inside_fit_does_not_show(moons):
    # The same samples in another order give the same bases, as the caller's indices.
    X, y = moons
    shuffle = np.random.default_rng(0).permutation(len(X))
    a = GreedyKFDA(k=20, gamma=1.5).fit(X, y)
    b = GreedyKFDA(k=20, gamma=1.5).fit(X[shuffle], y[shuffle])
    assert_array_equal(shuffle[b.support_], a.support_)
    assert_allclose(b.decision_function(X), a.decision_function(X), rtol=1e-6, atol=1e-9)


def test_grid_search_in_pipeline(moons):
    X, y = moons
    pipeline = make_pipeline(StandardScaler(), GreedyKFDA())
    grid = GridSearchCV(pipeline, {"greedykfda__k": [5, 20], "greedykfda__gamma": [0.5, 2.0]}, cv=3)
    grid.fit(X, y)
    assert grid.best_params_["greedykfda__k"] in (5, 20)
    assert grid.best_params_["greedykfda__gamma"] in (0.5, 2.0)
    assert grid.best_score_ > 0.8
    assert grid.predict(X).shape == y.shape


def test_fit_function(moons):
    X, y = moons
    model = gkfda.fit(X, y, k=12, deflation="schur", gamma=2.0)
    assert isinstance(model, GreedyKFDA)
    assert model.get_params()["k"] == 12 and model.deflation == "schur" and model.gamma == 2.0
    assert model.k_ == 12
    reference = GreedyKFDA(k=12, deflation="schur", gamma=2.0).fit(X, y)
    assert_array_equal(model.support_, reference.support_)


@pytest.mark.parametrize("deflation", ["projection", "schur", "ortho-projection"])
def test_early_stop_on_low_rank_kernel(deflation):
    # A linear kernel of 2-feature data has rank 2: after two picks every deflated
    # column is numerically zero and the selection must stop.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 2))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    model = GreedyKFDA(k=10, kernel="linear", deflation=deflation).fit(X, y)
    assert model.k_ < 10
    assert model.k_ == 2
    assert model.stopped_early_
    assert model.support_.shape == (model.k_,)
    assert model.coef_.shape == (1, model.k_)
    assert model.transform(X).shape == (80, model.k_)
    assert model.score(X, y) > 0.95
    assert_allclose(model.predict_proba(X).sum(axis=1), 1.0)


def test_stages(moons):
    X, y = moons
    model = GreedyKFDA(k=12, stages=4, gamma=2.0).fit(X, y)
    assert model.k_ == 12 and len(np.unique(model.support_)) == 12
    assert model.score(X, y) > 0.9


@pytest.mark.parametrize("criterion", gkfda.CRITERIA)
@pytest.mark.parametrize("deflation", gkfda.DEFLATIONS)
def test_every_criterion_and_deflation_fits(moons, criterion, deflation):
    X, y = moons
    model = GreedyKFDA(k=6, gamma=2.0, criterion=criterion, deflation=deflation, random_state=0).fit(X, y)
    assert 1 <= model.k_ <= 6
    assert len(np.unique(model.support_)) == model.k_
    assert np.all(np.isfinite(model.decision_function(X)))


# -- BLAS threads ------------------------------------------------------------------------


def _blas_threads():
    import threadpoolctl

    return {lib["filepath"]: lib["num_threads"] for lib in threadpoolctl.threadpool_info() if lib["user_api"] == "blas"}


def test_a_fit_leaves_no_blas_worker_spinning():
    """OpenBLAS threads a product from k ≈ 700 on (the expansion weights R'w) and its
    workers then busy-wait ~0.1 s, taking a core from whatever the caller runs next. After
    a fit with k = 720 this process must burn (almost) no CPU while it sleeps: ~0.1 s of CPU
    when a product ran multi-threaded, ~0 when every one ran on one BLAS thread. CPU time,
    not wall time, so a loaded machine does not make it fail."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(760, 8))
    y = (X[:, 0] + np.sin(X[:, 1]) > 0).astype(int)
    model = GreedyKFDA(k=720, gamma=0.5, deflation="projection").fit(X, y)
    assert model.k_ == 720
    start = time.process_time()
    time.sleep(0.15)
    assert time.process_time() - start < 0.03


def test_the_model_linear_algebra_runs_on_one_blas_thread_and_restores_it(monkeypatch):
    """Multi-threaded BLAS workers keep spinning after a call and slow the Rust passes of
    the next fit; the models' small linear algebra runs on one BLAS thread instead, and
    the caller's setting comes back afterwards."""
    import threadpoolctl

    import gkfda._discriminant

    X, y = make_moons(200, noise=0.2, random_state=0)
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        before = _blas_threads()
        if not before:
            pytest.skip("no BLAS library that threadpoolctl can see")
        seen = []
        original = gkfda._discriminant._ridge_regression

        def spy(*args):
            seen.append(_blas_threads())
            return original(*args)

        monkeypatch.setattr(gkfda._discriminant, "_ridge_regression", spy)
        model = GreedyKFDA(k=20, gamma=2.0).fit(X, y)
        assert seen and all(set(threads.values()) == {1} for threads in seen)
        assert _blas_threads() == before
        with gkfda._discriminant.one_blas_thread():
            assert set(_blas_threads().values()) == {1}
        assert _blas_threads() == before
        model.decision_path(X, ks=[5, 20])
        assert _blas_threads() == before


def test_joblib_workers_give_the_core_their_thread_budget():
    """In loky's worker processes (GridSearchCV(n_jobs=2)) the core runs on the threads
    joblib gives each worker, cores // n_jobs, not on every core."""
    from joblib import Parallel, delayed

    from gkfda._validation import thread_count

    cores = thread_count(None)
    budgets = Parallel(n_jobs=2, backend="loky")(delayed(thread_count)(None) for _ in range(2))
    assert budgets == [max(1, cores // 2)] * 2


def test_huge_n_jobs_runs_on_the_cores_available(moons):
    """n_jobs far above the cores is accepted and runs on the cores, without a pool of
    thousands of threads."""
    import threading

    X, y = moons
    before = threading.active_count()
    model = GreedyKFDA(k=5, n_jobs=5000).fit(X, y)
    assert_array_equal(model.predict(X), GreedyKFDA(k=5, n_jobs=1).fit(X, y).predict(X))
    # rayon's threads are not Python threads; the process's own count is read from /proc.
    with open("/proc/self/status") as status:
        threads = int(next(line for line in status if line.startswith("Threads:")).split()[1])
    assert threads < 200, threads
    assert threading.active_count() == before
