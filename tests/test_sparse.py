"""SciPy sparse ``X``: the core's kernels of CSR rows against the dense path, and every
estimator fitted and predicting on sparse input as on its dense copy (to rounding).

The picks of a sparse fit and of the dense fit of the same data may part where two
candidates' scores tie to rounding (the sparse kernels sum in float64 and do not centre,
so their values agree with the dense path's to rounding, not bit for bit). Where they part,
the two picks' scores on the explicit kernel must tie; ``test_parity_summary`` prints how
many selections were identical."""

import copy
import io
import warnings

import numpy as np
import pytest
from scipy import sparse
from sklearn.datasets import make_classification

import gkfda
from gkfda import GreedyKFDA, GreedyKFDACV, ParsimoniousKFDA, _core
from gkfda import _sparse
from gkfda.pursuit import GreedyNystroem, KernelMatchingPursuit, SparseKernelCCA, SparseKernelPCA
from gkfda.reference import _class_codes, _deflate

KERNELS = ("rbf", "linear", "poly")
DTYPES = (np.float64, np.float32)
# Relative tolerances of kernel values (sums of products in another order) and of a tie.
VALUE_RTOL = {np.float64: 1e-12, np.float32: 1e-5}
TIE_RTOL = {np.float64: 1e-9, np.float32: 1e-4}
OUTPUT_ATOL = {np.float64: 1e-8, np.float32: 1e-3}

# Identical selections of sparse and dense fits, and all compared, over the module.
PARITY = {"identical": 0, "compared": 0, "tied": 0}


def sparse_data(m=150, d=20, classes=2, seed=0):
    """A classification problem with about 70% of its entries 0, and no column all zero."""
    X, y = make_classification(m, d, n_informative=6, n_classes=classes, n_clusters_per_class=1,
                               random_state=seed)
    rng = np.random.default_rng(seed)
    X[rng.random(X.shape) < 0.7] = 0.0
    X[0] = np.where(X[0] == 0.0, 0.5, X[0])  # every column has a non-zero
    return X, y


def as_csr(X, dtype=np.float64, index=np.int32, kind=sparse.csr_matrix):
    S = kind(np.asarray(X, dtype=dtype))
    S.indices = S.indices.astype(index)
    S.indptr = S.indptr.astype(index)
    return S


PARAMS = {"rbf": dict(gamma=0.05), "linear": {}, "poly": dict(gamma=0.05, degree=2, coef0=1.0)}


def core_params(kernel, degree=None):
    params = dict(kernel=kernel, gamma=0.05, degree=3, coef0=1.0)
    if degree is not None:
        params["degree"] = degree
    return params


# -- the core ------------------------------------------------------------------------------


@pytest.mark.parametrize("kernel,degree", [("rbf", None), ("linear", None), ("poly", 2), ("poly", 3)])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index", (np.int32, np.int64))
@pytest.mark.parametrize("kind", (sparse.csr_matrix, sparse.csr_array))
def test_core_kernels_of_csr_rows_agree_with_the_dense_ones(kernel, degree, dtype, index, kind):
    X, _ = sparse_data(m=60)
    Z = X[::7] * 0.5
    dense, dense_z = np.ascontiguousarray(X, dtype=dtype), np.ascontiguousarray(Z, dtype=dtype)
    S, S_z = as_csr(X, dtype, index, kind), as_csr(Z, dtype, index, kind)
    params = core_params(kernel, degree)
    rtol = VALUE_RTOL[dtype]
    gram = _core.kernel_matrix(S, **params)
    assert gram.dtype == dtype and np.array_equal(gram, gram.T)
    expected = _core.kernel_matrix(dense, **params)
    atol = rtol * np.abs(expected).max()
    np.testing.assert_allclose(gram, expected, rtol=rtol, atol=atol)
    mixed = kind((S.data, S.indices.astype(np.int64), S.indptr.astype(np.int32)), shape=S.shape)
    np.testing.assert_array_equal(_core.kernel_matrix(mixed, **params), gram)
    for x, z in ((S, S_z), (S, dense_z), (dense, S_z)):
        np.testing.assert_allclose(_core.kernel_matrix(x, z, **params), _core.kernel_matrix(dense, dense_z, **params),
                                   rtol=rtol, atol=atol)
    weights = np.random.default_rng(1).standard_normal((len(Z), 2))
    bias = np.array([0.5, -0.25])
    values = _core.kernel_expansion(S, dense_z, weights, bias, **params)
    expected = _core.kernel_expansion(dense, dense_z, weights, bias, **params)
    np.testing.assert_allclose(values, expected, rtol=1e-4 if dtype == np.float32 else 1e-10,
                               atol=(1e-4 if dtype == np.float32 else 1e-10) * np.abs(expected).max())


@pytest.mark.parametrize("dtype", DTYPES)
def test_core_sparse_kernels_do_not_depend_on_threads_or_batches(dtype):
    X, _ = sparse_data(m=200)
    S, Z = as_csr(X, dtype), np.ascontiguousarray(X[::9], dtype=dtype)
    params = core_params("rbf")
    one = _core.kernel_matrix(S, Z, n_threads=1, **params)
    np.testing.assert_array_equal(one, _core.kernel_matrix(S, Z, n_threads=2, **params))
    rows = np.vstack([_core.kernel_matrix(S[i:i + 1], Z, n_threads=1, **params) for i in range(S.shape[0])])
    np.testing.assert_array_equal(one, rows)
    np.testing.assert_array_equal(_core.kernel_matrix(S, n_threads=1, **params),
                                  _core.kernel_matrix(S, n_threads=2, **params))
    weights, bias = np.ones((Z.shape[0], 1)), np.zeros(1)
    batch = _core.kernel_expansion(S, Z, weights, bias, n_threads=2, **params)
    single = np.vstack([_core.kernel_expansion(S[i:i + 1], Z, weights, bias, n_threads=1, **params)
                        for i in range(S.shape[0])])
    np.testing.assert_array_equal(batch, single)


def non_canonical(X):
    """``X`` as a CSR whose rows hold their columns in decreasing order and whose first
    entry is split into two duplicates (their sum is ``X``'s value)."""
    S = sparse.csr_matrix(X)
    rows, cols, data = [], [], []
    for i in range(S.shape[0]):
        start, stop = S.indptr[i], S.indptr[i + 1]
        cols.extend(S.indices[start:stop][::-1])
        data.extend(S.data[start:stop][::-1])
        rows.append(stop - start)
    cols, data = np.array(cols + [cols[0]]), np.array(data + [0.0])
    half = data[0] / 2  # row 0's first stored entry, split over it and a duplicate at the end of row 0
    data[0], data[-1] = half, half
    counts = np.array(rows)
    counts[0] += 1
    # The duplicate goes at the end of row 0: move it there.
    cols = np.concatenate([cols[:rows[0]], cols[-1:], cols[rows[0]:-1]])
    data = np.concatenate([data[:rows[0]], data[-1:], data[rows[0]:-1]])
    raw = sparse.csr_matrix((data, cols, np.concatenate([[0], np.cumsum(counts)])), shape=X.shape)
    assert not raw.has_canonical_format
    np.testing.assert_allclose(raw.toarray(), X)
    return raw


@pytest.mark.parametrize("kernel,degree", [("rbf", None), ("linear", None), ("poly", 2)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_prepared_points_give_the_kernel_against_them(kernel, degree, dtype):
    X, _ = sparse_data(m=200)
    S, dense = as_csr(X, dtype), np.ascontiguousarray(X, dtype=dtype)
    params = core_params(kernel, degree)
    expected = _core.kernel_matrix(dense[:30], dense, **params)
    rtol = VALUE_RTOL[dtype]
    for points in (S, dense):
        prepared = _core.PreparedPoints(points, **params)
        assert prepared.shape == X.shape
        for rows in (S[:30], dense[:30]):
            got = prepared.kernel(rows, n_threads=2)
            assert got.dtype == dtype
            np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol * np.abs(expected).max())
            np.testing.assert_array_equal(prepared.kernel(rows[:1]), got[:1])  # batch-invariant
    other = np.float32 if dtype == np.float64 else np.float64
    with pytest.raises(TypeError, match=r"^X: must be 2-D float\d\d rows like the points"):
        prepared.kernel(dense[:3].astype(other))
    with pytest.raises(ValueError, match=r"^X: has 19 features but the other set has 20"):
        prepared.kernel(dense[:3, :19])


@pytest.mark.parametrize("dtype", DTYPES)
def test_prepared_points_give_the_expansion_of_kernel_expansion(dtype):
    X, y = sparse_data()
    points = np.ascontiguousarray(X[:12], dtype=dtype)
    weights, bias = np.random.default_rng(0).normal(size=(12, 3)), np.array([0.5, -1.0, 2.0])
    params = core_params("rbf")
    prepared = _core.PreparedPoints(points, **params)
    for rows in (as_csr(X, dtype=dtype), np.ascontiguousarray(X, dtype=dtype)):
        for link in ("identity", "softmax", "ovr"):
            expected = _core.kernel_expansion(rows, points, weights, bias, link=link, **params)
            values = prepared.expansion(rows, weights, bias, link=link, n_threads=2)
            if sparse.issparse(rows):  # the same arithmetic, bit for bit
                np.testing.assert_array_equal(values, expected)
            else:
                np.testing.assert_allclose(values, expected, rtol=VALUE_RTOL[dtype], atol=VALUE_RTOL[dtype])
    with pytest.raises(ValueError, match=r"weights: shape \(5, 3\) does not match 12 bases"):
        prepared.expansion(as_csr(X, dtype=dtype), weights[:5], bias)
    with pytest.raises(TypeError, match="X: must be 2-D"):
        prepared.expansion(as_csr(X, dtype=np.float32 if dtype == np.float64 else np.float64), weights, bias)


def test_a_model_indexes_its_bases_once_for_sparse_predictions(monkeypatch):
    from gkfda import _kernels

    X, y = sparse_data()
    S = as_csr(X)
    model = GreedyKFDA(k=8, gamma=0.05).fit(X, y)
    made = []
    real = _core.PreparedPoints
    monkeypatch.setattr(_core, "PreparedPoints", lambda *args, **kwargs: made.append(1) or real(*args, **kwargs))
    first = model.decision_function(S)
    for row in range(5):
        np.testing.assert_array_equal(model.decision_function(S[row]), first[row:row + 1])
    np.testing.assert_allclose(model.predict_proba(S), model.predict_proba(X), atol=1e-10)
    assert len(made) == 1
    pca = SparseKernelPCA(n_components=5, gamma=0.05).fit(X)
    rows = np.vstack([pca.transform(S[row]) for row in range(5)])
    np.testing.assert_allclose(rows, pca.transform(X[:5]), atol=1e-10)
    assert len(made) == 2
    other = copy.deepcopy(model)  # new arrays: indexed once more, and forgotten with them
    other.decision_function(S)
    assert len(made) == 3
    key = id(other._union_points)
    assert key in _kernels._PREPARED
    del other
    import gc
    gc.collect()
    assert key not in _kernels._PREPARED


def test_the_core_refuses_a_csr_that_is_not_canonical():
    X, _ = sparse_data(m=30)
    with pytest.raises(ValueError, match=r"^X: row 0.s column indices are not strictly increasing"):
        _core.kernel_matrix(non_canonical(X), kernel="rbf", gamma=0.1)


def test_a_non_canonical_X_fits_as_its_canonical_copy_and_is_not_changed():
    X, y = sparse_data()
    raw = non_canonical(X)
    data, indices = raw.data.copy(), raw.indices.copy()
    model = GreedyKFDA(k=8, gamma=0.05).fit(raw, y)
    reference = GreedyKFDA(k=8, gamma=0.05).fit(sparse.csr_matrix(X), y)
    assert model.support_.tolist() == reference.support_.tolist()
    np.testing.assert_allclose(model.decision_function(raw), reference.decision_function(X), atol=1e-10)
    np.testing.assert_array_equal(raw.data, data)
    np.testing.assert_array_equal(raw.indices, indices)


def test_helpers_of_the_sparse_module():
    X, _ = sparse_data(m=40)
    S = sparse.csr_matrix(X)
    S_mixed = sparse.csr_matrix((S.data, S.indices.astype(np.int64), S.indptr.astype(np.int32)), shape=S.shape)
    assert _sparse.canonical_csr(S_mixed) is S_mixed  # mixed index dtypes: the core reads them as they are
    assert _sparse.canonical_csr(S) is S
    single = _sparse.as_dtype(S, np.float32)
    assert single.dtype == np.float32
    assert np.shares_memory(single.indices, S.indices) and np.shares_memory(single.indptr, S.indptr)
    assert _sparse.as_dtype(S, np.float64) is S
    np.testing.assert_allclose(_sparse.row_squared_norms(S), np.einsum("ij,ij->i", X, X), rtol=1e-14)
    empty = sparse.csr_matrix((3, 4))
    np.testing.assert_array_equal(_sparse.row_squared_norms(empty), np.zeros(3))
    assert _sparse.variance(S) == pytest.approx(X.var(), rel=1e-12)
    assert _sparse.variance(sparse.csr_matrix(np.full((5, 3), 2.0))) == 0.0
    rows = _sparse.dense_rows(S, [3, 1])
    assert isinstance(rows, np.ndarray) and rows.flags.c_contiguous
    np.testing.assert_array_equal(rows, X[[3, 1]])
    assert [_sparse.accepts_sparse(k) for k in ("rbf", "sigmoid", "precomputed", "chi2", "additive_chi2")] == [
        True, True, False, False, False]
    assert _sparse.accepts_sparse(lambda a, b: a @ b.T)


@pytest.mark.parametrize("fmt", ("csr", "csc", "coo", "lil", "dok", "bsr", "dia"))
def test_every_scipy_format_is_taken(fmt):
    X, y = sparse_data(m=80)
    S = sparse.csr_matrix(X).asformat(fmt)
    if fmt == "csr":  # int64 indices and an int32 indptr
        S = sparse.csr_matrix((S.data, S.indices.astype(np.int64), S.indptr), shape=S.shape)
    model = GreedyKFDA(k=5, gamma=0.05).fit(S, y)
    dense = GreedyKFDA(k=5, gamma=0.05).fit(X, y)
    assert model.support_.tolist() == dense.support_.tolist()
    np.testing.assert_allclose(model.predict_proba(S), dense.predict_proba(X), atol=1e-8)


# -- GreedyKFDA, sparse against dense -----------------------------------------------------


def explicit_scores(K, codes, prefix):
    """The ``optimal`` criterion's score of every candidate after the projection deflation by
    the picks ``prefix`` (``reference.select``'s formulas), NaN where not admissible."""
    Kt = np.array(K, dtype=np.float64)
    for i in prefix:
        column = Kt[:, i]
        Kt = _deflate(Kt, column / np.linalg.norm(column), "projection")
    codes = _class_codes(codes)
    sizes = np.bincount(codes).astype(np.float64)
    n = len(sizes)
    w = (n / np.sum(1.0 / sizes)) / sizes
    members = (codes[None, :] == np.arange(n)[:, None]).astype(np.float64)
    sums = members @ Kt
    numerator = sum((sums[c] - sums[o]) ** 2 for c in range(n) for o in range(c + 1, n))
    denominator = w[codes] @ Kt**2 - (w / sizes) @ sums**2
    with np.errstate(divide="ignore", invalid="ignore"):
        return numerator / denominator


def compare_picks(sparse_support, dense_support, K, codes, dtype):
    """Count the selection; where the picks part, the two picks must tie on ``K``."""
    PARITY["compared"] += 1
    a, b = list(sparse_support), list(dense_support)
    if a == b:
        PARITY["identical"] += 1
        return True
    t = next((t for t, (i, j) in enumerate(zip(a, b)) if i != j), min(len(a), len(b)))
    assert t < min(len(a), len(b)), "one selection stopped earlier than the other"
    scores = explicit_scores(K, codes, b[:t])
    scale = max(abs(scores[a[t]]), abs(scores[b[t]]))
    assert abs(scores[a[t]] - scores[b[t]]) <= TIE_RTOL[dtype] * scale, (t, scores[a[t]], scores[b[t]])
    PARITY["tied"] += 1
    return False


def supports(model):
    return [model.support_] if isinstance(model.support_, np.ndarray) else list(model.support_)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("solver", ("dense", "factored"))
@pytest.mark.parametrize("classes,multiclass", [(2, "shared"), (3, "shared"), (3, "ovr")])
def test_greedy_kfda_fits_sparse_X_as_its_dense_copy(kernel, dtype, solver, classes, multiclass):
    X, y = sparse_data(classes=classes)
    m = len(X)
    # factor_rank=m: a pool of every point, so that ΦΦ' is the exact kernel the picks are
    # checked on (the sparse X's factor is a Nyström factor of the linear kernel too).
    options = dict(k=10, kernel=kernel, solver=solver, dtype=dtype, multiclass=multiclass, factor_rank=m,
                   random_state=0, **PARAMS[kernel])
    S = as_csr(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fitted = GreedyKFDA(**options).fit(S, y)
        dense = GreedyKFDA(**options).fit(X, y)
    assert fitted.solver_ == solver
    K = _core.kernel_matrix(np.ascontiguousarray(X), **{**core_params(kernel), **PARAMS[kernel]})
    problems = [y] if multiclass == "shared" else [(y == c).astype(int) for c in range(classes)]
    identical = all([compare_picks(a, b, K, codes, dtype)
                     for a, b, codes in zip(supports(fitted), supports(dense), problems)])
    assert isinstance(fitted.support_vectors_, (np.ndarray, list))
    for vectors in ([fitted.support_vectors_] if multiclass == "shared" else fitted.support_vectors_):
        assert isinstance(vectors, np.ndarray) and vectors.shape[1] == X.shape[1]
    if not identical:
        return
    atol = OUTPUT_ATOL[dtype] * max(1.0, np.abs(dense.decision_function(X)).max())
    expected = dense.decision_function(X)
    # The four pairings: sparse or dense at fit, sparse or dense at prediction.
    for model in (fitted, dense):
        for data in (S, X, as_csr(X, index=np.int64), sparse.csr_array(X)):
            np.testing.assert_allclose(model.decision_function(data), expected, atol=atol)
    agreement = np.mean(fitted.predict(S) == dense.predict(X))
    assert agreement >= 0.98
    np.testing.assert_allclose(fitted.transform(S), dense.transform(X), atol=atol)
    np.testing.assert_allclose(fitted.predict_proba(S).sum(axis=1), 1.0)


def tfidf_corpus(n_docs=240, vocabulary=400, seed=0):
    """TF-IDF rows of pseudo-documents of two topics over a shared Zipf vocabulary."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, vocabulary + 1) ** 1.1
    topics = [rng.permutation(vocabulary)[:40] for _ in range(2)]
    docs, labels = [], []
    for i in range(n_docs):
        label = i % 2
        background = rng.choice(vocabulary, size=rng.integers(20, 40), p=weights / weights.sum())
        topical = rng.choice(topics[label], size=rng.integers(3, 10))
        docs.append(" ".join(f"w{w}" for w in np.concatenate([background, topical])))
        labels.append(label)
    return TfidfVectorizer(sublinear_tf=True).fit_transform(docs), np.array(labels)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("solver", ("dense", "factored"))
def test_tfidf_rows_fit_as_their_dense_copy(kernel, dtype, solver):
    S, y = tfidf_corpus()
    X = S.toarray()
    options = dict(k=15, kernel=kernel, solver=solver, dtype=dtype, factor_rank=S.shape[0], random_state=0,
                   **({"linear": {}, "rbf": dict(gamma=1.0), "poly": dict(gamma=1.0, degree=2, coef0=1.0)}[kernel]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fitted = GreedyKFDA(**options).fit(S, y)
        dense = GreedyKFDA(**options).fit(X, y)
    params = {"linear": {}, "rbf": dict(gamma=1.0), "poly": dict(gamma=1.0, degree=2, coef0=1.0)}[kernel]
    K = _core.kernel_matrix(np.ascontiguousarray(X), kernel=kernel, **params)
    if compare_picks(fitted.support_, dense.support_, K, y, dtype):
        atol = OUTPUT_ATOL[dtype] * max(1.0, np.abs(dense.decision_function(X)).max())
        np.testing.assert_allclose(fitted.decision_function(S), dense.decision_function(X), atol=atol)
        np.testing.assert_allclose(fitted.decision_function(X), dense.decision_function(S), atol=atol)


def test_gamma_scale_of_sparse_X_is_that_of_the_dense_copy():
    X, y = sparse_data()
    fitted = GreedyKFDA(k=5, gamma="scale").fit(sparse.csr_matrix(X), y)
    dense = GreedyKFDA(k=5, gamma="scale").fit(X, y)
    assert fitted._gamma == pytest.approx(dense._gamma, rel=1e-12)


def test_paths_and_truncation_of_a_sparse_fit():
    X, y = sparse_data()
    S = sparse.csr_matrix(X)
    fitted = GreedyKFDA(k=8, gamma=0.05).fit(S, y)
    dense = GreedyKFDA(k=8, gamma=0.05).fit(X, y)
    assert fitted.support_.tolist() == dense.support_.tolist()
    np.testing.assert_allclose(fitted.proba_path(S), dense.proba_path(X), atol=1e-8)
    np.testing.assert_allclose(fitted.decision_path(S), dense.decision_path(X), atol=1e-8)
    np.testing.assert_allclose(fitted.truncate(4).predict_proba(S), dense.truncate(4).predict_proba(X), atol=1e-8)


def wide_sparse_data(m, d, per_row, seed=0):
    """``m`` rows of ``d`` features, about ``per_row`` stored a row, labelled by which half of
    the features holds more of the row's weight."""
    rng = np.random.default_rng(seed)
    rows, columns = np.repeat(np.arange(m), per_row), rng.integers(0, d, size=per_row * m)
    S = sparse.csr_matrix((rng.random(per_row * m), (rows, columns)), shape=(m, d))  # duplicates summed
    y = (np.asarray(S[:, :d // 2].sum(axis=1)).ravel() > np.asarray(S[:, d // 2:].sum(axis=1)).ravel()).astype(int)
    y[:2] = [0, 1]
    return S, y


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("criterion,deflation,stages", [
    ("optimal", "projection", 1), ("pseudo", "schur", 2), ("reverse", "hotelling", 1),
    ("optimal", "ortho-hotelling", 3), ("random", "ortho-schur", 1),
])
def test_the_core_selects_over_csr_rows_as_over_their_linear_kernel(dtype, criterion, deflation, stages):
    """``factor=`` a CSR ``X`` is the factor of ``XX'``: the picks of the explicit kernel."""
    X, y = sparse_data(m=120, d=15)
    S = as_csr(X, dtype=dtype)
    K = _core.kernel_matrix(np.ascontiguousarray(X, dtype=dtype), kernel="linear")
    options = dict(criterion=criterion, deflation=deflation, stages=stages, seed=3)
    over_rows, stopped, _ = _core.greedy_select(None, y.astype(bool), 12, factor=S, **options)
    over_kernel, _, _ = _core.greedy_select(K, y.astype(bool), 12, **options)
    assert not stopped
    compare_picks(over_rows, over_kernel, K, y, dtype)
    one_thread = _core.greedy_select(None, y.astype(bool), 12, factor=S, n_threads=1, **options)[0]
    two_threads = _core.greedy_select(None, y.astype(bool), 12, factor=S, n_threads=2, **options)[0]
    assert one_thread.tolist() == two_threads.tolist()


@pytest.mark.parametrize("method", ("matching", "pca", "fisher"))
def test_the_core_pursues_over_csr_rows_as_over_their_linear_kernel(method):
    X, y = sparse_data(m=120, d=15)
    S = as_csr(X)
    K = _core.kernel_matrix(np.ascontiguousarray(X), kernel="linear")
    options = {"matching": dict(target=X[:, 0] + y), "pca": {}, "fisher": dict(classes=y.astype(np.int64))}[method]
    over_rows, scores_rows, _, _ = _core.pursuit_select(method, None, 8, factor=S, **options)
    over_kernel, scores_kernel, _, _ = _core.pursuit_select(method, K, 8, **options)
    assert over_rows.tolist() == over_kernel.tolist()
    np.testing.assert_allclose(scores_rows, scores_kernel, rtol=1e-9)


def test_the_core_takes_csr_rows_as_a_factor_only():
    X, y = sparse_data(m=40, d=10)
    S = as_csr(X)
    with pytest.raises(TypeError, match=r"^K: must be a 2-D float32 or float64 NumPy array$"):
        _core.greedy_select(S, y.astype(bool), 3)
    with pytest.raises(TypeError, match=r"^K: must be a 2-D float32 or float64 NumPy array$"):
        _core.pursuit_select("pca", S, 3)
    with pytest.raises(TypeError, match="factor: a sparse matrix must be CSR"):
        _core.greedy_select(None, y.astype(bool), 3, factor=S.tocoo())
    with pytest.raises(TypeError, match=r"^second_factor: must be a NumPy array of the kernel's dtype"):
        _core.pursuit_select("correlation", None, 3, factor=np.ascontiguousarray(X), second_factor=S)
    with pytest.raises(TypeError, match="second_factor: .* dense factors, not sparse rows"):
        _core.pursuit_select("correlation", None, 3, factor=S, second_factor=np.ascontiguousarray(X))


@pytest.mark.parametrize("solver", ("dense", "factored"))
def test_a_wide_sparse_linear_fit_uses_X_as_its_factor(solver):
    """Dense, this X would be 300 × 60,000 floats; as its own factor it is never made dense,
    and the factored picks are the dense fit's (the exact linear kernel, no Nyström factor)."""
    S, y = wide_sparse_data(300, 60_000, 20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model = GreedyKFDA(k=12, kernel="linear", solver=solver, random_state=0).fit(S, y)
        reference = GreedyKFDA(k=12, kernel="linear", solver="dense").fit(S, y)
    assert model.solver_ == solver
    K = _core.kernel_matrix(S, kernel="linear")
    compare_picks(model.support_, reference.support_, K, y, np.float64)
    np.testing.assert_allclose(model.decision_function(S), reference.decision_function(S), atol=1e-8)


def test_the_memory_check_of_a_sparse_linear_factored_fit_counts_the_stored_values(monkeypatch):
    # Dense, this X would be 2,000 × 200,000 float64 (3 GiB): the fit needs its CSR and the
    # core's transpose of it, about 100 bytes a stored value, and the selection's terms.
    S, y = wide_sparse_data(2000, 200_000, 20)
    from gkfda import _validation
    monkeypatch.setattr(_validation, "available_memory", lambda: 256 * 2**20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model = GreedyKFDA(k=10, kernel="linear", solver="factored", random_state=0).fit(S, y)
    assert model.solver_ == "factored" and 0 < model.k_ <= 10
    assert model.support_vectors_.shape == (model.k_, 200_000)
    monkeypatch.setattr(_validation, "available_memory", lambda: 2 * 2**20)
    with pytest.raises(MemoryError, match=r"^X: a factored fit of 2000 sparse samples \(\d+ stored values\)"):
        GreedyKFDA(k=10, kernel="linear", solver="factored").fit(S, y)


def test_a_sparse_fit_round_trips_through_the_model_file(tmp_path):
    X, y = sparse_data(classes=3)
    S = sparse.csr_matrix(X)
    model = GreedyKFDA(k=8, gamma=0.05).fit(S, y)
    path = tmp_path / "model.gkfda"
    gkfda.save(model, path)
    loaded = gkfda.load(path)
    np.testing.assert_array_equal(loaded.predict_proba(S), model.predict_proba(S))
    np.testing.assert_allclose(loaded.predict_proba(X), model.predict_proba(S), atol=1e-12)
    assert isinstance(loaded._union_points, np.ndarray) and loaded._union_points.shape == (model.k_, X.shape[1])
    import pickle
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.decision_function(S), model.decision_function(S))


# -- the other estimators -----------------------------------------------------------------


def _outputs(estimator, data, method):
    return np.asarray(getattr(estimator, method)(data), dtype=np.float64)


@pytest.mark.parametrize("make,target,method", [
    (lambda: GreedyKFDACV(gammas=2, max_k=5, cv=3), "labels", "decision_function"),
    (lambda: GreedyNystroem(n_components=10, gamma=0.05), None, "transform"),
    (lambda: GreedyNystroem(n_components=10, gamma=0.05, criterion="optimal"), "labels", "transform"),
    (lambda: GreedyNystroem(n_components=10, gamma=0.05, criterion="random", random_state=0), None, "transform"),
    (lambda: GreedyNystroem(n_components=10, gamma=0.05, solver="factored", factor_rank=150, random_state=0),
     None, "transform"),
    (lambda: KernelMatchingPursuit(k=8, gamma=0.05), "continuous", "predict"),
    (lambda: SparseKernelPCA(n_components=5, gamma=0.05), None, "transform"),
    (lambda: SparseKernelPCA(n_components=5, gamma=0.05, solver="factored", factor_rank=150, random_state=0),
     None, "transform"),
    (lambda: SparseKernelPCA(n_components=5, kernel="linear", solver="factored"), None, "transform"),
    (lambda: GreedyNystroem(n_components=8, kernel="linear", solver="factored", criterion="optimal"),
     "labels", "transform"),
    (lambda: KernelMatchingPursuit(k=8, kernel="linear", solver="factored"), "continuous", "predict"),
    (lambda: SparseKernelCCA(n_components=2, gamma=0.05), "two views", "transform"),
    (lambda: ParsimoniousKFDA(gamma=0.05), "labels", "decision_function"),
    (lambda: ParsimoniousKFDA(kernel="linear"), "labels", "decision_function"),
])
def test_every_estimator_fits_sparse_X_as_its_dense_copy(make, target, method):
    X, y = sparse_data()
    S = sparse.csr_matrix(X)
    args = {"labels": (y,), "continuous": (X[:, 0] + 0.1 * y,), "two views": (np.c_[y, X[:, 1]],), None: ()}[target]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = make().fit(S, *args)
        dense = make().fit(X, *args)
    expected = _outputs(dense, X, method)
    atol = 1e-6 * max(1.0, np.abs(expected).max())
    for data in (S, X):
        np.testing.assert_allclose(_outputs(fitted, data, method), expected, atol=atol)
    for name in ("components_", "support_vectors_"):
        if hasattr(fitted, name):
            assert isinstance(getattr(fitted, name), np.ndarray)


@pytest.mark.parametrize("kernel", ("cosine", "laplacian", "poly-fractional", "callable"))
def test_kernels_of_pairwise_kernels_and_callables_take_sparse_X(kernel):
    X, y = sparse_data()
    options = {
        "cosine": dict(kernel="cosine"),
        "laplacian": dict(kernel="laplacian", gamma=0.05), "poly-fractional": dict(kernel="poly", degree=1.5),
        "callable": dict(kernel=lambda a, b: 1e-2 * _dense(a @ b.T) + 1.0),
    }[kernel]
    X = np.abs(X) if kernel == "poly-fractional" else X  # x·z ≥ 0 for a fractional power
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fitted = GreedyKFDA(k=6, **options).fit(sparse.csr_matrix(X), y)
        dense = GreedyKFDA(k=6, **options).fit(X, y)
    assert fitted.support_.tolist() == dense.support_.tolist()
    for data in (sparse.csr_matrix(X), X):
        np.testing.assert_allclose(fitted.decision_function(data), dense.decision_function(X), atol=1e-8)


def _dense(K):
    return K.toarray() if sparse.issparse(K) else np.asarray(K)


def test_pursuit_bounds_and_errors_of_sparse_X():
    X, y = sparse_data()
    S = sparse.csr_matrix(X)
    pca, pca_dense = SparseKernelPCA(n_components=5, gamma=0.05).fit(S), SparseKernelPCA(n_components=5, gamma=0.05).fit(X)
    assert pca.reconstruction_error(S) == pytest.approx(pca_dense.reconstruction_error(X), rel=1e-9)
    target = X[:, 0] + 0.1 * y
    kmp = KernelMatchingPursuit(k=8, gamma=0.05).fit(S, target)
    kmp_dense = KernelMatchingPursuit(k=8, gamma=0.05).fit(X, target)
    assert kmp.loss_bound(S, target, 0.5) == kmp_dense.loss_bound(X, target, 0.5)
    assert kmp.score(S, target) == pytest.approx(kmp_dense.score(X, target), rel=1e-9)


# -- refusals -------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda: GreedyKFDA(kernel="precomputed"),
    lambda: GreedyKFDA(kernel="chi2"),
    lambda: GreedyKFDA(kernel="additive_chi2"),
    lambda: GreedyNystroem(kernel="precomputed"),
    lambda: ParsimoniousKFDA(kernel="precomputed"),
])
def test_kernels_that_cannot_take_sparse_X_refuse_it_by_name(make):
    X, y = sparse_data(m=30)
    K = X @ X.T
    with pytest.raises(TypeError, match=r"^X: Sparse data was passed for X, but dense data is required"):
        make().fit(sparse.csr_matrix(K if "precomputed" in repr(make()) else np.abs(X)), y)
    assert not make().__sklearn_tags__().input_tags.sparse


def test_sparse_tags():
    for estimator in (GreedyKFDA(), GreedyKFDACV(), ParsimoniousKFDA(), GreedyNystroem(), KernelMatchingPursuit(),
                      SparseKernelPCA(), SparseKernelCCA(), GreedyKFDA(kernel=lambda a, b: a @ b.T)):
        assert estimator.__sklearn_tags__().input_tags.sparse, type(estimator).__name__


def test_a_dask_array_of_sparse_chunks_is_refused_by_name():
    da = pytest.importorskip("dask.array")
    from gkfda._dask import _checked_X

    X, y = sparse_data(m=40)
    chunks = da.from_array(sparse.csr_matrix(X), chunks=(20, X.shape[1]), asarray=False)
    with pytest.raises(ValueError, match="^X: a dask array of sparse chunks is not supported"):
        _checked_X(None, chunks, y)


def test_a_sparse_fit_exports_to_onnx_as_a_dense_fit():
    pytest.importorskip("onnxruntime")
    pytest.importorskip("skl2onnx")
    import onnxruntime as ort
    from gkfda.onnx import to_onnx

    X, y = sparse_data(classes=3)
    model = GreedyKFDA(k=8, gamma=0.05).fit(sparse.csr_matrix(X), y)
    onx = to_onnx(model, X[:1])  # the graph takes dense rows
    runtime = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [output.name for output in runtime.get_outputs()]
    outputs = dict(zip(names, runtime.run(None, {runtime.get_inputs()[0].name: X})))
    np.testing.assert_allclose(outputs["probabilities"], model.predict_proba(sparse.csr_matrix(X)), atol=1e-9)


def test_parity_summary(capsys):
    """The count of sparse fits whose selections were identical to the dense fit's (the rest
    parted at a tie, checked above)."""
    if PARITY["compared"] == 0:
        pytest.skip("run with the parity tests")
    with capsys.disabled():
        print(f"\nsparse vs dense selections: {PARITY['identical']} identical of {PARITY['compared']} "
              f"({PARITY['tied']} parted at a tie)")
    assert PARITY["identical"] + PARITY["tied"] == PARITY["compared"]
    assert PARITY["identical"] >= PARITY["compared"] // 2
