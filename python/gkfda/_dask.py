"""``GreedyKFDA.fit`` on dask arrays, with a ``distributed`` client (docs/scale.md, "Beyond
one machine: Dask").

The fit is the in-memory factored fit's, step for step, with the factor ``Φ`` held by the
workers, each keeping the rows of its chunks of ``X``:

- the driver computes ``y`` (``m`` labels), orders the rows by class and draws the pool as
  the in-memory fit does (``_factor.pool``, reading only the subsample's rows), computes
  the pool's ``W`` once (``_core.nystroem_whitening``) and sends the pool's points and
  ``W`` to every worker, which builds its chunks' rows of ``Φ`` (``_core.nystroem_rows``:
  the rows ``_core.nystroem_factor`` gives them) and keeps them;
- the selection runs in the core on the driver, in the factor's coordinates, as in memory:
  the driver keeps the ``p × p`` state, the workers their chunks' rows of ``Φ`` and of the
  per-row statistics (:class:`ChunkedFactorRows`, one actor a worker), and each pick is one
  call to each worker's actor, sent straight to its worker, with the in-memory rows' own
  arithmetic;
- the workers compute the exact kernel columns of the chosen bases, ``m × |bases|``, and
  keep them; the discriminant's ridge regression is reduced from the chunks' per-class
  moments of the features (``k × k`` each), and its calibration reads the features of a
  bounded sample of rows (``_discriminant.calibration_sample``): the driver fits them
  with the in-memory fit's own functions on the same statistics, and holds ``O(k²)`` of
  them, ``O(N k)`` of the sample, and the labels.

The model is an ordinary in-memory ``GreedyKFDA``.

Example (a cluster of two worker processes on this machine)::

    >>> from distributed import Client, LocalCluster          # doctest: +SKIP
    >>> import dask.array as da, gkfda                         # doctest: +SKIP
    >>> client = Client(LocalCluster(n_workers=2))             # doctest: +SKIP
    >>> X = da.from_array(X_numpy, chunks=(5_000, -1))         # doctest: +SKIP
    >>> y = da.from_array(y_numpy, chunks=5_000)               # doctest: +SKIP
    >>> model = gkfda.GreedyKFDA(k=50).fit(X, y)               # doctest: +SKIP
"""

from __future__ import annotations

import pickle
import sys
import threading
import time
from concurrent.futures import CancelledError
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from sklearn.utils.validation import check_consistent_length, column_or_1d

from . import _core
from ._discriminant import ClassMoments, KernelColumns, combined
from ._factor import diagonal as factor_diagonal
from ._factor import factor_width, pool
from ._kernels import check_kernel_arguments, core_kernel, kernel_between, kernel_parameters, resolve_gamma
from ._progress import SILENT, FitProgress
from ._training import TrainingProblem, factor_rank_for, prepare_training
from . import _discriminant, _validation
from ._validation import encoded_classes, thread_count

#: Seconds one round over the chunks (or the set-up's computation) may take before the fit
#: gives up with a ``TimeoutError``: a lost worker that the scheduler does not replace
#: must not hang the fit.
ROUND_TIMEOUT = 600.0

#: Seconds the first call straight to a worker may take before the fit sends its calls
#: through the scheduler instead: a worker the driver cannot reach (behind a gateway, say)
#: would otherwise hold the fit for ``distributed``'s connect timeout (30 s by default).
DIRECT_PROBE_TIMEOUT = 5.0

# Each task on a worker runs the core on one thread: a worker runs as many tasks (chunks)
# at once as it has threads (`--nthreads`), which is where its cores go.
_TASK_THREADS = 1


def is_dask_input(*arrays) -> bool:
    """Whether any of ``arrays`` is a dask collection. Imports nothing: a dask array
    exists only once dask has been imported."""
    dask = sys.modules.get("dask")
    return dask is not None and any(dask.is_dask_collection(array) for array in arrays)


def _client():
    """The current ``distributed`` client, or a ValueError naming ``X``."""
    try:
        import distributed
    except ImportError as error:
        raise ValueError(
            "X: a dask array is fitted on a distributed cluster, and distributed is not installed: "
            "pip install 'gkfda[dask]', start a distributed.Client, or pass NumPy arrays"
        ) from error
    try:
        return distributed.get_client()
    except ValueError as error:
        raise ValueError(
            "X: a dask array is fitted on a distributed cluster: start a distributed.Client first "
            "(Client('tcp://scheduler:8786'), or Client(LocalCluster()) on one machine), or pass NumPy arrays"
        ) from error


def _wait(futures, what, labels=None):
    """The results of ``futures`` (in their order), within ``ROUND_TIMEOUT`` seconds in all,
    the fetching of the results included; a task's own exception is raised as it is.
    ``labels`` name what each future computes (a chunk of ``X``), for the error of a lost
    worker."""
    import distributed
    from distributed.scheduler import KilledWorker

    deadline = time.monotonic() + ROUND_TIMEOUT
    results = []
    def label(i):
        return labels[i] if labels is not None else f"task {i + 1} of {len(futures)}"

    try:
        try:
            distributed.wait(futures, timeout=ROUND_TIMEOUT)
        except CancelledError as error:
            lost = next((i for i, future in enumerate(futures) if future.cancelled()), 0)
            raise _lost(what, label(lost), error) from error
        # The tasks are done, but their results are still on the workers: a worker that
        # stops answering now must not hang the fit either.
        for i, future in enumerate(futures):
            try:
                results.append(future.result(timeout=max(deadline - time.monotonic(), 1e-3)))
            except (CancelledError, KilledWorker) as error:
                raise _lost(what, label(i), error) from error
    except (TimeoutError, distributed.TimeoutError) as error:
        raise _timed_out(what) from error
    return results


def _timed_out(what):
    """The error of a round that took more than ``ROUND_TIMEOUT``."""
    return TimeoutError(
        f"X: {what} on the cluster took more than gkfda._dask.ROUND_TIMEOUT = {ROUND_TIMEOUT:g} s: a worker "
        "stopped answering (stopped, swapping, or cut off from the client). Check the cluster's workers "
        "(client.scheduler_info(), the dashboard) and fit again; raise ROUND_TIMEOUT if a round is that slow"
    )


def _lost(what, label, error):
    """The error of a task whose result was lost with its worker.

    It is raised, not recomputed: the scheduler has already recomputed what it could from
    the tasks' lineage, and it cancels a result ("already forgotten") only when it could
    not, or kills a task that took several workers down with it. Rebuilding the chunk here
    would replay the round on the workers that are left, where a chunk that killed its
    worker (its memory, say) would kill the next one; a cluster that loses workers mid-fit
    is to be looked at, and the fit run again, which gives the same model."""
    return RuntimeError(
        f"X: {label} was lost with the worker that held it, during {what} "
        f"({type(error).__name__}: {' '.join(str(error).split())}). "
        "Check the cluster's workers (their logs, memory limits, restarts) and fit again"
    )


# -- what runs on the workers (module functions and classes: the workers import them by name) ---------

def _converted(block, dtype):
    return np.ascontiguousarray(block, dtype=dtype)


def _rows_of(block, local, columns=None):
    return np.ascontiguousarray(block[local] if columns is None else block[np.ix_(local, columns)])


def _nystroem_rows(block, points, whitening, params):
    return _core.nystroem_rows(block, points, whitening, n_threads=_TASK_THREADS, **params)


def _aligned(phi):
    """``phi`` as the core reads it: row-major and aligned. Arrays made on this worker are;
    one received from another worker may be unaligned (copied here, once a round)."""
    return np.require(phi, requirements=["C", "A"])


def _row_moments(phi, classes, class_weights):
    return _core.factor_moments(_aligned(phi), classes, class_weights, n_threads=_TASK_THREADS)


def _computed(result):
    return True


def _kernel_columns(block, basis, kernel, params, dtype):
    return kernel_between(block, basis, kernel, params, dtype, _TASK_THREADS)


def _column_moments(columns, positions, projection, codes, n_classes):
    return KernelColumns(columns, positions).moments(projection, codes, n_classes)


def _kernel_diagonal(block, params):
    return factor_diagonal(block, **params)


# -- the driver's view of the chunks ----------------------------------------------------------

class _Chunks:
    """The row chunks of ``X`` on the workers (futures, in ``X``'s row order), converted to
    the fit's dtype, and the bookkeeping between a chunk's rows and ``X``'s. ``progress``:
    each chunk's rows done by a round count in the fit's open phase."""

    def __init__(self, client, X, dtype, progress=SILENT):
        self.client, self.progress = client, progress
        self.sizes = np.asarray(X.chunks[0], dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(self.sizes)])
        blocks = list(X.to_delayed().ravel())
        self.parts = [client.submit(_converted, part, dtype, pure=False) for part in client.compute(blocks)]

    def __len__(self):
        return int(self.starts[-1])

    def labels(self, chunks=None):
        """What names each chunk (``chunks``: their indices; None: all) in an error."""
        chunks = range(len(self.sizes)) if chunks is None else chunks
        return [f"chunk {c} of X (rows {self.starts[c]}-{self.starts[c + 1] - 1})" for c in chunks]

    def map(self, function, parts, *operands, what):
        """``function(part, *operands)`` of each chunk's part, in chunk order; ``operands``
        may be lists (one operand per chunk)."""
        futures = []
        for c, part in enumerate(parts):
            args = [operand[c] if isinstance(operand, _PerChunk) else operand for operand in operands]
            futures.append(self.client.submit(function, part, *args, pure=False))
        counted = self.count_rows(futures)
        results = _wait(futures, what, self.labels())
        counted()
        return results

    def count_rows(self, futures):
        """Each chunk's rows counted in the open phase (if any) as its future (one a chunk,
        in chunk order) finishes. Returns what counts, once all have finished, the chunks
        whose count has not come yet (the futures' callbacks run on another thread)."""
        advance = self.progress.ticker()
        if advance is None:
            return lambda: None
        lock, uncounted = threading.Lock(), dict(enumerate(self.sizes.tolist()))

        def count(c):
            with lock:
                rows = uncounted.pop(c, 0)
            if rows:
                advance(rows)

        for c, future in enumerate(futures):
            future.add_done_callback(lambda done, c=c: count(c) if done.status == "finished" else None)
        return lambda: [count(c) for c in range(len(futures))]

    def split(self, values):
        """``values`` (``(..., m)``, in ``X``'s row order) cut by chunk."""
        return _PerChunk(values[..., s:e] for s, e in zip(self.starts[:-1], self.starts[1:]))

    def held(self, function, parts, *operands, what):
        """:meth:`map`'s tasks, their results left on the workers: their futures, once all
        are computed (each chunk's rows counted in the open phase as it finishes)."""
        futures = []
        for c, part in enumerate(parts):
            args = [operand[c] if isinstance(operand, _PerChunk) else operand for operand in operands]
            futures.append(self.client.submit(function, part, *args, pure=False))
        counted = self.count_rows(futures)
        _wait([self.client.submit(_computed, future, pure=False) for future in futures], what, self.labels())
        counted()
        return futures

    def rows(self, parts, indices, what, columns=None):
        """Rows ``indices`` of ``X`` (of its order; any order, repeats allowed) of the
        chunks' ``parts`` (only their ``columns``, if given): one task per chunk that has any."""
        indices = np.asarray(indices, dtype=np.int64)
        chunk_of = np.searchsorted(self.starts, indices, side="right") - 1
        wanted = [c for c in range(len(parts)) if np.any(chunk_of == c)]
        futures = [
            self.client.submit(_rows_of, parts[c], indices[chunk_of == c] - self.starts[c], columns, pure=False)
            for c in wanted
        ]
        gathered = _wait(futures, what, self.labels(wanted))
        if not gathered:
            raise ValueError("X: no rows asked of the chunks")
        out = np.empty((len(indices), gathered[0].shape[1]), dtype=gathered[0].dtype)
        for c, rows in zip(wanted, gathered):
            out[chunk_of == c] = rows
        return out


class _PerChunk(list):
    """An operand of :meth:`_Chunks.map` with one value per chunk."""


class _OrderedRows:
    """The training rows ordered by class, as ``X_ordered[indices]`` reads them, gathered
    from the chunks (``_factor.pool`` reads its subsample, the fit its bases)."""

    def __init__(self, chunks, by_class):
        self.chunks, self.by_class = chunks, by_class

    def __len__(self):
        return len(self.by_class)

    def __getitem__(self, indices):
        return self.chunks.rows(self.chunks.parts, self.by_class[np.asarray(indices)], "gathering rows of X")


class _CallerRows:
    """The training rows in the caller's order, gathered from the chunks on demand (the
    model keeps its bases' rows)."""

    def __init__(self, chunks):
        self.chunks = chunks

    def __getitem__(self, indices):
        return self.chunks.rows(self.chunks.parts, indices, "gathering the bases' rows of X")


class ChunkedFactorRows:
    """The rows of a factor the workers hold, chunk by chunk, with the selection's per-row
    statistics beside them, as the core's selection in the factor's coordinates reads them
    (``greedy_select(None, y, k, factor=ChunkedFactorRows(...))``; docs/scale.md).

    Every index and label the core passes or takes is in the engine's row order (the
    training rows ordered by class: row ``j`` is ``X``'s row ``by_class[j]``); each chunk
    keeps ``X``'s rows and knows each row's engine index. The driver holds no ``m``-vector
    of the selection: each worker keeps its chunks' statistics (``_core.FactorRowStatistics``)
    in one :class:`_WorkerRows` actor, and a pick is one round: the stage's terms
    (``p``-vectors) go to every worker's actor, which applies them in one pass over its
    chunks' rows and gives back their best candidates, and the driver takes the best of
    those, ties to the lowest engine index, as in memory.

    The picks are calls to the actors, not tasks: a round of tasks costs the scheduler's
    bookkeeping of every task, several times a small chunk's pass, where a call is a message
    to the worker and back (docs/scale.md measures both). What that gives up is lineage: an
    actor's statistics are not recomputed when its worker is lost, and the fit ends with the
    error of a lost chunk.
    """

    def __init__(self, chunks, phi_parts, p, by_class, dtype):
        self.chunks, self.phi_parts = chunks, phi_parts
        self.shape = (len(chunks), int(p))
        self.dtype = np.dtype(dtype)
        # position[i]: the engine's row of X's row i; each chunk's rows' engine indices.
        position = np.empty_like(by_class)
        position[by_class] = np.arange(len(by_class))
        starts = chunks.starts
        self.positions = [position[s:e] for s, e in zip(starts[:-1], starts[1:])]
        #: Each worker's actor and the chunks it holds (made at the first selection's start).
        self.actors, self.groups, self._actor_futures = [], [], []
        #: Each actor's worker, and whether the calls go straight to it (``_place_actors``).
        self.addresses, self.direct = [], False
        #: The driver's waits on the cluster so far (one a round).
        self.rounds = 0

    def _round(self, futures, what, labels=None):
        self.rounds += 1
        return _wait(futures, what, self.chunks.labels() if labels is None else labels)

    def moments(self, classes, class_weights):
        """``(G, E, σ)`` of all rows, the chunks' shares added in chunk order."""
        client = self.chunks.client
        futures = [
            client.submit(_row_moments, phi, classes[positions], class_weights, pure=False)
            for phi, positions in zip(self.phi_parts, self.positions)
        ]
        partials = self._round(futures, "the selection's set-up sums")
        gram, weighted, sums = (part.copy() for part in partials[0])
        for g, e, s in partials[1:]:
            gram += g
            weighted += e
            sums += s
        return gram, weighted, sums

    def _place_actors(self):
        """One :class:`_WorkerRows` a worker that holds rows of ``Φ``, given the chunks it
        holds (their arrays stay where they are: no copy, no transfer)."""
        client = self.chunks.client
        holders = client.who_has(self.phi_parts)
        groups = {}
        for c, part in enumerate(self.phi_parts):
            # A chunk held by several workers goes with the first; one the scheduler does
            # not know a holder of (not computed yet) goes wherever the scheduler puts it.
            where = sorted(holders.get(part.key, ()))
            groups.setdefault(where[0] if where else None, []).append(c)
        self.groups = list(groups.values())
        self._actor_futures = [
            client.submit(_WorkerRows, *[self.phi_parts[c] for c in group], actor=True, pure=False,
                          workers=None if worker is None else [worker], allow_other_workers=worker is None)
            for worker, group in groups.items()
        ]
        self.actors = self._round(self._actor_futures, "placing the selection's statistics", self._labels())
        holders = client.who_has(self._actor_futures)
        self.addresses = [sorted(holders[future.key])[0] for future in self._actor_futures]
        self.direct = client.direct_to_workers is not False and self._workers_answer_directly()

    def _workers_answer_directly(self):
        """Whether every actor's worker answers a call sent straight to it.

        Unless the client says ``direct_to_workers=False``, the picks' calls go straight to
        the workers: by ``distributed``'s default route a call passes through the scheduler,
        one hop more each way, which costs about as much as a small chunk's pass (docs/scale.md
        measures both). A client that cannot reach the workers (behind a gateway, say) gets
        ``OSError`` here, or no answer within ``DIRECT_PROBE_TIMEOUT``, and keeps its own
        route."""
        client = self.chunks.client
        calls = [_answered_within(DIRECT_PROBE_TIMEOUT, _direct_call(client, address, actor.key,
                                                                     _packed(("ready", [], ()))))
                 for address, actor in zip(self.addresses, self.actors)]
        try:
            results = client.sync(_gathered, calls, callback_timeout=ROUND_TIMEOUT)
        except TimeoutError as error:
            raise _timed_out("reaching the workers") from error
        unreachable = [result for result in results if isinstance(result, OSError)]
        failed = [result for result in results if isinstance(result, BaseException)]
        if len(failed) > len(unreachable):
            raise next(error for error in failed if not isinstance(error, OSError))
        return not unreachable

    def _labels(self):
        """What names each actor in an error: the chunks it holds."""
        return ["the selection's state of " + " and ".join(self.chunks.labels(group)) for group in self.groups]

    def _call(self, what, method, per_group=(), *operands):
        """One round of ``method`` on every actor: ``per_group`` operands (each a list of
        one value per chunk) cut by the actor's chunks, then ``operands``; their results,
        in the actors' order."""
        self.rounds += 1
        client = self.chunks.client
        calls = [
            _direct_call(client, address, actor.key, payload) if self.direct else actor.run(payload)
            for actor, address, payload in zip(self.actors, self.addresses, (
                _packed((method, [[values[c] for c in group] for values in per_group], operands))
                for group in self.groups))
        ]
        return [pickle.loads(result) for result in _actor_results(client, calls, what, self._labels())]

    def start(self, classes, rank, weighted, class_sums, scatter_weights, criterion, tol):
        """Each chunk's statistics of ``K_0``, kept on its worker."""
        if not self.actors:
            self._place_actors()
        per_chunk = (
            self.positions,
            [classes[positions] for positions in self.positions],
            [rank[positions] if len(rank) else rank for positions in self.positions],
        )
        self._call("the selection's statistics", "start", per_chunk, weighted, class_sums, scatter_weights,
                   criterion, tol)

    def advance(self, v, h, class_sums, weighted_norms, blocked, take):
        """One round: the picks ``blocked`` out, the terms applied, the best ``take``
        candidates of all rows, best first: ``(scores, indices, thresholds, rows)``."""
        results = self._call("a pick", "advance", (), v, h, class_sums, weighted_norms, blocked, take)
        return _best_candidates(results, take, self.shape[1])


class _WorkerRows:
    """An actor on a worker: the rows of ``Φ`` of the chunks it holds and their statistics
    of the selection under way, kept between picks (:class:`ChunkedFactorRows`). Its calls
    run one at a time, each chunk's on the worker's threads."""

    def __init__(self, *phis):
        import distributed

        self.phis = [_aligned(phi) for phi in phis]
        self.statistics = []
        self.threads = max(1, int(distributed.get_worker().state.nthreads))

    def run(self, call):
        """``method(*per_chunk, *operands)`` of the packed ``call``, its result packed."""
        method, per_chunk, operands = pickle.loads(call)
        return _packed(getattr(self, method)(*per_chunk, *operands))

    def ready(self):
        """Nothing: a call that shows the worker answers."""

    def start(self, positions, classes, ranks, weighted, class_sums, scatter_weights, criterion, tol):
        self.statistics = [
            _core.FactorRowStatistics.start(phi, indices, chunk_classes, rank, weighted, class_sums,
                                            scatter_weights, criterion, tol, n_threads=self.threads)
            for phi, indices, chunk_classes, rank in zip(self.phis, positions, classes, ranks)
        ]

    def advance(self, v, h, class_sums, weighted_norms, blocked, take):
        """Every chunk's statistics after the pick, and the best ``take`` of their candidates."""
        self.statistics = [
            statistics.advanced(phi, v, h, class_sums, weighted_norms, blocked, take, n_threads=self.threads)
            for statistics, phi in zip(self.statistics, self.phis)
        ]
        return _best_candidates([statistics.candidates() for statistics in self.statistics], take,
                                self.phis[0].shape[1])


def _packed(value):
    """``value`` as one pickle: a call's operands and results are a few small arrays, and
    ``distributed`` sends each array of a call as frames of its own, at a cost (here about
    0.5 ms each way for a pick's five) that one buffer of bytes does not have."""
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def _actor_results(client, calls, what, labels):
    """The results of the actors' ``calls`` (in their order), within ``ROUND_TIMEOUT``
    seconds in all, as :func:`_wait` gives a round's: an actor's own exception is raised as
    it is, a worker that stops answering is a ``TimeoutError``, one lost the error of its
    chunks (an actor's state has no lineage to be recomputed from). One wait on the
    client's event loop for all the calls."""
    try:
        results = client.sync(_gathered, calls, callback_timeout=ROUND_TIMEOUT)
    except TimeoutError as error:
        raise _timed_out(what) from error
    for label, result in zip(labels, results):
        if isinstance(result, OSError):  # the worker's connection is gone
            raise _lost(what, label, result) from result
        if isinstance(result, BaseException):
            raise result
    return results


async def _direct_call(client, address, key, payload):
    """``run(payload)`` of the actor ``key`` on the worker at ``address``, sent straight to
    it: what ``distributed``'s ``Actor`` sends when its client has ``direct_to_workers=True``
    (the worker's ``actor_execute``); the actor's exception raised as it is."""
    from distributed.protocol import to_serialize

    reply = await client.rpc(address).actor_execute(function="run", actor=key, args=[to_serialize(payload)],
                                                      kwargs={})
    if reply["status"] != "OK":
        raise reply["exception"]
    return reply["result"]


async def _answered_within(seconds, call):
    """``call``'s result, or ``OSError`` (the error of a worker that cannot be reached) if
    it has not answered within ``seconds``."""
    import asyncio

    try:
        return await asyncio.wait_for(call, seconds)
    except asyncio.TimeoutError as error:  # not an OSError before Python 3.11
        raise OSError(f"no answer within {seconds:g} s") from error


async def _gathered(calls):
    import asyncio

    return await asyncio.gather(*calls, return_exceptions=True)


def _best_candidates(parts, take, p):
    """The best ``take`` of the chunks' candidates ``parts`` (each ``(scores, indices,
    thresholds, rows)``, best first), best first, ties to the lowest index. A chunk with no
    admissible row left gives none (its rows array then has no columns either)."""
    parts = [part for part in parts if len(part[1])]
    if not parts:
        return np.empty(0), np.empty(0, dtype=np.int64), np.empty(0), np.empty((0, p))
    scores, indices, thresholds, rows = (np.concatenate(column) for column in zip(*parts))
    best = np.lexsort((indices, -scores))[:take]
    return scores[best], indices[best], thresholds[best], np.ascontiguousarray(rows[best])


# -- the fit ----------------------------------------------------------------------------------

def _checked_X(client, X, y):
    """``X`` as a dask array of one column chunk, rows chunked as given, in the dtype
    validation gives (float32 stays float32, other numbers become float64), and the
    labels ``y`` as a NumPy array."""
    import dask.array as da

    if not isinstance(X, da.Array):
        raise ValueError(f"X: a dask collection must be a dask array, got {type(X).__name__}")
    if sparse.issparse(getattr(X, "_meta", None)):
        # The workers' factor rows and checks read dense chunks.
        raise ValueError("X: a dask array of sparse chunks is not supported; fit the scipy.sparse matrix in "
                         "memory (X.compute()) or give dense chunks")
    if X.ndim != 2:
        raise ValueError(f"X: expected a 2-D dask array of shape (n_samples, n_features), got {X.ndim}-D")
    if X.dtype.kind not in "biuf":
        raise ValueError(f"X: dtype {X.dtype} is not a real number type")
    if any(np.isnan(size) for size in X.chunks[0]):
        # X.compute_chunk_sizes() would wait without a bound.
        import dask

        sizes = _wait(client.compute([dask.delayed(len)(block) for block in X.to_delayed()[:, 0]]),
                      "computing the sizes of X's chunks")
        X = da.Array(X.dask, X.name, chunks=(tuple(int(size) for size in sizes), X.chunks[1]), dtype=X.dtype)
    m = X.shape[0]
    if m < 2:
        raise ValueError(f"X: found array with {m} sample(s) while a minimum of 2 is required")
    if 0 in X.chunks[0]:
        # Empty chunks (a boolean mask's) hold no rows of the factor: left out, they cost
        # no task, and no chunk operation has to handle zero rows.
        X = da.concatenate([X.blocks[c] for c, size in enumerate(X.chunks[0]) if size > 0])
    valid_dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    X = X.astype(valid_dtype).rechunk({1: -1})
    if is_dask_input(y):
        y = _wait([client.compute(y)], "computing y")[0]
    if y is None:
        raise ValueError("y: requires y to be passed, but the target y is None")
    y = column_or_1d(np.asarray(y), warn=True)
    try:
        check_consistent_length(X, y)
    except ValueError as error:
        raise ValueError(f"X, y: {error}") from error
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("y: Input y contains NaN or infinity")
    return X, y


def prepare_dask_training(estimator, X, y, rng) -> TrainingProblem:
    """``(X, y)`` of ``estimator.fit``, ``X`` a dask array (and ``y`` a dask or NumPy array
    of ``m`` labels), made into the :class:`TrainingProblem` of the in-memory factored fit,
    its factor held by the workers of the current ``distributed`` client."""
    if not is_dask_input(X):
        # Only y is chunked: X is in memory already, and so is the fit.
        try:
            import distributed

            client = distributed.get_client()
        except (ImportError, ValueError):  # no cluster: dask's local scheduler, which cannot be cut off
            return prepare_training(estimator, X, np.asarray(y.compute()), rng)
        return prepare_training(estimator, X, np.asarray(_wait([client.compute(y)], "computing y")[0]), rng)
    client = _client()
    X, y = _checked_X(client, X, y)
    if estimator.solver == "dense":
        raise ValueError("solver: a dask X is fitted with solver='factored' (or 'auto'); 'dense' needs the m×m kernel in memory")
    name = None if callable(estimator.kernel) else core_kernel(estimator.kernel, estimator.degree)
    if name is None:
        raise ValueError(
            f"kernel: a dask X needs a kernel the core computes (rbf, linear or poly of an integral degree), "
            f"got kernel={estimator._kernel_name()!r}"
        )
    dtype, threads = estimator._dtype(), thread_count(estimator.n_jobs)
    import dask.array as da

    progress = FitProgress(estimator.verbose)
    with progress.phase("checking X"):
        finite, converted_finite, variance = _wait(
            client.compute([da.isfinite(X).all(), da.isfinite(X.astype(dtype)).all(), X.var(dtype=np.float64)]),
            "checking X",
        )
    if not finite:
        raise ValueError("X: Input X contains NaN or infinity")
    if not converted_finite:
        raise ValueError(f"X: has values beyond the range of {np.dtype(dtype).name}; scale them or use dtype='float64'")
    # What validate_data(reset=True) records.
    estimator.n_features_in_ = int(X.shape[1])
    estimator.__dict__.pop("feature_names_in_", None)
    classes, y_index = encoded_classes(y)
    n_classes = len(classes)
    priors = estimator._checked_priors(y_index, n_classes)
    m = len(y)
    k = estimator._resolved_k(n_classes, m)
    check_kernel_arguments(estimator)
    gamma = resolve_gamma(estimator.gamma, estimator.kernel, _Variance(X.shape, variance), dtype)
    params = kernel_parameters(estimator, gamma)
    by_class = np.argsort(y_index, kind="stable")
    one_basis = n_classes == 2 or estimator.multiclass == "shared"
    codes = y_index[by_class]
    problems = [codes] if one_basis else [(codes == c).astype(np.intp) for c in range(n_classes)]
    # Refused here, before the workers build anything.
    _check_driver_fits(m, k, n_classes if one_basis else 2, len(problems), dtype)
    chunks = _Chunks(client, X, dtype, progress)
    factor = _chunked_factor(chunks, _OrderedRows(chunks, by_class), by_class, name, {**params, "kernel": name},
                             estimator, k, dtype, rng, threads)
    return _ChunkedProblem(
        X=_CallerRows(chunks), classes=classes, y_index=y_index, priors=priors, k=k, gamma=gamma, params=params,
        by_class=by_class, problems=problems, solver="factored", dtype=dtype, threads=threads, factor=factor,
        core_name=name, progress=progress, chunks=chunks,
    )


@dataclass
class _ChunkedProblem(TrainingProblem):
    """A :class:`TrainingProblem` whose rows stay on the workers, in ``X``'s chunks (its
    ``X`` gathers rows by index, its ``factor`` a :class:`ChunkedFactorRows`): the diagonal and
    the bases' exact kernel columns are made there, chunk by chunk."""

    chunks: _Chunks | None = None

    def diagonal(self) -> np.ndarray:
        params = {"kernel": self.core_name, **{name: self.params[name] for name in ("gamma", "degree", "coef0")}}
        diagonal = np.concatenate(self.chunks.map(_kernel_diagonal, self.chunks.parts, params,
                                                  what="the kernel's diagonal"))
        return diagonal[self.by_class]

    def _union_columns(self, union, kernel) -> "_ChunkedColumns":
        basis = _OrderedRows(self.chunks, self.by_class)[union]
        # The exact kernel columns of the chosen bases, as the in-memory fit's, each chunk's
        # rows of them kept on its worker.
        parts = self.chunks.held(_kernel_columns, self.chunks.parts, basis, kernel, self.params, self.dtype,
                                 what="the bases' kernel columns")
        return _ChunkedColumns(self.chunks, parts, self.by_class)


class _ChunkedColumns:
    """The exact kernel columns of a fit's bases held by the workers, chunk by chunk (rows
    in ``X``'s order, one column a basis of the union of the selections), restricted to
    ``positions`` of those columns (all: None): a ``_discriminant.KernelColumns`` whose rows
    stay with the chunks. The discriminant's :meth:`moments` are reduced from the chunks
    (``O(C k²)`` numbers each), and only the :meth:`rows` it asks for (the bases' block,
    the calibration's sample: bounded) come to the driver."""

    def __init__(self, chunks, parts, by_class, positions=None):
        self.chunks, self.parts, self.by_class, self.positions = chunks, parts, by_class, positions

    def select(self, positions) -> "_ChunkedColumns":
        return _ChunkedColumns(self.chunks, self.parts, self.by_class, np.asarray(positions, dtype=np.intp))

    def rows(self, indices) -> np.ndarray:
        """Rows ``indices`` (kernel order) of the columns, gathered from their chunks."""
        return self.chunks.rows(self.parts, self.by_class[np.asarray(indices, dtype=np.intp)],
                                "gathering rows of the bases' kernel columns", self.positions)

    def moments(self, projection, codes, n_classes, advance=None) -> ClassMoments:
        """The features' moments of each chunk's rows, computed there, merged in chunk order."""
        # codes are in kernel order; chunk c holds X's rows starts[c]..starts[c+1].
        in_x_order = np.empty_like(codes)
        in_x_order[self.by_class] = codes
        parts = self.chunks.map(_column_moments, self.parts, self.positions, projection,
                                self.chunks.split(in_x_order), n_classes, what="the discriminant's sums")
        return combined(parts)


def _chunked_factor(chunks, ordered, by_class, name, params, estimator, k, dtype, rng, threads):
    """The factor of the training rows ordered by class, held by the workers: ``X`` itself
    for ``linear``, else the Nyström factor of the pool ``_factor.pool`` draws, as
    ``_factor.training_factor`` makes it in memory, of a rank from which ``k`` bases can be
    chosen (``_training.factor_rank_for``; ``"auto"`` without the memory cap of an in-memory
    fit, the factor being the workers', not the driver's). Shown as the phases ``pool`` (its pivots) and
    ``factor`` (the pool's ``W``, then the rows of ``Φ`` as the chunks finish them)."""
    m = len(by_class)
    if name == "linear":
        phi_parts, p = chunks.parts, estimator.n_features_in_
    else:
        p = factor_width(name, estimator.n_features_in_, m, factor_rank_for(estimator.factor_rank, k, m))
        indices = pool(ordered, p, estimator.factor_pool, params, rng, threads, chunks.progress)
        with chunks.progress.phase("factor", total=m, unit="row"):
            points = ordered[indices]
            whitening = _core.nystroem_whitening(points, n_threads=threads, **params)
            try:
                points_f, whitening_f = chunks.client.scatter([points, whitening], broadcast=True,
                                                              timeout=ROUND_TIMEOUT)
            except TimeoutError as error:
                raise TimeoutError(
                    f"X: sending the pool to the workers took more than gkfda._dask.ROUND_TIMEOUT = "
                    f"{ROUND_TIMEOUT:g} s: check the cluster's workers and fit again"
                ) from error
            # The rows of Φ stay on the workers: the round waits on a flag of each chunk's.
            phi_parts = chunks.held(_nystroem_rows, chunks.parts, points_f, whitening_f, params,
                                    what="building the factor's rows")
        p = whitening.shape[1]
    return ChunkedFactorRows(chunks, phi_parts, p, by_class, dtype)


def driver_bytes(m, k, n_classes, selections, dtype) -> int:
    """Bytes the driver of a Dask fit holds beside the selection's ``p × p`` state (the
    workers hold the factor, the per-row statistics and the kernel columns):

    - a few ``m``-vectors: the labels, their codes and class order, each selection's codes,
      each chunk's engine indices, the kernel's diagonal (with its copy);
    - the calibration's sample (at most ``_discriminant.CALIBRATION_ROWS`` rows): its rows of
      the kernel columns and their float64 features, and the calibration's blocks of
      leave-one-out scores (about eight arrays of a block of prefixes' scores);
    - per selection, its ``k × k`` matrices: the moments' per-class scatters (the chunks'
      merged two at a time), the projection and the ridge regression's.
    """
    itemsize = np.dtype(dtype).itemsize
    m, k = int(m), int(k)
    vectors = (8 + selections) * m * 8
    rows = min(m, int(_discriminant.CALIBRATION_ROWS))
    scores = min(k * rows * (n_classes - 1), max(_discriminant._CALIBRATION_BLOCK, rows * (n_classes - 1)))
    sample = rows * k * (itemsize + 8) + 8 * scores * 8
    models = selections * (3 * n_classes + 4) * k * k * 8
    return vectors + sample + models


def _check_driver_fits(m, k, n_classes, selections, dtype):
    """Refuse a Dask fit whose driver cannot hold its share (:func:`driver_bytes`)."""
    needed, available = driver_bytes(m, k, n_classes, selections, dtype), _validation.available_memory()
    if needed > available:
        raise MemoryError(
            f"X: a fit of {m} samples with k={k} needs {needed / 2**30:.2f} GiB on the driver (its labels, the "
            f"calibration's sample and the models) but only {available / 2**30:.2f} GiB is available there; "
            "use fewer samples or bases, or a driver of more memory"
        )


class _Variance:
    """What ``resolve_gamma`` reads of ``X``: its shape and variance, computed on the cluster."""

    def __init__(self, shape, variance):
        self.shape, self._variance = shape, float(variance)

    def var(self, dtype=None):
        return self._variance
