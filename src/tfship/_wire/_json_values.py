"""TF Serving's REST JSON to tensors: request values checked against the signature's dtypes
with ``json_tensor.cc``'s rules and messages (TF Serving 2.20), in row (``instances``) or
columnar (``inputs``) format.

Speed: a numeric tensor goes from JSON to one numpy array in one step (the per-value rules only
run when that step meets something it cannot vouch for, and then give the exact error).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tfship._wire._formats import DT_STRING, numpy_dtype, tf_dtype_name
from tfship._wire._json_parse import JsonError, b64_decode, error_json_text, is_b64, json_type

__all__ = [
    "ROW",
    "COLUMNAR",
    "lossless_float32",
    "predict_inputs_from_json",
    "tensor_from_json",
]


ROW, COLUMNAR = "row", "columnar"

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_UINT32 = (0, 2**32 - 1)
_UINT64 = (0, 2**64 - 1)
_FLOAT_MAX = float(np.finfo(np.float32).max)
_DOUBLE_MAX = float(np.finfo(np.float64).max)
# float, double, int32, uint8, int16, int8, int64, bool, uint32, uint64: json_tensor.cc's types
_MAX_RANK = 254
_NUMERIC = frozenset({1, 2, 3, 4, 5, 6, 9, 10, 22, 23})
_INT_FIELD = frozenset({3, 4, 5, 6})  # carried in int_val, so any int32 is accepted
_NUMPY_OF = {enum: numpy_dtype(enum) for enum in _NUMERIC}  # looked up once, not per tensor


def _type_error(value: Any, dtype: int) -> JsonError:
    return JsonError(
        f"JSON Value: {error_json_text(value)} Type: {json_type(value)} is not of expected type: "
        + tf_dtype_name(dtype)
    )


def lossless_float32(value: float | int) -> bool:
    """Whether a JSON number becomes a float32 without loss, by json_tensor.cc's rule (an
    integer needs at most 24 bits; a finite float must be in float32's range).

    Example:
        >>> lossless_float32(1.5), lossless_float32(1e39), lossless_float32(2**24 + 1)
        (True, False, False)
    """
    return _lossless(value, 24, _FLOAT_MAX)


def _lossless(value: Any, digits: int, largest: float) -> bool:
    if isinstance(value, int):
        return abs(value) <= (1 << digits) - 1
    if not math.isfinite(value):
        return True
    return bool(-largest <= value <= largest)


def _check_value(value: Any, dtype: int) -> Any:
    """json_tensor.cc's AddValueToTensor: one JSON scalar checked for ``dtype``."""
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if dtype in (1, 2):
        if not (is_int or isinstance(value, float)):
            raise _type_error(value, dtype)
        digits, largest, name = (24, _FLOAT_MAX, "float") if dtype == 1 else (53, _DOUBLE_MAX, "double")
        if not _lossless(value, digits, largest):
            raise JsonError(
                f"Cannot convert JSON value: {json.dumps(value)} to {name} without loss of precision."
            )
        return float(value)
    if dtype == DT_STRING:
        if not isinstance(value, str):
            raise _type_error(value, dtype)
        return value.encode("utf-8")
    if dtype == 10:
        if not isinstance(value, bool):
            raise _type_error(value, dtype)
        return value
    bounds = {9: _INT64, 22: _UINT32, 23: _UINT64}.get(dtype, _INT32)
    if dtype not in _NUMERIC:
        raise JsonError(
            f"Conversion of JSON Value: {error_json_text(value)} to type: {tf_dtype_name(dtype)}",
            "UNIMPLEMENTED",
        )
    if not (is_int and bounds[0] <= value <= bounds[1]):
        raise _type_error(value, dtype)
    return value


def _dense_shape(value: Any) -> list[int]:
    shape: list[int] = []
    while isinstance(value, list):
        shape.append(len(value))
        if not value:
            break
        value = value[0]
    return shape


def _collect(value: Any, level: int, dtype: int, shape: list[int], out: list[Any]) -> None:
    """json_tensor.cc's FillTensorProto, one value at a time into ``out``."""
    rank = len(shape)
    if not isinstance(value, list):
        if level != rank:
            raise JsonError(
                f"JSON Value: {error_json_text(value)} found at incorrect level: {level + 1} in the "
                f"JSON DOM. Expected at level: {rank}"
            )
        if isinstance(value, dict):
            if dtype != DT_STRING:
                raise _type_error(value, dtype)
            out.append(b64_decode(value))
        else:
            out.append(_check_value(value, dtype))
        return
    if level >= rank:
        raise JsonError(f"Encountered list at unexpected level: {level} expected < {rank}")
    if len(value) != shape[level]:
        raise JsonError(
            f"Encountered list at unexpected size: {len(value)} at level: {level} expected "
            f"size: {shape[level]}"
        )
    for item in value:
        _collect(item, level + 1, dtype, shape, out)


def _exact(value: Any, dtype: int) -> NDArray[Any]:
    shape = _dense_shape(value)
    if len(shape) > _MAX_RANK:  # TensorFlow's TensorShape::kMaxDimensions; checked before descending
        raise JsonError(
            f"JSON Value: {error_json_text(value)} is nested {len(shape)} deep; a tensor has at "
            f"most {_MAX_RANK} dimensions"
        )
    flat: list[Any] = []
    _collect(value, 0, dtype, shape, flat)
    if dtype == DT_STRING:
        array = np.empty(len(flat), dtype=object)
        array[:] = flat
        return array.reshape(shape)
    # int8/int16/uint8 travel in int_val: C++ casts each int32, so out-of-range values wrap
    if dtype in _INT_FIELD:
        return np.array(flat, dtype=np.int64).astype(numpy_dtype(dtype)).reshape(shape)
    return np.array(flat, dtype=numpy_dtype(dtype)).reshape(shape)


# JSON -> tensors: one numpy step when it is sure to agree --------------------------------------
def _fast(value: Any, dtype: int, bool_free: bool) -> NDArray[Any] | None:
    """The whole tensor through ``np.array``, or None when the exact rules must decide.

    ``np.array`` cannot tell ``true`` from ``1`` nor ``2`` from ``2.0``, so it is only trusted
    where that cannot change the answer: no JSON booleans in a numeric tensor, and integer
    sized floats below the precision limit of the target type.
    """
    if dtype not in _NUMERIC or (dtype != 10 and not bool_free):
        return None
    try:
        array = np.array(value)
    except (ValueError, TypeError, RecursionError):
        return None
    kind = array.dtype.kind
    if array.size == 0:
        return array.astype(_NUMPY_OF[dtype]) if kind in "fib" else None
    if dtype == 10:
        return array if kind == "b" else None
    if kind not in "iuf":
        return None
    if dtype in (1, 2):
        limit = float(2**24 if dtype == 1 else 2**53)
        # Floats all finite and below the limit pass in one reduction (NaN and infinities fail
        # the comparison and take the long way); integers are bounded by min and max.
        if kind != "f" or not float(np.abs(array).max()) < limit:
            finite = array[np.isfinite(array)] if kind == "f" else array
            if finite.size and max(-float(finite.min()), float(finite.max())) >= limit:
                return None  # maybe an integer too big for the type: the exact rules say
        return array.astype(_NUMPY_OF[dtype])
    if kind == "f":
        return None
    low, high = {9: _INT64, 22: _UINT32, 23: _UINT64}.get(dtype, _INT32)
    if int(array.min()) < low or int(array.max()) > high:
        return None
    target = np.int64 if dtype in _INT_FIELD else _NUMPY_OF[dtype]
    return array.astype(target).astype(_NUMPY_OF[dtype])


def tensor_from_json(value: Any, dtype: int, bool_free: bool = False) -> NDArray[Any]:
    """One JSON value (scalar or nested lists) as the array TF Serving would build for ``dtype``.

    Args:
        value: the parsed JSON value.
        dtype: the ``DataType`` number the signature expects.
        bool_free: the body holds no JSON ``true``/``false``, so numeric tensors may take the
            one-step path.

    Returns:
        A numpy array (strings as an object array of bytes).

    Raises:
        JsonError: with json_tensor.cc's message.
    """
    fast = _fast(value, dtype, bool_free)
    return fast if fast is not None else _exact(value, dtype)


def _sizes(shape: tuple[int, ...] | list[int]) -> str:
    return ",".join(map(str, shape))


def _instances(items: list[Any], infos: Mapping[str, int], bool_free: bool) -> dict[str, Any]:
    """json_tensor.cc's FillTensorMapFromInstancesList (row format)."""
    names = sorted(infos)
    if not isinstance(items[0], dict) and len(infos) > 1:
        raise JsonError(
            "instances is a plain list, but expecting list of objects as multiple input tensors "
            "required as per tensorinfo_map"
        )
    as_objects = isinstance(items[0], dict) and not is_b64(items[0])
    if not as_objects:
        fast = _fast(items, infos[names[0]], bool_free)
        if fast is not None:
            return {names[0]: fast}
    elif all(isinstance(i, dict) and not is_b64(i) and sorted(i) == names for i in items):
        columns = {name: _fast([i[name] for i in items], infos[name], bool_free) for name in names}
        if all(column is not None for column in columns.values()):
            return columns
    return _instances_exact(items, infos, names, as_objects)


def _instances_exact(
    items: list[Any], infos: Mapping[str, int], names: list[str], as_objects: bool
) -> dict[str, Any]:
    parts: dict[str, list[NDArray[Any]]] = {}
    for index, item in enumerate(items):
        if as_objects:
            if not (isinstance(item, dict) and not is_b64(item)):
                raise JsonError(f"Expecting object but got list at item {index} of input list")
            for key, value in item.items():
                try:
                    _instance_item(value, key, infos, parts)
                except JsonError as exc:
                    raise JsonError(
                        f"Failed to process element: {index} key: {key} of 'instances' list. "
                        f"Error: {exc.status_text()}"
                    ) from None
            if sorted(item) != names:
                raise JsonError(
                    f"Failed to process element: {index} of 'instances' list. JSON object: "
                    f"{error_json_text(item)} keys must be equal to: {','.join(names)}"
                )
        else:
            if isinstance(item, dict) and not is_b64(item):
                raise JsonError(f"Expecting value/list but got object at item {index} of input list")
            try:
                _instance_item(item, names[0], infos, parts)
            except JsonError as exc:
                raise JsonError(
                    f"Failed to process element: {index} of 'instances' list. Error: " + exc.status_text()
                ) from None
    return {name: np.stack(arrays) for name, arrays in parts.items()}


def _instance_item(
    value: Any, name: str, infos: Mapping[str, int], parts: dict[str, list[NDArray[Any]]]
) -> None:
    if name not in infos:
        raise JsonError(f"JSON object: does not have named input: {name}")
    array = _exact(value, infos[name])
    seen = parts.setdefault(name, [])
    if seen:
        first = seen[0]
        if first.size != array.size:
            raise JsonError(f"Expecting tensor size: {first.size} but got: {array.size}")
        if first.shape != array.shape:
            raise JsonError(f"Expecting shape [{_sizes(first.shape)}] but got: [{_sizes(array.shape)}]")
    seen.append(array)


def _columns(value: Any, infos: Mapping[str, int], bool_free: bool) -> dict[str, Any]:
    """json_tensor.cc's FillTensorMapFromInputsMap (columnar format)."""
    names = sorted(infos)
    if not isinstance(value, dict) or is_b64(value):
        if len(infos) > 1:
            raise JsonError(
                "inputs is a plain value/list, but expecting an object as multiple input tensors "
                "required as per tensorinfo_map"
            )
        selected = {names[0]: value}
    else:
        selected = {}
        for name in names:
            if name not in value:
                raise JsonError(f"Missing named input: {name} in 'inputs' object.")
            selected[name] = value[name]
    return {name: tensor_from_json(item, infos[name], bool_free) for name, item in selected.items()}


def predict_inputs_from_json(
    doc: Mapping[str, Any], infos: Mapping[str, int], body: bytes | None = None
) -> tuple[dict[str, NDArray[Any]], str]:
    """The input tensors of a Predict body, and its format (:data:`ROW` or :data:`COLUMNAR`).

    Args:
        doc: the parsed body (:func:`parse_json`).
        infos: the signature's inputs, alias -> ``DataType`` number.
        body: the raw body; when it is given and holds no ``true``/``false``, numeric
            tensors take the one-step numpy path.

    Raises:
        JsonError: with TF Serving's message.
    """
    bool_free = body is not None and b"true" not in body and b"false" not in body
    if "instances" in doc:
        if "inputs" in doc:
            raise JsonError(
                f"JSON Value: {error_json_text(doc)} Not formatted correctly expecting only one of "
                "'inputs' or 'instances' keys to exist "
            )
        if not isinstance(doc["instances"], list):
            raise JsonError(f"JSON Value: {error_json_text(doc)} Excepting 'instances' to be an list/array")
        if not doc["instances"]:
            raise JsonError(f"JSON Value: {error_json_text(doc)} No values in 'instances' array")
        return _instances(doc["instances"], infos, bool_free), ROW
    if "inputs" in doc:
        return _columns(doc["inputs"], infos, bool_free), COLUMNAR
    raise JsonError("Missing 'inputs' or 'instances' key")
