"""The file's layout: the safetensors header and tensors, and the checksum that seals them.

What a reader builds is bounded by the file: the file is read exactly (its 8-byte length,
its header, then the bytes its header gives the tensors, and not a byte more), each tensor
once, into its own array; the JSON is measured before it is parsed (its nesting depth and
the Python objects it would make); what the state builds beyond the tensors is charged to
a :class:`_Budget`.
"""

from __future__ import annotations

import collections
import hashlib
import json
import math
import os
import re
import stat
import struct

import numpy as np

from ._common import (
    CHECKSUM, HEADER_LIMIT, _FILE_DTYPES, _JSON_DEPTH, _Budget, _Invalid, _is_int, _member,
)


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


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _file_kind(mode):
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _read_path(path):
    """``(tensors, metadata, budget)`` of the model file at ``path``.

    Only a regular file is read (a FIFO would block, a device never end), and it is opened
    without blocking, then checked again, in case another file took its name in between."""
    status = os.stat(path)
    if not stat.S_ISREG(status.st_mode):
        raise _Invalid(f"is {_file_kind(status.st_mode)}, not a regular file")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
    descriptor = os.open(path, flags)
    with open(descriptor, "rb", buffering=0) as file:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise _Invalid(f"is {_file_kind(status.st_mode)}, not a regular file")
        return _read_stream(file, status.st_size)


def _exactly(file, buffer):
    """Fill ``buffer`` (a writable byte view) from ``file``; the number of bytes read."""
    done = 0
    while done < len(buffer):
        count = file.readinto(buffer[done:])
        if not count:
            break
        done += count
    return done


def _read_stream(file, size):
    """``(tensors, metadata, budget)`` of a file of ``size`` bytes open at its start: its
    8-byte length, then its header, then exactly the tensors' bytes, each checked before the
    next is read."""
    budget = _Budget(size)
    head = bytearray(8)
    if _exactly(file, memoryview(head)) < 8:
        raise _Invalid(f"not a model file: {size} bytes, shorter than the 8 of the header's length")
    (header_size,) = struct.unpack("<Q", head)
    if header_size > HEADER_LIMIT:
        raise _Invalid(f"not a model file: its header would be {header_size} bytes, more than the limit of 16 MiB")
    if 8 + header_size > size:
        raise _Invalid(f"truncated: the header needs {header_size} bytes but the file has {size - 8} after its length")
    raw = bytearray(header_size)
    if _exactly(file, memoryview(raw)) < header_size:
        raise _Invalid(f"truncated: the header needs {header_size} bytes but the file ended before")
    digest = hashlib.sha256(head)
    digest.update(raw)
    header = _parse_json(raw, "the header", budget)
    del raw
    # What the header keeps once parsed is its table and the metadata's text, measured next:
    # the rest of the header's objects are gone.
    budget.restart_json(2 * header_size)
    if not isinstance(header, dict):
        raise _Invalid("the header: must be a JSON object")
    extra = header.pop("__metadata__", None)
    if not isinstance(extra, dict) or set(extra) != {"gkfda"} or not isinstance(extra["gkfda"], str):
        raise _Invalid('the header: its __metadata__ must hold one string, "gkfda" (not a gkfda model file?)')
    ranges = _check_layout(header)
    expected = 8 + header_size + (ranges[-1][1] if ranges else 0)
    if size > expected:
        raise _Invalid(f"the file is {size} bytes but its header describes {expected}: "
                       f"{size - expected} bytes follow the tensors")
    if size < expected:
        raise _Invalid(f"truncated: its header describes {expected} bytes but the file has {size}")
    entry = header.get(CHECKSUM)
    if entry is None or entry["dtype"] != "U8" or entry["shape"] != [32]:
        raise _Invalid(f"the header: has no {CHECKSUM} tensor of 32 bytes (U8)")
    tensors = {}
    for _, _, name in ranges:  # in the order of their bytes: the file is read once, in order
        entry = header[name]
        tensor = np.empty(entry["shape"], dtype=_FILE_DTYPES[entry["dtype"]])
        view = memoryview(tensor.reshape(-1).view(np.uint8))
        if _exactly(file, view) < len(view):
            raise _Invalid(f"truncated: the file ended inside tensor {name}")
        if name != CHECKSUM:
            digest.update(view)
        tensors[name] = tensor
    if file.read(1):
        raise _Invalid(f"the file grew while it was read: more than the {expected} bytes its header describes")
    if digest.digest() != tensors[CHECKSUM].tobytes():
        raise _Invalid("corrupted: its bytes do not match its SHA-256 checksum")
    metadata = _parse_json(extra["gkfda"], "the metadata", budget)
    _check_unicode(metadata, extra["gkfda"])
    for name, tensor in tensors.items():
        if tensor.dtype.kind == "f" and not np.isfinite(tensor).all():
            raise _Invalid(f"tensor {name}: holds NaN or infinite values")
    return tensors, metadata, budget


def _check_layout(header):
    """The tensors' table: known dtypes, shapes that match their byte ranges, and ranges
    that follow each other without a gap, in order; ``(begin, end, name)`` in that order."""
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
    ranges.sort()
    end = 0
    for begin, stop, name in ranges:
        if begin != end:
            raise _Invalid(f"tensor {name}: starts at byte {begin} of the data, expected {end}")
        end = stop
    return ranges


# -- JSON, measured before it is parsed -----------------------------------------------

# A JSON string once its escaped backslashes and quotes are gone (see _unescaped).
_STRING = re.compile(r'"[^"]*"')
# Every byte but the four brackets, deleted to leave the nesting (bytes.translate: no objects).
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))
_EMPTY_PAIR = re.compile(rb"\[\]|\{\}")
# What the path to a value is made of: keys (once escapes are gone), and brackets.
_PATH_TOKEN = re.compile(r'"([^"]*)"(\s*:)?|[\[\]{}]')
# The keys and brackets read to name the field nested too deeply (about a second's worth).
_PATH_TOKENS = 200_000
# Bytes of Python objects per JSON value (a dict's slot and key, a list's pointer, the value
# itself), above what json.loads makes of any value (measured: at most ~110).
_BYTES_PER_VALUE = 128


def _unescaped(text):
    """``text`` without its escaped backslashes and quotes, so that a string is a quote, no
    quote, a quote: left to right, as JSON reads escapes, a backslash takes the next one."""
    return text.replace("\\\\", "").replace('\\"', "")


def _measure(text, what, budget):
    """Refuse JSON ``text`` nested deeper than ``_JSON_DEPTH`` (naming the field) or whose
    Python objects would exceed ``budget``, without parsing it."""
    plain = _unescaped(text)
    strings = plain.count('"') // 2
    # A string of one character beyond Latin-1 takes 2 or 4 bytes a character.
    width = 1 if text.isascii() and "\\u" not in text else 4
    # The strings first: taking them out below makes an object or two of each.
    budget.charge_json(_BYTES_PER_VALUE // 2 * strings + 2 * width * len(text), what)
    bare = _STRING.sub('""', plain)  # separators and brackets inside strings are not structure
    del plain
    values = sum(map(bare.count, (",", ":", "[", "{"))) + 1
    budget.charge_json(max(_BYTES_PER_VALUE * values - _BYTES_PER_VALUE // 2 * strings, 0), what)
    brackets = bare.encode().translate(None, _NOT_BRACKETS)  # bytes.translate: no object per value
    del bare
    for _ in range(_JSON_DEPTH):
        if not brackets:
            return
        brackets = _EMPTY_PAIR.sub(b"", brackets)
    if brackets:
        _refuse_depth(text, what)


def _refuse_depth(text, what):
    """The ValueError of JSON nested deeper than ``_JSON_DEPTH``, naming the field."""
    stack, key, count = [], None, 0
    for count, match in enumerate(_PATH_TOKEN.finditer(_unescaped(text))):
        if count == _PATH_TOKENS:  # a field too far in to be worth the time to name
            break
        token = match.group(0)
        if match.group(2):
            key = match.group(1)
        elif token in "[{":
            stack.append(key)
            key = None
            if len(stack) > _JSON_DEPTH:
                field = ".".join(name for name in stack if name is not None)
                raise _Invalid(f"{field or what}: nested more than {_JSON_DEPTH} levels deep")
        elif token in "]}":
            if stack:
                stack.pop()
            key = None
    if count == _PATH_TOKENS:
        raise _Invalid(f"{what}: nested more than {_JSON_DEPTH} levels deep")
    # Unbalanced brackets: json.loads says where.


def _parse_json(raw, what, budget):
    try:
        text = raw if isinstance(raw, str) else raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _Invalid(f"{what}: is not UTF-8") from None
    _measure(text, what, budget)
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except _Invalid:
        raise
    except (ValueError, RecursionError) as error:
        raise _Invalid(f"{what}: is not valid JSON ({type(error).__name__}: {str(error)[:200]})") from None


# A UTF-16 surrogate's escape: a string holding one is checked for a lone one.
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def _check_unicode(metadata, text):
    """Refuse a string of the metadata ``text`` (a label, a feature's name) with a lone
    surrogate: it is not Unicode, and the other readers, which hold the text as UTF-8,
    cannot read it."""
    if not _SURROGATE.search(text):
        return
    queue = collections.deque([(metadata, "")])  # breadth first: the predictor's labels before the state's
    while queue:
        node, where = queue.popleft()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            here = f"{where}.{key}" if where else str(key)
            for text in (key, value):
                if isinstance(text, str) and not _is_unicode(text):
                    label = "a label" if ".classes" in here else "a string"
                    raise _Invalid(f"{here}: {label} that is not valid Unicode ({text!r} holds a lone surrogate)")
            if isinstance(value, (dict, list)):
                queue.append((value, here))


def _is_unicode(text):
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _unique_keys(pairs):
    result = {}
    for key, value in pairs:
        if key in result:
            raise _Invalid(f"JSON: the key {key!r} appears twice in an object")
        result[key] = value
    return result


def _no_constant(name):
    raise _Invalid(f"JSON: {name} is not a JSON number")
