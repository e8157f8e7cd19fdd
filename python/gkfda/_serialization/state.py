"""The Python state: its decoding from JSON and tensors, and the checks that it agrees with itself
and with the predictor."""

from __future__ import annotations

import math
from dataclasses import fields

import numpy as np

from .._discriminant import Discriminant
from .._validation import checked_priors
from ..bounds import FeatureMoments
from ..estimator import _IndexedRows
from ..pursuit import GreedyNystroem, SparseKernelCCA, SparseKernelPCA
from ._common import _CAST_DTYPES, _Invalid, _LARGEST_DEPTH, _SCALARS, _is_int, _is_number, _member


# -- decoding the state ---------------------------------------------------------------


class _Decoder:
    """The state's JSON tree as Python values, arrays from the tensors."""

    _OBJECTS = {
        "Discriminant": [f.name for f in fields(Discriminant)],
        "FeatureMoments": [f.name for f in fields(FeatureMoments)],
        "_IndexedRows": ["indices", "rows"],
    }

    def __init__(self, tensors, budget):
        self.tensors = tensors
        self.budget = budget
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
            if node["order"] == "F":
                value = value.T
            else:  # a copy: every one is charged, so that many references cannot multiply the tensor
                self.budget.charge_copies(value.nbytes, where)
                value = np.ascontiguousarray(value.T)
        elif "order" in node:
            raise _Invalid(f"{where}: order is only for a transpose")
        if "dtype" in node:
            dtype = node["dtype"]
            if dtype not in _CAST_DTYPES or value.dtype != np.int64:
                raise _Invalid(f"{where}: dtype {dtype!r} is not an integer type an I64 tensor is cast to")
            limits = np.iinfo(dtype)
            if value.size and (value.min() < limits.min or value.max() > limits.max):
                raise _Invalid(f"{where}: values beyond the range of {dtype}")
            self.budget.charge_copies(value.size * limits.bits // 8, where)
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
            self.budget.charge_copies(8 * len(values), where)
            array = np.empty(len(values), dtype=object)
            array[:] = values
            return array
        if not (isinstance(dtype, str) and dtype.startswith("<U") and dtype[2:].isdigit()
                and 0 < int(dtype[2:]) <= 2**16):
            raise _Invalid(f"{where}: __array__ dtype {dtype!r} is not <U(width) or |O")
        if not all(isinstance(item, str) and len(item) <= int(dtype[2:]) for item in values):
            raise _Invalid(f"{where}: the values must be strings of at most {dtype[2:]} characters")
        # The bytes NumPy allocates: the width, four bytes a character, for every value.
        self.budget.charge_copies(np.dtype(dtype).itemsize * len(values), where)
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


def _check_priors(priors, n_classes, where):
    """Class priors by the estimators' own rule: one positive finite value per class,
    summing to 1."""
    try:
        checked_priors(priors, None, n_classes)
    except ValueError as error:
        message = str(error)
        raise _Invalid(f"{where}: {message.split(': ', 1)[1] if message.startswith('priors: ') else message}") from None


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
    _check_priors(model.priors_, n_classes, f"{where}.priors_")
    fitted_k = _int(model._fitted_k, f"{where}._fitted_k", 1)
    models = model._models
    expected = 1 if link in ("logistic", "softmax") else n_classes
    if not isinstance(models, list) or len(models) != expected:
        raise _Invalid(f"{where}._models: must be a list of {expected} Discriminant for link {link!r}")
    limit = predictor["n_features"] if precomputed else None
    for c, discriminant in enumerate(models):
        _check_discriminant(discriminant, f"{where}._models.{c}", n_classes if expected == 1 else 2, fitted_k, limit)
    # The sparsity path runs over 1.._fitted_k: the bases the models hold, or beyond them only
    # where a selection stopped early (every k from there to the k asked gives the same
    # model), up to the k asked and, when the moments say it, the training set's size.
    largest = max(len(discriminant.support) for discriminant in models)
    if fitted_k != largest:
        bound = model.k
        if isinstance(model._feature_moments, FeatureMoments) and isinstance(
                model._feature_moments.class_counts, np.ndarray):
            bound = min(bound, int(model._feature_moments.class_counts.sum()))
        if not any(discriminant.stopped_early for discriminant in models) or fitted_k > bound:
            raise _Invalid(f"{where}._fitted_k: {fitted_k} is not the {largest} bases its models hold, and no "
                           f"selection that stopped early at {largest} can have asked for it")
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


def _check_expansion(model, tensors):
    """The predictor's ``predict.weights`` and ``predict.bias`` against the expansion the state's
    models give (``_set_public_attributes``): ``predict`` reads the former, ``decision_path`` and
    ``truncate`` the latter, so a file whose two disagree would predict two ways.

    The writer wrote what the same code computed, so they agree but for the rounding of another
    BLAS: the square root of the model's precision, relative to the largest weight, allows it."""
    tolerance = math.sqrt(float(np.finfo(model._dtype()).eps))
    for name, derived in (("predict.weights", model._expansion_weights), ("predict.bias", model._expansion_bias)):
        stored = tensors[name]
        if stored.shape != derived.shape:
            raise _Invalid(f"tensor {name}: has shape {list(stored.shape)} but the state's models give "
                           f"{list(derived.shape)}")
        if not stored.size:
            continue
        scale = max(float(np.max(np.abs(derived))), float(np.finfo(np.float64).tiny))
        difference = float(np.max(np.abs(stored - derived)))
        if not difference <= tolerance * scale:
            raise _Invalid(f"tensor {name}: differs from what the state's models give by {difference:.3g}, more "
                           f"than {tolerance:.1e} of its largest magnitude {scale:.3g}")


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
    _check_priors(model.priors_, n_classes, f"{where}.priors_")
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
