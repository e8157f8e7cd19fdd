"""The documentation examples run: doctests of every public module of the installed package."""

import doctest
import importlib

import pytest

MODULES = ["gkfda", "gkfda.estimator", "gkfda.reference", "gkfda._model", "gkfda.datasets"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_every_public_module_has_examples():
    attempted = sum(doctest.testmod(importlib.import_module(n)).attempted for n in MODULES)
    assert attempted >= 10


def test_demo_command_runs_and_checks_parity(capsys):
    from gkfda.cli import main

    assert main(["demo", "--n", "300", "--k", "20", "--deflations", "projection", "schur",
                 "--reference", "projection", "schur"]) == 0
    output = capsys.readouterr().out
    assert "| optimal | projection | 20 |" in output and "SVC" in output
