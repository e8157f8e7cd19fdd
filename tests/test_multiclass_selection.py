"""Selections over C classes sharing one basis: the Rust engine against the NumPy
reference (``gkfda.reference``) index for index, two classes as codes and as booleans,
and the class codes ``greedy_select`` refuses."""

import numpy as np
import pytest
from sklearn.utils import check_random_state

import gkfda
from gkfda import _core, reference

# (classes, m, contiguous, seed). Contiguous classes of 64 samples or more on average
# split the engine's passes by class (and its set-up takes one read of K, not two).
PROBLEMS = [
    (3, 90, False, 0),
    (3, 200, True, 1),
    (4, 110, False, 2),
    (4, 130, True, 3),
    (7, 120, False, 4),
    (7, 150, True, 5),
]
K_PICKS = 15


def classes_problem(n_classes, m, contiguous, seed):
    """An RBF kernel of points drawn around ``n_classes`` centres, with their class codes
    (every class present), ordered by class when ``contiguous``."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=1.2, size=(n_classes, 3))
    codes = np.arange(m) % n_classes
    rng.shuffle(codes)
    X = centres[codes] + rng.normal(size=(m, 3))
    if contiguous:
        order = np.argsort(codes, kind="stable")
        X, codes = X[order], codes[order]
    K = _core.kernel_matrix(np.ascontiguousarray(X), kernel="rbf", gamma=0.4)
    return K, codes.astype(np.int64)


@pytest.fixture(scope="module")
def problems():
    return {spec: classes_problem(*spec) for spec in PROBLEMS}


@pytest.mark.parametrize("spec", PROBLEMS, ids=lambda spec: "C{}-m{}-{}".format(*spec[:2], "sorted" if spec[2] else "shuffled"))
@pytest.mark.parametrize("criterion", gkfda.CRITERIA)
def test_engine_selects_as_reference_for_every_deflation_and_stage_count(problems, spec, criterion):
    K, codes = problems[spec]
    seed = spec[3]
    order = check_random_state(seed).permutation(len(codes)) if criterion == "random" else None
    for deflation in gkfda.DEFLATIONS:
        for stages in (1, 2, 5):
            expected = reference.select(K, codes, K_PICKS, criterion, deflation, stages, random_state=seed)
            actual, _, _ = _core.greedy_select(
                K, codes, K_PICKS, criterion=criterion, deflation=deflation, stages=stages, random_order=order
            )
            assert len(expected) == K_PICKS, (deflation, stages)
            np.testing.assert_array_equal(actual, expected, err_msg=f"{deflation} S={stages}")


def test_classes_change_the_picks(problems):
    # The class codes reach the engine: merging two of four classes changes the basis.
    K, codes = problems[(4, 130, True, 3)]
    merged = np.minimum(codes, 2)
    assert not np.array_equal(_core.greedy_select(K, codes, K_PICKS)[0], _core.greedy_select(K, merged, K_PICKS)[0])


@pytest.mark.parametrize("contiguous", [False, True])
@pytest.mark.parametrize("deflation", gkfda.DEFLATIONS)
def test_two_class_codes_pick_as_booleans_with_code_one_as_true(deflation, contiguous):
    K, codes = classes_problem(2, 140, contiguous, 6)
    for criterion in gkfda.CRITERIA:
        for stages in (1, 3):
            options = dict(criterion=criterion, deflation=deflation, stages=stages, seed=4)
            by_booleans = _core.greedy_select(K, codes == 1, 20, **options)
            for y in (codes, codes.astype(np.int32)):
                by_codes = _core.greedy_select(K, y, 20, **options)
                np.testing.assert_array_equal(by_codes[0], by_booleans[0])
                assert by_codes[1:] == by_booleans[1:]


@pytest.mark.parametrize(
    ("codes", "pattern"),
    [
        (np.r_[np.zeros(10), np.ones(9), [-1]], r"^y: class codes must be non-negative"),
        (np.r_[np.zeros(10), np.full(10, 2)], r"^y: has no sample of class 1"),
        (np.r_[np.zeros(7), np.ones(7), np.full(6, 3)], r"^y: has no sample of class 2"),
        (np.zeros(20), r"^y: needs samples of both classes"),
        (np.full(20, 3), r"^y: has no sample of class 0"),
        (np.r_[np.zeros(19), [20]], r"^y: class code 20 is not below the number of samples"),
    ],
    ids=["negative", "missing-class-1", "missing-class-2", "one-class", "one-class-3", "too-large"],
)
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_bad_class_codes_raise_value_error_naming_y(codes, pattern, dtype):
    K, _ = classes_problem(3, 20, False, 7)
    with pytest.raises(ValueError, match=pattern):
        _core.greedy_select(K, codes.astype(dtype), 3)


def test_other_label_dtypes_raise_type_error_naming_y():
    K, codes = classes_problem(3, 20, False, 7)
    for y in (codes.astype(np.float64), codes.astype(np.uint8), codes.reshape(4, 5)):
        with pytest.raises(TypeError, match=r"^y: must be a 1-D NumPy array of booleans or of integer"):
            _core.greedy_select(K, y, 3)


def test_reference_reads_signs_booleans_and_codes_alike():
    K, codes = classes_problem(2, 60, False, 8)
    by_codes = reference.select(K, codes, 10)
    np.testing.assert_array_equal(reference.select(K, codes == 1, 10), by_codes)
    np.testing.assert_array_equal(reference.select(K, np.where(codes == 1, 1, -1), 10), by_codes)
    with pytest.raises(ValueError, match="^y:"):
        reference.select(K, np.r_[np.zeros(30), np.full(30, 2)].astype(int), 10)
