"""A results directory of ``gkfda experiment``, read, and its statistics per method and data set.

:func:`load_results` parses ``results.csv``, ``gamma.csv``, ``paths.csv`` and
``config.json`` (any may be missing or partial) into a :class:`ResultSet`; :class:`Summary`
reduces its runs to the statistics over the realisations that every table and figure of
:mod:`gkfda.study.report` is made of.

Examples
--------
>>> import tempfile, pathlib
>>> from gkfda.study.results import Summary, load_results
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "results.csv").write_text(
...     "dataset,method,realisation,k,k_used,m_train,test_error,fit_time\\n"
...     "heart,optimal/schur/1,1,10,10,170,0.2,0.01\\n"
...     "heart,optimal/schur/1,2,10,10,170,0.3,0.01\\n")
>>> summary = Summary(load_results(d).runs)
>>> summary.average("optimal/schur/1", "err_mean")
(0.25, 1)
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np
import pandas as pd

from .._core import CRITERIA, DEFLATIONS
from . import published
from .protocol import BASELINES

_NUMBERS = ("gamma", "k", "k_used", "m_train", "m_test", "n_features", "test_error", "fit_time", "cv_error")
RUN_KEY = ["dataset", "method", "realisation"]

_TRUE, _FALSE = ("1", "1.0", "true", "yes"), ("0", "0.0", "false", "no")


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


def parse_numbers(values: pd.Series) -> pd.Series:
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
        runs[name] = parse_numbers(_text(raw, name))
    runs["realisation"] = _whole(parse_numbers(_text(raw, "realisation")))
    stages = _whole(parse_numbers(_text(raw, "stages")))
    # A "criterion/deflation/stages" method name fills in what its row leaves empty.
    parts = runs["method"].str.extract(r"^([^/]*)/([^/]*)/([^/]*)$")
    named_stages = _whole(parse_numbers(parts[2]))
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
        unique = runs.drop_duplicates(RUN_KEY, keep="last")
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
        paths["k"], paths["error"] = parse_numbers(_text(raw, "k")), parse_numbers(_text(raw, "error"))
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


def finite_mean(values) -> float:
    """The mean of the finite values, NaN if none.

    NumPy's sum of them, in their order: pandas' own means (compensated in groups, zeros
    in place of NaN elsewhere) can differ in the last bits, and so in a rounded cell."""
    array = np.asarray(values, dtype=float)
    array = array[np.isfinite(array)]
    return float(array.mean()) if array.size else math.nan


def finite_sd(values) -> float:
    """The standard deviation (ddof=1) of the finite values, NaN with fewer than two."""
    array = np.asarray(values, dtype=float)
    array = array[np.isfinite(array)]
    return float(array.std(ddof=1)) if array.size >= 2 else math.nan


def _mode(values: pd.Series) -> float:
    """The most common value (the smallest of the most common), NaN if none."""
    modes = values.dropna().mode()
    return float(modes.iloc[0]) if len(modes) else math.nan


def ordered(values, canonical) -> list:
    """Known names in their canonical order, then the others alphabetically."""
    rank = {name: i for i, name in enumerate(canonical)}
    return sorted(set(values), key=lambda v: (rank.get(v, len(rank)), str(v)))


def rank_of(value, canonical) -> int:
    return canonical.index(value) if value in canonical else len(canonical)


class Summary:
    """Per (method, data set) statistics over the realisations, and the methods present.

    ``stats`` is indexed by (method, data set), its data sets in the report's order, with
    columns ``n``, ``n_canonical``, ``first``, ``last``, ``err_mean``, ``err_sd``
    (ddof=1), ``time_mean``, ``sparsity_mean``, ``k_mean``, ``k_used_mean`` and the modes
    of ``n_features``, ``m_train`` and ``m_test``.
    """

    def __init__(self, runs: pd.DataFrame):
        self.runs = runs.sort_values("realisation", kind="stable")
        self.datasets = ordered(runs["dataset"], list(published.TABLE1_002))
        self.stats = self.runs.groupby(["method", "dataset"], sort=False).agg(
            n=("realisation", "size"),
            n_canonical=("canonical", lambda flags: int((flags == 1).sum())),
            first=("realisation", "min"),
            last=("realisation", "max"),
            err_mean=("test_error", finite_mean),
            err_sd=("test_error", finite_sd),
            time_mean=("fit_time", finite_mean),
            sparsity_mean=("sparsity", finite_mean),
            k_mean=("k", finite_mean),
            k_used_mean=("k_used", finite_mean),
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
            return (1, rank_of(criterion, CRITERIA), rank_of(deflation, DEFLATIONS), stages, method)
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
        return finite_mean(values), int(values.count())

    def sweeps(self) -> Dict[Tuple[str, str], List[int]]:
        """``{(criterion, deflation): sorted stages}`` for variants run with more than one stages value."""
        found: Dict[Tuple[str, str], set] = {}
        for criterion, deflation, stages in self.by_variant:
            found.setdefault((criterion, deflation), set()).add(stages)
        keys = sorted(found, key=lambda cd: (rank_of(cd[0], CRITERIA), rank_of(cd[1], DEFLATIONS), cd))
        return {key: sorted(found[key]) for key in keys if len(found[key]) > 1}
