"""TensorProto <-> numpy on the server side, with TensorFlow's own rules.

Requests are decoded like C++ ``Tensor::FromProto``: a non-empty ``tensor_content`` wins; typed
``*_val`` fields shorter than the shape are padded by repeating their last value; an empty field
means zeros. Responses are encoded like ``Tensor::AsProtoField``: dtype, full shape and the typed
repeated field, never ``tensor_content`` (clients that only read ``tensor_content`` must fail here
as they fail against TensorFlow Serving).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tfship._wire import (
    DATATYPES,
    DT_STRING,
    DataType,
    TensorDecodeError,
    dtype_enum_name,
    enum_of_dtype,
    numpy_dtype,
)

_MAX_ELEMENTS = 2**31  # a shape promising more elements than a 2 GiB message can hold is bogus
_MAX_BYTES = 2**31


def enum_for_array(array: NDArray[Any]) -> int:
    """The DataType number of a numpy array; object and bytes arrays are DT_STRING."""
    if array.dtype.kind in ("O", "S", "U"):
        return DT_STRING
    enum = enum_of_dtype(array.dtype)
    if enum is None:
        raise TensorDecodeError(f"numpy dtype {array.dtype} has no TensorFlow DataType")
    return enum


def shape_of(proto: Any) -> tuple[int, ...]:
    """The fully defined shape of a TensorProto, or TensorDecodeError."""
    shape = proto.tensor_shape
    if shape.unknown_rank:
        raise TensorDecodeError("tensor shape has unknown rank")
    dims = tuple(int(d.size) for d in shape.dim)
    if any(d < 0 for d in dims):
        raise TensorDecodeError(f"tensor shape {list(dims)} has a negative dimension")
    if math.prod(dims) > _MAX_ELEMENTS:
        raise TensorDecodeError(f"tensor shape {list(dims)} has too many elements")
    return dims


def to_ndarray(proto: Any) -> NDArray[Any]:
    """Decode a ``TensorProto`` like TensorFlow's ``Tensor::FromProto``.

    Args:
        proto: a ``tensorflow.TensorProto``.

    Returns:
        A numpy array; strings come back as an object array of ``bytes``.

    Raises:
        TensorDecodeError: when TensorFlow would refuse the proto (unknown dtype, more values than
            the shape holds, a ``tensor_content`` of the wrong size).

    Example:
        >>> from tensorflow.core.framework import tensor_pb2
        >>> p = tensor_pb2.TensorProto(dtype=1, float_val=[1.5])
        >>> p.tensor_shape.dim.add().size = 3
        >>> to_ndarray(p).tolist()
        [1.5, 1.5, 1.5]
    """
    spec = DATATYPES.get(int(proto.dtype))
    if spec is None:
        raise TensorDecodeError(f"unsupported dtype {dtype_enum_name(int(proto.dtype))}")
    dims = shape_of(proto)
    count = math.prod(dims)
    # Padding can turn a tiny proto into a huge array; refuse what no 2 GiB request could carry.
    itemsize = 8 if spec.numpy == "bfloat16" else np.dtype(spec.numpy).itemsize
    if count * itemsize > _MAX_BYTES:
        raise TensorDecodeError(f"tensor shape {list(dims)} of {spec.name} needs more than 2 GiB")
    if spec.field == "string_val":
        return _strings(proto, dims, count)
    if proto.tensor_content:
        return _from_content(proto.tensor_content, spec, int(proto.dtype), dims, count)
    return _from_field(proto, spec, int(proto.dtype), dims, count)


def _numpy_dtype(spec: DataType, enum: int) -> np.dtype[Any]:
    return numpy_dtype(enum)


def _from_content(
    content: bytes, spec: DataType, enum: int, dims: tuple[int, ...], count: int
) -> NDArray[Any]:
    dtype = _numpy_dtype(spec, enum)
    if len(content) != count * dtype.itemsize:
        raise TensorDecodeError(
            f"tensor_content holds {len(content)} bytes, shape {list(dims)} of {spec.name} "
            f"needs {count * dtype.itemsize}"
        )
    return np.frombuffer(content, dtype=dtype).reshape(dims).copy()


def _from_field(
    proto: Any, spec: DataType, enum: int, dims: tuple[int, ...], count: int
) -> NDArray[Any]:
    dtype = _numpy_dtype(spec, enum)
    values = getattr(proto, spec.field)
    if spec.field in ("scomplex_val", "dcomplex_val"):
        flat = np.asarray(values, dtype=np.float64)
        if flat.size % 2:
            raise TensorDecodeError(f"{spec.field} holds an odd number of values")
        raw = np.empty(flat.size // 2, dtype=dtype)
        raw.real, raw.imag = flat[0::2], flat[1::2]  # no arithmetic: inf stays inf
    elif spec.field == "half_val":  # half/bfloat16 travel as their 16-bit patterns
        raw = np.asarray(values, dtype=np.int64).astype(np.uint16).view(dtype)
    else:
        raw = np.asarray(values, dtype=dtype)
    return _pad(raw, spec, dims, count, dtype)


def _pad(
    raw: NDArray[Any], spec: DataType, dims: tuple[int, ...], count: int, dtype: np.dtype[Any]
) -> NDArray[Any]:
    if raw.size > count:
        raise TensorDecodeError(
            f"{spec.field} holds {raw.size} values, more than shape {list(dims)} holds ({count})"
        )
    if raw.size == count:
        return raw.reshape(dims)
    if raw.size == 0:
        return np.zeros(dims, dtype=dtype)
    # FromProto repeats the last value to fill the shape (how scalars broadcast in protos).
    out = np.empty(count, dtype=dtype)
    out[: raw.size] = raw
    out[raw.size :] = raw[-1]
    return out.reshape(dims)


def _strings(proto: Any, dims: tuple[int, ...], count: int) -> NDArray[Any]:
    values = list(proto.string_val)
    if len(values) > count:
        raise TensorDecodeError(
            f"string_val holds {len(values)} values, more than shape {list(dims)} holds ({count})"
        )
    out = np.empty(count, dtype=object)
    if values:
        out[: len(values)] = values
        out[len(values) :] = values[-1]
    else:
        out[:] = b""
    return out.reshape(dims)


def from_ndarray(array: NDArray[Any], tensor_proto_cls: Any, enum: int | None = None) -> Any:
    """Encode an array like TensorFlow's ``Tensor::AsProtoField`` (typed field, no content).

    Args:
        array: the output array; object/bytes/str arrays are strings.
        tensor_proto_cls: the ``TensorProto`` class to build.
        enum: the DataType number to write; inferred from the array when None.

    Returns:
        A ``TensorProto`` with ``dtype``, ``tensor_shape`` and one typed ``*_val`` field.

    Example:
        >>> from tensorflow.core.framework import tensor_pb2
        >>> p = from_ndarray(np.array([[1.0, 2.0]], np.float32), tensor_pb2.TensorProto)
        >>> list(p.float_val), p.tensor_content
        ([1.0, 2.0], b'')
    """
    array = np.asarray(array)
    if enum is None:
        enum = enum_for_array(array)
    spec = DATATYPES.get(enum)
    if spec is None:
        raise TensorDecodeError(f"cannot encode dtype {dtype_enum_name(enum)}")
    proto = tensor_proto_cls(dtype=enum)
    for size in array.shape:
        proto.tensor_shape.dim.add().size = int(size)
    field = getattr(proto, spec.field)
    flat = array.reshape(-1)
    if spec.field == "string_val":
        field.extend(_as_bytes(v) for v in flat.tolist())
    elif spec.field in ("scomplex_val", "dcomplex_val"):
        pairs = np.empty(flat.size * 2, dtype=np.float64)
        pairs[0::2] = flat.real
        pairs[1::2] = flat.imag
        field.extend(pairs.tolist())
    elif spec.field == "half_val":
        field.extend(flat.view(np.uint16).astype(np.int32).tolist())
    else:
        field.extend(flat.astype(_numpy_dtype(spec, enum), copy=False).tolist())
    return proto


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return str(value).encode("utf-8")
