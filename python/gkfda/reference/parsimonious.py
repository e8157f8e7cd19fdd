"""Plain NumPy reference of kFDA_q (parsimonious binary KFDA of Harrison & Pasupa, 2010).

The literal majorize–minimize iteration on the full ``(N+1)``-coefficient system, with no
pruning: every coefficient, however small, stays in the solve. It is the oracle of
:class:`gkfda.ParsimoniousKFDA` and the baseline of its benchmark, not the fast path.

With ``K̃ = [1 K]``, targets ``ŷ = N/N₁`` on the positive class and ``−N/N₂`` on the other,
and ``ω = [b; α]``, it minimises ``J(ω) = ½‖ŷ − K̃ω‖² + ρN Σᵢ |ωᵢ|^q`` by

    ω ← Ψ (Ψ K̃'K̃ Ψ + ρNq·P)⁻¹ Ψ K̃'ŷ,      Ψ = diag(|ωᵢ|^{(2−q)/2}),

where ``P`` is the identity, or the identity with a zero for the bias and ``Ψ₀₀ = 1`` when
the bias is not penalised. It stops when ``|J_old − J_new| ≤ tol·|J_old|``.

Examples
--------
>>> import numpy as np
>>> from gkfda.reference import parsimonious_fit, rbf_kernel
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(40, 2)); y = X[:, 0] + 0.3 * rng.normal(size=40) > 0
>>> omega, objective = parsimonious_fit(rbf_kernel(X, X, gamma=0.5), y, q=0.5, rho=0.05)
>>> omega.shape, bool(np.all(np.diff(objective) <= 1e-9 * objective[0]))
((41,), True)
"""

from __future__ import annotations

import numpy as np


def parsimonious_targets(y):
    """``ŷ``: ``N/N₁`` where ``y`` is true (the positive class), ``−N/N₂`` elsewhere."""
    y = np.asarray(y, dtype=bool)
    n, n_pos = len(y), int(y.sum())
    return np.where(y, n / n_pos, -n / (n - n_pos))


def parsimonious_objective(K, targets, omega, q, rho, penalize_bias=True):
    """``J(ω) = ½‖ŷ − K̃ω‖² + ρN Σ|ωᵢ|^q`` (the bias left out of the sum if not penalised)."""
    residual = targets - omega[0] - K @ omega[1:]
    penalised = omega if penalize_bias else omega[1:]
    return 0.5 * residual @ residual + rho * len(targets) * np.sum(np.abs(penalised) ** q)


def parsimonious_fit(K, y, q=1.0, rho=1e-3, tol=1e-5, max_iter=1000, penalize_bias=True, init=None):
    """``(ω, objective per iteration)``: the MM iterates of eq. 8 from ``init`` (default the
    ridge start ``(K̃'K̃ + λ₀I)⁻¹K̃'ŷ``, ``λ₀ = 10⁻³ tr(K̃'K̃)/(N+1)``, exact zeros made tiny).

    ``objective[0]`` is ``J`` at the start, ``objective[t]`` after iteration ``t``."""
    K = np.asarray(K, dtype=np.float64)
    n = K.shape[0]
    targets = parsimonious_targets(y)
    augmented = np.hstack([np.ones((n, 1)), K])
    gram = augmented.T @ augmented
    products = augmented.T @ targets
    if init is None:
        ridge = 1e-3 * np.trace(gram) / (n + 1)
        omega = np.linalg.solve(gram + ridge * np.eye(n + 1), products)
        omega[omega == 0.0] = 1e-300
    else:
        omega = np.array(init, dtype=np.float64)
    penalty = np.eye(n + 1)
    if not penalize_bias:
        penalty[0, 0] = 0.0
    ridge = rho * n * q
    objective = [parsimonious_objective(K, targets, omega, q, rho, penalize_bias)]
    for _ in range(max_iter):
        psi = np.abs(omega) ** ((2.0 - q) / 2.0)
        if not penalize_bias:
            psi[0] = 1.0
        system = psi[:, None] * gram * psi[None, :] + ridge * penalty
        if ridge > 0.0:
            omega = psi * np.linalg.solve(system, psi * products)
        else:  # ρ = 0: plain least squares, singular normal equations (minimum-norm solution)
            omega = psi * np.linalg.lstsq(system, psi * products, rcond=None)[0]
        objective.append(parsimonious_objective(K, targets, omega, q, rho, penalize_bias))
        if abs(objective[-2] - objective[-1]) <= tol * abs(objective[-2]):
            break
    return omega, np.array(objective)


def parsimonious_support(omega, threshold=1e-6):
    """Retained training indices: ``|αᵢ| > threshold · max|α|`` (the bias is not counted)."""
    alpha = np.abs(omega[1:])
    return np.flatnonzero(alpha > threshold * alpha.max()) if alpha.max() > 0 else np.zeros(0, dtype=np.int64)
