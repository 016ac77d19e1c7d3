"""TF Serving's REST JSON, both ways: request bodies to tensors, answers to text.

The rules are ``json_tensor.cc``'s (TF Serving 2.20): request values are checked against the
signature's dtypes with its messages; answers are written as its rapidjson ``PrettyWriter``
writes them, byte for byte: 4-space indents, row-format items and classification results on
one line (``kFormatSingleLineArray``), floats as ``%g`` when that round-trips and with full
precision (``%.9g``/``%.17g``) when not, ``.0`` on whole numbers, ``NaN``/``Infinity``.

Speed: a numeric tensor goes from JSON to one numpy array in one step (the per-value rules only
run when that step meets something it cannot vouch for, and then give the exact error), and
from an array to JSON text through one printf-style template per tensor shape, with no Python
loop per value.

Errors are :class:`JsonError` with the gRPC code name TF Serving returns for them.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np
import orjson
from numpy.typing import NDArray

from tfship._wire._formats import DT_STRING, ENUM_OF_NUMPY, numpy_dtype, tf_dtype_name
from tfship._wire._json_doc import JsonSyntaxError, debug_text, json_string, read_deep

__all__ = [
    "ROW",
    "COLUMNAR",
    "JsonError",
    "answer_from_json",
    "b64_decode",
    "b64_json",
    "classification_json",
    "error_json",
    "error_json_text",
    "example_to_json",
    "format_decimal",
    "is_b64",
    "json_string",
    "json_type",
    "lossless_float32",
    "parse_json",
    "predict_inputs_from_json",
    "predict_json",
    "regression_json",
    "signature_name_of",
    "tensor_from_json",
    "tensor_to_json",
    "text_or_b64",
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


class JsonError(ValueError):
    """Raised when a REST body breaks TF Serving's JSON rules; ``code`` is the gRPC code name."""

    def __init__(self, message: str, code: str = "INVALID_ARGUMENT") -> None:
        super().__init__(message)
        self.message = message
        self.code = code

    def status_text(self) -> str:
        """``Status::ToString``, as TF Serving embeds it in "Failed to process element" texts."""
        return f"{self.code}: {self.message}"


# strings and errors ------------------------------------------------------------------------------
def error_json(message: str) -> bytes:
    """TF Serving's REST error body, ``MakeJsonFromStatus``: valid JSON, as its writer pretty
    prints it.

    Example:
        >>> error_json("input 'x': bad")
        b'{\\n    "error": "input \\'x\\': bad"\\n}'
    """
    return ('{\n    "error": ' + json_string(message) + "\n}").encode("utf-8")


def error_json_text(value: Any) -> str:
    """A JSON value as TF Serving 2.18+ quotes it in an error (``JsonValueToDebugString``):
    4-space indents, arrays on one line, cut once 256 bytes are written.

    Not tfship's own ``--json`` output, which is ``tfship._output.json_text`` (one line).

    Example:
        >>> print(error_json_text({"x": [1, 2]}))
        {
            "x": [1, 2]
        }
    """
    return debug_text(value)


def json_type(value: Any) -> str:
    """The name TF Serving gives a JSON value's type in its errors (``Null``, ``Array``, ...).

    Example:
        >>> json_type(None), json_type(True), json_type([1]), json_type(2.5)
        ('Null', 'True', 'Array', 'Number')
    """
    if value is None:
        return "Null"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, dict):
        return "Object"
    if isinstance(value, list):
        return "Array"
    if isinstance(value, str):
        return "String"
    return "Number"


# parsing -----------------------------------------------------------------------------------------
def parse_json(body: bytes) -> dict[str, Any]:
    """Parse a request body as rapidjson does (NaN/Infinity allowed; must be an object).

    Raises:
        JsonError: with rapidjson's ``GetParseError_En`` text and the offset.
    """
    if not body:
        raise JsonError("JSON Parse error: The document is empty")
    try:
        # orjson is ~4x faster on large bodies; what it refuses (NaN, Infinity, bad input)
        # goes to json, which accepts NaN as rapidjson does and finds the error's words
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        doc = _parse_slowly(body)
    if not isinstance(doc, dict):
        raise JsonError(f"JSON Value: {error_json_text(doc)} Is not object")
    return doc


def _parse_slowly(body: bytes) -> Any:
    """json's reader for what orjson refuses, with rapidjson's words, read as TF Serving 2.18+
    reads: what follows the root value is never looked at, and depth has no limit."""
    try:
        text = body.decode("utf-8")
        bad_byte = None
    except UnicodeDecodeError as exc:
        text, bad_byte = body[: exc.start].decode("utf-8"), exc.start
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            if bad_byte is not None:
                raise JsonError(
                    f"JSON Parse error: Invalid encoding in string. at offset: {bad_byte}"
                ) from None
            raise JsonError(f"JSON Parse error: {_rapidjson_text(exc)} at offset: {exc.pos}") from None
        doc = json.JSONDecoder().raw_decode(text, _json_start(text))[0]
    except RecursionError:  # nested deeper than json's C reader goes
        try:
            doc = read_deep(text)
        except JsonSyntaxError as exc:
            cut = bad_byte is not None and exc.offset >= len(text)  # the text ran into the bad byte
            what, offset = ("Invalid encoding in string.", bad_byte) if cut else (exc.text, exc.offset)
            raise JsonError(f"JSON Parse error: {what} at offset: {offset}") from None
    at = _lone_surrogate(body)  # json takes "\ud800"; no UTF-8 text can hold it
    if at is not None:
        raise JsonError(f"JSON Parse error: The surrogate pair in string is invalid. at offset: {at}")
    return doc


def _json_start(text: str) -> int:
    return len(text) - len(text.lstrip(" \t\n\r"))


_ESCAPE = re.compile(rb"\\(?:u([0-9A-Fa-f]{4})|.)", re.S)


def _lone_surrogate(body: bytes) -> int | None:
    """Where the first ``\\uD800``-``\\uDFFF`` escape outside a high-low pair begins, as
    rapidjson reports it (the escape's backslash); None when every one is paired."""
    high: int | None = None  # the offset of a high surrogate waiting for its low half
    follows = -1
    for match in _ESCAPE.finditer(body):
        code = int(match.group(1), 16) if match.group(1) else -1
        if high is not None:
            if match.start() != follows or not 0xDC00 <= code <= 0xDFFF:
                return high
            high = None
        elif 0xD800 <= code <= 0xDBFF:
            high, follows = match.start(), match.end()
        elif 0xDC00 <= code <= 0xDFFF:
            return match.start()
    return high


# Python's json messages -> rapidjson's GetParseError_En texts, which TF Serving returns.
_PARSE_ERRORS = {
    "Expecting value": "Invalid value.",
    "Expecting property name enclosed in double quotes": "Missing a name for object member.",
    "Expecting ':' delimiter": "Missing a colon after a name of object member.",
    "Unterminated string starting at": "Missing a closing quotation mark in string.",
    "Invalid \\escape": "Invalid escape character in string.",
    "Invalid control character at": "Invalid encoding in string.",
}


def _rapidjson_text(exc: json.JSONDecodeError) -> str:
    if exc.msg == "Expecting ',' delimiter":
        # rapidjson tells objects from arrays; find the innermost one still open
        depth: list[str] = []
        for char in exc.doc[: exc.pos]:
            if char in "[{":
                depth.append(char)
            elif char in "]}" and depth:
                depth.pop()
        if depth and depth[-1] == "[":
            return "Missing a comma or ']' after an array element."
        return "Missing a comma or '}' after an object member."
    return _PARSE_ERRORS.get(exc.msg, exc.msg)


def signature_name_of(doc: Mapping[str, Any]) -> str | None:
    """The body's ``signature_name`` (None when absent); it must be a string."""
    if "signature_name" not in doc:
        return None
    name = doc["signature_name"]
    if not isinstance(name, str):
        raise JsonError(
            f"JSON Value: {error_json_text(doc)} not formatted correctly. 'signature_name' key "
            "must be a string value."
        )
    return name


def is_b64(value: Any) -> bool:
    """Whether a JSON value is a ``{"b64": "..."}`` object, the REST form of binary data.

    Example:
        >>> is_b64({"b64": "/w=="}), is_b64({"b64": 1}), is_b64("x")
        (True, False, False)
    """
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get("b64"), str)


def b64_decode(value: Any) -> bytes:
    """The bytes a ``{"b64": "..."}`` object stands for, with TF Serving's errors.

    Example:
        >>> b64_decode({"b64": "/w=="})
        b'\\xff'
    """
    if not is_b64(value):
        raise JsonError(f"JSON Value: {error_json_text(value)} not formatted correctly for base64 data")
    try:
        return base64.b64decode(value["b64"], validate=True)
    except (binascii.Error, ValueError):
        raise JsonError("Unable to base64 decode") from None


# JSON -> tensors: the exact per-value rules ------------------------------------------------------
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


# numbers -> text ---------------------------------------------------------------------------------
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


# -- the client's side: tensors and Examples to request JSON, answers back to arrays ----------


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
