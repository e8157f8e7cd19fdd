"""gkfda.plotting: what each function draws, on the Agg canvas."""

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from matplotlib.figure import Figure  # noqa: E402
from sklearn.datasets import make_blobs, make_moons  # noqa: E402

from gkfda import GreedyKFDA  # noqa: E402
from gkfda.plotting import (  # noqa: E402
    CALIBRATION_DIAGONAL,
    panels,
    plot_boxes,
    plot_calibration,
    plot_curve,
    plot_decision_boundary,
    plot_error_path,
    shared_legend,
)


def axes():
    return Figure().subplots()


def test_importing_the_module_loads_no_matplotlib():
    code = "import sys, gkfda.plotting; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_panels_hides_the_unused_cells_of_the_grid():
    fig, shown = panels(6, ncols=4, title="six")
    assert len(shown) == 6 and len(fig.axes) == 8
    assert [ax.get_visible() for ax in fig.axes] == [True] * 6 + [False] * 2
    assert fig._suptitle.get_text() == "six"


def test_one_line_per_error_path_with_its_data():
    ax = axes()
    X, y = make_moons(200, noise=0.25, random_state=0)
    model = GreedyKFDA(k=20, gamma=2.0).fit(X, y)
    ks = np.arange(1, 21)
    train = plot_error_path(ax, ks, model.error_path(X, y, ks), label="train")
    test = plot_error_path(ax, ks, model.error_path(X[:50], y[:50], ks), label="validation", linestyle="--")
    assert ax.get_lines() == [train, test]
    np.testing.assert_array_equal(train.get_xdata(), ks)
    np.testing.assert_array_equal(train.get_ydata(), model.error_path(X, y, ks))
    assert test.get_linestyle() == "--"
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("k (bases)", "error")


def test_plot_curve_labels_only_the_axes_asked_for():
    ax = axes()
    plot_curve(ax, [1, 2], [3, 4], "a", ylabel="accuracy")
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("", "accuracy")


def test_decision_boundary_marks_every_basis():
    X, y = make_moons(150, noise=0.2, random_state=1)
    model = GreedyKFDA(k=15, gamma=2.0).fit(X, y)
    drawn = plot_decision_boundary(axes(), model, X, y, resolution=40)
    np.testing.assert_array_equal(drawn["bases"].get_offsets(), model.support_vectors_)
    assert drawn["bases"].get_label() == "bases (15)"
    assert len(drawn["points"].get_offsets()) == len(X)
    assert drawn["boundary"] is not None and drawn["boundary"].levels.tolist() == [0.0]


def test_decision_boundary_of_several_classes_and_without_bases():
    X, y = make_blobs(120, centers=3, random_state=0)
    model = GreedyKFDA(k=9, gamma=0.5, multiclass="ovr").fit(X, y)
    drawn = plot_decision_boundary(axes(), model, X, y, resolution=30)
    union = np.unique(np.concatenate(model.support_vectors_), axis=0)
    assert drawn["boundary"] is None
    np.testing.assert_array_equal(drawn["bases"].get_offsets(), union)
    assert plot_decision_boundary(axes(), model, X, y, bases=None, resolution=30)["bases"] is None


def test_decision_boundary_needs_two_features():
    X, y = make_blobs(40, n_features=3, random_state=0)
    with pytest.raises(ValueError, match="two features"):
        plot_decision_boundary(axes(), GreedyKFDA(k=4).fit(X, y), X, y)


def test_calibration_draws_the_diagonal_once_and_one_curve_each():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    ax = axes()
    first = plot_calibration(ax, y, np.clip(0.5 * y + 0.5 * rng.random(400), 0, 1), label="a", n_bins=5)
    plot_calibration(ax, y, rng.random(400), label="b", n_bins=5)
    assert [line.get_gid() for line in ax.get_lines()].count(CALIBRATION_DIAGONAL) == 1
    assert [line.get_label() for line in ax.get_lines()] == ["perfectly calibrated", "a", "b"]
    assert len(first.get_xdata()) <= 5 and ax.get_xlim() == (0, 1)
    assert len(plot_calibration(axes(), y, rng.random(400), diagonal=False).axes.get_lines()) == 1


def test_boxes_skip_empty_samples_and_keep_their_labels():
    ax = axes()
    drawn = plot_boxes(ax, [[1.0, 2.0, np.inf], [], [3.0, 4.0]], ["a", "b", "c"], rotate=True)
    assert len(drawn["boxes"]) == 2 and len(drawn["medians"]) == 2
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    assert plot_boxes(axes(), [[], []], ["a", "b"]) is None


def test_shared_legend_lists_each_label_once():
    fig, (left, right) = panels(2)
    plot_curve(left, [0, 1], [0, 1], "a")
    plot_curve(right, [0, 1], [1, 0], "a")
    plot_curve(right, [0, 1], [1, 1], "b")
    legend = shared_legend(fig, [left, right])
    assert [text.get_text() for text in legend.get_texts()] == ["a", "b"]
    empty, (ax,) = panels(1)
    assert shared_legend(empty, [ax]) is None
