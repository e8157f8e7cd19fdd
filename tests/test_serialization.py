"""gkfda.save / gkfda.load: round trips, the lean file, refusals of damaged files, pickle."""

import json
import os
import pickle
import struct
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import gkfda
from gkfda import (
    GreedyKFDA, GreedyKFDACV, GreedyNystroem, KernelMatchingPursuit, ParsimoniousKFDA, SparseKernelCCA,
    SparseKernelPCA, _core,
)

X3, Y3 = make_classification(n_samples=160, n_features=5, n_informative=3, n_redundant=0, n_classes=3,
                             random_state=0)
Y2 = (Y3 == 1).astype(int)
TARGET = X3[:, 0] + np.sin(X3[:, 1])
VIEW = np.c_[np.sin(X3[:, 0]), X3[:, 1] ** 2]
KERNEL = _core.kernel_matrix(X3, kernel="rbf", gamma=0.3)
TEST = X3[:40] + 0.05
TEST_KERNEL = _core.kernel_matrix(TEST, X3, kernel="rbf", gamma=0.3)

CLASSIFIER_METHODS = ("predict", "predict_proba", "predict_log_proba", "decision_function")


def _fitted(name, dtype="float64"):
    """A small fitted model, its test input and the prediction methods to compare."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small data: early stops
        if name == "binary":
            return GreedyKFDA(k=12, dtype=dtype).fit(X3, Y2), TEST, CLASSIFIER_METHODS + ("transform",)
        if name == "shared":
            return GreedyKFDA(k=12, dtype=dtype).fit(X3, Y3), TEST, CLASSIFIER_METHODS + ("transform",)
        if name == "ovr":
            return (GreedyKFDA(k=8, multiclass="ovr", dtype=dtype).fit(X3, Y3), TEST,
                    CLASSIFIER_METHODS + ("transform",))
        if name == "truncated-ovr":
            return (GreedyKFDA(k=12, multiclass="ovr", dtype=dtype).fit(X3, Y3).truncate(5), TEST,
                    CLASSIFIER_METHODS)
        if name == "linear":
            return GreedyKFDA(k=5, kernel="linear", dtype=dtype).fit(X3, Y2), TEST, CLASSIFIER_METHODS
        if name == "poly":
            return (GreedyKFDA(k=8, kernel="poly", gamma=0.2, dtype=dtype).fit(X3, Y3), TEST,
                    CLASSIFIER_METHODS)
        if name == "precomputed":
            return (GreedyKFDA(k=8, kernel="precomputed", dtype=dtype).fit(KERNEL, Y3), TEST_KERNEL,
                    CLASSIFIER_METHODS)
        if name == "str-labels":
            labels = np.array(["ant", "bee", "cat"], dtype=object)[Y3]
            return GreedyKFDA(k=8, dtype=dtype).fit(X3, labels), TEST, CLASSIFIER_METHODS
        if name == "cv":
            return (GreedyKFDACV(gammas=2, max_k=6, cv=3, dtype=dtype).fit(X3, Y3), TEST,
                    CLASSIFIER_METHODS + ("transform",))
        if name == "parsimonious":
            return ParsimoniousKFDA(gamma=0.5).fit(X3, Y2), TEST, CLASSIFIER_METHODS
        if name == "parsimonious-ovr":
            return ParsimoniousKFDA(kernel="precomputed").fit(KERNEL, Y3), TEST_KERNEL, CLASSIFIER_METHODS
        if name == "matching":
            return KernelMatchingPursuit(k=8, fit_intercept=True, dtype=dtype).fit(X3, TARGET), TEST, ("predict",)
        if name == "pca":
            return SparseKernelPCA(n_components=6, dtype=dtype).fit(X3), TEST, ("transform",)
        if name == "nystroem":
            return GreedyNystroem(n_components=6, dtype=dtype).fit(X3, Y3), TEST, ("transform",)
        if name == "nystroem-precomputed":
            return GreedyNystroem(n_components=6, kernel="precomputed").fit(KERNEL), TEST_KERNEL, ("transform",)
        if name == "cca":
            return SparseKernelCCA(k=8, dtype=dtype).fit(X3, VIEW), TEST, ("transform",)
    raise AssertionError(name)


MODELS = ["binary", "shared", "ovr", "truncated-ovr", "linear", "poly", "precomputed", "str-labels", "cv",
          "parsimonious", "parsimonious-ovr", "matching", "pca", "nystroem", "nystroem-precomputed", "cca"]


def _round_trip(model, tmp_path, lean):
    path = tmp_path / "model.safetensors"
    gkfda.save(model, path, lean=lean)
    return gkfda.load(path)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("lean", [False, True], ids=["full", "lean"])
@pytest.mark.parametrize("name", MODELS)
def test_loaded_model_predicts_bit_for_bit(name, lean, dtype, tmp_path):
    model, X, methods = _fitted(name, dtype)
    loaded = _round_trip(model, tmp_path, lean)
    assert type(loaded) is type(model)
    assert loaded.get_params() == model.get_params()
    for method in methods:
        if lean and method == "transform" and isinstance(model, (GreedyKFDA, GreedyKFDACV)):
            continue  # the Nyström features need the discriminants: refused below
        expected, got = getattr(model, method)(X), getattr(loaded, method)(X)
        assert got.dtype == expected.dtype
        assert np.array_equal(got, expected), method
    if hasattr(model, "classes_"):
        assert loaded.classes_.dtype.kind == model.classes_.dtype.kind
        assert loaded.classes_.tolist() == model.classes_.tolist()


def test_second_view_of_cca_is_kept(tmp_path):
    model, X, _ = _fitted("cca")
    for lean in (False, True):
        loaded = _round_trip(model, tmp_path, lean)
        for got, expected in zip(loaded.transform(X, VIEW[:40]), model.transform(X, VIEW[:40])):
            assert np.array_equal(got, expected)
        assert loaded.score(X3, VIEW) == model.score(X3, VIEW)


@pytest.mark.parametrize("name", ["binary", "shared", "ovr", "precomputed"])
def test_full_file_keeps_the_sparsity_path_and_truncation(name, tmp_path):
    model, X, _ = _fitted(name)
    loaded = _round_trip(model, tmp_path, lean=False)
    assert np.array_equal(loaded.decision_path(X), model.decision_path(X))
    assert np.array_equal(loaded.proba_path(X), model.proba_path(X))
    y = Y2[:40] if len(model.classes_) == 2 else Y3[:40]
    assert np.array_equal(loaded.error_path(X, y), model.error_path(X, y))
    assert np.array_equal(loaded.truncate(3).predict_proba(X), model.truncate(3).predict_proba(X))
    assert np.array_equal(loaded.coef_ if len(model._models) == 1 else loaded.coef_[0],
                          model.coef_ if len(model._models) == 1 else model.coef_[0])
    if len(model.classes_) == 2:
        assert loaded.generalisation_bound() == model.generalisation_bound()


def test_full_file_keeps_the_bounds_of_the_pursuits(tmp_path):
    matching, _, _ = _fitted("matching")
    loaded = _round_trip(matching, tmp_path, lean=False)
    assert loaded.loss_bound(X3, TARGET, alpha=0.5) == matching.loss_bound(X3, TARGET, alpha=0.5)
    pca, _, _ = _fitted("pca")
    loaded = _round_trip(pca, tmp_path, lean=False)
    assert loaded.reconstruction_error(TEST) == pca.reconstruction_error(TEST)
    assert np.array_equal(loaded.bound_path().bound, pca.bound_path().bound)
    cca, _, _ = _fitted("cca")
    loaded = _round_trip(cca, tmp_path, lean=False)
    assert np.array_equal(loaded.loss_bound(X3, VIEW, alpha=0.5), cca.loss_bound(X3, VIEW, alpha=0.5))


def test_full_file_keeps_the_search_summary(tmp_path):
    search, _, _ = _fitted("cv")
    loaded = _round_trip(search, tmp_path, lean=False)
    for name in ("best_params_", "best_score_", "best_index_", "max_k_", "n_splits_", "refit_time_"):
        assert getattr(loaded, name) == getattr(search, name)
    assert np.array_equal(loaded.gammas_, search.gammas_)
    assert not hasattr(loaded, "cv_results_")


LEAN_REFUSALS = [
    ("binary", lambda m: m.truncate(3)),
    ("binary", lambda m: m.decision_path(TEST)),
    ("binary", lambda m: m.proba_path(TEST)),
    ("binary", lambda m: m.error_path(TEST, Y2[:40])),
    ("binary", lambda m: m.generalisation_bound()),
    ("binary", lambda m: m.transform(TEST)),
    ("matching", lambda m: m.loss_bound(X3, TARGET, alpha=0.5)),
    ("pca", lambda m: m.reconstruction_error(TEST)),
    ("pca", lambda m: m.bound_path()),
    ("cca", lambda m: m.loss_bound(X3, VIEW, alpha=0.5)),
]


@pytest.mark.parametrize("name, call", LEAN_REFUSALS)
def test_lean_model_refuses_what_it_cannot_do(name, call, tmp_path):
    model, _, _ = _fitted(name)
    loaded = _round_trip(model, tmp_path, lean=True)
    with pytest.raises(ValueError, match="loaded from a lean model file"):
        call(loaded)
    with pytest.raises(ValueError, match="lean model file"):
        gkfda.save(loaded, tmp_path / "again.safetensors")  # a full file needs the full state


def test_lean_file_is_the_prediction_arrays_and_a_header(tmp_path):
    X, y = make_classification(n_samples=400, n_features=20, random_state=0)
    model = GreedyKFDA(k=50).fit(X, y)
    needed = model._union_points.nbytes + model._expansion_weights.nbytes + model._expansion_bias.nbytes
    gkfda.save(model, tmp_path / "lean", lean=True)
    size = os.path.getsize(tmp_path / "lean")
    assert needed < size < needed + 4096, (size, needed)
    # A lean model saved again, lean, gives the same file.
    gkfda.save(gkfda.load(tmp_path / "lean"), tmp_path / "again", lean=True)
    assert (tmp_path / "again").read_bytes() == (tmp_path / "lean").read_bytes()


def test_full_file_stores_each_array_once(tmp_path):
    model, _, _ = _fitted("nystroem")
    gkfda.save(model, tmp_path / "full")
    header = _header((tmp_path / "full").read_bytes())
    # normalization_ is predict.weights transposed: referenced, not written again.
    assert "state.normalization_" not in header
    state = json.loads(header["__metadata__"]["gkfda"])["state"]
    assert state["normalization_"] == {"__tensor__": "predict.weights", "transpose": True, "order": "C"}


def test_save_refuses_a_callable_kernel_and_an_unfitted_model(tmp_path):
    model = GreedyKFDA(k=5, kernel=lambda A, B: A @ B.T).fit(X3, Y2)
    with pytest.raises(ValueError, match="^kernel: "):
        gkfda.save(model, tmp_path / "model")
    assert not (tmp_path / "model").exists()
    with pytest.raises(NotFittedError):
        gkfda.save(GreedyKFDA(), tmp_path / "model")
    with pytest.raises(TypeError, match="^estimator: "):
        gkfda.save(StandardScaler().fit(X3), tmp_path / "model")


@pytest.mark.parametrize(
    "params",
    [{"kernel": "laplacian"}, {"kernel": "sigmoid", "gamma": 0.01}, {"kernel": "poly", "degree": 2.5, "coef0": 30.0}],
    ids=["laplacian", "sigmoid", "fractional-degree"],
)
def test_save_refuses_the_kernels_the_core_does_not_compute(tmp_path, params):
    # pairwise_kernels computes them: a model file holds no code, and its reader's core would not.
    for model in (GreedyKFDA(k=5, **params).fit(X3, Y2), GreedyNystroem(n_components=5, **params).fit(X3)):
        with pytest.raises(ValueError, match="^kernel: a model with .* kernel cannot be saved to a model file"):
            gkfda.save(model, tmp_path / "model")
        assert not (tmp_path / "model").exists()


@pytest.mark.parametrize(
    "model",
    [GreedyKFDA(k=6, gamma="scale"), GreedyKFDA(k=6, kernel="polynomial", gamma="auto", degree=2.0, coef0=0.5),
     GreedyNystroem(n_components=6, kernel="poly", kernel_params={"gamma": 0.2, "degree": 2}),
     SparseKernelPCA(n_components=6, gamma="auto")],
    ids=["scale", "alias-auto-float-degree", "kernel-params", "pca-auto"],
)
def test_kernel_parameters_round_trip(tmp_path, model):
    model.fit(X3, Y2) if isinstance(model, GreedyKFDA) else model.fit(X3)
    gkfda.save(model, tmp_path / "model")
    loaded = gkfda.load(tmp_path / "model")
    assert loaded.get_params() == model.get_params()
    method = "predict_proba" if isinstance(model, GreedyKFDA) else "transform"
    np.testing.assert_array_equal(getattr(loaded, method)(TEST), getattr(model, method)(TEST))


def test_parsimonious_verbose_round_trips(tmp_path):
    model = ParsimoniousKFDA(gamma=0.5, verbose=True).fit(X3, Y2)
    gkfda.save(model, tmp_path / "model")
    loaded = gkfda.load(tmp_path / "model")
    assert loaded.verbose is True and loaded.get_params() == model.get_params()
    np.testing.assert_array_equal(loaded.predict_proba(TEST), model.predict_proba(TEST))


def test_a_file_without_kernel_params_loads(tmp_path):
    # Written before GreedyNystroem took kernel_params: loaded with its default, None.
    model = GreedyNystroem(n_components=6, gamma=0.3).fit(X3)
    gkfda.save(model, tmp_path / "model")
    data = _with_metadata((tmp_path / "model").read_bytes(), lambda m: m["params"].pop("kernel_params"))
    (tmp_path / "old").write_bytes(data)
    loaded = gkfda.load(tmp_path / "old")
    assert loaded.kernel_params is None
    np.testing.assert_array_equal(loaded.transform(TEST), model.transform(TEST))


def test_params_that_are_not_data_are_written_as_null(tmp_path):
    model = GreedyKFDA(k=5, criterion="random", random_state=np.random.RandomState(0), dtype=np.float32)
    model.fit(X3, Y2)
    loaded = _round_trip(model, tmp_path, lean=False)
    assert loaded.random_state is None and loaded.dtype == "float32"
    assert np.array_equal(loaded.predict_proba(TEST), model.predict_proba(TEST))


def test_label_kinds_round_trip(tmp_path):
    for labels in (Y2.astype(np.int32), Y2.astype(float) + 1.0, Y2.astype(bool), np.array(["no", "yes"])[Y2]):
        model = GreedyKFDA(k=5).fit(X3, labels)
        loaded = _round_trip(model, tmp_path, lean=True)
        assert loaded.classes_.dtype == model.classes_.dtype
        assert np.array_equal(loaded.predict(TEST), model.predict(TEST))


def test_feature_names_are_kept(tmp_path):
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame(X3, columns=list("abcde"))
    model = GreedyKFDA(k=5).fit(frame, Y2)
    for lean in (False, True):
        loaded = _round_trip(model, tmp_path, lean)
        assert loaded.feature_names_in_.tolist() == list("abcde")
        assert np.array_equal(loaded.predict_proba(frame), model.predict_proba(frame))


def test_an_empty_support_round_trips(tmp_path):
    X = np.ones((20, 2))
    y = np.r_[np.zeros(10, int), np.ones(10, int)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = GreedyKFDA(k=3).fit(X, y)
        sparse = ParsimoniousKFDA(rho=1e6).fit(X3, Y2)
    assert model.k_ == 0
    for lean in (False, True):
        for fitted, inputs in ((model, X), (sparse, TEST)):
            loaded = _round_trip(fitted, tmp_path, lean)
            assert np.array_equal(loaded.predict_proba(inputs), fitted.predict_proba(inputs))


def test_threads_predict_from_one_loaded_model(tmp_path):
    model, _, _ = _fitted("shared")
    loaded = _round_trip(model, tmp_path, lean=True)
    rows = np.random.default_rng(0).normal(size=(8, 200, X3.shape[1]))
    sequential = [loaded.predict_proba(batch) for batch in rows]
    with ThreadPoolExecutor(8) as pool:
        threaded = list(pool.map(loaded.predict_proba, rows))
    assert all(np.array_equal(a, b) for a, b in zip(sequential, threaded))


def test_pipeline_round_trips_through_skops():
    sio = pytest.importorskip("skops.io")
    pipeline = make_pipeline(StandardScaler(), GreedyKFDA(k=8)).fit(X3, Y3)
    data = sio.dumps(pipeline)
    untrusted = sio.get_untrusted_types(data=data)
    assert all(name.startswith("gkfda.") for name in untrusted), untrusted
    loaded = sio.loads(data, trusted=untrusted)
    assert np.array_equal(loaded.predict_proba(TEST), pipeline.predict_proba(TEST))
    assert np.array_equal(loaded[-1].proba_path(TEST), pipeline[-1].proba_path(TEST))


# -- pickle ---------------------------------------------------------------------------


def test_pickle_packs_the_triangular_matrices():
    X, y = make_classification(n_samples=400, n_features=20, random_state=0)
    model = GreedyKFDA(k=50).fit(X, y)
    restored = pickle.loads(pickle.dumps(model))
    for before, after in zip(model._models + [model._feature_moments], restored._models + [restored._feature_moments]):
        for name, value in vars(before).items():
            if isinstance(value, np.ndarray):
                assert value.tobytes(order="A") == getattr(after, name).tobytes(order="A"), name
                assert value.flags.f_contiguous == getattr(after, name).flags.f_contiguous, name
    # Four k×k matrices (one of them two) are stored as their triangles.
    square = 50 * 50 * 8
    arrays = sum(value.nbytes for record in model._models + [model._feature_moments]
                 for value in vars(record).values() if isinstance(value, np.ndarray))
    arrays += model._support_points.rows.nbytes + 2 * model._union_support.nbytes
    saved = 5 * (square - 50 * 51 // 2 * 8)
    assert len(pickle.dumps(model)) < arrays - saved + 4096


def test_truncated_ovr_model_predicts_the_same_through_pickle():
    model = GreedyKFDA(k=20, multiclass="ovr").fit(X3, Y3)
    for k in (7, 13, 19):
        small = model.truncate(k)
        restored = pickle.loads(pickle.dumps(small))
        assert np.array_equal(restored.predict_proba(X3), small.predict_proba(X3))
        assert np.array_equal(restored.decision_path(X3), small.decision_path(X3))


def test_old_pickles_with_whole_matrices_still_load():
    model, _, _ = _fitted("binary")
    discriminant = model._models[0]
    old = pickle.loads(pickle.dumps(discriminant))
    old.__setstate__(dict(vars(discriminant)))  # the state before triangles were packed
    assert np.array_equal(old.projection, discriminant.projection)


# -- damaged files --------------------------------------------------------------------


def _header(data):
    (size,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + size])


def _sealed(data):
    """``data`` with a checksum that matches it: a file that lies on purpose (its writer
    can compute the checksum), for the checks behind the checksum."""
    from gkfda._serialization.layout import _sealed

    try:
        return _sealed(data)
    except (KeyError, TypeError, ValueError):  # a header without a usable checksum entry
        return data


def _with_header(data, header):
    """``data`` with its header replaced (its tensors' bytes unchanged), sealed."""
    (size,) = struct.unpack("<Q", data[:8])
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return _sealed(struct.pack("<Q", len(text)) + text + data[8 + size :])


def _with_metadata(data, change):
    header = _header(data)
    metadata = json.loads(header["__metadata__"]["gkfda"])
    change(metadata)
    header["__metadata__"]["gkfda"] = json.dumps(metadata)
    return _with_header(data, header)


def _rebuilt(data, change):
    """The file with its tensors changed by ``change(tensors)`` (the metadata kept)."""
    import safetensors.numpy

    header = _header(data)
    tensors = safetensors.numpy.load(data)
    change(tensors)
    return _sealed(safetensors.numpy.save(tensors, metadata=header["__metadata__"]))


_JUNK = [None, True, -1, 0, 3, 2**70, 1e308, -2.5, "x", "", [], {}, [1, 2], {"__tensor__": "predict.bias"},
         {"__float__": "nan"}, {"__dict__": {}}, {"__object__": "Discriminant", "fields": {}}]


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, prefix + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _paths(value, prefix + (i,))


def _replace(metadata, rng):
    paths = list(_paths(metadata))[1:]
    path = paths[rng.integers(len(paths))]
    node = metadata
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = _JUNK[rng.integers(len(_JUNK))]


#: Corruptions that leave no valid file; "flip" and "junk" may (a changed weight is a model).
# Every corruption but "junk" is refused: flipped bytes by the checksum, the others (sealed
# with a matching checksum, as a deliberate lie would be) by the checks behind it. A junk
# metadata value can be one a writer could have written (another gkfda_version, say).
ALWAYS_INVALID = ("truncate", "flip", "shape", "nan", "huge", "version", "estimator", "extra", "missing", "cap")
CORRUPTIONS = ALWAYS_INVALID + ("junk",)


def _corrupted(data, kind, rng):
    header = _header(data)
    names = sorted(name for name in header if name != "__metadata__")
    name = names[rng.integers(len(names))]
    if kind == "truncate":
        return data[: rng.integers(len(data))]
    if kind == "flip":
        damaged = bytearray(data)
        for _ in range(rng.integers(1, 4)):
            damaged[rng.integers(len(data))] ^= 1 << int(rng.integers(8))
        return bytes(damaged)
    if kind == "shape":
        shape = header[name]["shape"]
        header[name]["shape"] = shape + [2] if not shape or rng.random() < 0.5 else [shape[0] + 1] + shape[1:]
        return _with_header(data, header)
    if kind == "huge":
        header[name]["shape"] = [2**62, 2**62]
        return _with_header(data, header)
    if kind == "nan":
        floats = [n for n in names if header[n]["dtype"] in ("F64", "F32") and np.prod(header[n]["shape"]) > 0]
        name = floats[rng.integers(len(floats))]
        (size,) = struct.unpack("<Q", data[:8])
        begin, end = header[name]["data_offsets"]
        width = 8 if header[name]["dtype"] == "F64" else 4
        at = 8 + size + begin + width * int(rng.integers((end - begin) // width))
        nan = np.array([np.nan], dtype="<f8" if width == 8 else "<f4").tobytes()
        return _sealed(data[:at] + nan + data[at + width :])
    if kind == "version":
        return _with_metadata(data, lambda m: m.update(format_version=int(rng.choice([0, 2, 99]))))
    if kind == "estimator":
        return _with_metadata(data, lambda m: m.update(estimator=str(rng.choice(["SVC", "object", "os.system"]))))
    if kind == "extra":
        return _rebuilt(data, lambda t: t.update({"state.extra": np.zeros(3)}))
    if kind == "missing":
        return _rebuilt(data, lambda t: t.pop(name))
    if kind == "cap":
        return struct.pack("<Q", int(rng.integers(16 * 2**20 + 1, 2**63))) + data[8:]
    if kind == "junk":
        return _with_metadata(data, lambda m: _replace(m, rng))
    raise AssertionError(kind)


_VALID = {}


def _valid_files(tmp_dir):
    """Small files of several estimators, full and lean, made once."""
    if not _VALID:
        for name in ("binary", "shared", "ovr", "precomputed", "cv", "parsimonious-ovr", "matching", "pca",
                     "nystroem", "cca"):
            model, X, methods = _fitted(name)
            for lean in (False, True):
                path = tmp_dir / f"{name}-{lean}.safetensors"
                gkfda.save(model, path, lean=lean)
                _VALID[(name, lean)] = (path.read_bytes(), X, methods[0])
    return _VALID


def _try(data, path, X, method):
    """``"error"`` for a clear refusal, ``"loaded"`` for a file that is still a model."""
    path.write_bytes(data)
    try:
        model = gkfda.load(path)
    except ValueError as error:
        assert str(error).startswith(str(path) + ": "), error
        return "error"
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            getattr(model, method)(X)  # what still loads still predicts
        except ValueError as error:  # or refuses the input, as a model of another width would
            assert str(error).startswith("X"), error
    return "loaded"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(CORRUPTIONS), seed=st.integers(0, 2**32 - 1), which=st.integers(0, 19))
def test_damaged_files_are_clear_errors(kind, seed, which, tmp_path_factory):
    files = _valid_files(tmp_path_factory.mktemp("valid", numbered=False) if not _VALID else None)
    data, X, method = list(files.values())[which % len(files)]
    rng = np.random.default_rng(seed)
    outcome = _try(_corrupted(data, kind, rng), tmp_path_factory.getbasetemp() / "damaged.safetensors", X, method)
    if kind in ALWAYS_INVALID:
        assert outcome == "error"


def test_a_thousand_seeded_corruptions(tmp_path):
    files = list(_valid_files(tmp_path).values())
    counts = {kind: {"error": 0, "loaded": 0} for kind in CORRUPTIONS}
    for seed in range(1000):
        kind = CORRUPTIONS[seed % len(CORRUPTIONS)]
        data, X, method = files[seed % len(files)]
        counts[kind][_try(_corrupted(data, kind, np.random.default_rng(seed)), tmp_path / "damaged", X, method)] += 1
    errors = sum(count["error"] for count in counts.values())
    loaded = sum(count["loaded"] for count in counts.values())
    print(f"\n1000 corrupted files: {errors} clear errors, {loaded} still valid models; by kind: {counts}")
    assert all(counts[kind]["loaded"] == 0 for kind in ALWAYS_INVALID), counts
    assert errors + loaded == 1000


def test_errors_name_the_path_and_the_fault(tmp_path):
    model, _, _ = _fitted("binary")
    path = tmp_path / "model.safetensors"
    gkfda.save(model, path)
    data = path.read_bytes()
    cases = {
        "limit of 16 MiB": struct.pack("<Q", 2**40) + data[8:],
        "truncated": data[:100],
        "format_version": _with_metadata(data, lambda m: m.update(format_version=2)),
        "estimator": _with_metadata(data, lambda m: m.update(estimator="SVC")),
        "NaN": _rebuilt(data, lambda t: t["predict.bias"].__setitem__(0, np.nan)),
        "not referenced": _rebuilt(data, lambda t: t.update({"state.extra": np.zeros(2)})),
        "missing": _rebuilt(data, lambda t: t.pop("state._models.0.projection")),
        "projection": _rebuilt(data, lambda t: t.update({"state._models.0.projection": np.zeros((3, 3))})),
        "predict.columns": _with_metadata(data, lambda m: m["predictor"].update(kernel="precomputed")),
    }
    for expected, damaged in cases.items():
        path.write_bytes(damaged)
        with pytest.raises(ValueError, match=expected) as error:
            gkfda.load(path)
        assert str(error.value).startswith(f"{path}: ")
