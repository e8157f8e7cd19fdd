"""The tables of a results directory: Diethe's (2015) grids and stage sweeps, Diethe et al.'s (2009) Table 1,
kFDA_q's table, and the realisation counts, chosen widths and sparsity paths.

Each table is a :class:`~gkfda.study.markdown.Section` (Markdown and CSV); the comparisons with
the published numbers that go beside some of them are in :mod:`gkfda.study.comparison`.
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Tuple

import numpy as np
import pandas as pd

from .._core import CRITERIA, DEFLATIONS
from . import MPKFDA_METHOD, comparison, published
from .comparison import KFDAQ_NAMES, TABLE1_COLUMNS
from .markdown import DASH, Section, fmt, isnum, markdown_table, text_frame
from .results import ResultSet, Summary, finite_mean, ordered, parse_numbers, rank_of

_GRID_METRICS = (
    # key, figure of Diethe (2015), title, column of the statistics, Markdown format, unit
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


def grid_sections(summary: Summary, stages: int = 1):
    """Diethe (2015), Figures 1-4, and their comparison with the published grids."""
    cells = {(d, c): m for (c, d, s), m in summary.by_variant.items() if s == stages}
    deflations = ordered({d for d, _ in cells}, DEFLATIONS)
    criteria = ordered({c for _, c in cells}, CRITERIA)
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
        averages = averages_of[column].agg(mean=finite_mean, count="count")
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
            cell = fmt(value, spec) + ("†" if partial else "")
            return f"**{cell}**" if isnum(value) and value == best else cell

        row_means, column_means = grid.apply(finite_mean, axis=1), grid.apply(finite_mean)
        table = pd.DataFrame({
            "Deflation": deflations,
            **{c: [text(grid.at[d, c], short.at[d, c]) for d in deflations] for c in criteria},
            "Average": [fmt(v, spec) for v in row_means],
        }, dtype=object)
        csv = grid.assign(Average=row_means).reset_index()
        # The overall mean in the order of the cells found (the variants' names), not of the grid.
        bottom = list(column_means) + [finite_mean([averages.at[m, "mean"] for m in cells.values()])]
        table.loc[len(table)] = ["**Average**"] + [fmt(v, spec) for v in bottom]
        csv.loc[len(csv)] = ["Average"] + bottom
        notes = []
        if short.to_numpy().any():
            notes.append(f"† averaged over fewer than all {n_all} data sets of the results "
                         f"(see `grid_stages{stages}_long.csv` for the counts; for ASD a data set needs "
                         "two realisations).")
        if not cells:
            notes.append(f"No greedy variant with stages = {stages} in the results.")
        sections.append(Section(
            stem=f"fig{figure}_{key}",
            title=f"Diethe (2015), Figure {figure}: {title}, stages = {stages}",
            text=f"Rows: deflations; columns: criteria. Cells: {unit}; the smallest cell is in bold. "
                 "`Average` is the plain mean of the cells shown.",
            table=table if cells else pd.DataFrame(), csv=csv, notes=notes,
        ))
        sections.append(comparison.grid_versus_paper(figure, title, spec, long, key, deflations, criteria))
    return sections, (f"grid_stages{stages}_long.csv", long)


def stage_sections(summary: Summary) -> List[Section]:
    """Diethe (2015), Figures 5-6 (and the data of Figure 9): every stage sweep present."""
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
            rows_md.append([criterion, deflation, s, n, fmt(aer), fmt(asd), fmt(art), fmt(as_, "{:.1f}%"),
                            f"{fmt(q[2])} [{fmt(q[1])}, {fmt(q[3])}]",
                            " / ".join(fmt(quoted.get(k), "{:g}") for k in ("aer", "asd", "art")) if quoted else ""])
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
            lambda row: f"{fmt(row['err_mean'])} ({fmt(row['time_mean'], '{:.3g}')} s)", axis=1)
            for s, stats in per_stage.items() if len(stats)}, axis=1)
        table = table.reindex(index=ordered(table.index, summary.datasets),
                              columns=[f"stages = {s}" for s in stage_values]).fillna(DASH)
        box_md.append(f"**{criterion} / {deflation}** — mean test error (mean fit time) per data set\n\n"
                      + markdown_table(table.rename_axis("Data set").reset_index()))
    none = "" if sweeps else "No (criterion, deflation) was run with more than one stages value."
    summary_section = Section(
        stem="stages",
        title="Diethe (2015), Figures 5-6: stage sweeps",
        text="For every (criterion, deflation) run with several stages values: AER, ASD, ART and AS over the "
             "data sets (as in Figures 1-4), and the median [quartiles] across data sets of the mean test error "
             "(the box of Figure 5). The paper quotes numbers only for pseudo / ortho-schur, stages 1 and 2 "
             "(AER / ASD / ART), which do not match its own Figures 1-3 for the same configuration.",
        table=text_frame(rows_md, ["Criterion", "Deflation", "Stages", "Data sets", "AER", "ASD", "ART (s)", "AS",
                               "Median error [IQR]", "Paper AER / ASD / ART"]),
        csv=text_frame(rows_csv, ["criterion", "deflation", "stages", "method", "n_datasets", "aer", "asd", "art", "as",
                              "error_min", "error_q1", "error_median", "error_q3", "error_max",
                              "paper_aer", "paper_asd", "paper_art"]),
        notes=[none],
    )
    box_columns = ["criterion", "deflation", "stages", "dataset", "n_realisations", "mean_error", "sd_error",
                   "mean_fit_time", "log10_mean_fit_time", "mean_sparsity"]
    box_section = Section(
        stem="stages_datasets",
        title="Stage sweeps per data set (box-plot data of Figures 5, 6 and 9)",
        text="\n\n".join(["Mean test error and mean fit time over the realisations, per data set and stages value."]
                         + box_md),
        table=pd.DataFrame(),
        csv=pd.concat(boxes, ignore_index=True) if boxes else pd.DataFrame(columns=box_columns),
        notes=[none],
    )
    return [summary_section, box_section]


def table1_sections(summary: Summary, mpkfda: str = MPKFDA_METHOD) -> List[Section]:
    """Diethe et al. (2009), Table 1 from our results, and next to the published one."""
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
    means = table[list(TABLE1_COLUMNS)].apply(finite_mean)
    counts = table[list(TABLE1_COLUMNS)].count()

    def formatted(row):
        return [fmt(row[c], "{:.1f}" if c == "mpkfda_k" else "{:.4f}") for c in TABLE1_COLUMNS]

    rows_md = [[d, fmt(row["dim"], "{:.0f}"), fmt(row["train"], "{:.0f}"), fmt(row["test"], "{:.0f}")]
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
        if paper and any(isnum(value) and value != paper[key] for key, value in ours):
            mismatches.append(f"{d} (ours {'/'.join(fmt(value, '{:.0f}') for _, value in ours)}, "
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
        notes.append("Dim/Train/Test differ from Diethe et al. (2009) for: " + "; ".join(mismatches) + ".")
    ours = Section(
        stem="table1",
        title="Diethe et al. (2009), Table 1: KFDA, MPKFDA and SVM per data set",
        text=f"Mean test error and its s.d. over the realisations; MPKFDA is `{mpkfda}`, with its mean selected "
             "sparsity `k`. The Mean row averages the data sets.",
        table=text_frame(rows_md, ["Data set", "Dim", "Train", "Test", "KFDA error", "s.d.", "MPKFDA error", "s.d.",
                               "k", "SVM error", "s.d."]),
        csv=csv, notes=notes or ([] if datasets else ["No KFDA, MPKFDA or SVM results."]),
    )
    return [ours, comparison.table1_versus_paper(table.loc[[d for d in datasets if d in published.TABLE1_002]])]


def kfdaq_sections(summary: Summary, mpkfda: str = MPKFDA_METHOD) -> List[Section]:
    """kFDA_q (Harrison & Pasupa, 2010): its Table 1 beside ours, and our Table 1 with kFDA_q added;
    none when the results hold no kFDA_q rows."""
    if not any(method in summary.info for method in KFDAQ_NAMES):
        return []
    return [comparison.table1_003_versus_paper(summary), _table1_with_kfdaq(summary, mpkfda)]


def _table1_with_kfdaq(summary: Summary, mpkfda: str) -> Section:
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
            row_md.append(f"{fmt(row['err_mean'], '{:.4f}')} ± {fmt(row['err_sd'], '{:.4f}')}"
                          if isnum(row["err_mean"]) else DASH)
            row_csv += [row["err_mean"], row["err_sd"]]
            if name != "KFDA":
                row_md.append(fmt(row["k_used_mean"], "{:.1f}"))
                row_csv.append(row["k_used_mean"])
        rows_md.append(row_md)
        rows_csv.append(row_csv)
    if datasets:
        mean_md, mean_csv = ["**Mean**"], ["Mean"]
        for name in methods:
            error, sd = finite_mean(stats[name]["err_mean"]), finite_mean(stats[name]["err_sd"])
            mean_md.append(f"{fmt(error, '{:.4f}')} ± {fmt(sd, '{:.4f}')}")
            mean_csv += [error, sd]
            if name != "KFDA":
                k = finite_mean(stats[name]["k_used_mean"])
                mean_md.append(fmt(k, "{:.1f}"))
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
    return Section(
        stem="table1_kfdaq",
        title="Table 1 with kFDA_q: KFDA, MPKFDA, SVM and kFDA_q per data set",
        text=f"Mean test error ± s.d. over the realisations; MPKFDA is `{mpkfda}` with its mean number of bases, "
             "the SVM with its mean number of support vectors, kFDA_q (selected for least CV error) with its mean "
             "number of retained samples. The Mean row averages each column over the data sets that have it.",
        table=text_frame(rows_md, columns_md),
        csv=text_frame(rows_csv, columns_csv),
        notes=[f"No results of: {', '.join(missing)}." if missing else ""],
    )


def counts_section(summary: Summary) -> Section:
    index = pd.MultiIndex.from_product([summary.methods, summary.datasets], names=["method", "dataset"])
    stats = summary.stats.reindex(index)
    n = stats["n"].fillna(0).astype(int)
    canonical = stats["n_canonical"].fillna(0).astype(int)
    cells = (n.astype(str) + " (" + canonical.astype(str) + ")").where(stats["n"].notna(), DASH)
    table = cells.unstack("dataset").reindex(index=summary.methods, columns=summary.datasets)
    table["Total"] = n.groupby(level="method").sum().astype(str)
    csv = pd.DataFrame({"realisations": n, "canonical": canonical, "generated": n - canonical,
                        "first_realisation": stats["first"].astype("Int64"),
                        "last_realisation": stats["last"].astype("Int64")})
    csv = csv.reset_index()[["dataset", "method", "realisations", "canonical", "generated",
                             "first_realisation", "last_realisation"]]
    return Section(
        stem="counts",
        title="Realisations per data set and method",
        text="Cells: realisations present (of which canonical IDA splits); — means none.",
        table=table.rename_axis("Method").reset_index() if summary.methods else pd.DataFrame(),
        csv=csv,
    )


def gamma_section(results: ResultSet) -> Optional[Section]:
    if not results.present["gamma.csv"]:
        return None
    rank = list(published.TABLE1_002)
    gamma = results.gamma.reindex(columns=["dataset", "gamma", "width", "cv_error", "split_widths"], fill_value="")
    gamma = gamma.iloc[sorted(range(len(gamma)), key=lambda i: (rank_of(gamma["dataset"].iloc[i], rank),
                                                                gamma["dataset"].iloc[i]))]
    csv = gamma.assign(**{column: parse_numbers(gamma[column]) for column in ("gamma", "width", "cv_error")})
    table = pd.DataFrame({
        "Data set": csv["dataset"], "γ": csv["gamma"].map(lambda v: fmt(v, "{:.4g}")),
        "width": csv["width"].map(lambda v: fmt(v, "{:.4g}")), "CV error": csv["cv_error"].map(lambda v: fmt(v, "{:.4f}")),
        "widths per split": csv["split_widths"]})
    return Section(
        stem="gamma",
        title="Kernel widths chosen by cross-validation",
        text="RBF kernel exp(−γ‖x − z‖²), width = 1/γ: the median of the widths chosen on the cross-validation "
             "realisations (Diethe, 2015, Section 3.4).",
        table=table, csv=csv,
        notes=[] if len(table) else ["`gamma.csv` has no rows yet."],
    )


def path_curves(results: ResultSet) -> Dict[Tuple[str, str, str], Tuple[np.ndarray, np.ndarray]]:
    """``{(dataset, method, curve): (k, error)}``, each curve sorted by k."""
    paths = results.paths.sort_values(["dataset", "method", "curve", "k", "error"])
    return {key: (group["k"].to_numpy(), group["error"].to_numpy())
            for key, group in paths.groupby(["dataset", "method", "curve"], sort=False)}


def paths_section(results: ResultSet, summary: Summary) -> Optional[Section]:
    if not results.present["paths.csv"]:
        return None
    curves = path_curves(results)
    keys = sorted({(d, m) for d, m, _ in curves},
                  key=lambda dm: (rank_of(dm[0], summary.datasets), summary.method_key(dm[1]), dm))
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
            if isnum(k_best):
                test_at = test[1][int(np.argmin(np.abs(test[0] - k_best)))]
        k_chosen = summary.stats.at[(m, d), "k_mean"] if summary.has(m, d) else math.nan
        rows.append([d, m, k_best, cv_best, test_at, k_test_best, test_best, k_chosen])
    csv = text_frame(rows, ["dataset", "method", "k_min_cv", "cv_error_min", "test_error_at_k_min_cv", "k_min_test",
                        "test_error_min", "k_results_mean"])
    specs = ("{:.0f}", "{:.4f}", "{:.4f}", "{:.0f}", "{:.4f}", "{:.1f}")
    table = text_frame([row[:2] + [fmt(value, spec) for value, spec in zip(row[2:], specs)] for row in rows],
                   ["Data set", "Method", "k (min CV)", "CV error", "test error at k", "k (min test)",
                    "min test error", "k in results"])
    return Section(
        stem="paths",
        title="Sparsity paths",
        text="From `paths.csv`: the k of least mean validation error (cv curve), the test error of realisation 1 "
             "at that k (nearest k of the test curve), the k of least test error, and the mean k in `results.csv`.",
        table=table, csv=csv,
        notes=[] if rows else ["`paths.csv` has no rows yet."],
    )
