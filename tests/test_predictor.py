"""``gkfda.Predictor``: the Rust reader and model served to Python, predicting what the
estimator ``gkfda.load`` rebuilds predicts, without importing scikit-learn, SciPy or pandas."""

import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import gkfda

MODELS = Path(__file__).resolve().parent / "data" / "models"
EXPECTED = json.loads((MODELS / "expected.json").read_text())
FIXTURES = [entry["file"] for entry in EXPECTED["models"]]


def _tolerance(estimator):
    float32 = getattr(estimator, "dtype", "float64") == "float32"
    return 1e-6 if float32 and gkfda.simd_level() != EXPECTED["simd_level"] else 1e-12


def _rows(n_features, n=37, seed=0):
    return np.random.default_rng(seed).normal(size=(n, n_features))


def _check_same(predictor, estimator, X, tolerance=1e-12):
    checked = []
    for method in ("predict_proba", "predict_log_proba", "decision_function", "transform"):
        if hasattr(estimator, method) and (method != "transform" or predictor.task == "transformer"):
            want = getattr(estimator, method)(X)
            got = getattr(predictor, method)(X)
            assert got.shape == np.shape(want), method
            np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance, err_msg=method)
            checked.append(method)
    if hasattr(estimator, "predict") and predictor.task != "transformer":
        want = estimator.predict(X)
        got = predictor.predict(X)
        if predictor.task == "classifier":
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
        checked.append("predict")
    return checked


@pytest.mark.parametrize("name", FIXTURES)
def test_a_committed_fixture_predicts_as_the_loaded_estimator(name):
    path = MODELS / name
    estimator = gkfda.load(path)
    predictor = gkfda.Predictor.load(path)
    n = predictor.n_features_in_
    X = _rows(n)
    if "precomputed" in name:
        X = np.abs(X)
    assert _check_same(predictor, estimator, X, _tolerance(estimator))
    if predictor.task == "classifier":
        np.testing.assert_array_equal(predictor.classes_, estimator.classes_)
        assert predictor.classes_.dtype.kind == estimator.classes_.dtype.kind
    assert predictor.n_features_in_ == estimator.n_features_in_


def _fit(kind, dtype="float64", labels=None, seed=0):
    from sklearn.datasets import make_classification

    n_classes = 2 if kind == "binary" else 3
    X, y = make_classification(n_samples=300, n_features=6, n_informative=4, n_classes=n_classes,
                               n_clusters_per_class=1, random_state=seed)
    if labels is not None:
        y = np.asarray(labels)[y]
    params = {"binary": {}, "shared": {"multiclass": "shared"}, "ovr": {"multiclass": "ovr"}}[kind]
    return X, y, params


@pytest.mark.filterwarnings("ignore:.*the selection stopped")
@pytest.mark.parametrize("kind", ["binary", "shared", "ovr"])
@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("lean", [True, False])
def test_a_fresh_model_predicts_as_the_loaded_estimator(tmp_path, kind, kernel, dtype, lean):
    X, y, params = _fit(kind)
    model = gkfda.GreedyKFDA(k=12, kernel=kernel, dtype=dtype, gamma=0.2, **params).fit(X, y)
    path = tmp_path / "model.gkfda"
    gkfda.save(model, path, lean=lean)
    estimator = gkfda.load(path)
    predictor = gkfda.Predictor.load(path)
    X_test = _rows(6, n=50, seed=1)
    # float32 models: the same SIMD level on both sides, so agreement to 1e-12 too.
    assert _check_same(predictor, estimator, X_test)
    assert _check_same(predictor, estimator, X_test.astype(np.float32))
    # One row at a time takes the core's direct path: equal to rounding.
    for row in X_test[:5]:
        np.testing.assert_allclose(predictor.predict_proba(row), estimator.predict_proba(row[None]),
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("labels", [["no", "yes", "maybe"], [2.0, -1.0, 7.0], [10, 20, 30]])
def test_labels_keep_their_kind(tmp_path, labels):
    X, y, params = _fit("shared", labels=labels)
    model = gkfda.GreedyKFDA(k=10, **params).fit(X, y)
    gkfda.save(model, tmp_path / "m.gkfda", lean=True)
    predictor = gkfda.Predictor.load(tmp_path / "m.gkfda")
    np.testing.assert_array_equal(predictor.classes_, model.classes_)
    assert predictor.classes_.dtype.kind == model.classes_.dtype.kind
    np.testing.assert_array_equal(predictor.predict(X), model.predict(X))


def test_bool_labels(tmp_path):
    X, y, params = _fit("binary")
    model = gkfda.GreedyKFDA(k=10).fit(X, y.astype(bool))
    gkfda.save(model, tmp_path / "m.gkfda")
    predictor = gkfda.Predictor.load(tmp_path / "m.gkfda")
    assert predictor.classes_.dtype == np.bool_
    np.testing.assert_array_equal(predictor.predict(X), model.predict(X))


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    X, y, _ = _fit("binary")
    model = gkfda.GreedyKFDA(k=15, gamma=0.2).fit(X, y)
    path = tmp_path_factory.mktemp("predictor") / "binary.gkfda"
    gkfda.save(model, path, lean=True)
    return model, path


def test_from_bytes_equals_load(binary):
    model, path = binary
    a, b = gkfda.Predictor.load(path), gkfda.Predictor.from_bytes(path.read_bytes())
    X = _rows(6)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    with pytest.raises(TypeError, match="data"):
        gkfda.Predictor.from_bytes("not bytes")


def test_input_layouts_and_types_give_the_same_result(binary):
    model, path = binary
    predictor = gkfda.Predictor.load(path)
    X = _rows(6, n=40)
    want = model.predict_proba(X)
    for variant in (np.asfortranarray(X), X[::-1][::-1], np.repeat(X, 2, axis=1)[:, ::2], X.tolist()):
        np.testing.assert_allclose(predictor.predict_proba(variant), want, rtol=1e-12, atol=1e-12)
    ints = np.arange(12).reshape(2, 6) % 3
    np.testing.assert_allclose(predictor.predict_proba(ints), model.predict_proba(ints), rtol=1e-12, atol=1e-12)
    row = predictor.predict_proba(X[0])
    assert row.shape == (1, 2)
    assert predictor.predict(X[0]).shape == (1,)
    assert predictor.decision_function(X[0]).shape == (1,)
    assert predictor.predict_proba(np.empty((0, 6))).shape == (0, 2)


def test_bad_input_is_a_value_error_naming_it(binary):
    _, path = binary
    predictor = gkfda.Predictor.load(path)
    with pytest.raises(ValueError, match="X has 5 features, but this model expects 6"):
        predictor.predict_proba(np.zeros((3, 5)))
    with pytest.raises(ValueError, match="X has 4 features"):
        predictor.predict(np.zeros(4))
    X = np.zeros((3, 6))
    X[2, 4] = np.nan
    with pytest.raises(ValueError, match="row 2 has a non-finite value at column 4"):
        predictor.predict_proba(X)
    with pytest.raises(ValueError, match="dimensions"):
        predictor.predict_proba(np.zeros((2, 3, 6)))
    with pytest.raises(ValueError, match="X: not an array of numbers"):
        predictor.predict_proba([["a"] * 6])


def test_a_sparse_X_is_refused_naming_what_takes_it(binary):
    scipy_sparse = pytest.importorskip("scipy.sparse")
    _, path = binary
    predictor = gkfda.Predictor.load(path)
    for X in (scipy_sparse.csr_matrix(np.eye(3, 6)), scipy_sparse.csr_array(np.eye(3, 6)),
              scipy_sparse.coo_matrix(np.eye(3, 6))):
        with pytest.raises(TypeError, match=r"X: a Predictor takes dense rows.*toarray.*gkfda\.load"):
            predictor.predict(X)


def test_a_bad_file_is_refused_naming_it(tmp_path, binary):
    _, path = binary
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    with pytest.raises(ValueError, match="checksum"):
        gkfda.Predictor.from_bytes(bytes(data))
    (tmp_path / "bad.gkfda").write_bytes(bytes(data))
    with pytest.raises(ValueError, match="bad.gkfda"):
        gkfda.Predictor.load(tmp_path / "bad.gkfda")
    with pytest.raises(OSError):
        gkfda.Predictor.load(tmp_path / "missing.gkfda")


def test_methods_of_another_task_are_absent():
    classifier = gkfda.Predictor.load(MODELS / "greedy_binary_rbf.gkfda")
    transformer = gkfda.Predictor.load(MODELS / "kpca.gkfda")
    regressor = gkfda.Predictor.load(MODELS / "kmp.gkfda")
    assert (classifier.task, transformer.task, regressor.task) == ("classifier", "transformer", "regressor")
    assert not hasattr(classifier, "transform")
    assert not hasattr(transformer, "predict_proba") and not hasattr(transformer, "classes_")
    assert hasattr(regressor, "predict") and not hasattr(regressor, "predict_proba")
    with pytest.raises(AttributeError, match="transform: this model is a classifier"):
        classifier.transform(np.zeros((1, classifier.n_features_in_)))


def test_feature_names_are_read_when_the_file_has_them(tmp_path):
    pd = pytest.importorskip("pandas")
    X, y, _ = _fit("binary")
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(6)])
    model = gkfda.GreedyKFDA(k=8).fit(frame, y)
    gkfda.save(model, tmp_path / "named.gkfda", lean=True)
    predictor = gkfda.Predictor.load(tmp_path / "named.gkfda")
    np.testing.assert_array_equal(predictor.feature_names_in_, model.feature_names_in_)
    unnamed = gkfda.Predictor.load(MODELS / "greedy_binary_rbf.gkfda")
    assert not hasattr(unnamed, "feature_names_in_")


def test_results_do_not_depend_on_the_thread_count(binary):
    _, path = binary
    predictor = gkfda.Predictor.load(path)
    X = _rows(6, n=20_000, seed=3)
    predictor.n_threads = 1
    one = predictor.predict_proba(X)
    predictor.n_threads = 4
    assert predictor.n_threads == 4
    np.testing.assert_array_equal(predictor.predict_proba(X), one)
    with pytest.raises(ValueError, match="n_threads"):
        predictor.n_threads = 0
    assert "GreedyKFDA" in repr(predictor)


def test_threads_share_one_predictor(binary):
    model, path = binary
    predictor = gkfda.Predictor.load(path)
    X = _rows(6, n=500, seed=4)
    want = model.predict_proba(X)
    results = []

    def work():
        results.append(all(np.allclose(predictor.predict_proba(X), want, rtol=1e-12, atol=1e-12)
                           for _ in range(20)))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [True] * 4


def test_serving_imports_neither_scikit_learn_nor_scipy_nor_pandas():
    code = (
        "import sys, numpy as np, gkfda\n"
        f"p = gkfda.Predictor.load({str(MODELS / 'greedy_binary_rbf_lean.gkfda')!r})\n"
        "row = np.zeros(p.n_features_in_)\n"
        "assert p.predict_proba(row).shape == (1, 2)\n"
        "p.predict(row); p.predict_log_proba(row); p.decision_function(row); p.classes_\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('sklearn', 'scipy', 'pandas'))\n"
        "print(heavy)\n"
        "assert not heavy, heavy\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
