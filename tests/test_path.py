"""The sparsity path: truncated models equal separate fits and cost a fraction of them."""

import pickle

import numpy as np
import pytest
from sklearn.datasets import load_iris, make_moons

import gkfda

KS = [1, 5, 10, 20, 35]


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(400, noise=0.3, random_state=0)
    X_test, y_test = make_moons(300, noise=0.3, random_state=1)
    return X, y, X_test, y_test


@pytest.mark.parametrize("deflation", ["schur", "projection", "ortho-hotelling", "none"])
@pytest.mark.parametrize("criterion", ["optimal", "pseudo", "random"])
def test_decision_path_equals_separate_fits(moons, criterion, deflation):
    X, y, X_test, _ = moons
    params = dict(criterion=criterion, deflation=deflation, gamma=2.0, random_state=3)
    full = gkfda.GreedyKFDA(k=35, **params).fit(X, y)
    path = full.decision_path(X_test, KS)
    assert path.shape == (len(KS), len(X_test))
    for row, k in zip(path, KS):
        separate = gkfda.GreedyKFDA(k=k, **params).fit(X, y)
        np.testing.assert_array_equal(separate.support_, full.support_[:k])
        np.testing.assert_allclose(row, separate.decision_function(X_test), rtol=1e-7, atol=1e-9)


def test_error_path_matches_scores_and_truncate_matches_refit(moons):
    X, y, X_test, y_test = moons
    full = gkfda.GreedyKFDA(k=35, gamma=2.0).fit(X, y)
    errors = full.error_path(X_test, y_test, KS)
    for error, k in zip(errors, KS):
        small = full.truncate(k)
        assert small.k_ == k and small.get_params()["k"] == k
        assert error == pytest.approx(1.0 - small.score(X_test, y_test))
        refit = gkfda.GreedyKFDA(k=k, gamma=2.0).fit(X, y)
        np.testing.assert_allclose(small.predict_proba(X_test), refit.predict_proba(X_test), rtol=1e-7, atol=1e-10)
        np.testing.assert_allclose(small.transform(X_test), refit.transform(X_test), rtol=1e-7, atol=1e-9)
        np.testing.assert_array_equal(small.support_vectors_, refit.support_vectors_)
        assert pickle.loads(pickle.dumps(small)).k_ == k


def test_multiclass_path_and_truncation():
    X, y = load_iris(return_X_y=True)
    full = gkfda.GreedyKFDA(k=12, gamma=0.5).fit(X, y)
    path = full.decision_path(X, [3, 12])
    assert path.shape == (2, len(X), 3)
    refit = gkfda.GreedyKFDA(k=3, gamma=0.5).fit(X, y)
    np.testing.assert_allclose(path[0], refit.decision_function(X), rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(full.truncate(3).predict(X), refit.predict(X))
    assert full.error_path(X, y, [12])[0] == pytest.approx(1 - full.score(X, y))


def test_path_beyond_an_early_stop_is_the_full_model():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] > 0).astype(int)
    model = gkfda.GreedyKFDA(k=10, kernel="linear", deflation="projection").fit(X, y)
    assert model.stopped_early_ and model.k_ < 10
    path = model.decision_path(X, [model.k_, 10])
    np.testing.assert_allclose(path[1], model.decision_function(X))
    np.testing.assert_allclose(path[0], path[1])


@pytest.mark.parametrize("ks", [[0], [36], [1.5], [], "all"])
def test_bad_ks_name_the_argument(moons, ks):
    X, y, _, _ = moons
    model = gkfda.GreedyKFDA(k=35, gamma=2.0).fit(X, y)
    with pytest.raises(ValueError, match="^ks:"):
        model.decision_path(X, ks)


@pytest.mark.parametrize(("k", "error"), [(0, ValueError), (36, ValueError), (2.5, TypeError), (True, TypeError)])
def test_truncate_errors_name_k(moons, k, error):
    X, y, _, _ = moons
    full = gkfda.GreedyKFDA(k=35, gamma=2.0).fit(X, y)
    with pytest.raises(error, match=r"'k' parameter of truncate must be an int in the range \[1, 35\]"):
        full.truncate(k)
