"""The ``gkfda`` command line: ``gkfda demo``, ``gkfda experiment``, ``gkfda report``, ``gkfda bound``,
``gkfda pursuit`` and ``gkfda predict``.

``gkfda experiment`` writes into ``./gkfda-results`` and ``gkfda pursuit`` into
``./gkfda-pursuit`` unless ``--out`` says otherwise; ``gkfda report RESULTS_DIR`` and
``gkfda bound RESULTS_DIR`` read an experiment's results directory. The
parsers import nothing heavy (NumPy, scikit-learn and the core load only when a command
runs), so ``gkfda --help`` costs no more than importing the ``gkfda`` package; bad option
values get argparse's one-line error naming the option, and a corrupted results file one
line ``gkfda: error: <file>: <what>`` (exit status 2).

Examples
--------
>>> from gkfda.cli import synthetic_problem
>>> X, y = synthetic_problem(100, seed=0)
>>> X.shape, sorted(set(y.tolist()))
((100, 5), [-1, 1])
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

from ._core import CRITERIA, DEFLATIONS
from .study import StudyInputError
from .study.arguments import add_report_arguments, output_directory

# Copies of the study's names the parsers offer, so that building them imports neither NumPy
# nor the study's modules (tests/test_cli.py checks them against the originals).
BENCHMARKS = ("banana", "breast_cancer", "diabetis", "flare_solar", "german", "heart", "image", "ringnorm",
              "splice", "thyroid", "titanic", "twonorm", "waveform")
PROTOCOLS = ("default", "paper000")
SELF_TUNED = ("kfda", "svm", "kfdaq1", "kfdaq0.5")
BOUND_SIZES = (1_000, 2_000, 5_000, 10_000)


#: The largest count an option takes: the estimators bound theirs by int64.
LARGEST_COUNT = 2**63 - 1
#: ``gkfda demo --n``'s least: each half of the problem needs points of both classes.
DEMO_LEAST_POINTS = 10


class CommandError(Exception):
    """What stops a command (an unusable environment or input): one line
    ``gkfda: error: <message>`` on stderr and exit ``status`` (1 at run time, 2 for usage)."""

    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status


def _integer(text: str, low: int, what: str, high: int = LARGEST_COUNT) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer in [1, 2**63 - 1] (argparse ``type``)."""
    return _integer(text, 1, "an integer in [1, 2**63 - 1]")


def demo_points(text: str) -> int:
    """``gkfda demo --n``: an integer of at least ``DEMO_LEAST_POINTS`` (argparse ``type``)."""
    return _integer(text, DEMO_LEAST_POINTS, f"an integer in [{DEMO_LEAST_POINTS}, 2**63 - 1]")


def fold_count(text: str) -> int:
    """A number of cross-validation folds: at least 2 (argparse ``type``)."""
    return _integer(text, 2, "an integer in [2, 2**63 - 1]")


def random_seed(text: str) -> int:
    """A random seed: an integer in [0, 2**32 - 1], as scikit-learn takes it (argparse ``type``)."""
    value = _integer(text, 0, "an integer in [0, 2**32 - 1]")
    if value >= 2**32:
        raise argparse.ArgumentTypeError(f"must be an integer in [0, 2**32 - 1], got {text!r}")
    return value


def _real(text: str, accept, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not accept(value):
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """A finite number above 0 (argparse ``type``)."""
    return _real(text, lambda v: math.isfinite(v) and v > 0, "a finite number above 0")


def probability(text: str) -> float:
    """A number strictly between 0 and 1 (argparse ``type``)."""
    return _real(text, lambda v: 0 < v < 1, "a number in (0, 1)")


class _HelpFormatter(argparse.HelpFormatter):
    """Appends each option's default to its help, unless the help already says it or there is
    none to say (a flag, or ``None`` whose meaning the help gives)."""

    def _get_help_string(self, action):
        help = action.help or ""
        default = action.default
        if "(default" in help or default is None or default is False or default == argparse.SUPPRESS \
                or not action.option_strings:
            return help
        shown = " ".join(map(str, default)) if isinstance(default, (list, tuple)) else "%(default)s"
        return f"{help} (default: {shown})"


def synthetic_problem(n_samples: int, seed: int):
    """Two interleaved noisy moons in 2-D plus 3 noise features: a seeded, non-linear task."""
    import numpy as np
    from sklearn.datasets import make_moons

    X, y = make_moons(n_samples=n_samples, noise=0.3, random_state=seed)
    rng = np.random.default_rng(seed)
    X = np.hstack([X, 0.5 * rng.normal(size=(n_samples, 3))])
    return X, np.where(y == 1, 1, -1)


def _demo(args) -> int:
    import numpy as np
    from sklearn.metrics.pairwise import rbf_kernel
    from sklearn.svm import SVC
    from tqdm.auto import tqdm

    from . import GreedyKFDA, reference

    X, y = synthetic_problem(2 * args.n, args.seed)
    X_train, y_train, X_test, y_test = X[: args.n], y[: args.n], X[args.n :], y[args.n :]
    gamma = args.gamma
    steps = len(args.deflations) + len(set(args.reference) & set(args.deflations)) + 1
    bar = tqdm(total=steps, desc="gkfda demo", unit="fit", file=sys.stderr, disable=args.no_progress)

    def say(line: str = "") -> None:
        bar.write(line, file=sys.stdout)
        sys.stdout.flush()  # rows as they come, also into a pipe

    def step(name: str) -> None:
        bar.set_postfix_str(name, refresh=True)

    with bar:
        say(f"gkfda demo: {args.n} training / {args.n} test points, 5 features, RBF gamma={gamma}, k={args.k}")
        say()
        say("| criterion | deflation | k_ | test error | fit time (s) | reference fit time (s) | speed-up |")
        say("|---|---|---|---|---|---|---|")
        for deflation in args.deflations:
            step(deflation)
            model = GreedyKFDA(k=args.k, criterion=args.criterion, deflation=deflation, gamma=gamma)
            start = time.perf_counter()
            model.fit(X_train, y_train)
            fit_time = time.perf_counter() - start
            bar.update()
            error = 1.0 - model.score(X_test, y_test)
            reference_cell, speedup_cell = "—", "—"
            if deflation in args.reference:
                step(f"{deflation}, NumPy reference")
                start = time.perf_counter()
                K = rbf_kernel(X_train, gamma=gamma)
                indices = reference.select(K, y_train, args.k, args.criterion, deflation)
                reference.fit_model(K, y_train, indices, reg=model.reg)
                reference_time = time.perf_counter() - start
                bar.update()
                if not np.array_equal(indices, model.support_):
                    print(f"error: the Rust and reference selections differ for {deflation}", file=sys.stderr)
                    return 1
                reference_cell, speedup_cell = f"{reference_time:.2f}", f"{reference_time / fit_time:.0f}×"
            say(
                f"| {args.criterion} | {deflation} | {model.k_} | {error:.3f} | {fit_time:.3f} | "
                f"{reference_cell} | {speedup_cell} |"
            )
        step("SVC")
        svc = SVC(gamma=gamma).fit(X_train, y_train)
        bar.update()
        say()
        say(
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
        Client, LocalCluster = _optional("dask.distributed", "dask", ("Client", "LocalCluster"),
                                         install='pip install ".[dask]" in a clone of gkfda')
        if args.scheduler:
            try:
                client = Client(args.scheduler)
            except (OSError, ValueError) as error:  # unreachable (a timeout), or not an address
                raise CommandError(f"--scheduler: no Dask scheduler answers at {args.scheduler} ({error})") from None
        else:
            client = Client(LocalCluster(n_workers=args.jobs, threads_per_worker=1))
        print(f"dask: {client.dashboard_link or client.scheduler.address}")
    elif args.backend == "ray":
        (register_ray,) = _optional("ray.util.joblib", "ray", ("register_ray",))
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
        f"{summary['tasks_run']} of {summary['tasks_total']} tasks run, {summary['tasks_skipped']} already "
        f"complete; wall time {summary['wall_time_s']:.1f} s; results in {summary['out']}"
    )
    return 0


def _optional(module: str, package: str, names, install: str = ""):
    """``names`` of an optional dependency's ``module``; its absence is a one-line error saying
    how to ``install`` it (default: ``pip install <package>``)."""
    import importlib

    try:
        imported = importlib.import_module(module)
    except ImportError:
        raise CommandError(f"--backend {package}: needs the {package} package, which is not installed "
                           f"({install or 'pip install ' + package})") from None
    return tuple(getattr(imported, name) for name in names)


def _report(args) -> int:
    from .study import report

    return report.run(args)


def _bound(args) -> int:
    from .study import bound

    return bound.run(args)


def _pursuit(args) -> int:
    from .study import pursuit

    return pursuit.run(args)


def _parser() -> argparse.ArgumentParser:
    from . import __version__

    formatter = _HelpFormatter
    parser = argparse.ArgumentParser(prog="gkfda", description="Sparse greedy Kernel Fisher Discriminant Analysis",
                                     formatter_class=formatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser(
        "demo", help="fit every deflation on a built-in synthetic problem and compare", formatter_class=formatter,
        description="Fits each deflation on two noisy moons plus 3 noise features and prints a Markdown table "
        "of test errors and fit times; the deflations in --reference are also run by the NumPy reference, "
        "whose selection must be the same. A progress bar goes to stderr.",
    )
    demo.add_argument("--n", type=demo_points, default=2000, help="training points (and as many test points)")
    demo.add_argument("--k", type=positive_int, default=100, help="bases to choose")
    demo.add_argument("--gamma", type=positive_float, default=1.0, help="RBF kernel width parameter")
    demo.add_argument("--criterion", choices=CRITERIA, default="optimal", metavar="NAME",
                      help=f"selection criterion: {', '.join(CRITERIA)}")
    demo.add_argument("--deflations", nargs="+", choices=DEFLATIONS, default=list(DEFLATIONS), metavar="NAME",
                      help=f"deflations to fit, of {', '.join(DEFLATIONS)}")
    demo.add_argument(
        "--reference", nargs="*", choices=DEFLATIONS, default=["projection", "schur"], metavar="NAME",
        help="deflations also timed with the NumPy reference (its selection must match)",
    )
    demo.add_argument("--seed", type=random_seed, default=0, help="seed of the synthetic problem")
    demo.add_argument("--no-progress", action="store_true", help="no progress bar")

    run = commands.add_parser(
        "experiment", formatter_class=formatter,
        help="the study of Diethe (2015, §3.4) on the IDA benchmarks (resumable)",
        description="Width and sparsity by cross-validation, then every realisation; results are appended to "
        "OUT/results.csv task by task, so rerunning the same command resumes an interrupted run. OUT is "
        "./gkfda-results unless --out is given.",
    )
    run.add_argument("--datasets", nargs="+", choices=BENCHMARKS, metavar="NAME",
                     help=f"data sets, of {', '.join(BENCHMARKS)} (default: all 13)")
    run.add_argument("--criteria", nargs="+", choices=CRITERIA, metavar="NAME",
                     help=f"selection criteria, of {', '.join(CRITERIA)} (default: all)")
    run.add_argument("--deflations", nargs="+", choices=DEFLATIONS, metavar="NAME",
                     help=f"deflations, of {', '.join(DEFLATIONS)} (default: all)")
    run.add_argument("--stages", nargs="+", type=positive_int, metavar="N",
                     help="picks per stage (default: 1; Diethe (2015) sweeps 1 2 5 10)")
    run.add_argument("--realisations", type=positive_int, metavar="N",
                     help="first N realisations of each data set (default: all; --quick: 10)")
    run.add_argument("--cv-realisations", type=positive_int, metavar="N",
                     help="training realisations used by cross-validation (default: 5)")
    run.add_argument("--folds", type=fold_count, metavar="N", help="cross-validation folds (default: 5)")
    run.add_argument("--baselines", nargs="*", choices=SELF_TUNED, metavar="NAME",
                     help="methods that tune their own width, of kfda, svm (the KFDA and SVM baselines), "
                          "kfdaq1, kfdaq0.5 (kFDA_q) (default: all; --quick: kfda svm)")
    run.add_argument("--no-baselines", action="store_true", help="no baseline: the greedy variants only")
    run.add_argument("--no-variants", action="store_true", help="no greedy variant: the baselines only")
    run.add_argument("--jobs", type=positive_int, default=os.cpu_count() or 1, metavar="N",
                     help="parallel tasks, run by joblib (default: the number of CPUs)")
    run.add_argument("--backend", choices=["loky", "threading", "dask", "ray"], default=None,
                     help="joblib backend; dask uses --scheduler or a local cluster (default: loky)")
    run.add_argument("--scheduler", metavar="ADDRESS", help="address of a Dask scheduler, e.g. tcp://host:8786 (default: a local "
                                         "cluster of --jobs workers)")
    run.add_argument("--out", type=output_directory, default="gkfda-results", metavar="DIR",
                     help="results directory, created if needed (default: gkfda-results in the current directory)")
    run.add_argument("--quick", action="store_true",
                     help="6 smaller data sets, 7 variants and both baselines, 10 realisations, the full CV "
                          "protocol: a few minutes on 2 cores (see docs/RESULTS.md)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument(
        "--protocol", choices=PROTOCOLS, default="default",
        help="`default` extends the width grid past a chosen end and uses the class priors of the training set; "
        "`paper000` uses the width grid of Diethe (2015) and equal class priors, for exact reproduction",
    )

    add_report_arguments(commands.add_parser(
        "report", help="tables and figures from an experiment's results directory", formatter_class=formatter,
        description="Tables (Markdown and CSV) and figures from the results directory of `gkfda experiment`.",
    ))

    bound = commands.add_parser(
        "bound", formatter_class=formatter,
        help="the generalisation bound of Diethe et al. (2009) beside the test error "
             "(MPKFDA refits; a synthetic curve)",
        description="Refits the study's MPKFDA with its chosen width and k on the first realisations of each data "
        "set, and fits a synthetic problem of up to 10,000 points; writes bound.csv and bound_synthetic.csv "
        "into RESULTS_DIR, which `gkfda report` then shows.",
    )
    bound.add_argument("results_dir", type=output_directory, metavar="RESULTS_DIR",
                       help="results directory of `gkfda experiment` (its results.csv)")
    bound.add_argument("--datasets", nargs="+", metavar="NAME", help="data sets (default: every data set with MPKFDA rows)")
    bound.add_argument("--realisations", type=positive_int, default=3, metavar="N", help="first N realisations of each")
    bound.add_argument("--delta", type=probability, default=0.05, help="the bound fails with probability delta")
    bound.add_argument("--sizes", nargs="+", type=positive_int, default=list(BOUND_SIZES), metavar="M",
                       help="training-set sizes of the synthetic fits (the largest holds an m×m kernel)")
    bound.add_argument("--no-synthetic", action="store_true", help="only the benchmarks")

    pursuit = commands.add_parser(
        "pursuit", formatter_class=formatter,
        help="the experiments of Hussain et al. (2011): sparse kernel PCA, kernel matching pursuit, sparse kernel CCA",
        description="The toy of Hussain et al. (2011), Fig. 3 (sparse kernel PCA's residual and bound), kernel "
        "matching pursuit's bound and test error on scikit-learn's diabetes data, and sparse kernel CCA against "
        "regularised KCCA on the digits halves; writes CSVs and summary.md into the --out directory "
        "(./gkfda-pursuit unless given).",
    )
    pursuit.add_argument("--out", type=output_directory, default="gkfda-pursuit", metavar="DIR",
                         help="directory for the CSVs and summary.md, created if needed "
                              "(default: gkfda-pursuit in the current directory)")
    pursuit.add_argument("--quick", action="store_true", help="fewer bases and a smaller CCA set (seconds)")

    predict = commands.add_parser(
        "predict", formatter_class=formatter,
        help="score a file of rows with a saved model (CSV, .npy or Parquet), in constant memory",
        description="Reads MODEL (a file of gkfda.save) with gkfda.Predictor and scores the rows of INPUT "
        "(CSV, optionally with a header of feature names, checked against the model's; .npy; Parquet "
        "with pyarrow; - for CSV on standard input) in chunks. Writes OUT (CSV, or an array if it ends "
        "in .npy; - for CSV on standard output): a label column then proba_<class> per class, or with "
        "--decision the decision values. A bad row ends it with one line naming its line and column; "
        "the throughput goes to stderr.",
    )
    predict.add_argument("model", metavar="MODEL", help="model file written by gkfda.save")
    predict.add_argument("input", metavar="INPUT", help="rows to score: .csv, .npy, .parquet, or - (CSV on stdin)")
    predict.add_argument("-o", "--output", default="-", metavar="OUT",
                         help="where the scores go: CSV, or .npy for an array (default: - , CSV on stdout)")
    predict.add_argument("--decision", action="store_true",
                         help="decision values instead of probabilities (classifiers)")
    predict.add_argument("--chunk-rows", type=positive_int, default=65_536, metavar="N",
                         help="rows scored at a time (default: 65536)")
    predict.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def _predict(args) -> int:
    from ._scoring import run

    run(args.model, args.input, args.output, decision=args.decision, chunk_rows=args.chunk_rows,
        progress=not args.no_progress)
    return 0


def main(argv=None) -> int:
    """Run ``gkfda`` with the arguments ``argv`` (default: the command line); returns the exit status.

    A corrupted or unusable results file, or a file that cannot be written, ends the command with
    one line ``gkfda: error: <file>: <what>`` on stderr and status 2; a missing optional package,
    an unreachable scheduler or an input an estimator refuses (its ``ValueError``, ``TypeError`` or
    ``MemoryError`` names the argument) one line ``gkfda: error: <what>`` and status 1; Ctrl-C
    ``gkfda: interrupted`` and status 130. No traceback.
    """
    parser = _parser()
    args = parser.parse_args(argv)
    commands = {"demo": _demo, "experiment": _experiment, "report": _report, "bound": _bound, "pursuit": _pursuit,
                "predict": _predict}
    status = 2
    try:
        return commands[args.command](args)
    except StudyInputError as error:
        message = str(error)
    except CommandError as error:
        message, status = str(error), error.status
    except OSError as error:
        if error.filename is None:
            message, status = str(error) or type(error).__name__, 1
        else:
            message = f"{error.filename}: {error.strerror or error}"
    except (ValueError, TypeError, MemoryError) as error:
        message, status = str(error).splitlines()[0] if str(error) else type(error).__name__, 1
    except KeyboardInterrupt:
        print("gkfda: interrupted", file=sys.stderr)
        return 130
    print(f"gkfda: error: {message}", file=sys.stderr)
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
