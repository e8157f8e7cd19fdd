"""The cost of a pick of a dask fit against the chunk count (docs/scale.md, "Beyond one
machine: Dask").

    python benches/bench_dask.py                      # m = 20,000, p = 500, k = 50
    python benches/bench_dask.py --m 4000 --rank 100 --chunks 2 4

Data: ``make_classification(n_samples=m, n_features=20, n_informative=12,
n_clusters_per_class=16, class_sep=1.5, flip_y=0.02, random_state=5)``, standardised; float64;
rbf with ``gamma=1/20``; the default criterion and deflation (``optimal``, ``projection``).
On a ``LocalCluster`` of 2 worker processes of one thread each, with the default client (the
picks call the workers straight) and with ``direct_to_workers=False`` (through the scheduler),
one at a time, for each chunk count: the cost of a pick of
the dask fit against the in-memory factored fit's (``n_jobs=2``), the medians of
``--repeats`` paired runs (:func:`paired_picks`), the bytes a pick sends over the network and
the driver's waits on the cluster, counted at the holder's rounds, and the times of rounds
that do nothing: one task a chunk, waited for (the floor of a round of tasks on this
cluster), and one call to an actor on each worker (the floor of a pick's round). Prints a
Markdown table.
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


def selection_seconds(fit):
    """``fit``'s selection time: ``GreedyKFDA._select`` timed (the selection's set-up and its
    picks, without the factor and the model, whose costs on a shared machine would swamp a
    pick's)."""
    from gkfda.estimator import GreedyKFDA

    original = GreedyKFDA._select
    times = []

    def timed(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            times.append(time.perf_counter() - start)

    GreedyKFDA._select = timed
    try:
        fit()
    finally:
        GreedyKFDA._select = original
    return times[0]


def paired_picks(in_memory, on_dask, k, repeats):
    """Medians over ``repeats`` paired runs of ``(in-memory pick, dask pick, their ratio)``:
    each run times the selections of ``k`` bases and of one, in memory then on dask, a pick
    the difference over ``k − 1`` (the selection's set-up is in both), so that the machine's
    drifting load weighs on both sides of each ratio alike."""
    runs = []
    for _ in range(repeats):
        memory = (selection_seconds(in_memory(k)) - selection_seconds(in_memory(1))) / (k - 1)
        dask = (selection_seconds(on_dask(k)) - selection_seconds(on_dask(1))) / (k - 1)
        runs.append((memory, dask, dask / memory))
    return tuple(statistics.median(column) for column in zip(*runs))


class Traffic:
    """Bytes a selection's rounds send and receive over the network, and the driver's waits
    on the cluster: wraps ``ChunkedFactorRows``'s methods and counts what each round moves,
    from its shapes."""

    def __init__(self):
        self.bytes = 0
        self.calls = 0

    def install(self, monkey):
        from gkfda import _dask

        traffic = self
        rows = _dask.ChunkedFactorRows

        def wrapped(name, count):
            original = getattr(rows, name)

            def method(self, *args):
                traffic.bytes += count(self, *args)
                return original(self, *args)

            monkey.append((name, original))
            setattr(rows, name, method)

        def waits(self, *args):
            traffic.calls += 1
            return 0

        def advance(holder, v, h, class_sums, weighted_norms, blocked, take):
            workers = len(holder.actors)
            out = v.nbytes + h.nbytes + class_sums.nbytes + weighted_norms.nbytes + blocked.nbytes + 8
            back = take * (8 * holder.shape[1] + 24)  # each worker's best: its rows (float64) and scores
            return workers * (out + back)

        wrapped("_round", waits)
        wrapped("_call", waits)
        wrapped("advance", advance)


def _nothing(block):
    return 0


class Idle:
    """An actor that does nothing: the floor of a call on a worker's actor."""

    def run(self, call):
        return call


def round_floor_seconds(client, parts, rounds=30):
    """The median times of rounds that do nothing, ``(tasks, actors)``: one task a chunk,
    each on its chunk, submitted and waited for as a task round is; one call to an actor on
    each worker, by the route a fit's picks take on ``client`` (straight to the workers
    unless it says ``direct_to_workers=False``). What the scheduler, or the connections to
    the workers, take whatever a round computes."""
    from gkfda import _dask

    tasks = []
    for _ in range(rounds):
        start = time.perf_counter()
        futures = [client.submit(_nothing, part, pure=False) for part in parts]
        _dask._wait(futures, "a round that does nothing")
        tasks.append(time.perf_counter() - start)
    workers = list(client.scheduler_info()["workers"])
    placed = [client.submit(Idle, actor=True, workers=[worker], pure=False) for worker in workers]
    actors = [future.result() for future in placed]
    direct = client.direct_to_workers is not False
    calls = []
    for _ in range(rounds):
        start = time.perf_counter()
        nothing = [
            _dask._direct_call(client, worker, actor.key, b"") if direct else actor.run(b"")
            for worker, actor in zip(workers, actors)
        ]
        _dask._actor_results(client, nothing, "a call that does nothing", workers)
        calls.append(time.perf_counter() - start)
    del actors, placed
    return statistics.median(tasks), statistics.median(calls)


def resident_bytes(field):
    """``VmRSS`` or ``VmHWM`` of this process, in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def reset_peak():
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # resets VmHWM to the current VmRSS


class peak_of_selection:
    """Appends to ``out`` the driver's peak above its memory at the start of the fit's
    selection (``GreedyKFDA._select``: the selection's set-up and picks)."""

    def __init__(self, out):
        self.out = out

    def __enter__(self):
        from gkfda.estimator import GreedyKFDA

        self.original = original = GreedyKFDA._select
        out = self.out

        def measured(estimator, *args, **kwargs):
            peak_before = resident_bytes("VmHWM")
            reset_peak()
            before = resident_bytes("VmRSS")
            try:
                return original(estimator, *args, **kwargs)
            finally:
                # The selection's own peak, and the fit's peak before it (which the reset
                # cleared).
                out.append((resident_bytes("VmHWM") - before, peak_before))

        GreedyKFDA._select = measured

    def __exit__(self, *exc):
        from gkfda.estimator import GreedyKFDA

        GreedyKFDA._select = self.original


def driver_memory(args):
    """The driver's peak resident memory above its resident memory before the fit (its
    high-water mark reset just before), for fits at each m of ``--driver-memory``: ``X``
    (``m × 20`` standard normal, float64) and ``y`` (the sign of ``X``'s first two columns'
    sum, 10% flipped) made and persisted on the workers in 4 chunks, so the driver holds
    only what the fit brings to it."""
    import dask.array as da
    import distributed

    import gkfda

    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0",
                                       silence_logs=40)
    client = distributed.Client(cluster)
    rows = []
    try:
        for m in args.driver_memory:
            state = da.random.RandomState(7)
            chunks = -(-m // 4)
            X = state.standard_normal((m, 20), chunks=(chunks, 20)).persist()
            flip = state.random_sample(m, chunks=chunks) < 0.1
            y = ((X[:, 0] + X[:, 1] > 0) ^ flip).astype(np.int64).persist()
            distributed.wait([X, y])
            gkfda.GreedyKFDA(k=args.k, factor_rank=args.rank, gamma=1 / 20, random_state=0).fit(X[:4000], y[:4000])
            reset_peak()
            before = resident_bytes("VmRSS")
            start = time.perf_counter()
            selection = []
            with peak_of_selection(selection):
                gkfda.GreedyKFDA(k=args.k, factor_rank=args.rank, gamma=1 / 20, random_state=0).fit(X, y)
            seconds = time.perf_counter() - start
            selection_growth, peak_before = selection[0]
            fit_growth = max(resident_bytes("VmHWM"), peak_before) - before
            rows.append((m, fit_growth, selection_growth, seconds))
    finally:
        client.close()
        cluster.close()
    print(f"p = {args.rank}, k = {args.k}; 2 worker processes of 1 thread; the driver's peak above its "
          "memory before the fit\n")
    print("| m | fit: driver's peak growth, MiB | × the first m's | selection: driver's peak growth, MiB "
          "| × the first m's | fit, s |")
    print("|---|---|---|---|---|---|")
    for m, growth, selection, seconds in rows:
        print(f"| {m:,} | {growth / 2**20:,.1f} | {growth / rows[0][1]:.2f} | {selection / 2**20:,.1f} "
              f"| {selection / rows[0][2]:.2f} | {seconds:.1f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--m", type=int, default=20_000)
    parser.add_argument("--rank", type=int, default=500)
    parser.add_argument("--k", type=int, default=50)
    parser.add_argument("--chunks", type=int, nargs="+", default=[2, 4, 8, 16])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--driver-memory", type=int, nargs="*", metavar="M",
                        help="instead: the driver's peak memory during a fit at each m (data made on the workers)")
    args = parser.parse_args()
    if args.driver_memory:
        driver_memory(args)
        return

    import dask.array as da
    import distributed

    import gkfda
    from gkfda import _dask

    X, y = data(args.m)
    params = dict(gamma=1 / 20, factor_rank=args.rank, random_state=0)

    def in_memory(k):
        return lambda: gkfda.GreedyKFDA(k=k, solver="factored", n_jobs=2, **params).fit(X, y)

    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0",
                                       silence_logs=40)
    rows = []
    try:
        # One client at a time: the fit and its actors use the current one.
        for direct in (None, False):
            client = distributed.Client(cluster, direct_to_workers=direct)
            try:
                for n_chunks in args.chunks:
                    size = -(-args.m // n_chunks)
                    Xd = da.from_array(X, chunks=(size, X.shape[1])).persist()
                    yd = da.from_array(y, chunks=size).persist()

                    def dask_fit(k):
                        return lambda: gkfda.GreedyKFDA(k=k, n_jobs=2, **params).fit(Xd, yd)

                    baseline, per_pick, ratio = paired_picks(in_memory, dask_fit, args.k, args.repeats)
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
                            setattr(_dask.ChunkedFactorRows, name, original)
                    bytes_per_pick = (full[0] - one[0]) / (args.k - 1)
                    calls_per_pick = (full[1] - one[1]) / (args.k - 1)
                    floors = round_floor_seconds(client, distributed.futures_of(Xd))
                    rows.append((direct, n_chunks, baseline, per_pick, ratio, bytes_per_pick, calls_per_pick, floors))
                    del Xd, yd
            finally:
                client.close()
    finally:
        cluster.close()

    print(f"m = {args.m:,}, p = {args.rank}, k = {args.k}; 2 worker processes of 1 thread; the baseline: the "
          f"in-memory factored pick (n_jobs=2); medians of {args.repeats} paired runs\n")
    print("| client | chunks | in-memory pick, ms | ms per pick | × in-memory pick | KiB over the network per pick "
          "| waits on the cluster per pick | a task round that does nothing, ms | its × in-memory pick "
          "| an actor round that does nothing, ms | its × in-memory pick |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for direct, n_chunks, baseline, per_pick, ratio, bytes_per_pick, calls, (tasks, actors) in rows:
        client = "default: straight to the workers" if direct is None else "`direct_to_workers=False`"
        print(f"| {client} | {n_chunks} | {1e3 * baseline:.1f} | {1e3 * per_pick:.1f} | {ratio:.2f} "
              f"| {bytes_per_pick / 1024:,.0f} | {calls:.1f} | {1e3 * tasks:.1f} | {tasks / baseline:.1f} "
              f"| {1e3 * actors:.1f} | {actors / baseline:.2f} |")


if __name__ == "__main__":
    main()
