"""The package's import graph, read from the sources with ``ast``: the command line sits on
top (no module of gkfda imports ``gkfda.cli``), and no two modules import each other, directly
or through others (imports inside functions count: a circle broken by a late import is still
one)."""

import ast
from pathlib import Path

import gkfda

PACKAGE = Path(gkfda.__file__).parent


def module_names():
    names = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    names["gkfda._core"] = None  # the compiled core: it imports no Python module of gkfda
    return names


def imports_of(name, path, modules):
    """The modules of gkfda that ``name`` imports, the package ``gkfda`` itself left out: its
    ``__init__`` imports only the core, and loads the rest on first use of a name."""
    if path is None:
        return set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                found.add(submodule if submodule in modules else target)
    return {target for target in found if target in modules and target not in (name, "gkfda")}


def import_graph():
    modules = module_names()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def circles(graph):
    """Every circle a depth-first walk meets, each as the list of its modules."""
    state, stack, found = {}, [], []

    def visit(name):
        state[name] = "open"
        stack.append(name)
        for target in sorted(graph[name]):
            if state.get(target) == "open":
                found.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name)
    return found


def test_the_graph_reads_the_package():
    graph = import_graph()
    assert {"gkfda.estimator", "gkfda.cli", "gkfda.study.report", "gkfda._core"} <= set(graph)
    assert "gkfda._discriminant" in graph["gkfda.estimator"]
    assert "gkfda.study.report" in graph["gkfda.cli"]


def test_no_module_imports_the_command_line():
    graph = import_graph()
    assert [name for name, targets in graph.items() if "gkfda.cli" in targets] == []


def test_no_modules_import_each_other():
    assert circles(import_graph()) == []


def test_the_circle_check_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c", "a"]]
