"""A fit too large for the memory is refused up front with a MemoryError that says what each
part needs, never accepted and then aborted on a failed allocation."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics.pairwise import rbf_kernel

from gkfda import GreedyKFDA


def test_refusal_counts_the_selection_and_the_model(monkeypatch):
    # A kernel that fits, with too little left for the selection's terms and the model.
    from gkfda import _validation

    rng = np.random.default_rng(0)
    m, k = 1000, 100
    X = rng.normal(size=(m, 2))
    y = np.arange(m) % 2
    kernel_bytes = m * m * 8
    working = _validation.fit_working_bytes(m, k, 1, np.float64)
    assert working >= 3 * k * m * 8  # u, v and a direction a pick
    monkeypatch.setattr(_validation, "available_memory", lambda: kernel_bytes + working // 2)
    with pytest.raises(MemoryError, match=r"^X: a fit of 1000 samples with k=100 needs [\d.]+ GiB "
                                          r"\(the 1000×1000 float64 kernel matrix [\d.]+ GiB, "
                                          r"the selection and the model [\d.]+ GiB\) but only"):
        GreedyKFDA(k=k, solver="dense").fit(X, y)
    monkeypatch.setattr(_validation, "available_memory", lambda: kernel_bytes + working + 2**20)
    assert GreedyKFDA(k=k).fit(X, y).k_ > 0  # fitted (this noise may stop the selection early)
    # One-vs-rest: three selections may run side by side, each with its terms.
    y3 = np.arange(m) % 3
    with pytest.raises(MemoryError, match="the selection and the model"):
        GreedyKFDA(k=k, multiclass="ovr", solver="dense").fit(X, y3)
    # solver="auto" holds the kernel as a factor when the dense fit would not fit.
    assert GreedyKFDA(k=k, multiclass="ovr", factor_rank=k).fit(X, y3).solver_ == "factored"


def test_refusal_of_a_precomputed_kernel_counts_only_a_copy(monkeypatch):
    from gkfda import _validation

    rng = np.random.default_rng(0)
    m, k = 600, 40
    K = rbf_kernel(rng.normal(size=(m, 2)), gamma=0.5)
    y = np.arange(m) % 2
    working = _validation.fit_working_bytes(m, k, 1, np.float64)
    monkeypatch.setattr(_validation, "available_memory", lambda: working + 2**20)
    # Used as it is: only the working memory is needed.
    assert GreedyKFDA(k=k, kernel="precomputed").fit(K, y).k_ > 0
    # Converted to float32: the copy is counted too.
    with pytest.raises(MemoryError, match=r"the 600×600 float32 kernel matrix"):
        GreedyKFDA(k=k, kernel="precomputed", dtype="float32").fit(K, y)


# Out-of-range values, overflow at prediction and empty models: each refused with the
# argument named, or announced, rather than cast, wrapped or answered with NaN.


def _refusal_in_a_child(code):
    """What ``code`` prints when the ``MemoryError`` of its last line is caught, run in a
    child process: an abort there fails the test instead of ending pytest."""
    import subprocess
    import sys

    code += "\ntry:\n    run()\nexcept MemoryError as error:\n    print('refused:', error)\n"
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stderr[-2000:]
    return child.stdout


def test_a_fit_beyond_the_address_space_limit_is_refused_not_aborted():
    # Under RLIMIT_AS the free memory is no guide: the fit must be refused up front, not
    # accepted and then abort the interpreter on a failed allocation.
    printed = _refusal_in_a_child(
        "import resource, numpy as np\n"
        "resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))\n"
        "from gkfda import GreedyKFDA\n"
        "X = np.random.default_rng(0).normal(size=(16000, 3)); y = (X[:, 0] > 0).astype(int)\n"
        "run = lambda: GreedyKFDA(k=6000, gamma=5.0, deflation='projection', stages=50, solver='dense').fit(X, y)"
    )
    assert printed.startswith("refused: X: a fit of 16000 samples with k=6000 needs"), printed


def test_the_core_refuses_terms_beyond_the_address_space_limit_instead_of_aborting():
    # The core's own callers have no up-front estimate: the k×m rank-one terms are reserved
    # fallibly before the first pick, so the limit gives a MemoryError, not an abort.
    printed = _refusal_in_a_child(
        "import re, resource, numpy as np\n"
        "from gkfda import _core\n"
        "K = np.eye(6000); y = np.arange(6000) % 2 == 0\n"
        "size = int(re.search(r'VmSize:\\s+(\\d+) kB', open('/proc/self/status').read()).group(1)) << 10\n"
        "limit = size + (256 << 20)  # the terms need 576 MiB more\n"
        "resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
        "run = lambda: _core.greedy_select(K, y, 6000, deflation='projection', stages=6000)"
    )
    assert printed.startswith("refused: the selection's rank-one terms needs"), printed


def test_the_memory_estimate_counts_the_models_and_the_selections_as_they_run():
    from gkfda import _core, _validation

    m, k = 6000, 6000
    binary = _validation.fit_working_bytes(m, k, 1, np.float64)
    assert binary >= 4 * k * k * 8  # the kept k×k matrices and those of the linear algebra
    # One-vs-rest: the terms of at most SHARED_SELECTIONS selections at once, every model kept.
    many = _validation.fit_working_bytes(1000, 50, 100, np.float64)
    at_once = _validation.fit_working_bytes(1000, 50, _core.SHARED_SELECTIONS, np.float64)
    assert many - at_once == (100 - _core.SHARED_SELECTIONS) * 3 * 50 * 50 * 8
