"""The JSON Lines writer: one JSON object per row, pass-through columns then outputs.

Each output column is encoded by one orjson call and cut into its rows' texts; a chunk holding
a value orjson would write differently from ``json`` is written by ``json`` instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from tfship.loaders._output_values import json_values, keep_values, text_value
from tfship.loaders._publish import Writer

Array = npt.NDArray[Any]


class JsonlWriter(Writer):
    """One JSON object per row: pass-through columns, then outputs (per-row shapes kept).

    Rows are encoded by orjson (in C, about as fast as the Arrow CSV writer); a chunk holding
    a value orjson writes differently from ``json`` (NaN or an infinity, which orjson writes as
    null) or cannot write is encoded by ``json``, so the file says the same either way.
    """

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.stream: BinaryIO = self.file.open()

    def write(
        self,
        keep: Mapping[str, Any],
        outputs: Mapping[str, Array],
        inputs: Mapping[str, Any] | None = None,
    ) -> None:
        columns: dict[str, Any] = {k: keep_values(v) for k, v in keep.items()}
        columns.update({k: _fast_values(v) for k, v in outputs.items()})
        rows = len(next(iter(outputs.values()))) if outputs else len(next(iter(columns.values()), []))
        data = None if _non_finite(outputs) else _orjson_lines(columns, rows)
        if data is None:
            columns.update({k: json_values(v) for k, v in outputs.items()})
            names = list(columns)
            text = "".join(
                json.dumps(dict(zip(names, values)), ensure_ascii=False, separators=(",", ":")) + "\n"
                for values in zip(*columns.values())
            )
            data = text.encode("utf-8")
        self.stream.write(data)
        self.rows += rows

    def finish(self) -> None:
        self.stream.close()


class _Same:
    """An output whose rows are all the same (a classifier's ``all_classes``): encoded once."""

    def __init__(self, row: Any) -> None:
        self.row = row


class _OneEach:
    """The values of a [batch, 1] output, one per row: written as one-element lists."""

    def __init__(self, values: list[Any]) -> None:
        self.values = values


class _Encoded(list):  # type: ignore[type-arg]
    """Each row's JSON text already (bytes), as ``_byte_texts`` makes them."""


def _fast_values(array: Array) -> Any:
    """An output as ``_orjson_lines`` takes it: numbers stay an array (no Python object per
    value), text is decoded, and rows that are all the same are one ``_Same``."""
    if array.ndim >= 2 and array.shape[0] > 1 and bool((array == array[:1]).all()):
        return _Same(json_values(array[:1])[0] if array.dtype == object else array[0])
    if array.dtype == object and array.ndim == 2 and array.shape[1] == 1:
        return _OneEach(_byte_texts(array.reshape(-1)) or json_values(array.reshape(-1)))  # [batch, 1]
    if array.dtype == object and array.ndim == 1:
        return _byte_texts(array) or json_values(array)
    return json_values(array) if array.dtype == object else array


def _byte_texts(array: Array) -> _Encoded | None:
    """The JSON text of each value of a 1-D array of ``bytes`` (a class name per row), each
    distinct value encoded once; None when a value is not ``bytes``."""
    import orjson

    flat = array.tolist()
    distinct = set(flat)
    if not all(type(v) is bytes for v in distinct):
        return None
    texts = {v: orjson.dumps(text_value(v)) for v in distinct}
    return _Encoded(map(texts.__getitem__, flat))


def _non_finite(outputs: Mapping[str, Array]) -> bool:
    return any(a.dtype.kind == "f" and not np.isfinite(a).all() for a in outputs.values())


#: where one element of an indented JSON list ends and the next begins (deeper levels are
#: indented further), and the indentation inside an element. A JSON string never holds a raw
#: newline, so neither pattern can match inside a string.
_TOP_LEVEL = re.compile(rb",\n  (?! )")
_INDENT = re.compile(rb"\n +")


def _orjson_lines(columns: Mapping[str, Any], rows: int) -> bytes | None:
    """The rows of ``columns`` as JSON lines; None when a value needs ``json`` (see JsonlWriter).

    Each column is encoded by one orjson call (one call per value costs more than the
    encoding itself) and cut into its rows' texts; a row is then one ``%`` of a template
    holding the keys and the values that are the same on every row.
    """
    import orjson

    if rows == 0:
        return b""
    parts: list[Any] = []  # per place in a line: the bytes of every row, or each row's texts
    literal = b""  # what stands between two per-row texts, the same on every row
    for position, (name, values) in enumerate(columns.items()):
        encoded = _orjson_values(orjson, values)
        if encoded is None:
            return None
        texts, around = encoded
        key = (b"{" if position == 0 else b",") + orjson.dumps(name) + b":"
        if isinstance(texts, bytes):  # the same text on every row
            literal += key + around[0] + texts + around[1]
            continue
        if len(texts) != rows:
            return None
        parts += [literal + key + around[0], texts]
        literal = around[1]
    parts.append(literal + b"}\n")
    if len(parts) == 1:
        return parts[0] * rows  # type: ignore[no-any-return]
    # A grid of rows by places, joined in one call: no Python step per row.
    grid = np.empty((rows, len(parts)), dtype=object)
    for place, part in enumerate(parts):
        grid[:, place] = part
    return b"".join(grid.ravel().tolist())


#: bytes written before and after each row's text (the brackets split off a 2-D array's rows).
_NOTHING = (b"", b"")
_BRACKETS = (b"[", b"]")


def _orjson_values(orjson: Any, values: Any) -> tuple[Any, tuple[bytes, bytes]] | None:
    """The JSON text of each row of ``values`` (a list, a ``_Same`` or a numeric array: a
    float32 is written as its shortest text, as the CSV writer writes it), or one text for a
    ``_Same``, and what goes around each text."""
    if isinstance(values, _Encoded):
        return values, _NOTHING
    try:
        if isinstance(values, _Same):
            return orjson.dumps(values.row, option=orjson.OPT_SERIALIZE_NUMPY), _NOTHING
        if isinstance(values, _OneEach):
            texts = _orjson_values(orjson, values.values)
            return None if texts is None else (texts[0], _BRACKETS)
        if isinstance(values, np.ndarray) and values.ndim <= 2 and values.size:
            # Numbers hold no comma or bracket: the compact text splits where rows meet.
            text: bytes = orjson.dumps(values, option=orjson.OPT_SERIALIZE_NUMPY)
            if values.ndim == 1:
                return text[1:-1].split(b","), _NOTHING
            return text[2:-2].split(b"],["), _BRACKETS
        text = orjson.dumps(values, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY)
    except TypeError:  # a value orjson does not write (a Decimal, an int beyond 64 bits)
        return None
    if not (text.startswith(b"[\n  ") and text.endswith(b"\n]")):
        return None
    body = text[4:-2]
    if b"\n    " not in body:  # scalars: no element spans lines
        return _TOP_LEVEL.split(body), _NOTHING
    if b"\n      " not in body:  # a list of scalars per row, the usual [batch, k] output
        flat = body.replace(b"[\n    ", b"[").replace(b",\n    ", b",").replace(b"\n  ]", b"]")
        flat = flat.replace(b"{\n    ", b"{").replace(b"\n  }", b"}")
        return flat.split(b",\n  "), _NOTHING
    # One newline between elements, none inside them, then one split.
    return _INDENT.sub(b"", _TOP_LEVEL.sub(b"\n", body)).split(b"\n"), _NOTHING
