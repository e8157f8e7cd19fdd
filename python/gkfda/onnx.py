"""Export of fitted gkfda estimators to ONNX, alone or inside scikit-learn pipelines.

Importing this module registers a converter for each exportable estimator with
`skl2onnx <https://onnx.ai/sklearn-onnx/>`_, so that ``skl2onnx.to_onnx`` converts a
pipeline that ends in (or contains) one; :func:`to_onnx` converts an estimator alone
with the same converter. It needs the ``onnx`` extra: ``pip install 'gkfda[onnx]'``.

Every estimator predicts through one kernel expansion (``docs/model-format.md``), and
the graph computes exactly that: the kernel against the bases in the dtype of the input,
then, in float64 as the estimators do, a matrix product with the weights and the link. It uses core ONNX operators
only (no ``ai.onnx.ml`` domain, no ZipMap, no loop), so that any runtime of the core
operator set can run it (ONNX Runtime is tested; see ``docs/serving.md``):

======================  ===========================================================
estimator               outputs
======================  ===========================================================
GreedyKFDA,             ``label`` (shape ``(N,)``, the type of ``classes_``: int64,
GreedyKFDACV,           float, double, bool or string) and ``probabilities``
ParsimoniousKFDA        (``(N, n_classes)``), as ``predict`` and ``predict_proba``
KernelMatchingPursuit   ``variable``, ``(N, 1)``: ``predict``
GreedyNystroem,         ``variable``, ``(N, n_components_)``: ``transform``
SparseKernelPCA
======================  ===========================================================

Kernels ``rbf``, ``linear`` and ``poly`` (alias ``polynomial``, of an integral degree) are
exported; scikit-learn's other kernels, a precomputed or a callable kernel have no graph
of their own, and are refused.

Examples
--------
>>> import numpy as np
>>> from sklearn.datasets import make_moons
>>> from gkfda import GreedyKFDA
>>> from gkfda.onnx import to_onnx
>>> X, y = make_moons(200, noise=0.2, random_state=0)
>>> model = GreedyKFDA(k=20, gamma=2.0).fit(X, y)
>>> onx = to_onnx(model, X[:1].astype(np.float32))
>>> [output.name for output in onx.graph.output]
['label', 'probabilities']

onnx's reference runtime runs it (``onnxruntime.InferenceSession(onx.SerializeToString())``
the same way, faster):

>>> from onnx.reference import ReferenceEvaluator
>>> label, probabilities = ReferenceEvaluator(onx).run(None, {"X": X[:5].astype(np.float32)})
>>> bool((label == model.predict(X[:5])).all())
True
>>> bool(np.abs(probabilities - model.predict_proba(X[:5])).max() < 1e-5)
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
from scipy.linalg import solve_triangular
from sklearn.utils.validation import check_is_fitted

try:
    from onnx import TensorProto, numpy_helper
    from skl2onnx import to_onnx as _skl2onnx_to_onnx
    from skl2onnx import update_registered_converter
    from skl2onnx.common.data_types import (
        BooleanTensorType,
        DoubleTensorType,
        FloatTensorType,
        Int64TensorType,
        StringTensorType,
    )
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError("gkfda.onnx needs onnx and skl2onnx: pip install 'gkfda[onnx]'") from error

from ._core import KERNELS, estimator_predictors
from ._kernels import canonical_kernel, core_kernel, given_kernel_parameter, portable_kernel
from ._serialization.specs import _SPECS
from .estimator import GreedyKFDA
from .model_selection import GreedyKFDACV
from .parsimonious import ParsimoniousKFDA
from .pursuit import GreedyNystroem, KernelMatchingPursuit, SparseKernelPCA

__all__ = ["to_onnx"]

_EXPORTABLE = (GreedyKFDA, GreedyKFDACV, ParsimoniousKFDA, KernelMatchingPursuit, GreedyNystroem, SparseKernelPCA)
# A label and probabilities out, rather than one variable: the estimators whose task is "classifier".
_CLASSIFIERS = tuple(cls for cls in _EXPORTABLE if estimator_predictors()[cls.__name__][0] == "classifier")
_GRAPH_DTYPES = {FloatTensorType: np.float32, DoubleTensorType: np.float64}
#: The oldest opset of the default domain whose operators take the graph: ``Max`` and
#: ``Min`` broadcast from opset 8 on (ONNX Runtime has no float64 ``Max`` before it).
MIN_OPSET = 8


def _check_opset(target_opset):
    """A ValueError naming ``target_opset`` when it is below :data:`MIN_OPSET` (an int, or
    a dict whose ``""`` or ``"ai.onnx"`` entry is the default domain's opset)."""
    opset = target_opset
    if isinstance(opset, dict):
        opset = opset.get("", opset.get("ai.onnx"))
    if opset is None:
        return
    if isinstance(opset, (bool, np.bool_)) or not isinstance(opset, (int, np.integer)):
        raise TypeError(f"target_opset: must be an int, a dict of them or None, got {target_opset!r}")
    if opset < MIN_OPSET:
        raise ValueError(
            f"target_opset: a gkfda graph needs opset {MIN_OPSET} or later of the default domain, got {opset}"
        )


@dataclass
class _Predictor:
    """One estimator's predictor (the model file's, ``specs.PredictorArrays``) as the graph
    computes it, in float64, with ``lower`` folded into the weights:
    ``z = slope ∘ (κ(x, points) · weights + bias) + offset``, then ``link``."""

    kernel: str
    gamma: float
    degree: int
    coef0: float
    points: np.ndarray  # (n_bases, n_features), float64
    weights: np.ndarray  # (n_bases, n_outputs), float64
    bias: np.ndarray  # (n_outputs,)
    link: str  # "logistic", "softmax", "ovr" or "identity"
    classes: Optional[np.ndarray] = None
    slope: Optional[np.ndarray] = None
    offset: Optional[np.ndarray] = None


def _check_exportable(estimator):
    """The estimator whose predictor is exported (a search's best estimator), checked:
    a supported type, fitted, with a named kernel."""
    if not isinstance(estimator, _EXPORTABLE):
        names = ", ".join(cls.__name__ for cls in _EXPORTABLE)
        raise TypeError(f"estimator: gkfda exports {names} to ONNX, got {type(estimator).__name__}")
    check_is_fitted(estimator)
    if isinstance(estimator, GreedyKFDACV):
        estimator = estimator.best_estimator_
    kernel = estimator.kernel
    if callable(kernel) or core_kernel(kernel, given_kernel_parameter(estimator, "degree")) is None:
        shown = "a callable" if callable(kernel) else repr(kernel)
        if canonical_kernel(kernel) == "poly":
            shown = f"{shown} of the fractional degree {given_kernel_parameter(estimator, 'degree')!r}"
        raise ValueError(
            f"kernel: {shown} cannot be exported to ONNX: a graph computes only the built-in kernels "
            f"{', '.join(KERNELS)}; refit with one of them"
        )
    return estimator


def _predictor(estimator) -> _Predictor:
    estimator = _check_exportable(estimator)
    kernel = portable_kernel(estimator, estimator._gamma, "exported to ONNX")
    described = _SPECS[type(estimator).__name__].describe(estimator)
    weights = described.weights
    if described.lower is not None:  # SparseKernelPCA: L⁻¹ K(S, x) rotated is K(x, S) (L⁻ᵀ rotation_)
        weights = solve_triangular(described.lower, weights, trans="T", lower=True)
    predictor = _Predictor(
        **kernel, points=described.points, weights=weights, bias=described.bias, link=described.link,
        classes=described.classes, slope=described.slope, offset=described.offset,
    )
    predictor.points = np.asarray(predictor.points, dtype=np.float64).reshape(-1, estimator.n_features_in_)
    predictor.weights = np.asarray(predictor.weights, dtype=np.float64)
    predictor.bias = np.asarray(predictor.bias, dtype=np.float64)
    if len(predictor.points) == 0:
        # A model that chose no basis predicts its bias: one zero-weight basis keeps the
        # graph's shapes (N, 1 basis) without a special case.
        predictor.points = np.zeros((1, estimator.n_features_in_))
        predictor.weights = np.zeros((1, predictor.weights.shape[1]))
    return predictor


def _label_type(classes):
    """The ONNX tensor type of labels like ``classes``, and ``classes`` in its dtype."""
    kind = classes.dtype.kind
    if kind == "b":
        return BooleanTensorType, classes.astype(bool)
    if kind in "iu":
        if kind == "u" and classes.max() > np.iinfo(np.int64).max:
            raise ValueError("classes_: labels beyond the range of int64 have no ONNX label type")
        return Int64TensorType, classes.astype(np.int64)
    if kind == "f":
        return (FloatTensorType, classes) if classes.dtype == np.float32 else (DoubleTensorType, classes.astype(np.float64))
    if kind == "U" or (kind == "O" and all(isinstance(c, str) for c in classes)):
        return StringTensorType, classes.astype(str)
    raise ValueError(f"classes_: labels of dtype {classes.dtype} have no ONNX label type (int, float, bool or str)")


def _graph_dtype(variable_type):
    for tensor_type, dtype in _GRAPH_DTYPES.items():
        if isinstance(variable_type, tensor_type):
            return dtype
    raise TypeError(
        f"X: the input of a gkfda estimator must be a float or double tensor, got {type(variable_type).__name__}"
    )


# -- skl2onnx's three functions: parser, shape calculator, converter ----------------------


def _parse_classifier(scope, model, inputs, custom_parsers=None):
    """A label and a probability tensor, without the ZipMap skl2onnx's own classifier
    parser appends (a ZipMap is an ``ai.onnx.ml`` operator, and a list of maps)."""
    _check_exportable(model)
    operator = scope.declare_local_operator(_ALIASES[type(model)], model)
    operator.inputs = inputs
    label_type, _ = _label_type(model.classes_)
    label = scope.declare_local_variable("label", label_type())
    probabilities = scope.declare_local_variable("probabilities", type(inputs[0].type)())
    operator.outputs.extend([label, probabilities])
    return operator.outputs


def _calculate_shapes(operator):
    model = operator.raw_operator
    estimator = _check_exportable(model)
    (variable,) = operator.inputs
    input_type = type(variable.type)
    _graph_dtype(variable.type)
    width = variable.type.shape[1] if len(variable.type.shape) == 2 else None
    if isinstance(width, int) and width != model.n_features_in_:
        raise ValueError(f"X: has {width} features, but {type(model).__name__} expects {model.n_features_in_}")
    n = variable.get_first_dimension()
    if isinstance(model, _CLASSIFIERS):
        label_type, _ = _label_type(model.classes_)
        operator.outputs[0].type = label_type([n])
        operator.outputs[1].type = input_type([n, len(model.classes_)])
    else:
        operator.outputs[0].type = input_type([n, _predictor(estimator).weights.shape[1]])


def _convert(scope, operator, container):
    _check_opset(container.target_opset)  # skl2onnx.to_onnx of a pipeline comes here only
    predictor = _predictor(operator.raw_operator)
    dtype = _graph_dtype(operator.inputs[0].type)
    x = operator.inputs[0].full_name
    kernel = _kernel(_Graph(scope, container, dtype), x, predictor)
    # As the estimators do: the kernel in the input's dtype, everything after it in float64
    # (large weights of both signs amplify float32's rounding of the sums: 5e-5 against
    # 1e-7 on a model whose weights' 1-norm is 8,000), cast back at the outputs.
    graph = _Graph(scope, container, np.float64)
    if dtype != np.float64:
        kernel = graph.node("Cast", kernel, to=TensorProto.DOUBLE)
    z = graph.add(graph.matmul(kernel, predictor.weights), predictor.bias)
    if predictor.slope is not None:
        z = graph.add(graph.node("Mul", z, graph.constant(predictor.slope)), predictor.offset)

    def output(value, name):
        if dtype == np.float64:
            graph.node("Identity", value, output=name)
        else:
            graph.node("Cast", value, output=name, to=TensorProto.FLOAT)

    if predictor.link == "identity":
        output(z, operator.outputs[0].full_name)
        return
    probabilities = graph.scope.get_unique_variable_name("gkfda_probabilities")
    if predictor.link == "logistic":
        # 1 / (1 + exp(−z)), as SciPy's expit and the core compute it, rather than Sigmoid,
        # which tract does not run in float64.
        positive = graph.node("Div", graph.constant(1.0),
                              graph.node("Add", graph.constant(1.0), graph.node("Exp", graph.node("Neg", z))))
        negative = graph.node("Sub", graph.constant(1.0), positive)
        graph.node("Concat", negative, positive, output=probabilities, axis=1)
    else:
        if predictor.link == "ovr":
            # σ(z_c) normalised to sum to 1 is the softmax of log σ(z_c), which Softmax
            # computes as the estimator does (shifted by the largest, so nothing is 0/0);
            # log σ(z) = min(z, 0) − log(1 + exp(−|z|)) neither overflows nor underflows;
            # −|z| as min(z, −z), since tract has no float64 Abs.
            negative_magnitude = graph.node("Min", z, graph.node("Neg", z))
            tail = graph.node("Log", graph.node("Add", graph.constant(1.0), graph.node("Exp", negative_magnitude)))
            z = graph.node("Sub", graph.node("Min", z, graph.constant(0.0)), tail)
        graph.node("Softmax", z, output=probabilities, axis=1)
    output(probabilities, operator.outputs[1].full_name)
    _, classes = _label_type(predictor.classes)
    index = graph.node("ArgMax", probabilities, axis=1, keepdims=0)
    graph.node("Gather", graph.labels(classes), index, output=operator.outputs[0].full_name, axis=0)


def _kernel(graph, x, predictor):
    """``K(x, points)``, shape ``(N, n_bases)``, in the graph's dtype."""
    points = predictor.points
    if predictor.kernel == "linear":
        return graph.matmul(x, points.T)
    if predictor.kernel == "poly":
        scaled = graph.node("Mul", graph.matmul(x, points.T), graph.constant(predictor.gamma))
        return graph.node("Pow", graph.add(scaled, predictor.coef0), graph.constant(float(predictor.degree)))
    # ‖x − s‖² = ‖x‖² − 2 x·s + ‖s‖², a matrix product rather than an (N, n_bases, d)
    # difference; cancellation can leave it slightly negative, hence the Max with 0. Both
    # sides are first centred at the bases' mean, as the core does: the expansion then
    # cancels only what the points' spread around it takes, not a common offset of the
    # features (whose digits it would lose: 1e-4 at an offset of 1e6 in float64).
    centre = _centre(points, graph.dtype)
    moved = points - centre
    original, x = x, graph.node("Sub", x, graph.constant(centre))
    bound = np.abs(moved).max(axis=0) + np.sqrt(_UNDERFLOW / predictor.gamma)
    if 4.0 * len(bound) * float(bound.max()) ** 2 < float(np.finfo(graph.dtype).max):
        # A coordinate beyond `bound` is more than sqrt(_UNDERFLOW / gamma) from every
        # basis's, so its kernel values are 0 before and after clipping it there: clipped,
        # ‖x‖² and x·s cannot overflow into ∞ − ∞ (a NaN) for points near the dtype's
        # largest values, which get kernel values 0, as the core gives them. x − x is NaN
        # for an infinite coordinate: added to the squares, it keeps a NaN output for a
        # non-finite input, which the clip would otherwise turn into a finite point.
        x = graph.node("Min", graph.node("Max", x, graph.constant(-bound)), graph.constant(bound))
        not_finite = graph.matmul(graph.node("Sub", original, original), np.ones((points.shape[1], 1)))
    else:  # bases too far apart for the dtype to bound: as the core, whatever the rounding gives
        not_finite = None
    squares = graph.matmul(graph.node("Mul", x, x), np.ones((points.shape[1], 1)))
    if not_finite is not None:
        squares = graph.node("Add", squares, not_finite)
    cross = graph.matmul(x, -2.0 * moved.T)
    distances = graph.add(graph.node("Add", cross, squares), np.einsum("ij,ij->i", moved, moved)[None, :])
    distances = graph.node("Max", distances, graph.constant(0.0))
    return graph.node("Exp", graph.node("Mul", distances, graph.constant(-predictor.gamma)))


#: ``gamma ‖x − s‖²`` beyond which ``exp`` underflows to 0 in float32 and float64 alike
#: (float64's smallest subnormal is ``exp(−745.1)``).
_UNDERFLOW = 800.0


def _centre(points, dtype):
    """The bases' mean as the core computes it (each feature summed over the bases in
    their order, then divided), so that both move by the same values; for a float32 graph
    rounded to float32 first, so that ``Sub`` moves the input by exactly the value the
    bases were moved by."""
    centre = np.zeros(points.shape[1])
    for row in points:
        centre += row
    centre /= max(len(points), 1)
    return centre.astype(dtype).astype(np.float64)


class _Graph:
    """Nodes and constants added to skl2onnx's container under the scope's unique names;
    every constant in the graph's dtype."""

    def __init__(self, scope, container, dtype):
        self.scope, self.container, self.dtype = scope, container, dtype

    def constant(self, value):
        array = np.asarray(value, dtype=np.float64).astype(self.dtype)
        return self._initializer(numpy_helper.from_array(array))

    def labels(self, classes):
        if classes.dtype.kind in "UO":
            name = self.scope.get_unique_variable_name("gkfda_classes")
            self.container.add_initializer(name, TensorProto.STRING, list(classes.shape),
                                           [label.encode("utf-8") for label in classes])
            return name
        return self._initializer(numpy_helper.from_array(classes))

    def _initializer(self, tensor):
        name = self.scope.get_unique_variable_name("gkfda_constant")
        self.container.add_initializer(name, tensor.data_type, list(tensor.dims), tensor)
        return name

    def node(self, op_type, *inputs, output=None, **attributes):
        # Named gkfda_*, so that a pipeline's graph shows which nodes are this converter's.
        output = output or self.scope.get_unique_variable_name(f"gkfda_{op_type.lower()}")
        name = self.scope.get_unique_operator_name(f"gkfda_{op_type}")
        self.container.add_node(op_type, list(inputs), [output], name=name, **attributes)
        return output

    def matmul(self, x, matrix):
        return self.node("MatMul", x, self.constant(matrix))

    def add(self, x, vector):
        """``x + vector``, or ``x`` itself when ``vector`` is zero."""
        if not np.any(np.asarray(vector)):
            return x
        return self.node("Add", x, self.constant(vector))


_ALIASES = {cls: f"Gkfda{cls.__name__}" for cls in _EXPORTABLE}

for _cls, _alias in _ALIASES.items():
    # skl2onnx's Pipeline parser passes zipmap=True to every classifier step, so the
    # option is declared; the classifiers' parser never adds a ZipMap.
    update_registered_converter(
        _cls, _alias, _calculate_shapes, _convert,
        parser=_parse_classifier if _cls in _CLASSIFIERS else None,
        options={"zipmap": [True, False]} if _cls in _CLASSIFIERS else None,
    )


def to_onnx(estimator, X, *, target_opset=None, options=None):
    """An ONNX model of a fitted gkfda estimator, as ``skl2onnx.to_onnx`` makes one.

    Parameters
    ----------
    estimator : GreedyKFDA, GreedyKFDACV, ParsimoniousKFDA, KernelMatchingPursuit, \
GreedyNystroem or SparseKernelPCA
        Fitted, with a ``rbf``, ``linear`` or ``poly`` kernel.
    X : array-like of shape (n_samples, n_features) or (n_features,)
        A sample row or more: its width and dtype (float32 or float64) are the graph's
        input's and outputs', and the graph computes the kernel in that dtype (any number
        of rows goes in).
    target_opset : int, dict or None, default=None
        As skl2onnx's: ``None`` is the latest opset skl2onnx has tested; at least
        :data:`MIN_OPSET` (8).
    options : dict or None, default=None
        Passed to skl2onnx. The classifiers never add a ZipMap.

    Returns
    -------
    onnx.ModelProto
        Input ``X``; outputs ``label`` and ``probabilities`` (classifiers), or
        ``variable`` (``predict`` of ``KernelMatchingPursuit``, shape ``(N, 1)``;
        ``transform`` of the transformers).

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If the estimator is not fitted.
    ValueError
        If its kernel is precomputed or a callable, ``X`` is not float32 or float64
        or has the wrong width, or ``target_opset`` is below :data:`MIN_OPSET`.
    """
    _check_exportable(estimator)
    _check_opset(target_opset)
    X = np.asarray(X)
    if X.ndim == 1:
        X = X[None, :]
    if X.ndim != 2 or X.dtype not in (np.float32, np.float64):
        raise ValueError(f"X: needs a float32 or float64 sample row or more, got {X.dtype} of shape {X.shape}")
    if X.shape[1] != estimator.n_features_in_:
        raise ValueError(
            f"X: has {X.shape[1]} features, but {type(estimator).__name__} expects {estimator.n_features_in_}"
        )
    return _skl2onnx_to_onnx(estimator, X[:1], target_opset=target_opset, options=options)
