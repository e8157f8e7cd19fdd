"""The scikit-learn estimator :class:`ParsimoniousKFDA` (kFDA_q of Harrison & Pasupa, 2010).

A binary kernel Fisher discriminant made sparse by an ℓ_q penalty (``0 < q ≤ 1``) on its
dual coefficients, minimised by majorize–minimize (``docs/architecture.md``, "Parsimonious
KFDA (kFDA_q)"). Every MM step is a weighted ridge regression on the coefficients still
active, solved in Rust (``_core.parsimonious_fit``: faer's Cholesky on one thread, measured
faster than OpenBLAS's; ``docs/PERFORMANCE.md``); :func:`mm_fit` is the same iteration
through SciPy, for ``ρ = 0`` and the rare step whose system rounding made indefinite.
"""

from __future__ import annotations

import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from numbers import Integral, Real

import numpy as np
import scipy.linalg
from scipy.special import expit, log_expit
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from . import _core, _validation
from ._discriminant import _SCORE_SHRINKAGE, _smoothed_targets, one_blas_thread
from ._validation import check_scored_samples, checked_priors, encoded_classes, thread_count
from ._kernels import (
    _LARGEST_THREADS, KERNEL_CONSTRAINTS, _count, _Number, check_kernel_arguments, core_kernel, finite_outputs,
    _convert, kernel_between, kernel_expansion, kernel_parameters, precomputed_columns, precomputed_training_kernel,
    resolve_gamma, validate_input,
)
from ._sparse import accepts_sparse, dense_rows
from .estimator import ovr_probabilities
from ._atomic import fits_atomically

#: A coefficient below this fraction of the largest is dropped from the MM solve for good.
#: Its ridge multiplier ``|ω|^{q-2}`` is then above ``10^{12(2-q)}`` times the largest one's,
#: so each step shrinks it by that much again: at double precision it can never return.
PRUNE = 1e-12

#: The ridge start's ``λ₀``, relative to the mean diagonal of ``K̃'K̃``.
RIDGE_START = 1e-3

#: The leave-one-out's smoother has at least this ridge, relative to the largest eigenvalue
#: of its ``M'M``: at ``ρ = 0`` (or a ``ρ`` below rounding beside the kernel's scale) it
#: interpolates, ``1 − Hᵢᵢ`` and the residual are both rounding, and this is the smallest
#: ridge whose leave-one-out double precision still resolves.
LEAVE_ONE_OUT_RIDGE = 1e-10

#: MM steps per call into the core when a progress bar is shown (a restart from the
#: returned ``ω`` is the same iteration: the active set is its nonzero coefficients).
PROGRESS_STEPS = 10


def targets(positive):
    """``ŷ``: ``N/N₁`` on the positive class, ``−N/N₂`` on the other (Harrison & Pasupa's (2010) LS-FDA
    targets, whose least-squares fit lies along the Fisher direction)."""
    positive = np.asarray(positive, dtype=bool)
    n, n_pos = len(positive), int(positive.sum())
    return np.where(positive, n / n_pos, -n / (n - n_pos))


def augmented_gram(K, y_hat):
    """``(K̃'K̃, K̃'ŷ)`` of ``K̃ = [1 K]`` for a symmetric ``K``."""
    n = K.shape[0]
    column_sums = K.sum(axis=0)
    gram = np.empty((n + 1, n + 1))
    gram[0, 0] = n
    gram[0, 1:] = gram[1:, 0] = column_sums
    gram[1:, 1:] = _square(K)
    products = np.concatenate([[y_hat.sum()], K @ y_hat])
    return gram, products


def _square(K):
    """``K'K = K²`` of a symmetric ``K`` by SYRK: one triangle, half a GEMM's work."""
    upper = scipy.linalg.blas.dsyrk(1.0, np.asfortranarray(K), trans=1)
    return np.triu(upper) + np.triu(upper, 1).T


def ridge_start(gram, products, factor=None):
    """``(K̃'K̃ + λ₀I)⁻¹K̃'ŷ`` with ``λ₀ = 10⁻³ tr(K̃'K̃)/(N+1)``, exact zeros made tiny (an
    exact zero is absorbing: the MM step never moves it). ``factor`` is
    :func:`ridge_factor`'s, shared by the problems of one ``K̃'K̃``."""
    factor = ridge_factor(gram) if factor is None else factor
    omega = scipy.linalg.cho_solve(factor, products, check_finite=False)
    omega[omega == 0.0] = np.finfo(np.float64).tiny
    return omega


def ridge_factor(gram):
    """The Cholesky factor of the ridge start's ``K̃'K̃ + λ₀I``."""
    size = gram.shape[0]
    system = gram.copy()
    system[np.diag_indices(size)] += RIDGE_START * np.trace(gram) / size
    return scipy.linalg.cho_factor(system, lower=False, overwrite_a=True, check_finite=False)


def mm_fit(K, gram, products, y_hat, omega, q, rho, tol, max_iter, penalize_bias, prune=PRUNE):
    """Majorize–minimize from ``omega``: ``(ω, objective per iteration, iterations)``.

    Each step solves ``(Ψ G_AA Ψ + ρNq P) s = Ψ r_A`` and sets ``ω_A = Ψ s`` on the active
    coefficients ``A`` only (``Ψ = diag |ω_A|^{(2−q)/2}``): the exact-zero coefficients and
    those pruned below ``prune · max|ω|`` stay zero. ``objective[0]`` is ``J`` at the start.
    """
    n = K.shape[0]
    omega = np.array(omega, dtype=np.float64)
    ridge = rho * n * q
    active = np.flatnonzero(omega)
    if not penalize_bias and 0 not in active:
        active = np.concatenate([[0], active])

    def objective(omega, active):
        alpha_active = active[active > 0]
        residual = y_hat - omega[0] - K[:, alpha_active - 1] @ omega[alpha_active]
        penalised = omega[active] if penalize_bias else omega[alpha_active]
        return 0.5 * residual @ residual + rho * n * np.sum(np.abs(penalised) ** q)

    history = [objective(omega, active)]
    iterations = 0
    for iterations in range(1, max_iter + 1):
        psi = np.abs(omega[active]) ** ((2.0 - q) / 2.0)
        penalty = np.full(len(active), ridge)
        if not penalize_bias and active[0] == 0:
            psi[0], penalty[0] = 1.0, 0.0
        system = gram[np.ix_(active, active)]
        system *= psi[:, None]
        system *= psi[None, :]
        system[np.diag_indices(len(active))] += penalty
        right = psi * products[active]
        step = _solve(system, right, ridge)
        omega[:] = 0.0
        omega[active] = psi * step
        magnitude = np.abs(omega[active])
        keep = (magnitude > 0.0) & (magnitude >= prune * (magnitude.max() if len(active) else 0.0))
        if not penalize_bias:
            keep |= active == 0  # the unpenalised bias has no ridge to shrink it: never pruned
        omega[active[~keep]] = 0.0
        active = active[keep]
        history.append(objective(omega, active))
        if abs(history[-2] - history[-1]) <= tol * abs(history[-2]):
            break
    return omega, np.array(history), iterations


def solve_mm(K, gram, products, y_hat, omega, q, rho, tol, max_iter, penalize_bias, progress=None):
    """:func:`mm_fit`, in Rust (faer's Cholesky, the GIL released) when ``ρ > 0``; in
    NumPy for ``ρ = 0`` (least squares) or when rounding made a step's system indefinite.
    ``progress(steps)``, if given, is told of the steps as they are done."""
    if rho > 0.0:
        start = np.ascontiguousarray(omega, dtype=np.float64)
        try:
            if progress is None:
                return _core.parsimonious_fit(
                    K, gram, products, y_hat, start, q=q, rho=rho, tol=tol, max_iter=max_iter,
                    penalize_bias=penalize_bias, prune=PRUNE,
                )
            return _core_in_steps(K, gram, products, y_hat, start, q, rho, tol, max_iter, penalize_bias, progress)
        except ValueError as error:
            if not str(error).startswith("gram:"):
                raise
    return mm_fit(K, gram, products, y_hat, omega, q, rho, tol, max_iter, penalize_bias)


def _core_in_steps(K, gram, products, y_hat, omega, q, rho, tol, max_iter, penalize_bias, progress):
    """``_core.parsimonious_fit``, :data:`PROGRESS_STEPS` steps a call: the same iterates."""
    history, done = [], 0
    while True:
        steps = min(PROGRESS_STEPS, max_iter - done)
        omega, objective, iterations = _core.parsimonious_fit(
            K, gram, products, y_hat, omega, q=q, rho=rho, tol=tol, max_iter=steps, penalize_bias=penalize_bias,
            prune=PRUNE,
        )
        history.append(objective[1:] if history else objective)
        done += iterations
        progress(iterations)
        if iterations < steps or done == max_iter or converged(objective, tol):
            return omega, np.concatenate(history), done


def converged(objective, tol):
    """Whether the last step met the stopping rule ``|J_old − J_new| ≤ tol·|J_old|``."""
    return len(objective) > 1 and abs(objective[-2] - objective[-1]) <= tol * abs(objective[-2])


def _solve(system, right, ridge):
    """``system⁻¹ right``: Cholesky when the system is definite (``ρ > 0``), else the
    minimum-norm least-squares solution (``ρ = 0`` leaves ``K̃'K̃``, of rank at most N)."""
    if ridge > 0.0:
        try:
            factor = scipy.linalg.cho_factor(system, lower=True, overwrite_a=True, check_finite=False)
            return scipy.linalg.cho_solve(factor, right, check_finite=False)
        except np.linalg.LinAlgError:
            pass  # rounding made a nearly singular Ψ G Ψ + λI indefinite; least squares below
    return scipy.linalg.lstsq(system, right, check_finite=False, lapack_driver="gelsd")[0]


def leave_one_out(K, y_hat, omega, support, q, rho, penalize_bias):
    """``(fitted, left-out)`` training scores of the thresholded model.

    At the MM fixed point the fit is the weighted ridge ``ω = (K̃'K̃ + ρNq B)⁻¹K̃'ŷ`` with
    ``B = diag |ω|^{q−2}`` held fixed, a linear smoother ``H`` of ``ŷ``; restricted to the
    retained coefficients, ``H = M (M'M + ρNq P)⁻¹ M'`` with ``M = K̃_S Ψ``, and the
    leave-one-out score is ``f̂ᵢ − Hᵢᵢ rᵢ/(1 − Hᵢᵢ)`` with ``r = (I − H)ŷ``.

    ``1 − Hᵢᵢ`` and ``r`` are sums of non-negative terms over the eigenvectors of ``M'M``
    (``λ/(σⱼ + λ)`` each), not differences from 1: near interpolation (``ρ`` small beside
    the kernel's scale, or 0) both are tiny and a difference would be rounding alone. The
    ridge is at least :data:`LEAVE_ONE_OUT_RIDGE` of the largest ``σⱼ``, so the scores do
    not change when the kernel is scaled and ``ρ`` with it. An unpenalised bias is
    projected out exactly (the columns and ``ŷ`` centred).
    """
    n = K.shape[0]
    with_bias = omega[0] != 0.0 or not penalize_bias
    columns = np.concatenate([[0], support + 1]) if with_bias else support + 1
    design = np.hstack([np.ones((n, 1)), K[:, support]]) if with_bias else K[:, support]
    fitted = design @ omega[columns]
    if not len(columns):
        return fitted, fitted.copy()
    scaled = design * np.abs(omega[columns]) ** ((2.0 - q) / 2.0)
    centred, rest, dimension = y_hat, np.zeros(n), n  # rest: the leverage of the unpenalised part
    if not penalize_bias:
        scaled = scaled[:, 1:] - scaled[:, 1:].mean(axis=0)
        centred, rest, dimension = y_hat - y_hat.mean(), np.full(n, 1.0 / n), n - 1
    if scaled.shape[1]:
        # Once per fit, on the retained samples only.
        values, vectors = _symmetric_eigen(scaled.T @ scaled)
        largest = max(values.max(), 0.0)
        kept = values > len(values) * np.finfo(np.float64).eps * largest
        values = values[kept]
        basis = (scaled @ vectors[:, kept]) / np.sqrt(values)
    else:
        largest, values, basis = 0.0, np.zeros(0), np.zeros((n, 0))
    ridge = max(rho * n * q, LEAVE_ONE_OUT_RIDGE * largest)
    # Of each direction, the parts H keeps and I − H leaves, each from its own quotient
    # (one of them can be far below the other's rounding).
    kept, left = values / (values + ridge), ridge / (values + ridge)
    squares = basis**2
    projections = basis.T @ centred
    residual = basis @ (left * projections)
    remaining = squares @ left
    leverage = rest + squares @ kept
    if len(values) < dimension:  # the directions M' annuls: H leaves them whole
        residual += centred - basis @ projections
        remaining += np.maximum(1.0 - rest - squares.sum(axis=1), 0.0)
    return fitted, fitted - leverage * residual / np.maximum(remaining, np.finfo(np.float64).tiny)


def _symmetric_eigen(system):
    """``(values, vectors)`` of a symmetric positive semi-definite ``system``.

    LAPACK's divide and conquer (``syevd``): OpenBLAS's default ``syevr`` failed with
    "Internal Error" on one such system of order 376 from diabetis on one BLAS thread. Its
    singular value decomposition is the fallback (for a PSD matrix, the same thing).
    """
    try:
        return scipy.linalg.eigh(system, check_finite=False, driver="evd")
    except np.linalg.LinAlgError:
        vectors, values, _ = np.linalg.svd(system, hermitian=True)
        return values, vectors


class ParsimoniousKFDA(ClassifierMixin, BaseEstimator):
    """Parsimonious kernel Fisher discriminant (kFDA_q; Harrison and Pasupa 2010).

    Fits the least-squares form of the Fisher discriminant, ``f(x) = b + Σᵢ αᵢ k(xᵢ, x)``
    with targets ``ŷ = N/N₁`` on ``classes_[1]`` and ``−N/N₂`` on ``classes_[0]``, under an
    ℓ_q penalty that drives most ``αᵢ`` to zero: it minimises::

        ½‖ŷ − K̃ω‖² + ρN Σᵢ |ωᵢ|^q,   K̃ = [1 K],   ω = [b; α],

    by majorize–minimize (each step a weighted ridge regression; the objective never
    increases), then keeps the samples whose ``|αᵢ|`` exceeds ``threshold · max|α|``.
    Prediction needs one kernel evaluation per retained sample. More than two classes are
    fitted one-vs-rest.

    Parameters
    ----------
    q : float in (0, 1], default=1.0
        The penalty's exponent: 1 is the lasso (convex); below 1 the penalty is sharper
        at zero and keeps fewer samples, but the objective is not convex and the result
        depends on ``init``.
    rho : float >= 0, default=1e-3
        The penalty's weight ``ρ`` (it is multiplied by ``N``). ``0`` is plain least
        squares (no sparsity): one step from ``init``, a least-squares solution.
    kernel : str or callable, default="rbf"
        As :class:`GreedyKFDA`'s: ``rbf`` is ``exp(-gamma ||x - z||²)`` (Harrison & Pasupa's (2010)
        ``σ`` is ``gamma = 1/(2σ²)``).
    gamma : float, {"scale", "auto"} or None, default=None
        As :class:`GreedyKFDA`'s: ``None`` is ``"scale"``, ``1 / (n_features * X.var())``.
    degree : float or None, default=None
    coef0 : float or None, default=None
        As :class:`GreedyKFDA`'s: of ``poly`` (``None``: 3 and 1) and ``sigmoid``; None
        with a callable or precomputed kernel.
    tol : float > 0, default=1e-5
        Stop when the objective's relative decrease in one step is at most ``tol``.
    max_iter : int >= 1, default=1000
        Reaching it before the stopping rule warns (``ConvergenceWarning``).
    threshold : float in [0, 1), default=1e-6
        A sample is retained when ``|αᵢ| > threshold · max|α|``; the others are set to
        zero for prediction (no refit).
    init : "ridge" or array-like of shape (n_samples + 1,), default="ridge"
        The starting ``ω = [b; α]``. ``"ridge"`` is ``(K̃'K̃ + λ₀I)⁻¹K̃'ŷ`` with
        ``λ₀ = 10⁻³ tr(K̃'K̃)/(N+1)``. An array must be finite and nonzero everywhere (a
        zero stays zero); it is the start of every one-vs-rest problem, in the order of
        the training samples.
    penalize_bias : bool, default=True
        Whether the bias ``b`` is in the penalty (Harrison & Pasupa, 2010, penalise it).
    priors : array-like of shape (n_classes,) or None, default=None
        Class priors, as :class:`GreedyKFDA`'s; they enter the probabilities.
    n_jobs : int or None, default=None
        Threads of the kernel, of the linear algebra (BLAS) and of the one-vs-rest
        problems. Results do not depend on it.
    verbose : bool, default=False
        A progress bar on stderr: of the MM steps (two classes) or of the one-vs-rest
        problems. Results do not depend on it.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    priors_ : ndarray of shape (n_classes,)
    support_ : ndarray of shape (n_support,), or a list of them (one-vs-rest)
        Training indices of the retained samples, increasing.
    support_vectors_ : ndarray of shape (n_support, n_features), or a list of them
    dual_coef_ : ndarray of shape (n_support,), or a list of them
        The retained ``αᵢ``.
    intercept_ : ndarray of shape (1,) or (n_classes,)
        The bias ``b`` of each discriminant ``f``.
    theta_ : ndarray of shape (1,) or (n_classes,)
        Harrison & Pasupa's (2010) threshold ``½N(1/N₁ − 1/N₂)``, the midpoint of the targets: its rule
        is ``classes_[1]`` where ``discriminant(X) > theta_``.
    n_iter_ : int, or ndarray of shape (n_classes,)
        MM iterations run.
    objective_ : ndarray of shape ``(n_iter_ + 1,)``, or a list of them
        The objective at the start and after each iteration; it never increases.
    n_features_in_ : int

    Notes
    -----
    ``predict`` is the argmax of ``predict_proba``, as for every scikit-learn classifier;
    it is not Harrison & Pasupa's (2010) rule, which is ``discriminant(X) > theta_``. The
    probabilities come from the discriminant's leave-one-out scores on the training set
    (in closed form: at the MM fixed point the fit is a weighted ridge regression, a
    linear smoother), through :class:`GreedyKFDA`'s calibration (an LDA on the scores,
    a temperature fitted by log-loss, then the class priors). With equal class sizes and
    priors the two rules nearly agree; otherwise ``predict`` also weighs the priors. Where
    that calibration classifies the leave-one-out scores worse than Harrison & Pasupa's (2010) rule does,
    the rule's boundary is kept (with a temperature fitted by log-loss).

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from gkfda import ParsimoniousKFDA
    >>> X, y = make_moons(n_samples=200, noise=0.2, random_state=0)
    >>> model = ParsimoniousKFDA(q=0.5, rho=1e-3, gamma=2.0).fit(X, y)
    >>> bool(len(model.support_) < 50), bool(model.score(X, y) > 0.9)
    (True, True)
    >>> bool(all(a >= b for a, b in zip(model.objective_, model.objective_[1:])))
    True
    """

    _parameter_constraints: dict = {
        "q": [_Number(Real, 0, 1, closed="right")],
        "rho": [_Number(Real, 0, np.inf, closed="left")],
        **KERNEL_CONSTRAINTS,
        "tol": [_Number(Real, 0, np.inf, closed="neither")],
        "max_iter": [_count()],
        "threshold": [_Number(Real, 0, 1, closed="left")],
        "init": [StrOptions({"ridge"}), "array-like"],
        "penalize_bias": ["boolean"],
        "priors": ["array-like", None],
        "n_jobs": [_Number(Integral, -_LARGEST_THREADS, -1, closed="both"), _count(1, _LARGEST_THREADS), None],
        "verbose": ["boolean"],
    }

    def __init__(
        self,
        q=1.0,
        rho=1e-3,
        kernel="rbf",
        gamma=None,
        degree=None,
        coef0=None,
        tol=1e-5,
        max_iter=1000,
        threshold=1e-6,
        init="ridge",
        penalize_bias=True,
        priors=None,
        n_jobs=None,
        verbose=False,
    ):
        self.q = q
        self.rho = rho
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.tol = tol
        self.max_iter = max_iter
        self.threshold = threshold
        self.init = init
        self.penalize_bias = penalize_bias
        self.priors = priors
        self.n_jobs = n_jobs
        self.verbose = verbose

    # What ``_set_public_attributes`` derives from the problems and the retained rows: left
    # out of pickles, so that each array is stored once, and derived again on loading.
    _DERIVED = ("support_", "support_vectors_", "dual_coef_", "n_iter_", "objective_", "intercept_", "theta_")

    def __getstate__(self):
        state = super().__getstate__()
        if "_problems" not in state:  # unfitted, or loaded from a lean file
            return state
        return {name: value for name, value in state.items() if name not in self._DERIVED}

    def __setstate__(self, state):
        super().__setstate__(state)
        if "_problems" in state:
            self._set_public_attributes()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.kernel == "precomputed"
        tags.input_tags.sparse = accepts_sparse(self.kernel)
        return tags

    # -- kernels ----------------------------------------------------------------------

    def _kernel_params(self):
        return kernel_parameters(self, self._gamma)

    def _training_kernel(self, X, threads, concurrent):
        self._check_memory(X.shape[0], concurrent)
        if self.kernel == "precomputed":
            return precomputed_training_kernel(X, np.float64, 0, 1)
        return kernel_between(X, None, self.kernel, self._kernel_params(), np.float64, threads)

    def _check_memory(self, m, concurrent):
        """Refuse, before allocating, a fit whose ``(N+1)×(N+1)`` matrices cannot fit: the
        kernel (unless precomputed: the caller's), ``K̃'K̃``, the ridge start's factor and
        the MM system of each of the ``concurrent`` problems solved at once."""
        square = (m + 1) * (m + 1) * 8
        kernel = 0 if self.kernel == "precomputed" else m * m * 8
        needed = kernel + (2 + concurrent) * square
        available = _validation.available_memory()
        if needed > available:
            held = f"the {m}×{m} kernel {kernel / 2**30:.2f} GiB, " if kernel else ""
            raise MemoryError(
                f"X: ParsimoniousKFDA's fit of {m} samples needs {needed / 2**30:.2f} GiB ({held}"
                f"{2 + concurrent} matrices of {m + 1}×{m + 1}, {square / 2**30:.2f} GiB each: K̃'K̃, the ridge "
                f"start's factor and the MM system of each of the {concurrent} problem(s) solved at once) but only "
                f"{available / 2**30:.2f} GiB is available; use fewer samples"
                + (" or a smaller n_jobs" if concurrent > 1 else "")
            )

    def _cross_kernel(self, X, threads):
        """``K(X, union of the retained samples)``."""
        if self.kernel == "precomputed":
            return precomputed_columns(X, self._union, self.n_features_in_)
        return kernel_between(X, self._union_points, self.kernel, self._kernel_params(), np.float64, threads)

    # -- fit --------------------------------------------------------------------------

    def _checked_init(self, m):
        if isinstance(self.init, str):
            return None
        try:
            init = np.asarray(self.init, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"init: must be 'ridge' or an array of numbers, got {self.init!r}") from None
        if init.shape != (m + 1,):
            raise ValueError(
                f"init: must have n_samples + 1 = {m + 1} values (the bias, then one per sample), "
                f"got shape {init.shape}"
            )
        if not np.all(np.isfinite(init)):
            raise ValueError("init: every value must be finite")
        if np.any(init == 0.0):
            raise ValueError(
                f"init: every value must be nonzero (a zero coefficient never moves); "
                f"{int(np.sum(init == 0.0))} are zero"
            )
        return init

    @fits_atomically
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the sparse discriminant(s) by majorize–minimize.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_samples)
            Training data, or the training kernel when ``kernel="precomputed"``.
        y : array-like of shape (n_samples,)
            Class labels; more than two classes are fitted one-vs-rest.

        Returns
        -------
        self : ParsimoniousKFDA
        """
        threads = thread_count(self.n_jobs)
        X, y = validate_input(self, X, reset=True, y=y)
        X = _convert(X, np.float64, "X")  # a sparse X stays CSR
        self.classes_, y_index = encoded_classes(y)
        n_classes = len(self.classes_)
        self.priors_ = checked_priors(self.priors, y_index, n_classes)
        m = X.shape[0]
        init = self._checked_init(m)
        check_kernel_arguments(self)
        self._gamma = resolve_gamma(self.gamma, self.kernel, X, np.float64)
        positives = [y_index == 1] if n_classes == 2 else [y_index == c for c in range(n_classes)]
        concurrent = min(threads, len(positives))
        K = self._training_kernel(X, threads, concurrent)
        binary = len(positives) == 1
        from tqdm import tqdm  # on first use, as the package's imports are

        bar = tqdm(
            total=int(self.max_iter) if binary else len(positives), desc=type(self).__name__,
            unit="MM step" if binary else "problem", file=sys.stderr, disable=not self.verbose, leave=False,
        )
        # BLAS on one thread: OpenBLAS's products and Cholesky factors change in their last
        # bits with its thread count, and the model must not depend on n_jobs. The threads
        # go to the kernel and to the one-vs-rest problems instead (docs/PERFORMANCE.md).
        with bar, one_blas_thread():
            gram_start = _GramStart(K, shared=not binary and init is None)
            if binary:
                problems = [self._fit_problem(K, gram_start, positives[0], init, bar.update if self.verbose else None)]
            else:
                def solved(positive):
                    problem = self._fit_problem(K, gram_start, positive, init)
                    bar.update()
                    return problem

                with ThreadPoolExecutor(concurrent) as pool:
                    problems = list(pool.map(solved, positives))
        self._warn_unconverged(problems)
        self._problems = problems
        self._union = np.unique(np.concatenate([p["support"] for p in problems])).astype(np.int64)
        self._union_points = None if self.kernel == "precomputed" else dense_rows(X, self._union)
        weights = np.zeros((len(self._union), len(problems)))
        for c, problem in enumerate(problems):
            weights[np.searchsorted(self._union, problem["support"]), c] = problem["dual_coef"]
        self._weights = weights
        self._bias = np.array([p["intercept"] for p in problems])
        self._slope = np.array([p["slope"] for p in problems])
        self._offset = np.array([p["offset"] + self._log_prior_odds(c) for c, p in enumerate(problems)])
        self._set_public_attributes()
        return self

    def _warn_unconverged(self, problems):
        if float(self.rho) == 0.0:
            return
        stopped = [c for c, p in enumerate(problems) if p["n_iter"] == int(self.max_iter)
                   and not converged(p["objective"], float(self.tol))]
        if stopped:
            which = "" if len(problems) == 1 else f" of class(es) {', '.join(str(self.classes_[c]) for c in stopped)}"
            warnings.warn(
                f"ParsimoniousKFDA: the MM iteration{which} stopped at max_iter={int(self.max_iter)} before its "
                f"objective's relative decrease fell to tol={float(self.tol):g}; increase max_iter or tol",
                ConvergenceWarning,
            )

    def _fit_problem(self, K, gram_start, positive, init, progress=None):
        """One binary problem, ``positive`` against the rest."""
        m = K.shape[0]
        y_hat = targets(positive)
        gram, products = gram_start.gram, gram_start.products(y_hat)
        start = ridge_start(gram, products, gram_start.factor) if init is None else init
        # ρ = 0: the first step from a start without zeros solves the least squares; later
        # steps would only move among its minimisers, the objective at rounding level.
        max_iter = 1 if float(self.rho) == 0.0 else int(self.max_iter)
        omega, history, iterations = solve_mm(
            K, gram, products, y_hat, start, float(self.q), float(self.rho), float(self.tol), max_iter,
            bool(self.penalize_bias), progress,
        )
        alpha = np.abs(omega[1:])
        largest = alpha.max()
        support = np.flatnonzero(alpha > float(self.threshold) * largest) if largest > 0 else np.zeros(0, np.int64)
        thresholded = np.zeros_like(omega)
        thresholded[0] = omega[0]
        thresholded[support + 1] = omega[support + 1]
        fitted, left_out = leave_one_out(
            K, y_hat, thresholded, support, float(self.q), float(self.rho), bool(self.penalize_bias))
        n_pos = int(positive.sum())
        theta = 0.5 * m * (1.0 / n_pos - 1.0 / (m - n_pos))
        if np.abs(omega).max() <= PRUNE * np.abs(start).max():
            # Every coefficient shrank by PRUNE or more: the iteration is on its way to ω = 0
            # (the minimiser for a ρ this large), and the scores' shape is its artefact.
            slope, offset = 0.0, 0.0
        else:
            slope, offset = _calibration(fitted, left_out, positive, theta)
        return {
            "support": support.astype(np.int64),
            "dual_coef": omega[support + 1],
            "intercept": float(omega[0]),
            "theta": theta,
            "n_iter": iterations,
            "objective": history,
            "slope": slope,
            "offset": offset,
        }

    def _set_public_attributes(self):
        """The public attributes, from the problems and the retained training rows (kept once,
        as ``_union_points``, for the union of the problems' supports)."""
        problems = self._problems
        if self.kernel == "precomputed":
            def points(support):
                return np.empty((len(support), 0))
        else:
            def points(support):
                return self._union_points[np.searchsorted(self._union, support)]
        supports = [p["support"] for p in problems]
        if len(problems) == 1:
            (problem,) = problems
            self.support_ = supports[0]
            self.support_vectors_ = points(supports[0])
            self.dual_coef_ = problem["dual_coef"]
            self.n_iter_ = problem["n_iter"]
            self.objective_ = problem["objective"]
        else:
            self.support_ = supports
            self.support_vectors_ = [points(s) for s in supports]
            self.dual_coef_ = [p["dual_coef"] for p in problems]
            self.n_iter_ = np.array([p["n_iter"] for p in problems])
            self.objective_ = [p["objective"] for p in problems]
        self.intercept_ = self._bias.copy()
        self.theta_ = np.array([p["theta"] for p in problems])

    def _kernel_name(self):
        return "callable" if callable(self.kernel) else self.kernel

    # -- prediction -------------------------------------------------------------------

    def discriminant(self, X):
        """The discriminants ``f(x) = b + Σᵢ αᵢ k(xᵢ, x)`` over the retained samples: shape
        ``(n_samples,)`` for two classes (Harrison & Pasupa's (2010) rule: ``classes_[1]`` where it
        exceeds ``theta_``), ``(n_samples, n_classes)`` one-vs-rest."""
        check_is_fitted(self)
        X = _convert(validate_input(self, X, reset=False), np.float64, "X")
        threads = thread_count(self.n_jobs)
        if not len(self._union):
            values = np.broadcast_to(self._bias, (X.shape[0], len(self._bias))).copy()
        elif core_kernel(self.kernel, self.degree) is not None:
            values = kernel_expansion(
                X, self._union_points, self._weights, self._bias,
                kernel=core_kernel(self.kernel, self.degree), **self._kernel_params(), n_threads=threads,
            )
        else:
            with np.errstate(over="ignore", invalid="ignore"):
                values = finite_outputs(self._cross_kernel(X, threads) @ self._weights + self._bias)
        return values[:, 0] if len(self.classes_) == 2 else values

    def decision_function(self, X):
        """Calibrated log-odds: of ``classes_[1]`` for two classes, shape ``(n_samples,)``;
        of each class against the rest, shape ``(n_samples, n_classes)``. Its sign (two
        classes) or argmax gives ``predict``."""
        values = self.discriminant(X)
        with np.errstate(over="ignore", invalid="ignore"):
            return finite_outputs(
                self._slope * values + self._offset if values.ndim == 2 else self._slope[0] * values + self._offset[0]
            )

    def predict(self, X):
        """Class labels: the argmax of :meth:`predict_proba` (see the class's Notes)."""
        probabilities = self.predict_proba(X)  # raises NotFittedError first
        return self.classes_[np.argmax(probabilities, axis=1)]

    def score(self, X, y, sample_weight=None):
        """Mean accuracy of ``predict(X)`` against ``y`` (scikit-learn's ``score``)."""
        check_scored_samples(X, y, sample_weight)
        return super().score(X, y, sample_weight)

    def predict_proba(self, X):
        """Calibrated class probabilities, shape ``(n_samples, n_classes)``; one-vs-rest
        probabilities are normalised to sum to 1."""
        return self._probabilities(self.decision_function(X))

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`, computed without rounding to ``-inf``."""
        return self._probabilities(self.decision_function(X), log=True)

    def _probabilities(self, log_odds, log=False):
        if log_odds.ndim == 1:
            if log:
                return np.stack([log_expit(-log_odds), log_expit(log_odds)], axis=-1)
            positive = expit(log_odds)
            return np.stack([1.0 - positive, positive], axis=-1)
        return ovr_probabilities(log_odds, log)

    def _log_prior_odds(self, c):
        prior = self.priors_[1] if len(self.classes_) == 2 else self.priors_[c]
        return np.log(prior) - np.log1p(-prior)


class _GramStart:
    """``K̃'K̃`` of a kernel, shared by the one-vs-rest problems (only ``K̃'ŷ`` differs), and
    when ``shared`` the ridge start's factor too (one ``(N+1)³/3`` Cholesky, not one each)."""

    def __init__(self, K, shared=False):
        self.K = K
        self.gram, _ = augmented_gram(K, np.zeros(K.shape[0]))
        self.factor = ridge_factor(self.gram) if shared else None

    def products(self, y_hat):
        return np.concatenate([[y_hat.sum()], self.K @ y_hat])


def _calibration(fitted, left_out, positive, theta):
    """``(slope, offset)`` of the log-odds of the positive class given a score, from
    :class:`GreedyKFDA`'s calibration of the leave-one-out scores (the class frequencies
    as priors; the estimator's prior log-odds are added to the offset).

    Where that calibration classifies the leave-one-out scores worse than the
    discriminant's own rule ``score > theta`` does, the rule is kept instead, with the
    temperature of least log-loss: the calibration must not cost accuracy."""
    codes = positive.astype(np.int64)
    counts = np.bincount(codes, minlength=2)
    log_empirical = np.log(counts / len(codes))
    smoothed = _smoothed_targets(codes, counts)
    weights, bias = _core.calibrate(
        left_out[None, :, None], fitted[None, :, None], codes, smoothed, log_empirical, shrinkage=_SCORE_SHRINKAGE,
    )
    slope, offset = float(weights[0, 0, 1] - weights[0, 0, 0]), float(bias[0, 1] - bias[0, 0])
    prior = log_empirical[1] - log_empirical[0]
    calibrated = np.sum((slope * left_out + offset + prior > 0) == positive)
    if np.sum((left_out > theta) == positive) > calibrated:
        temperature = _rule_temperature(left_out - theta, prior, smoothed[:, 1])
        if temperature > 0.0:
            return temperature, -temperature * theta - prior
    return slope, offset


def _rule_temperature(margins, prior, wanted):
    """The ``T ≥ 0`` of least cross-entropy of ``σ(T·margin + prior)`` to the targets
    ``wanted``: Newton's method on a convex function of one variable, from the scale of
    the margins, each step kept within a factor 8 of the last."""
    spread = float(np.sqrt(np.mean(margins**2)))
    if not spread > 0.0:
        return 0.0
    t = 1.0 / spread
    for _ in range(100):
        p = expit(t * margins + prior)
        gradient = float(np.sum((p - wanted) * margins))
        curvature = float(np.sum(p * (1.0 - p) * margins**2))
        updated = t - gradient / curvature if curvature > 0.0 else t * 8.0 ** -np.sign(gradient)
        updated = min(max(updated, t / 8.0), t * 8.0) if np.isfinite(updated) else t
        if abs(updated - t) <= 1e-10 * t:
            return updated
        t = updated
    return t
