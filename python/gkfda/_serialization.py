"""The model file: :func:`save` and :func:`load` (specified in ``docs/model-format.md``).

A file is a safetensors file: tensors, and the metadata as JSON. Loading runs no code the
file names: the metadata is parsed and checked field by field, objects are built only from
gkfda's own types, and every tensor is checked for its dtype, its shape, its finiteness and
its agreement with the others before an estimator is made of them.

The Python state
----------------
``metadata["state"]`` maps attribute names to JSON values, with these encodings (a JSON
object is always one of them, so none is ambiguous):

- ``null``, ``true``/``false``, a string, an integer, a finite number: itself;
- ``{"__float__": "nan" | "inf" | "-inf"}``: a non-finite float;
- ``{"__scalar__": dtype, "value": v}``: a NumPy scalar (``float64``, ``float32``,
  ``int64``, ``int32``, ``bool``);
- a JSON list: a list; ``{"__tuple__": [...]}``: a tuple; ``{"__dict__": {...}}``: a dict
  with string keys;
- ``{"__tensor__": name}``: an array, the tensor ``name``; optional ``"shape"`` (the
  tensor reshaped, in C order), ``"transpose": true`` (then transposed) with ``"order"``
  (``"C"``: a C-contiguous copy of the transpose; ``"F"``: the transpose itself, a
  Fortran-ordered array), and ``"dtype"`` (an integer dtype the ``I64`` tensor is cast to);
- ``{"__array__": {"dtype": "<U5" | "|O", "values": [...]}}``: a 1-D array of strings
  (``|O``: an object array of strings, numbers or nulls);
- ``{"__object__": "Discriminant" | "FeatureMoments" | "_IndexedRows", "fields": {...}}``:
  one of gkfda's records, built from exactly its fields;
- ``{"__estimator__": "GreedyKFDA", "params": {...}, "state": {...}}``: the refitted model
  of a :class:`~gkfda.GreedyKFDACV`.

What the predictor holds (the labels, ``n_features_in_``, the kernel's ``gamma``, the
arrays prediction reads) is taken from it and not repeated in the state; the attributes
an estimator derives from the rest (``GreedyKFDA.coef_``, ``ParsimoniousKFDA.support_``, ...)
are derived again on loading, by the estimator's own code.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import struct
from dataclasses import fields
from types import SimpleNamespace

import numpy as np
import safetensors.numpy
from sklearn.utils.validation import check_is_fitted

from ._kernels import canonical_kernel, kernel_parameters, portable_kernel
from ._model import Discriminant
from .bounds import FeatureMoments
from ._validation import check_full_state
from .estimator import GreedyKFDA, _IndexedRows
from .model_selection import GreedyKFDACV
from .parsimonious import ParsimoniousKFDA
from .pursuit import GreedyNystroem, KernelMatchingPursuit, SparseKernelCCA, SparseKernelPCA

__all__ = ["save", "load", "FORMAT", "FORMAT_VERSION", "HEADER_LIMIT"]

FORMAT = "gkfda"
FORMAT_VERSION = 1
#: The largest header a reader accepts (the metadata and the tensors' table).
HEADER_LIMIT = 16 * 2**20

_FILE_DTYPES = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "I64": np.dtype("<i8"), "BOOL": np.dtype("bool"),
    "U8": np.dtype("u1"),
}
#: The tensor that holds the SHA-256 of the rest of the file (every byte but its own 32): a
#: byte flipped anywhere, header or data, is then an error rather than another valid model.
CHECKSUM = "checksum"
_DTYPE_NAMES = {np.dtype(dtype): name for name, dtype in _FILE_DTYPES.items()}
# Integer arrays of other widths are written as I64 and cast back.
_CAST_DTYPES = ("int8", "int16", "int32", "uint8", "uint16", "uint32")
_SCALARS = {"float64": np.float64, "float32": np.float32, "int64": np.int64, "int32": np.int32, "bool": np.bool_}
_KERNELS = ("rbf", "linear", "poly", "precomputed")
_LINKS = {"classifier": ("logistic", "softmax", "ovr"), "regressor": ("identity",), "transformer": ("identity",)}
_LARGEST_DEGREE = np.iinfo(np.int32).max
# The predictor's kinds of class labels, by NumPy dtype kind.
_KINDS = {"i": "int", "u": "int", "f": "float", "b": "bool", "U": "str", "O": "str"}
# Deeper JSON than any state gkfda writes: a bound on the decoder's recursion.
_LARGEST_DEPTH = 16
# What scikit-learn's set_output leaves on a transformer; prediction (transform) reads it.
# Kept where the estimator has them; absent from files written before they existed.
_OPTIONAL = ("feature_names_in_", "_sklearn_output_config", "solver_")


class _Invalid(Exception):
    """A fault in the file; :func:`load` reports it as a ValueError after the path."""


# -- saving ---------------------------------------------------------------------------


def save(estimator, path, *, lean=False):
    """Write a fitted estimator to ``path`` as a model file (``docs/model-format.md``).

    Parameters
    ----------
    estimator : fitted GreedyKFDA, GreedyKFDACV, ParsimoniousKFDA, KernelMatchingPursuit,
        GreedyNystroem, SparseKernelPCA or SparseKernelCCA
        Its kernel must be named (``"rbf"``, ``"linear"``, ``"poly"``, ``"precomputed"``): a
        file holds no code, so a callable kernel is refused.
    path : str or path-like
    lean : bool, default=False
        ``False`` keeps the whole fitted state: the loaded model also has its sparsity path
        (``decision_path``, ``proba_path``, ``error_path``), ``truncate``, the bounds and
        ``transform``. ``True`` keeps only what ``predict``, ``predict_proba``,
        ``predict_log_proba``, ``decision_function``, ``score`` (and the transformers'
        ``transform``) read; the loaded model's other methods raise a ValueError.

    Parameters written as JSON (``metadata["params"]``): a NumPy ``dtype`` as its name; a
    ``random_state`` that is a ``RandomState`` instance, a ``cv`` splitter or iterable and a
    callable ``scoring`` (:class:`~gkfda.GreedyKFDACV`) as null, so that the loaded model's
    ``get_params()`` has ``None`` there. :class:`~gkfda.GreedyKFDACV` keeps its refitted
    model and ``best_params_``, ``best_score_``, ``best_index_``, ``refit_time_``,
    ``max_k_``, ``gammas_``, ``n_splits_``; not ``cv_results_``.

    Examples
    --------
    >>> import os, tempfile
    >>> from sklearn.datasets import make_moons
    >>> import gkfda
    >>> X, y = make_moons(n_samples=200, noise=0.2, random_state=0)
    >>> model = gkfda.GreedyKFDA(k=20, gamma=2.0).fit(X, y)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "model.safetensors")
    ...     gkfda.save(model, path)
    ...     loaded = gkfda.load(path)
    >>> bool((loaded.predict_proba(X) == model.predict_proba(X)).all())
    True
    """
    spec = _spec_of(estimator)
    check_is_fitted(estimator)
    if not isinstance(lean, (bool, np.bool_)):
        raise ValueError(f"lean: must be True or False, got {lean!r}")
    lean = bool(lean)
    model = estimator.best_estimator_ if isinstance(estimator, GreedyKFDACV) else estimator
    if callable(estimator.kernel) or callable(model.kernel):
        raise ValueError(
            "kernel: a model with a callable kernel cannot be saved: a model file holds no code "
            "(use a named kernel, or kernel='precomputed' and the kernel computed before prediction)"
        )
    portable_kernel(model, model._gamma, "saved to a model file")  # the core's kernels only: a file holds no code
    if not lean:
        check_full_state(model, "save(lean=False)")
    writer = _Writer()
    predictor = spec.predictor(model, writer)
    state = spec.state(estimator, writer, lean)
    metadata = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "gkfda_version": _version(),
        "estimator": type(estimator).__name__,
        "lean": lean,
        "params": _params(estimator),
        "predictor": predictor,
        "state": state,
    }
    text = json.dumps(metadata, allow_nan=False, separators=(",", ":"))
    tensors = {**writer.tensors, CHECKSUM: np.zeros(32, dtype=np.uint8)}
    data = _sealed(safetensors.numpy.save(tensors, metadata={"gkfda": text}))
    with open(path, "wb") as file:
        file.write(data)


def _checksum_range(data, header_size, header):
    """The byte range of the checksum tensor in the file."""
    begin, end = header[CHECKSUM]["data_offsets"]
    return 8 + header_size + begin, 8 + header_size + end


def _sealed(data):
    """``data`` with its checksum tensor holding the SHA-256 of every other byte."""
    (size,) = struct.unpack("<Q", data[:8])
    begin, end = _checksum_range(data, size, json.loads(data[8 : 8 + size]))
    digest = hashlib.sha256(data[:begin] + data[end:]).digest()
    return data[:begin] + digest + data[end:]


def _version():
    from . import __version__

    return __version__


def _spec_of(estimator):
    spec = _SPECS.get(type(estimator).__name__)
    if spec is None or not isinstance(estimator, spec.cls):
        names = ", ".join(_SPECS)
        raise TypeError(f"estimator: must be one of gkfda's {names}; got {type(estimator).__name__}")
    return spec


def _params(estimator):
    """``get_params(deep=False)`` as JSON values."""
    params = {}
    for name, value in estimator.get_params(deep=False).items():
        if name == "dtype":
            value = np.dtype(value).name
        elif isinstance(value, np.random.RandomState) or name in ("cv", "scoring") and not _plain(value):
            value = None  # state of a generator, or code: not data the file can hold
        elif isinstance(value, (np.ndarray, list, tuple)):
            value = np.asarray(value).tolist()
        elif isinstance(value, np.generic):
            value = value.item()
        if not _plain(value):
            raise ValueError(f"{name}: {value!r} cannot be written to a model file (not a JSON value)")
        params[name] = value
    return params


def _plain(value):
    """A JSON value of finite numbers."""
    if value is None or isinstance(value, (bool, str, int)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_plain(item) for item in value)
    if isinstance(value, dict):  # kernel_params of a named kernel: its gamma, degree or coef0
        return all(isinstance(key, str) and _plain(item) for key, item in value.items())
    return False


class _Writer:
    """The tensors of a file, each distinct array written once."""

    def __init__(self):
        self.tensors = {}
        self._index = {}  # (dtype, digest) -> names of the tensors with those bytes

    def add(self, name, array):
        array = np.ascontiguousarray(array)
        if array.dtype not in _DTYPE_NAMES:
            raise ValueError(f"{name}: arrays of {array.dtype} cannot be written to a model file")
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            raise ValueError(f"{name}: the model holds NaN or infinite values and cannot be saved")
        self.tensors[name] = array
        self._index.setdefault(self._key(array), []).append(name)
        return name

    def _key(self, array):
        return array.dtype.str, hashlib.blake2b(array.tobytes(), digest_size=16).digest()

    def _find(self, array):
        for name in self._index.get(self._key(array), ()):
            if self.tensors[name].size == array.size and self.tensors[name].tobytes() == array.tobytes():
                return name
        return None

    def reference(self, array, name):
        """``{"__tensor__": ...}`` of ``array``: a tensor already written with its bytes, or
        a new one named ``name``."""
        reference = {}
        if array.dtype.kind in "iu" and array.dtype != np.int64:
            if array.dtype.name not in _CAST_DTYPES:
                raise ValueError(f"{name}: arrays of {array.dtype} cannot be written to a model file")
            reference["dtype"] = array.dtype.name
            array = array.astype(np.int64)
        stored, transpose, order = array, False, "C"
        if array.ndim == 2 and array.flags.f_contiguous and not array.flags.c_contiguous:
            stored, transpose, order = array.T, True, "F"
        stored = np.ascontiguousarray(stored)
        found = self._find(stored)
        if found is None and stored.ndim == 2 and not transpose:
            # GreedyNystroem's normalization_ is the transpose of its predict.weights.
            found = self._find(np.ascontiguousarray(stored.T))
            if found is not None:
                stored, transpose = np.ascontiguousarray(stored.T), True
        found = found or self.add(name, stored)
        reference["__tensor__"] = found
        if self.tensors[found].shape != stored.shape:
            reference["shape"] = list(stored.shape)
        if transpose:
            reference.update(transpose=True, order=order)
        return reference

    def encode(self, value, name):
        """``value`` as a JSON tree; arrays as tensor references, new ones named ``name``."""
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int) and not isinstance(value, np.generic):
            return int(value)
        if isinstance(value, float) and not isinstance(value, np.generic):
            return value if math.isfinite(value) else {"__float__": repr(value)}
        if isinstance(value, np.generic):
            dtype = value.dtype.name
            if dtype not in _SCALARS:
                raise ValueError(f"{name}: NumPy scalars of {dtype} cannot be written to a model file")
            return {"__scalar__": dtype, "value": self.encode(value.item(), name)}
        if isinstance(value, np.ndarray):
            if value.dtype.kind in "fiub":
                return self.reference(value, name)
            if value.ndim == 1 and value.dtype.kind in "UO":
                items = value.tolist()
                if value.dtype.kind == "O" and not all(_plain(item) for item in items):
                    raise ValueError(f"{name}: object arrays hold strings, numbers or None in a model file")
                return {"__array__": {"dtype": value.dtype.str, "values": items}}
            raise ValueError(f"{name}: arrays of {value.dtype} and {value.ndim} dimensions cannot be saved")
        if isinstance(value, list):
            return [self.encode(item, f"{name}.{i}") for i, item in enumerate(value)]
        if isinstance(value, tuple):
            return {"__tuple__": [self.encode(item, f"{name}.{i}") for i, item in enumerate(value)]}
        if isinstance(value, dict) and all(isinstance(key, str) for key in value):
            return {"__dict__": {key: self.encode(item, f"{name}.{key}") for key, item in value.items()}}
        if type(value) in (Discriminant, FeatureMoments):
            return {"__object__": type(value).__name__,
                    "fields": {f.name: self.encode(getattr(value, f.name), f"{name}.{f.name}") for f in fields(value)}}
        if type(value) is _IndexedRows:
            return {"__object__": "_IndexedRows", "fields": {
                "indices": self.encode(value.indices, f"{name}.indices"),
                "rows": self.encode(value.rows, f"{name}.rows"),
            }}
        raise ValueError(f"{name}: a {type(value).__name__} cannot be written to a model file")

    def state(self, attributes, prefix="state"):
        return {key: self.encode(value, f"{prefix}.{key}") for key, value in attributes.items()}


# -- the estimators -------------------------------------------------------------------


def _classes(classes):
    """The predictor's ``classes``: kind and values."""
    kind = _KINDS.get(classes.dtype.kind)
    values = classes.tolist()
    if kind is None or kind == "str" and not all(isinstance(value, str) for value in values):
        raise ValueError(f"classes_: labels of {classes.dtype} cannot be written to a model file")
    if kind == "float" and not all(math.isfinite(value) for value in values):
        raise ValueError("classes_: a label is not finite")
    return {"kind": kind, "values": values}


def _predictor(writer, model, *, task, dtype, n_bases, weights, bias, link, classes=None, columns=None,
               points=None, lower=None, center=None, slope=None, offset=None):
    """The ``predictor`` metadata, its tensors written."""
    precomputed = model.kernel == "precomputed"
    if precomputed:
        writer.add("predict.columns", np.asarray(columns, dtype=np.int64))
    else:
        writer.add("predict.points", np.asarray(points, dtype=dtype))
    weights = np.asarray(weights, dtype=np.float64)
    for name, array in (("lower", lower), ("center", center), ("weights", weights), ("bias", bias),
                        ("slope", slope), ("offset", offset)):
        if array is not None:
            writer.add(f"predict.{name}", np.asarray(array, dtype=np.float64))
    return {
        "task": task,
        **portable_kernel(model, model._gamma, "saved to a model file"),
        "dtype": np.dtype(dtype).name,
        "n_features": int(model.n_features_in_),
        "n_bases": int(n_bases),
        "n_outputs": int(weights.shape[1]),
        "link": link,
        "classes": None if classes is None else _classes(classes),
    }


def _optional(estimator, attributes):
    for name in _OPTIONAL:
        if name in estimator.__dict__:
            attributes[name] = estimator.__dict__[name]
    return attributes


class _Spec:
    """How one estimator class is written and rebuilt."""

    cls = None
    #: Full state: required attributes, and those derived again on loading (left out).
    full = ()
    derived = ()
    #: Lean state: the attributes prediction reads that the predictor does not hold.
    lean = ()

    def predictor(self, model, writer):
        raise NotImplementedError

    def state(self, estimator, writer, lean):
        names = self.lean if lean else self.full
        return writer.state(_optional(estimator, {name: estimator.__dict__[name] for name in names}))

    def build(self, params, state, tensors, predictor, lean):
        """The estimator from checked ``params``, decoded ``state`` and the predictor."""
        raise NotImplementedError


class _GreedyKFDASpec(_Spec):
    cls = GreedyKFDA
    full = ("classes_", "priors_", "_models", "_feature_moments", "_fitted_k", "_union_support", "_union_labels",
            "_support_points")
    lean = ("classes_",)

    def predictor(self, model, writer):
        n_classes = len(model.classes_)
        link = "logistic" if n_classes == 2 else "softmax" if model._shared_multiclass() else "ovr"
        weights = model._expansion_weights
        return _predictor(
            writer, model, task="classifier", dtype=model._dtype(), n_bases=len(weights), weights=weights,
            bias=model._expansion_bias, link=link, classes=model.classes_,
            columns=model.__dict__.get("_union_support"), points=model.__dict__.get("_union_points"),
        )

    def build(self, params, state, tensors, predictor, lean):
        model = GreedyKFDA(**params)
        _set_predicted(model, predictor)
        model.__dict__.update(state)
        if not lean:
            _check_greedy_state(model, predictor, tensors)
            model._set_public_attributes()
        else:
            model._lean_link = predictor["link"]
            model._loaded_lean = True
            if model.kernel == "precomputed":
                model._union_support = tensors["predict.columns"]
        # Prediction reads the predictor's tensors, as every other reader of the file does.
        if model.kernel != "precomputed":
            model._union_points = tensors["predict.points"]
        model._expansion_weights = tensors["predict.weights"]
        model._expansion_bias = tensors["predict.bias"]
        return model


class _GreedyKFDACVSpec(_Spec):
    cls = GreedyKFDACV
    full = ("classes_", "best_estimator_", "best_params_", "best_score_", "best_index_", "refit_time_", "max_k_",
            "gammas_", "n_splits_")
    lean = ("classes_", "best_estimator_")

    def predictor(self, model, writer):
        return _SPECS["GreedyKFDA"].predictor(model, writer)

    def state(self, estimator, writer, lean):
        attributes = _optional(estimator, {name: estimator.__dict__[name] for name in (self.lean if lean else self.full)})
        best = attributes.pop("best_estimator_")
        state = writer.state(attributes)
        state["best_estimator_"] = {
            "__estimator__": "GreedyKFDA",
            "params": _params(best),
            "state": _SPECS["GreedyKFDA"].state(best, writer, lean),
        }
        return state

    def build(self, params, state, tensors, predictor, lean):
        search = GreedyKFDACV(**params)
        search.n_features_in_ = predictor["n_features"]
        search.__dict__.update(state)
        return search


class _ParsimoniousSpec(_Spec):
    cls = ParsimoniousKFDA
    full = ("classes_", "priors_", "_problems", "_union")
    derived = ("support_", "support_vectors_", "dual_coef_", "n_iter_", "objective_", "intercept_", "theta_")
    lean = ("classes_", "_union")

    def predictor(self, model, writer):
        return _predictor(
            writer, model, task="classifier", dtype=np.float64, n_bases=len(model._union), weights=model._weights,
            bias=model._bias, link="logistic" if len(model.classes_) == 2 else "ovr", classes=model.classes_,
            columns=model._union, points=model._union_points, slope=model._slope, offset=model._offset,
        )

    def build(self, params, state, tensors, predictor, lean):
        model = ParsimoniousKFDA(**params)
        _set_predicted(model, predictor)
        model.__dict__.update(state)
        model._union_points = None if model.kernel == "precomputed" else tensors["predict.points"]
        model._weights, model._bias = tensors["predict.weights"], tensors["predict.bias"]
        model._slope, model._offset = tensors["predict.slope"], tensors["predict.offset"]
        limit = predictor["n_features"] if model.kernel == "precomputed" else None
        _indices(model._union, "state._union", predictor["n_bases"], limit, increasing=True)
        if model.kernel == "precomputed" and not np.array_equal(model._union, tensors["predict.columns"]):
            raise _Invalid("state._union: differs from predict.columns")
        if lean:
            model._loaded_lean = True
        else:
            _check_parsimonious_state(model, predictor)
            # The training rows of the retained samples, which _set_public_attributes reads.
            rows = _IndexedRows.__new__(_IndexedRows)
            rows.indices = model._union
            rows.rows = model._union_points
            model._set_public_attributes(rows)
        return model


class _PursuitSpec(_Spec):
    """The matching-pursuit family: points (or columns) from ``support_``."""

    support = "support_"
    points = "support_vectors_"

    def _points(self, model):
        return model.__dict__.get(self.points)

    def _set_points(self, model, tensors, predictor):
        if self.points in model.__dict__:
            return
        # A lean file: the bases' rows are the predictor's points (in the model's dtype,
        # which prediction converts them to); a precomputed kernel keeps none.
        if model.kernel == "precomputed":
            model.__dict__[self.points] = np.empty((predictor["n_bases"], 0))
        else:
            model.__dict__[self.points] = tensors["predict.points"]

    def build(self, params, state, tensors, predictor, lean):
        model = self.cls(**params)
        _set_predicted(model, predictor)
        model.__dict__.update(state)
        self._set_points(model, tensors, predictor)
        self.finish(model, tensors, predictor)
        if lean:
            model._loaded_lean = True
        _check_pursuit_state(model, self, predictor, tensors, lean)
        return model


class _MatchingPursuitSpec(_PursuitSpec):
    cls = KernelMatchingPursuit
    full = ("support_", "support_vectors_", "k_", "pursuit_scores_", "stopped_early_", "n_samples_fit_")
    lean = ("support_",)

    def predictor(self, model, writer):
        return _predictor(
            writer, model, task="regressor", dtype=model._dtype(), n_bases=len(model.support_),
            weights=np.asarray(model.coef_).reshape(-1, 1), bias=np.array([model.intercept_], dtype=np.float64),
            link="identity", columns=model.support_, points=model.support_vectors_,
        )

    def finish(self, model, tensors, predictor):
        model.coef_ = tensors["predict.weights"].reshape(-1)
        model.intercept_ = float(tensors["predict.bias"][0])


class _PCASpec(_PursuitSpec):
    cls = SparseKernelPCA
    full = ("support_", "support_vectors_", "n_components_", "pursuit_scores_", "explained_variance_",
            "stopped_early_", "_trace", "_largest_self_kernel", "n_samples_fit_")
    lean = ("support_",)

    def predictor(self, model, writer):
        k = len(model.support_)
        return _predictor(
            writer, model, task="transformer", dtype=model._dtype(), n_bases=k, weights=model.rotation_,
            bias=np.zeros(k), link="identity", columns=model.support_, points=model.support_vectors_,
            lower=model._factor,
        )

    def finish(self, model, tensors, predictor):
        model._factor, model.rotation_ = tensors["predict.lower"], tensors["predict.weights"]


class _CCASpec(_PursuitSpec):
    cls = SparseKernelCCA
    points = "x_support_vectors_"
    full = ("support_", "x_support_vectors_", "y_support_vectors_", "y_weights_", "correlations_", "k_",
            "pursuit_scores_", "stopped_early_", "n_samples_fit_", "n_features_y_", "_y_gamma", "_y_factor",
            "_y_mean")
    # transform(X, y) and score read the second view too.
    lean = ("support_", "y_support_vectors_", "y_weights_", "n_features_y_", "_y_gamma", "_y_factor", "_y_mean")

    def predictor(self, model, writer):
        return _predictor(
            writer, model, task="transformer", dtype=model._dtype(), n_bases=len(model.support_),
            weights=model.x_weights_, bias=np.zeros(model.x_weights_.shape[1]), link="identity",
            columns=model.support_, points=model.x_support_vectors_, lower=model._x_factor, center=model._x_mean,
        )

    def finish(self, model, tensors, predictor):
        model._x_factor, model._x_mean = tensors["predict.lower"], tensors["predict.center"]
        model.x_weights_ = tensors["predict.weights"]
        model._x_gamma = model._gamma


class _NystroemSpec(_PursuitSpec):
    cls = GreedyNystroem
    support = "component_indices_"
    points = "components_"
    full = ("components_", "component_indices_", "n_components_", "stopped_early_", "normalization_")
    lean = ("component_indices_",)

    def predictor(self, model, writer):
        k = len(model.component_indices_)
        return _predictor(
            writer, model, task="transformer", dtype=model._dtype(), n_bases=k, weights=model.normalization_.T,
            bias=np.zeros(k), link="identity", columns=model.component_indices_, points=model.components_,
        )

    def _points(self, model):
        return None if model.kernel == "precomputed" else model.components_

    def finish(self, model, tensors, predictor):
        if "normalization_" not in model.__dict__:
            model.normalization_ = np.ascontiguousarray(tensors["predict.weights"].T)


_SPECS = {spec.cls.__name__: spec for spec in (
    _GreedyKFDASpec(), _GreedyKFDACVSpec(), _ParsimoniousSpec(), _MatchingPursuitSpec(), _NystroemSpec(),
    _PCASpec(), _CCASpec(),
)}


def _set_predicted(estimator, predictor):
    """What the predictor holds for the estimator: its inputs' width and the kernel's gamma."""
    estimator.n_features_in_ = predictor["n_features"]
    estimator._gamma = predictor["gamma"]


# -- loading --------------------------------------------------------------------------


def load(path):
    """The estimator :func:`save` wrote to ``path``.

    Nothing in the file is run: its header (at most 16 MiB) and metadata are parsed as JSON
    and checked field by field, objects are built only from gkfda's own types, and every
    tensor's dtype, shape and values (finite; indices in range) are checked against the
    metadata and each other. Any fault is a ``ValueError`` whose message starts with
    ``path``; a file that cannot be opened raises the ``OSError`` of ``open``.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> import gkfda
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(100, 3))
    >>> pca = gkfda.SparseKernelPCA(n_components=5, gamma=0.5).fit(X)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "pca.safetensors")
    ...     gkfda.save(pca, path, lean=True)
    ...     lean = gkfda.load(path)
    ...     with open(path, "r+b") as file:  # damage the header's length
    ...         _ = file.write(b"\\xff" * 8)
    ...     try:
    ...         gkfda.load(path)
    ...     except ValueError as error:
    ...         message = str(error)
    >>> bool((lean.transform(X) == pca.transform(X)).all())
    True
    >>> message.startswith(path), "16 MiB" in message
    (True, True)
    >>> lean.bound_path()
    Traceback (most recent call last):
    ...
    ValueError: bound_path: this SparseKernelPCA was loaded from a lean model file, ...
    """
    with open(path, "rb") as file:
        data = file.read()
    try:
        return _load(data)
    except _Invalid as error:
        raise ValueError(f"{os.fspath(path)}: {error}") from None


def _load(data):
    tensors, metadata = _read(data)
    meta = _checked_metadata(metadata)
    spec = _SPECS[meta["estimator"]]
    predictor = _checked_predictor(meta, tensors)
    lean = meta["lean"]
    decoder = _Decoder(tensors)
    if spec.cls is GreedyKFDACV:
        state = _checked_keys(meta["state"], "state", spec.lean if lean else spec.full)
        nested = _nested_estimator(state.pop("best_estimator_"))
        best_params = _checked_params(GreedyKFDA, nested["params"], "state.best_estimator_.params")
        _check_params_agree(best_params, predictor, "state.best_estimator_.params")
        best = _build(_SPECS["GreedyKFDA"], best_params, nested["state"], decoder, predictor, lean,
                      "state.best_estimator_.state")
        params = _checked_params(GreedyKFDACV, meta["params"], "params")
        for name in ("kernel", "degree", "coef0", "dtype", "multiclass", "criterion", "deflation", "stages", "solver",
                     "factor_rank", "factor_pool"):
            if params[name] != best_params[name]:
                raise _Invalid(f"params: {name} is {params[name]!r} but the refitted model's is {best_params[name]!r}")
        decoded = decoder.decode_state(state, "state")
        _check_classes(decoded.get("classes_"), predictor, "state")
        estimator = spec.build(params, decoded, tensors, predictor, lean)
        estimator.best_estimator_ = best
        _check_optional(estimator)
        if "solver_" in estimator.__dict__ and estimator.solver_ != best.__dict__.get("solver_"):
            raise _Invalid(f"state.solver_: is {estimator.solver_!r} but the refitted model's is "
                           f"{best.__dict__.get('solver_')!r}")
        if not lean:
            _check_search_state(estimator)
    else:
        params = _checked_params(spec.cls, meta["params"], "params")
        _check_params_agree(params, predictor, "params")
        estimator = _build(spec, params, meta["state"], decoder, predictor, lean, "state")
    unused = set(tensors) - decoder.used - set(predictor["tensors"]) - {CHECKSUM}
    if unused:
        raise _Invalid(f"tensors {sorted(unused)} are not referenced by the metadata")
    return estimator


def _build(spec, params, state, decoder, predictor, lean, where):
    names = spec.lean if lean else spec.full
    state = _checked_keys(state, where, names)
    decoded = decoder.decode_state(state, where)
    _check_classes(decoded.get("classes_"), predictor, where)
    try:
        estimator = spec.build(params, decoded, decoder.tensors, predictor, lean)
    except _Invalid:
        raise
    except (ValueError, ArithmeticError, IndexError, TypeError, KeyError, AttributeError) as error:
        # A safety net: the checks above should have caught any state that fails here.
        raise _Invalid(f"{where}: the model's state is inconsistent: {error}") from None
    _check_optional(estimator)
    return estimator


def _checked_keys(state, where, names):
    if not isinstance(state, dict):
        raise _Invalid(f"{where}: must be a JSON object")
    state = dict(state)
    missing = [name for name in names if name not in state]
    extra = [name for name in state if name not in names and name not in _OPTIONAL]
    if missing or extra:
        raise _Invalid(f"{where}: " + "; ".join(
            part for part in (missing and f"missing {missing}", extra and f"unknown {extra}") if part))
    return state


def _nested_estimator(node):
    if (not isinstance(node, dict) or set(node) != {"__estimator__", "params", "state"}
            or node["__estimator__"] != "GreedyKFDA"):
        raise _Invalid('state.best_estimator_: must be {"__estimator__": "GreedyKFDA", "params", "state"}')
    return node


# -- the file -------------------------------------------------------------------------


def _read(data):
    """``(tensors, metadata)`` of the bytes of a file, its layout checked first."""
    if len(data) < 8:
        raise _Invalid(f"not a model file: {len(data)} bytes, shorter than the 8 of the header's length")
    (size,) = struct.unpack("<Q", data[:8])
    if size > HEADER_LIMIT:
        raise _Invalid(f"not a model file: its header would be {size} bytes, more than the limit of 16 MiB")
    if 8 + size > len(data):
        raise _Invalid(f"truncated: the header needs {size} bytes but the file has {len(data) - 8} after its length")
    header = _parse_json(data[8 : 8 + size], "the header")
    if not isinstance(header, dict):
        raise _Invalid("the header: must be a JSON object")
    extra = header.pop("__metadata__", None)
    if not isinstance(extra, dict) or set(extra) != {"gkfda"} or not isinstance(extra["gkfda"], str):
        raise _Invalid('the header: its __metadata__ must hold one string, "gkfda" (not a gkfda model file?)')
    _check_layout(header, len(data) - 8 - size)
    entry = header.get(CHECKSUM)
    if entry is None or entry["dtype"] != "U8" or entry["shape"] != [32]:
        raise _Invalid(f"the header: has no {CHECKSUM} tensor of 32 bytes (U8)")
    begin, end = _checksum_range(data, size, header)
    if hashlib.sha256(data[:begin] + data[end:]).digest() != data[begin:end]:
        raise _Invalid("corrupted: its bytes do not match its SHA-256 checksum")
    metadata = _parse_json(extra["gkfda"], "the metadata")
    try:
        tensors = safetensors.numpy.load(data)
    except Exception as error:
        raise _Invalid(f"safetensors cannot read the tensors: {error}") from None
    if set(tensors) != set(header):
        raise _Invalid("safetensors read other tensors than the header lists")
    for name, tensor in tensors.items():
        if tensor.dtype.kind == "f" and not np.isfinite(tensor).all():
            raise _Invalid(f"tensor {name}: holds NaN or infinite values")
    return tensors, metadata


def _check_layout(header, data_size):
    """The tensors' table: known dtypes, shapes that match their byte ranges, and ranges
    that cover the data exactly, in order."""
    ranges = []
    for name, entry in header.items():
        if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
            raise _Invalid(f"tensor {name}: its entry must have dtype, shape and data_offsets")
        dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
        if not _member(dtype, _FILE_DTYPES):
            raise _Invalid(f"tensor {name}: dtype {dtype!r} is not one of {', '.join(_FILE_DTYPES)}")
        if not isinstance(shape, list) or len(shape) > 4 or not all(_is_int(n) and n >= 0 for n in shape):
            raise _Invalid(f"tensor {name}: shape {shape!r} is not a list of at most 4 sizes")
        if not isinstance(offsets, list) or len(offsets) != 2 or not all(_is_int(n) and n >= 0 for n in offsets):
            raise _Invalid(f"tensor {name}: data_offsets {offsets!r} is not a pair of offsets")
        if offsets[1] - offsets[0] != math.prod(shape) * _FILE_DTYPES[dtype].itemsize:
            raise _Invalid(f"tensor {name}: shape {shape} of {dtype} does not fit its {offsets[1] - offsets[0]} bytes")
        ranges.append((offsets[0], offsets[1], name))
    end = 0
    for begin, stop, name in sorted(ranges):
        if begin != end:
            raise _Invalid(f"tensor {name}: starts at byte {begin} of the data, expected {end}")
        end = stop
    if end != data_size:
        raise _Invalid(f"the tensors take {end} bytes but the file holds {data_size} after the header")


def _parse_json(raw, what):
    try:
        text = raw if isinstance(raw, str) else bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise _Invalid(f"{what}: is not UTF-8") from None
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except _Invalid:
        raise
    except (ValueError, RecursionError) as error:
        raise _Invalid(f"{what}: is not valid JSON ({type(error).__name__}: {str(error)[:200]})") from None


def _unique_keys(pairs):
    result = {}
    for key, value in pairs:
        if key in result:
            raise _Invalid(f"JSON: the key {key!r} appears twice in an object")
        result[key] = value
    return result


def _no_constant(name):
    raise _Invalid(f"JSON: {name} is not a JSON number")


# -- checks of the metadata -----------------------------------------------------------


def _member(value, options):
    """``value in options`` for a JSON value, which may be unhashable."""
    return isinstance(value, str) and value in options


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _checked_metadata(metadata):
    keys = {"format", "format_version", "gkfda_version", "estimator", "lean", "params", "predictor", "state"}
    if not isinstance(metadata, dict):
        raise _Invalid("the metadata: must be a JSON object")
    if metadata.get("format") != FORMAT:
        raise _Invalid(f"format: {metadata.get('format')!r}, not {FORMAT!r} (not a gkfda model file)")
    version = metadata.get("format_version")
    if not _is_int(version) or version != FORMAT_VERSION:
        raise _Invalid(f"format_version: {version!r}; this gkfda reads version {FORMAT_VERSION}")
    if set(metadata) != keys:
        raise _Invalid(f"the metadata: has keys {sorted(metadata)}, expected {sorted(keys)}")
    if not isinstance(metadata["gkfda_version"], str):
        raise _Invalid("gkfda_version: must be a string")
    if not _member(metadata["estimator"], _SPECS):
        raise _Invalid(f"estimator: {metadata['estimator']!r} is not one of {', '.join(_SPECS)}")
    if not isinstance(metadata["lean"], bool):
        raise _Invalid("lean: must be true or false")
    for name in ("params", "predictor", "state"):
        if not isinstance(metadata[name], dict):
            raise _Invalid(f"{name}: must be a JSON object")
    return metadata


def _checked_params(cls, params, where):
    """``params`` as the constructor takes them, checked by the estimator's own rules."""
    if not isinstance(params, dict):
        raise _Invalid(f"{where}: must be a JSON object")
    defaults = cls().get_params(deep=False)
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        raise _Invalid(f"{where}: has {unknown}, which {cls.__name__} does not take (expected {sorted(defaults)})")
    # A parameter added after the file was written (absent from it) takes its default, which
    # is the behaviour the estimator had before the parameter existed.
    params = {**{name: value for name, value in defaults.items() if _plain(value)}, **params}
    missing = sorted(set(defaults) - set(params))
    if missing:
        raise _Invalid(f"{where}: has no {missing}")
    for name, value in params.items():
        if not _plain(value) or _depth(value) > 2:
            raise _Invalid(f"{where}.{name}: {value!r} is not a finite number, string, null or list of them")
    try:
        cls(**params)._validate_params()
    except ValueError as error:
        raise _Invalid(f"{where}: {error}") from None
    return params


def _depth(value):
    return 1 + max(map(_depth, value), default=0) if isinstance(value, list) else 0


def _check_params_agree(params, predictor, where):
    if "kernel" in params:  # as the estimator resolves them: aliases, None for the kernel's default
        resolved = {"kernel": canonical_kernel(params["kernel"]), **kernel_parameters(SimpleNamespace(**params), None)}
        for name in ("kernel", "degree", "coef0"):
            if resolved[name] != predictor[name]:
                raise _Invalid(f"predictor: {name} is {predictor[name]!r} but {where}.{name} is {params[name]!r}")
    dtype = np.dtype(params.get("dtype", "float64")).name
    if dtype != predictor["dtype"]:
        raise _Invalid(f"predictor: dtype is {predictor['dtype']!r} but {where}.dtype is {dtype!r}")
    if isinstance(params.get("gamma"), (int, float)) and float(params["gamma"]) != predictor["gamma"]:
        raise _Invalid(f"predictor: gamma is {predictor['gamma']!r} but {where}.gamma is {params['gamma']!r}")


_PREDICTOR_KEYS = ("task", "kernel", "gamma", "degree", "coef0", "dtype", "n_features", "n_bases", "n_outputs",
                   "link", "classes")
# What each estimator's predictor is: task, links, and the optional tensors it has.
_PREDICTORS = {
    "GreedyKFDA": ("classifier", ("logistic", "softmax", "ovr"), ()),
    "GreedyKFDACV": ("classifier", ("logistic", "softmax", "ovr"), ()),
    "ParsimoniousKFDA": ("classifier", ("logistic", "ovr"), ("slope", "offset")),
    "KernelMatchingPursuit": ("regressor", ("identity",), ()),
    "GreedyNystroem": ("transformer", ("identity",), ()),
    "SparseKernelPCA": ("transformer", ("identity",), ("lower",)),
    "SparseKernelCCA": ("transformer", ("identity",), ("lower", "center")),
}


def _checked_predictor(meta, tensors):
    """The predictor's metadata checked, with ``"tensors"``: the names of its tensors."""
    predictor = meta["predictor"]
    if set(predictor) != set(_PREDICTOR_KEYS):
        raise _Invalid(f"predictor: has keys {sorted(predictor)}, expected {sorted(_PREDICTOR_KEYS)}")
    task, links, extra = _PREDICTORS[meta["estimator"]]
    if predictor["task"] != task:
        raise _Invalid(f"predictor.task: {predictor['task']!r}; a {meta['estimator']} is a {task}")
    if predictor["link"] not in links:
        raise _Invalid(f"predictor.link: {predictor['link']!r} is not one of {links} of a {meta['estimator']}")
    if predictor["kernel"] not in _KERNELS:
        raise _Invalid(f"predictor.kernel: {predictor['kernel']!r} is not one of {_KERNELS}")
    if not _is_number(predictor["gamma"]) or not predictor["gamma"] > 0:
        raise _Invalid(f"predictor.gamma: {predictor['gamma']!r} is not a positive finite number")
    predictor["gamma"] = float(predictor["gamma"])
    if not _is_int(predictor["degree"]) or not 1 <= predictor["degree"] <= _LARGEST_DEGREE:
        raise _Invalid(f"predictor.degree: {predictor['degree']!r} is not an integer from 1 to {_LARGEST_DEGREE}")
    if not _is_number(predictor["coef0"]):
        raise _Invalid(f"predictor.coef0: {predictor['coef0']!r} is not a finite number")
    predictor["coef0"] = float(predictor["coef0"])
    if predictor["dtype"] not in ("float64", "float32"):
        raise _Invalid(f"predictor.dtype: {predictor['dtype']!r} is not float64 or float32")
    for name, smallest in (("n_features", 1), ("n_bases", 0), ("n_outputs", 1)):
        if not _is_int(predictor[name]) or not smallest <= predictor[name] <= 2**53:
            raise _Invalid(f"predictor.{name}: {predictor[name]!r} is not an integer from {smallest} to 2**53")
    n_features, k, outputs = predictor["n_features"], predictor["n_bases"], predictor["n_outputs"]
    precomputed = predictor["kernel"] == "precomputed"
    shapes = {
        "predict.columns" if precomputed else "predict.points": (
            ("I64", (k,)) if precomputed else ("F32" if predictor["dtype"] == "float32" else "F64", (k, n_features))),
        "predict.weights": ("F64", (k, outputs)),
        "predict.bias": ("F64", (outputs,)),
    }
    optional = {"lower": (k, k), "center": (k,), "slope": (outputs,), "offset": (outputs,)}
    shapes.update({f"predict.{name}": ("F64", optional[name]) for name in extra})
    for name, (dtype, shape) in shapes.items():
        if name not in tensors:
            raise _Invalid(f"tensor {name}: missing")
        tensor = tensors[name]
        if _DTYPE_NAMES.get(tensor.dtype) != dtype or tensor.shape != shape:
            raise _Invalid(f"tensor {name}: is {_DTYPE_NAMES.get(tensor.dtype)} of shape {list(tensor.shape)}, "
                           f"expected {dtype} of shape {list(shape)}")
    for name in tensors:
        if name.startswith("predict.") and name not in shapes:
            raise _Invalid(f"tensor {name}: not part of a {meta['estimator']}'s predictor")
    if precomputed:
        columns = tensors["predict.columns"]
        if k and (columns.min() < 0 or columns.max() >= n_features):
            raise _Invalid(f"tensor predict.columns: indices must be in [0, {n_features})")
        if len(np.unique(columns)) != k:
            raise _Invalid("tensor predict.columns: indices repeat")
    if "lower" in extra:
        lower = tensors["predict.lower"]
        if np.triu(lower, 1).any() or not (np.diagonal(lower) > 0).all():
            raise _Invalid("tensor predict.lower: not lower triangular with a positive diagonal")
    link, classes = predictor["link"], predictor["classes"]
    if task == "classifier":
        predictor["classes"] = _checked_classes(classes)
        n_classes = len(predictor["classes"])
        expected = 1 if link == "logistic" else n_classes
        if (link == "logistic") != (n_classes == 2) or outputs != expected:
            raise _Invalid(f"predictor: {n_classes} classes with link {link!r} and {outputs} outputs")
    elif classes is not None:
        raise _Invalid(f"predictor.classes: must be null for a {task}")
    if task == "regressor" and outputs != 1:
        raise _Invalid("predictor.n_outputs: a regressor has one output")
    predictor["tensors"] = list(shapes)
    return predictor


def _checked_classes(classes):
    """The class labels as a NumPy array of their kind."""
    if not isinstance(classes, dict) or set(classes) != {"kind", "values"} or not isinstance(classes["values"], list):
        raise _Invalid('predictor.classes: must be {"kind", "values"}')
    kind, values = classes["kind"], classes["values"]
    checks = {"int": _is_int, "float": _is_number, "bool": lambda v: isinstance(v, bool),
              "str": lambda v: isinstance(v, str)}
    check = checks[kind] if _member(kind, checks) else None
    if check is None:
        raise _Invalid(f"predictor.classes.kind: {kind!r} is not int, float, bool or str")
    if len(values) < 2 or not all(check(value) for value in values):
        raise _Invalid(f"predictor.classes.values: must be at least two labels of kind {kind}")
    if kind == "int" and not all(-(2**63) <= value < 2**63 for value in values):
        raise _Invalid("predictor.classes.values: an int label is beyond 64 bits")
    array = np.array(values, dtype={"int": np.int64, "float": np.float64, "bool": bool, "str": str}[kind])
    if not (array[1:] > array[:-1]).all():
        raise _Invalid("predictor.classes.values: must be distinct and increasing (as np.unique gives them)")
    return array


def _check_classes(classes, predictor, where):
    """The state's ``classes_`` (which keeps the labels' exact dtype) against the predictor's."""
    if predictor["task"] != "classifier":
        return
    expected = predictor["classes"]
    if (not isinstance(classes, np.ndarray) or classes.shape != expected.shape
            or _KINDS.get(classes.dtype.kind) != _KINDS[expected.dtype.kind]
            or classes.tolist() != expected.tolist()):
        raise _Invalid(f"{where}.classes_: differs from predictor.classes")


def _check_optional(estimator):
    names = estimator.__dict__.get("feature_names_in_")
    if names is not None and not (
        isinstance(names, np.ndarray) and names.shape == (estimator.n_features_in_,)
        and all(isinstance(name, str) for name in names.tolist())
    ):
        raise _Invalid("state.feature_names_in_: must be n_features strings")
    config = estimator.__dict__.get("_sklearn_output_config")
    if config is not None and not (
        isinstance(config, dict) and all(isinstance(value, str) for value in config.values())
    ):
        raise _Invalid("state._sklearn_output_config: must map strings to strings")
    solver = estimator.__dict__.get("solver_")
    if solver is not None and solver not in ("dense", "factored"):
        raise _Invalid(f"state.solver_: must be 'dense' or 'factored', got {solver!r}")


# -- decoding the state ---------------------------------------------------------------


class _Decoder:
    """The state's JSON tree as Python values, arrays from the tensors."""

    _OBJECTS = {
        "Discriminant": [f.name for f in fields(Discriminant)],
        "FeatureMoments": [f.name for f in fields(FeatureMoments)],
        "_IndexedRows": ["indices", "rows"],
    }

    def __init__(self, tensors):
        self.tensors = tensors
        self.used = set()

    def decode_state(self, state, where):
        return {name: self.decode(value, f"{where}.{name}", 0) for name, value in state.items()}

    def decode(self, node, where, depth):
        if depth > _LARGEST_DEPTH:
            raise _Invalid(f"{where}: nested too deeply")
        if node is None or isinstance(node, (bool, str, int)):
            return node
        if isinstance(node, float):
            if not math.isfinite(node):
                raise _Invalid(f"{where}: a number out of range")
            return node
        if isinstance(node, list):
            return [self.decode(item, f"{where}.{i}", depth + 1) for i, item in enumerate(node)]
        markers = [key for key in node if key.startswith("__")]
        if len(markers) != 1:
            raise _Invalid(f"{where}: an object must have one of the state's encodings")
        marker = markers[0]
        if marker == "__tensor__":
            return self.tensor(node, where)
        if marker == "__float__":
            if set(node) != {"__float__"} or node["__float__"] not in ("nan", "inf", "-inf"):
                raise _Invalid(f"{where}: __float__ must be nan, inf or -inf")
            return float(node["__float__"])
        if marker == "__scalar__":
            if set(node) != {"__scalar__", "value"} or not _member(node["__scalar__"], _SCALARS):
                raise _Invalid(f"{where}: __scalar__ must name one of {list(_SCALARS)}, with a value")
            value = self.decode(node["value"], where, depth + 1)
            if not isinstance(value, (bool, int, float)):
                raise _Invalid(f"{where}: a scalar's value must be a number")
            scalar = _SCALARS[node["__scalar__"]]
            if scalar in (np.int64, np.int32) and not (_is_int(value) and np.iinfo(scalar).min <= value
                                                       <= np.iinfo(scalar).max):
                raise _Invalid(f"{where}: {value!r} is not a {node['__scalar__']}")
            return scalar(value)
        if marker == "__tuple__":
            if set(node) != {"__tuple__"} or not isinstance(node["__tuple__"], list):
                raise _Invalid(f"{where}: __tuple__ must be a list")
            return tuple(self.decode(node["__tuple__"], where, depth + 1))
        if marker == "__dict__":
            if set(node) != {"__dict__"} or not isinstance(node["__dict__"], dict):
                raise _Invalid(f"{where}: __dict__ must be an object")
            return {key: self.decode(value, f"{where}.{key}", depth + 1) for key, value in node["__dict__"].items()}
        if marker == "__array__":
            return self.array(node, where)
        if marker == "__object__":
            return self.record(node, where, depth)
        raise _Invalid(f"{where}: {marker} is not one of the state's encodings")

    def tensor(self, node, where):
        allowed = {"__tensor__", "shape", "transpose", "order", "dtype"}
        name = node["__tensor__"]
        if not set(node) <= allowed or not isinstance(name, str):
            raise _Invalid(f"{where}: a tensor reference has __tensor__ and optionally {sorted(allowed - {'__tensor__'})}")
        if name not in self.tensors:
            raise _Invalid(f"{where}: tensor {name!r} is missing")
        self.used.add(name)
        value = self.tensors[name]
        if "shape" in node:
            shape = node["shape"]
            if (not isinstance(shape, list) or len(shape) > 4 or not all(_is_int(n) and n >= 0 for n in shape)
                    or math.prod(shape) != value.size):
                raise _Invalid(f"{where}: shape {shape!r} does not fit tensor {name} of shape {list(value.shape)}")
            value = value.reshape(shape)
        if "transpose" in node:
            if node["transpose"] is not True or node.get("order") not in ("C", "F") or value.ndim != 2:
                raise _Invalid(f"{where}: transpose must be true, with order C or F, on a matrix")
            value = value.T if node["order"] == "F" else np.ascontiguousarray(value.T)
        elif "order" in node:
            raise _Invalid(f"{where}: order is only for a transpose")
        if "dtype" in node:
            dtype = node["dtype"]
            if dtype not in _CAST_DTYPES or value.dtype != np.int64:
                raise _Invalid(f"{where}: dtype {dtype!r} is not an integer type an I64 tensor is cast to")
            limits = np.iinfo(dtype)
            if value.size and (value.min() < limits.min or value.max() > limits.max):
                raise _Invalid(f"{where}: values beyond the range of {dtype}")
            value = value.astype(dtype)
        return value

    def array(self, node, where):
        body = node["__array__"]
        if set(node) != {"__array__"} or not isinstance(body, dict) or set(body) != {"dtype", "values"}:
            raise _Invalid(f"{where}: __array__ must hold dtype and values")
        dtype, values = body["dtype"], body["values"]
        if not isinstance(values, list):
            raise _Invalid(f"{where}: __array__ values must be a list")
        if dtype == "|O":
            if not all(item is None or isinstance(item, str) or _is_number(item) for item in values):
                raise _Invalid(f"{where}: an object array holds strings, numbers or nulls")
            array = np.empty(len(values), dtype=object)
            array[:] = values
            return array
        if not (isinstance(dtype, str) and dtype.startswith("<U") and dtype[2:].isdigit()
                and 0 < int(dtype[2:]) <= 2**16):
            raise _Invalid(f"{where}: __array__ dtype {dtype!r} is not <U(width) or |O")
        if not all(isinstance(item, str) and len(item) <= int(dtype[2:]) for item in values):
            raise _Invalid(f"{where}: the values must be strings of at most {dtype[2:]} characters")
        return np.array(values, dtype=dtype).reshape(len(values))

    def record(self, node, where, depth):
        name, body = node["__object__"], node.get("fields")
        if set(node) != {"__object__", "fields"} or not _member(name, self._OBJECTS) or not isinstance(body, dict):
            raise _Invalid(f"{where}: __object__ must be one of {list(self._OBJECTS)}, with its fields")
        if sorted(body) != sorted(self._OBJECTS[name]):
            raise _Invalid(f"{where}: a {name} has the fields {self._OBJECTS[name]}, got {sorted(body)}")
        values = {key: self.decode(value, f"{where}.{key}", depth + 1) for key, value in body.items()}
        if name == "_IndexedRows":
            rows = _IndexedRows.__new__(_IndexedRows)
            rows.indices, rows.rows = values["indices"], values["rows"]
            return rows
        return (Discriminant if name == "Discriminant" else FeatureMoments)(**values)


# -- consistency of the state ---------------------------------------------------------


def _array(value, where, dtypes, shape):
    """``value`` is an array of one of ``dtypes`` and of ``shape`` (``None``: any size)."""
    if not isinstance(value, np.ndarray):
        raise _Invalid(f"{where}: must be an array, got {type(value).__name__}")
    if value.dtype not in [np.dtype(dtype) for dtype in dtypes]:
        raise _Invalid(f"{where}: must be of {' or '.join(map(str, dtypes))}, got {value.dtype}")
    if len(value.shape) != len(shape) or any(n is not None and n != m for n, m in zip(shape, value.shape)):
        expected = "×".join("n" if n is None else str(n) for n in shape) or "scalar"
        raise _Invalid(f"{where}: must have shape {expected}, got {value.shape}")
    return value


def _int(value, where, smallest=0, largest=None):
    if not _is_int(value) or value < smallest or largest is not None and value > largest:
        bounds = f"from {smallest}" + ("" if largest is None else f" to {largest}")
        raise _Invalid(f"{where}: must be an integer {bounds}, got {value!r}")
    return value


def _float(value, where, smallest=None, positive=False):
    if not _is_number(value) or (smallest is not None and value < smallest) or (positive and not value > 0):
        raise _Invalid(f"{where}: must be a finite number{' > 0' if positive else ''}, got {value!r}")
    return value


def _bool(value, where):
    if not isinstance(value, (bool, np.bool_)):
        raise _Invalid(f"{where}: must be true or false, got {value!r}")
    return value


def _indices(value, where, n, limit=None, increasing=False):
    """Distinct training indices: int64, shape ``(n,)``, in ``[0, limit)``."""
    _array(value, where, ["int64"], (n,))
    if value.size and (value.min() < 0 or limit is not None and value.max() >= limit):
        raise _Invalid(f"{where}: indices must be in [0, {limit})")
    if len(np.unique(value)) != len(value) or increasing and not (np.diff(value) > 0).all():
        raise _Invalid(f"{where}: indices must be distinct{' and increasing' if increasing else ''}")
    return value


def _check_greedy_state(model, predictor, tensors):
    """The full state of a GreedyKFDA against itself and its predictor."""
    where = "state"
    classes = model.classes_
    n_classes = len(classes)
    link = predictor["link"]
    precomputed = model.kernel == "precomputed"
    _array(model.priors_, f"{where}.priors_", ["float64"], (n_classes,))
    if not (model.priors_ > 0).all():
        raise _Invalid(f"{where}.priors_: must be positive")
    fitted_k = _int(model._fitted_k, f"{where}._fitted_k", 1)
    models = model._models
    expected = 1 if link in ("logistic", "softmax") else n_classes
    if not isinstance(models, list) or len(models) != expected:
        raise _Invalid(f"{where}._models: must be a list of {expected} Discriminant for link {link!r}")
    limit = predictor["n_features"] if precomputed else None
    for c, discriminant in enumerate(models):
        _check_discriminant(discriminant, f"{where}._models.{c}", n_classes if expected == 1 else 2, fitted_k, limit)
    union = _indices(model._union_support, f"{where}._union_support", predictor["n_bases"], limit, increasing=True)
    supports = np.concatenate([discriminant.support for discriminant in models])
    if not np.array_equal(np.unique(supports), union):
        raise _Invalid(f"{where}._union_support: is not the union of the models' supports")
    _array(model._union_labels, f"{where}._union_labels", ["int64"], (len(union),))
    if union.size and (model._union_labels.min() < 0 or model._union_labels.max() >= n_classes):
        raise _Invalid(f"{where}._union_labels: must be class codes in [0, {n_classes})")
    if precomputed:
        if model._support_points is not None:
            raise _Invalid(f"{where}._support_points: must be null with a precomputed kernel")
        if not np.array_equal(union, tensors["predict.columns"]):
            raise _Invalid(f"{where}._union_support: differs from predict.columns")
    else:
        points = model._support_points
        if not isinstance(points, _IndexedRows):
            raise _Invalid(f"{where}._support_points: must be an _IndexedRows")
        if not np.array_equal(_array(points.indices, f"{where}._support_points.indices", ["int64"], (len(union),)),
                              union):
            raise _Invalid(f"{where}._support_points.indices: differ from _union_support")
        rows = _array(points.rows, f"{where}._support_points.rows", ["float64", "float32"],
                      (len(union), predictor["n_features"]))
        if not np.array_equal(rows.astype(predictor["dtype"]), tensors["predict.points"]):
            raise _Invalid(f"{where}._support_points.rows: differ from predict.points")
    moments = model._feature_moments
    if n_classes == 2 and moments is not None:
        _check_moments(moments, f"{where}._feature_moments", len(models[0].support))
    elif n_classes != 2 and moments is not None:
        raise _Invalid(f"{where}._feature_moments: only two-class models have one")


def _check_discriminant(d, where, n_classes, fitted_k, limit):
    if not isinstance(d, Discriminant):
        raise _Invalid(f"{where}: must be a Discriminant")
    k = len(_array(d.support, f"{where}.support", ["int64"], (None,)))
    _indices(d.support, f"{where}.support", k, limit)
    if k > fitted_k:
        raise _Invalid(f"{where}.support: {k} bases, more than _fitted_k = {fitted_k}")
    for name, shape in (("projection", (k, k)), ("feature_mean", (k,)), ("target_mean", (n_classes - 1,)),
                        ("cholesky", (k, k)), ("target_products", (k, n_classes - 1)),
                        ("score_weights", (k + 1, n_classes - 1, n_classes)), ("score_bias", (k + 1, n_classes)),
                        ("log_priors", (n_classes,))):
        _array(getattr(d, name), f"{where}.{name}", ["float64"], shape)
    if not (np.diagonal(d.cholesky) > 0).all():
        raise _Invalid(f"{where}.cholesky: its diagonal must be positive")
    _float(d.reg, f"{where}.reg", smallest=0.0)
    _float(d.kernel_scale, f"{where}.kernel_scale", positive=True)
    _bool(d.stopped_early, f"{where}.stopped_early")
    _int(d.kernel_passes, f"{where}.kernel_passes")


def _check_moments(moments, where, k):
    if not isinstance(moments, FeatureMoments):
        raise _Invalid(f"{where}: must be a FeatureMoments")
    _array(moments.class_counts, f"{where}.class_counts", ["int64"], (2,))
    if (moments.class_counts < 0).any():
        raise _Invalid(f"{where}.class_counts: must not be negative")
    for name, shape in (("class_means", (2, k)), ("class_scatters", (2, k, k)), ("support_features", (k, k))):
        _array(getattr(moments, name), f"{where}.{name}", ["float64"], shape)
    codes = _array(moments.support_codes, f"{where}.support_codes", ["int64"], (k,))
    if not np.isin(codes, (0, 1)).all():
        raise _Invalid(f"{where}.support_codes: must be 0 or 1")
    _float(moments.largest_norm, f"{where}.largest_norm", smallest=0.0)


def _check_search_state(search):
    where = "state"
    best = search.best_estimator_
    params = search.best_params_
    if not isinstance(params, dict) or set(params) != {"gamma", "k", "reg"}:
        raise _Invalid(f"{where}.best_params_: must be a dict of gamma, k and reg")
    if params["k"] != best.k or params["reg"] != best.reg or params["gamma"] != best.gamma:
        raise _Invalid(f"{where}.best_params_: differ from the refitted model's parameters")
    _float(search.best_score_, f"{where}.best_score_")
    _int(search.best_index_, f"{where}.best_index_")
    _float(search.refit_time_, f"{where}.refit_time_", smallest=0.0)
    _int(search.max_k_, f"{where}.max_k_", 1)
    _int(search.n_splits_, f"{where}.n_splits_", 1)
    gammas = search.gammas_
    if not isinstance(gammas, np.ndarray) or gammas.ndim != 1 or gammas.dtype not in (np.float64, object):
        raise _Invalid(f"{where}.gammas_: must be a 1-D array")


def _check_parsimonious_state(model, predictor):
    where = "state"
    n_classes = len(model.classes_)
    _array(model.priors_, f"{where}.priors_", ["float64"], (n_classes,))
    problems = model._problems
    if not isinstance(problems, list) or len(problems) != predictor["n_outputs"]:
        raise _Invalid(f"{where}._problems: must be a list of {predictor['n_outputs']} problems")
    keys = {"support", "dual_coef", "intercept", "theta", "n_iter", "objective", "slope", "offset"}
    limit = predictor["n_features"] if model.kernel == "precomputed" else None
    for c, problem in enumerate(problems):
        here = f"{where}._problems.{c}"
        if not isinstance(problem, dict) or set(problem) != keys:
            raise _Invalid(f"{here}: must be a dict of {sorted(keys)}")
        support = _array(problem["support"], f"{here}.support", ["int64"], (None,))
        _indices(support, f"{here}.support", len(support), limit, increasing=True)
        _array(problem["dual_coef"], f"{here}.dual_coef", ["float64"], (len(support),))
        _array(problem["objective"], f"{here}.objective", ["float64"], (None,))
        for name in ("intercept", "theta", "slope", "offset"):
            _float(problem[name], f"{here}.{name}")
        _int(problem["n_iter"], f"{here}.n_iter")
    union = model._union
    supports = [problem["support"] for problem in problems]
    if not np.array_equal(np.unique(np.concatenate(supports)), union):
        raise _Invalid(f"{where}._union: is not the union of the problems' supports")
    weights = np.zeros((len(union), len(problems)))
    for c, problem in enumerate(problems):
        weights[np.searchsorted(union, problem["support"]), c] = problem["dual_coef"]
    if not np.array_equal(weights, model._weights) or not np.array_equal(
            [problem["intercept"] for problem in problems], model._bias):
        raise _Invalid(f"{where}._problems: their coefficients differ from predict.weights and predict.bias")


def _check_pursuit_state(model, spec, predictor, tensors, lean):
    where = "state"
    k = predictor["n_bases"]
    precomputed = model.kernel == "precomputed"
    limit = predictor["n_features"] if precomputed else None
    support = _indices(model.__dict__[spec.support], f"{where}.{spec.support}", k, limit)
    if precomputed and not np.array_equal(support, tensors["predict.columns"]):
        raise _Invalid(f"{where}.{spec.support}: differs from predict.columns")
    points = spec._points(model)
    if points is not None:
        width = 0 if precomputed else predictor["n_features"]
        _array(points, f"{where}.{spec.points}", ["float64", "float32"], (k, width))
        if not precomputed and not np.array_equal(points.astype(predictor["dtype"]), tensors["predict.points"]):
            raise _Invalid(f"{where}.{spec.points}: differ from predict.points")
    if isinstance(model, SparseKernelCCA):
        n_y = _int(model.n_features_y_, f"{where}.n_features_y_", 1)
        _float(model._y_gamma, f"{where}._y_gamma", positive=True)
        _array(model.y_support_vectors_, f"{where}.y_support_vectors_", ["float64", "float32"],
               (k, 0 if precomputed else n_y))
        factor = _array(model._y_factor, f"{where}._y_factor", ["float64"], (k, k))
        if np.triu(factor, 1).any() or not (np.diagonal(factor) > 0).all():
            raise _Invalid(f"{where}._y_factor: not lower triangular with a positive diagonal")
        _array(model._y_mean, f"{where}._y_mean", ["float64"], (k,))
        _array(model.y_weights_, f"{where}.y_weights_", ["float64"], (k, predictor["n_outputs"]))
    if isinstance(model, GreedyNystroem):
        if predictor["n_outputs"] != k:
            raise _Invalid(f"predictor.n_outputs: a GreedyNystroem has one output per landmark ({k})")
        if not np.array_equal(_array(model.normalization_, f"{where}.normalization_", ["float64"], (k, k)),
                              tensors["predict.weights"].T):
            raise _Invalid(f"{where}.normalization_: differs from predict.weights")
    if isinstance(model, SparseKernelPCA) and predictor["n_outputs"] != k:
        raise _Invalid(f"predictor.n_outputs: a SparseKernelPCA has one output per point ({k})")
    if lean:
        return
    if isinstance(model, GreedyNystroem):
        _int(model.n_components_, f"{where}.n_components_", k, k)
        _bool(model.stopped_early_, f"{where}.stopped_early_")
        if precomputed:
            _array(model.components_, f"{where}.components_", ["float64", "float32"], (k, predictor["n_features"]))
        return
    m = _int(model.n_samples_fit_, f"{where}.n_samples_fit_", 1)
    if support.size and support.max() >= m or precomputed and m != predictor["n_features"]:
        raise _Invalid(f"{where}.n_samples_fit_: {m} does not hold the support's indices and the kernel's columns")
    _bool(model.stopped_early_, f"{where}.stopped_early_")
    _array(model.pursuit_scores_, f"{where}.pursuit_scores_", ["float64"], (k,))
    count = "n_components_" if isinstance(model, SparseKernelPCA) else "k_"
    _int(getattr(model, count), f"{where}.{count}", k, k)
    if isinstance(model, SparseKernelPCA):
        _array(model.explained_variance_, f"{where}.explained_variance_", ["float64"], (k,))
        _float(model._trace, f"{where}._trace")
        _float(model._largest_self_kernel, f"{where}._largest_self_kernel")
    if isinstance(model, SparseKernelCCA):
        _array(model.correlations_, f"{where}.correlations_", ["float64"], (predictor["n_outputs"],))
