"""The scikit-learn estimator :class:`ParsimoniousKFDA` (kFDA_q, paper 003).

A binary kernel Fisher discriminant made sparse by an ℓ_q penalty (``0 < q ≤ 1``) on its
dual coefficients, minimised by majorize–minimize (``docs/architecture.md``, "Parsimonious
KFDA (kFDA_q)"). Every MM step is a weighted ridge regression on the coefficients still
active, solved in Rust (``_core.parsimonious_fit``: faer's Cholesky on one thread, measured
faster than OpenBLAS's; ``docs/PERFORMANCE.md``); :func:`mm_fit` is the same iteration
through SciPy, for ``ρ = 0`` and the rare step whose system rounding made indefinite.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from numbers import Integral, Real

import numpy as np
import scipy.linalg
from scipy.special import expit, log_expit
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from . import _core
from ._model import _SCORE_SHRINKAGE, _smoothed_targets, one_blas_thread
from ._validation import check_fit_fits, checked_priors, encoded_classes, thread_count
from ._kernels import (
    _LARGEST_THREADS, KERNEL_CONSTRAINTS, _count, _Number, check_kernel_arguments, core_kernel, kernel_between,
    kernel_parameters, precomputed_columns, precomputed_training_kernel, resolve_gamma, validate_input,
)
from .estimator import ovr_probabilities

#: A coefficient below this fraction of the largest is dropped from the MM solve for good.
#: Its ridge multiplier ``|ω|^{q-2}`` is then above ``10^{12(2-q)}`` times the largest one's,
#: so each step shrinks it by that much again: at double precision it can never return.
PRUNE = 1e-12

#: The ridge start's ``λ₀``, relative to the mean diagonal of ``K̃'K̃``.
RIDGE_START = 1e-3


def targets(positive):
    """``ŷ``: ``N/N₁`` on the positive class, ``−N/N₂`` on the other (paper 003's LS-FDA
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
    gram[1:, 1:] = K @ K  # K'K = K², one GEMM
    products = np.concatenate([[y_hat.sum()], K @ y_hat])
    return gram, products


def ridge_start(gram, products):
    """``(K̃'K̃ + λ₀I)⁻¹K̃'ŷ`` with ``λ₀ = 10⁻³ tr(K̃'K̃)/(N+1)``, exact zeros made tiny (an
    exact zero is absorbing: the MM step never moves it)."""
    size = gram.shape[0]
    system = gram.copy()
    system[np.diag_indices(size)] += RIDGE_START * np.trace(gram) / size
    omega = scipy.linalg.solve(system, products, assume_a="pos", check_finite=False)
    omega[omega == 0.0] = np.finfo(np.float64).tiny
    return omega


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


def solve_mm(K, gram, products, y_hat, omega, q, rho, tol, max_iter, penalize_bias):
    """:func:`mm_fit`, in Rust (faer's Cholesky, the GIL released) when ``ρ > 0``; in
    NumPy for ``ρ = 0`` (least squares) or when rounding made a step's system indefinite."""
    if rho > 0.0:
        try:
            return _core.parsimonious_fit(
                K, gram, products, y_hat, np.ascontiguousarray(omega, dtype=np.float64), q=q, rho=rho, tol=tol,
                max_iter=max_iter, penalize_bias=penalize_bias, prune=PRUNE,
            )
        except ValueError as error:
            if not str(error).startswith("gram:"):
                raise
    return mm_fit(K, gram, products, y_hat, omega, q, rho, tol, max_iter, penalize_bias)


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
    leave-one-out score is ``ŷᵢ − (ŷᵢ − f̂ᵢ)/(1 − Hᵢᵢ)``.
    """
    n = K.shape[0]
    with_bias = omega[0] != 0.0 or not penalize_bias
    columns = np.concatenate([[0], support + 1]) if with_bias else support + 1
    design = np.hstack([np.ones((n, 1)), K[:, support]]) if with_bias else K[:, support]
    fitted = design @ omega[columns]
    if not len(columns):
        return fitted, fitted.copy()
    psi = np.abs(omega[columns]) ** ((2.0 - q) / 2.0)
    penalty = np.full(len(columns), rho * n * q)
    if not penalize_bias:
        psi[0], penalty[0] = 1.0, 0.0
    scaled = design * psi
    system = scaled.T @ scaled
    system[np.diag_indices(len(columns))] += penalty
    # A pseudo-inverse through the eigenvalues: the system is only semi-definite for ρ = 0,
    # and with the wide weights Ψ of a kernel of large values rounding can take a small
    # eigenvalue below zero. Once per fit, on the retained samples only.
    values, vectors = _symmetric_eigen(system)
    kept = values > len(values) * np.finfo(np.float64).eps * max(values.max(), 0.0)
    leverage = np.sum((scaled @ vectors[:, kept]) ** 2 / values[kept], axis=1)
    remaining = np.maximum(1.0 - leverage, 1e-12)
    return fitted, y_hat - (y_hat - fitted) / remaining


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
    ℓ_q penalty that drives most ``αᵢ`` to zero: it minimises

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
        squares (no sparsity).
    kernel : str or callable, default="rbf"
        As :class:`GreedyKFDA`'s: ``rbf`` is ``exp(-gamma ||x - z||²)`` (paper 003's
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
    threshold : float in [0, 1), default=1e-6
        A sample is retained when ``|αᵢ| > threshold · max|α|``; the others are set to
        zero for prediction (no refit).
    init : "ridge" or array-like of shape (n_samples + 1,), default="ridge"
        The starting ``ω = [b; α]``. ``"ridge"`` is ``(K̃'K̃ + λ₀I)⁻¹K̃'ŷ`` with
        ``λ₀ = 10⁻³ tr(K̃'K̃)/(N+1)``. An array must be finite and nonzero everywhere (a
        zero stays zero); it is the start of every one-vs-rest problem, in the order of
        the training samples.
    penalize_bias : bool, default=True
        Whether the bias ``b`` is in the penalty (paper 003 penalises it).
    priors : array-like of shape (n_classes,) or None, default=None
        Class priors, as :class:`GreedyKFDA`'s; they enter the probabilities.
    n_jobs : int or None, default=None
        Threads of the kernel, of the linear algebra (BLAS) and of the one-vs-rest
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
        Paper 003's threshold ``½N(1/N₁ − 1/N₂)``, the midpoint of the targets: its rule
        is ``classes_[1]`` where ``discriminant(X) > theta_``.
    n_iter_ : int, or ndarray of shape (n_classes,)
        MM iterations run.
    objective_ : ndarray of shape (n_iter_ + 1,), or a list of them
        The objective at the start and after each iteration; it never increases.
    n_features_in_ : int

    Notes
    -----
    ``predict`` is the argmax of ``predict_proba``, as for every scikit-learn classifier;
    it is not paper 003's rule, which is ``discriminant(X) > theta_``. The
    probabilities come from the discriminant's leave-one-out scores on the training set
    (in closed form: at the MM fixed point the fit is a weighted ridge regression, a
    linear smoother), through :class:`GreedyKFDA`'s calibration (an LDA on the scores,
    a temperature fitted by log-loss, then the class priors). With equal class sizes and
    priors the two rules nearly agree; otherwise ``predict`` also weighs the priors.

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

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags

    # -- kernels ----------------------------------------------------------------------

    def _kernel_params(self):
        return kernel_parameters(self, self._gamma)

    def _training_kernel(self, X, threads):
        m = X.shape[0]
        # The kernel, K̃'K̃ beside it and one active system of the same size.
        check_fit_fits(m, 0, 1, np.float64, 3 * (m + 1) * (m + 1) * 8)
        if self.kernel == "precomputed":
            return precomputed_training_kernel(X, np.float64, 0, 1)
        return kernel_between(X, None, self.kernel, self._kernel_params(), np.float64, threads)

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
        X = np.asarray(X, dtype=np.float64)
        self.classes_, y_index = encoded_classes(y)
        n_classes = len(self.classes_)
        self.priors_ = checked_priors(self.priors, y_index, n_classes)
        m = X.shape[0]
        init = self._checked_init(m)
        check_kernel_arguments(self)
        self._gamma = resolve_gamma(self.gamma, self.kernel, X, np.float64)
        K = self._training_kernel(X, threads)
        positives = [y_index == 1] if n_classes == 2 else [y_index == c for c in range(n_classes)]
        # BLAS on one thread: OpenBLAS's products and Cholesky factors change in their last
        # bits with its thread count, and the model must not depend on n_jobs. The threads
        # go to the kernel and to the one-vs-rest problems instead (docs/PERFORMANCE.md).
        with one_blas_thread():
            gram_start = _GramStart(K)
            if len(positives) == 1:
                problems = [self._fit_problem(K, gram_start, positives[0], init)]
            else:
                with ThreadPoolExecutor(min(threads, len(positives))) as pool:
                    problems = list(pool.map(lambda p: self._fit_problem(K, gram_start, p, init), positives))
        self._problems = problems
        self._union = np.unique(np.concatenate([p["support"] for p in problems])).astype(np.int64)
        self._union_points = None if self.kernel == "precomputed" else np.ascontiguousarray(X[self._union])
        weights = np.zeros((len(self._union), len(problems)))
        for c, problem in enumerate(problems):
            weights[np.searchsorted(self._union, problem["support"]), c] = problem["dual_coef"]
        self._weights = weights
        self._bias = np.array([p["intercept"] for p in problems])
        self._slope = np.array([p["slope"] for p in problems])
        self._offset = np.array([p["offset"] + self._log_prior_odds(c) for c, p in enumerate(problems)])
        self._set_public_attributes(X)
        return self

    def _fit_problem(self, K, gram_start, positive, init):
        """One binary problem, ``positive`` against the rest."""
        m = K.shape[0]
        y_hat = targets(positive)
        gram, products = gram_start.gram, gram_start.products(y_hat)
        omega = ridge_start(gram, products) if init is None else init
        omega, history, iterations = solve_mm(
            K, gram, products, y_hat, omega, float(self.q), float(self.rho), float(self.tol), int(self.max_iter),
            bool(self.penalize_bias),
        )
        alpha = np.abs(omega[1:])
        largest = alpha.max()
        support = np.flatnonzero(alpha > float(self.threshold) * largest) if largest > 0 else np.zeros(0, np.int64)
        thresholded = np.zeros_like(omega)
        thresholded[0] = omega[0]
        thresholded[support + 1] = omega[support + 1]
        fitted, left_out = leave_one_out(
            K, y_hat, thresholded, support, float(self.q), float(self.rho), bool(self.penalize_bias))
        slope, offset = _calibration(fitted, left_out, positive)
        n_pos = int(positive.sum())
        return {
            "support": support.astype(np.int64),
            "dual_coef": omega[support + 1],
            "intercept": float(omega[0]),
            "theta": 0.5 * m * (1.0 / n_pos - 1.0 / (m - n_pos)),
            "n_iter": iterations,
            "objective": history,
            "slope": slope,
            "offset": offset,
        }

    def _set_public_attributes(self, X):
        problems = self._problems
        points = (lambda s: np.empty((len(s), 0))) if self.kernel == "precomputed" else (lambda s: X[s])
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
        ``(n_samples,)`` for two classes (paper 003's rule: ``classes_[1]`` where it
        exceeds ``theta_``), ``(n_samples, n_classes)`` one-vs-rest."""
        check_is_fitted(self)
        X = np.asarray(validate_input(self, X, reset=False), dtype=np.float64)
        threads = thread_count(self.n_jobs)
        if not len(self._union):
            values = np.broadcast_to(self._bias, (len(X), len(self._bias))).copy()
        elif core_kernel(self.kernel, self.degree) is not None:
            values = _core.kernel_expansion(
                np.ascontiguousarray(X), self._union_points, self._weights, self._bias,
                kernel=core_kernel(self.kernel, self.degree), **self._kernel_params(), n_threads=threads,
            )
        else:
            values = self._cross_kernel(X, threads) @ self._weights + self._bias
        return values[:, 0] if len(self.classes_) == 2 else values

    def decision_function(self, X):
        """Calibrated log-odds: of ``classes_[1]`` for two classes, shape ``(n_samples,)``;
        of each class against the rest, shape ``(n_samples, n_classes)``. Its sign (two
        classes) or argmax gives ``predict``."""
        values = self.discriminant(X)
        return self._slope * values + self._offset if values.ndim == 2 else self._slope[0] * values + self._offset[0]

    def predict(self, X):
        """Class labels: the argmax of :meth:`predict_proba` (see the class's Notes)."""
        probabilities = self.predict_proba(X)  # raises NotFittedError first
        return self.classes_[np.argmax(probabilities, axis=1)]

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
    """``K̃'K̃`` of a kernel, shared by the one-vs-rest problems (only ``K̃'ŷ`` differs)."""

    def __init__(self, K):
        self.K = K
        self.gram, _ = augmented_gram(K, np.zeros(K.shape[0]))

    def products(self, y_hat):
        return np.concatenate([[y_hat.sum()], self.K @ y_hat])


def _calibration(fitted, left_out, positive):
    """``(slope, offset)`` of the log-odds of the positive class given a score, from
    :class:`GreedyKFDA`'s calibration of the leave-one-out scores (the class frequencies
    as priors; the estimator's prior log-odds are added to the offset)."""
    codes = positive.astype(np.int64)
    counts = np.bincount(codes, minlength=2)
    log_empirical = np.log(counts / len(codes))
    weights, bias = _core.calibrate(
        left_out[None, :, None], fitted[None, :, None], codes, _smoothed_targets(codes, counts), log_empirical,
        shrinkage=_SCORE_SHRINKAGE,
    )
    return float(weights[0, 0, 1] - weights[0, 0, 0]), float(bias[0, 1] - bias[0, 0])
