"""scikit-learn's own ``Nystroem`` tests (``sklearn/tests/test_kernel_approximation.py``:
its ``test_nystroem_*`` and ``test_get_feature_names_out``) with ``Nystroem`` bound to
:class:`~gkfda.GreedyNystroem`, a drop-in for it.

The tests are scikit-learn's, kept as they are but where GreedyNystroem must differ: each
adaptation says why in a comment beginning "Adapted"."""

import numpy as np
import pytest
from sklearn._config import config_context
from sklearn.datasets import make_classification
from sklearn.metrics.pairwise import chi2_kernel, kernel_metrics, polynomial_kernel, rbf_kernel
from sklearn.utils._array_api import _atol_for_type, get_namespace_and_device, move_to
from sklearn.utils._array_api import device as array_device
from sklearn.utils._testing import _array_api_for_tests, assert_allclose, assert_array_almost_equal, assert_array_equal

from gkfda import GreedyNystroem as Nystroem

# generate data
rng = np.random.RandomState(0)
X = rng.random_sample(size=(300, 50))
Y = rng.random_sample(size=(300, 50))
X /= X.sum(axis=1)[:, np.newaxis]
Y /= Y.sum(axis=1)[:, np.newaxis]

# Make sure X and Y are not writable to avoid introducing dependencies between
# tests.
X.flags.writeable = False
Y.flags.writeable = False

# Adapted: the message names the class and starts with the argument, as gkfda's do.
CALLABLE_PARAMS_MESSAGE = "don't pass gamma, coef0 or degree to GreedyNystroem"


def _linear_kernel(x, y):
    return x @ y


def test_nystroem_approximation():
    # some basic tests
    rnd = np.random.RandomState(0)
    X = rnd.uniform(size=(10, 4))

    # With n_components = n_samples this is exact
    X_transformed = Nystroem(n_components=X.shape[0]).fit_transform(X)
    K = rbf_kernel(X)
    assert_array_almost_equal(np.dot(X_transformed, X_transformed.T), K)

    trans = Nystroem(n_components=2, random_state=rnd)
    X_transformed = trans.fit(X).transform(X)
    assert X_transformed.shape == (X.shape[0], 2)

    # test callable kernel
    trans = Nystroem(n_components=2, kernel=_linear_kernel, random_state=rnd)
    X_transformed = trans.fit(X).transform(X)
    assert X_transformed.shape == (X.shape[0], 2)

    # test that available kernels fit and transform
    kernels_available = kernel_metrics()
    for kern in kernels_available:
        trans = Nystroem(n_components=2, kernel=kern, random_state=rnd)
        X_transformed = trans.fit(X).transform(X)
        assert X_transformed.shape == (X.shape[0], 2)


# Adapted: GreedyNystroem computes with NumPy and the Rust core, so only NumPy's namespace
# is in scope (with array_api_dispatch on, its arrays and attributes stay NumPy's). As in
# scikit-learn, the test runs only with SCIPY_ARRAY_API set.
@pytest.mark.parametrize("array_namespace, device_name, dtype_name", [("numpy", None, None)])
@pytest.mark.parametrize("kernel", list(kernel_metrics()) + [_linear_kernel, "precomputed"])
@pytest.mark.parametrize("n_components", [2, 100])
def test_nystroem_approximation_array_api(array_namespace, device_name, dtype_name, kernel, n_components):
    xp, device = _array_api_for_tests(array_namespace, device_name, dtype_name)
    rnd = np.random.RandomState(0)
    n_samples = 10
    # Ensure full-rank linear kernel to limit the impact of device-specific
    # rounding discrepancies.
    n_features = 2 * n_samples
    X_np = rnd.uniform(size=(n_samples, n_features)).astype(dtype_name)
    if kernel == "precomputed":
        X_np = rbf_kernel(X_np[:n_components])

    X_xp = xp.asarray(X_np, device=device)

    nystroem = Nystroem(n_components=n_components, kernel=kernel, random_state=0)
    X_np_transformed = nystroem.fit_transform(X_np)

    with config_context(array_api_dispatch=True):
        X_xp_transformed = nystroem.fit_transform(X_xp)
        X_xp_transformed_np = move_to(X_xp_transformed, xp=np, device="cpu")

        for attribute_name in ["components_", "normalization_"]:
            xp_attr, _, device_attr = get_namespace_and_device(getattr(nystroem, attribute_name))
            assert xp_attr is xp
            assert device_attr == array_device(X_xp)

    atol = _atol_for_type(dtype_name)
    assert_allclose(X_np_transformed, X_xp_transformed_np, atol=atol)


def test_nystroem_default_parameters():
    rnd = np.random.RandomState(42)
    X = rnd.uniform(size=(10, 4))

    # rbf kernel should behave as gamma=None by default
    # aka gamma = 1 / n_features
    nystroem = Nystroem(n_components=10)
    X_transformed = nystroem.fit_transform(X)
    K = rbf_kernel(X, gamma=None)
    K2 = np.dot(X_transformed, X_transformed.T)
    assert_array_almost_equal(K, K2)

    # chi2 kernel should behave as gamma=1 by default
    nystroem = Nystroem(kernel="chi2", n_components=10)
    X_transformed = nystroem.fit_transform(X)
    K = chi2_kernel(X, gamma=1)
    K2 = np.dot(X_transformed, X_transformed.T)
    assert_array_almost_equal(K, K2)


def test_nystroem_singular_kernel():
    # test that nystroem works with singular kernel matrix
    rng = np.random.RandomState(0)
    X = rng.rand(10, 20)
    X = np.vstack([X] * 2)  # duplicate samples

    gamma = 100
    # Adapted: the greedy choice (pivoted Cholesky) stops at the kernel's rank, 10 of the
    # 20 points, and says so in a warning, where Nystroem keeps duplicate landmarks.
    with pytest.warns(UserWarning, match="the selection stopped after 10 of 20 bases"):
        N = Nystroem(gamma=gamma, n_components=X.shape[0]).fit(X)
    X_transformed = N.transform(X)

    K = rbf_kernel(X, gamma=gamma)

    assert_array_almost_equal(K, np.dot(X_transformed, X_transformed.T))
    assert np.all(np.isfinite(Y))


def test_nystroem_poly_kernel_params():
    # Non-regression: Nystroem should pass other parameters beside gamma.
    rnd = np.random.RandomState(37)
    X = rnd.uniform(size=(10, 4))

    K = polynomial_kernel(X, degree=3.1, coef0=0.1)
    nystroem = Nystroem(kernel="polynomial", n_components=X.shape[0], degree=3.1, coef0=0.1)
    X_transformed = nystroem.fit_transform(X)
    assert_array_almost_equal(np.dot(X_transformed, X_transformed.T), K)


def test_nystroem_callable():
    # Test Nystroem on a callable.
    rnd = np.random.RandomState(42)
    n_samples = 10
    X = rnd.uniform(size=(n_samples, 4))

    def logging_histogram_kernel(x, y, log):
        """Histogram kernel that writes to a log."""
        log.append(1)
        return np.minimum(x, y).sum()

    kernel_log = []
    X = list(X)  # test input validation
    Nystroem(
        kernel=logging_histogram_kernel,
        n_components=(n_samples - 1),
        kernel_params={"log": kernel_log},
    ).fit(X)
    # Adapted: the greedy choice reads the kernel of every pair of training points, each
    # pair once (n(n+1)/2 calls, the diagonal included), and the landmarks' kernel from
    # it; Nystroem evaluates only its random landmarks', n_components(n_components+1)/2.
    assert len(kernel_log) == n_samples * (n_samples + 1) / 2

    # if degree, gamma or coef0 is passed, we raise a ValueError
    msg = CALLABLE_PARAMS_MESSAGE
    params = ({"gamma": 1}, {"coef0": 1}, {"degree": 2})
    for param in params:
        ny = Nystroem(kernel=_linear_kernel, n_components=(n_samples - 1), **param)
        with pytest.raises(ValueError, match=msg):
            ny.fit(X)


def test_nystroem_precomputed_kernel():
    # Non-regression: test Nystroem on precomputed kernel.
    # PR - 14706
    rnd = np.random.RandomState(12)
    X = rnd.uniform(size=(10, 4))

    K = polynomial_kernel(X, degree=2, coef0=0.1)
    nystroem = Nystroem(kernel="precomputed", n_components=X.shape[0])
    X_transformed = nystroem.fit_transform(K)
    assert_array_almost_equal(np.dot(X_transformed, X_transformed.T), K)

    # if degree, gamma or coef0 is passed, we raise a ValueError
    msg = CALLABLE_PARAMS_MESSAGE
    params = ({"gamma": 1}, {"coef0": 1}, {"degree": 2})
    for param in params:
        ny = Nystroem(kernel="precomputed", n_components=X.shape[0], **param)
        with pytest.raises(ValueError, match=msg):
            ny.fit(K)


def test_nystroem_component_indices():
    """Check that `component_indices_` corresponds to the subset of
    training points used to construct the feature map.
    Non-regression test for:
    https://github.com/scikit-learn/scikit-learn/issues/20474
    """
    X, _ = make_classification(n_samples=100, n_features=20)
    feature_map_nystroem = Nystroem(
        n_components=10,
        random_state=0,
    )
    feature_map_nystroem.fit(X)
    assert feature_map_nystroem.component_indices_.shape == (10,)


# Adapted: of scikit-learn's estimators there, Nystroem alone.
@pytest.mark.parametrize("Estimator", [Nystroem])
def test_get_feature_names_out(Estimator):
    """Check get_feature_names_out"""
    est = Estimator().fit(X)
    X_trans = est.transform(X)

    names_out = est.get_feature_names_out()
    class_name = Estimator.__name__.lower()
    expected_names = [f"{class_name}{i}" for i in range(X_trans.shape[1])]
    assert_array_equal(names_out, expected_names)
