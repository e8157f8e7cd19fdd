"""The core's bindings refuse bad input with an exception naming the argument, never a panic:
the estimators validate before they call them, so these call ``gkfda._core`` directly."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics.pairwise import rbf_kernel

from gkfda import _core



@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(20, 3)), np.array([0, 1] * 10)


@pytest.fixture
def selection_input(data):
    kernel = rbf_kernel(data[0], gamma=0.5)
    return np.ascontiguousarray(kernel), np.arange(len(kernel)) % 2 == 0


def test_core_greedy_select_accepts_good_input(selection_input):
    K, positive = selection_input
    indices, stopped_early, passes = _core.greedy_select(K, positive, 3)
    assert indices.shape == (3,) and not stopped_early and passes >= 1


def test_core_greedy_select_integer_kernel(selection_input):
    K, positive = selection_input
    with pytest.raises(TypeError, match=r"^K: must be a 2-D float32 or float64"):
        _core.greedy_select(K.astype(np.int64), positive, 3)


def test_core_greedy_select_1d_kernel(selection_input):
    K, positive = selection_input
    with pytest.raises(TypeError, match=r"^K: "):
        _core.greedy_select(K[0], positive, 3)


def test_core_greedy_select_non_square(selection_input):
    K, positive = selection_input
    with pytest.raises(ValueError, match=r"^K: must be square"):
        _core.greedy_select(np.ascontiguousarray(K[:, :7]), positive, 3)


@pytest.mark.parametrize("k", [0, 21])
def test_core_greedy_select_bad_k(selection_input, k):
    K, positive = selection_input
    with pytest.raises(ValueError, match=r"^k: must be between 1 and 20"):
        _core.greedy_select(K, positive, k)


def test_core_greedy_select_negative_k(selection_input):
    K, positive = selection_input
    with pytest.raises(ValueError, match="^k:"):
        _core.greedy_select(K, positive, -1)


def test_core_greedy_select_refuses_nan_kernel_zero_threads_and_stray_order(selection_input):
    K, positive = selection_input
    poisoned = K.copy()
    poisoned[2, 3] = np.nan
    with pytest.raises(ValueError, match="^K:.*NaN"):
        _core.greedy_select(poisoned, positive, 3)
    with pytest.raises(ValueError, match="^n_jobs:"):
        _core.greedy_select(K, positive, 3, n_threads=0)
    with pytest.raises(ValueError, match="^random_order:"):
        _core.greedy_select(K, positive, 3, random_order=np.arange(len(positive), dtype=np.int64))
    with pytest.raises(TypeError, match="^y:"):
        _core.greedy_select(K, positive.astype(np.float64), 3)


@pytest.mark.parametrize(
    "order",
    [np.zeros(20, np.int64), np.arange(10, dtype=np.int64), np.arange(1, 21, dtype=np.int64), -np.arange(20)],
    ids=["repeated", "short", "out-of-range", "negative"],
)
def test_core_greedy_select_order_not_a_permutation(selection_input, order):
    K, positive = selection_input
    with pytest.raises(ValueError, match=r"^random_order: "):
        _core.greedy_select(K, positive, 3, criterion="random", random_order=order)


def test_core_greedy_select_bad_labels(selection_input):
    K, positive = selection_input
    with pytest.raises(ValueError, match=r"^y: has 10 labels but the kernel has 20 rows"):
        _core.greedy_select(K, positive[:10], 3)
    with pytest.raises(ValueError, match=r"^y: needs samples of both classes"):
        _core.greedy_select(K, np.ones(20, dtype=bool), 3)
    with pytest.raises(TypeError, match="^y:"):
        _core.greedy_select(K, positive.astype(np.float64), 3)
    with pytest.raises(ValueError, match="^y:"):
        _core.greedy_select(K, np.where(positive, 2, 0).astype(np.int64), 3)  # class 1 missing


@pytest.mark.parametrize(
    ("options", "pattern"),
    [
        ({"criterion": "best"}, r"^criterion: unknown name"),
        ({"deflation": "qr"}, r"^deflation: unknown name"),
        ({"stages": 0}, r"^stages: must be at least 1"),
        ({"tol": -1.0}, r"^tol: must be a finite non-negative"),
        ({"tol": float("nan")}, r"^tol: must be a finite non-negative"),
    ],
)
def test_core_greedy_select_bad_options(selection_input, options, pattern):
    K, positive = selection_input
    with pytest.raises(ValueError, match=pattern):
        _core.greedy_select(K, positive, 3, **options)


def test_core_greedy_select_many_bad_input(selection_input):
    K, positive = selection_input
    positives = np.stack([positive, ~positive, np.arange(len(positive)) % 3 == 0])
    assert len(_core.greedy_select_many(K, positives, 3)) == 3
    with pytest.raises(TypeError, match=r"^y: must be a 2-D boolean"):
        _core.greedy_select_many(K, positive, 3)
    with pytest.raises(TypeError, match=r"^y: must be a 2-D boolean"):
        _core.greedy_select_many(K, positives.astype(np.int64), 3)
    with pytest.raises(ValueError, match=r"^y: problem 0: has 10 labels but the kernel has 20 rows"):
        _core.greedy_select_many(K, np.ascontiguousarray(positives[:, :10]), 3)
    with pytest.raises(ValueError, match=r"^y: problem 1: needs samples of both classes"):
        _core.greedy_select_many(K, np.stack([positive, np.ones(20, dtype=bool)]), 3)
    with pytest.raises(ValueError, match=r"^k: must be between 1 and 20"):
        _core.greedy_select_many(K, positives, 21)
    with pytest.raises(ValueError, match=r"^random_order: needs one row per problem \(3\), got 2"):
        orders = np.tile(np.arange(20, dtype=np.int64), (2, 1))
        _core.greedy_select_many(K, positives, 3, criterion="random", random_order=orders)
    with pytest.raises(ValueError, match=r"^random_order: problem 2: must be a permutation"):
        orders = np.tile(np.arange(20, dtype=np.int64), (3, 1))
        orders[2, 0] = 1
        _core.greedy_select_many(K, positives, 3, criterion="random", random_order=orders)
    with pytest.raises(ValueError, match=r"^random_order: indices must be non-negative"):
        orders = -np.ones((3, 20), dtype=np.int64)
        _core.greedy_select_many(K, positives, 3, criterion="random", random_order=orders)
    with pytest.raises(ValueError, match=r"^random_order: problem 0: is only used by the random criterion"):
        orders = np.tile(np.arange(20, dtype=np.int64), (3, 1))
        _core.greedy_select_many(K, positives, 3, random_order=orders)
    with pytest.raises(ValueError, match=r"^deflation: unknown name"):
        _core.greedy_select_many(K, positives, 3, deflation="qr")
    with pytest.raises(TypeError, match=r"^K: must be a 2-D float32 or float64"):
        _core.greedy_select_many(K.astype(np.int64), positives, 3)
    assert _core.greedy_select_many(K, np.zeros((0, 20), dtype=bool), 3) == []
    # Without given orders, each problem of the random criterion draws its own.
    same = np.stack([positive, positive])
    first, second = _core.greedy_select_many(K, same, 10, criterion="random", seed=3)
    assert not np.array_equal(first[0], second[0])


def test_core_kernel_matrix_bad_input(data):
    X, _ = data
    with pytest.raises(TypeError, match=r"^x: must be a 2-D float32 or float64"):
        _core.kernel_matrix(X.astype(np.int64))
    with pytest.raises(TypeError, match=r"^x: "):
        _core.kernel_matrix(X[:, 0])
    with pytest.raises(TypeError, match=r"^z: must be a 2-D float64 array like x"):
        _core.kernel_matrix(X, X.astype(np.float32))
    with pytest.raises(ValueError, match=r"has 3 features but the other set has 1"):
        _core.kernel_matrix(X, np.ascontiguousarray(X[:, :1]))
    with pytest.raises(ValueError, match=r"^kernel: unknown name \"sigmoid\""):
        _core.kernel_matrix(X, kernel="sigmoid")
    with pytest.raises(ValueError, match=r"^gamma: must be a positive finite"):
        _core.kernel_matrix(X, gamma=-1.0)
    with pytest.raises(ValueError, match=r"^gamma: must be a positive finite"):
        _core.kernel_matrix(X, gamma=float("nan"))
    with pytest.raises(ValueError, match=r"^degree: must be at least 1"):
        _core.kernel_matrix(X, kernel="poly", degree=0)
    assert _core.kernel_matrix(X).shape == (20, 20)
