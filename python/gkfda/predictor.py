"""``gkfda.Predictor``: a saved model served through the Rust core, without scikit-learn.

``Predictor.load(path)`` reads a model file with the Rust reader (``gkfda::Model``, the
one the C ABI wraps) and predicts with it: the same probabilities as the estimator
``gkfda.load`` rebuilds (to 1e-12), at a fraction of its import time and per-call cost. It
imports NumPy and the core only.

Input: a float32 or float64 array (C or Fortran order; other layouts and lists are
converted, as ``np.asarray`` would), ``(n_rows, n_features)``, or one row as a 1-D array, whose
result keeps its leading dimension (``predict_proba(row)`` is ``(1, n_classes)``). A wrong
width or a non-finite value is a ``ValueError`` naming the row and column. The GIL is released
while the core computes, and a large batch is split across ``n_threads`` threads (default:
the CPUs; the results do not depend on it).

The methods a model has are those of its task: a classifier's ``predict``, ``predict_proba``,
``predict_log_proba`` and ``decision_function``; a regressor's ``predict`` and
``decision_function``; a transformer's ``transform``. Another raises ``AttributeError``, so
``hasattr(predictor, "predict_proba")`` answers as for a scikit-learn estimator.
"""

from __future__ import annotations

import os

from . import _core

_METHODS = {
    "classifier": ("predict", "predict_proba", "predict_log_proba", "decision_function"),
    "regressor": ("predict", "decision_function"),
    "transformer": ("transform",),
}
_ALL_METHODS = frozenset(name for names in _METHODS.values() for name in names)


class Predictor:
    """A fitted model read from a model file, predicting through the Rust core.

    >>> import gkfda, numpy as np
    >>> p = gkfda.Predictor.load("model.gkfda")            # doctest: +SKIP
    >>> p.predict_proba(np.zeros(p.n_features_in_)).shape  # doctest: +SKIP
    (1, 2)
    """

    __slots__ = ("_core",) + tuple(sorted(_ALL_METHODS))

    def __init__(self, core: _core.Predictor):
        if not isinstance(core, _core.Predictor):
            raise TypeError("Predictor: use Predictor.load(path) or Predictor.from_bytes(data)")
        self._core = core
        # The core's own bound methods: a call costs no Python frame of ours.
        for name in _METHODS[core.task]:
            object.__setattr__(self, name, getattr(core, name))

    @classmethod
    def load(cls, path: str | os.PathLike) -> Predictor:
        """Reads and checks the model file at ``path`` (``OSError`` if it cannot be read,
        ``ValueError`` naming the path and what is wrong if it is not a valid model file)."""
        return cls(_core.Predictor.load(os.fspath(path)))

    @classmethod
    def from_bytes(cls, data: bytes) -> Predictor:
        """Reads and checks a model file's bytes (``ValueError`` naming what is wrong)."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data: expected the bytes of a model file, got {type(data).__name__}")
        return cls(_core.Predictor.from_bytes(bytes(data)))

    def __getattr__(self, name):
        # Only reached for what is not set: a method the model's task does not have.
        if name in _ALL_METHODS:
            core = object.__getattribute__(self, "_core")
            raise AttributeError(
                f"{name}: this model is a {core.task} ({core.estimator}), which has no {name}"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def task(self) -> str:
        """``"classifier"``, ``"regressor"`` or ``"transformer"``."""
        return self._core.task

    @property
    def estimator(self) -> str:
        """The estimator that wrote the file, e.g. ``"GreedyKFDA"``."""
        return self._core.estimator

    @property
    def classes_(self):
        """The labels, a NumPy array of their kind (int64, float64, bool or str), in the
        order of ``predict_proba``'s columns (classifiers only)."""
        return self._core.classes_

    @property
    def n_features_in_(self) -> int:
        """The columns of an input row."""
        return self._core.n_features_in_

    @property
    def feature_names_in_(self):
        """The names of the features the model was fitted with (``AttributeError`` when it
        was fitted on an array without names)."""
        return self._core.feature_names_in_

    @property
    def n_outputs(self) -> int:
        """The columns of ``transform`` or of a multiclass ``decision_function``."""
        return self._core.n_outputs

    @property
    def n_threads(self) -> int:
        """Threads per call (default: the CPUs); the results do not depend on it."""
        return self._core.n_threads

    @n_threads.setter
    def n_threads(self, value: int) -> None:
        self._core.n_threads = value

    def __repr__(self) -> str:
        return repr(self._core)
