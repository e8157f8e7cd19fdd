"""ParsimoniousKFDA (kFDA_q): parity with the NumPy oracle, the MM iteration's properties,
calibration, scikit-learn compatibility and bad input."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import load_iris, make_moons
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.utils.estimator_checks import parametrize_with_checks

from gkfda import ParsimoniousKFDA, reference
from gkfda.datasets import load_benchmark
from gkfda.parsimonious import PRUNE, augmented_gram, mm_fit, ridge_start, targets

# -- scikit-learn's common checks -------------------------------------------------------


@parametrize_with_checks(
    [
        ParsimoniousKFDA(),
        ParsimoniousKFDA(q=0.5, rho=1e-2, kernel="linear", penalize_bias=False),
        ParsimoniousKFDA(kernel="poly", degree=2, threshold=0.0, max_iter=20),
    ]
)
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # max_iter=20
def test_sklearn_compatible(estimator, check):
    check(estimator)


# -- data -------------------------------------------------------------------------------


def _problem(seed, m=80):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 2))
    y = (X[:, 0] + np.sin(2 * X[:, 1]) + 0.4 * rng.normal(size=m) > 0).astype(int)
    return X, y


@pytest.fixture(scope="module")
def moons():
    return make_moons(n_samples=300, noise=0.25, random_state=0)


# -- parity with the oracle ------------------------------------------------------------

PARITY = [
    (seed, q, rho, penalize_bias)
    for seed in (0, 1)
    for q in (1.0, 0.5)
    for rho in (1e-3, 1e-2, 1e-1)
    for penalize_bias in (True, False)
]


@pytest.mark.parametrize("seed, q, rho, penalize_bias", PARITY)
def test_matches_the_reference(seed, q, rho, penalize_bias):
    X, y = _problem(seed)
    K = rbf_kernel(X, gamma=0.5)
    omega, objective = reference.parsimonious_fit(K, y == 1, q=q, rho=rho, penalize_bias=penalize_bias)
    model = ParsimoniousKFDA(q=q, rho=rho, kernel="precomputed", penalize_bias=penalize_bias).fit(K, y)
    assert_array_equal(model.support_, reference.parsimonious_support(omega))
    scale = np.abs(omega).max()
    assert_allclose(model.dual_coef_, omega[1:][model.support_], rtol=1e-7, atol=1e-9 * scale)
    assert_allclose(model.intercept_[0], omega[0], rtol=1e-7, atol=1e-9 * scale)
    assert model.n_iter_ == len(objective) - 1
    _assert_same_objective(model, objective, q, rho, scale)


def _assert_same_objective(model, objective, q, rho, scale):
    """The objectives agree but for the penalty of the coefficients pruned from the fast
    solve (each below PRUNE · max|ω|), which the oracle keeps shrinking."""
    m = model.n_features_in_
    pruned = rho * m * (m + 1) * (PRUNE * scale) ** q
    assert_allclose(model.objective_, objective, rtol=1e-9, atol=pruned)


def test_objective_never_increases():
    for seed in range(4):
        X, y = _problem(seed, m=120)
        for q in (1.0, 0.5, 0.3):
            model = ParsimoniousKFDA(q=q, rho=3e-3, gamma=1.0, tol=1e-8).fit(X, y)
            steps = np.diff(model.objective_)
            assert np.all(steps <= 1e-10 * model.objective_[0]), (seed, q, steps.max())
            assert model.objective_[-1] < model.objective_[0]


def test_q_below_one_keeps_fewer_samples():
    # The mechanism of Harrison & Pasupa (2010, §3): the sharper penalty of q = 0.5 leaves fewer samples.
    for seed in range(3):
        X, y = _problem(seed, m=100)
        lasso = ParsimoniousKFDA(q=1.0, rho=0.05, gamma=0.5).fit(X, y)
        half = ParsimoniousKFDA(q=0.5, rho=0.05, gamma=0.5).fit(X, y)
        assert len(half.support_) < len(lasso.support_)
        assert len(half.support_) <= 20


def test_larger_rho_keeps_fewer_samples(moons):
    X, y = moons
    sizes = [len(ParsimoniousKFDA(q=0.5, rho=rho, gamma=2.0).fit(X, y).support_) for rho in (1e-4, 1e-3, 1e-2)]
    assert sizes[0] > sizes[1] > sizes[2]


def test_rho_zero_is_least_squares():
    X, y = _problem(0, m=40)
    K = rbf_kernel(X, gamma=0.5)
    model = ParsimoniousKFDA(rho=0.0, kernel="precomputed", threshold=0.0).fit(K, y)
    fitted = model.discriminant(K)
    y_hat = targets(y == 1)
    # The least-squares fit of ŷ on [1 K]: the residual is orthogonal to the columns.
    augmented = np.hstack([np.ones((40, 1)), K])
    assert_allclose(augmented.T @ (y_hat - fitted), 0.0, atol=1e-6 * np.abs(augmented.T @ y_hat).max())


def test_pruned_solve_equals_the_full_one():
    # The pruning of underflowed coefficients changes nothing beyond rounding.
    X, y = _problem(3, m=100)
    K = rbf_kernel(X, gamma=1.0)
    y_hat = targets(y == 1)
    gram, products = augmented_gram(K, y_hat)
    omega, history, _ = mm_fit(K, gram, products, y_hat, ridge_start(gram, products), 0.5, 1e-2, 1e-12, 300, True)
    full, full_history = reference.parsimonious_fit(K, y == 1, q=0.5, rho=1e-2, tol=1e-12, max_iter=300)
    assert np.sum(omega == 0.0) > 50  # the pruning did drop most coefficients
    assert_allclose(omega, full, atol=1e-10 * np.abs(full).max())
    assert len(history) == len(full_history)


def test_threshold_zeroes_small_coefficients_without_refit():
    X, y = _problem(1, m=100)
    K = rbf_kernel(X, gamma=0.5)
    loose = ParsimoniousKFDA(q=1.0, rho=0.05, kernel="precomputed", threshold=1e-2).fit(K, y)
    tight = ParsimoniousKFDA(q=1.0, rho=0.05, kernel="precomputed", threshold=1e-8).fit(K, y)
    assert set(loose.support_) < set(tight.support_)
    kept = np.isin(tight.support_, loose.support_)
    assert_allclose(loose.dual_coef_, tight.dual_coef_[kept])
    largest = np.abs(tight.dual_coef_).max()
    assert np.all(np.abs(tight.dual_coef_[~kept]) <= 1e-2 * largest)


def test_init_array_is_the_start():
    X, y = _problem(2, m=50)
    K = rbf_kernel(X, gamma=0.5)
    start = np.full(51, 0.01)
    model = ParsimoniousKFDA(q=0.5, rho=0.02, kernel="precomputed", init=start).fit(K, y)
    omega, objective = reference.parsimonious_fit(K, y == 1, q=0.5, rho=0.02, init=start)
    _assert_same_objective(model, objective, 0.5, 0.02, np.abs(omega).max())
    assert_array_equal(model.support_, reference.parsimonious_support(omega))


def test_theta_is_the_targets_midpoint():
    X, y = _problem(0, m=60)
    y[:10] = 1
    model = ParsimoniousKFDA(gamma=0.5).fit(X, y)
    n, n1 = len(y), int(np.sum(y == 1))
    assert_allclose(model.theta_[0], 0.5 * n * (1 / n1 - 1 / (n - n1)))


# -- predictions and probabilities ------------------------------------------------------


def test_predict_is_argmax_of_predict_proba(moons):
    X, y = moons
    model = ParsimoniousKFDA(q=0.5, rho=1e-3, gamma=2.0).fit(X, y)
    proba = model.predict_proba(X)
    assert_array_equal(model.predict(X), model.classes_[np.argmax(proba, axis=1)])
    assert_array_equal(model.predict(X), model.classes_[(model.decision_function(X) > 0).astype(int)])
    assert_allclose(np.exp(model.predict_log_proba(X)), proba, rtol=1e-9, atol=1e-15)


def test_paper_rule_agrees_with_predict_on_balanced_classes(moons):
    X, y = moons
    model = ParsimoniousKFDA(q=1.0, rho=1e-3, gamma=2.0).fit(X, y)
    paper = model.classes_[(model.discriminant(X) > model.theta_[0]).astype(int)]
    assert np.mean(paper == model.predict(X)) > 0.97


def test_calibrated_better_than_a_naive_sigmoid():
    # The naive sigmoid is Platt's, fitted to the discriminant's scores on the training
    # set: they are optimistic, most so for a small rho and a narrow kernel. The
    # leave-one-out calibration has the lower log-loss on held-out points.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1200, 2))
    y = (X[:, 0] + np.sin(2 * X[:, 1]) + 0.8 * rng.normal(size=1200) > 0).astype(int)
    X_train, y_train, X_test, y_test = X[:300], y[:300], X[300:], y[300:]
    for gamma, q, rho in ((2.0, 1.0, 1e-5), (2.0, 0.5, 1e-4), (8.0, 1.0, 1e-4), (8.0, 0.5, 1e-4), (8.0, 1.0, 1e-2)):
        model = ParsimoniousKFDA(q=q, rho=rho, gamma=gamma).fit(X_train, y_train)
        platt = LogisticRegression(C=1e6).fit(model.discriminant(X_train)[:, None], y_train)
        naive = platt.predict_proba(model.discriminant(X_test)[:, None])[:, 1]
        calibrated = model.predict_proba(X_test)[:, 1]
        assert log_loss(y_test, calibrated) < log_loss(y_test, naive), (gamma, q, rho)
        assert log_loss(y_test, calibrated) < 0.6


def test_priors_shift_the_probabilities(moons):
    X, y = moons
    even = ParsimoniousKFDA(gamma=2.0, priors=[0.5, 0.5]).fit(X, y)
    skewed = ParsimoniousKFDA(gamma=2.0, priors=[0.9, 0.1]).fit(X, y)
    assert_allclose(even.dual_coef_, skewed.dual_coef_)
    assert_allclose(skewed.decision_function(X), even.decision_function(X) + np.log(0.1 / 0.9))


def test_multiclass_one_vs_rest():
    X, y = load_iris(return_X_y=True)
    model = ParsimoniousKFDA(q=0.5, rho=1e-3).fit(X, y)
    assert len(model.support_) == 3 and model.intercept_.shape == (3,) and model.n_iter_.shape == (3,)
    proba = model.predict_proba(X)
    assert_allclose(proba.sum(axis=1), 1.0)
    assert_array_equal(model.predict(X), np.argmax(proba, axis=1))
    assert model.score(X, y) > 0.9
    # Each problem is the binary fit of its class against the rest.
    for c in range(3):
        binary = ParsimoniousKFDA(q=0.5, rho=1e-3, gamma=model._gamma).fit(X, (y == c).astype(int))
        assert_array_equal(model.support_[c], binary.support_)
        assert_allclose(model.dual_coef_[c], binary.dual_coef_, rtol=1e-10)


def test_n_jobs_does_not_change_the_model(moons):
    X, y = moons
    one = ParsimoniousKFDA(q=0.5, gamma=2.0, n_jobs=1).fit(X, y)
    two = ParsimoniousKFDA(q=0.5, gamma=2.0, n_jobs=2).fit(X, y)
    assert_array_equal(one.dual_coef_, two.dual_coef_)
    assert_array_equal(one.objective_, two.objective_)
    X3, y3 = load_iris(return_X_y=True)
    one = ParsimoniousKFDA(n_jobs=1).fit(X3, y3)
    two = ParsimoniousKFDA(n_jobs=2).fit(X3, y3)
    for a, b in zip(one.dual_coef_, two.dual_coef_):
        assert_array_equal(a, b)


def test_precomputed_and_callable_kernels_match_rbf(moons):
    X, y = moons
    model = ParsimoniousKFDA(gamma=2.0).fit(X, y)
    pre = ParsimoniousKFDA(kernel="precomputed").fit(rbf_kernel(X, gamma=2.0), y)
    call = ParsimoniousKFDA(kernel=lambda A, B: rbf_kernel(A, B, gamma=2.0)).fit(X, y)
    for other, test_input in ((pre, rbf_kernel(X[:20], X, gamma=2.0)), (call, X[:20])):
        assert_array_equal(other.support_, model.support_)
        assert_allclose(other.predict_proba(test_input), model.predict_proba(X[:20]), rtol=1e-6)


def test_pickle_round_trip(moons):
    X, y = moons
    model = ParsimoniousKFDA(q=0.5, gamma=2.0).fit(X, y)
    loaded = pickle.loads(pickle.dumps(model))
    assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
    # The retained rows are stored once (as the union's), the public copies derived on loading.
    assert "support_vectors_" not in model.__getstate__()
    assert_array_equal(loaded.support_vectors_, X[model.support_])
    for name in ("support_", "dual_coef_", "n_iter_", "objective_", "intercept_", "theta_"):
        assert_array_equal(getattr(loaded, name), getattr(model, name))


def test_huge_rho_learns_nothing_and_predicts_the_prior():
    X, y = _problem(0, m=60)
    y[:45], y[45:] = 0, 1
    model = ParsimoniousKFDA(rho=1e6, gamma=0.5).fit(X, y)
    assert np.abs(model.dual_coef_).max() < 1e-12 and abs(model.intercept_[0]) < 1e-12
    assert_allclose(model.predict_proba(X), np.tile([0.75, 0.25], (60, 1)))
    assert_array_equal(model.predict(X), np.zeros(60))


# -- scaled kernels and small rho -------------------------------------------------------


@pytest.fixture(scope="module")
def heart():
    X_train, y_train, X_test, y_test = load_benchmark("heart").split(0)
    mean, std = X_train.mean(axis=0), X_train.std(axis=0)
    X_train, X_test = (X_train - mean) / std, (X_test - mean) / std
    gamma = 1.0 / X_train.shape[1]
    return rbf_kernel(X_train, gamma=gamma), y_train, rbf_kernel(X_test, X_train, gamma=gamma), y_test


@pytest.mark.parametrize("rho", [0.0, 1e-8, 1e-3])
@pytest.mark.parametrize("scale", [1.0, 1e6, 1e-6])
def test_calibration_never_predicts_worse_than_the_discriminant(heart, rho, scale):
    # ρ = 0 (least squares) interpolates: 1 − Hᵢᵢ and the residual of the leave-one-out
    # were rounding alone, the calibration learned noise and predict turned constant
    # (heart: 0.56 against the rule's 0.70).
    K, y, K_test, y_test = heart
    model = ParsimoniousKFDA(rho=rho, kernel="precomputed").fit(scale * K, y)
    predicted = model.predict(scale * K_test)
    rule = model.classes_[(model.discriminant(scale * K_test) > model.theta_[0]).astype(int)]
    assert np.mean(predicted == y_test) >= np.mean(rule == y_test) - 0.02
    if rho == 0.0:
        assert model.n_iter_ == 1 and len(np.unique(predicted)) == 2


@pytest.mark.parametrize("q", [1.0, 0.5])
@pytest.mark.parametrize("rho", [1e-8, 1e-3])
@pytest.mark.parametrize("scale", [1e6, 1e-6])
def test_predictions_do_not_change_with_the_kernels_scale(heart, q, rho, scale):
    # With the bias unpenalised, K → sK with ρ → ρ·s^q is the same problem in α' = α/s,
    # and from the same start the same MM iterates: the same discriminant, and so the same
    # leave-one-out scores, calibration and predictions.
    K, y, K_test, _ = heart
    start = np.r_[0.1, np.full(len(y), 0.01)]
    params = dict(q=q, kernel="precomputed", penalize_bias=False)
    base = ParsimoniousKFDA(rho=rho, init=start, **params).fit(K, y)
    scaled = ParsimoniousKFDA(rho=rho * scale**q, init=np.r_[start[0], start[1:] / scale], **params).fit(scale * K, y)
    assert scaled.n_iter_ == base.n_iter_
    assert_array_equal(scaled.support_, base.support_)
    assert_allclose(scaled.discriminant(scale * K_test), base.discriminant(K_test), rtol=1e-6, atol=1e-6)
    assert_array_equal(scaled.predict(scale * K_test), base.predict(K_test))
    assert_allclose(scaled.predict_proba(scale * K_test), base.predict_proba(K_test), rtol=1e-5, atol=1e-8)


def test_leave_one_out_of_an_interpolating_fit_is_the_limit():
    # At ρ = 0 with N ≤ columns the smoother interpolates; the leave-one-out is the limit
    # of the ridge's as λ → 0: ŷᵢ − [A ŷ]ᵢ/Aᵢᵢ with A = (MM')⁻¹ (a kriging identity).
    from gkfda.parsimonious import leave_one_out

    X, y = _problem(5, m=30)
    K = rbf_kernel(X, gamma=8.0)  # well conditioned: LEAVE_ONE_OUT_RIDGE is far below its spectrum
    y_hat = targets(y == 1)
    omega = np.r_[0.5, np.linalg.solve(K, y_hat - 0.5)]  # an interpolant, as ρ = 0 fits
    fitted, left_out = leave_one_out(K, y_hat, omega, np.arange(30), 1.0, 0.0, True)
    assert_allclose(fitted, y_hat, atol=1e-9)
    M = np.hstack([np.ones((30, 1)), K]) * np.abs(omega) ** 0.5
    A = np.linalg.inv(M @ M.T)
    assert_allclose(left_out, y_hat - (A @ y_hat) / np.diag(A), rtol=1e-4, atol=1e-4 * np.abs(y_hat).max())


# -- convergence, progress and memory ---------------------------------------------------


def test_max_iter_without_convergence_warns(moons):
    X, y = moons
    with pytest.warns(ConvergenceWarning, match=r"stopped at max_iter=3 before .* tol=1e-05"):
        ParsimoniousKFDA(max_iter=3, gamma=2.0).fit(X, y)
    X3, y3 = load_iris(return_X_y=True)
    with pytest.warns(ConvergenceWarning, match=r"MM iteration of class\(es\) 0, 1, 2 stopped at max_iter=2"):
        ParsimoniousKFDA(max_iter=2).fit(X3, y3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = ParsimoniousKFDA(gamma=2.0).fit(X, y)  # converges in fewer steps
        ParsimoniousKFDA(rho=0.0, max_iter=1, gamma=2.0).fit(X, y)  # least squares: one step solves it
    # Converging on the last step allowed does not warn.
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        ParsimoniousKFDA(gamma=2.0, max_iter=model.n_iter_).fit(X, y)


def test_progress_bar_goes_to_stderr_and_changes_nothing(moons, capsys):
    X, y = moons
    quiet = ParsimoniousKFDA(q=0.5, gamma=2.0).fit(X, y)
    loud = ParsimoniousKFDA(q=0.5, gamma=2.0, verbose=True).fit(X, y)
    assert quiet.n_iter_ > 10  # more than one call into the core
    captured = capsys.readouterr()
    assert captured.out == "" and "MM step" in captured.err
    assert_array_equal(loud.dual_coef_, quiet.dual_coef_)
    assert_array_equal(loud.objective_, quiet.objective_)
    X3, y3 = load_iris(return_X_y=True)
    ParsimoniousKFDA(verbose=True, n_jobs=2).fit(X3, y3)
    assert "/3" in capsys.readouterr().err


def test_memory_refusal_names_its_own_matrices(monkeypatch):
    from gkfda import _validation

    X, y = _problem(0, m=300)
    square = 301 * 301 * 8
    monkeypatch.setattr(_validation, "available_memory", lambda: 300 * 300 * 8 + 2 * square)
    with pytest.raises(MemoryError, match=r"^X: ParsimoniousKFDA's fit of 300 samples needs [\d.]+ GiB \(the "
                                          r"300×300 kernel [\d.]+ GiB, 3 matrices of 301×301, [\d.]+ GiB each: "
                                          r"K̃'K̃, the ridge start's factor and the MM system of each of the 1 "
                                          r"problem\(s\) solved at once\) but only [\d.]+ GiB is available; use "
                                          r"fewer samples$"):
        ParsimoniousKFDA().fit(X, y)
    y3 = np.arange(300) % 3
    with pytest.raises(MemoryError, match=r"4 matrices of 301×301.* of the 2 problem\(s\).* or a smaller n_jobs$"):
        ParsimoniousKFDA(n_jobs=2).fit(X, y3)
    with pytest.raises(MemoryError, match=r"needs [\d.]+ GiB \(3 matrices"):  # the caller's kernel: not counted
        ParsimoniousKFDA(kernel="precomputed").fit(rbf_kernel(X), y)
    monkeypatch.setattr(_validation, "available_memory", lambda: 300 * 300 * 8 + 3 * square)
    assert ParsimoniousKFDA().fit(X, y).n_iter_ > 0


# -- bad input --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "params, pattern",
    [
        ({"q": 0.0}, "'q' parameter"),
        ({"q": 1.5}, "'q' parameter"),
        ({"rho": -1e-3}, "'rho' parameter"),
        ({"threshold": 1.0}, "'threshold' parameter"),
        ({"threshold": -0.1}, "'threshold' parameter"),
        ({"tol": 0.0}, "'tol' parameter"),
        ({"max_iter": 0}, "'max_iter' parameter"),
        ({"init": "zeros"}, "'init' parameter"),
        ({"penalize_bias": "yes"}, "'penalize_bias' parameter"),
        ({"kernel": "sigmoidal"}, "'kernel' parameter"),
        ({"n_jobs": 0}, "'n_jobs' parameter"),
    ],
)
def test_bad_parameter(params, pattern):
    X, y = _problem(0, m=20)
    with pytest.raises(ValueError, match=pattern):
        ParsimoniousKFDA(**params).fit(X, y)


@pytest.mark.parametrize(
    "init, pattern",
    [
        (np.ones(20), r"^init: must have n_samples \+ 1 = 21 values"),
        (np.r_[np.ones(20), 0.0], r"^init: every value must be nonzero"),
        (np.r_[np.ones(20), np.nan], r"^init: every value must be finite"),
        ([["a"] * 21], r"^init: must be 'ridge' or an array of numbers"),
    ],
)
def test_bad_init(init, pattern):
    X, y = _problem(0, m=20)
    with pytest.raises(ValueError, match=pattern):
        ParsimoniousKFDA(init=init).fit(X, y)


@pytest.mark.parametrize(
    "priors, pattern",
    [([0.5, 0.3, 0.2], r"^priors: must have one value per class"), ([0.7, 0.7], r"^priors: must sum to 1"),
     ([1.0, 0.0], r"^priors: every prior must be positive"), (["a", "b"], r"^priors: must be an array")],
)
def test_bad_priors(priors, pattern):
    X, y = _problem(0, m=20)
    with pytest.raises(ValueError, match=pattern):
        ParsimoniousKFDA(priors=priors).fit(X, y)


def test_one_class():
    X, _ = _problem(0, m=20)
    with pytest.raises(ValueError, match=r"^y: needs samples of at least two classes"):
        ParsimoniousKFDA().fit(X, np.zeros(20))


def test_nan_in_X():
    X, y = _problem(0, m=20)
    X[2, 0] = np.nan
    with pytest.raises(ValueError, match=r"\bX\b.*NaN"):
        ParsimoniousKFDA().fit(X, y)


def test_precomputed_not_psd():
    X, y = _problem(0, m=20)
    with pytest.raises(ValueError, match=r"^X: a precomputed kernel must be"):
        ParsimoniousKFDA(kernel="precomputed").fit(-rbf_kernel(X), y)


def test_rust_and_numpy_iterations_agree():
    from gkfda import _core
    from gkfda.parsimonious import PRUNE

    for seed, q, penalize_bias in ((0, 1.0, True), (1, 0.5, False), (2, 0.5, True)):
        X, y = _problem(seed, m=120)
        K = rbf_kernel(X, gamma=1.0)
        y_hat = targets(y == 1)
        gram, products = augmented_gram(K, y_hat)
        start = ridge_start(gram, products)
        rust = _core.parsimonious_fit(K, gram, products, y_hat, start, q=q, rho=1e-2, tol=1e-6, max_iter=500,
                                      penalize_bias=penalize_bias, prune=PRUNE)
        numpy = mm_fit(K, gram, products, y_hat, start, q, 1e-2, 1e-6, 500, penalize_bias)
        assert rust[2] == numpy[2]
        assert_array_equal(rust[0] == 0.0, numpy[0] == 0.0)  # the same coefficients pruned
        assert_allclose(rust[0], numpy[0], rtol=1e-8, atol=1e-10 * np.abs(numpy[0]).max())
        assert_allclose(rust[1], numpy[1], rtol=1e-10)


def test_core_refuses_bad_input():
    from gkfda import _core

    K = np.eye(4)
    gram, products = augmented_gram(K, targets(np.array([True, False, True, False])))
    good = dict(q=1.0, rho=1e-2, tol=1e-5, max_iter=10, penalize_bias=True, prune=1e-12)
    y_hat, start = np.ones(4), np.ones(5)
    with pytest.raises(ValueError, match=r"^start: must have N \+ 1 = 5"):
        _core.parsimonious_fit(K, gram, products, y_hat, np.ones(4), **good)
    with pytest.raises(ValueError, match=r"^rho: must be positive"):
        _core.parsimonious_fit(K, gram, products, y_hat, start, **{**good, "rho": 0.0})
    with pytest.raises(ValueError, match=r"^q: must be in \(0, 1\]"):
        _core.parsimonious_fit(K, gram, products, y_hat, start, **{**good, "q": 1.5})
    with pytest.raises(ValueError, match=r"^kernel: must be square"):
        _core.parsimonious_fit(np.ones((4, 3)), gram, products, y_hat, start, **good)


def test_leverages_survive_a_failing_eigensolver(monkeypatch):
    # LAPACK's symmetric eigensolvers can fail ("Internal Error") on systems they should
    # solve; the leverages then come from the singular value decomposition, the same.
    import scipy.linalg

    from gkfda import parsimonious

    X, y = _problem(4, m=80)
    expected = ParsimoniousKFDA(q=0.5, rho=1e-3, gamma=1.0).fit(X, y)

    def failing(*args, **kwargs):
        raise np.linalg.LinAlgError("Internal Error.")

    monkeypatch.setattr(scipy.linalg, "eigh", failing)
    model = ParsimoniousKFDA(q=0.5, rho=1e-3, gamma=1.0).fit(X, y)
    assert_allclose(model.predict_proba(X), expected.predict_proba(X), rtol=1e-8, atol=1e-12)
    values, vectors = parsimonious._symmetric_eigen(np.diag([3.0, 1.0]))
    assert_allclose(sorted(values), [1.0, 3.0])
