"""Figures of gkfda's models and results, drawn with matplotlib (the ``plots`` extra:
``pip install ".[plots]"`` in the directory of a clone of gkfda).

The figures of ``gkfda report`` (:mod:`gkfda.study.figures`) and those of the documentation's
gallery are drawn by these functions. Each draws on a matplotlib ``Axes`` it is given and
returns what it drew, so that a caller lays out and saves the figure its own way: pyplot's
figures in a script or notebook, :func:`panels` (a figure on the Agg canvas, outside pyplot's
global state) in the report.

matplotlib is imported inside the functions: ``import gkfda.plotting`` needs only NumPy.

Examples
--------
>>> from matplotlib.figure import Figure
>>> from gkfda.plotting import plot_error_path
>>> ax = Figure().subplots()
>>> line = plot_error_path(ax, [1, 2, 3], [0.3, 0.2, 0.15], label="test")
>>> line.get_label(), ax.get_xlabel()
('test', 'k (bases)')
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np

__all__ = [
    "panels",
    "shared_legend",
    "plot_boxes",
    "plot_curve",
    "plot_error_path",
    "plot_decision_boundary",
    "plot_calibration",
]

#: The ``gid`` of the diagonal that :func:`plot_calibration` draws once per axes.
CALIBRATION_DIAGONAL = "gkfda-perfect-calibration"


def panels(n: int, ncols: int = 4, width: float = 3.4, height: float = 2.9, title: str = ""):
    """A figure of ``n`` axes in rows of ``ncols``, on the Agg canvas (no pyplot).

    Parameters
    ----------
    n : int
        Number of axes; the grid's unused cells are hidden.
    ncols : int, default 4
        Axes per row (at most ``n``).
    width, height : float, default 3.4 and 2.9
        Size of one panel in inches (the figure is at least 6 inches wide).
    title : str, default ""
        The figure's title.

    Returns
    -------
    fig : matplotlib.figure.Figure
    axes : list of matplotlib.axes.Axes
        The ``n`` visible axes, row by row.

    Examples
    --------
    >>> from gkfda.plotting import panels
    >>> fig, axes = panels(5, ncols=4)
    >>> len(axes), len(fig.axes), sum(ax.get_visible() for ax in fig.axes)
    (5, 8, 5)
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

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


def shared_legend(fig, axes, ncols: int = 4, fontsize: float = 8):
    """One legend below the axes of ``fig``: every label of ``axes`` once, in the order met.

    Returns the legend, or ``None`` when no artist has a label.
    """
    handles, labels = [], []
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    if not handles:
        return None
    return fig.legend(handles, labels, loc="outside lower center", ncols=min(ncols, len(labels)), fontsize=fontsize)


def plot_boxes(ax, data: Sequence[Sequence[float]], labels: Sequence[str], rotate: bool = False):
    """Box plots of several samples side by side, their medians in red.

    Non-finite values are left out; an empty sample keeps its place and label, with no box.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    data : sequence of sequences of float
        One sample per box.
    labels : sequence of str
        The boxes' labels, one per sample.
    rotate : bool, default False
        Slant the labels (for long or many ones).

    Returns
    -------
    dict or None
        What ``Axes.boxplot`` returns, ``None`` when every sample is empty.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> from gkfda.plotting import plot_boxes
    >>> ax = Figure().subplots()
    >>> drawn = plot_boxes(ax, [[0.1, 0.2, 0.3], [], [0.2, float("nan")]], ["a", "b", "c"])
    >>> len(drawn["boxes"]), [t.get_text() for t in ax.get_xticklabels()]
    (2, ['a', 'b', 'c'])
    """
    data = [np.asarray(values, dtype=float) for values in data]
    data = [values[np.isfinite(values)] for values in data]
    positions = [i + 1 for i, values in enumerate(data) if len(values)]
    drawn = None
    if positions:
        drawn = ax.boxplot([data[p - 1] for p in positions], positions=positions,
                           medianprops={"color": "red"}, widths=0.6)
    ax.set_xticks(range(1, len(labels) + 1))
    ax.set_xticklabels(labels, rotation=45 if rotate else 0, ha="right" if rotate else "center", fontsize=8)
    ax.set_xlim(0.4, len(labels) + 0.6)
    ax.grid(axis="y", alpha=0.3)
    return drawn


def plot_curve(ax, x, y, label: Optional[str] = None, *, xlabel: Optional[str] = None,
               ylabel: Optional[str] = None, linestyle: str = "-", color=None, marker: str = ".",
               markersize: float = 3, linewidth: float = 1.2):
    """One line of ``y`` against ``x``, with a light grid; returns the ``Line2D``.

    ``xlabel`` and ``ylabel``, when given, label the axes.
    """
    (line,) = ax.plot(np.asarray(x, dtype=float), np.asarray(y, dtype=float), linestyle=linestyle, color=color,
                      marker=marker, markersize=markersize, linewidth=linewidth, label=label)
    if xlabel is not None:
        ax.set_xlabel(xlabel)
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    return line


def plot_error_path(ax, ks, errors, label: Optional[str] = None, **style):
    """The error of a model along its sparsity path: ``errors`` against the number of bases ``ks``.

    As :meth:`gkfda.GreedyKFDA.error_path` returns it (one fit, every prefix of its
    bases), or a mean over folds. ``style`` goes to :func:`plot_curve` (``linestyle``,
    ``color``, ``marker``, ``xlabel``, ``ylabel``, ...).

    Returns
    -------
    matplotlib.lines.Line2D
    """
    style.setdefault("xlabel", "k (bases)")
    style.setdefault("ylabel", "error")
    return plot_curve(ax, ks, errors, label, **style)


def plot_decision_boundary(ax, model, X, y, *, bases="auto", resolution: int = 200, margin: float = 0.5,
                           cmap: str = "RdBu_r"):
    """A fitted two-feature classifier's decision function over the plane, the points and the bases.

    Two classes: the decision values, coloured around 0, and the boundary (value 0) in
    black; more classes: the predicted class. The points are coloured by class and the
    bases (by default the model's ``support_vectors_``, when it has them) circled.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    model : fitted classifier
        Of two features, with ``decision_function`` or ``predict``.
    X : array-like of shape (n_samples, 2)
    y : array-like of shape (n_samples,)
    bases : "auto", array-like of shape (k, 2) or None, default="auto"
        The points to circle: ``"auto"`` is ``model.support_vectors_`` (all one-vs-rest
        models' together), ``None`` circles none.
    resolution : int, default 200
        Grid points along each axis.
    margin : float, default 0.5
        How far the grid extends past the points.
    cmap : str, default "RdBu_r"

    Returns
    -------
    dict
        ``surface`` (the filled contours), ``boundary`` (the contour at 0, or ``None``),
        ``points`` and ``bases`` (the scatter of the circled bases, or ``None``).

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> from sklearn.datasets import make_moons
    >>> from gkfda import GreedyKFDA
    >>> from gkfda.plotting import plot_decision_boundary
    >>> X, y = make_moons(200, noise=0.2, random_state=0)
    >>> model = GreedyKFDA(k=12, gamma=2.0).fit(X, y)
    >>> drawn = plot_decision_boundary(Figure().subplots(), model, X, y, resolution=50)
    >>> len(drawn["bases"].get_offsets())
    12
    """
    from matplotlib.colors import TwoSlopeNorm

    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"X: needs two features to draw in the plane, has shape {X.shape}")
    classes, codes = np.unique(np.asarray(y), return_inverse=True)
    low, high = X.min(axis=0) - margin, X.max(axis=0) + margin
    xx, yy = np.meshgrid(np.linspace(low[0], high[0], resolution), np.linspace(low[1], high[1], resolution))
    grid = np.column_stack([xx.ravel(), yy.ravel()])
    values = model.decision_function(grid) if hasattr(model, "decision_function") else None
    boundary = None
    if values is not None and np.ndim(values) == 1:
        values = np.asarray(values, dtype=float).reshape(xx.shape)
        extent = float(np.max(np.abs(values))) or 1.0
        surface = ax.contourf(xx, yy, values, levels=20, cmap=cmap, alpha=0.6,
                              norm=TwoSlopeNorm(0.0, -extent, extent))
        boundary = ax.contour(xx, yy, values, levels=[0.0], colors="k", linewidths=1.5)
    else:
        predicted = np.searchsorted(classes, model.predict(grid)).reshape(xx.shape)
        surface = ax.contourf(xx, yy, predicted, levels=np.arange(len(classes) + 1) - 0.5, cmap="tab10",
                              alpha=0.35)
    points = ax.scatter(X[:, 0], X[:, 1], c=codes, cmap="bwr" if len(classes) == 2 else "tab10", s=14,
                        edgecolors="white", linewidths=0.4)
    if isinstance(bases, str) and bases == "auto":
        bases = getattr(model, "support_vectors_", None)
        if isinstance(bases, list):  # one array per one-vs-rest model
            bases = np.unique(np.concatenate(bases), axis=0)
    circled = None
    if bases is not None and len(bases):
        bases = np.asarray(bases, dtype=float)
        circled = ax.scatter(bases[:, 0], bases[:, 1], s=110, facecolors="none", edgecolors="k", linewidths=1.4,
                             label=f"bases ({len(bases)})")
    ax.set_xlim(low[0], high[0])
    ax.set_ylim(low[1], high[1])
    return {"surface": surface, "boundary": boundary, "points": points, "bases": circled}


def plot_calibration(ax, y_true, probability, label: Optional[str] = None, *, n_bins: int = 10,
                     strategy: str = "uniform", diagonal: bool = True, **style):
    """A reliability diagram: the fraction of positives against the mean predicted probability per bin.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    y_true : array-like of shape (n_samples,)
        Labels of two classes (the larger one is the positive class).
    probability : array-like of shape (n_samples,)
        The predicted probability of the positive class (``predict_proba(X)[:, 1]``).
    label : str, optional
    n_bins : int, default 10
    strategy : {"uniform", "quantile"}, default "uniform"
        As :func:`sklearn.calibration.calibration_curve`'s.
    diagonal : bool, default True
        Draw the line of perfect calibration, once per axes.
    **style
        To :func:`plot_curve` (``color``, ``linestyle``, ``marker``, ...).

    Returns
    -------
    matplotlib.lines.Line2D

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> from gkfda.plotting import plot_calibration
    >>> ax = Figure().subplots()
    >>> _ = plot_calibration(ax, [0, 0, 1, 1], [0.1, 0.4, 0.6, 0.9], label="a")
    >>> _ = plot_calibration(ax, [0, 0, 1, 1], [0.2, 0.3, 0.7, 0.8], label="b")
    >>> [line.get_label() for line in ax.get_lines()]
    ['perfectly calibrated', 'a', 'b']
    """
    from sklearn.calibration import calibration_curve

    fraction, mean = calibration_curve(np.asarray(y_true), np.asarray(probability, dtype=float), n_bins=n_bins,
                                       strategy=strategy)
    if diagonal and not any(line.get_gid() == CALIBRATION_DIAGONAL for line in ax.get_lines()):
        ax.plot([0, 1], [0, 1], ":", color="grey", label="perfectly calibrated", gid=CALIBRATION_DIAGONAL)
    style.setdefault("marker", "o")
    style.setdefault("markersize", 4)
    style.setdefault("xlabel", "mean predicted probability")
    style.setdefault("ylabel", "fraction of positives")
    line = plot_curve(ax, mean, fraction, label, **style)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    return line
