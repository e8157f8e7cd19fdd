"""The generalisation bound of a sparse greedy Fisher discriminant (Diethe et al., 2009, §4).

A two-class model with ``k`` bases is a linear discriminant ``h(x) = w'z(x) − b`` (``‖w‖ = 1``)
on the Nyström features ``z`` of those bases. The bound says that, with probability at
least ``1 − δ`` over the training sample, the true error of the model is at most
``max(1 − α⁺, 1 − α⁻)``, where for class ``j`` (sign ``s₊ = +1``, ``s₋ = −1``):

* ``n_j = m^j − k^j``: the class's training points that are not bases (the bound is a
  compression bound: its statistics leave the bases out);
* ``g^j = s_j · mean(h)`` and ``v^j = var(h)`` (``1/n_j`` normalisation) over those points;
* ``C^j = R/√n_j · (2 + √(c + 2 ln(4m/δ)))`` bounds how far the class mean of ``h`` can be
  from its expectation, ``D^j = 2R²/√n_j · (2 + √(c + 2 ln(8m/δ)))`` the same for the
  variance, with ``R`` a bound on the feature-space norm ``√κ(x, x)`` (1 for the RBF
  kernel) and ``c`` the price of choosing the bases (below);
* ``α^j = (g^j − C^j)² / (v^j + D^j + (g^j − C^j)²)`` when ``g^j > C^j`` (a one-sided
  Chebyshev inequality with the worst mean and variance), 0 otherwise.

``variant="paper"`` uses ``c = k ln(em/k)`` as the paper prints it. The union bound over
the ``C(m, k)`` possible sets of bases that the paper's argument takes gives twice that,
``c = 2k ln(em/k)``: ``variant="union_bound"``. The proviso of the covariance concentration,
``n_j ≥ (2 + √(c + 2 ln(8m/δ)))²``, which the paper drops, is reported as
``valid_sample_size``.

The bound is loose: at a few hundred training points it is 1 whatever the data (for
``k = 30``, ``m = 400``, ``C^j ≈ 0.98`` already exceeds any attainable margin with ``R = 1``).
It becomes informative from some ``10⁴`` points with ``k ≈ 20`` and well separated classes.

Examples
--------
>>> from gkfda.bounds import fisher_discriminant_bound
>>> bound = fisher_discriminant_bound((0.5, 0.5), (0.05, 0.05), (50_000, 50_000), (10, 10))
>>> round(bound.value, 6), round(bound.positive.mean_term, 6)
(0.52818, 0.075605)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real

import warnings

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._discriminant import PackedTriangles
from ._validation import check_full_state

VARIANTS = ("paper", "union_bound")

__all__ = ["VARIANTS", "ClassBound", "GeneralisationBound", "fisher_discriminant_bound", "FisherDiscriminantBound"]


@dataclass(frozen=True)
class ClassBound:
    """The part of the bound for one class ``j``: ``P(error | class j) ≤ 1 − alpha``."""

    label: object
    n_samples: int  # m^j: the class's training points
    n_bases: int  # k^j: the bases of the class
    margin: float  # g^j: the class's mean signed margin outside the bases
    variance: float  # v^j: the variance of the margin there
    mean_term: float  # C^j
    covariance_term: float  # D^j
    alpha: float
    valid_sample_size: bool  # n_j meets the covariance concentration's proviso

    @property
    def error_bound(self) -> float:
        return 1.0 - self.alpha


@dataclass(frozen=True)
class GeneralisationBound:
    """The bound ``value`` on the true error, holding with probability ``1 − delta``,
    with its parts: ``positive`` (the second class, ``classes_[1]``) and ``negative``."""

    value: float
    positive: ClassBound
    negative: ClassBound
    valid_sample_size: bool
    m: int
    k: int
    delta: float
    radius: float
    variant: str


def _check_delta(delta) -> float:
    if isinstance(delta, (bool, np.bool_)) or not isinstance(delta, Real) or not 0.0 < float(delta) < 1.0:
        raise ValueError(f"delta: must be a number in (0, 1), got {delta!r}")
    return float(delta)


def _check_radius(radius) -> float:
    if (
        isinstance(radius, (bool, np.bool_))
        or not isinstance(radius, Real)
        or not (0.0 < float(radius) < math.inf)
    ):
        raise ValueError(f"radius: must be a positive finite number, got {radius!r}")
    return float(radius)


def _check_variant(variant) -> str:
    if not isinstance(variant, str) or variant not in VARIANTS:
        raise ValueError(f"variant: must be one of {', '.join(map(repr, VARIANTS))}; got {variant!r}")
    return variant


def _pair(values, name, check):
    try:
        pair = tuple(values)
    except TypeError:
        raise ValueError(f"{name}: must be a pair (positive class, negative class), got {values!r}") from None
    if len(pair) != 2 or not all(check(value) for value in pair):
        raise ValueError(f"{name}: must be a pair (positive class, negative class) of {check.__doc__}, got {values!r}")
    return pair


def _finite(value):
    """finite numbers"""
    return isinstance(value, Real) and not isinstance(value, (bool, np.bool_)) and math.isfinite(value)


def _non_negative(value):
    """finite numbers ≥ 0"""
    return _finite(value) and value >= 0.0


def _count(value):
    """integers ≥ 0"""
    return isinstance(value, Integral) and not isinstance(value, (bool, np.bool_)) and value >= 0


def compression_term(m: int, k: int, variant: str) -> float:
    """The price of choosing ``k`` bases among ``m`` points: ``k ln(em/k)``, doubled by
    ``variant="union_bound"`` (0 when ``k = 0``)."""
    if k == 0:
        return 0.0
    return (2.0 if variant == "union_bound" else 1.0) * k * math.log(math.e * m / k)


def fisher_discriminant_bound(
    margins, variances, class_sizes, class_bases, delta=0.05, radius=1.0, variant="paper", labels=("+", "-"),
) -> GeneralisationBound:
    """The bound from the statistics of the margin ``h = w'z − b`` (``‖w‖ = 1``).

    Parameters
    ----------
    margins : (float, float)
        ``(g⁺, g⁻)``: the mean of ``h`` over the positive class's points that are not
        bases, and minus its mean over the negative class's.
    variances : (float, float)
        ``(v⁺, v⁻)``: the variances of ``h`` over the same points (``1/n`` normalisation).
    class_sizes : (int, int)
        ``(m⁺, m⁻)``: the classes' training points, bases included.
    class_bases : (int, int)
        ``(k⁺, k⁻)``: the bases of each class (``k^j ≤ m^j``).
    delta : float in (0, 1)
        The bound holds with probability at least ``1 − delta``.
    radius : float
        ``R``: a bound on ``√κ(x, x)`` over the input domain (1 for the RBF kernel).
    variant : {"paper", "union_bound"}
        The compression term ``k ln(em/k)`` as printed, or doubled as the union bound
        over the choice of bases requires.
    labels : (object, object)
        The labels of the positive and negative class, copied into the result.

    Returns
    -------
    GeneralisationBound

    Examples
    --------
    >>> b = fisher_discriminant_bound((0.5, 0.5), (0.05, 0.05), (200, 200), (15, 15))
    >>> b.value, round(b.negative.mean_term, 6)
    (1.0, 0.98032)
    """
    delta, radius, variant = _check_delta(delta), _check_radius(radius), _check_variant(variant)
    margins = _pair(margins, "margins", _finite)
    variances = _pair(variances, "variances", _non_negative)
    class_sizes = tuple(int(n) for n in _pair(class_sizes, "class_sizes", _count))
    class_bases = tuple(int(n) for n in _pair(class_bases, "class_bases", _count))
    if any(k_j > m_j for k_j, m_j in zip(class_bases, class_sizes)):
        raise ValueError(f"class_bases: a class has more bases than points: {class_bases} against {class_sizes}")
    m, k = sum(class_sizes), sum(class_bases)
    if m == 0:
        raise ValueError("class_sizes: the training set is empty")
    compression = compression_term(m, k, variant)
    mean_root = 2.0 + math.sqrt(compression + 2.0 * math.log(4.0 * m / delta))
    covariance_root = 2.0 + math.sqrt(compression + 2.0 * math.log(8.0 * m / delta))
    parts = []
    for label, g, v, m_j, k_j in zip(labels, margins, variances, class_sizes, class_bases):
        n = m_j - k_j
        if n > 0:
            C = radius / math.sqrt(n) * mean_root
            D = 2.0 * radius * radius / math.sqrt(n) * covariance_root  # inf, where ** raises, past 1e154
        else:
            C = D = math.inf
        # The squared numerator hides its sign: a margin below C proves nothing. Divided
        # through by (g - C)², which overflows for a huge margin.
        alpha = 1.0 / (1.0 + (v + D) / (g - C) / (g - C)) if g > C else 0.0
        parts.append(ClassBound(
            label=label, n_samples=m_j, n_bases=k_j, margin=float(g), variance=float(v), mean_term=C,
            covariance_term=D, alpha=alpha, valid_sample_size=bool(n >= covariance_root**2),
        ))
    positive, negative = parts
    return GeneralisationBound(
        value=max(positive.error_bound, negative.error_bound), positive=positive, negative=negative,
        valid_sample_size=positive.valid_sample_size and negative.valid_sample_size, m=m, k=k, delta=delta,
        radius=radius, variant=variant,
    )


@dataclass(frozen=True)
class FeatureMoments(PackedTriangles):
    """What the bound needs from a two-class fit's training set, kept by the model.

    The Nyström features are nested (the first ``j`` features of a point are its features
    for the first ``j`` bases), so the per-class means and scatter matrices of every
    training point's features, and the features of the bases, give the statistics of the
    margin outside the bases for every truncation of the model: ``O(k²)`` numbers, not
    the ``m × k`` features. Class codes: 0 negative, 1 positive.
    """

    class_counts: np.ndarray  # (2,) training points per class
    class_means: np.ndarray  # (2, k) mean feature vector of each class
    class_scatters: np.ndarray  # (2, k, k) Σ (z − mean)(z − mean)' over each class
    support_features: np.ndarray  # (k, k) features of the bases, in selection order
    support_codes: np.ndarray  # (k,) classes of the bases
    largest_norm: float  # max √κ(x, x) over the training set

    _TRIANGLES = {"class_scatters": "symmetric", "support_features": "lower"}

    @classmethod
    def from_moments(cls, moments, support_features, support_codes, largest_norm) -> "FeatureMoments":
        """From the features' ``_discriminant.ClassMoments`` (reduced over the rows, wherever
        they are held), the bases' features ``(k, k)`` and their classes."""
        # The bases' features are L (L L' = K[support, support]), lower triangular: the
        # rounding left above its diagonal is cleared.
        return cls(np.asarray(moments.counts, dtype=np.int64), moments.means, moments.scatters,
                   np.tril(support_features), np.asarray(support_codes).astype(np.int64), float(largest_norm))

    def truncated(self, j: int) -> "FeatureMoments":
        return FeatureMoments(
            self.class_counts, self.class_means[:, :j], self.class_scatters[:, :j, :j],
            self.support_features[:j, :j], self.support_codes[:j], self.largest_norm,
        )

    def margin_statistics(self, weights, offset):
        """Per class (0, 1): the points outside the bases, and the mean and variance of
        ``h = weights'z − offset`` over them (``nan`` for a class with none)."""
        weights = np.asarray(weights, dtype=np.float64)
        outside, means, variances = [], [], []
        for c in range(2):
            # Deviations from the class's mean over all its points: the few bases move
            # the mean of the rest little, so nothing cancels catastrophically.
            bases = self.support_features[self.support_codes == c] - self.class_means[c]
            n = int(self.class_counts[c]) - len(bases)
            outside.append(n)
            if n <= 0:
                means.append(math.nan)
                variances.append(math.nan)
                continue
            shift = -bases.sum(axis=0) / n  # the mean of the rest minus the class mean
            scatter = self.class_scatters[c] - bases.T @ bases
            spread = float(weights @ scatter @ weights) / n - float(weights @ shift) ** 2
            means.append(float(weights @ (self.class_means[c] + shift)) - float(offset))
            variances.append(max(spread, 0.0))
        return outside, means, variances


class FisherDiscriminantBound:
    """The bound's method of a fitted two-class :class:`~gkfda.GreedyKFDA`.

    A mixin: it reads the estimator's ``_feature_moments`` (a :class:`FeatureMoments` that
    ``fit`` keeps and ``truncate`` truncates), ``coef_``, ``intercept_`` and ``classes_``.
    """

    def generalisation_bound(self, delta=0.05, radius=None, variant="paper") -> GeneralisationBound:
        """An upper bound on the true error of this two-class model (Diethe et al., 2009, Prop. 4.5).

        With probability at least ``1 - delta`` over the training sample, the error rate
        on new points from the same distribution is at most ``value``: a compression
        bound on the mean and variance of the discriminant's margin in each class,
        measured on the training points that are not bases (see :mod:`gkfda.bounds`). It
        is loose: 1 (vacuous) at a few hundred training points, informative from some
        10,000 with a few tens of bases and well separated classes.

        Parameters
        ----------
        delta : float in (0, 1), default=0.05
            The probability that the bound fails.
        radius : float or None, default=None
            ``R``, a bound on the feature-space norm ``sqrt(K(x, x))`` of every possible
            input. ``None``: 1 for ``rbf``; for other kernels the largest norm over the
            training set, with a ``UserWarning``, since a bound read off the data is not
            the a-priori constant the theorem assumes.
        variant : {"paper", "union_bound"}, default="paper"
            ``paper``: the bound as Diethe et al. (2009) print it; ``union_bound``: with the
            compression term ``2 k ln(em/k)`` that its union bound over the choice of
            bases gives (the printed one has ``k ln(em/k)``).

        Returns
        -------
        GeneralisationBound
            ``value`` in (0, 1], the parts of each class (``positive`` is
            ``classes_[1]``), ``valid_sample_size``, and what went in (``m``, ``k``,
            ``delta``, ``radius``, ``variant``).

        Examples
        --------
        >>> from sklearn.datasets import make_moons
        >>> from gkfda import GreedyKFDA
        >>> X, y = make_moons(300, noise=0.2, random_state=0)
        >>> bound = GreedyKFDA(k=10, gamma=2.0).fit(X, y).generalisation_bound()
        >>> bound.value, bound.m, bound.k  # vacuous at this size
        (1.0, 300, 10)
        """
        check_is_fitted(self)
        check_full_state(self, "generalisation_bound")
        if len(self.classes_) != 2:
            raise ValueError(
                f"the generalisation bound is for two-class models; this one has {len(self.classes_)} classes "
                f"(multiclass={self.multiclass!r}), whose decision is not one linear discriminant"
            )
        moments = self.__dict__.get("_feature_moments")
        if moments is None:
            raise ValueError(
                "the model does not hold the training statistics the bound needs (it was saved by an older "
                "version of gkfda): fit it again"
            )
        delta, variant = _check_delta(delta), _check_variant(variant)
        if radius is None:
            if self._kernel_name() == "rbf":
                radius = 1.0
            else:
                radius = moments.largest_norm
                warnings.warn(
                    f"radius: estimated as the largest sqrt(K(x, x)) over the training set ({radius:.6g}); the "
                    f"bound assumes a bound on every possible input, so with a {self._kernel_name()} kernel this "
                    "data-dependent value does not make it hold: pass radius",
                    UserWarning,
                    stacklevel=2,
                )
        radius = _check_radius(radius)
        if radius < moments.largest_norm * (1.0 - 1e-9):
            raise ValueError(
                f"radius: {radius!r} is below the norm sqrt(K(x, x)) = {moments.largest_norm:.6g} of a training point"
            )
        coef, intercept = self.coef_[0], float(self.intercept_[0])
        norm = float(np.linalg.norm(coef))
        # predict says classes_[1] where coef'z + intercept > 0, the theorem where w'z - b > 0.
        weights, offset = (coef / norm, -intercept / norm) if norm > 0.0 else (coef, 0.0)
        outside, means, variances = moments.margin_statistics(weights, offset)
        counts = moments.class_counts
        bases = np.bincount(moments.support_codes, minlength=2)
        if norm == 0.0:  # a constant classifier: nothing to bound but the trivial 1
            means, variances = [0.0, 0.0], [0.0, 0.0]
        # A class with no point outside the bases has no statistics: its part is trivial.
        margins = [0.0 if n <= 0 else sign * mean for n, sign, mean in zip(outside, (-1.0, 1.0), means)]
        variances = [0.0 if n <= 0 else v for n, v in zip(outside, variances)]
        return fisher_discriminant_bound(
            (margins[1], margins[0]), (variances[1], variances[0]), (int(counts[1]), int(counts[0])),
            (int(bases[1]), int(bases[0])), delta=delta, radius=radius, variant=variant,
            labels=(self.classes_[1], self.classes_[0]),
        )
