"""Prediction benchmarks, run by hand (not by the tests).

    python benches/bench_predict.py [--m 2000] [--k 100] [--rows 1000000]

* Single-row latency from Python: ``decision_function`` and ``predict_proba`` of one
  row against scikit-learn's ``SVC`` fitted on the same problem (medians of many calls,
  measured in this process).
* Batch prediction of ``--rows`` rows: rows per second, and the ratio to the floor of
  ``k × n_features`` multiply-adds per row, measured here as NumPy's (BLAS) product
  ``X @ SV'`` of the same shapes.

Prints Markdown tables; exits non-zero if a measurement failed.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from sklearn.calibration import CalibratedClassifierCV
from sklearn.svm import SVC

from gkfda import GreedyKFDA, simd_level
from timing import median_time


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Prediction benchmarks of gkfda (Markdown tables).")
    parser.add_argument("--m", type=int, default=2000)
    parser.add_argument("--d", type=int, default=20)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    print(f"Engine instruction set {simd_level()} (GKFDA_SIMD caps it).\n")

    rng = np.random.default_rng(0)
    X = rng.normal(size=(args.m, args.d))
    y = (X[:, 0] + np.sin(X[:, 1]) + 0.3 * rng.normal(size=args.m) > 0).astype(int)
    gamma = 1.0 / args.d
    model = GreedyKFDA(k=args.k, gamma=gamma, n_jobs=args.threads).fit(X, y)
    svc = SVC(gamma=gamma).fit(X, y)
    # Platt scaling of an SVC, which scikit-learn 1.9 moved from `SVC(probability=True)`
    # (deprecated) to this calibrator.
    svc_proba = CalibratedClassifierCV(SVC(gamma=gamma), method="sigmoid", ensemble=False).fit(X, y)
    row = X[:1].copy()

    print(f"### Single-row latency (m={args.m}, d={args.d}, gkfda k={args.k}, SVC with "
          f"{svc.n_support_.sum()} support vectors; medians of {args.calls} calls)\n")
    print("| method | gkfda (µs) | SVC (µs) | gkfda / SVC |")
    print("|---|---|---|---|")
    ok = True
    for method in ("decision_function", "predict", "predict_proba"):
        ours = median_time(lambda: getattr(model, method)(row), args.calls)
        baseline = svc_proba if method == "predict_proba" else svc
        theirs = median_time(lambda: getattr(baseline, method)(row), args.calls)
        print(f"| {method} | {ours * 1e6:.1f} | {theirs * 1e6:.1f} | {ours / theirs:.3f} |")
        if method == "decision_function":
            ok &= ours / theirs <= 0.2

    batch = rng.normal(size=(args.rows, args.d))
    basis = np.ascontiguousarray(model.support_vectors_)
    # gkfda's runs start once the floor's BLAS workers stopped spinning (benches/timing.py).
    ours = median_time(lambda: model.decision_function(batch), args.repeats, settle=True)
    floor = median_time(lambda: batch @ basis.T, args.repeats)
    single_thread = median_time(lambda: model.set_params(n_jobs=1).decision_function(batch), args.repeats,
                                settle=True)
    model.set_params(n_jobs=args.threads)
    madds = args.k * args.d
    print(f"\n### Batch prediction of {args.rows:,} rows (k={args.k}, d={args.d}: {madds} multiply-adds a row)\n")
    print("| what | seconds | rows/s | × floor |")
    print("|---|---|---|---|")
    print(f"| floor: NumPy `X @ SV'` ({args.threads} BLAS threads) | {floor:.3f} | {args.rows / floor:,.0f} | 1 |")
    print(f"| gkfda decision_function, {args.threads} threads | {ours:.3f} | {args.rows / ours:,.0f} | "
          f"{ours / floor:.2f} |")
    print(f"| gkfda decision_function, 1 thread | {single_thread:.3f} | {args.rows / single_thread:,.0f} | "
          f"{single_thread / floor:.2f} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
