"""``gkfda pursuit``: Hussain et al.'s (2011) experiments run, and show what the paper shows."""

import numpy as np
import pandas as pd

from gkfda.cli import main
from gkfda.study import pursuit


def test_the_toy_has_its_strong_dimensions_and_lies_in_the_unit_ball():
    X_train, X_test = pursuit.toy_subspace(seed=1)
    assert X_train.shape == X_test.shape == (1000, 450)
    assert np.isclose((X_train**2).sum(axis=1).max(), 1.0)
    variances = X_train.var(axis=0)
    assert variances[:50].min() > 50 * variances[50:].max()


def test_sparse_pca_on_the_toy_turns_at_its_fifty_strong_dimensions():
    curve = pursuit.components_experiment(max_bases=100)
    assert np.all(np.diff(curve["train_residual"]) <= 1e-12)
    slope = -curve.set_index("bases")["test_residual"].diff()
    # Fast while strong dimensions are left, then slow and steady.
    assert slope.loc[10:50].mean() > 5 * slope.loc[60:].mean()
    best = int(curve.loc[curve["bound"].idxmin(), "bases"])
    assert 40 <= best <= 70
    assert np.all(curve["running_min"] <= curve["bound"])


def test_regularised_cca_finds_a_shared_view_perfectly():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(200, 5))
    Z_test = rng.normal(size=(50, 5))
    x_scores, y_scores = pursuit.regularised_cca((Z, Z_test), (Z.copy(), Z_test.copy()), ridge=1e-8)
    assert np.allclose(np.abs(pursuit._test_correlations(x_scores, y_scores)), 1.0)


def test_the_quick_command_writes_every_table(tmp_path, capsys):
    assert main(["pursuit", "--out", str(tmp_path), "--quick"]) == 0
    for name in ("components", "matching", "correlation"):
        table = pd.read_csv(tmp_path / f"{name}.csv")
        assert len(table) > 0 and table.notna().all().all()
    matching = pd.read_csv(tmp_path / "matching.csv")
    assert (matching["bound"] > 0).all()
    correlation = pd.read_csv(tmp_path / "correlation.csv")
    assert set(correlation["method"]) == {"SparseKernelCCA", "KCCA"}
    assert (tmp_path / "summary.md").read_text().startswith("## Sparse kernel PCA")
    assert "lowest at" in capsys.readouterr().out
