"""What each estimator writes (its predictor and its state) and how it is rebuilt."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ..estimator import GreedyKFDA
from ..model_selection import GreedyKFDACV
from ..parsimonious import ParsimoniousKFDA
from ..pursuit import GreedyNystroem, KernelMatchingPursuit, SparseKernelCCA, SparseKernelPCA
from ._common import _Invalid, _OPTIONAL, _params
from .state import _check_expansion, _check_greedy_state, _check_parsimonious_state, _check_pursuit_state, _indices


# -- the estimators -------------------------------------------------------------------


@dataclass(frozen=True)
class PredictorArrays:
    """An estimator's predictor (``docs/model-format.md``, "The predictor") as its own
    arrays, unconverted: the kernel values against ``points`` (a precomputed kernel: the
    input's ``columns``), through ``lower⁻¹`` and less ``center`` when given, then
    ``z = slope ∘ (v · weights + bias) + offset`` and the ``link``. Which arrays of an
    estimator these are is said here only, by its spec's ``describe``: the model file's
    writer writes them and the ONNX export computes them."""

    task: str  # "classifier", "regressor" or "transformer"
    link: str  # "logistic", "softmax", "ovr" or "identity"
    dtype: Any  # the points' and the kernel's
    weights: np.ndarray  # (n_bases, n_outputs)
    bias: np.ndarray  # (n_outputs,)
    points: Optional[np.ndarray] = None  # (n_bases, n_features); a named kernel's
    columns: Optional[np.ndarray] = None  # (n_bases,); a precomputed kernel's
    classes: Optional[np.ndarray] = None  # a classifier's labels
    lower: Optional[np.ndarray] = None
    center: Optional[np.ndarray] = None
    slope: Optional[np.ndarray] = None
    offset: Optional[np.ndarray] = None


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

    def describe(self, model) -> PredictorArrays:
        """The predictor of the fitted ``model``."""
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

    def describe(self, model):
        return PredictorArrays(
            task="classifier", link=model._link(), dtype=model._dtype(), weights=model._expansion_weights,
            bias=model._expansion_bias, points=model.__dict__.get("_union_points"),
            columns=model.__dict__.get("_union_support"), classes=model.classes_,
        )

    def build(self, params, state, tensors, predictor, lean):
        model = GreedyKFDA(**params)
        _set_predicted(model, predictor)
        model.__dict__.update(state)
        if not lean:
            _check_greedy_state(model, predictor, tensors)
            _charge_rows(predictor, [d.support for d in model._models], "state._models")
            model._set_public_attributes()
            _check_expansion(model, tensors)
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

    def describe(self, model):
        """The refitted model's predictor (``model`` is the search's ``best_estimator_``)."""
        return _SPECS["GreedyKFDA"].describe(model)

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

    def describe(self, model):
        return PredictorArrays(
            task="classifier", link="logistic" if len(model.classes_) == 2 else "ovr", dtype=np.float64,
            weights=model._weights, bias=model._bias, points=model._union_points, columns=model._union,
            classes=model.classes_, slope=model._slope, offset=model._offset,
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
            _charge_rows(predictor, [problem["support"] for problem in model._problems], "state._problems")
            model._set_public_attributes()
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

    def describe(self, model):
        return PredictorArrays(
            task="regressor", link="identity", dtype=model._dtype(), weights=np.asarray(model.coef_).reshape(-1, 1),
            bias=np.array([model.intercept_], dtype=np.float64), points=model.support_vectors_,
            columns=model.support_,
        )

    def finish(self, model, tensors, predictor):
        model.coef_ = tensors["predict.weights"].reshape(-1)
        model.intercept_ = float(tensors["predict.bias"][0])


class _PCASpec(_PursuitSpec):
    cls = SparseKernelPCA
    full = ("support_", "support_vectors_", "n_components_", "pursuit_scores_", "explained_variance_",
            "stopped_early_", "_trace", "_largest_self_kernel", "n_samples_fit_")
    lean = ("support_",)

    def describe(self, model):
        return PredictorArrays(
            task="transformer", link="identity", dtype=model._dtype(), weights=model.rotation_,
            bias=np.zeros(len(model.support_)), points=model.support_vectors_, columns=model.support_,
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

    def describe(self, model):
        return PredictorArrays(
            task="transformer", link="identity", dtype=model._dtype(), weights=model.x_weights_,
            bias=np.zeros(model.x_weights_.shape[1]), points=model.x_support_vectors_, columns=model.support_,
            lower=model._x_factor, center=model._x_mean,
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

    def describe(self, model):
        return PredictorArrays(
            task="transformer", link="identity", dtype=model._dtype(), weights=model.normalization_.T,
            bias=np.zeros(len(model.component_indices_)), points=model.components_,
            columns=model.component_indices_,
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


def _charge_rows(predictor, supports, where):
    """Charge the public ``support_vectors_``, the bases' rows copied for each model: models
    that share their bases would otherwise multiply the points the file holds once."""
    if predictor["kernel"] != "precomputed":
        rows = sum(len(support) for support in supports)
        predictor["budget"].charge_copies(rows * predictor["n_features"] * np.dtype(predictor["dtype"]).itemsize,
                                          f"{where}: the support vectors of its models")


def _set_predicted(estimator, predictor):
    """What the predictor holds for the estimator: its inputs' width and the kernel's gamma."""
    estimator.n_features_in_ = predictor["n_features"]
    estimator._gamma = predictor["gamma"]
