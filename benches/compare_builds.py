"""Two builds of gkfda against each other: the kernel, selection and prediction paths, in
alternating processes (the two builds cannot share one process: both are ``gkfda._core``).

Build the other version's wheel and unpack it, then point ``--other`` at the unpacked directory::

    git worktree add /tmp/old 8035d2d
    (cd /tmp/old && pip wheel --no-deps -w /tmp/old_wheel .)
    mkdir /tmp/old_pkg && python -m zipfile -e /tmp/old_wheel/*.whl /tmp/old_pkg
    python benches/compare_builds.py --other /tmp/old_pkg

Each round runs one process per build, the order swapped every round; every figure in a process
is a median of repeated calls. Prints a Markdown table of medians over rounds and of the paired
ratios (other / installed, above 1 when the installed build is faster); exits non-zero if a
worker failed or both runs imported the same build.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

from timing import median_time  # the same medians as the other benches

MEASURES = [
    ("batch_2", "batch `decision_function`, 10⁶ rows, k = 100, 2 threads (s)", 1.0),
    ("batch_1", "the same, 1 thread (s)", 1.0),
    ("row_2", "single-row `decision_function`, 2 threads (µs)", 1e6),
    ("row_1", "single-row `decision_function`, 1 thread (µs)", 1e6),
    ("gram_float64", "Gram matrix, m = 4,000, d = 20, float64 (ms)", 1e3),
    ("gram_float32", "the same, float32 (ms)", 1e3),
    ("cross_float64", "cross kernel, 6,000 × 6,000, d = 20, float64 (ms)", 1e3),
    ("select", "`greedy_select`, m = 2,000, k = 100, hotelling, 2 threads (ms)", 1e3),
    ("select_schur", "the same, schur (ms)", 1e3),
    ("select_pseudo", "the same, pseudo criterion, ortho-schur (the paper's best method; ms)", 1e3),
    ("select_stages_2", "the same, hotelling, stages 2 (ms)", 1e3),
    ("select_small", "`greedy_select`, m = 100, k = 5, schur, 2 threads (µs)", 1e6),
    ("rows_200", "`decision_function`, 200 rows, 2 threads (µs)", 1e6),
    ("fit_400", "`GreedyKFDA(k=50).fit`, m = 400 (a benchmark data set's size), 2 threads (ms)", 1e3),
]


def worker() -> None:
    """One process: the figures of whichever gkfda it imports, as one JSON line."""
    import numpy as np

    import gkfda
    from gkfda import GreedyKFDA, _core

    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 20))
    y = (X[:, 0] + np.sin(X[:, 1]) + 0.3 * rng.normal(size=2000) > 0).astype(int)
    figures = {"module": gkfda.__file__}
    batch = rng.normal(size=(1_000_000, 20))
    for threads in (2, 1):
        model = GreedyKFDA(k=100, gamma=0.05, n_jobs=threads).fit(X, y)
        figures[f"batch_{threads}"] = median_time(lambda: model.decision_function(batch), 3)
        row = batch[:1].copy()
        figures[f"row_{threads}"] = median_time(lambda: model.decision_function(row), 2000)
    points = rng.normal(size=(4000, 20))
    for dtype in ("float64", "float32"):
        typed = points.astype(dtype)
        figures[f"gram_{dtype}"] = median_time(
            lambda: _core.kernel_matrix(typed, kernel="rbf", gamma=0.05, degree=3, coef0=1.0, n_threads=2), 9
        )
    left, right = rng.normal(size=(6000, 20)), rng.normal(size=(6000, 20))
    figures["cross_float64"] = median_time(
        lambda: _core.kernel_matrix(left, right, kernel="rbf", gamma=0.05, n_threads=2), 7
    )
    order = np.argsort(-y, kind="stable")  # the positive class first, as fit orders it
    gram = _core.kernel_matrix(X[order], kernel="rbf", gamma=0.05, n_threads=2)
    positive = y[order] == 1
    for key, options in (
        ("select", {"deflation": "hotelling"}),
        ("select_schur", {"deflation": "schur"}),
        ("select_pseudo", {"deflation": "ortho-schur", "criterion": "pseudo"}),
        ("select_stages_2", {"deflation": "hotelling", "stages": 2}),
    ):
        figures[key] = median_time(lambda: _core.greedy_select(gram, positive, 100, n_threads=2, **options), 9)
    small = np.argsort(-y[:100], kind="stable")
    small_gram = _core.kernel_matrix(X[:100][small], kernel="rbf", gamma=0.05, n_threads=2)
    figures["select_small"] = median_time(
        lambda: _core.greedy_select(small_gram, y[:100][small] == 1, 5, deflation="schur", n_threads=2), 501
    )
    rows, two_threads = batch[:200].copy(), GreedyKFDA(k=100, gamma=0.05, n_jobs=2).fit(X, y)
    figures["rows_200"] = median_time(lambda: two_threads.decision_function(rows), 501)
    small_model = GreedyKFDA(k=50, gamma=0.05, n_jobs=2)
    figures["fit_400"] = median_time(lambda: small_model.fit(X[:400], y[:400]), 51)
    print(json.dumps(figures))


def run(other: str | None) -> dict:
    env = dict(os.environ)
    if other is not None:
        env["PYTHONPATH"] = other + os.pathsep + env.get("PYTHONPATH", "")
    result = subprocess.run(
        [sys.executable, __file__, "--worker"], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Two gkfda builds, in alternating processes.")
    parser.add_argument("--other", help="directory holding the other build's gkfda package")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker()
        return 0
    if not args.other:
        parser.error("--other is required")
    others, installed = [], []
    try:
        for round_ in range(args.rounds):
            if round_ % 2 == 0:
                others.append(run(args.other))
                installed.append(run(None))
            else:
                installed.append(run(None))
                others.append(run(args.other))
    except subprocess.CalledProcessError as error:
        print(f"a worker failed:\n{error.stderr}", file=sys.stderr)
        return 1
    if others[0]["module"] == installed[0]["module"]:
        print(f"both runs imported {installed[0]['module']}: --other is not another build", file=sys.stderr)
        return 1
    print(f"other: `{others[0]['module']}`; installed: `{installed[0]['module']}`; "
          f"{args.rounds} rounds, order alternating\n")
    print("| measure | other build | installed build | other / installed (paired, median) | range |")
    print("|---|---|---|---|---|")
    for key, label, scale in MEASURES:
        other_values = [figures[key] for figures in others]
        installed_values = [figures[key] for figures in installed]
        ratios = [a / b for a, b in zip(other_values, installed_values)]
        print(f"| {label} | {statistics.median(other_values) * scale:.3g} | "
              f"{statistics.median(installed_values) * scale:.3g} | {statistics.median(ratios):.2f}× | "
              f"{min(ratios):.2f}–{max(ratios):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
