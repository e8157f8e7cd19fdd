"""Writing a model file: :func:`save` and the tensors each distinct array is written to once."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import fields

import numpy as np
import safetensors.numpy
from sklearn.utils.validation import check_is_fitted

from .._kernels import portable_kernel
from .._discriminant import Discriminant
from ..bounds import FeatureMoments
from .._validation import check_full_state
from ..estimator import _IndexedRows
from ..model_selection import GreedyKFDACV
from ._common import CHECKSUM, FORMAT, FORMAT_VERSION, _CAST_DTYPES, _DTYPE_NAMES, _KINDS, _SCALARS, _params, _plain
from ._common import _Invalid
from .layout import _check_unicode, _is_unicode, _sealed
from .specs import _SPECS


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
    predictor = _write_predictor(writer, model, spec.describe(model))
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
    try:  # a lone surrogate elsewhere (a feature's name): UTF-8 cannot hold it
        _check_unicode(metadata, text)
    except _Invalid as error:
        raise ValueError(f"{error}; it cannot be written to a model file, whose text is UTF-8") from None
    tensors = {**writer.tensors, CHECKSUM: np.zeros(32, dtype=np.uint8)}
    data = _sealed(safetensors.numpy.save(tensors, metadata={"gkfda": text}))
    with open(path, "wb") as file:
        file.write(data)


def _version():
    from .. import __version__

    return __version__


def _spec_of(estimator):
    spec = _SPECS.get(type(estimator).__name__)
    if spec is None or not isinstance(estimator, spec.cls):
        names = ", ".join(_SPECS)
        raise TypeError(f"estimator: must be one of gkfda's {names}; got {type(estimator).__name__}")
    return spec


def _write_predictor(writer, model, predictor):
    """The ``predictor`` metadata of ``model``, described by ``predictor``, its tensors written."""
    if model.kernel == "precomputed":
        writer.add("predict.columns", np.asarray(predictor.columns, dtype=np.int64))
    else:
        writer.add("predict.points", np.asarray(predictor.points, dtype=predictor.dtype))
    weights = np.asarray(predictor.weights, dtype=np.float64)
    for name, array in (("lower", predictor.lower), ("center", predictor.center), ("weights", weights),
                        ("bias", predictor.bias), ("slope", predictor.slope), ("offset", predictor.offset)):
        if array is not None:
            writer.add(f"predict.{name}", np.asarray(array, dtype=np.float64))
    return {
        "task": predictor.task,
        **portable_kernel(model, model._gamma, "saved to a model file"),
        "dtype": np.dtype(predictor.dtype).name,
        "n_features": int(model.n_features_in_),
        "n_bases": int(weights.shape[0]),
        "n_outputs": int(weights.shape[1]),
        "link": predictor.link,
        "classes": None if predictor.classes is None else _classes(predictor.classes),
    }


def _classes(classes):
    """The predictor's ``classes``: kind and values."""
    kind = _KINDS.get(classes.dtype.kind)
    values = classes.tolist()
    if kind is None or kind == "str" and not all(isinstance(value, str) for value in values):
        raise ValueError(f"classes_: labels of {classes.dtype} cannot be written to a model file")
    if kind == "str":
        for value in values:
            if not _is_unicode(value):
                raise ValueError(f"classes_: the label {value!r} is not valid Unicode (it holds a lone surrogate) "
                                 "and cannot be written to a model file, whose text is UTF-8")
    if kind == "float" and not all(math.isfinite(value) for value in values):
        raise ValueError("classes_: a label is not finite")
    return {"kind": kind, "values": values}


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
