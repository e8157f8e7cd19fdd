"""Plain NumPy reference implementation of greedy KFDA.

Written straight from the papers' equations (``docs/architecture.md``; Diethe (2015),
Algorithm 1): the deflated kernel ``K_t`` is materialised and rewritten at every pick,
the per-column statistics are recomputed from it, and the Fisher discriminant in the
Nyström space is solved with the paper's ``B`` matrix. It costs O(m²) memory and
O(m²) work per pick with large constants and is kept deliberately simple: it is the
test oracle of the Rust engine and the baseline of the benchmarks, not the fast path.

Semantics shared with the Rust engine (so that both pick the same indices):

* ``C ≥ 2`` classes share one basis: column ``i`` of ``K_t`` has the class sums
  ``s_c[i] = Σ_{j∈c} K_t[j, i]``; with ``w_c = H/m_c`` (``H`` the harmonic mean of the class
  sizes ``m_c``) and ``D_j = w_c`` on class ``c``, it scores the numerator
  ``Σ_{c<c'} (s_c[i] − s_c'[i])²`` over the denominator ``d_i − Σ_c (w_c/m_c) s_c[i]²``,
  which for two classes are ``(p − n)²`` and the paper's ``c_i'Bc_i``;
* admissible candidates are the columns not chosen or skipped before, whose
  ``d_i = Σ_j D_j K_t[j, i]²`` exceeds ``tol · d_i(K_0)`` and, for the criteria whose
  score is a ratio (``RATIO_CRITERIA``, the core's list: ``optimal`` and ``reverse``), whose
  denominator ``c_i'Bc_i`` exceeds the same threshold;
* ``min`` criteria are maximised as negated scores; ``random`` scores ``-rank`` in a
  permutation drawn with ``sklearn.utils.check_random_state(random_state)``;
* ties go to the lowest index;
* a stage takes the ``S`` best admissible candidates of the statistics at the stage
  start, then deflates for each in that order; a candidate whose current column has
  become numerically zero (``d`` below the threshold) or, for ``ortho-*``, whose
  direction lies in the span of the earlier ones, is skipped and never offered again;
* selection stops early when no admissible candidate remains.

Examples
--------
>>> import numpy as np
>>> from gkfda import reference
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(40, 3)); y = np.where(X[:, 0] > 0, 1, -1)
>>> K = reference.rbf_kernel(X, X, gamma=0.5)
>>> idx = reference.select(K, y, k=5, criterion="optimal", deflation="schur")
>>> len(idx), len(set(idx.tolist()))
(5, 5)
>>> model = reference.fit_model(K, y, idx, reg=1e-4)
>>> float(np.mean(np.sign(reference.decision_function(model, K[:, idx])) == y)) > 0.8
True
"""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

from .._core import CRITERIA, DEFLATIONS, RATIO_CRITERIA
from ._tolerance import default_tol
from .parsimonious import parsimonious_fit, parsimonious_objective, parsimonious_support, parsimonious_targets
from .pursuit import (
    canonical_correlation, matching_pursuit_fit, matching_pursuit_select, nystrom_features, sparse_cca_select,
    sparse_pca_select,
)

# The names of this module's page: its own functions and the tolerance they share with the pursuits'
# oracles (the pursuits' and kFDA_q's are documented in their modules).
__all__ = [
    "default_tol", "rbf_kernel", "select", "nystrom_projection", "fit_model", "predict_log_proba",
    "decision_function",
]


def rbf_kernel(X, Z, gamma):
    """``exp(-gamma * ||x - z||²)`` for every pair of rows, by the textbook formula."""
    X = np.asarray(X, dtype=float)
    Z = np.asarray(Z, dtype=float)
    sq = (X**2).sum(1)[:, None] + (Z**2).sum(1)[None, :] - 2.0 * X @ Z.T
    return np.exp(-gamma * np.maximum(sq, 0.0))


def _class_codes(y):
    """Class codes ``0..C-1`` of ``select``'s ``y``: booleans and signed labels as two
    classes (``y > 0`` is code 1), non-negative integers as they are."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y: must be 1-D, got shape {y.shape}")
    if y.dtype == bool or not np.issubdtype(y.dtype, np.integer) or (y < 0).any():
        codes = (y > 0).astype(np.int64)
    else:
        codes = y.astype(np.int64)
    sizes = np.bincount(codes)
    if sizes.size < 2 or not sizes.all():
        raise ValueError("y: needs class codes 0..C-1 with C >= 2, every class present")
    return codes


def _within_class_diagonal(y):
    """The diagonal ``D`` of ``B = D − C`` (Diethe, 2015, eq. 2)."""
    pos = y > 0
    m = y.size
    m_pos = int(pos.sum())
    return np.where(pos, 2.0 * (m - m_pos) / m, 2.0 * m_pos / m)


def _class_weights(y):
    """``D`` and the block-constant ``C`` of ``B = D − C``; ``C`` is m×m, so only the model uses it."""
    pos = y > 0
    m = y.size
    m_pos = int(pos.sum())
    m_neg = m - m_pos
    D = _within_class_diagonal(y)
    C = np.zeros((m, m))
    C[np.ix_(pos, pos)] = 2.0 * m_neg / (m * m_pos)
    C[np.ix_(~pos, ~pos)] = 2.0 * m_pos / (m * m_neg)
    return D, C


def _deflate(Kt, x, deflation):
    """Return the deflated kernel for direction ``x`` (a unit vector)."""
    if deflation == "none":
        return Kt
    family = deflation.removeprefix("ortho-")
    if family == "hotelling":
        return Kt - (x @ Kt @ x) * np.outer(x, x)
    if family == "projection":
        return Kt - np.outer(x, x @ Kt)
    if family == "schur":
        Ktx = Kt @ x
        lam = x @ Ktx
        if lam <= 0.0:
            return Kt
        return Kt - np.outer(Ktx, Kt.T @ x) / lam
    # A deflation the core lists but this oracle lacks must not pass as "none".
    raise ValueError(f"deflation: the reference has no explicit deflation {deflation!r}")


def select(
    K,
    y,
    k,
    criterion="optimal",
    deflation="projection",
    stages=1,
    random_state=None,
    tol=None,
):
    """Greedy basis selection of Diethe (2015), Algorithm 1, with explicit deflation.

    Parameters
    ----------
    K : array of shape (m, m)
        Symmetric PSD training kernel. It is copied, never modified.
    y : array of shape (m,)
        Two-class labels, booleans or signs (``y > 0`` is the positive class), or
        non-negative integer class codes ``0..C-1``, every class present (for two
        classes code 1 is the positive class).
    k : int
        Number of bases to choose.
    criterion, deflation : str
        See ``CRITERIA`` and ``DEFLATIONS``; the defaults are ``GreedyKFDA``'s.
    stages : int
        ``S``, the number of bases taken per stage from the stage-start scores.
    random_state : int, Generator or None
        Seed of the ``random`` criterion's permutation.
    tol : float or None
        Relative threshold of the numerical guards; ``default_tol(K.dtype)`` if None.

    Returns
    -------
    indices : int64 array
        The chosen training indices in selection order (shorter than ``k`` on an
        early stop).
    """
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}, got {criterion!r}")
    if deflation not in DEFLATIONS:
        raise ValueError(f"deflation must be one of {DEFLATIONS}, got {deflation!r}")
    Kt = np.array(K, dtype=np.float64, copy=True)
    codes = _class_codes(y)
    m = codes.size
    tol = default_tol(np.asarray(K).dtype) if tol is None else tol
    sizes = np.bincount(codes).astype(np.float64)
    n_classes = sizes.size
    harmonic = n_classes / np.sum(1.0 / sizes)
    w = harmonic / sizes  # D on each class; for two classes 2·m_other/m
    D = w[codes]
    members = (codes[None, :] == np.arange(n_classes)[:, None]).astype(np.float64)  # C×m
    pairs = [(c, other) for c in range(n_classes) for other in range(c + 1, n_classes)]
    d0 = D @ Kt**2
    threshold = tol * d0
    blocked = np.zeros(m, dtype=bool)  # chosen or skipped: never a candidate again
    chosen: list[int] = []
    Q: list[np.ndarray] = []
    if criterion == "random":
        order = check_random_state(random_state).permutation(m)
        rank = np.empty(m)
        rank[order] = np.arange(m)
    while len(chosen) < k:
        sums = members @ Kt  # sums[c, i]: column i's sum over class c
        d = D @ Kt**2
        numerator = sum((sums[c] - sums[other]) ** 2 for c, other in pairs)
        # c'Bc = Σ_j D_j c_j² − Σ_c (w_c/m_c)(Σ_{j∈c} c_j)²: B = D − C expanded.
        denom = d - (w / sizes) @ sums**2
        admissible = ~blocked & (d > threshold)
        if criterion in RATIO_CRITERIA:  # the core's rule: its score divides by the scatter
            admissible &= denom > threshold
        if not admissible.any():
            break
        with np.errstate(divide="ignore", invalid="ignore"):
            scores = {
                "optimal": numerator / denom,
                "pseudo": numerator,
                "reverse": -numerator / denom,
                "reverse-pseudo": -numerator,
                "random": -rank if criterion == "random" else None,
            }
        if criterion not in scores:
            raise ValueError(f"criterion: the reference has no score for {criterion!r}")
        score = scores[criterion]
        candidates = np.flatnonzero(admissible)
        best_first = candidates[np.argsort(-score[candidates], kind="stable")]
        picks = best_first[: min(stages, k - len(chosen))]
        for s, i in enumerate(picks):
            blocked[i] = True
            column = Kt[:, i]
            if s > 0 and D @ column**2 <= threshold[i]:
                continue
            x = column / np.linalg.norm(column)
            if deflation.startswith("ortho-"):
                for q in Q:
                    x = x - (q @ column / np.linalg.norm(column)) * q
                norm = np.linalg.norm(x)
                if norm**2 <= tol:
                    continue
                x = x / norm
                Q.append(x)
            chosen.append(int(i))
            Kt = _deflate(Kt, x, deflation)
    return np.asarray(chosen, dtype=np.int64)


def nystrom_projection(K_sub):
    """``R`` with ``R'R = K_sub⁻¹`` by Cholesky, as in the paper (eq. 5)."""
    K_sub = np.asarray(K_sub, dtype=np.float64)
    inverse = np.linalg.inv(K_sub)
    inverse = (inverse + inverse.T) / 2.0
    # numpy's Cholesky gives lower L with L L' = inv; R = L' satisfies R'R = inv.
    return np.linalg.cholesky(inverse).T


def fit_model(K, y, indices, reg=1e-4, priors=None):
    """The calibrated Fisher discriminant of ``GreedyKFDA`` on the bases ``indices``,
    straight from its definition (docs/architecture.md, "The discriminant and its
    calibration"), for labels ``y`` of any number of classes.

    Leave-one-out is done literally, one ridge regression per left-out sample, and the
    temperature by a bounded scalar minimisation, where the estimator uses closed forms.
    """
    from scipy.optimize import minimize_scalar

    classes, codes = np.unique(np.asarray(y), return_inverse=True)
    n_classes, m = len(classes), len(codes)
    counts = np.bincount(codes)
    weights = m / (n_classes * counts[codes])
    targets = np.eye(n_classes)[codes][:, 1:]
    R = nystrom_projection(np.asarray(K)[np.ix_(indices, indices)])
    Phi = np.asarray(K, dtype=np.float64)[:, indices] @ R.T
    scale = float(np.mean(np.diag(K)))
    ridge = m * max(reg, 1e-6) * (scale if scale > 0 else 1.0)

    def regression(rows):
        w = weights[rows]
        mean_phi = w @ Phi[rows] / w.sum()
        mean_y = w @ targets[rows] / w.sum()
        centred = Phi[rows] - mean_phi
        gram = centred.T @ (w[:, None] * centred) + ridge * np.eye(Phi.shape[1])
        beta = np.linalg.solve(gram, centred.T @ (w[:, None] * (targets[rows] - mean_y)))
        return mean_phi, mean_y, beta

    def scores(fit, rows):
        mean_phi, mean_y, beta = fit
        return mean_y + (Phi[rows] - mean_phi) @ beta

    everyone = np.arange(m)
    full = regression(everyone)
    left_out = np.array([scores(regression(everyone != i), [i])[0] for i in range(m)])

    # LDA on the leave-one-out scores, covariance shrunk 0.3 toward its mean eigenvalue.
    centre = left_out.mean(axis=0)
    S = left_out - centre
    dims = S.shape[1]
    means = np.array([S[codes == c].mean(axis=0) for c in range(n_classes)])
    covariance = (S - means[codes]).T @ (S - means[codes]) / m
    trace = np.trace(covariance)
    floor = 1e-9 * trace / dims + 1e-12 * np.sum(S**2) / m + 1e-300
    covariance = 0.7 * covariance + (0.3 * trace / dims + floor) * np.eye(dims)
    P = np.linalg.solve(covariance, means.T)
    quadratic = np.einsum("cd,dc->c", means, P)
    Z = S @ P - quadratic / 2.0

    # One temperature, by the cross-entropy to Platt's smoothed targets.
    log_empirical = np.log(counts / m)
    true = (counts[codes] + 1.0) / (counts[codes] + 2.0)
    smoothed = np.repeat(((1.0 - true) / (n_classes - 1))[:, None], n_classes, axis=1)
    smoothed[everyone, codes] = true

    def cross_entropy(T):
        logits = T * Z + log_empirical
        logits = logits - logits.max(axis=1, keepdims=True)
        return -np.sum(smoothed * (logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))))

    T = minimize_scalar(cross_entropy, bounds=(0.0, 1e6), method="bounded", options={"xatol": 1e-12}).x
    A, c = T * P, -T * (quadratic / 2.0 + centre @ P)

    # A calibration that ranks the training points' own scores worse than the priors is
    # an artefact of leave-one-out: the priors alone.
    own = scores(full, everyone) @ A + c + log_empirical
    own = own - own.max(axis=1, keepdims=True)
    own_loss = -np.mean((own - np.log(np.exp(own).sum(axis=1, keepdims=True)))[everyone, codes])
    if own_loss > -np.mean(log_empirical[codes]):
        A, c = np.zeros_like(A), np.zeros_like(c)
    log_priors = log_empirical if priors is None else np.log(np.asarray(priors, dtype=np.float64))
    mean_phi, mean_y, beta = full
    return {"R": R, "mean_phi": mean_phi, "mean_y": mean_y, "beta": beta, "A": A, "c": c + log_priors}


def predict_log_proba(model, K_cross_support):
    """Log class probabilities; ``K_cross_support`` is ``K(Z, X[indices])``."""
    phi = np.asarray(K_cross_support, dtype=np.float64) @ model["R"].T
    logits = (model["mean_y"] + (phi - model["mean_phi"]) @ model["beta"]) @ model["A"] + model["c"]
    logits = logits - logits.max(axis=1, keepdims=True)
    return logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))


def decision_function(model, K_cross_support):
    """Two classes: the log-odds of the second; more: the log-probabilities."""
    log_proba = predict_log_proba(model, K_cross_support)
    return log_proba[:, 1] - log_proba[:, 0] if log_proba.shape[1] == 2 else log_proba

