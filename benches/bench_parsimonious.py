"""Fit time of ParsimoniousKFDA (kFDA_q) against its NumPy oracle, and of its solve's forms.

The first ``N`` points of the banana benchmark (train and test realisation 1, then more
of its pool), RBF kernel at ``gamma``, for each ``N`` and ``q``:

- ``ParsimoniousKFDA.fit`` (kernel precomputed, so that only the MM is timed) against
  ``reference.parsimonious_fit`` (the literal eq. 8 on the full ``(N+1)`` system, NumPy's
  BLAS on every core), in paired runs whose order alternates; the medians of each and
  the median of the pairs' ratios;
- the MM iterations, and the NRS (retained samples, % of ``N``);
- with ``--forms``, the MM iteration alone in its forms, run in turn in each of
  ``--repeats`` rounds: in Rust (faer's Cholesky on one thread: what the estimator runs),
  through SciPy's LAPACK on one BLAS thread and on two, and through LAPACK without the
  pruning of underflowed coefficients; medians, and the medians of the ratios to Rust;
- with ``--digits``, instead: the default fits of ``GreedyKFDA`` and ``ParsimoniousKFDA`` on
  scikit-learn's digits, standardised (10 classes, one-vs-rest), in paired runs (wall and
  CPU seconds, medians), and the Cholesky work of the MM steps (``Σ |active|³/3`` over
  every step of every problem, the active sets counted by stepping the core one step a
  call) against the MM's CPU time alone.

Usage: ``python benches/bench_parsimonious.py [--sizes 400 1000 2000] [--qs 1 0.5]
[--repeats 3] [--forms | --digits]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import threadpoolctl
from tabulate import tabulate
from timing import wait_for_idle_cores

from gkfda import GreedyKFDA, ParsimoniousKFDA, _core, reference
from gkfda.datasets import load_benchmark
from gkfda.parsimonious import PRUNE, _GramStart, augmented_gram, converged, mm_fit, ridge_start, targets


def problem(n):
    benchmark = load_benchmark("banana")
    X_train, y_train, X_test, y_test = benchmark.split(0)
    X, y = np.vstack([X_train, X_test])[:n], np.concatenate([y_train, y_test])[:n]
    return np.ascontiguousarray(X), y


def paired(fast, slow, repeats):
    """Medians of ``fast`` and ``slow`` and of their per-pair ratios (order alternating)."""
    fast_times, slow_times = [], []
    for i in range(repeats):
        for function, times in ((fast, fast_times), (slow, slow_times))[:: 1 if i % 2 == 0 else -1]:
            wait_for_idle_cores()
            start = time.perf_counter()
            function()
            times.append(time.perf_counter() - start)
    ratios = [s / f for f, s in zip(fast_times, slow_times)]
    return statistics.median(fast_times), statistics.median(slow_times), statistics.median(ratios)


def forms(K, y, q, rho, repeats):
    """Seconds of the MM iteration alone (from the ridge start, ``K̃'K̃`` given) per form,
    the forms run in turn in each round: medians, and the medians of each round's ratio
    to the Rust form."""
    y_hat = targets(y == 1)
    gram, products = augmented_gram(K, y_hat)
    start = ridge_start(gram, products)

    def rust():
        _core.parsimonious_fit(K, gram, products, y_hat, start, q=q, rho=rho, tol=1e-5, max_iter=1000,
                               penalize_bias=True, prune=PRUNE)

    def lapack(threads, prune):
        def run():
            with threadpoolctl.threadpool_limits(threads, user_api="blas"):
                mm_fit(K, gram, products, y_hat, start, q, rho, 1e-5, 1000, True, prune=prune)
        return run

    variants = [rust, lapack(1, PRUNE), lapack(2, PRUNE), lapack(1, 0.0)]
    times = [[] for _ in variants]
    for _ in range(repeats):
        for function, own in zip(variants, times):
            wait_for_idle_cores()
            start_time = time.perf_counter()
            function()
            own.append(time.perf_counter() - start_time)
    medians = [statistics.median(own) for own in times]
    ratios = [statistics.median([t / r for t, r in zip(own, times[0])]) for own in times[1:]]
    return medians, ratios


def digits(repeats):
    """The digits rows: (estimator, wall s, CPU s) medians of paired runs, then the MM's
    Cholesky GFLOP, its CPU seconds and their quotient."""
    from sklearn.datasets import load_digits
    from sklearn.preprocessing import StandardScaler

    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    runs = {"GreedyKFDA()": lambda: GreedyKFDA().fit(X, y), "ParsimoniousKFDA()": lambda: ParsimoniousKFDA().fit(X, y)}
    wall, cpu = {name: [] for name in runs}, {name: [] for name in runs}
    for i in range(repeats):
        for name, function in list(runs.items())[:: 1 if i % 2 == 0 else -1]:
            wait_for_idle_cores()
            start, start_cpu = time.perf_counter(), time.process_time()
            function()
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    rows = [[name, f"{statistics.median(wall[name]):.2f}", f"{statistics.median(cpu[name]):.2f}"] for name in runs]
    K = _core.kernel_matrix(X, kernel="rbf", gamma=1.0 / (X.shape[1] * X.var()))  # gamma="scale"
    params = dict(q=1.0, rho=1e-3, tol=1e-5, penalize_bias=True, prune=PRUNE)
    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        shared = _GramStart(K, shared=True)
        flops, seconds, steps = 0.0, 0.0, 0
        for c in np.unique(y):
            y_hat = targets(y == c)
            products = shared.products(y_hat)
            omega = ridge_start(shared.gram, products, shared.factor)
            start = time.process_time()
            _core.parsimonious_fit(K, shared.gram, products, y_hat, omega, max_iter=1000, **params)
            seconds += time.process_time() - start
            history = []
            while not (len(history) > 1 and converged(history, params["tol"])) and len(history) <= 1000:
                flops += np.count_nonzero(omega) ** 3 / 3
                omega, objective, _ = _core.parsimonious_fit(K, shared.gram, products, y_hat, omega, max_iter=1,
                                                             **params)
                history = history or [objective[0]]
                history.append(objective[-1])
                steps += 1
    return rows, (steps, flops / 1e9, seconds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[400, 1000, 2000])
    parser.add_argument("--qs", nargs="+", type=float, default=[1.0, 0.5])
    parser.add_argument("--rho", type=float, default=1e-3)
    parser.add_argument("--gamma", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--forms", action="store_true")
    parser.add_argument("--digits", action="store_true")
    args = parser.parse_args()
    if args.digits:
        rows, (steps, gflop, seconds) = digits(args.repeats)
        print(f"digits, standardised, default parameters, medians of {args.repeats} paired runs\n")
        print(tabulate(rows, headers=["fit", "wall s", "CPU s"], tablefmt="github"))
        print(f"\nMM: {steps} steps, {gflop:.0f} GFLOP of Cholesky in {seconds:.2f} CPU s "
              f"({gflop / seconds:.0f} GFLOP/s)")
        return
    rows, form_rows = [], []
    for n in args.sizes:
        X, y = problem(n)
        K = _core.kernel_matrix(X, kernel="rbf", gamma=args.gamma)
        for q in args.qs:
            model = ParsimoniousKFDA(q=q, rho=args.rho, kernel="precomputed", n_jobs=1)
            oracle = {}

            def run_reference():
                oracle["omega"], oracle["objective"] = reference.parsimonious_fit(K, y == 1, q=q, rho=args.rho)

            fast, slow, ratio = paired(lambda: model.fit(K, y), run_reference, args.repeats)
            omega, objective = oracle["omega"], oracle["objective"]
            same = np.array_equal(model.support_, reference.parsimonious_support(omega))
            rows.append([
                n, q, f"{fast:.3f}", f"{slow:.3f}", f"{ratio:.1f}", model.n_iter_, len(objective) - 1,
                f"{100 * len(model.support_) / n:.1f}", "yes" if same else "no",
            ])
            if args.forms:
                medians, ratios = forms(K, y, q, args.rho, args.repeats)
                form_rows.append([n, q, *(f"{t:.3f}" for t in medians), *(f"{r:.2f}" for r in ratios)])
            print(tabulate(rows[-1:], tablefmt="plain"), flush=True)
    print(f"\nbanana, rbf gamma={args.gamma}, rho={args.rho}, medians of {args.repeats} paired runs\n")
    print(tabulate(rows, headers=["N", "q", "fit s", "reference s", "ratio", "iterations", "ref. iterations",
                                  "NRS %", "same support"], tablefmt="github"))
    if form_rows:
        print()
        print(tabulate(form_rows, headers=[
            "N", "q", "Rust (faer) s", "LAPACK s", "LAPACK 2 threads s", "LAPACK unpruned s", "LAPACK / Rust",
            "LAPACK 2 threads / Rust", "unpruned / Rust"], tablefmt="github"))


if __name__ == "__main__":
    main()
