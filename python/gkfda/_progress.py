"""Progress bars of a fit's phases (``verbose``): one tqdm bar on stderr for each phase, its
description the phase's name (``PHASES``), its total the phase's units when they are known
(pivots of the pool, blocks or rows of the factor, picks of the selection, rows of the exact
columns, prefixes of the calibration), else a bar of elapsed time.

One :class:`FitProgress` serves a whole fit, in memory and on Dask. Code that does a phase's
work in steps calls :meth:`FitProgress.advance`; the core counts its own work (blocks of a
factor, picks of a selection) and the binding reports the count every 50 ms while it works
through :attr:`FitProgress.core_report` (``progress=`` of ``_core.greedy_select`` and
``_core.nystroem_factor``). Silent (``verbose`` off), it makes no bar, starts no thread, and
gives the core no callback, so that the core never reads its count: what a fit computes
does not depend on it.
"""

from __future__ import annotations

import contextlib
import sys
import threading

#: The phases of a fit, in their order, by the names their bars show. ``pool``, ``factor``:
#: a factored fit of an ``rbf`` or ``poly`` kernel; ``checking X``: a Dask fit;
#: ``discriminant`` and ``calibration``: once for each discriminant (one-vs-rest: a class).
PHASES = ("checking X", "pool", "factor", "set-up", "selection", "exact columns", "discriminant",
          "calibration", "bound statistics")

# Seconds between redraws of an open bar whose count does not move (a phase inside one call
# of the core, or a pick that takes long): its elapsed time keeps showing that it works.
_REDRAW_SECONDS = 0.5
# What a bar of a phase whose units are not known shows.
_ELAPSED = "{desc}: {elapsed}"


class _Bar:
    """One open phase's tqdm bar, and the thread that redraws it while it is open."""

    def __init__(self, name, total, unit):
        from tqdm import tqdm  # on first use, as the package's imports are

        self.tqdm = tqdm(total=total, desc=name, unit=unit, file=sys.stderr, dynamic_ncols=True,
                         bar_format=_ELAPSED if total is None else None)
        self._closed = threading.Event()
        self._redraw = threading.Thread(target=self._redraw_until_closed, name=f"gkfda {name} bar", daemon=True)
        self._redraw.start()

    def _redraw_until_closed(self):
        while not self._closed.wait(_REDRAW_SECONDS):
            self.tqdm.refresh()

    def advance(self, units):
        if not self._closed.is_set():
            self.tqdm.update(units)

    def report(self, done, total):
        """The core's count: ``done`` of ``total`` units (``total`` 0: not yet known)."""
        if self._closed.is_set():
            return
        if total and self.tqdm.total != total:
            self.tqdm.total, self.tqdm.bar_format = total, None
        self.tqdm.update(done - self.tqdm.n)

    def close(self):
        self._closed.set()
        self._redraw.join()
        self.tqdm.close()


class FitProgress:
    """The progress bars of one fit: a bar for each phase while ``verbose`` is true, nothing
    at all otherwise."""

    def __init__(self, verbose=False):
        self.verbose = bool(verbose)
        self._bar = None

    @contextlib.contextmanager
    def phase(self, name, total=None, unit="it"):
        """A bar named ``name`` of ``total`` ``unit`` (None: not known; the core's count may
        give it) while the ``with`` block runs."""
        if not self.verbose:
            yield self
            return
        outer, self._bar = self._bar, _Bar(name, total, unit)
        try:
            yield self
        finally:
            self._bar.close()
            self._bar = outer

    def advance(self, units=1):
        """``units`` more of the open phase done."""
        if self._bar is not None:
            self._bar.advance(units)

    def ticker(self):
        """The open phase's :meth:`advance`, bound to that phase (a task finishing on
        another thread after the phase has closed then moves no other bar), or None."""
        return None if self._bar is None else self._bar.advance

    @property
    def core_report(self):
        """``report(done, total)`` of the core's count for the open phase, or None (silent),
        which the core takes as no progress to report."""
        return None if self._bar is None else self._bar.report

    @contextlib.contextmanager
    def selection(self):
        """The bars of the core's selection: ``set-up`` (the selection's first pass over
        the kernel, the statistics of every candidate) until the core counts its first pick,
        then ``selection`` of the picks. Yields the ``report(done, total)`` to give the core
        (None when silent)."""
        if not self.verbose:
            yield None
            return
        bars = {"set-up": _Bar("set-up", None, "pass")}

        def report(done, total):
            # The core counts picks only: the set-up is over when the first one is done.
            if done == 0 and "selection" not in bars:
                return
            if "selection" not in bars:
                bars.pop("set-up").close()
                bars["selection"] = _Bar("selection", total, "pick")
            bars["selection"].report(done, total)

        try:
            yield report
        finally:
            for bar in bars.values():
                bar.close()


#: A fit's progress when it reports none.
SILENT = FitProgress(False)
