"""The ``gkfda`` command line."""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np


def synthetic_problem(n_samples: int, seed: int):
    """Two interleaved noisy moons in 2-D plus 3 noise features: a seeded, non-linear task."""
    from sklearn.datasets import make_moons

    X, y = make_moons(n_samples=n_samples, noise=0.3, random_state=seed)
    rng = np.random.default_rng(seed)
    X = np.hstack([X, 0.5 * rng.normal(size=(n_samples, 3))])
    return X, np.where(y == 1, 1, -1)


def _demo(args) -> int:
    from sklearn.metrics.pairwise import rbf_kernel
    from sklearn.svm import SVC

    from . import GreedyKFDA, reference

    X, y = synthetic_problem(2 * args.n, args.seed)
    X_train, y_train, X_test, y_test = X[: args.n], y[: args.n], X[args.n :], y[args.n :]
    gamma = args.gamma
    print(f"gkfda demo: {args.n} training / {args.n} test points, 5 features, RBF gamma={gamma}, k={args.k}")
    print()
    print("| criterion | deflation | k_ | test error | fit time (s) | reference fit time (s) | speed-up |")
    print("|---|---|---|---|---|---|---|")
    for deflation in args.deflations:
        model = GreedyKFDA(k=args.k, criterion=args.criterion, deflation=deflation, gamma=gamma)
        start = time.perf_counter()
        model.fit(X_train, y_train)
        fit_time = time.perf_counter() - start
        error = 1.0 - model.score(X_test, y_test)
        reference_cell, speedup_cell = "—", "—"
        if deflation in args.reference:
            start = time.perf_counter()
            K = rbf_kernel(X_train, gamma=gamma)
            indices = reference.select(K, y_train, args.k, args.criterion, deflation)
            reference.fit_model(K, y_train, indices, reg=model.reg)
            reference_time = time.perf_counter() - start
            if not np.array_equal(indices, model.support_):
                print(f"error: the Rust and reference selections differ for {deflation}", file=sys.stderr)
                return 1
            reference_cell, speedup_cell = f"{reference_time:.2f}", f"{reference_time / fit_time:.0f}×"
        print(
            f"| {args.criterion} | {deflation} | {model.k_} | {error:.3f} | {fit_time:.3f} | "
            f"{reference_cell} | {speedup_cell} |"
        )
    svc = SVC(gamma=gamma).fit(X_train, y_train)
    print()
    print(
        f"SVC (C=1) on the same split: test error {1.0 - svc.score(X_test, y_test):.3f} "
        f"with {svc.n_support_.sum()} support vectors"
    )
    return 0


def main(argv=None) -> int:
    from . import CRITERIA, DEFLATIONS

    parser = argparse.ArgumentParser(prog="gkfda", description="Sparse greedy Kernel Fisher Discriminant Analysis")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="fit every deflation on a built-in synthetic problem and compare")
    demo.add_argument("--n", type=int, default=2000, help="training points (and as many test points)")
    demo.add_argument("--k", type=int, default=100, help="bases to choose")
    demo.add_argument("--gamma", type=float, default=1.0)
    demo.add_argument("--criterion", choices=CRITERIA, default="optimal")
    demo.add_argument("--deflations", nargs="+", choices=DEFLATIONS, default=list(DEFLATIONS))
    demo.add_argument(
        "--reference", nargs="*", choices=DEFLATIONS, default=["projection", "schur"],
        help="deflations also timed with the NumPy reference (its selection must match)",
    )
    demo.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    return {"demo": _demo}[args.command](args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
