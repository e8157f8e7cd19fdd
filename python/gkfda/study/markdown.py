"""The Markdown and CSV of the study's tables: cells formatted, pipe tables, report sections.

:func:`markdown_table` is also the table format of ``gkfda bound`` and ``gkfda experiment``.

Examples
--------
>>> import pandas as pd
>>> from gkfda.study.markdown import fmt, markdown_table
>>> print(markdown_table(pd.DataFrame({"error": [fmt(0.25), fmt(float("nan"))]})))
| error |
|---------|
| 0.250 |
| — |
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import List

import numpy as np
import pandas as pd

DASH = "—"


def isnum(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and math.isfinite(float(value))


def fmt(value, spec: str = "{:.3f}") -> str:
    return spec.format(float(value)) if isnum(value) else DASH


def markdown_table(table: pd.DataFrame) -> str:
    """A pipe table of text cells as they are (no padding, no number parsing)."""
    if table.empty:
        return ""
    cells = table.astype(str).map(lambda text: text.replace("|", "\\|").replace("\n", " "))
    return cells.to_markdown(index=False, tablefmt="pipe", stralign=None, numalign=None, disable_numparse=True)


@dataclass
class Section:
    """One table of the report: written as ``stem.md`` and ``stem.csv`` and embedded in report.md."""

    stem: str
    title: str
    text: str
    table: pd.DataFrame  # the Markdown table's text cells
    csv: pd.DataFrame
    notes: List[str] = field(default_factory=list)

    def body(self) -> str:
        parts = [self.text, markdown_table(self.table)] + [n for n in self.notes if n]
        return "\n\n".join(p for p in parts if p)

    def write(self, out_dir: Path, written: List[Path]) -> None:
        md = out_dir / f"{self.stem}.md"
        md.write_text(f"# {self.title}\n\n{self.body()}\n", encoding="utf-8")
        path = out_dir / f"{self.stem}.csv"
        write_csv(self.csv, path)
        written += [md, path]


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    frame.to_csv(path, index=False, na_rep="", lineterminator="\r\n", encoding="utf-8")


def text_frame(rows, columns) -> pd.DataFrame:
    """Rows of mixed values as they are (ints stay ints beside floats and blanks)."""
    return pd.DataFrame(list(rows), columns=list(columns), dtype=object)
