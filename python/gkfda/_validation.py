"""Checks of user data and memory that name the argument at fault (the estimator's
parameters are checked by its ``_parameter_constraints``)."""

from __future__ import annotations

import os

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _num_samples

from . import _core

try:  # psutil is a dependency; the fallback keeps the check working without it.
    import psutil
except ImportError:  # pragma: no cover
    psutil = None


def thread_count(n_jobs) -> int:
    """joblib's convention, except that ``None`` means all available cores, or
    ``OMP_NUM_THREADS`` of them when that is set, and that no count exceeds the cores
    available.

    joblib sets ``OMP_NUM_THREADS`` to cores // n_jobs in its worker processes, so that an
    estimator inside ``GridSearchCV(n_jobs=2)`` does not start a thread per core in each
    worker (scikit-learn's own OpenMP code follows it the same way). The core's work is
    bound by arithmetic and memory bandwidth, so threads beyond the cores only contend
    (and each distinct count is a pool of threads the core keeps): ``n_jobs=5000`` runs on
    every core, no more.
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    if n_jobs is None:
        return min(cores, _omp_thread_limit() or cores)
    n_jobs = int(n_jobs)  # a non-zero integer, as GreedyKFDA's constraints require
    return min(n_jobs, cores) if n_jobs > 0 else max(1, cores + 1 + n_jobs)


def _omp_thread_limit():
    """The first level of ``OMP_NUM_THREADS`` ("4" or "4,2"), or None if unset or invalid."""
    first = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    return int(first) if first.isdigit() and int(first) > 0 else None


def checked_priors(priors, y_index, n_classes):
    """The class priors: ``priors`` checked (one positive value per class, summing to 1),
    or, when it is None, the class frequencies of the codes ``y_index``."""
    if priors is None:
        return np.bincount(y_index, minlength=n_classes) / len(y_index)
    given = priors
    try:
        priors = np.asarray(given, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"priors: must be an array of numbers, got {given!r}") from None
    if priors.shape != (n_classes,):
        raise ValueError(f"priors: must have one value per class ({n_classes}), got shape {priors.shape}")
    if not np.all(np.isfinite(priors)) or np.any(priors <= 0.0):
        raise ValueError(f"priors: every prior must be positive and finite, got {priors.tolist()}")
    if not abs(priors.sum() - 1.0) <= 1e-6:
        raise ValueError(f"priors: must sum to 1, got {priors.sum()!r}")
    return priors / priors.sum()


# Address space a process needs beside what a fit allocates (thread stacks, the
# allocator's per-thread arenas, libraries loaded later): kept free under an RLIMIT_AS.
_ADDRESS_SPACE_MARGIN = 256 * 2**20


def available_memory() -> int:
    """Bytes a fit may still allocate: the least of the free memory, the room left under
    the process's address-space limit (``RLIMIT_AS``) and under its control group's memory
    limit (cgroup v2 ``memory.max``, or v1 ``memory.limit_in_bytes``). Any of them, when
    reached, makes an allocation fail, so the fit is refused before it starts.
    """
    if psutil is not None:
        room = [int(psutil.virtual_memory().available)]
    else:  # pragma: no cover
        room = [os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")]
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            room.append(soft - _address_space_in_use() - _ADDRESS_SPACE_MARGIN)
    except (ImportError, OSError, ValueError):  # pragma: no cover - not POSIX
        pass
    for limit_file, usage_file in (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
    ):
        limit, usage = _read_bytes(limit_file), _read_bytes(usage_file)
        if limit is not None and usage is not None and limit < 2**60:  # v1 writes ~2**63 for none
            room.append(limit - usage)
            break
    return max(0, min(room))


def _address_space_in_use() -> int:
    if psutil is not None:
        return int(psutil.Process().memory_info().vms)
    with open("/proc/self/statm") as statm:  # pragma: no cover
        return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _read_bytes(path: str):
    """An integer file of the control-group tree, or None (absent, or "max": no limit)."""
    try:
        with open(path) as file:
            text = file.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def fit_working_bytes(m: int, k: int, selections: int, dtype) -> int:
    """Bytes a fit needs beside its kernel matrix.

    - The selections' rank-one terms: at most three ``m``-vectors a pick (``u``, ``v`` and
      an ``ortho-*`` direction), for as many selections as run at once (one-vs-rest runs at
      most ``_core.SHARED_SELECTIONS`` side by side; the others wait for their turn).
    - The models: each keeps three ``k×k`` matrices (the projection and two class
      covariances); while one is fitted, its ``m×k`` kernel columns with their float64 copy
      and features, and three more ``k×k`` matrices of its linear algebra.
    """
    itemsize = np.dtype(dtype).itemsize
    m, k, selections = int(m), int(k), int(selections)
    at_once = min(selections, _core.SHARED_SELECTIONS)
    terms = at_once * 3 * k * m * itemsize
    columns = m * k * (itemsize + 2 * 8)
    square = k * k * 8
    models = selections * 3 * square + 3 * square
    return terms + columns + models


def check_fit_fits(m: int, k: int, selections: int, dtype, kernel_bytes: int, argument: str = "X") -> None:
    """Refuse, before allocating, a fit that cannot fit in memory: its ``kernel_bytes`` of
    kernel matrices still to be made, and the working memory of its selections and model."""
    dtype = np.dtype(dtype)
    working = fit_working_bytes(m, k, selections, dtype)
    needed = int(kernel_bytes) + working
    available = available_memory()
    if needed > available:
        kernel = f"the {m}×{m} {dtype.name} kernel matrix {kernel_bytes / 2**30:.2f} GiB, " if kernel_bytes else ""
        raise MemoryError(
            f"{argument}: a fit of {m} samples with k={k} needs {needed / 2**30:.2f} GiB "
            f"({kernel}the selection and the model {working / 2**30:.2f} GiB) but only "
            f"{available / 2**30:.2f} GiB is available; use fewer samples"
            + (" or dtype='float32'" if dtype == np.float64 else "")
        )


def factor_bytes(m: int, p: int, itemsize: int, threads: int) -> int:
    """Bytes a factor of rank ``p`` takes while it is made: ``Φ``, each thread's block of
    cross-kernel rows, and the pool's ``p×p`` kernel with its eigendecomposition (float64)."""
    block_rows = min(m, 1024)  # the core's FACTOR_BLOCK_ROWS
    return m * p * itemsize + threads * block_rows * p * itemsize + 4 * p * p * 8


def sparse_factor_bytes(entries: int, itemsize: int) -> int:
    """Bytes of the core's index of a sparse ``X`` used as its own factor (``Φ = X``, the
    linear kernel): its transpose while it is made, 48 bytes and a value an entry
    (``operator::SparseFactor``)."""
    return int(entries) * (48 + int(itemsize))


def check_factored_fit_fits(m: int, p: int, k: int, selections: int, dtype, threads: int,
                            input_bytes: int = 0, sparse_entries: int | None = None) -> None:
    """Refuse, before allocating, a factored fit that cannot hold its factor (``m × p``) with
    the working memory of its selections and model, naming ``factor_rank``; ``input_bytes``:
    a sparse ``X``'s arrays, which the factor is made from (never ``X`` made dense). With
    ``sparse_entries``, the factor is that sparse ``X`` itself (``kernel="linear"``): what it
    costs is the core's transpose of its entries, and the refusal names ``X``."""
    dtype = np.dtype(dtype)
    working = fit_working_bytes(m, k, selections, dtype)
    available = available_memory()
    if sparse_entries is not None:
        factor = sparse_factor_bytes(sparse_entries, dtype.itemsize) + int(input_bytes)
        if factor + working > available:
            raise MemoryError(
                f"X: a factored fit of {m} sparse samples ({sparse_entries} stored values) with k={k} needs "
                f"{(factor + working) / 2**30:.2f} GiB (X and its transpose {factor / 2**30:.2f} GiB, the selection "
                f"and the model {working / 2**30:.2f} GiB) but only {available / 2**30:.2f} GiB is available; "
                "use fewer samples" + (" or dtype='float32'" if dtype == np.float64 else "")
            )
        return
    factor = factor_bytes(m, p, dtype.itemsize, threads) + int(input_bytes)
    if factor + working > available:
        raise MemoryError(
            f"factor_rank: a factored fit of {m} samples with factor_rank={p} and k={k} needs "
            f"{(factor + working) / 2**30:.2f} GiB (the {m}×{p} {dtype.name} factor {factor / 2**30:.2f} GiB, "
            f"the selection and the model {working / 2**30:.2f} GiB) but only {available / 2**30:.2f} GiB "
            "is available; use a smaller factor_rank or fewer samples"
            + (" or dtype='float32'" if dtype == np.float64 else "")
        )


def largest_factor_rank(m: int, k: int, selections: int, dtype, threads: int, ceiling: int,
                        input_bytes: int = 0) -> int:
    """The largest rank ``p ≤ ceiling`` whose factored fit passes
    :func:`check_factored_fit_fits` in the memory available now, 0 if none does."""
    itemsize = np.dtype(dtype).itemsize
    room = available_memory() - fit_working_bytes(m, k, selections, dtype) - int(input_bytes)
    low, high = 0, int(ceiling)
    while low < high:  # factor_bytes grows with p: the last p that fits, by bisection
        middle = (low + high + 1) // 2
        if factor_bytes(m, middle, itemsize, threads) <= room:
            low = middle
        else:
            high = middle - 1
    return low


def check_precomputed_kernel(K: np.ndarray, argument: str = "X", n_threads: int = 1) -> None:
    """Square, finite, symmetric, and the O(m²) necessary conditions of PSD, in one pass of
    the core over ``K`` (``_core.kernel_checks``) on ``n_threads`` threads."""
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise ValueError(f"{argument}: a precomputed kernel must be a square matrix, got shape {K.shape}")
    if K.shape[0] == 0:
        return
    non_finite, scale, asymmetry, smallest_diagonal, minor_excess, (i, j) = _core.kernel_checks(
        np.asarray(K), n_threads=n_threads
    )
    if non_finite is not None:
        raise ValueError(f"{argument}: a precomputed kernel must be finite; K[{non_finite[0]},{non_finite[1]}] is not")
    tolerance = (1e-6 if K.dtype == np.float64 else 1e-4) * scale
    if asymmetry > tolerance:
        raise ValueError(
            f"{argument}: a precomputed kernel must be symmetric; max |K - K'| = {asymmetry:.3g}"
        )
    if smallest_diagonal < -tolerance:
        raise ValueError(
            f"{argument}: a precomputed kernel must be positive semi-definite; it has a negative "
            f"diagonal entry ({smallest_diagonal:.3g})"
        )
    # Every 2×2 principal minor of a PSD matrix is non-negative: |K_ij| ≤ sqrt(K_ii K_jj).
    if minor_excess > tolerance:
        raise ValueError(
            f"{argument}: a precomputed kernel must be positive semi-definite; "
            f"K[{i},{j}]² > K[{i},{i}]·K[{j},{j}]"
        )


def check_scored_samples(X, y, sample_weight=None, values="labels") -> None:
    """Refuse, naming the argument, a score whose ``y`` (``values`` of it) or
    ``sample_weight`` does not have one entry per row of ``X``."""
    try:
        n = _num_samples(X)
    except TypeError:
        return  # not an array: the validation of X names it
    for argument, array, what in (("y", y, values), ("sample_weight", sample_weight, "weights")):
        if array is None or np.isscalar(array):
            continue
        try:
            count = _num_samples(array)
        except TypeError:
            continue
        if count != n:
            raise ValueError(f"{argument}: has {count} {what} but X has {n} samples")


def encoded_classes(y):
    """``(classes, codes)`` of classification labels ``y``, at least two classes."""
    try:
        check_classification_targets(y)
    except ValueError as error:
        raise ValueError(f"y: {error}") from error
    classes, codes = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        raise ValueError(f"y: needs samples of at least two classes, got 1 class ({classes[0]!r})")
    return classes, codes


def check_full_state(estimator, method: str) -> None:
    """Refuse ``method`` on a model loaded from a lean file, which keeps only what the
    prediction methods read."""
    if estimator.__dict__.get("_loaded_lean", False):
        raise ValueError(
            f"{method}: this {type(estimator).__name__} was loaded from a lean model file, which keeps only what "
            "prediction needs; save the fitted model with gkfda.save(model, path) (lean=False) to keep it"
        )
