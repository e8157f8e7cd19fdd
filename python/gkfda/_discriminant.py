"""The Nyström projection and the calibrated Fisher discriminant on it (small k×k linear algebra).

Kept in NumPy: everything here is O(m k²) at most and LAPACK does it well; the O(m² k)
part is the greedy selection in Rust.

The projection is ``R = L⁻¹`` with ``L`` the Cholesky factor of ``K[i, i]``: row ``j`` of
``R`` only involves the first ``j`` bases, so the features of the model truncated to its
first ``j`` bases are the first ``j`` features of the full model. The discriminant is a
ridge regression of class indicators on those features, solved through the Cholesky
factor ``U`` of its (ridged) Gram matrix, whose leading ``j×j`` block is the factor of the
first ``j`` features' Gram matrix: every truncated discriminant (the *sparsity path*) is
a triangular solve with no new pass over the data. Its calibration (below) is computed
at fit time for every prefix, so a truncated model equals a fit with that ``k``,
probabilities included.

The discriminant
----------------
With ``C`` classes, the targets are the indicators of classes ``1..C-1`` (class 0 is
implied), and every sample is weighted by ``w_i = m / (C m_c)``, so that each class
weighs the same. The weighted ridge regression ``β = (Φ_c'WΦ_c + λI)⁻¹ Φ_c'W Y_c`` (``Φ_c``
the features centred at their weighted mean, ``λ = m · max(reg, 1e-6) · mean K(x, x)``)
spans the Fisher directions of the average of the class covariances, plus a ridge of
``reg`` times the kernel's scale: for two classes, it is the direction of Diethe's (2015)
Fisher discriminant with the papers' ``B`` (the class-balanced total covariance is the
within-class one plus a rank-one term along the mean difference).

The calibration
---------------
The fitted scores of the training points are optimistic: a ``k``-dimensional direction
separates the points it was fitted to far better than new ones, so Gaussians fitted to
them make probabilities that grow overconfident with ``k``. The leave-one-out scores of a
ridge regression have a closed form, ``s₋ᵢ = yᵢ − (yᵢ − sᵢ)/(1 − hᵢ)`` with ``hᵢ`` the
leverage, and the leverages of every prefix are cumulative sums of the squared columns of
``Q = √W Φ_c U⁻¹``. On those honest scores, an LDA (Gaussian classes with one covariance,
in the ``C-1`` dimensions of the scores, its covariance shrunk toward a multiple of the
identity) gives linear log-odds, and one temperature ``T``,
fitted by the log-loss of Platt's smoothed targets on the same scores, scales them. The
class priors are added last: ``log P(c | x) = T·z_c(x) + log π_c + const``, so a model
that learned nothing predicts the most frequent class.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace

import numpy as np
import scipy.linalg
import threadpoolctl

from . import _core
from ._progress import SILENT

_blas_controller = None

#: The smallest ``reg``: a ridge keeps the discriminant's solve definite when bases are
#: nearly dependent or ``k`` is near ``m``, and its leave-one-out scores more than rounding
#: noise. On 200 noisy 2-D points (gamma = 1, reg = 0), test accuracy at k = 100 and 199 was
#: 0.50-0.52 with a floor of 1e-8 (the calibration fell back to the priors), 0.53-0.59 at 1e-7,
#: 0.87-0.89 at 1e-6 and 0.90 at 1e-5.
SMALLEST_REG = 1e-6

# The prefixes calibrated together hold at most this many leave-one-out scores.
_CALIBRATION_BLOCK = 1 << 21

# The calibration's covariance of the scores is shrunk this far toward its mean eigenvalue:
# classes spread unequally in score space (iris: one tight class beside two that overlap),
# and the pooled covariance then trusts the tight class's directions too much. On iris and
# wine (5-fold cross-validated log-loss, k = 10 to 100) 0.3 did best of 0, 0.1, 0.3, 0.6;
# two classes have one score dimension, where it changes nothing.
_SCORE_SHRINKAGE = 0.3


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


class PackedTriangles:
    """Pickles the matrices its class names in ``_TRIANGLES`` as their triangles (half the
    bytes), rebuilt bit for bit."""

    _TRIANGLES: dict = {}

    def __getstate__(self):
        state = dict(self.__dict__)
        for name, side in self._TRIANGLES.items():
            state[name] = pack_triangle(state[name], side)
        return state

    def __setstate__(self, state):
        # Through __dict__: a frozen dataclass refuses setattr.
        self.__dict__.update({name: unpack_triangle(value) for name, value in state.items()})


@dataclass
class Discriminant(PackedTriangles):
    """A calibrated ``C``-class Fisher discriminant on the Nyström features of ``support``.

    For the first ``j`` bases, the scores are ``s = ȳ + (φ − μ)[:j] β_j`` with
    ``β_j = U[:j, :j]⁻¹ P[:j]``, and the log-probabilities, up to a constant,
    ``s A_j + c_j + log π``.
    """

    support: np.ndarray  # (k,) training indices of the bases, in selection order
    projection: np.ndarray  # R = L⁻¹, lower triangular (k, k): R'R = K[support, support]⁻¹
    feature_mean: np.ndarray  # μ (k,), class-balanced
    target_mean: np.ndarray  # ȳ (C-1,)
    cholesky: np.ndarray  # U (k, k), upper: U'U = Φ_c'WΦ_c + λI
    target_products: np.ndarray  # P = U⁻ᵀ Φ_c'W Y_c, (k, C-1)
    score_weights: np.ndarray  # A_j for j = 0..k: (k+1, C-1, C)
    score_bias: np.ndarray  # c_j for j = 0..k: (k+1, C)
    log_priors: np.ndarray  # (C,)
    reg: float
    kernel_scale: float  # the mean of K(x, x) over the training set: λ's unit
    stopped_early: bool = False
    kernel_passes: int = 0

    _TRIANGLES = {"projection": "lower", "cholesky": "upper"}

    @property
    def n_classes(self) -> int:
        return self.score_bias.shape[1]

    def linear(self):
        """``(coef, intercept)``, shapes ``(k, C)`` and ``(C,)``: the log-probabilities,
        up to a constant per sample, are ``φ coef + intercept``."""
        k = len(self.support)
        weights, bias = self.score_weights[k], self.score_bias[k] + self.log_priors
        if k == 0:
            return np.zeros((0, self.n_classes)), bias
        beta = scipy.linalg.solve_triangular(self.cholesky, self.target_products, lower=False)
        coef = beta @ weights
        intercept = (self.target_mean - self.feature_mean @ beta) @ weights + bias
        return coef, intercept

    def transform(self, kernel_to_support: np.ndarray) -> np.ndarray:
        return np.asarray(kernel_to_support, dtype=np.float64) @ self.projection.T

    def truncated(self, j: int) -> "Discriminant":
        """The model a fit with only the first ``j`` bases gives (same selection prefix)."""
        j = min(int(j), len(self.support))
        return replace(
            self,
            support=self.support[:j],
            projection=self.projection[:j, :j],
            feature_mean=self.feature_mean[:j],
            cholesky=self.cholesky[:j, :j],
            target_products=self.target_products[:j],
            score_weights=self.score_weights[: j + 1],
            score_bias=self.score_bias[: j + 1],
        )


def pack_triangle(matrix, side):
    """``(side, order, values)``: the triangle (``"lower"``, ``"upper"``, or ``"symmetric"``:
    the lower of a symmetric matrix) of a square matrix, or of each in a stack, when the rest
    is zero (or, symmetric, the mirror image) bit for bit; anything else unchanged."""
    if not isinstance(matrix, np.ndarray) or matrix.ndim < 2 or matrix.shape[-1] != matrix.shape[-2]:
        return matrix
    k = matrix.shape[-1]
    kept = np.triu_indices(k) if side == "upper" else np.tril_indices(k)
    rest = np.tril_indices(k, -1) if side == "upper" else np.triu_indices(k, 1)
    values, others = matrix[..., kept[0], kept[1]], matrix[..., rest[0], rest[1]]
    expected = matrix[..., rest[1], rest[0]] if side == "symmetric" else np.zeros_like(others)
    if others.tobytes() != expected.tobytes():  # bytes: -0.0 is not 0.0
        return matrix
    # The memory order too: BLAS may round differently on a transposed layout.
    order = "F" if matrix.flags.f_contiguous and not matrix.flags.c_contiguous else "C"
    return side, order, matrix.shape, values


def unpack_triangle(packed):
    """The matrix :func:`pack_triangle` packed (anything else unchanged)."""
    if not isinstance(packed, tuple):
        return packed
    side, order, shape, values = packed
    k = shape[-1]
    kept = np.triu_indices(k) if side == "upper" else np.tril_indices(k)
    matrix = np.zeros(shape, dtype=values.dtype, order=order)
    matrix[..., kept[0], kept[1]] = values
    if side == "symmetric":
        matrix[..., kept[1], kept[0]] = values
    return matrix


def compacted(record):
    """A copy of a dataclass whose arrays are copied out of their views (in their memory
    order): what pickling gives, so that a truncated model predicts bit for bit the same
    before and after."""
    return replace(record, **{
        name: np.array(value, order="K") for name, value in vars(record).items() if isinstance(value, np.ndarray)
    })


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


#: The rows the calibration is fitted on, at most (about: each class keeps at least one).
#: It fits ``C`` log-odds weights of ``C-1`` scores, ``C`` biases and a temperature per
#: prefix, a few dozen numbers, which 10⁵ rows pin down far below their sampling noise;
#: and the leave-one-out scores cost ``O(rows · k)`` per prefix block (40 s of an
#: m = 10⁶, k = 100 fit on every row). Fits of at most this many rows use them all.
CALIBRATION_ROWS = 100_000

# Rows of kernel columns turned into features at once, at most (times k, in float64).
_FEATURE_BLOCK = 1 << 22


def calibration_sample(codes: np.ndarray, n_classes: int) -> np.ndarray:
    """The rows (indices into ``codes``, ascending) the calibration is fitted on: every row
    when there are at most :data:`CALIBRATION_ROWS`, else about that many, each class's
    share of them as in the data (largest remainders; at least one row a class), spread
    evenly over the class's rows in their order. No random draw: a fit in memory and one
    on a cluster calibrate on the same rows."""
    codes = np.asarray(codes)
    m, limit = len(codes), int(CALIBRATION_ROWS)
    if m <= limit:
        return np.arange(m)
    counts = np.bincount(codes, minlength=n_classes)
    shares = limit * counts / m
    taken = np.floor(shares).astype(np.int64)
    # The rows left go to the largest remainders, ties to the lower class.
    taken[np.argsort(taken - shares, kind="stable")[: limit - int(taken.sum())]] += 1
    taken = np.minimum(np.maximum(taken, 1), counts)
    chosen = []
    for c in range(n_classes):
        rows = np.flatnonzero(codes == c)
        # The middle of each of taken[c] equal runs of the class's rows.
        chosen.append(rows[(2 * np.arange(taken[c]) + 1) * counts[c] // (2 * taken[c])])
    return np.sort(np.concatenate(chosen))


@dataclass
class ClassMoments:
    """Per class ``c``: its rows' count ``n_c``, mean feature vector ``μ_c`` and scatter
    ``S_c = Σ (f − μ_c)(f − μ_c)'``: the sufficient statistics of the discriminant's
    ridge regression (whose weights and targets are constant within a class) and of the
    bound's :class:`~gkfda.bounds.FeatureMoments`. Those of row blocks add up
    (:meth:`merged`, Chan et al.'s pairwise update, which centres each block at its own
    mean, so nothing cancels however far the features are from zero)."""

    counts: np.ndarray  # (C,) int64
    means: np.ndarray  # (C, k)
    scatters: np.ndarray  # (C, k, k)

    @classmethod
    def of(cls, features: np.ndarray, codes: np.ndarray, n_classes: int) -> "ClassMoments":
        features = np.asarray(features, dtype=np.float64)
        k = features.shape[1]
        counts = np.bincount(codes, minlength=n_classes).astype(np.int64)
        means, scatters = np.zeros((n_classes, k)), np.zeros((n_classes, k, k))
        for c in np.flatnonzero(counts):
            rows = features[codes == c]
            means[c] = rows.mean(axis=0)
            deviations = rows - means[c]
            scatters[c] = deviations.T @ deviations
        return cls(counts, means, scatters)

    def merged(self, other: "ClassMoments") -> "ClassMoments":
        counts = self.counts + other.counts
        means, scatters = self.means.copy(), self.scatters + other.scatters
        for c in np.flatnonzero(self.counts * other.counts):
            n_a, n_b = float(self.counts[c]), float(other.counts[c])
            delta = other.means[c] - self.means[c]
            means[c] += delta * (n_b / (n_a + n_b))
            scatters[c] += np.outer(delta, delta) * (n_a * n_b / (n_a + n_b))
        alone = (self.counts == 0) & (other.counts > 0)
        means[alone] = other.means[alone]
        return ClassMoments(counts, means, scatters)


def combined(parts) -> ClassMoments:
    """The moments of all the rows of ``parts`` (each a :class:`ClassMoments`), merged in order."""
    parts = iter(parts)
    total = next(parts)
    for part in parts:
        total = total.merged(part)
    return total


class KernelColumns:
    """Exact kernel columns held in memory, as the discriminant reads them: ``matrix``
    (``m × n``, rows in kernel order) restricted to its columns ``positions`` (all: None).
    A fit on a cluster has its own (``_dask``) with the same two methods."""

    def __init__(self, matrix, positions=None):
        self.matrix, self.positions = matrix, positions

    def select(self, positions) -> "KernelColumns":
        return KernelColumns(self.matrix, np.asarray(positions, dtype=np.intp))

    def rows(self, indices) -> np.ndarray:
        """Rows ``indices`` of the columns (``|indices| × k``)."""
        indices = np.asarray(indices, dtype=np.intp)
        if self.positions is None:
            return self.matrix[indices]
        return self.matrix[np.ix_(indices, self.positions)]

    def moments(self, projection, codes, n_classes, advance=None) -> ClassMoments:
        """The :class:`ClassMoments` of the features ``K[:, support] R'`` of every row, by
        blocks of rows (``advance(rows)`` after each)."""
        m, k = len(self.matrix), projection.shape[0]
        block = max(1, _FEATURE_BLOCK // max(k, 1))
        parts = []
        for start in range(0, m, block):
            stop = min(m, start + block)
            columns = self.matrix[start:stop]
            if self.positions is not None:
                columns = columns[:, self.positions]
            parts.append(feature_moments(columns, projection, codes[start:stop], n_classes))
            if advance is not None:
                advance(stop - start)
        if not parts:
            return ClassMoments.of(np.zeros((0, k)), codes, n_classes)
        return combined(parts)


def feature_moments(columns, projection, codes, n_classes) -> ClassMoments:
    """The :class:`ClassMoments` of the features of the kernel columns ``columns`` (a block
    of rows), what a chunk on a cluster computes too."""
    return ClassMoments.of(np.asarray(columns, dtype=np.float64) @ projection.T, codes, n_classes)


def fit_discriminant(
    kernel_train_support,
    kernel_support: np.ndarray,
    codes: np.ndarray,
    n_classes: int,
    priors: np.ndarray | None,
    support: np.ndarray,
    reg: float,
    kernel_scale: float,
    stopped_early: bool = False,
    kernel_passes: int = 0,
    projection: np.ndarray | None = None,
    n_threads: int = 1,
    progress=SILENT,
    return_moments: bool = False,
):
    """Nyström features ``φ(X) = K[:, i] R'`` and the calibrated discriminant on them.

    ``kernel_train_support``: the exact kernel columns of the bases, ``m × k`` (an array),
    or where they are held (a :class:`KernelColumns`, or a cluster's chunks: anything with
    its ``moments`` and ``rows``): the ridge regression reads only their features'
    :class:`ClassMoments`, reduced over blocks of rows, and the calibration the features
    of the rows of :func:`calibration_sample`. ``codes`` are the training samples' classes,
    ``0..n_classes-1``, each present; ``priors`` the class priors (``None``: the class
    frequencies of ``codes``). A ``projection`` ``R`` already computed for these bases (it
    does not depend on ``reg``) is used as it is. ``n_threads`` share the calibration's
    prefixes (results do not depend on it). ``progress`` (a ``_progress.FitProgress``)
    shows the phases ``discriminant`` and ``calibration`` (its prefixes).
    ``return_moments``: ``(model, moments)``, the moments of the features too.
    """
    columns = kernel_train_support
    if not hasattr(columns, "moments"):
        columns = KernelColumns(columns)
    codes = np.asarray(codes)
    tolerance = 1e-5 if np.asarray(kernel_support).dtype == np.float32 else 1e-10
    if not kernel_scale > 0.0:
        kernel_scale = 1.0
    with one_blas_thread():
        with progress.phase("discriminant"):
            if projection is None:
                projection = nystrom_projection(kernel_support, tolerance)
            moments = columns.moments(projection, codes, n_classes)
            feature_mean, target_mean, cholesky, target_products = _ridge_regression(
                moments, n_classes, reg, kernel_scale)
        counts = moments.counts
        m = int(counts.sum())
        empirical = counts / m
        log_priors = np.log(empirical if priors is None else np.asarray(priors, dtype=np.float64))
        k = projection.shape[0]
        with progress.phase("calibration", total=k, unit="prefix"):
            sample = calibration_sample(codes, n_classes)
            sampled = codes[sample]
            weights = m / (n_classes * counts[sampled])  # each class weighs m / C
            root = np.sqrt(weights)
            # The sample's rows of Q = √W Φ_c U⁻¹, the data rows of the ridge-augmented least
            # squares' orthonormal factor (of the regression on every row), made in place: the
            # sample's N × k arrays are the most a fit on a cluster holds on its driver.
            orthonormal = np.asarray(columns.rows(sample), dtype=np.float64) @ projection.T
            orthonormal -= feature_mean
            orthonormal *= root[:, None]
            orthonormal = scipy.linalg.solve_triangular(cholesky, orthonormal.T, trans="T", lower=False,
                                                        overwrite_b=True).T
            targets = np.zeros((len(sample), n_classes - 1))
            rest = sampled > 0
            targets[rest, sampled[rest] - 1] = 1.0
            score_weights, score_bias = _calibrations(
                orthonormal, target_products, root, weights / m, targets, target_mean, sampled, counts,
                np.log(empirical), n_threads, progress.advance,
            )
    model = Discriminant(
        support=np.asarray(support, dtype=np.int64),
        projection=projection,
        feature_mean=feature_mean,
        target_mean=target_mean,
        cholesky=cholesky,
        target_products=target_products,
        score_weights=score_weights,
        score_bias=score_bias,
        log_priors=log_priors,
        reg=float(reg),
        kernel_scale=float(kernel_scale),
        stopped_early=stopped_early,
        kernel_passes=kernel_passes,
    )
    return (model, moments) if return_moments else model


def _ridge_regression(moments, n_classes, reg, kernel_scale):
    """The discriminant's weighted ridge regression of the class indicators on the training
    features (the module's docstring), from their :class:`ClassMoments`:
    ``(μ, ȳ, U, P)``.

    Each class weighs ``w_c n_c = m / C``, and its rows share their weight and target, so
    with ``δ_c = μ_c − μ``: ``Φ_c'WΦ_c = Σ_c w_c (S_c + n_c δ_c δ_c')`` and
    ``Φ_c'W Y_c = Σ_c (m / C) δ_c (t_c − ȳ)'``."""
    counts = moments.counts
    m, k = int(counts.sum()), moments.means.shape[1]
    share = m / n_classes
    class_weights = share / counts
    feature_mean = moments.means.sum(axis=0) / n_classes
    class_targets = np.eye(n_classes)[:, 1:]  # t_c: class 0 is implied
    target_mean = np.full(n_classes - 1, 1.0 / n_classes)
    deviations = moments.means - feature_mean
    gram = np.einsum("c,cij->ij", class_weights, moments.scatters) + share * (deviations.T @ deviations)
    ridge = m * max(float(reg), SMALLEST_REG) * kernel_scale
    gram[np.diag_indices(k)] += ridge
    cholesky = scipy.linalg.cholesky(gram, lower=False) if k else np.zeros((0, 0))
    products = share * (deviations.T @ (class_targets - target_mean))
    target_products = (scipy.linalg.solve_triangular(cholesky, products, trans="T", lower=False) if k
                       else np.zeros((0, n_classes - 1)))
    return feature_mean, target_mean, cholesky, target_products


def _calibrations(orthonormal, target_products, root, intercept_leverage, targets, target_mean, codes, counts,
                  log_empirical, n_threads, advance=None):
    """``(A_j, c_j)`` for every prefix ``j = 0..k`` from the leave-one-out scores;
    ``advance(prefixes)`` is called as each block of prefixes is done."""
    m, k = orthonormal.shape
    n_classes = len(counts)
    score_weights = np.zeros((k + 1, n_classes - 1, n_classes))
    score_bias = np.zeros((k + 1, n_classes))  # j = 0: no feature, the priors alone
    smoothed = _smoothed_targets(codes, counts)
    codes = codes.astype(np.int64)  # the core's type, converted once for every block
    fitted = np.broadcast_to(target_mean, (m, n_classes - 1)).copy()
    leverage = intercept_leverage.copy()
    block = max(1, _CALIBRATION_BLOCK // (m * max(n_classes - 1, 1)))
    for start in range(0, k, block):
        stop = min(k, start + block)
        columns = orthonormal[:, start:stop].T  # (B, m)
        # Scores and leverages of prefixes start+1..stop, as running sums over the features.
        steps = columns[:, :, None] * (target_products[start:stop, None, :] / root[None, :, None])
        scores = fitted + np.cumsum(steps, axis=0)  # (B, m, C-1)
        leverages = leverage + np.cumsum(columns**2, axis=0)  # (B, m)
        fitted, leverage = scores[-1].copy(), leverages[-1].copy()
        remaining = np.maximum(1.0 - leverages, 1e-12)[:, :, None]
        left_out = targets - (targets - scores) / remaining
        weights, bias = _core.calibrate(
            left_out, scores, codes, smoothed, log_empirical, shrinkage=_SCORE_SHRINKAGE,
            n_threads=n_threads,
        )
        score_weights[start + 1 : stop + 1] = weights
        score_bias[start + 1 : stop + 1] = bias
        if advance is not None:
            advance(stop - start)
    return score_weights, score_bias


def _smoothed_targets(codes, counts):
    """Platt's targets: ``(m_c + 1)/(m_c + 2)`` on the sample's class, the rest shared by
    the others; they keep the temperature finite on separable scores."""
    n_classes = len(counts)
    true = (counts[codes] + 1.0) / (counts[codes] + 2.0)
    smoothed = np.repeat(((1.0 - true) / (n_classes - 1))[:, None], n_classes, axis=1)
    smoothed[np.arange(len(codes)), codes] = true
    return smoothed
