"""Fits past the kernel matrix: the factored solver against Nyström + LDA at m up to 10⁶.

    python benches/bench_scale.py                          # m = 20,000, 100,000, 1,000,000
    python benches/bench_scale.py --sizes 20000 --pools rpcholesky greedy uniform
    python benches/bench_scale.py --kernel linear --sizes 1000000
    python benches/bench_scale.py --sizes 20000 --rank-sweep 250 500 750 1000 2000 4000

Data: ``make_classification(n_samples=m + 20000, n_features=20, n_informative=12,
n_clusters_per_class=16, class_sep=1.5, flip_y=0.02, random_state=5)``, standardised by the
training rows' means and deviations, the last 20,000 rows held out; float32; rbf with
``gamma=1/20``; k = 200. For each m: ``GreedyKFDA(solver="factored")`` (one row per pool
method of ``--pools``, factor rank ``--rank``), ``Nystroem(n_components=k)`` + LDA (uniform
landmarks, 3 seeds: mean and range), ``Nystroem(2k)`` + LDA, ``Nystroem(p)`` + LDA, and at
m = 20,000 ``GreedyKFDA(solver="dense")``. With ``--kernel linear``:
``GreedyKFDA(kernel="linear", solver="factored")`` (its factor is ``X`` itself, p = 20) beside
``LinearDiscriminantAnalysis`` on the same features. With ``--rank-sweep``: the factored fit at
each of the given factor ranks (and at m = 20,000 the dense one), how its accuracy approaches
the dense fit's as ``ΦΦ'`` approaches ``K``. Each fit runs in a process of its own,
whose peak resident memory (the data included) is reported. Prints a Markdown table; each
fit's time is also given as a ratio to the last row's, measured in the same run
(``Nystroem(p)`` + LDA; LDA for the linear kernel; in a sweep, the dense fit), and each
factored fit's phases (its ``verbose=True`` bars, timed) follow the table.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

K = 200
HELD_OUT = 20_000


def data(m):
    import numpy as np
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_samples=m + HELD_OUT, n_features=20, n_informative=12, n_clusters_per_class=16,
        class_sep=1.5, flip_y=0.02, random_state=5,
    )
    train = slice(0, m)
    mean, std = X[train].mean(0), X[train].std(0)
    X = ((X - mean) / std).astype(np.float32)
    return X[:m], y[:m], X[m:], y[m:]


def timed_phases():
    """Each phase's seconds of the fits that follow, as their ``verbose`` bars open and close
    (``gkfda._progress``), filled in as they end."""
    from gkfda import _progress

    phases, opened = {}, {}
    init, close = _progress._Bar.__init__, _progress._Bar.close

    def timed_init(bar, name, total, unit):
        opened[id(bar)] = (name, time.perf_counter())
        init(bar, name, total, unit)

    def timed_close(bar):
        close(bar)
        name, start = opened.pop(id(bar), (None, 0.0))
        if name is not None:
            phases[name] = phases.get(name, 0.0) + time.perf_counter() - start

    _progress._Bar.__init__, _progress._Bar.close = timed_init, timed_close
    return phases


def worker(method, m, seed, rank, pool):
    X, y, X_test, y_test = data(m)
    phases = {}
    start = time.perf_counter()
    if method in ("factored", "dense"):
        from gkfda import GreedyKFDA

        # The bars go to the captured stderr; their phases' times come back with the result.
        phases = timed_phases()
        model = GreedyKFDA(k=K, gamma=1 / 20, dtype="float32", solver=method, factor_rank=rank,
                           factor_pool=pool, random_state=seed, verbose=True).fit(X, y)
    elif method == "linear":
        from gkfda import GreedyKFDA

        model = GreedyKFDA(k=K, kernel="linear", dtype="float32", solver="factored").fit(X, y)
    elif method == "lda":
        from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

        model = LinearDiscriminantAnalysis().fit(X, y)
    else:
        from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
        from sklearn.kernel_approximation import Nystroem
        from sklearn.pipeline import make_pipeline

        components = {"nystroem_k": K, "nystroem_2k": 2 * K, "nystroem_p": rank}[method]
        model = make_pipeline(Nystroem(gamma=1 / 20, n_components=components, random_state=seed),
                              LinearDiscriminantAnalysis()).fit(X, y)
    seconds = time.perf_counter() - start
    accuracy = float(model.score(X_test, y_test))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    bases = int(getattr(model, "k_", 0))
    print(json.dumps({"seconds": seconds, "accuracy": accuracy, "peak": peak, "bases": bases, "phases": phases}))


def run(method, m, seed, rank, pool):
    output = subprocess.run(
        [sys.executable, __file__, "--worker", method, str(m), str(seed), str(rank), pool],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000, 1_000_000])
    parser.add_argument("--rank", type=int, default=1000, help="factor_rank p")
    parser.add_argument("--pools", nargs="+", default=["rpcholesky"])
    parser.add_argument("--seeds", type=int, default=3, help="seeds of Nystroem(k) + LDA")
    parser.add_argument("--kernel", choices=["rbf", "linear"], default="rbf",
                        help="linear: the factored linear kernel beside LDA")
    parser.add_argument("--rank-sweep", type=int, nargs="+", metavar="P",
                        help="the factored fit at each of these factor ranks, beside the dense fit")
    parser.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        method, m, seed, rank, pool = args.worker
        worker(method, int(m), int(seed), int(rank), pool)
        return
    if args.kernel == "linear":
        print(f"k = {K}, linear kernel (p = 20 features), float32, 20,000 held out\n")
    else:
        print(f"k = {K}, factor_rank p = {args.rank}, float32, rbf gamma = 1/20, 20,000 held out\n")
    print("| m | method | fit (s) | × baseline's fit | peak RSS (GiB) | held-out accuracy |")
    print("|---|---|---|---|---|---|")
    for m in args.sizes:
        if args.kernel == "linear":
            fit = run("linear", m, 0, args.rank, "uniform")
            rows = [(f"GreedyKFDA factored, linear (k_ = {fit['bases']})", [fit]),
                    ("LinearDiscriminantAnalysis", [run("lda", m, 0, args.rank, "uniform")])]
            print_rows(m, rows)
            continue
        if args.rank_sweep:
            rows = [(f"GreedyKFDA factored ({args.pools[0]}, p = {rank})", [run("factored", m, 0, rank, args.pools[0])])
                    for rank in args.rank_sweep]
            if m <= 20_000:
                rows.append(("GreedyKFDA dense", [run("dense", m, 0, args.rank, "uniform")]))
            print_rows(m, rows)
            continue
        rows = []
        for pool in args.pools:
            rows.append((f"GreedyKFDA factored ({pool})", [run("factored", m, 0, args.rank, pool)]))
        if m <= 20_000:
            rows.append(("GreedyKFDA dense", [run("dense", m, 0, args.rank, "uniform")]))
        rows.append((f"Nystroem({K}) + LDA, {args.seeds} seeds",
                     [run("nystroem_k", m, seed, args.rank, "uniform") for seed in range(args.seeds)]))
        rows.append((f"Nystroem({2 * K}) + LDA", [run("nystroem_2k", m, 0, args.rank, "uniform")]))
        rows.append((f"Nystroem({args.rank}) + LDA", [run("nystroem_p", m, 0, args.rank, "uniform")]))
        print_rows(m, rows)
        for name, results in rows[: len(args.pools)]:
            phases = ", ".join(f"{phase} {seconds:.1f}" for phase, seconds in results[0]["phases"].items())
            print(f"\n{name} at m = {m:,}, its phases (s): {phases}")


def print_rows(m, rows):
    """A table row per ``(name, results)``: mean fit time, its ratio to the baseline's (the
    last row, measured in the same run: ``Nystroem(p)`` + LDA, LDA, or the dense fit), largest
    peak, mean accuracy (and its range over several results)."""
    def mean_seconds(results):
        return sum(r["seconds"] for r in results) / len(results)

    baseline = mean_seconds(rows[-1][1])
    for name, results in rows:
        accuracies = [r["accuracy"] for r in results]
        seconds = mean_seconds(results)
        peak = max(r["peak"] for r in results) / 2**30
        accuracy = f"{sum(accuracies) / len(accuracies):.4f}"
        if len(results) > 1:
            accuracy += f" ({min(accuracies):.4f}–{max(accuracies):.4f})"
        print(f"| {m:,} | {name} | {seconds:.1f} | {seconds / baseline:.2f} | {peak:.2f} | {accuracy} |",
              flush=True)


if __name__ == "__main__":
    main()
