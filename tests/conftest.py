"""Problems shared by the test files."""

import re

import numpy as np
import pytest

from gkfda import _core

#: The kernels of the selection problems, as ``_core.kernel_matrix`` takes them.
SELECTION_KERNELS = {
    "rbf": {"kernel": "rbf", "gamma": 0.3},
    "poly": {"kernel": "poly", "gamma": 0.5, "degree": 2, "coef0": 1.0},
}


def selection_data(seed, m=120, d=4, balance=0.5, class_sorted=False):
    """Points and ±1 labels of a non-linear two-class problem, a ``balance`` of them positive."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    score = X[:, 0] + np.sin(2 * X[:, 1]) + 0.4 * rng.normal(size=m)
    y = np.where(score > np.quantile(score, 1 - balance), 1, -1)
    if class_sorted:  # as GreedyKFDA.fit orders its kernel: the engine's passes split by class
        order = np.argsort(-y, kind="stable")
        X, y = X[order], y[order]
    return X, y


def selection_problem(seed, m=120, d=4, kernel="rbf", balance=0.5, class_sorted=False):
    """The kernel (``SELECTION_KERNELS[kernel]``) and labels of :func:`selection_data`."""
    X, y = selection_data(seed, m, d, balance, class_sorted)
    return _core.kernel_matrix(X, **SELECTION_KERNELS[kernel]), y


@pytest.fixture
def problem():
    """``problem(seed, m=120, d=4, kernel="rbf", balance=0.5, class_sorted=False)`` gives
    ``(K, y)``: a selection problem for the engine and the reference."""
    return selection_problem


@pytest.fixture
def problem_data():
    """``problem_data(seed, m=120, d=4, balance=0.5, class_sorted=False)`` gives the points
    and labels behind ``problem``."""
    return selection_data


@pytest.fixture
def problem_kernels():
    """The kernels of ``problem`` by name, as ``_core.kernel_matrix`` takes them."""
    return SELECTION_KERNELS


@pytest.fixture
def phases_shown():
    """A function of a fit's stderr: the phases whose progress bars it shows, in the order
    they first appear."""
    from gkfda._progress import PHASES

    def shown(err):
        names = []
        for line in re.split(r"[\r\n]+", err):
            name = line.split(":", 1)[0].strip()
            if name in PHASES and name not in names:
                names.append(name)
        return names

    return shown
