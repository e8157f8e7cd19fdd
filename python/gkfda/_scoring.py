"""``gkfda predict MODEL INPUT -o OUT``: a file of rows scored in chunks by a
:class:`gkfda.Predictor`, in constant memory, importing NumPy and the core only (and pyarrow
for Parquet, tqdm for the progress bar)."""

from __future__ import annotations

import csv
import math
import os
import sys
import time

import numpy as np

from .predictor import Predictor

#: Rows per chunk: large enough for the core's threads, small enough for constant memory.
CHUNK_ROWS = 65_536
#: The fixed length of the ``.npy`` header written, so that the row count is written last.
_NPY_HEADER_BYTES = 128


class ScoringError(ValueError):
    """A bad input row or header: one line naming the file, line and column."""


def _kind(path: str) -> str:
    lowered = path.lower()
    if lowered.endswith(".npy"):
        return "npy"
    if lowered.endswith((".parquet", ".pq")):
        return "parquet"
    return "csv"


# -- inputs: each yields (first line or row number, float64 rows) -----------------------------

def _bad_field(name, lines, first_line, width):
    """The first bad field of ``lines`` (raw CSV lines from line ``first_line``)."""
    for offset, line in enumerate(lines):
        if not line.strip():
            continue
        number = first_line + offset
        fields = next(csv.reader([line]))
        if len(fields) != width:
            return ScoringError(f"{name}: line {number}: {len(fields)} values, expected {width} "
                                f"(the model's n_features_in_)")
        for column, field in enumerate(fields, 1):
            try:
                value = float(field)
            except ValueError:
                return ScoringError(f"{name}: line {number}, column {column}: {field.strip()!r} is not a number")
            if not math.isfinite(value):
                return ScoringError(f"{name}: line {number}, column {column}: {field.strip()!r} is not finite")
    return None


def _is_header(fields) -> bool:
    for field in fields:
        try:
            float(field)
        except ValueError:
            return True
    return False


def _check_names(name, names, predictor, where):
    width = predictor.n_features_in_
    if len(names) != width:
        raise ScoringError(f"{name}: {where}: {len(names)} columns, expected {width} (the model's n_features_in_)")
    expected = getattr(predictor, "feature_names_in_", None)
    if expected is None:
        return
    for column, (got, want) in enumerate(zip(names, expected.tolist()), 1):
        if got != want:
            raise ScoringError(f"{name}: {where}, column {column}: {got!r} where the model's "
                               f"feature_names_in_ has {want!r}")


def _csv_chunks(stream, name, predictor, chunk_rows):
    width = predictor.n_features_in_
    line_number = 1
    first = stream.readline()
    if not first:
        return
    fields = next(csv.reader([first]), [])
    pending = []
    if _is_header(fields):
        _check_names(name, [f.strip() for f in fields], predictor, "line 1 (the header)")
        line_number = 2
    else:
        pending = [first]
    while True:
        lines = pending + [line for _, line in zip(range(chunk_rows - len(pending)), stream)]
        pending = []
        if not lines:
            return
        try:
            rows = np.loadtxt(lines, delimiter=",", dtype=np.float64, ndmin=2, comments=None)
        except ValueError:
            rows = None
        if rows is not None and rows.size and (rows.shape[1] != width or not np.isfinite(rows).all()):
            rows = None
        if rows is None:
            raise _bad_field(name, lines, line_number, width) or ScoringError(
                f"{name}: lines {line_number} to {line_number + len(lines) - 1} do not parse as CSV numbers")
        yield line_number, rows.reshape(-1, width), sum(map(len, lines))
        line_number += len(lines)


def _npy_chunks(stream, name, predictor, chunk_rows):
    version = np.lib.format.read_magic(stream)
    read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                   (2, 0): np.lib.format.read_array_header_2_0}.get(version)
    if read_header is None:
        raise ScoringError(f"{name}: .npy format version {version} is not read here")
    shape, fortran, dtype = read_header(stream)
    if dtype.kind not in "fiub" or dtype.hasobject or len(shape) not in (1, 2):
        raise ScoringError(f"{name}: a 2-D array of numbers was expected, not {len(shape)}-D {dtype}")
    width = shape[1] if len(shape) == 2 else 1
    if len(shape) == 1:
        shape = (shape[0], 1)
    if width != predictor.n_features_in_:
        raise ScoringError(f"{name}: {width} columns, expected {predictor.n_features_in_} "
                           "(the model's n_features_in_)")
    if fortran:
        raise ScoringError(f"{name}: a Fortran-ordered array; save it in C order (np.ascontiguousarray)")
    n_rows, done = shape[0], 0
    while done < n_rows:
        count = min(chunk_rows, n_rows - done)
        data = stream.read(count * width * dtype.itemsize)
        if len(data) != count * width * dtype.itemsize:
            raise ScoringError(f"{name}: the array ends at row {done + len(data) // (width * dtype.itemsize)} "
                               f"of the {n_rows} its header announces")
        rows = np.frombuffer(data, dtype=dtype).reshape(count, width)
        _check_finite(name, rows, done)
        yield done, rows, count
        done += count


def _parquet_chunks(path, name, predictor, chunk_rows):
    try:
        import pyarrow.parquet as parquet
    except ImportError:
        raise ScoringError(f"{name}: reading Parquet needs pyarrow (pip install pyarrow)") from None
    source = parquet.ParquetFile(path)
    names = source.schema_arrow.names
    _check_names(name, names, predictor, "the columns")
    done = 0
    for batch in source.iter_batches(batch_size=chunk_rows):
        rows = np.column_stack([column.to_numpy(zero_copy_only=False).astype(np.float64)
                                for column in batch.columns])
        _check_finite(name, rows, done)
        yield done, rows, len(rows)
        done += len(rows)


def _check_finite(name, rows, first_row):
    finite = np.isfinite(rows)
    if not finite.all():
        row, column = np.argwhere(~finite)[0]
        raise ScoringError(f"{name}: row {first_row + row}, column {column + 1}: {rows[row, column]} is not finite")


# -- outputs -------------------------------------------------------------------------------------

def _columns(predictor, decision):
    if predictor.task == "transformer":
        return [f"feature_{i}" for i in range(predictor.n_outputs)]
    if predictor.task == "regressor":
        return ["prediction"]
    classes = [str(label) for label in predictor.classes_.tolist()]
    if decision:
        return ["label"] + (["decision"] if predictor.n_outputs == 1 else [f"decision_{c}" for c in classes])
    return ["label"] + [f"proba_{c}" for c in classes]


def _score(predictor, rows, decision):
    """(labels or None, values) of one chunk."""
    if predictor.task == "transformer":
        return None, predictor.transform(rows)
    if predictor.task == "regressor":
        return None, predictor.predict(rows)
    if decision:
        values = predictor.decision_function(rows)
        labels = predictor.classes_[np.argmax(values, axis=1)] if values.ndim == 2 else \
            predictor.classes_[(values > 0).astype(np.intp)]
        return labels, values
    values = predictor.predict_proba(rows)
    return predictor.classes_[np.argmax(values, axis=1)], values


class _CsvWriter:
    def __init__(self, stream, columns):
        self.writer = csv.writer(stream, lineterminator="\n")
        self.writer.writerow(columns)

    def write(self, labels, values):
        values = values.reshape(len(values), -1).tolist()
        if labels is None:
            self.writer.writerows(values)
        else:
            self.writer.writerows([label, *row] for label, row in zip(labels.tolist(), values))

    def close(self):
        pass


class _NpyWriter:
    """A float64 ``.npy`` written chunk by chunk; the row count goes into its header last."""

    def __init__(self, stream, width):
        self.stream, self.width, self.rows = stream, width, 0
        self._header()

    def _header(self):
        shape = (self.rows,) if self.width is None else (self.rows, self.width)
        text = f"{{'descr': '<f8', 'fortran_order': False, 'shape': {shape!r}, }}"
        text = text.ljust(_NPY_HEADER_BYTES - 10 - 1) + "\n"
        self.stream.write(b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode("latin1"))

    def write(self, labels, values):
        self.stream.write(np.ascontiguousarray(values, dtype="<f8").tobytes())
        self.rows += len(values)

    def close(self):
        self.stream.seek(0)
        self._header()


def _width(predictor, decision):
    if predictor.task == "transformer":
        return predictor.n_outputs
    if predictor.task == "regressor":
        return None
    if decision:
        return None if predictor.n_outputs == 1 else predictor.n_outputs
    return len(predictor.classes_)


# -- the command -------------------------------------------------------------------------------

def run(model, source, output, *, decision=False, chunk_rows=CHUNK_ROWS, progress=True, stdin=None, stdout=None,
        stderr=None):
    """Scores the rows of ``source`` with the model file ``model`` into ``output``; returns the
    rows scored. ``-`` is standard input (CSV) or output (CSV)."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    predictor = Predictor.load(model)
    if decision and predictor.task != "classifier":
        raise ScoringError(f"--decision: {model} is a {predictor.task}, not a classifier")
    start = time.perf_counter()
    kind = "csv" if source == "-" else _kind(source)
    out_kind = "csv" if output == "-" else _kind(output)
    if out_kind == "parquet":
        raise ScoringError(f"{output}: output is written as CSV or .npy, not Parquet")
    name = "<stdin>" if source == "-" else source
    with _open_input(source, kind, stdin) as stream, _open_output(output, out_kind, stdout) as sink:
        if kind == "csv":
            chunks, total, unit = _csv_chunks(stream, name, predictor, chunk_rows), _size(source), "B"
        elif kind == "npy":
            chunks, total, unit = _npy_chunks(stream, name, predictor, chunk_rows), None, "rows"
        else:
            chunks, total, unit = _parquet_chunks(source, name, predictor, chunk_rows), None, "rows"
        writer = (_CsvWriter(sink, _columns(predictor, decision)) if out_kind == "csv"
                  else _NpyWriter(sink, _width(predictor, decision)))
        bar = _bar(progress, total, unit, stderr)
        n_rows = 0
        try:
            for _, rows, amount in chunks:
                labels, values = _score(predictor, rows, decision)
                writer.write(labels, values)
                n_rows += len(rows)
                if bar is not None:
                    bar.update(amount)
            writer.close()
        finally:
            if bar is not None:
                bar.close()
    seconds = time.perf_counter() - start
    print(f"gkfda: scored {n_rows:,} rows in {seconds:.2f} s ({n_rows / max(seconds, 1e-9):,.0f} rows/s)",
          file=stderr)
    return n_rows


def _size(source):
    if source == "-":
        return None
    try:
        return os.path.getsize(source)
    except OSError:
        return None


def _bar(progress, total, unit, stderr):
    if not progress:
        return None
    from tqdm import tqdm

    # Shown only once the input has taken a second: short inputs print no bar.
    return tqdm(total=total, unit=unit, unit_scale=True, file=stderr, delay=1.0, desc="scoring")


class _open_input:
    def __init__(self, source, kind, stdin):
        self.source, self.kind, self.stdin, self.stream = source, kind, stdin, None

    def __enter__(self):
        if self.kind == "parquet":
            return None
        if self.source == "-":
            return self.stdin.buffer if self.kind == "npy" else self.stdin
        if self.kind == "npy":
            self.stream = open(self.source, "rb")
        else:
            self.stream = open(self.source, newline="", encoding="utf-8")
        return self.stream

    def __exit__(self, *exc):
        if self.stream is not None:
            self.stream.close()


class _open_output:
    def __init__(self, output, kind, stdout):
        self.output, self.kind, self.stdout, self.stream = output, kind, stdout, None

    def __enter__(self):
        if self.output == "-":
            return self.stdout
        self.stream = open(self.output, "wb") if self.kind == "npy" else open(self.output, "w", newline="",
                                                                               encoding="utf-8")
        return self.stream

    def __exit__(self, *exc):
        if self.stream is not None:
            self.stream.close()


__all__ = ["run", "ScoringError", "CHUNK_ROWS"]
