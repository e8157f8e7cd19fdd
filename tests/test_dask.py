"""``GreedyKFDA.fit`` on dask arrays with a ``distributed`` client (python/gkfda/_dask.py):
the same picks as the in-memory factored fit with the same ``random_state``, its
coefficients and probabilities to 1e-8 (float64), on a ``LocalCluster`` of two worker
processes; chunks of one row, of one class, uneven; float32; and the bad inputs."""

import os
import pickle
import re
import signal
import threading
import time

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import gkfda  # noqa: E402
from gkfda import _dask  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning:distributed")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0", silence_logs=40
    )
    client = distributed.Client(cluster, timeout=60)
    yield client
    client.close(timeout=30)
    cluster.close(timeout=30)


@pytest.fixture(autouse=True)
def short_rounds(monkeypatch):
    # A lost worker fails a test instead of hanging it.
    monkeypatch.setattr(_dask, "ROUND_TIMEOUT", 60.0)


def data(m=240, n_classes=2, seed=0, dtype=np.float64, features=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, features))
    y = (np.arctan2(X[:, 1], X[:, 0]) // (2 * np.pi / n_classes)).astype(int) % n_classes
    return X.astype(dtype), y


def chunked(X, y, rows):
    return da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=(rows,))


def assert_same_fit(reference, model, X, atol=1e-8):
    np.testing.assert_array_equal(model.support_, reference.support_)
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=0, atol=atol)
    np.testing.assert_allclose(model.intercept_, reference.intercept_, rtol=0, atol=atol)
    np.testing.assert_allclose(model.predict_proba(X), reference.predict_proba(X), rtol=0, atol=atol)
    assert model.solver_ == "factored"


def test_a_dask_fit_needs_a_client():
    # First in the module: the module's cluster and client start with the next test.
    X, y = data(m=40)
    with pytest.raises(ValueError, match=r"^X: .*distributed.Client"):
        gkfda.GreedyKFDA(k=4).fit(*chunked(X, y, 20))


PARITY_CASES = [
    # (classes, multiclass, criterion, deflation, stages, kernel)
    (2, "shared", "optimal", "projection", 1, "rbf"),
    (2, "shared", "optimal", "schur", 1, "rbf"),
    (2, "shared", "pseudo", "ortho-schur", 3, "rbf"),
    (2, "shared", "optimal", "hotelling", 2, "rbf"),
    (3, "shared", "optimal", "projection", 1, "rbf"),
    (3, "ovr", "optimal", "schur", 1, "rbf"),
    (3, "ovr", "random", "projection", 1, "rbf"),
    (2, "shared", "optimal", "projection", 1, "linear"),
    (3, "shared", "optimal", "schur", 2, "poly"),
]


@pytest.mark.parametrize("n_classes, multiclass, criterion, deflation, stages, kernel", PARITY_CASES)
def test_a_dask_fit_is_the_in_memory_factored_fit(client, n_classes, multiclass, criterion, deflation, stages, kernel):
    # The linear kernel's rank is the features': past it the ratio criteria tie exactly
    # (a rank-one residual), and rounding breaks the tie, so it gets more features than k.
    X, y = data(n_classes=n_classes, seed=n_classes, features=20 if kernel == "linear" else 3)
    params = dict(
        k=12, kernel=kernel, criterion=criterion, deflation=deflation, stages=stages, multiclass=multiclass,
        factor_rank=40, random_state=3,
    )
    if kernel == "poly":
        params.update(degree=2, gamma=0.5)
    reference = gkfda.GreedyKFDA(solver="factored", **params).fit(X, y)
    model = gkfda.GreedyKFDA(**params).fit(*chunked(X, y, 70))
    assert_same_fit(reference, model, X)


def _arrays(value):
    """The NumPy arrays in a round's result (arrays, tuples of them, dataclasses of them)."""
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, (tuple, list)):
        return [array for item in value for array in _arrays(item)]
    if hasattr(value, "__dataclass_fields__"):
        return [array for item in vars(value).values() for array in _arrays(item)]
    return []


@pytest.mark.parametrize("n_classes, multiclass", [(2, "shared"), (3, "shared"), (3, "ovr")])
def test_the_driver_receives_neither_the_factor_nor_the_kernel_columns(client, monkeypatch, n_classes, multiclass):
    """The chunks keep their rows of Φ, and after the selection what the driver receives is
    bounded by the calibration's sample and the bases, not by m: the chunks keep the exact
    kernel columns and send the discriminant's moments (k × k per class) and the sample's
    rows."""
    from gkfda import _discriminant

    m, k, sample = 400, 8, 60
    monkeypatch.setattr(_discriminant, "CALIBRATION_ROWS", sample)
    X, y = data(m=m, n_classes=n_classes, seed=19)
    received, selected, rounds = [], [], []
    waited = _dask._wait

    def recording(futures, what, labels=None):
        results = waited(futures, what, labels)
        shapes = [array.shape for result in results for array in _arrays(result)]
        rounds.append((what, shapes))
        if selected:
            received.extend((what, shape) for shape in shapes)
        return results

    select = gkfda.GreedyKFDA._select

    def selecting(self, *args):
        try:
            return select(self, *args)
        finally:
            selected.append(True)

    called = _dask._actor_results

    def recording_calls(client, calls, what, labels):
        results = called(client, calls, what, labels)
        shapes = [array.shape for result in results for array in _arrays(result)]
        rounds.append((what, shapes))
        if selected:
            received.extend((what, shape) for shape in shapes)
        return results

    monkeypatch.setattr(_dask, "_wait", recording)
    monkeypatch.setattr(_dask, "_actor_results", recording_calls)
    monkeypatch.setattr(gkfda.GreedyKFDA, "_select", selecting)
    params = dict(k=k, factor_rank=30, random_state=0, multiclass=multiclass)
    model = gkfda.GreedyKFDA(**params).fit(*chunked(X, y, 100))
    problems = n_classes if multiclass == "ovr" else 1
    # No round brings Φ's rows of every chunk (the set-up brings p × p sums, a pick a few
    # candidates' rows).
    assert [shapes for what, shapes in rounds if what == "building the factor's rows"] == [[]]
    assert sum(what == "a pick" for what, _ in rounds) >= problems * (k - 1)
    for what, shapes in rounds:
        assert sum(shape[0] for shape in shapes if len(shape) == 2 and shape[1] == 30 != shape[0]) < m // 4, what
    sums = [shape for what, shape in received if what == "the discriminant's sums"]
    rows = [shape[0] for what, shape in received if len(shape) == 2 and what != "the discriminant's sums"]
    assert sums and rows
    # Per chunk and problem, the moments: a count, a mean and a scatter per class.
    assert all(shape[0] <= n_classes for shape in sums), sums
    # The bases' rows of X (the union's, for their columns and for the model), and each
    # problem's bases' block of its columns (k rows) and its sample (at most the sample's
    # rows, each class keeping one): never a chunk's share of the m rows' columns.
    assert sum(rows) <= problems * (3 * k + sample + n_classes), received
    assert all(len(shape) < 2 or shape[1] <= problems * k for _, shape in received), received
    # The diagonal is the one m-vector the driver receives (its kernel scale and the bound's norm).
    assert sum(shape[0] for what, shape in received if len(shape) == 1 and shape[0] > n_classes) == m
    reference = gkfda.GreedyKFDA(solver="factored", **params).fit(X, y)
    assert_same_fit(reference, model, X)


def test_a_fit_of_more_rows_than_the_calibration_sample_is_the_same_in_memory_and_on_dask(client, monkeypatch):
    """Past CALIBRATION_ROWS the calibration reads the rows of the sample rule, the same on
    both paths, and the models agree; each class keeps its share of the rows."""
    from gkfda import _discriminant

    monkeypatch.setattr(_discriminant, "CALIBRATION_ROWS", 200)
    X, y = data(m=500, n_classes=3, seed=23)
    read = []
    for holder in (_discriminant.KernelColumns, _dask._ChunkedColumns):
        rows = holder.rows

        def recording(self, indices, rows=rows):
            read.append(np.asarray(indices).copy())
            return rows(self, indices)

        monkeypatch.setattr(holder, "rows", recording)
    params = dict(k=10, factor_rank=30, random_state=5)
    reference = gkfda.GreedyKFDA(solver="factored", **params).fit(X, y)
    in_memory, read[:] = read[:], []
    model = gkfda.GreedyKFDA(**params).fit(*chunked(X, y, 128))
    codes = np.sort(np.searchsorted(np.unique(y), y))  # kernel order: rows ordered by class
    expected = _discriminant.calibration_sample(codes, 3)
    assert len(expected) == 200
    np.testing.assert_array_equal(np.bincount(codes[expected]), np.round(200 * np.bincount(codes) / 500))
    for reads in (in_memory, read):
        assert any(np.array_equal(indices, expected) for indices in reads)
        assert max(len(indices) for indices in reads) == 200
    assert_same_fit(reference, model, X)


def test_pools_and_a_given_gamma(client):
    X, y = data(seed=5)
    for pool in ("greedy", "uniform"):
        params = dict(k=10, gamma=0.7, factor_rank=30, factor_pool=pool, random_state=1)
        reference = gkfda.GreedyKFDA(solver="factored", **params).fit(X, y)
        assert_same_fit(reference, gkfda.GreedyKFDA(**params).fit(*chunked(X, y, 100)), X)


@pytest.mark.parametrize(
    "sizes",
    [
        (1, 119, 120),  # a chunk of one row
        (37, 1, 90, 1, 111),  # several, between uneven chunks
        (240,),  # one chunk
    ],
)
def test_uneven_chunks_and_chunks_of_one_row(client, sizes):
    X, y = data(seed=7)
    params = dict(k=10, factor_rank=30, random_state=2)
    reference = gkfda.GreedyKFDA(solver="factored", **params).fit(X, y)
    Xd = da.from_array(X, chunks=(sizes, 3))
    model = gkfda.GreedyKFDA(**params).fit(Xd, y)  # y in memory: m labels
    assert_same_fit(reference, model, X)


def test_a_class_alone_in_a_chunk(client):
    X, y = data(m=210, n_classes=3, seed=11)
    order = np.argsort(y, kind="stable")  # chunks of one class each, then mixed
    X, y = X[order], y[order]
    sizes = tuple(np.bincount(y))
    for multiclass in ("shared", "ovr"):
        params = dict(k=9, factor_rank=30, random_state=4, multiclass=multiclass, deflation="schur")
        reference = gkfda.GreedyKFDA(solver="factored", **params).fit(X, y)
        model = gkfda.GreedyKFDA(**params).fit(da.from_array(X, chunks=(sizes, 3)), y)
        assert_same_fit(reference, model, X)


def test_float32(client):
    X, y = data(seed=13)
    params = dict(k=10, factor_rank=30, random_state=0, dtype="float32")
    reference = gkfda.GreedyKFDA(solver="factored", **params).fit(X.astype(np.float32), y)
    model = gkfda.GreedyKFDA(**params).fit(*chunked(X.astype(np.float32), y, 64))
    assert_same_fit(reference, model, X, atol=1e-4)


def test_the_factor_rank_follows_the_in_memory_rule(client, monkeypatch):
    # A factor of rank p holds at most p bases: a given rank below k is refused, as in
    # memory, and the default, "auto", resolves as in memory (checked through the in-memory
    # fit it must equal).
    X, y = data(seed=5)
    with pytest.raises(ValueError, match="factor_rank: 10 is smaller than k=20"):
        gkfda.GreedyKFDA(k=20, factor_rank=10).fit(*chunked(X, y, 80))
    params = dict(k=20, gamma=0.7, random_state=1, solver="factored")
    reference = gkfda.GreedyKFDA(**params).fit(X, y)
    assert_same_fit(reference, gkfda.GreedyKFDA(**params).fit(*chunked(X, y, 80)), X)
    # With the floor lowered below m, "auto" is 2k = 40 on both paths: the fit of rank 40.
    monkeypatch.setattr(gkfda._factor, "AUTO_RANK_MIN", 10)
    given = gkfda.GreedyKFDA(factor_rank=40, **params).fit(X, y)
    assert not np.array_equal(given.support_, reference.support_)
    assert_same_fit(given, gkfda.GreedyKFDA(**params).fit(*chunked(X, y, 80)), X)


def test_the_model_is_an_ordinary_in_memory_model(client):
    X, y = data(seed=17)
    model = gkfda.GreedyKFDA(k=8, factor_rank=30, random_state=0).fit(*chunked(X, y, 80))
    copy = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(copy.predict(X), model.predict(X))
    assert model.n_features_in_ == 3
    assert model.score(X, y) > 0.8


def test_bad_inputs_are_refused_naming_the_argument(client):
    X, y = data(m=60)
    Xd, yd = chunked(X, y, 20)
    with pytest.raises(ValueError, match=r"^X, y: "):
        gkfda.GreedyKFDA(k=4).fit(Xd, y[:-1])
    with pytest.raises(ValueError, match=r"^solver: "):
        gkfda.GreedyKFDA(k=4, solver="dense").fit(Xd, yd)
    with pytest.raises(ValueError, match=r"^kernel: "):
        gkfda.GreedyKFDA(k=4, kernel="sigmoid").fit(Xd, yd)
    bad = X.copy()
    bad[45, 1] = np.nan  # in the third chunk
    with pytest.raises(ValueError, match=r"^X: .*NaN"):
        gkfda.GreedyKFDA(k=4).fit(da.from_array(bad, chunks=(20, 3)), yd)
    with pytest.raises(ValueError, match=r"^y: "):
        gkfda.GreedyKFDA(k=4).fit(Xd, np.zeros(60))
    with pytest.raises(ValueError, match=r"^X: "):
        gkfda.GreedyKFDA(k=4).fit(da.from_array(X[:, 0], chunks=20), yd)


def test_a_fit_the_driver_cannot_hold_is_refused_before_the_workers_start(client, monkeypatch):
    from gkfda import _validation

    X, y = data(m=60)
    monkeypatch.setattr(_validation, "available_memory", lambda: 1000)
    building = []
    monkeypatch.setattr(_dask, "_nystroem_rows", lambda *args: building.append(args))
    with pytest.raises(MemoryError, match=r"^X: a fit of 60 samples with k=4 needs"):
        gkfda.GreedyKFDA(k=4).fit(*chunked(X, y, 20))
    assert not building


def test_the_driver_is_checked_for_its_own_share_only(client, monkeypatch):
    """The driver holds a few m-vectors and the calibration's sample, not the m × k columns:
    a fit whose in-memory working set would not fit in the driver's memory is fitted."""
    from gkfda import _discriminant, _validation

    X, y = data(m=400)
    monkeypatch.setattr(_discriminant, "CALIBRATION_ROWS", 50)
    needed = _dask.driver_bytes(400, 8, 2, 1, np.float64)
    assert needed < 100_000 < _validation.fit_working_bytes(400, 8, 1, np.float64)
    monkeypatch.setattr(_validation, "available_memory", lambda: 100_000)
    model = gkfda.GreedyKFDA(k=8, factor_rank=30, random_state=0).fit(*chunked(X, y, 100))
    assert len(model.support_) == 8
    # Past the sample, each row costs the driver its few m-vectors' values, nothing per basis.
    grown = _dask.driver_bytes(4_000_000, 200, 2, 1, np.float64) - _dask.driver_bytes(1_000_000, 200, 2, 1, np.float64)
    assert grown == 3_000_000 * 9 * 8


def test_a_failing_worker_surfaces_as_its_exception(client, monkeypatch):
    """A call that raises on a worker ends the fit with that exception, not a panic."""
    X, y = data(m=80)

    class Broken(_dask._WorkerRows):  # defined here: sent to the workers by value
        def advance(self, *args):
            raise RuntimeError("worker lost during a pick")

    monkeypatch.setattr(_dask, "_WorkerRows", Broken)
    with pytest.raises(RuntimeError, match="worker lost during a pick"):
        gkfda.GreedyKFDA(k=5, factor_rank=20).fit(*chunked(X, y, 30))


def test_verbose_shows_every_phase_of_a_dask_fit_in_order_and_changes_nothing(client, capsys, phases_shown):
    X, y = data(m=100)
    params = dict(k=6, factor_rank=20, random_state=0)
    quiet = gkfda.GreedyKFDA(**params).fit(*chunked(X, y, 30))
    assert phases_shown(capsys.readouterr().err) == []
    loud = gkfda.GreedyKFDA(**params, verbose=1).fit(*chunked(X, y, 30))
    err = capsys.readouterr().err
    assert phases_shown(err) == ["checking X", "pool", "factor", "set-up", "selection", "exact columns",
                                 "discriminant", "calibration", "bound statistics"], err
    # The rows of Φ and of the exact columns, counted as the chunks (30, 30, 30, 10) finish.
    for name, count in [("pool", "20/20"), ("factor", "100/100"), ("selection", "6/6"),
                        ("exact columns", "100/100"), ("calibration", "6/6")]:
        assert re.search(rf"{name}: 100%.*{count} \[", err), (name, err)
    np.testing.assert_array_equal(loud.support_, quiet.support_)
    np.testing.assert_array_equal(loud.coef_, quiet.coef_)
    np.testing.assert_array_equal(loud.intercept_, quiet.intercept_)
    np.testing.assert_array_equal(loud.predict_proba(X), quiet.predict_proba(X))


def test_empty_chunks_fit_as_the_rows_they_leave(client):
    # A boolean mask leaves chunks of unknown size, some of them empty.
    X, y = data(seed=19)
    keep = np.ones(len(X), bool)
    keep[60:120] = False  # the whole second chunk
    keep[200:203] = False
    params = dict(k=8, factor_rank=30, random_state=0)
    reference = gkfda.GreedyKFDA(solver="factored", **params).fit(X[keep], y[keep])
    Xd, yd = chunked(X, y, 60)
    mask = da.from_array(keep, chunks=60)
    model = gkfda.GreedyKFDA(**params).fit(Xd[mask], yd[mask])
    assert_same_fit(reference, model, X)


def _worker_pids(client):
    return list(client.run(os.getpid).values())


def _fit_in_thread(X, y, params):
    """``fit`` on a thread: its outcome (the model or the exception), or None while it runs."""
    outcome = []

    def run():
        try:
            outcome.append(gkfda.GreedyKFDA(**params).fit(X, y))
        except Exception as error:  # noqa: BLE001 - the outcome is what the test checks
            outcome.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


@pytest.mark.parametrize("module, hook, when, what", [
    # Right after a round's tasks are done, before their results are fetched: the fetch is
    # bounded by ROUND_TIMEOUT too.
    (distributed, "wait", 4, "fit again"),
    # Before a pick's calls to the workers' actors: bounded as a round of tasks is.
    (_dask, "_actor_results", 3, "a pick"),
])
def test_workers_frozen_mid_fit_end_the_fit_with_a_timeout(client, monkeypatch, module, hook, when, what):
    monkeypatch.setattr(_dask, "ROUND_TIMEOUT", 3.0)
    X, y = data(m=120)
    pids = _worker_pids(client)
    real, calls = getattr(module, hook), []

    def freeze_at_the_round(*args, **options):
        calls.append(1)
        if len(calls) == when and hook == "_actor_results":
            for pid in pids:
                os.kill(pid, signal.SIGSTOP)
        result = real(*args, **options)
        if len(calls) == when and hook == "wait":
            for pid in pids:
                os.kill(pid, signal.SIGSTOP)
        return result

    monkeypatch.setattr(module, hook, freeze_at_the_round)
    try:
        thread, outcome = _fit_in_thread(*chunked(X, y, 40), dict(k=5, factor_rank=20, random_state=0))
        thread.join(120)  # a bound for a fit that would otherwise hang, not a measurement
        frozen = len(calls) >= when
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    thread.join(120)
    assert frozen
    assert len(outcome) == 1 and isinstance(outcome[0], TimeoutError), outcome
    assert "ROUND_TIMEOUT" in str(outcome[0]) and what in str(outcome[0]) and "fit again" in str(outcome[0])


@pytest.mark.parametrize("hook, when", [("_wait", 6), ("_actor_results", 3)])
def test_a_worker_killed_mid_fit_is_a_clear_error_or_a_correct_fit(client, monkeypatch, hook, when):
    """A worker killed after a round of tasks (the 6th), or during the selection's picks
    (the 3rd round of calls to the workers' actors, the picks' state gone with it)."""
    X, y = data(m=120)
    params = dict(k=5, factor_rank=20, random_state=0)
    pids = _worker_pids(client)
    real, calls = getattr(_dask, hook), []

    def round_then_kill(*args):
        calls.append(1)
        if len(calls) == when and hook == "_actor_results":
            os.kill(pids[0], signal.SIGKILL)
        result = real(*args)
        if len(calls) == when and hook == "_wait":
            os.kill(pids[0], signal.SIGKILL)
        return result

    monkeypatch.setattr(_dask, hook, round_then_kill)
    try:
        model = gkfda.GreedyKFDA(**params).fit(*chunked(X, y, 40))
    except RuntimeError as error:
        message = str(error)
        # A chunk of X, or the selection's state the worker's actor kept of its chunks.
        chunk = r"chunk \d+ of X \(rows \d+-\d+\)"
        assert re.match(rf"X: (the selection's state of {chunk}( and {chunk})*|{chunk}) was lost with the worker",
                        message), message
        assert "fit again" in message
    else:  # the scheduler recomputed what was lost
        assert hook == "_wait", "an actor's state is not recomputed: its loss ends the fit"
        assert_same_fit(gkfda.GreedyKFDA(solver="factored", **params).fit(X, y), model, X)
    finally:
        client.wait_for_workers(2, timeout=60)  # the nanny restarts the worker for the next tests
    assert len(calls) >= when


def _actor_count(client):
    def actors(dask_worker):
        return len(dask_worker.state.actors)

    return sum(client.run(actors).values())


def test_a_pick_is_one_call_to_each_workers_actor_whatever_the_chunks(client, monkeypatch):
    """Each worker keeps its chunks' statistics in one actor, placed where the chunks' rows
    of Φ are: a pick calls each worker once, not each chunk, and none of Φ's rows moves."""
    X, y = data(m=240)
    workers, placed = set(client.scheduler_info()["workers"]), []
    place = _dask.ChunkedFactorRows._place_actors

    def placing(holder):
        place(holder)
        holders = client.who_has(holder.phi_parts)
        placed.append([sorted({address for c in group for address in holders[holder.phi_parts[c].key]})
                       for group in holder.groups])

    picks = []
    call = _dask.ChunkedFactorRows._call

    def calling(holder, what, method, *args):
        if method == "advance":
            picks.append(len(holder.actors))
        return call(holder, what, method, *args)

    monkeypatch.setattr(_dask.ChunkedFactorRows, "_place_actors", placing)
    monkeypatch.setattr(_dask.ChunkedFactorRows, "_call", calling)
    before = _actor_count(client)
    model = gkfda.GreedyKFDA(k=6, factor_rank=20, random_state=0).fit(*chunked(X, y, 30))
    assert len(model.support_) == 6
    # 8 chunks on 2 workers: 2 actors, each over the chunks one worker holds.
    assert len(placed) == 1 and len(placed[0]) == len(workers) == 2, placed
    assert all(len(holders) == 1 for holders in placed[0]) and {h[0] for h in placed[0]} == workers, placed
    assert picks == [2] * 6  # a round a pick, the first included
    # The fit's actors, and the statistics they hold, are released with the fit (an earlier
    # test's failed fit may still hold its own until its traceback is collected).
    deadline = time.monotonic() + 30  # a bound on the release's messages, not a measurement
    while _actor_count(client) > before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _actor_count(client) <= before


@pytest.mark.parametrize("direct_to_workers, straight", [(None, True), (True, True), (False, False)])
def test_the_picks_call_the_workers_straight_unless_the_client_says_otherwise(client, monkeypatch,
                                                                              direct_to_workers, straight):
    """By default a pick's calls go straight to the workers, not through the scheduler (a hop
    more each way); a client made with ``direct_to_workers=False`` keeps its own route. The
    model is the same either way."""
    X, y = data(m=200)
    k, reached = 5, []
    direct_call = _dask._direct_call

    def sending(client, address, key, payload):
        reached.append(address)
        return direct_call(client, address, key, payload)

    monkeypatch.setattr(_dask, "_direct_call", sending)
    with distributed.Client(client.scheduler.address, direct_to_workers=direct_to_workers, set_as_default=False,
                            timeout=60) as other, other.as_current():
        model = gkfda.GreedyKFDA(k=k, factor_rank=20, random_state=0).fit(*chunked(X, y, 50))
    workers = set(client.scheduler_info()["workers"])
    if straight:
        # Each worker: the call that shows it answers, the selection's start, then a call a pick.
        assert sorted(reached) == sorted(list(workers) * (2 + k)), reached
    else:
        assert reached == []
    reference = gkfda.GreedyKFDA(k=k, factor_rank=20, random_state=0).fit(*chunked(X, y, 50))
    np.testing.assert_array_equal(model.support_, reference.support_)
    np.testing.assert_allclose(model.predict_proba(X), reference.predict_proba(X), rtol=0, atol=1e-12)


def test_workers_the_driver_cannot_reach_are_called_through_the_scheduler(client, monkeypatch):
    """A driver that cannot connect to the workers (behind a gateway, say) keeps the client's
    route for the picks and fits the same model."""
    X, y = data(m=200)
    reference = gkfda.GreedyKFDA(k=5, factor_rank=20, random_state=0).fit(*chunked(X, y, 50))
    tried = []

    async def unreachable(client, address, key, payload):
        tried.append(address)
        raise OSError(f"Timed out trying to connect to {address}")

    monkeypatch.setattr(_dask, "_direct_call", unreachable)
    model = gkfda.GreedyKFDA(k=5, factor_rank=20, random_state=0).fit(*chunked(X, y, 50))
    assert sorted(tried) == sorted(client.scheduler_info()["workers"])  # tried once, at the start
    np.testing.assert_array_equal(model.support_, reference.support_)


def test_workers_that_do_not_answer_the_first_direct_call_are_called_through_the_scheduler(client, monkeypatch):
    """A direct call that neither answers nor fails (a connection the network drops) costs
    the fit ``DIRECT_PROBE_TIMEOUT``, not its rounds' timeout: the picks go through the
    scheduler and the model is the same."""
    import asyncio

    X, y = data(m=200)
    reference = gkfda.GreedyKFDA(k=5, factor_rank=20, random_state=0).fit(*chunked(X, y, 50))
    tried = []

    async def silent(client, address, key, payload):
        tried.append(address)
        await asyncio.sleep(3600)

    monkeypatch.setattr(_dask, "_direct_call", silent)
    monkeypatch.setattr(_dask, "DIRECT_PROBE_TIMEOUT", 0.2)
    monkeypatch.setattr(_dask, "ROUND_TIMEOUT", 30.0)  # without the probe's own, the fit would end here
    model = gkfda.GreedyKFDA(k=5, factor_rank=20, random_state=0).fit(*chunked(X, y, 50))
    assert sorted(tried) == sorted(client.scheduler_info()["workers"])
    np.testing.assert_array_equal(model.support_, reference.support_)


def test_the_best_candidates_of_the_chunks_skip_a_chunk_with_none():
    """A chunk whose rows are all chosen or explained gives no candidate (and a rows array of
    no columns); the others' best are taken, ties to the lowest index."""
    p = 3
    full = (np.array([2.0, 1.0]), np.array([7, 3]), np.array([0.1, 0.2]), np.arange(6.0).reshape(2, p))
    empty = (np.empty(0), np.empty(0, dtype=np.int64), np.empty(0), np.empty((0, 0)))
    tied = (np.array([2.0]), np.array([5]), np.array([0.3]), np.full((1, p), 9.0))
    scores, indices, thresholds, rows = _dask._best_candidates([full, empty, tied], 2, p)
    assert indices.tolist() == [5, 7] and scores.tolist() == [2.0, 2.0]
    assert thresholds.tolist() == [0.3, 0.1] and rows.shape == (2, p)
    scores, indices, _, rows = _dask._best_candidates([empty, empty], 1, p)
    assert len(indices) == 0 and rows.shape == (0, p)
