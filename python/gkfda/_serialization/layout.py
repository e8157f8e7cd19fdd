"""The file's layout: the safetensors header and tensors, and the checksum that seals them."""

from __future__ import annotations

import hashlib
import json
import math
import struct

import numpy as np
import safetensors.numpy

from ._common import CHECKSUM, HEADER_LIMIT, _FILE_DTYPES, _Invalid, _is_int, _member


def _checksum_range(data, header_size, header):
    """The byte range of the checksum tensor in the file."""
    begin, end = header[CHECKSUM]["data_offsets"]
    return 8 + header_size + begin, 8 + header_size + end


def _sealed(data):
    """``data`` with its checksum tensor holding the SHA-256 of every other byte."""
    (size,) = struct.unpack("<Q", data[:8])
    begin, end = _checksum_range(data, size, json.loads(data[8 : 8 + size]))
    digest = hashlib.sha256(data[:begin] + data[end:]).digest()
    return data[:begin] + digest + data[end:]


# -- the file -------------------------------------------------------------------------


def _read(data):
    """``(tensors, metadata)`` of the bytes of a file, its layout checked first."""
    if len(data) < 8:
        raise _Invalid(f"not a model file: {len(data)} bytes, shorter than the 8 of the header's length")
    (size,) = struct.unpack("<Q", data[:8])
    if size > HEADER_LIMIT:
        raise _Invalid(f"not a model file: its header would be {size} bytes, more than the limit of 16 MiB")
    if 8 + size > len(data):
        raise _Invalid(f"truncated: the header needs {size} bytes but the file has {len(data) - 8} after its length")
    header = _parse_json(data[8 : 8 + size], "the header")
    if not isinstance(header, dict):
        raise _Invalid("the header: must be a JSON object")
    extra = header.pop("__metadata__", None)
    if not isinstance(extra, dict) or set(extra) != {"gkfda"} or not isinstance(extra["gkfda"], str):
        raise _Invalid('the header: its __metadata__ must hold one string, "gkfda" (not a gkfda model file?)')
    _check_layout(header, len(data) - 8 - size)
    entry = header.get(CHECKSUM)
    if entry is None or entry["dtype"] != "U8" or entry["shape"] != [32]:
        raise _Invalid(f"the header: has no {CHECKSUM} tensor of 32 bytes (U8)")
    begin, end = _checksum_range(data, size, header)
    if hashlib.sha256(data[:begin] + data[end:]).digest() != data[begin:end]:
        raise _Invalid("corrupted: its bytes do not match its SHA-256 checksum")
    metadata = _parse_json(extra["gkfda"], "the metadata")
    try:
        tensors = safetensors.numpy.load(data)
    except Exception as error:
        raise _Invalid(f"safetensors cannot read the tensors: {error}") from None
    if set(tensors) != set(header):
        raise _Invalid("safetensors read other tensors than the header lists")
    for name, tensor in tensors.items():
        if tensor.dtype.kind == "f" and not np.isfinite(tensor).all():
            raise _Invalid(f"tensor {name}: holds NaN or infinite values")
    return tensors, metadata


def _check_layout(header, data_size):
    """The tensors' table: known dtypes, shapes that match their byte ranges, and ranges
    that cover the data exactly, in order."""
    ranges = []
    for name, entry in header.items():
        if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
            raise _Invalid(f"tensor {name}: its entry must have dtype, shape and data_offsets")
        dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
        if not _member(dtype, _FILE_DTYPES):
            raise _Invalid(f"tensor {name}: dtype {dtype!r} is not one of {', '.join(_FILE_DTYPES)}")
        if not isinstance(shape, list) or len(shape) > 4 or not all(_is_int(n) and n >= 0 for n in shape):
            raise _Invalid(f"tensor {name}: shape {shape!r} is not a list of at most 4 sizes")
        if not isinstance(offsets, list) or len(offsets) != 2 or not all(_is_int(n) and n >= 0 for n in offsets):
            raise _Invalid(f"tensor {name}: data_offsets {offsets!r} is not a pair of offsets")
        if offsets[1] - offsets[0] != math.prod(shape) * _FILE_DTYPES[dtype].itemsize:
            raise _Invalid(f"tensor {name}: shape {shape} of {dtype} does not fit its {offsets[1] - offsets[0]} bytes")
        ranges.append((offsets[0], offsets[1], name))
    end = 0
    for begin, stop, name in sorted(ranges):
        if begin != end:
            raise _Invalid(f"tensor {name}: starts at byte {begin} of the data, expected {end}")
        end = stop
    if end != data_size:
        raise _Invalid(f"the tensors take {end} bytes but the file holds {data_size} after the header")


def _parse_json(raw, what):
    try:
        text = raw if isinstance(raw, str) else bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise _Invalid(f"{what}: is not UTF-8") from None
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except _Invalid:
        raise
    except (ValueError, RecursionError) as error:
        raise _Invalid(f"{what}: is not valid JSON ({type(error).__name__}: {str(error)[:200]})") from None


def _unique_keys(pairs):
    result = {}
    for key, value in pairs:
        if key in result:
            raise _Invalid(f"JSON: the key {key!r} appears twice in an object")
        result[key] = value
    return result


def _no_constant(name):
    raise _Invalid(f"JSON: {name} is not a JSON number")
