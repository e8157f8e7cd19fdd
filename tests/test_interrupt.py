"""Long calls into the Rust core answer signals: Ctrl-C (or any handler that raises) stops
a kernel matrix, a cross kernel, a kernel expansion (batch decision values), a selection or
a whole fit before the next pass or block of rows, and raises the handler's exception from
the call.

Each test arms a one-shot timer signal (SIGALRM) whose handler raises ``Alarm``, then makes
a call that takes far longer than the timer uninterrupted (seconds against 0.125 s), so it
can only pass if the call itself gave up: a call that ran to the end would return, and the
alarm would be raised after the ``pytest.raises`` block, failing the test.
"""

from __future__ import annotations

import signal
import time

import numpy as np
import pytest

from gkfda import GreedyKFDA, _core

pytestmark = pytest.mark.skipif(
    not hasattr(signal, "setitimer"), reason="needs POSIX interval timers"
)

ALARM_AFTER = 0.125  # seconds, off the 50 ms grid of the binding's polls


class Alarm(Exception):
    """Raised by the test's signal handler."""


@pytest.fixture
def alarm():
    """`arm()` sets SIGALRM to raise `Alarm` ALARM_AFTER seconds later and returns the
    time it was armed; the previous handler comes back after the test."""

    def handler(signum, frame):
        raise Alarm

    def arm():
        signal.setitimer(signal.ITIMER_REAL, ALARM_AFTER)
        return time.perf_counter()

    previous = signal.signal(signal.SIGALRM, handler)
    try:
        yield arm
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def well_conditioned(m, d=30, seed=0):
    """Class-sorted points whose RBF kernel leaves no pick numerically explained."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(m, d))
    y = X[:, 0] + 0.5 * np.sin(3 * X[:, 1]) > 0
    order = np.argsort(~y, kind="stable")
    return X[order], y[order]


@pytest.mark.parametrize(
    ("deflation", "stages"), [("schur", 1), ("schur", 2000), ("hotelling", 10)]
)
def test_a_signal_stops_a_selection(alarm, deflation, stages):
    # Uninterrupted: 4,000 passes (schur) or 200 wide ones (hotelling) over a 2,000 × 2,000
    # kernel, with sweeps over up to 2,000 terms: several seconds. stages=2000 is one stage,
    # where only the check before each schur pick can stop it.
    X, y = well_conditioned(2000)
    K = _core.kernel_matrix(X, gamma=1.5)
    armed = alarm()
    with pytest.raises(Alarm):
        _core.greedy_select(K, y, 2000, deflation=deflation, stages=stages, n_threads=2)
    print(f"{deflation}, stages {stages}: stopped {1e3 * (time.perf_counter() - armed - ALARM_AFTER):.0f} ms after the signal")


def test_a_signal_stops_a_kernel_matrix(alarm):
    # 8,000 × 8,000 entries of 400 features: seconds uninterrupted.
    X = np.random.default_rng(1).standard_normal((8000, 400))
    armed = alarm()
    with pytest.raises(Alarm):
        _core.kernel_matrix(X, gamma=1e-3, n_threads=2)
    print(f"kernel: stopped {1e3 * (time.perf_counter() - armed - ALARM_AFTER):.0f} ms after the signal")


def test_a_signal_stops_a_cross_kernel_and_an_expansion(alarm):
    # Each 1.5-2.5 s uninterrupted: 8,000 × 8,000 cross entries of 400 features; 100,000
    # decision values of 4,000 bases of 100 features.
    rng = np.random.default_rng(5)
    X, Z = rng.standard_normal((8000, 400)), rng.standard_normal((8000, 400))
    armed = alarm()
    with pytest.raises(Alarm):
        _core.kernel_matrix(X, Z, gamma=1e-3, n_threads=2)
    print(f"cross kernel: stopped {1e3 * (time.perf_counter() - armed - ALARM_AFTER):.0f} ms after the signal")
    rows, basis = rng.standard_normal((100_000, 100)), rng.standard_normal((4000, 100))
    weights, bias = rng.standard_normal((4000, 1)), np.zeros(1)
    armed = alarm()
    with pytest.raises(Alarm):
        _core.kernel_expansion(rows, basis, weights, bias, gamma=1e-2, n_threads=2)
    print(f"expansion: stopped {1e3 * (time.perf_counter() - armed - ALARM_AFTER):.0f} ms after the signal")


def test_a_signal_stops_a_fit_and_the_estimator_fits_again(alarm):
    X, y = well_conditioned(2000, seed=2)
    model = GreedyKFDA(k=2000, deflation="schur", gamma=1.5, n_jobs=2)
    alarm()
    with pytest.raises(Alarm):
        model.fit(X, y)
    assert not hasattr(model, "support_")
    small = np.random.default_rng(4).choice(len(y), size=300, replace=False)
    model.set_params(k=20).fit(X[small], y[small])
    assert model.k_ == 20
    assert model.score(X[small], y[small]) > 0.5


def test_keyboard_interrupt_reaches_the_caller():
    # The default SIGINT handler raises KeyboardInterrupt, as Ctrl-C does in a terminal.
    X, y = well_conditioned(2000, seed=3)
    K = _core.kernel_matrix(X, gamma=1.5)
    previous = signal.signal(signal.SIGALRM, signal.default_int_handler)
    signal.setitimer(signal.ITIMER_REAL, ALARM_AFTER)
    try:
        with pytest.raises(KeyboardInterrupt):
            _core.greedy_select(K, y, 2000, deflation="schur", n_threads=2)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
