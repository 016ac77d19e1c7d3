"""``TensorProto`` to numpy with TensorFlow's ``Tensor::FromProto`` rules, fast and exact.

``tensor_content`` wins when present; typed ``*_val`` fields shorter than the shape repeat
their last value (and an empty field means zeros); half and bfloat16 travel as 16-bit patterns
in ``half_val``; complex numbers are (real, imag) pairs. What FromProto refuses is refused.

TF Serving writes its outputs as typed fields (``float_val``), never ``tensor_content``; reading a
million floats out of a protobuf repeated field costs ~30 ms. Packed fields are plain arrays on
the wire (little-endian fixed-width values, or base-128 varints), so a serialized tensor is
scanned (:mod:`tfship._wire._wire_scan`) and each payload read in one numpy step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tfship._wire._formats import DATATYPES, DT_STRING, dtype_name
from tfship._wire._messages import protos
from tfship._wire._tensor_dtypes import TensorDecodeError, tensor_numpy_dtype
from tfship._wire._varints import _decode_varints, _varint
from tfship._wire._wire_scan import _FIELD_NUMBERS, _VARINT_FIELDS, _scan_tensor, _Scanned

__all__ = [
    "decode_tensor",
]


# TensorShape::IsValid: at most 254 dimensions, none negative, a product that fits an int64.
_MAX_DIMS = 254
_INT64_MAX = 2**63 - 1
# Padding a short typed field can turn a few bytes into a huge array; nothing a 2 GiB message
# could carry is larger than this, so a shape asking for more is refused before allocating.
_MAX_DECODED_BYTES = 2**31


def decode_tensor(proto: Any) -> np.ndarray[Any, Any]:
    """Decode a ``TensorProto`` (message or serialized bytes) with TensorFlow's FromProto rules.

    A non-empty ``tensor_content`` wins; typed fields shorter than the shape repeat their last
    value, longer ones are cut to the shape, an empty one means zeros. What FromProto refuses
    is refused here too: no or an unknown dtype, a negative dimension, more than 254
    dimensions or an element count past int64, a ``tensor_content`` whose size does not fit
    the shape. Packed numeric fields are read straight from their bytes, never value by value.
    Strings come back as an object array of ``bytes``, like ``tf.make_ndarray``.

    Raises:
        TensorDecodeError: TensorFlow would refuse the proto, or the shape needs more than
            2 GiB of memory.

    Example:
        >>> from tfship._wire import encode_tensor
        >>> decode_tensor(encode_tensor([[1, 2], [3, 4]])).tolist()
        [[1, 2], [3, 4]]
    """
    if isinstance(proto, (bytes, bytearray, memoryview)):
        view = memoryview(proto)
        return _decode_scanned(view, _scan_tensor(view, 0, len(view)))
    enum = int(proto.dtype)
    entry = DATATYPES.get(enum)
    if entry is not None and enum != DT_STRING and not proto.tensor_content:
        # Re-serializing (C speed) and reading the packed bytes beats iterating a long
        # repeated field value by value.
        if len(getattr(proto, entry.field)) > 64:
            return decode_tensor(proto.SerializeToString())
    shape = _valid_shape([int(d.size) for d in proto.tensor_shape.dim], enum)
    return _from_fields(enum, shape, proto)


def _valid_shape(dims: Sequence[int], enum: int) -> tuple[int, ...]:
    dtype = tensor_numpy_dtype(enum)  # refuses DT_INVALID and types that carry no values
    if len(dims) > _MAX_DIMS:
        raise TensorDecodeError(f"tensor shape has {len(dims)} dimensions; at most {_MAX_DIMS}")
    if any(d < 0 for d in dims):
        raise TensorDecodeError(f"tensor shape {list(dims)} has a negative dimension")
    count = _count(dims)
    if count > _INT64_MAX:
        raise TensorDecodeError(f"tensor shape {list(dims)} has too many elements")
    itemsize = 8 if dtype.kind == "O" else dtype.itemsize
    if count * itemsize > _MAX_DECODED_BYTES:
        raise TensorDecodeError(f"tensor shape {list(dims)} of {dtype_name(enum)} needs more than 2 GiB")
    return tuple(dims)


def _from_fields(enum: int, shape: tuple[int, ...], proto: Any) -> np.ndarray[Any, Any]:
    dtype = tensor_numpy_dtype(enum)
    count = _count(shape)
    if proto.tensor_content:
        if enum == DT_STRING:
            return _strings_from_content(memoryview(proto.tensor_content), count).reshape(shape)
        return _from_content(memoryview(proto.tensor_content), dtype, shape)
    values = getattr(proto, DATATYPES[enum].field)
    if enum == DT_STRING:
        flat = np.empty(len(values), dtype=object)
        flat[:] = list(values)
    else:
        flat = np.array(values, dtype=DATATYPES[enum].field_numpy or dtype)
        flat = _reinterpret(flat, enum, dtype)
    return _fill(flat, count, dtype).reshape(shape)


def _reinterpret(flat: np.ndarray[Any, Any], enum: int, dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
    if enum in (14, 19):  # 16-bit float bit patterns
        return flat.astype(np.uint16).view(dtype)
    if enum in (8, 18):  # (real, imag) pairs; a dangling real is ignored as TF does
        return flat[: len(flat) // 2 * 2].view(dtype)
    return flat


def _fill(flat: np.ndarray[Any, Any], count: int, dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
    """TF's FromProto: no values mean default values; fewer values repeat the last one."""
    if len(flat) >= count:
        return flat[:count]
    if len(flat) == 0:
        if dtype.kind == "O":
            out = np.empty(count, dtype=object)
            out[:] = b""
            return out
        return np.zeros(count, dtype=dtype)
    out = np.empty(count, dtype=flat.dtype)
    out[: len(flat)] = flat
    out[len(flat) :] = flat[-1]
    return out


def _from_content(content: memoryview, dtype: np.dtype[Any], shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    count = _count(shape)
    if count == 0:  # FromProto reads no content for an empty shape
        return np.zeros(shape, dtype=dtype)
    if len(content) != count * dtype.itemsize:
        raise TensorDecodeError(
            f"tensor_content holds {len(content)} bytes; shape {list(shape)} of {dtype} "
            f"needs {count * dtype.itemsize}"
        )
    # One copy: the result owns aligned, writable memory independent of the message buffer.
    return np.frombuffer(content, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)


def _strings_from_content(content: memoryview, count: int) -> np.ndarray[Any, Any]:
    """TensorFlow's string list in ``tensor_content`` (``DecodeStringList``): ``count``
    varint lengths, then the strings one after another, nothing left over."""
    lengths, pos = [], 0
    try:
        for _ in range(count):  # each length takes a byte at least: bounded by the content
            length, pos = _varint(content, pos)
            lengths.append(length)
    except IndexError:
        lengths = []
    out = np.empty(count, dtype=object)
    for index, length in enumerate(lengths):
        out[index] = bytes(content[pos : pos + length])
        pos += length
    if len(lengths) != count or pos != len(content):
        raise TensorDecodeError(f"tensor_content of {len(content)} bytes is not a list of {count} strings")
    return out


def _count(shape: Sequence[int]) -> int:
    count = 1
    for size in shape:
        count *= size
    return count


def _decode_scanned(buf: memoryview, info: _Scanned) -> np.ndarray[Any, Any]:
    enum = info.dtype
    shape = _valid_shape(info.dims, enum)
    if info.fallback or enum == DT_STRING:
        tensor = protos().tensor_pb2.TensorProto.FromString(bytes(buf[info.start : info.end]))
        return _from_fields(enum, shape, tensor)
    dtype = tensor_numpy_dtype(enum)
    if info.content:
        return _from_content(_join(buf, info.content), dtype, shape)
    entry = DATATYPES[enum]
    number = _FIELD_NUMBERS[entry.field]
    raw = _join(buf, info.packed.get(number, []))
    if number in _VARINT_FIELDS:
        flat = _from_varints(_decode_varints(raw), enum, dtype)
    else:
        field_dtype = np.dtype(entry.field_numpy or dtype.name).newbyteorder("<")
        usable = len(raw) // field_dtype.itemsize * field_dtype.itemsize
        flat = np.frombuffer(raw[:usable], dtype=field_dtype).astype(field_dtype.newbyteorder("="))
        flat = _reinterpret(flat, enum, dtype)
    return _fill(flat, _count(shape), dtype).reshape(shape)


def _from_varints(values: np.ndarray[Any, Any], enum: int, dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
    """Typed values from raw varints, cut to the field's width as protobuf and TF do."""
    if enum == 10:  # bool
        flags: np.ndarray[Any, Any] = values != 0
        return flags
    if enum in (14, 19):  # half/bfloat16 bit patterns in an int32 field
        return values.astype(np.uint16).view(dtype)
    if DATATYPES[enum].field == "int_val":  # int32 field, then C++'s cast to the tensor type
        return values.view(np.int64).astype(np.int32).astype(dtype)
    if enum == 9:
        return values.view(np.int64)
    return values.astype(dtype)


def _join(buf: memoryview, ranges: list[tuple[int, int]]) -> memoryview:
    if not ranges:
        return memoryview(b"")
    if len(ranges) == 1:
        a, b = ranges[0]
        return buf[a:b]
    return memoryview(b"".join(bytes(buf[a:b]) for a, b in ranges))
