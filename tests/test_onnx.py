"""ONNX export: the graphs' outputs under ONNX Runtime against the estimators' own."""

import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
skl2onnx = pytest.importorskip("skl2onnx")

import gkfda  # noqa: E402
from gkfda import (  # noqa: E402
    GreedyKFDA,
    GreedyKFDACV,
    GreedyNystroem,
    KernelMatchingPursuit,
    ParsimoniousKFDA,
    SparseKernelPCA,
)
from gkfda.onnx import to_onnx  # noqa: E402

DTYPES = (np.float32, np.float64)
TOLERANCE = {np.float32: 1e-5, np.float64: 1e-9}
KERNEL_PARAMS = {
    "rbf": {"kernel": "rbf", "gamma": 0.3},
    "linear": {"kernel": "linear"},
    "poly": {"kernel": "poly", "gamma": 0.2, "degree": 2},
}
#: What a gkfda graph may contain: core operators, none of them a loop.
CORE_OPS = {
    "Abs", "Add", "ArgMax", "Cast", "Concat", "Exp", "Gather", "Identity", "Log", "MatMul", "Max", "Min", "Mul",
    "Div", "Neg", "Pow", "Sigmoid", "Softmax", "Sub",
}


def classification(n_classes, labels=None, n=240, d=5, seed=0):
    """Standardised training and test sets; ``labels`` replace the class codes."""
    X, y = make_classification(n, n_features=d, n_informative=4, n_redundant=0, n_classes=n_classes,
                               n_clusters_per_class=1, random_state=seed)
    X = StandardScaler().fit_transform(X)
    if labels is not None:
        y = np.asarray(labels)[y]
    return X[:160], y[:160], X[160:]


def run(onx, X):
    """The graph's outputs on ``X`` under ONNX Runtime, by name."""
    runtime = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [output.name for output in runtime.get_outputs()]
    return dict(zip(names, runtime.run(None, {runtime.get_inputs()[0].name: X})))


def assert_core(onx):
    for node in onx.graph.node:
        assert node.domain in ("", "ai.onnx"), node
        assert node.op_type in CORE_OPS, node


def check_classifier(model, X, dtype):
    X = X.astype(dtype)
    onx = to_onnx(model, X[:1])
    assert_core(onx)
    outputs = run(onx, X)
    assert [o.name for o in onx.graph.output] == ["label", "probabilities"]
    assert outputs["probabilities"].dtype == dtype
    np.testing.assert_allclose(outputs["probabilities"], model.predict_proba(X), rtol=0, atol=TOLERANCE[dtype])
    np.testing.assert_array_equal(outputs["label"], model.predict(X))
    return outputs


def check_output(model, X, dtype, expected):
    X = X.astype(dtype)
    onx = to_onnx(model, X[:1])
    assert_core(onx)
    (variable,) = run(onx, X).values()
    assert variable.dtype == dtype
    np.testing.assert_allclose(variable, expected(X).reshape(variable.shape), rtol=0, atol=TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kernel", sorted(KERNEL_PARAMS))
@pytest.mark.parametrize("problem", ["binary", "shared", "ovr"])
def test_greedy_kfda(problem, kernel, dtype):
    X, y, X_test = classification(2 if problem == "binary" else 3)
    multiclass = "ovr" if problem == "ovr" else "shared"
    model = GreedyKFDA(k=10, multiclass=multiclass, **KERNEL_PARAMS[kernel]).fit(X, y)
    check_classifier(model, X_test, dtype)


@pytest.mark.parametrize("labels", [
    ["cat", "dog"], ["cat", "dog", "emu"], [3, 7, 10], [-1.0, 2.0], [False, True],
], ids=["str-binary", "str-ovr", "int", "float", "bool"])
def test_labels(labels):
    X, y, X_test = classification(len(labels), labels=labels)
    model = GreedyKFDA(k=10, gamma=0.3, multiclass="ovr").fit(X, y)
    outputs = check_classifier(model, X_test, np.float64)
    assert outputs["label"].dtype.kind == {"U": "O"}.get(model.classes_.dtype.kind, model.classes_.dtype.kind)


def test_single_row_and_one_dimensional_sample():
    X, y, X_test = classification(2)
    model = GreedyKFDA(k=10, gamma=0.3).fit(X, y)
    onx = to_onnx(model, X_test[0])
    for rows in (X_test[:1], X_test):
        np.testing.assert_allclose(run(onx, rows)["probabilities"], model.predict_proba(rows), atol=1e-9)


@pytest.mark.parametrize("dtype", DTYPES)
def test_greedy_kfda_cv(dtype):
    X, y, X_test = classification(3)
    # The default grid's widest kernel can win here, a basis whose float32 rounding exceeds the
    # tolerance (docs/serving.md, "Dtypes and precision"); the graph is the same either way.
    search = GreedyKFDACV(gammas=[0.1, 0.3], max_k=8, cv=3).fit(X, y)
    check_classifier(search, X_test, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kernel", sorted(KERNEL_PARAMS))
@pytest.mark.parametrize("n_classes", [2, 3])
def test_parsimonious_kfda(n_classes, kernel, dtype):
    X, y, X_test = classification(n_classes)
    model = ParsimoniousKFDA(rho=1e-2, **KERNEL_PARAMS[kernel]).fit(X, y)
    check_classifier(model, X_test, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kernel", sorted(KERNEL_PARAMS))
def test_kernel_matching_pursuit(kernel, dtype):
    X, y = make_regression(200, n_features=4, noise=0.1, random_state=0)
    X, y = StandardScaler().fit_transform(X), y / y.std()
    k = 4 if kernel == "linear" else 10  # the linear kernel has rank d = 4
    model = KernelMatchingPursuit(k=k, fit_intercept=True, **KERNEL_PARAMS[kernel]).fit(X[:150], y[:150])
    check_output(model, X[150:], dtype, model.predict)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kernel", sorted(KERNEL_PARAMS))
@pytest.mark.parametrize("supervised", [False, True], ids=["pca", "labels"])
def test_greedy_nystroem(supervised, kernel, dtype):
    X, y, X_test = classification(2)
    n_components = 4 if kernel == "linear" else 10  # the linear kernel has rank d = 5
    model = GreedyNystroem(n_components=n_components, **KERNEL_PARAMS[kernel]).fit(X, y if supervised else None)
    check_output(model, X_test, dtype, model.transform)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kernel", sorted(KERNEL_PARAMS))
def test_sparse_kernel_pca(kernel, dtype):
    X, _, X_test = classification(2)
    model = SparseKernelPCA(n_components=4 if kernel == "linear" else 10, **KERNEL_PARAMS[kernel]).fit(X)
    check_output(model, X_test, dtype, model.transform)


@pytest.mark.parametrize("dtype", DTYPES)
def test_pipeline_through_skl2onnx(dtype):
    X, y, X_test = classification(3)
    scale = 10.0 ** np.arange(X.shape[1])  # features of different scales, for the scaler to undo
    pipeline = make_pipeline(StandardScaler(), GreedyKFDA(k=10, gamma=0.3, multiclass="ovr")).fit(X * scale, y)
    X_test = (X_test * scale).astype(dtype)
    onx = skl2onnx.to_onnx(pipeline, X_test[:1])
    ours = [node for node in onx.graph.node if node.name.startswith("gkfda_")]
    assert {node.domain for node in ours} == {""} and {node.op_type for node in ours} <= CORE_OPS
    # skl2onnx's StandardScaler: ai.onnx.ml's Scaler on floats, core Sub and Div on doubles.
    scaler = {"ai.onnx.ml/Scaler"} if dtype == np.float32 else {"/Sub", "/Div"}
    assert {f"{node.domain}/{node.op_type}" for node in onx.graph.node if node not in ours} == scaler
    outputs = run(onx, X_test)
    np.testing.assert_allclose(outputs["probabilities"], pipeline.predict_proba(X_test), atol=TOLERANCE[dtype])
    np.testing.assert_array_equal(outputs["label"], pipeline.predict(X_test))


def test_pipeline_zipmap_option_adds_no_zipmap():
    X, y, X_test = classification(2)
    pipeline = make_pipeline(StandardScaler(), GreedyKFDA(k=10, gamma=0.3)).fit(X, y)
    for zipmap in (True, False):
        onx = skl2onnx.to_onnx(pipeline, X_test[:1], options={GreedyKFDA: {"zipmap": zipmap}})
        assert "ZipMap" not in {node.op_type for node in onx.graph.node}


def test_every_node_is_core_with_ovr_and_poly():
    X, y, X_test = classification(3)
    for model in (GreedyKFDA(k=10, multiclass="ovr", **KERNEL_PARAMS["rbf"]),
                  ParsimoniousKFDA(rho=1e-2, **KERNEL_PARAMS["poly"])):
        onx = to_onnx(model.fit(X, y), X_test[:1])
        onnx.checker.check_model(onx, full_check=True)
        assert_core(onx)
        assert {opset.domain for opset in onx.opset_import} == {""}


@pytest.mark.parametrize("kernel", ["precomputed", lambda A, B: A @ B.T], ids=["precomputed", "callable"])
def test_kernels_without_a_graph(kernel):
    X, y, _ = classification(2)
    fit_X = X @ X.T if kernel == "precomputed" else X
    model = GreedyKFDA(k=5, kernel=kernel).fit(fit_X, y)
    with pytest.raises(ValueError, match="^kernel: "):
        to_onnx(model, fit_X[:1])
    pipeline = make_pipeline(GreedyKFDA(k=5, kernel=kernel)).fit(fit_X, y)
    with pytest.raises(ValueError, match="^kernel: "):
        skl2onnx.to_onnx(pipeline, fit_X[:1])


@pytest.mark.parametrize("params", [{"kernel": "laplacian"}, {"kernel": "polynomial", "degree": 2.5, "coef0": 30.0}],
                         ids=["laplacian", "fractional-degree"])
def test_kernels_the_core_does_not_compute_are_refused(params):
    X, y, _ = classification(2)
    for model in (GreedyKFDA(k=5, **params).fit(X, y), GreedyNystroem(n_components=5, **params).fit(X)):
        with pytest.raises(ValueError, match="^kernel: '(laplacian|polynomial)'.* cannot be exported to ONNX"):
            to_onnx(model, X[:1])


def test_the_polynomial_alias_and_an_integral_float_degree_are_exported():
    X, y, _ = classification(2)
    check_classifier(GreedyKFDA(k=8, kernel="polynomial", gamma=0.2, degree=2.0).fit(X, y), X, np.float64)


def test_unfitted_and_bad_input():
    X, y, _ = classification(2)
    with pytest.raises(NotFittedError):
        to_onnx(GreedyKFDA(), X[:1])
    with pytest.raises(NotFittedError):
        to_onnx(SparseKernelPCA(), X[:1])
    model = GreedyKFDA(k=5).fit(X, y)
    with pytest.raises(ValueError, match="^X: needs a float32 or float64"):
        to_onnx(model, X[:1].astype(np.int64))
    with pytest.raises(ValueError, match="^X: has 4 features, but GreedyKFDA expects 5"):
        to_onnx(model, X[:1, :4])
    with pytest.raises(TypeError, match="^estimator: "):
        to_onnx(StandardScaler().fit(X), X[:1])


def test_lazy_entry_point():
    X, y, X_test = classification(2)
    model = GreedyKFDA(k=10, gamma=0.3).fit(X, y)
    onx = gkfda.to_onnx(model, X_test[:1])
    np.testing.assert_allclose(run(onx, X_test)["probabilities"], model.predict_proba(X_test), atol=1e-9)
    code = "import sys, gkfda; print(sorted(m for m in ('onnx', 'skl2onnx', 'gkfda.onnx') if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_model_without_bases():
    X, y, X_test = classification(2)
    with pytest.warns(UserWarning, match="chose no basis"):
        model = GreedyKFDA(k=5, gamma=1e-30).fit(X, y)
    assert model.k_ == 0
    check_classifier(model, X_test, np.float64)


@pytest.mark.parametrize("target_opset", [9, 13, None])
def test_target_opsets(target_opset):
    X, y, X_test = classification(3)
    for model in (GreedyKFDA(k=10, multiclass="ovr", **KERNEL_PARAMS["poly"]), GreedyKFDA(k=10, gamma=0.3)):
        onx = to_onnx(model.fit(X, y), X_test[:1], target_opset=target_opset)
        if target_opset is not None:
            assert onx.opset_import[0].version <= target_opset
        np.testing.assert_allclose(run(onx, X_test)["probabilities"], model.predict_proba(X_test), atol=1e-9)


@pytest.mark.parametrize("lean", [False, True], ids=["full", "lean"])
def test_loaded_models(tmp_path, lean):
    if not hasattr(gkfda, "load"):
        pytest.skip("gkfda.save and gkfda.load are not in this version")
    X, y, X_test = classification(3)
    cases = [
        (GreedyKFDA(k=10, gamma=0.3, multiclass="ovr").fit(X, y), "probabilities", "predict_proba"),
        (SparseKernelPCA(n_components=6).fit(X), "variable", "transform"),
    ]
    for model, output, method in cases:
        gkfda.save(model, tmp_path / "model.gkfda", lean=lean)
        loaded = gkfda.load(tmp_path / "model.gkfda")
        outputs = run(to_onnx(loaded, X_test[:1]), X_test)
        np.testing.assert_allclose(outputs[output], getattr(model, method)(X_test), rtol=0, atol=1e-9)


def _exact_logistic(model, X):
    """The probabilities of a binary rbf GreedyKFDA by the kernel's definition, each
    squared distance a sum of squared differences (no cancellation of a common offset)."""
    points, weights, bias = model._union_points, model._expansion_weights, model._expansion_bias
    distances = ((X[:, None, :] - points[None, :, :]) ** 2).sum(axis=-1)
    z = (np.exp(-model._gamma * distances) @ weights + bias)[:, 0]
    positive = 1.0 / (1.0 + np.exp(-z))
    return np.column_stack([1.0 - positive, positive])


@pytest.mark.parametrize("offset", [0.0, 1e3, 1e6])
def test_features_far_from_the_origin_give_the_same_probabilities(offset):
    # A common offset of every feature changes no distance: the estimator, the float64
    # graph and the definition agree to 1e-9 however far the features are from the origin.
    X, y, X_test = classification(2)
    model = GreedyKFDA(k=15, gamma=0.3).fit(X + offset, y)
    X_far = X_test + offset
    expected = _exact_logistic(model, X_far)
    np.testing.assert_allclose(model.predict_proba(X_far), expected, rtol=0, atol=1e-9)
    for rows in (X_far, X_far[:1], X_far[:4]):
        outputs = run(to_onnx(model, X_far[:1]), rows)
        np.testing.assert_allclose(outputs["probabilities"], model.predict_proba(rows), rtol=0, atol=1e-9)
        np.testing.assert_array_equal(outputs["label"], model.predict(rows))
    # float32: the rounding of the inputs to float32 is all the offset costs, not the
    # cancellation of their squares: against the float64 model of the same rounded inputs.
    X32 = X_far.astype(np.float32)
    outputs = run(to_onnx(model, X32[:1]), X32)
    np.testing.assert_allclose(outputs["probabilities"], model.predict_proba(X32.astype(np.float64)),
                               rtol=0, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_float32_inputs_near_the_largest_float32_get_the_prior(dtype):
    # ‖x‖² overflows float32 and x·s to +∞ and −∞ (bases on both sides of their mean): the
    # graph gives such points kernel values 0, the bias's probabilities, as predict_proba
    # does, not the NaN of ∞ − ∞.
    X, y, X_test = classification(3)
    model = GreedyKFDA(k=10, gamma=0.3, multiclass="ovr", dtype=dtype).fit(X, y)
    onx = to_onnx(model, X_test[:1].astype(np.float32))
    far = np.array([[3e38, -3e38, 3e38, 1.0, -2.0], [-3e38] * 5, [1e30] * 5, [3.4e38, 0, 0, 0, 0]], np.float32)
    expected = model.predict_proba(far)
    prior = model.predict_proba(np.full((1, 5), 1e6, np.float32))  # far enough for exp to underflow
    np.testing.assert_allclose(expected, np.repeat(prior, len(far), axis=0), rtol=0, atol=1e-12)
    outputs = run(onx, far)
    assert np.isfinite(outputs["probabilities"]).all()
    np.testing.assert_allclose(outputs["probabilities"], expected, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(outputs["label"], model.predict(far))
    # A non-finite input keeps its NaN: the graph has no other way to refuse it.
    bad = np.array([[np.nan, 0, 0, 0, 0], [np.inf, 0, 0, 0, 0]], np.float32)
    assert np.isnan(run(onx, bad)["probabilities"]).all()


def test_an_opset_below_the_graphs_is_refused():
    X, y, X_test = classification(2)
    model = GreedyKFDA(k=8, gamma=0.3).fit(X, y)
    for target_opset in (7, {"": 7, "ai.onnx.ml": 1}):
        with pytest.raises(ValueError, match=r"^target_opset: .*opset 8 or later.*got 7"):
            to_onnx(model, X_test[:1], target_opset=target_opset)
    with pytest.raises(ValueError, match=r"^target_opset: .*opset 8 or later"):
        skl2onnx.to_onnx(make_pipeline(StandardScaler(), model).fit(X, y), X_test[:1], target_opset=7)
    with pytest.raises(TypeError, match=r"^target_opset: "):
        to_onnx(model, X_test[:1], target_opset="8")
    onx = to_onnx(model, X_test[:1], target_opset=8)
    np.testing.assert_allclose(run(onx, X_test)["probabilities"], model.predict_proba(X_test), rtol=0, atol=1e-9)
