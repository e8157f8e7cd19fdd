"""Type stubs of the Rust extension module (src/python/)."""

from typing import Any, List, Optional, Protocol, Tuple, Union

import numpy as np
import numpy.typing as npt

CRITERIA: Tuple[str, ...]
RATIO_CRITERIA: Tuple[str, ...]
"""The selection criteria's names, from the core's table (``random`` first)."""
DEFLATIONS: Tuple[str, ...]
"""The deflations' names, from the core's table (``none`` first)."""
KERNELS: Tuple[str, ...]
SHARED_SELECTIONS: int
#: The methods of ``pursuit_select``.
PURSUIT_METHODS: Tuple[str, ...]
"""The built-in kernels' names: ``rbf``, ``linear``, ``poly``."""

Rows = Any
"""A 2-D float32 or float64 NumPy array, or a SciPy CSR matrix (``csr_matrix`` or
``csr_array``) of such values."""

class PreparedPoints:
    """Points (dense or CSR, float32 or float64) indexed once by feature, for many kernels
    against them (a pivoted Cholesky's columns): ``kernel(x)`` is ``K(x, points)``, as
    ``kernel_matrix(x, points)`` gives it with the points sparse, to rounding."""

    def __init__(self, points: Rows, *, kernel: str = "rbf", gamma: float = 1.0, degree: int = 3,
                 coef0: float = 1.0) -> None: ...
    def kernel(self, x: Rows, *, n_threads: int = 1) -> npt.NDArray[np.floating]: ...
    @property
    def shape(self) -> Tuple[int, int]: ...

class FactorHolder(Protocol):
    """The rows of a factor ``Φ`` (``m × p``) held elsewhere, chunk by chunk, with the
    selection's per-row statistics beside them, as ``greedy_select(None, y, k,
    factor=holder)`` reads them (``gkfda._dask.ChunkedFactorRows``): one call a round.
    Indices and class codes are in the selection's row order; ``v`` and ``h`` are of
    ``dtype``, everything else float64 or int64."""

    shape: Tuple[int, int]
    dtype: np.dtype

    def moments(self, classes: npt.NDArray[np.int64], class_weights: npt.NDArray[np.float64]
                ) -> Tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """``(Φ'Φ, Φ'DΦ, Φ'1_c)`` of all rows: ``(p, p)``, ``(p, p)``, ``(C, p)``."""
    def start(self, classes: npt.NDArray[np.int64], rank: npt.NDArray[np.int64], weighted: npt.NDArray[np.float64],
              class_sums: npt.NDArray[np.float64], scatter_weights: npt.NDArray[np.float64], criterion: str,
              tol: float) -> None:
        """Each chunk's statistics of ``K_0`` (``rank``: the random order's ranks, or empty)."""
    def advance(self, v: npt.NDArray[np.floating], h: npt.NDArray[np.floating], class_sums: npt.NDArray[np.float64],
                weighted_norms: npt.NDArray[np.float64], blocked: npt.NDArray[np.int64], take: int
                ) -> Tuple[npt.NDArray[np.float64], npt.NDArray[np.int64], npt.NDArray[np.float64],
                           npt.NDArray[np.float64]]:
        """One round: the picks ``blocked`` out, the terms (rows of ``v``, ``h``,
        ``class_sums``, ``weighted_norms``) applied, then the best ``take`` candidates of all
        rows, best first, ties to the lowest index: ``(scores, indices, thresholds, rows)``."""

class FactorRowStatistics:
    """A chunk's rows' statistics of the selection in the factor's coordinates, on the worker
    that holds the rows (pickles as arrays)."""

    @staticmethod
    def start(phi: npt.NDArray[np.floating], indices: npt.NDArray[np.int64], classes: npt.NDArray[np.int64],
              rank: npt.NDArray[np.int64], weighted: npt.NDArray[np.float64], class_sums: npt.NDArray[np.float64],
              scatter_weights: npt.NDArray[np.float64], criterion: str, tol: float, *, n_threads: int = 1
              ) -> "FactorRowStatistics":
        """The statistics of ``K_0`` for the chunk's rows ``phi`` (C-contiguous), the rows
        ``indices`` of all."""
    def advanced(self, phi: npt.NDArray[np.floating], v: npt.NDArray[np.floating], h: npt.NDArray[np.floating],
                 class_sums: npt.NDArray[np.float64], weighted_norms: npt.NDArray[np.float64],
                 blocked: npt.NDArray[np.int64], take: int, *, n_threads: int = 1) -> "FactorRowStatistics":
        """New statistics after a round; their best ``take`` candidates kept."""
    def candidates(self) -> Tuple[npt.NDArray[np.float64], npt.NDArray[np.int64], npt.NDArray[np.float64],
                                  npt.NDArray[np.float64]]:
        """The last round's best candidates: ``(scores, indices, thresholds, rows)``."""

def factor_moments(phi: npt.NDArray[np.floating], classes: npt.NDArray[np.int64],
                   class_weights: npt.NDArray[np.float64], *, n_threads: int = 1
                   ) -> Tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """A chunk's share of ``(Φ'Φ, Φ'DΦ, Φ'1_c)``, class ``c`` weighing ``class_weights[c]``."""

def kernel_matrix(
    x: Rows,
    z: Optional[Rows] = None,
    *,
    kernel: str = "rbf",
    gamma: float = 1.0,
    degree: int = 3,
    coef0: float = 1.0,
    n_threads: int = 1,
) -> npt.NDArray[np.floating]:
    """Kernel of the rows of ``x`` with themselves (exactly symmetric) or against ``z``.

    ``x`` and ``z`` are float32 or float64 (the same), each a NumPy array or a canonical SciPy
    CSR matrix (sorted indices, no duplicates; int32 or int64 indices); the result is dense,
    of their dtype. With a sparse side each value is summed in float64 over the features both
    rows store: it agrees with the dense rows' value to rounding, and does not depend on the
    thread count or the batch. Raises ValueError for bad parameters, a CSR matrix that is not
    canonical or holds NaN or infinity, MemoryError when the result cannot be allocated.
    """

def nystroem_factor(
    x: Rows,
    pool: npt.NDArray[np.int64],
    kernel: str,
    *,
    gamma: float = 1.0,
    degree: int = 3,
    coef0: float = 1.0,
    n_threads: int = 1,
) -> npt.NDArray[np.floating]:
    """The Nyström factor ``Φ = K[:, pool] W``, ``WW' = K[pool, pool]⁺`` (eigenvalues
    below 1e-12 of the largest, 1e-6 in float32, dropped), of the named kernel over the rows
    of ``x`` (float32 or float64, dense or CSR as ``kernel_matrix`` takes it, the pool of a
    CSR ``x`` kept sparse; ``Φ`` in that dtype, ``m × p'`` with ``p' <= len(pool)``),
    made in blocks of rows with the GIL released, never ``m×m``; Ctrl-C stops it.
    Raises ValueError naming ``pool`` (an index out of range) or ``factor_rank`` (an empty
    pool), MemoryError when ``Φ`` cannot be allocated.
    """

def nystroem_whitening(
    points: npt.NDArray[np.floating],
    kernel: str,
    *,
    gamma: float = 1.0,
    degree: int = 3,
    coef0: float = 1.0,
    n_threads: int = 1,
) -> npt.NDArray[np.floating]:
    """``W`` of the pool's ``points`` (``p × p'``, their dtype): the first half of
    ``nystroem_factor``, for a factor made by chunks of rows elsewhere (``nystroem_rows``)."""

def nystroem_rows(
    x: npt.NDArray[np.floating],
    points: npt.NDArray[np.floating],
    whitening: npt.NDArray[np.floating],
    kernel: str,
    *,
    gamma: float = 1.0,
    degree: int = 3,
    coef0: float = 1.0,
    n_threads: int = 1,
) -> npt.NDArray[np.floating]:
    """The rows of the Nyström factor of the rows of ``x`` given the pool's ``points`` and
    their ``whitening`` (all of one dtype): the rows ``nystroem_factor`` gives them, bit for bit.
    Ctrl-C stops it."""

def pursuit_select(
    method: str,
    kernel: Optional[npt.NDArray[np.floating]],
    k: int,
    *,
    target: Optional[npt.NDArray[np.floating]] = None,
    second_kernel: Optional[npt.NDArray[np.floating]] = None,
    classes: Optional[npt.NDArray[Union[np.int64, np.int32]]] = None,
    criterion: str = "optimal",
    seed: int = 0,
    signed: bool = True,
    tol: Optional[float] = None,
    n_threads: int = 1,
    factor: Optional[npt.NDArray[np.floating]] = None,
    second_factor: Optional[npt.NDArray[np.floating]] = None,
) -> Tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], bool, int]:
    """A greedy pursuit over a symmetric kernel, borrowed without a copy; or, with
    ``kernel=None`` and ``factor`` an ``m×p`` C-contiguous array ``Φ``, over ``ΦΦ'``, never
    formed (O(mp) a product; ``second_factor`` the second view's factor).

    ``method`` is ``"matching"`` (kernel matching pursuit of ``target``, of the
    kernel's dtype; projection deflation), ``"pca"`` (sparse kernel PCA; pivoted-Cholesky
    deflation), ``"correlation"`` (sparse kernel CCA of ``kernel`` and ``second_kernel``, the
    same samples in two views; ``signed=False`` ranks by the cosine's absolute value) or
    ``"fisher"`` (the KFDA ``criterion``, any of ``CRITERIA``, of the integer class codes
    ``classes``; projection deflation; ``random`` draws its order from ``seed`` as
    ``greedy_select`` does). Returns ``(indices, scores, stopped_early,
    kernel_passes)``, ``scores[s]`` the score of pick ``s`` when it was made (for ``"pca"``
    the reconstruction residual it removed).
    """

def greedy_select(
    kernel: Optional[npt.NDArray[np.floating]],
    y: npt.NDArray[Union[np.bool_, np.int64, np.int32]],
    k: int,
    *,
    criterion: str = "optimal",
    deflation: str = "projection",
    stages: int = 1,
    random_order: Optional[npt.NDArray[np.int64]] = None,
    seed: int = 0,
    tol: Optional[float] = None,
    n_threads: int = 1,
    factor: Optional[Union[npt.NDArray[np.floating], FactorHolder]] = None,
) -> Tuple[npt.NDArray[np.int64], bool, int]:
    """Greedy basis selection over a symmetric kernel, borrowed without a copy; or, with
    ``kernel=None`` and ``factor`` an ``m×p`` C-contiguous float32 or float64 array ``Φ``,
    over ``ΦΦ'``, never formed: every criterion, deflation and stage count at O(mp) a
    product, picking as on the explicit ``ΦΦ'`` but for the roundings of its other sums.
    ``factor`` may instead be a :class:`FactorHolder`, a factor held elsewhere (the workers
    of a cluster: ``gkfda._dask.ChunkedFactor``), which the selection calls from its own
    thread with the GIL; an exception it raises is raised here as it is.
    Errors name ``factor``; giving both the kernel and ``factor`` is a ValueError.

    ``y`` is either a 1-D boolean array, True for the positive class, or a 1-D integer
    array (int64 or int32) of class codes ``0..C-1``, every class present, ``C >= 2``: the
    ``C`` classes share one basis, scored by the Fisher criterion of its class sums.
    Two classes as codes are the boolean problem with code 1 for True and 0 for False (the
    same picks). Returns ``(indices, stopped_early, kernel_passes)``. When the classes of
    ``y`` come in long runs (as ``GreedyKFDA.fit`` orders them), each pass splits the
    kernel's rows by class and does half the multiply-adds.

    Raises ValueError naming ``y`` for a negative code, a class from 0 to the largest code
    without a sample, or a single class; TypeError for another dtype.
    """

def greedy_select_many(
    kernel: Optional[npt.NDArray[np.floating]],
    y: npt.NDArray[np.bool_],
    k: int,
    *,
    criterion: str = "optimal",
    deflation: str = "projection",
    stages: int = 1,
    random_order: Optional[npt.NDArray[np.int64]] = None,
    seed: int = 0,
    tol: Optional[float] = None,
    n_threads: int = 1,
    factor: Optional[Union[npt.NDArray[np.floating], FactorHolder]] = None,
) -> List[Tuple[npt.NDArray[np.int64], bool, int]]:
    """``greedy_select`` for the problems ``y[c]`` (rows of a 2-D boolean array)
    over one kernel (or ``factor``, as ``greedy_select``), e.g. the one-vs-rest problems of
    a multiclass fit.

    Over a kernel of 12 MiB or more, the selections whose picks read ``K`` one at a time
    (the schur family at any ``stages``, the others at ``stages=1``) run side by side, up to
    12 at a time, and share each pass over the kernel: ``C`` picks for one read of ``K``
    (below that size, and for wider stages, each runs alone, as ``greedy_select``).
    Shared passes read all of ``K`` in one order, so a problem's selection does not depend
    on the others; it can differ from ``greedy_select``'s (which reads half of ``K``) in the
    last bits of its sums, and so on close calls. ``random_order[c]`` is problem ``c``'s priority order. Returns one
    ``(indices, stopped_early, kernel_passes)`` per problem.
    """

def calibrate(
    left_out: npt.NDArray[np.float64],
    own: npt.NDArray[np.float64],
    codes: npt.NDArray[np.int64],
    targets: npt.NDArray[np.float64],
    log_priors: npt.NDArray[np.float64],
    *,
    shrinkage: float,
    n_threads: int = 1,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The calibration ``(A, c)`` of every prefix ``b``, shapes ``(B, C-1, C)`` and ``(B, C)``:
    an LDA on the leave-one-out scores ``left_out[b]`` (``(m, C-1)``) with its covariance
    shrunk by ``shrinkage`` toward its mean eigenvalue, one temperature fitted by the
    cross-entropy to ``targets``, and zeros where the result ranks the fitted scores
    ``own[b]`` worse than ``log_priors`` alone."""

def parsimonious_fit(
    kernel: npt.NDArray[np.float64],
    gram: npt.NDArray[np.float64],
    products: npt.NDArray[np.float64],
    targets: npt.NDArray[np.float64],
    start: npt.NDArray[np.float64],
    *,
    q: float,
    rho: float,
    tol: float,
    max_iter: int,
    penalize_bias: bool,
    prune: float,
) -> Tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], int]:
    """kFDA_q's majorize–minimize iteration from ``start`` (``N+1`` nonzero-or-zero
    coefficients ``[b; α]``) over the symmetric ``kernel`` (``N×N``), with
    ``gram = K̃'K̃`` and ``products = K̃'ŷ`` (``K̃ = [1 K]``) and the ``targets`` ``ŷ``:
    ``(ω, objective per step from the start, steps)``. Each step solves on the active
    coefficients only (faer's Cholesky, one thread); those below ``prune · max|ω|`` are
    set to zero for good. The GIL is released; Ctrl-C raises ``KeyboardInterrupt``.

    Raises ValueError naming the argument for a bad shape or parameter (``rho`` must be
    positive), and naming ``gram`` when rounding made a step's system indefinite;
    MemoryError when its ``(N+1)²`` system cannot be allocated.
    """

def kernel_expansion(
    x: Rows,
    basis: npt.NDArray[np.floating],
    weights: npt.NDArray[np.float64],
    bias: npt.NDArray[np.float64],
    *,
    kernel: str = "rbf",
    gamma: float = 1.0,
    degree: int = 3,
    coef0: float = 1.0,
    link: str = "identity",
    n_threads: int = 1,
) -> npt.NDArray[np.float64]:
    """Decision values ``Σ_j weights[j, c] κ(x_i, basis_j) + bias[c]``, shape ``(n, C)``,
    or with ``link`` (``"logistic"``: one output, two classes; ``"softmax"``; ``"ovr"``) the
    class probabilities they give.

    ``x`` and ``basis`` share a dtype (float32 or float64); ``x`` may be a canonical SciPy CSR
    matrix (as ``kernel_matrix`` takes it), ``basis`` is dense; the result is float64. Rows are
    processed in blocks, so the ``n×k`` kernel is never held whole. A NaN or infinite ``x``
    is a ValueError.
    """

def kernel_checks(
    k: npt.NDArray[np.floating], *, n_threads: int = 1
) -> tuple[tuple[int, int] | None, float, float, float, float, tuple[int, int]]:
    """One pass over a square kernel: ``(non_finite, scale, asymmetry, smallest_diagonal,
    minor_excess, minor_at)``: a non-finite entry's position or None, ``max |K_ij|``,
    ``max |K_ij − K_ji|``, the smallest diagonal entry, and ``max |K_ij| − √(K_ii K_jj)`` with
    where it is (float64 measures; the caller compares them with its tolerance)."""

def default_tol(dtype: str) -> float:
    """Relative tolerance of the numerical guards for 'float32' or 'float64'."""

def simd_level() -> str:
    """The instruction-set level the engine runs at: ``"avx512"``, ``"avx2"`` or ``"none"``.

    The CPU's best, capped by the environment variable ``GKFDA_SIMD`` as read when the
    module was imported.
    """

def simd_levels() -> Tuple[List[str], str]:
    """The levels' names from the lowest, and the name of the variable that caps them."""

class Predictor:
    """A model file read by the Rust reader, predicting through ``gkfda::Model``
    (wrapped by :class:`gkfda.Predictor`)."""

    @staticmethod
    def load(path: str) -> Predictor: ...
    @staticmethod
    def from_bytes(data: bytes) -> Predictor: ...
    @property
    def task(self) -> str: ...
    @property
    def estimator(self) -> str: ...
    @property
    def n_features_in_(self) -> int: ...
    @property
    def n_outputs(self) -> int: ...
    @property
    def classes_(self) -> npt.NDArray[Any]: ...
    @property
    def feature_names_in_(self) -> npt.NDArray[np.object_]: ...
    @property
    def n_threads(self) -> int: ...
    @n_threads.setter
    def n_threads(self, value: int) -> None: ...
    def predict(self, X: npt.ArrayLike) -> npt.NDArray[Any]: ...
    def predict_proba(self, X: npt.ArrayLike) -> npt.NDArray[np.float64]: ...
    def predict_log_proba(self, X: npt.ArrayLike) -> npt.NDArray[np.float64]: ...
    def decision_function(self, X: npt.ArrayLike) -> npt.NDArray[np.float64]: ...
    def transform(self, X: npt.ArrayLike) -> npt.NDArray[np.float64]: ...

def read_model_bytes(data: bytes) -> tuple[str, str, int, int, int, list[str]]:
    """Read a model file's bytes with the Rust reader (the Rust crate's and the C ABI's):
    ``(estimator, task, n_features, n_bases, n_outputs, classes)``; ``ValueError`` when
    it refuses the file."""

def estimator_predictors() -> dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """Each estimator's predictor as the readers check it: ``{estimator: (task, links,
    optional tensors)}``, e.g. ``"SparseKernelPCA": ("transformer", ("identity",),
    ("predict.lower",))``; the one table, the Rust reader's."""

def model_format() -> dict[str, object]:
    """The model file's constants as the Rust reader holds them: ``format``,
    ``format_version``, ``checksum``, ``max_header_bytes``, ``max_count``, ``max_degree``,
    ``kernels`` (the names of ``predictor.kernel``), ``metadata_keys`` and ``predictor_keys``;
    the Python reader and writer read them here."""
