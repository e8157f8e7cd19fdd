"""The study of Diethe (2015, §3.4) on the 13 IDA benchmarks, resumable and parallel.

The protocol (widths, sparsity and baselines by cross-validation, then every realisation)
is :mod:`gkfda.study.protocol`. Each (data set, method) is one task; its rows are
appended to ``results.csv`` when it finishes, so an interrupted run resumes where it
stopped. Tasks run through joblib, so the same run goes to a Dask (or Ray) cluster
through joblib's backend.

Examples
--------
>>> import tempfile
>>> from gkfda.study.experiment import ResultsDirectory
>>> directory = ResultsDirectory(tempfile.mkdtemp())
>>> directory.done({("heart", "svm"): 100})
({}, set())
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..datasets import load_benchmark
from ..estimator import GreedyKFDA
from ..parsimonious import ParsimoniousKFDA
from . import ORIGINAL, StudyInputError
from .protocol import (
    BASELINES, KFDA_REGS, KFDAQ_METHODS, KFDAQ_RHOS, KFDAQ_RULES, SELF_TUNED, SVM_CS, ExperimentConfig,
    Protocol, Variant, read_config, row_methods,
)
from .markdown import markdown_table

RESULT_COLUMNS = (
    "dataset", "method", "criterion", "deflation", "stages", "realisation", "canonical", "gamma",
    "k", "k_used", "m_train", "m_test", "n_features", "test_error", "fit_time", "cv_error", "params",
)
GAMMA_COLUMNS = ("dataset", "gamma", "width", "cv_error", "split_widths")
PATH_COLUMNS = ("dataset", "method", "curve", "k", "error")


@dataclass
class Task:
    """One unit of work: a (data set, method) pair, or the width selection of a data set."""

    dataset: str
    method: str  # a variant key, a baseline name, or "gamma"
    variant: Variant | None = None
    gamma: float | None = None
    protocol: Protocol = field(default_factory=Protocol)


def _path_errors(benchmark, protocol: Protocol, params: dict, realisations) -> tuple[np.ndarray, np.ndarray]:
    """Validation error of every ``k`` of the grid, averaged over realisations and folds."""
    params = {**params, **protocol.model_params()}
    folds = list(protocol.cv_splits(benchmark, realisations))
    ks = protocol.k_grid(min(len(y) for _, _, y, _, _ in folds))
    errors = []
    for r, X_fit, y_fit, X_valid, y_valid in folds:
        model = GreedyKFDA(k=int(ks[-1]), n_jobs=1, random_state=protocol.seed + r, **params)
        errors.append(model.fit(X_fit, y_fit).error_path(X_valid, y_valid, ks))
    return ks, np.mean(errors, axis=0)


def select_gamma(benchmark, protocol: Protocol = Protocol()) -> dict:
    """Step 1: the kernel width of the original algorithm by cross-validation."""
    criterion, deflation, stages = ORIGINAL
    chosen, best_errors, scored = [], [], set()
    for r in protocol.cv_range(benchmark):
        scores = {}
        pending = list(protocol.widths)
        while pending:
            for width in pending:
                params = {"criterion": criterion, "deflation": deflation, "stages": stages, "gamma": 1.0 / width}
                scores[width] = _path_errors(benchmark, protocol, params, [r])[1].min()
            widths = sorted(scores)
            best = widths[int(np.argmin([scores[w] for w in widths]))]  # ties: the smallest width
            pending = protocol.wider_widths(widths, best)
        chosen.append(best)
        best_errors.append(scores[best])
        scored.update(scores)
    width = float(np.median(chosen))
    # An even count could put the median between two grid values; keep it on the grid.
    width = min(scored, key=lambda w: (abs(np.log2(w) - np.log2(width)), w))
    return {"gamma": 1.0 / width, "width": width, "cv_error": float(np.mean(best_errors)), "split_widths": chosen}


# -- the tasks --------------------------------------------------------------------------


def _row(benchmark, r, method, **values):
    row = {column: "" for column in RESULT_COLUMNS}
    X_train, _, X_test, _ = benchmark.split(r)
    row.update(
        dataset=benchmark.name,
        method=method,
        realisation=r + 1,
        canonical=int(benchmark.canonical[r]),
        m_train=len(X_train),
        m_test=len(X_test),
        n_features=X_train.shape[1],
    )
    row.update(values)
    return row


def _timed_fit(model, X, y):
    start = time.perf_counter()
    model.fit(X, y)
    return time.perf_counter() - start


def run_variant(task: Task) -> dict:
    """Steps 2 and 3 for one greedy variant on one data set."""
    benchmark, protocol, variant = load_benchmark(task.dataset), task.protocol, task.variant
    params = {**variant.params(), "gamma": task.gamma, **protocol.model_params()}
    ks, cv_errors = _path_errors(benchmark, protocol, params, protocol.cv_range(benchmark))
    best = int(np.argmin(cv_errors))
    k = int(ks[best])
    rows = []
    for r in protocol.test_range(benchmark):
        X_train, y_train, X_test, y_test = benchmark.split(r)
        model = GreedyKFDA(k=k, n_jobs=1, random_state=protocol.seed + r, **params)
        fit_time = _timed_fit(model, X_train, y_train)
        rows.append(_row(
            benchmark, r, variant.key, **variant.params(), gamma=task.gamma, k=k, k_used=int(model.k_),
            test_error=1.0 - model.score(X_test, y_test), fit_time=fit_time, cv_error=float(cv_errors[best]),
            params="{}",
        ))
    # The test error along the whole path, on the first realisation, from one fit.
    X_train, y_train, X_test, y_test = benchmark.split(0)
    test_ks = protocol.k_grid(len(y_train))
    full = GreedyKFDA(k=int(test_ks[-1]), n_jobs=1, random_state=protocol.seed, **params).fit(X_train, y_train)
    test_errors = full.error_path(X_test, y_test, test_ks)
    paths = [_path_row(task.dataset, variant.key, "cv", k_, e) for k_, e in zip(ks, cv_errors)]
    paths += [_path_row(task.dataset, variant.key, "test", k_, e) for k_, e in zip(test_ks, test_errors)]
    return {"results": rows, "paths": paths}


def _path_row(dataset, method, curve, k, error):
    return {"dataset": dataset, "method": method, "curve": curve, "k": int(k), "error": float(error)}


def _kfda(gamma, reg, protocol):
    # Full KFDA: every training point is a basis, so the Nyström features span the whole
    # empirical feature space; `random` order with no deflation takes them all.
    return GreedyKFDA(k=1, criterion="random", deflation="none", gamma=gamma, reg=reg, n_jobs=1, random_state=0,
                      **protocol.model_params())


def _fit_kfda(gamma, reg, X, y, protocol):
    return _kfda(gamma, reg, protocol).set_params(k=len(y)).fit(X, y)


def _median_on_grid(values, grid):
    median = float(np.median(np.log(values)))
    return min(grid, key=lambda v: (abs(np.log(v) - median), v))


def run_kfda(task: Task) -> dict:
    """Full regularised KFDA: width and ridge by the same cross-validation."""
    benchmark, protocol = load_benchmark(task.dataset), task.protocol
    chosen_widths, chosen_regs, best_errors = [], [], []
    for r in protocol.cv_range(benchmark):
        X, y, _, _ = benchmark.split(r)
        scores = np.zeros((len(protocol.widths), len(KFDA_REGS)))
        for train, valid in protocol.fold_indices(y, r):
            for i, width in enumerate(protocol.widths):
                model = _fit_kfda(1.0 / width, KFDA_REGS[0], X[train], y[train], protocol)
                for j, reg in enumerate(KFDA_REGS):
                    # The ridge only enters the discriminant: the same bases, refitted.
                    refitted = model if j == 0 else model._refitted_with_reg(reg, X[train], y[train])
                    scores[i, j] += (1.0 - refitted.score(X[valid], y[valid])) / protocol.folds
        i, j = np.unravel_index(int(np.argmin(scores)), scores.shape)
        chosen_widths.append(protocol.widths[i])
        chosen_regs.append(KFDA_REGS[j])
        best_errors.append(scores[i, j])
    width = _median_on_grid(chosen_widths, protocol.widths)
    reg = _median_on_grid(chosen_regs, KFDA_REGS)
    rows = []
    for r in protocol.test_range(benchmark):
        X_train, y_train, X_test, y_test = benchmark.split(r)
        model = _kfda(1.0 / width, reg, protocol).set_params(k=len(y_train))
        fit_time = _timed_fit(model, X_train, y_train)
        rows.append(_row(
            benchmark, r, "kfda", gamma=1.0 / width, k=len(y_train), k_used=int(model.k_),
            test_error=1.0 - model.score(X_test, y_test), fit_time=fit_time,
            cv_error=float(np.mean(best_errors)), params=json.dumps({"reg": reg, "width": width}),
        ))
    return {"results": rows, "paths": []}


def run_svm(task: Task) -> dict:
    """scikit-learn's SVC: C and width by the same cross-validation."""
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC

    benchmark, protocol = load_benchmark(task.dataset), task.protocol
    chosen_widths, chosen_cs, best_errors = [], [], []
    grid = {"C": list(SVM_CS), "gamma": [1.0 / w for w in protocol.widths]}
    for r in protocol.cv_range(benchmark):
        X, y, _, _ = benchmark.split(r)
        search = GridSearchCV(SVC(), grid, cv=protocol.splitter(r), n_jobs=1).fit(X, y)
        chosen_cs.append(search.best_params_["C"])
        chosen_widths.append(1.0 / search.best_params_["gamma"])
        best_errors.append(1.0 - search.best_score_)
    width = _median_on_grid(chosen_widths, protocol.widths)
    C = _median_on_grid(chosen_cs, SVM_CS)
    rows = []
    for r in protocol.test_range(benchmark):
        X_train, y_train, X_test, y_test = benchmark.split(r)
        model = SVC(C=C, gamma=1.0 / width)
        fit_time = _timed_fit(model, X_train, y_train)
        n_support = int(model.n_support_.sum())
        rows.append(_row(
            benchmark, r, "svm", gamma=1.0 / width, k=n_support, k_used=n_support,
            test_error=1.0 - model.score(X_test, y_test), fit_time=fit_time,
            cv_error=float(np.mean(best_errors)), params=json.dumps({"C": C, "width": width}),
        ))
    return {"results": rows, "paths": []}


def kfdaq_cv(benchmark, protocol: Protocol, q: float, r: int):
    """kFDA_q's cross-validation on training realisation ``r``: the validation error and
    the retained fraction of every (fold, width, ρ), shape ``(folds, widths, ρs)``."""
    X, y, _, _ = benchmark.split(r)
    shape = (protocol.folds, len(protocol.widths), len(KFDAQ_RHOS))
    errors, retained = np.zeros(shape), np.zeros(shape)
    for f, (train, valid) in enumerate(protocol.fold_indices(y, r)):
        for i, width in enumerate(protocol.widths):
            for j, rho in enumerate(KFDAQ_RHOS):
                model = _kfdaq(q, rho, width, protocol).fit(X[train], y[train])
                errors[f, i, j] = 1.0 - model.score(X[valid], y[valid])
                retained[f, i, j] = len(model.support_) / len(train)
    return errors, retained


def select_kfdaq(errors, retained) -> dict:
    """Harrison & Pasupa's (2010) two rules on one realisation's CV (arrays ``(folds, widths, ρs)``):
    ``{"mcr": (i, j), "nrs": (i, j)}``, indices of the width and ρ.

    ``mcr``: the least mean error (ties: the first, smallest width then ρ). ``nrs``: the
    least mean retained fraction among the settings whose mean error is at most the least
    plus its standard error over the folds (ties: the lower error, then the first).
    """
    mean = errors.mean(axis=0)
    standard_error = errors.std(axis=0, ddof=1) / np.sqrt(errors.shape[0]) if errors.shape[0] > 1 else 0 * mean
    retained = retained.mean(axis=0)
    best = np.unravel_index(int(np.argmin(mean)), mean.shape)
    within = np.argwhere(mean <= mean[best] + standard_error[best])
    sparsest = min(map(tuple, within), key=lambda cell: (retained[cell], mean[cell], cell))
    return {"mcr": tuple(int(v) for v in best), "nrs": tuple(int(v) for v in sparsest)}


def _kfdaq(q, rho, width, protocol):
    return ParsimoniousKFDA(q=q, rho=rho, gamma=1.0 / width, n_jobs=1, **protocol.model_params())


def run_kfdaq(task: Task) -> dict:
    """kFDA_q at its ``q``: width and ρ by the same cross-validation as the baselines,
    under both selection rules; rows ``<method>-mcr`` and ``<method>-nrs``."""
    benchmark, protocol, q = load_benchmark(task.dataset), task.protocol, KFDAQ_METHODS[task.method]
    chosen = {rule: ([], [], []) for rule in KFDAQ_RULES}  # widths, ρs, CV errors
    for r in protocol.cv_range(benchmark):
        errors, retained = kfdaq_cv(benchmark, protocol, q, r)
        mean = errors.mean(axis=0)
        for rule, (i, j) in select_kfdaq(errors, retained).items():
            chosen[rule][0].append(protocol.widths[i])
            chosen[rule][1].append(KFDAQ_RHOS[j])
            chosen[rule][2].append(mean[i, j])
    settings = {
        rule: (_median_on_grid(widths, protocol.widths), _median_on_grid(rhos, KFDAQ_RHOS), float(np.mean(cv)))
        for rule, (widths, rhos, cv) in chosen.items()
    }
    rows = []
    for r in protocol.test_range(benchmark):
        X_train, y_train, X_test, y_test = benchmark.split(r)
        fitted = {}  # the rules often agree: one fit per setting
        for rule, (width, rho, cv_error) in settings.items():
            if (width, rho) not in fitted:
                model = _kfdaq(q, rho, width, protocol)
                fitted[width, rho] = (model, _timed_fit(model, X_train, y_train))
            model, fit_time = fitted[width, rho]
            paper_rule = model.classes_[(model.discriminant(X_test) > model.theta_[0]).astype(int)]
            rows.append(_row(
                benchmark, r, f"{task.method}-{rule}", gamma=1.0 / width, k=len(model.support_),
                k_used=len(model.support_), test_error=1.0 - model.score(X_test, y_test), fit_time=fit_time,
                cv_error=cv_error, params=json.dumps({
                    "q": q, "rho": rho, "width": width, "rule": rule, "n_iter": int(model.n_iter_),
                    "paper_rule_error": float(np.mean(paper_rule != y_test)),
                }),
            ))
    return {"results": rows, "paths": []}


def run_gamma(task: Task) -> dict:
    result = select_gamma(load_benchmark(task.dataset), task.protocol)
    return {"gamma": {"dataset": task.dataset, **result, "split_widths": json.dumps(result["split_widths"])}}


def run_task(task: Task) -> dict:
    """Run one task; what it returns is appended to the CSV files by the caller."""
    runner = {"gamma": run_gamma, "kfda": run_kfda, "svm": run_svm, **dict.fromkeys(KFDAQ_METHODS, run_kfdaq)}.get(
        task.method, run_variant)
    start = time.perf_counter()
    output = runner(task)
    output["task"] = (task.dataset, task.method)
    output["seconds"] = time.perf_counter() - start
    return output


# -- the results directory --------------------------------------------------------------


class ResultsDirectory:
    """The CSV files of a run: appended task by task, read back to resume."""

    def __init__(self, path):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.results = self.path / "results.csv"
        self.gammas = self.path / "gamma.csv"
        self.paths = self.path / "paths.csv"

    @staticmethod
    def _read(path, required):
        """The rows of one of the CSV files, each with its line number under ``None``."""
        if not path.exists():
            return []
        try:
            with path.open(newline="", encoding="utf-8") as handle:
                reader = csv.DictReader(handle)
                rows = [{**row, None: reader.line_num} for row in reader]
                header = reader.fieldnames or []
        except (csv.Error, UnicodeDecodeError) as error:
            raise StudyInputError(f"{path}: not a CSV file ({error})") from None
        missing = [column for column in required if column not in header]
        if missing:
            raise StudyInputError(
                f"{path}: lacks the column(s) {', '.join(missing)}; it is not a file `gkfda experiment` wrote")
        return rows

    @staticmethod
    def _number(path, row, column) -> float:
        try:
            return float(row[column])
        except (TypeError, ValueError):
            raise StudyInputError(f"{path}: line {row[None]}: {column} {row[column]!r} is not a number") from None

    @staticmethod
    def _write(path, columns, rows, mode):
        new = mode == "w" or not path.exists() or path.stat().st_size == 0
        with path.open(mode, newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")  # rows read carry line numbers
            if new:
                writer.writeheader()
            writer.writerows(rows)
            handle.flush()
            os.fsync(handle.fileno())

    def done(self, expected_rows: dict) -> tuple[dict, set]:
        """The widths found so far and the (dataset, method) pairs that are complete.

        A pair with fewer rows than ``expected_rows[pair]`` was cut off mid-way: its rows
        (and path rows) are removed so that it runs again, exactly once.
        """
        gammas = {row["dataset"]: self._number(self.gammas, row, "gamma")
                  for row in self._read(self.gammas, ("dataset", "gamma"))}
        rows, cut = [], False
        for row in self._read(self.results, ("dataset", "method", "realisation", "test_error")):
            if any(value is None for value in row.values()):
                cut = True  # a line cut off mid-write: dropped, and its task runs again
                continue
            self._number(self.results, row, "test_error")
            rows.append(row)
        counts = {}
        for row in rows:
            pair = (row["dataset"], row["method"])
            counts[pair] = counts.get(pair, 0) + 1
        complete = {pair for pair, count in counts.items() if count >= expected_rows.get(pair, count)}
        if len(complete) < len(counts) or cut:
            keep = [row for row in rows if (row["dataset"], row["method"]) in complete]
            self._write(self.results, RESULT_COLUMNS, keep, "w")
            paths = [r for r in self._read(self.paths, ("dataset", "method")) if (r["dataset"], r["method"]) in complete]
            self._write(self.paths, PATH_COLUMNS, paths, "w")
        return gammas, complete

    def append(self, output: dict) -> None:
        if "gamma" in output:
            self._write(self.gammas, GAMMA_COLUMNS, [output["gamma"]], "a")
        if output.get("paths"):
            self._write(self.paths, PATH_COLUMNS, output["paths"], "a")
        if output.get("results"):
            # Written last: a task counts as done only once its results are on disk.
            self._write(self.results, RESULT_COLUMNS, output["results"], "a")


# -- the run ----------------------------------------------------------------------------


def _expected_rows(config: ExperimentConfig) -> dict:
    expected = {}
    for name in config.datasets:
        benchmark = load_benchmark(name)
        count = len(config.protocol.test_range(benchmark))
        for method in [v.key for v in config.variants] + list(config.baselines):
            for row_method in row_methods(method):
                expected[(benchmark.name, row_method)] = count
    return expected


def _parallel(config: ExperimentConfig, tasks, progress):
    from joblib import Parallel, delayed, parallel_config

    if not tasks:
        return
    with parallel_config(backend=config.backend) if config.backend else contextlib.nullcontext():
        parallel = Parallel(n_jobs=config.jobs, return_as="generator_unordered")
        for output in parallel(delayed(run_task)(task) for task in tasks):
            yield output
            progress.update(1)


def run_experiment(config: ExperimentConfig, out, progress: bool = True, log=print) -> dict:
    """Run (or resume) the experiment into the directory ``out``; returns a summary:
    ``tasks_run``, ``tasks_skipped`` (already complete), ``tasks_total``, ``wall_time_s``, ``out``.

    Widths come first (one task per data set that lacks one), then every (data set,
    method) task not already complete in ``out/results.csv``. A corrupted file in ``out``
    raises :class:`~gkfda.study.StudyInputError` before any task runs.
    """
    from tqdm.auto import tqdm

    start = time.perf_counter()
    directory = ResultsDirectory(out)
    made_with = _protocol_of(directory)
    if made_with not in (None, config.protocol.name):
        raise StudyInputError(
            f"out: {directory.path} holds results of the {made_with} protocol; resuming it with the "
            f"{config.protocol.name} protocol would mix the two: use another directory"
        )
    config.datasets = [load_benchmark(name).name for name in config.datasets]
    expected = _expected_rows(config)
    gammas, complete = directory.done(expected)
    methods = [v.key for v in config.variants] + list(config.baselines)
    pending_methods = {
        name: [m for m in methods if any((name, row_method) not in complete for row_method in row_methods(m))]
        for name in config.datasets
    }
    gamma_tasks = [
        Task(name, "gamma", protocol=config.protocol)
        for name in config.datasets
        if name not in gammas and any(m not in SELF_TUNED for m in pending_methods[name])
    ]
    baseline_tasks = [
        Task(name, method, protocol=config.protocol)
        for name in config.datasets for method in pending_methods[name] if method in SELF_TUNED
    ]
    variant_count = sum(len([m for m in ms if m not in SELF_TUNED]) for ms in pending_methods.values())
    # Tasks: a width selection per data set with greedy variants, and a (data set, method) pair
    # per method; those not pending are complete.
    to_run = len(gamma_tasks) + len(baseline_tasks) + variant_count
    total = len(config.datasets) * len(methods)
    total += len(config.datasets) if any(m not in SELF_TUNED for m in methods) else 0
    skipped = total - to_run
    if skipped:
        log(f"resuming: {skipped} of {total} tasks already complete in {out}")
    bar = tqdm(total=to_run, desc="gkfda experiment", unit="task", disable=not progress)
    with bar:
        for output in _parallel(config, gamma_tasks + baseline_tasks, bar):
            directory.append(output)
            if "gamma" in output:
                gammas[output["task"][0]] = float(output["gamma"]["gamma"])
        by_key = {v.key: v for v in config.variants}
        variant_tasks = [
            Task(name, method, variant=by_key[method], gamma=gammas[name], protocol=config.protocol)
            for name in config.datasets for method in pending_methods[name] if method not in SELF_TUNED
        ]
        for output in _parallel(config, variant_tasks, bar):
            directory.append(output)
    wall = time.perf_counter() - start
    _write_config(directory, config, wall)
    return {"tasks_run": to_run, "tasks_skipped": skipped, "tasks_total": total, "wall_time_s": wall,
            "out": str(directory.path)}


def _protocol_of(directory: ResultsDirectory) -> str | None:
    """The protocol the results in ``directory`` were made with (None: no results yet)."""
    path = directory.path / "config.json"
    if not path.exists():
        return None
    return read_config(path).get("protocol", {}).get("name", "paper000")


def _write_config(directory: ResultsDirectory, config: ExperimentConfig, wall: float) -> None:
    path = directory.path / "config.json"
    previous = read_config(path)
    def union(key, current):  # a results directory accumulates the runs made into it
        return list(dict.fromkeys(previous.get(key, []) + list(current)))

    record = {
        "datasets": union("datasets", config.datasets),
        "variants": union("variants", [v.key for v in config.variants]),
        "baselines": union("baselines", config.baselines),
        "protocol": {**asdict(config.protocol), "widths": list(config.protocol.widths)},
        "jobs": config.jobs,
        "backend": config.backend or "loky",
        "wall_time_s": previous.get("wall_time_s", 0.0) + wall,
        "runs": previous.get("runs", 0) + 1,
    }
    path.write_text(json.dumps(record, indent=2))


def summary_table(out) -> str:
    """Mean test error (and its s.d.) per data set and method, as Markdown."""
    path = Path(out) / "results.csv"
    if not path.exists():
        return "(no results: no method was run)"
    results = pd.read_csv(path)
    cells = results.groupby(["method", "dataset"])["test_error"].agg(
        lambda errors: f"{np.mean(errors):.3f} ± {np.std(errors):.3f}")
    table = cells.unstack("dataset").fillna("—")
    table = table.reindex(sorted(table.index, key=lambda m: (m in BASELINES, m)))
    return markdown_table(table.rename_axis(index="method", columns=None).reset_index())
