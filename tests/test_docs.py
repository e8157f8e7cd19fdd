"""The documentation: every public module has examples (pytest runs them, by
``--doctest-modules``), the command line's demo and version, and what a new user reads first
(the README's install steps, the guides, the documentation site's landing page)."""

import doctest
import importlib
import importlib.util
import re
from pathlib import Path

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
    "gkfda.study.arguments": 1,
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


# -- what a new user reads first --------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
GUIDES = sorted((ROOT / "docs").glob("*.md"))


def _readme_section(heading):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_readme_install_clones_then_makes_the_environment_then_installs():
    install = _readme_section("Install")
    steps = ["git clone ", "cd gkfda", "python3 -m venv .venv", "pip install . && gkfda experiment --quick",
             'pip install ".[test]" && pytest']
    positions = [install.find(step) for step in steps]
    assert -1 not in positions and positions == sorted(positions), dict(zip(steps, positions))


def test_readme_says_how_to_build_a_wheel_and_what_a_build_needs():
    install = " ".join(_readme_section("Install").split())
    for fact in ("pip install maturin && maturin build --release", "prints its path", "glibc is ≥ 2.N",
                 "manylinux_2_N", "C linker", "build-essential"):
        assert fact in install, fact


def test_the_quick_run_has_one_time_and_it_is_in_results_md():
    for paragraph in (ROOT / "README.md").read_text(encoding="utf-8").split("\n\n"):
        if "--quick" in paragraph:
            assert not re.search(r"\d\s*(s|min|minutes?|seconds?)\b", paragraph), paragraph
    results = (ROOT / "docs" / "RESULTS.md").read_text(encoding="utf-8")
    assert "`gkfda experiment --quick --no-progress`" in results and "36.5 s" in results


@pytest.mark.parametrize("path", [ROOT / "README.md", *GUIDES], ids=lambda p: p.name)
def test_user_docs_install_extras_from_a_clone_and_name_papers_by_author(path):
    text = path.read_text(encoding="utf-8")
    assert "gkfda[" not in text and not re.search(r"pip install '?gkfda", text)
    assert "paper 0" not in text.lower()
    assert not re.search(r"\bissue\b|\bitem \d", text, flags=re.I)


def test_serving_examples_use_one_model_file_name():
    serving = (ROOT / "docs" / "serving.md").read_text(encoding="utf-8")
    names = set(re.findall(r'"([\w-]+\.(?:gkfda|safetensors|bin|model))"', serving))
    assert "model.gkfda" in names and all(name.endswith(".gkfda") for name in names), names


def _docs_conf():
    spec = importlib.util.spec_from_file_location("gkfda_docs_conf", ROOT / "docs" / "api" / "conf.py")
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    return conf


def test_docs_site_opens_with_the_readme_s_install_and_quick_start():
    pytest.importorskip("matplotlib")  # conf.py selects matplotlib's Agg backend
    conf = _docs_conf()
    stub = (ROOT / "docs" / "api" / "index.md").read_text(encoding="utf-8")
    page = conf.landing_text(stub)
    for part in ("## Install", "## Quick start", "pip install . && gkfda experiment --quick", "```{toctree}"):
        assert part in page, part
    assert "## Choosing the parameters" not in page
    for text, target in conf._LINK.findall(page):
        path = target.partition("#")[0]
        if re.match(r"^[a-z][a-z0-9+.-]*:", path):  # a URL or a download
            continue
        assert (ROOT / "docs" / path).is_file() and Path(path).stem in conf.GUIDES, (text, target)


def test_readme_says_how_to_build_the_docs_site():
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert 'pip install ".[docs]" && sphinx-build -W -b html docs/api ' in readme


def test_benches_and_examples_say_nothing_of_how_they_were_made():
    for path in [*(ROOT / "benches").glob("*.py"), *(ROOT / "examples").rglob("*.py")]:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"\bissue\b|\bitem \d|paper 0", text, flags=re.I), path.name
