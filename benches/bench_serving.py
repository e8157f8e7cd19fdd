"""Serving benchmark: what a fitted model costs to predict, store and load, every way it ships.

    python benches/bench_serving.py [--m 4000] [--calls 5000] [--no-rust] [--cold-runs 7] [--batch 1000000]

For a binary and a 10-class ``GreedyKFDA`` (k = 50 and 200, d = 20, rbf) it measures, in this
one run on this machine:

* single-row and 1,000-row latency of ``predict_proba`` through Python, the Rust API and
  the C ABI (``examples/serving_latency.rs``, built here with ``cargo build --release``) and
  onnxruntime (``gkfda.to_onnx``), beside ``SVC(probability=True)`` and a
  ``Nystroem(n_components=k)`` + ``LogisticRegression`` pipeline fitted on the same data;
* the floor for one row: a plain loop in the Rust program computing the k squared
  distances, the k exponentials and the class score of the binary model;
* file sizes (lean and full model files, pickle) beside the bytes of the arrays prediction
  needs, and the time to load each;
* ``gkfda.Predictor`` (the Rust reader and model behind a NumPy interface) beside
  ``gkfda.load`` and its estimator: a fresh process's cold start (import, load the lean file,
  ``predict_proba`` of one row; the median of paired runs), one row's ``predict_proba``, and a
  batch of 10⁶ rows (both on one thread, and the Predictor on every CPU).

Latencies are medians of batches of calls (µs per call). The targets, as ratios measured in
the same run: the Rust API's single row at k = 50 (binary) ≤ 2× the floor; Python's
single-row ``predict_proba`` ≤ 1.3× its own ``decision_function`` and ≤ 0.05× that of
``SVC(probability=True)``; a lean file ≤ 1.2 × the arrays' bytes + 4 KiB; the Predictor's
cold start ≤ 0.3× that of ``gkfda.load``, its one row ≤ 0.35× ``GreedyKFDA.predict_proba``'s,
its 10⁶ rows on one thread no slower.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import make_classification
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from tabulate import tabulate

import gkfda

ROOT = Path(__file__).resolve().parent.parent
MODELS = [("binary", 2, 50), ("binary", 2, 200), ("10-class", 10, 50), ("10-class", 10, 200)]


def per_call(function, calls, batches=7):
    """Median over ``batches`` of the mean µs per call of ``calls`` calls."""
    function()
    times = []
    for _ in range(batches):
        start = time.perf_counter()
        for _ in range(calls):
            function()
        times.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(times)


def data(n_classes, m, seed=0):
    X, y = make_classification(
        n_samples=m + 1000, n_features=20, n_informative=12, n_classes=n_classes,
        n_clusters_per_class=2, random_state=seed,
    )
    X = StandardScaler().fit_transform(X)
    return X[:m], y[:m], np.ascontiguousarray(X[m:])


def rust_latencies(paths):
    """JSON lines of ``examples/serving_latency.rs``, one per model file, keyed by path."""
    build = subprocess.run(
        ["cargo", "build", "--release", "--quiet", "--example", "serving_latency"], cwd=ROOT,
        capture_output=True, text=True,
    )
    if build.returncode != 0:
        raise RuntimeError(f"cargo build of the serving_latency example failed:\n{build.stderr}")
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    run = subprocess.run(
        [str(target / "release" / "examples" / "serving_latency"), *map(str, paths)],
        capture_output=True, text=True, check=True,
    )
    lines = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    microseconds = {"rust_row_ns": "rust_row_us", "rust_batch_1000_ns": "rust_batch_us", "c_row_ns": "c_row_us",
                    "c_batch_1000_ns": "c_batch_us", "floor_row_ns": "floor_row_us", "load_ns": "rust_load_us"}
    return {line["model"]: {ours: line[theirs] / 1e3 for theirs, ours in microseconds.items()
                            if line.get(theirs) is not None} for line in lines}


def onnx_latencies(model, X_test, calls):
    import onnxruntime

    onnx_model = gkfda.to_onnx(model, X_test[:1])
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    runtime = onnxruntime.InferenceSession(onnx_model.SerializeToString(), options,
                                           providers=["CPUExecutionProvider"])
    name = runtime.get_inputs()[0].name
    row, batch = X_test[:1], X_test[:1000]
    return (per_call(lambda: runtime.run(None, {name: row}), calls),
            per_call(lambda: runtime.run(None, {name: batch}), max(calls // 100, 5)))


COLD_START = {
    "Predictor": "import gkfda, numpy as np\np = gkfda.Predictor.load({path!r})\n"
                 "p.predict_proba(np.zeros((1, p.n_features_in_)))",
    "gkfda.load": "import gkfda, numpy as np\nm = gkfda.load({path!r})\n"
                  "m.predict_proba(np.zeros((1, m.n_features_in_)))",
}


def cold_starts(path, runs):
    """Median wall seconds of a fresh Python process running each of ``COLD_START`` on
    ``path``, the two run in turns so that the machine's load falls on both alike."""
    times = {name: [] for name in COLD_START}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for _ in range(runs):
        for name, code in COLD_START.items():
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", code.format(path=str(path))], check=True, env=env)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def predictor_rows(fitted, calls, batch_rows, cold_runs, rust):
    """The Predictor's table and its targets, against ``gkfda.load``'s estimator measured now."""
    rows, checks = [], []
    for name, n_classes, k, model, X, y, X_test, lean, full in fitted:
        estimator = gkfda.load(lean)
        estimator.set_params(n_jobs=1)
        predictor = gkfda.Predictor.load(lean)
        predictor.n_threads = 1
        row = X_test[:1]
        np.testing.assert_allclose(predictor.predict_proba(X_test), estimator.predict_proba(X_test),
                                   rtol=1e-12, atol=1e-12)
        estimator_row = per_call(lambda: estimator.predict_proba(row), calls)
        predictor_row = per_call(lambda: predictor.predict_proba(row), calls)
        cold = cold_starts(lean, cold_runs)
        big = np.random.default_rng(0).normal(size=(batch_rows, X.shape[1]))
        estimator_batch = per_call(lambda: estimator.predict_proba(big), 1, batches=3) / 1e6
        predictor_batch = per_call(lambda: predictor.predict_proba(big), 1, batches=3) / 1e6
        predictor.n_threads = os.cpu_count() or 1
        predictor_batch_all = per_call(lambda: predictor.predict_proba(big), 1, batches=3) / 1e6
        rust_row = rust.get(str(lean), {}).get("rust_row_us")
        rows.append([
            name, k, f"{cold['gkfda.load']:.3f}", f"{cold['Predictor']:.3f}",
            f"{cold['Predictor'] / cold['gkfda.load']:.2f}",
            f"{estimator_row:.2f}", f"{predictor_row:.2f}", _fmt(rust_row),
            f"{predictor_row / estimator_row:.2f}",
            f"{estimator_batch:.2f}", f"{predictor_batch:.2f}", f"{predictor_batch_all:.2f}",
            f"{predictor_batch / estimator_batch:.2f}",
        ])
        checks.append((f"Predictor cold start / gkfda.load's, {name} k={k}", cold["Predictor"] / cold["gkfda.load"], 0.3))
        checks.append((f"Predictor one row / GreedyKFDA.predict_proba's, {name} k={k}",
                       predictor_row / estimator_row, 0.35))
        checks.append((f"Predictor {batch_rows:,} rows / GreedyKFDA.predict_proba's (one thread), {name} k={k}",
                       predictor_batch / estimator_batch, 1.0))
    return rows, checks


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--m", type=int, default=4000, help="training rows (default: 4000)")
    parser.add_argument("--calls", type=int, default=5000, help="single-row calls per batch (default: 5000)")
    parser.add_argument("--no-rust", action="store_true", help="skip the Rust and C measurements")
    parser.add_argument("--no-onnx", action="store_true", help="skip onnxruntime")
    parser.add_argument("--cold-runs", type=int, default=7, help="paired fresh processes for the cold start (default: 7)")
    parser.add_argument("--batch", type=int, default=1_000_000, help="rows of the large batch (default: 10^6)")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=FutureWarning)  # SVC(probability=True) is deprecated
    calls = args.calls
    directory = Path(tempfile.mkdtemp(prefix="gkfda-serving-"))
    latency_rows, size_rows, checks, fitted = [], [], [], []
    for name, n_classes, k in MODELS:
        X, y, X_test = data(n_classes, args.m)
        model = gkfda.GreedyKFDA(k=k, gamma=1.0 / 20, n_jobs=1).fit(X, y)
        lean, full = directory / f"{name}-{k}-lean.gkfda", directory / f"{name}-{k}-full.gkfda"
        gkfda.save(model, lean, lean=True)
        gkfda.save(model, full)
        fitted.append((name, n_classes, k, model, X, y, X_test, lean, full))

    rust = {}
    if not args.no_rust:
        rust = rust_latencies([entry[7] for entry in fitted])

    baselines = {}
    for name, n_classes, k, model, X, y, X_test, lean, full in fitted:
        row, batch = X_test[:1], X_test[:1000]
        decision_row = per_call(lambda: model.decision_function(row), calls)
        proba_row = per_call(lambda: model.predict_proba(row), calls)
        proba_batch = per_call(lambda: model.predict_proba(batch), max(calls // 100, 5))
        if n_classes not in baselines:
            svc = SVC(probability=True, gamma=1.0 / 20, random_state=0).fit(X, y)
            baselines[n_classes] = {
                "SVC(probability=True)": (
                    per_call(lambda: svc.predict_proba(row), max(calls // 10, 50)),
                    per_call(lambda: svc.predict_proba(batch), 5),
                ),
            }
        nystroem = make_pipeline(
            Nystroem(gamma=1.0 / 20, n_components=k, random_state=0), LogisticRegression(max_iter=1000)
        ).fit(X, y)
        nystroem_times = (per_call(lambda: nystroem.predict_proba(row), max(calls // 10, 50)),
                          per_call(lambda: nystroem.predict_proba(batch), 5))
        svc_row, svc_batch = baselines[n_classes]["SVC(probability=True)"]
        entry = rust.get(str(lean), {})
        onnx_row = onnx_batch = None
        if not args.no_onnx:
            onnx_row, onnx_batch = onnx_latencies(model, X_test, calls)
        latency_rows.append([
            name, k, f"{decision_row:.2f}", f"{proba_row:.2f}", f"{proba_batch:.0f}",
            _fmt(entry.get("rust_row_us")), _fmt(entry.get("rust_batch_us"), 0),
            _fmt(entry.get("c_row_us")), _fmt(entry.get("c_batch_us"), 0),
            _fmt(entry.get("floor_row_us")),
            _fmt(onnx_row), _fmt(onnx_batch, 0),
            f"{svc_row:.1f}", f"{svc_batch:.0f}", f"{nystroem_times[0]:.1f}", f"{nystroem_times[1]:.0f}",
        ])
        if name == "binary" and k == 50:
            checks.append(("Python predict_proba / decision_function, one row", proba_row / decision_row, 1.3))
            checks.append(("Python predict_proba / SVC(probability=True), one row", proba_row / svc_row, 0.05))
            if entry.get("floor_row_us"):
                checks.append(("Rust predict_proba / the floor loop, one row",
                               entry["rust_row_us"] / entry["floor_row_us"], 2.0))

        needed = model._union_points.nbytes + model._expansion_weights.nbytes + model._expansion_bias.nbytes
        pickled = pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL)
        pickle_path = directory / f"{name}-{k}.pkl"
        pickle_path.write_bytes(pickled)
        load_lean = per_call(lambda: gkfda.load(lean), 50, batches=5)
        load_full = per_call(lambda: gkfda.load(full), 50, batches=5)
        load_pickle = per_call(lambda: pickle.loads(pickle_path.read_bytes()), 50, batches=5)
        lean_bytes, full_bytes = os.path.getsize(lean), os.path.getsize(full)
        size_rows.append([
            name, k, needed, lean_bytes, f"{lean_bytes / (1.2 * needed + 4096):.2f}", full_bytes, len(pickled),
            f"{load_lean:.0f}", f"{load_full:.0f}", f"{load_pickle:.0f}", _fmt(entry.get("rust_load_us"), 0),
        ])
        checks.append((f"lean file / (1.2 × arrays + 4 KiB), {name} k={k}", lean_bytes / (1.2 * needed + 4096), 1.0))

    print(f"gkfda {gkfda.__version__}, engine {gkfda.simd_level()}, m = {args.m}, d = 20, rbf; "
          "µs per call (medians of batches), one thread everywhere.\n")
    print(tabulate(latency_rows, headers=[
        "model", "k", "Python decision 1 row", "Python proba 1 row", "Python proba 1000 rows",
        "Rust 1 row", "Rust 1000 rows", "C 1 row", "C 1000 rows", "floor 1 row",
        "onnxruntime 1 row", "onnxruntime 1000 rows",
        "SVC 1 row", "SVC 1000 rows", "Nystroem+LR 1 row", "Nystroem+LR 1000 rows",
    ], tablefmt="github"))
    print()
    print(tabulate(size_rows, headers=[
        "model", "k", "arrays prediction needs (bytes)", "lean file", "lean / (1.2×arrays + 4 KiB)",
        "full file", "pickle", "load lean (µs)", "load full (µs)", "unpickle (µs)", "Rust load lean (µs)",
    ], tablefmt="github"))
    print()
    serving, serving_checks = predictor_rows(fitted, calls, args.batch, args.cold_runs, rust)
    checks.extend(serving_checks)
    print(f"gkfda.Predictor beside gkfda.load and its estimator (lean files; cold start: median of "
          f"{args.cold_runs} paired fresh processes, s; one row: µs; {args.batch:,} rows: s).\n")
    print(tabulate(serving, headers=[
        "model", "k", "cold start gkfda.load", "cold start Predictor", "ratio",
        "GreedyKFDA 1 row", "Predictor 1 row", "Rust 1 row", "ratio",
        f"GreedyKFDA {args.batch:,} rows", f"Predictor {args.batch:,} rows", "Predictor, every CPU", "ratio (1 thread)",
    ], tablefmt="github"))
    print()
    print(tabulate([[what, f"{value:.3f}", f"≤ {target}", "met" if value <= target else "MISSED"]
                    for what, value, target in checks],
                   headers=["target", "measured", "goal", ""], tablefmt="github"))
    return 0


def _fmt(value, digits=2):
    return "—" if value is None else f"{value:.{digits}f}"


if __name__ == "__main__":
    sys.exit(main())
