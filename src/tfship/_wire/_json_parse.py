"""TF Serving's REST JSON read in: request bodies parsed as its rapidjson reader parses them,
and the error type and texts every JSON module shares.

:func:`parse_json` reads a body (NaN/Infinity allowed, nothing after the root value looked
at, any depth) and turns Python's json messages into rapidjson's ``GetParseError_En`` texts,
which TF Serving returns. Errors are :class:`JsonError` with the gRPC code name TF Serving
returns for them; :func:`error_json` writes its error body and :func:`error_json_text` quotes a
value as its errors do. ``{"b64": ...}`` objects, the REST form of binary data, are told and
decoded here (:func:`is_b64`, :func:`b64_decode`).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from typing import Any

import orjson

from tfship._wire._json_doc import JsonSyntaxError, debug_text, json_string, read_deep

__all__ = [
    "JsonError",
    "b64_decode",
    "error_json",
    "error_json_text",
    "is_b64",
    "json_string",
    "json_type",
    "parse_json",
    "signature_name_of",
]


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
