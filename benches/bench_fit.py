"""Fit benchmarks of the greedy engine, run by hand (not by the tests).

    python benches/bench_fit.py                      # every section, the default sizes
    python benches/bench_fit.py --sections floor --m 2000 --k 100

Every figure is a median of ``--repeats`` runs and every comparison a ratio measured in
this process run. RBF kernel, 20 features, float64 unless said; the greedy phase is
timed apart from the kernel computation. Sections:

* ``floor``   — greedy time per deflation against ``k × T(gemv over K)`` (NumPy's ``K @ v``,
  the cost floor of one pick per stage: docs/architecture.md) and against ``gkfda.reference``;
* ``stages``  — stages 10 against stages 1;
* ``float32`` — float32 against float64, and whether the selections agree;
* ``memory``  — peak resident memory of a whole fit (in a fresh process) against bytes(K);
* ``kernel``  — the kernel computation against ``sklearn.metrics.pairwise.rbf_kernel``;
* ``precomputed`` — a ``kernel="precomputed"`` fit (m = 3,000, k = 150) against its input
  checks (``_core.kernel_checks``: finite, symmetric, the 2×2 minors of PSD) and the
  selection's set-up pass over the kernel (a selection of one pick);
* ``large``   — m = 30,000 in float32, k = 200, stages 10: kernel + fit, and the up-front
  refusal of a size that cannot fit in memory;
* ``path``    — the sparsity path (k = 10, 20, ..., 200) against the greedy fit;
* ``loop``    — whole ``GreedyKFDA.fit`` calls back to back, as in a cross-validation, at the
  benchmark data sets' size (m = 1,000, k = 100), against the greedy phase alone, with the
  models' BLAS on one thread (as shipped) and left multi-threaded; and a parallel
  ``GridSearchCV`` with the estimator's threads following joblib's limit or on every core;
* ``multiclass`` — one-vs-rest selections (schur, hotelling; stages 1) side by side, sharing
  each pass over ``K`` (``_core.greedy_select_many``), against the same selections one after
  the other (``_core.greedy_select``), for 3, 5 and 10 classes; and whole multiclass
  ``GreedyKFDA.fit`` calls against a subclass whose selections run one after the other;
* ``spin``    — what OpenBLAS's busy-waiting workers cost what gkfda runs next: the CPU they
  burn after a call while the caller sleeps, a ``GreedyKFDA.fit`` right after ``PCA.fit`` (as
  in a pipeline) and a batch ``decision_function`` right after ``A @ B``, each against a run
  started once they went idle. Run it again under ``OPENBLAS_THREAD_TIMEOUT=4`` (set before
  NumPy is imported) to see the remedy.

Prints Markdown tables; exits non-zero if a measurement failed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import textwrap
import time

import numpy as np

from gkfda import CRITERIA, DEFLATIONS, GreedyKFDA, _core, reference, simd_level
from timing import median_time, wait_for_idle_cores

SECTIONS = ("floor", "stages", "float32", "memory", "kernel", "precomputed", "large", "path", "loop", "multiclass", "spin")


CLASS_SORTED = True
# The selection criterion of the floor, stages and float32 sections (`--criterion`).
CRITERION = "optimal"


def paired_times(first, second, repeats, before_pair=None):
    """Times of ``first`` and ``second`` run one after the other ``repeats`` times, so that
    each pair sees the same state of a shared machine; the order alternates from pair to
    pair, so that neither side always runs on the caches and clock the other left.
    ``before_pair``, if given, runs just before each pair (a yardstick measured with it)."""
    firsts, seconds = [], []
    for pair in range(repeats):
        if before_pair is not None:
            before_pair()
        if pair % 2 == 0:
            firsts.append(median_time(first, 1, settle=True))
            seconds.append(median_time(second, 1, settle=True))
        else:
            seconds.append(median_time(second, 1, settle=True))
            firsts.append(median_time(first, 1, settle=True))
    return firsts, seconds


def problem(m, d, dtype, seed=0):
    """Training data ordered by class, as ``GreedyKFDA.fit`` orders it before building its
    kernel (the engine's passes then split each kernel row by class); ``--interleaved``
    keeps the classes mixed, as a precomputed kernel may come."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d)).astype(dtype)
    y = np.where(X[:, 0] + np.sin(X[:, 1]) + 0.3 * rng.normal(size=m) > 0, 1, -1)
    if CLASS_SORTED:
        order = np.argsort(-y, kind="stable")
        X, y = X[order], y[order]
    return X, y


def select(K, y, k, deflation, stages, threads, criterion=None):
    return _core.greedy_select(K, y > 0, k, criterion=criterion or CRITERION, deflation=deflation,
                               stages=stages, n_threads=threads)[0]


def gemv_time(K, repeats=30):
    v = np.random.default_rng(1).normal(size=K.shape[0]).astype(K.dtype)
    return median_time(lambda: K @ v, repeats)


def section_floor(args):
    X, y = problem(args.m, args.d, np.float64)
    K = _core.kernel_matrix(X, kernel="rbf", gamma=1.0 / args.d, n_threads=args.threads)
    print(f"### Greedy fit against the floor and the reference (m={args.m}, k={args.k}, stages 1, float64)\n")
    print("Each of the runs of a row is paired with its own floor k×T(gemv), measured just before it")
    print("(median of 15 `K @ v`); the ratio is the median of the paired ratios, so that drift of a")
    print("shared machine between runs does not enter it.\n")
    print("| deflation | T(gemv) (ms) | greedy (ms) | × floor | reference (s) | speed-up over reference | same selection |")
    print("|---|---|---|---|---|---|---|")
    ok = True
    for deflation in args.deflations:
        indices = {}
        gemvs, fits = [], []
        for _ in range(args.repeats):
            gemvs.append(gemv_time(K, repeats=15))
            # The gemv's BLAS workers spin on after it: wait for them, or they share the fit's cores.
            fits.append(median_time(
                lambda: indices.__setitem__("rust", select(K, y, args.k, deflation, 1, args.threads)), 1,
                settle=True))
        gemv, rust = statistics.median(gemvs), statistics.median(fits)
        ratio = statistics.median(fit / (args.k * g) for fit, g in zip(fits, gemvs))
        ref = "—"
        speedup = "—"
        same = "—"
        if not args.no_reference:
            ref_time = median_time(
                lambda: indices.__setitem__("ref", reference.select(K, y, args.k, CRITERION, deflation)),
                args.reference_repeats,
            )
            same = "yes" if np.array_equal(indices["rust"], indices["ref"]) else "NO"
            ok &= same == "yes"
            ref, speedup = f"{ref_time:.1f}", f"{ref_time / rust:.0f}×"
        print(f"| {deflation} | {gemv * 1e3:.2f} | {rust * 1e3:.0f} | {ratio:.2f} | {ref} | {speedup} | {same} |")
    return ok


def gemm_rate(repeats=5, n=1000):
    """Multiply-adds per second of NumPy's matrix product (BLAS ``dgemm``, ``n×n`` operands
    that stay in cache, BLAS threads as configured): the arithmetic rate this machine's cores
    reach at best, measured now, the yardstick of the stage section's floor."""
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(n, n)), rng.normal(size=(n, n))
    return n**3 / median_time(lambda: a @ b, repeats)


def products_per_pick(deflation):
    """Products with ``K`` per pick, the same at any number of stages: one per pick for the
    hotelling and projection families with the classes split (one multiply-add per kernel
    element gives ``K x`` and ``K D x``), two with them mixed (``[x, Dx]``), two for the schur
    family (``K x`` and ``K D u``; one with the ``pseudo`` and ``random`` criteria, which keep
    no ``d`` and so need no ``K D u``); none without deflation."""
    if deflation == "none":
        return 0
    if deflation.endswith("schur"):
        return 1 if CRITERION in ("pseudo", "random") else 2
    return 1 if CLASS_SORTED else 2


def section_stages(args):
    X, y = problem(args.m, args.d, np.float64)
    K = _core.kernel_matrix(X, kernel="rbf", gamma=1.0 / args.d, n_threads=args.threads)
    print(f"\n### Stages 10 against stages 1 (m={args.m}, k={args.k}, float64)\n")
    print(textwrap.fill(
        "Both fits make the same multiply-adds with K: m²k (2m²k for the schur family, or with "
        "the classes mixed). A stage-1 pass reads half of K for two of them per element, a "
        "stage-10 pass all of K for ten: the first is bound by memory, the second by arithmetic. "
        "The floor is those multiply-adds at the rate of NumPy's matrix product (1,000 × 1,000, "
        "in cache), measured before each pair of fits; 'stages 1 / floor' is the most the "
        "speed-up can be in those minutes, for a stage-10 fit at the arithmetic peak with no "
        "other work.", 100))
    print()
    print("| deflation | stages 1 (ms) | stages 10 (ms) | speed-up | floor (ms) | stages 1 / floor "
          "| stages 10 / floor |")
    print("|---|---|---|---|---|---|---|")
    for deflation in args.deflations:
        # Paired runs: the speed-up is the median of the paired ratios; each pair has the
        # arithmetic floor measured just before it.
        floors = []
        ones, tens = paired_times(
            lambda: select(K, y, args.k, deflation, 1, args.threads),
            lambda: select(K, y, args.k, deflation, 10, args.threads), args.repeats,
            before_pair=lambda: floors.append(
                products_per_pick(deflation) * args.m**2 * args.k / gemm_rate()))
        speedup = statistics.median(one / ten for one, ten in zip(ones, tens))
        if floors[0] > 0:
            floor = f"{statistics.median(floors) * 1e3:.0f}"
            over_floor = [f"{statistics.median(t / f for t, f in zip(times, floors)):.1f}"
                          for times in (ones, tens)]
        else:
            floor, over_floor = "—", ["—", "—"]
        print(f"| {deflation} | {statistics.median(ones) * 1e3:.0f} | {statistics.median(tens) * 1e3:.0f} | "
              f"{speedup:.1f}× | {floor} | {over_floor[0]} | {over_floor[1]} |")
    return True


def section_float32(args):
    X, y = problem(args.m, args.d, np.float64)
    K64 = _core.kernel_matrix(X, kernel="rbf", gamma=1.0 / args.d, n_threads=args.threads)
    K32 = _core.kernel_matrix(X.astype(np.float32), kernel="rbf", gamma=1.0 / args.d, n_threads=args.threads)
    print(f"\n### float32 against float64, greedy phase (m={args.m}, k={args.k}, stages 1)\n")
    print("| deflation | float64 (ms) | float32 (ms) | speed-up | selections agree (first differing pick) |")
    print("|---|---|---|---|---|")
    for deflation in args.deflations:
        picks = {}
        # Paired runs: the speed-up is the median of the paired ratios.
        times64, times32 = paired_times(
            lambda: picks.__setitem__(64, select(K64, y, args.k, deflation, 1, args.threads)),
            lambda: picks.__setitem__(32, select(K32, y, args.k, deflation, 1, args.threads)),
            args.repeats,
        )
        t64, t32 = statistics.median(times64), statistics.median(times32)
        speedup = statistics.median(a / b for a, b in zip(times64, times32))
        a, b = picks[64], picks[32]
        n = min(len(a), len(b))
        differ = np.flatnonzero(a[:n] != b[:n])
        agree = "all" if len(a) == len(b) and differ.size == 0 else f"no (pick {differ[0] + 1 if differ.size else n + 1})"
        print(f"| {deflation} | {t64 * 1e3:.0f} | {t32 * 1e3:.0f} | {speedup:.2f}× | {agree} |")
    return True


MEMORY_CHILD = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    from gkfda import GreedyKFDA
    m, d, k, dtype, threads = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
    rng = np.random.default_rng(0)
    X = rng.normal(size=(m, d)); y = (X[:, 0] > 0).astype(int)
    def status(field):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1]) * 1024
    GreedyKFDA(k=5, gamma=0.05).fit(X[:50], y[:50])  # warm imports and the extension
    # Reset the peak (VmHWM) so that it covers the fit only: an import-time peak would hide it.
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    baseline = status("VmRSS")
    start = time.perf_counter()
    GreedyKFDA(k=k, gamma=1.0 / d, dtype=dtype, n_jobs=threads).fit(X, y)
    seconds = time.perf_counter() - start
    peak = status("VmHWM")
    print(json.dumps({"baseline": baseline, "peak": peak, "seconds": seconds}))
""")


def fit_memory(m, d, k, dtype, threads):
    output = subprocess.run([sys.executable, "-c", MEMORY_CHILD, str(m), str(d), str(k), dtype, str(threads)],
                            capture_output=True, text=True, check=True)
    return json.loads(output.stdout.strip().splitlines()[-1])


def section_memory(args):
    print(f"\n### Peak resident memory of a whole fit (fresh process; m={args.m}, k={args.k})\n")
    print("| dtype | bytes(K) (MiB) | peak − baseline (MiB) | limit 1.15×K + 64 MiB | within |")
    print("|---|---|---|---|---|")
    ok = True
    for dtype in ("float64", "float32"):
        result = fit_memory(args.m, args.d, args.k, dtype, args.threads)
        kernel_bytes = args.m * args.m * np.dtype(dtype).itemsize
        used = result["peak"] - result["baseline"]
        limit = 1.15 * kernel_bytes + 64 * 2**20
        within = used <= limit
        ok &= within
        print(f"| {dtype} | {kernel_bytes / 2**20:.0f} | {used / 2**20:.0f} | {limit / 2**20:.0f} | "
              f"{'yes' if within else 'NO'} |")
    return ok


def section_kernel(args):
    from sklearn.metrics.pairwise import rbf_kernel

    print(f"\n### Kernel computation against scikit-learn's rbf_kernel (m={args.m}, d={args.d})\n")
    print("| dtype | gkfda (ms) | scikit-learn (ms) | speed-up | max abs difference |")
    print("|---|---|---|---|---|")
    for dtype in (np.float64, np.float32):
        X, _ = problem(args.m, args.d, dtype)
        gamma = 1.0 / args.d
        # Ours start with scikit-learn's BLAS workers idle; theirs run back to back, as BLAS likes.
        ours = median_time(lambda: _core.kernel_matrix(X, kernel="rbf", gamma=gamma, n_threads=args.threads),
                           args.repeats, settle=True)
        theirs = median_time(lambda: rbf_kernel(X, gamma=gamma), args.repeats)
        difference = float(np.max(np.abs(_core.kernel_matrix(X, kernel="rbf", gamma=gamma) - rbf_kernel(X, gamma=gamma))))
        print(f"| {np.dtype(dtype).name} | {ours * 1e3:.0f} | {theirs * 1e3:.0f} | {theirs / ours:.2f}× | "
              f"{difference:.1e} |")
    return True


def section_precomputed(args):
    m, k = 3000, 150
    X, y = problem(m, args.d, np.float64)
    K = _core.kernel_matrix(X, kernel="rbf", gamma=1.0 / args.d, n_threads=args.threads)
    model = GreedyKFDA(kernel="precomputed", k=k, n_jobs=args.threads)
    fit = median_time(lambda: model.fit(K, y), args.repeats, settle=True)
    checks = median_time(lambda: _core.kernel_checks(K, n_threads=args.threads), args.repeats)
    setup = median_time(lambda: select(K, y, 1, "projection", 1, args.threads), args.repeats)
    print(f"\n### A precomputed kernel's checks (m={m}, k={k}, {args.threads} threads)\n")
    print("| step | ms | share of the fit |")
    print("|---|---|---|")
    for name, seconds in (("whole fit", fit), ("the checks (one tiled pass, both triangles)", checks),
                          ("the selection's set-up pass and one pick", setup)):
        print(f"| {name} | {seconds * 1e3:.1f} | {seconds / fit:.1%} |")
    return True


def section_large(args):
    m = args.large_m
    print(f"\n### m = {m}, float32, k = 200, stages 10 (one run)\n")
    X, y = problem(m, args.d, np.float32)
    wait_for_idle_cores()  # no BLAS worker of an earlier section still spinning
    start = time.perf_counter()
    K = _core.kernel_matrix(X, kernel="rbf", gamma=1.0 / args.d, n_threads=args.threads)
    kernel_seconds = time.perf_counter() - start
    start = time.perf_counter()
    indices, stopped, passes = _core.greedy_select(K, y > 0, 200, deflation="schur", stages=10,
                                                   n_threads=args.threads)
    schur_seconds = time.perf_counter() - start
    start = time.perf_counter()
    _core.greedy_select(K, y > 0, 200, deflation="projection", stages=10, n_threads=args.threads)
    projection_seconds = time.perf_counter() - start
    del K
    start = time.perf_counter()
    model = GreedyKFDA(k=200, stages=10, deflation="projection", dtype="float32", gamma=1.0 / args.d,
                       n_jobs=args.threads).fit(X, y)
    estimator_seconds = time.perf_counter() - start
    print("| step | seconds |")
    print("|---|---|")
    print(f"| kernel ({m}² float32 = {m * m * 4 / 2**30:.2f} GiB) | {kernel_seconds:.1f} |")
    print(f"| greedy, schur ({passes} passes) | {schur_seconds:.1f} |")
    print(f"| greedy, projection | {projection_seconds:.1f} |")
    print(f"| whole `GreedyKFDA.fit` (kernel + projection greedy + model) | {estimator_seconds:.1f} |")
    print(f"\nThe whole fit chose k_ = {model.k_} bases.")
    huge = 2_000_000
    try:
        GreedyKFDA(k=10, dtype="float32").fit(np.zeros((huge, 2)), np.arange(huge) % 2)
        print("\nERROR: a 2,000,000-point fit was not refused")
        return False
    except MemoryError as error:
        print(f"\nA {huge:,}-point fit is refused up front: `{error}`")
    return kernel_seconds + max(schur_seconds, projection_seconds) < 60.0


def section_path(args):
    X, y = problem(args.m, args.d, np.float64)
    X_valid, y_valid = problem(1000, args.d, np.float64, seed=1)
    ks = list(range(10, args.k + 1, 10))
    model = GreedyKFDA(k=args.k, gamma=1.0 / args.d, n_jobs=args.threads)
    K = _core.kernel_matrix(X, kernel="rbf", gamma=1.0 / args.d, n_threads=args.threads)
    greedy = median_time(lambda: select(K, y, args.k, "schur", 1, args.threads, "optimal"), args.repeats,
                         settle=True)
    model.fit(X, y)
    path = median_time(lambda: model.error_path(X_valid, y_valid, ks), args.repeats, settle=True)
    truncations = median_time(lambda: [model.truncate(k) for k in ks], args.repeats, settle=True)
    print(f"\n### Sparsity path against the greedy fit (m={args.m}, k = 10..{args.k} by 10, schur)\n")
    print("| what | ms | fraction of the greedy fit |")
    print("|---|---|---|")
    print(f"| greedy fit | {greedy * 1e3:.0f} | 1 |")
    print(f"| error_path on 1,000 validation points, {len(ks)} values of k | {path * 1e3:.0f} | {path / greedy:.1%} |")
    print(f"| truncate() to each of the {len(ks)} values | {truncations * 1e3:.0f} | {truncations / greedy:.1%} |")
    return True


def section_loop(args):
    import gkfda._discriminant
    import gkfda.estimator

    m, k = 1000, 100
    shipped = gkfda._discriminant.one_blas_thread

    def blas_on_one_thread(flag):
        context = shipped if flag else contextlib.nullcontext
        gkfda._discriminant.one_blas_thread = gkfda.estimator.one_blas_thread = context

    print(f"\n### Fits back to back (m={m}, k={k}, d={args.d}, float64, {args.threads} threads)\n")
    print("Each figure is the median over pairs of the mean of 5 consecutive fits; `greedy alone` is")
    print("one `greedy_select` on the two-class problem's kernel (a 3-class fit makes one per class).")
    print("The models' BLAS on one thread is what ships; multi-threaded is shown for comparison.\n")
    print("| problem | greedy alone (ms) | fit, BLAS on one thread (ms) | fit, BLAS multi-threaded (ms) | "
          "multi-threaded / one thread |")
    print("|---|---|---|---|---|")
    X, y_binary = problem(m, args.d, np.float64)
    K = _core.kernel_matrix(X, kernel="rbf", gamma=1.0 / args.d, n_threads=args.threads)
    try:
        for deflation, classes in (("schur", 2), ("projection", 2), ("schur", 3)):
            y = y_binary if classes == 2 else np.digitize(X[:, 0] + np.sin(X[:, 1]), [-0.5, 0.5])
            model = GreedyKFDA(k=k, gamma=1.0 / args.d, deflation=deflation, n_jobs=args.threads)
            greedy = median_time(lambda: select(K, y_binary, k, deflation, 1, args.threads, "optimal"),
                                 args.repeats)

            def fits(flag):
                blas_on_one_thread(flag)
                for _ in range(5):
                    model.fit(X, y)

            one, many = paired_times(lambda: fits(True), lambda: fits(False), args.repeats)
            one, many = [t / 5 for t in one], [t / 5 for t in many]
            ratio = statistics.median(b / a for a, b in zip(one, many))
            name = f"{deflation}, {classes} classes"
            print(f"| {name} | {greedy * 1e3:.0f} | {statistics.median(one) * 1e3:.0f} | "
                  f"{statistics.median(many) * 1e3:.0f} | {ratio:.2f}× |")
    finally:
        blas_on_one_thread(True)

    # A parallel grid search: joblib's workers set OMP_NUM_THREADS to cores // n_jobs, which
    # n_jobs=None follows; n_jobs=<cores> starts a thread per core in every worker.
    from sklearn.model_selection import GridSearchCV

    X, y = problem(1500, args.d, np.float64)
    grid = {"gamma": [0.01, 0.03, 0.05, 0.1], "deflation": ["schur", "projection"]}

    def search(n_jobs):
        GridSearchCV(GreedyKFDA(k=100, n_jobs=n_jobs), grid, cv=5, n_jobs=args.threads).fit(X, y)

    search(None)  # starts joblib's worker processes
    following, every_core = paired_times(lambda: search(None), lambda: search(args.threads), args.repeats)
    ratio = statistics.median(b / a for a, b in zip(following, every_core))
    print(f"\n`GridSearchCV(GreedyKFDA(k=100), n_jobs={args.threads})`, 8 candidates × 5 folds, m = 1,500:\n")
    print("| estimator threads in each worker | seconds | ratio |")
    print("|---|---|---|")
    print(f"| `n_jobs=None`: OMP_NUM_THREADS, set by joblib | {statistics.median(following):.2f} | 1 |")
    print(f"| `n_jobs={args.threads}`: every core | {statistics.median(every_core):.2f} | {ratio:.2f}× |")
    return True


def sectors(m, d, classes, seed=0):
    """``classes`` classes by the angle of the first two features (blurred), ordered by class
    as ``GreedyKFDA.fit`` orders its training set."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    angle = np.arctan2(X[:, 1], X[:, 0]) + 0.3 * rng.normal(size=m)
    y = np.floor((angle + np.pi) / (2 * np.pi) * classes).astype(int) % classes
    order = np.argsort(y, kind="stable")
    return X[order], y[order]


class OneAfterTheOther(GreedyKFDA):
    """The one-vs-rest fit without shared passes: each selection alone."""

    def _select(self, K, problems, k, rng, threads, by_class):
        one = super()._select
        return [one(K, [problem], k, rng, threads, by_class)[0] for problem in problems]


def section_multiclass(args):
    print(f"\n### One-vs-rest selections side by side (m={args.m}, k={args.k}, stages 1, "
          f"{args.threads} threads; {args.repeats} pairs)\n")
    print("| deflation | classes | one after the other, s | side by side, s | speed-up (median of pairs) | same picks | passes over K: one after the other / side by side |")
    print("|---|---|---|---|---|---|---|")
    for deflation, classes in [(d, c) for d in ("schur", "hotelling") for c in (3, 5, 10)]:
        X, y = sectors(args.m, args.d, classes)
        K = _core.kernel_matrix(X, kernel="rbf", gamma=1.0 / args.d, n_threads=args.threads)
        positives = np.stack([y == c for c in range(classes)])
        options = dict(deflation=deflation, n_threads=args.threads)
        apart = lambda: [_core.greedy_select(K, p, args.k, **options) for p in positives]  # noqa: E731
        together = lambda: _core.greedy_select_many(K, positives, args.k, **options)  # noqa: E731
        firsts, seconds = paired_times(apart, together, args.repeats)
        ratios = [a / b for a, b in zip(firsts, seconds)]
        alone, shared = apart(), together()
        same = sum(np.array_equal(a[0], b[0]) for a, b in zip(alone, shared))
        # Each problem counts its own passes; side by side, one read of K serves them all.
        reads_apart = sum(a[2] for a in alone)
        reads_together = classes + max(b[2] - 1 for b in shared)  # the set-up passes are each their own
        print(f"| {deflation} | {classes} | {statistics.median(firsts):.2f} | {statistics.median(seconds):.2f} | "
              f"{statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f}) | {same}/{classes} | "
              f"{reads_apart} / {reads_together} |")
    classes = 5
    X, y = sectors(args.m, args.d, classes, seed=1)
    params = dict(k=args.k, gamma=1.0 / args.d, n_jobs=args.threads, multiclass="ovr")
    apart_model, shared_model = OneAfterTheOther(**params), GreedyKFDA(**params)
    firsts, seconds = paired_times(lambda: apart_model.fit(X, y), lambda: shared_model.fit(X, y), args.repeats)
    ratios = [a / b for a, b in zip(firsts, seconds)]
    same = all(np.array_equal(a, b) for a, b in zip(apart_model.support_, shared_model.support_))
    agree = np.mean(apart_model.predict(X) == shared_model.predict(X))
    print(f"\nWhole `GreedyKFDA(k={args.k}, multiclass=\"ovr\").fit`, {classes} classes, m={args.m}: "
          f"{statistics.median(firsts):.2f} s one after the other, {statistics.median(seconds):.2f} s side by side, "
          f"{statistics.median(ratios):.2f}× ({min(ratios):.2f}–{max(ratios):.2f}); same bases: {same}; "
          f"predictions agree on {agree:.1%} of the training set")
    return True


def section_spin(args):
    from sklearn.decomposition import PCA

    timeout = os.environ.get("OPENBLAS_THREAD_TIMEOUT", "not set (OpenBLAS's default)")
    print(f"\n### BLAS workers spinning into the next fit (OPENBLAS_THREAD_TIMEOUT {timeout})\n")
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(1000, 1000)), rng.normal(size=(1000, 1000))
    burned = []
    for _ in range(args.repeats):
        wait_for_idle_cores()
        a @ b
        start = time.process_time()
        time.sleep(0.3)
        burned.append(time.process_time() - start)
    print(f"CPU burned by this process in the 0.3 s after a 1,000 × 1,000 `A @ B`, while it sleeps: "
          f"{statistics.median(burned) * 1e3:.0f} ms (median of {args.repeats}).\n")

    m, k = 1000, 100
    X = rng.normal(size=(m, 2 * args.d))
    y = (X[:, 0] + np.sin(X[:, 1]) > 0).astype(int)
    pca = PCA(args.d)
    features = pca.fit_transform(X)
    model = GreedyKFDA(k=k, gamma=1.0 / args.d, n_jobs=args.threads).fit(features, y)
    batch = rng.normal(size=(100_000, args.d))

    def paired(before, run):
        """``run`` timed right after ``before`` and, in alternation, once the cores are idle."""
        at_once, idle = [], []
        for _ in range(4 * args.repeats):
            for times, settle in ((at_once, False), (idle, True)):
                before()
                if settle:
                    wait_for_idle_cores()
                start = time.perf_counter()
                run()
                times.append(time.perf_counter() - start)
        ratio = statistics.median(a / b for a, b in zip(at_once, idle))
        return statistics.median(at_once), statistics.median(idle), ratio

    print(f"m = {m}, d = {args.d}, k = {k}, {args.threads} threads; {4 * args.repeats} pairs, the "
          "run started at once or once this process's threads are idle:\n")
    print("| run | after | at once (ms) | idle (ms) | at once / idle |")
    print("|---|---|---|---|---|")
    # PCA.fit: LAPACK/BLAS on NumPy's threads, the step before the model in a pipeline.
    for label, after, before, run in (
            ("`GreedyKFDA.fit`", f"`PCA({args.d}).fit`", lambda: pca.fit(X), lambda: model.fit(features, y)),
            ("`decision_function`, 100,000 rows", "`A @ B`", lambda: a @ b,
             lambda: model.decision_function(batch))):
        at_once, idle, ratio = paired(before, run)
        print(f"| {label} | {after} | {at_once * 1e3:.1f} | {idle * 1e3:.1f} | {ratio:.2f}× |")
    return True


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Fit benchmarks of gkfda (Markdown tables).")
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--m", type=int, default=4000)
    parser.add_argument("--d", type=int, default=20)
    parser.add_argument("--k", type=int, default=200)
    parser.add_argument("--large-m", type=int, default=30000)
    parser.add_argument("--deflations", nargs="+", default=list(DEFLATIONS))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--reference-repeats", type=int, default=1)
    parser.add_argument("--no-reference", action="store_true")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--criterion", choices=CRITERIA, default="optimal",
                        help="the criterion of the floor, stages and float32 sections")
    parser.add_argument("--interleaved", action="store_true",
                        help="keep the classes mixed in the kernel's order (no split passes)")
    args = parser.parse_args(argv)
    global CLASS_SORTED, CRITERION
    CLASS_SORTED = not args.interleaved
    CRITERION = args.criterion
    print(f"Kernel rows in {'interleaved' if args.interleaved else 'class'} order; criterion {CRITERION}; "
          f"engine instruction set {simd_level()} (GKFDA_SIMD caps it).\n")
    ok = True
    for name in args.sections:
        try:
            ok &= bool(globals()[f"section_{name}"](args))
        except Exception as error:  # a section that cannot measure fails the run
            print(f"\nERROR in section {name}: {error!r}")
            ok = False
        sys.stdout.flush()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
