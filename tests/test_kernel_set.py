"""One kernel set for every estimator (``gkfda._kernels``): scikit-learn's kernel names,
``gamma="scale"`` and ``"auto"``, the kernel parameters' rules; and the transformers'
feature names and pandas output."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.metrics.pairwise import pairwise_kernels
from sklearn.utils._param_validation import InvalidParameterError

from gkfda import (
    GreedyKFDA, GreedyKFDACV, GreedyNystroem, KernelMatchingPursuit, ParsimoniousKFDA, SparseKernelCCA,
    SparseKernelPCA,
)

RNG = np.random.default_rng(0)
# Positive features: chi2 needs them, and a fractional degree a positive base.
X = RNG.uniform(0.1, 1.0, size=(70, 3))
VIEW = np.column_stack([np.cos(3 * X[:, 0]), X[:, 1] * X[:, 2]]) + 1.0
LABELS = (X[:, 0] + np.sin(4 * X[:, 1]) > 1.3).astype(int)
TARGET = np.sin(4 * X[:, 0]) + X[:, 2]

ESTIMATORS = {
    "GreedyKFDA": lambda **p: GreedyKFDA(k=8, **p),
    "ParsimoniousKFDA": lambda **p: ParsimoniousKFDA(rho=1e-2, **p),
    "KernelMatchingPursuit": lambda **p: KernelMatchingPursuit(k=8, **p),
    "SparseKernelPCA": lambda **p: SparseKernelPCA(n_components=8, **p),
    "SparseKernelCCA": lambda **p: SparseKernelCCA(k=8, n_components=1, **p),
    "GreedyNystroem": lambda **p: GreedyNystroem(n_components=8, **p),
}


def fitted(name, data=X, second=VIEW, **params):
    """The estimator ``name`` fitted on ``data`` (and the target or second view it takes)."""
    model = ESTIMATORS[name](**params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # early stops on small data
        if name in ("GreedyKFDA", "ParsimoniousKFDA"):
            return model.fit(data, LABELS)
        if name == "KernelMatchingPursuit":
            return model.fit(data, TARGET)
        if name == "SparseKernelCCA":
            return model.fit(data, second)
        return model.fit(data)


def output(model, data=X, second=VIEW):
    if isinstance(model, (GreedyKFDA, ParsimoniousKFDA)):
        return model.predict_proba(data)
    if isinstance(model, KernelMatchingPursuit):
        return model.predict(data)
    if isinstance(model, SparseKernelCCA):
        return np.hstack(model.transform(data, second))
    return model.transform(data)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize(
    "kernel, params",
    [("laplacian", {"gamma": 0.5}), ("chi2", {"gamma": 0.5}), ("cosine", {}),
     ("polynomial", {"gamma": 0.3, "degree": 2.5, "coef0": 1.0})],
    ids=["laplacian", "chi2", "cosine", "fractional-degree"],
)
def test_scikit_learns_kernels_are_their_precomputed_kernels(name, kernel, params):
    named = fitted(name, kernel=kernel, **params)
    metric = "poly" if kernel == "polynomial" else kernel
    K, K_view = (pairwise_kernels(A, metric=metric, **params) for A in (X, VIEW))
    pre = fitted(name, data=K, second=K_view, kernel="precomputed")
    assert_allclose(output(pre, K, K_view), output(named), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_the_polynomial_alias_and_an_integral_float_degree_are_the_cores_poly(name):
    reference = output(fitted(name, kernel="poly", gamma=0.5, degree=2))
    assert_array_equal(output(fitted(name, kernel="polynomial", gamma=0.5, degree=2.0)), reference)


@pytest.mark.parametrize("name", sorted(set(ESTIMATORS) - {"SparseKernelCCA"}))  # of each view: below
def test_gamma_scale_and_auto_are_svcs(name):
    d = X.shape[1]
    scale, auto = 1.0 / (d * X.var()), 1.0 / d
    assert_array_equal(output(fitted(name, gamma="scale")), output(fitted(name, gamma=scale)))
    assert_array_equal(output(fitted(name, gamma="auto")), output(fitted(name, gamma=auto)))
    # None: "scale" for gkfda's estimators; Nystroem's, the kernel's own 1 / n_features, for GreedyNystroem.
    default = auto if name == "GreedyNystroem" else scale
    assert_array_equal(output(fitted(name)), output(fitted(name, gamma=default)))


def test_sparse_kernel_cca_resolves_gamma_per_view():
    for gamma, expected in [("scale", lambda A: 1.0 / (A.shape[1] * A.var())), ("auto", lambda A: 1.0 / A.shape[1])]:
        model = fitted("SparseKernelCCA", second=VIEW[:, :1], gamma=gamma)
        assert (model._x_gamma, model._y_gamma) == (expected(X), expected(VIEW[:, :1]))


@pytest.mark.parametrize("name", ["GreedyKFDA", "GreedyNystroem"])
def test_chi2s_gamma_none_is_one(name):
    assert_array_equal(output(fitted(name, kernel="chi2")), output(fitted(name, kernel="chi2", gamma=1.0)))


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize("kernel", ["precomputed", "callable"])
@pytest.mark.parametrize("parameter, value", [("gamma", 1.0), ("gamma", "scale"), ("degree", 3), ("coef0", 1.0)])
def test_kernel_parameters_with_a_callable_or_precomputed_kernel_raise(name, kernel, parameter, value):
    # Nystroem's rule, for every estimator: their defaults are None, so any value is given.
    K = pairwise_kernels(X, metric="rbf")
    if kernel == "callable":
        kernel = (lambda a, b: float(a @ b)) if name == "GreedyNystroem" else (lambda A, B: A @ B.T)
    with pytest.raises(ValueError, match=rf"^{parameter}: don't pass gamma, coef0 or degree to {name} with a callable"):
        fitted(name, data=K if kernel == "precomputed" else X, second=K, kernel=kernel, **{parameter: value})


def test_greedy_kfda_cv_passes_the_kernel_set_on():
    search = GreedyKFDACV(gammas=2, max_k=5, cv=3, kernel="laplacian").fit(X, LABELS)
    assert search.best_estimator_.kernel == "laplacian" and len(search.gammas_) == 2
    assert GreedyKFDACV(max_k=5, cv=3, kernel="cosine").fit(X, LABELS).gammas_.tolist() == [None]


def test_a_kernel_that_is_not_positive_semi_definite_is_refused():
    with pytest.raises(ValueError, match=r"^kernel: the 'additive_chi2' kernel of X is not positive semi-definite"):
        fitted("GreedyKFDA", kernel="additive_chi2")


def test_greedy_nystroem_kernel_params():
    reference = output(fitted("GreedyNystroem", kernel="poly", gamma=0.5, degree=2, coef0=0.5))
    given = fitted("GreedyNystroem", kernel="poly", kernel_params={"gamma": 0.5, "degree": 2, "coef0": 0.5})
    assert_array_equal(output(given), reference)
    # As Nystroem's: the parameter of the same name overrides kernel_params.
    overridden = fitted("GreedyNystroem", kernel="poly", degree=2, kernel_params={"gamma": 0.5, "degree": 4,
                                                                                    "coef0": 0.5})
    assert_array_equal(output(overridden), reference)
    with pytest.raises(ValueError, match=r"^kernel_params: the 'rbf' kernel takes gamma; got \['degree'\]"):
        fitted("GreedyNystroem", kernel_params={"degree": 2})
    with pytest.raises(InvalidParameterError, match="kernel_params"):
        fitted("GreedyNystroem", kernel_params={"gamma": -1.0})
    with pytest.raises(ValueError, match=r"^kernel_params: a precomputed kernel takes no parameters"):
        fitted("GreedyNystroem", data=pairwise_kernels(X), kernel="precomputed", kernel_params={"gamma": 1.0})
    # A callable's keyword arguments, called on pairs of rows as by Nystroem.
    model = fitted("GreedyNystroem", kernel=lambda a, b, scale: scale * float(np.minimum(a, b).sum()),
                   kernel_params={"scale": 2.0})
    reference = fitted("GreedyNystroem", data=2.0 * pairwise_kernels(X, metric=lambda a, b: np.minimum(a, b).sum()),
                       kernel="precomputed")
    assert_array_equal(model.component_indices_, reference.component_indices_)
    assert_allclose(model.normalization_, reference.normalization_, rtol=1e-9)


TRANSFORMERS = {
    "GreedyKFDA": (lambda: GreedyKFDA(k=6), 6),
    "GreedyKFDA-ovr": (lambda: GreedyKFDA(k=4, multiclass="ovr"), 12),
    "GreedyNystroem": (lambda: GreedyNystroem(n_components=6), 6),
    "SparseKernelPCA": (lambda: SparseKernelPCA(n_components=6), 6),
    "SparseKernelCCA": (lambda: SparseKernelCCA(k=6, n_components=2), 2),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMERS))
def test_feature_names_and_pandas_output(name):
    make, width = TRANSFORMERS[name]
    frame = pd.DataFrame(X, columns=["a", "b", "c"], index=np.arange(100, 170))
    labels = np.where(LABELS == 1, 2, np.arange(70) % 2)  # three classes for one-vs-rest
    second = VIEW if name == "SparseKernelCCA" else labels
    plain = make().fit(frame, second)
    expected = [f"{type(plain).__name__.lower()}{i}" for i in range(width)]
    assert_array_equal(plain.get_feature_names_out(), expected)
    model = make().set_output(transform="pandas").fit(frame, second)
    out = model.transform(frame)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == expected and out.index.equals(frame.index)
    assert_array_equal(out.to_numpy(), plain.transform(frame))


def test_sparse_kernel_cca_pair_in_pandas():
    frame, view = pd.DataFrame(X, columns=["a", "b", "c"]), pd.DataFrame(VIEW, columns=["u", "v"], index=range(70))
    plain = SparseKernelCCA(k=6, n_components=2).fit(frame, view)
    model = SparseKernelCCA(k=6, n_components=2).set_output(transform="pandas").fit(frame, view)
    for pair in (model.transform(frame, view), model.fit_transform(frame, view)):
        assert all(isinstance(scores, pd.DataFrame) for scores in pair)
        assert [list(scores.columns) for scores in pair] == [["sparsekernelcca0", "sparsekernelcca1"]] * 2
        for scores, reference in zip(pair, plain.transform(frame, view)):
            assert_array_equal(scores.to_numpy(), reference)
    # The methods built on transform read its arrays, whatever the output configuration.
    assert model.score(frame, view) == plain.score(frame, view)
    assert_array_equal(model.loss_bound(frame, view, alpha=0.5), plain.loss_bound(frame, view, alpha=0.5))
