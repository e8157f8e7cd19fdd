"""The cost of a pick of a dask fit against the chunk count (docs/scale.md, "Beyond one
machine: Dask").

    python benches/bench_dask.py                      # m = 20,000, p = 500, k = 50
    python benches/bench_dask.py --m 4000 --rank 100 --chunks 2 4

Data: ``make_classification(n_samples=m, n_features=20, n_informative=12,
n_clusters_per_class=16, class_sep=1.5, flip_y=0.02, random_state=5)``, standardised; float64;
rbf with ``gamma=1/20``; the default criterion and deflation (``optimal``, ``projection``).
On a ``LocalCluster`` of 2 worker processes of one thread each, for each chunk count: the
dask fit of ``k`` bases and of one basis, the cost of a pick their difference over
``k − 1`` (what the factor's set-up and the model cost is in both), and the bytes a pick
sends over the network, counted at the factor's operations. The baseline is the in-memory
factored fit's pick in the same run (``n_jobs=2``), measured the same way. Each fit is the
median of ``--repeats`` runs. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def data(m):
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_samples=m, n_features=20, n_informative=12, n_clusters_per_class=16, class_sep=1.5, flip_y=0.02,
        random_state=5,
    )
    return (X - X.mean(0)) / X.std(0), y


def median_fit_seconds(fit, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fit()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


class Traffic:
    """Bytes the factor's operations send and receive over the network, by operation:
    wraps ``ChunkedFactor``'s methods and counts what each round moves, from its shapes."""

    def __init__(self):
        self.bytes = 0
        self.calls = 0

    def install(self, monkey):
        from gkfda import _dask

        traffic = self

        def counted(name, count):
            original = getattr(_dask.ChunkedFactor, name)

            def method(self, *args):
                traffic.calls += 1
                traffic.bytes += count(self, *args)
                return original(self, *args)

            monkey.append((name, original))
            setattr(_dask.ChunkedFactor, name, method)

        def chunks(factor):
            return len(factor.phi_parts)

        def item(factor):
            return factor.dtype.itemsize

        m_of = lambda factor: factor.shape[0]  # noqa: E731
        p_of = lambda factor: factor.shape[1]  # noqa: E731
        # multiply: the rhs slices out and the products back (m·r each), the p×r partials
        # back and their sum out to every chunk (C·p·r each).
        counted("multiply", lambda f, rhs: item(f) * len(rhs) * (2 * m_of(f) + 2 * chunks(f) * p_of(f)))
        # rows: the picked rows of Φ back (q·p), out to every chunk (C·q·p), the rows back (m·q).
        counted("rows", lambda f, picks: item(f) * len(picks) * (p_of(f) + chunks(f) * p_of(f) + m_of(f)))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--m", type=int, default=20_000)
    parser.add_argument("--rank", type=int, default=500)
    parser.add_argument("--k", type=int, default=50)
    parser.add_argument("--chunks", type=int, nargs="+", default=[2, 4, 8, 16])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import dask.array as da
    import distributed

    import gkfda
    from gkfda import _dask

    X, y = data(args.m)
    params = dict(gamma=1 / 20, factor_rank=args.rank, random_state=0)

    def in_memory(k):
        return lambda: gkfda.GreedyKFDA(k=k, solver="factored", n_jobs=2, **params).fit(X, y)

    baseline = (median_fit_seconds(in_memory(args.k), args.repeats)
                - median_fit_seconds(in_memory(1), args.repeats)) / (args.k - 1)
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0",
                                       silence_logs=40)
    client = distributed.Client(cluster)
    rows = []
    try:
        for n_chunks in args.chunks:
            size = -(-args.m // n_chunks)
            Xd = da.from_array(X, chunks=(size, X.shape[1])).persist()
            yd = da.from_array(y, chunks=size).persist()

            def dask_fit(k):
                return lambda: gkfda.GreedyKFDA(k=k, n_jobs=2, **params).fit(Xd, yd)

            per_pick = (median_fit_seconds(dask_fit(args.k), args.repeats)
                        - median_fit_seconds(dask_fit(1), args.repeats)) / (args.k - 1)
            traffic, restore = Traffic(), []
            traffic.install(restore)
            try:
                gkfda.GreedyKFDA(k=args.k, n_jobs=2, **params).fit(Xd, yd)
                full = (traffic.bytes, traffic.calls)
                traffic.bytes = traffic.calls = 0
                gkfda.GreedyKFDA(k=1, n_jobs=2, **params).fit(Xd, yd)
                one = (traffic.bytes, traffic.calls)
            finally:
                for name, original in restore:
                    setattr(_dask.ChunkedFactor, name, original)
            bytes_per_pick = (full[0] - one[0]) / (args.k - 1)
            calls_per_pick = (full[1] - one[1]) / (args.k - 1)
            rows.append((n_chunks, per_pick, bytes_per_pick, calls_per_pick))
    finally:
        client.close()
        cluster.close()

    print(f"m = {args.m:,}, p = {args.rank}, k = {args.k}; 2 worker processes of 1 thread; "
          f"in-memory factored pick (n_jobs=2): {1e3 * baseline:.1f} ms\n")
    print("| chunks | ms per pick | × in-memory pick | KiB over the network per pick | factor operations per pick |")
    print("|---|---|---|---|---|")
    for n_chunks, per_pick, bytes_per_pick, calls in rows:
        print(f"| {n_chunks} | {1e3 * per_pick:.1f} | {per_pick / baseline:.1f} | {bytes_per_pick / 1024:,.0f} "
              f"| {calls:.1f} |")


if __name__ == "__main__":
    main()
