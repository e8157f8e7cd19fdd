"""Progress bars of long fits (``verbose``): a tqdm bar on stderr fed by the core's count of
work done (blocks of a factor, picks of a selection), which the binding reports every 50 ms
while the core works (``progress=`` of ``_core.greedy_select`` and ``_core.nystroem_factor``)."""

from __future__ import annotations

import contextlib
import sys


@contextlib.contextmanager
def progress_bar(verbose, description, unit):
    """``report(done, total)`` drawing a tqdm bar on stderr while the ``with`` block runs, or
    None (the core then never reads its count) when ``verbose`` is off."""
    if not verbose:
        yield None
        return
    from tqdm import tqdm  # on first use, as the package's imports are

    bars = []  # made at the first report, which knows the total

    def report(done, total):
        if not bars:
            bars.append(tqdm(total=total, desc=description, unit=unit, file=sys.stderr))
        bar = bars[0]
        bar.total = total
        bar.update(done - bar.n)

    try:
        yield report
    finally:
        for bar in bars:
            bar.close()
