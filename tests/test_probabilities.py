"""Calibrated probabilities, class priors and the truncated models' probabilities."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import load_breast_cancer, make_classification, make_moons
from sklearn.metrics import log_loss
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from gkfda import GreedyKFDA, reference
from gkfda._discriminant import fit_discriminant


@pytest.mark.parametrize("n_classes", [2, 3, 5])
@pytest.mark.parametrize("reg", [1e-4, 1e-2])
def test_closed_form_leave_one_out_calibration_equals_the_literal_one(n_classes, reg):
    # The estimator's calibration uses the leverages of every prefix at once; the
    # reference refits the regression once per left-out sample.
    rng = np.random.default_rng(n_classes)
    X = rng.normal(size=(90, 3))
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1], np.quantile(X[:, 0], np.linspace(0, 1, n_classes + 1)[1:-1]))
    K = reference.rbf_kernel(X, X, gamma=0.5)
    indices = rng.choice(len(y), size=12, replace=False)
    model = fit_discriminant(K[:, indices], K[np.ix_(indices, indices)], y, n_classes, None, indices, reg,
                             float(np.mean(np.diag(K))))
    expected = reference.fit_model(K, y, indices, reg=reg)
    coef, intercept = model.linear()
    X_test = rng.normal(size=(30, 3))
    cross = reference.rbf_kernel(X_test, X[indices], gamma=0.5)
    logits = model.transform(cross) @ coef + intercept
    log_proba = logits - np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1, keepdims=True)) - logits.max(
        1, keepdims=True)
    assert_allclose(log_proba, reference.predict_log_proba(expected, cross), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("multiclass", ["shared", "ovr"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_a_truncated_model_is_a_fit_with_that_k_probabilities_included(multiclass, n_classes):
    X, y = make_classification(240, 6, n_informative=4, n_classes=n_classes, n_clusters_per_class=1, random_state=1)
    model = GreedyKFDA(k=30, multiclass=multiclass).fit(X, y)
    path = model.proba_path(X, ks=[5, 17, 30])
    for position, k in enumerate([5, 17, 30]):
        alone = GreedyKFDA(k=k, multiclass=multiclass).fit(X, y)
        assert_allclose(model.truncate(k).predict_proba(X), alone.predict_proba(X), rtol=1e-9, atol=1e-12)
        assert_allclose(path[position], alone.predict_proba(X), rtol=1e-7, atol=1e-9)


def test_probabilities_do_not_grow_overconfident_with_k():
    # Fitted to their own training projections, the probabilities of a k=100 model were
    # twice as far off as those of k=10; calibrated on leave-one-out scores, they are not.
    X, y = load_breast_cancer(return_X_y=True)
    folds = StratifiedKFold(5, shuffle=True, random_state=0)
    losses = {}
    for k in (10, 100):
        pipeline = make_pipeline(StandardScaler(), GreedyKFDA(k=k))
        losses[k] = log_loss(y, cross_val_predict(pipeline, X, y, cv=folds, method="predict_proba"))
    assert losses[100] <= 1.1 * losses[10]
    assert losses[100] < 0.12


def test_a_kernel_too_narrow_for_the_data_predicts_the_majority_class():
    # Every point is its own island: the model learns nothing that generalises, and the
    # priors decide (the midpoint threshold of equal priors predicted the minority class).
    X, y = load_breast_cancer(return_X_y=True)
    folds = StratifiedKFold(5, shuffle=True, random_state=0)
    pipeline = make_pipeline(StandardScaler(), GreedyKFDA(gamma=30.0))
    predicted = cross_val_predict(pipeline, X, y, cv=folds)
    majority = np.mean(y == np.bincount(y).argmax())
    assert np.mean(predicted == y) >= majority - 0.01


def test_priors_shift_the_log_odds_by_their_log_ratio():
    X, y = make_moons(300, noise=0.3, random_state=0)
    empirical = GreedyKFDA(k=20, gamma=2.0).fit(X, y)
    skewed = GreedyKFDA(k=20, gamma=2.0, priors=[0.9, 0.1]).fit(X, y)
    assert_allclose(empirical.priors_, np.bincount(y) / len(y))
    assert_array_equal(skewed.priors_, [0.9, 0.1])
    shift = np.log(0.1 / 0.9) - np.log(empirical.priors_[1] / empirical.priors_[0])
    assert_allclose(skewed.decision_function(X), empirical.decision_function(X) + shift, atol=1e-9)
    assert np.mean(skewed.predict(X) == 0) > np.mean(empirical.predict(X) == 0)


def test_priors_of_many_classes_shift_the_log_probabilities():
    X, y = make_classification(300, 5, n_informative=3, n_classes=3, n_clusters_per_class=1, random_state=2)
    for multiclass in ("shared", "ovr"):
        empirical = GreedyKFDA(k=15, multiclass=multiclass).fit(X, y)
        uniform = GreedyKFDA(k=15, multiclass=multiclass, priors=[0.6, 0.2, 0.2]).fit(X, y)
        assert np.mean(uniform.predict(X) == 0) >= np.mean(empirical.predict(X) == 0)
        assert_allclose(uniform.predict_proba(X).sum(axis=1), 1.0)


def test_a_model_that_learned_nothing_predicts_the_most_probable_class():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = np.r_[np.zeros(80, int), np.ones(40, int)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # no basis chosen
        model = GreedyKFDA(k=5, gamma=1e-12).fit(X, y)
    assert model.k_ == 0
    assert_array_equal(model.predict(X), 0)
    assert_allclose(model.predict_proba(X), np.tile([2 / 3, 1 / 3], (120, 1)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert_array_equal(GreedyKFDA(k=5, gamma=1e-12, priors=[0.3, 0.7]).fit(X, y).predict(X), 1)


@pytest.mark.parametrize(
    ("priors", "pattern"),
    [
        ([0.5, 0.25, 0.25], r"^priors: must have one value per class \(2\)"),
        ([0.7, 0.7], r"^priors: must sum to 1"),
        ([1.5, -0.5], r"^priors: every prior must be positive"),
        ([1.0, 0.0], r"^priors: every prior must be positive"),
        ([np.nan, 0.5], r"^priors: every prior must be positive and finite"),
        (["a", "b"], r"^priors: must be an array of numbers"),
    ],
)
def test_bad_priors_are_refused_naming_the_argument(priors, pattern):
    X, y = make_moons(60, noise=0.2, random_state=0)
    with pytest.raises(ValueError, match=pattern):
        GreedyKFDA(k=5, priors=priors).fit(X, y)


def test_a_multiclass_value_not_in_the_list_is_refused():
    X, y = make_moons(60, noise=0.2, random_state=0)
    with pytest.raises(ValueError, match=r"'multiclass' parameter of GreedyKFDA must be a str among"):
        GreedyKFDA(multiclass="ovo").fit(X, y)


@pytest.mark.parametrize("multiclass", ["shared", "ovr"])
def test_predict_is_the_argmax_of_predict_proba_and_of_decision_function(multiclass):
    X, y = make_classification(200, 5, n_informative=3, n_classes=4, n_clusters_per_class=1, random_state=3)
    model = GreedyKFDA(k=20, multiclass=multiclass).fit(X, y)
    assert_array_equal(model.predict(X), model.classes_[model.predict_proba(X).argmax(axis=1)])
    assert_array_equal(model.predict(X), model.classes_[model.decision_function(X).argmax(axis=1)])
    assert_allclose(np.exp(model.predict_log_proba(X)), model.predict_proba(X), rtol=1e-12, atol=1e-15)
