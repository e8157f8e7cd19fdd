"""The experiment runner: protocol pieces, resume after an interrupt, joblib/Dask backends, CLI."""

import csv
import json

import numpy as np
import pytest

from gkfda.study import experiment, protocol
from gkfda.datasets import load_benchmark
from gkfda.study.protocol import ExperimentConfig, Protocol, Variant

TINY = Protocol(cv_realisations=1, folds=2, realisations=2, k_max=40)
VARIANTS = [Variant("optimal", "schur", 1), Variant("pseudo", "ortho-schur", 2)]


def rows(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def tiny_config(**changes):
    config = ExperimentConfig(datasets=["heart"], variants=list(VARIANTS), baselines=["svm"], protocol=TINY, jobs=1)
    for name, value in changes.items():
        setattr(config, name, value)
    return config


def test_k_grid_follows_the_paper_and_small_samples():
    assert Protocol().k_grid(400).tolist() == list(range(10, 201, 10))
    assert Protocol().k_grid(112).tolist() == list(range(10, 111, 10))
    assert Protocol().k_grid(7).tolist() == [7]


def test_variants_cover_the_grid():
    assert len(protocol.variants()) == 5 * 7 * 4
    assert {v.key for v in protocol.variants(["pseudo"], ["ortho-schur"])} == {
        f"pseudo/ortho-schur/{s}" for s in (1, 2, 5, 10)
    }


def test_select_gamma_returns_a_grid_width():
    result = experiment.select_gamma(load_benchmark("thyroid"), Protocol(cv_realisations=2, folds=2, k_max=30))
    assert result["width"] in protocol.WIDTHS and result["gamma"] == pytest.approx(1 / result["width"])
    assert len(result["split_widths"]) == 2


def test_the_default_protocol_extends_a_chosen_end_of_the_width_grid_and_the_paper_s_does_not():
    default, paper = Protocol(), Protocol(name="paper000")
    assert default.wider_widths(protocol.WIDTHS, 2.0**5) == [2.0**7]
    assert default.wider_widths(protocol.WIDTHS, 2.0**-5) == [2.0**-7]
    assert default.wider_widths(protocol.WIDTHS, 2.0**1) == []  # inside: nothing to add
    assert default.wider_widths([2.0**e for e in range(-5, 12, 2)], 2.0**11) == []  # the limit
    assert paper.wider_widths(protocol.WIDTHS, 2.0**5) == []
    assert default.model_params() == {}
    np.testing.assert_array_equal(paper.model_params()["priors"], [0.5, 0.5])


def test_a_width_search_that_chooses_an_end_goes_past_it():
    # A grid of kernels far too narrow for the data: its widest end is chosen, and the
    # default protocol goes on past it until a width inside the scored grid wins.
    narrow = (2.0**-5, 2.0**-3)
    options = dict(cv_realisations=1, folds=2, k_max=30, widths=narrow)
    paper = experiment.select_gamma(load_benchmark("thyroid"), Protocol(name="paper000", **options))
    extended = experiment.select_gamma(load_benchmark("thyroid"), Protocol(**options))
    assert paper["width"] == 2.0**-3
    assert extended["width"] > 2.0**-3 and extended["cv_error"] < paper["cv_error"]


def test_a_results_directory_keeps_one_protocol(tmp_path):
    experiment.run_experiment(tiny_config(baselines=[], variants=VARIANTS[:1]), tmp_path, progress=False)
    paper = tiny_config(baselines=[], variants=VARIANTS[:1], protocol=Protocol(
        cv_realisations=1, folds=2, realisations=2, k_max=40, name="paper000"))
    with pytest.raises(ValueError, match=r"^out: .* holds results of the default protocol"):
        experiment.run_experiment(paper, tmp_path, progress=False)


def test_run_writes_results_paths_and_widths(tmp_path):
    summary = experiment.run_experiment(tiny_config(), tmp_path, progress=False)
    results = rows(tmp_path / "results.csv")
    assert summary["tasks_run"] == 1 + 3  # the width, two variants, the SVM
    assert len(results) == 3 * 2
    assert {r["method"] for r in results} == {"optimal/schur/1", "pseudo/ortho-schur/2", "svm"}
    assert all(0.0 <= float(r["test_error"]) <= 1.0 and float(r["fit_time"]) > 0 for r in results)
    assert {r["realisation"] for r in results} == {"1", "2"}
    assert {r["canonical"] for r in results} == {"1"}  # heart's first realisations are canonical
    greedy = [r for r in results if r["method"] == "optimal/schur/1"]
    assert {int(r["k"]) for r in greedy} <= {10, 20, 30, 40}
    paths = rows(tmp_path / "paths.csv")
    assert {(p["method"], p["curve"]) for p in paths} >= {("optimal/schur/1", "cv"), ("optimal/schur/1", "test")}
    (gamma,) = rows(tmp_path / "gamma.csv")
    assert float(gamma["gamma"]) == pytest.approx(float(greedy[0]["gamma"]))
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["datasets"] == ["heart"] and config["wall_time_s"] > 0


def test_rerun_after_an_interrupt_resumes_without_losing_or_repeating_work(tmp_path, monkeypatch):
    calls = []
    original = experiment.run_task

    def interrupted_after_two(task):
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append((task.dataset, task.method))
        return original(task)

    monkeypatch.setattr(experiment, "run_task", interrupted_after_two)
    with pytest.raises(KeyboardInterrupt):
        experiment.run_experiment(tiny_config(), tmp_path, progress=False)
    before = rows(tmp_path / "results.csv")
    finished = {r["method"] for r in before}
    assert len(finished) == 1  # the width task, then one (data set, method) task
    monkeypatch.setattr(experiment, "run_task", original)

    # A task cut off mid-write leaves a partial group: it must run again, exactly once.
    with open(tmp_path / "results.csv", "a", newline="") as handle:
        partial = dict(before[0], method="optimal/schur/1" if "svm" in finished else "svm", realisation="1")
        csv.DictWriter(handle, fieldnames=experiment.RESULT_COLUMNS).writerow(partial)

    summary = experiment.run_experiment(tiny_config(), tmp_path, progress=False)
    after = rows(tmp_path / "results.csv")
    assert summary["tasks_skipped"] == 2 and summary["tasks_run"] == 2  # done: the width and one method
    assert len(after) == 3 * 2
    assert len({(r["method"], r["realisation"]) for r in after}) == len(after)
    assert [r for r in after if r["method"] in finished] == before  # untouched
    assert len(rows(tmp_path / "gamma.csv")) == 1  # the width was not selected twice

    # Adding a method later runs only that method.
    more = tiny_config(variants=VARIANTS + [Variant("random", "none", 1)])
    assert experiment.run_experiment(more, tmp_path, progress=False)["tasks_run"] == 1
    assert len(rows(tmp_path / "results.csv")) == 4 * 2


def test_parallel_and_dask_backends_give_the_same_results(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    experiment.run_experiment(tiny_config(jobs=2), tmp_path / "loky", progress=False)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
    with cluster, distributed.Client(cluster):
        experiment.run_experiment(tiny_config(jobs=2, backend="dask"), tmp_path / "dask", progress=False)

    def errors(directory):
        return sorted((r["method"], r["realisation"], r["test_error"], r["k"]) for r in rows(directory / "results.csv"))

    assert errors(tmp_path / "dask") == errors(tmp_path / "loky")
    assert json.loads((tmp_path / "dask" / "config.json").read_text())["backend"] == "dask"


def test_kfda_baseline_tunes_width_and_ridge(tmp_path):
    output = experiment.run_task(experiment.Task("thyroid", "kfda", protocol=TINY))
    (first, second) = output["results"]
    params = json.loads(first["params"])
    assert params["width"] in protocol.WIDTHS and params["reg"] in protocol.KFDA_REGS
    assert first["k"] == first["m_train"] == 140
    assert float(first["test_error"]) < 0.2 and float(second["test_error"]) < 0.2


def test_command_line_runs_and_summarises(tmp_path, capsys):
    from gkfda.cli import main

    argv = ["experiment", "--datasets", "thyroid", "--criteria", "optimal", "--deflations", "schur",
            "--realisations", "2", "--cv-realisations", "1", "--folds", "2", "--baselines", "svm",
            "--jobs", "1", "--no-progress", "--out", str(tmp_path)]
    assert main(argv) == 0
    output = capsys.readouterr().out
    assert "| optimal/schur/1 |" in output and "wall time" in output
    # A first run and a resume count the same tasks the same way: the width, the variant, the SVM.
    assert "3 of 3 tasks run, 0 already complete" in output and "resuming" not in output
    assert main(argv) == 0  # everything done: nothing to run
    output = capsys.readouterr().out
    assert f"resuming: 3 of 3 tasks already complete in {tmp_path}" in output
    assert "0 of 3 tasks run, 3 already complete" in output
    errors = np.array([float(r["test_error"]) for r in rows(tmp_path / "results.csv")])
    assert errors.shape == (4,)


# -- kFDA_q (Harrison & Pasupa, 2010) -------------------------------------------------------------------


def test_kfdaq_selection_rules():
    # Two folds, widths × ρs = 2 × 3. The least mean error is at (0, 0); (1, 2) is within
    # one standard error of it and retains the fewest; (0, 2) retains fewer still but is
    # too far off.
    errors = np.array([
        [[0.10, 0.14, 0.40], [0.20, 0.15, 0.13]],
        [[0.12, 0.14, 0.40], [0.20, 0.15, 0.10]],
    ])
    retained = np.array([[[0.5, 0.4, 0.01], [0.3, 0.2, 0.1]]] * 2)
    assert experiment.select_kfdaq(errors, retained) == {"mcr": (0, 0), "nrs": (1, 2)}
    # Equal folds: no spread, so "nrs" keeps only the settings of the least error.
    flat = np.repeat(errors[:1], 2, axis=0)
    assert experiment.select_kfdaq(flat, retained) == {"mcr": (0, 0), "nrs": (0, 0)}


def test_kfdaq_task_writes_both_rules(tmp_path):
    config = tiny_config(variants=[], baselines=["kfdaq0.5"])
    summary = experiment.run_experiment(config, tmp_path, progress=False)
    assert summary["tasks_run"] == 1  # no width task: kFDA_q tunes its own
    results = rows(tmp_path / "results.csv")
    assert sorted(r["method"] for r in results) == ["kfdaq0.5-mcr"] * 2 + ["kfdaq0.5-nrs"] * 2
    assert not (tmp_path / "gamma.csv").exists()
    for r in results:
        params = json.loads(r["params"])
        assert params["q"] == 0.5 and params["rho"] in protocol.KFDAQ_RHOS and params["width"] in protocol.WIDTHS
        assert params["rule"] == r["method"].split("-")[1]
        assert r["k"] == r["k_used"] and 1 <= int(r["k_used"]) <= int(r["m_train"])
        assert 0.0 <= float(r["test_error"]) < 0.4 and 0.0 <= params["paper_rule_error"] < 0.4
    by_rule = {rule: [int(r["k_used"]) for r in results if r["method"].endswith(rule)] for rule in ("mcr", "nrs")}
    assert sum(by_rule["nrs"]) <= sum(by_rule["mcr"])  # at least as sparse on these realisations
    # Both rules' rows are there: nothing runs again.
    assert experiment.run_experiment(config, tmp_path, progress=False)["tasks_run"] == 0


def test_kfdaq_is_out_of_the_quick_job_and_in_the_full_one():
    assert not set(protocol.KFDAQ_METHODS) & set(protocol.QUICK["baselines"])
    assert set(protocol.KFDAQ_METHODS) <= set(ExperimentConfig().baselines)
    assert protocol.row_methods("kfdaq1") == ("kfdaq1-mcr", "kfdaq1-nrs")
    assert protocol.row_methods("svm") == ("svm",)


def test_a_line_cut_off_mid_write_is_dropped_and_its_task_runs_again(tmp_path):
    directory = experiment.ResultsDirectory(tmp_path)
    row = dict.fromkeys(experiment.RESULT_COLUMNS, "1")
    directory.append({"results": [dict(row, dataset="heart", method="svm", realisation=r) for r in (1, 2)]})
    with open(directory.results, "a") as handle:
        handle.write("heart,optimal/schur/1,optimal,sch")  # no newline: the write stopped here
    _, complete = directory.done({("heart", "svm"): 2, ("heart", "optimal/schur/1"): 2})
    assert complete == {("heart", "svm")}
    assert [r["method"] for r in rows(directory.results)] == ["svm", "svm"]
