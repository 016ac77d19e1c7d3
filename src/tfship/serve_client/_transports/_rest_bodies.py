"""JSON bodies as bytes: requests written by orjson in C, answers read by it, with
``json`` taking over where the two differ: a NaN or infinity, which orjson writes as ``null``
and TF Serving writes and reads as ``NaN``/``Infinity``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import orjson

from tfship._wire import tensor_to_json
from tfship.serve_client._errors import MalformedResponseError
from tfship.serve_client._transports._base import Call

__all__ = ["dumps", "loads_slowly"]


def dumps(body: dict[str, Any]) -> bytes:
    """A request body as JSON: :func:`_dumps_checked`'s bytes, found in one step when orjson's
    text holds no ``null``. orjson writes every NaN or infinity as ``null``, so a body
    without one had none, and is the text the check would have let orjson write."""
    try:
        text = orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY)
    except TypeError:  # JSONEncodeError, or a numpy dtype orjson cannot write: as the check says
        return _dumps_checked(body)
    return text if b"null" not in text else _dumps_checked(body)


def _dumps_checked(body: dict[str, Any]) -> bytes:
    """A request body as JSON, written by orjson in C (numeric arrays included); through
    ``json`` when a value is NaN or infinite, which orjson would write as ``null`` and TF
    Serving reads as ``NaN``/``Infinity``."""
    if _finite(body):
        try:
            return orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY)
        except orjson.JSONEncodeError:
            pass  # an array orjson cannot write: the slow path says what is wrong with it
    return json.dumps(body, default=_plain).encode("utf-8")


def _finite(value: object) -> bool:
    if isinstance(value, np.ndarray):
        return value.dtype.kind != "f" or bool(np.isfinite(value).all())
    if isinstance(value, (float, np.floating)):  # a numpy float32 scalar is not a float
        return math.isfinite(value)
    if isinstance(value, (dict, list)):
        for item in value.values() if isinstance(value, dict) else value:
            if not _finite(item):
                return False
    return True


def _plain(value: Any) -> Any:
    if isinstance(value, (np.ndarray, np.generic)):
        return tensor_to_json(np.asarray(value))
    raise TypeError(f"{type(value).__name__} is not JSON")


def loads_slowly(content: bytes, call: Call) -> Any:
    """Answers orjson refuses: ``NaN``/``Infinity`` (which TF Serving writes), or not JSON."""
    try:
        return json.loads(content)
    except ValueError:
        raise MalformedResponseError(
            f"{call.method}: the answer is not JSON: {content[:200]!r}", model=call.model
        ) from None
