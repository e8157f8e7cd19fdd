"""Long calls into the Rust core answer signals: Ctrl-C (or any handler that raises) stops
a kernel matrix, a cross kernel, a kernel expansion (batch decision values), a selection, a
factor or a whole fit (dense or factored) before the next pass, pick or block of rows, and
raises the handler's exception from the call.

Each test names the core function its call spends its time in, sends SIGALRM once that
function has been running a moment, and checks that the handler ran while the function was
still in progress (from the binding's poll) and that the function ended by raising. A call
that did not look for signals would also end in the handler's exception, but only from
Python's next step after it returned: the handler would run outside it, at its
``c_return``. The checks read the order of events, not the clock, so a loaded machine
cannot fail them; how long the call ran on after the signal is printed (``-s``).
"""

from __future__ import annotations

import signal
import sys
import threading
import time
import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from gkfda import GreedyKFDA, _core

pytestmark = pytest.mark.skipif(
    not hasattr(signal, "pthread_kill"), reason="needs POSIX signals sent to a thread"
)

PAUSE = 0.125  # seconds into the target before the signal, off the 50 ms grid of the polls


class Alarm(Exception):
    """Raised by the test's signal handler."""


def raise_alarm(signum, frame):
    raise Alarm


def stops_inside(call, *args, target=None, handler=raise_alarm, raises=Alarm, pause=PAUSE, **kwargs):
    """Make ``call(*args, **kwargs)`` with SIGALRM sent ``pause`` seconds after it enters the
    core function ``target`` (``call`` itself by default), and check that ``handler`` (which
    raises ``raises``) ran while ``target`` was in progress and that ``target`` ended by
    raising.

    A profile hook on this thread follows the calls of ``target`` and of the core's
    functions; a helper thread sends the signal. The previous handler comes back after."""
    target = call if target is None else target
    name = target.__name__
    in_progress, ended, ran = [], [], []  # core calls running; how target ended; handler runs
    entered, finished = threading.Event(), threading.Event()
    sent = []
    main = threading.main_thread().ident

    def followed(function):
        return function is target or getattr(function, "__module__", None) == "gkfda._core"

    def hook(frame, event, arg):
        if event == "c_call" and followed(arg):
            in_progress.append(arg.__name__)
            if arg is target:
                entered.set()
        elif event in ("c_return", "c_exception") and followed(arg):
            in_progress.pop()
            if arg is target:
                ended.append(event)

    def on_signal(signum, frame):
        # A call that ignores signals lets the handler run only after it returned: from
        # the hook at its c_return (target still listed) or from the caller's next step.
        ran.append((tuple(in_progress), frame.f_code is hook.__code__))
        handler(signum, frame)

    def send():
        entered.wait()
        time.sleep(pause)  # a trigger point inside the target, not a bound on anything
        # Not while the main thread is still in the hook, on its way into the target.
        while sys._current_frames()[main].f_code is hook.__code__:
            time.sleep(0.01)
        if not finished.is_set():
            sent.append(time.perf_counter())
            signal.pthread_kill(main, signal.SIGALRM)

    previous = signal.signal(signal.SIGALRM, on_signal)
    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        with pytest.raises(raises):
            sys.setprofile(hook)
            try:
                call(*args, **kwargs)
            finally:
                sys.setprofile(None)
        stopped = time.perf_counter()
    finally:
        finished.set()
        entered.set()
        sender.join()
        signal.signal(signal.SIGALRM, previous)
    print(f"{name}: stopped {1e3 * (stopped - sent[0]):.0f} ms after the signal")
    assert len(ran) == 1, f"the handler ran {len(ran)} times"
    (running, in_hook), = ran
    assert name in running and not in_hook, f"the handler ran after {name} returned, not inside it"
    assert ended[:1] == ["c_exception"], f"{name} ended with {ended or 'the handler raising in the hook'}"


def well_conditioned(m, d=30, seed=0):
    """Class-sorted points whose RBF kernel leaves no pick numerically explained."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(m, d))
    y = X[:, 0] + 0.5 * np.sin(3 * X[:, 1]) > 0
    order = np.argsort(~y, kind="stable")
    return X[order], y[order]


@pytest.mark.parametrize(
    ("deflation", "stages", "m"), [("schur", 1, 2500), ("schur", 2500, 2500), ("hotelling", 10, 3000)]
)
def test_a_signal_stops_a_selection(deflation, stages, m):
    # Every point a basis, k = m: 10-18 s uninterrupted. stages = m is one stage, where only
    # the check before each schur pick can stop it.
    X, y = well_conditioned(m)
    K = _core.kernel_matrix(X, gamma=1.5)
    stops_inside(_core.greedy_select, K, y, m, deflation=deflation, stages=stages, n_threads=2)


def test_a_signal_stops_selections_that_share_their_passes():
    # Three one-vs-rest problems of the schur family side by side, 1,000 bases each: ~10 s
    # uninterrupted. Each selection looks at the flag before each pick.
    X, _ = well_conditioned(2500, seed=1)
    sector = np.floor((np.arctan2(X[:, 1], X[:, 0]) + np.pi) / (2 * np.pi / 3)).astype(int) % 3
    order = np.argsort(sector, kind="stable")
    K = _core.kernel_matrix(X[order], gamma=1.5)
    positives = np.stack([sector[order] == c for c in range(3)])
    stops_inside(_core.greedy_select_many, K, positives, 1000, deflation="schur", n_threads=2)


def test_a_signal_stops_kernel_matrices_and_expansions():
    # Each 5-9 s uninterrupted: a 12,000 × 12,000 Gram matrix and a cross kernel of 800
    # features (their pages are touched only as blocks are computed), and 100,000 decision
    # values of 8,000 bases of 200 features.
    rng = np.random.default_rng(5)
    X, Z = rng.standard_normal((12_000, 800)), rng.standard_normal((12_000, 800))
    stops_inside(_core.kernel_matrix, X, gamma=1e-3, n_threads=2)
    stops_inside(_core.kernel_matrix, X, Z, gamma=1e-3, n_threads=2)
    rows, basis = rng.standard_normal((100_000, 200)), rng.standard_normal((8000, 200))
    weights, bias = rng.standard_normal((8000, 1)), np.zeros(1)
    stops_inside(_core.kernel_expansion, rows, basis, weights, bias, gamma=1e-2, n_threads=2)


def test_a_signal_stops_a_fit_and_the_estimator_fits_again():
    # The fit spends its time in the selection (k = m = 2500: ~20 s uninterrupted).
    X, y = well_conditioned(2500, seed=2)
    model = GreedyKFDA(k=2500, deflation="schur", gamma=1.5, n_jobs=2)
    stops_inside(model.fit, X, y, target=_core.greedy_select)
    assert not hasattr(model, "support_")
    small = np.random.default_rng(4).choice(len(y), size=300, replace=False)
    model.set_params(k=20).fit(X[small], y[small])
    assert model.k_ == 20
    assert model.score(X[small], y[small]) > 0.5


def test_a_signal_stops_a_factored_fit_in_its_factor():
    # The Nyström factor of 150,000 points on a pool of 2,000: the pool's eigendecomposition
    # (~1 s), then ~10 s of blocks of rows, uninterrupted. The signal comes among the blocks,
    # 3 s into the factor.
    rng = np.random.default_rng(6)
    X = rng.uniform(-1, 1, size=(150_000, 20)).astype(np.float32)
    y = X[:, 0] > 0
    model = GreedyKFDA(k=10, gamma=0.5, dtype="float32", solver="factored", factor_rank=2000,
                       factor_pool="uniform", random_state=0, n_jobs=2)
    stops_inside(model.fit, X, y, target=_core.nystroem_factor, pause=3.0)
    assert not hasattr(model, "support_")


@pytest.mark.parametrize("pause", [PAUSE, 1.0], ids=["set-up", "picks"])
def test_keyboard_interrupt_stops_a_factored_fit_in_its_selection(pause):
    # A linear kernel's factor is X itself (100,000 × 400): the fit is the selection from
    # about 0.3 s on, its set-up (the factor's p×p moments, ~1 s) then ~35 ms a pick, 390
    # picks (~14 s) uninterrupted. The signal comes in the set-up, or among the picks 1 s
    # into the selection. Ctrl-C's KeyboardInterrupt comes out of fit.
    rng = np.random.default_rng(7)
    X = rng.standard_normal((100_000, 400)).astype(np.float32)
    y = X[:, 0] + 0.3 * rng.standard_normal(100_000) > 0
    model = GreedyKFDA(k=390, kernel="linear", dtype="float32", solver="factored", n_jobs=2)
    stops_inside(model.fit, X, y, target=_core.greedy_select, pause=pause, handler=signal.default_int_handler,
                 raises=KeyboardInterrupt)
    assert not hasattr(model, "support_")


def test_a_signal_stops_a_wide_factored_fit_in_its_set_up():
    # 4,000 features: the selection keeps the factor as terms (its p×p state would outgrow
    # them), and its set-up is the columns' quadratic forms, O(m·p²): ~6 s uninterrupted at
    # 10,000 rows. The signal comes in them.
    rng = np.random.default_rng(8)
    X = rng.standard_normal((10_000, 4_000), dtype=np.float32)
    y = X[:, 0] > 0
    model = GreedyKFDA(k=5, kernel="linear", dtype="float32", solver="factored", n_jobs=2)
    stops_inside(model.fit, X, y, target=_core.greedy_select)
    assert not hasattr(model, "support_")


def test_keyboard_interrupt_reaches_the_caller():
    # The default SIGINT handler raises KeyboardInterrupt, as Ctrl-C does in a terminal.
    X, y = well_conditioned(2500, seed=3)
    K = _core.kernel_matrix(X, gamma=1.5)
    stops_inside(_core.greedy_select, K, y, 2500, deflation="schur", n_threads=2,
                 handler=signal.default_int_handler, raises=KeyboardInterrupt)


def test_parsimonious_fit_stops():
    # kFDA_q's MM iteration looks at the stop flag every step; with a tolerance nothing
    # meets it runs all of max_iter steps (minutes) otherwise.
    from gkfda.parsimonious import augmented_gram, ridge_start, targets

    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 5))
    K = _core.kernel_matrix(X, gamma=0.2)
    y_hat = targets(X[:, 0] > 0)
    gram, products = augmented_gram(K, y_hat)
    start = ridge_start(gram, products)
    stops_inside(_core.parsimonious_fit, K, gram, products, y_hat, start, q=1.0, rho=1e-6, tol=1e-300,
                 max_iter=100000, penalize_bias=True, prune=0.0)


# -- an interrupted fit leaves the estimator as it was ------------------------------------

def _two_classes(seed=0, m=120, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    return X, (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)


def _three_string_classes(seed=1, m=150, d=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    sector = np.floor((np.arctan2(X[:, 1], X[:, 0]) + np.pi) / (2 * np.pi / 3)).astype(int) % 3
    return X, np.array(["north", "south", "west"])[sector]


def _estimators():
    """``(name, estimator, first fit's data, refit's data, its outputs, where to interrupt
    it early and late)``: each a place ``(module or class, attribute)`` whose call runs and
    then raises KeyboardInterrupt, so that the work before it has changed the fit's state."""
    from gkfda import (GreedyKFDACV, GreedyNystroem, KernelMatchingPursuit, ParsimoniousKFDA, SparseKernelCCA,
                       SparseKernelPCA)
    from gkfda import estimator, model_selection, parsimonious
    from gkfda.pursuit import cca, matching, nystroem, pca

    X2, y2 = _two_classes()
    X3, y3 = _three_string_classes()
    target = np.sin(X3[:, 0]) + X3[:, 1]

    def columns(model, X):  # the test rows cut to the fitted model's features
        return X[:, :getattr(model, "n_features_in_", X.shape[1])]

    def classifier(model, X):
        return model.predict(columns(model, X)), model.predict_proba(columns(model, X))

    def regressor(model, X):
        return (model.predict(columns(model, X)),)

    def transformer(model, X):
        return (model.transform(columns(model, X)),)
    return [
        ("GreedyKFDA", GreedyKFDA(k=10, gamma=0.5), (X2, y2), (X3, y3), classifier,
         (estimator, "validate_input"), (GreedyKFDA, "_set_public_attributes")),
        ("GreedyKFDA-calibration", GreedyKFDA(k=10, gamma=0.5, multiclass="ovr"), (X2, y2), (X3, y3), classifier,
         (estimator, "prepare_training"), (estimator, "fit_discriminant")),
        ("GreedyKFDACV", GreedyKFDACV(gammas=[0.5], max_k=4, regs=[1e-3], cv=2), (X2, y2), (X3, y3), classifier,
         (model_selection, "validate_input"), (GreedyKFDACV, "_store_results")),
        ("ParsimoniousKFDA", ParsimoniousKFDA(gamma=0.5, max_iter=30), (X2, y2), (X3, y3), classifier,
         (parsimonious, "validate_input"), (ParsimoniousKFDA, "_set_public_attributes")),
        ("KernelMatchingPursuit", KernelMatchingPursuit(k=8, gamma=0.5), (X2, X2[:, 0] - X2[:, 1]),
         (X3, target), regressor,
         (matching, "validate_input"), (KernelMatchingPursuit, "_points")),
        ("SparseKernelPCA", SparseKernelPCA(n_components=5, gamma=0.5), (X2,), (X3,),
         transformer,
         (pca, "validate_input"), (SparseKernelPCA, "_points")),
        ("SparseKernelCCA", SparseKernelCCA(k=6, n_components=2, gamma=0.5), (X2, X2[:, ::-1] ** 2),
         (X3, X3[:, :2] ** 2), transformer,
         (cca, "validate_input"), (SparseKernelCCA, "_points")),
        ("GreedyNystroem", GreedyNystroem(n_components=6, gamma=0.5), (X2, y2), (X3, y3),
         transformer,
         (nystroem, "validate_input"), (nystroem, "svd")),
    ]


_ESTIMATOR_NAMES = [entry[0] for entry in _estimators()]


def _interrupt_after(monkeypatch, owner, name, calls=1):
    """Make ``owner.name`` run as before, then raise KeyboardInterrupt on its ``calls``-th call."""
    original = getattr(owner, name)
    count = [0]

    def interrupted(*args, **kwargs):
        result = original(*args, **kwargs)
        count[0] += 1
        if count[0] >= calls:
            raise KeyboardInterrupt
        return result

    monkeypatch.setattr(owner, name, interrupted)


def _same_state(model, before):
    after = vars(model)
    assert after.keys() == before.keys()
    for name, value in before.items():
        assert after[name] is value, name


@pytest.mark.parametrize("name", _ESTIMATOR_NAMES)
@pytest.mark.parametrize("when", ["early", "late"])
def test_an_interrupted_refit_leaves_the_fitted_model_as_it_was(monkeypatch, name, when):
    _, model, first, second, outputs, early, late = dict((e[0], e) for e in _estimators())[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unconverged or short selections of the small data
        model.fit(*first)
    X_test = _three_string_classes(seed=9, m=20)[0]
    expected = outputs(model, X_test)
    before = dict(vars(model))
    owner, attribute = early if when == "early" else late
    _interrupt_after(monkeypatch, owner, attribute)
    with warnings.catch_warnings(), pytest.raises(KeyboardInterrupt):
        warnings.simplefilter("ignore")
        model.fit(*second)
    _same_state(model, before)
    monkeypatch.undo()
    for value, same in zip(expected, outputs(model, X_test)):
        np.testing.assert_array_equal(value, same)
    # And it fits again, to the new data.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(*second)
    assert model.n_features_in_ == second[0].shape[1]


@pytest.mark.parametrize("name", _ESTIMATOR_NAMES)
def test_an_interrupted_first_fit_leaves_the_estimator_unfitted(monkeypatch, name):
    _, model, first, _, outputs, _, late = dict((e[0], e) for e in _estimators())[name]
    params = dict(vars(model))
    _interrupt_after(monkeypatch, *late)
    with warnings.catch_warnings(), pytest.raises(KeyboardInterrupt):
        warnings.simplefilter("ignore")
        model.fit(*first)
    _same_state(model, params)
    with pytest.raises(NotFittedError):
        outputs(model, first[0])


def test_ctrl_c_during_a_refit_leaves_the_fitted_model():
    # Ctrl-C's path: the default SIGINT handler raises KeyboardInterrupt in the middle of the
    # refit, in its selection (the refit takes 20 s or more uninterrupted).
    X3, y3 = _three_string_classes(m=300)
    model = GreedyKFDA(k=10, gamma=0.5, n_jobs=2).fit(X3, y3)
    expected = model.predict_proba(X3)
    X, y = well_conditioned(2500, seed=5)
    model.set_params(k=2500, deflation="schur", gamma=1.5)
    before = dict(vars(model))
    stops_inside(model.fit, X, y, target=_core.greedy_select, handler=signal.default_int_handler,
                 raises=KeyboardInterrupt)
    _same_state(model, before)
    np.testing.assert_array_equal(model.predict_proba(X3), expected)
    assert list(model.classes_) == ["north", "south", "west"]
