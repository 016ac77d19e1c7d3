"""Tensors and ``PredictResponse`` messages written straight to the wire, and answers read back
from it.

:func:`encode_tensor_field` writes an output byte for byte as ``Tensor::AsProtoField`` and
protobuf's serializer write it, the packed field's bytes made in one numpy step;
:func:`encode_predict_response` joins outputs into a ``PredictResponse`` (or writes each as
``tensor_content``); :func:`decode_predict_response` reads one back from its bytes without a
per-value Python copy, parsing the message itself only when asked.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tfship._wire._formats import DATATYPES, DT_STRING, dtype_name
from tfship._wire._messages import protos
from tfship._wire._tensor_decode import _decode_scanned
from tfship._wire._tensor_dtypes import TensorDecodeError, enum_of_array, tensor_numpy_dtype
from tfship._wire._tensor_encode import _as_bytes_list
from tfship._wire._varints import _encode_varints, _key, _length_delimited, _varint_bytes
from tfship._wire._wire_scan import _CONTENT_FIELD, _FIELD_NUMBERS, _fields, _scan_map_entry

__all__ = [
    "DecodedPredict",
    "decode_predict_response",
    "encode_predict_response",
    "encode_tensor_field",
]


# Heads that repeat from answer to answer, written once: an output's alias as its map key,
# a tensor's dtype and shape, a packed field's tag. Bounded: shapes and aliases of a served
# signature are few.
_ALIAS_KEYS: dict[str, bytes] = {}
_HEADS: dict[tuple[int, tuple[int, ...]], bytes] = {}
_CACHED = 4096


def _tensor_head(enum: int, shape: tuple[int, ...]) -> bytes:
    """``dtype`` and ``tensor_shape`` of a serialized ``TensorProto``."""
    head = _HEADS.get((enum, shape))
    if head is None:
        head = _key(1, 0) + _varint_bytes(enum) + _shape_bytes(shape)
        if len(_HEADS) < _CACHED:
            _HEADS[(enum, shape)] = head
    return head


def _alias_key(alias: str) -> bytes:
    """A ``PredictResponse.outputs`` map entry's key field."""
    key = _ALIAS_KEYS.get(alias)
    if key is None:
        key = _length_delimited(1, alias.encode("utf-8"))
        if len(_ALIAS_KEYS) < _CACHED:
            _ALIAS_KEYS[alias] = key
    return key


def _shape_bytes(shape: Sequence[int]) -> bytes:
    # TensorShapeProto.dim (2) of Dim.size (1); a size of 0 is proto3's default: not written.
    dims = b"".join(_length_delimited(2, b"\x08" + _varint_bytes(size) if size else b"") for size in shape)
    return _length_delimited(2, dims)


def _packed_payload(flat: np.ndarray[Any, Any], enum: int) -> Any:
    """The packed field's payload: a buffer of the array itself when the bytes already are."""
    entry = DATATYPES[enum]
    if entry.field in _FIXED_WIRE:
        wire = np.ascontiguousarray(flat.astype(_FIXED_WIRE[entry.field], copy=False))
        return wire.data.cast("B")  # no copy: joined once into the message
    if enum == 10:
        return flat.astype(np.uint8).tobytes()  # varints 0 and 1 are one byte each
    if entry.field == "half_val":
        bits = flat.view(np.uint16) if flat.dtype.itemsize == 2 else flat.astype(np.float16).view(np.uint16)
        return _encode_varints(bits.astype(np.uint64))
    if entry.field in ("int_val", "int64_val"):
        # negative int32 and int64 values travel as 10-byte two's complement varints
        return _encode_varints(flat.astype(np.int64).view(np.uint64))
    return _encode_varints(flat.astype(np.uint64))


_FIXED_WIRE = {"float_val": "<f4", "double_val": "<f8", "scomplex_val": "<c8", "dcomplex_val": "<c16"}
_PACKED_TAGS = {name: _key(number, 2) for name, number in _FIELD_NUMBERS.items()}
# PredictResponse.outputs (1) entries, and an entry's value (2)
_MAP_ENTRY, _MAP_VALUE = _key(1, 2), _key(2, 2)


def _tensor_parts(array: Any, enum: int | None, as_content: bool = False) -> list[Any]:
    """A serialized ``TensorProto`` as buffers to join: small heads and the values' bytes."""
    array = np.asarray(array)
    if enum is None:
        enum = enum_of_array(array)
    entry = DATATYPES.get(enum)
    if entry is None:
        raise TypeError(f"cannot encode a tensor of {dtype_name(enum)}")
    parts: list[Any] = [_tensor_head(enum, array.shape)]
    flat = array.reshape(-1)
    if flat.size == 0:
        return parts
    if as_content:
        content = _content_payload(flat, enum)
        return [*parts, _key(_CONTENT_FIELD, 2) + _varint_bytes(len(content)), content]
    if enum == DT_STRING:
        tag = _key(8, 2)
        parts += [tag + _varint_bytes(len(value)) + value for value in _as_bytes_list(flat)]
        return parts
    payload = _packed_payload(flat, enum)
    parts += [_PACKED_TAGS[entry.field] + _varint_bytes(len(payload)), payload]
    return parts


def _content_payload(flat: np.ndarray[Any, Any], enum: int) -> Any:
    """``Tensor::AsProtoTensorContent``'s bytes: the values in memory order, little-endian;
    strings as TensorFlow's string list (every length as a varint, then every string)."""
    if enum == DT_STRING:
        values = _as_bytes_list(flat)
        lengths = _encode_varints(np.fromiter(map(len, values), dtype=np.uint64, count=len(values)))
        return lengths + b"".join(values)
    dtype = tensor_numpy_dtype(enum)
    wire = np.ascontiguousarray(flat.astype(dtype.newbyteorder("<"), copy=False))
    return wire.data.cast("B")


def _size(parts: list[Any]) -> int:
    return sum(map(len, parts))


def encode_tensor_field(array: Any, enum: int | None = None) -> bytes:
    """A serialized ``TensorProto`` exactly as ``Tensor::AsProtoField`` + protobuf write it.

    ``dtype``, the full ``tensor_shape`` (present and empty for a scalar) and the typed field
    (``float_val``, ``int_val``, ... packed; ``string_val`` one entry per value), never
    ``tensor_content``. Numeric values become the packed field's bytes in one numpy step.

    Args:
        array: the tensor's values.
        enum: the ``DataType`` number to write; taken from the array's dtype when None.

    Raises:
        TypeError: the dtype has no TensorFlow ``DataType`` or no typed field.

    Example:
        >>> encode_tensor_field(np.float32(2.5)).hex()
        '080112002a0400002040'
    """
    return b"".join(_tensor_parts(array, enum))


def encode_predict_response(
    outputs: Iterable[tuple[str, Any, int | None]], model_spec: bytes, *, as_content: bool = False
) -> bytes:
    """A serialized ``PredictResponse``: each output (alias, values, DataType or None) as
    :func:`encode_tensor_field` writes it, and the serialized ``ModelSpec``.

    With ``as_content``, each output's values are its ``tensor_content`` bytes instead, as TF
    Serving 2.19+ answers with ``--enable_serialization_as_tensor_content``. The values'
    bytes are copied once, straight into the message.

    Example:
        >>> data = encode_predict_response([("y", np.float32(1), None)], b"")
        >>> decode_predict_response(data).outputs["y"].tolist()
        1.0
    """
    parts: list[Any] = []
    for alias, values, enum in outputs:
        key = _alias_key(alias)
        tensor = _tensor_parts(values, enum, as_content)
        size = _size(tensor)
        value_head = _MAP_VALUE + _varint_bytes(size)
        entry_size = len(key) + len(value_head) + size
        parts += [_MAP_ENTRY + _varint_bytes(entry_size), key, value_head, *tensor]
    parts.append(_length_delimited(2, model_spec))
    return b"".join(parts)


@dataclass
class DecodedPredict:
    """A ``PredictResponse`` read from its serialized bytes: outputs decoded, proto parsed lazily."""

    data: bytes
    outputs: dict[str, np.ndarray[Any, Any]]
    model_spec: Any
    _raw: Any = None

    @property
    def raw(self) -> Any:
        """The ``PredictResponse`` message, parsed on first access."""
        if self._raw is None:
            self._raw = protos().predict_pb2.PredictResponse.FromString(self.data)
        return self._raw


def decode_predict_response(data: bytes) -> DecodedPredict:
    """Decode a serialized ``PredictResponse`` without a per-value Python copy for packed floats.

    Example:
        >>> pb = protos()
        >>> resp = pb.predict_pb2.PredictResponse()
        >>> t = resp.outputs["y"]; t.dtype = 1; _ = t.tensor_shape.dim.add(size=2)
        >>> t.float_val.extend([0.5, 1.5])
        >>> decode_predict_response(resp.SerializeToString()).outputs["y"].tolist()
        [0.5, 1.5]
    """
    buf = memoryview(data)
    outputs: dict[str, np.ndarray[Any, Any]] = {}
    spec_bytes = b""
    try:
        for number, wire, a, b in _fields(buf, 0, len(buf)):
            if number == 1 and wire == 2:
                key, tensor = _scan_map_entry(buf, a, b)
                outputs[key] = _decode_scanned(buf, tensor)
            elif number == 2 and wire == 2:
                spec_bytes = bytes(buf[a:b])
    except IndexError:
        raise TensorDecodeError("truncated PredictResponse") from None
    spec = protos().model_pb2.ModelSpec.FromString(spec_bytes)
    return DecodedPredict(data=bytes(data), outputs=outputs, model_spec=spec)
