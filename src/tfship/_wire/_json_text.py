"""TF Serving's REST answers as text, written as its rapidjson ``PrettyWriter`` writes them, byte
for byte: 4-space indents, row-format items and classification results on one line
(``kFormatSingleLineArray``), floats as ``%g`` when that round-trips and with full precision
(``%.9g``/``%.17g``) when not, ``.0`` on whole numbers, ``NaN``/``Infinity``.

Speed: an array goes to JSON text through one printf-style template per tensor shape, with
no Python loop per value.
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tfship._wire._formats import DT_STRING, tf_dtype_name
from tfship._wire._json_doc import json_string
from tfship._wire._json_parse import JsonError
from tfship._wire._json_values import COLUMNAR

__all__ = [
    "classification_json",
    "format_decimal",
    "predict_json",
    "regression_json",
]


def format_decimal(value: float, single: bool) -> str:
    """json_tensor.cc's WriteDecimal for one number: ``%g`` if it round-trips, else full precision
    (``%.9g`` float, ``%.17g`` double); ``.0`` on whole numbers written without an exponent;
    NaN/Infinity spelled as JavaScript does.

    Example:
        >>> format_decimal(0.1, True), format_decimal(3.0, True), format_decimal(0.1234567, True)
        ('0.1', '3.0', '0.123456702')
    """
    return _decimals(np.array([value], np.float32 if single else np.float64))[0]


def _printf(spec: str, values: list[float]) -> list[str]:
    """``spec % value`` for every value, as one C-level ``%`` over a tuple."""
    if not values:
        return []
    return ((spec + "\n") * len(values) % tuple(values)).split("\n")[:-1]


def _six_digits_round_trip(flat: Any, single: bool) -> Any:
    """Which values ``%g`` (6 significant digits) writes back exactly.

    For float32 numpy decides: the 6-digit rounding computed in double precision (error
    ~1e-16, far below float32's gaps of ~1e-7) is compared with half the gap to the
    neighbouring float32. Values too close to call, and doubles, are printed and parsed back.
    """
    yes = np.zeros(flat.shape, dtype=bool)
    unsure = np.ones(flat.shape, dtype=bool)
    if single:
        x = flat.astype(np.float64)
        magnitude = np.abs(x)
        nonzero = magnitude > 0
        exponent = np.floor(np.log10(np.where(nonzero, magnitude, 1.0)))
        scale = np.power(10.0, 5 - exponent)
        scaled = x * scale
        distance = np.abs(np.rint(scaled) / scale - x)
        gap = np.abs(np.spacing(flat)).astype(np.float64)
        near_tie = np.abs(np.abs(scaled - np.trunc(scaled)) - 0.5) < 1e-6
        yes = ((distance < gap * 0.2499) & ~near_tie) | ~nonzero
        unsure = ~(yes | ((distance > gap * 0.5001) & ~near_tie))
    if unsure.any():
        probe = flat[unsure]
        back = np.array(_printf("%g", probe.tolist()), dtype=np.float64)
        yes[unsure] = back.astype(flat.dtype) == probe
    return yes


_FEW = 48  # below this many values numpy's fixed costs outweigh a loop over them


def _decimal(value: float, single: bool) -> str:
    """WriteDecimal for one value (``value`` already exact in its type)."""
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "-Infinity" if value < 0 else "Infinity"
    text = f"{value:g}"
    back = float(text)
    if single:
        back = _F32.unpack(_F32.pack(back))[0]
    if back != value:
        text = f"{value:.9g}" if single else f"{value:.17g}"
    if "." not in text and "e" not in text:
        text += ".0"
    return text


_F32 = struct.Struct("<f")


def _decimals(array: NDArray[Any]) -> list[str]:
    """WriteDecimal for every value of a float array, in C loops (``%`` over whole tuples)."""
    single = array.dtype == np.float32
    flat: Any = np.ascontiguousarray(array, np.float32 if single else np.float64).reshape(-1)
    if flat.size < _FEW:
        return [_decimal(value, single) for value in flat.tolist()]
    finite = np.isfinite(flat)
    with np.errstate(all="ignore"):
        short = _six_digits_round_trip(flat, single) & finite
    texts: Any = np.empty(flat.size, dtype=object)
    if short.any():
        texts[short] = _printf("%g", flat[short].tolist())
    full = finite & ~short
    if full.any():
        texts[full] = _printf("%.9g" if single else "%.17g", flat[full].tolist())
    # whole numbers printed without an exponent get ".0"
    limit = np.where(short, 1e6, 1e9 if single else 1e17)
    with np.errstate(invalid="ignore"):
        whole = finite & (flat == np.trunc(flat)) & (np.abs(flat) < limit)
    if whole.any():
        texts[whole] = texts[whole] + ".0"
    if not finite.all():
        texts[np.isnan(flat)] = "NaN"
        texts[np.isposinf(flat)] = "Infinity"
        texts[np.isneginf(flat)] = "-Infinity"
    result: list[str] = texts.tolist()
    return result


def _value_texts(array: NDArray[Any], dtype: int, as_bytes: bool) -> list[str]:
    """Every value of a tensor as its JSON text, in C loops except for strings."""
    if array.size == 0:
        return []  # TF Serving only meets a dtype it cannot write when it writes a value
    if dtype in (1, 2):
        return _decimals(array)
    if dtype == 10:
        texts: list[str] = np.where(array.reshape(-1), "true", "false").tolist()
        return texts
    if dtype in (3, 4, 5, 6, 9, 22, 23):
        return list(map(str, array.reshape(-1).tolist()))
    if dtype == DT_STRING:
        flat = array.reshape(-1).tolist()
        if as_bytes:
            return [json_string(base64.b64encode(_raw(v)).decode("ascii")) for v in flat]
        return [json_string(_raw(v).decode("utf-8", errors="replace")) for v in flat]
    raise JsonError(f"Failed to write JSON value for tensor type: {tf_dtype_name(dtype)}")


def _raw(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


# tensors -> text: templates ----------------------------------------------------------------------
# rapidjson's PrettyWriter indents each nested container by 4 spaces; ``depth`` below is the
# number of containers open around a value. Templates hold "%s" for every value.
def _leaf(depth: int, as_bytes: bool) -> str:
    if not as_bytes:
        return "%s"
    return "{\n" + " " * 4 * (depth + 1) + '"b64": %s\n' + " " * 4 * depth + "}"


def _pretty(shape: tuple[int, ...], depth: int, as_bytes: bool) -> str:
    if not shape:
        return _leaf(depth, as_bytes)
    if shape[0] == 0:
        return "[]"
    inner = _pretty(shape[1:], depth + 1, as_bytes)
    pad = "\n" + " " * 4 * (depth + 1)
    return "[" + pad + ("," + pad).join([inner] * shape[0]) + "\n" + " " * 4 * depth + "]"


def _single_line(shape: tuple[int, ...], depth: int, as_bytes: bool) -> str:
    if not shape:
        return _leaf(depth, as_bytes)
    if shape[0] == 0:
        return "[]"
    inner = _single_line(shape[1:], depth + 1, as_bytes)
    return "[" + ", ".join([inner] * shape[0]) + "]"


def _is_bytes(name: str, dtype: int) -> bool:
    return dtype == DT_STRING and name.endswith("_bytes")


def predict_json(outputs: Mapping[str, tuple[NDArray[Any], int]], form: str) -> str:
    """MakeJsonFromTensors: ``{"predictions": ...}`` (row) or ``{"outputs": ...}`` (columnar).

    Args:
        outputs: alias -> (array, ``DataType`` number); written in alias order.
        form: :data:`ROW` or :data:`COLUMNAR`, the format of the request.

    Raises:
        JsonError: no outputs; in row format a scalar output or outputs whose batch sizes
            differ; an output dtype JSON cannot carry (half, complex...).
    """
    if not outputs:
        raise JsonError("Cannot convert empty tensor map to JSON")
    named = sorted(outputs.items())
    if form == COLUMNAR:
        return _columnar_json(named)
    batch = -1
    for name, (array, _) in named:
        if array.ndim == 0:
            raise JsonError(f"Tensor name: {name} has no shape information ")
        if batch >= 0 and array.shape[0] != batch:
            raise JsonError(
                f"Tensor name: {name} has inconsistent batch size: {array.shape[0]} expecting: {batch}"
            )
        batch = array.shape[0]
    close = "\n    ]\n}" if batch else "]\n}"
    if len(named) == 1:
        name, (array, dtype) = named[0]
        # the items of "predictions" sit at depth 2: the root object and the array
        item = _single_line(array.shape[1:], 2, _is_bytes(name, dtype))
        template = ", ".join([item] * batch)
        return '{\n    "predictions": [' + _fill(template, array, dtype, name) + close
    return '{\n    "predictions": [' + _row_objects(named, batch) + close


def _fill(template: str, array: NDArray[Any], dtype: int, name: str) -> str:
    texts = _value_texts(array, dtype, _is_bytes(name, dtype))
    return template % tuple(texts) if texts else template


def _row_objects(named: list[tuple[str, tuple[NDArray[Any], int]]], batch: int) -> str:
    """Row format with several outputs: each item an object, its arrays on single lines."""
    members, texts, sizes = [], [], []
    for name, (array, dtype) in named:
        key = json_string(name).replace("%", "%%")
        members.append(12 * " " + key + ": " + _single_line(array.shape[1:], 3, _is_bytes(name, dtype)))
        texts.append(_value_texts(array, dtype, _is_bytes(name, dtype)))
        sizes.append(math.prod(array.shape[1:]))
    item = "{\n" + ",\n".join(members) + "\n        }"
    values: list[str] = []
    for index in range(batch):  # one slice per output and item, never per value
        for column, size in zip(texts, sizes):
            values += column[index * size : (index + 1) * size]
    return ", ".join([item] * batch) % tuple(values)


def _columnar_json(named: list[tuple[str, tuple[NDArray[Any], int]]]) -> str:
    if len(named) == 1:
        name, (array, dtype) = named[0]
        template = _pretty(array.shape, 1, _is_bytes(name, dtype))
        return '{\n    "outputs": ' + _fill(template, array, dtype, name) + "\n}"
    members = []
    for name, (array, dtype) in named:
        template = _pretty(array.shape, 2, _is_bytes(name, dtype))
        members.append("        " + json_string(name) + ": " + _fill(template, array, dtype, name))
    return '{\n    "outputs": {\n' + ",\n".join(members) + "\n    }\n}"


def classification_json(classes: list[list[tuple[str, float]]]) -> str:
    """MakeJsonFromClassificationResult: ``{"results": [[[label, score], ...], ...]}``.

    Args:
        classes: per example, its (label, score) pairs.
    """
    if not classes:
        raise JsonError("Cannot convert empty ClassificationResults to JSON")
    scores = _decimals(np.array([s for row in classes for _, s in row], np.float32))
    rows, at = [], 0
    for row in classes:
        pairs = []
        for label, _ in row:
            pairs.append("[" + json_string(label) + ", " + scores[at] + "]")
            at += 1
        rows.append("[" + ", ".join(pairs) + "]")
    return '{\n    "results": [' + ", ".join(rows) + "\n    ]\n}"


def regression_json(values: list[float]) -> str:
    """MakeJsonFromRegressionResult: ``{"results": [value, ...]}``."""
    if not values:
        raise JsonError("Cannot convert empty RegressionResults to JSON")
    texts = _decimals(np.array(values, np.float32))
    return '{\n    "results": [' + ", ".join(texts) + "]\n}"
