"""The Open Inference Protocol's (KServe V2) tensors, without TensorFlow.

A V2 tensor is a name, a datatype name (``FP32``, ``BYTES``, ...), a shape and its elements in
row-major order, carried three ways: JSON ``data`` (flat or nested lists), typed ``contents``
of a gRPC ``InferTensorContents``, or raw bytes (gRPC ``raw_*_contents`` and REST's binary
tensor data extension): each element's little-endian bytes, a ``BYTES`` element as its 4-byte
little-endian length and then its bytes. This module maps each of them to and from numpy
arrays with the dtypes of TensorFlow's ``DataType`` table, and refuses what does not fit with
a ``V2TensorError`` naming the tensor.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tfship._wire._formats import DT_STRING, dtype_enum_name, numpy_dtype
from tfship._wire._varints import _key, _varint_bytes

__all__ = [
    "V2_DATATYPES",
    "V2TensorError",
    "array_from_contents",
    "array_from_json",
    "array_from_raw",
    "encode_infer_response",
    "fill_contents",
    "json_data",
    "raw_bytes",
    "raw_contents_field",
    "v2_datatype",
    "v2_datatype_text",
]

# Every V2 datatype TensorFlow has, and its DataType number.
V2_DATATYPES: dict[str, int] = {
    "BOOL": 10,
    "INT8": 6,
    "INT16": 5,
    "INT32": 3,
    "INT64": 9,
    "UINT8": 4,
    "UINT16": 17,
    "UINT32": 22,
    "UINT64": 23,
    "FP16": 19,
    "FP32": 1,
    "FP64": 2,
    "BYTES": DT_STRING,
    "BF16": 14,
}
_OF_ENUM = {enum: name for name, enum in V2_DATATYPES.items()}

# The InferTensorContents field of each datatype (FP16 and BF16 travel only as raw bytes).
_CONTENTS = {
    "BOOL": "bool_contents",
    "INT8": "int_contents",
    "INT16": "int_contents",
    "INT32": "int_contents",
    "INT64": "int64_contents",
    "UINT8": "uint_contents",
    "UINT16": "uint_contents",
    "UINT32": "uint_contents",
    "UINT64": "uint64_contents",
    "FP32": "fp32_contents",
    "FP64": "fp64_contents",
    "BYTES": "bytes_contents",
}
_LENGTH = struct.Struct("<I")
MAX_DIMS = 254  # TensorFlow's TensorShape::MaxDimensions


class V2TensorError(ValueError):
    """Raised when a V2 tensor's datatype, shape or elements do not fit each other."""


def v2_datatype(enum: int) -> str | None:
    """The V2 datatype name of a ``DataType`` number, or None when V2 has none.

    Example:
        >>> v2_datatype(1), v2_datatype(7), v2_datatype(8)
        ('FP32', 'BYTES', None)
    """
    return _OF_ENUM.get(int(enum))


def v2_datatype_text(enum: int) -> str:
    """The V2 datatype name of a ``DataType`` number, or TensorFlow's name and that V2 has none.

    TensorFlow's complex, quantized, float8, float4, int4 and int2 types (and resources,
    variants) have no Open Inference Protocol datatype: what a request is told a signature
    takes when it sends such an input.

    Example:
        >>> v2_datatype_text(1), v2_datatype_text(25)
        ('FP32', 'DT_FLOAT8_E4M3FN (no Open Inference Protocol datatype)')
    """
    name = v2_datatype(enum)
    return name if name is not None else f"{dtype_enum_name(enum)} (no Open Inference Protocol datatype)"


def _dtype(datatype: str, name: str) -> np.dtype[Any]:
    dtype = _DTYPES.get(datatype)
    if dtype is not None:
        return dtype
    enum = V2_DATATYPES.get(datatype)
    if enum is None:
        known = ", ".join(V2_DATATYPES)
        raise V2TensorError(f"tensor '{name}': datatype '{datatype}' is not one of {known}")
    dtype = _DTYPES[datatype] = numpy_dtype(enum)
    return dtype


_DTYPES: dict[str, np.dtype[Any]] = {}


def element_count(shape: Sequence[int], name: str) -> int:
    """The number of elements of ``shape``; a negative dimension or too many is refused."""
    if len(shape) > MAX_DIMS:
        raise V2TensorError(f"tensor '{name}': shape has {len(shape)} dimensions, at most {MAX_DIMS}")
    count = 1
    for size in shape:
        if size < 0:
            raise V2TensorError(f"tensor '{name}': shape {list(shape)} has a negative dimension")
        count *= int(size)
    return count


def _wrong_count(name: str, shape: Sequence[int], got: int) -> V2TensorError:
    want = element_count(shape, name)
    return V2TensorError(f"tensor '{name}': shape {list(shape)} needs {want} elements, got {got}")


# raw bytes --------------------------------------------------------------------------------------
def array_from_raw(raw: bytes, datatype: str, shape: Sequence[int], name: str) -> NDArray[Any]:
    """A tensor's raw bytes as an array of ``shape``.

    Example:
        >>> array_from_raw(b"\\x00\\x00\\x80?", "FP32", [1, 1], "x")
        array([[1.]], dtype=float32)
        >>> array_from_raw(b"\\x02\\x00\\x00\\x00hi", "BYTES", [1], "s")
        array([b'hi'], dtype=object)
    """
    dtype = _dtype(datatype, name)
    count = element_count(shape, name)
    if datatype == "BYTES":
        values = _bytes_elements(raw, name)
        if len(values) != count:
            raise _wrong_count(name, shape, len(values))
        out = np.empty(count, dtype=object)
        out[:] = values
        return out.reshape(shape)
    if len(raw) != count * dtype.itemsize:
        raise V2TensorError(
            f"tensor '{name}': shape {list(shape)} of {datatype} needs {count * dtype.itemsize} bytes, "
            f"got {len(raw)}"
        )
    # one copy: aligned, writable, independent of the request's buffer
    little = _LITTLE.get(dtype)
    if little is None:
        little = _LITTLE[dtype] = dtype.newbyteorder("<")
    value: NDArray[Any] = np.frombuffer(raw, dtype=little).astype(dtype).reshape(shape)
    return value


#: each dtype as the protocol's raw contents hold it (little-endian)
_LITTLE: dict[np.dtype[Any], np.dtype[Any]] = {}


def _bytes_elements(raw: bytes, name: str) -> list[bytes]:
    values: list[bytes] = []
    at, end = 0, len(raw)
    view = memoryview(raw)
    while at < end:
        if end - at < 4:
            raise V2TensorError(f"tensor '{name}': BYTES data ends inside an element's 4-byte length")
        (size,) = _LENGTH.unpack_from(raw, at)
        at += 4
        if size > end - at:
            raise V2TensorError(
                f"tensor '{name}': a BYTES element of {size} bytes runs past the end of the data"
            )
        values.append(bytes(view[at : at + size]))
        at += size
    return values


def raw_bytes(array: NDArray[Any]) -> bytes:
    """An array's elements as V2 raw bytes (strings each prefixed by their length).

    Example:
        >>> raw_bytes(np.array([b"hi"], dtype=object))
        b'\\x02\\x00\\x00\\x00hi'
    """
    if array.dtype.kind in "OSU":
        parts: list[bytes] = []
        for item in array.reshape(-1).tolist():
            data = item if isinstance(item, bytes) else str(item).encode("utf-8")
            parts.append(_LENGTH.pack(len(data)))
            parts.append(data)
        return b"".join(parts)
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    return np.ascontiguousarray(array).tobytes()


def raw_contents_field(number: int, arrays: Sequence[NDArray[Any]], head: bytes = b"") -> bytes:
    """``head`` (a serialized message), then a repeated ``bytes`` field ``number`` holding each
    array's raw bytes: appended to a message's bytes, the field adds those entries
    (``raw_output_contents`` is field 6 of ``ModelInferResponse``). A numeric array's buffer is
    joined in place, copied once.

    Example:
        >>> raw_contents_field(6, [np.array([1], np.int32)])
        b'2\\x04\\x01\\x00\\x00\\x00'
    """
    parts: list[Any] = [head]
    for array in arrays:
        if array.dtype.kind in "OSU":
            data: Any = raw_bytes(array)
        else:
            if array.dtype.byteorder == ">":
                array = array.astype(array.dtype.newbyteorder("<"))
            data = np.ascontiguousarray(array).reshape(-1).view(np.uint8).data
        parts += [_key(number, 2), _varint_bytes(len(data)), data]
    return b"".join(parts)


def _length_field(number: int, data: bytes) -> bytes:
    return _key(number, 2) + _varint_bytes(len(data)) + data


def _text_field(number: int, text: str) -> bytes:
    """A proto3 string field; nothing for an empty string, as protobuf writes it."""
    return _length_field(number, text.encode()) if text else b""


def encode_infer_response(
    model: str,
    version: str,
    request_id: str,
    parameters: Mapping[str, str],
    outputs: Sequence[tuple[str, str, NDArray[Any]]],
) -> bytes:
    """A serialized ``ModelInferResponse``: its names, string ``parameters``, and each output
    ``(name, datatype, array)``'s header with the values in ``raw_output_contents``.

    Written field by field, as protobuf would write the same message, without building one:
    this is the bytes of every gRPC inference.

    Example:
        >>> data = encode_infer_response("m", "1", "", {}, [("y", "INT32", np.array([7], np.int32))])
        >>> from tfship._wire import protos
        >>> answer = protos().grpc_service_pb2.ModelInferResponse.FromString(data)
        >>> answer.model_name, answer.outputs[0].datatype, list(answer.outputs[0].shape)
        ('m', 'INT32', [1])
        >>> answer.raw_output_contents[0]
        b'\\x07\\x00\\x00\\x00'
    """
    names = tuple(parameters.items())
    heads = tuple((name, datatype, array.shape) for name, datatype, array in outputs)
    before, after = _response_fields(model, version, names, heads)
    head = before + _text_field(3, request_id) + after if request_id else before + after
    return raw_contents_field(6, [array for _, _, array in outputs], head)


@functools.lru_cache(maxsize=256)
def _response_fields(
    model: str,
    version: str,
    parameters: tuple[tuple[str, str], ...],
    outputs: tuple[tuple[str, str, tuple[int, ...]], ...],
) -> tuple[bytes, bytes]:
    """A response's fields before its ``id`` (names) and after it (parameters, output
    headers): the same for every answer of one signature at one batch size, so kept."""
    after = []
    for key, value in parameters:
        entry = _text_field(1, key) + _length_field(2, _text_field(3, value))
        after.append(_length_field(4, entry))
    for name, datatype, shape in outputs:
        dims = b"".join(_varint_bytes(int(d)) for d in shape)
        head = _text_field(1, name) + _text_field(2, datatype) + (_length_field(3, dims) if dims else b"")
        after.append(_length_field(5, head))
    return _text_field(1, model) + _text_field(2, version), b"".join(after)


# gRPC typed contents ----------------------------------------------------------------------------
def array_from_contents(contents: Any, datatype: str, shape: Sequence[int], name: str) -> NDArray[Any]:
    """An ``InferTensorContents`` of ``datatype`` as an array of ``shape``."""
    dtype = _dtype(datatype, name)
    field = _CONTENTS.get(datatype)
    if field is None:
        raise V2TensorError(f"tensor '{name}': {datatype} elements travel only as raw contents")
    for other in set(_CONTENTS.values()) - {field}:
        if len(getattr(contents, other)):
            raise V2TensorError(f"tensor '{name}': {datatype} elements belong in {field}, not {other}")
    values = getattr(contents, field)
    count = element_count(shape, name)
    if len(values) != count:
        raise _wrong_count(name, shape, len(values))
    if datatype == "BYTES":
        out = np.empty(count, dtype=object)
        out[:] = list(values)
        return out.reshape(shape)
    wide = np.asarray(values)
    if dtype.kind in "iu" and count:
        _check_range(wide, dtype, name)
    return wide.astype(dtype).reshape(shape)


def fill_contents(contents: Any, array: NDArray[Any], datatype: str) -> None:
    """Write an array's elements into the ``InferTensorContents`` field of ``datatype``."""
    field = _CONTENTS.get(datatype)
    if field is None:
        raise V2TensorError(f"{datatype} elements travel only as raw contents")
    flat = array.reshape(-1)
    if datatype == "BYTES":
        values = [v if isinstance(v, bytes) else str(v).encode("utf-8") for v in flat.tolist()]
        getattr(contents, field).extend(values)
    else:
        getattr(contents, field).extend(flat.tolist())


def _check_range(values: NDArray[Any], dtype: np.dtype[Any], name: str) -> None:
    info = np.iinfo(dtype)
    low, high = values.min(), values.max()
    if low < info.min or high > info.max:
        bad = low if low < info.min else high
        raise V2TensorError(f"tensor '{name}': value {bad} is out of the range of {dtype.name}")


# JSON -------------------------------------------------------------------------------------------
_JSON_KINDS = {"b": "BOOL", "i": "INT", "u": "INT", "f": "FP", "U": "BYTES"}


def array_from_json(data: Any, datatype: str, shape: Sequence[int], name: str) -> NDArray[Any]:
    """JSON ``data`` (flat or nested lists) of ``datatype`` as an array of ``shape``.

    Example:
        >>> array_from_json([[1, 2], [3, 4]], "INT32", [2, 2], "x").dtype
        dtype('int32')
        >>> array_from_json(["a", "b"], "BYTES", [2], "s")
        array([b'a', b'b'], dtype=object)
    """
    dtype = _dtype(datatype, name)
    count = element_count(shape, name)
    if not isinstance(data, list):
        data = [data]
    try:
        parsed = np.array(data)
    except ValueError:
        raise V2TensorError(f"tensor '{name}': data is a ragged nested list") from None
    if parsed.size != count:
        raise _wrong_count(name, shape, int(parsed.size))
    flat = parsed.reshape(-1)
    if count == 0:
        return np.zeros(shape, dtype=dtype)
    kind = _JSON_KINDS.get(flat.dtype.kind)
    if flat.dtype.kind in "fO" and dtype.kind in "iu":
        # numpy reads integers past int64 mixed with others as floats (losing digits) or as
        # Python ints: read each one as it was written
        values = np.array(data, dtype=object).reshape(-1).tolist()
        return _big_integers(values, dtype, datatype, name).reshape(shape)
    if datatype == "BYTES":
        if kind != "BYTES":
            raise V2TensorError(f"tensor '{name}': BYTES data must be strings")
        out = np.empty(count, dtype=object)
        out[:] = [text.encode("utf-8") for text in flat.tolist()]
        return out.reshape(shape)
    if datatype == "BOOL":
        if kind != "BOOL":
            raise V2TensorError(f"tensor '{name}': BOOL data must be true or false")
        return flat.reshape(shape)
    if kind not in ("INT", "FP") or (dtype.kind in "iu" and kind != "INT"):
        want = "integers" if dtype.kind in "iu" else "numbers"
        raise V2TensorError(f"tensor '{name}': {datatype} data must be {want}")
    if dtype.kind in "iu":
        _check_range(flat, dtype, name)
    return flat.astype(dtype).reshape(shape)


def _big_integers(values: list[Any], dtype: np.dtype[Any], datatype: str, name: str) -> NDArray[Any]:
    if not all(type(v) is int for v in values):
        raise V2TensorError(f"tensor '{name}': {datatype} data must be integers")
    info = np.iinfo(dtype)
    for value in values:
        if not info.min <= value <= info.max:
            raise V2TensorError(f"tensor '{name}': value {value} is out of the range of {dtype.name}")
    return np.array(values, dtype=dtype)


def json_data(array: NDArray[Any], datatype: str, name: str) -> list[Any]:
    """An array's elements as flat JSON ``data``; BYTES elements must be UTF-8 text."""
    flat = array.reshape(-1)
    if datatype == "BYTES":
        out: list[Any] = []
        for item in flat.tolist():
            if isinstance(item, bytes):
                try:
                    item = item.decode("utf-8")
                except UnicodeDecodeError:
                    raise V2TensorError(
                        f"output '{name}' holds bytes that are not UTF-8 text, which JSON cannot carry: "
                        "ask for it as binary data (parameter binary_data)"
                    ) from None
            out.append(item)
        return out
    if datatype in ("FP16", "BF16"):
        return flat.astype(np.float32).tolist()  # type: ignore[no-any-return]
    return flat.tolist()  # type: ignore[no-any-return]
