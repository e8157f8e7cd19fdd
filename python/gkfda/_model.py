"""The Nyström projection and the Fisher discriminant on it (small k×k linear algebra).

Kept in NumPy: everything here is O(m k²) at most and LAPACK does it well; the O(m² k)
part is the greedy selection in Rust.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg


@dataclass
class BinaryModel:
    """One two-class discriminant: ``f(z) = w'R k(z) + b``, ``P(+|z) = expit(slope f(z))``."""

    support: np.ndarray  # training indices of the bases, in selection order
    projection: np.ndarray  # R, shape (k, k): R'R = pinv(K[support, support])
    coef: np.ndarray  # w, shape (k,)
    intercept: float  # b
    proba_slope: float  # of the 1-D class-conditional Gaussians, pooled variance
    stopped_early: bool
    kernel_passes: int

    def decision(self, kernel_to_support: np.ndarray) -> np.ndarray:
        return self.transform(kernel_to_support) @ self.coef + self.intercept

    def transform(self, kernel_to_support: np.ndarray) -> np.ndarray:
        return np.asarray(kernel_to_support, dtype=np.float64) @ self.projection.T


def nystrom_projection(kernel_support: np.ndarray) -> np.ndarray:
    """``R`` with ``R'R = pinv(K_ii)``, by a guarded symmetric eigendecomposition.

    Directions whose eigenvalue is below ``k · eps · λ_max`` (numerically dependent
    bases) get a zero row, so the feature map keeps ``k`` columns and stays finite.
    """
    kernel_support = np.asarray(kernel_support, dtype=np.float64)
    kernel_support = (kernel_support + kernel_support.T) / 2.0
    eigenvalues, eigenvectors = np.linalg.eigh(kernel_support)
    cutoff = max(eigenvalues.max(initial=0.0), 0.0) * len(eigenvalues) * np.finfo(np.float64).eps
    keep = eigenvalues > cutoff
    inverse_sqrt = np.zeros_like(eigenvalues)
    inverse_sqrt[keep] = 1.0 / np.sqrt(eigenvalues[keep])
    return inverse_sqrt[:, None] * eigenvectors.T


def _solve_psd(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Cholesky solve, or the minimum-norm least-squares solution when ``matrix`` is
    numerically singular (``reg=0`` with dependent or constant features)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", scipy.linalg.LinAlgWarning)
            return scipy.linalg.solve(matrix, rhs, assume_a="pos")
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgWarning):
        return scipy.linalg.lstsq(matrix, rhs)[0]


def fit_binary(
    kernel_train_support: np.ndarray,
    kernel_support: np.ndarray,
    positive: np.ndarray,
    support: np.ndarray,
    reg: float,
    stopped_early: bool,
    kernel_passes: int,
) -> BinaryModel:
    """Linear Fisher discriminant on the Nyström features ``φ(X) = K[:, i] R'``.

    ``w = (Σ_w + ridge·I)⁻¹ (μ₊ − μ₋)`` with ``Σ_w`` the average of the two class
    covariances and ``ridge = reg · trace(Σ_w)/k``; this is paper 000 eq. (1) with the
    features centred at the midpoint of the class means (``Φ'BΦ`` is proportional to
    ``Σ_w``). The bias puts the threshold at that midpoint.
    """
    projection = nystrom_projection(kernel_support)
    features = np.asarray(kernel_train_support, dtype=np.float64) @ projection.T
    mean_pos = features[positive].mean(axis=0)
    mean_neg = features[~positive].mean(axis=0)
    centred_pos = features[positive] - mean_pos
    centred_neg = features[~positive] - mean_neg
    within = (
        centred_pos.T @ centred_pos / positive.sum() + centred_neg.T @ centred_neg / (~positive).sum()
    ) / 2.0
    k = len(support)
    trace = float(np.trace(within))
    # No within-class spread at all (or k = 0): any ridge gives the mean difference as the
    # direction, and 1 keeps it in feature units.
    ridge = reg * trace / k if trace > 0.0 else 1.0
    coef = _solve_psd(within + ridge * np.eye(k), mean_pos - mean_neg)
    intercept = -float(coef @ (mean_pos + mean_neg)) / 2.0
    projected = features @ coef + intercept
    spread = np.concatenate(
        [projected[positive] - projected[positive].mean(), projected[~positive] - projected[~positive].mean()]
    )
    pooled_variance = max(float(np.mean(spread**2)), 1e-12 * float(np.mean(projected**2)) + 1e-300)
    # With equal priors and a pooled variance the two Gaussians cross at the midpoint,
    # i.e. at f = 0, so predict_proba agrees with predict; the log-odds are linear in f.
    gap = projected[positive].mean() - projected[~positive].mean()
    return BinaryModel(
        support=np.asarray(support, dtype=np.int64),
        projection=projection,
        coef=coef,
        intercept=intercept,
        proba_slope=float(gap / pooled_variance),
        stopped_early=stopped_early,
        kernel_passes=kernel_passes,
    )
