"""``DataType`` numbers of the tensor codec: a number's numpy dtype (:func:`tensor_numpy_dtype`),
the number of a dtype given by name, numpy or ``tf.DType`` and of an array
(:func:`enum_of_array`), and :class:`TensorDecodeError`, which every tensor module raises.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from tfship._wire._formats import (
    DATATYPES,
    DT_STRING,
    ENUM_OF_NUMPY,
    UNCARRIED_NUMERIC,
    dtype_enum_name,
    dtype_name,
)

__all__ = [
    "TensorDecodeError",
    "UncarriedDtypeError",
    "enum_of_array",
    "tensor_numpy_dtype",
]


class TensorDecodeError(ValueError):
    """Raised when a ``TensorProto`` cannot be turned into an array (TF's FromProto fails)."""


class UncarriedDtypeError(TensorDecodeError):
    """Raised for a tensor of a TensorFlow type tfship's codec does not carry (float8, int4, ...),
    which TensorFlow itself would read: the message names the type."""


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
        name = dtype_name(enum)
        why = f"{name}, {_NOT_CARRIED}" if name in UNCARRIED_NUMERIC else name
        error = UncarriedDtypeError if name in UNCARRIED_NUMERIC else TensorDecodeError
        raise error(f"tensor dtype enum {enum} is not supported ({why}); expected one of {sorted(DATATYPES)}")
    return _bfloat16() if entry.numpy == "bfloat16" else np.dtype(entry.numpy)


# TensorFlow has these types (ml_dtypes' numpy dtypes); TF Serving's clients rarely send them and
# tfship's codec carries none, so an array of one is refused by name instead of guessed at.
_NOT_CARRIED = (
    "one of TensorFlow's float8, float4, int4 and int2 types, which tfship does not encode or decode"
)


def _refuse_uncarried(name: str) -> None:
    """Raise ``TypeError`` when ``name`` is a TensorFlow type tfship's codec does not carry."""
    enum = UNCARRIED_NUMERIC.get(name)
    if enum is not None:
        raise TypeError(f"dtype {name} ({dtype_enum_name(enum)}) cannot be sent: it is {_NOT_CARRIED}")


def _enum_of(dtype: Any) -> int:
    """The DataType enum of a dtype given as a name, numpy dtype/type or ``tf.DType``."""
    if isinstance(dtype, np.dtype) and dtype.name in ENUM_OF_NUMPY:
        return ENUM_OF_NUMPY[dtype.name]  # every array's case, without name parsing
    if dtype in ("string", "str", "bytes", str, bytes):
        return DT_STRING
    if isinstance(dtype, str):
        _refuse_uncarried(dtype)  # before numpy, which knows the name only once ml_dtypes is imported
    dtype = getattr(dtype, "as_numpy_dtype", dtype)
    name = "bfloat16" if str(dtype) == "bfloat16" else np.dtype(dtype).name
    _refuse_uncarried(name)
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
        _refuse_uncarried(dtype.name)
        raise TypeError(f"numpy dtype {dtype} has no TensorFlow DataType")
    if dtype.isnative:  # a dtype's name costs more than the rest of a small answer's encoding
        _ENUM_OF_DTYPE[dtype] = enum
    return enum


_ENUM_OF_DTYPE: dict[np.dtype[Any], int] = {}
