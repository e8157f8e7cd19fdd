"""How soon a long call into the core stops after a signal (docs/PERFORMANCE.md, "Interrupts").

    python benches/bench_interrupt.py
    python benches/bench_interrupt.py --calls selection sparse --points 0.1 0.5

For each call: its time uninterrupted (the shorter of two runs), then one run for each of
``--points`` (fractions of that time) with SIGALRM sent that far into it, whose handler
raises; the time from the signal to the call's exception, in ms, and the longest of them
against the uninterrupted time. The calls are those of tests/test_interrupt.py (the wide
linear fit with three times its rows), which checks that each answers signals at all (the
handler runs inside it, and it ends by raising); here is how soon.
"""

from __future__ import annotations

import argparse
import signal
import statistics
import time

import numpy as np


class Alarm(Exception):
    """Raised by the benchmark's signal handler."""


def _raise(signum, frame):
    raise Alarm


def well_conditioned(m, d=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(m, d))
    return X, X[:, 0] + 0.5 * np.sin(3 * X[:, 1]) > 0


def calls():
    """``name: (what, make)``: ``make()`` gives the call, its inputs made outside its time."""
    from gkfda import GreedyKFDA, _core

    def kernel():
        X = np.random.default_rng(5).standard_normal((12_000, 800))
        return lambda: _core.kernel_matrix(X, gamma=1e-3, n_threads=2)

    def selection():
        X, y = well_conditioned(2500)
        K = _core.kernel_matrix(X, gamma=1.5)
        return lambda: _core.greedy_select(K, y, 2500, deflation="schur", stages=1, n_threads=2)

    def factor():
        X = np.random.default_rng(6).uniform(-1, 1, size=(150_000, 20)).astype(np.float32)
        model = GreedyKFDA(k=10, gamma=0.5, dtype="float32", solver="factored", factor_rank=2000,
                           factor_pool="uniform", random_state=0, n_jobs=2)
        return lambda: model.fit(X, X[:, 0] > 0)

    def linear_fit(m, d, k, seed):
        rng = np.random.default_rng(seed)
        X = rng.standard_normal((m, d)).astype(np.float32)
        y = X[:, 0] + 0.3 * rng.standard_normal(m) > 0
        model = GreedyKFDA(k=k, kernel="linear", dtype="float32", solver="factored", n_jobs=2)
        return lambda: model.fit(X, y)

    def linear():
        return linear_fit(100_000, 400, 390, seed=7)

    def wide():
        # 4,000 features: the factor's p×p state would outgrow the selection's terms, so the
        # selection keeps terms, and its set-up is the column forms diag(KDK), O(m·p²).
        return linear_fit(30_000, 4_000, 5, seed=8)

    def sparse():
        from scipy import sparse as sp

        rng = np.random.default_rng(0)
        m, n, per_row = 150_000, 200_000, 50
        rows = np.repeat(np.arange(m), per_row)
        X = sp.csr_matrix((rng.random(m * per_row), (rows, rng.integers(0, n, m * per_row))), shape=(m, n))
        X.sum_duplicates()
        y = rng.random(m) > 0.5
        return lambda: _core.greedy_select(None, y, 5, factor=X, n_threads=2)

    return {
        "kernel": ("a 12,000 × 12,000 rbf Gram matrix of 800 features", kernel),
        "selection": ("a dense selection, k = m = 2,500, schur", selection),
        "factor": ("a factored rbf fit of 150,000 rows, rank 2,000 (its factor)", factor),
        "linear": ("a linear factored fit of 100,000 × 400, k = 390 (moments, picks)", linear),
        "wide": ("a linear factored fit of 30,000 × 4,000, k = 5 (set-up in the terms form)", wide),
        "sparse": ("a sparse linear selection, 150,000 × 200,000, 7.5 M entries, k = 5 (set-up)", sparse),
    }


def uninterrupted_seconds(call):
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def stop_seconds(call, after):
    """The time from a signal ``after`` seconds into ``call`` to its exception."""
    signal.setitimer(signal.ITIMER_REAL, after)
    start = time.perf_counter()
    try:
        call()
    except Alarm:
        return time.perf_counter() - start - after
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    raise RuntimeError("the call ended before the signal: choose an earlier point")


def main():
    everything = calls()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", nargs="+", choices=list(everything), default=list(everything))
    parser.add_argument("--points", type=float, nargs="+", default=[0.05, 0.25, 0.5],
                        help="when the signal comes, as fractions of the uninterrupted time")
    args = parser.parse_args()
    previous = signal.signal(signal.SIGALRM, _raise)
    rows = []
    try:
        for name in args.calls:
            what, make = everything[name]
            call = make()
            whole = min(uninterrupted_seconds(call) for _ in range(2))
            stops = [stop_seconds(call, point * whole) for point in args.points]
            rows.append((what, whole, stops))
    finally:
        signal.signal(signal.SIGALRM, previous)
    points = ", ".join(f"{point:g}" for point in args.points)
    print(f"2 threads; the signal at {points} of each call's uninterrupted time\n")
    print("| call | uninterrupted, s | stop after the signal, ms (each point) | median, ms | longest × uninterrupted |")
    print("|---|---|---|---|---|")
    for what, whole, stops in rows:
        each = ", ".join(f"{1e3 * stop:.0f}" for stop in stops)
        print(f"| {what} | {whole:.1f} | {each} | {1e3 * statistics.median(stops):.0f} "
              f"| {max(stops) / whole:.3f} |")


if __name__ == "__main__":
    main()
