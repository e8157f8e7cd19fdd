"""The engine's instruction-set levels, capped by ``GKFDA_SIMD``, each end to end.

The machine running the tests takes its best level in-process (every other test file); here
each lower level runs in a process of its own, since the cap is read once per process. On an
AVX-512 machine this is how the AVX2 paths (narrow tiles of rows for 2 to 4 right-hand
sides, whole rows for 5 and 6, the projection family's last stage read at the picks' rows)
and the portable ones are tested.
"""

import json
import os
import subprocess
import sys

import pytest

import gkfda
from gkfda import _core

NAMES, VARIABLE = _core.simd_levels()

# Selections of the Rust engine against the NumPy reference, in the child process: kernels
# built there too (the portable level has its own `exp`), from the shared problems' points
# (sent as JSON, which keeps every float64), classes in runs as `fit` orders them (passes
# split by class) and mixed, sizes past the symmetric passes' minimum order.
CHILD = r"""
import json, sys
import numpy as np
import gkfda
from gkfda import _core, reference

problems = json.load(sys.stdin)
mismatches, compared = [], 0
for name, problem in problems.items():
    K = _core.kernel_matrix(np.array(problem["X"]), **problem["kernel"])
    y = np.array(problem["y"])
    for deflation in gkfda.DEFLATIONS:
        for stages in (1, 2, 3, 4, 5, 10):
            expected = reference.select(K, y, 20, "optimal", deflation, stages)
            actual, _, _ = _core.greedy_select(K, y > 0, 20, deflation=deflation, stages=stages)
            compared += 1
            if not np.array_equal(actual, expected):
                mismatches.append([name, deflation, stages])
json.dump({"level": gkfda.simd_level(), "compared": compared, "mismatches": mismatches}, sys.stdout)
"""

PROBLEMS = {
    "rbf-class-sorted": ((3, 150, 4, 0.5, True), "rbf"),
    "rbf-class-sorted-unbalanced": ((4, 203, 4, 0.3, True), "rbf"),
    # d = 8: a feature space of dimension 45 > k, so no pick is made among rounding noise.
    "poly-mixed": ((2, 81, 8, 0.5, False), "poly"),
}


def run_child(code, level, stdin=None):
    env = dict(os.environ, **{VARIABLE: level})
    return subprocess.run(
        [sys.executable, "-c", code], env=env, input=stdin, capture_output=True, text=True, timeout=600
    )


def test_the_running_level_is_a_named_one_and_the_levels_go_up():
    assert NAMES == ["none", "avx2", "avx512"]
    assert VARIABLE == "GKFDA_SIMD"
    assert gkfda.simd_level() in NAMES


@pytest.mark.parametrize("level", ["avx2", "none"])
def test_a_capped_engine_selects_as_the_reference(level, problem_data, problem_kernels):
    problems = {}
    for name, (data, kernel) in PROBLEMS.items():
        X, y = problem_data(*data)
        problems[name] = {"X": X.tolist(), "y": y.tolist(), "kernel": problem_kernels[kernel]}
    child = run_child(CHILD, level, json.dumps(problems))
    assert child.returncode == 0, child.stderr
    report = json.loads(child.stdout)
    # The cap lowers the level and never raises it above the machine's.
    assert NAMES.index(report["level"]) <= NAMES.index(level)
    if VARIABLE not in os.environ:
        running = NAMES.index(gkfda.simd_level())
        assert report["level"] == NAMES[min(running, NAMES.index(level))]
    assert report["compared"] == 3 * len(gkfda.DEFLATIONS) * 6
    assert report["mismatches"] == []


def test_an_unknown_level_is_ignored_with_a_warning():
    child = run_child("import gkfda; print(gkfda.simd_level())", "sse4")
    assert child.returncode == 0, child.stderr
    assert "GKFDA_SIMD='sse4' is not one of none, avx2, avx512; ignored" in child.stderr
    assert child.stdout.strip() in NAMES
    strict = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-c", "import gkfda"],
        env=dict(os.environ, **{VARIABLE: "sse4"}),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert strict.returncode != 0
    assert "RuntimeWarning" in strict.stderr
