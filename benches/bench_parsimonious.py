"""Fit time of ParsimoniousKFDA (kFDA_q) against its NumPy oracle, and of its solve's forms.

The first ``N`` points of the banana benchmark (train and test realisation 1, then more
of its pool), RBF kernel at ``gamma``, for each ``N`` and ``q``:

- ``ParsimoniousKFDA.fit`` (kernel precomputed, so that only the MM is timed) against
  ``reference.parsimonious_fit`` (the literal eq. 8 on the full ``(N+1)`` system, NumPy's
  BLAS on every core), in paired runs whose order alternates; the medians of each and
  the median of the pairs' ratios;
- the MM iterations, and the NRS (retained samples, % of ``N``);
- with ``--forms``, the solve's alternatives on the same problem, each timed alone
  (median of ``--repeats``): the pruned active-set solve on one BLAS thread (what the
  estimator runs), the same on two threads, and without pruning.

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
from timing import median_time, wait_for_idle_cores

from gkfda import ParsimoniousKFDA, _core, reference
from gkfda.datasets import load_benchmark
from gkfda.parsimonious import augmented_gram, mm_fit, ridge_start, targets


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
    """Seconds of the MM alone (the Gram matrix and ridge start included) per variant."""
    y_hat = targets(y == 1)

    def run(threads, prune):
        with threadpoolctl.threadpool_limits(threads, user_api="blas"):
            gram, products = augmented_gram(K, y_hat)
            mm_fit(K, gram, products, y_hat, ridge_start(gram, products), q, rho, 1e-5, 1000, True, prune=prune)

    return [median_time(lambda: run(t, p), repeats, settle=True) for t, p in ((1, 1e-12), (2, 1e-12), (1, 0.0))]


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
                one, two, unpruned = forms(K, y, q, args.rho, args.repeats)
                form_rows.append([n, q, f"{one:.3f}", f"{two:.3f}", f"{one / two:.2f}", f"{unpruned:.3f}",
                                  f"{unpruned / one:.1f}"])
            print(tabulate(rows[-1:], tablefmt="plain"), flush=True)
    print(f"\nbanana, rbf gamma={args.gamma}, rho={args.rho}, medians of {args.repeats} paired runs\n")
    print(tabulate(rows, headers=["N", "q", "fit s", "reference s", "ratio", "iterations", "ref. iterations",
                                  "NRS %", "same support"], tablefmt="github"))
    if form_rows:
        print()
        print(tabulate(form_rows, headers=["N", "q", "pruned, 1 thread s", "pruned, 2 threads s", "1/2 threads",
                                           "unpruned, 1 thread s", "unpruned/pruned"], tablefmt="github"))


if __name__ == "__main__":
    main()
