"""The ``gkfda`` command line: ``gkfda demo``, ``gkfda experiment``, ``gkfda report``, ``gkfda bound``
and ``gkfda pursuit``.

``gkfda experiment`` writes into ``./gkfda-results`` unless ``--out`` says otherwise.

Examples
--------
>>> from gkfda.cli import synthetic_problem
>>> X, y = synthetic_problem(100, seed=0)
>>> X.shape, sorted(set(y.tolist()))
((100, 5), [-1, 1])
"""

from __future__ import annotations

import argparse
import os
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


def _experiment(args) -> int:
    import dataclasses

    from .datasets import list_benchmarks
    from .study import experiment, protocol

    if args.quick:
        quick = protocol.QUICK
        config = protocol.ExperimentConfig(
            datasets=args.datasets or quick["datasets"],
            variants=quick["variants"],
            protocol=quick["protocol"],
        )
    else:
        config = protocol.ExperimentConfig(
            datasets=args.datasets or list_benchmarks(),
            variants=protocol.variants(args.criteria, args.deflations, args.stages or [1]),
        )
    overrides = {
        name: value
        for name, value in (
            ("realisations", args.realisations),
            ("cv_realisations", args.cv_realisations),
            ("folds", args.folds),
        )
        if value is not None
    }
    config.protocol = dataclasses.replace(config.protocol, name=args.protocol, **overrides)
    if args.quick and (args.criteria or args.deflations or args.stages):
        config.variants = protocol.variants(args.criteria, args.deflations, args.stages or [1])
    if args.no_baselines:
        config.baselines = []
    elif args.baselines is not None:
        config.baselines = args.baselines
    elif args.quick:
        config.baselines = list(protocol.QUICK["baselines"])
    if args.no_variants:
        config.variants = []
    config.jobs = args.jobs
    client = None
    if args.backend == "dask":
        from dask.distributed import Client, LocalCluster

        client = Client(args.scheduler) if args.scheduler else Client(LocalCluster(n_workers=args.jobs, threads_per_worker=1))
        print(f"dask: {client.dashboard_link or client.scheduler.address}")
    elif args.backend == "ray":
        from ray.util.joblib import register_ray

        register_ray()
    config.backend = args.backend
    print(
        f"gkfda experiment: {len(config.datasets)} data sets × {len(config.variants)} variants"
        f"{' + ' + ', '.join(config.baselines) if config.baselines else ''}; "
        f"realisations: {config.protocol.realisations or 'all'}; CV on {config.protocol.cv_realisations} "
        f"training realisations × {config.protocol.folds} folds; protocol {config.protocol.name}; "
        f"{config.jobs} jobs → {args.out}"
    )
    try:
        summary = experiment.run_experiment(config, args.out, progress=not args.no_progress)
    finally:
        if client is not None:
            client.close()
    print()
    print(
        "Test error, mean ± s.d. over the realisations (a row per method: criterion/deflation/stages, "
        "then the full KFDA and the SVM; a column per data set), each cell the outcome of the whole "
        "protocol, tuning included:"
    )
    print()
    print(experiment.summary_table(args.out))
    print()
    print(
        f"{summary['tasks_run']} tasks run, {summary['tasks_skipped']} already done; "
        f"wall time {summary['wall_time_s']:.1f} s; results in {summary['out']}"
    )
    return 0


def _report(args) -> int:
    from .study import report

    return report.run(args)


def _bound(args) -> int:
    from .study import bound

    return bound.run(args)


def _pursuit(args) -> int:
    from .study import pursuit

    return pursuit.run(args)


def main(argv=None) -> int:
    from . import CRITERIA, DEFLATIONS

    from . import __version__

    parser = argparse.ArgumentParser(prog="gkfda", description="Sparse greedy Kernel Fisher Discriminant Analysis")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
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
    from .datasets import list_benchmarks
    from .study.protocol import PROTOCOLS, SELF_TUNED

    run = commands.add_parser(
        "experiment",
        help="the study of paper 000 §3.4 on the IDA benchmarks (resumable)",
        description="Width and sparsity by cross-validation, then every realisation; results are appended to "
        "OUT/results.csv task by task, so rerunning the same command resumes an interrupted run. OUT is "
        "./gkfda-results unless --out is given.",
    )
    run.add_argument("--datasets", nargs="+", choices=list_benchmarks(), help="default: all 13")
    run.add_argument("--criteria", nargs="+", choices=CRITERIA, help="default: all")
    run.add_argument("--deflations", nargs="+", choices=DEFLATIONS, help="default: all")
    run.add_argument("--stages", nargs="+", type=int, help="default: 1 (the paper's sweep is 1 2 5 10)")
    run.add_argument("--realisations", type=int, help="first N realisations of each data set (default: all)")
    run.add_argument("--cv-realisations", type=int, help="training realisations used by cross-validation (5)")
    run.add_argument("--folds", type=int, help="cross-validation folds (5)")
    run.add_argument("--baselines", nargs="*", choices=SELF_TUNED,
                     help="methods that tune their own width: the KFDA and SVM baselines and kFDA_q "
                          "(kfdaq1, kfdaq0.5); default: all (--quick: kfda svm)")
    run.add_argument("--no-baselines", action="store_true")
    run.add_argument("--no-variants", action="store_true", help="no greedy variant: the baselines only")
    run.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel tasks (joblib)")
    run.add_argument("--backend", choices=["loky", "threading", "dask", "ray"], default=None,
                     help="joblib backend; dask uses --scheduler or a local cluster")
    run.add_argument("--scheduler", help="address of a Dask scheduler, e.g. tcp://host:8786")
    run.add_argument("--out", default="gkfda-results",
                     help="results directory, created if needed (default: gkfda-results in the current directory)")
    run.add_argument("--quick", action="store_true",
                     help="6 smaller data sets, 7 variants and both baselines, 10 realisations, the full CV protocol (~2 min on 2 cores)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument(
        "--protocol", choices=PROTOCOLS, default="default",
        help="default: the width grid extended past a chosen end, the class priors of the training set; "
        "paper000: paper 000's width grid and equal class priors, for exact reproduction",
    )

    report = commands.add_parser("report", help="tables and figures from an experiment's results directory")
    from .study import report as report_module

    report_module.add_arguments(report)
    bound = commands.add_parser(
        "bound", help="paper 002's generalisation bound beside the test error (MPKFDA refits; a synthetic curve)",
        description="Refits the study's MPKFDA with its chosen width and k on the first realisations of each data "
        "set, and fits a synthetic problem of up to 10,000 points; writes bound.csv and bound_synthetic.csv "
        "into RESULTS_DIR, which `gkfda report` then shows.",
    )
    from .study import bound as bound_module

    bound_module.add_arguments(bound)
    pursuit = commands.add_parser(
        "pursuit", help="paper 004's experiments: sparse kernel PCA, kernel matching pursuit, sparse kernel CCA",
        description="The toy of paper 004's Fig. 3 (sparse kernel PCA's residual and bound), kernel matching "
        "pursuit's bound and test error on scikit-learn's diabetes data, and sparse kernel CCA against "
        "regularised KCCA on the digits halves; writes CSVs and summary.md into OUT.",
    )
    from .study import pursuit as pursuit_module

    pursuit_module.add_arguments(pursuit)
    args = parser.parse_args(argv)
    commands = {"demo": _demo, "experiment": _experiment, "report": _report, "bound": _bound, "pursuit": _pursuit}
    return commands[args.command](args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
