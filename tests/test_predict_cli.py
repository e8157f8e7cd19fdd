"""``gkfda predict MODEL INPUT -o OUT``: a file of rows scored with the Predictor."""

import csv
import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gkfda
from gkfda.cli import main

@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=400, n_features=5, n_informative=4, n_redundant=0, n_classes=3,
                               n_clusters_per_class=1, random_state=0)
    labels = np.array(["ant", "bee", "cow"])[y]
    model = gkfda.GreedyKFDA(k=15, gamma=0.2).fit(X, labels)
    directory = tmp_path_factory.mktemp("predict")
    path = directory / "model.gkfda"
    gkfda.save(model, path, lean=True)
    return model, path, X, directory


def _read(path_or_text):
    text = Path(path_or_text).read_text() if isinstance(path_or_text, Path) else path_or_text
    rows = list(csv.reader(io.StringIO(text)))
    return rows[0], rows[1:]


def _write_csv(path, X, header=None):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        if header is not None:
            writer.writerow(header)
        writer.writerows(X.tolist())


def test_a_csv_round_trip_gives_predict_proba(fitted, capsys):
    model, path, X, directory = fitted
    _write_csv(directory / "rows.csv", X)
    assert main(["predict", str(path), str(directory / "rows.csv"), "-o", str(directory / "out.csv"),
                 "--chunk-rows", "64"]) == 0
    header, rows = _read(directory / "out.csv")
    assert header == ["label", "proba_ant", "proba_bee", "proba_cow"]
    assert [row[0] for row in rows] == model.predict(X).tolist()
    np.testing.assert_allclose(np.array([row[1:] for row in rows], dtype=float), model.predict_proba(X),
                               rtol=1e-12, atol=1e-12)
    assert "scored 400 rows" in capsys.readouterr().err


def test_decision_values(fitted):
    model, path, X, directory = fitted
    _write_csv(directory / "rows.csv", X)
    assert main(["predict", str(path), str(directory / "rows.csv"), "-o", str(directory / "d.csv"),
                 "--decision", "--no-progress"]) == 0
    header, rows = _read(directory / "d.csv")
    assert header == ["label", "decision_ant", "decision_bee", "decision_cow"]
    np.testing.assert_allclose(np.array([row[1:] for row in rows], dtype=float), model.decision_function(X),
                               rtol=1e-12, atol=1e-12)


def test_npy_in_and_out(fitted):
    model, path, X, directory = fitted
    np.save(directory / "rows.npy", X)
    assert main(["predict", str(path), str(directory / "rows.npy"), "-o", str(directory / "out.npy"),
                 "--chunk-rows", "100", "--no-progress"]) == 0
    np.testing.assert_allclose(np.load(directory / "out.npy"), model.predict_proba(X), rtol=1e-12, atol=1e-12)
    np.save(directory / "rows32.npy", X.astype(np.float32))
    assert main(["predict", str(path), str(directory / "rows32.npy"), "-o", str(directory / "d.npy"),
                 "--decision", "--no-progress"]) == 0
    np.testing.assert_allclose(np.load(directory / "d.npy"), model.decision_function(X.astype(np.float32)),
                               rtol=1e-12, atol=1e-12)


def test_a_bad_row_is_one_line_naming_its_line_and_column(fitted, capsys):
    _, path, X, directory = fitted
    lines = [",".join(map(repr, row)) for row in X[:10].tolist()]
    lines[6] = lines[6].rsplit(",", 2)[0] + ",oops," + lines[6].rsplit(",", 1)[1]
    (directory / "bad.csv").write_text("\n".join(lines) + "\n")
    status = main(["predict", str(path), str(directory / "bad.csv"), "-o", str(directory / "o.csv")])
    err = capsys.readouterr().err
    assert status == 1
    assert err.strip() == f"gkfda: error: {directory / 'bad.csv'}: line 7, column 4: 'oops' is not a number"
    lines[6] = ",".join(["1"] * 4)
    (directory / "short.csv").write_text("\n".join(lines) + "\n")
    assert main(["predict", str(path), str(directory / "short.csv"), "-o", str(directory / "o.csv")]) == 1
    assert "line 7: 4 values, expected 5" in capsys.readouterr().err
    lines[6] = ",".join(["1", "nan", "1", "1", "1"])
    (directory / "nan.csv").write_text("\n".join(lines) + "\n")
    assert main(["predict", str(path), str(directory / "nan.csv"), "-o", str(directory / "o.csv")]) == 1
    assert "line 7, column 2: 'nan' is not finite" in capsys.readouterr().err


def test_a_header_is_checked_against_the_feature_names(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=200, n_features=4, n_informative=3, n_redundant=0, random_state=1)
    names = ["a", "b", "c", "d"]
    model = gkfda.GreedyKFDA(k=8).fit(pd.DataFrame(X, columns=names), y)
    gkfda.save(model, tmp_path / "named.gkfda")
    _write_csv(tmp_path / "good.csv", X, header=names)
    assert main(["predict", str(tmp_path / "named.gkfda"), str(tmp_path / "good.csv"),
                 "-o", str(tmp_path / "o.csv")]) == 0
    _, rows = _read(tmp_path / "o.csv")
    np.testing.assert_allclose(np.array([r[1:] for r in rows], dtype=float),
                               model.predict_proba(pd.DataFrame(X, columns=names)), rtol=1e-12, atol=1e-12)
    capsys.readouterr()
    _write_csv(tmp_path / "swapped.csv", X, header=["a", "c", "b", "d"])
    assert main(["predict", str(tmp_path / "named.gkfda"), str(tmp_path / "swapped.csv"),
                 "-o", str(tmp_path / "o.csv")]) == 1
    err = capsys.readouterr().err
    assert "line 1 (the header), column 2: 'c' where the model's feature_names_in_ has 'b'" in err
    assert len(err.strip().splitlines()) == 1


def test_stdin_to_stdout_in_a_subprocess(fitted):
    model, path, X, directory = fitted
    text = "\n".join(",".join(map(repr, row)) for row in X.tolist()) + "\n"
    # The subprocess imports gkfda as this process does (installed, or through PYTHONPATH).
    code = "import sys; from gkfda.cli import main; sys.exit(main())"
    run = subprocess.run([sys.executable, "-c", code, "predict", str(path), "-"], input=text,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    header, rows = _read(run.stdout)
    assert header[0] == "label"
    np.testing.assert_allclose(np.array([r[1:] for r in rows], dtype=float), model.predict_proba(X),
                               rtol=1e-12, atol=1e-12)
    assert "rows/s" in run.stderr


def test_predict_imports_no_scikit_learn(fitted):
    _, path, X, directory = fitted
    np.save(directory / "few.npy", X[:5])
    code = ("import sys; from gkfda.cli import main; status = main(sys.argv[1:]);"
            "heavy = [m for m in sys.modules if m.split('.')[0] in ('sklearn', 'scipy', 'pandas')];"
            "print(heavy, file=sys.stderr); sys.exit(status or (3 if heavy else 0))")
    run = subprocess.run([sys.executable, "-c", code, "predict", str(path), str(directory / "few.npy"),
                          "-o", str(directory / "few.csv")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_a_missing_model_is_one_line(tmp_path, capsys):
    (tmp_path / "rows.csv").write_text("1,2\n")
    assert main(["predict", str(tmp_path / "none.gkfda"), str(tmp_path / "rows.csv")]) != 0
    err = capsys.readouterr().err
    assert err.startswith("gkfda: error: ") and "none.gkfda" in err and len(err.strip().splitlines()) == 1


def test_parquet_in(fitted, capsys):
    parquet = pytest.importorskip("pyarrow.parquet")
    import pyarrow

    model, path, X, directory = fitted
    table = pyarrow.table({f"x{i}": X[:, i] for i in range(X.shape[1])})
    parquet.write_table(table, directory / "rows.parquet", row_group_size=50)
    assert main(["predict", str(path), str(directory / "rows.parquet"), "-o", str(directory / "out.csv"),
                 "--chunk-rows", "64", "--no-progress"]) == 0
    header, rows = _read(directory / "out.csv")
    assert [row[0] for row in rows] == model.predict(X).tolist()
    np.testing.assert_allclose(np.array([row[1:] for row in rows], dtype=float), model.predict_proba(X),
                               rtol=1e-12, atol=1e-12)
    # Parquet is read, not written: the output is CSV or .npy.
    assert main(["predict", str(path), str(directory / "rows.parquet"), "-o", str(directory / "out.parquet"),
                 "--no-progress"]) == 1
    assert "output is written as CSV or .npy, not Parquet" in capsys.readouterr().err
