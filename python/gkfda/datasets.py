"""Benchmark data sets and loaders for your own data.

The 13 binary IDA benchmark problems of G. Rätsch (banana, breast_cancer, diabetis, flare_solar,
german, heart, image, ringnorm, splice, thyroid, titanic, twonorm, waveform) ship inside the
package as ``.npz`` files under ``gkfda/data/raetsch/`` (provenance, licence situation and
citations: ``gkfda/data/raetsch/README.md``). :func:`load_benchmark` returns one of them with the
full set of train/test realisations of the benchmark protocol (100, or 20 for image and splice).

Only some canonical IDA realisations survive publicly: realisations 1-10 of banana, breast_cancer,
german, heart, image, ringnorm, titanic and waveform, realisation 1 of twonorm, and none of
diabetis, flare_solar, splice and thyroid. The stored canonical realisations are used as they are;
every other realisation is *generated*: a seeded random partition of the N patterns with the
canonical train/test sizes. ``Benchmark.canonical`` tells which is which. Results on generated
realisations are comparable in distribution, not split by split, to published numbers.

Your own data is read with existing parsers (scikit-learn's svmlight reader, ``numpy.loadtxt``,
``numpy.load``): :func:`load_svmlight`, :func:`load_csv`, :func:`load_npz` and the dispatcher
:func:`load_file`. They return ``(X, y)`` with ``X`` a dense float64 array and the labels as they
are in the file (any two distinct values; :class:`gkfda.GreedyKFDA` maps them itself).

Examples
--------
>>> from gkfda.datasets import list_benchmarks, load_benchmark
>>> len(list_benchmarks())
13
>>> bench = load_benchmark("banana")
>>> bench
Benchmark(name='banana', n_samples=5300, n_features=2, n_train=400, n_test=4900, n_realisations=100, n_canonical=10)
>>> X_train, y_train, X_test, y_test = bench.split(0)
>>> X_train.shape, X_test.shape
((400, 2), (4900, 2))
"""

from __future__ import annotations

import importlib.resources
import zlib
from dataclasses import dataclass
from typing import Iterator, Tuple

import numpy as np

from ._loaders import load_csv, load_file, load_npz, load_svmlight

__all__ = [
    "Benchmark",
    "list_benchmarks",
    "load_benchmark",
    "load_svmlight",
    "load_csv",
    "load_npz",
    "load_file",
    "GENERATED_SEED",
]

#: The 13 benchmark names, sorted.
_BENCHMARKS = (
    "banana",
    "breast_cancer",
    "diabetis",
    "flare_solar",
    "german",
    "heart",
    "image",
    "ringnorm",
    "splice",
    "thyroid",
    "titanic",
    "twonorm",
    "waveform",
)

#: First word of the seed of every generated realisation (see :func:`load_benchmark`).
GENERATED_SEED = 20_010_301

_DATA_PACKAGE = "gkfda"
_DATA_DIR = ("data", "raetsch")


def list_benchmarks() -> list:
    """Names of the shipped IDA benchmark data sets.

    Returns
    -------
    list of str
        The 13 names, sorted; each is a valid argument of :func:`load_benchmark`.

    Examples
    --------
    >>> from gkfda.datasets import list_benchmarks
    >>> list_benchmarks()  # doctest: +NORMALIZE_WHITESPACE
    ['banana', 'breast_cancer', 'diabetis', 'flare_solar', 'german', 'heart', 'image',
     'ringnorm', 'splice', 'thyroid', 'titanic', 'twonorm', 'waveform']
    """
    return list(_BENCHMARKS)


def _readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False, repr=False)
class Benchmark:
    """One IDA benchmark data set with all realisations of its train/test protocol.

    Row ``r`` of ``train``/``test`` is IDA realisation ``r + 1``. The arrays are read-only; index
    them (or use :meth:`split`) to get writable copies.

    Attributes
    ----------
    name : str
        Data set name, one of :func:`list_benchmarks`.
    X : ndarray of shape (N, d), float64
        All N patterns. Every realisation is a partition of these rows; duplicate rows are kept.
    y : ndarray of shape (N,), int64
        Labels in {-1, +1}.
    train : ndarray of shape (R, m_train), int64
        0-based row indices into ``X`` of the training set of each realisation.
    test : ndarray of shape (R, m_test), int64
        0-based row indices into ``X`` of the test set of each realisation.
    canonical : ndarray of shape (R,), bool
        True where the row is the canonical IDA realisation, False where it was generated.

    Examples
    --------
    >>> from gkfda.datasets import load_benchmark
    >>> bench = load_benchmark("twonorm")
    >>> bench.n_realisations, bench.n_canonical
    (100, 1)
    >>> bench.canonical[:3]
    array([ True, False, False])
    >>> bench.train.shape, bench.test.shape
    ((100, 400), (100, 7000))
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    train: np.ndarray
    test: np.ndarray
    canonical: np.ndarray

    @property
    def n_samples(self) -> int:
        """Number N of patterns (= ``n_train + n_test``)."""
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        """Input dimension d."""
        return int(self.X.shape[1])

    @property
    def n_train(self) -> int:
        """Canonical training-set size m_train."""
        return int(self.train.shape[1])

    @property
    def n_test(self) -> int:
        """Canonical test-set size m_test."""
        return int(self.test.shape[1])

    @property
    def n_realisations(self) -> int:
        """Number R of realisations of the protocol (100, or 20 for image and splice)."""
        return int(self.train.shape[0])

    @property
    def n_canonical(self) -> int:
        """How many of the R realisations are canonical IDA realisations (the rest are generated)."""
        return int(np.count_nonzero(self.canonical))

    def split(self, r: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Train and test data of realisation row ``r`` (0-based: IDA realisation ``r + 1``).

        Parameters
        ----------
        r : int
            Row index, ``0 <= r < n_realisations`` (negative indices count from the end).

        Returns
        -------
        X_train, y_train, X_test, y_test : ndarray
            Fresh (writable) copies.

        Examples
        --------
        >>> from gkfda.datasets import load_benchmark
        >>> X_train, y_train, X_test, y_test = load_benchmark("heart").split(0)
        >>> X_train.shape, y_train.shape, X_test.shape, y_test.shape
        ((170, 13), (170,), (100, 13), (100,))
        >>> sorted(set(y_train.tolist()))
        [-1, 1]
        """
        index = int(r)
        if not -self.n_realisations <= index < self.n_realisations:
            raise IndexError(
                f"realisation row {r!r} out of range for {self.name!r} "
                f"with {self.n_realisations} realisations"
            )
        tr, te = self.train[index], self.test[index]
        return self.X[tr], self.y[tr], self.X[te], self.y[te]

    def splits(self, canonical_only: bool = False) -> Iterator[Tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """Iterate over realisations as ``(r, X_train, y_train, X_test, y_test)``.

        Parameters
        ----------
        canonical_only : bool, default False
            Only the canonical IDA realisations.

        Examples
        --------
        >>> from gkfda.datasets import load_benchmark
        >>> [r for r, *_ in load_benchmark("image").splits(canonical_only=True)]
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
        """
        for r in range(self.n_realisations):
            if canonical_only and not self.canonical[r]:
                continue
            yield (r, *self.split(r))

    def __repr__(self) -> str:
        return (
            f"Benchmark(name={self.name!r}, n_samples={self.n_samples}, n_features={self.n_features}, "
            f"n_train={self.n_train}, n_test={self.n_test}, n_realisations={self.n_realisations}, "
            f"n_canonical={self.n_canonical})"
        )


def _normalise_name(name: object) -> str:
    if not isinstance(name, str):
        raise TypeError(f"benchmark name must be a str, got {type(name).__name__}")
    key = name.strip().lower().replace("-", "_").replace(" ", "_")
    if key not in _BENCHMARKS:
        raise ValueError(
            f"unknown benchmark name {name!r}; valid names are: {', '.join(_BENCHMARKS)}"
        )
    return key


def _resource(name: str):
    """The packaged ``.npz`` of benchmark ``name`` as an ``importlib.resources`` Traversable."""
    node = importlib.resources.files(_DATA_PACKAGE)
    for part in _DATA_DIR:
        node = node / part
    return node / f"{name}.npz"


def _generated_split(name: str, realisation: int, n: int, m_train: int) -> Tuple[np.ndarray, np.ndarray]:
    """Seeded random partition of ``range(n)`` for 1-based ``realisation`` of ``name``.

    The permutation is the stable argsort of raw PCG64 outputs seeded by
    ``SeedSequence([GENERATED_SEED, crc32(name), realisation])``: both the seed hashing and the
    PCG64 stream are fixed by their specification, so the result is identical on every machine,
    platform and NumPy version, and it does not touch NumPy's global random state.
    """
    seed = [GENERATED_SEED, zlib.crc32(name.encode("ascii")), int(realisation)]
    raw = np.random.PCG64(np.random.SeedSequence(seed)).random_raw(n)
    order = np.argsort(raw, kind="stable").astype(np.int64)
    return order[:m_train], order[m_train:]


def load_benchmark(name: str) -> Benchmark:
    """Load one IDA benchmark data set with its full train/test protocol.

    Parameters
    ----------
    name : str
        One of :func:`list_benchmarks` (case-insensitive; ``-`` may stand for ``_``).

    Returns
    -------
    Benchmark
        ``R`` realisations (100, or 20 for image and splice). The canonical realisations stored
        in the package are placed in their rows (realisation ``k`` in row ``k - 1``) and flagged
        in ``canonical``. Every other row is generated: a random partition of ``range(N)`` into
        the canonical train/test sizes, seeded by ``(GENERATED_SEED, crc32(name), k)``, so it is
        the same on every machine and independent of NumPy's global random state.

    Raises
    ------
    ValueError
        If ``name`` is not a benchmark name.

    Examples
    --------
    >>> from gkfda.datasets import load_benchmark
    >>> bench = load_benchmark("banana")
    >>> bench.X.shape, bench.y.dtype.name, bench.train.shape, bench.test.shape
    ((5300, 2), 'int64', (100, 400), (100, 4900))
    >>> bench.n_canonical, bool(bench.canonical[9]), bool(bench.canonical[10])
    (10, True, False)
    >>> load_benchmark("splice").n_realisations
    20
    >>> load_benchmark("nope")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown benchmark name 'nope'; valid names are: banana, breast_cancer, ...
    """
    key = _normalise_name(name)
    with importlib.resources.as_file(_resource(key)) as path:
        with np.load(path, allow_pickle=False) as archive:
            X = np.ascontiguousarray(archive["X"], dtype=np.float64)
            y = archive["y"].astype(np.int64)
            stored_train = archive["train"].astype(np.int64)
            stored_test = archive["test"].astype(np.int64)
            realisations = archive["realisations"].astype(np.int64)
            n_realisations = int(archive["n_realisations_canonical"])

    n, m_train, m_test = X.shape[0], stored_train.shape[1], stored_test.shape[1]
    if m_train + m_test != n or y.shape != (n,):
        raise RuntimeError(f"packaged benchmark {key!r} is inconsistent")  # pragma: no cover

    train = np.empty((n_realisations, m_train), dtype=np.int64)
    test = np.empty((n_realisations, m_test), dtype=np.int64)
    canonical = np.zeros(n_realisations, dtype=bool)
    for row, number in enumerate(realisations):
        train[number - 1] = stored_train[row]
        test[number - 1] = stored_test[row]
        canonical[number - 1] = True
    for r in np.flatnonzero(~canonical):
        train[r], test[r] = _generated_split(key, int(r) + 1, n, m_train)

    return Benchmark(
        name=key,
        X=_readonly(X),
        y=_readonly(y),
        train=_readonly(train),
        test=_readonly(test),
        canonical=_readonly(canonical),
    )
