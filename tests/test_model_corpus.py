"""Crafted model files, each with the verdict every reader must give: the Python reader
(``gkfda.load``) and the Rust one (``gkfda._core.read_model_bytes``, what the C ABI reads
with) accept or refuse each alike.

Each file is a committed fixture (tests/data/models) with one thing changed and its checksum
computed again, so that what refuses it is the check behind the checksum."""

import hashlib
import json
import struct
from pathlib import Path

import numpy as np
import pytest

import gkfda
from gkfda import _core

MODELS = Path(__file__).resolve().parent / "data" / "models"
_NUMPY = {"F64": "<f8", "F32": "<f4", "I64": "<i8", "BOOL": "?", "U8": "u1"}


class File:
    """A fixture taken apart: its metadata (as text or as a dict) and its tensors."""

    def __init__(self, name):
        data = (MODELS / name).read_bytes()
        (size,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8 : 8 + size])
        self.metadata = header.pop("__metadata__")["gkfda"]
        body = data[8 + size :]
        entries = sorted(header.items(), key=lambda item: item[1]["data_offsets"][0])
        self.tensors = {
            name: [entry["dtype"], list(entry["shape"]), body[slice(*entry["data_offsets"])]]
            for name, entry in entries
        }
        self.header_text = None
        self.trailing = b""

    @property
    def meta(self):
        return json.loads(self.metadata)

    def edit(self, change):
        meta = self.meta
        change(meta)
        self.metadata = json.dumps(meta)
        return self

    def array(self, name):
        dtype, shape, data = self.tensors[name]
        return np.frombuffer(data, dtype=_NUMPY[dtype]).reshape(shape)

    def set_array(self, name, values, dtype=None):
        dtype = dtype or self.tensors[name][0]
        values = np.ascontiguousarray(values, dtype=_NUMPY[dtype])
        self.tensors[name] = [dtype, list(values.shape), values.tobytes()]
        return self

    def header(self):
        header = {"__metadata__": {"gkfda": self.metadata}}
        offset = 0
        for name, (dtype, shape, data) in self.tensors.items():
            header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
            offset += len(data)
        return json.dumps(header)

    def bytes(self):
        text = (self.header_text or self.header()).encode()
        data = struct.pack("<Q", len(text)) + text + b"".join(t[2] for t in self.tensors.values())
        return _sealed(data) + self.trailing


def _sealed(data):
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    begin, end = (8 + size + offset for offset in header["checksum"]["data_offsets"])
    digest = hashlib.sha256(data[:begin] + data[end:]).digest()
    return data[:begin] + digest + data[end:]


def _twice(text, key):
    """``text`` with the first ``"key": value`` of an object written twice."""
    decoder = json.JSONDecoder()
    at = text.index(json.dumps(key) + ":")
    start = at + len(json.dumps(key)) + 1
    while text[start] == " ":
        start += 1
    _, end = decoder.raw_decode(text, start)
    pair = text[at:end]
    return text[:at] + pair + ", " + text[at:]


# -- the cases --------------------------------------------------------------------------

def _fixture(name):
    return lambda: File(name).bytes()


def _predictor(name, **fields):
    def build():
        def change(meta):
            meta["predictor"].update(fields)
        return File(name).edit(change).bytes()
    return build


def _labels(name, values, state_values):
    """The predictor's labels and the state's ``classes_`` (which must agree) both set."""
    def build():
        file = File(name)
        meta = file.meta
        meta["predictor"]["classes"]["values"] = values
        classes = meta["state"]["classes_"]
        if "__array__" in classes:
            classes["__array__"]["values"] = state_values
        else:
            file.set_array(classes["__tensor__"], state_values)
        file.metadata = json.dumps(meta)
        return file.bytes()
    return build


def _meta_text(name, change):
    def build():
        file = File(name)
        file.metadata = change(file.metadata)
        return file.bytes()
    return build


def _header_text(name, change):
    def build():
        file = File(name)
        file.header_text = change(file.header())
        return file.bytes()
    return build


def _params(name, **fields):
    def build():
        return File(name).edit(lambda meta: meta["params"].update(fields)).bytes()
    return build


def _no_bases(n_features):
    """A lean two-class file of no bases and ``n_features`` features, tensors to match."""
    def build():
        file = File("greedy_binary_rbf_lean.gkfda")
        file.edit(lambda meta: meta["predictor"].update(n_bases=0, n_features=n_features))
        file.tensors["predict.points"] = ["F64", [0, n_features], b""]
        file.tensors["predict.weights"] = ["F64", [0, 1], b""]
        return file.bytes()
    return build


def _columns_repeat():
    file = File("greedy_precomputed.gkfda")
    columns = file.array("predict.columns").copy()
    columns[1] = columns[0]
    return file.set_array("predict.columns", columns).bytes()


def _lower_diagonal(value):
    def build():
        file = File("kpca.gkfda")
        lower = file.array("predict.lower").copy()
        lower[1, 1] = value
        return file.set_array("predict.lower", lower).bytes()
    return build


def _tensor_entry(change):
    def build():
        file = File("greedy_binary_rbf_lean.gkfda")
        header = json.loads(file.header())
        change(header)
        file.header_text = json.dumps(header)
        return file.bytes()
    return build


def _trailing():
    file = File("greedy_binary_rbf_lean.gkfda")
    file.trailing = b"\0" * 5
    return file.bytes()


def _extra_tensor(name, dtype, values):
    def build():
        return File("greedy_binary_rbf_lean.gkfda").set_array(name, values, dtype).bytes()
    return build


def _state_tensor_of_five_dimensions():
    file = File("kmp.gkfda")
    support = file.array("state.support_")
    return file.set_array("state.support_", support.reshape((1, 1, 1, 1, -1))).bytes()


def _reordered():
    file = File("kcca.gkfda")
    file.metadata = json.dumps(file.meta, sort_keys=True, indent=1)
    file.tensors = dict(reversed(list(file.tensors.items())))
    return file.bytes()


ACCEPTED, REFUSED = "accepted", "refused"
CASES = [
    *((path.stem, _fixture(path.name), ACCEPTED) for path in sorted(MODELS.glob("*.gkfda"))),
    ("keys reordered, tensors in another order", _reordered, ACCEPTED),
    ("priors valid", _params("greedy_binary_rbf_lean.gkfda", priors=[0.25, 0.75]), ACCEPTED),
    ("priors sum within 1e-6", _params("greedy_binary_rbf_lean.gkfda", priors=[0.5, 0.5000005]), ACCEPTED),
    ("str labels beyond the BMP", _labels("greedy_binary_f32.gkfda", ["\uffff", "\U00010000"],
                                          ["\uffff", "\U00010000"]), ACCEPTED),
    # Repeated keys.
    ("metadata key twice", _meta_text("greedy_binary_rbf_lean.gkfda", lambda t: _twice(t, "lean")), REFUSED),
    ("predictor key twice", _meta_text("greedy_binary_rbf_lean.gkfda", lambda t: _twice(t, "n_bases")), REFUSED),
    ("state key twice", _meta_text("kmp.gkfda", lambda t: _twice(t, "support_")), REFUSED),
    ("header tensor twice", _header_text("greedy_binary_rbf_lean.gkfda", lambda t: _twice(t, "predict.bias")),
     REFUSED),
    ("header __metadata__ key twice", _header_text("greedy_binary_rbf_lean.gkfda", lambda t: _twice(t, "gkfda")),
     REFUSED),
    # The predictor's tensors.
    ("precomputed columns repeat", _columns_repeat, REFUSED),
    ("lower diagonal negative", _lower_diagonal(-1.0), REFUSED),
    ("lower diagonal zero", _lower_diagonal(0.0), REFUSED),
    ("lower on a GreedyKFDA", _extra_tensor("predict.lower", "F64", np.eye(3)), REFUSED),
    # Labels.
    ("int labels [1, 0]", _labels("greedy_binary_rbf_lean.gkfda", [1, 0], [1, 0]), REFUSED),
    ("int labels [0, 1.0]", _labels("greedy_binary_rbf_lean.gkfda", [0, 1.0], [0, 1]), REFUSED),
    ("float labels [1, 1.0]", _labels("greedy_linear.gkfda", [1, 1.0], [1.0, 1.0]), REFUSED),
    ("float labels [-0.0, 0.0]", _labels("greedy_linear.gkfda", [-0.0, 0.0], [-0.0, 0.0]), REFUSED),
    ("float labels equal in float64", _labels("greedy_linear.gkfda", [2**53, 2**53 + 1], [2.0**53, 2.0**53]),
     REFUSED),
    ("bool labels [true, false]", _labels("greedy_poly.gkfda", [True, False], [True, False]), REFUSED),
    ("str labels unsorted", _labels("greedy_binary_f32.gkfda", ["spam", "ham"], ["spam", "ham"]), REFUSED),
    ("str labels equal after NUL", _labels("greedy_binary_f32.gkfda", ["ham", "ham\0"], ["ham", "ham\0"]), REFUSED),
    ("str label lone surrogate",
     _labels("greedy_binary_f32.gkfda", ["spam", "\ud800"], ["spam", "\ud800"]), REFUSED),
    # degree, gamma, coef0 on any kernel.
    ("rbf degree 0", _predictor("greedy_binary_rbf_lean.gkfda", degree=0), REFUSED),
    ("rbf degree 2^31", _predictor("greedy_binary_rbf_lean.gkfda", degree=2**31), REFUSED),
    ("rbf degree 2.0", _predictor("greedy_binary_rbf_lean.gkfda", degree=2.0), REFUSED),
    ("linear degree null", _predictor("greedy_linear.gkfda", degree=None), REFUSED),
    ("precomputed gamma 0", _predictor("greedy_precomputed.gkfda", gamma=0.0), REFUSED),
    ("linear coef0 null", _predictor("greedy_linear.gkfda", coef0=None), REFUSED),
    # params.priors.
    ("priors of one class", _params("greedy_binary_rbf_lean.gkfda", priors=[1.0]), REFUSED),
    ("priors summing to 1.1", _params("greedy_binary_rbf_lean.gkfda", priors=[0.5, 0.6]), REFUSED),
    # Dimensions.
    ("no bases, n_features 2^63+5", _no_bases(2**63 + 5), REFUSED),
    ("no bases, n_features 2^53+1", _no_bases(2**53 + 1), REFUSED),
    ("n_bases 2^62", _predictor("greedy_binary_rbf_lean.gkfda", n_bases=2**62), REFUSED),
    ("n_bases -1", _predictor("greedy_binary_rbf_lean.gkfda", n_bases=-1), REFUSED),
    ("n_outputs 2^64-1", _predictor("kpca.gkfda", n_outputs=2**64 - 1), REFUSED),
    ("n_features 2.0", _predictor("greedy_binary_rbf_lean.gkfda", n_features=2.0), REFUSED),
    ("n_features against the points", _predictor("kmp.gkfda", n_features=1), REFUSED),
    ("n_bases against the tensors", _predictor("nystroem.gkfda", n_bases=1), REFUSED),
    # The metadata and the layout.
    ("task of another estimator", _predictor("kmp.gkfda", task="transformer"), REFUSED),
    ("metadata key unknown", lambda: File("kpca.gkfda").edit(lambda m: m.update(extra=1)).bytes(), REFUSED),
    ("state null", lambda: File("kpca.gkfda").edit(lambda m: m.update(state=None)).bytes(), REFUSED),
    ("tensor of five dimensions", _state_tensor_of_five_dimensions, REFUSED),
    ("tensor entry with another key", _tensor_entry(lambda h: h["predict.bias"].update(extra=1)), REFUSED),
    ("bytes after the data", _trailing, REFUSED),
]


def _cases():
    for name, build, verdict in CASES:
        yield pytest.param(name, build, verdict, id=name)


def _verdict(read):
    try:
        read()
    except ValueError:
        return REFUSED
    return ACCEPTED


@pytest.mark.parametrize(("name", "build", "verdict"), list(_cases()))
def test_python_reader(name, build, verdict, tmp_path):
    path = tmp_path / "model.gkfda"
    path.write_bytes(build())
    assert _verdict(lambda: gkfda.load(path)) == verdict


@pytest.mark.parametrize(("name", "build", "verdict"), list(_cases()))
def test_rust_reader(name, build, verdict):
    data = build()
    assert _verdict(lambda: _core.read_model_bytes(data)) == verdict


def test_the_cases_are_distinct_files():
    files = [build() for _, build, *_ in CASES]
    assert len(set(files)) == len(files)
