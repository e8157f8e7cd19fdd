"""The places a criterion or a deflation lives agree: every one the core lists has a
reference implementation, a score in each of the core's engines (the dense selection, the
factored selection in the factor's coordinates, the Fisher pursuit), is accepted by
``GreedyKFDA``, and is named in docs/architecture.md; each estimator's predictor, as its
spec describes it, is one the core's table of predictors allows; and the checklists there
name files that exist."""

import re
from pathlib import Path

import numpy as np
import pytest

from gkfda import (
    GreedyKFDA,
    GreedyKFDACV,
    GreedyNystroem,
    KernelMatchingPursuit,
    ParsimoniousKFDA,
    SparseKernelCCA,
    SparseKernelPCA,
    _core,
    reference,
)
from gkfda._serialization.specs import _SPECS

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


def _three_classes(m=36, seed=5):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], m // 3)
    return rng.normal(size=(m, 4)) + 1.5 * np.eye(3, 4)[y], y


# Fitted instances of every estimator that has a spec, one per link it can have.
FITTED = {
    "GreedyKFDA": lambda X, y, X3, y3: [
        GreedyKFDA(k=4, gamma=0.5).fit(X, y),
        GreedyKFDA(k=4, gamma=0.5, multiclass="shared").fit(X3, y3),
        GreedyKFDA(k=4, gamma=0.5, multiclass="ovr").fit(X3, y3),
    ],
    "GreedyKFDACV": lambda X, y, X3, y3: [
        GreedyKFDACV(gammas=[0.5], max_k=4, cv=2).fit(X, y),
        GreedyKFDACV(gammas=[0.5], max_k=4, cv=2, multiclass="shared").fit(X3, y3),
        GreedyKFDACV(gammas=[0.5], max_k=4, cv=2, multiclass="ovr").fit(X3, y3),
    ],
    "ParsimoniousKFDA": lambda X, y, X3, y3: [
        ParsimoniousKFDA(gamma=0.5).fit(X, y),
        ParsimoniousKFDA(gamma=0.5).fit(X3, y3),
    ],
    "KernelMatchingPursuit": lambda X, y, X3, y3: [KernelMatchingPursuit(k=4, gamma=0.5).fit(X, X[:, 0])],
    "GreedyNystroem": lambda X, y, X3, y3: [GreedyNystroem(n_components=4, gamma=0.5).fit(X)],
    "SparseKernelPCA": lambda X, y, X3, y3: [SparseKernelPCA(n_components=3, gamma=0.5).fit(X)],
    "SparseKernelCCA": lambda X, y, X3, y3: [SparseKernelCCA(k=4, gamma=0.5).fit(X, X[:, :2] + 0.1 * X[:, 2:4])],
}


def test_the_core_has_the_predictor_of_every_estimator_with_a_spec():
    assert sorted(_core.estimator_predictors()) == sorted(_SPECS)
    assert sorted(FITTED) == sorted(_SPECS)


@pytest.mark.parametrize("name", sorted(_SPECS))
def test_each_estimators_predictor_is_one_the_core_allows(name):
    task, links, optional = _core.estimator_predictors()[name]
    factor, _, y = tiny_problem()
    X3, y3 = _three_classes()
    seen = set()
    for estimator in FITTED[name](factor[:, :4], y, X3, y3):
        model = estimator.best_estimator_ if name == "GreedyKFDACV" else estimator
        described = _SPECS[name].describe(model)
        assert described.task == task
        assert described.link in links, f"{name}: link {described.link!r}"
        seen.add(described.link)
        present = {f"predict.{field}" for field in ("lower", "center", "slope", "offset")
                   if getattr(described, field) is not None}
        assert present == set(optional)
        assert (described.classes is not None) == (task == "classifier")
        assert described.points is not None and described.columns is not None
        assert described.weights.shape[0] == len(described.points) == len(described.columns)
        assert described.bias.shape == (described.weights.shape[1],)
    # Every link the core allows this estimator is one a fit gives.
    assert seen == set(links)


def test_the_onnx_export_reads_the_specs():
    pytest.importorskip("skl2onnx")
    from gkfda import onnx

    names = {cls.__name__ for cls in onnx._EXPORTABLE}
    assert names <= set(_SPECS)
    table = _core.estimator_predictors()
    assert {cls.__name__ for cls in onnx._CLASSIFIERS} == {name for name in names if table[name][0] == "classifier"}
    # The export folds a predictor's lower into its weights; a centre it does not compute.
    assert not any("predict.center" in table[name][2] for name in names)


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
