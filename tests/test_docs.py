"""The documentation: every public module has examples (pytest runs them, by
``--doctest-modules``), and the command line's demo and version."""

import doctest
import importlib

import pytest

import gkfda

#: Public modules and the fewest examples each must have.
EXAMPLES = {
    "gkfda": 2,
    "gkfda.estimator": 10,
    "gkfda.reference": 3,
    "gkfda.parsimonious": 4,
    "gkfda.reference.parsimonious": 3,
    "gkfda.reference.pursuit": 5,
    "gkfda.pursuit": 1,
    "gkfda.pursuit.matching": 5,
    "gkfda.pursuit.pca": 8,
    "gkfda.pursuit.cca": 7,
    "gkfda.pursuit.nystroem": 6,
    "gkfda.datasets": 20,
    "gkfda.cli": 1,
    "gkfda.plotting": 10,
    "gkfda.study": 1,
    "gkfda.study.protocol": 2,
    "gkfda.study.experiment": 1,
    "gkfda.study.report": 1,
    "gkfda.study.results": 1,
    "gkfda.study.markdown": 1,
    "gkfda.study.published": 1,
    "gkfda.study.pursuit": 1,
}


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_public_module_has_examples(name):
    tests = doctest.DocTestFinder().find(importlib.import_module(name))
    assert sum(len(test.examples) for test in tests) >= EXAMPLES[name]


def test_demo_command_runs_and_checks_parity(capsys):
    from gkfda.cli import main

    assert main(["demo", "--n", "300", "--k", "20", "--deflations", "projection", "schur",
                 "--reference", "projection", "schur"]) == 0
    output = capsys.readouterr().out
    assert "| optimal | projection | 20 |" in output and "SVC" in output


def test_version_command_prints_the_version(capsys):
    from gkfda.cli import main

    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out.strip() == f"gkfda {gkfda.__version__}"


def test_importing_gkfda_loads_no_estimator_stack():
    """`import gkfda` (and so `gkfda --help`) loads the core alone: the estimators, and with
    them NumPy, SciPy and scikit-learn, load on first use."""
    import subprocess
    import sys

    code = "import sys, gkfda; print(sorted(m for m in ('numpy', 'scipy', 'sklearn', 'pandas') if m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"
    code = "import gkfda; print(gkfda.GreedyKFDA.__name__, gkfda.reference.__name__, 'save' in dir(gkfda))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "GreedyKFDA gkfda.reference True"
