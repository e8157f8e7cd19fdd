"""The Rust engine against the NumPy reference (``gkfda.reference``), index for index."""

import inspect

import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.utils import check_random_state

import gkfda
from gkfda import _core, reference

SCORED_CRITERIA = [c for c in gkfda.CRITERIA if c != "random"]


PROBLEMS = {
    "rbf-balanced": (0, {}),
    "rbf-unbalanced": (1, {"balance": 0.25, "m": 97}),
    "poly": (2, {"kernel": "poly", "m": 81, "d": 8}),  # feature space of dimension 45 > k
    "rbf-class-sorted": (3, {"m": 150, "class_sorted": True}),
    "rbf-class-sorted-unbalanced": (4, {"m": 203, "balance": 0.3, "class_sorted": True}),
}


def rust_select(K, y, k, criterion, deflation, stages, order=None, threads=1):
    indices, _, _ = _core.greedy_select(
        K, y > 0, k, criterion=criterion, deflation=deflation, stages=stages, random_order=order, n_threads=threads
    )
    return indices


@pytest.mark.parametrize("problem_name", PROBLEMS)
@pytest.mark.parametrize("stages", [1, 2, 5])
@pytest.mark.parametrize("deflation", gkfda.DEFLATIONS)
@pytest.mark.parametrize("criterion", SCORED_CRITERIA)
def test_rust_selection_equals_reference(criterion, deflation, stages, problem_name, problem):
    seed, options = PROBLEMS[problem_name]
    K, y = problem(seed, **options)
    expected = reference.select(K, y, 20, criterion, deflation, stages)
    actual = rust_select(K, y, 20, criterion, deflation, stages)
    np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("deflation", gkfda.DEFLATIONS)
def test_random_criterion_is_reproducible_distinct_and_matches_reference(deflation, problem):
    K, y = problem(3)
    model_a = gkfda.GreedyKFDA(k=15, criterion="random", deflation=deflation, kernel="precomputed", random_state=7)
    model_b = gkfda.GreedyKFDA(k=15, criterion="random", deflation=deflation, kernel="precomputed", random_state=7)
    model_c = gkfda.GreedyKFDA(k=15, criterion="random", deflation=deflation, kernel="precomputed", random_state=8)
    a, b, c = (model.fit(K, y).support_ for model in (model_a, model_b, model_c))
    np.testing.assert_array_equal(a, b)
    assert len(set(a.tolist())) == len(a) == 15
    assert not np.array_equal(a, c)
    np.testing.assert_array_equal(a, reference.select(K, y, 15, "random", deflation, random_state=7))


@pytest.mark.parametrize("stages", [1, 2, 5])
@pytest.mark.parametrize("criterion", SCORED_CRITERIA)
@pytest.mark.parametrize("family", ["projection", "schur"])
def test_ortho_forms_equal_plain_forms_for_projection_and_schur(family, criterion, stages, problem):
    # Projection and Schur deflations leave columns already orthogonal to every earlier
    # direction, so their ortho- forms pick the same bases.
    K, y = problem(4)
    np.testing.assert_array_equal(
        rust_select(K, y, 25, criterion, "ortho-" + family, stages),
        rust_select(K, y, 25, criterion, family, stages),
    )


def test_ortho_deflated_kernels_agree_with_plain_ones_to_tolerance(problem):
    K, y = problem(5)
    rng = np.random.default_rng(0)
    for family in ("projection", "schur"):
        plain, ortho, Q = K.copy(), K.copy(), []
        for i in rng.choice(len(y), size=8, replace=False):
            tau = plain[:, i] / np.linalg.norm(plain[:, i])
            plain = reference._deflate(plain, tau, family)
            column = ortho[:, i] / np.linalg.norm(ortho[:, i])
            q = column - sum((p @ column) * p for p in Q) if Q else column
            q = q / np.linalg.norm(q)
            Q.append(q)
            ortho = reference._deflate(ortho, q, family)
        np.testing.assert_allclose(ortho, plain, atol=1e-9)


def test_ortho_hotelling_differs_from_hotelling(problem):
    K, y = problem(0)
    assert not np.array_equal(
        rust_select(K, y, 30, "optimal", "ortho-hotelling", 1), rust_select(K, y, 30, "optimal", "hotelling", 1)
    )


@pytest.mark.parametrize("deflation", gkfda.DEFLATIONS)
@pytest.mark.parametrize("stages", [1, 5])
def test_selection_does_not_depend_on_thread_count(deflation, stages, problem):
    K, y = problem(6, m=300)
    np.testing.assert_array_equal(
        rust_select(K, y, 40, "optimal", deflation, stages, threads=1),
        rust_select(K, y, 40, "optimal", deflation, stages, threads=2),
    )


# `pseudo` and `random` in the schur family check their candidates' columns one by one
# instead of keeping `d`: their early stops too must be the reference's.
@pytest.mark.parametrize("criterion", ["optimal", "pseudo", "random"])
@pytest.mark.parametrize("stages", [1, 3])
def test_early_stop_agrees_with_reference(criterion, stages):
    X, y = make_moons(400, noise=0.1, random_state=0)
    y = np.where(y == 1, 1, -1)
    K = _core.kernel_matrix(np.ascontiguousarray(X), kernel="rbf", gamma=0.05)
    # The reference draws its order from the seed as scikit-learn's RandomState does.
    order = check_random_state(3).permutation(len(y)) if criterion == "random" else None
    expected = reference.select(K, y, 150, criterion, "schur", stages, random_state=3)
    indices, stopped_early, _ = _core.greedy_select(
        K, y > 0, 150, criterion=criterion, deflation="schur", stages=stages, random_order=order
    )
    assert stopped_early and len(expected) < 150
    np.testing.assert_array_equal(indices, expected)


@pytest.mark.parametrize("deflation", ["projection", "schur", "ortho-hotelling", "none"])
def test_predictions_agree_with_reference_model(deflation):
    rng = np.random.default_rng(9)
    X = rng.normal(size=(200, 3))
    y = np.where(X[:, 0] ** 2 + X[:, 1] > 0.7, 1, -1)
    X_test = rng.normal(size=(50, 3))
    model = gkfda.GreedyKFDA(k=25, gamma=0.5, deflation=deflation, reg=1e-3).fit(X, y)
    K = reference.rbf_kernel(X, X, gamma=0.5)
    indices = reference.select(K, y, 25, "optimal", deflation)
    np.testing.assert_array_equal(model.support_, indices)
    expected = reference.decision_function(
        reference.fit_model(K, y, indices, reg=1e-3), reference.rbf_kernel(X_test, X[indices], gamma=0.5)
    )
    # Relative to the outputs' scale: a value near zero (-0.008 among values of ±6) is the
    # difference of larger terms, and carries their rounding (2.5e-9 with ortho-hotelling).
    np.testing.assert_allclose(model.decision_function(X_test), expected, rtol=1e-7, atol=1e-8 * np.abs(expected).max())


def test_kernels_match_textbook_formulas():
    rng = np.random.default_rng(1)
    X, Z = rng.normal(size=(70, 5)), rng.normal(size=(33, 5))
    np.testing.assert_allclose(_core.kernel_matrix(X, Z, kernel="rbf", gamma=0.2), reference.rbf_kernel(X, Z, 0.2), atol=1e-13)
    np.testing.assert_allclose(_core.kernel_matrix(X, Z, kernel="linear"), X @ Z.T, atol=1e-12)
    np.testing.assert_allclose(
        _core.kernel_matrix(X, Z, kernel="poly", gamma=0.3, degree=3, coef0=0.5), (0.3 * X @ Z.T + 0.5) ** 3, rtol=1e-12
    )
    gram32 = _core.kernel_matrix(X.astype(np.float32), kernel="rbf", gamma=0.2)
    assert gram32.dtype == np.float32 and np.array_equal(gram32, gram32.T)
    np.testing.assert_allclose(gram32, reference.rbf_kernel(X, X, 0.2), atol=1e-5)


def one_vs_rest_problem(seed, m=180, classes=4):
    """A class-sorted kernel (as ``GreedyKFDA.fit`` orders it) and its one-vs-rest labels."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    angle = np.arctan2(X[:, 1], X[:, 0]) + 0.3 * rng.normal(size=m)
    label = np.floor((angle + np.pi) / (2 * np.pi) * classes).astype(int) % classes
    order = np.argsort(label, kind="stable")
    return _core.kernel_matrix(X[order], kernel="rbf", gamma=0.5), label[order]


@pytest.mark.parametrize("stages", [1, 3])
@pytest.mark.parametrize("deflation", gkfda.DEFLATIONS)
@pytest.mark.parametrize("criterion", SCORED_CRITERIA)
def test_selections_of_many_problems_equal_reference(criterion, deflation, stages):
    # A small kernel: every problem as greedy_select alone. Its picks are the reference's.
    K, label = one_vs_rest_problem(stages)
    classes = np.unique(label)
    positives = np.stack([label == c for c in classes])
    selections = _core.greedy_select_many(K, positives, 15, criterion=criterion, deflation=deflation, stages=stages)
    assert len(selections) == len(classes)
    for c, (indices, stopped_early, passes) in zip(classes, selections):
        y = np.where(label == c, 1, -1)
        np.testing.assert_array_equal(indices, reference.select(K, y, 15, criterion, deflation, stages))
        assert not stopped_early and passes >= 1


SHARED_M = 1300  # a float64 kernel of 12.9 MiB: problems share their passes


@pytest.mark.parametrize(
    ("deflation", "stages"),
    [(deflation, 1) for deflation in gkfda.DEFLATIONS] + [("schur", 4), ("ortho-schur", 4), ("hotelling", 4)],
)
def test_shared_selections_equal_reference(deflation, stages):
    # One-vs-rest selections side by side, sharing each pass over K (whole rows, one order):
    # the schur family at any stage, the others at stages 1 (hotelling at 4 runs alone).
    K, label = one_vs_rest_problem(7, m=SHARED_M, classes=3)
    positives = np.stack([label == c for c in range(3)])
    selections = _core.greedy_select_many(K, positives, 12, deflation=deflation, stages=stages)
    for c, (indices, _, _) in enumerate(selections):
        y = np.where(label == c, 1, -1)
        np.testing.assert_array_equal(indices, reference.select(K, y, 12, "optimal", deflation, stages))


def test_shared_selections_do_not_depend_on_their_company_or_threads():
    K, label = one_vs_rest_problem(5, m=SHARED_M, classes=5)
    positives = np.stack([label == c for c in range(5)])
    together = _core.greedy_select_many(K, positives, 30, n_threads=2)
    for c in range(5):
        (alone,) = _core.greedy_select_many(K, positives[c : c + 1], 30, n_threads=1)
        np.testing.assert_array_equal(alone[0], together[c][0])
        assert alone[1:] == together[c][1:]


@pytest.mark.parametrize("deflation", ["schur", "hotelling", "ortho-projection"])
def test_shared_float32_selections_equal_reference(deflation):
    # A float32 kernel of 13.8 MiB (m = 1,900) shares its passes too.
    K, label = one_vs_rest_problem(9, m=1900, classes=3)
    positives = np.stack([label == c for c in range(3)])
    selections = _core.greedy_select_many(K.astype(np.float32), positives, 12, deflation=deflation)
    for c, (indices, _, _) in enumerate(selections):
        y = np.where(label == c, 1, -1)
        np.testing.assert_array_equal(indices, reference.select(K, y, 12, "optimal", deflation, 1))


def test_the_core_selection_defaults_to_the_estimators_deflation(problem):
    # A selection made without naming its deflation is the one GreedyKFDA makes by default,
    # whichever entry point makes it.
    default = inspect.signature(gkfda.GreedyKFDA).parameters["deflation"].default
    for function in (_core.greedy_select, _core.greedy_select_many):
        assert inspect.signature(function).parameters["deflation"].default == default, function.__name__
    K, y = problem(0)
    positive = y > 0
    unnamed, _, _ = _core.greedy_select(K, positive, 12)
    named, _, _ = _core.greedy_select(K, positive, 12, deflation=default)
    np.testing.assert_array_equal(unnamed, named)
    ((unnamed_many, _, _),) = _core.greedy_select_many(K, positive[None, :], 12)
    np.testing.assert_array_equal(unnamed_many, named)
