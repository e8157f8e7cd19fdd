"""The command line: bad option values, unusable output directories and corrupted results
files get one line naming the option or file (no traceback); help is complete and cheap."""

import json
import os
import re
import subprocess
import sys
import tempfile

import pytest

from gkfda import cli
from gkfda.cli import main

TINY = ["--datasets", "heart", "--criteria", "optimal", "--deflations", "schur", "--realisations", "1",
        "--cv-realisations", "1", "--folds", "2", "--no-baselines", "--jobs", "1", "--no-progress"]
RESULTS_HEADER = ("dataset,method,criterion,deflation,stages,realisation,canonical,gamma,k,k_used,m_train,m_test,"
                  "n_features,test_error,fit_time,cv_error,params\n")


def one_line_error(capsys, argv, status=2):
    """Run ``gkfda argv``; its status and the one stderr line that says what is wrong."""
    try:
        code = main(argv)
    except SystemExit as stopped:
        code = stopped.code
    err = capsys.readouterr().err
    assert code == status, err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if "error:" in line]
    # A usage line and the one error: short, wherever the temporary paths it names are.
    assert len(errors) == 1 and len(err.replace(tempfile.gettempdir(), "")) < 800, err
    return errors[0]


def test_the_offered_names_are_the_library_s():
    import gkfda
    from gkfda.datasets import list_benchmarks
    from gkfda.study import bound, protocol

    assert cli.CRITERIA == gkfda.CRITERIA and cli.DEFLATIONS == gkfda.DEFLATIONS
    assert list(cli.BENCHMARKS) == list_benchmarks()
    assert cli.PROTOCOLS == protocol.PROTOCOLS and cli.SELF_TUNED == protocol.SELF_TUNED
    assert cli.BOUND_SIZES == bound.FITTED_SIZES


def test_help_imports_nothing_beyond_the_package():
    # What `gkfda <cmd> --help` loads on top of `import gkfda`: no study module, no pandas.
    code = (
        "import sys, gkfda; before = set(sys.modules); from gkfda.cli import main\n"
        "for command in ([], ['demo'], ['experiment'], ['report'], ['bound'], ['pursuit']):\n"
        "    try: main(command + ['--help'])\n"
        "    except SystemExit: pass\n"
        "print(' '.join(sorted(set(sys.modules) - before)), file=sys.stderr)\n"
    )
    added = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stderr.split()
    heavy = [m for m in added if m.split(".")[0] in ("numpy", "scipy", "sklearn", "pandas", "matplotlib", "tqdm")
             or (m.startswith("gkfda.") and m not in ("gkfda.cli", "gkfda.study", "gkfda.study.arguments"))]
    assert heavy == []


def test_every_option_has_help_and_shows_its_default():
    parser = cli._parser()
    (commands,) = [a for a in parser._actions if isinstance(a, cli.argparse._SubParsersAction)]
    formatter = cli._HelpFormatter("gkfda")
    for name, sub in commands.choices.items():
        for action in sub._actions:
            if isinstance(action, cli.argparse._HelpAction):
                continue
            assert action.help, (name, action.dest)
            if action.option_strings and action.nargs != 0:
                assert "(default" in formatter._get_help_string(action), (name, action.dest)


@pytest.mark.parametrize(
    "argv, option",
    [
        (["demo", "--n", "0"], "--n"),
        (["demo", "--k", "0"], "--k"),
        (["demo", "--gamma", "nan"], "--gamma"),
        (["demo", "--gamma", "-1"], "--gamma"),
        (["demo", "--seed", "-1"], "--seed"),
        (["experiment", "--folds", "0"], "--folds"),
        (["experiment", "--folds", "1"], "--folds"),
        (["experiment", "--jobs", "0"], "--jobs"),
        (["experiment", "--stages", "0"], "--stages"),
        (["experiment", "--realisations", "-1"], "--realisations"),
        (["experiment", "--cv-realisations", "two"], "--cv-realisations"),
        (["bound", ".", "--delta", "2"], "--delta"),
        (["bound", ".", "--delta", "0"], "--delta"),
        (["bound", ".", "--realisations", "0"], "--realisations"),
        (["bound", ".", "--sizes", "1000", "0"], "--sizes"),
    ],
)
def test_bad_numbers_name_the_option(capsys, argv, option):
    line = one_line_error(capsys, argv)
    assert line.startswith(f"gkfda {argv[0]}: error: argument {option}: must be ")


def test_an_output_that_is_a_file_is_refused_before_any_work(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("")
    assert "argument --out: " in one_line_error(capsys, ["experiment", "--out", str(afile)])
    assert f"{afile} is a file" in one_line_error(capsys, ["experiment", *TINY, "--out", str(afile / "sub")])
    assert "argument --out: " in one_line_error(capsys, ["pursuit", "--out", str(afile)])
    assert "argument --out: " in one_line_error(capsys, ["report", str(tmp_path), "--out", str(afile)])
    assert not (afile.parent / "gkfda-results").exists()


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes into read-only directories")
def test_an_unwritable_output_is_refused(tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        assert "is not writable" in one_line_error(capsys, ["experiment", "--out", str(locked)])
        assert "cannot be created" in one_line_error(capsys, ["experiment", "--out", str(locked / "new")])
    finally:
        locked.chmod(0o700)


@pytest.mark.parametrize(
    "name, content, expected",
    [
        ("config.json", '{"protocol": {"name": "def', "not valid JSON"),
        ("config.json", "[1, 2]", "holds a JSON list"),
        ("config.json", '{"protocol": "default"}', "'protocol' is a JSON str"),
        ("config.json", b"\xff\xfe{}", "not UTF-8 text"),
        ("results.csv", "garbage,\x00\nstuff\n", "lacks the column(s) dataset, method"),
        ("results.csv", RESULTS_HEADER + "heart,optimal/schur/1,optimal,schur,1,1,1,0.03,10,10,170,100,13,zero,0.1,0.1,{}\n",
         "line 2: test_error 'zero' is not a number"),
        ("results.csv", b"\xff\xfe\x00garbage", "not a CSV file"),
        ("gamma.csv", "dataset,gamma,width,cv_error,split_widths\nheart,wide,1,0.1,[]\n", "gamma 'wide' is not a number"),
    ],
)
def test_a_corrupted_results_file_gets_one_line_naming_it(tmp_path, capsys, name, content, expected):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    line = one_line_error(capsys, ["experiment", *TINY, "--out", str(tmp_path)])
    assert line.startswith(f"gkfda: error: {path}: ") and expected in line
    assert not (tmp_path / "paths.csv").exists()  # nothing ran


@pytest.mark.parametrize(
    "name, content, expected",
    [
        ("results.csv", "dataset,method\nheart\n", "lacks the column(s) realisation, k, gamma, test_error"),
        ("results.csv", RESULTS_HEADER + "heart,optimal/schur/1,optimal,schur,1,1,1,0.03,ten,10,170,100,13,0.2,0.1,0.1,{}\n",
         "line 2: k 'ten' is not a number"),
        ("config.json", "{", "not valid JSON"),
    ],
)
def test_bound_names_a_corrupted_file(tmp_path, capsys, name, content, expected):
    (tmp_path / "results.csv").write_text(
        RESULTS_HEADER + "heart,optimal/schur/1,optimal,schur,1,1,1,0.03,10,10,170,100,13,0.2,0.1,0.1,{}\n")
    (tmp_path / name).write_text(content)
    line = one_line_error(capsys, ["bound", str(tmp_path), "--no-synthetic"])
    assert line.startswith(f"gkfda: error: {tmp_path / name}: ") and expected in line


def test_bound_without_results_names_the_file(tmp_path, capsys):
    line = one_line_error(capsys, ["bound", str(tmp_path)])
    assert line == f"gkfda: error: {tmp_path / 'results.csv'}: does not exist; `gkfda experiment --out {tmp_path}` writes it"


def test_a_results_directory_of_another_protocol_is_one_line(tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps({"protocol": {"name": "paper000"}}))
    line = one_line_error(capsys, ["experiment", *TINY, "--out", str(tmp_path)])
    assert line.startswith(f"gkfda: error: out: {tmp_path} holds results of the paper000 protocol")


def test_demo_shows_progress_on_stderr_unless_told_not_to(capsys):
    argv = ["demo", "--n", "60", "--k", "5", "--deflations", "schur", "--reference", "schur"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "| optimal | schur | 5 |" in captured.out and "gkfda demo" in captured.err and "3/3" in captured.err
    assert main([*argv, "--no-progress"]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(("argv", "expected"), [
    (["demo", "--n", "1"], "argument --n: must be an integer in [10, 2**63 - 1], got '1'"),
    (["demo", "--k", "99999999999999999999999"],
     "argument --k: must be an integer in [1, 2**63 - 1], got '99999999999999999999999'"),
    (["experiment", "--folds", "99999999999999999999999"],
     "argument --folds: must be an integer in [2, 2**63 - 1], got '99999999999999999999999'"),
])
def test_counts_beyond_what_the_estimators_take_are_usage_errors(capsys, argv, expected):
    assert one_line_error(capsys, argv).endswith(expected)


def test_a_k_above_the_demo_s_points_is_fitted_with_the_estimator_s_warning(capsys):
    assert main(["demo", "--n", "40", "--k", str(2**63 - 1), "--deflations", "schur", "--no-progress"]) == 0
    assert "| optimal | schur | " in capsys.readouterr().out


def test_a_backend_that_is_not_installed_is_one_line(tmp_path, capsys, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def without_ray(name, *args, **kwargs):  # as if ray were not installed, whether it is or not
        if name == "ray" or name.startswith("ray."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_ray)
    monkeypatch.delitem(sys.modules, "ray", raising=False)
    monkeypatch.delitem(sys.modules, "ray.util.joblib", raising=False)
    line = one_line_error(capsys, ["experiment", "--backend", "ray", "--out", str(tmp_path), *TINY], status=1)
    assert line == "gkfda: error: --backend ray: needs the ray package, which is not installed (pip install ray)"


def test_dask_missing_names_the_extra_to_install_from_a_clone(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # an import of it raises ImportError
    line = one_line_error(capsys, ["experiment", "--backend", "dask", "--out", str(tmp_path), *TINY], status=1)
    assert line == ('gkfda: error: --backend dask: needs the dask package, which is not installed '
                    '(pip install ".[dask]" in a clone of gkfda)')


def test_a_scheduler_nobody_listens_at_is_one_line(tmp_path, capsys, monkeypatch):
    pytest.importorskip("distributed")
    import socket

    import dask

    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        line = one_line_error(capsys, ["experiment", "--backend", "dask", "--scheduler", f"tcp://127.0.0.1:{port}",
                                       "--out", str(tmp_path), *TINY], status=1)
    assert line.startswith(f"gkfda: error: --scheduler: no Dask scheduler answers at tcp://127.0.0.1:{port} (")


def test_an_input_an_estimator_refuses_is_one_line(capsys, monkeypatch):
    # Whatever a command's fit refuses (here a demo whose data became NaN) is its one line.
    import numpy as np

    monkeypatch.setattr(cli, "synthetic_problem", lambda n, seed: (np.full((n, 5), np.nan), np.arange(n) % 2))
    line = one_line_error(capsys, ["demo", "--n", "20", "--deflations", "schur", "--no-progress"], status=1)
    assert line.startswith("gkfda: error: X: Input X contains NaN")


def test_ctrl_c_ends_a_command_without_a_traceback(capsys, monkeypatch):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_demo", interrupted)
    assert main(["demo"]) == 130
    err = capsys.readouterr().err
    assert err == "gkfda: interrupted\n"


def _help_texts():
    """``gkfda --help`` and every ``gkfda COMMAND --help``, as printed."""
    parser = cli._parser()
    (commands,) = [a for a in parser._actions if isinstance(a, cli.argparse._SubParsersAction)]
    return {"gkfda": parser.format_help(), **{name: sub.format_help() for name, sub in commands.choices.items()}}


def test_help_states_each_default_once():
    parser = cli._parser()
    (commands,) = [a for a in parser._actions if isinstance(a, cli.argparse._SubParsersAction)]
    formatter = cli._HelpFormatter("gkfda")
    for name, sub in commands.choices.items():
        for action in sub._actions:
            shown = formatter._get_help_string(action) or ""
            assert shown.count("default:") <= 1, (name, action.dest, shown)
    experiment = " ".join(_help_texts()["experiment"].split())
    assert "--jobs N parallel tasks, run by joblib (default: the number of CPUs) --backend" in experiment


def test_help_names_papers_by_author_and_year_and_gives_no_second_quick_time():
    texts = _help_texts()
    for name, text in texts.items():
        assert "paper 0" not in text.lower(), name
    assert "Diethe (2015, §3.4)" in " ".join(texts["gkfda"].split())
    assert "Hussain et al. (2011)" in " ".join(texts["pursuit"].split())
    quick = " ".join(texts["experiment"].split()).split("--quick ", 1)[1].split(" --no-progress", 1)[0]
    assert "see docs/RESULTS.md" in quick
    assert not re.search(r"\d\s*(s|min|minutes?|seconds?)\b", quick), quick  # the one figure is in RESULTS.md


def test_pursuit_writes_to_out_and_report_reads_results_dir():
    parser = cli._parser()
    assert parser.parse_args(["pursuit"]).out == "gkfda-pursuit"
    assert parser.parse_args(["pursuit", "--out", "here"]).out == "here"
    report = parser.parse_args(["report", "runs"])
    assert (report.results_dir, report.out) == ("runs", None)
    texts = _help_texts()
    assert "usage: gkfda pursuit [-h] [--out DIR] [--quick]" in texts["pursuit"]
    usage = " ".join(texts["report"].split("\n\n", 1)[0].split())
    assert usage.startswith("usage: gkfda report ") and usage.endswith(" RESULTS_DIR"), usage
    assert "results directory of `gkfda experiment` to read" in " ".join(texts["report"].split())


def test_a_directory_given_to_pursuit_without_out_is_a_usage_error(tmp_path, capsys):
    line = one_line_error(capsys, ["pursuit", str(tmp_path / "new")])
    assert line.startswith("gkfda: error: unrecognized arguments: ")
    assert not (tmp_path / "new").exists()


def _tiny_results(directory):
    (directory / "results.csv").write_text(
        RESULTS_HEADER
        + "heart,optimal/schur/1,optimal,schur,1,1,1,0.1,10,10,170,100,13,0.2,0.01,0.2,{}\n"
        + "heart,optimal/schur/1,optimal,schur,1,2,1,0.1,10,10,170,100,13,0.3,0.01,0.2,{}\n")


def test_report_without_matplotlib_says_to_install_the_plots_extra(tmp_path, capsys, monkeypatch):
    import builtins

    _tiny_results(tmp_path)
    real_import = builtins.__import__

    def without_matplotlib(name, *args, **kwargs):  # as if matplotlib were not installed
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_matplotlib)
    assert main(["report", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "(0 figures)" in captured.out
    warnings = [line for line in captured.err.splitlines() if line.startswith("gkfda report: warning: ")]
    assert len(warnings) == 1 and "Traceback" not in captured.err, captured.err
    assert "matplotlib is not installed" in warnings[0] and 'pip install ".[plots]"' in warnings[0]
    index = (tmp_path / "report" / "report.md").read_text()
    assert 'pip install ".[plots]"' in index and "gkfda[plots]" not in index


def test_report_with_figures_declined_or_drawn_gives_no_warning(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    _tiny_results(tmp_path)
    assert main(["report", str(tmp_path), "--no-figures"]) == 0
    assert "warning" not in capsys.readouterr().err
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "drawn")]) == 0
    assert "warning" not in capsys.readouterr().err


def test_a_report_names_papers_by_author_and_year(tmp_path):
    from gkfda.study import report

    _tiny_results(tmp_path)
    files = report.write_report(tmp_path, figures=False)
    for path in files:
        if path.suffix == ".md":
            assert "paper 0" not in path.read_text(encoding="utf-8").lower(), path.name
    assert "Diethe (2015), Figure 1" in (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
