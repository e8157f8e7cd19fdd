"""The factored solver: ``_core`` selections on a factor, the Nyström factor, and
``GreedyKFDA(solver=...)`` (docs/scale.md)."""

import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gkfda import CRITERIA, DEFLATIONS, GreedyKFDA, _core
from gkfda import _training, _validation
from gkfda._factor import POOLS, training_factor


def problem(m=300, d=5, seed=0, classes=2):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    y = (X[:, 0] + 0.5 * np.sin(3 * X[:, 1]) > 0).astype(int)
    if classes == 3:
        y = y + (X[:, 2] > 0.7)
    return X, y


def representatives(phi):
    """The first row equal to each row of ``phi``: the basis each index stands for."""
    _, first, inverse = np.unique(phi, axis=0, return_index=True, return_inverse=True)
    return first[inverse.ravel()]


def test_linear_factor_selects_as_the_dense_linear_kernel():
    X, y = problem(m=400, d=30)
    order = np.argsort(y, kind="stable")
    X, y = np.ascontiguousarray(X[order]), y[order]
    K = np.ascontiguousarray(X @ X.T)
    for criterion in CRITERIA:
        for deflation in DEFLATIONS:
            for stages in (1, 3):
                options = dict(criterion=criterion, deflation=deflation, stages=stages, seed=1)
                dense = _core.greedy_select(K, y == 1, 20, **options)
                factored = _core.greedy_select(None, y == 1, 20, factor=X, **options)
                assert dense[0].tolist() == factored[0].tolist(), (criterion, deflation, stages)
                assert dense[1] == factored[1]


def test_estimator_factored_with_the_linear_kernel_picks_as_dense():
    X, y = problem(m=500, d=30, classes=3)
    for multiclass in ("shared", "ovr"):
        dense = GreedyKFDA(k=15, kernel="linear", solver="dense", multiclass=multiclass).fit(X, y)
        factored = GreedyKFDA(k=15, kernel="linear", solver="factored", multiclass=multiclass).fit(X, y)
        assert (dense.solver_, factored.solver_) == ("dense", "factored")
        for a, b in zip(np.atleast_2d(dense.support_), np.atleast_2d(factored.support_)):
            assert np.array_equal(a, b)
        np.testing.assert_allclose(dense.decision_function(X), factored.decision_function(X), atol=1e-8)


def test_a_pool_of_every_point_makes_the_exact_kernel_and_the_same_picks():
    X, y = problem(m=250)
    order = np.argsort(y, kind="stable")
    X, y = np.ascontiguousarray(X[order]), y[order]
    phi = _core.nystroem_factor(X, np.arange(250), "rbf", gamma=0.3)
    K = _core.kernel_matrix(X, kernel="rbf", gamma=0.3)
    np.testing.assert_allclose(phi @ phi.T, K, atol=1e-7)
    for deflation in DEFLATIONS:
        dense = _core.greedy_select(K, y == 1, 15, deflation=deflation)
        factored = _core.greedy_select(None, y == 1, 15, deflation=deflation, factor=phi)
        assert dense[0].tolist() == factored[0].tolist(), deflation


def test_factored_pursuits_pick_as_dense_on_the_linear_kernel():
    X, y = problem(m=300, d=25)
    K = np.ascontiguousarray(X @ X.T)
    target = (2.0 * y - 1.0)
    for method, options in (("matching", dict(target=target)), ("pca", {}),
                            ("fisher", dict(classes=y.astype(np.int64)))):
        dense = _core.pursuit_select(method, K, 10, **options)
        factored = _core.pursuit_select(method, None, 10, factor=X, **options)
        assert dense[0].tolist() == factored[0].tolist(), method
        np.testing.assert_allclose(dense[1], factored[1], rtol=1e-8)


@settings(max_examples=25, deadline=None)
@given(
    m=st.integers(12, 60),
    p=st.integers(1, 8),
    rank=st.integers(1, 8),
    duplicated=st.integers(0, 5),
    tiny_class=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
    dtype=st.sampled_from([np.float64, np.float32]),
)
def test_random_factors_select_as_their_explicit_kernel(m, p, rank, duplicated, tiny_class, seed, dtype):
    rng = np.random.default_rng(seed)
    rank = min(rank, p)
    phi = rng.standard_normal((m, rank)) @ rng.standard_normal((rank, p))
    for i in range(min(duplicated, m - 1)):
        phi[m - 1 - i] = phi[i]
    y = rng.random(m) < 0.5
    if tiny_class:
        y[:] = False
        y[rng.integers(m)] = True
    y[0], y[1] = True, False  # both classes present
    phi = np.ascontiguousarray(phi.astype(dtype))
    K = np.ascontiguousarray((phi.astype(np.float64) @ phi.astype(np.float64).T).astype(dtype))
    k = min(m, rank)
    dense = _core.greedy_select(K, y, k, deflation="projection")
    factored = _core.greedy_select(None, y, k, deflation="projection", factor=phi)
    # Picks past the first tie (duplicated rows; a rank-one residual ties every column's
    # ratio) may differ; the engines must agree before it and both stay within m.
    reps = representatives(phi)
    common = min(len(dense[0]), len(factored[0]), max(rank - 1, 0))
    if dtype == np.float64:
        assert reps[dense[0][:common]].tolist() == reps[factored[0][:common]].tolist()
    assert len(set(factored[0].tolist())) == len(factored[0])
    assert all(0 <= i < m for i in factored[0])


def test_factor_arguments_are_checked_by_name():
    X, y = problem(m=50)
    with pytest.raises(ValueError, match="^factor: give either"):
        _core.greedy_select(X @ X.T, y == 1, 5, factor=np.ascontiguousarray(X))
    with pytest.raises(ValueError, match="^factor: must be a C-contiguous"):
        _core.greedy_select(None, y == 1, 5, factor=np.asfortranarray(X))
    with pytest.raises(ValueError, match="^factor: contains NaN"):
        _core.greedy_select(None, y == 1, 5, factor=np.full((50, 3), np.nan))
    with pytest.raises(TypeError, match="^factor: must be a 2-D"):
        _core.greedy_select(None, y == 1, 5, factor=np.zeros((50, 3), dtype=np.int64))
    with pytest.raises(ValueError, match="^k: "):
        _core.greedy_select(None, y == 1, 51, factor=np.ascontiguousarray(X))
    with pytest.raises(ValueError, match="^pool: "):
        _core.nystroem_factor(X, np.array([50]), "rbf")
    with pytest.raises(ValueError, match="^pool: "):
        _core.nystroem_factor(X, np.array([-1]), "rbf")


def test_estimator_parameters_are_validated():
    X, y = problem(m=60)
    with pytest.raises(ValueError, match="solver"):
        GreedyKFDA(solver="sparse").fit(X, y)
    with pytest.raises(ValueError, match="factor_rank"):
        GreedyKFDA(factor_rank=0).fit(X, y)
    with pytest.raises(ValueError, match="factor_pool"):
        GreedyKFDA(factor_pool="kmeans").fit(X, y)
    with pytest.raises(ValueError, match="^solver: 'factored' needs a kernel the core computes"):
        GreedyKFDA(solver="factored", kernel="precomputed").fit(X @ X.T, y)
    assert GreedyKFDA(k=5, solver="auto").fit(X, y).solver_ == "dense"


def test_auto_is_factored_when_the_dense_kernel_would_not_fit(monkeypatch):
    X, y = problem(m=200)
    dense_bytes = 200 * 200 * 8 + _validation.fit_working_bytes(200, 5, 1, np.float64)
    monkeypatch.setattr(_validation, "available_memory", lambda: dense_bytes - 1)
    with pytest.raises(MemoryError, match="^X: a fit of 200 samples"):
        GreedyKFDA(k=5, solver="dense").fit(X, y)
    model = GreedyKFDA(k=5, factor_rank=20).fit(X, y)
    assert model.solver_ == "factored"


def test_a_factor_that_cannot_be_held_is_refused_before_it_starts(monkeypatch):
    X, y = problem(m=200)
    monkeypatch.setattr(_validation, "available_memory", lambda: 10_000)
    with pytest.raises(MemoryError, match="^factor_rank: a factored fit of 200 samples with factor_rank=100"):
        GreedyKFDA(k=5, solver="factored", factor_rank=100).fit(X, y)


@pytest.mark.parametrize("pool", POOLS)
def test_factored_fits_predict_and_keep_the_sparsity_path(pool):
    X, y = problem(m=800, d=4)
    model = GreedyKFDA(k=30, gamma=0.5, solver="factored", factor_rank=120, factor_pool=pool,
                       random_state=0).fit(X, y)
    assert model.solver_ == "factored" and model.k_ == 30
    assert model.score(X, y) > 0.85
    # The model is fitted on the exact kernel columns of its bases: as a dense fit on them.
    proba = model.proba_path(X[:50], ks=[10, 30])
    assert proba.shape == (2, 50, 2)
    np.testing.assert_allclose(proba[-1], model.predict_proba(X[:50]))
    truncated = model.truncate(10)
    np.testing.assert_allclose(truncated.predict_proba(X[:50]), proba[0])
    errors = model.error_path(X, y, ks=[10, 30])
    assert errors.shape == (2,)


def test_training_factor_of_rbf_is_exact_on_its_pool():
    X, _ = problem(m=300)
    params = dict(kernel="rbf", gamma=0.4, degree=3, coef0=1.0)
    rng = np.random.default_rng(0)
    phi = training_factor(X, np.float64, 40, "rpcholesky", params, rng, 1)
    assert phi.shape[0] == 300 and phi.shape[1] <= 40
    diagonal = np.einsum("ij,ij->i", phi, phi)
    assert np.all(diagonal <= 1.0 + 1e-8)


def test_a_factored_model_round_trips_through_the_model_file(tmp_path):
    import gkfda

    X, y = problem(m=400)
    model = GreedyKFDA(k=20, solver="factored", factor_rank=50).fit(X, y)
    for lean in (False, True):
        path = tmp_path / f"model-{lean}.gkfda"
        gkfda.save(model, path, lean=lean)
        loaded = gkfda.load(path)
        assert loaded.solver_ == "factored"
        np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))


def regression(m=120, d=6, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    return X, X[:, 0] + np.sin(2 * X[:, 1]) + 0.1 * rng.standard_normal(m)


def pursuit_fits(kernel, **options):
    """``(name, fit(solver), output(model))`` of each pursuit estimator taking ``solver``."""
    from gkfda import GreedyNystroem, KernelMatchingPursuit, SparseKernelPCA

    X, target = regression(d=12)  # rank 12 > k for the linear kernel: no exhausted residual
    labels = (target > 0).astype(int)
    params = dict(kernel=kernel, **options)
    yield ("KernelMatchingPursuit", lambda solver: KernelMatchingPursuit(k=8, solver=solver, **params).fit(X, target),
           lambda model: (model.support_, model.predict(X)))
    yield ("SparseKernelPCA", lambda solver: SparseKernelPCA(n_components=8, solver=solver, **params).fit(X),
           lambda model: (model.support_, model.transform(X)))
    for criterion, y in (("pca", None), ("matching", target), ("optimal", labels), ("random", labels)):
        yield (f"GreedyNystroem-{criterion}",
               lambda solver, c=criterion, y=y: GreedyNystroem(
                   n_components=8, criterion=c, solver=solver, random_state=0, **params).fit(X, y),
               lambda model: (model.component_indices_, model.transform(X)))


@pytest.mark.parametrize("kernel, options", [("linear", {}), ("rbf", dict(gamma=0.05, factor_rank=120))])
def test_factored_pursuit_estimators_pick_and_fit_as_dense(kernel, options):
    # Linear: Φ = X is exact. rbf with a pool of every point: ΦΦ' is the kernel to rounding.
    for name, fit, output in pursuit_fits(kernel, **options):
        dense, factored = fit("dense"), fit("factored")
        assert (dense.solver_, factored.solver_) == ("dense", "factored"), name
        (dense_support, dense_out), (factored_support, factored_out) = output(dense), output(factored)
        assert dense_support.tolist() == factored_support.tolist(), name
        np.testing.assert_allclose(factored_out, dense_out, atol=1e-8, err_msg=name)


def test_pursuit_estimators_validate_the_solver_and_refuse_factored_precomputed():
    from gkfda import GreedyNystroem, KernelMatchingPursuit, SparseKernelPCA

    X, target = regression(m=40)
    K = X @ X.T
    for model, y in ((KernelMatchingPursuit(k=3), target), (SparseKernelPCA(n_components=3), None),
                     (GreedyNystroem(n_components=3), None)):
        assert model.set_params(solver="auto").fit(X, y).solver_ == "dense"
        for name, bad in (("solver", "sparse"), ("factor_rank", 0), ("factor_pool", "kmeans")):
            with pytest.raises(ValueError, match=name):
                model.set_params(**{"solver": "auto", "factor_rank": 10, "factor_pool": "uniform", name: bad}).fit(X, y)
        model.set_params(solver="factored", factor_rank=10, factor_pool="uniform", kernel="precomputed")
        with pytest.raises(ValueError, match="^solver: 'factored' needs a kernel the core computes"):
            model.fit(K, y)
        model.set_params(solver="factored", kernel=lambda a, b: a @ b.T)
        with pytest.raises(ValueError, match="^solver: 'factored'"):
            model.fit(X, y)
        assert model.set_params(solver="auto").fit(X, y).solver_ == "dense"


def test_pursuit_estimators_fit_factored_on_a_low_rank_factor():
    from gkfda import GreedyNystroem, KernelMatchingPursuit, SparseKernelPCA

    X, target = regression(m=400, d=3)
    kmp = KernelMatchingPursuit(k=20, gamma=0.5, solver="factored", factor_rank=60, random_state=0).fit(X, target)
    assert kmp.solver_ == "factored" and kmp.score(X, target) > 0.9
    pca = SparseKernelPCA(n_components=15, gamma=0.5, solver="factored", factor_rank=60, random_state=0).fit(X)
    dense = SparseKernelPCA(n_components=15, gamma=0.5, solver="dense").fit(X)
    assert pca.reconstruction_error(X) < 1.05 * dense.reconstruction_error(X)
    assert np.all(np.diff(pca.explained_variance_) <= 0)
    landmarks = GreedyNystroem(n_components=15, solver="factored", factor_rank=60, random_state=0).fit(X, target > 0)
    assert landmarks.transform(X).shape == (400, 15)


def test_cv_passes_the_solver_to_its_fits():
    from gkfda import GreedyKFDACV

    X, y = problem(m=150)
    search = GreedyKFDACV(gammas=2, max_k=6, cv=3, solver="factored", factor_rank=40).fit(X, y)
    assert search.solver_ == search.best_estimator_.solver_ == "factored"
    assert search.best_estimator_.factor_rank == 40
    assert GreedyKFDACV(gammas=1, max_k=4, cv=3).fit(X, y).solver_ == "dense"


def test_a_factored_sparse_kernel_pca_round_trips_through_the_model_file(tmp_path):
    import gkfda
    from gkfda import SparseKernelPCA

    X, _ = regression(m=200)
    model = SparseKernelPCA(n_components=10, gamma=0.3, solver="factored", factor_rank=50, factor_pool="greedy",
                            random_state=0).fit(X)
    for lean in (False, True):
        path = tmp_path / f"pca-{lean}.gkfda"
        gkfda.save(model, path, lean=lean)
        loaded = gkfda.load(path)
        assert loaded.solver_ == "factored"
        assert loaded.get_params() == model.get_params()
        np.testing.assert_array_equal(loaded.transform(X), model.transform(X))


def test_verbose_draws_progress_bars_on_stderr_and_changes_nothing(capsys):
    X, y = problem(m=3000, d=4)
    options = dict(k=20, gamma=0.5, solver="factored", factor_rank=100, random_state=0)
    quiet = GreedyKFDA(**options).fit(X, y)
    assert capsys.readouterr().err == ""
    loud = GreedyKFDA(**options, verbose=1).fit(X, y)
    err = capsys.readouterr().err
    # The last report of each call is its whole count: 3 blocks of rows, 20 picks.
    assert "factor" in err and "3/3" in err, err
    assert "selection" in err and "20/20" in err, err
    assert np.array_equal(quiet.support_, loud.support_)
    assert np.array_equal(quiet.decision_function(X), loud.decision_function(X))
    # The dense solver's selection and the one-vs-rest selections report too.
    X3, y3 = problem(m=400, classes=3)
    GreedyKFDA(k=10, solver="dense", multiclass="ovr", verbose=True).fit(X3, y3)
    assert "30/30" in capsys.readouterr().err
    with pytest.raises(ValueError, match="verbose"):
        GreedyKFDA(verbose=-1).fit(X3, y3)


def test_verbose_shows_every_phase_of_a_fit_in_order_and_changes_nothing(capsys, phases_shown):
    X, y = problem(m=3000, d=4)
    options = dict(k=20, gamma=0.5, solver="factored", factor_rank=100, random_state=0)
    quiet = GreedyKFDA(**options).fit(X, y)
    assert capsys.readouterr().err == ""
    loud = GreedyKFDA(**options, verbose=True).fit(X, y)
    err = capsys.readouterr().err
    assert phases_shown(err) == ["pool", "factor", "set-up", "selection", "exact columns", "discriminant",
                                 "calibration", "bound statistics"], err
    # Each counted phase ends at its whole count: pivots, rows, prefixes.
    for name, count in [("pool", "100/100"), ("selection", "20/20"), ("exact columns", "3000/3000"),
                        ("calibration", "20/20")]:
        assert re.search(rf"{name}: 100%.*{count} \[", err), (name, err)
    np.testing.assert_array_equal(loud.support_, quiet.support_)
    np.testing.assert_array_equal(loud.coef_, quiet.coef_)
    np.testing.assert_array_equal(loud.intercept_, quiet.intercept_)
    np.testing.assert_array_equal(loud.predict_proba(X), quiet.predict_proba(X))
    # A dense fit has no pool or factor; one-vs-rest, a discriminant and calibration a class.
    X3, y3 = problem(m=400, classes=3)
    GreedyKFDA(k=10, solver="dense", multiclass="ovr", verbose=True).fit(X3, y3)
    err = capsys.readouterr().err
    assert phases_shown(err) == ["set-up", "selection", "exact columns", "discriminant", "calibration"], err
    assert len(re.findall(r"calibration: 100%.*10/10 \[[^\r\n]*\n", err)) == 3, err


@pytest.mark.parametrize("kernel", ["rbf", "poly"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_exact_columns_made_by_blocks_of_rows_are_the_whole_matrix(monkeypatch, kernel, dtype):
    X, y = problem(m=1000, d=4)
    options = dict(k=15, kernel=kernel, dtype=dtype, solver="factored", factor_rank=60, random_state=0)
    whole = GreedyKFDA(**options).fit(X, y)
    monkeypatch.setattr(_training, "_COLUMN_BLOCK_ROWS", 77)  # 13 blocks, the last one short
    blocks = GreedyKFDA(**options).fit(X, y)
    np.testing.assert_array_equal(blocks.support_, whole.support_)
    np.testing.assert_array_equal(blocks.coef_, whole.coef_)
    np.testing.assert_array_equal(blocks.predict_proba(X), whole.predict_proba(X))


def test_the_core_reports_progress_to_a_callback_and_stops_when_it_raises():
    X, y = problem(m=2500, d=4)
    reports = []
    _core.nystroem_factor(X, np.arange(0, 2500, 25), "rbf", gamma=0.5, progress=lambda *c: reports.append(c))
    assert reports[-1] == (3, 3) and all(done <= total for done, total in reports)
    reports.clear()
    indices, _, _ = _core.greedy_select(None, y == 1, 15, factor=np.ascontiguousarray(X),
                                        progress=lambda *c: reports.append(c))
    assert reports[-1] == (len(indices), 15)

    class Refused(Exception):
        pass

    def refuse(done, total):
        raise Refused

    with pytest.raises(Refused):
        _core.greedy_select(None, y == 1, 15, factor=np.ascontiguousarray(X), progress=refuse)
    # A refused call reports no count.
    reports.clear()
    with pytest.raises(ValueError, match="^k: "):
        _core.greedy_select(None, y == 1, 0, factor=np.ascontiguousarray(X), progress=lambda *c: reports.append(c))
    assert reports == []


def test_factored_fits_of_degenerate_training_sets():
    X, y = problem(m=400, d=5)
    # Duplicated training rows: the copies' kernel columns tie; the picks are the same bases
    # up to the kernel's rank, 5: after 4 picks the projection-deflated kernel has rank one,
    # its columns all multiples of one vector with one Fisher ratio, and the 5th pick is an
    # exact tie that rounding breaks (docs/architecture.md, "Guards").
    X_dup, y_dup = np.vstack([X, X[:100]]), np.concatenate([y, y[:100]])
    dense = GreedyKFDA(k=15, kernel="linear", solver="dense").fit(X_dup, y_dup)
    factored = GreedyKFDA(k=15, kernel="linear", solver="factored").fit(X_dup, y_dup)
    reps = representatives(X_dup)
    assert reps[dense.support_][:4].tolist() == reps[factored.support_][:4].tolist()
    assert factored.k_ == dense.k_
    model = GreedyKFDA(k=15, gamma=0.5, solver="factored", factor_rank=150, random_state=0).fit(X_dup, y_dup)
    assert model.k_ == 15 and model.score(X, y) > 0.8
    # A rank-deficient linear X (a duplicated feature): the factor X has rank 5 of 6 columns.
    X_rank = np.hstack([X, X[:, :1]])
    dense = GreedyKFDA(k=6, kernel="linear", solver="dense").fit(X_rank, y)
    factored = GreedyKFDA(k=6, kernel="linear", solver="factored").fit(X_rank, y)
    assert factored.k_ <= 6 and factored.k_ == dense.k_
    assert factored.support_[:4].tolist() == dense.support_[:4].tolist()
    np.testing.assert_allclose(factored.decision_function(X_rank), dense.decision_function(X_rank), atol=1e-6)
    # float32: the factor is made in float32, the fit predicts as well as in float64.
    single = GreedyKFDA(k=20, gamma=0.5, solver="factored", factor_rank=100, dtype="float32",
                        random_state=0).fit(X, y)
    double = GreedyKFDA(k=20, gamma=0.5, solver="factored", factor_rank=100, random_state=0).fit(X, y)
    assert single.solver_ == "factored" and abs(single.score(X, y) - double.score(X, y)) < 0.03
    # factor_rank beyond m: the pool is every point, the factor the exact kernel's.
    small = GreedyKFDA(k=10, gamma=0.5, solver="factored", factor_rank=5000, random_state=0).fit(X[:120], y[:120])
    exact = GreedyKFDA(k=10, gamma=0.5, solver="dense").fit(X[:120], y[:120])
    assert small.support_.tolist() == exact.support_.tolist()
    # A class of one point.
    y_one = np.zeros(400, dtype=int)
    y_one[17] = 1
    model = GreedyKFDA(k=5, gamma=0.5, solver="factored", factor_rank=50, random_state=0).fit(X, y_one)
    assert model.k_ >= 1 and model.predict(X).shape == (400,)


def test_an_explicit_factor_rank_below_k_is_refused():
    X, y = problem(m=300)
    with pytest.raises(ValueError, match=r"^factor_rank: 10 is smaller than k=100; a factor of rank p holds at "
                                         r"most p bases"):
        GreedyKFDA(k=100, solver="factored", factor_rank=10).fit(X, y)
    # One-vs-rest: k is per problem, and each problem's selection reads the one factor.
    X3, y3 = problem(m=300, classes=3)
    with pytest.raises(ValueError, match=r"^factor_rank: 20 is smaller than k=30"):
        GreedyKFDA(k=30, solver="factored", factor_rank=20, multiclass="ovr").fit(X3, y3)
    from gkfda import GreedyKFDACV, GreedyNystroem, KernelMatchingPursuit, SparseKernelPCA

    with pytest.raises(ValueError, match=r"^factor_rank: 10 is smaller than max_k=20"):
        GreedyKFDACV(max_k=20, cv=2, gammas=[0.5], solver="factored", factor_rank=10).fit(X, y)
    with pytest.raises(ValueError, match=r"^factor_rank: 10 is smaller than k=40"):
        KernelMatchingPursuit(k=40, solver="factored", factor_rank=10).fit(X, X[:, 0])
    with pytest.raises(ValueError, match=r"^factor_rank: 10 is smaller than n_components=40"):
        SparseKernelPCA(n_components=40, solver="factored", factor_rank=10).fit(X)
    with pytest.raises(ValueError, match=r"^factor_rank: 10 is smaller than n_components=40"):
        GreedyNystroem(n_components=40, solver="factored", factor_rank=10).fit(X, y)
    # A rank of k or more is taken as given.
    assert GreedyKFDA(k=20, gamma=0.5, solver="factored", factor_rank=20, random_state=0).fit(X, y).k_ == 20


def test_factor_rank_defaults_to_auto_everywhere():
    from gkfda import GreedyKFDACV, GreedyNystroem, KernelMatchingPursuit, SparseKernelPCA

    for cls in (GreedyKFDA, GreedyKFDACV, KernelMatchingPursuit, SparseKernelPCA, GreedyNystroem):
        assert cls().get_params()["factor_rank"] == "auto", cls.__name__


@pytest.mark.parametrize("m, k, largest, rank", [
    (20_000, 200, None, 1000),   # the floor
    (20_000, 800, None, 1600),   # 2k above the floor
    (600, 200, None, 600),       # at most m
    (150, 200, None, 150),       # m below k: every point
    (20_000, 200, 700, 700),     # lowered to what fits in memory
    (20_000, 200, 120, 200),     # but never below k (the memory check then refuses it)
])
def test_auto_factor_rank_resolves_from_k_m_and_memory(m, k, largest, rank):
    assert _training.factor_rank_for("auto", k, m, largest=largest) == rank


def test_an_int_factor_rank_is_taken_as_given():
    assert _training.factor_rank_for(1500, 200, 20_000) == 1500
    assert _training.factor_rank_for(200, 200, 20_000) == 200
    assert _training.factor_rank_for(np.int64(300), 200, 20_000, largest=10) == 300  # no memory cap
    # 1000 is no longer special: below k it is refused as any other rank.
    with pytest.raises(ValueError, match=r"^factor_rank: 1000 is smaller than k=1500;.*factor_rank='auto'"):
        _training.factor_rank_for(1000, 1500, 20_000)


@pytest.mark.parametrize("bad", ["big", "Auto", "", 0, -3, 2.5, True, None])
def test_bad_factor_ranks_are_refused_naming_it(bad):
    from gkfda import GreedyKFDACV, GreedyNystroem, KernelMatchingPursuit, SparseKernelPCA

    X, y = problem(m=60)
    for model, args in ((GreedyKFDA(k=5), (X, y)), (GreedyKFDACV(max_k=5, cv=2, gammas=[0.5]), (X, y)),
                        (KernelMatchingPursuit(k=5), (X, X[:, 0])), (SparseKernelPCA(n_components=5), (X,)),
                        (GreedyNystroem(n_components=5), (X, y))):
        with pytest.raises(ValueError, match="'factor_rank' parameter of " + type(model).__name__):
            model.set_params(solver="factored", factor_rank=bad).fit(*args)


def factor_widths(monkeypatch):
    """The ranks of the factors made from now on (spied on ``_training.training_factor``)."""
    widths = []
    original = _training.training_factor

    def spy(X, dtype, p, *args, **kwargs):
        widths.append(p)
        return original(X, dtype, p, *args, **kwargs)

    monkeypatch.setattr(_training, "training_factor", spy)
    return widths


def test_auto_factor_rank_is_capped_by_the_memory_check(monkeypatch):
    # Memory for a factor of rank 150 and not 151: "auto" (else 1000, here m = 900) takes 150,
    # and the fit equals the one given factor_rank=150.
    X, y = problem(m=900, d=4, seed=3)
    m, k = len(X), 10
    working = _validation.fit_working_bytes(m, k, 1, np.float64)
    room = working + _validation.factor_bytes(m, 150, 8, 1)
    assert _validation.factor_bytes(m, 151, 8, 1) + working > room
    monkeypatch.setattr(_validation, "available_memory", lambda: room)
    widths = factor_widths(monkeypatch)
    params = dict(k=k, gamma=0.5, solver="factored", n_jobs=1, random_state=0)
    auto = GreedyKFDA(**params).fit(X, y)
    given = GreedyKFDA(factor_rank=150, **params).fit(X, y)
    assert widths == [150, 150]
    np.testing.assert_array_equal(auto.support_, given.support_)
    np.testing.assert_array_equal(auto.decision_function(X), given.decision_function(X))
    # Less memory than a factor of rank k needs: refused, naming factor_rank.
    monkeypatch.setattr(_validation, "available_memory", lambda: working + _validation.factor_bytes(m, k - 1, 8, 1))
    with pytest.raises(MemoryError, match=rf"^factor_rank: a factored fit of {m} samples with factor_rank={k} "):
        GreedyKFDA(**params).fit(X, y)


def test_auto_factor_rank_is_never_below_twice_k(monkeypatch):
    # Past 20,000 samples solver="auto" is factored with factor_rank="auto": shown at m = 400
    # (the dense limit lowered to 100) with k = 60, where the rank is min(max(2k, 1000), m)
    # = 400, and with the floor lowered to 40, where it is 2k = 120. The pursuits resolve it
    # the same way.
    from gkfda import _factor, KernelMatchingPursuit

    monkeypatch.setattr(_factor, "AUTO_DENSE_MAX_SAMPLES", 100)
    X, y = problem(m=400)
    widths = factor_widths(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = GreedyKFDA(k=60, gamma=0.5, random_state=0).fit(X, y)
        monkeypatch.setattr(_factor, "AUTO_RANK_MIN", 40)
        floored = GreedyKFDA(k=60, gamma=0.5, random_state=0).fit(X, y)
        given = GreedyKFDA(k=60, gamma=0.5, factor_rank=120, random_state=0).fit(X, y)
        pursuit = KernelMatchingPursuit(k=60, gamma=0.5, random_state=0).fit(X, X[:, 0])
    assert model.solver_ == floored.solver_ == pursuit.solver_ == "factored"
    assert model.k_ == floored.k_ == 60
    assert widths == [400, 120, 120, 120]
    np.testing.assert_array_equal(floored.support_, given.support_)


def test_a_factor_too_small_for_its_selection_says_so():
    # A factor whose rank (after the eigenvalue floor drops the directions a tiny gamma leaves
    # flat) is below k: the selection stops at it, with a warning naming the factor's rank.
    X, y = problem(m=300, d=2)
    with pytest.warns(UserWarning, match=r"^the selection stopped after (\d+) of 30 bases: every other training "
                                         r"point is numerically in the span of those chosen") as caught:
        model = GreedyKFDA(k=30, gamma=1e-4, solver="factored", factor_rank=40, random_state=0).fit(X, y)
    assert model.k_ < 30
    assert str(model.k_) in str(caught[0].message)


@pytest.mark.parametrize("kernel, dtype, scale", [("rbf", "float32", 1e19), ("rbf", "float64", 1e160),
                                                  ("poly", "float32", 1e10), ("poly", "float64", 1e80),
                                                  ("linear", "float32", 1e20)])
def test_a_factored_kernel_that_overflows_is_named_as_the_dense_one(kernel, dtype, scale):
    X, y = problem(m=200, d=3)
    params = dict(k=10, kernel=kernel, dtype=dtype, random_state=0)
    if kernel != "linear":
        params["gamma"] = 1.0
    message = f"X: the kernel matrix overflows {dtype}; scale the features"
    for solver in ("dense", "factored"):
        with pytest.raises(ValueError, match="^" + message.replace(";", ";")):
            GreedyKFDA(solver=solver, factor_rank=50, **params).fit(X * scale, y)
