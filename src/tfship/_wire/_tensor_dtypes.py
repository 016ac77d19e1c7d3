"""``DataType`` numbers of the tensor codec: a number's numpy dtype (:func:`tensor_numpy_dtype`),
the number of a dtype given by name, numpy or ``tf.DType`` and of an array
(:func:`enum_of_array`), and :class:`TensorDecodeError`, which every tensor module raises.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from tfship._wire._formats import DATATYPES, DT_STRING, ENUM_OF_NUMPY, dtype_name

__all__ = [
    "TensorDecodeError",
    "enum_of_array",
    "tensor_numpy_dtype",
]


class TensorDecodeError(ValueError):
    """Raised when a ``TensorProto`` cannot be turned into an array (TF's FromProto fails)."""


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


def enum_of_array(array: np.ndarray[Any, Any]) -> int:
    """The ``DataType`` number of a numpy array (object, bytes and str arrays are strings).

    Raises:
        TypeError: the dtype has no TensorFlow ``DataType``.

    Example:
        >>> enum_of_array(np.zeros(2, np.float32)), enum_of_array(np.array([b"a"], object))
        (1, 7)
    """
    dtype = array.dtype
    enum = _ENUM_OF_DTYPE.get(dtype)
    if enum is not None:
        return enum
    if dtype.kind in "OSU":
        return DT_STRING
    enum = ENUM_OF_NUMPY.get("bfloat16" if str(dtype) == "bfloat16" else dtype.name)
    if enum is None:
        raise TypeError(f"numpy dtype {dtype} has no TensorFlow DataType")
    if dtype.isnative:  # a dtype's name costs more than the rest of a small answer's encoding
        _ENUM_OF_DTYPE[dtype] = enum
    return enum


_ENUM_OF_DTYPE: dict[np.dtype[Any], int] = {}
