"""The places a criterion or a deflation lives agree: every one the core lists has a
reference implementation, a score in each of the core's engines (the dense selection, the
factored selection in the factor's coordinates, the Fisher pursuit), is accepted by
``GreedyKFDA``, and is named in docs/architecture.md; and the checklists there name files
that exist."""

import re
from pathlib import Path

import numpy as np
import pytest

from gkfda import GreedyKFDA, _core, reference

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
# Where the checklists' bare file names live: the Rust core's, then the Python package's.
SEARCH_ROOTS = [ROOT, ROOT / "src", ROOT / "python" / "gkfda"]


def tiny_problem(m=24, seed=3):
    """A factor ``Φ`` of full column rank, its kernel ``ΦΦ'`` and labels in runs of class."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], m // 2)
    factor = np.ascontiguousarray(rng.normal(size=(m, 8)) + 0.8 * y[:, None])
    return factor, factor @ factor.T, y


@pytest.mark.parametrize("criterion", _core.CRITERIA)
def test_every_engine_scores_every_criterion_as_the_reference(criterion):
    factor, K, y = tiny_problem()
    expected = reference.select(K, y, 5, criterion, "projection", random_state=4)
    assert len(expected) == 5
    codes = y.astype(np.int64)
    dense, _, _ = _core.greedy_select(K, codes, 5, criterion=criterion, deflation="projection", seed=4)
    factored, _, _ = _core.greedy_select(
        None, codes, 5, criterion=criterion, deflation="projection", seed=4, factor=factor
    )
    pursuit = _core.pursuit_select("fisher", K, 5, classes=codes, criterion=criterion, seed=4)[0]
    pursuit_factored = _core.pursuit_select(
        "fisher", None, 5, classes=codes, criterion=criterion, seed=4, factor=factor
    )[0]
    if criterion == "random":
        # The core draws its order from `seed`, the reference from NumPy's `random_state`:
        # the engines agree with one another.
        assert len(set(expected.tolist())) == 5
        expected = np.asarray(dense)
    for engine, picks in [
        ("dense selection", dense),
        ("factored selection", factored),
        ("fisher pursuit", pursuit),
        ("factored fisher pursuit", pursuit_factored),
    ]:
        np.testing.assert_array_equal(np.asarray(picks), expected, err_msg=f"{criterion}: {engine}")


@pytest.mark.parametrize("deflation", _core.DEFLATIONS)
def test_every_engine_deflates_by_every_deflation_as_the_reference(deflation):
    factor, K, y = tiny_problem()
    expected = reference.select(K, y, 5, "optimal", deflation)
    assert len(expected) == 5
    codes = y.astype(np.int64)
    dense, _, _ = _core.greedy_select(K, codes, 5, criterion="optimal", deflation=deflation)
    factored, _, _ = _core.greedy_select(None, codes, 5, criterion="optimal", deflation=deflation, factor=factor)
    np.testing.assert_array_equal(np.asarray(dense), expected, err_msg=f"{deflation}: dense")
    np.testing.assert_array_equal(np.asarray(factored), expected, err_msg=f"{deflation}: factored")


@pytest.mark.parametrize("deflation", _core.DEFLATIONS)
@pytest.mark.parametrize("criterion", _core.CRITERIA)
def test_greedy_kfda_takes_every_criterion_and_deflation(criterion, deflation):
    _, K, y = tiny_problem()
    model = GreedyKFDA(k=4, criterion=criterion, deflation=deflation, kernel="precomputed", random_state=4)
    model.fit(K, y)
    if criterion == "random":  # the core's order, drawn from the seed (see above)
        assert len(set(model.support_.tolist())) == 4
    else:
        np.testing.assert_array_equal(model.support_, reference.select(K, y, 4, criterion, deflation))
    assert model.predict(K).shape == y.shape


def _table_names(heading):
    """The backquoted names in the first column of the table whose header row starts with
    ``| heading |``."""
    lines = ARCHITECTURE.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {heading} |"))
    names = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        names += re.findall(r"`([^`]+)`", line.split("|")[1])
    return names


def test_the_architecture_tables_name_every_criterion_and_deflation():
    assert sorted(_table_names("criterion")) == sorted(_core.CRITERIA)
    assert sorted(_table_names("deflation")) == sorted(_core.DEFLATIONS)


def _checklist(title):
    """The text of the checklist ``**title**`` of docs/architecture.md, to the next one."""
    match = re.search(rf"^\*\*{re.escape(title)}\*\*\n(.*?)(?=^\*\*|^## )", ARCHITECTURE, re.M | re.S)
    assert match, f"docs/architecture.md has no checklist {title!r}"
    return match.group(1)


def _resolve(name, near=None):
    """The file ``name`` names: from the repository, ``src/`` or the package, or beside
    ``near`` (a file named before it in the same step)."""
    roots = SEARCH_ROOTS + ([near.parent] if near is not None else [])
    for root in roots:
        if (root / name).exists():
            return root / name
    return None


def _steps(title):
    """Each numbered step of a checklist: ``(its text, the files it names)``; a bare file
    name is looked for beside the file named before it (``writing.py`` after
    ``python/gkfda/_serialization/specs.py``)."""
    steps = re.split(r"^\d+\. ", _checklist(title), flags=re.M)[1:]
    out = []
    for step in steps:
        files, last = [], None
        for name in re.findall(r"`([\w./-]+\.(?:rs|py|md|h|json))`", step):
            path = _resolve(name, last)
            files.append((name, path))
            last = path or last
        out.append((step, files))
    return out


CHECKLISTS = ["Add a criterion.", "Add a deflation.", "Add a kernel.", "Change the model file."]


@pytest.mark.parametrize("title", CHECKLISTS)
def test_the_checklists_name_files_that_exist(title):
    files = [entry for _, entries in _steps(title) for entry in entries]
    assert files, f"{title}: names no file"
    missing = sorted(name for name, path in files if path is None)
    assert not missing, f"{title} names files that do not exist: {missing}"


@pytest.mark.parametrize("title", CHECKLISTS)
def test_the_checklists_name_items_their_files_hold(title):
    # A step's code items (`Type::item`, `snake_case`) are in one of the step's files, so that
    # a renamed or moved item does not leave the checklist pointing nowhere.
    checked = 0
    for step, files in _steps(title):
        sources = [path.read_text(encoding="utf-8") for _, path in files if path is not None and path.is_file()]
        if not sources:
            continue
        for item in re.findall(r"`([A-Za-z]+::[A-Za-z_]+|[a-z]+(?:_[a-z]+)+)`", step):
            last = item.split("::")[-1]
            assert any(re.search(rf"\b{re.escape(last)}\b", source) for source in sources), (
                f"{title}: no file of the step names {item!r}: {[name for name, _ in files]}"
            )
            checked += 1
    assert checked > 0 or title == "Change the model file."
