"""Tensor codec: numpy and Python values to ``TensorProto`` and back, fast and exact.

Requests carry numeric tensors in ``tensor_content`` (one memory copy) and strings in
``string_val``. Responses are decoded with TensorFlow's ``Tensor::FromProto`` rules:
``tensor_content`` wins when present; typed ``*_val`` fields shorter than the shape repeat their
last value (and an empty field means zeros); half and bfloat16 travel as 16-bit patterns in
``half_val``; complex numbers are (real, imag) pairs.

TF Serving writes its outputs as typed fields (``float_val``), never ``tensor_content``; reading a
million floats out of a protobuf repeated field costs ~30 ms. Packed fixed-width fields are plain
little-endian arrays on the wire, so :func:`decode_predict_response` scans the serialized
response and hands those byte ranges straight to ``np.frombuffer``.

The protobuf classes come from ``tensorflow_serving``/``tensorflow``, whose import loads
TensorFlow; they are imported on first use through :func:`protos`.
"""

from __future__ import annotations

import array
import base64
import functools
import itertools
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

from tfship.serve_client._errors import MalformedResponseError

__all__ = [
    "DecodedPredict",
    "decode_predict_response",
    "decode_tensor",
    "dtype_name",
    "encode_tensor",
    "numpy_dtype",
    "protos",
]


@functools.lru_cache(maxsize=1)
def protos() -> Any:
    """Return a namespace of the TF / TF Serving protobuf modules (imports TensorFlow once).

    Example:
        >>> pb = protos()
        >>> pb.tensor_pb2.TensorProto().dtype
        0
    """
    from tfship._tf import tf

    tf()  # quiets TensorFlow's start-up logs before its protos import the package
    from tensorflow.core.example import example_pb2
    from tensorflow.core.framework import tensor_pb2, tensor_shape_pb2, types_pb2
    from tensorflow_serving.apis import (
        classification_pb2,
        get_model_metadata_pb2,
        get_model_status_pb2,
        inference_pb2,
        input_pb2,
        model_management_pb2,
        model_pb2,
        predict_pb2,
        regression_pb2,
    )
    from tensorflow_serving.config import model_server_config_pb2

    return SimpleNamespace(
        example_pb2=example_pb2,
        tensor_pb2=tensor_pb2,
        tensor_shape_pb2=tensor_shape_pb2,
        types_pb2=types_pb2,
        classification_pb2=classification_pb2,
        get_model_metadata_pb2=get_model_metadata_pb2,
        get_model_status_pb2=get_model_status_pb2,
        inference_pb2=inference_pb2,
        input_pb2=input_pb2,
        model_management_pb2=model_management_pb2,
        model_pb2=model_pb2,
        predict_pb2=predict_pb2,
        regression_pb2=regression_pb2,
        model_server_config_pb2=model_server_config_pb2,
    )


def _bfloat16() -> np.dtype[Any]:
    import ml_dtypes  # ships with TensorFlow 2.15; only needed for bfloat16 tensors

    return np.dtype(ml_dtypes.bfloat16)


# DataType enum values (tensorflow/core/framework/types.proto); a table, not an elif chain.
DT_STRING = 7
DT_BFLOAT16 = 14
_NUMPY_OF_ENUM: dict[int, str] = {
    1: "float32",
    2: "float64",
    3: "int32",
    4: "uint8",
    5: "int16",
    6: "int8",
    7: "object",
    8: "complex64",
    9: "int64",
    10: "bool",
    11: "int8",  # qint8: quantized types decode to their storage type
    12: "uint8",  # quint8
    13: "int32",  # qint32
    14: "bfloat16",
    15: "int16",  # qint16
    16: "uint16",  # quint16
    17: "uint16",
    18: "complex128",
    19: "float16",
    22: "uint32",
    23: "uint64",
}
_ENUM_OF_NUMPY: dict[str, int] = {
    "float32": 1,
    "float64": 2,
    "int32": 3,
    "uint8": 4,
    "int16": 5,
    "int8": 6,
    "object": 7,
    "complex64": 8,
    "int64": 9,
    "bool": 10,
    "bfloat16": 14,
    "uint16": 17,
    "complex128": 18,
    "float16": 19,
    "uint32": 22,
    "uint64": 23,
}
# Which typed field carries the values of each dtype when tensor_content is empty.
_VALUE_FIELD: dict[int, str] = {
    1: "float_val",
    2: "double_val",
    3: "int_val",
    4: "int_val",
    5: "int_val",
    6: "int_val",
    7: "string_val",
    8: "scomplex_val",
    9: "int64_val",
    10: "bool_val",
    11: "int_val",
    12: "int_val",
    13: "int_val",
    14: "half_val",
    15: "int_val",
    16: "int_val",
    17: "int_val",
    18: "dcomplex_val",
    19: "half_val",
    22: "uint32_val",
    23: "uint64_val",
}
# Fields decoded through an intermediate dtype: 16-bit floats are bit patterns in an int field,
# complex numbers are pairs of reals.
_FIELD_DTYPE: dict[int, str] = {8: "float32", 14: "uint16", 18: "float64", 19: "uint16"}
_LITTLE = sys.byteorder == "little"


def b64_json(value: bytes) -> dict[str, str]:
    """Bytes in TF Serving's JSON form for binary data: ``{"b64": "..."}``."""
    return {"b64": base64.b64encode(value).decode("ascii")}


def text_or_b64(value: bytes) -> str | dict[str, str]:
    """Bytes for JSON: UTF-8 text as a string, anything else as ``{"b64": "..."}``.

    Example:
        >>> text_or_b64(b"abc"), text_or_b64(b"\\xff")
        ('abc', {'b64': '/w=='})
    """
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return b64_json(value)


def numpy_dtype(enum: int) -> np.dtype[Any]:
    """Return the numpy dtype of a TensorFlow ``DataType`` enum value.

    Example:
        >>> numpy_dtype(1)
        dtype('float32')
    """
    name = _NUMPY_OF_ENUM.get(enum)
    if name is None:
        raise MalformedResponseError(
            f"tensor dtype enum {enum} is not supported; expected one of {sorted(_NUMPY_OF_ENUM)}"
        )
    return _bfloat16() if name == "bfloat16" else np.dtype(name)


def dtype_name(enum: int) -> str:
    """Return the numpy-style name of a ``DataType`` (``"string"`` for ``DT_STRING``).

    Example:
        >>> dtype_name(7), dtype_name(9)
        ('string', 'int64')
    """
    if enum == DT_STRING:
        return "string"
    if enum in _NUMPY_OF_ENUM:
        return _NUMPY_OF_ENUM[enum]
    return {0: "invalid", 20: "resource", 21: "variant"}.get(enum, f"dtype_{enum}")


def _enum_of(dtype: Any) -> int:
    """The DataType enum of a dtype given as a name, numpy dtype/type or ``tf.DType``."""
    if dtype in ("string", "str", "bytes", str, bytes):
        return DT_STRING
    dtype = getattr(dtype, "as_numpy_dtype", dtype)
    name = "bfloat16" if str(dtype) == "bfloat16" else np.dtype(dtype).name
    if name.startswith(("str", "bytes")):
        return DT_STRING
    enum = _ENUM_OF_NUMPY.get(name)
    if enum is None:
        raise TypeError(
            f"dtype {dtype!r} cannot be sent to TensorFlow Serving; "
            f"expected one of {sorted(_ENUM_OF_NUMPY)} or 'string'"
        )
    return enum


# ----------------------------------------------------------------------------------- encode


def encode_tensor(value: Any, dtype: Any = None) -> Any:
    """Build a ``TensorProto`` from a numpy array, a Python scalar or a nested list.

    Numeric tensors go into ``tensor_content`` (one copy of the array's bytes), strings into
    ``string_val``. Without ``dtype`` Python values follow ``tf.make_tensor_proto``: floats
    become float32, integers int32 (int64 when a value needs it); numpy arrays keep their dtype.
    A ``TensorProto`` is returned unchanged. The input is never modified.

    Args:
        value: array, scalar, (nested) list of numbers, ``str`` or ``bytes``, or a TensorProto.
        dtype: dtype to send (name, numpy dtype or ``tf.DType``); values are cast to it.

    Returns:
        A ``tensorflow.TensorProto``.

    Raises:
        TypeError: the values or dtype cannot be sent (e.g. mixed strings and numbers).
        ValueError: a nested list is ragged.

    Example:
        >>> proto = encode_tensor([[1.0, 2.0]])
        >>> proto.dtype, [d.size for d in proto.tensor_shape.dim], len(proto.tensor_content)
        (1, [1, 2], 8)
    """
    pb = protos()
    if isinstance(value, pb.tensor_pb2.TensorProto):
        return value
    enum = None if dtype is None else _enum_of(dtype)
    if isinstance(value, list) and value and enum in (None, DT_STRING):
        encoded = _encode_flat_str(value)
        if encoded is not None:  # a flat list of str needs no numpy at all
            proto = pb.tensor_pb2.TensorProto(dtype=DT_STRING)
            proto.tensor_shape.dim.add(size=len(value))
            proto.string_val.extend(encoded)
            return proto
    array = _as_array(value, enum)
    if enum is None:
        enum = _enum_of(array.dtype)
    proto = pb.tensor_pb2.TensorProto(dtype=enum)
    dims = proto.tensor_shape.dim
    for size in array.shape:
        dims.add(size=size)
    if enum == DT_STRING:
        proto.string_val.extend(_as_bytes_list(array))
    else:
        target = numpy_dtype(enum)
        if array.dtype != target:
            array = array.astype(target)
        if not _LITTLE:  # pragma: no cover - the wire format is little-endian
            array = array.astype(array.dtype.newbyteorder("<"))
        proto.tensor_content = np.ascontiguousarray(array).tobytes()
    return proto


def _as_array(value: Any, enum: int | None) -> np.ndarray[Any, Any]:
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, np.generic):
        return np.asarray(value)
    if enum == DT_STRING or _looks_textual(value):
        return _object_array(value)
    target = None if enum is None else numpy_dtype(enum)
    if enum in (None, 1):
        fast = _float_list(value)
        if fast is not None:
            return fast
    try:
        array = np.asarray(value, dtype=target)
    except ValueError as exc:
        raise ValueError(f"cannot build a tensor from the given values: {exc}") from None
    except OverflowError as exc:
        raise TypeError(f"a value does not fit the tensor dtype: {exc}") from None
    if target is None:
        array = _python_default_dtype(array)
    if array.dtype.kind in "OUS":
        raise TypeError(
            "values mix strings and numbers (or hold unsupported objects); "
            "expected numbers only or strings/bytes only"
        )
    return array


def _float_list(value: Any) -> np.ndarray[Any, Any] | None:
    """Nested lists of Python floats straight to float32, or None to take the general path.

    Values are written as float32 directly (no float64 intermediate, no dtype discovery
    pass); any surprise (a ragged row, a string, an int first) falls back.
    """
    shape: list[int] = []
    probe = value
    while isinstance(probe, (list, tuple)):
        if not probe:
            return None
        shape.append(len(probe))
        probe = probe[0]
    if type(probe) is not float or not shape:
        return None
    rows: list[Any] = [value]
    for size in shape[:-1]:
        if any(not isinstance(row, (list, tuple)) or len(row) != size for row in rows):
            return None
        rows = list(itertools.chain.from_iterable(rows))
    if any(not isinstance(row, (list, tuple)) or len(row) != shape[-1] for row in rows):
        return None
    try:
        # array('f', row) converts a list of Python floats in one C loop, faster than numpy's
        # per-item path; the rows' bytes are joined once.
        content = b"".join([array.array("f", row).tobytes() for row in rows])
    except (TypeError, ValueError, OverflowError):
        return None
    return np.frombuffer(content, dtype=np.float32).reshape(shape)


def _python_default_dtype(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Apply tf.make_tensor_proto's choices for Python values: float32, and int32 when it fits."""
    if array.dtype == np.float64:
        return array.astype(np.float32)
    if array.dtype == np.int64:
        info = np.iinfo(np.int32)
        if array.size == 0 or (array.min() >= info.min and array.max() <= info.max):
            return array.astype(np.int32)
    return array


def _encode_flat_str(value: list[Any]) -> list[bytes] | None:
    try:  # str.encode (UTF-8) refuses anything but str: bytes, numbers, nested lists fall back
        return list(map(str.encode, value))
    except TypeError:
        return None


def _looks_textual(value: Any) -> bool:
    """Whether the first leaf of a nested list is ``str``/``bytes`` (strings need no numpy)."""
    while isinstance(value, (list, tuple)) and value:
        value = value[0]
    return isinstance(value, (str, bytes, bytearray))


def _object_array(value: Any) -> np.ndarray[Any, Any]:
    if isinstance(value, (str, bytes, bytearray)):
        array = np.empty((), dtype=object)
        array[()] = value
        return array
    try:
        return np.asarray(value, dtype=object)
    except ValueError as exc:
        raise ValueError(f"cannot build a string tensor from the given values: {exc}") from None


def _as_bytes_list(array: np.ndarray[Any, Any]) -> list[bytes]:
    flat = array.ravel().tolist()
    try:  # the common case, all str: one C-level loop
        return list(map(str.encode, flat))
    except TypeError:
        pass
    out = []
    for item in flat:
        if isinstance(item, bytes):
            out.append(item)
        elif isinstance(item, str):
            out.append(item.encode("utf-8"))
        elif isinstance(item, (bytearray, memoryview, np.bytes_)):
            out.append(bytes(item))
        else:
            raise TypeError(
                f"string tensor holds a {type(item).__name__} ({item!r}); "
                "expected str or bytes for every value"
            )
    return out


# ----------------------------------------------------------------------------------- decode


def decode_tensor(proto: Any) -> np.ndarray[Any, Any]:
    """Decode a ``TensorProto`` (message or serialized bytes) with TensorFlow's FromProto rules.

    Strings come back as an object array of ``bytes``, like ``tf.make_ndarray``.

    Raises:
        MalformedResponseError: the dtype is unsupported or the content does not fit the shape.

    Example:
        >>> decode_tensor(encode_tensor([[1, 2], [3, 4]])).tolist()
        [[1, 2], [3, 4]]
    """
    if isinstance(proto, (bytes, bytearray, memoryview)):
        view = memoryview(proto)
        return _decode_scanned(view, _scan_tensor(view, 0, len(view)))
    enum = proto.dtype
    if enum in _FIELD_DTYPE or enum in (1, 2):
        # Packed fixed-width values: re-serializing (C speed) and viewing the bytes beats
        # iterating a repeated field value by value.
        if not proto.tensor_content and len(getattr(proto, _VALUE_FIELD[enum])) > 64:
            return decode_tensor(proto.SerializeToString())
    shape = tuple(d.size for d in proto.tensor_shape.dim)
    return _from_fields(enum, shape, proto)


def _from_fields(enum: int, shape: tuple[int, ...], proto: Any) -> np.ndarray[Any, Any]:
    dtype = numpy_dtype(enum)
    count = _count(shape)
    if proto.tensor_content and enum != DT_STRING:
        return _from_content(memoryview(proto.tensor_content), dtype, shape)
    values = getattr(proto, _VALUE_FIELD[enum])
    if enum == DT_STRING:
        flat = np.empty(len(values), dtype=object)
        flat[:] = list(values)
    else:
        flat = np.array(values, dtype=_FIELD_DTYPE.get(enum, dtype))
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
    pad = np.full(count - len(flat), flat[-1], dtype=flat.dtype)
    return np.concatenate([flat, pad])


def _from_content(content: memoryview, dtype: np.dtype[Any], shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    count = _count(shape)
    if len(content) != count * dtype.itemsize:
        raise MalformedResponseError(
            f"tensor_content holds {len(content)} bytes; shape {list(shape)} of {dtype} "
            f"needs {count * dtype.itemsize}"
        )
    # One copy: the result owns aligned, writable memory independent of the response buffer.
    return np.frombuffer(content, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)


def _count(shape: Sequence[int]) -> int:
    count = 1
    for size in shape:
        count *= size
    return count


# ------------------------------------------------------------------- raw wire-format scanning

# Field numbers in TensorProto whose packed payloads are little-endian arrays we can view.
_PACKED_FIXED = {5: "float_val", 6: "double_val", 9: "scomplex_val", 12: "dcomplex_val"}
_CONTENT_FIELD = 4


@dataclass
class _Scanned:
    """Where a serialized TensorProto keeps its parts; ``fallback`` when we cannot view it."""

    dtype: int = 0
    shape: tuple[int, ...] = ()
    content: list[tuple[int, int]] = field(default_factory=list)
    packed: list[tuple[int, int]] = field(default_factory=list)
    start: int = 0
    end: int = 0
    fallback: bool = False


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
            raise MalformedResponseError("malformed varint in a serialized tensor")


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
            raise MalformedResponseError(f"unsupported wire type {wire} in a serialized tensor")
    if pos != end:
        raise MalformedResponseError("truncated serialized tensor")


def _scan_shape(buf: memoryview, start: int, end: int) -> tuple[int, ...]:
    dims = []
    for number, wire, a, b in _fields(buf, start, end):
        if number == 2 and wire == 2:
            size = 0
            for n2, w2, value, _ in _fields(buf, a, b):
                if n2 == 1 and w2 == 0:
                    size = value if value < 1 << 63 else value - (1 << 64)
            dims.append(size)
    return tuple(dims)


def _scan_tensor(buf: memoryview, start: int, end: int) -> _Scanned:
    info = _Scanned(start=start, end=end)
    packed_number = None
    for number, wire, a, b in _fields(buf, start, end):
        if number == 1 and wire == 0:
            info.dtype = a
        elif number == 2 and wire == 2:
            info.shape = _scan_shape(buf, a, b)
        elif number == _CONTENT_FIELD and wire == 2:
            info.content.append((a, b))
        elif number in _PACKED_FIXED and wire == 2 and packed_number in (None, number):
            packed_number = number
            info.packed.append((a, b))
        elif number != 3:  # version_number is harmless; anything else needs the proto path
            info.fallback = True
    return info


def _decode_scanned(buf: memoryview, info: _Scanned) -> np.ndarray[Any, Any]:
    enum = info.dtype
    if info.fallback or enum == DT_STRING or (not info.content and enum not in (1, 2, 8, 18)):
        tensor = protos().tensor_pb2.TensorProto.FromString(bytes(buf[info.start : info.end]))
        return _from_fields(enum, tuple(d.size for d in tensor.tensor_shape.dim), tensor)
    dtype = numpy_dtype(enum)
    if info.content:
        return _from_content(_join(buf, info.content), dtype, info.shape)
    field_dtype = np.dtype(_FIELD_DTYPE.get(enum, dtype.name)).newbyteorder("<")
    raw = _join(buf, info.packed)
    usable = len(raw) // field_dtype.itemsize * field_dtype.itemsize
    flat = np.frombuffer(raw[:usable], dtype=field_dtype).astype(field_dtype.newbyteorder("="))
    flat = _reinterpret(flat, enum, dtype)
    return _fill(flat, _count(info.shape), dtype).reshape(info.shape)


def _join(buf: memoryview, ranges: list[tuple[int, int]]) -> memoryview:
    if len(ranges) == 1:
        a, b = ranges[0]
        return buf[a:b]
    return memoryview(b"".join(bytes(buf[a:b]) for a, b in ranges))


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
        raise MalformedResponseError("truncated PredictResponse") from None
    spec = protos().model_pb2.ModelSpec.FromString(spec_bytes)
    return DecodedPredict(data=bytes(data), outputs=outputs, model_spec=spec)


def _scan_map_entry(buf: memoryview, start: int, end: int) -> tuple[str, _Scanned]:
    key = ""
    tensor = _Scanned(start=start, end=start)  # an absent value is an empty TensorProto
    for number, wire, a, b in _fields(buf, start, end):
        if number == 1 and wire == 2:
            key = bytes(buf[a:b]).decode("utf-8")
        elif number == 2 and wire == 2:
            tensor = _scan_tensor(buf, a, b)
    return key, tensor


def decode_outputs(outputs: Mapping[str, Any]) -> dict[str, np.ndarray[Any, Any]]:
    """Decode a map of ``TensorProto`` messages (e.g. ``PredictResponse.outputs``) to numpy."""
    return {key: decode_tensor(tensor) for key, tensor in outputs.items()}
