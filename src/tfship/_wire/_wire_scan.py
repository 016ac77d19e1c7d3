"""A serialized ``TensorProto`` or ``PredictResponse`` map entry scanned on the wire, without
parsing it: where its dtype, shape, ``tensor_content`` and packed typed fields lie in the
bytes (:class:`_Scanned`), or that it holds something only the protobuf parser may read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from tfship._wire._tensor_dtypes import TensorDecodeError
from tfship._wire._varints import _varint

# TensorProto field numbers of the typed value fields.
_FIELD_NUMBERS = {
    "float_val": 5,
    "double_val": 6,
    "int_val": 7,
    "string_val": 8,
    "scomplex_val": 9,
    "int64_val": 10,
    "bool_val": 11,
    "dcomplex_val": 12,
    "half_val": 13,
    "uint32_val": 16,
    "uint64_val": 17,
}
_VARINT_FIELDS = frozenset({7, 10, 11, 13, 16, 17})
_CONTENT_FIELD = 4


@dataclass
class _Scanned:
    """Where a serialized TensorProto keeps its parts; ``fallback`` when we cannot view it."""

    dtype: int = 0
    dims: list[int] = field(default_factory=list)
    content: list[tuple[int, int]] = field(default_factory=list)
    packed: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    start: int = 0
    end: int = 0
    fallback: bool = False


def _fields(buf: memoryview, pos: int, end: int) -> Iterable[tuple[int, int, int, int]]:
    """Yield (field number, wire type, value or payload start, payload end) for one message."""
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            yield number, wire, value, pos
        elif wire == 2:
            size, pos = _varint(buf, pos)
            yield number, wire, pos, pos + size
            pos += size
        elif wire == 5:
            yield number, wire, pos, pos + 4
            pos += 4
        elif wire == 1:
            yield number, wire, pos, pos + 8
            pos += 8
        else:
            raise TensorDecodeError(f"unsupported wire type {wire} in a serialized tensor")
    if pos != end:
        raise TensorDecodeError("truncated serialized tensor")


def _scan_dims(buf: memoryview, start: int, end: int) -> list[int]:
    dims = []
    for number, wire, a, b in _fields(buf, start, end):
        if number == 2 and wire == 2:
            size = 0
            for n2, w2, value, _ in _fields(buf, a, b):
                if n2 == 1 and w2 == 0:
                    size = value if value < 1 << 63 else value - (1 << 64)
            dims.append(size)
    return dims


def _scan_tensor(buf: memoryview, start: int, end: int) -> _Scanned:
    info = _Scanned(start=start, end=end)
    for number, wire, a, b in _fields(buf, start, end):
        if number == 1 and wire == 0:
            info.dtype = a
        elif number == 2 and wire == 2:
            info.dims = _scan_dims(buf, a, b)
        elif number == _CONTENT_FIELD and wire == 2:
            info.content.append((a, b))
        elif number in _FIELD_NUMBERS.values() and number != 8 and wire == 2:
            info.packed.setdefault(number, []).append((a, b))
        elif number != 3:  # version_number is harmless; anything else needs the proto path
            info.fallback = True
    return info


def _scan_map_entry(buf: memoryview, start: int, end: int) -> tuple[str, _Scanned]:
    key = ""
    tensor = _Scanned(start=start, end=start)  # an absent value is an empty TensorProto
    for number, wire, a, b in _fields(buf, start, end):
        if number == 1 and wire == 2:
            key = bytes(buf[a:b]).decode("utf-8")
        elif number == 2 and wire == 2:
            tensor = _scan_tensor(buf, a, b)
    return key, tensor
