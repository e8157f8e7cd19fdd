"""The kernel factor of a factored fit: ``K ≈ ΦΦ'`` with ``Φ`` of ``m × p`` (docs/scale.md).

``kernel="linear"``: ``Φ = X``, exact; a sparse ``X`` stays sparse, its products taken by the
core over its stored values (``operator::SparseFactor``). ``rbf`` and ``poly``: the Nyström
factor of a pool of ``p`` training points (dense or CSR), ``Φ = K[:, P] W`` with
``WW' = K[P, P]⁺`` (``_core.nystroem_factor``, built in row blocks in the core), the pool
chosen on a uniform subsample of the training set by one of ``POOLS``:

- ``"uniform"``: the first ``p`` points of a uniform permutation;
- ``"greedy"``: pivoted Cholesky, each pivot the point of largest residual diagonal;
- ``"rpcholesky"``: randomly pivoted Cholesky (Chen, Epperly, Tropp and Webber, 2022), each
  pivot drawn with probability proportional to the residual diagonal.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import issparse
from sklearn.utils._param_validation import StrOptions

from . import _core
from ._kernels import _count, kernel_overflow_message
from ._progress import SILENT
from ._sparse import row_squared_norms

SOLVERS = ("auto", "dense", "factored")
POOLS = ("rpcholesky", "greedy", "uniform")
#: ``factor_rank``'s default: the rank of the Nyström factor chosen for each fit from its ``k``
#: (:func:`auto_factor_rank`).
DEFAULT_FACTOR_RANK = "auto"
#: ``factor_rank``'s rule, the same for every estimator that takes it: ``"auto"`` or a count.
FACTOR_RANK_CONSTRAINT = [StrOptions({"auto"}), _count()]
# factor_rank="auto": at least `AUTO_RANK_PER_BASIS` columns of Φ a basis and at least
# `AUTO_RANK_MIN` in all: in the rank sweep at m = 20,000, k = 200 (docs/scale.md,
# "Measured"), p = 1,000 is the knee, at about the dense fit's time; doubling it gains less
# than a point for 3× the time.
AUTO_RANK_PER_BASIS = 2
AUTO_RANK_MIN = 1000
#: ``solver="auto"`` is dense up to this many samples (docs/scale.md).
AUTO_DENSE_MAX_SAMPLES = 20_000
# The subsample the pivoted pools are chosen from: `SUBSAMPLE_PER_PIVOT` points a pivot, at
# least `SUBSAMPLE_MIN` (or every point): the Cholesky on it costs O(s p²).
SUBSAMPLE_PER_PIVOT = 8
SUBSAMPLE_MIN = 10_000


def resolved_solver(solver, core_name, kernel_name, m, dense_fits) -> str:
    """``solver`` resolved for a fit of ``m`` samples: ``auto`` is ``dense`` up to
    ``AUTO_DENSE_MAX_SAMPLES`` when ``dense_fits()`` (the dense fit fits in memory),
    ``factored`` beyond. A kernel the core does not compute (``core_name`` None: precomputed
    or callable) is dense; ``factored`` of one is a ValueError naming ``solver``."""
    if solver == "factored":
        if core_name is None:
            raise ValueError(
                f"solver: 'factored' needs a kernel the core computes (rbf, linear or poly), got kernel={kernel_name!r}"
            )
        return "factored"
    if solver == "dense" or core_name is None:
        return "dense"
    if m > AUTO_DENSE_MAX_SAMPLES:
        return "factored"
    return "dense" if dense_fits() else "factored"


def auto_factor_rank(k, m, largest=None) -> int:
    """``factor_rank="auto"`` for ``k`` bases among ``m`` samples: ``max(2k, 1000)``, at most
    ``m``, lowered to ``largest`` (the largest rank that fits in memory) but never below
    ``k``: a factor of rank ``p`` holds at most ``p`` bases, and a fit that cannot hold a
    factor of rank ``k`` is refused by the memory check that found ``largest``."""
    rank = min(max(AUTO_RANK_PER_BASIS * int(k), AUTO_RANK_MIN), int(m))
    if largest is not None:
        rank = min(rank, int(largest))
    return max(rank, min(int(k), int(m)))


def factor_width(core_name, n_features, m, factor_rank) -> int:
    """``p``, the columns of ``Φ``: the features for ``linear`` (``Φ = X``), else
    ``factor_rank``, at most ``m``."""
    return int(n_features) if core_name == "linear" else min(int(factor_rank), int(m))


def diagonal(X, kernel, gamma, degree, coef0) -> np.ndarray:
    """``κ(x, x)`` of each row of ``X`` (dense or CSR), in float64."""
    if kernel == "rbf":
        return np.ones(X.shape[0])
    squared = row_squared_norms(X) if issparse(X) else np.einsum("ij,ij->i", X, X, dtype=np.float64)
    if kernel == "linear":
        return squared
    return (gamma * squared + coef0) ** degree


_NORM_BLOCK_ROWS = 8192


def check_kernel_range(X, kernel, params, dtype, argument="X") -> None:
    """Refuse, before a pool is drawn, rows ``X`` whose kernel overflows ``dtype`` where the
    core computes it: the squared norms (and an RBF's ``|x|² + |z|²``), a linear kernel's
    ``x·z`` and a polynomial's ``(gamma x·z + coef0)^degree``, each at most its value for the
    row of largest norm (Cauchy–Schwarz). The dense fit finds the same overflow in its
    matrix; a factor would otherwise fail in the pool's eigendecomposition or with NaN rows."""
    if X.shape[0] == 0 or kernel is None:
        return
    largest = float(np.finfo(dtype).max)
    with np.errstate(over="ignore", invalid="ignore"):
        if issparse(X):  # the core's sparse kernels do not centre, and sum in float64
            squared = float(np.max(row_squared_norms(X)))
        else:
            # The core moves float32 rows by their float64 mean before an RBF's norms.
            centre = X.mean(axis=0, dtype=np.float64) if kernel == "rbf" and np.dtype(dtype) == np.float32 else 0.0
            squared = 0.0
            for start in range(0, len(X), _NORM_BLOCK_ROWS):  # in float64, a block of rows at a time
                rows = np.asarray(X[start:start + _NORM_BLOCK_ROWS], dtype=np.float64) - centre
                squared = max(squared, float(np.max(np.einsum("ij,ij->i", rows, rows))))
        if kernel == "rbf":
            bound = 2.0 * squared
        elif kernel == "poly":
            gamma, coef0, degree = np.float64(params["gamma"]), abs(params["coef0"]), params["degree"]
            bound = max(squared, float((gamma * squared + coef0) ** degree))
        else:
            bound = squared
    if not bound <= largest:  # NaN and infinity too
        raise ValueError(kernel_overflow_message(argument, dtype))


def pool(X, p, method, params, rng, threads, progress=SILENT) -> np.ndarray:
    """The indices of the ``p`` pool points among the rows of ``X`` by ``method``, shown as
    ``progress``'s ``pool`` phase (a bar of its pivots)."""
    m = X.shape[0] if issparse(X) else len(X)  # len: a dask fit's rows gathered from its chunks
    with progress.phase("pool", total=p, unit="pivot"):
        order = rng.permutation(m)
        if method == "uniform" or p >= m:
            progress.advance(p)
            return np.sort(order[:p])
        s = min(m, max(SUBSAMPLE_PER_PIVOT * p, SUBSAMPLE_MIN))
        subsample = np.sort(order[:s])
        points = X[subsample] if issparse(X) else np.ascontiguousarray(X[subsample])  # CSR stays CSR
        chosen = _pivoted_cholesky(points, p, method == "rpcholesky", params, rng, threads, progress.advance)
        return np.sort(subsample[chosen])


def _pivoted_cholesky(points, p, random, params, rng, threads, advance=None) -> np.ndarray:
    """``p`` pivots of a partial Cholesky of the kernel of ``points``: drawn with probability
    proportional to the residual diagonal (``random``), else its largest entry. Stops early
    when the residual is exhausted. ``advance(1)`` is called as each pivot is taken."""
    s = points.shape[0]
    residual = diagonal(points, params["kernel"], params["gamma"], params["degree"], params["coef0"])
    if issparse(points):
        # Indexed by feature once: a pivot's column then costs its row's share of the points,
        # not another index of them.
        prepared = _core.PreparedPoints(points, **params)

        def column(i):
            return prepared.kernel(points[i:i + 1], n_threads=threads)[0]
    else:
        def column(i):
            return _core.kernel_matrix(points, points[i:i + 1], n_threads=threads, **params)[:, 0]
    columns = np.zeros((s, p))
    pivots = []
    for t in range(p):
        total = residual.sum()
        if not total > 0.0:
            break
        if random:
            i = int(rng.choice(s, p=residual / total))
        else:
            i = int(np.argmax(residual))
        g = column(i).astype(np.float64)
        g -= columns[:, :t] @ columns[i, :t]
        if not g[i] > 1e-12 * max(residual.max(), 1e-300):
            residual[i] = 0.0
            continue
        columns[:, t] = g / np.sqrt(g[i])
        residual = np.maximum(residual - columns[:, t] ** 2, 0.0)
        residual[i] = 0.0
        pivots.append(i)
        if advance is not None:
            advance(1)
    return np.asarray(pivots, dtype=np.int64)


def training_factor(X, dtype, p, method, params, rng, threads, progress=SILENT) -> np.ndarray:
    """``Φ`` of the training rows ``X`` (already in ``dtype``, C-contiguous, or a canonical
    CSR) for the named kernel ``params``: ``X`` itself for ``linear`` (a CSR ``X`` stays CSR:
    the core reads it as the factor of ``XX'``), else the Nyström factor of a pool of
    ``p`` points chosen by ``method``, shown as ``progress``'s phases ``pool`` and ``factor``
    (its blocks of rows, counted by the core once the pool's ``W`` is made)."""
    if params["kernel"] == "linear":
        return X if issparse(X) else np.ascontiguousarray(X, dtype=dtype)
    indices = pool(X, p, method, params, rng, threads, progress)
    with progress.phase("factor", unit="block"):
        return _core.nystroem_factor(X, indices.astype(np.int64), n_threads=threads, progress=progress.core_report,
                                     **params)
