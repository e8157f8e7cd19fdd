"""Tables and figures from the results directory of ``gkfda experiment``.

:func:`write_report` reads ``results.csv`` (and, when present, ``gamma.csv``,
``paths.csv`` and ``config.json``) and writes, each as Markdown and CSV:

* the stages = 1 grids of paper 000, Figures 1-4 (AER, ASD, ART, AS) and their
  differences from the published grids (:mod:`gkfda.study.published`);
* the stage sweeps of Figures 5-6 and their per-data-set box-plot data;
* the per-data-set table of paper 002, Table 1 (KFDA, MPKFDA = ``optimal/schur/1``,
  SVM), alone and next to the published values;
* the realisation counts per data set and method, the chosen widths and a summary
  of the sparsity paths;

plus ``report.md``, an index embedding every table, and PNG figures in the style
of paper 000, Figures 5-9 (and error against ``k``) when matplotlib is importable.
Partial results (a run still going, or a subset of data sets and methods) are
reported as they are, and what is missing is listed.

Definitions (paper 000, Section 4.1): for one method and data set the test errors
of the realisations give a mean and a standard deviation (``ddof=1``, undefined
with a single realisation); AER is the mean over data sets of the mean errors, ASD
the mean over data sets of the standard deviations, ART the mean over data sets of
the mean fit times (seconds) and AS the mean over data sets of the mean sparsity
``100 k_used / m_train``.  ``Average`` rows and columns are plain means of the cells
shown, as in the paper.

Examples
--------
>>> import tempfile, pathlib
>>> from gkfda.study import report
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "results.csv").write_text(
...     "dataset,method,criterion,deflation,stages,realisation,canonical,gamma,k,k_used,"
...     "m_train,m_test,n_features,test_error,fit_time,cv_error,params\\n"
...     "heart,optimal/schur/1,optimal,schur,1,1,1,0.1,10,10,170,100,13,0.2,0.01,0.2,{}\\n"
...     "heart,optimal/schur/1,optimal,schur,1,2,1,0.1,10,10,170,100,13,0.3,0.01,0.2,{}\\n")
>>> files = report.write_report(d, figures=False)
>>> sorted(p.name for p in files)[:3]
['counts.csv', 'counts.md', 'fig1_aer.csv']
>>> print((d / "report" / "fig1_aer.csv").read_text().splitlines()[1])
schur,0.25,0.25
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .._core import CRITERIA, DEFLATIONS
from . import published
from .protocol import BASELINES, MPKFDA_METHOD

__all__ = ["write_report", "load_results", "ResultSet", "add_arguments", "run", "main", "MPKFDA_METHOD"]

#: Realisations of the IDA benchmarks (100 each, 20 for image and splice).
_BENCHMARK_REALISATIONS = {name: 100 for name in published.TABLE1_002}
_BENCHMARK_REALISATIONS.update(image=20, splice=20)

_GRID_METRICS = (
    # key, figure of paper 000, title, attribute of _Stats, Markdown format, unit
    ("aer", 1, "Average Error Rate (AER)", "err_mean", "{:.3f}",
     "test error averaged over the realisations of each data set, then over data sets"),
    ("asd", 2, "Average Standard Deviation (ASD)", "err_sd", "{:.3f}",
     "standard deviation (ddof=1) of the test error over the realisations of each data set, averaged over "
     "data sets"),
    ("art", 3, "Average Running Time (ART)", "time_mean", "{:.3f}",
     "fit time in seconds averaged over the realisations of each data set, then over data sets"),
    ("as", 4, "Average Sparsity (AS)", "sparsity_mean", "{:.1f}%",
     "sparsity 100 k_used / m_train (percent) averaged over the realisations of each data set, then over "
     "data sets"),
)
_DASH = "—"


# --------------------------------------------------------------------------- loading


@dataclass
class _Run:
    """One row of ``results.csv``."""

    dataset: str
    method: str
    criterion: Optional[str]
    deflation: Optional[str]
    stages: Optional[int]
    realisation: int
    canonical: Optional[bool]
    gamma: float
    k: float
    k_used: float
    m_train: float
    m_test: float
    n_features: float
    test_error: float
    fit_time: float
    cv_error: float
    params: str

    @property
    def sparsity(self) -> float:
        k = self.k_used if math.isfinite(self.k_used) else self.k
        return 100.0 * k / self.m_train if self.m_train and math.isfinite(self.m_train) else math.nan


@dataclass
class ResultSet:
    """What a results directory holds, parsed.

    Attributes
    ----------
    directory : Path
    runs : list
        The rows of ``results.csv`` (the last one of duplicated (dataset, method,
        realisation) keys), filtered to canonical splits when asked.
    present : dict
        ``{file name: bool}`` for ``results.csv``, ``gamma.csv``, ``paths.csv`` and ``config.json``.
    gamma : list of dict
        Rows of ``gamma.csv``.
    paths : list of dict
        Rows of ``paths.csv`` with ``k`` and ``error`` as floats.
    config : dict or None
        ``config.json``.
    notes : list of str
        Problems met while reading (skipped rows, duplicates, unreadable files).
    """

    directory: Path
    runs: List[_Run] = field(default_factory=list)
    present: Dict[str, bool] = field(default_factory=dict)
    gamma: List[dict] = field(default_factory=list)
    paths: List[dict] = field(default_factory=list)
    config: Optional[dict] = None
    notes: List[str] = field(default_factory=list)


def _float(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _int(value) -> Optional[int]:
    number = _float(value)
    return int(number) if math.isfinite(number) and number == int(number) else None


def _bool(value) -> Optional[bool]:
    text = (value or "").strip().lower()
    if text in ("1", "1.0", "true", "yes"):
        return True
    if text in ("0", "0.0", "false", "no"):
        return False
    return None


def _read_csv(path: Path, notes: List[str]) -> List[dict]:
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            return list(csv.DictReader(handle))
    except (OSError, csv.Error, UnicodeDecodeError) as error:
        notes.append(f"`{path.name}` could not be read ({error}).")
        return []


def _parse_run(row: dict) -> Optional[_Run]:
    dataset, method = (row.get("dataset") or "").strip(), (row.get("method") or "").strip()
    realisation = _int(row.get("realisation"))
    if not dataset or not method or realisation is None:
        return None
    criterion = (row.get("criterion") or "").strip() or None
    deflation = (row.get("deflation") or "").strip() or None
    stages = _int(row.get("stages"))
    parts = method.split("/")
    if len(parts) == 3 and _int(parts[2]) is not None:  # "criterion/deflation/stages"
        criterion, deflation = criterion or parts[0], deflation or parts[1]
        stages = stages if stages is not None else _int(parts[2])
    return _Run(
        dataset=dataset, method=method, criterion=criterion, deflation=deflation, stages=stages,
        realisation=realisation, canonical=_bool(row.get("canonical")),
        **{name: _float(row.get(name)) for name in (
            "gamma", "k", "k_used", "m_train", "m_test", "n_features", "test_error", "fit_time", "cv_error")},
        params=row.get("params") or "",
    )


def load_results(results_dir, canonical_only: bool = False) -> ResultSet:
    """Read a results directory written by ``gkfda experiment``.

    Parameters
    ----------
    results_dir : path-like
        Directory holding ``results.csv`` and optionally ``gamma.csv``, ``paths.csv``
        and ``config.json``; any of them may be missing or partial.
    canonical_only : bool, default False
        Keep only the rows of canonical (IDA) splits.

    Returns
    -------
    ResultSet

    Raises
    ------
    FileNotFoundError
        If ``results_dir`` is not a directory.

    Examples
    --------
    >>> import tempfile
    >>> load_results(tempfile.mkdtemp()).present["results.csv"]
    False
    """
    directory = Path(results_dir)
    if not directory.is_dir():
        raise FileNotFoundError(f"no results directory {directory}")
    result = ResultSet(directory=directory)
    for name in ("results.csv", "gamma.csv", "paths.csv", "config.json"):
        result.present[name] = (directory / name).is_file()

    if result.present["results.csv"]:
        raw = _read_csv(directory / "results.csv", result.notes)
        by_key: Dict[Tuple[str, str, int], _Run] = {}
        skipped = 0
        for row in raw:
            run_ = _parse_run(row)
            if run_ is None:
                skipped += 1
                continue
            by_key[run_.dataset, run_.method, run_.realisation] = run_
        if skipped:
            result.notes.append(f"{skipped} row(s) of `results.csv` without a data set, method or realisation were skipped.")
        duplicates = len(raw) - skipped - len(by_key)
        if duplicates:
            result.notes.append(f"{duplicates} duplicated (dataset, method, realisation) row(s); the last one of each was kept.")
        runs = list(by_key.values())
        bad = sum(not math.isfinite(r.test_error) for r in runs)
        if bad:
            result.notes.append(f"{bad} row(s) have no finite `test_error`; they are ignored in the error averages.")
        if canonical_only:
            kept = [r for r in runs if r.canonical]
            result.notes.append(f"Only canonical splits are reported ({len(kept)} of {len(runs)} rows).")
            runs = kept
        result.runs = runs

    if result.present["gamma.csv"]:
        result.gamma = [r for r in _read_csv(directory / "gamma.csv", result.notes) if r.get("dataset")]
    if result.present["paths.csv"]:
        for row in _read_csv(directory / "paths.csv", result.notes):
            k, error = _float(row.get("k")), _float(row.get("error"))
            if row.get("dataset") and row.get("method") and math.isfinite(k) and math.isfinite(error):
                result.paths.append({"dataset": row["dataset"], "method": row["method"],
                                     "curve": (row.get("curve") or "").strip(), "k": k, "error": error})
    if result.present["config.json"]:
        try:
            config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
            result.config = config if isinstance(config, dict) else {"config": config}
        except (OSError, ValueError) as error:
            result.notes.append(f"`config.json` could not be parsed ({error}).")
    return result


# --------------------------------------------------------------------------- statistics


def _finite(values) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    return array[np.isfinite(array)]


def _mean(values) -> float:
    array = _finite(values)
    return float(array.mean()) if array.size else math.nan


def _sd(values) -> float:
    array = _finite(values)
    return float(array.std(ddof=1)) if array.size >= 2 else math.nan


@dataclass
class _Stats:
    """Summary of one (method, data set) over its realisations."""

    n: int
    n_canonical: int
    realisations: List[int]
    errors: np.ndarray
    times: np.ndarray
    err_mean: float
    err_sd: float
    time_mean: float
    sparsity_mean: float
    k_mean: float
    k_used_mean: float
    n_features: float
    m_train: float
    m_test: float


def _mode(values) -> float:
    array = _finite(values)
    if not array.size:
        return math.nan
    unique, counts = np.unique(array, return_counts=True)
    return float(unique[np.argmax(counts)])


def _stats(runs: Sequence[_Run]) -> _Stats:
    runs = sorted(runs, key=lambda r: r.realisation)
    errors = np.array([r.test_error for r in runs], dtype=float)
    times = np.array([r.fit_time for r in runs], dtype=float)
    return _Stats(
        n=len(runs), n_canonical=sum(bool(r.canonical) for r in runs),
        realisations=[r.realisation for r in runs],
        errors=errors, times=times,
        err_mean=_mean(errors), err_sd=_sd(errors), time_mean=_mean(times),
        sparsity_mean=_mean([r.sparsity for r in runs]),
        k_mean=_mean([r.k for r in runs]), k_used_mean=_mean([r.k_used for r in runs]),
        n_features=_mode([r.n_features for r in runs]), m_train=_mode([r.m_train for r in runs]),
        m_test=_mode([r.m_test for r in runs]),
    )


def _order(values, canonical) -> list:
    """Known names in their canonical order, then the others alphabetically."""
    rank = {name: i for i, name in enumerate(canonical)}
    return sorted(set(values), key=lambda v: (rank.get(v, len(rank)), str(v)))


class _Summary:
    """Per (method, data set) statistics and the structure of the methods present."""

    def __init__(self, runs: Sequence[_Run]):
        groups: Dict[Tuple[str, str], List[_Run]] = {}
        self.info: Dict[str, Tuple[Optional[str], Optional[str], Optional[int]]] = {}
        for r in runs:
            groups.setdefault((r.method, r.dataset), []).append(r)
            self.info.setdefault(r.method, (r.criterion, r.deflation, r.stages))
        self.stats = {key: _stats(group) for key, group in groups.items()}
        self.datasets = _order({r.dataset for r in runs}, list(published.TABLE1_002))
        self.greedy = {m: i for m, i in self.info.items() if i[0] and i[1] and i[2] is not None}
        self.by_variant = {info: m for m, info in sorted(self.greedy.items())}
        self.methods = sorted(self.info, key=self.method_key)

    def method_key(self, method: str):
        criterion, deflation, stages = self.info.get(method, (None, None, None))
        if method in BASELINES:
            return (0, BASELINES.index(method), 0, 0, method)
        if method in self.greedy:
            c = CRITERIA.index(criterion) if criterion in CRITERIA else len(CRITERIA)
            d = DEFLATIONS.index(deflation) if deflation in DEFLATIONS else len(DEFLATIONS)
            return (1, c, d, stages, method)
        return (2, 0, 0, 0, method)

    def method_datasets(self, method: str) -> List[str]:
        return [d for d in self.datasets if (method, d) in self.stats]

    def average(self, method: str, attribute: str) -> Tuple[float, int]:
        """Mean over data sets of a per-data-set statistic, and how many data sets had it."""
        values = _finite([getattr(self.stats[method, d], attribute) for d in self.method_datasets(method)])
        return (float(values.mean()) if values.size else math.nan), int(values.size)

    def sweeps(self) -> Dict[Tuple[str, str], List[int]]:
        """``{(criterion, deflation): sorted stages}`` for variants run with more than one stages value."""
        found: Dict[Tuple[str, str], set] = {}
        for criterion, deflation, stages in self.by_variant:
            found.setdefault((criterion, deflation), set()).add(stages)
        keys = sorted(found, key=lambda cd: (_rank(cd[0], CRITERIA), _rank(cd[1], DEFLATIONS), cd))
        return {key: sorted(found[key]) for key in keys if len(found[key]) > 1}


def _rank(value, canonical) -> int:
    return canonical.index(value) if value in canonical else len(canonical)


# --------------------------------------------------------------------------- formatting


def _isnum(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and math.isfinite(float(value))


def _fmt(value, spec: str = "{:.3f}") -> str:
    return spec.format(float(value)) if _isnum(value) else _DASH


def _csv_value(value):
    if value is None:
        return ""
    if isinstance(value, (float, np.floating)):
        return "" if not math.isfinite(value) else repr(float(value))
    if isinstance(value, (np.integer,)):
        return int(value)
    return value


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def cell(text) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(h) for h in header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


@dataclass
class _Section:
    """One table of the report: written as ``stem.md`` and ``stem.csv`` and embedded in report.md."""

    stem: str
    title: str
    text: str
    markdown: str
    csv_header: Sequence[str]
    csv_rows: Sequence[Sequence[object]]
    notes: List[str] = field(default_factory=list)

    def body(self) -> str:
        parts = [self.text, self.markdown] + [n for n in self.notes if n]
        return "\n\n".join(p for p in parts if p)

    def write(self, out_dir: Path, written: List[Path]) -> None:
        md = out_dir / f"{self.stem}.md"
        md.write_text(f"# {self.title}\n\n{self.body()}\n", encoding="utf-8")
        path = out_dir / f"{self.stem}.csv"
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(self.csv_header)
            writer.writerows([[_csv_value(v) for v in row] for row in self.csv_rows])
        written += [md, path]


# --------------------------------------------------------------------------- the tables


def _grid_sections(summary: _Summary, stages: int = 1):
    """Paper 000, Figures 1-4, and their comparison with the published grids."""
    cells = {(d, c): m for (c, d, s), m in summary.by_variant.items() if s == stages}
    deflations = _order({d for d, _ in cells}, DEFLATIONS)
    criteria = _order({c for _, c in cells}, CRITERIA)
    n_all = len(summary.datasets)
    sections = []
    long_rows = []
    values_by_metric = {}
    for key, figure, title, attribute, spec, unit in _GRID_METRICS:
        values = {cell: summary.average(method, attribute) for cell, method in cells.items()}
        values_by_metric[key] = values
        finite = [v for v, _ in values.values() if math.isfinite(v)]
        best = min(finite) if finite else None
        md_rows, csv_rows, partial = [], [], False
        for d in deflations:
            row_values = [values.get((d, c), (math.nan, 0)) for c in criteria]
            cells_md = []
            for value, n in row_values:
                text = _fmt(value, spec)
                if _isnum(value) and n < n_all:
                    text += "†"
                    partial = True
                if best is not None and _isnum(value) and value == best:
                    text = f"**{text}**"
                cells_md.append(text)
            row_mean = _mean([v for v, _ in row_values])
            md_rows.append([d] + cells_md + [_fmt(row_mean, spec)])
            csv_rows.append([d] + [v for v, _ in row_values] + [row_mean])
        column_means = [_mean([values.get((d, c), (math.nan, 0))[0] for d in deflations]) for c in criteria]
        overall = _mean([v for v, _ in values.values()])
        md_rows.append(["**Average**"] + [_fmt(v, spec) for v in column_means] + [_fmt(overall, spec)])
        csv_rows.append(["Average"] + column_means + [overall])
        notes = []
        if partial:
            notes.append(f"† averaged over fewer than all {n_all} data sets of the results "
                         f"(see `grid_stages{stages}_long.csv` for the counts; for ASD a data set needs "
                         "two realisations).")
        if not cells:
            notes.append(f"No greedy variant with stages = {stages} in the results.")
        sections.append(_Section(
            stem=f"fig{figure}_{key}",
            title=f"Paper 000, Figure {figure}: {title}, stages = {stages}",
            text=f"Rows: deflations; columns: criteria. Cells: {unit}; the smallest cell is in bold. `Average` is the plain mean of the cells shown.",
            markdown=_md_table(["Deflation"] + criteria + ["Average"], md_rows) if cells else "",
            csv_header=["deflation"] + criteria + ["Average"],
            csv_rows=csv_rows, notes=notes,
        ))
        # Against the paper: only cells present in both.
        paper = published.FIGURES_000[figure]
        common = [(d, c) for d in deflations for c in criteria
                  if (d, c) in paper["cells"] and _isnum(values.get((d, c), (math.nan, 0))[0])]
        cmp_rows, cmp_csv, diffs = [], [], []
        paper_spec = spec.replace("%", "")
        for d in deflations:
            if not any((d, c) in common for c in criteria):
                continue
            row = [d]
            for c in criteria:
                if (d, c) in common:
                    ours, theirs = values[d, c][0], paper["cells"][d, c]
                    diffs.append(ours - theirs)
                    row.append(f"{_fmt(ours, paper_spec)} / {_fmt(theirs, paper_spec)} "
                               f"({'+' if ours >= theirs else '−'}{_fmt(abs(ours - theirs), paper_spec)})")
                    cmp_csv.append([d, c, ours, theirs, ours - theirs, values[d, c][1]])
                else:
                    row.append(_DASH)
            cmp_rows.append(row)
        cmp_notes = []
        if diffs:
            ours_best = min(common, key=lambda cell: values[cell][0])
            paper_best = min(common, key=lambda cell: paper["cells"][cell])
            cmp_notes.append(
                f"{len(diffs)} common cell(s); mean difference {np.mean(diffs):+.4g}, mean absolute difference "
                f"{np.mean(np.abs(diffs)):.4g}. Best of the common cells: ours {ours_best[0]} + {ours_best[1]}, "
                f"paper {paper_best[0]} + {paper_best[1]}.")
        else:
            cmp_notes.append("No cell in common with the published grid.")
        sections.append(_Section(
            stem=f"fig{figure}_{key}_vs_paper",
            title=f"Figure {figure} ({title}) against paper 000",
            text="Each cell: ours / paper (ours − paper), for the cells present in both "
                 "(the paper has no ortho-hotelling).",
            markdown=_md_table(["Deflation"] + criteria, cmp_rows) if cmp_rows else "",
            csv_header=["deflation", "criterion", "ours", "paper", "difference", "n_datasets"],
            csv_rows=cmp_csv, notes=cmp_notes,
        ))
    for (d, c), method in sorted(cells.items(), key=lambda kv: (_rank(kv[0][0], DEFLATIONS), _rank(kv[0][1], CRITERIA))):
        n_runs = sum(summary.stats[method, ds].n for ds in summary.method_datasets(method))
        row = [d, c, stages, method, len(summary.method_datasets(method)), n_runs]
        for key, figure, *_ in _GRID_METRICS:
            value, n = values_by_metric[key][d, c]
            row += [value, n, published.FIGURES_000[figure]["cells"].get((d, c))]
        long_rows.append(row)
    header = ["deflation", "criterion", "stages", "method", "n_datasets", "n_realisations"]
    for key, *_ in _GRID_METRICS:
        header += [key, f"{key}_n_datasets", f"{key}_paper"]
    return sections, (f"grid_stages{stages}_long.csv", header, long_rows)


def _quantiles(values) -> Tuple[float, float, float, float, float]:
    array = _finite(values)
    if not array.size:
        return (math.nan,) * 5
    return tuple(float(q) for q in np.percentile(array, [0, 25, 50, 75, 100]))


def _stage_sections(summary: _Summary) -> List[_Section]:
    """Paper 000, Figures 5-6 (and the data of Figure 9): every stage sweep present."""
    sweeps = summary.sweeps()
    paper = published.STAGE_SWEEP_000
    rows_md, rows_csv, box_csv, box_md = [], [], [], []
    for (criterion, deflation), stage_values in sweeps.items():
        per_dataset = {}
        for s in stage_values:
            method = summary.by_variant[criterion, deflation, s]
            aer, n = summary.average(method, "err_mean")
            asd, _ = summary.average(method, "err_sd")
            art, _ = summary.average(method, "time_mean")
            as_, _ = summary.average(method, "sparsity_mean")
            errors = [summary.stats[method, d].err_mean for d in summary.method_datasets(method)]
            q = _quantiles(errors)
            quoted = paper["stages"].get(s, {}) if (criterion, deflation) == (paper["criterion"], paper["deflation"]) else {}
            rows_md.append([criterion, deflation, s, n, _fmt(aer), _fmt(asd), _fmt(art), _fmt(as_, "{:.1f}%"),
                            f"{_fmt(q[2])} [{_fmt(q[1])}, {_fmt(q[3])}]",
                            " / ".join(_fmt(quoted.get(k), "{:g}") for k in ("aer", "asd", "art")) if quoted else ""])
            rows_csv.append([criterion, deflation, s, method, n, aer, asd, art, as_, *q,
                             quoted.get("aer"), quoted.get("asd"), quoted.get("art")])
            for d in summary.method_datasets(method):
                st = summary.stats[method, d]
                log_time = math.log10(st.time_mean) if _isnum(st.time_mean) and st.time_mean > 0 else math.nan
                box_csv.append([criterion, deflation, s, d, st.n, st.err_mean, st.err_sd, st.time_mean,
                                log_time, st.sparsity_mean])
                per_dataset.setdefault(d, {})[s] = st
        box_md.append(f"**{criterion} / {deflation}** — mean test error (mean fit time) per data set\n\n" + _md_table(
            ["Data set"] + [f"stages = {s}" for s in stage_values],
            [[d] + [f"{_fmt(per_dataset[d][s].err_mean)} ({_fmt(per_dataset[d][s].time_mean, '{:.3g}')} s)"
                    if s in per_dataset[d] else _DASH for s in stage_values]
             for d in _order(per_dataset, summary.datasets)]))
    none = "" if sweeps else "No (criterion, deflation) was run with more than one stages value."
    summary_section = _Section(
        stem="stages",
        title="Paper 000, Figures 5-6: stage sweeps",
        text="For every (criterion, deflation) run with several stages values: AER, ASD, ART and AS over the "
             "data sets (as in Figures 1-4), and the median [quartiles] across data sets of the mean test error "
             "(the box of Figure 5). The paper quotes numbers only for pseudo / ortho-schur, stages 1 and 2 "
             "(AER / ASD / ART), which do not match its own Figures 1-3 for the same configuration.",
        markdown=_md_table(["Criterion", "Deflation", "Stages", "Data sets", "AER", "ASD", "ART (s)", "AS",
                            "Median error [IQR]", "Paper AER / ASD / ART"], rows_md) if rows_md else "",
        csv_header=["criterion", "deflation", "stages", "method", "n_datasets", "aer", "asd", "art", "as",
                    "error_min", "error_q1", "error_median", "error_q3", "error_max",
                    "paper_aer", "paper_asd", "paper_art"],
        csv_rows=rows_csv, notes=[none],
    )
    box_section = _Section(
        stem="stages_datasets",
        title="Stage sweeps per data set (box-plot data of Figures 5, 6 and 9)",
        text="Mean test error and mean fit time over the realisations, per data set and stages value.",
        markdown="\n\n".join(box_md),
        csv_header=["criterion", "deflation", "stages", "dataset", "n_realisations", "mean_error", "sd_error",
                    "mean_fit_time", "log10_mean_fit_time", "mean_sparsity"],
        csv_rows=box_csv, notes=[none],
    )
    return [summary_section, box_section]


def _table1_sections(summary: _Summary, mpkfda: str = MPKFDA_METHOD) -> List[_Section]:
    """Paper 002, Table 1 from our results, and next to the published one."""
    methods = {"kfda": "kfda", "mpkfda": mpkfda, "svm": "svm"}
    datasets = [d for d in summary.datasets if any((m, d) in summary.stats for m in methods.values())]

    def get(method, d):
        return summary.stats.get((method, d))

    rows_md, rows_csv, mismatches = [], [], []
    columns = {key: [] for key in ("kfda_error", "kfda_sd", "mpkfda_error", "mpkfda_sd", "mpkfda_k",
                                   "svm_error", "svm_sd")}
    for d in datasets:
        any_stats = next(s for s in (get(m, d) for m in methods.values()) if s is not None)
        dim, train, test = any_stats.n_features, any_stats.m_train, any_stats.m_test
        values = {}
        for key, method in methods.items():
            st = get(method, d)
            values[f"{key}_error"] = st.err_mean if st else math.nan
            values[f"{key}_sd"] = st.err_sd if st else math.nan
            values[f"{key}_n"] = st.n if st else 0
        st = get(mpkfda, d)
        values["mpkfda_k"] = st.k_mean if st else math.nan
        for key in columns:
            columns[key].append(values[key])
        paper = published.TABLE1_002.get(d)
        if paper and any(_isnum(ours) and ours != paper[key]
                         for key, ours in (("dim", dim), ("train", train), ("test", test))):
            mismatches.append(f"{d} (ours {_fmt(dim, '{:.0f}')}/{_fmt(train, '{:.0f}')}/{_fmt(test, '{:.0f}')}, "
                              f"paper {paper['dim']}/{paper['train']}/{paper['test']})")
        rows_md.append([d, _fmt(dim, "{:.0f}"), _fmt(train, "{:.0f}"), _fmt(test, "{:.0f}"),
                        _fmt(values["kfda_error"], "{:.4f}"), _fmt(values["kfda_sd"], "{:.4f}"),
                        _fmt(values["mpkfda_error"], "{:.4f}"), _fmt(values["mpkfda_sd"], "{:.4f}"),
                        _fmt(values["mpkfda_k"], "{:.1f}"),
                        _fmt(values["svm_error"], "{:.4f}"), _fmt(values["svm_sd"], "{:.4f}")])
        rows_csv.append([d, dim, train, test] + [values[k] for k in columns]
                        + [values["kfda_n"], values["mpkfda_n"], values["svm_n"]])
    means = {key: _mean(vals) for key, vals in columns.items()}
    counts = {key: len(_finite(vals)) for key, vals in columns.items()}
    if datasets:
        rows_md.append(["**Mean**", "", "", ""] + [
            _fmt(means[k], "{:.1f}" if k == "mpkfda_k" else "{:.4f}") for k in columns])
        rows_csv.append(["Mean", "", "", ""] + [means[k] for k in columns] + ["", "", ""])
    notes = []
    uneven = {k: n for k, n in counts.items() if n < len(datasets)}
    if datasets and uneven:
        notes.append("The Mean row averages each column over the data sets that have it: "
                     + ", ".join(f"{k} over {n} of {len(datasets)}" for k, n in uneven.items()) + ".")
    for key, method in methods.items():
        if not any((method, d) in summary.stats for d in summary.datasets):
            notes.append(f"No `{method}` results: the {key.upper()} columns are empty.")
    if mismatches:
        notes.append("Dim/Train/Test differ from paper 002 for: " + "; ".join(mismatches) + ".")
    ours = _Section(
        stem="table1",
        title="Paper 002, Table 1: KFDA, MPKFDA and SVM per data set",
        text=f"Mean test error and its s.d. over the realisations; MPKFDA is `{mpkfda}`, with its mean selected "
             "sparsity `k`. The Mean row averages the data sets.",
        markdown=_md_table(["Data set", "Dim", "Train", "Test", "KFDA error", "s.d.", "MPKFDA error", "s.d.",
                            "k", "SVM error", "s.d."], rows_md) if rows_md else "",
        csv_header=["dataset", "dim", "train", "test"] + list(columns)
        + ["kfda_realisations", "mpkfda_realisations", "svm_realisations"],
        csv_rows=rows_csv, notes=notes or ([] if datasets else ["No KFDA, MPKFDA or SVM results."]),
    )

    # Ours against the paper, for the data sets in both.
    both = [d for d in datasets if d in published.TABLE1_002]
    cmp_md, cmp_csv = [], []
    pairs = {key: ([], []) for key in columns}
    for d in both:
        paper = published.TABLE1_002[d]
        row_md = [published.PAPER_NAMES_002.get(d, d)]
        row_csv = [d]
        for key in ("kfda", "mpkfda", "svm"):
            err, sd = columns[f"{key}_error"][datasets.index(d)], columns[f"{key}_sd"][datasets.index(d)]
            row_md += [f"{_fmt(err, '{:.4f}')} ± {_fmt(sd, '{:.4f}')}" if _isnum(err) else _DASH,
                       f"{paper[f'{key}_error']:.4f} ± {paper[f'{key}_sd']:.4f}"]
            row_csv += [err, sd, paper[f"{key}_error"], paper[f"{key}_sd"]]
            if key == "mpkfda":
                k = columns["mpkfda_k"][datasets.index(d)]
                row_md += [_fmt(k, "{:.1f}"), f"{paper['mpkfda_k']}"]
                row_csv += [k, paper["mpkfda_k"]]
        for key in columns:
            ours_value = columns[key][datasets.index(d)]
            if _isnum(ours_value):
                pairs[key][0].append(ours_value)
                pairs[key][1].append(published.TABLE1_002[d][key])
        cmp_md.append(row_md)
        cmp_csv.append(row_csv)
    if both:
        mean_md, mean_csv = ["**Mean (same data sets)**"], ["Mean (same data sets)"]
        for key in ("kfda", "mpkfda", "svm"):
            e_ours, e_paper = pairs[f"{key}_error"]
            s_ours, s_paper = pairs[f"{key}_sd"]
            mean_md += [f"{_fmt(_mean(e_ours), '{:.4f}')} ± {_fmt(_mean(s_ours), '{:.4f}')}" if e_ours else _DASH,
                        f"{_fmt(_mean(e_paper), '{:.4f}')} ± {_fmt(_mean(s_paper), '{:.4f}')}" if e_paper else _DASH]
            mean_csv += [_mean(e_ours), _mean(s_ours), _mean(e_paper), _mean(s_paper)]
            if key == "mpkfda":
                k_ours, k_paper = pairs["mpkfda_k"]
                mean_md += [_fmt(_mean(k_ours), "{:.1f}"), _fmt(_mean(k_paper), "{:.1f}")]
                mean_csv += [_mean(k_ours), _mean(k_paper)]
        cmp_md.append(mean_md)
        cmp_csv.append(mean_csv)
    missing = [published.PAPER_NAMES_002[d] for d in published.TABLE1_002 if d not in both]
    versus = _Section(
        stem="table1_vs_paper",
        title="Table 1 against paper 002",
        text="Mean test error ± s.d., ours and as published (Diethe et al., AISTATS 2009, Table 1). The Mean row "
             "averages, for each column pair, only the data sets where we have the method, so that both sides "
             "cover the same data sets. The paper's printed Mean over all 13 data sets is "
             f"KFDA {published.TABLE1_002_MEAN['kfda_error']:.4f}, MPKFDA {published.TABLE1_002_MEAN['mpkfda_error']:.4f} "
             f"(k = {published.TABLE1_002_MEAN['mpkfda_k']}), SVM {published.TABLE1_002_MEAN['svm_error']:.4f}.",
        markdown=_md_table(["Data set", "KFDA (ours)", "KFDA (paper)", "MPKFDA (ours)", "MPKFDA (paper)",
                            "k (ours)", "k (paper)", "SVM (ours)", "SVM (paper)"], cmp_md) if cmp_md else "",
        csv_header=["dataset", "kfda_error", "kfda_sd", "kfda_error_paper", "kfda_sd_paper",
                    "mpkfda_error", "mpkfda_sd", "mpkfda_error_paper", "mpkfda_sd_paper", "mpkfda_k", "mpkfda_k_paper",
                    "svm_error", "svm_sd", "svm_error_paper", "svm_sd_paper"],
        csv_rows=cmp_csv,
        notes=[f"Not in our results: {', '.join(missing)}." if missing else ""],
    )
    return [ours, versus]


def _counts_section(summary: _Summary) -> _Section:
    rows_md, rows_csv = [], []
    for method in summary.methods:
        cells, total = [], 0
        for d in summary.datasets:
            st = summary.stats.get((method, d))
            if st is None:
                cells.append(_DASH)
                rows_csv.append([d, method, 0, 0, 0, "", ""])
                continue
            total += st.n
            cells.append(f"{st.n} ({st.n_canonical})")
            rows_csv.append([d, method, st.n, st.n_canonical, st.n - st.n_canonical,
                             min(st.realisations), max(st.realisations)])
        rows_md.append([method] + cells + [total])
    return _Section(
        stem="counts",
        title="Realisations per data set and method",
        text="Cells: realisations present (of which canonical IDA splits); — means none.",
        markdown=_md_table(["Method"] + summary.datasets + ["Total"], rows_md) if rows_md else "",
        csv_header=["dataset", "method", "realisations", "canonical", "generated", "first_realisation",
                    "last_realisation"],
        csv_rows=rows_csv,
    )


def _gamma_section(results: ResultSet) -> Optional[_Section]:
    if not results.present["gamma.csv"]:
        return None
    rows = sorted(results.gamma, key=lambda r: (_rank(r["dataset"], list(published.TABLE1_002)), r["dataset"]))
    md = [[r["dataset"], _fmt(_float(r.get("gamma")), "{:.4g}"), _fmt(_float(r.get("width")), "{:.4g}"),
           _fmt(_float(r.get("cv_error")), "{:.4f}"), r.get("split_widths") or ""] for r in rows]
    return _Section(
        stem="gamma",
        title="Kernel widths chosen by cross-validation",
        text="RBF kernel exp(−γ‖x − z‖²), width = 1/γ: the median of the widths chosen on the cross-validation "
             "realisations (paper 000, Section 3.4).",
        markdown=_md_table(["Data set", "γ", "width", "CV error", "widths per split"], md) if md else "",
        csv_header=["dataset", "gamma", "width", "cv_error", "split_widths"],
        csv_rows=[[r["dataset"], _float(r.get("gamma")), _float(r.get("width")), _float(r.get("cv_error")),
                   r.get("split_widths") or ""] for r in rows],
        notes=[] if md else ["`gamma.csv` has no rows yet."],
    )


def _curves(results: ResultSet) -> Dict[Tuple[str, str, str], Tuple[np.ndarray, np.ndarray]]:
    grouped: Dict[Tuple[str, str, str], List[Tuple[float, float]]] = {}
    for row in results.paths:
        grouped.setdefault((row["dataset"], row["method"], row["curve"]), []).append((row["k"], row["error"]))
    curves = {}
    for key, points in grouped.items():
        points.sort()
        curves[key] = (np.array([p[0] for p in points]), np.array([p[1] for p in points]))
    return curves


def _paths_section(results: ResultSet, summary: _Summary) -> Optional[_Section]:
    if not results.present["paths.csv"]:
        return None
    curves = _curves(results)
    keys = sorted({(d, m) for d, m, _ in curves},
                  key=lambda dm: (_rank(dm[0], summary.datasets), summary.method_key(dm[1])))
    rows_md, rows_csv = [], []
    for d, m in keys:
        cv, test = curves.get((d, m, "cv")), curves.get((d, m, "test"))
        k_best = cv_best = test_at = test_best = k_test_best = math.nan
        if cv is not None:
            i = int(np.argmin(cv[1]))
            k_best, cv_best = cv[0][i], cv[1][i]
        if test is not None:
            j = int(np.argmin(test[1]))
            k_test_best, test_best = test[0][j], test[1][j]
            if _isnum(k_best):
                test_at = test[1][int(np.argmin(np.abs(test[0] - k_best)))]
        st = summary.stats.get((m, d))
        k_chosen = st.k_mean if st else math.nan
        rows_md.append([d, m, _fmt(k_best, "{:.0f}"), _fmt(cv_best, "{:.4f}"), _fmt(test_at, "{:.4f}"),
                        _fmt(k_test_best, "{:.0f}"), _fmt(test_best, "{:.4f}"), _fmt(k_chosen, "{:.1f}")])
        rows_csv.append([d, m, k_best, cv_best, test_at, k_test_best, test_best, k_chosen])
    return _Section(
        stem="paths",
        title="Sparsity paths",
        text="From `paths.csv`: the k of least mean validation error (cv curve), the test error of realisation 1 "
             "at that k (nearest k of the test curve), the k of least test error, and the mean k in `results.csv`.",
        markdown=_md_table(["Data set", "Method", "k (min CV)", "CV error", "test error at k", "k (min test)",
                            "min test error", "k in results"], rows_md) if rows_md else "",
        csv_header=["dataset", "method", "k_min_cv", "cv_error_min", "test_error_at_k_min_cv", "k_min_test",
                    "test_error_min", "k_results_mean"],
        csv_rows=rows_csv,
        notes=[] if rows_md else ["`paths.csv` has no rows yet."],
    )


# --------------------------------------------------------------------------- what is missing


def _expected_realisations(dataset: str, config: Optional[dict]) -> Optional[int]:
    total = _BENCHMARK_REALISATIONS.get(dataset)
    protocol = (config or {}).get("protocol") if isinstance((config or {}).get("protocol"), dict) else {}
    limit = protocol.get("realisations") if protocol else None
    if isinstance(limit, int) and limit > 0:
        return min(limit, total) if total else limit
    return total


def _missing(results: ResultSet, summary: _Summary, limit: int = 40) -> List[str]:
    lines = []
    for name, present in results.present.items():
        if not present:
            lines.append(f"`{name}` is absent.")
    if not results.runs:
        lines.append("`results.csv` has no usable rows: every table is empty.")
        return lines
    config = results.config or {}
    expected_datasets = config.get("datasets") if isinstance(config.get("datasets"), list) else None
    expected_methods = None
    if isinstance(config.get("variants"), list):
        expected_methods = [str(v) for v in config["variants"]] + [str(b) for b in config.get("baselines") or []]

    not_run = [d for d in (expected_datasets or published.TABLE1_002) if d not in summary.datasets]
    if not_run:
        scope = "configured" if expected_datasets else "benchmark (paper 000 uses 13)"
        lines.append(f"{scope.capitalize()} data sets with no results: {', '.join(not_run)}.")
    grid = [(d, c) for d in DEFLATIONS for c in CRITERIA if (c, d, 1) not in summary.by_variant]
    if grid:
        lines.append(f"{len(grid)} of the {len(DEFLATIONS) * len(CRITERIA)} (deflation, criterion) cells of the "
                     f"full grid at stages = 1 have no results" + (": " + ", ".join(f"{d}/{c}" for d, c in grid) if len(grid) <= 12 else
                                           " (see the grids).") )
    for method in (MPKFDA_METHOD,) + BASELINES:
        if method not in summary.info:
            lines.append(f"No `{method}` results (Table 1 comparison incomplete).")
    methods = summary.methods
    if expected_methods is not None:
        absent = [m for m in expected_methods if m not in summary.info]
        if absent:
            lines.append(f"Configured methods with no results: {', '.join(absent[:limit])}"
                         + (f" and {len(absent) - limit} more" if len(absent) > limit else "") + ".")
        methods = _order(set(methods) | set(expected_methods), methods)
    datasets = expected_datasets or summary.datasets
    gaps = []
    for d in datasets:
        have = [summary.stats[m, d].n for m in summary.methods if (m, d) in summary.stats]
        target = _expected_realisations(d, config) if expected_datasets else None
        target = max([target or 0] + have)
        for m in methods:
            n = summary.stats[m, d].n if (m, d) in summary.stats else 0
            if n < target:
                gaps.append(f"{m} on {d}: {n} of {target}")
    if gaps:
        lines.append(f"{len(gaps)} (method, data set) pair(s) with fewer realisations than expected "
                     "(the configured number, or the most any method has on that data set): "
                     + "; ".join(gaps[:limit]) + (f"; … and {len(gaps) - limit} more" if len(gaps) > limit else "")
                     + ".")
    return lines + results.notes


# --------------------------------------------------------------------------- figures


def _figure_helpers():
    """The matplotlib pieces, with the Agg canvas (no pyplot, no global backend switch)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    def panels(n: int, ncols: int = 4, width: float = 3.4, height: float = 2.9, title: str = ""):
        ncols = max(1, min(ncols, n))
        nrows = int(math.ceil(n / ncols))
        fig = Figure(figsize=(max(width * ncols, 6.0), height * nrows + (0.5 if title else 0)), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(nrows, ncols, squeeze=False).ravel().tolist()
        for ax in axes[n:]:
            ax.set_visible(False)
        if title:
            fig.suptitle(title)
        return fig, axes[:n]

    def boxes(ax, data: Sequence[Sequence[float]], labels: Sequence[str], rotate: bool = False):
        positions = [i + 1 for i, values in enumerate(data) if len(_finite(values))]
        if positions:
            ax.boxplot([_finite(data[p - 1]) for p in positions], positions=positions,
                       medianprops={"color": "red"}, widths=0.6)
        ax.set_xticks(range(1, len(labels) + 1))
        ax.set_xticklabels(labels, rotation=45 if rotate else 0, ha="right" if rotate else "center", fontsize=8)
        ax.set_xlim(0.4, len(labels) + 0.6)
        ax.grid(axis="y", alpha=0.3)

    return panels, boxes


def _pick(preferred: str, available: Dict[str, int]) -> Optional[str]:
    if not available:
        return None
    if preferred in available:
        return preferred
    return max(sorted(available), key=lambda name: available[name])


def _figures(results: ResultSet, summary: _Summary, fig_dir: Path, written: List[Path], notes: List[str],
             made: List[Tuple[str, Path, str]]) -> None:
    """Draw every figure the data allow, appending ``(title, path, caption)`` to ``made``."""
    panels, boxes = _figure_helpers()
    fig_dir.mkdir(parents=True, exist_ok=True)

    def save(fig, name: str, title: str, caption: str):
        path = fig_dir / name
        fig.savefig(path, dpi=110)
        written.append(path)
        made.append((title, path, caption))

    sweeps = summary.sweeps()
    # Figures 5 and 6: across data sets, per stages value. The paper's sweep (pseudo / ortho-schur, or the
    # longest sweep present) alone, and every sweep, one panel each, when there are several.
    main_sweep = None
    if sweeps:
        main_sweep = ("pseudo", "ortho-schur") if ("pseudo", "ortho-schur") in sweeps else max(
            sweeps, key=lambda key: len(sweeps[key]))
    for number, attribute, ylabel, what in (
            (5, "err_mean", "mean test error per data set", "error"),
            (6, "time_mean", "log10 mean fit time (s) per data set", "log running time")):
        stem = f"fig{number}_stages_{'error' if number == 5 else 'time'}"
        for chosen, name in (([main_sweep], f"{stem}.png"), (list(sweeps), f"{stem}_all.png")):
            if not sweeps or (name.endswith("_all.png") and len(sweeps) < 2):
                continue
            title = (f"Stages ({what}), {main_sweep[0]} / {main_sweep[1]}" if len(chosen) == 1
                     else f"Stages ({what}) across data sets, every stage sweep")
            fig, axes = panels(len(chosen), ncols=5, title=title)
            for ax, (criterion, deflation) in zip(axes, chosen):
                data = []
                for stage in sweeps[criterion, deflation]:
                    method = summary.by_variant[criterion, deflation, stage]
                    values = _finite([getattr(summary.stats[method, d], attribute)
                                      for d in summary.method_datasets(method)])
                    data.append(np.log10(values[values > 0]) if attribute == "time_mean" else values)
                boxes(ax, data, [str(stage) for stage in sweeps[criterion, deflation]])
                ax.set_title(f"{criterion} / {deflation}" if len(chosen) > 1 else "across data sets", fontsize=10)
                ax.set_xlabel("stages")
                ax.set_ylabel(ylabel, fontsize=8)
            quantity = "mean test error" if number == 5 else "log10 mean fit time"
            if len(chosen) == 1:
                save(fig, name, f"Figure {number}: stages ({what}), {main_sweep[0]} / {main_sweep[1]}",
                     f"Box plot over data sets of the per-data-set {quantity} for each stages value (red line: "
                     f"median); paper 000, Figure {number}, shows pseudo / ortho-schur.")
            else:
                save(fig, name, f"Figure {number} for every stage sweep ({what})",
                     f"As Figure {number}, one panel per (criterion, deflation) run with several stages values.")

    stage1 = {(c, d): m for (c, d, s), m in summary.by_variant.items() if s == 1}

    def per_dataset_figure(number, name, title, caption, methods_labels):
        datasets = [d for d in summary.datasets if any((m, d) in summary.stats for m, _ in methods_labels)]
        if not datasets:
            return
        fig, axes = panels(len(datasets), ncols=4, title=title)
        for ax, d in zip(axes, datasets):
            data = [summary.stats[m, d].errors if (m, d) in summary.stats else [] for m, _ in methods_labels]
            boxes(ax, data, [label for _, label in methods_labels], rotate=len(methods_labels) > 3)
            ax.set_title(d, fontsize=10)
            ax.set_ylabel("test error", fontsize=8)
        save(fig, name, f"Figure {number}: {title}", caption)

    # Figure 7: deflations at a fixed criterion (pseudo), stages 1.
    criterion = _pick("pseudo", {c: sum(cc == c for cc, _ in stage1) for c, _ in stage1})
    if criterion:
        deflations = _order({d for c, d in stage1 if c == criterion}, DEFLATIONS)
        per_dataset_figure(7, "fig7_deflations.png", f"Deflations (criterion {criterion}, stages 1)",
                           f"Test errors over the realisations for each deflation, criterion {criterion}, stages 1 "
                           "(paper 000, Figure 7, uses pseudo).",
                           [(stage1[criterion, d], d) for d in deflations])
        if criterion != "pseudo":
            notes.append(f"Figure 7 uses criterion {criterion}: no pseudo results at stages 1.")
    # Figure 8: criteria at a fixed deflation (ortho-schur), stages 1.
    deflation = _pick("ortho-schur", {d: sum(dd == d for _, dd in stage1) for _, d in stage1})
    if deflation:
        criteria = _order({c for c, d in stage1 if d == deflation}, CRITERIA)
        per_dataset_figure(8, "fig8_criteria.png", f"Criteria (deflation {deflation}, stages 1)",
                           f"Test errors over the realisations for each criterion, deflation {deflation}, stages 1 "
                           "(paper 000, Figure 8, uses ortho-schur).",
                           [(stage1[c, deflation], c) for c in criteria])
        if deflation != "ortho-schur":
            notes.append(f"Figure 8 uses deflation {deflation}: no ortho-schur results at stages 1.")
    # Figure 9: stages at a fixed criterion and deflation.
    if sweeps:
        sweep = main_sweep
        per_dataset_figure(9, "fig9_stages.png", f"Stages ({sweep[0]} / {sweep[1]})",
                           f"Test errors over the realisations for each stages value, {sweep[0]} / {sweep[1]} "
                           "(paper 000, Figure 9, uses pseudo / ortho-schur).",
                           [(summary.by_variant[sweep + (s,)], str(s)) for s in sweeps[sweep]])
    # Error against k from paths.csv.
    curves = _curves(results)
    if curves:
        path_methods = {m for _, m, _ in curves}
        preferred = [MPKFDA_METHOD, "pseudo/ortho-schur/1", "random/none/1"]
        chosen = [m for m in preferred if m in path_methods]
        chosen += [m for m in sorted(path_methods, key=summary.method_key) if m not in chosen]
        if len(chosen) > 8:
            notes.append(f"The error-against-k figure shows 8 of the {len(chosen)} methods of `paths.csv` "
                         "(all are in paths.csv).")
            chosen = chosen[:8]
        datasets = _order({d for d, m, _ in curves if m in chosen}, summary.datasets)
        fig, axes = panels(len(datasets), ncols=4, title="Error against sparsity k (solid: CV mean, dashed: test, realisation 1)")
        colours = {m: f"C{i}" for i, m in enumerate(chosen)}
        for ax, d in zip(axes, datasets):
            for m in chosen:
                for curve, style in (("cv", "-"), ("test", "--")):
                    if (d, m, curve) in curves:
                        k, err = curves[d, m, curve]
                        ax.plot(k, err, style, color=colours[m], marker=".", markersize=3, linewidth=1.2,
                                label=m if curve == "cv" or (d, m, "cv") not in curves else None)
            ax.set_title(d, fontsize=10)
            ax.set_xlabel("k (bases)")
            ax.set_ylabel("error", fontsize=8)
            ax.grid(alpha=0.3)
        handles, labels = [], []
        for ax in axes:
            for handle, label in zip(*ax.get_legend_handles_labels()):
                if label not in labels:
                    handles.append(handle)
                    labels.append(label)
        if handles:
            fig.legend(handles, labels, loc="outside lower center", ncols=min(4, len(labels)), fontsize=8)
        save(fig, "paths.png", "Error against k",
             "Mean validation error over the CV folds (solid) and test error of realisation 1 (dashed) along the "
             "sparsity path, per data set.")


# --------------------------------------------------------------------------- the report


def write_report(results_dir, out_dir=None, *, figures: bool = True, canonical_only: bool = False,
                 mpkfda_method: str = MPKFDA_METHOD) -> List[Path]:
    """Write the tables (Markdown and CSV), the figures (PNG) and ``report.md``.

    Parameters
    ----------
    results_dir : path-like
        Directory written by ``gkfda experiment`` (``results.csv``; optionally
        ``gamma.csv``, ``paths.csv``, ``config.json``). Partial contents are fine.
    out_dir : path-like, optional
        Where to write; default ``results_dir / "report"``. Created if needed.
    figures : bool, default True
        Draw the PNG figures when matplotlib is importable (they are skipped, and
        ``report.md`` says so, when it is not).
    canonical_only : bool, default False
        Report only the canonical IDA splits.
    mpkfda_method : str, default ``"optimal/schur/1"``
        The method shown as MPKFDA in the Table 1 comparison.

    Returns
    -------
    list of Path
        Every file written, ``report.md`` last.

    Raises
    ------
    FileNotFoundError
        If ``results_dir`` does not exist.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from gkfda.study.report import write_report
    >>> empty = pathlib.Path(tempfile.mkdtemp())
    >>> files = write_report(empty, figures=False)
    >>> files[-1].name, "`results.csv` is absent." in files[-1].read_text()
    ('report.md', True)
    """
    results = load_results(results_dir, canonical_only=canonical_only)
    out = Path(out_dir) if out_dir is not None else results.directory / "report"
    out.mkdir(parents=True, exist_ok=True)
    summary = _Summary(results.runs)
    written: List[Path] = []

    grid_sections, (long_name, long_header, long_rows) = _grid_sections(summary)
    stage_sections = _stage_sections(summary)
    table1_sections = _table1_sections(summary, mpkfda_method)
    counts = _counts_section(summary)
    extra = [s for s in (_gamma_section(results), _paths_section(results, summary)) if s is not None]
    sections = grid_sections + stage_sections + table1_sections + [counts] + extra
    for section in sections:
        section.write(out, written)
    long_path = out / long_name
    with open(long_path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(long_header)
        writer.writerows([[_csv_value(v) for v in row] for row in long_rows])
    written.append(long_path)

    figure_notes: List[str] = []
    made: List[Tuple[str, Path, str]] = []
    if figures:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            figure_notes.append("matplotlib is not installed, so no figures were drawn "
                                "(`pip install gkfda[plots]` or `pip install matplotlib`).")
        else:
            try:
                _figures(results, summary, out / "figures", written, figure_notes, made)
            except Exception as error:  # a figure must never stop the report
                figure_notes.append(f"Drawing the figures failed ({type(error).__name__}: {error}); "
                                    "the tables are complete.")
            if not made and not figure_notes:
                figure_notes.append("No data for any figure yet.")
    else:
        figure_notes.append("Figures were not requested.")

    # The index.
    n_runs = len(results.runs)
    lines = ["# gkfda experiment report", ""]
    lines.append(f"Results directory: `{results.directory}`. {n_runs} result row(s): "
                 f"{len(summary.datasets)} data set(s), {len(summary.methods)} method(s) "
                 f"({len(summary.greedy)} greedy variant(s)"
                 + (", baselines " + ", ".join(b for b in BASELINES if b in summary.info) if any(
                     b in summary.info for b in BASELINES) else "") + ").")
    if results.config is not None:
        wall = results.config.get("wall_time_s")
        if _isnum(wall):
            lines.append(f"Wall time of the run(s): {wall:.1f} s ({wall / 3600:.2f} h).")
    lines += ["", "Tables are also in CSV next to this file (same name, `.csv`); "
              "published values are from `gkfda.study.published` (paper 000: Diethe 2015, Figures 1-4; "
              "paper 002: Diethe et al. 2009, Table 1).", ""]
    lines += ["## Contents", ""]
    lines += [f"- [{s.title}]({s.stem}.md)" for s in sections]
    if made:
        lines.append("- [Figures](#figures)")
    lines += ["", "## Missing and partial results", ""]
    missing = _missing(results, summary)
    lines += [f"- {m}" for m in missing] if missing else ["Nothing missing: every configured or present "
                                                         "(method, data set) has all its realisations."]
    for section in sections:
        lines += ["", f"## {section.title}", "", section.body(), "",
                  f"Files: [{section.stem}.md]({section.stem}.md), [{section.stem}.csv]({section.stem}.csv)."]
    lines += ["", f"Per-cell counts and published values of the stages = 1 grids: [{long_name}]({long_name}).", ""]
    lines += ["## Figures", ""]
    for title, path, caption in made:
        rel = path.relative_to(out).as_posix()
        lines += [f"### {title}", "", f"![{title}]({rel})", "", caption, ""]
    lines += [note for n in figure_notes for note in (n, "")]
    if results.config is not None:
        # One line per top-level key: a full run lists ~140 variants.
        body = ",\n".join(f"  {json.dumps(key)}: {json.dumps(value, default=str)}"
                           for key, value in results.config.items())
        lines += ["## Configuration", "", "`config.json`:", "", "```json", "{\n" + body + "\n}", "```", ""]
    index = out / "report.md"
    index.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    written.append(index)
    return written


# --------------------------------------------------------------------------- command line


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``gkfda report`` arguments to ``parser`` (a sub-command parser or a fresh one)."""
    parser.add_argument("results_dir", help="results directory of `gkfda experiment`")
    parser.add_argument("--out", default=None, help="output directory (default: RESULTS_DIR/report)")
    parser.add_argument("--canonical-only", action="store_true", help="report only the canonical IDA splits")
    parser.add_argument("--no-figures", action="store_true", help="do not draw the PNG figures")
    parser.add_argument("--mpkfda", default=MPKFDA_METHOD,
                        help=f"method shown as MPKFDA in the Table 1 comparison (default: {MPKFDA_METHOD})")
    return parser


def run(args: argparse.Namespace) -> int:
    """Run ``gkfda report`` with parsed arguments; returns the exit status."""
    try:
        files = write_report(args.results_dir, getattr(args, "out", None),
                             figures=not getattr(args, "no_figures", False),
                             canonical_only=getattr(args, "canonical_only", False),
                             mpkfda_method=getattr(args, "mpkfda", MPKFDA_METHOD))
    except FileNotFoundError as error:
        print(f"gkfda report: {error}", file=sys.stderr)
        return 2
    index = files[-1]
    n_png = sum(f.suffix == ".png" for f in files)
    print(f"gkfda report: {len(files)} files ({n_png} figures) in {index.parent}; start with {index}")
    return 0


def main(argv=None) -> int:
    """``gkfda report DIR [--out OUT]`` as a stand-alone program (``python -m gkfda.study.report``)."""
    parser = add_arguments(argparse.ArgumentParser(
        prog="gkfda report", description="Tables and figures from the results directory of `gkfda experiment`."))
    return run(parser.parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
