"""A fit's input made ready once, for the selection and the discriminants that follow it.

Every step between the caller's arrays and the core happens here, once and in this order:
scikit-learn's validation (float32 or float64 as given), the classes encoded, ``gamma``
resolved, the rows ordered by class and converted to the engine's dtype (one copy), the
solver chosen, the memory checked before anything large is made, and then the kernel the
selection reads: the dense ``m×m`` matrix or the factor ``Φ`` (``m×p``). The selection takes
:class:`TrainingProblem`'s ``kernel`` or ``factor``; the discriminants its ``columns`` of the
chosen bases and ``diagonal``. Nothing after it reads the raw input again.

The kernel and factor builders below are shared with the matching-pursuit estimators, so that
a dense or factored training kernel is made (and refused) by one rule everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import issparse

from ._discriminant import KernelColumns
from ._factor import auto_factor_rank, check_kernel_range, factor_width, resolved_solver, training_factor
from ._factor import diagonal as factor_diagonal
from ._progress import SILENT, FitProgress
from ._kernels import (
    _convert,
    check_kernel_arguments,
    core_kernel,
    kernel_between,
    kernel_parameters,
    precomputed_training_kernel,
    resolve_gamma,
)
from . import _validation
from ._validation import (
    check_factored_fit_fits,
    check_fit_fits,
    encoded_classes,
    fit_working_bytes,
    largest_factor_rank,
    thread_count,
)


def solver_for(solver, kernel, core_name, m, k, selections, dtype) -> str:
    """``solver`` resolved for a fit of ``m`` samples with ``k`` picks for each of
    ``selections`` problems: ``auto`` is dense while the dense kernel and the fit's working
    memory fit in the memory available (``_factor.resolved_solver`` has the whole rule)."""
    dtype = np.dtype(dtype)

    def dense_fits():
        return m * m * dtype.itemsize + fit_working_bytes(m, k, selections, dtype) <= _validation.available_memory()

    name = "callable" if callable(kernel) else kernel
    return resolved_solver(solver, core_name, name, m, dense_fits)


def dense_training_kernel(X, kernel, params, dtype, threads, k, selections, matrices=1, argument="X", rows=False):
    """The training kernel of ``X`` in ``dtype`` (``X`` itself, checked, when precomputed),
    made once the fit is known to fit in memory: ``matrices`` ``m×m`` kernels and the working
    memory of ``k`` picks for each of ``selections`` problems. ``rows``: a callable takes two
    rows (``Nystroem``'s convention) rather than two matrices."""
    dtype = np.dtype(dtype)
    if kernel == "precomputed":
        return precomputed_training_kernel(X, dtype, k, selections, argument, n_threads=threads)
    m = X.shape[0]
    itemsize = dtype.itemsize
    if callable(kernel) or core_kernel(kernel, params["degree"]) is None:
        itemsize += 8 if dtype == np.float32 else 0  # made in float64, then copied into dtype
    check_fit_fits(m, k, selections, dtype, matrices * m * m * itemsize, argument)
    return kernel_between(X, None, kernel, params, dtype, threads, argument, rows=rows)


def more_than_samples_message(name, value, m) -> str:
    """The warning of a count of bases ``name=value`` above the ``m`` training samples: what
    the fit can promise (a selection may still stop earlier, with its own warning)."""
    return (f"{name}={value} is larger than the number of training samples ({m}): at most {m} bases can be "
            "chosen.")


def short_selection_message(chosen, wanted, features=None, factor_rank=None) -> str:
    """Why a selection stopped at ``chosen`` of the ``wanted`` bases, in every estimator's one
    wording. ``features``: the number of features of a linear kernel (which bounds its rank);
    ``factor_rank``: the columns of a factored fit's ``Φ`` (the rank of ``ΦΦ'``)."""
    message = (f"the selection stopped after {chosen} of {wanted} bases: every other training point is "
               "numerically in the span of those chosen")
    if features is not None and chosen >= features:
        return message + f" (a linear kernel of {features} features has rank at most {features}). Use fewer bases."
    if factor_rank is not None and chosen >= factor_rank:
        return message + (f" (the factored kernel ΦΦ' has rank {factor_rank}). Use a larger factor_rank or "
                          "fewer bases.")
    return message + ". Use a larger gamma or fewer bases."


def factor_rank_for(factor_rank, k, m, k_name="k", largest=None) -> int:
    """The rank of a factor from which ``k`` bases can be chosen among ``m`` samples (a
    factor of rank ``p`` holds at most ``p``): ``"auto"`` is :func:`_factor.auto_factor_rank`
    (``largest``: the largest rank that fits in memory, None when the caller does not hold
    the factor); a rank given is used as given, and refused below ``k``."""
    if isinstance(factor_rank, str):  # "auto", the only string the parameter's constraints take
        return auto_factor_rank(k, m, largest)
    factor_rank = int(factor_rank)
    if factor_rank >= k:
        return factor_rank
    raise ValueError(
        f"factor_rank: {factor_rank} is smaller than {k_name}={k}; a factor of rank p holds at most p bases: "
        f"use factor_rank >= {k} (or factor_rank='auto', which chooses one)"
    )


def checked_training_factor(X, core_name, params, dtype, threads, k, selections, factor_rank, pool, rng,
                            progress=SILENT, k_name="k"):
    """``Φ`` (in ``dtype``) with ``ΦΦ'`` the training kernel of the rows ``X``, made once the
    kernel is known not to overflow ``dtype`` and the factor and the working memory of ``k``
    picks for each of ``selections`` problems are known to fit; a refusal names
    ``factor_rank``, resolved by :func:`factor_rank_for` (``"auto"`` within the memory
    available; ``k_name`` names ``k`` in a refusal). ``progress`` shows the pool's choice and
    the factor's blocks."""
    X = _convert(X, dtype, "X")
    check_kernel_range(X, core_name, params, dtype)
    m = X.shape[0]
    input_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes if issparse(X) else 0
    if core_name != "linear":  # Φ = X for linear: its rank is the features', whatever factor_rank says
        largest = None
        if isinstance(factor_rank, str):
            largest = largest_factor_rank(m, k, selections, dtype, threads, auto_factor_rank(k, m), input_bytes)
        factor_rank = factor_rank_for(factor_rank, k, m, k_name, largest)
    p = factor_width(core_name, X.shape[1], m, factor_rank)
    # A sparse X under the linear kernel is its own factor, read by the core as CSR.
    entries = X.nnz if issparse(X) and core_name == "linear" else None
    check_factored_fit_fits(m, p, k, selections, dtype, threads, input_bytes, sparse_entries=entries)
    return training_factor(X, X.dtype, p, pool, {**params, "kernel": core_name}, rng, threads, progress)


# Rows of a factored fit's exact kernel columns made in one call of the core.
_COLUMN_BLOCK_ROWS = 16_384


@dataclass
class TrainingProblem:
    """A :class:`~gkfda.GreedyKFDA` fit's input, validated and converted once.

    Row ``i`` of ``kernel``, ``factor`` and ``rows``, and entry ``i`` of each of
    ``problems``, is training sample ``by_class[i]``: the rows are ordered by class, so that
    the engine's passes split each kernel row by class (a precomputed kernel is used as given).
    """

    #: The validated input in the caller's row order; the models keep their bases' rows of it.
    X: np.ndarray
    classes: np.ndarray
    #: Each sample's class, an index into ``classes``, in the caller's order.
    y_index: np.ndarray
    priors: np.ndarray
    k: int
    gamma: float
    #: What ``kernel_between`` takes: ``gamma``, ``degree``, ``coef0`` (and ``kernel_params``).
    params: dict
    by_class: np.ndarray
    #: The class codes of each selection: one problem of every class (two classes, or a
    #: shared basis), or one per class of that class (code 1) against the rest.
    problems: list
    solver: str
    dtype: type
    threads: int
    #: The dense training kernel (``solver == "dense"``), else None.
    kernel: np.ndarray | None = None
    #: ``Φ`` of a factored fit (``X`` itself, CSR, for a sparse ``X`` under the linear kernel),
    #: else None.
    factor: np.ndarray | None = None
    #: The training rows in kernel order and the engine's dtype (named kernels only).
    rows: np.ndarray | None = None
    #: The name of the kernel the core computes, None for precomputed and callable kernels.
    core_name: str | None = None
    #: The fit's progress bars (``verbose``), for every phase after this one too.
    progress: FitProgress = field(default=SILENT)

    @property
    def codes(self) -> np.ndarray:
        """Each row's class index, in kernel order."""
        return self.y_index[self.by_class]

    def diagonal(self) -> np.ndarray:
        """``κ(x_i, x_i)`` of the rows, in kernel order."""
        if self.kernel is not None:
            return np.diagonal(self.kernel)
        return factor_diagonal(self.rows, self.core_name, self.params["gamma"], self.params["degree"],
                               self.params["coef0"])

    def columns(self, supports, kernel):
        """A function of one support (kernel-order indices) giving its exact kernel columns,
        where they are held (a ``_discriminant.KernelColumns``, or the chunks' on a cluster),
        and their ``|support| × |support|`` block, for the ``supports`` of every selection. A
        factored fit makes ``K(X, X[union])`` of their union once, with ``kernel`` (the
        estimator's), ``m × |union|``, never ``m×m``."""
        if self.kernel is not None:
            self.progress.advance(len(self.kernel))  # every row's columns are there already
            cross, union = KernelColumns(self.kernel), None
        else:
            union = np.unique(np.concatenate([np.asarray(support, dtype=np.intp) for support in supports]))
            cross = self._union_columns(union, kernel)

        def columns(support):
            support = np.asarray(support, dtype=np.intp)
            held = cross.select(support if union is None else np.searchsorted(union, support))
            return held, held.rows(support)

        return columns

    def _union_columns(self, union, kernel) -> KernelColumns:
        """``K(X, X[union])`` in kernel order (``m × |union|``), of a factored fit's rows."""
        basis = self.rows[union] if issparse(self.rows) else np.ascontiguousarray(self.rows[union])
        m = self.rows.shape[0]
        cross = np.empty((m, len(union)), dtype=self.dtype)
        # By blocks of rows, for a progress bar: a row's kernel values do not depend on the
        # rows computed beside it, so the blocks make the whole call's matrix bit for bit.
        for start in range(0, m, _COLUMN_BLOCK_ROWS):
            stop = min(m, start + _COLUMN_BLOCK_ROWS)
            cross[start:stop] = kernel_between(self.rows[start:stop], basis, kernel, self.params, self.dtype,
                                               self.threads)
            self.progress.advance(stop - start)
        return KernelColumns(cross)


def prepare_training(estimator, X, y, rng) -> TrainingProblem:
    """``(X, y)`` of ``estimator.fit`` made into one :class:`TrainingProblem`: validated,
    ordered by class, converted to the estimator's dtype and its kernel (dense or factored)
    built, each once; ``rng`` draws the factor's pool."""
    dtype = np.dtype(estimator.dtype).type
    threads = thread_count(estimator.n_jobs)
    X, y = estimator._validate_X(X, reset=True, y=y)
    classes, y_index = encoded_classes(y)
    n_classes = len(classes)
    priors = estimator._checked_priors(y_index, n_classes)
    m = X.shape[0]
    k = estimator._resolved_k(n_classes, m)
    check_kernel_arguments(estimator)
    gamma = resolve_gamma(estimator.gamma, estimator.kernel, X, dtype)
    params = kernel_parameters(estimator, gamma)
    precomputed = estimator.kernel == "precomputed"
    core_name = None if callable(estimator.kernel) or precomputed else core_kernel(estimator.kernel, params["degree"])
    by_class = np.arange(m) if precomputed else np.argsort(y_index, kind="stable")
    codes = y_index[by_class]
    one_basis = n_classes == 2 or estimator.multiclass == "shared"
    problems = [codes] if one_basis else [(codes == c).astype(np.intp) for c in range(n_classes)]
    solver = solver_for(estimator.solver, estimator.kernel, core_name, m, k, len(problems), dtype)
    problem = TrainingProblem(
        X=X, classes=classes, y_index=y_index, priors=priors, k=k, gamma=gamma, params=params,
        by_class=by_class, problems=problems, solver=solver, dtype=dtype, threads=threads, core_name=core_name,
        progress=FitProgress(estimator.verbose),
    )
    if precomputed:
        problem.kernel = dense_training_kernel(X, "precomputed", params, dtype, threads, k, len(problems))
        return problem
    # One copy: the rows in kernel order, in the engine's dtype, from which the kernel (or
    # factor) and a factored fit's exact columns are made. A callable sees the caller's dtype.
    rows = X[by_class]
    problem.rows = rows if core_name is None else _convert(rows, dtype, "X")
    if solver == "dense":
        problem.kernel = dense_training_kernel(problem.rows, estimator.kernel, params, dtype, threads, k,
                                               len(problems))
    else:
        problem.factor = checked_training_factor(problem.rows, core_name, params, dtype, threads, k, len(problems),
                                                 estimator.factor_rank, estimator.factor_pool, rng, problem.progress)
    return problem
