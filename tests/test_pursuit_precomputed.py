"""The matching-pursuit family with ``kernel="precomputed"``: the same bases and outputs as
the named kernel it was computed from, scikit-learn's ``Nystroem`` where it fits a
precomputed kernel, bad kernels refused naming the argument, and scikit-learn's checks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.kernel_approximation import Nystroem
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import KFold, cross_val_score
from sklearn.utils.estimator_checks import parametrize_with_checks

from gkfda import GreedyNystroem, KernelMatchingPursuit, SparseKernelCCA, SparseKernelPCA

GAMMA, Y_GAMMA = 0.4, 0.6
# float32: the precomputed kernel is float64 rounded, the named one computed in float32.
TOLERANCE = {"float64": dict(rtol=1e-9, atol=1e-10), "float32": dict(rtol=1e-3, atol=1e-4)}


@pytest.fixture(scope="module")
def views():
    """Training and test points of two views, a regression target and class labels."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(110, 3))
    Y = np.column_stack([np.cos(X[:, 0]) + 0.2 * rng.normal(size=110), X[:, 1] ** 2])
    y = np.sin(2.0 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=110)
    return X[:80], X[80:], Y[:80], Y[80:], y[:80], y[80:]


def kernels(views):
    X, X_test, Y, Y_test, _, _ = views
    return (rbf_kernel(X, gamma=GAMMA), rbf_kernel(X_test, X, gamma=GAMMA),
            rbf_kernel(Y, gamma=Y_GAMMA), rbf_kernel(Y_test, Y, gamma=Y_GAMMA))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_kmp(views, dtype, fit_intercept):
    X, X_test, _, _, y, _ = views
    K, K_test, _, _ = kernels(views)
    named = KernelMatchingPursuit(k=12, gamma=GAMMA, fit_intercept=fit_intercept, dtype=dtype).fit(X, y)
    pre = KernelMatchingPursuit(k=12, kernel="precomputed", fit_intercept=fit_intercept, dtype=dtype).fit(K, y)
    assert_array_equal(pre.support_, named.support_)
    assert pre.support_vectors_.shape == (12, 0)
    assert pre.n_features_in_ == pre.n_samples_fit_ == 80
    assert_allclose(pre.predict(K_test), named.predict(X_test), **TOLERANCE[dtype])
    assert pre.loss_bound(K, y, alpha=0.3) == named.loss_bound(X, y, alpha=0.3)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_sparse_pca(views, dtype):
    X, X_test, _, _, _, _ = views
    K, K_test, _, _ = kernels(views)
    named = SparseKernelPCA(n_components=12, gamma=GAMMA, dtype=dtype).fit(X)
    pre = SparseKernelPCA(n_components=12, kernel="precomputed", dtype=dtype).fit(K)
    assert_array_equal(pre.support_, named.support_)
    assert pre.support_vectors_.shape == (12, 0)
    assert_allclose(pre.transform(K_test), named.transform(X_test), **TOLERANCE[dtype])
    # κ(x, x) = 1 for the rbf kernel; on the training set, the kernel's diagonal.
    assert_allclose(pre.reconstruction_error(K_test, self_kernel=np.ones(len(K_test))),
                    named.reconstruction_error(X_test), **TOLERANCE[dtype])
    assert_allclose(pre.reconstruction_error(K, self_kernel=np.diagonal(K)), named.reconstruction_error(X),
                    **TOLERANCE[dtype])
    assert_allclose(pre.bound_path(radius=1.0).bound, named.bound_path().bound, **TOLERANCE[dtype])
    with pytest.warns(UserWarning, match=r"radius=None: estimated as the largest sqrt\(K\(x, x\)\)"):
        estimated = pre.bound_path()
    assert_allclose(estimated.bound, named.bound_path().bound, **TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_sparse_cca(views, dtype):
    X, X_test, Y, Y_test, _, _ = views
    # gamma=None is 1 / (n_features * var) of each view: each precomputed kernel has its own.
    named = SparseKernelCCA(k=12, n_components=2, gamma=None, dtype=dtype).fit(X, Y)
    x_gamma, y_gamma = 1.0 / (X.shape[1] * X.var()), 1.0 / (Y.shape[1] * Y.var())
    Kx, Kx_test = rbf_kernel(X, gamma=x_gamma), rbf_kernel(X_test, X, gamma=x_gamma)
    Ky, Ky_test = rbf_kernel(Y, gamma=y_gamma), rbf_kernel(Y_test, Y, gamma=y_gamma)
    pre = SparseKernelCCA(k=12, n_components=2, kernel="precomputed", dtype=dtype).fit(Kx, Ky)
    assert_array_equal(pre.support_, named.support_)
    assert pre.x_support_vectors_.shape == pre.y_support_vectors_.shape == (12, 0)
    for got, expected in zip(pre.transform(Kx_test, Ky_test), named.transform(X_test, Y_test)):
        assert_allclose(got, expected, **TOLERANCE[dtype])
    assert_allclose(pre.transform(Kx_test), named.transform(X_test), **TOLERANCE[dtype])
    assert_allclose(pre.score(Kx_test, Ky_test), named.score(X_test, Y_test), **TOLERANCE[dtype])
    assert_array_equal(pre.loss_bound(Kx, Ky, alpha=0.5), named.loss_bound(X, Y, alpha=0.5))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("target", ["none", "continuous", "classes", "random"])
def test_greedy_nystroem(views, dtype, target):
    X, X_test, _, _, y, _ = views
    K, K_test, _, _ = kernels(views)
    labels = {"none": None, "continuous": y, "classes": np.digitize(y, [-0.5, 0.5]), "random": None}[target]
    criterion = "random" if target == "random" else "auto"
    options = dict(n_components=12, criterion=criterion, dtype=dtype, random_state=0)
    named = GreedyNystroem(gamma=GAMMA, **options).fit(X, labels)
    pre = GreedyNystroem(kernel="precomputed", **options).fit(K, labels)
    assert_array_equal(pre.component_indices_, named.component_indices_)
    assert_array_equal(pre.components_, K[pre.component_indices_])  # as Nystroem: the rows of X
    assert_allclose(pre.normalization_, named.normalization_, **TOLERANCE[dtype])
    assert_allclose(pre.transform(K_test), named.transform(X_test), **TOLERANCE[dtype])


@pytest.mark.parametrize("gamma", [2.0, 0.3])
def test_greedy_nystroem_is_nystroem_where_nystroem_fits_a_precomputed_kernel(views, gamma):
    # Nystroem fits a precomputed kernel only with every sample a landmark; there, with
    # the same random landmarks, its features and these are the same.
    X, X_test, _, _, _, _ = views
    K, K_test = rbf_kernel(X, gamma=gamma), rbf_kernel(X_test, X, gamma=gamma)
    theirs = Nystroem(kernel="precomputed", n_components=80, random_state=3).fit(K)
    ours = GreedyNystroem(n_components=80, criterion="random", kernel="precomputed", random_state=3).fit(K)
    assert_array_equal(ours.component_indices_, theirs.component_indices_)
    assert_array_equal(ours.components_, theirs.components_)
    assert_allclose(ours.transform(K_test), theirs.transform(K_test), rtol=1e-7, atol=1e-9)
    assert_allclose(ours.transform(K), theirs.transform(K), rtol=1e-7, atol=1e-9)


def test_pairwise_tag_lets_cross_validation_cut_the_kernel(views):
    X, _, _, _, y, _ = views
    K, _, _, _ = kernels(views)
    assert KernelMatchingPursuit(kernel="precomputed").__sklearn_tags__().input_tags.pairwise
    assert not SparseKernelPCA().__sklearn_tags__().input_tags.pairwise
    folds = KFold(4, shuffle=True, random_state=0)
    named = cross_val_score(KernelMatchingPursuit(k=10, gamma=GAMMA), X, y, cv=folds)
    pre = cross_val_score(KernelMatchingPursuit(k=10, kernel="precomputed"), K, y, cv=folds)
    assert_allclose(pre, named, rtol=1e-9)


# -- bad input ---------------------------------------------------------------------------


def fits(K, y, Ky):
    """Each estimator's precomputed fit of the training kernel ``K``."""
    return {
        "KernelMatchingPursuit": lambda: KernelMatchingPursuit(k=3, kernel="precomputed").fit(K, y),
        "SparseKernelPCA": lambda: SparseKernelPCA(3, kernel="precomputed").fit(K),
        "SparseKernelCCA": lambda: SparseKernelCCA(k=3, n_components=1, kernel="precomputed").fit(K, Ky),
        "GreedyNystroem": lambda: GreedyNystroem(3, kernel="precomputed").fit(K),
        "GreedyNystroem-random": lambda: GreedyNystroem(3, criterion="random", kernel="precomputed").fit(K),
    }


ESTIMATORS = list(fits(None, None, None))


def asymmetric(K):
    K = K.copy()
    K[2, 7] += 0.1
    return K


# What a fit is given instead of a kernel, from the points X and their kernel K, and what it says.
NOT_KERNELS_AT_FIT = {
    "not square": (lambda X, K: X, r"^X: a precomputed kernel must be a square matrix, got shape \(80, 3\)"),
    "asymmetric": (lambda X, K: asymmetric(K), r"^X: a precomputed kernel must be symmetric"),
    "not PSD": (lambda X, K: -K, r"^X: a precomputed kernel must be positive semi-definite"),
}


@pytest.mark.parametrize("bad", NOT_KERNELS_AT_FIT)
@pytest.mark.parametrize("name", ESTIMATORS)
def test_fit_refuses_what_is_not_a_kernel(views, name, bad):
    X, _, _, _, y, _ = views
    K, _, Ky, _ = kernels(views)
    given, message = NOT_KERNELS_AT_FIT[bad]
    with pytest.raises(ValueError, match=message):
        fits(given(X, K), y, Ky)[name]()


@pytest.mark.parametrize("name", ESTIMATORS)
def test_wrong_number_of_columns_to_predict(views, name):
    _, _, _, _, y, _ = views
    K, K_test, Ky, _ = kernels(views)
    model = fits(K, y, Ky)[name]()
    output = getattr(model, "predict", None) or model.transform
    with pytest.raises(ValueError, match=r"X has 79 features, but \w+ is expecting 80 features"):
        output(K_test[:, :79])
    assert len(output(K_test)) == len(K_test)


def test_cca_second_view_kernel(views):
    _, _, _, _, y, _ = views
    K, K_test, Ky, Ky_test = kernels(views)
    model = SparseKernelCCA(k=3, n_components=1, kernel="precomputed")
    with pytest.raises(ValueError, match=r"^y: a precomputed kernel must be a square matrix, got shape \(80, 1\)"):
        model.fit(K, y)
    with pytest.raises(ValueError, match=r"^y: a precomputed kernel must be symmetric"):
        model.fit(K, asymmetric(Ky))
    model.fit(K, Ky)
    with pytest.raises(ValueError, match=r"^y: has 79 features, but SparseKernelCCA is expecting 80"):
        model.transform(K_test, Ky_test[:, :79])


def test_kernel_beyond_float32(views):
    _, _, _, _, y, _ = views
    K, _, Ky, _ = kernels(views)
    with pytest.raises(ValueError, match=r"^X: has values beyond the range of float32"):
        KernelMatchingPursuit(k=3, kernel="precomputed", dtype="float32").fit(K * 1e40, y)
    with pytest.raises(ValueError, match=r"^y: has values beyond the range of float32"):
        SparseKernelCCA(k=3, n_components=1, kernel="precomputed", dtype="float32").fit(K, Ky * 1e40)
    assert KernelMatchingPursuit(k=3, kernel="precomputed").fit(K * 1e40, y).k_ == 3


@pytest.mark.parametrize("dtype, scale", [("float64", 1e154), ("float32", 1e19)])
def test_kernel_whose_squares_overflow(views, dtype, scale):
    _, _, _, _, y, _ = views
    K, _, Ky, _ = kernels(views)
    # 80 samples: the limit is sqrt(max / 80), 1.5e153 in float64 and 2.1e18 in float32.
    message = rf"^X: its kernel has values up to .*, whose squares summed over the 80 samples overflow {dtype}"
    with pytest.raises(ValueError, match=message):
        KernelMatchingPursuit(k=3, kernel="precomputed", dtype=dtype).fit(K * scale, y)
    with pytest.raises(ValueError, match=message):
        GreedyNystroem(3, kernel="precomputed", dtype=dtype).fit(K * scale, y > 0)
    with pytest.raises(ValueError, match=message.replace("^X", "^y")):
        SparseKernelCCA(k=3, n_components=1, kernel="precomputed", dtype=dtype).fit(K, Ky * scale)
    assert KernelMatchingPursuit(k=3, kernel="precomputed", dtype=dtype).fit(K * scale / 10, y).k_ == 3
    assert SparseKernelPCA(3, kernel="precomputed", dtype=dtype).fit(K * scale).n_components_ == 3


def test_reconstruction_error_self_kernel(views):
    X, X_test, _, _, _, _ = views
    K, K_test, _, _ = kernels(views)
    pre = SparseKernelPCA(5, kernel="precomputed").fit(K)
    with pytest.raises(ValueError, match=r"^self_kernel: required with kernel='precomputed'"):
        pre.reconstruction_error(K_test)
    with pytest.raises(ValueError, match=r"^self_kernel: must have one value per row of X \(30\), got shape \(29,\)"):
        pre.reconstruction_error(K_test, self_kernel=np.ones(29))
    with pytest.raises(ValueError, match=r"self_kernel.*NaN"):
        pre.reconstruction_error(K_test, self_kernel=np.full(30, np.nan))
    with pytest.raises(ValueError, match=r"^self_kernel: only for kernel='precomputed'"):
        SparseKernelPCA(5, gamma=GAMMA).fit(X).reconstruction_error(X_test, self_kernel=np.ones(30))


# -- scikit-learn's checks ---------------------------------------------------------------

# As for GreedyKFDA's precomputed checks: the common checks feed matrices that are not
# kernels, and refusing what is not symmetric positive semi-definite is intended.
NOT_KERNELS = {
    "check_estimators_dtypes": "casts the linear kernel X X' to integers: the truncated matrix is not PSD",
    "check_positive_only_tag_during_fit": "passes -K, whose negative diagonal is not PSD",
}


# SparseKernelCCA is left out: the checks pass its second view as a 1-D target, never
# as the square kernel a precomputed second view must be.
@parametrize_with_checks(
    [KernelMatchingPursuit(k=5, kernel="precomputed"), SparseKernelPCA(n_components=5, kernel="precomputed"),
     GreedyNystroem(n_components=5, kernel="precomputed")],
    expected_failed_checks=lambda estimator: NOT_KERNELS,
)
def test_sklearn_compatible_precomputed(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # k larger than some checks' tiny sets
        check(estimator)
