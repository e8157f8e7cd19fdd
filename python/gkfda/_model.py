"""The Nyström projection and the Fisher discriminant on it (small k×k linear algebra).

Kept in NumPy: everything here is O(m k²) at most and LAPACK does it well; the O(m² k)
part is the greedy selection in Rust.

The projection is ``R = L⁻¹`` with ``L`` the Cholesky factor of ``K[i, i]``: row ``j`` of
``R`` only involves the first ``j`` bases, so the features of the model truncated to its
first ``j`` bases are the first ``j`` features of the full model. With the class means
and covariances of the features kept, every truncated model (the *sparsity path*) is a
``j×j`` solve, with no new selection and no new pass over the data.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import threadpoolctl

_blas_controller = None


@contextlib.contextmanager
def one_blas_thread():
    """BLAS limited to one thread for the models' small linear algebra.

    OpenBLAS's workers busy-wait for a while after each multi-threaded call, and on a
    small machine that spinning takes cores from the Rust passes that come next: one
    1,000×100 product before a ``greedy_select`` at m = 1,000 made it ~1.4× slower on
    2 cores, and fits run back to back (cross-validation, multiclass, grid search) ~2×
    slower. What runs here is O(m k²), small beside the O(m² k) selection, so one thread
    loses little. (threadpoolctl is scikit-learn's own dependency for this.)
    """
    global _blas_controller
    if _blas_controller is None:
        # Created on first use, after NumPy and SciPy have loaded their BLAS libraries.
        _blas_controller = threadpoolctl.ThreadpoolController()
    with _blas_controller.limit(limits=1, user_api="blas"):
        yield


@dataclass
class ClassStatistics:
    """Means and (biased) covariances of the training features, per class."""

    count_pos: int
    count_neg: int
    mean_pos: np.ndarray  # (k,)
    mean_neg: np.ndarray  # (k,)
    covariance_pos: np.ndarray  # (k, k)
    covariance_neg: np.ndarray  # (k, k)

    @classmethod
    def of(cls, features: np.ndarray, positive: np.ndarray) -> "ClassStatistics":
        pos, neg = features[positive], features[~positive]
        mean_pos, mean_neg = pos.mean(axis=0), neg.mean(axis=0)
        return cls(
            count_pos=len(pos),
            count_neg=len(neg),
            mean_pos=mean_pos,
            mean_neg=mean_neg,
            covariance_pos=(pos - mean_pos).T @ (pos - mean_pos) / len(pos),
            covariance_neg=(neg - mean_neg).T @ (neg - mean_neg) / len(neg),
        )

    def prefix(self, j: int) -> "ClassStatistics":
        return ClassStatistics(
            self.count_pos,
            self.count_neg,
            self.mean_pos[:j],
            self.mean_neg[:j],
            self.covariance_pos[:j, :j],
            self.covariance_neg[:j, :j],
        )


@dataclass
class BinaryModel:
    """One two-class discriminant: ``f(z) = w'R k(z) + b``, ``P(+|z) = expit(slope f(z))``."""

    support: np.ndarray  # training indices of the bases, in selection order
    projection: np.ndarray  # R = L⁻¹, lower triangular (k, k): R'R = K[support, support]⁻¹
    coef: np.ndarray  # w, shape (k,)
    intercept: float  # b
    proba_slope: float  # of the 1-D class-conditional Gaussians, pooled variance
    statistics: ClassStatistics
    reg: float
    stopped_early: bool
    kernel_passes: int

    def decision(self, kernel_to_support: np.ndarray) -> np.ndarray:
        return self.transform(kernel_to_support) @ self.coef + self.intercept

    def transform(self, kernel_to_support: np.ndarray) -> np.ndarray:
        return np.asarray(kernel_to_support, dtype=np.float64) @ self.projection.T

    def truncated(self, j: int) -> "BinaryModel":
        """The model a fit with only the first ``j`` bases gives (same selection prefix)."""
        j = min(int(j), len(self.support))
        statistics = self.statistics.prefix(j)
        coef, intercept, slope = fisher_discriminant(statistics, self.reg)
        return BinaryModel(
            support=self.support[:j],
            projection=self.projection[:j, :j],
            coef=coef,
            intercept=intercept,
            proba_slope=slope,
            statistics=statistics,
            reg=self.reg,
            stopped_early=self.stopped_early,
            kernel_passes=self.kernel_passes,
        )


def nystrom_projection(kernel_support: np.ndarray, relative_tolerance: float = 1e-10) -> np.ndarray:
    """``R = L⁻¹`` with ``L L' = K_ii`` (Cholesky, in selection order), guarded.

    A basis whose pivot (its kernel variance not explained by the earlier bases) is at
    most ``relative_tolerance · K_jj`` lies numerically in their span: it gets a zero
    row, so the feature map keeps ``k`` columns, stays finite, and spans the same
    Nyström subspace; ``R'R`` is then a generalised inverse of ``K_ii``.
    """
    A = np.asarray(kernel_support, dtype=np.float64)
    k = A.shape[0]
    L = np.zeros((k, k))
    dropped = np.zeros(k, dtype=bool)
    for j in range(k):
        # Left-looking Cholesky: column j minus the contributions of earlier columns.
        residual = A[j:, j] - L[j:, :j] @ L[j, :j]
        pivot = residual[0]
        if not pivot > relative_tolerance * max(A[j, j], 0.0):
            dropped[j] = True
            L[j, j] = 1.0  # a unit column keeps L invertible and other rows unaffected
            continue
        L[j:, j] = residual / np.sqrt(pivot)
    R = scipy.linalg.solve_triangular(L, np.eye(k), lower=True)
    R[dropped] = 0.0
    return R


def _solve_psd(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Cholesky solve, or the minimum-norm least-squares solution when ``matrix`` is
    numerically singular (``reg=0`` with dependent or constant features)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", scipy.linalg.LinAlgWarning)
            return scipy.linalg.solve(matrix, rhs, assume_a="pos")
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgWarning):
        return scipy.linalg.lstsq(matrix, rhs)[0]


def fisher_discriminant(statistics: ClassStatistics, reg: float):
    """``(w, b, slope)`` of the Fisher discriminant for given class statistics.

    ``w = (Σ_w + ridge·I)⁻¹ (μ₊ − μ₋)`` with ``Σ_w`` the average of the two class
    covariances and ``ridge = reg · trace(Σ_w)/k``; this is paper 000 eq. (1) with the
    features centred at the midpoint of the class means (``Φ'BΦ`` is proportional to
    ``Σ_w``). The bias puts the threshold at that midpoint. ``slope`` scales ``f`` to the
    log-odds of two Gaussians with the pooled variance and equal priors: they cross at
    ``f = 0``, so ``predict_proba`` agrees with ``predict``.
    """
    s = statistics
    k = len(s.mean_pos)
    within = (s.covariance_pos + s.covariance_neg) / 2.0
    trace = float(np.trace(within))
    # No within-class spread at all (or k = 0): any ridge gives the mean difference as the
    # direction, and 1 keeps it in feature units.
    ridge = reg * trace / k if trace > 0.0 else 1.0
    difference = s.mean_pos - s.mean_neg
    coef = _solve_psd(within + ridge * np.eye(k), difference)
    if not float(coef @ difference) > 0.0 and float(difference @ difference) > 0.0:
        # A singular within-class matrix (reg=0, k near m) can give a least-squares direction
        # that does not separate the means: the smallest ridge that makes it definite does.
        coef = _solve_psd(within + max(ridge, 1e-12 * max(trace, 1e-300) / k) * np.eye(k), difference)
    intercept = -float(coef @ (s.mean_pos + s.mean_neg)) / 2.0
    centre_pos = float(coef @ s.mean_pos) + intercept
    centre_neg = float(coef @ s.mean_neg) + intercept
    variance_pos = float(coef @ s.covariance_pos @ coef)
    variance_neg = float(coef @ s.covariance_neg @ coef)
    m = s.count_pos + s.count_neg
    pooled_variance = (s.count_pos * variance_pos + s.count_neg * variance_neg) / m
    mean_square = (s.count_pos * (variance_pos + centre_pos**2) + s.count_neg * (variance_neg + centre_neg**2)) / m
    pooled_variance = max(pooled_variance, 1e-12 * mean_square + 1e-300)
    return coef, intercept, float((centre_pos - centre_neg) / pooled_variance)


def fit_binary(
    kernel_train_support: np.ndarray,
    kernel_support: np.ndarray,
    positive: np.ndarray,
    support: np.ndarray,
    reg: float,
    stopped_early: bool,
    kernel_passes: int,
) -> BinaryModel:
    """Nyström features ``φ(X) = K[:, i] R'`` and the Fisher discriminant on them."""
    tolerance = 1e-5 if np.asarray(kernel_support).dtype == np.float32 else 1e-10
    with one_blas_thread():
        projection = nystrom_projection(kernel_support, tolerance)
        features = np.asarray(kernel_train_support, dtype=np.float64) @ projection.T
        statistics = ClassStatistics.of(features, positive)
        coef, intercept, slope = fisher_discriminant(statistics, reg)
    return BinaryModel(
        support=np.asarray(support, dtype=np.int64),
        projection=projection,
        coef=coef,
        intercept=intercept,
        proba_slope=slope,
        statistics=statistics,
        reg=reg,
        stopped_early=stopped_early,
        kernel_passes=kernel_passes,
    )
