"""Output values as the writers write them: bytes as text, arrays as JSON-ready lists.

Every writer shares these rules: a ``bytes`` value that is UTF-8 is written as its text, any
other as TF Serving's REST API writes it (``{"b64": ...}``); a class name is its text.
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import numpy.typing as npt

from tfship._values import MISSING

Array = npt.NDArray[Any]


def text_value(value: Any) -> Any:
    """``value`` with ``bytes`` as text, or ``{"b64": ...}`` when they are not UTF-8.

    Example:
        >>> text_value(b"Adelie"), text_value(b"\\xff")
        ('Adelie', {'b64': '/w=='})
    """
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            # JSON has no bytes: TF Serving's REST API uses the same {"b64": ...} wrapper.
            return {"b64": base64.b64encode(value).decode("ascii")}
    return value


def json_values(array: Array) -> list[Any]:
    """An output array as nested lists of JSON values, its shape kept."""
    if array.dtype == object:
        # Class names repeat on every row: each distinct value is decoded once.
        flat = array.reshape(-1).tolist()
        texts: dict[Any, Any] = {}
        try:
            decoded = [texts[v] if v in texts else texts.setdefault(v, text_value(v)) for v in flat]
        except TypeError:  # an unhashable value (a list in an object array)
            return [_decode_nested(row) for row in array.tolist()]
        out = np.empty(len(decoded), dtype=object)
        out[:] = decoded
        values: list[Any] = out.reshape(array.shape).tolist()
        return values
    rows: list[Any] = array.tolist()
    return rows


def _decode_nested(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode_nested(v) for v in value]
    return text_value(value)


def keep_values(column: Any) -> list[Any]:
    """A kept input column (Arrow, numpy or a list) as Python values; missing is None."""
    if hasattr(column, "to_pylist"):
        return column.to_pylist()  # type: ignore[no-any-return]
    if isinstance(column, np.ndarray):
        return json_values(column)
    return [None if v is MISSING else v for v in column]


def label(value: Any) -> str:
    """A class name as text (bytes decoded, bad bytes replaced)."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
