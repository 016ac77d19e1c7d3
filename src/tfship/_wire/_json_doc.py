"""A JSON document as TF Serving 2.18 and later read and quote it, whatever its depth.

TF Serving parses request bodies with rapidjson's iterative reader (no recursion, so an
array nested 500,000 deep under a key the request never reads is accepted), stops reading
once the root value is complete (what follows it is never looked at), and quotes a value
in an error through a writer that stops once 256 bytes are written. Both are here without
recursion in Python: ``read_deep`` builds the document with a stack of its own, and
``debug_text`` walks it lazily, so a value of any depth costs its first 256 bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

__all__ = [
    "DEBUG_TEXT_BYTES",
    "JsonSyntaxError",
    "debug_text",
    "json_string",
    "rapidjson_double",
    "read_deep",
]

DEBUG_TEXT_BYTES = 256  # json_tensor.cc's kMaxJsonDebugStringBytes

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_LITERALS = (
    ("true", True),
    ("false", False),
    ("null", None),
    ("NaN", float("nan")),
    ("Infinity", float("inf")),
    ("-Infinity", float("-inf")),
)
_UINT64_END = 2**64
_LOWER_HEX = re.compile(r"\\u00([0-9a-f]{2})")


class JsonSyntaxError(ValueError):
    """A body that is not JSON: rapidjson's ``GetParseError_En`` text and the offset."""

    def __init__(self, text: str, offset: int) -> None:
        super().__init__(f"{text} at offset: {offset}")
        self.text, self.offset = text, offset


def json_string(text: str) -> str:
    """A JSON string literal escaped as rapidjson's ``Writer::String`` does.

    Quotes, backslashes and control characters are escaped (``\\n``, ``\\u001F``), everything
    else, non-ASCII included, is written as it is.

    Example:
        >>> print(json_string("input 'x' \\"y\\"\\n"))
        "input 'x' \\"y\\"\\n"
    """
    quoted = json.dumps(text, ensure_ascii=False)
    if "\\u00" in quoted:  # rapidjson writes its hex digits in upper case
        quoted = _LOWER_HEX.sub(lambda m: "\\u00" + m.group(1).upper(), quoted)
    return quoted


# reading ---------------------------------------------------------------------------------------
def read_deep(text: str) -> Any:
    """Read the first JSON value of ``text`` with an explicit stack (any depth, no recursion).

    What follows the value is not read, as rapidjson's ``kParseStopWhenDoneFlag`` does.
    Containers join their parent when they open; runs of brackets open and close at once.

    Example:
        >>> read_deep('{"a": ' + "[" * 3 + "]" * 3 + '} trailing')
        {'a': [[[]]]}

    Raises:
        JsonSyntaxError: the text is not JSON up to the end of its root value.
    """
    reader = _DeepReader(text)
    reader.read()
    return reader.root


_OPEN_RUN = re.compile(r"[\[ \t\n\r]*")  # from a "[": the brackets and the space between
_CLOSE_RUN = re.compile(r"[\] \t\n\r]*")


class _DeepReader:
    """The state of ``read_deep``: the open containers, each object's pending member name."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.root: Any = None
        self.stack: list[Any] = []
        self.names: list[str | None] = []

    def _attach(self, value: Any) -> None:
        if not self.stack:
            self.root = value
        elif type(self.stack[-1]) is list:
            self.stack[-1].append(value)
        else:
            self.stack[-1][self.names[-1]] = value

    def _open_arrays(self, pos: int) -> int:
        """A run of ``[``: every array made, linked and pushed at once."""
        match = _OPEN_RUN.match(self.text, pos)
        assert match is not None
        arrays: list[list[Any]] = [[] for _ in range(match.group().count("["))]
        self._attach(arrays[0])
        for outer, inner in zip(arrays, arrays[1:]):
            outer.append(inner)
        self.stack.extend(arrays)
        self.names.extend([None] * len(arrays))
        return match.end()

    def _close_arrays(self, pos: int) -> int:
        """A run of ``]`` closing arrays only: popped at once; else one bracket at a time."""
        match = _CLOSE_RUN.match(self.text, pos)
        assert match is not None
        count = match.group().count("]")
        if count > 1 and count <= len(self.stack) and all(type(c) is list for c in self.stack[-count:]):
            del self.stack[-count:], self.names[-count:]
            return match.end()
        self.stack.pop()
        self.names.pop()
        return pos + 1

    def read(self) -> None:
        text, pos = self.text, _skip(self.text, 0)
        while True:
            # a value starts at pos
            char = text[pos : pos + 1]
            if char == "[":
                pos = _skip(text, self._open_arrays(pos))
                if not text.startswith("]", pos):
                    continue
                pos = self._close_arrays(pos)
            elif char == "{":
                members: dict[str, Any] = {}
                self._attach(members)
                self.stack.append(members)
                self.names.append(None)
                pos = _skip(text, pos + 1)
                if not text.startswith("}", pos):
                    pos = self._name(pos)
                    continue
                self.stack.pop()
                self.names.pop()
                pos += 1
            else:
                value, pos = _scalar(text, pos)
                self._attach(value)
            # a value ended: commas and closing brackets until the next value starts
            while True:
                if not self.stack:
                    return
                pos = _skip(text, pos)
                top = self.stack[-1]
                if text.startswith(",", pos):
                    pos = _skip(text, pos + 1)
                    if type(top) is dict:
                        pos = self._name(pos)
                    break
                if type(top) is list:
                    if not text.startswith("]", pos):
                        raise JsonSyntaxError("Missing a comma or ']' after an array element.", pos)
                    pos = self._close_arrays(pos)
                elif text.startswith("}", pos):
                    self.stack.pop()
                    self.names.pop()
                    pos += 1
                else:
                    raise JsonSyntaxError("Missing a comma or '}' after an object member.", pos)

    def _name(self, pos: int) -> int:
        """Read ``"name":`` of an object member; the name waits for its value."""
        text = self.text
        if not text.startswith('"', pos):
            raise JsonSyntaxError("Missing a name for object member.", pos)
        name, pos = _string(text, pos)
        pos = _skip(text, pos)
        if not text.startswith(":", pos):
            raise JsonSyntaxError("Missing a colon after a name of object member.", pos)
        self.names[-1] = name
        return _skip(text, pos + 1)


def _skip(text: str, pos: int) -> int:
    match = _WHITESPACE.match(text, pos)
    return match.end() if match else pos


def _string(text: str, pos: int) -> tuple[str, int]:
    try:
        return json.decoder.scanstring(text, pos + 1)  # type: ignore[attr-defined,no-any-return]
    except json.JSONDecodeError as exc:
        if exc.msg.startswith("Unterminated string"):
            raise JsonSyntaxError("Missing a closing quotation mark in string.", len(text)) from None
        if exc.msg.startswith("Invalid control"):
            raise JsonSyntaxError("Invalid encoding in string.", exc.pos) from None
        raise JsonSyntaxError("Invalid escape character in string.", exc.pos) from None


def _scalar(text: str, pos: int) -> tuple[Any, int]:
    """A string, number or literal at ``pos``, and where it ends."""
    if text.startswith('"', pos):
        return _string(text, pos)
    for word, literal in _LITERALS:
        if text.startswith(word, pos):
            return literal, pos + len(word)
    match = _NUMBER.match(text, pos)
    if match is None:
        raise JsonSyntaxError("Invalid value.", pos)
    whole, fraction, exponent = match.groups()
    if fraction or exponent:
        return float(match.group(0)), match.end()
    return int(whole), match.end()


# quoting ---------------------------------------------------------------------------------------
def debug_text(value: Any, limit: int = DEBUG_TEXT_BYTES) -> str:
    """``value`` as TF Serving 2.18+ quotes it in an error: rapidjson's pretty writer (4-space
    indents, arrays on one line) that stops before any token once ``limit`` bytes are written.

    The cut may fall inside the JSON (it is a quotation, not a document), and a NaN or an
    infinity stops the writer, as rapidjson's refuses them.

    Example:
        >>> print(debug_text({"b64": [1, 2.5, "x"]}))
        {
            "b64": [1, 2.5, "x"]
        }
        >>> len(debug_text(list(range(1000))))
        257
    """
    writer = _DebugWriter(limit)
    for event in _events(value):
        if not writer.write(event):
            break
    return "".join(writer.parts)


_START_ARRAY, _END_ARRAY, _START_OBJECT, _END_OBJECT, _KEY, _SCALAR = range(6)


def _events(value: Any) -> Iterator[tuple[int, Any]]:
    """The handler calls of rapidjson's ``Value::Accept``, lazily, with a stack of iterators."""
    stack: list[tuple[Iterator[tuple[int, Any]], int | None]] = [(iter([(_SCALAR, value)]), None)]
    while stack:
        items, closer = stack[-1]
        item = next(items, None)
        if item is None:
            stack.pop()
            if closer is not None:
                yield closer, None
            continue
        kind, member = item
        if kind == _KEY:
            yield item
        elif isinstance(member, list):
            yield _START_ARRAY, None
            stack.append((((_SCALAR, element) for element in member), _END_ARRAY))
        elif isinstance(member, dict):
            yield _START_OBJECT, None
            stack.append((_members(member), _END_OBJECT))
        else:
            yield _SCALAR, member


def _members(value: dict[str, Any]) -> Iterator[tuple[int, Any]]:
    for key, member in value.items():
        yield _KEY, key
        yield _SCALAR, member


class _DebugWriter:
    """rapidjson's ``PrettyWriter`` with ``kFormatSingleLineArray`` behind json_tensor.cc's
    ``JsonWriterWithLimit``: each call is refused once the buffer holds ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.limit = limit
        self.levels: list[list[Any]] = []  # [in_array, values written]

    def _put(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text) if text.isascii() else len(text.encode("utf-8"))

    def _indent(self) -> str:
        return " " * (4 * len(self.levels))

    def _prefix(self) -> None:
        if not self.levels:
            return
        level = self.levels[-1]
        if level[0]:
            if level[1]:
                self._put(", ")
        else:
            if level[1]:
                self._put(",\n" if level[1] % 2 == 0 else ": ")
            else:
                self._put("\n")
            if level[1] % 2 == 0:
                self._put(self._indent())
        level[1] += 1

    def write(self, event: tuple[int, Any]) -> bool:
        if self.size >= self.limit:
            return False
        kind, value = event
        if kind in (_START_ARRAY, _START_OBJECT):
            self._prefix()
            self._put("[" if kind == _START_ARRAY else "{")
            self.levels.append([kind == _START_ARRAY, 0])
        elif kind == _END_ARRAY:
            self.levels.pop()
            self._put("]")
        elif kind == _END_OBJECT:
            if self.levels.pop()[1]:
                self._put("\n" + self._indent())
            self._put("}")
        else:
            self._prefix()
            text = _scalar_text(value)
            if text is None:
                return False  # NaN and infinities: rapidjson's writer refuses them
            self._put(text)
        return True


def _scalar_text(value: Any) -> str | None:
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, str):
        return json_string(value)
    if isinstance(value, int) and -(2**63) <= value < _UINT64_END:
        return str(value)
    try:
        return rapidjson_double(float(value))  # rapidjson reads a wider integer as a double
    except OverflowError:
        return None


def rapidjson_double(value: float) -> str | None:
    """A double as rapidjson's writer writes it (Grisu's shortest digits, ``Prettify``):
    ``1.0``, ``0.00001``, ``1e-7``, ``1e21``; None for NaN and infinities.

    Example:
        >>> [rapidjson_double(v) for v in (2.5, 100.0, 1e-5, 1.5e-7, 1e300, -0.0)]
        ['2.5', '100.0', '0.00001', '1.5e-7', '1e300', '-0.0']
    """
    if value != value or value in (float("inf"), float("-inf")):
        return None
    if value == 0:
        return "-0.0" if str(value).startswith("-") else "0.0"
    sign = "-" if value < 0 else ""
    _, digit_tuple, exponent = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    assert isinstance(exponent, int)
    length, point = len(digits), len(digits) + exponent  # value = 0.digits * 10**point
    if 0 <= exponent and point <= 21:
        text = digits + "0" * exponent + ".0"
    elif 0 < point <= 21:
        text = digits[:point] + "." + digits[point:]
    elif -6 < point <= 0:
        text = "0." + "0" * -point + digits
    elif length == 1:
        text = f"{digits}e{point - 1}"
    else:
        text = f"{digits[0]}.{digits[1:]}e{point - 1}"
    return sign + text
