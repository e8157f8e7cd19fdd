"""Our tables beside the published ones: Diethe's (2015) grids (Figures 1-4), Diethe et al.'s (2009) Table 1
and Harrison & Pasupa's (2010) Table 1 (kFDA_q), on the cells and data sets both have.

The published numbers themselves are in :mod:`gkfda.study.published`.
"""

from __future__ import annotations

import math

import pandas as pd

from . import published
from .markdown import DASH, Section, fmt, isnum, text_frame
from .results import Summary, finite_mean

TABLE1_COLUMNS = ("kfda_error", "kfda_sd", "mpkfda_error", "mpkfda_sd", "mpkfda_k", "svm_error", "svm_sd")

KFDAQ_NAMES = {"kfdaq1-mcr": "kFDA_1 sel. MCR", "kfdaq1-nrs": "kFDA_1 sel. NRS",
               "kfdaq0.5-mcr": "kFDA_0.5 sel. MCR", "kfdaq0.5-nrs": "kFDA_0.5 sel. NRS"}


def grid_versus_paper(figure, title, spec, long, key, deflations, criteria) -> Section:
    """A stages = 1 grid next to the published one: only the cells present in both."""
    common = long[long[f"{key}_paper"].notna() & long[key].notna()]
    common = pd.DataFrame({"deflation": common["deflation"], "criterion": common["criterion"],
                           "ours": common[key], "paper": common[f"{key}_paper"].astype(float)})
    common["difference"] = common["ours"] - common["paper"]
    common["n_datasets"] = long.loc[common.index, f"{key}_n_datasets"]
    plain = spec.replace("%", "")
    common["text"] = [
        f"{fmt(ours, plain)} / {fmt(theirs, plain)} ({'+' if ours >= theirs else '−'}{fmt(abs(ours - theirs), plain)})"
        for ours, theirs in zip(common["ours"], common["paper"])
    ]
    table = common.pivot(index="deflation", columns="criterion", values="text")
    table = table.reindex(index=[d for d in deflations if d in table.index], columns=criteria).fillna(DASH)
    if len(common):
        ours_best, paper_best = common.loc[common["ours"].idxmin()], common.loc[common["paper"].idxmin()]
        note = (f"{len(common)} common cell(s); mean difference {finite_mean(common['difference']):+.4g}, mean absolute "
                f"difference {finite_mean(common['difference'].abs()):.4g}. Best of the common cells: ours "
                f"{ours_best['deflation']} + {ours_best['criterion']}, paper {paper_best['deflation']} + "
                f"{paper_best['criterion']}.")
    else:
        note = "No cell in common with the published grid."
    return Section(
        stem=f"fig{figure}_{key}_vs_paper",
        title=f"Figure {figure} ({title}) against Diethe (2015)",
        text="Each cell: ours / paper (ours − paper), for the cells present in both "
             "(the paper has no ortho-hotelling).",
        table=table.reset_index().rename(columns={"deflation": "Deflation"}) if len(common) else pd.DataFrame(),
        csv=common.drop(columns="text"), notes=[note],
    )


def table1_versus_paper(table: pd.DataFrame) -> Section:
    """Ours next to Diethe et al.'s (2009) Table 1, on the data sets in both."""
    paper = pd.DataFrame.from_dict(published.TABLE1_002, orient="index").reindex(table.index)
    rows_md, rows_csv = [], []

    def pair(error, sd):
        return f"{fmt(error, '{:.4f}')} ± {fmt(sd, '{:.4f}')}"

    for d in table.index:
        ours, theirs = table.loc[d], published.TABLE1_002[d]
        row_md, row_csv = [published.PAPER_NAMES_002.get(d, d)], [d]
        for key in ("kfda", "mpkfda", "svm"):
            error, sd = ours[f"{key}_error"], ours[f"{key}_sd"]
            row_md += [pair(error, sd) if isnum(error) else DASH, pair(theirs[f"{key}_error"], theirs[f"{key}_sd"])]
            row_csv += [error, sd, theirs[f"{key}_error"], theirs[f"{key}_sd"]]
            if key == "mpkfda":
                row_md += [fmt(ours["mpkfda_k"], "{:.1f}"), f"{theirs['mpkfda_k']}"]
                row_csv += [ours["mpkfda_k"], theirs["mpkfda_k"]]
        rows_md.append(row_md)
        rows_csv.append(row_csv)
    if len(table):
        # Each column's mean over the data sets where we have it, and the paper's over the same ones.
        have = table[list(TABLE1_COLUMNS)].notna()
        ours_mean = table[list(TABLE1_COLUMNS)].apply(finite_mean)
        paper_mean = paper[list(TABLE1_COLUMNS)].astype(float).where(have).apply(finite_mean)
        mean_md, mean_csv = ["**Mean (same data sets)**"], ["Mean (same data sets)"]
        for key in ("kfda", "mpkfda", "svm"):
            error, sd = f"{key}_error", f"{key}_sd"
            mean_md += [pair(ours_mean[error], ours_mean[sd]) if have[error].any() else DASH,
                        pair(paper_mean[error], paper_mean[sd]) if have[error].any() else DASH]
            mean_csv += [ours_mean[error], ours_mean[sd], paper_mean[error], paper_mean[sd]]
            if key == "mpkfda":
                mean_md += [fmt(ours_mean["mpkfda_k"], "{:.1f}"), fmt(paper_mean["mpkfda_k"], "{:.1f}")]
                mean_csv += [ours_mean["mpkfda_k"], paper_mean["mpkfda_k"]]
        rows_md.append(mean_md)
        rows_csv.append(mean_csv)
    missing = [published.PAPER_NAMES_002[d] for d in published.TABLE1_002 if d not in table.index]
    mean = published.TABLE1_002_MEAN
    return Section(
        stem="table1_vs_paper",
        title="Table 1 against Diethe et al. (2009)",
        text="Mean test error ± s.d., ours and as published (Diethe et al., AISTATS 2009, Table 1). The Mean row "
             "averages, for each column pair, only the data sets where we have the method, so that both sides "
             "cover the same data sets. The paper's printed Mean over all 13 data sets is "
             f"KFDA {mean['kfda_error']:.4f}, MPKFDA {mean['mpkfda_error']:.4f} "
             f"(k = {mean['mpkfda_k']}), SVM {mean['svm_error']:.4f}.",
        table=text_frame(rows_md, ["Data set", "KFDA (ours)", "KFDA (paper)", "MPKFDA (ours)", "MPKFDA (paper)",
                               "k (ours)", "k (paper)", "SVM (ours)", "SVM (paper)"]),
        csv=text_frame(rows_csv, ["dataset", "kfda_error", "kfda_sd", "kfda_error_paper", "kfda_sd_paper",
                              "mpkfda_error", "mpkfda_sd", "mpkfda_error_paper", "mpkfda_sd_paper", "mpkfda_k",
                              "mpkfda_k_paper", "svm_error", "svm_sd", "svm_error_paper", "svm_sd_paper"]),
        notes=[f"Not in our results: {', '.join(missing)}." if missing else ""],
    )

def table1_003_versus_paper(summary: Summary) -> Section:
    """MCR (%) and NRS (%) of kFDA_q under both rules, ours and Harrison & Pasupa's (2010), per data set."""
    methods = [m for m in KFDAQ_NAMES if m in summary.info]
    datasets = [d for d in summary.datasets if any(summary.has(m, d) for m in methods)]
    rows_md, rows_csv = [], []
    ours_cells = {m: summary.of(m).reindex(datasets) for m in methods}
    for d in datasets:
        paper = published.TABLE1_003.get(d, {})
        row_md, row_csv = [published.PAPER_NAMES_002.get(d, d)], [d]
        for m in methods:
            stats, theirs = ours_cells[m].loc[d], paper.get(m)
            mcr, sd, nrs = 100 * stats["err_mean"], 100 * stats["err_sd"], stats["sparsity_mean"]
            row_md += [f"{fmt(mcr, '{:.1f}')} ± {fmt(sd, '{:.1f}')} / {fmt(nrs, '{:.1f}')}",
                       _paper_003_cell(theirs)]
            row_csv += [mcr, sd, nrs, int(stats["n"]) if isnum(stats["n"]) else math.nan]
            row_csv += [theirs["mcr"], theirs["spread"], theirs["nrs"]] if theirs else [math.nan] * 3
        rows_md.append(row_md)
        rows_csv.append(row_csv)
    if datasets:
        # Means over the data sets where both have the method.
        mean_md, mean_csv = ["**Mean (same data sets)**"], ["Mean (same data sets)"]
        for m in methods:
            both = [d for d in datasets if summary.has(m, d) and d in published.TABLE1_003]
            ours = summary.of(m).reindex(both)
            mcr, nrs = finite_mean(100 * ours["err_mean"]), finite_mean(ours["sparsity_mean"])
            paper_mcr = finite_mean([published.TABLE1_003[d][m]["mcr"] for d in both])
            paper_nrs = finite_mean([published.TABLE1_003[d][m]["nrs"] for d in both])
            mean_md += [f"{fmt(mcr, '{:.1f}')} / {fmt(nrs, '{:.1f}')}",
                        f"{fmt(paper_mcr, '{:.1f}')} / {fmt(paper_nrs, '{:.1f}')}"]
            mean_csv += [mcr, math.nan, nrs, len(both), paper_mcr, math.nan, paper_nrs]
        rows_md.append(mean_md)
        rows_csv.append(mean_csv)
    columns_md = ["Data set"] + [f"{KFDAQ_NAMES[m]} ({who})" for m in methods for who in ("ours", "paper")]
    columns_csv = ["dataset"] + [f"{m}_{column}" for m in methods for column in (
        "mcr", "mcr_sd", "nrs", "realisations", "mcr_paper", "mcr_spread_paper", "nrs_paper")]
    mean = published.TABLE1_003_MEAN
    return Section(
        stem="table1_003_vs_paper",
        title="kFDA_q against Harrison & Pasupa (2010), Table 1",
        text="Test misclassification rate MCR (%, mean ± s.d. over the realisations) / retained samples NRS "
             "(%, 100 k_used / m_train), ours and as published (Harrison and Pasupa 2010, Table 1; their ± "
             "is not defined by the paper). \"sel. MCR\" takes the width and ρ of least CV error, \"sel. NRS\" "
             "the sparsest within one standard error of it. The paper's printed Mean over the 13 data sets: "
             + ", ".join(f"{KFDAQ_NAMES[m]} {mean[m]['mcr']} / {mean[m]['nrs']}" for m in KFDAQ_NAMES) + ".",
        table=text_frame(rows_md, columns_md),
        csv=text_frame(rows_csv, columns_csv),
        notes=[f"No `{m}` results." for m in KFDAQ_NAMES if m not in summary.info],
    )


def _paper_003_cell(theirs) -> str:
    if not theirs:
        return DASH
    spread = "N/A" if theirs["spread"] is None else f"{theirs['spread']:.1f}"
    return f"{theirs['mcr']:.1f} ± {spread} / {theirs['nrs']:.1f}"
