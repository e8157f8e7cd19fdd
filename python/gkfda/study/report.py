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

The results are read with pandas, grouped per (method, data set) and reduced to the
tables; the Markdown is ``DataFrame.to_markdown`` (tabulate), the figures matplotlib's.

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
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from .._core import CRITERIA, DEFLATIONS
from . import published
from .protocol import BASELINES, MPKFDA_METHOD

__all__ = ["write_report", "load_results", "ResultSet", "add_arguments", "run", "main", "MPKFDA_METHOD"]

#: Realisations of the IDA benchmarks (100 each, 20 for image and splice).
_BENCHMARK_REALISATIONS = {name: 100 for name in published.TABLE1_002}
_BENCHMARK_REALISATIONS.update(image=20, splice=20)

_GRID_METRICS = (
    # key, figure of paper 000, title, column of the statistics, Markdown format, unit
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
_NUMBERS = ("gamma", "k", "k_used", "m_train", "m_test", "n_features", "test_error", "fit_time", "cv_error")
_KEY = ["dataset", "method", "realisation"]
_TRUE, _FALSE = ("1", "1.0", "true", "yes"), ("0", "0.0", "false", "no")


# --------------------------------------------------------------------------- loading


@dataclass
class ResultSet:
    """What a results directory holds, parsed.

    Attributes
    ----------
    directory : Path
    runs : DataFrame
        The rows of ``results.csv`` (the last one of duplicated (dataset, method,
        realisation) keys), filtered to canonical splits when asked: the text columns
        stripped, the numbers as floats (NaN where missing or not finite), ``canonical``
        as 1, 0 or NaN, criterion, deflation and stages completed from a
        ``criterion/deflation/stages`` method name, and ``sparsity = 100 k_used / m_train``.
    present : dict
        ``{file name: bool}`` for ``results.csv``, ``gamma.csv``, ``paths.csv`` and ``config.json``.
    gamma : DataFrame
        Rows of ``gamma.csv``, as text.
    paths : DataFrame
        Rows of ``paths.csv`` with finite ``k`` and ``error`` as floats.
    config : dict or None
        ``config.json``.
    notes : list of str
        Problems met while reading (skipped rows, duplicates, unreadable files).
    """

    directory: Path
    runs: pd.DataFrame = field(default_factory=lambda: _parse_runs(pd.DataFrame()))
    present: Dict[str, bool] = field(default_factory=dict)
    gamma: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["dataset"]))
    paths: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["dataset", "method", "curve", "k", "error"]))
    config: Optional[dict] = None
    notes: List[str] = field(default_factory=list)


def _read_csv(path: Path, notes: List[str]) -> pd.DataFrame:
    """Every field as text ("" where empty or missing in a short row)."""
    try:
        return pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8").fillna("")
    except pd.errors.EmptyDataError:
        return pd.DataFrame()
    except (OSError, ValueError, UnicodeDecodeError) as error:  # pandas' ParserError is a ValueError
        notes.append(f"`{path.name}` could not be read ({error}).")
        return pd.DataFrame()


def _text(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame:
        return pd.Series("", index=frame.index, dtype=object)
    return frame[column].astype(str).str.strip()


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def _numbers(values: pd.Series) -> pd.Series:
    """Floats; NaN for what is empty, not a number or not finite.

    Python's ``float`` reads them: it round-trips the written values exactly, where
    ``pd.to_numeric`` may not (pandas 2 misses the last bit of some)."""
    numbers = values.map(_float).astype(float)
    return numbers.where(np.isfinite(numbers))


def _whole(numbers: pd.Series) -> pd.Series:
    return numbers.where(numbers == np.floor(numbers))


def _parse_runs(raw: pd.DataFrame) -> pd.DataFrame:
    runs = pd.DataFrame({name: _text(raw, name) for name in ("dataset", "method", "criterion", "deflation", "params")})
    for name in _NUMBERS:
        runs[name] = _numbers(_text(raw, name))
    runs["realisation"] = _whole(_numbers(_text(raw, "realisation")))
    stages = _whole(_numbers(_text(raw, "stages")))
    # A "criterion/deflation/stages" method name fills in what its row leaves empty.
    parts = runs["method"].str.extract(r"^([^/]*)/([^/]*)/([^/]*)$")
    named_stages = _whole(_numbers(parts[2]))
    named = named_stages.notna()
    for position, column in enumerate(("criterion", "deflation")):
        runs[column] = runs[column].mask(named & (runs[column] == ""), parts[position])
    runs["stages"] = stages.mask(named & stages.isna(), named_stages)
    flag = _text(raw, "canonical").str.lower()
    runs["canonical"] = np.where(flag.isin(_TRUE), 1.0, np.where(flag.isin(_FALSE), 0.0, np.nan))
    k = runs["k_used"].fillna(runs["k"])
    runs["sparsity"] = 100.0 * k / runs["m_train"].where(runs["m_train"] != 0)
    return runs


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
        runs = _parse_runs(_read_csv(directory / "results.csv", result.notes))
        usable = (runs["dataset"] != "") & (runs["method"] != "") & runs["realisation"].notna()
        skipped = int((~usable).sum())
        if skipped:
            result.notes.append(f"{skipped} row(s) of `results.csv` without a data set, method or realisation were skipped.")
        runs = runs[usable]
        unique = runs.drop_duplicates(_KEY, keep="last")
        duplicates = len(runs) - len(unique)
        if duplicates:
            result.notes.append(f"{duplicates} duplicated (dataset, method, realisation) row(s); the last one of each was kept.")
        bad = int(unique["test_error"].isna().sum())
        if bad:
            result.notes.append(f"{bad} row(s) have no finite `test_error`; they are ignored in the error averages.")
        if canonical_only:
            kept = unique[unique["canonical"] == 1]
            result.notes.append(f"Only canonical splits are reported ({len(kept)} of {len(unique)} rows).")
            unique = kept
        result.runs = unique.reset_index(drop=True)

    if result.present["gamma.csv"]:
        gamma = _read_csv(directory / "gamma.csv", result.notes)
        if "dataset" in gamma:
            result.gamma = gamma[gamma["dataset"] != ""]
    if result.present["paths.csv"]:
        raw = _read_csv(directory / "paths.csv", result.notes)
        paths = pd.DataFrame({name: _text(raw, name) for name in ("dataset", "method", "curve")})
        paths["k"], paths["error"] = _numbers(_text(raw, "k")), _numbers(_text(raw, "error"))
        result.paths = paths[(paths["dataset"] != "") & (paths["method"] != "") & paths["k"].notna()
                             & paths["error"].notna()]
    if result.present["config.json"]:
        try:
            config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
            result.config = config if isinstance(config, dict) else {"config": config}
        except (OSError, ValueError) as error:
            result.notes.append(f"`config.json` could not be parsed ({error}).")
    return result


# --------------------------------------------------------------------------- statistics


def _mean(values) -> float:
    """The mean of the finite values, NaN if none.

    NumPy's sum of them, in their order: pandas' own means (compensated in groups, zeros
    in place of NaN elsewhere) can differ in the last bits, and so in a rounded cell."""
    array = np.asarray(values, dtype=float)
    array = array[np.isfinite(array)]
    return float(array.mean()) if array.size else math.nan


def _sd(values) -> float:
    """The standard deviation (ddof=1) of the finite values, NaN with fewer than two."""
    array = np.asarray(values, dtype=float)
    array = array[np.isfinite(array)]
    return float(array.std(ddof=1)) if array.size >= 2 else math.nan


def _mode(values: pd.Series) -> float:
    """The most common value (the smallest of the most common), NaN if none."""
    modes = values.dropna().mode()
    return float(modes.iloc[0]) if len(modes) else math.nan


def _order(values, canonical) -> list:
    """Known names in their canonical order, then the others alphabetically."""
    rank = {name: i for i, name in enumerate(canonical)}
    return sorted(set(values), key=lambda v: (rank.get(v, len(rank)), str(v)))


def _rank(value, canonical) -> int:
    return canonical.index(value) if value in canonical else len(canonical)


class _Summary:
    """Per (method, data set) statistics over the realisations, and the methods present.

    ``stats`` is indexed by (method, data set), its data sets in the report's order, with
    columns ``n``, ``n_canonical``, ``first``, ``last``, ``err_mean``, ``err_sd``
    (ddof=1), ``time_mean``, ``sparsity_mean``, ``k_mean``, ``k_used_mean`` and the modes
    of ``n_features``, ``m_train`` and ``m_test``.
    """

    def __init__(self, runs: pd.DataFrame):
        self.runs = runs.sort_values("realisation", kind="stable")
        self.datasets = _order(runs["dataset"], list(published.TABLE1_002))
        self.stats = self.runs.groupby(["method", "dataset"], sort=False).agg(
            n=("realisation", "size"),
            n_canonical=("canonical", lambda flags: int((flags == 1).sum())),
            first=("realisation", "min"),
            last=("realisation", "max"),
            err_mean=("test_error", _mean),
            err_sd=("test_error", _sd),
            time_mean=("fit_time", _mean),
            sparsity_mean=("sparsity", _mean),
            k_mean=("k", _mean),
            k_used_mean=("k_used", _mean),
            n_features=("n_features", _mode),
            m_train=("m_train", _mode),
            m_test=("m_test", _mode),
        )
        if len(self.stats):
            position = {d: i for i, d in enumerate(self.datasets)}
            self.stats = self.stats.sort_index(level="dataset", key=lambda level: level.map(position), sort_remaining=False)
        # A method's criterion, deflation and stages, from its first row.
        info = runs.drop_duplicates("method").set_index("method")[["criterion", "deflation", "stages"]]
        self.info = {m: (c or None, d or None, None if pd.isna(s) else int(s))
                     for m, (c, d, s) in zip(info.index, info.itertuples(index=False))}
        self.greedy = {m: i for m, i in self.info.items() if i[0] and i[1] and i[2] is not None}
        self.by_variant = {info: m for m, info in sorted(self.greedy.items())}
        self.methods = sorted(self.info, key=self.method_key)

    def method_key(self, method: str):
        criterion, deflation, stages = self.info.get(method, (None, None, None))
        if method in BASELINES:
            return (0, BASELINES.index(method), 0, 0, method)
        if method in self.greedy:
            return (1, _rank(criterion, CRITERIA), _rank(deflation, DEFLATIONS), stages, method)
        return (2, 0, 0, 0, method)

    def has(self, method: str, dataset: str) -> bool:
        return (method, dataset) in self.stats.index

    def of(self, method: str) -> pd.DataFrame:
        """The statistics of ``method``, one row per data set it has, in the report's order."""
        if method in self.info:
            return self.stats.xs(method, level="method")
        return self.stats.iloc[:0].droplevel("method")

    def errors(self, method: str, dataset: str) -> np.ndarray:
        """The test errors of the realisations, in their order."""
        chosen = self.runs[(self.runs["method"] == method) & (self.runs["dataset"] == dataset)]
        return chosen["test_error"].to_numpy()

    def average(self, method: str, column: str) -> Tuple[float, int]:
        """Mean over data sets of a per-data-set statistic, and how many data sets had it."""
        values = self.of(method)[column]
        return _mean(values), int(values.count())

    def sweeps(self) -> Dict[Tuple[str, str], List[int]]:
        """``{(criterion, deflation): sorted stages}`` for variants run with more than one stages value."""
        found: Dict[Tuple[str, str], set] = {}
        for criterion, deflation, stages in self.by_variant:
            found.setdefault((criterion, deflation), set()).add(stages)
        keys = sorted(found, key=lambda cd: (_rank(cd[0], CRITERIA), _rank(cd[1], DEFLATIONS), cd))
        return {key: sorted(found[key]) for key in keys if len(found[key]) > 1}


# --------------------------------------------------------------------------- formatting


def _isnum(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and math.isfinite(float(value))


def _fmt(value, spec: str = "{:.3f}") -> str:
    return spec.format(float(value)) if _isnum(value) else _DASH


def markdown_table(table: pd.DataFrame) -> str:
    """A pipe table of text cells as they are (no padding, no number parsing)."""
    if table.empty:
        return ""
    cells = table.astype(str).map(lambda text: text.replace("|", "\\|").replace("\n", " "))
    return cells.to_markdown(index=False, tablefmt="pipe", stralign=None, numalign=None, disable_numparse=True)


@dataclass
class _Section:
    """One table of the report: written as ``stem.md`` and ``stem.csv`` and embedded in report.md."""

    stem: str
    title: str
    text: str
    table: pd.DataFrame  # the Markdown table's text cells
    csv: pd.DataFrame
    notes: List[str] = field(default_factory=list)

    def body(self) -> str:
        parts = [self.text, markdown_table(self.table)] + [n for n in self.notes if n]
        return "\n\n".join(p for p in parts if p)

    def write(self, out_dir: Path, written: List[Path]) -> None:
        md = out_dir / f"{self.stem}.md"
        md.write_text(f"# {self.title}\n\n{self.body()}\n", encoding="utf-8")
        path = out_dir / f"{self.stem}.csv"
        _write_csv(self.csv, path)
        written += [md, path]


def _write_csv(frame: pd.DataFrame, path: Path) -> None:
    frame.to_csv(path, index=False, na_rep="", lineterminator="\r\n", encoding="utf-8")


def _frame(rows, columns) -> pd.DataFrame:
    """Rows of mixed values as they are (ints stay ints beside floats and blanks)."""
    return pd.DataFrame(list(rows), columns=list(columns), dtype=object)


# --------------------------------------------------------------------------- the tables


def _grid_sections(summary: _Summary, stages: int = 1):
    """Paper 000, Figures 1-4, and their comparison with the published grids."""
    cells = {(d, c): m for (c, d, s), m in summary.by_variant.items() if s == stages}
    deflations = _order({d for d, _ in cells}, DEFLATIONS)
    criteria = _order({c for _, c in cells}, CRITERIA)
    order = sorted(cells, key=lambda cell: (deflations.index(cell[0]), criteria.index(cell[1])))
    n_all = len(summary.datasets)
    long = pd.DataFrame(order, columns=["deflation", "criterion"])
    long["stages"] = stages
    long["method"] = [cells[cell] for cell in order]
    long["n_datasets"] = [len(summary.of(m)) for m in long["method"]]
    long["n_realisations"] = [int(summary.of(m)["n"].sum()) for m in long["method"]]
    averages_of = summary.stats.groupby(level="method", sort=False)
    sections = []
    for key, figure, title, column, spec, unit in _GRID_METRICS:
        averages = averages_of[column].agg(mean=_mean, count="count")
        long[key] = long["method"].map(averages["mean"]).astype(float)
        long[f"{key}_n_datasets"] = long["method"].map(averages["count"])
        long[f"{key}_paper"] = pd.Series([published.FIGURES_000[figure]["cells"].get(cell) for cell in order],
                                         dtype=object)
        grid = long.pivot(index="deflation", columns="criterion", values=key).reindex(
            index=deflations, columns=criteria)
        short = long.pivot(index="deflation", columns="criterion", values=f"{key}_n_datasets").reindex(
            index=deflations, columns=criteria).lt(n_all) & grid.notna()
        best = long[key].min()

        def text(value, partial):
            cell = _fmt(value, spec) + ("†" if partial else "")
            return f"**{cell}**" if _isnum(value) and value == best else cell

        row_means, column_means = grid.apply(_mean, axis=1), grid.apply(_mean)
        table = pd.DataFrame({
            "Deflation": deflations,
            **{c: [text(grid.at[d, c], short.at[d, c]) for d in deflations] for c in criteria},
            "Average": [_fmt(v, spec) for v in row_means],
        }, dtype=object)
        csv = grid.assign(Average=row_means).reset_index()
        # The overall mean in the order of the cells found (the variants' names), not of the grid.
        bottom = list(column_means) + [_mean([averages.at[m, "mean"] for m in cells.values()])]
        table.loc[len(table)] = ["**Average**"] + [_fmt(v, spec) for v in bottom]
        csv.loc[len(csv)] = ["Average"] + bottom
        notes = []
        if short.to_numpy().any():
            notes.append(f"† averaged over fewer than all {n_all} data sets of the results "
                         f"(see `grid_stages{stages}_long.csv` for the counts; for ASD a data set needs "
                         "two realisations).")
        if not cells:
            notes.append(f"No greedy variant with stages = {stages} in the results.")
        sections.append(_Section(
            stem=f"fig{figure}_{key}",
            title=f"Paper 000, Figure {figure}: {title}, stages = {stages}",
            text=f"Rows: deflations; columns: criteria. Cells: {unit}; the smallest cell is in bold. "
                 "`Average` is the plain mean of the cells shown.",
            table=table if cells else pd.DataFrame(), csv=csv, notes=notes,
        ))
        sections.append(_versus_paper(figure, title, spec, long, key, deflations, criteria))
    return sections, (f"grid_stages{stages}_long.csv", long)


def _versus_paper(figure, title, spec, long, key, deflations, criteria) -> _Section:
    """A stages = 1 grid next to the published one: only the cells present in both."""
    common = long[long[f"{key}_paper"].notna() & long[key].notna()]
    common = pd.DataFrame({"deflation": common["deflation"], "criterion": common["criterion"],
                           "ours": common[key], "paper": common[f"{key}_paper"].astype(float)})
    common["difference"] = common["ours"] - common["paper"]
    common["n_datasets"] = long.loc[common.index, f"{key}_n_datasets"]
    plain = spec.replace("%", "")
    common["text"] = [
        f"{_fmt(ours, plain)} / {_fmt(theirs, plain)} ({'+' if ours >= theirs else '−'}{_fmt(abs(ours - theirs), plain)})"
        for ours, theirs in zip(common["ours"], common["paper"])
    ]
    table = common.pivot(index="deflation", columns="criterion", values="text")
    table = table.reindex(index=[d for d in deflations if d in table.index], columns=criteria).fillna(_DASH)
    if len(common):
        ours_best, paper_best = common.loc[common["ours"].idxmin()], common.loc[common["paper"].idxmin()]
        note = (f"{len(common)} common cell(s); mean difference {_mean(common['difference']):+.4g}, mean absolute "
                f"difference {_mean(common['difference'].abs()):.4g}. Best of the common cells: ours "
                f"{ours_best['deflation']} + {ours_best['criterion']}, paper {paper_best['deflation']} + "
                f"{paper_best['criterion']}.")
    else:
        note = "No cell in common with the published grid."
    return _Section(
        stem=f"fig{figure}_{key}_vs_paper",
        title=f"Figure {figure} ({title}) against paper 000",
        text="Each cell: ours / paper (ours − paper), for the cells present in both "
             "(the paper has no ortho-hotelling).",
        table=table.reset_index().rename(columns={"deflation": "Deflation"}) if len(common) else pd.DataFrame(),
        csv=common.drop(columns="text"), notes=[note],
    )


def _stage_sections(summary: _Summary) -> List[_Section]:
    """Paper 000, Figures 5-6 (and the data of Figure 9): every stage sweep present."""
    sweeps = summary.sweeps()
    paper = published.STAGE_SWEEP_000
    rows_md, rows_csv, boxes, box_md = [], [], [], []
    for (criterion, deflation), stage_values in sweeps.items():
        per_stage = {}
        for s in stage_values:
            method = summary.by_variant[criterion, deflation, s]
            stats = per_stage[s] = summary.of(method)
            (aer, n), (asd, _), (art, _), (as_, _) = (
                summary.average(method, column) for column in ("err_mean", "err_sd", "time_mean", "sparsity_mean"))
            q = stats["err_mean"].dropna().quantile([0, 0.25, 0.5, 0.75, 1]).tolist() or [math.nan] * 5
            quoted = paper["stages"].get(s, {}) if (criterion, deflation) == (paper["criterion"], paper["deflation"]) else {}
            rows_md.append([criterion, deflation, s, n, _fmt(aer), _fmt(asd), _fmt(art), _fmt(as_, "{:.1f}%"),
                            f"{_fmt(q[2])} [{_fmt(q[1])}, {_fmt(q[3])}]",
                            " / ".join(_fmt(quoted.get(k), "{:g}") for k in ("aer", "asd", "art")) if quoted else ""])
            rows_csv.append([criterion, deflation, s, method, n, aer, asd, art, as_, *q,
                             quoted.get("aer"), quoted.get("asd"), quoted.get("art")])
            times = stats["time_mean"]
            boxes.append(pd.DataFrame({
                "criterion": criterion, "deflation": deflation, "stages": s, "dataset": stats.index,
                "n_realisations": stats["n"], "mean_error": stats["err_mean"], "sd_error": stats["err_sd"],
                "mean_fit_time": times,
                "log10_mean_fit_time": times.map(lambda t: math.log10(t) if t > 0 else math.nan),
                "mean_sparsity": stats["sparsity_mean"]}))
        table = pd.concat({f"stages = {s}": stats.apply(
            lambda row: f"{_fmt(row['err_mean'])} ({_fmt(row['time_mean'], '{:.3g}')} s)", axis=1)
            for s, stats in per_stage.items() if len(stats)}, axis=1)
        table = table.reindex(index=_order(table.index, summary.datasets),
                              columns=[f"stages = {s}" for s in stage_values]).fillna(_DASH)
        box_md.append(f"**{criterion} / {deflation}** — mean test error (mean fit time) per data set\n\n"
                      + markdown_table(table.rename_axis("Data set").reset_index()))
    none = "" if sweeps else "No (criterion, deflation) was run with more than one stages value."
    summary_section = _Section(
        stem="stages",
        title="Paper 000, Figures 5-6: stage sweeps",
        text="For every (criterion, deflation) run with several stages values: AER, ASD, ART and AS over the "
             "data sets (as in Figures 1-4), and the median [quartiles] across data sets of the mean test error "
             "(the box of Figure 5). The paper quotes numbers only for pseudo / ortho-schur, stages 1 and 2 "
             "(AER / ASD / ART), which do not match its own Figures 1-3 for the same configuration.",
        table=_frame(rows_md, ["Criterion", "Deflation", "Stages", "Data sets", "AER", "ASD", "ART (s)", "AS",
                               "Median error [IQR]", "Paper AER / ASD / ART"]),
        csv=_frame(rows_csv, ["criterion", "deflation", "stages", "method", "n_datasets", "aer", "asd", "art", "as",
                              "error_min", "error_q1", "error_median", "error_q3", "error_max",
                              "paper_aer", "paper_asd", "paper_art"]),
        notes=[none],
    )
    box_columns = ["criterion", "deflation", "stages", "dataset", "n_realisations", "mean_error", "sd_error",
                   "mean_fit_time", "log10_mean_fit_time", "mean_sparsity"]
    box_section = _Section(
        stem="stages_datasets",
        title="Stage sweeps per data set (box-plot data of Figures 5, 6 and 9)",
        text="\n\n".join(["Mean test error and mean fit time over the realisations, per data set and stages value."]
                         + box_md),
        table=pd.DataFrame(),
        csv=pd.concat(boxes, ignore_index=True) if boxes else pd.DataFrame(columns=box_columns),
        notes=[none],
    )
    return [summary_section, box_section]


_TABLE1_COLUMNS = ("kfda_error", "kfda_sd", "mpkfda_error", "mpkfda_sd", "mpkfda_k", "svm_error", "svm_sd")


def _table1_sections(summary: _Summary, mpkfda: str = MPKFDA_METHOD) -> List[_Section]:
    """Paper 002, Table 1 from our results, and next to the published one."""
    methods = {"kfda": "kfda", "mpkfda": mpkfda, "svm": "svm"}
    datasets = [d for d in summary.datasets if any(summary.has(m, d) for m in methods.values())]
    stats = {key: summary.of(method).reindex(datasets) for key, method in methods.items()}
    # Dim/Train/Test of the first of KFDA, MPKFDA and SVM that has the data set.
    shape = None
    for key in reversed(list(methods)):
        own = stats[key][["n_features", "m_train", "m_test"]]
        shape = own if shape is None else own.where(stats[key]["n"].notna(), shape)
    table = shape.set_axis(["dim", "train", "test"], axis=1)
    for key in methods:
        table[f"{key}_error"], table[f"{key}_sd"] = stats[key]["err_mean"], stats[key]["err_sd"]
        if key == "mpkfda":
            table["mpkfda_k"] = stats[key]["k_mean"]
    realisations = pd.DataFrame({f"{key}_realisations": stats[key]["n"].fillna(0).astype(int) for key in methods})
    means = table[list(_TABLE1_COLUMNS)].apply(_mean)
    counts = table[list(_TABLE1_COLUMNS)].count()

    def formatted(row):
        return [_fmt(row[c], "{:.1f}" if c == "mpkfda_k" else "{:.4f}") for c in _TABLE1_COLUMNS]

    rows_md = [[d, _fmt(row["dim"], "{:.0f}"), _fmt(row["train"], "{:.0f}"), _fmt(row["test"], "{:.0f}")]
               + formatted(row) for d, row in table.iterrows()]
    csv = pd.concat([table, realisations], axis=1).rename_axis("dataset").reset_index()
    if datasets:
        rows_md.append(["**Mean**", "", "", ""] + formatted(means))
        csv.loc[len(csv)] = {"dataset": "Mean", **means}
        csv = csv.astype({column: "Int64" for column in realisations})
    mismatches = []
    for d, row in table.iterrows():
        paper = published.TABLE1_002.get(d)
        ours = (("dim", row["dim"]), ("train", row["train"]), ("test", row["test"]))
        if paper and any(_isnum(value) and value != paper[key] for key, value in ours):
            mismatches.append(f"{d} (ours {'/'.join(_fmt(value, '{:.0f}') for _, value in ours)}, "
                              f"paper {paper['dim']}/{paper['train']}/{paper['test']})")
    notes = []
    uneven = {k: n for k, n in counts.items() if n < len(datasets)}
    if datasets and uneven:
        notes.append("The Mean row averages each column over the data sets that have it: "
                     + ", ".join(f"{k} over {n} of {len(datasets)}" for k, n in uneven.items()) + ".")
    for key, method in methods.items():
        if method not in summary.info:
            notes.append(f"No `{method}` results: the {key.upper()} columns are empty.")
    if mismatches:
        notes.append("Dim/Train/Test differ from paper 002 for: " + "; ".join(mismatches) + ".")
    ours = _Section(
        stem="table1",
        title="Paper 002, Table 1: KFDA, MPKFDA and SVM per data set",
        text=f"Mean test error and its s.d. over the realisations; MPKFDA is `{mpkfda}`, with its mean selected "
             "sparsity `k`. The Mean row averages the data sets.",
        table=_frame(rows_md, ["Data set", "Dim", "Train", "Test", "KFDA error", "s.d.", "MPKFDA error", "s.d.",
                               "k", "SVM error", "s.d."]),
        csv=csv, notes=notes or ([] if datasets else ["No KFDA, MPKFDA or SVM results."]),
    )
    return [ours, _table1_versus_paper(table.loc[[d for d in datasets if d in published.TABLE1_002]])]


def _table1_versus_paper(table: pd.DataFrame) -> _Section:
    """Ours next to paper 002's Table 1, on the data sets in both."""
    paper = pd.DataFrame.from_dict(published.TABLE1_002, orient="index").reindex(table.index)
    rows_md, rows_csv = [], []

    def pair(error, sd):
        return f"{_fmt(error, '{:.4f}')} ± {_fmt(sd, '{:.4f}')}"

    for d in table.index:
        ours, theirs = table.loc[d], published.TABLE1_002[d]
        row_md, row_csv = [published.PAPER_NAMES_002.get(d, d)], [d]
        for key in ("kfda", "mpkfda", "svm"):
            error, sd = ours[f"{key}_error"], ours[f"{key}_sd"]
            row_md += [pair(error, sd) if _isnum(error) else _DASH, pair(theirs[f"{key}_error"], theirs[f"{key}_sd"])]
            row_csv += [error, sd, theirs[f"{key}_error"], theirs[f"{key}_sd"]]
            if key == "mpkfda":
                row_md += [_fmt(ours["mpkfda_k"], "{:.1f}"), f"{theirs['mpkfda_k']}"]
                row_csv += [ours["mpkfda_k"], theirs["mpkfda_k"]]
        rows_md.append(row_md)
        rows_csv.append(row_csv)
    if len(table):
        # Each column's mean over the data sets where we have it, and the paper's over the same ones.
        have = table[list(_TABLE1_COLUMNS)].notna()
        ours_mean = table[list(_TABLE1_COLUMNS)].apply(_mean)
        paper_mean = paper[list(_TABLE1_COLUMNS)].astype(float).where(have).apply(_mean)
        mean_md, mean_csv = ["**Mean (same data sets)**"], ["Mean (same data sets)"]
        for key in ("kfda", "mpkfda", "svm"):
            error, sd = f"{key}_error", f"{key}_sd"
            mean_md += [pair(ours_mean[error], ours_mean[sd]) if have[error].any() else _DASH,
                        pair(paper_mean[error], paper_mean[sd]) if have[error].any() else _DASH]
            mean_csv += [ours_mean[error], ours_mean[sd], paper_mean[error], paper_mean[sd]]
            if key == "mpkfda":
                mean_md += [_fmt(ours_mean["mpkfda_k"], "{:.1f}"), _fmt(paper_mean["mpkfda_k"], "{:.1f}")]
                mean_csv += [ours_mean["mpkfda_k"], paper_mean["mpkfda_k"]]
        rows_md.append(mean_md)
        rows_csv.append(mean_csv)
    missing = [published.PAPER_NAMES_002[d] for d in published.TABLE1_002 if d not in table.index]
    mean = published.TABLE1_002_MEAN
    return _Section(
        stem="table1_vs_paper",
        title="Table 1 against paper 002",
        text="Mean test error ± s.d., ours and as published (Diethe et al., AISTATS 2009, Table 1). The Mean row "
             "averages, for each column pair, only the data sets where we have the method, so that both sides "
             "cover the same data sets. The paper's printed Mean over all 13 data sets is "
             f"KFDA {mean['kfda_error']:.4f}, MPKFDA {mean['mpkfda_error']:.4f} "
             f"(k = {mean['mpkfda_k']}), SVM {mean['svm_error']:.4f}.",
        table=_frame(rows_md, ["Data set", "KFDA (ours)", "KFDA (paper)", "MPKFDA (ours)", "MPKFDA (paper)",
                               "k (ours)", "k (paper)", "SVM (ours)", "SVM (paper)"]),
        csv=_frame(rows_csv, ["dataset", "kfda_error", "kfda_sd", "kfda_error_paper", "kfda_sd_paper",
                              "mpkfda_error", "mpkfda_sd", "mpkfda_error_paper", "mpkfda_sd_paper", "mpkfda_k",
                              "mpkfda_k_paper", "svm_error", "svm_sd", "svm_error_paper", "svm_sd_paper"]),
        notes=[f"Not in our results: {', '.join(missing)}." if missing else ""],
    )


_KFDAQ_NAMES = {"kfdaq1-mcr": "kFDA_1 sel. MCR", "kfdaq1-nrs": "kFDA_1 sel. NRS",
                "kfdaq0.5-mcr": "kFDA_0.5 sel. MCR", "kfdaq0.5-nrs": "kFDA_0.5 sel. NRS"}


def _kfdaq_sections(summary: _Summary, mpkfda: str = MPKFDA_METHOD) -> List[_Section]:
    """kFDA_q (paper 003): its Table 1 beside ours, and our Table 1 with kFDA_q added;
    none when the results hold no kFDA_q rows."""
    if not any(method in summary.info for method in _KFDAQ_NAMES):
        return []
    return [_table1_003_versus_paper(summary), _table1_with_kfdaq(summary, mpkfda)]


def _table1_003_versus_paper(summary: _Summary) -> _Section:
    """MCR (%) and NRS (%) of kFDA_q under both rules, ours and paper 003's, per data set."""
    methods = [m for m in _KFDAQ_NAMES if m in summary.info]
    datasets = [d for d in summary.datasets if any(summary.has(m, d) for m in methods)]
    rows_md, rows_csv = [], []
    ours_cells = {m: summary.of(m).reindex(datasets) for m in methods}
    for d in datasets:
        paper = published.TABLE1_003.get(d, {})
        row_md, row_csv = [published.PAPER_NAMES_002.get(d, d)], [d]
        for m in methods:
            stats, theirs = ours_cells[m].loc[d], paper.get(m)
            mcr, sd, nrs = 100 * stats["err_mean"], 100 * stats["err_sd"], stats["sparsity_mean"]
            row_md += [f"{_fmt(mcr, '{:.1f}')} ± {_fmt(sd, '{:.1f}')} / {_fmt(nrs, '{:.1f}')}",
                       _paper_003_cell(theirs)]
            row_csv += [mcr, sd, nrs, int(stats["n"]) if _isnum(stats["n"]) else math.nan]
            row_csv += [theirs["mcr"], theirs["spread"], theirs["nrs"]] if theirs else [math.nan] * 3
        rows_md.append(row_md)
        rows_csv.append(row_csv)
    if datasets:
        # Means over the data sets where both have the method.
        mean_md, mean_csv = ["**Mean (same data sets)**"], ["Mean (same data sets)"]
        for m in methods:
            both = [d for d in datasets if summary.has(m, d) and d in published.TABLE1_003]
            ours = summary.of(m).reindex(both)
            mcr, nrs = _mean(100 * ours["err_mean"]), _mean(ours["sparsity_mean"])
            paper_mcr = _mean([published.TABLE1_003[d][m]["mcr"] for d in both])
            paper_nrs = _mean([published.TABLE1_003[d][m]["nrs"] for d in both])
            mean_md += [f"{_fmt(mcr, '{:.1f}')} / {_fmt(nrs, '{:.1f}')}",
                        f"{_fmt(paper_mcr, '{:.1f}')} / {_fmt(paper_nrs, '{:.1f}')}"]
            mean_csv += [mcr, math.nan, nrs, len(both), paper_mcr, math.nan, paper_nrs]
        rows_md.append(mean_md)
        rows_csv.append(mean_csv)
    columns_md = ["Data set"] + [f"{_KFDAQ_NAMES[m]} ({who})" for m in methods for who in ("ours", "paper")]
    columns_csv = ["dataset"] + [f"{m}_{column}" for m in methods for column in (
        "mcr", "mcr_sd", "nrs", "realisations", "mcr_paper", "mcr_spread_paper", "nrs_paper")]
    mean = published.TABLE1_003_MEAN
    return _Section(
        stem="table1_003_vs_paper",
        title="kFDA_q against paper 003, Table 1",
        text="Test misclassification rate MCR (%, mean ± s.d. over the realisations) / retained samples NRS "
             "(%, 100 k_used / m_train), ours and as published (Harrison and Pasupa 2010, Table 1; their ± "
             "is not defined by the paper). \"sel. MCR\" takes the width and ρ of least CV error, \"sel. NRS\" "
             "the sparsest within one standard error of it. The paper's printed Mean over the 13 data sets: "
             + ", ".join(f"{_KFDAQ_NAMES[m]} {mean[m]['mcr']} / {mean[m]['nrs']}" for m in _KFDAQ_NAMES) + ".",
        table=_frame(rows_md, columns_md),
        csv=_frame(rows_csv, columns_csv),
        notes=[f"No `{m}` results." for m in _KFDAQ_NAMES if m not in summary.info],
    )


def _paper_003_cell(theirs) -> str:
    if not theirs:
        return _DASH
    spread = "N/A" if theirs["spread"] is None else f"{theirs['spread']:.1f}"
    return f"{theirs['mcr']:.1f} ± {spread} / {theirs['nrs']:.1f}"


def _table1_with_kfdaq(summary: _Summary, mpkfda: str) -> _Section:
    """Our Table 1 (test error ± s.d.) of KFDA, MPKFDA and the SVM with kFDA_q (sel. MCR)
    beside them, and each sparse method's retained samples."""
    methods = {"KFDA": "kfda", "MPKFDA": mpkfda, "SVM": "svm", "kFDA_1": "kfdaq1-mcr", "kFDA_0.5": "kfdaq0.5-mcr"}
    datasets = [d for d in summary.datasets if any(summary.has(m, d) for m in methods.values())]
    stats = {name: summary.of(method).reindex(datasets) for name, method in methods.items()}
    rows_md, rows_csv = [], []
    for d in datasets:
        row_md, row_csv = [published.PAPER_NAMES_002.get(d, d)], [d]
        for name in methods:
            row = stats[name].loc[d]
            row_md.append(f"{_fmt(row['err_mean'], '{:.4f}')} ± {_fmt(row['err_sd'], '{:.4f}')}"
                          if _isnum(row["err_mean"]) else _DASH)
            row_csv += [row["err_mean"], row["err_sd"]]
            if name != "KFDA":
                row_md.append(_fmt(row["k_used_mean"], "{:.1f}"))
                row_csv.append(row["k_used_mean"])
        rows_md.append(row_md)
        rows_csv.append(row_csv)
    if datasets:
        mean_md, mean_csv = ["**Mean**"], ["Mean"]
        for name in methods:
            error, sd = _mean(stats[name]["err_mean"]), _mean(stats[name]["err_sd"])
            mean_md.append(f"{_fmt(error, '{:.4f}')} ± {_fmt(sd, '{:.4f}')}")
            mean_csv += [error, sd]
            if name != "KFDA":
                k = _mean(stats[name]["k_used_mean"])
                mean_md.append(_fmt(k, "{:.1f}"))
                mean_csv.append(k)
        rows_md.append(mean_md)
        rows_csv.append(mean_csv)
    columns_md, columns_csv = ["Data set"], ["dataset"]
    for name, method in methods.items():
        columns_md.append(f"{name} error")
        columns_csv += [f"{method}_error", f"{method}_sd"]
        if name != "KFDA":
            columns_md.append("k" if name in ("MPKFDA", "SVM") else "retained")
            columns_csv.append(f"{method}_k_used")
    missing = [name for name, method in methods.items() if method not in summary.info]
    return _Section(
        stem="table1_kfdaq",
        title="Table 1 with kFDA_q: KFDA, MPKFDA, SVM and kFDA_q per data set",
        text=f"Mean test error ± s.d. over the realisations; MPKFDA is `{mpkfda}` with its mean number of bases, "
             "the SVM with its mean number of support vectors, kFDA_q (selected for least CV error) with its mean "
             "number of retained samples. The Mean row averages each column over the data sets that have it.",
        table=_frame(rows_md, columns_md),
        csv=_frame(rows_csv, columns_csv),
        notes=[f"No results of: {', '.join(missing)}." if missing else ""],
    )


def _counts_section(summary: _Summary) -> _Section:
    index = pd.MultiIndex.from_product([summary.methods, summary.datasets], names=["method", "dataset"])
    stats = summary.stats.reindex(index)
    n = stats["n"].fillna(0).astype(int)
    canonical = stats["n_canonical"].fillna(0).astype(int)
    cells = (n.astype(str) + " (" + canonical.astype(str) + ")").where(stats["n"].notna(), _DASH)
    table = cells.unstack("dataset").reindex(index=summary.methods, columns=summary.datasets)
    table["Total"] = n.groupby(level="method").sum().astype(str)
    csv = pd.DataFrame({"realisations": n, "canonical": canonical, "generated": n - canonical,
                        "first_realisation": stats["first"].astype("Int64"),
                        "last_realisation": stats["last"].astype("Int64")})
    csv = csv.reset_index()[["dataset", "method", "realisations", "canonical", "generated",
                             "first_realisation", "last_realisation"]]
    return _Section(
        stem="counts",
        title="Realisations per data set and method",
        text="Cells: realisations present (of which canonical IDA splits); — means none.",
        table=table.rename_axis("Method").reset_index() if summary.methods else pd.DataFrame(),
        csv=csv,
    )


def _gamma_section(results: ResultSet) -> Optional[_Section]:
    if not results.present["gamma.csv"]:
        return None
    rank = list(published.TABLE1_002)
    gamma = results.gamma.reindex(columns=["dataset", "gamma", "width", "cv_error", "split_widths"], fill_value="")
    gamma = gamma.iloc[sorted(range(len(gamma)), key=lambda i: (_rank(gamma["dataset"].iloc[i], rank),
                                                                gamma["dataset"].iloc[i]))]
    csv = gamma.assign(**{column: _numbers(gamma[column]) for column in ("gamma", "width", "cv_error")})
    table = pd.DataFrame({
        "Data set": csv["dataset"], "γ": csv["gamma"].map(lambda v: _fmt(v, "{:.4g}")),
        "width": csv["width"].map(lambda v: _fmt(v, "{:.4g}")), "CV error": csv["cv_error"].map(lambda v: _fmt(v, "{:.4f}")),
        "widths per split": csv["split_widths"]})
    return _Section(
        stem="gamma",
        title="Kernel widths chosen by cross-validation",
        text="RBF kernel exp(−γ‖x − z‖²), width = 1/γ: the median of the widths chosen on the cross-validation "
             "realisations (paper 000, Section 3.4).",
        table=table, csv=csv,
        notes=[] if len(table) else ["`gamma.csv` has no rows yet."],
    )


def _curves(results: ResultSet) -> Dict[Tuple[str, str, str], Tuple[np.ndarray, np.ndarray]]:
    """``{(dataset, method, curve): (k, error)}``, each curve sorted by k."""
    paths = results.paths.sort_values(["dataset", "method", "curve", "k", "error"])
    return {key: (group["k"].to_numpy(), group["error"].to_numpy())
            for key, group in paths.groupby(["dataset", "method", "curve"], sort=False)}


def _paths_section(results: ResultSet, summary: _Summary) -> Optional[_Section]:
    if not results.present["paths.csv"]:
        return None
    curves = _curves(results)
    keys = sorted({(d, m) for d, m, _ in curves},
                  key=lambda dm: (_rank(dm[0], summary.datasets), summary.method_key(dm[1]), dm))
    rows = []
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
        k_chosen = summary.stats.at[(m, d), "k_mean"] if summary.has(m, d) else math.nan
        rows.append([d, m, k_best, cv_best, test_at, k_test_best, test_best, k_chosen])
    csv = _frame(rows, ["dataset", "method", "k_min_cv", "cv_error_min", "test_error_at_k_min_cv", "k_min_test",
                        "test_error_min", "k_results_mean"])
    specs = ("{:.0f}", "{:.4f}", "{:.4f}", "{:.0f}", "{:.4f}", "{:.1f}")
    table = _frame([row[:2] + [_fmt(value, spec) for value, spec in zip(row[2:], specs)] for row in rows],
                   ["Data set", "Method", "k (min CV)", "CV error", "test error at k", "k (min test)",
                    "min test error", "k in results"])
    return _Section(
        stem="paths",
        title="Sparsity paths",
        text="From `paths.csv`: the k of least mean validation error (cv curve), the test error of realisation 1 "
             "at that k (nearest k of the test curve), the k of least test error, and the mean k in `results.csv`.",
        table=table, csv=csv,
        notes=[] if rows else ["`paths.csv` has no rows yet."],
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
    if results.runs.empty:
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
    counts = summary.stats["n"]
    for d in datasets:
        have = [counts[m, d] for m in summary.methods if summary.has(m, d)]
        target = _expected_realisations(d, config) if expected_datasets else None
        target = max([target or 0] + have)
        for m in methods:
            n = counts[m, d] if summary.has(m, d) else 0
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
        data = [np.asarray(values, dtype=float) for values in data]
        data = [values[np.isfinite(values)] for values in data]
        positions = [i + 1 for i, values in enumerate(data) if len(values)]
        if positions:
            ax.boxplot([data[p - 1] for p in positions], positions=positions,
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
                    values = summary.of(summary.by_variant[criterion, deflation, stage])[attribute].dropna()
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
        datasets = [d for d in summary.datasets if any(summary.has(m, d) for m, _ in methods_labels)]
        if not datasets:
            return
        fig, axes = panels(len(datasets), ncols=4, title=title)
        for ax, d in zip(axes, datasets):
            data = [summary.errors(m, d) for m, _ in methods_labels]
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
                 mpkfda_method: str = MPKFDA_METHOD, also: Sequence = ()) -> List[Path]:
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
    also : sequence of path-like, default ()
        More results directories whose ``results.csv`` rows join the report's (a row of
        ``results_dir`` wins over one of the same data set, method and realisation): e.g.
        kFDA_q's runs, made with their own protocol settings, beside the main study.

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
    for directory in also:
        other = load_results(directory, canonical_only=canonical_only)
        results.runs = pd.concat([results.runs, other.runs]).drop_duplicates(_KEY, keep="first").reset_index(drop=True)
        results.notes += [f"`{directory}`: {note}" for note in other.notes]
        results.notes.append(f"{len(other.runs)} result row(s) of `{directory}` joined these "
                             f"({', '.join(sorted(set(other.runs['method'])))}).")
    out = Path(out_dir) if out_dir is not None else results.directory / "report"
    out.mkdir(parents=True, exist_ok=True)
    summary = _Summary(results.runs)
    written: List[Path] = []

    grid_sections, (long_name, long) = _grid_sections(summary)
    stage_sections = _stage_sections(summary)
    table1_sections = _table1_sections(summary, mpkfda_method) + _kfdaq_sections(summary, mpkfda_method)
    counts = _counts_section(summary)
    extra = [s for s in (_gamma_section(results), _paths_section(results, summary)) if s is not None]
    sections = grid_sections + stage_sections + table1_sections + [counts] + extra
    for section in sections:
        section.write(out, written)
    _write_csv(long, out / long_name)
    written.append(out / long_name)

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
    from . import bound  # it imports this module's Markdown

    bound_text = bound.report_section(results.directory)  # written by `gkfda bound`
    if bound_text is not None:
        lines += ["## The generalisation bound beside the test error", "", bound_text, ""]
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
    from ..cli import add_report_arguments

    return add_report_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Run ``gkfda report`` with parsed arguments; returns the exit status."""
    try:
        files = write_report(args.results_dir, getattr(args, "out", None),
                             figures=not getattr(args, "no_figures", False),
                             canonical_only=getattr(args, "canonical_only", False),
                             mpkfda_method=getattr(args, "mpkfda", MPKFDA_METHOD),
                             also=getattr(args, "also", []))
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
