"""The generalisation bound of Diethe et al. (2009, §4) beside the test error: ``gkfda bound``.

Two tables, each written as CSV into the results directory (``gkfda report`` then shows them):

* ``bound.csv``: the study's MPKFDA (``optimal/schur/1``) refitted, with the width and ``k``
  that its cross-validation chose (the ``gamma`` and ``k`` columns of ``results.csv``), on
  the first few realisations of each data set: test error, the bound (both variants), its
  parts, and the training-set size at which the same statistics would give a bound below 1.
  At the benchmarks' sizes (a few hundred to a thousand training points) the bound is 1.
* ``bound_synthetic.csv``: the same MPKFDA on two Gaussian classes in 2-D (means ±2.5 on
  the first axis, unit variance; Bayes error 0.6 %), RBF ``gamma = 0.2``, ``k = 20``,
  fitted at ``m`` up to 10,000 (the ``m×m`` kernel, 0.8 GB, must be held: the bound is
  about the model fitted on all ``m`` points, so neither a support chosen on a subsample
  nor statistics from points the fit never saw would be covered by it), then the formula
  alone at larger ``m`` with the statistics measured at the largest fit (a projection, not
  a measurement: the margins of a fit on more points would differ a little).

Examples
--------
>>> from gkfda.study.bound import two_gaussians, informative_size
>>> X, y = two_gaussians(1000, seed=0)
>>> X.shape, sorted(set(y.tolist()))
((1000, 2), [0, 1])
>>> from gkfda.bounds import fisher_discriminant_bound
>>> informative_size(fisher_discriminant_bound((0.5, 0.5), (0.05, 0.05), (200, 200), (15, 15)))
1920
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..bounds import GeneralisationBound, fisher_discriminant_bound
from ..datasets import load_benchmark
from ..estimator import GreedyKFDA
from . import MPKFDA_METHOD, StudyInputError
from .protocol import Protocol, read_config
from .markdown import markdown_table

BENCHMARK_FILE = "bound.csv"
SYNTHETIC_FILE = "bound_synthetic.csv"
#: The synthetic problem and its model.
SEPARATION, SYNTHETIC_GAMMA, SYNTHETIC_K = 2.5, 0.2, 20
FITTED_SIZES = (1_000, 2_000, 5_000, 10_000)
PROJECTED_SIZES = (20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 10_000_000)


def two_gaussians(m: int, seed: int, separation: float = SEPARATION):
    """``m`` points of two equally likely Gaussian classes, unit variance in 2-D, with means
    ``±separation`` on the first axis; labels 0 and 1."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=m)
    X = rng.normal(size=(m, 2))
    X[:, 0] += separation * (2 * y - 1)
    return X, y


def _scaled(bound: GeneralisationBound, m: int, variant: str | None = None) -> GeneralisationBound:
    """The bound with the same margins, variances, bases and class proportions at size ``m``."""
    parts = (bound.positive, bound.negative)
    positive = max(parts[0].n_bases, round(m * parts[0].n_samples / bound.m))
    sizes = (positive, max(parts[1].n_bases, m - positive))
    return fisher_discriminant_bound(
        [p.margin for p in parts], [p.variance for p in parts], sizes, [p.n_bases for p in parts],
        delta=bound.delta, radius=bound.radius, variant=variant or bound.variant,
    )


def informative_size(bound: GeneralisationBound, largest: int = 10**13) -> int | None:
    """The smallest training-set size at which the same statistics (margins, variances, bases,
    class proportions) give a bound below 1; ``None`` when no size up to ``largest`` does
    (a margin at or below 0 never does). The bound decreases in ``m``, so a bisection finds it."""
    if min(bound.positive.margin, bound.negative.margin) <= 0.0:
        return None
    low, high = bound.k, max(bound.m, 2 * bound.k)
    while _scaled(bound, high).value >= 1.0:
        low, high = high, 2 * high
        if high > largest:
            return None
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if _scaled(bound, middle).value < 1.0 else (middle, high)
    return high


def _parts(bound: GeneralisationBound, prefix: str = "") -> dict:
    return {
        f"{prefix}margin_pos": bound.positive.margin, f"{prefix}margin_neg": bound.negative.margin,
        f"{prefix}variance_pos": bound.positive.variance, f"{prefix}variance_neg": bound.negative.variance,
        f"{prefix}mean_term_pos": bound.positive.mean_term, f"{prefix}mean_term_neg": bound.negative.mean_term,
    }


def _fitted(model, X, y, X_test, y_test, delta):
    """Fit ``model``; its bound, and its columns: k, test error, both bounds, parts, fit time."""
    start = time.perf_counter()
    model.fit(X, y)
    fit_time = time.perf_counter() - start
    bound = model.generalisation_bound(delta=delta)
    union = model.generalisation_bound(delta=delta, variant="union_bound")
    return bound, {
        "k": int(model.k_), "test_error": 1.0 - model.score(X_test, y_test), "bound": bound.value,
        "bound_union": union.value, **_parts(bound), "valid_sample_size": bound.valid_sample_size,
        "fit_time": fit_time,
    }


def _protocol(results_dir: Path) -> Protocol:
    path = results_dir / "config.json"
    if not path.exists():
        return Protocol()
    saved = read_config(path).get("protocol", {})
    try:
        return Protocol(name=saved.get("name", "paper000"), seed=int(saved.get("seed", 0)))
    except (TypeError, ValueError):
        raise StudyInputError(f"{path}: the protocol's seed {saved.get('seed')!r} is not an integer") from None


def _read_results(path: Path) -> pd.DataFrame:
    """``results.csv`` with the columns a refit needs, checked (a problem raises StudyInputError naming the file)."""
    try:
        results = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise StudyInputError(f"{path}: not a CSV file ({str(error).strip()})") from None
    numeric = ("realisation", "k", "gamma", "test_error")
    missing = [c for c in ("dataset", "method", *numeric) if c not in results.columns]
    if missing:
        raise StudyInputError(
            f"{path}: lacks the column(s) {', '.join(missing)}; it is not a file `gkfda experiment` wrote")
    for column in numeric:
        values = pd.to_numeric(results[column], errors="coerce")
        bad = results[column].notna() & values.isna()
        if bad.any():
            line = int(bad.to_numpy().argmax()) + 2
            raise StudyInputError(f"{path}: line {line}: {column} {results[column][bad].iloc[0]!r} is not a number")
        results[column] = values
    return results


def benchmark_bounds(results_dir, datasets=None, realisations: int = 3, delta: float = 0.05,
                     method: str = MPKFDA_METHOD) -> pd.DataFrame:
    """Refit ``method`` as the study chose it on the first ``realisations`` of each data set
    and bound each fit: one row per (data set, realisation)."""
    results_dir = Path(results_dir)
    results = _read_results(results_dir / "results.csv")
    protocol = _protocol(results_dir)
    criterion, deflation, stages = method.split("/")
    rows = []
    chosen = results[results["method"] == method]
    for name in datasets or list(dict.fromkeys(chosen["dataset"])):
        runs = chosen[chosen["dataset"] == name].sort_values("realisation")
        if runs.empty:
            raise ValueError(f"datasets: {name!r} has no {method} rows in {results_dir / 'results.csv'}")
        benchmark = load_benchmark(name)
        for run in runs.head(realisations).itertuples():
            r = int(run.realisation) - 1
            X_train, y_train, X_test, y_test = benchmark.split(r)
            model = GreedyKFDA(
                k=int(run.k), criterion=criterion, deflation=deflation, stages=int(stages), gamma=float(run.gamma),
                n_jobs=1, random_state=protocol.seed + r, **protocol.model_params(),
            )
            bound, columns = _fitted(model, X_train, y_train, X_test, y_test, delta)
            rows.append({
                "dataset": name, "realisation": r + 1, "m_train": len(y_train), "gamma": float(run.gamma),
                "recorded_error": float(run.test_error), **columns, "m_informative": informative_size(bound),
            })
    return pd.DataFrame(rows)


def synthetic_bounds(sizes=FITTED_SIZES, projected=PROJECTED_SIZES, k: int = SYNTHETIC_K,
                     gamma: float = SYNTHETIC_GAMMA, delta: float = 0.05, test_size: int = 10_000,
                     seed: int = 0) -> pd.DataFrame:
    """The bound and the test error of fits at ``sizes``; then the formula at the
    ``projected`` sizes with the statistics of the largest fit (``test_error`` blank)."""
    X_test, y_test = two_gaussians(test_size, seed=seed + 1)
    # The study's MPKFDA, as in the benchmark rows, whatever GreedyKFDA's defaults.
    criterion, deflation, stages = MPKFDA_METHOD.split("/")
    rows, largest = [], None
    for m in sorted(sizes):
        X, y = two_gaussians(m, seed=seed)
        model = GreedyKFDA(k=k, criterion=criterion, deflation=deflation, stages=int(stages), gamma=gamma, n_jobs=1)
        largest, columns = _fitted(model, X, y, X_test, y_test, delta)
        rows.append({"kind": "fitted", "m": m, **columns})
    for m in sorted(projected):
        bound = _scaled(largest, m)
        rows.append({
            "kind": "projected", "m": m, "k": largest.k, "test_error": math.nan, "bound": bound.value,
            "bound_union": _scaled(largest, m, "union_bound").value, **_parts(bound),
            "valid_sample_size": bound.valid_sample_size, "fit_time": math.nan,
        })
    return pd.DataFrame(rows)


def benchmark_summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Means over the realisations of each data set, for the Markdown tables."""
    grouped = rows.groupby("dataset", sort=False)
    return pd.DataFrame({
        "realisations": grouped.size(),
        "m": grouped["m_train"].mean().round().astype(int),
        "k": grouped["k"].mean(),
        "test error": grouped["test_error"].mean(),
        "recorded": grouped["recorded_error"].mean(),
        "bound": grouped["bound"].mean(),
        "bound (union)": grouped["bound_union"].mean(),
        "g⁺": grouped["margin_pos"].mean(),
        "g⁻": grouped["margin_neg"].mean(),
        "C⁺": grouped["mean_term_pos"].mean(),
        # A realisation whose bound stays 1 at every size (a margin ≤ 0) counts as infinite.
        "m for a bound < 1": grouped["m_informative"].apply(lambda sizes: float(np.median(sizes.fillna(np.inf)))),
    }).reset_index()


def markdown(frame: pd.DataFrame) -> str:
    """A table of numbers as Markdown: three significant digits, "—" for a missing value."""
    def cell(value):
        if isinstance(value, (bool, np.bool_)):
            return "yes" if value else "no"
        if isinstance(value, (int, np.integer)):
            return f"{value:,}"
        if isinstance(value, float):
            if not math.isfinite(value):
                return "—" if math.isnan(value) else "∞"
            return f"{value:,.0f}" if value >= 1000 else f"{value:.3g}"
        return str(value)

    return markdown_table(frame.astype(object).map(cell))


def synthetic_summary(rows: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "": rows["kind"], "m": rows["m"], "test error": rows["test_error"], "bound": rows["bound"],
        "bound (union)": rows["bound_union"], "g⁺": rows["margin_pos"], "g⁻": rows["margin_neg"],
        "v⁺": rows["variance_pos"], "C⁺": rows["mean_term_pos"], "fit (s)": rows["fit_time"],
    })


def report_section(results_dir) -> str | None:
    """The Markdown of both tables from the CSV files in ``results_dir`` (``None``: neither)."""
    results_dir = Path(results_dir)
    parts = []
    if (results_dir / BENCHMARK_FILE).exists():
        rows = pd.read_csv(results_dir / BENCHMARK_FILE)
        parts += [
            f"The study's MPKFDA ({MPKFDA_METHOD}) refitted with its chosen width and k, Diethe et al.'s (2009) bound "
            "(δ = 0.05, R = 1; `paper` and `union_bound` variants) beside the test error, means over the "
            "realisations; `recorded` is the test error in `results.csv`; the last column is the training-set "
            "size at which the same margins, variances and k would give a bound below 1. At these sizes the "
            "bound is 1: it says nothing.",
            markdown(benchmark_summary(rows)),
        ]
    if (results_dir / SYNTHETIC_FILE).exists():
        rows = pd.read_csv(results_dir / SYNTHETIC_FILE)
        parts += [
            f"Two Gaussian classes (means ±{SEPARATION} on one axis of 2-D, unit variance), RBF γ = "
            f"{SYNTHETIC_GAMMA}, k = {SYNTHETIC_K}, test error on 10,000 points. `projected` rows apply the "
            "formula to the statistics of the largest fit.",
            markdown(synthetic_summary(rows)),
        ]
    return "\n\n".join(parts) if parts else None


def run(args) -> int:
    """``gkfda bound``: write the CSV files into the results directory and print the tables."""
    directory = Path(args.results_dir)
    if not (directory / "results.csv").exists():
        raise StudyInputError(f"{directory / 'results.csv'}: does not exist; `gkfda experiment --out "
                              f"{directory}` writes it")
    start = time.perf_counter()
    rows = benchmark_bounds(directory, args.datasets, args.realisations, args.delta)
    rows.to_csv(directory / BENCHMARK_FILE, index=False)
    print(f"benchmarks ({time.perf_counter() - start:.1f} s):\n\n{markdown(benchmark_summary(rows))}\n", flush=True)
    if not args.no_synthetic:
        start = time.perf_counter()
        synthetic = synthetic_bounds(sizes=args.sizes, delta=args.delta)
        synthetic.to_csv(directory / SYNTHETIC_FILE, index=False)
        print(f"synthetic ({time.perf_counter() - start:.1f} s):\n\n{markdown(synthetic_summary(synthetic))}\n")
    print(f"gkfda bound: written to {directory}; `gkfda report {directory}` shows them")
    return 0
