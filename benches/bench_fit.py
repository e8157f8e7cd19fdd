"""Greedy-fit benchmark: Rust engine vs the NumPy reference and vs the gemv floor.

Run by hand, not by the tests:  python benches/bench_fit.py [--m 2000] [--k 100] [--repeats 5]

Prints a Markdown table of medians over ``--repeats`` runs (the reference, being slow, runs
``--reference-repeats`` times), all measured in this process: the greedy phase is timed
apart from the kernel computation, and set against ``k × T(gemv over K)`` (NumPy's
``K @ v``), the floor of a one-pick-per-stage fit (DESIGN §4). Exits non-zero if a
measurement failed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from gkfda import DEFLATIONS, _core, reference


def median_time(function, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, default=2000)
    parser.add_argument("--d", type=int, default=20)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--stages", type=int, default=1)
    parser.add_argument("--criterion", default="optimal")
    parser.add_argument("--deflations", nargs="+", default=list(DEFLATIONS))
    parser.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--reference-repeats", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    X = rng.normal(size=(args.m, args.d)).astype(args.dtype)
    y = np.where(X[:, 0] + np.sin(X[:, 1]) + 0.3 * rng.normal(size=args.m) > 0, 1, -1)
    gamma = 1.0 / args.d
    K = _core.kernel_matrix(X, kernel="rbf", gamma=gamma, n_threads=args.threads)
    kernel_time = median_time(lambda: _core.kernel_matrix(X, kernel="rbf", gamma=gamma, n_threads=args.threads), args.repeats)
    v = rng.normal(size=args.m).astype(args.dtype)
    gemv_time = median_time(lambda: K @ v, max(20, args.repeats))
    floor = args.k * gemv_time

    print(f"m={args.m}, d={args.d}, k={args.k}, stages={args.stages}, criterion={args.criterion}, "
          f"dtype={args.dtype}, threads={args.threads}, RBF kernel; medians of {args.repeats} runs "
          f"(reference: {args.reference_repeats})")
    print(f"kernel computation: {kernel_time * 1e3:.1f} ms; T(gemv over K) = {gemv_time * 1e3:.3f} ms; "
          f"floor k×T(gemv) = {floor * 1e3:.1f} ms")
    print()
    print("| deflation | k_ | greedy (ms) | × floor | reference (ms) | speed-up over reference |")
    print("|---|---|---|---|---|---|")
    failures = 0
    for deflation in args.deflations:
        positive = y > 0
        result = {}

        def rust():
            result["indices"] = _core.greedy_select(K, positive, args.k, criterion=args.criterion,
                                                    deflation=deflation, stages=args.stages,
                                                    n_threads=args.threads)[0]

        rust_time = median_time(rust, args.repeats)
        reference_time = median_time(
            lambda: result.__setitem__("reference", reference.select(K, y, args.k, args.criterion, deflation, args.stages)),
            args.reference_repeats,
        )
        if not np.array_equal(result["indices"], result["reference"]):
            print(f"warning: {deflation}: Rust and reference selections differ", file=sys.stderr)
            failures += args.dtype == "float64"
        print(f"| {deflation} | {len(result['indices'])} | {rust_time * 1e3:.1f} | {rust_time / floor:.2f} | "
              f"{reference_time * 1e3:.0f} | {reference_time / rust_time:.1f}× |")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
