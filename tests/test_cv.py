"""GreedyKFDACV: its scores are those of GridSearchCV over plain GreedyKFDA fits."""

import doctest
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_iris, make_classification, make_moons
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import parametrize_with_checks

import gkfda
import gkfda.model_selection
from gkfda import GreedyKFDA, GreedyKFDACV


@pytest.fixture(scope="module")
def moons():
    return make_moons(n_samples=150, noise=0.3, random_state=0)


@pytest.fixture(scope="module")
def three_classes():
    X, y = make_classification(
        n_samples=150, n_features=6, n_informative=4, n_classes=3, n_clusters_per_class=1, random_state=1
    )
    return StandardScaler().fit_transform(X), y


def grid_search(X, y, gammas, max_k, cv, regs=(1e-4,), scoring=None, **params):
    """GridSearchCV over separate fits, its candidates listed in GreedyKFDACV's order of
    preference among ties (smaller k, then smaller gamma, then larger reg), so that its
    first-best is GreedyKFDACV's best."""
    grid = [
        {"k": [k], "gamma": [gamma], "reg": [reg]}
        for k in range(1, max_k + 1)
        for gamma in sorted(gammas, key=lambda g: (g is not None, g))
        for reg in sorted(regs, reverse=True)
    ]
    return GridSearchCV(GreedyKFDA(**params), grid, cv=cv, scoring=scoring, error_score="raise").fit(X, y)


def assert_same_scores(search, expected, rtol=1e-12):
    """Every candidate of ``search`` has the mean and fold scores ``expected`` gives it."""
    by_params = {
        (p["gamma"], p["k"], p["reg"]): i for i, p in enumerate(expected.cv_results_["params"])
    }
    results = search.cv_results_
    assert len(results["params"]) == len(by_params)
    for i, p in enumerate(results["params"]):
        j = by_params[(p["gamma"], p["k"], p["reg"])]
        for split in range(search.n_splits_):
            key = f"split{split}_test_score"
            np.testing.assert_allclose(results[key][i], expected.cv_results_[key][j], rtol=rtol, atol=rtol)
    assert search.best_params_ == expected.best_params_
    assert search.best_score_ == pytest.approx(expected.best_score_, rel=rtol, abs=rtol)


# -- the same candidates and scores as GridSearchCV --------------------------------------


def test_binary_accuracy_matches_grid_search(moons):
    X, y = moons
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    search = GreedyKFDACV(gammas=[0.5, 2.0, 8.0], max_k=12, cv=cv).fit(X, y)
    assert_same_scores(search, grid_search(X, y, [0.5, 2.0, 8.0], 12, cv))
    assert len(search.cv_results_["params"]) == 36
    # The accuracy varies along the path: the comparison is not of constants.
    assert np.ptp(search.cv_results_["mean_test_score"]) > 0.05


def test_log_loss_and_reg_grid_match_grid_search(moons):
    X, y = moons
    cv = StratifiedKFold(3, shuffle=True, random_state=1)
    regs = [1e-4, 0.1, 10.0]
    search = GreedyKFDACV(gammas=[1.0, 4.0], max_k=8, regs=regs, cv=cv, scoring="neg_log_loss").fit(X, y)
    expected = grid_search(X, y, [1.0, 4.0], 8, cv, regs=regs, scoring="neg_log_loss")
    assert_same_scores(search, expected, rtol=1e-9)
    # reg changes the scores (it is searched, not ignored).
    scores = search.cv_results_["mean_test_score"].reshape(2, 8, 3)
    assert np.abs(scores[..., 0] - scores[..., 2]).max() > 1e-3


def test_multiclass_matches_grid_search(three_classes):
    X, y = three_classes
    cv = StratifiedKFold(3, shuffle=True, random_state=2)
    search = GreedyKFDACV(gammas=[0.05, 0.3], max_k=10, cv=cv).fit(X, y)
    assert_same_scores(search, grid_search(X, y, [0.05, 0.3], 10, cv))
    assert search.predict_proba(X).shape == (150, 3)
    assert search.decision_function(X).shape == (150, 3)
    np.testing.assert_array_equal(search.classes_, [0, 1, 2])


def test_multiclass_log_loss_matches_grid_search():
    X, y = load_iris(return_X_y=True)
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    search = GreedyKFDACV(gammas=[0.1, 1.0], max_k=6, cv=cv, scoring="neg_log_loss").fit(X, y)
    assert_same_scores(search, grid_search(X, y, [0.1, 1.0], 6, cv, scoring="neg_log_loss"), rtol=1e-9)


def test_other_scorers_score_truncated_models(three_classes):
    X, y = three_classes
    cv = StratifiedKFold(3, shuffle=True, random_state=3)
    search = GreedyKFDACV(gammas=[0.2], max_k=6, regs=[1e-4, 1.0], cv=cv, scoring="f1_macro").fit(X, y)
    assert_same_scores(search, grid_search(X, y, [0.2], 6, cv, regs=[1e-4, 1.0], scoring="f1_macro"))


def test_precomputed_kernel_matches_grid_search(moons):
    X, y = moons
    K = rbf_kernel(X, gamma=2.0)
    cv = StratifiedKFold(3, shuffle=True, random_state=4)
    search = GreedyKFDACV(kernel="precomputed", max_k=10, cv=cv).fit(K, y)
    assert search.gammas_.tolist() == [None]
    assert_same_scores(search, grid_search(K, y, [None], 10, cv, kernel="precomputed"))
    assert search.predict(K[:5]).shape == (5,)


def test_criterion_and_options_reach_every_fit(moons):
    X, y = moons
    cv = StratifiedKFold(3, shuffle=True, random_state=5)
    options = dict(criterion="random", deflation="schur", random_state=3)
    search = GreedyKFDACV(gammas=[1.0, 3.0], max_k=8, cv=cv, **options).fit(X, y)
    assert_same_scores(search, grid_search(X, y, [1.0, 3.0], 8, cv, **options))
    assert search.best_estimator_.get_params()["deflation"] == "schur"


# -- the choice and the refit -------------------------------------------------------------


def test_refit_equals_a_fit_with_the_best_params(moons):
    X, y = moons
    search = GreedyKFDACV(gammas=4, max_k=20).fit(X, y)
    reference = GreedyKFDA(**search.best_params_).fit(X, y)
    np.testing.assert_array_equal(search.best_estimator_.support_, reference.support_)
    np.testing.assert_allclose(search.decision_function(X), reference.decision_function(X), rtol=1e-12)
    np.testing.assert_allclose(search.predict_proba(X), reference.predict_proba(X), rtol=1e-12)
    np.testing.assert_allclose(search.predict_log_proba(X), reference.predict_log_proba(X), rtol=1e-12)
    np.testing.assert_allclose(search.transform(X), reference.transform(X), rtol=1e-12)
    np.testing.assert_array_equal(search.predict(X), reference.predict(X))
    assert search.score(X, y) == reference.score(X, y)
    assert search.best_estimator_.k_ == search.best_params_["k"]
    assert search.n_features_in_ == 2 and search.refit_time_ > 0


def test_default_gamma_grid_is_relative_to_the_scale(moons):
    X, y = moons
    X = 10.0 * X
    search = GreedyKFDACV(max_k=5).fit(X, y)
    scale = 1.0 / (X.shape[1] * X.var())
    np.testing.assert_allclose(search.gammas_, scale * 2.0 ** np.array([-7, -5, -3, -1]))
    assert search.max_k_ == 5 and search.n_splits_ == 5
    assert len(search.cv_results_["params"]) == 4 * 5
    one = GreedyKFDACV(gammas=1, max_k=5).fit(X, y)
    np.testing.assert_allclose(one.gammas_, [scale / 16])


def test_default_k_ceiling_is_capped_by_the_fold(moons):
    X, y = moons
    search = GreedyKFDACV(gammas=[1.0], cv=3).fit(X, y)
    assert search.max_k_ == min(gkfda.model_selection.DEFAULT_MAX_K, 100)


def test_ties_go_to_the_smaller_k_then_the_smaller_gamma():
    # Two well separated blobs: many small models are perfect.
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-3, 0.3, size=(30, 2)), rng.normal(3, 0.3, size=(30, 2))])
    y = np.repeat([0, 1], 30)
    search = GreedyKFDACV(gammas=[0.3, 0.1, 0.2], max_k=6, cv=3).fit(X, y)
    results = search.cv_results_
    perfect = [p for p, s in zip(results["params"], results["mean_test_score"]) if s == 1.0]
    assert len(perfect) > 3
    smallest_k = min(p["k"] for p in perfect)
    assert search.best_params_["k"] == smallest_k
    assert search.best_params_["gamma"] == min(p["gamma"] for p in perfect if p["k"] == smallest_k)
    assert results["rank_test_score"][search.best_index_] == 1
    assert (results["rank_test_score"] == 1).sum() == len(perfect)


def test_cv_results_are_grid_search_shaped(moons):
    pandas = pytest.importorskip("pandas")
    X, y = moons
    search = GreedyKFDACV(gammas=[1.0, 2.0], max_k=4, regs=[1e-3, 1e-1], cv=4).fit(X, y)
    frame = pandas.DataFrame(search.cv_results_)
    assert len(frame) == 2 * 4 * 2
    for column in ("param_gamma", "param_k", "param_reg", "split3_test_score", "mean_test_score",
                   "std_test_score", "rank_test_score", "mean_fit_time", "std_fit_time", "mean_score_time"):
        assert column in frame
    assert frame.param_gamma.tolist() == [1.0] * 8 + [2.0] * 8  # gamma slowest, reg fastest
    assert frame.param_reg.tolist()[:4] == [1e-3, 0.1, 1e-3, 0.1]
    splits = frame[[f"split{i}_test_score" for i in range(4)]].to_numpy()
    np.testing.assert_allclose(frame.mean_test_score, splits.mean(axis=1))
    assert (frame.mean_fit_time > 0).all()
    assert search.best_score_ == frame.mean_test_score.max()


def test_n_jobs_gives_the_same_result(three_classes):
    X, y = three_classes
    one = GreedyKFDACV(gammas=3, max_k=10, cv=3, n_jobs=1).fit(X, y)
    two = GreedyKFDACV(gammas=3, max_k=10, cv=3, n_jobs=2).fit(X, y)
    for split in range(3):
        key = f"split{split}_test_score"
        np.testing.assert_array_equal(one.cv_results_[key], two.cv_results_[key])
    assert one.best_params_ == two.best_params_
    np.testing.assert_array_equal(one.decision_function(X), two.decision_function(X))


# -- scikit-learn integration -------------------------------------------------------------


def test_pipeline_clone_pickle_and_grid_search(moons):
    X, y = moons
    pipeline = make_pipeline(StandardScaler(), GreedyKFDACV(gammas=3, max_k=10, cv=3)).fit(X, y)
    assert pipeline.score(X, y) > 0.8
    copy = clone(pipeline)
    assert copy.get_params()["greedykfdacv__max_k"] == 10
    restored = pickle.loads(pickle.dumps(pipeline))
    np.testing.assert_array_equal(restored.predict_proba(X), pipeline.predict_proba(X))
    outer = GridSearchCV(GreedyKFDACV(gammas=2, cv=3), {"max_k": [2, 8]}, cv=3).fit(X, y)
    assert outer.best_params_["max_k"] in (2, 8)
    assert outer.best_estimator_.best_params_["k"] <= outer.best_params_["max_k"]


def test_group_splitters_get_groups(moons):
    from sklearn.model_selection import GroupKFold

    X, y = moons
    groups = np.arange(len(y)) % 5
    search = GreedyKFDACV(gammas=[1.0], max_k=5, cv=GroupKFold(5)).fit(X, y, groups=groups)
    assert search.n_splits_ == 5


def test_feature_names_are_checked(moons):
    pandas = pytest.importorskip("pandas")
    X, y = moons
    frame = pandas.DataFrame(X, columns=["a", "b"])
    search = GreedyKFDACV(gammas=[1.0], max_k=5, cv=3).fit(frame, y)
    assert search.feature_names_in_.tolist() == ["a", "b"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        search.predict(frame)
    with pytest.raises(ValueError, match="feature names"):
        search.predict(frame.rename(columns={"a": "c"}))


# -- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "params, error, argument",
    [
        (dict(gammas=[]), ValueError, "gammas"),
        (dict(gammas=[1.0, -2.0]), ValueError, "gammas"),
        (dict(gammas=[0.0]), ValueError, "gammas"),
        (dict(gammas=[[1.0, 2.0]]), ValueError, "gammas"),
        (dict(gammas=["wide"]), ValueError, "gammas"),
        (dict(gammas=0), InvalidParameterError, "gammas"),
        (dict(gammas="scale"), InvalidParameterError, "gammas"),
        (dict(max_k=0), InvalidParameterError, "max_k"),
        (dict(max_k=-3), InvalidParameterError, "max_k"),
        (dict(max_k=2.5), InvalidParameterError, "max_k"),
        (dict(regs=[-1.0]), ValueError, "regs"),
        (dict(regs=[]), ValueError, "regs"),
        (dict(cv=1), InvalidParameterError, "cv"),
        (dict(scoring="no such score"), InvalidParameterError, "scoring"),
        (dict(criterion="best"), InvalidParameterError, "criterion"),
        (dict(stages=0), InvalidParameterError, "stages"),
        (dict(kernel="linear", gammas=[1.0]), ValueError, "gammas"),
    ],
)
def test_bad_parameters_name_the_argument(moons, params, error, argument):
    X, y = moons
    with pytest.raises(error, match=argument):
        GreedyKFDACV(**params).fit(X, y)


def test_more_folds_than_samples_names_cv():
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    y = np.array([0, 1, 0, 1])
    with pytest.raises(ValueError, match="cv: 5 folds need at least 5 samples, got 4"):
        GreedyKFDACV(cv=KFold(5)).fit(X, y)


def test_a_class_smaller_than_the_folds_names_cv(moons):
    X, y = moons
    y = y.copy()
    y[:3] = 2  # a third class of 3 members for 5 folds
    with pytest.raises(ValueError, match=r"cv: class 2 has 3 members, fewer than the 5 folds"):
        GreedyKFDACV(max_k=5).fit(X, y)


def test_a_training_fold_of_one_class_names_cv():
    X = np.arange(12.0)[:, None]
    y = np.repeat([0, 1], 6)
    with pytest.raises(ValueError, match="cv: the training set of split 0 has only one class"):
        GreedyKFDACV(cv=[(np.arange(6), np.arange(6, 12))]).fit(X, y)


def test_k_beyond_the_training_fold_is_clipped_with_a_warning(moons):
    X, y = moons
    X, y = X[:30], y[:30]  # 3 folds: training folds of 20 samples
    with pytest.warns(UserWarning, match="max_k=500 is more than the smallest training fold"):
        search = GreedyKFDACV(gammas=[1.0], max_k=500, cv=3).fit(X, y)
    assert search.max_k_ == 20
    assert max(p["k"] for p in search.cv_results_["params"]) == 20


def test_unfitted_methods_raise_not_fitted(moons):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        GreedyKFDACV().predict(moons[0])


# -- scikit-learn's common checks and the doctest -----------------------------------------


@parametrize_with_checks([GreedyKFDACV(gammas=2, max_k=5, cv=3)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_docstring_examples_run():
    result = doctest.testmod(gkfda.model_selection, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted >= 5
