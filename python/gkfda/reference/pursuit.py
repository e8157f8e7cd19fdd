"""Plain NumPy references of the matching-pursuit family: kernel matching pursuit (KMP),
sparse kernel PCA (SKPCA) and sparse kernel CCA (SKCCA), and their final models.

Each selection materialises the deflated kernel ``K_t`` and rewrites it after every pick,
recomputing the per-column statistics from it, straight from the formulas
(``docs/architecture.md``, "The matching-pursuit family"). They are the oracles of the
Rust engine (``gkfda._core.pursuit_select``) and share its semantics, so that both pick
the same indices:

* a column is admissible while it is not chosen and its statistic is above ``tol`` times
  its value in ``K_0``: the squared column norm for KMP, the diagonal entry for SKPCA, both
  views' squared column norms for SKCCA;
* ties go to the lowest index;
* the selection stops early when no admissible column is left;
* ``scores[s]`` is pick ``s``'s score when it was picked (for SKPCA the decrease of the
  trace of ``K_t``).

Examples
--------
>>> import numpy as np
>>> from gkfda import reference
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(60, 2)); y = np.sin(2 * X[:, 0])
>>> K = reference.rbf_kernel(X, X, gamma=0.5)
>>> idx, scores = reference.matching_pursuit_select(K, y, k=8)
>>> coef, intercept = reference.matching_pursuit_fit(K, y, idx)
>>> rss = np.sum((K[:, idx] @ coef - y) ** 2)  # each score² is its pick's decrease of it
>>> bool(np.isclose(y @ y - rss, np.sum(scores**2)))
True
>>> idx, rho = reference.sparse_pca_select(K, k=10)
>>> Z = reference.nystrom_features(K[:, idx], K[np.ix_(idx, idx)])
>>> residual = np.trace(K) - np.sum(Z**2)  # of every point to the chosen subspace
>>> bool(np.isclose(np.trace(K) - rho.sum(), residual))
True
"""

from __future__ import annotations

import numpy as np

from ._tolerance import default_tol


def _pursue(k, kernels, scored, deflate):
    """The greedy loop shared by the three methods: while fewer than ``k`` are chosen,
    ``scored(kernels)`` gives every column's score and admissibility, the admissible column
    of the largest score (the lowest index on ties) is chosen, and ``deflate(kernels, i)``
    gives the next deflated kernels."""
    chosen = np.zeros(kernels[0].shape[0], dtype=bool)
    indices, scores = [], []
    while len(indices) < k:
        with np.errstate(divide="ignore", invalid="ignore"):
            score, admissible = scored(kernels)
        admissible = admissible & ~chosen
        if not admissible.any():
            break
        i = int(np.argmax(np.where(admissible, score, -np.inf)))
        indices.append(i)
        scores.append(float(score[i]))
        chosen[i] = True
        kernels = deflate(kernels, i)
    return np.asarray(indices, dtype=np.int64), np.asarray(scores, dtype=np.float64)


def _project_out(Kt, i):
    """``(I − ττ'/τ'τ) K_t`` with ``τ = K_t[:, i]``: projection deflation."""
    tau = Kt[:, i].copy()
    return Kt - np.outer(tau, tau @ Kt) / (tau @ tau)


def _squared_norms(K):
    return np.sum(K**2, axis=0)


def matching_pursuit_select(K, y, k, tol=None):
    """Kernel matching pursuit with pre-fitting: greedy selection of kernel columns.

    At each pick, the column ``j`` of the deflated kernel with the largest
    ``|K_t[:, j]'y| / ‖K_t[:, j]‖`` (the largest decrease of the least-squares residual
    when ``K_0[:, j]`` joins the chosen columns), then projection deflation
    ``K_{t+1} = (I − ττ'/τ'τ) K_t``.

    Parameters
    ----------
    K : array of shape (m, m)
        Symmetric training kernel; copied, never modified.
    y : array of shape (m,)
        Regression target.
    k : int
        Number of columns to choose.
    tol : float or None
        Relative admissibility threshold; ``default_tol(K.dtype)`` if None.

    Returns
    -------
    indices : int64 array of shape (k',)
    scores : float64 array of shape (k',)
    """
    tol = default_tol(np.asarray(K).dtype) if tol is None else tol
    K0 = np.array(K, dtype=np.float64, copy=True)
    y = np.asarray(y, dtype=np.float64)
    threshold = tol * _squared_norms(K0)

    def scored(kernels):
        (Kt,) = kernels
        q = _squared_norms(Kt)
        return np.abs(Kt.T @ y) / np.sqrt(q), q > threshold

    return _pursue(k, [K0], scored, lambda kernels, i: [_project_out(kernels[0], i)])


def sparse_pca_select(K, k, tol=None):
    """Sparse kernel PCA: greedy selection of the points whose feature-space directions
    explain the most of the others.

    At each pick, the index ``j`` with the largest ``‖K_t[:, j]‖² / K_t[j, j]`` (the
    decrease of ``tr K_t``, the total squared residual of the training points outside
    the chosen subspace), then ``K_{t+1} = K_t − ττ'/τ_j`` (one step of pivoted
    Cholesky).

    Returns
    -------
    indices : int64 array of shape (k',)
    scores : float64 array of shape (k',)
        The trace decrease of each pick.
    """
    tol = default_tol(np.asarray(K).dtype) if tol is None else tol
    K0 = np.array(K, dtype=np.float64, copy=True)
    threshold = tol * np.diagonal(K0).copy()

    def scored(kernels):
        (Kt,) = kernels
        d = np.diagonal(Kt)
        return _squared_norms(Kt) / d, d > threshold

    def deflate(kernels, i):
        tau = kernels[0][:, i].copy()
        return [kernels[0] - np.outer(tau, tau) / tau[i]]

    return _pursue(k, [K0], scored, deflate)


def sparse_cca_select(Kx, Ky, k, signed=True, tol=None):
    """Sparse kernel CCA: greedy selection of the paired points whose kernel columns in
    the two views are most correlated.

    At each pick, the index ``j`` with the largest cosine
    ``K_{x,t}[:, j]'K_{y,t}[:, j] / (‖K_{x,t}[:, j]‖ ‖K_{y,t}[:, j]‖)`` (its absolute value
    when ``signed=False``), then projection deflation of each view with its own column
    ``j``.

    Returns
    -------
    indices : int64 array of shape (k',)
    scores : float64 array of shape (k',)
    """
    tol = default_tol(np.asarray(Kx).dtype) if tol is None else tol
    Kx = np.array(Kx, dtype=np.float64, copy=True)
    Ky = np.array(Ky, dtype=np.float64, copy=True)
    threshold_x, threshold_y = tol * _squared_norms(Kx), tol * _squared_norms(Ky)

    def scored(kernels):
        Kx, Ky = kernels
        qx, qy = _squared_norms(Kx), _squared_norms(Ky)
        score = np.sum(Kx * Ky, axis=0) / np.sqrt(qx * qy)
        return (score if signed else np.abs(score)), (qx > threshold_x) & (qy > threshold_y)

    return _pursue(k, [Kx, Ky], scored, lambda kernels, i: [_project_out(K, i) for K in kernels])


def matching_pursuit_fit(K, y, indices, fit_intercept=False):
    """KMP's final model: least squares of ``y`` on the ORIGINAL kernel's columns
    ``K[:, indices]`` (and a constant column when ``fit_intercept``).

    Returns ``(coef, intercept)``: ``f(x) = k_indices(x)'coef + intercept``.
    """
    A = np.asarray(K, dtype=np.float64)[:, indices]
    if fit_intercept:
        A = np.column_stack([A, np.ones(A.shape[0])])
    solution = np.linalg.lstsq(A, np.asarray(y, dtype=np.float64), rcond=None)[0]
    if fit_intercept:
        return solution[:-1], float(solution[-1])
    return solution, 0.0


def nystrom_features(K_cross, K_sub):
    """Nyström features ``z(x) = L⁻¹ k(x)`` with ``L L' = K_sub`` (Cholesky), for the rows
    of ``K_cross = K(X, X[indices])``; on the training set they satisfy ``Z Z' =
    K[:, i] K[i, i]⁻¹ K[i, :]``."""
    L = np.linalg.cholesky(np.asarray(K_sub, dtype=np.float64))
    return np.linalg.solve(L, np.asarray(K_cross, dtype=np.float64).T).T


def canonical_correlation(Zx, Zy, n_components, reg=0.0, center=False):
    """Primal CCA of two feature sets, by its generalised eigenproblem.

    ``[0 Cxy; Cyx 0] w = λ [Cxx 0; 0 Cyy] w`` with ``C = Z'Z/m`` (after subtracting the
    column means when ``center``) and ``reg`` times each view's mean eigenvalue added to
    ``Cxx`` and ``Cyy``. Each direction is normalised so that ``w'C w = 1`` (unit mean
    square of the projections) and its largest entry in ``w_x`` is positive.

    Returns ``(Wx, Wy, correlations)``, the largest ``n_components`` correlations first.
    """
    from scipy.linalg import eigh

    Zx = np.asarray(Zx, dtype=np.float64)
    Zy = np.asarray(Zy, dtype=np.float64)
    if center:
        Zx, Zy = Zx - Zx.mean(axis=0), Zy - Zy.mean(axis=0)
    m, kx = Zx.shape
    ky = Zy.shape[1]
    Cxx, Cyy, Cxy = Zx.T @ Zx / m, Zy.T @ Zy / m, Zx.T @ Zy / m
    Cxx = Cxx + reg * np.trace(Cxx) / kx * np.eye(kx)
    Cyy = Cyy + reg * np.trace(Cyy) / ky * np.eye(ky)
    A = np.block([[np.zeros((kx, kx)), Cxy], [Cxy.T, np.zeros((ky, ky))]])
    B = np.block([[Cxx, np.zeros((kx, ky))], [np.zeros((ky, kx)), Cyy]])
    values, vectors = eigh(A, B)
    order = np.argsort(-values)[:n_components]
    Wx, Wy = vectors[:kx, order], vectors[kx:, order]
    # eigh normalises w'Bw = 1 over both views; each view carries half.
    Wx = Wx / np.sqrt(np.einsum("ij,ik,kj->j", Wx, Cxx, Wx))
    Wy = Wy / np.sqrt(np.einsum("ij,ik,kj->j", Wy, Cyy, Wy))
    sign = np.sign(Wx[np.argmax(np.abs(Wx), axis=0), np.arange(Wx.shape[1])])
    return Wx * sign, Wy * sign, values[order]
