"""The PNG figures of ``gkfda report``: Diethe's (2015) Figures 5-9 and the error against ``k``.

Drawn by :mod:`gkfda.plotting` on the Agg canvas; needs matplotlib (the ``plots`` extra,
``pip install ".[plots]"`` in a clone).
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np

from .._core import CRITERIA, DEFLATIONS
from ..plotting import panels, plot_boxes, plot_error_path, shared_legend
from . import MPKFDA_METHOD
from .results import ResultSet, Summary, ordered
from .tables import path_curves

def _pick(preferred: str, available: Dict[str, int]) -> Optional[str]:
    if not available:
        return None
    if preferred in available:
        return preferred
    return max(sorted(available), key=lambda name: available[name])


def write_figures(results: ResultSet, summary: Summary, fig_dir: Path, written: List[Path], notes: List[str],
                  made: List[Tuple[str, Path, str]]) -> None:
    """Draw every figure the data allow, appending ``(title, path, caption)`` to ``made``."""
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
                plot_boxes(ax, data, [str(stage) for stage in sweeps[criterion, deflation]])
                ax.set_title(f"{criterion} / {deflation}" if len(chosen) > 1 else "across data sets", fontsize=10)
                ax.set_xlabel("stages")
                ax.set_ylabel(ylabel, fontsize=8)
            quantity = "mean test error" if number == 5 else "log10 mean fit time"
            if len(chosen) == 1:
                save(fig, name, f"Figure {number}: stages ({what}), {main_sweep[0]} / {main_sweep[1]}",
                     f"Box plot over data sets of the per-data-set {quantity} for each stages value (red line: "
                     f"median); Diethe (2015), Figure {number}, shows pseudo / ortho-schur.")
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
            plot_boxes(ax, data, [label for _, label in methods_labels], rotate=len(methods_labels) > 3)
            ax.set_title(d, fontsize=10)
            ax.set_ylabel("test error", fontsize=8)
        save(fig, name, f"Figure {number}: {title}", caption)

    # Figure 7: deflations at a fixed criterion (pseudo), stages 1.
    criterion = _pick("pseudo", {c: sum(cc == c for cc, _ in stage1) for c, _ in stage1})
    if criterion:
        deflations = ordered({d for c, d in stage1 if c == criterion}, DEFLATIONS)
        per_dataset_figure(7, "fig7_deflations.png", f"Deflations (criterion {criterion}, stages 1)",
                           f"Test errors over the realisations for each deflation, criterion {criterion}, stages 1 "
                           "(Diethe, 2015, Figure 7, uses pseudo).",
                           [(stage1[criterion, d], d) for d in deflations])
        if criterion != "pseudo":
            notes.append(f"Figure 7 uses criterion {criterion}: no pseudo results at stages 1.")
    # Figure 8: criteria at a fixed deflation (ortho-schur), stages 1.
    deflation = _pick("ortho-schur", {d: sum(dd == d for _, dd in stage1) for _, d in stage1})
    if deflation:
        criteria = ordered({c for c, d in stage1 if d == deflation}, CRITERIA)
        per_dataset_figure(8, "fig8_criteria.png", f"Criteria (deflation {deflation}, stages 1)",
                           f"Test errors over the realisations for each criterion, deflation {deflation}, stages 1 "
                           "(Diethe, 2015, Figure 8, uses ortho-schur).",
                           [(stage1[c, deflation], c) for c in criteria])
        if deflation != "ortho-schur":
            notes.append(f"Figure 8 uses deflation {deflation}: no ortho-schur results at stages 1.")
    # Figure 9: stages at a fixed criterion and deflation.
    if sweeps:
        sweep = main_sweep
        per_dataset_figure(9, "fig9_stages.png", f"Stages ({sweep[0]} / {sweep[1]})",
                           f"Test errors over the realisations for each stages value, {sweep[0]} / {sweep[1]} "
                           "(Diethe, 2015, Figure 9, uses pseudo / ortho-schur).",
                           [(summary.by_variant[sweep + (s,)], str(s)) for s in sweeps[sweep]])
    # Error against k from paths.csv.
    curves = path_curves(results)
    if curves:
        path_methods = {m for _, m, _ in curves}
        preferred = [MPKFDA_METHOD, "pseudo/ortho-schur/1", "random/none/1"]
        chosen = [m for m in preferred if m in path_methods]
        chosen += [m for m in sorted(path_methods, key=summary.method_key) if m not in chosen]
        if len(chosen) > 8:
            notes.append(f"The error-against-k figure shows 8 of the {len(chosen)} methods of `paths.csv` "
                         "(all are in paths.csv).")
            chosen = chosen[:8]
        datasets = ordered({d for d, m, _ in curves if m in chosen}, summary.datasets)
        fig, axes = panels(len(datasets), ncols=4, title="Error against sparsity k (solid: CV mean, dashed: test, realisation 1)")
        colours = {m: f"C{i}" for i, m in enumerate(chosen)}
        for ax, d in zip(axes, datasets):
            for m in chosen:
                for curve, style in (("cv", "-"), ("test", "--")):
                    if (d, m, curve) in curves:
                        k, err = curves[d, m, curve]
                        plot_error_path(ax, k, err, m if curve == "cv" or (d, m, "cv") not in curves else None,
                                        linestyle=style, color=colours[m])
            ax.set_title(d, fontsize=10)
            ax.set_ylabel("error", fontsize=8)
        shared_legend(fig, axes)
        save(fig, "paths.png", "Error against k",
             "Mean validation error over the CV folds (solid) and test error of realisation 1 (dashed) along the "
             "sparsity path, per data set.")
