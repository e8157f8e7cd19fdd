"""The README's Python code blocks run as written, top to bottom, in one namespace."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def _python_blocks():
    return re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), flags=re.M | re.S)


def test_readme_has_python_blocks_and_is_short():
    assert len(_python_blocks()) >= 5
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


def test_readme_python_blocks_run_in_order(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__readme__"}
    for number, block in enumerate(_python_blocks(), start=1):
        try:
            exec(compile(block, f"README.md python block {number}", "exec"), namespace)
        except Exception as error:  # pragma: no cover - the failure message names the block
            pytest.fail(f"README.md python block {number} failed: {type(error).__name__}: {error}\n{block}")
    assert "0." in capsys.readouterr().out  # the blocks printed their scores
