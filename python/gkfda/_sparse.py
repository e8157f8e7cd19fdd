"""SciPy sparse ``X``: which kernels take it, and the few operations the estimators need of a
CSR matrix without making it dense.

The estimators take a sparse ``X`` as CSR in the canonical form the core requires (sorted
indices, no duplicates); the core computes the ``rbf``, ``linear`` and ``poly`` kernels of
its rows, ``pairwise_kernels`` the others that take CSR. The rows a model keeps (its bases)
are made dense, ``k`` of them, so that a model, its pickle and its file are the same
whatever the training input was.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

# Kernels scikit-learn's pairwise_kernels cannot compute of sparse rows, and the precomputed
# kernel, which is the kernel matrix itself (SVC refuses a sparse one too).
_DENSE_ONLY = ("precomputed", "chi2", "additive_chi2")


def accepts_sparse(kernel) -> bool:
    """Whether an estimator with ``kernel`` takes a sparse ``X``: the core's kernels, the
    ``pairwise_kernels`` that take CSR, and a callable (which sees CSR rows, as ``SVC``'s)."""
    return callable(kernel) or kernel not in _DENSE_ONLY  # none of them has an alias


def canonical_csr(X):
    """``X`` (CSR, from scikit-learn's validation) with sorted indices and no duplicates:
    ``X`` itself when it is so already, else a copy (the caller's matrix is never changed).
    ``indices`` and ``indptr`` stay as they are, int32 or int64 each: the core reads either."""
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()  # sorts the indices of each row and adds up the duplicates
    return X


def as_dtype(X, dtype):
    """The CSR ``X`` with its values in ``dtype`` (C-contiguous), sharing its index arrays;
    ``X`` itself when they are so already."""
    data = np.ascontiguousarray(X.data, dtype=dtype)
    if data is X.data:
        return X
    # Not X.astype(): it copies the index arrays too.
    return type(X)((data, X.indices, X.indptr), shape=X.shape, copy=False)


def row_squared_norms(X) -> np.ndarray:
    """``|x|²`` of each row of the CSR ``X``, in float64."""
    data = np.asarray(X.data, dtype=np.float64)
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    return np.bincount(rows, weights=data * data, minlength=X.shape[0])


def variance(X) -> float:
    """The variance of all ``m·n`` entries of the CSR ``X`` (zeros included) in float64, as
    ``X.var()`` of the dense copy (``SVC``'s ``gamma="scale"``): two passes, the implicit
    zeros counted once, so that a constant ``X`` has variance 0 as the dense one has."""
    data = np.asarray(X.data, dtype=np.float64)
    size = float(X.shape[0]) * float(X.shape[1])
    mean = data.sum() / size
    zeros = size - len(data)
    return float((np.sum((data - mean) ** 2) + zeros * mean * mean) / size)


def dense_rows(X, indices) -> np.ndarray:
    """The rows ``indices`` of ``X`` (sparse or dense) as a C-contiguous ndarray of ``X``'s dtype."""
    rows = X[np.asarray(indices, dtype=np.intp)]
    if sparse.issparse(rows):
        return np.ascontiguousarray(rows.toarray())
    return np.array(rows)
