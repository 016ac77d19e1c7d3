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

The protobuf classes are TensorFlow's and TF Serving's own generated ones, loaded through
:mod:`tfship._protos` without importing TensorFlow.
"""

from __future__ import annotations

import functools
import itertools
import struct
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

from tfship._protos import proto_module
from tfship._wire._formats import DATATYPES, DT_STRING, ENUM_OF_NUMPY, dtype_name

__all__ = [
    "DecodedPredict",
    "TensorDecodeError",
    "decode_predict_response",
    "decode_tensor",
    "encode_tensor",
    "protos",
    "tensor_numpy_dtype",
]


class TensorDecodeError(ValueError):
    """Raised when a ``TensorProto`` cannot be turned into an array (TF's FromProto fails)."""


_PROTO_MODULES = {
    "example_pb2": "tensorflow.core.example.example_pb2",
    "tensor_pb2": "tensorflow.core.framework.tensor_pb2",
    "tensor_shape_pb2": "tensorflow.core.framework.tensor_shape_pb2",
    "types_pb2": "tensorflow.core.framework.types_pb2",
    "meta_graph_pb2": "tensorflow.core.protobuf.meta_graph_pb2",
    "classification_pb2": "tensorflow_serving.apis.classification_pb2",
    "get_model_metadata_pb2": "tensorflow_serving.apis.get_model_metadata_pb2",
    "get_model_status_pb2": "tensorflow_serving.apis.get_model_status_pb2",
    "inference_pb2": "tensorflow_serving.apis.inference_pb2",
    "input_pb2": "tensorflow_serving.apis.input_pb2",
    "model_management_pb2": "tensorflow_serving.apis.model_management_pb2",
    "model_pb2": "tensorflow_serving.apis.model_pb2",
    "predict_pb2": "tensorflow_serving.apis.predict_pb2",
    "prediction_log_pb2": "tensorflow_serving.apis.prediction_log_pb2",
    "regression_pb2": "tensorflow_serving.apis.regression_pb2",
    "model_server_config_pb2": "tensorflow_serving.config.model_server_config_pb2",
    "prediction_service_pb2_grpc": "tensorflow_serving.apis.prediction_service_pb2_grpc",
    "model_service_pb2_grpc": "tensorflow_serving.apis.model_service_pb2_grpc",
}


@functools.lru_cache(maxsize=1)
def protos() -> Any:
    """A namespace of TF's and TF Serving's generated protobuf modules and gRPC stubs.

    They are TensorFlow's own classes, loaded without importing TensorFlow.

    Example:
        >>> pb = protos()
        >>> pb.tensor_pb2.TensorProto().dtype
        0
    """
    return SimpleNamespace(**{key: proto_module(name) for key, name in _PROTO_MODULES.items()})


def _bfloat16() -> np.dtype[Any]:
    import ml_dtypes  # ships with TensorFlow 2.15; only needed for bfloat16 tensors

    return np.dtype(ml_dtypes.bfloat16)


_LITTLE = sys.byteorder == "little"


def tensor_numpy_dtype(enum: int) -> np.dtype[Any]:
    """The numpy dtype of a ``DataType`` number, or ``TensorDecodeError`` for an unsupported one.

    Example:
        >>> tensor_numpy_dtype(1)
        dtype('float32')
    """
    entry = DATATYPES.get(enum)
    if entry is None:
        raise TensorDecodeError(
            f"tensor dtype enum {enum} is not supported ({dtype_name(enum)}); "
            f"expected one of {sorted(DATATYPES)}"
        )
    return _bfloat16() if entry.numpy == "bfloat16" else np.dtype(entry.numpy)


def _enum_of(dtype: Any) -> int:
    """The DataType enum of a dtype given as a name, numpy dtype/type or ``tf.DType``."""
    if isinstance(dtype, np.dtype) and dtype.name in ENUM_OF_NUMPY:
        return ENUM_OF_NUMPY[dtype.name]  # every array's case, without name parsing
    if dtype in ("string", "str", "bytes", str, bytes):
        return DT_STRING
    dtype = getattr(dtype, "as_numpy_dtype", dtype)
    name = "bfloat16" if str(dtype) == "bfloat16" else np.dtype(dtype).name
    if name.startswith(("str", "bytes")):
        return DT_STRING
    enum = ENUM_OF_NUMPY.get(name)
    if enum is None:
        raise TypeError(
            f"dtype {dtype!r} cannot be sent to TensorFlow Serving; "
            f"expected one of {sorted(ENUM_OF_NUMPY)} or 'string'"
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
        target = tensor_numpy_dtype(enum)
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
    target = None if enum is None else tensor_numpy_dtype(enum)
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
        # One precompiled struct packs a row of Python floats in one C loop, about twice as
        # fast as array('f', row) and five times numpy's per-item path; rows are joined once.
        pack = _float_row(shape[-1]).pack
        content = b"".join([pack(*row) for row in rows])
    except (TypeError, ValueError, OverflowError, struct.error):
        return None
    return np.frombuffer(content, dtype="<f4").astype(np.float32, copy=False).reshape(shape)


@functools.lru_cache(maxsize=64)
def _float_row(size: int) -> struct.Struct:
    """The little-endian float32 layout of a row of ``size`` values."""
    return struct.Struct(f"<{size}f")


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
        TensorDecodeError: the dtype is unsupported or the content does not fit the shape.

    Example:
        >>> decode_tensor(encode_tensor([[1, 2], [3, 4]])).tolist()
        [[1, 2], [3, 4]]
    """
    if isinstance(proto, (bytes, bytearray, memoryview)):
        view = memoryview(proto)
        return _decode_scanned(view, _scan_tensor(view, 0, len(view)))
    enum = proto.dtype
    if DATATYPES.get(enum) is not None and (DATATYPES[enum].field_numpy or enum in (1, 2)):
        # Packed fixed-width values: re-serializing (C speed) and viewing the bytes beats
        # iterating a repeated field value by value.
        if not proto.tensor_content and len(getattr(proto, DATATYPES[enum].field)) > 64:
            return decode_tensor(proto.SerializeToString())
    shape = tuple(d.size for d in proto.tensor_shape.dim)
    return _from_fields(enum, shape, proto)


def _from_fields(enum: int, shape: tuple[int, ...], proto: Any) -> np.ndarray[Any, Any]:
    dtype = tensor_numpy_dtype(enum)
    count = _count(shape)
    if proto.tensor_content and enum != DT_STRING:
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
    pad = np.full(count - len(flat), flat[-1], dtype=flat.dtype)
    return np.concatenate([flat, pad])


def _from_content(content: memoryview, dtype: np.dtype[Any], shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    count = _count(shape)
    if len(content) != count * dtype.itemsize:
        raise TensorDecodeError(
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
            raise TensorDecodeError("malformed varint in a serialized tensor")


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
    dtype = tensor_numpy_dtype(enum)
    if info.content:
        return _from_content(_join(buf, info.content), dtype, info.shape)
    field_dtype = np.dtype(DATATYPES[enum].field_numpy or dtype.name).newbyteorder("<")
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
        raise TensorDecodeError("truncated PredictResponse") from None
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

