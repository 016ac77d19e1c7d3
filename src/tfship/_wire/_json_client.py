"""TF Serving's REST JSON from the client's side: tensors and ``tf.train.Example`` s written as
request JSON (bytes as text or ``{"b64": ...}``), and an answer's outputs read back to arrays
with ``json_tensor.cc``'s rules.
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tfship._wire._formats import DT_STRING, ENUM_OF_NUMPY
from tfship._wire._json_values import tensor_from_json

__all__ = [
    "answer_from_json",
    "b64_json",
    "example_to_json",
    "tensor_to_json",
    "text_or_b64",
]


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


def tensor_to_json(array: NDArray[Any]) -> Any:
    """A request tensor as JSON: numbers as they are, bytes as text or ``{"b64": ...}``.

    Raises:
        TypeError: a dtype TF Serving's REST API cannot carry (complex, 16-bit floats).

    Example:
        >>> tensor_to_json(np.array([[1.5, 2.0]], np.float32)), tensor_to_json(np.array([b"a"], object))
        ([[1.5, 2.0]], ['a'])
    """
    if array.dtype.kind in "OSU":
        return _strings_to_json(array.tolist())
    if array.dtype.kind == "c":
        raise TypeError("TF Serving's REST API does not accept complex inputs; use gRPC")
    if array.dtype.kind == "f" and array.dtype.itemsize == 2:
        raise TypeError("TF Serving's REST API does not accept half/bfloat16 inputs; use gRPC")
    return array.tolist()


def _strings_to_json(value: Any) -> Any:
    if isinstance(value, list):
        return [_strings_to_json(v) for v in value]
    if isinstance(value, bytes):
        return text_or_b64(value)
    return value


def example_to_json(example: Any) -> dict[str, Any]:
    """A ``tf.train.Example`` as TF Serving's REST example object (bytes as ``{"b64": ...}``)."""
    out: dict[str, Any] = {}
    for name, feature in example.features.feature.items():
        kind = feature.WhichOneof("kind")
        if kind == "float_list":
            out[name] = [float(v) for v in feature.float_list.value]
        elif kind == "int64_list":
            out[name] = [int(v) for v in feature.int64_list.value]
        elif kind == "bytes_list":
            out[name] = [b64_json(v) for v in feature.bytes_list.value]
    return out


def answer_from_json(value: Any, dtype: str | None, bool_free: bool = False) -> NDArray[Any]:
    """One output of a REST answer as an array of the signature's dtype (tfship's name).

    Strings come back as bytes (``{"b64": ...}`` decoded), as they do over gRPC; an output
    whose dtype is unknown keeps what JSON gave. ``bool_free`` as :func:`tensor_from_json`.

    Raises:
        JsonError: the value does not fit the dtype, with json_tensor.cc's message.
    """
    enum = DT_STRING if dtype == "string" else ENUM_OF_NUMPY.get(dtype or "")
    if enum is None:
        return np.asarray(value)
    return tensor_from_json(value, enum, bool_free)
