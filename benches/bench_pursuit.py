"""Selection time of the matching-pursuit methods: the Rust engine against its NumPy reference.

For each ``m`` an rbf kernel of ``m`` Gaussian points in 10 dimensions (and a second view for
the CCA, a regression target for KMP), then ``k`` picks of each method: the engine
(``_core.pursuit_select``, 2 threads) and the reference (``gkfda.reference.pursuit``, which
rewrites the deflated kernel at every pick), alternating, ``--repeats`` pairs. Printed: the
median seconds of each and the median of the per-pair ratios (reference / engine). Both pick
the same indices (checked on every run).

Usage: ``python benches/bench_pursuit.py [--ms 2000 4000] [--k 20] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import wait_for_idle_cores  # noqa: E402

from gkfda import _core, reference  # noqa: E402


def timed(function):
    wait_for_idle_cores()
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ms", type=int, nargs="+", default=[2000, 4000])
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    rows = []
    for m in args.ms:
        rng = np.random.default_rng(0)
        X = rng.normal(size=(m, 10))
        y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=m)
        K = _core.kernel_matrix(X, kernel="rbf", gamma=0.05, n_threads=args.threads)
        Ky = _core.kernel_matrix(X[:, :5] + 0.5 * rng.normal(size=(m, 5)), kernel="rbf", gamma=0.1,
                                 n_threads=args.threads)
        methods = {
            "matching (KMP)": (lambda: _core.pursuit_select("matching", K, args.k, target=y, n_threads=args.threads),
                               lambda: reference.matching_pursuit_select(K, y, args.k)),
            "pca (SKPCA)": (lambda: _core.pursuit_select("pca", K, args.k, n_threads=args.threads),
                            lambda: reference.sparse_pca_select(K, args.k)),
            "correlation (SKCCA)": (
                lambda: _core.pursuit_select("correlation", K, args.k, second_kernel=Ky, n_threads=args.threads),
                lambda: reference.sparse_cca_select(K, Ky, args.k)),
        }
        for name, (fast, slow) in methods.items():
            engine_times, reference_times = [], []
            for repeat in range(args.repeats):
                order = [(fast, engine_times), (slow, reference_times)]
                for function, times in order if repeat % 2 == 0 else order[::-1]:
                    seconds, result = timed(function)
                    times.append(seconds)
                    if function is fast:
                        picked = np.asarray(result[0])
                    else:
                        expected = result[0]
                if not np.array_equal(picked, expected):
                    raise SystemExit(f"{name}, m={m}: the engine and the reference picked different indices")
            ratios = [r / e for r, e in zip(reference_times, engine_times)]
            rows.append([m, name, f"{statistics.median(engine_times) * 1e3:.1f}",
                         f"{statistics.median(reference_times) * 1e3:.0f}", f"{statistics.median(ratios):.0f}"])
    print(f"{args.k} picks, float64, engine on {args.threads} threads; medians of {args.repeats} alternating pairs")
    print(tabulate(rows, headers=["m", "method", "engine ms", "reference ms", "reference / engine"],
                   tablefmt="github", disable_numparse=True))


if __name__ == "__main__":
    main()
