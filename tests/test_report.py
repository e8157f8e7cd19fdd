"""The report of an experiment's results directory (gkfda.report) and the published numbers (gkfda.published)."""

import csv
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from gkfda.study import published, report

COLUMNS = ("dataset", "method", "criterion", "deflation", "stages", "realisation", "canonical", "gamma", "k",
           "k_used", "m_train", "m_test", "n_features", "test_error", "fit_time", "cv_error", "params")
SHAPES = {"banana": (2, 400, 4900), "heart": (13, 170, 100), "thyroid": (5, 140, 75)}
GREEDY = ["optimal/schur/1", "optimal/schur/2", "pseudo/schur/1", "pseudo/ortho-schur/1", "pseudo/ortho-schur/2",
          "pseudo/ortho-schur/5", "optimal/ortho-schur/1", "random/none/1", "pseudo/none/1"]
METHODS = ["kfda", "svm"] + GREEDY
R = 3
# Left out, to be reported as missing: a whole (method, data set) pair and one realisation.
DROPPED = {("random/none/1", "thyroid", r) for r in range(1, R + 1)} | {("svm", "heart", 3)}


def _rows():
    rng = np.random.default_rng(0)
    rows = []
    for d, (dim, train, test) in SHAPES.items():
        for method in METHODS:
            for r in range(1, R + 1):
                if (method, d, r) in DROPPED:
                    continue
                if method in ("kfda", "svm"):
                    criterion = deflation = stages = ""
                    k = train if method == "kfda" else int(rng.integers(50, 100))
                    k_used, params = k, json.dumps({"reg": 1e-4} if method == "kfda" else {"C": 10})
                else:
                    criterion, deflation, stages = method.split("/")
                    k = int(rng.integers(5, 40))
                    k_used, params = k - int(rng.integers(0, 3)), "{}"
                rows.append({
                    "dataset": d, "method": method, "criterion": criterion, "deflation": deflation,
                    "stages": stages, "realisation": r, "canonical": int(r <= 2), "gamma": 0.5, "k": k,
                    "k_used": k_used, "m_train": train, "m_test": test, "n_features": dim,
                    "test_error": round(float(rng.uniform(0.05, 0.35)), 6),
                    "fit_time": round(float(rng.uniform(0.01, 2.0)), 6), "cv_error": 0.2, "params": params,
                })
    return rows


def _write_csv(path, columns, rows):
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def make_results_dir(directory):
    """A synthetic, partial results directory: 3 data sets x (kfda, svm, 8 greedy variants) x 3 realisations."""
    directory.mkdir(parents=True)
    rows = _rows()
    _write_csv(directory / "results.csv", COLUMNS, rows)
    _write_csv(directory / "gamma.csv", ("dataset", "gamma", "width", "cv_error", "split_widths"),
               [{"dataset": d, "gamma": 0.5, "width": 2.0, "cv_error": 0.2, "split_widths": "[2.0, 2.0, 8.0]"}
                for d in SHAPES])
    paths = []
    for d in SHAPES:
        for shift, method in enumerate(("optimal/schur/1", "pseudo/ortho-schur/1")):
            for k in range(10, 60, 10):
                cv = 0.3 - k / 1000 + 0.02 * shift + (k - 30) ** 2 / 20000
                paths.append({"dataset": d, "method": method, "curve": "cv", "k": k, "error": cv})
                paths.append({"dataset": d, "method": method, "curve": "test", "k": k, "error": cv + 0.01})
    _write_csv(directory / "paths.csv", ("dataset", "method", "curve", "k", "error"), paths)
    (directory / "config.json").write_text(json.dumps({
        "datasets": list(SHAPES), "variants": GREEDY + ["reverse/schur/1"], "baselines": ["kfda", "svm"],
        "protocol": {"realisations": R}, "wall_time_s": 12.5}))
    return directory


@pytest.fixture
def results_dir(tmp_path):
    return make_results_dir(tmp_path / "results")


def _rows_of(results_dir):
    with open(results_dir / "results.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def _per_dataset(rows, method, column, reducer):
    values = {}
    for row in rows:
        if row["method"] == method:
            values.setdefault(row["dataset"], []).append(float(row[column]))
    return {d: reducer(np.array(v)) for d, v in values.items()}


def _read_csv(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def _section(markdown, title_start):
    """The lines of report.md from the heading that starts with title_start to the next heading."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("## " + title_start))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


def _grid_row(lines, name):
    row = next(line for line in lines if line.startswith(f"| {name} |"))
    return [cell.strip() for cell in row.strip("|").split("|")]


def test_writes_every_table_as_markdown_and_csv(results_dir):
    files = report.write_report(results_dir, figures=False)
    out = results_dir / "report"
    assert files[-1] == out / "report.md" and all(f.exists() for f in files)
    for stem in ("fig1_aer", "fig2_asd", "fig3_art", "fig4_as", "fig1_aer_vs_paper", "fig4_as_vs_paper",
                 "stages", "stages_datasets", "table1", "table1_vs_paper", "counts", "gamma", "paths"):
        assert (out / f"{stem}.md").exists() and (out / f"{stem}.csv").exists(), stem
        assert f"({stem}.md)" in (out / "report.md").read_text()
    assert (out / "grid_stages1_long.csv").exists()


def test_grid_cells_and_averages_match_independent_means(results_dir):
    report.write_report(results_dir, figures=False)
    out = results_dir / "report"
    rows = _rows_of(results_dir)
    # AER of optimal + schur: mean over realisations, then over data sets.
    aer = np.mean(list(_per_dataset(rows, "optimal/schur/1", "test_error", np.mean).values()))
    # ASD: s.d. (ddof=1) over realisations per data set, averaged over data sets.
    asd = np.mean(list(_per_dataset(rows, "optimal/schur/1", "test_error", lambda a: a.std(ddof=1)).values()))
    # AS: 100 k_used / m_train.
    sparsity = {}
    for row in rows:
        if row["method"] == "pseudo/ortho-schur/1":
            sparsity.setdefault(row["dataset"], []).append(100 * float(row["k_used"]) / float(row["m_train"]))
    as_ = np.mean([np.mean(v) for v in sparsity.values()])

    grid = {row["deflation"]: row for row in _read_csv(out / "fig1_aer.csv")}
    assert float(grid["schur"]["optimal"]) == pytest.approx(aer, abs=1e-9)
    assert float({r["deflation"]: r for r in _read_csv(out / "fig2_asd.csv")}["schur"]["optimal"]) == \
        pytest.approx(asd, abs=1e-9)
    assert float({r["deflation"]: r for r in _read_csv(out / "fig4_as.csv")}["ortho-schur"]["pseudo"]) == \
        pytest.approx(as_, abs=1e-9)

    # The pseudo column Average is the mean of the pseudo cells shown (none, schur, ortho-schur).
    pseudo_cells = [np.mean(list(_per_dataset(rows, f"pseudo/{d}/1", "test_error", np.mean).values()))
                    for d in ("none", "schur", "ortho-schur")]
    assert float(grid["Average"]["pseudo"]) == pytest.approx(np.mean(pseudo_cells), abs=1e-9)
    # The schur row Average is the mean of its cells (optimal, pseudo).
    assert float(grid["schur"]["Average"]) == pytest.approx(np.mean([aer, pseudo_cells[1]]), abs=1e-9)

    # The same numbers in the Markdown, to 3 decimals, in report.md and in fig1_aer.md.
    for path in (out / "report.md", out / "fig1_aer.md"):
        text = path.read_text()
        lines = _section(text, "Diethe (2015), Figure 1") if path.name == "report.md" else text.splitlines()
        header = _grid_row(lines, "Deflation")
        schur = _grid_row(lines, "schur")
        assert schur[header.index("optimal")].strip("*†") == f"{aer:.3f}"
        average = _grid_row(lines, "**Average**")
        assert average[header.index("pseudo")] == f"{np.mean(pseudo_cells):.3f}"
        # Exactly one cell (the smallest) in bold, besides the Average label.
        cells = [c for line in lines if line.startswith("| ") and "Deflation" not in line
                 for c in line.strip("|").split("|")[1:]]
        assert sum(c.strip().startswith("**") for c in cells) == 1


def test_comparison_with_the_published_grid(results_dir):
    report.write_report(results_dir, figures=False)
    rows = _read_csv(results_dir / "report" / "fig1_aer_vs_paper.csv")
    cells = {(r["deflation"], r["criterion"]): r for r in rows}
    # Only cells present in both: ours has 6 stages-1 greedy cells, all in the paper's grid.
    assert set(cells) == {("schur", "optimal"), ("schur", "pseudo"), ("ortho-schur", "pseudo"),
                          ("ortho-schur", "optimal"), ("none", "random"), ("none", "pseudo")}
    row = cells["ortho-schur", "pseudo"]
    assert float(row["paper"]) == 0.185
    assert float(row["difference"]) == pytest.approx(float(row["ours"]) - 0.185)


def test_stage_sweep_and_table1(results_dir):
    report.write_report(results_dir, figures=False)
    out = results_dir / "report"
    rows = _rows_of(results_dir)
    sweep = [r for r in _read_csv(out / "stages.csv")]
    assert [(r["criterion"], r["deflation"], r["stages"]) for r in sweep] == [
        ("optimal", "schur", "1"), ("optimal", "schur", "2"),
        ("pseudo", "ortho-schur", "1"), ("pseudo", "ortho-schur", "2"), ("pseudo", "ortho-schur", "5")]
    expected = np.mean(list(_per_dataset(rows, "pseudo/ortho-schur/5", "test_error", np.mean).values()))
    assert float(sweep[4]["aer"]) == pytest.approx(expected, abs=1e-9)
    median = np.median(list(_per_dataset(rows, "optimal/schur/2", "test_error", np.mean).values()))
    assert float(sweep[1]["error_median"]) == pytest.approx(median, abs=1e-9)
    # The paper quotes stages 1 and 2 of pseudo / ortho-schur only.
    assert float(sweep[2]["paper_aer"]) == 0.122 and float(sweep[3]["paper_art"]) == 0.17
    assert sweep[4]["paper_aer"] == "" and sweep[0]["paper_aer"] == ""
    box = _read_csv(out / "stages_datasets.csv")
    assert len(box) == 5 * len(SHAPES)

    table = {r["dataset"]: r for r in _read_csv(out / "table1.csv")}
    assert list(table) == ["banana", "heart", "thyroid", "Mean"]
    kfda = _per_dataset(rows, "kfda", "test_error", np.mean)
    assert float(table["heart"]["kfda_error"]) == pytest.approx(kfda["heart"], abs=1e-9)
    assert float(table["Mean"]["kfda_error"]) == pytest.approx(np.mean(list(kfda.values())), abs=1e-9)
    k = _per_dataset(rows, "optimal/schur/1", "k", np.mean)
    assert float(table["thyroid"]["mpkfda_k"]) == pytest.approx(k["thyroid"])
    assert table["heart"]["svm_realisations"] == "2"
    assert (float(table["banana"]["dim"]), float(table["banana"]["train"])) == (2, 400)
    markdown = (out / "table1.md").read_text()
    assert f"| heart | 13 | 170 | 100 | {kfda['heart']:.4f} |" in markdown

    versus = {r["dataset"]: r for r in _read_csv(out / "table1_vs_paper.csv")}
    assert float(versus["heart"]["kfda_error_paper"]) == 0.2125
    assert float(versus["heart"]["mpkfda_k_paper"]) == 13
    assert "Not in our results:" in (out / "table1_vs_paper.md").read_text()


def test_paths_summary(results_dir):
    report.write_report(results_dir, figures=False)
    rows = {(r["dataset"], r["method"]): r for r in _read_csv(results_dir / "report" / "paths.csv")}
    assert len(rows) == 2 * len(SHAPES)
    row = rows["heart", "pseudo/ortho-schur/1"]
    # cv = 0.3 - k/1000 + 0.02 + (k - 30)^2 / 20000 is least at k = 40.
    assert float(row["k_min_cv"]) == 40
    assert float(row["cv_error_min"]) == pytest.approx(0.3 - 0.04 + 0.02 + 0.005)
    assert float(row["test_error_at_k_min_cv"]) == pytest.approx(float(row["cv_error_min"]) + 0.01)


def test_partial_results_are_reported_not_fatal(results_dir):
    report.write_report(results_dir, figures=False)
    out = results_dir / "report"
    text = (out / "report.md").read_text()
    missing = "\n".join(_section(text, "Missing"))
    assert "random/none/1 on thyroid: 0 of 3" in missing
    assert "svm on heart: 2 of 3" in missing
    assert "reverse/schur/1" in missing  # configured, never run
    assert "Configured data sets" not in missing  # all three configured data sets are present
    # The random/none cell covers 2 of the 3 data sets and is flagged.
    assert _grid_row(_section(text, "Diethe (2015), Figure 1"), "none")[1].rstrip("*").endswith("†")
    counts = {(r["dataset"], r["method"]): r for r in _read_csv(out / "counts.csv")}
    assert counts["thyroid", "random/none/1"]["realisations"] == "0"
    assert (counts["heart", "kfda"]["realisations"], counts["heart", "kfda"]["canonical"]) == ("3", "2")
    assert "| kfda | 3 (2) | 3 (2) | 3 (2) | 9 |" in (out / "counts.md").read_text()


def test_only_results_csv_and_damaged_rows(tmp_path, results_dir):
    # No gamma/paths/config, no baselines, a duplicated row, a row without a realisation, a truncated row.
    directory = tmp_path / "partial"
    directory.mkdir()
    rows = [r for r in _rows() if r["method"] not in ("kfda", "svm")]
    _write_csv(directory / "results.csv", COLUMNS, rows + [rows[0], {**rows[1], "realisation": ""}])
    with open(directory / "results.csv", "a") as handle:
        handle.write("heart,optimal/schur/1,optimal,schur,1,9,0,0.5,12")
    files = report.write_report(directory, tmp_path / "out", figures=False)
    text = files[-1].read_text()
    for name in ("gamma.csv", "paths.csv", "config.json"):
        assert f"`{name}` is absent." in text
    assert "No `kfda` results" in text and "No `svm` results" in text
    assert "1 duplicated" in text and "1 row(s) of `results.csv` without" in text
    assert "1 row(s) have no finite `test_error`" in text
    assert not (tmp_path / "out" / "gamma.md").exists()

    # An empty directory and a results.csv with only a header still give a report.
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "`results.csv` is absent." in report.write_report(empty, figures=False)[-1].read_text()
    _write_csv(empty / "results.csv", COLUMNS, [])
    assert "no usable rows" in report.write_report(empty)[-1].read_text()


def test_canonical_only(results_dir):
    report.write_report(results_dir, figures=False, canonical_only=True)
    counts = {(r["dataset"], r["method"]): r for r in _read_csv(results_dir / "report" / "counts.csv")}
    assert counts["banana", "kfda"]["realisations"] == "2"
    assert "Only canonical splits" in (results_dir / "report" / "report.md").read_text()


def test_figures_when_matplotlib_is_present(results_dir):
    pytest.importorskip("matplotlib")
    files = report.write_report(results_dir)
    pngs = {f.name for f in files if f.suffix == ".png"}
    assert pngs == {"fig5_stages_error.png", "fig6_stages_time.png", "fig5_stages_error_all.png",
                    "fig6_stages_time_all.png", "fig7_deflations.png", "fig8_criteria.png", "fig9_stages.png",
                    "paths.png"}
    for name in pngs:
        path = results_dir / "report" / "figures" / name
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000
        assert f"(figures/{name})" in (results_dir / "report" / "report.md").read_text()


def test_no_matplotlib_skips_figures(results_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    files = report.write_report(results_dir)
    assert not [f for f in files if f.suffix == ".png"]
    assert "matplotlib is not installed" in files[-1].read_text()


def test_a_failing_figure_does_not_stop_the_report(results_dir, monkeypatch):
    pytest.importorskip("matplotlib")

    def broken(*args, **kwargs):
        raise ValueError("boom")

    monkeypatch.setattr(report, "write_figures", broken)
    files = report.write_report(results_dir)
    assert "Drawing the figures failed (ValueError: boom)" in files[-1].read_text()
    assert (results_dir / "report" / "table1.md").exists()


def test_run_and_main(results_dir, tmp_path, capsys):
    out = tmp_path / "elsewhere"
    assert report.main([str(results_dir), "--out", str(out), "--no-figures"]) == 0
    assert (out / "report.md").exists() and not (results_dir / "report").exists()
    parser = report.add_arguments(__import__("argparse").ArgumentParser())
    assert report.run(parser.parse_args([str(results_dir), "--no-figures"])) == 0
    assert (results_dir / "report" / "report.md").exists()
    assert "report.md" in capsys.readouterr().out
    assert report.main([str(tmp_path / "does-not-exist")]) == 2


#: The study's committed results and the tables made from them.
COMMITTED = Path(__file__).resolve().parents[1] / "docs" / "results"


@pytest.mark.skipif(not (COMMITTED / "report").is_dir(), reason="no committed results in this tree")
def test_committed_results_regenerate_their_tables(tmp_path):
    report.write_report(COMMITTED, tmp_path, figures=False)
    tables = sorted((COMMITTED / "report").glob("*.csv"))
    assert len(tables) >= 16
    for table in tables:
        assert (tmp_path / table.name).read_bytes() == table.read_bytes(), table.name


# --------------------------------------------------------------------------- published numbers


def test_published_grids_are_complete():
    for figure in published.FIGURES_000.values():
        assert set(figure["cells"]) == {(d, c) for d in published.DEFLATIONS_000 for c in published.CRITERIA_000}
    assert published.DEFLATIONS_000 == tuple(d for d in report.DEFLATIONS if d != "ortho-hotelling")
    assert published.CRITERIA_000 == report.CRITERIA
    assert set(published.TABLE1_002) == set(published.PAPER_NAMES_002)
    assert len(published.TABLE1_002) == 13


def test_figure1_row_averages_match_the_printed_column():
    for deflation, printed in published.FIGURES_000[1]["row_average"].items():
        mean = np.mean([published.FIGURE1_AER[deflation, c] for c in published.CRITERIA_000])
        assert mean == pytest.approx(printed, abs=0.002), deflation


@pytest.mark.parametrize("number", [1, 2, 3, 4])
def test_every_figure_margin_matches_its_cells(number):
    figure = published.FIGURES_000[number]
    half_unit = 0.05 if number == 4 else 0.0005  # the printed averages are rounded
    for d, printed in figure["row_average"].items():
        assert np.mean([figure["cells"][d, c] for c in published.CRITERIA_000]) == pytest.approx(printed, abs=half_unit + 1e-9)
    for c, printed in figure["column_average"].items():
        assert np.mean([figure["cells"][d, c] for d in published.DEFLATIONS_000]) == pytest.approx(printed, abs=half_unit + 1e-9)
    assert np.mean(list(figure["cells"].values())) == pytest.approx(figure["overall"], abs=half_unit + 1e-9)


def test_table1_mean_row_is_the_mean_of_the_rows():
    for column, printed in published.TABLE1_002_MEAN.items():
        mean = np.mean([row[column] for row in published.TABLE1_002.values()])
        assert mean == pytest.approx(printed, abs=0.05 if column == "mpkfda_k" else 0.00005 + 1e-12), column


def test_table1_shapes_match_the_packaged_benchmarks():
    from gkfda.datasets import list_benchmarks

    assert sorted(published.TABLE1_002) == sorted(list_benchmarks())
    assert published.TABLE1_002["image"]["train"] == 1300 and published.TABLE1_002["splice"]["test"] == 2175


# -- kFDA_q (Harrison & Pasupa, 2010) ------------------------------------------------------------------


def _kfdaq_dir(directory):
    """kFDA_q rows for heart and thyroid (3 realisations each), as `gkfda experiment` writes them."""
    directory.mkdir(parents=True)
    rows = []
    for d in ("heart", "thyroid"):
        dim, train, test = SHAPES[d]
        for method, error, k in (("kfdaq1-mcr", 0.15, 17), ("kfdaq1-nrs", 0.17, 10), ("kfdaq0.5-mcr", 0.16, 5),
                                 ("kfdaq0.5-nrs", 0.18, 2)):
            for r in range(1, R + 1):
                rows.append({
                    "dataset": d, "method": method, "criterion": "", "deflation": "", "stages": "",
                    "realisation": r, "canonical": 1, "gamma": 0.1, "k": k + r, "k_used": k + r, "m_train": train,
                    "m_test": test, "n_features": dim, "test_error": error + 0.01 * r, "fit_time": 0.1,
                    "cv_error": 0.2, "params": json.dumps({"q": 1.0, "rho": 1e-3, "width": 8.0}),
                })
    _write_csv(directory / "results.csv", COLUMNS, rows)
    return directory


def test_kfdaq_tables_beside_paper_003_and_in_table_1(results_dir, tmp_path):
    kfdaq = _kfdaq_dir(tmp_path / "kfdaq")
    report.write_report(results_dir, figures=False, also=[kfdaq])
    out = results_dir / "report"
    versus = {row["dataset"]: row for row in _read_csv(out / "table1_003_vs_paper.csv")}
    assert set(versus) == {"heart", "thyroid", "Mean (same data sets)"}
    heart = versus["heart"]
    assert float(heart["kfdaq1-mcr_mcr"]) == pytest.approx(100 * (0.15 + 0.02))  # realisations 1..3
    assert float(heart["kfdaq1-mcr_nrs"]) == pytest.approx(100 * 19 / 170)
    assert float(heart["kfdaq0.5-nrs_mcr_paper"]) == 16.0 and float(heart["kfdaq0.5-nrs_nrs_paper"]) == 1.8
    mean = versus["Mean (same data sets)"]
    assert float(mean["kfdaq1-mcr_mcr_paper"]) == pytest.approx((14.6 + 1.0) / 2)
    markdown = (out / "table1_003_vs_paper.md").read_text()
    assert "| Heart | 17.0 ± 1.0 / 11.2 | 14.6 ± 3.0 / 10.6 |" in markdown
    assert "| Thyroid |" in markdown and "N/A" not in markdown  # image's "N/A" is not among them
    table = {row["dataset"]: row for row in _read_csv(out / "table1_kfdaq.csv")}
    assert float(table["heart"]["kfdaq0.5-mcr_k_used"]) == pytest.approx(7.0)
    assert table["heart"]["kfda_error"] != "" and table["heart"]["kfdaq1-mcr_error"] != ""
    assert table["banana"]["kfdaq1-mcr_error"] == ""  # kFDA_q did not run on banana
    assert "kFDA_q against Harrison & Pasupa (2010)" in (out / "report.md").read_text()


def test_no_kfdaq_tables_without_kfdaq_rows(results_dir):
    files = report.write_report(results_dir, figures=False)
    assert not any(f.name.startswith(("table1_003", "table1_kfdaq")) for f in files)


def test_published_table_003_reproduces_its_mean_rows():
    for column in published.TABLE1_003_COLUMNS:
        for metric in ("mcr", "nrs"):
            values = [published.TABLE1_003[d][column][metric] for d in published.TABLE1_003]
            assert np.mean(values) == pytest.approx(published.TABLE1_003_MEAN[column][metric], abs=0.06)
    assert set(published.TABLE1_003) == set(published.TABLE1_002)
