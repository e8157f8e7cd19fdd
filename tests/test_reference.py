"""The NumPy reference covers every criterion and deflation the core lists, and refuses a name
it has no implementation for instead of passing it as another."""

import numpy as np
import pytest

from gkfda import _core, reference


def tiny_problem(m=14, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    y = np.arange(m) % 2
    return reference.rbf_kernel(X, X, 0.5), y


@pytest.mark.parametrize("deflation", _core.DEFLATIONS)
def test_every_deflation_the_core_lists_has_an_explicit_deflation(deflation):
    K, _ = tiny_problem()
    x = K[:, 0] / np.linalg.norm(K[:, 0])
    deflated = reference._deflate(K, x, deflation)
    if deflation == "none":
        assert deflated is K
    else:
        # Every rank-one deflation removes the direction's quadratic form.
        assert x @ K @ x > 0.1
        assert abs(x @ deflated @ x) < 1e-10
        assert deflated.shape == K.shape and not np.allclose(deflated, K)


@pytest.mark.parametrize("deflation", _core.DEFLATIONS)
@pytest.mark.parametrize("criterion", _core.CRITERIA)
def test_every_criterion_and_deflation_the_core_lists_selects_in_the_reference(criterion, deflation):
    K, y = tiny_problem()
    indices = reference.select(K, y, 4, criterion, deflation, random_state=0)
    assert indices.dtype == np.int64 and len(indices) == 4 and len(set(indices.tolist())) == 4
    assert indices.min() >= 0 and indices.max() < len(y)


def test_the_reference_refuses_a_deflation_it_has_no_form_for(monkeypatch):
    K, y = tiny_problem()
    x = K[:, 0] / np.linalg.norm(K[:, 0])
    with pytest.raises(ValueError, match="'householder'"):
        reference._deflate(K, x, "householder")
    monkeypatch.setattr(reference, "DEFLATIONS", (*_core.DEFLATIONS, "householder"))
    with pytest.raises(ValueError, match="'householder'"):
        reference.select(K, y, 3, "optimal", "householder")


def test_the_reference_refuses_a_criterion_it_has_no_score_for(monkeypatch):
    K, y = tiny_problem()
    monkeypatch.setattr(reference, "CRITERIA", (*_core.CRITERIA, "entropy"))
    with pytest.raises(ValueError, match="'entropy'"):
        reference.select(K, y, 3, "entropy", "projection")
