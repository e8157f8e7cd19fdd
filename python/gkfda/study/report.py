"""Tables and figures from the results directory of ``gkfda experiment``.

:func:`write_report` reads ``results.csv`` (and, when present, ``gamma.csv``,
``paths.csv`` and ``config.json``) and writes, each as Markdown and CSV:

* the stages = 1 grids of Diethe (2015), Figures 1-4 (AER, ASD, ART, AS) and their
  differences from the published grids (:mod:`gkfda.study.published`);
* the stage sweeps of Figures 5-6 and their per-data-set box-plot data;
* the per-data-set table of Diethe et al. (2009), Table 1 (KFDA, MPKFDA = ``optimal/schur/1``,
  SVM), alone and next to the published values;
* the realisation counts per data set and method, the chosen widths and a summary
  of the sparsity paths;

plus ``report.md``, an index embedding every table, and PNG figures in the style
of Diethe (2015), Figures 5-9 (and error against ``k``) when matplotlib is importable.
Partial results (a run still going, or a subset of data sets and methods) are
reported as they are, and what is missing is listed.

Definitions (Diethe, 2015, Section 4.1): for one method and data set the test errors
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
import sys
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import pandas as pd

from .._core import CRITERIA, DEFLATIONS
from . import MPKFDA_METHOD, bound, published, tables
from .arguments import add_report_arguments
from .figures import write_figures
from .markdown import isnum, markdown_table, write_csv

#: What a report without matplotlib says, in report.md and on stderr: figures need the ``plots``
#: extra, installed from the directory of a clone as gkfda itself is.
NO_MATPLOTLIB = ('matplotlib is not installed, so no figures were drawn; install the plots extra '
                 '(pip install ".[plots]" in the directory of a clone of gkfda) or matplotlib itself '
                 '(pip install matplotlib)')
from .protocol import BASELINES
from .results import RUN_KEY, ResultSet, Summary, load_results, ordered

# load_results, ResultSet (.results) and markdown_table (.markdown) are re-exported: callers import them here.
__all__ = ["write_report", "load_results", "ResultSet", "add_arguments", "run", "main", "MPKFDA_METHOD",
           "markdown_table"]

#: Realisations of the IDA benchmarks (100 each, 20 for image and splice).
_BENCHMARK_REALISATIONS = {name: 100 for name in published.TABLE1_002}
_BENCHMARK_REALISATIONS.update(image=20, splice=20)


# --------------------------------------------------------------------------- what is missing


def _expected_realisations(dataset: str, config: Optional[dict]) -> Optional[int]:
    total = _BENCHMARK_REALISATIONS.get(dataset)
    protocol = (config or {}).get("protocol") if isinstance((config or {}).get("protocol"), dict) else {}
    limit = protocol.get("realisations") if protocol else None
    if isinstance(limit, int) and limit > 0:
        return min(limit, total) if total else limit
    return total


def _missing(results: ResultSet, summary: Summary, limit: int = 40) -> List[str]:
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
        scope = "configured" if expected_datasets else "benchmark (Diethe, 2015, uses 13)"
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
        methods = ordered(set(methods) | set(expected_methods), methods)
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
        results.runs = pd.concat([results.runs, other.runs]).drop_duplicates(RUN_KEY, keep="first").reset_index(drop=True)
        results.notes += [f"`{directory}`: {note}" for note in other.notes]
        results.notes.append(f"{len(other.runs)} result row(s) of `{directory}` joined these "
                             f"({', '.join(sorted(set(other.runs['method'])))}).")
    out = Path(out_dir) if out_dir is not None else results.directory / "report"
    out.mkdir(parents=True, exist_ok=True)
    summary = Summary(results.runs)
    written: List[Path] = []

    grid_sections, (long_name, long) = tables.grid_sections(summary)
    table1_sections = tables.table1_sections(summary, mpkfda_method) + tables.kfdaq_sections(summary, mpkfda_method)
    extra = [s for s in (tables.gamma_section(results), tables.paths_section(results, summary)) if s is not None]
    sections = (grid_sections + tables.stage_sections(summary) + table1_sections + [tables.counts_section(summary)]
                + extra)
    for section in sections:
        section.write(out, written)
    write_csv(long, out / long_name)
    written.append(out / long_name)

    figure_notes: List[str] = []
    made: List[Tuple[str, Path, str]] = []
    if figures:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            figure_notes.append(NO_MATPLOTLIB + ".")
        else:
            try:
                write_figures(results, summary, out / "figures", written, figure_notes, made)
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
        if isnum(wall):
            lines.append(f"Wall time of the run(s): {wall:.1f} s ({wall / 3600:.2f} h).")
    lines += ["", "Tables are also in CSV next to this file (same name, `.csv`); "
              "published values are from `gkfda.study.published` (Diethe, 2015, Figures 1-4; "
              "Diethe et al., 2009, Table 1).", ""]
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
    if not getattr(args, "no_figures", False):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print(f"gkfda report: warning: {NO_MATPLOTLIB}", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    """``gkfda report DIR [--out OUT]`` as a stand-alone program (``python -m gkfda.study.report``)."""
    parser = add_arguments(argparse.ArgumentParser(
        prog="gkfda report", description="Tables and figures from the results directory of `gkfda experiment`."))
    return run(parser.parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
