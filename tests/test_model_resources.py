"""What gkfda.load builds is bounded by the file: crafted files are refused with a ValueError
under an address-space cap of 4 × their size + 64 MiB above the loaded interpreter (not a
MemoryError, not killed); what is not a regular file, or not exactly the bytes its header
describes, is refused without reading it whole; and files whose models overflow are refused
at prediction, naming the model's outputs."""

import json
import os
import struct
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import safetensors.numpy
from sklearn.datasets import make_classification

import gkfda
from gkfda import GreedyKFDA, GreedyNystroem, KernelMatchingPursuit, ParsimoniousKFDA, SparseKernelPCA
from gkfda._serialization.layout import _sealed

X, Y = make_classification(n_samples=120, n_features=5, n_informative=3, n_redundant=0, random_state=0)
Y3 = np.digitize(X[:, 0], np.quantile(X[:, 0], [1 / 3, 2 / 3]))
PYTHON_PATH = os.path.dirname(os.path.dirname(gkfda.__file__))


def _parts(path):
    """``(tensors, metadata)`` of a model file gkfda wrote."""
    data = open(path, "rb").read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    tensors = safetensors.numpy.load(data)
    tensors.pop("checksum")
    return tensors, json.loads(header["__metadata__"]["gkfda"])


def _file(tensors, metadata, text=None):
    """The bytes of a model file of ``tensors`` and ``metadata`` (or its JSON ``text``),
    with a checksum that matches: a file that lies on purpose."""
    text = json.dumps(metadata) if text is None else text
    data = safetensors.numpy.save({**tensors, "checksum": np.zeros(32, dtype=np.uint8)}, metadata={"gkfda": text})
    return _sealed(data)


def _saved(model, tmp_path, name="model", lean=False):
    path = tmp_path / f"{name}.safetensors"
    gkfda.save(model, path, lean=lean)
    return path


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    """The parts of a full two-class GreedyKFDA file."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = GreedyKFDA(k=10).fit(X, Y)
    return _parts(_saved(model, tmp_path_factory.mktemp("binary")))


def _with_placeholder(metadata, where, raw):
    """The metadata's JSON text with the value at ``where`` (a path of keys) replaced by the
    JSON text ``raw``: files too large to build as Python objects first."""
    metadata = json.loads(json.dumps(metadata))
    node = metadata
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = "@@PLACE@@"
    return json.dumps(metadata).replace('"@@PLACE@@"', raw)


# -- crafted files, loaded under an address-space cap ----------------------------------


def _crafted(binary):
    """name -> (bytes, what the refusal names): files whose expansion is far larger than
    they are."""
    tensors, metadata = binary
    files = {}
    # Many labels, one of them long: numpy gives each the longest's width.
    labels = json.dumps(["x" * 4000] + [f"{i}" for i in range(120_000)])
    files["long-class-list"] = (_file(tensors, None, _with_placeholder(
        {**metadata, "predictor": {**metadata["predictor"], "classes": {"kind": "str", "values": "@@PLACE@@"}}},
        ("predictor", "classes", "values"), labels)), "classes")
    # Fewer labels: within the JSON's bound, refused by their number against the outputs.
    labels = json.dumps(["x" * 4000] + [f"{i}" for i in range(40_000)])
    files["class-list-for-the-outputs"] = (_file(tensors, None, _with_placeholder(
        {**metadata, "predictor": {**metadata["predictor"], "classes": {"kind": "str", "values": "@@PLACE@@"}}},
        ("predictor", "classes", "values"), labels)), "classes")
    # Thousands of references that each copy one 1 MiB tensor.
    big = {**tensors, "state.big": np.ones((362, 362))}
    references = json.dumps([{"__tensor__": "state.big", "transpose": True, "order": "C"}] * 3000)
    files["copied-references"] = (_file(big, None, _with_placeholder(
        metadata, ("state", "feature_names_in_"), references)), "feature_names_in_")
    # The same through casts of an integer tensor.
    wide = {**tensors, "state.big": np.ones(2**17, dtype=np.int64)}
    references = json.dumps([{"__tensor__": "state.big", "dtype": "int32"}] * 3000)
    files["cast-references"] = (_file(wide, None, _with_placeholder(
        metadata, ("state", "feature_names_in_"), references)), "feature_names_in_")
    # Empty strings in the widest string dtype: 256 KiB each.
    strings = json.dumps({"__array__": {"dtype": "<U65536", "values": [""] * 20_000}})
    files["wide-strings"] = (_file(tensors, None, _with_placeholder(
        metadata, ("state", "feature_names_in_"), strings)), "feature_names_in_")
    # Small JSON text, many Python objects.
    lists = "[" + ",".join(["[]"] * 1_500_000) + "]"
    files["many-lists"] = (_file(tensors, None, _with_placeholder(
        metadata, ("state", "feature_names_in_"), lists)), "the metadata")
    # A million short strings: a few bytes of text each, some sixty of Python objects.
    strings = json.dumps([str(i % 100) for i in range(1_000_000)])
    files["many-strings"] = (_file(tensors, None, _with_placeholder(
        metadata, ("state", "feature_names_in_"), strings)), "the metadata")
    # A header of 100,000 empty tensors (a valid layout: each takes no byte).
    data = _file(tensors, metadata)
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    header.update({f"t{i}": {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]} for i in range(100_000)})
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    files["many-tensors"] = (_sealed(struct.pack("<Q", len(text)) + text + data[8 + size :]), "the header")
    # Deep nesting, where json.loads and the checks would recurse.
    deep = "[" * 600 + "0.5" + "]" * 600
    files["deep-priors"] = (_file(tensors, None, _with_placeholder(metadata, ("params", "priors"), deep)),
                            "params.priors")
    return files


_CAPPED = """
import json, os, resource, sys
import gkfda

def address_space():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))

def resident():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))

def peak():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))

gkfda.load(sys.argv[2])  # what loading imports, loaded before the baseline
path = sys.argv[1]
size = os.path.getsize(path)
limit = address_space() + 4 * size + 64 * 2**20
with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")  # the peak resident set starts again from here
before = resident()
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    gkfda.load(path)
    outcome, message = "loaded", ""
except ValueError as error:
    outcome, message = "ValueError", str(error)[:300]
except MemoryError as error:
    outcome, message = "MemoryError", str(error)[:300]
print(json.dumps({"outcome": outcome, "message": message, "size": size, "peak_above_baseline": peak() - before,
                  "ru_maxrss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, "baseline": before}))
"""


def _capped_load(path, warm):
    """``gkfda.load(path)`` in a subprocess under RLIMIT_AS = its address space after the
    imports + 4 × the file's size + 64 MiB."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_CAPPED), str(path), str(warm)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": PYTHON_PATH},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_crafted_files_are_refused_within_the_memory_bound(binary, tmp_path):
    warm = tmp_path / "warm.safetensors"
    warm.write_bytes(_file(*binary))
    figures = {}
    for name, (data, field) in _crafted(binary).items():
        path = tmp_path / f"{name}.safetensors"
        path.write_bytes(data)
        result = _capped_load(path, warm)
        figures[name] = (result["size"], result["peak_above_baseline"], result["ru_maxrss"], result["outcome"])
        assert result["outcome"] == "ValueError", (name, result)
        assert result["message"].startswith(f"{path}: "), (name, result)
        assert field in result["message"], (name, result)
    print("\nfile: (bytes, peak RSS above the baseline, ru_maxrss, outcome)", figures)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_a_large_valid_file_loads_within_the_memory_bound(tmp_path):
    rng = np.random.default_rng(0)
    features = rng.normal(size=(400, 3000))
    model = KernelMatchingPursuit(k=300, gamma=1e-4).fit(features, features[:, 0])
    path = _saved(model, tmp_path)
    warm = tmp_path / "warm.safetensors"
    gkfda.save(KernelMatchingPursuit(k=3).fit(X, X[:, 0]), warm)
    result = _capped_load(path, warm)
    print(f"\na valid file of {result['size']} bytes: peak RSS {result['peak_above_baseline']} above the baseline, "
          f"ru_maxrss {result['ru_maxrss']}")
    assert result["outcome"] == "loaded", result


def test_copies_within_the_budget_still_load(binary, tmp_path):
    """References that copy a tensor a few times are what a writer may write."""
    tensors, metadata = binary
    metadata = json.loads(json.dumps(metadata))
    names = [f"f{i}" for i in range(5)]
    metadata["state"]["feature_names_in_"] = {"__array__": {"dtype": "<U2", "values": names}}
    path = tmp_path / "model.safetensors"
    path.write_bytes(_file(tensors, metadata))
    assert gkfda.load(path).feature_names_in_.tolist() == names


# -- what is read ---------------------------------------------------------------------


_LOAD = "import sys, gkfda\ntry:\n    gkfda.load(sys.argv[1])\nexcept ValueError as error:\n    print(error)\n"


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "model.fifo"
    os.mkfifo(fifo)
    # In a subprocess with a timeout: a reader that opens the FIFO blocks for ever.
    result = subprocess.run([sys.executable, "-c", _LOAD, str(fifo)], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": PYTHON_PATH})
    assert result.stdout.startswith(f"{fifo}: is a FIFO, not a regular file"), result


def test_a_device_is_refused_without_reading_it():
    result = subprocess.run([sys.executable, "-c", _LOAD, "/dev/zero"], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": PYTHON_PATH})
    assert result.stdout.startswith("/dev/zero: is a character device, not a regular file"), result


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(ValueError, match="is a directory, not a regular file") as error:
        gkfda.load(tmp_path)
    assert str(error.value).startswith(f"{tmp_path}: ")


def test_bytes_beyond_what_the_header_describes_are_refused(binary, tmp_path):
    data = _file(*binary)
    path = tmp_path / "model.safetensors"
    path.write_bytes(data + b"\0" * 5)
    with pytest.raises(ValueError, match=rf"is {len(data) + 5} bytes but its header describes {len(data)}: 5 bytes"):
        gkfda.load(path)
    path.write_bytes(data[:-3])
    with pytest.raises(ValueError, match=rf"truncated: its header describes {len(data)} bytes"):
        gkfda.load(path)
    path.write_bytes(data)
    assert isinstance(gkfda.load(path), GreedyKFDA)


def test_a_missing_file_is_the_error_of_open(tmp_path):
    with pytest.raises(FileNotFoundError):
        gkfda.load(tmp_path / "absent.safetensors")


def test_deep_nesting_names_the_field(binary, tmp_path):
    tensors, metadata = binary
    path = tmp_path / "model.safetensors"
    deep = "[" * 600 + "0.5" + "]" * 600
    path.write_bytes(_file(tensors, None, _with_placeholder(metadata, ("params", "priors"), deep)))
    with pytest.raises(ValueError, match=r"params\.priors: nested more than 32 levels deep") as error:
        gkfda.load(path)
    assert str(error.value).startswith(f"{path}: ")


# -- what is checked ------------------------------------------------------------------


@pytest.mark.parametrize("priors, message", [
    ([0.5, 0.25, 0.25], "one value per class"),
    ([0.7, 0.7], "must sum to 1"),
    ([1.5, -0.5], "positive and finite"),
])
def test_priors_are_checked_by_the_estimators_rule(binary, tmp_path, priors, message):
    tensors, metadata = binary
    path = tmp_path / "model.safetensors"
    changed = json.loads(json.dumps(metadata))
    changed["params"]["priors"] = priors
    path.write_bytes(_file(tensors, changed))
    with pytest.raises(ValueError, match=rf"params\.priors: .*{message}"):
        gkfda.load(path)
    # The fitted priors_ of the state, by the same rule.
    changed = {**tensors, "state.priors_": np.array(priors, dtype=np.float64)}
    path.write_bytes(_file(changed, metadata))
    with pytest.raises(ValueError, match=rf"state\.priors_: .*{message}|state\.priors_: must have shape"):
        gkfda.load(path)


def test_given_priors_round_trip(tmp_path):
    model = GreedyKFDA(k=6, priors=[0.3, 0.7]).fit(X, Y)
    loaded = gkfda.load(_saved(model, tmp_path))
    assert loaded.priors == [0.3, 0.7]
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))


def test_save_refuses_a_label_that_is_not_unicode(tmp_path):
    labels = np.array(["ant", "\ud800"], dtype=object)[Y]
    model = GreedyKFDA(k=6).fit(X, labels)
    with pytest.raises(ValueError, match="classes_: .*not valid Unicode"):
        gkfda.save(model, tmp_path / "model.safetensors")
    assert not (tmp_path / "model.safetensors").exists()


def test_load_refuses_a_label_that_is_not_unicode(tmp_path):
    labels = np.array(["ant", "bee"], dtype=object)[Y]
    tensors, metadata = _parts(_saved(GreedyKFDA(k=6).fit(X, labels), tmp_path, lean=True))
    metadata["predictor"]["classes"]["values"] = ["ant", "\ud800"]
    metadata["state"]["classes_"]["__array__"]["values"] = ["ant", "\ud800"]
    path = tmp_path / "surrogate.safetensors"
    path.write_bytes(_file(tensors, metadata))
    with pytest.raises(ValueError, match=r"predictor\.classes\.values\.1: a label that is not valid Unicode"):
        gkfda.load(path)


def test_a_label_outside_the_basic_plane_round_trips(tmp_path):
    labels = np.array(["ant", "\U0001f41d"], dtype=object)[Y]
    model = GreedyKFDA(k=6).fit(X, labels)
    loaded = gkfda.load(_saved(model, tmp_path))
    assert loaded.classes_.tolist() == ["ant", "\U0001f41d"]


def test_fitted_k_is_bounded_by_the_bases(binary, tmp_path):
    tensors, metadata = binary
    changed = json.loads(json.dumps(metadata))
    changed["state"]["_fitted_k"] = 10**7
    path = tmp_path / "model.safetensors"
    path.write_bytes(_file(tensors, changed))
    with pytest.raises(ValueError, match=r"state\._fitted_k: 10000000 is not the 10 bases"):
        gkfda.load(path)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("multiclass", ["binary", "shared", "ovr"])
def test_load_refuses_an_expansion_its_state_does_not_give(multiclass, dtype, tmp_path):
    # predict reads predict.weights and predict.bias, decision_path and truncate the state's
    # models: a file whose two disagree would predict two ways.
    if multiclass == "binary":
        model = GreedyKFDA(k=8, dtype=dtype).fit(X, Y)
    else:
        model = GreedyKFDA(k=8, dtype=dtype, multiclass=multiclass).fit(X, Y3)
    tensors, metadata = _parts(_saved(model, tmp_path))
    path = tmp_path / "changed.safetensors"
    weights = tensors["predict.weights"]
    row, column = np.unravel_index(np.argmax(np.abs(weights)), weights.shape)
    # Within the tolerance of the model's precision (another BLAS's rounding): loaded.
    nudged = weights.copy()
    nudged[row, column] *= 1 + (1e-10 if dtype == "float64" else 1e-5)
    path.write_bytes(_file({**tensors, "predict.weights": nudged}, metadata))
    np.testing.assert_allclose(gkfda.load(path).decision_function(X), model.decision_function(X), rtol=1e-3,
                               atol=1e-3)
    changed = weights.copy()
    changed[row, column] *= 1.01
    for name, value in (("predict.weights", changed), ("predict.bias", tensors["predict.bias"] + 0.5)):
        path.write_bytes(_file({**tensors, name: value}, metadata))
        with pytest.raises(ValueError, match=rf"changed\.safetensors: tensor {name}: differs from what the "
                                             r"state's models give by [0-9.e+-]+, more than"):
            gkfda.load(path)
    # A lean file has no models to check against: its predictor is the model.
    tensors, metadata = _parts(_saved(model, tmp_path, lean=True))
    path.write_bytes(_file({**tensors, "predict.weights": changed}, metadata))
    assert not np.allclose(gkfda.load(path).decision_function(X), model.decision_function(X))


def test_an_early_stop_keeps_its_fitted_k(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = GreedyKFDA(k=50, kernel="linear").fit(X, Y)
    assert model.k_ < 50
    loaded = gkfda.load(_saved(model, tmp_path))
    np.testing.assert_array_equal(loaded.decision_path(X[:5], ks=[50]), model.decision_path(X[:5], ks=[50]))


# -- predictions that overflow --------------------------------------------------------


def _huge(tensors, names):
    return {**tensors, **{name: np.full_like(tensors[name], 1.7e308) for name in names}}


def test_a_model_of_huge_weights_blames_its_outputs(tmp_path):
    cases = [
        (KernelMatchingPursuit(k=6).fit(X, X[:, 0]), "predict", ["predict.weights"]),
        (GreedyNystroem(n_components=6).fit(X), "transform", ["predict.weights"]),
        (ParsimoniousKFDA(gamma=0.5).fit(X, Y), "decision_function", ["predict.weights"]),
        (GreedyKFDA(k=6).fit(X, Y), "decision_function", ["predict.weights"]),
        (GreedyKFDA(k=6).fit(X, Y), "predict_proba", ["predict.weights"]),
    ]
    for model, method, names in cases:
        path = _saved(model, tmp_path, lean=True)
        tensors, metadata = _parts(path)
        tensors = _huge(tensors, [name for name in names if name in tensors])
        if isinstance(model, GreedyNystroem):
            metadata["state"].pop("normalization_", None)
        path.write_bytes(_file(tensors, metadata))
        loaded = gkfda.load(path)
        with pytest.raises(ValueError, match=r"^X: row \d+: the model's outputs overflow float64 though its kernel "
                                             r"values are finite"):
            getattr(loaded, method)(X)


def test_a_pca_of_a_tiny_factor_blames_its_outputs(tmp_path):
    model = SparseKernelPCA(n_components=4).fit(X)
    path = _saved(model, tmp_path, lean=True)
    tensors, metadata = _parts(path)
    lower = tensors["predict.lower"].copy()
    np.fill_diagonal(lower, 1e-300)
    path.write_bytes(_file({**tensors, "predict.lower": lower}, metadata))
    loaded = gkfda.load(path)
    with pytest.raises(ValueError, match="the model's outputs overflow"):
        loaded.transform(X)


def test_points_whose_kernel_overflows_are_still_blamed_on_x():
    model = GreedyKFDA(k=6, kernel="poly", degree=3, gamma=1.0).fit(X, Y)
    with pytest.raises(ValueError, match="X: its kernel values with the model's bases overflow"):
        model.decision_function(X * 1e120)
