"""Loaders for the user's own data, as :mod:`gkfda.datasets` offers them.

Existing parsers do the reading (scikit-learn's svmlight reader, ``numpy.loadtxt``,
``numpy.load``): :func:`load_svmlight`, :func:`load_csv`, :func:`load_npz` and the dispatcher
:func:`load_file`. They return ``(X, y)`` with ``X`` a dense float64 array and the labels as they
are in the file; what cannot be read is refused with a ``ValueError`` naming the file, and
where it can, the line and column.
"""

from __future__ import annotations

import bz2
import csv
import functools
import gzip
import io
import os
import re
import warnings
import zipfile
import zlib
from pathlib import Path
from typing import Iterator, Optional, Tuple, Union

import numpy as np

PathLike = Union[str, "os.PathLike[str]"]


def _tidy_labels(labels: np.ndarray) -> np.ndarray:
    """Integral numeric labels as int64, other numbers as float64, anything else unchanged."""
    labels = np.asarray(labels)
    if labels.dtype.kind in "US":
        try:
            labels = labels.astype(np.float64)
        except ValueError:
            return labels  # textual class names, kept as given
    if labels.dtype.kind == "f" and labels.size and np.all(np.isfinite(labels)) \
            and np.all(labels == np.round(labels)) and np.all(np.abs(labels) < 2**53):
        return labels.astype(np.int64)
    return labels


def _names_unreadable_files(load):
    """``load(path, ...)`` with a compressed stream that is corrupt or cut short (``zlib.error``,
    ``EOFError``, ``gzip.BadGzipFile``, bz2's ``OSError``) and a damaged ``.npz`` member
    (``zipfile.BadZipFile``, a bad CRC) refused as a ValueError naming the file."""

    @functools.wraps(load)
    def checked(path, *args, **kwargs):
        try:
            return load(path, *args, **kwargs)
        except (zlib.error, EOFError, gzip.BadGzipFile, zipfile.BadZipFile) as exc:
            raise ValueError(f"{os.fspath(path)}: corrupt or cut-short data ({exc})") from exc
        except OSError as exc:
            if type(exc) is not OSError or exc.errno is not None:  # a missing or unreadable file
                raise
            raise ValueError(f"{os.fspath(path)}: corrupt or cut-short data ({exc})") from exc

    return checked


#: The svmlight reader's largest feature index (scikit-learn stores them as int32).
_SVMLIGHT_LARGEST_INDEX = 2**31 - 1
#: An svmlight file is made dense: refused when that takes more than this many cells for each
#: value the file stores (and more than ``_SVMLIGHT_DENSE_FREE`` cells), so that a line like
#: ``0 400000000:1`` cannot ask for gigabytes.
_SVMLIGHT_CELLS_PER_VALUE = 1000
_SVMLIGHT_DENSE_FREE = 2**26  # 512 MiB of float64
_UTF8_BOM = b"\xef\xbb\xbf"


def _svmlight_lines(source) -> Iterator[Tuple[int, list]]:
    """``(line number, index tokens)`` of each data line of svmlight bytes ``source``."""
    for number, line in enumerate(source.splitlines(), start=1):
        tokens = line.split(b"#", 1)[0].split()
        if tokens:
            yield number, [t.split(b":", 1)[0] for t in tokens[1:] if b":" in t and not t.startswith(b"qid:")]


def _svmlight_source(path: PathLike):
    """What the svmlight reader gets: the path, or the decompressed bytes without a UTF-8
    byte-order mark when the file starts with one (as ``utf-8-sig`` reads it)."""
    opener = _COMPRESSION.get(Path(path).suffix.lower(), open)
    with opener(os.fspath(path), "rb") as handle:
        start = handle.read(len(_UTF8_BOM))
        if start != _UTF8_BOM:
            return os.fspath(path)
        return handle.read()


def _svmlight_data(path: PathLike, source) -> bytes:
    if isinstance(source, bytes):
        return source
    opener = _COMPRESSION.get(Path(path).suffix.lower(), open)
    with opener(os.fspath(path), "rb") as handle:
        return handle.read()


@_names_unreadable_files
def load_svmlight(path: PathLike, n_features: Optional[int] = None, zero_based: Union[bool, str] = "auto"):
    """Read a file in svmlight / libsvm format (``label index:value ...``).

    Parsing is done by :func:`sklearn.datasets.load_svmlight_file`; compressed ``.gz``/``.bz2``
    files are read transparently.

    Parameters
    ----------
    path : str or path-like
        The file.
    n_features : int, optional
        Number of features; inferred from the largest index when omitted.
    zero_based : bool or "auto", default "auto"
        Whether feature indices start at 0 (passed to scikit-learn).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
        Dense data (absent entries are 0).
    y : ndarray of shape (n_samples,)
        The labels as written in the file: int64 when they are all integers (e.g. ``-1``/``+1``
        or ``0``/``1``), float64 otherwise.

    Examples
    --------
    >>> import os, tempfile
    >>> from gkfda.datasets import load_svmlight
    >>> path = os.path.join(tempfile.mkdtemp(), "toy.svm")
    >>> with open(path, "w") as f:
    ...     _ = f.write("+1 1:0.5 3:2\\n-1 2:1.5\\n")
    >>> X, y = load_svmlight(path)
    >>> X
    array([[0.5, 0. , 2. ],
           [0. , 1.5, 0. ]])
    >>> y
    array([ 1, -1])
    """
    from sklearn.datasets import load_svmlight_file

    name = os.fspath(path)
    source = _svmlight_source(path)
    try:
        X, y = load_svmlight_file(io.BytesIO(source) if isinstance(source, bytes) else source,
                                  n_features=n_features, dtype=np.float64, zero_based=zero_based)
    except OverflowError as exc:  # an index beyond int32
        for number, indices in _svmlight_lines(_svmlight_data(path, source)):
            for index in indices:
                if index.isdigit() and int(index) > _SVMLIGHT_LARGEST_INDEX:
                    raise ValueError(f"{name}: line {number}: feature index {index.decode()} is beyond the "
                                     f"largest the svmlight reader takes ({_SVMLIGHT_LARGEST_INDEX})") from exc
        raise ValueError(f"{name}: not a valid svmlight file: {exc}") from exc
    except ValueError as exc:
        raise ValueError(f"{name}: not a valid svmlight file: {exc}") from exc
    n_samples, width = X.shape
    if n_samples * width > max(_SVMLIGHT_DENSE_FREE, _SVMLIGHT_CELLS_PER_VALUE * max(X.nnz, n_samples)):
        largest = int(X.indices.max()) if X.nnz else -1
        if n_features is not None and largest + 1 < n_features:
            where = f"n_features={n_features}"
        else:  # the data line of the largest index, and that index as written
            row = int(np.searchsorted(X.indptr, int(np.argmax(X.indices)), side="right")) - 1
            number, indices = list(_svmlight_lines(_svmlight_data(path, source)))[row]
            where = f"line {number}: feature index {max(int(i) for i in indices if i.isdigit())}"
        raise ValueError(
            f"{name}: {where} makes a dense X of {n_samples} × {width} ({n_samples * width * 8 / 2**30:.3g} GiB) "
            f"from {X.nnz} stored values; the estimators need dense features: renumber the features "
            "(or select them) so that they are fewer"
        )
    return np.ascontiguousarray(X.toarray(), dtype=np.float64), _tidy_labels(y)


#: Fields that stand for a missing value (compared case-insensitively, after stripping).
_MISSING = frozenset({"", "na", "n/a", "null", "none", "?"})


def _fields(line: str, delimiter: Optional[str]) -> list:
    """The fields of one line, unquoted and stripped, split as ``numpy.loadtxt`` splits them."""
    if delimiter is None:
        return [field.strip('"') for field in line.split()]
    return [field.strip() for field in next(csv.reader([line], delimiter=delimiter, quotechar='"'))]


def _data_lines(handle, comments: str, skip: int = 0) -> Iterator[Tuple[int, str]]:
    """``(line number, content)`` of the lines that hold data: comments and blank lines left out."""
    for number, line in enumerate(handle, start=1):
        if number <= skip:
            continue
        content = line.split(comments, 1)[0] if comments else line
        if content.strip():
            yield number, content.rstrip("\r\n")


def _is_number(field: str) -> bool:
    try:
        float(field)
    except ValueError:
        return False
    return "_" not in field  # Python's float() takes 1_000; numpy.loadtxt does not


def _cell_problem(field: str) -> Optional[str]:
    """Why a feature field is not a finite real number, or None when it is one."""
    if field.lower() in _MISSING:
        return f"missing value {field!r}; missing values are not allowed (impute or drop them first)"
    if _is_number(field):
        if np.isfinite(float(field)):
            return None
        return f"{field!r} is not a finite number; NaN and infinity are not allowed"
    if "_" in field:  # Python's float() and complex() take 1_000; numpy.loadtxt does not
        return f"{field!r} is not a plain decimal number; digit separators '_' are not allowed"
    try:
        complex(field)
    except ValueError:
        return f"non-numeric value {field!r}"
    if not any(c.isdigit() for c in field):  # complex() takes "j" and "nanj"
        return f"non-numeric value {field!r}"
    return f"{field!r} is a complex number; the features must be real"


def _is_header(fields: list) -> bool:
    """A first line is a header when none of its fields is a number, empty or a missing-value mark."""
    return not any(_is_number(f) or f.lower() in _MISSING for f in fields)


def _first_problem(path: PathLike, delimiter, skip: int, comments: str,
                   label_index: int) -> Tuple[Optional[int], Optional[str]]:
    """The first line at fault in a table and what is wrong with it (which column), or Nones."""
    n_columns = None
    with _open_text(path) as handle:
        for number, line in _data_lines(handle, comments, skip):
            fields = _fields(line, delimiter)
            if n_columns is None:
                n_columns, first = len(fields), number
            if len(fields) != n_columns:
                return number, f"line {number} has {len(fields)} fields where line {first} has {n_columns}"
            if fields[label_index].lower() in _MISSING:
                return number, f"line {number}, column {label_index + 1}: missing label {fields[label_index]!r}"
            for column, field in enumerate(fields):
                problem = None if column == label_index else _cell_problem(field)
                if problem is not None:
                    return number, f"line {number}, column {column + 1}: {problem}"
    return None, None


def _table_error(name: str, delimiter, skip: int, comments: str, label_index: int,
                 header_hint: Optional[int], cause: Optional[Exception]) -> ValueError:
    """The error for a table that ``numpy.loadtxt`` refused (``cause``) or read with a non-finite
    feature or a missing label: the line and column at fault, found by reading it again."""
    number, problem = _first_problem(name, delimiter, skip, comments, label_index)
    if problem is None:
        problem = f"cannot read it as a delimited table: {cause}" if cause else "a feature is not finite"
    elif number == header_hint:
        problem += f" (if line {number} is a header, pass skip_header={number})"
    return ValueError(f"{name}: {problem}")


@_names_unreadable_files
def load_csv(
    path: PathLike,
    label_column: int = -1,
    delimiter: Optional[str] = ",",
    skip_header: Optional[int] = None,
    comments: str = "#",
):
    """Read a delimited text table with one label column.

    Parsing is done by :func:`numpy.loadtxt` straight into float64, row by row, so a file takes
    about the memory of its array (no pandas needed); ``.gz``/``.bz2`` files are read
    transparently. Quoted fields (``"..."``) are allowed. Every feature must be a finite real
    number: missing values (an empty field, ``NA``, ``N/A``, ``null``, ``none``, ``?``), NaN,
    infinity, complex numbers and text are errors, as are rows of different lengths.

    Parameters
    ----------
    path : str or path-like
        The file.
    label_column : int, default -1
        Column holding the labels (negative counts from the end). All other columns are features
        and must be numeric.
    delimiter : str or None, default ","
        Field separator; ``None`` splits on any whitespace.
    skip_header : int or None, default None
        Number of leading lines to skip (comment lines included). ``None`` detects a header: the
        first line that is not a comment is skipped when none of its fields is a number, empty
        or a missing-value mark (``a,b,label`` is a header; ``NA,2.5,yes`` and ``,,yes`` are
        data rows with missing values, and an error). Pass ``skip_header=1`` for a header with
        an empty or numeric name.
    comments : str, default "#"
        Text after this character is ignored.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
    y : ndarray of shape (n_samples,)
        The labels as written: int64 when they are all integers, float64 when numeric otherwise,
        and a string array for textual class names (e.g. ``"yes"``/``"no"``).

    Raises
    ------
    ValueError
        Its message starts with the file's path, and names the line and column at fault: an
        empty file, a single column, ``label_column`` out of range, a missing value or label,
        a non-numeric, complex or non-finite feature, a row with more or fewer fields.

    Examples
    --------
    >>> import os, tempfile
    >>> from gkfda.datasets import load_csv
    >>> path = os.path.join(tempfile.mkdtemp(), "toy.csv")
    >>> with open(path, "w") as f:
    ...     _ = f.write("a,b,label\\n1.0,2.0,yes\\n3.0,4.5,no\\n")
    >>> X, y = load_csv(path)
    >>> X
    array([[1. , 2. ],
           [3. , 4.5]])
    >>> y
    array(['yes', 'no'], dtype='<U3')
    >>> with open(path, "w") as f:
    ...     _ = f.write("NA,2.0,yes\\n3.0,4.5,no\\n")
    >>> load_csv(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ...toy.csv: line 1, column 1: missing value 'NA'; missing values are not allowed ...
    """
    name = os.fspath(path)
    try:
        with _open_text(path) as handle:
            lines = _data_lines(handle, comments, skip_header or 0)
            first, second = next(lines, None), next(lines, None)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{name}: not UTF-8 text ({exc})") from exc
    if first is None:
        raise ValueError(f"{name}: holds no data rows")
    fields = _fields(first[1], delimiter)
    header_hint = None
    if skip_header is None:
        skip_header, header_hint = 0, first[0]
        if _is_header(fields):
            header_hint = None
            if second is None:
                raise ValueError(f"{name}: holds no data rows (only the header on line {first[0]})")
            skip_header, first = first[0], second
            fields = _fields(first[1], delimiter)
    n_columns = len(fields)
    if n_columns < 2:
        raise ValueError(
            f"{name}: has a single column; expected features and a label column "
            f"(is delimiter={delimiter!r} right?)"
        )
    if not -n_columns <= label_column < n_columns:
        raise ValueError(f"{name}: label_column={label_column} out of range for {n_columns} columns")
    label_index = label_column % n_columns
    labels = []

    def keep_label(field: str) -> float:
        labels.append(field.strip())
        return 0.0

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "input contained no data": raised below
            table = np.loadtxt(name, dtype=np.float64, delimiter=delimiter, skiprows=skip_header,
                               comments=comments, ndmin=2, quotechar='"', encoding="utf-8-sig",
                               converters={label_index: keep_label})
    except ValueError as exc:
        raise _table_error(name, delimiter, skip_header, comments, label_index, header_hint, exc) from exc
    X = np.delete(table, label_index, axis=1)
    del table
    if not np.isfinite(X).all() or any(label.lower() in _MISSING for label in labels):
        raise _table_error(name, delimiter, skip_header, comments, label_index, header_hint, None)
    return np.ascontiguousarray(X), _tidy_labels(np.array(labels))


@_names_unreadable_files
def load_npz(path: PathLike):
    """Read ``X`` and ``y`` from a NumPy ``.npz`` archive (as written by ``np.savez``).

    The archive is opened with ``allow_pickle=False``; other keys are ignored.

    Parameters
    ----------
    path : str or path-like
        The file.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
    y : ndarray of shape (n_samples,)
        The labels exactly as stored (any dtype without pickled objects).

    Raises
    ------
    ValueError
        If the file is not an ``.npz`` archive, lacks ``X`` or ``y``, or their shapes disagree.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from gkfda.datasets import load_npz
    >>> path = os.path.join(tempfile.mkdtemp(), "toy.npz")
    >>> np.savez(path, X=np.eye(3), y=np.array([0, 1, 1]))
    >>> X, y = load_npz(path)
    >>> X.shape, y
    ((3, 3), array([0, 1, 1]))
    """
    name = os.fspath(path)
    try:
        archive = np.load(name, allow_pickle=False)
    except (ValueError, EOFError) as exc:  # NumPy takes any other file for a pickle
        raise ValueError(f"{name}: not an .npz archive") from exc
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ValueError(f"{name}: not an .npz archive (np.load gave a single array)")
    with archive:
        missing = [key for key in ("X", "y") if key not in archive.files]
        if missing:
            raise ValueError(
                f"{name}: lacks key(s) {', '.join(missing)}; an .npz data file needs "
                f"arrays 'X' (n_samples x n_features) and 'y' (n_samples); found: "
                f"{', '.join(archive.files) or 'no arrays'}"
            )
        arrays = {}
        for key in ("X", "y"):
            try:
                arrays[key] = archive[key]
            except ValueError as exc:  # "Object arrays cannot be loaded when allow_pickle=False"
                raise ValueError(f"{name}: {key!r} is an array of Python objects, which is not loaded "
                                 f"(it would need pickle); store numbers (or strings for y): {exc}") from exc
        X, y = arrays["X"], arrays["y"]
    if np.iscomplexobj(X):  # as load_csv: float64 would drop the imaginary parts
        raise ValueError(f"{name}: 'X' holds complex numbers; the features must be real")
    try:
        X = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: 'X' is not numeric: {exc}") from exc
    if X.ndim != 2:
        raise ValueError(f"{name}: 'X' must be 2-D, got shape {X.shape}")
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(
            f"{name}: 'y' must be 1-D with {X.shape[0]} entries, got shape {y.shape}"
        )
    return np.ascontiguousarray(X), y


_COMPRESSION = {".gz": gzip.open, ".bz2": bz2.open}
_SVMLIGHT_SUFFIXES = (".svm", ".svmlight", ".libsvm")
_CSV_SUFFIXES = {".csv": ",", ".tsv": "\t"}
_SNIFF_SUFFIXES = (".txt", ".dat")
_SVMLIGHT_TOKEN = re.compile(r"^(qid:\S+|\d+:\S+)$")


def _open_text(path: PathLike):
    # utf-8-sig: a leading byte-order mark (as some editors and spreadsheets write) is dropped.
    opener = _COMPRESSION.get(Path(path).suffix.lower())
    if opener is not None:
        return opener(os.fspath(path), "rt", encoding="utf-8-sig")
    return open(os.fspath(path), encoding="utf-8-sig")


def _looks_like_svmlight(path: PathLike, max_lines: int = 50) -> bool:
    """True when a data line has ``index:value`` tokens after the label."""
    with _open_text(path) as handle:
        for i, line in enumerate(handle):
            if i >= max_lines:
                break
            tokens = line.split("#", 1)[0].split()
            if len(tokens) > 1:
                return all(_SVMLIGHT_TOKEN.match(t) for t in tokens[1:])
    return False


@_names_unreadable_files
def load_file(path: PathLike, **kwargs):
    """Read a data file, choosing the loader by its extension.

    Rule (case-insensitive; a trailing ``.gz``/``.bz2`` is looked through):

    * ``.npz`` → :func:`load_npz`;
    * ``.csv`` → :func:`load_csv` (comma-separated), ``.tsv`` → :func:`load_csv` with
      ``delimiter="\\t"``;
    * ``.svm``, ``.svmlight``, ``.libsvm`` → :func:`load_svmlight`;
    * ``.txt``, ``.dat`` → sniffed: :func:`load_svmlight` when the data lines hold
      ``index:value`` tokens, otherwise :func:`load_csv` with whitespace separation
      (``delimiter=None``).

    Parameters
    ----------
    path : str or path-like
        The file.
    **kwargs
        Passed on to the chosen loader (e.g. ``label_column=0`` for a table).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
    y : ndarray of shape (n_samples,)
        The labels as given in the file (see the individual loaders).

    Raises
    ------
    ValueError
        For any other extension.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from gkfda.datasets import load_file
    >>> folder = tempfile.mkdtemp()
    >>> np.savetxt(os.path.join(folder, "toy.txt"), [[0.5, 1.0, 1], [2.0, 3.0, -1]])
    >>> X, y = load_file(os.path.join(folder, "toy.txt"))
    >>> X.shape, y
    ((2, 2), array([ 1, -1]))
    """
    suffixes = [s.lower() for s in Path(path).suffixes]
    compressed = bool(suffixes) and suffixes[-1] in _COMPRESSION
    if compressed:
        suffixes = suffixes[:-1]
    suffix = suffixes[-1] if suffixes else ""
    if suffix == ".npz":
        if compressed:
            raise ValueError(
                f"{os.fspath(path)}: a compressed .npz must be decompressed first "
                f"(use np.savez_compressed for compressed archives)"
            )
        return load_npz(path, **kwargs)
    if suffix in _CSV_SUFFIXES:
        kwargs.setdefault("delimiter", _CSV_SUFFIXES[suffix])
        return load_csv(path, **kwargs)
    if suffix in _SVMLIGHT_SUFFIXES:
        return load_svmlight(path, **kwargs)
    if suffix in _SNIFF_SUFFIXES:
        if _looks_like_svmlight(path):
            return load_svmlight(path, **kwargs)
        kwargs.setdefault("delimiter", None)
        return load_csv(path, **kwargs)
    raise ValueError(
        f"{os.fspath(path)}: cannot tell the format from the extension {suffix or '(none)'!r}; "
        f"supported: .npz, .csv, .tsv, .svm, .svmlight, .libsvm, .txt, .dat (optionally .gz/.bz2), "
        f"or call load_npz / load_csv / load_svmlight directly"
    )
