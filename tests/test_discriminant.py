"""The discriminant's ridge regression from per-class moments reduced over row blocks, and
the calibration's sample of rows (python/gkfda/_discriminant.py)."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from gkfda import GreedyKFDA, _discriminant, reference
from gkfda._discriminant import ClassMoments, calibration_sample, combined, fit_discriminant


def _problem(seed, n_classes, m=300, gamma=0.5, offset=0.0, k=15):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3)) + offset
    y = np.digitize(X[:, 0] - offset + 0.3 * rng.normal(size=m), np.linspace(-1, 1, n_classes - 1))
    K = reference.rbf_kernel(X, X, gamma=gamma)
    return K, y, rng.choice(m, size=k, replace=False)


def test_merged_moments_are_the_moments_of_all_the_rows():
    rng = np.random.default_rng(0)
    features = rng.normal(size=(500, 6)) * 1e3 + 1e6  # far from zero: nothing may cancel
    codes = rng.integers(0, 3, 500)
    codes[:120] = 0  # a block holding one class only
    whole = ClassMoments.of(features, codes, 3)
    bounds = [0, 120, 121, 300, 500]
    parts = combined(ClassMoments.of(features[a:b], codes[a:b], 3) for a, b in zip(bounds[:-1], bounds[1:]))
    assert_array_equal(parts.counts, whole.counts)
    assert_allclose(parts.means, whole.means, rtol=1e-14)
    assert_allclose(parts.scatters, whole.scatters, rtol=1e-10)


@pytest.mark.parametrize("n_classes", [2, 3, 5])
@pytest.mark.parametrize("gamma, offset", [(0.5, 0.0), (1e-4, 10.0)])
def test_the_discriminant_does_not_depend_on_the_row_blocks(monkeypatch, n_classes, gamma, offset):
    # gamma = 1e-4 on points far from the origin: nearly collinear bases, features far from
    # their spread; one block against blocks of 7 rows.
    K, y, indices = _problem(n_classes, n_classes, gamma=gamma, offset=offset)
    args = (K[:, indices], K[np.ix_(indices, indices)], y, n_classes, None, indices, 1e-6, 1.0)
    whole = fit_discriminant(*args)
    monkeypatch.setattr(_discriminant, "_FEATURE_BLOCK", 7 * len(indices))
    blocks = fit_discriminant(*args)
    features = K[:, indices] @ whole.projection.T
    for model in (whole, blocks):
        coef, intercept = model.linear()
        model.logits = features @ coef + intercept
    scale = np.max(np.abs(whole.logits))
    assert_allclose(blocks.logits, whole.logits, rtol=0, atol=1e-10 * scale)
    assert_allclose(blocks.cholesky, whole.cholesky, rtol=0, atol=1e-10 * np.max(np.abs(whole.cholesky)))


def test_the_calibration_sample_is_every_row_up_to_its_size(monkeypatch):
    monkeypatch.setattr(_discriminant, "CALIBRATION_ROWS", 600)
    codes = np.repeat([0, 1], [400, 200])
    assert_array_equal(calibration_sample(codes, 2), np.arange(600))


def test_the_calibration_sample_spreads_each_class_share_evenly(monkeypatch):
    monkeypatch.setattr(_discriminant, "CALIBRATION_ROWS", 150)
    codes = np.repeat([0, 1], [400, 200])
    # 100 and 50 rows: the middle row of each run of 4.
    assert_array_equal(calibration_sample(codes, 2), np.r_[np.arange(2, 400, 4), 400 + np.arange(2, 200, 4)])
    # Classes interleaved (a precomputed kernel's order, one-vs-rest codes): the same rule
    # over each class's rows in their order; a rare class keeps one row.
    codes = np.zeros(1000, dtype=np.int64)
    codes[1::2] = 1
    codes[500] = 2
    sample = calibration_sample(codes, 3)
    assert np.bincount(codes[sample]).tolist() == [75, 75, 1]
    assert_array_equal(sample[codes[sample] == 1], np.flatnonzero(codes == 1)[(2 * np.arange(75) + 1) * 500 // 150])


def test_a_fit_past_the_calibration_sample_calibrates_on_its_rows(monkeypatch):
    """The ridge regression reads every row, the calibration the sample's; below the
    sample's size, every row (the literal leave-one-out reference agrees there)."""
    from sklearn.datasets import make_classification

    X, y = make_classification(600, 5, n_informative=3, n_classes=3, n_clusters_per_class=1, random_state=2)
    full = GreedyKFDA(k=12, gamma=0.3).fit(X, y)
    seen = []
    calibrate = _discriminant._core.calibrate

    def recording(left_out, own, codes, *args, **kwargs):
        seen.append(np.asarray(codes).copy())
        return calibrate(left_out, own, codes, *args, **kwargs)

    monkeypatch.setattr(_discriminant._core, "calibrate", recording)
    monkeypatch.setattr(_discriminant, "CALIBRATION_ROWS", 90)
    sampled = GreedyKFDA(k=12, gamma=0.3).fit(X, y)
    codes = np.sort(y)
    assert seen and all(np.array_equal(codes_read, codes[calibration_sample(codes, 3)]) for codes_read in seen)
    assert len(seen[0]) == 90
    # The same regression (every row), a calibration of the sample: close, not equal.
    assert_allclose(sampled._models[0].cholesky, full._models[0].cholesky, rtol=1e-12)
    assert_allclose(sampled._models[0].target_products, full._models[0].target_products, rtol=1e-10)
    assert not np.array_equal(sampled._models[0].score_weights, full._models[0].score_weights)
    agreement = np.mean(sampled.predict(X) == full.predict(X))
    assert agreement > 0.95
