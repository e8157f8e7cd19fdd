"""The cost of one factored pick against one NumPy pass over the factor.

    python benches/bench_pick.py                       # m = 400,000, p = 500, float32
    python benches/bench_pick.py --m 100000 --p 300 --deflations projection schur

A pick of the factored selection (``_core.greedy_select(None, y, k, factor=Φ)``, in the
factor's coordinates) applies its term to the rows' statistics in one pass over ``Φ`` with two
right-hand sides, then ranks the candidates. Its baseline is the pass a user would write in
NumPy, ``Φ @ V`` with ``V`` of ``p × 3`` (BLAS, the same threads). The time of a pick is the
difference of two selections, ``k`` and ``k0`` picks, over ``k − k0`` (the set-up, ``Φ'Φ`` and
the statistics of ``K_0``, cancels); every figure is the median of ``--repeats`` paired runs
(``Φ @ V``, then each selection), and the ratio is the median of the runs' ratios. ``Φ``:
standard normal rows scaled by ``1/√p``, labels from the sign of a random direction plus 20%
noise. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from gkfda import _core


def seconds(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--m", type=int, default=400_000)
    parser.add_argument("--p", type=int, default=500)
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--k", type=int, default=41)
    parser.add_argument("--k0", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--deflations", nargs="+", default=["projection", "schur", "hotelling"])
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    phi = (rng.standard_normal((args.m, args.p), dtype=np.float32) / np.sqrt(args.p)).astype(args.dtype)
    direction = rng.standard_normal(args.p).astype(args.dtype)
    y = (phi @ direction + 0.2 * rng.standard_normal(args.m) > 0)
    V = rng.standard_normal((args.p, 3)).astype(args.dtype)

    def select(k, deflation):
        return lambda: _core.greedy_select(None, y, k, deflation=deflation, factor=phi, n_threads=args.threads)

    rows = []
    for deflation in args.deflations:
        select(args.k0, deflation)()  # warm the pool and the pages
        passes, picks, ratios = [], [], []
        for _ in range(args.repeats):
            numpy_pass = statistics.median(seconds(lambda: phi @ V) for _ in range(3))
            pick = (seconds(select(args.k, deflation)) - seconds(select(args.k0, deflation))) / (args.k - args.k0)
            passes.append(numpy_pass)
            picks.append(pick)
            ratios.append(pick / numpy_pass)
        rows.append((deflation, statistics.median(passes), statistics.median(picks), statistics.median(ratios)))

    print(f"m = {args.m:,}, p = {args.p}, {args.dtype}, {args.threads} threads; a pick = "
          f"(selection of {args.k} − selection of {args.k0}) / {args.k - args.k0}; "
          f"medians of {args.repeats} paired runs\n")
    print("| deflation | NumPy `Φ @ V` (p×3), ms | factored pick, ms | pick / pass |")
    print("|---|---|---|---|")
    for deflation, numpy_pass, pick, ratio in rows:
        print(f"| {deflation} | {1e3 * numpy_pass:.1f} | {1e3 * pick:.1f} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
