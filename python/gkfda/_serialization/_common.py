"""What every part of the model file's code shares: the format's constants, its fault, the
parameters as JSON and the checks of plain JSON values."""

from __future__ import annotations

import math

import numpy as np

from .. import _core

# The format's constants, as the Rust reader holds them: one source for both readers.
_FORMAT = _core.model_format()
FORMAT = _FORMAT["format"]
FORMAT_VERSION = _FORMAT["format_version"]
#: The largest header a reader accepts (the metadata and the tensors' table).
HEADER_LIMIT = _FORMAT["max_header_bytes"]

_FILE_DTYPES = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "I64": np.dtype("<i8"), "BOOL": np.dtype("bool"),
    "U8": np.dtype("u1"),
}
#: The tensor that holds the SHA-256 of the rest of the file (every byte but its own 32): a
#: byte flipped anywhere, header or data, is then an error rather than another valid model.
CHECKSUM = _FORMAT["checksum"]
_DTYPE_NAMES = {np.dtype(dtype): name for name, dtype in _FILE_DTYPES.items()}
# Integer arrays of other widths are written as I64 and cast back.
_CAST_DTYPES = ("int8", "int16", "int32", "uint8", "uint16", "uint32")
_SCALARS = {"float64": np.float64, "float32": np.float32, "int64": np.int64, "int32": np.int32, "bool": np.bool_}
_KERNELS = _FORMAT["kernels"]
_LARGEST_DEGREE = _FORMAT["max_degree"]
# The largest n_features, n_bases and n_outputs: every such count is exact in a float64.
_LARGEST_COUNT = _FORMAT["max_count"]
_METADATA_KEYS = _FORMAT["metadata_keys"]
_PREDICTOR_KEYS = _FORMAT["predictor_keys"]
# The predictor's kinds of class labels, by NumPy dtype kind.
_KINDS = {"i": "int", "u": "int", "f": "float", "b": "bool", "U": "str", "O": "str"}
# Deeper JSON than any state gkfda writes: a bound on the decoder's recursion.
_LARGEST_DEPTH = 16
# The deepest metadata (or header) a reader parses: twice what gkfda writes (a search's
# refitted model's state is the deepest, about 10), checked before json.loads recurses.
_JSON_DEPTH = 32
#: What loading may build beyond one copy of the file's tensors: the Python objects of the
#: JSON, and the copies and string arrays the state makes, each this many bytes plus the
#: file's size. With the tensors and the checks' temporaries (each at most a tensor's size),
#: loading a file of ``n`` bytes stays within ``4 n + 64 MiB``.
JSON_ALLOWANCE = 32 * 2**20
COPY_ALLOWANCE = 16 * 2**20
# What scikit-learn's set_output leaves on a transformer; prediction (transform) reads it.
# Kept where the estimator has them; absent from files written before they existed.
_OPTIONAL = ("feature_names_in_", "_sklearn_output_config", "solver_")


class _Invalid(Exception):
    """A fault in the file; :func:`load` reports it as a ValueError after the path."""


class _Budget:
    """What loading a file of ``size`` bytes may build beside its tensors, charged before
    it is built."""

    def __init__(self, size):
        self.size = size
        self.json = JSON_ALLOWANCE + size
        self.copies = COPY_ALLOWANCE + size

    def charge_json(self, nbytes, what):
        self.json -= nbytes
        if self.json < 0:
            raise _Invalid(f"{what}: its JSON would make about {_mib(nbytes)} of Python objects, more than a "
                           f"file of {self.size} bytes may (32 MiB and the file's size)")

    def restart_json(self, kept):
        """The JSON allowance again, but for ``kept`` bytes of objects still alive."""
        self.json = JSON_ALLOWANCE + self.size - kept

    def charge_copies(self, nbytes, where):
        self.copies -= nbytes
        if self.copies < 0:
            raise _Invalid(f"{where}: would take {_mib(nbytes)} beyond the tensors, more than a file of "
                           f"{self.size} bytes may build (16 MiB and the file's size, for all its copies and "
                           "string arrays)")


def _mib(nbytes):
    return f"{nbytes / 2**20:.1f} MiB"


def _plain(value):
    """A JSON value of finite numbers."""
    if value is None or isinstance(value, (bool, str, int)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_plain(item) for item in value)
    if isinstance(value, dict):  # kernel_params of a named kernel: its gamma, degree or coef0
        return all(isinstance(key, str) and _plain(item) for key, item in value.items())
    return False


def _params(estimator):
    """``get_params(deep=False)`` as JSON values."""
    params = {}
    for name, value in estimator.get_params(deep=False).items():
        if name == "dtype":
            value = np.dtype(value).name
        elif isinstance(value, np.random.RandomState) or name in ("cv", "scoring") and not _plain(value):
            value = None  # state of a generator, or code: not data the file can hold
        elif isinstance(value, (np.ndarray, list, tuple)):
            value = np.asarray(value).tolist()
        elif isinstance(value, np.generic):
            value = value.item()
        if not _plain(value):
            raise ValueError(f"{name}: {value!r} cannot be written to a model file (not a JSON value)")
        params[name] = value
    return params


def _member(value, options):
    """``value in options`` for a JSON value, which may be unhashable."""
    return isinstance(value, str) and value in options


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
