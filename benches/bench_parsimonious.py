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
  pruning of underflowed coefficients; medians, and the medians of the ratios to Rust.

Usage: ``python benches/bench_parsimonious.py [--sizes 400 1000 2000] [--qs 1 0.5]
[--repeats 3] [--forms]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import threadpoolctl
from tabulate import tabulate
from timing import wait_for_idle_cores

from gkfda import ParsimoniousKFDA, _core, reference
from gkfda.datasets import load_benchmark
from gkfda.parsimonious import PRUNE, augmented_gram, mm_fit, ridge_start, targets


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[400, 1000, 2000])
    parser.add_argument("--qs", nargs="+", type=float, default=[1.0, 0.5])
    parser.add_argument("--rho", type=float, default=1e-3)
    parser.add_argument("--gamma", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--forms", action="store_true")
    args = parser.parse_args()
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
