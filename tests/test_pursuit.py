"""The matching-pursuit family: the Rust engine against the NumPy references index for
index, the final models against explicit linear algebra, the bounds, and scikit-learn's
estimator checks."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import LinearRegression
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from gkfda import (
    CRITERIA,
    GreedyNystroem,
    KernelMatchingPursuit,
    SparseKernelCCA,
    SparseKernelPCA,
    _core,
    matching_pursuit_bound,
    reference,
)

SEEDS = range(12)


def problem(seed, m=90, dtype=np.float64):
    """Points in 3-D, an rbf kernel, a regression target and a second view."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    y = np.sin(2.0 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=m)
    Y = np.column_stack([np.cos(X[:, 0]) + 0.2 * rng.normal(size=m), X[:, 1] ** 2])
    K = reference.rbf_kernel(X, X, gamma=0.4).astype(dtype)
    Ky = reference.rbf_kernel(Y, Y, gamma=0.6).astype(dtype)
    return X, y.astype(dtype), Y, K, Ky


def engine(method, K, k, **options):
    indices, scores, stopped_early, passes = _core.pursuit_select(method, K, k, **options)
    return np.asarray(indices), np.asarray(scores), stopped_early


# -- parity of the engine and the references -------------------------------------------


def three_classes(y):
    """Class codes 0..2 of the target's terciles."""
    return np.digitize(y, np.quantile(y, [1 / 3, 2 / 3])).astype(np.int64)


# Each method: the engine's options and the reference's selection, for problem()'s arrays.
# The references of the Fisher criteria (GreedyKFDA's, with projection deflation) give no scores.
METHODS = {
    "matching": (lambda y, Ky: dict(target=y), lambda K, y, Ky, k: reference.matching_pursuit_select(K, y, k)),
    "pca": (lambda y, Ky: {}, lambda K, y, Ky, k: reference.sparse_pca_select(K, k)),
    "correlation": (lambda y, Ky: dict(second_kernel=Ky),
                    lambda K, y, Ky, k: reference.sparse_cca_select(K, Ky, k)),
    "correlation-unsigned": (lambda y, Ky: dict(second_kernel=Ky, signed=False),
                             lambda K, y, Ky, k: reference.sparse_cca_select(K, Ky, k, signed=False)),
    **{
        f"fisher-{criterion}": (
            lambda y, Ky, criterion=criterion: dict(classes=three_classes(y), criterion=criterion),
            lambda K, y, Ky, k, criterion=criterion: (
                reference.select(K, three_classes(y), k, criterion, "projection"), None,
            ),
        )
        # `random` draws its order in Rust from a seed, the reference with NumPy: the Rust
        # tests hold it to `greedy_select`'s picks instead.
        for criterion in CRITERIA if criterion != "random"
    },
}

# float32 rounds the statistics differently from the float64 reference: near-ties may go
# either way, so in float32 the first picks (well separated on these problems) must agree.
PICKS = {np.float64: 25, np.float32: 6}
RTOL = {np.float64: 1e-7, np.float32: 1e-3}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("seed", SEEDS)
def test_engine_picks_the_references_indices(seed, method, dtype):
    _, y, _, K, Ky = problem(seed, dtype=dtype)
    options, select = METHODS[method]
    k = PICKS[dtype]
    indices, scores, stopped = engine(method.split("-")[0], K, k, **options(y, Ky))
    expected, expected_scores = select(K, y, Ky, k)
    np.testing.assert_array_equal(indices, expected)
    if expected_scores is not None:
        atol = 1e-12 if dtype == np.float64 else 1e-5
        np.testing.assert_allclose(scores, expected_scores, rtol=RTOL[dtype], atol=atol)
    assert not stopped


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_low_rank_kernel_stops_early_in_both(dtype):
    """A linear kernel of rank 3: no fourth column is admissible, in the engine as in the reference."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3))
    K = (X @ X.T).astype(dtype)
    Ky = ((X[:, :2] @ X[:, :2].T) + 1.0).astype(dtype)
    y = rng.normal(size=40).astype(dtype)
    cases = [
        ("matching", dict(target=y), reference.matching_pursuit_select(K, y, 10)),
        ("pca", {}, reference.sparse_pca_select(K, 10)),
        ("correlation", dict(second_kernel=Ky), reference.sparse_cca_select(K, Ky, 10)),
    ]
    for method, options, (expected, expected_scores) in cases:
        indices, scores, stopped = engine(method, K, 10, **options)
        assert stopped and len(indices) == len(expected) == 3, method
        # The third pick is a tie: every column left spans the same last direction.
        np.testing.assert_array_equal(indices[:2], expected[:2])
        np.testing.assert_allclose(scores, expected_scores, rtol=1e-3)


def test_pca_scores_are_the_trace_decrease():
    _, _, _, K, _ = problem(3)
    indices, scores, _ = engine("pca", K, 15)
    for t in (1, 5, 15):
        features = reference.nystrom_features(K[:, indices[:t]], K[np.ix_(indices[:t], indices[:t])])
        residual = np.trace(K) - np.sum(features**2)
        np.testing.assert_allclose(np.trace(K) - np.sum(scores[:t]), residual, rtol=1e-9)


def test_matching_scores_are_the_decrease_of_the_residual():
    _, y, _, K, _ = problem(4)
    indices, scores, _ = engine("matching", K, 15, target=y)
    for t in (1, 7, 15):
        coef, _ = reference.matching_pursuit_fit(K, y, indices[:t])
        rss = np.sum((K[:, indices[:t]] @ coef - y) ** 2)
        np.testing.assert_allclose(y @ y - np.sum(scores[:t] ** 2), rss, rtol=1e-8)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(2, 40),
    k=st.integers(1, 45),
    gamma=st.floats(1e-3, 50.0),
    dtype=st.sampled_from([np.float64, np.float32]),
)
def test_engine_invariants_on_random_kernels(seed, m, k, gamma, dtype):
    """What holds whatever the ties: distinct indices, at most k (fewer only on an early
    stop); KMP's squared scores sum to at most ‖y‖², SKPCA's to at most tr K, SKCCA's
    cosines are in [−1, 1]."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(m, 2)), 1)  # rounded: duplicate points happen
    K = reference.rbf_kernel(X, X, gamma).astype(dtype)
    Ky = reference.rbf_kernel(X[:, ::-1] ** 2, X[:, ::-1] ** 2, gamma).astype(dtype)
    y = rng.normal(size=m).astype(dtype)
    slack = 1e-6 if dtype == np.float64 else 1e-3
    k = min(k, m)  # the engine refuses more (the estimators lower k with a warning)
    for method, options in [("matching", dict(target=y)), ("pca", {}), ("correlation", dict(second_kernel=Ky))]:
        indices, scores, stopped = engine(method, K, k, **options)
        assert len(set(indices.tolist())) == len(indices) == len(scores) <= k
        assert stopped == (len(indices) < k)
        assert np.all(np.isfinite(scores))
        if method == "matching":
            assert np.sum(scores**2) <= float(y.astype(np.float64) @ y) * (1 + slack) + slack
        elif method == "pca":
            # A score ‖c‖²/c_jj divides by a residual c_jj that the guard admits down to tol
            # (1e-9 of its diagonal entry in float64, 1e-4 in float32), so each score carries
            # up to m·ε/tol of rounding.
            tol = 1e-9 if dtype == np.float64 else 1e-4
            rounding = len(scores) * m * np.finfo(dtype).eps / tol
            assert np.all(scores >= 0)
            assert np.sum(scores) <= np.trace(K.astype(np.float64)) * (1 + slack) + rounding
        else:
            assert np.all(np.abs(scores) <= 1 + slack)


# -- the final models --------------------------------------------------------------------


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_kmp_is_least_squares_on_the_chosen_columns(fit_intercept):
    X, y, _, K, _ = problem(5)
    model = KernelMatchingPursuit(k=12, gamma=0.4, fit_intercept=fit_intercept).fit(X, y)
    target = y - y.mean() if fit_intercept else y
    np.testing.assert_array_equal(model.support_, reference.matching_pursuit_select(K, target, 12)[0])
    coef, intercept = reference.matching_pursuit_fit(K, y, model.support_, fit_intercept=fit_intercept)
    np.testing.assert_allclose(model.coef_, coef, rtol=1e-6, atol=1e-8)
    assert model.intercept_ == pytest.approx(intercept, abs=1e-8)
    X_new = np.random.default_rng(9).normal(size=(7, 3))
    expected = reference.rbf_kernel(X_new, X[model.support_], 0.4) @ coef + intercept
    np.testing.assert_allclose(model.predict(X_new), expected, rtol=1e-8, atol=1e-10)


def test_sparse_pca_features_are_nystrom_features():
    X, _, _, K, _ = problem(6)
    model = SparseKernelPCA(n_components=10, gamma=0.4).fit(X)
    idx = model.support_
    np.testing.assert_array_equal(idx, reference.sparse_pca_select(K, 10)[0])
    X_new = np.random.default_rng(8).normal(size=(9, 3))
    explicit = reference.nystrom_features(reference.rbf_kernel(X_new, X[idx], 0.4), K[np.ix_(idx, idx)])
    np.testing.assert_allclose(model.transform(X_new), explicit @ model.rotation_, atol=1e-9)
    # The rotation is orthogonal: the features span the same subspace, K̃ = K[:, i]K[i, i]⁻¹K[i, :].
    Z = model.transform(X)
    approximation = K[:, idx] @ np.linalg.solve(K[np.ix_(idx, idx)], K[idx])
    np.testing.assert_allclose(Z @ Z.T, approximation, atol=1e-8)
    np.testing.assert_allclose(Z.T @ Z / len(X), np.diag(model.explained_variance_), atol=1e-9)
    assert model.reconstruction_error(X) == pytest.approx((np.trace(K) - np.sum(model.pursuit_scores_)) / len(X))


@pytest.mark.parametrize("center", [True, False])
def test_sparse_cca_is_the_cca_of_the_nystrom_features(center):
    X, _, Y, Kx, Ky = problem(7)
    model = SparseKernelCCA(k=12, n_components=3, gamma=None, center=center).fit(X, Y)
    idx = model.support_
    gx, gy = 1.0 / (3 * X.var()), 1.0 / (2 * Y.var())
    Kx, Ky = reference.rbf_kernel(X, X, gx), reference.rbf_kernel(Y, Y, gy)
    np.testing.assert_array_equal(idx, reference.sparse_cca_select(Kx, Ky, 12)[0])
    Zx = reference.nystrom_features(Kx[:, idx], Kx[np.ix_(idx, idx)])
    Zy = reference.nystrom_features(Ky[:, idx], Ky[np.ix_(idx, idx)])
    Wx, Wy, correlations = reference.canonical_correlation(Zx, Zy, 3, reg=1e-6, center=center)
    np.testing.assert_allclose(model.correlations_, correlations, atol=1e-7)
    np.testing.assert_allclose(model.x_weights_, Wx, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(model.y_weights_, Wy, rtol=1e-4, atol=1e-6)
    x_scores, y_scores = model.transform(X, Y)
    np.testing.assert_allclose(np.mean(x_scores**2, axis=0), 1.0, atol=1e-4)  # unit mean square, up to the ridge
    np.testing.assert_allclose(np.mean(x_scores * y_scores, axis=0), correlations, atol=1e-4)


def test_uncentred_cca_leads_with_the_constant_direction():
    """Why ``center=True`` is the default: uncentred, rbf features hold a near-constant
    direction whose correlation is close to 1 whatever the data."""
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(200, 2)), rng.normal(size=(200, 2))  # independent views
    uncentred = SparseKernelCCA(k=20, n_components=1, center=False).fit(X, Y)
    centred = SparseKernelCCA(k=20, n_components=1).fit(X, Y)
    assert uncentred.correlations_[0] > 0.95
    assert centred.correlations_[0] < uncentred.correlations_[0]


def test_greedy_nystroem_unsupervised_is_sparse_pca_and_transforms_like_nystroem():
    X, _, _, K, _ = problem(8)
    model = GreedyNystroem(n_components=15, gamma=0.4).fit(X)
    np.testing.assert_array_equal(model.component_indices_, SparseKernelPCA(15, gamma=0.4).fit(X).support_)
    np.testing.assert_array_equal(model.components_, X[model.component_indices_])
    # Nystroem's own transform with the same landmarks gives the same features.
    nystroem = Nystroem(gamma=0.4, n_components=15).fit(X)
    nystroem.components_ = model.components_
    nystroem.normalization_ = model.normalization_
    np.testing.assert_allclose(model.transform(X), nystroem.transform(X), atol=1e-10)
    idx = model.component_indices_
    Z = model.transform(X)
    np.testing.assert_allclose(Z @ Z.T, K[:, idx] @ np.linalg.solve(K[np.ix_(idx, idx)], K[idx]), atol=1e-7)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_greedy_nystroem_supervised_takes_the_fisher_bases(n_classes):
    X, y, _, K, _ = problem(9)
    labels = np.digitize(y, np.quantile(y, np.linspace(0, 1, n_classes + 1)[1:-1]))
    model = GreedyNystroem(n_components=10, gamma=0.4).fit(X, labels)
    expected = reference.select(K, labels, 10, criterion="optimal", deflation="projection")
    np.testing.assert_array_equal(model.component_indices_, expected)
    schur = GreedyNystroem(n_components=10, gamma=0.4, deflation="schur").fit(X, labels)
    np.testing.assert_array_equal(schur.component_indices_, reference.select(K, labels, 10, deflation="schur"))
    random = GreedyNystroem(n_components=10, criterion="random", gamma=0.4, random_state=0).fit(X)
    assert len(set(random.component_indices_.tolist())) == 10


def test_greedy_nystroem_with_a_continuous_target_takes_the_kmp_landmarks():
    X, y, _, K, _ = problem(10)
    model = GreedyNystroem(n_components=12, gamma=0.4).fit(X, y)
    np.testing.assert_array_equal(model.component_indices_, reference.matching_pursuit_select(K, y - y.mean(), 12)[0])
    # A linear model of the features is KMP's model with a constant.
    kmp = KernelMatchingPursuit(k=12, gamma=0.4, fit_intercept=True).fit(X, y)
    pipeline = make_pipeline(GreedyNystroem(n_components=12, gamma=0.4), LinearRegression()).fit(X, y)
    np.testing.assert_allclose(pipeline.predict(X), kmp.predict(X), atol=1e-6)


@pytest.mark.parametrize("supervised", [False, True])
def test_greedy_nystroem_chooses_uniformly_for_a_kernel_that_is_not_a_gram_matrix(supervised):
    # additive_chi2 (-Σ (x - z)² / (x + z), zero diagonal) is never positive semi-definite:
    # criterion="auto" takes Nystroem's uniform landmarks, and says so.
    rng = np.random.default_rng(11)
    X = rng.uniform(size=(40, 5))
    y = (X[:, 0] > 0.5).astype(int) if supervised else None
    with pytest.warns(UserWarning, match=r"'additive_chi2' kernel of X is not positive semi-definite.*"
                                         r"chose its 6 landmarks uniformly at random") as record:
        model = GreedyNystroem(n_components=6, kernel="additive_chi2", random_state=3).fit(X, y)
    assert record[0].filename == __file__
    random = GreedyNystroem(n_components=6, kernel="additive_chi2", criterion="random", random_state=3).fit(X)
    np.testing.assert_array_equal(model.component_indices_, random.component_indices_)
    np.testing.assert_array_equal(model.normalization_, random.normalization_)
    np.testing.assert_array_equal(model.transform(X), random.transform(X))
    assert model.transform(X).shape == (40, 6)
    assert not model.stopped_early_


@pytest.mark.parametrize("criterion, supervised", [("pca", False), ("optimal", True), ("matching", True)])
def test_greedy_nystroem_with_an_explicit_criterion_refuses_a_kernel_that_is_not_a_gram_matrix(criterion, supervised):
    rng = np.random.default_rng(11)
    X = rng.uniform(size=(40, 5))
    y = (X[:, 0] > 0.5).astype(int) if supervised else None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"^kernel: the 'additive_chi2' kernel of X is not positive semi-definite"):
            GreedyNystroem(n_components=6, kernel="additive_chi2", criterion=criterion, random_state=3).fit(X, y)


def test_greedy_nystroem_in_a_pipeline_before_lda():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X_train, y_train, X_test, y_test = X[:1200], y[:1200], X[1200:], y[1200:]
    model = make_pipeline(GreedyNystroem(n_components=60, gamma=8e-4), LinearDiscriminantAnalysis())
    assert model.fit(X_train, y_train).score(X_test, y_test) > 0.9


# -- the bounds --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "m, k, t, expected",
    [(1000, 10, 0, 0.435150), (1000, 10, 50, 1.068261), (10000, 20, 100, 0.264609)],
)
def test_matching_pursuit_bound_test_vectors(m, k, t, expected):
    assert matching_pursuit_bound(m, k, t, delta=0.05) == pytest.approx(expected, abs=5e-7)


def test_matching_pursuit_bound_orders():
    assert matching_pursuit_bound(1000, 10, 5) < matching_pursuit_bound(1000, 10, 6)
    assert matching_pursuit_bound(1000, 10, 5) < matching_pursuit_bound(1000, 11, 5)
    assert matching_pursuit_bound(2000, 10, 5) < matching_pursuit_bound(1000, 10, 5)
    assert matching_pursuit_bound(1000, 10, 5, delta=0.1) < matching_pursuit_bound(1000, 10, 5, delta=0.01)
    assert matching_pursuit_bound(100, 60, 40) == math.inf


def test_kmp_loss_bound_counts_the_errors_outside_the_support():
    X, y, _, _, _ = problem(10, m=400)
    model = KernelMatchingPursuit(k=15, gamma=0.4).fit(X, y)
    alpha = 0.25
    errors = np.abs(model.predict(X) - y) > alpha
    errors[model.support_] = False
    assert model.loss_bound(X, y, alpha) == matching_pursuit_bound(400, 15, int(errors.sum()), 0.05)
    assert model.loss_bound(X, y, 10 * alpha) <= model.loss_bound(X, y, alpha)


def test_cca_loss_bound_is_per_dimension_at_delta_over_d():
    X, _, Y, _, _ = problem(11, m=300)
    model = SparseKernelCCA(k=10, n_components=2).fit(X, Y)
    bounds = model.loss_bound(X, Y, alpha=0.5, delta=0.1)
    x_scores, y_scores = model.transform(X, Y)
    errors = np.abs(x_scores - y_scores) > 0.5
    errors[model.support_] = False
    expected = [matching_pursuit_bound(300, 10, int(t), 0.05) for t in errors.sum(axis=0)]
    np.testing.assert_allclose(bounds, expected)


def test_sparse_pca_bound_path():
    X, _, _, K, _ = problem(12, m=300)
    model = SparseKernelPCA(n_components=40, gamma=0.4).fit(X)
    path = model.bound_path(delta=0.05)
    m, t = 300, np.arange(1, 41)
    residual = (np.trace(K) - np.cumsum(model.pursuit_scores_)) / (m - t)
    np.testing.assert_allclose(path.residual, residual, rtol=1e-9)
    expected = residual + np.sqrt(1.0 / (2 * (m - t)) * (t * np.log(np.e * m / t) + np.log(2 * m / 0.05)))
    np.testing.assert_allclose(path.bound, expected, rtol=1e-9)
    assert np.all(np.diff(path.running_min) <= 0) and np.all(path.bound >= path.residual)
    assert path.best == 1 + int(np.argmin(path.bound))
    assert np.all(np.diff(path.residual * (m - t)) <= 1e-12)  # the trace only decreases
    # A larger radius only loosens it; other kernels need the radius or warn.
    assert np.all(model.bound_path(radius=2.0).bound > path.bound)
    linear = SparseKernelPCA(n_components=3, kernel="linear").fit(X)
    with pytest.warns(UserWarning, match="radius=None"):
        linear.bound_path()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        linear.bound_path(radius=5.0)


# -- bad input ---------------------------------------------------------------------------


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(30, 3)), rng.normal(size=30)


def test_cca_views_of_different_lengths(data):
    X, y = data
    with pytest.raises(ValueError, match=r"X, y: the two views must have the same number of samples"):
        SparseKernelCCA(k=5).fit(X, y[:20])


def test_cca_more_components_than_bases(data):
    X, y = data
    with pytest.raises(ValueError, match=r"n_components: must be at most k \(3\)"):
        SparseKernelCCA(k=3, n_components=4).fit(X, y)


def test_cca_without_second_view(data):
    X, _ = data
    with pytest.raises(ValueError, match="requires y to be passed"):
        SparseKernelCCA(k=3).fit(X, None)


def test_bound_arguments(data):
    X, y = data
    model = KernelMatchingPursuit(k=5).fit(X, y)
    with pytest.raises(ValueError, match="alpha: must be a positive number"):
        model.loss_bound(X, y, alpha=0.0)
    with pytest.raises(ValueError, match=r"delta: must be in \(0, 1\)"):
        model.loss_bound(X, y, alpha=0.1, delta=1.0)
    with pytest.raises(ValueError, match=r"X: the bound needs the training set \(30 samples\)"):
        model.loss_bound(X[:10], y[:10], alpha=0.1)
    with pytest.raises(ValueError, match="y: has 10 values but X has 30 samples"):
        model.loss_bound(X, y[:10], alpha=0.1)
    with pytest.raises(ValueError, match="radius: must be a positive number"):
        SparseKernelPCA(3).fit(X).bound_path(radius=-1.0)
    with pytest.raises(ValueError, match="'delta' parameter"):
        matching_pursuit_bound(100, 5, 0, delta=0.0)


def test_nystroem_supervised_criterion_needs_labels(data):
    X, _ = data
    with pytest.raises(ValueError, match="criterion: 'optimal' needs labels or a target y"):
        GreedyNystroem(5, criterion="optimal").fit(X)
    with pytest.raises(ValueError, match="deflation: the 'pca' criterion has its own deflation"):
        GreedyNystroem(5, deflation="projection").fit(X)
    with pytest.raises(ValueError, match="deflation: the 'matching' criterion has its own deflation"):
        GreedyNystroem(5, criterion="matching", deflation="schur").fit(X, np.arange(30.0))


def test_nystroem_fisher_criterion_with_a_continuous_target(data):
    X, y = data
    with pytest.raises(ValueError, match="y: Unknown label type"):
        GreedyNystroem(5, criterion="optimal").fit(X, y)


@pytest.mark.parametrize(
    "estimator, name",
    [(KernelMatchingPursuit(k=0), "k"), (SparseKernelPCA(n_components=True), "n_components"),
     (SparseKernelCCA(reg=-1.0), "reg"), (GreedyNystroem(criterion="best"), "criterion"),
     (KernelMatchingPursuit(kernel="sigmoidal"), "kernel"), (SparseKernelPCA(dtype="int32"), "dtype")],
)
def test_parameters_are_validated(data, estimator, name):
    X, y = data
    with pytest.raises(ValueError, match=f"The '{name}' parameter of {type(estimator).__name__}"):
        estimator.fit(X, y)


def test_more_bases_than_samples_warns_and_uses_them_all(data):
    X, y = data
    with pytest.warns(UserWarning, match=r"k=40 is larger than the number of training samples \(30\)"):
        model = KernelMatchingPursuit(k=40, gamma=0.5).fit(X, y)
    assert model.k_ <= 30


def test_nan_in_the_second_view(data):
    X, y = data
    y = y.copy()
    y[3] = np.nan
    with pytest.raises(ValueError, match=r"\by\b.*NaN"):
        SparseKernelCCA(k=5).fit(X, y)


# -- scikit-learn's checks ---------------------------------------------------------------

# A CCA has two views: scikit-learn's transformer checks compare ``fit_transform(X, y)``
# (which returns the pair, as sklearn's own CCA does) with ``transform(X)`` (one view),
# and treat only sklearn's own cross-decomposition classes as pairs.
TWO_VIEWS = "fit_transform(X, y) returns the two views' projections, transform(X) one view"
CCA_EXPECTED_FAILURES = {
    "check_transformer_general": TWO_VIEWS,
    "check_transformer_data_not_an_array": TWO_VIEWS,
}


@parametrize_with_checks(
    [KernelMatchingPursuit(k=5), SparseKernelPCA(n_components=5), GreedyNystroem(n_components=5),
     SparseKernelCCA(k=5, n_components=1)],
    expected_failed_checks=lambda estimator: CCA_EXPECTED_FAILURES if isinstance(estimator, SparseKernelCCA) else {},
)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # k larger than some checks' tiny sets
        check(estimator)
