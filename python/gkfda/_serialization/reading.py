"""Reading a model file: :func:`load`, and the checks of its metadata and predictor."""

from __future__ import annotations

import os
from types import SimpleNamespace

import numpy as np

from .. import _core
from .._kernels import canonical_kernel, kernel_parameters
from ..estimator import GreedyKFDA
from ..model_selection import GreedyKFDACV
from ._common import (
    CHECKSUM,
    FORMAT,
    FORMAT_VERSION,
    _DTYPE_NAMES,
    _Invalid,
    _KERNELS,
    _KINDS,
    _LARGEST_COUNT,
    _LARGEST_DEGREE,
    _METADATA_KEYS,
    _PREDICTOR_KEYS,
    _OPTIONAL,
    _is_int,
    _is_number,
    _member,
    _plain,
)
from .layout import _read_path
from .specs import _SPECS
from .state import _Decoder, _check_priors, _check_search_state


# -- loading --------------------------------------------------------------------------


def load(path):
    """The estimator :func:`save` wrote to ``path``.

    Nothing in the file is run: its header (at most 16 MiB) and metadata are parsed as JSON
    and checked field by field, objects are built only from gkfda's own types, and every
    tensor's dtype, shape and values (finite; indices in range) are checked against the
    metadata and each other. What it builds is bounded by the file: its JSON is measured
    before it is parsed, and the state's copies and string arrays are counted, so that
    loading a file of ``n`` bytes takes at most ``4 n + 64 MiB``. Only a regular file is
    read, and exactly the bytes its header describes. Any fault is a ``ValueError`` whose
    message starts with ``path``; a file that cannot be opened raises the ``OSError`` of
    ``open``.

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
    try:
        return _load(*_read_path(path))
    except _Invalid as error:
        raise ValueError(f"{os.fspath(path)}: {error}") from None


def _load(tensors, metadata, budget):
    meta = _checked_metadata(metadata)
    spec = _SPECS[meta["estimator"]]
    predictor = _checked_predictor(meta, tensors, budget)
    lean = meta["lean"]
    decoder = _Decoder(tensors, budget)
    if spec.cls is GreedyKFDACV:
        state = _checked_keys(meta["state"], "state", spec.lean if lean else spec.full)
        nested = _nested_estimator(state.pop("best_estimator_"))
        best_params = _checked_params(GreedyKFDA, nested["params"], "state.best_estimator_.params")
        _check_params_agree(best_params, predictor, "state.best_estimator_.params")
        best = _build(_SPECS["GreedyKFDA"], best_params, nested["state"], decoder, predictor, lean,
                      "state.best_estimator_.state")
        params = _checked_params(GreedyKFDACV, meta["params"], "params")
        if params.get("priors") is not None:
            _check_priors(params["priors"], len(predictor["classes"]), "params.priors")
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


# -- checks of the metadata -----------------------------------------------------------


def _checked_metadata(metadata):
    keys = set(_METADATA_KEYS)
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
    if params.get("priors") is not None and predictor["task"] == "classifier":
        _check_priors(params["priors"], len(predictor["classes"]), f"{where}.priors")
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


# What each estimator's predictor is: task, links, and the optional tensors it has; the
# Rust reader's table, the one both readers check a file by.
_PREDICTORS = _core.estimator_predictors()


def _checked_predictor(meta, tensors, budget):
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
        if not _is_int(predictor[name]) or not smallest <= predictor[name] <= _LARGEST_COUNT:
            raise _Invalid(f"predictor.{name}: {predictor[name]!r} is not an integer from {smallest} to 2**53")
    n_features, k, outputs = predictor["n_features"], predictor["n_bases"], predictor["n_outputs"]
    precomputed = predictor["kernel"] == "precomputed"
    shapes = {
        "predict.columns" if precomputed else "predict.points": (
            ("I64", (k,)) if precomputed else ("F32" if predictor["dtype"] == "float32" else "F64", (k, n_features))),
        "predict.weights": ("F64", (k, outputs)),
        "predict.bias": ("F64", (outputs,)),
    }
    optional = {"predict.lower": (k, k), "predict.center": (k,), "predict.slope": (outputs,),
                "predict.offset": (outputs,)}
    shapes.update({name: ("F64", optional[name]) for name in extra})
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
    if "predict.lower" in extra:
        lower = tensors["predict.lower"]
        if np.triu(lower, 1).any() or not (np.diagonal(lower) > 0).all():
            raise _Invalid("tensor predict.lower: not lower triangular with a positive diagonal")
    link, classes = predictor["link"], predictor["classes"]
    if task == "classifier":
        # The labels' number is checked against the outputs (which the tensors hold) before
        # any label is converted: a long list of labels builds nothing.
        n_classes = len(classes["values"]) if isinstance(classes, dict) and isinstance(
            classes.get("values"), list) else None
        expected = 1 if link == "logistic" else n_classes
        if n_classes is not None and ((link == "logistic") != (n_classes == 2) or outputs != expected):
            raise _Invalid(f"predictor: {n_classes} classes with link {link!r} and {outputs} outputs")
        predictor["classes"] = _checked_classes(classes, budget)
    elif classes is not None:
        raise _Invalid(f"predictor.classes: must be null for a {task}")
    if task == "regressor" and outputs != 1:
        raise _Invalid("predictor.n_outputs: a regressor has one output")
    predictor["tensors"] = list(shapes)
    predictor["budget"] = budget
    return predictor


def _checked_classes(classes, budget):
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
    if kind == "str":
        # np.array gives every label the width of the longest, four bytes a character.
        budget.charge_copies(4 * len(values) * max(map(len, values)), "predictor.classes.values")
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
