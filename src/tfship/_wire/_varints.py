"""Protobuf's base-128 varints: a whole array of them written or read in numpy steps (no
per-value loop), one read from a buffer, and the field keys and length-delimited fields
built from them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tfship._wire._tensor_dtypes import TensorDecodeError


def _encode_varints(values: np.ndarray[Any, Any]) -> bytes:
    """Protobuf base-128 varints of unsigned 64-bit values, all at once (no per-value loop)."""
    values = values.reshape(-1)
    if values.size == 0:
        return b""
    if int(values.max()) < 0x80:
        return values.astype(np.uint8).tobytes()
    lengths = np.ones(values.shape, dtype=np.uint8)
    for step in range(1, 10):
        lengths += values >= np.uint64(1 << (7 * step))
    width = int(lengths.max())
    # One row of `width` digit bytes per value; the row's first `length` bytes are its varint.
    rows = np.empty((values.size, width), dtype=np.uint8)
    for step in range(width):
        rows[:, step] = (values >> np.uint64(7 * step)).astype(np.uint8) | 0x80
    rows[np.arange(values.size), lengths.astype(np.intp) - 1] &= 0x7F
    return rows[np.arange(width, dtype=np.uint8) < lengths[:, None]].tobytes()


def _decode_varints(raw: memoryview) -> np.ndarray[Any, Any]:
    """The unsigned 64-bit values of a packed varint payload, all at once."""
    data = np.frombuffer(raw, dtype=np.uint8)
    if data.size == 0:
        return np.zeros(0, dtype=np.uint64)
    last = data < 0x80
    if last.all():
        return data.astype(np.uint64)
    ends = np.flatnonzero(last)
    if ends.size == 0 or ends[-1] != data.size - 1:
        raise TensorDecodeError("truncated varint in a packed tensor field")
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    lengths = ends - starts + 1
    width = int(lengths.max())
    if width > 10:
        raise TensorDecodeError("malformed varint in a packed tensor field")
    # Column k holds every value's k-th digit (zero past its length): one pass per digit.
    values = (data[starts] & 0x7F).astype(np.uint64)
    for step in range(1, width):
        longer = lengths > step
        digits = np.zeros(values.shape, dtype=np.uint64)
        digits[longer] = data[starts[longer] + step] & 0x7F
        values |= digits << np.uint64(7 * step)
    return values


def _varint(buf: memoryview, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise TensorDecodeError("malformed varint in a serialized tensor")


def _key(number: int, wire: int) -> bytes:
    return _varint_bytes(number << 3 | wire)


_SMALL_VARINTS = [bytes([value]) for value in range(0x80)]


def _varint_bytes(value: int) -> bytes:
    if 0 <= value < 0x80:
        return _SMALL_VARINTS[value]
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _length_delimited(number: int, payload: bytes) -> bytes:
    return _key(number, 2) + _varint_bytes(len(payload)) + payload
