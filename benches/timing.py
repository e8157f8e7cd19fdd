"""Timing helpers shared by the bench scripts.

``median_time`` is the median of repeated wall-clock timings. ``wait_for_idle_cores`` keeps
a yardstick measured with NumPy from leaking into the run timed after it: OpenBLAS's worker
threads busy-wait after every call (measured here: ~110 ms of one core after a ``K @ v`` or an
``A @ B``, the process's CPU time still growing while it sleeps), and on a 2-core machine that
takes a core from a 2-thread fit started right away: a stage-10 fit timed just after the stage
section's ``A @ B`` took 195 ms against 161 ms after the workers went idle (medians of 6).
No call can stop them: ``threadpoolctl``'s limit of one thread leaves them spinning.
"""

from __future__ import annotations

import statistics
import sys
import time


def median_time(function, repeats, settle=False):
    """Median wall-clock seconds of ``repeats`` calls of ``function``; with ``settle``, each
    call starts once this process's other threads are idle (``wait_for_idle_cores``)."""
    times = []
    for _ in range(repeats):
        if settle:
            wait_for_idle_cores()
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def wait_for_idle_cores(slice_seconds=0.02, timeout=2.0):
    """Sleep until this process burns (almost) no CPU during a slice of ``slice_seconds``:
    then no BLAS worker (or any other thread of ours) is spinning. Gives up after
    ``timeout`` with a warning on stderr, since the next timing may then share its cores."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        before = time.process_time()
        time.sleep(slice_seconds)
        if time.process_time() - before < 0.1 * slice_seconds:
            return
    print(f"warning: this process's threads were still busy after {timeout} s of waiting",
          file=sys.stderr)
