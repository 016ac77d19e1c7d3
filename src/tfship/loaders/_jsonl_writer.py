"""The JSON Lines writer: one JSON object per row, pass-through columns then outputs.

Numbers, booleans and plain text are turned into their rows' texts and joined into lines by
Arrow's compute kernels, which run without holding the interpreter's lock, so the model's
thread goes on while a chunk is written. Other columns are encoded by one orjson call each and
cut into their rows' texts; a chunk holding a value orjson would write differently from
``json`` is written by ``json`` instead. The three ways write the same bytes.
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

    Lines are assembled by Arrow's kernels without the interpreter's lock (``_arrow_lines``);
    a chunk with a column they do not take is encoded by orjson, and one holding a value orjson
    writes differently from ``json`` (NaN or an infinity, which orjson writes as null) or
    cannot write is encoded by ``json``, so the file says the same either way.
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
        rows = len(next(iter(outputs.values()))) if outputs else len(next(iter(keep.values()), []))
        finite = not _non_finite(outputs)
        kept = {k: _kept_floats(v) for k, v in keep.items()}
        data: Any = _arrow_lines({**kept, **outputs}, rows) if finite else None
        if data is None:
            columns: dict[str, Any] = {k: keep_values(v) for k, v in keep.items()}
            columns.update({k: _fast_values(v) for k, v in outputs.items()})
            data = _orjson_lines(columns, rows) if finite else None
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


def _kept_floats(column: Any) -> Any:
    """A kept numpy column of floats as doubles: the other ways write a kept value as Python's
    float (``keep_values``), so a float32 is written as its double, not its shortest text."""
    if isinstance(column, np.ndarray) and column.dtype.kind == "f":
        return column.astype(np.float64)
    return column


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


def _arrow_lines(columns: Mapping[str, Any], rows: int) -> memoryview | None:
    """The rows of ``columns`` as JSON lines, assembled by Arrow; None when a column is not
    one Arrow can write as orjson would (see ``_arrow_texts``), or lines would not fit one
    Arrow array.

    Each column becomes one text per row; one element-wise join then writes every line, the
    keys and brackets between the texts, so the result is the joined array's data as it is.
    """
    import orjson
    import pyarrow as pa
    import pyarrow.compute as pc

    if rows == 0:
        return memoryview(b"")
    pieces: list[Any] = []  # per place in a line: a literal or each row's text
    literal = b""
    for position, (name, values) in enumerate(columns.items()):
        key = (b"{" if position == 0 else b",") + orjson.dumps(name) + b":"
        found = _arrow_texts(values, rows)
        if found is None:
            return None
        texts, around = found
        if isinstance(texts, bytes):  # the same text on every row
            literal += key + around[0] + texts + around[1]
            continue
        pieces += [pa.scalar(literal + key + around[0], pa.binary()), texts]
        literal = around[1]
    if not pieces:
        return memoryview((literal + b"}\n") * rows)
    pieces.append(pa.scalar(literal + b"}\n", pa.binary()))
    try:
        lines = pc.binary_join_element_wise(*pieces, pa.scalar(b"", pa.binary()))
    except (pa.ArrowException, OverflowError):  # over 2 GiB of text in one chunk
        return None
    if lines.null_count:
        return None
    offsets = lines.buffers()[1]
    first, last = np.frombuffer(offsets, dtype=np.int32)[[lines.offset, lines.offset + len(lines)]]
    return memoryview(lines.buffers()[2])[first:last]


def _arrow_texts(values: Any, rows: int) -> tuple[Any, tuple[bytes, bytes]] | None:
    """Each row's JSON text of ``values`` as a binary Arrow array (or one text for every row,
    as ``bytes``), and what goes around it.

    Taken: numeric and boolean numpy arrays of one or two dimensions, ``bytes`` arrays of UTF-8
    text that needs no escape, and Arrow columns of numbers, booleans or such text (nulls
    written ``null``; a float column with nulls is not taken). Anything else is None, and left
    to orjson.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        if isinstance(values, pa.Array):
            if len(values) != rows:
                return None
            kind = values.type
            if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind):
                texts = _plain_text(values.cast(pa.binary()))
                if texts is None:
                    return None
                texts = pc.binary_join_element_wise(b'"', texts, b'"', b"")
                return (
                    pc.fill_null(texts, pa.scalar(b"null", pa.binary())) if values.null_count else texts
                ), _NOTHING
            if (pa.types.is_integer(kind) or pa.types.is_boolean(kind)) and values.null_count:
                texts = pc.cast(values, pa.string()).cast(pa.binary())  # as orjson writes them
                return pc.fill_null(texts, pa.scalar(b"null", pa.binary())), _NOTHING
            if values.null_count or not (
                pa.types.is_integer(kind) or pa.types.is_boolean(kind) or pa.types.is_floating(kind)
            ):
                return None
            # As the other ways write a kept column: through Python's values (a float as a double).
            values = values.to_numpy(zero_copy_only=False)
            values = values.astype(np.float64) if values.dtype.kind == "f" else values
        if not isinstance(values, np.ndarray) or len(values) != rows or values.ndim not in (1, 2):
            return None
        if values.ndim == 2 and rows > 1 and bool((values == values[:1]).all()):
            return _orjson_values_same(values), _NOTHING  # the same row on every row
        if values.dtype == object:
            return _string_texts(values, rows)
        if values.dtype.kind in "biuf":
            return _number_texts(values, rows)
        return None
    except (pa.ArrowException, TypeError, ValueError):  # a value or a type Arrow does not take
        return None


def _orjson_values_same(values: Array) -> bytes:
    import orjson

    row = json_values(values[:1])[0] if values.dtype == object else values[0]
    return orjson.dumps(row, option=orjson.OPT_SERIALIZE_NUMPY)  # type: ignore[no-any-return]


def _number_texts(values: Array, rows: int) -> tuple[Any, tuple[bytes, bytes]] | None:
    """Each row's text of a numeric array, cut from one orjson text of all its values: the
    cuts are found by numpy, and the rows are views of that text, with no object per value."""
    import orjson
    import pyarrow as pa
    import pyarrow.compute as pc

    width = 1 if values.ndim == 1 else values.shape[1]
    around = _NOTHING if values.ndim == 1 else _BRACKETS
    if width == 0:
        return b"", around
    text = orjson.dumps(values.reshape(-1), option=orjson.OPT_SERIALIZE_NUMPY)
    if len(text) >= 2**31:
        return None
    commas = np.flatnonzero(np.frombuffer(text, dtype=np.uint8) == ord(","))
    if len(commas) != rows * width - 1:
        return None
    # Row r is the text from the comma (or bracket) before it up to the next: one byte too many,
    # taken off by one slice.
    cuts = np.empty(rows + 1, dtype=np.int32)
    cuts[0], cuts[-1] = 0, len(text) - 1
    cuts[1:-1] = commas[width - 1 :: width]
    held = pa.Array.from_buffers(pa.binary(), rows, [None, pa.py_buffer(cuts), pa.py_buffer(text)])
    return pc.binary_slice(held, 1, len(text)), around


def _string_texts(values: Array, rows: int) -> tuple[Any, tuple[bytes, bytes]] | None:
    """Each row's text of an array of ``bytes`` (one per row, or a list of them per row)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    texts = _plain_text(pa.array(values.reshape(-1), pa.binary()))
    if texts is None or texts.null_count:
        return None
    if values.ndim == 1:
        return texts, (b'"', b'"')
    width = values.shape[1]
    if width == 0:
        return b"", _BRACKETS
    ends = pa.array(np.arange(0, rows * width + 1, width, dtype=np.int32))
    return pc.binary_join(pa.ListArray.from_arrays(ends, texts), b'","'), (b'["', b'"]')


#: a byte JSON writes escaped inside a string: a control character, a quote or a backslash.
_ESCAPED = r'[\x00-\x1f"\\]'


def _plain_text(values: Any) -> Any:
    """``values`` (binary) when every one is UTF-8 text that JSON writes as it is; else None."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        text = values.cast(pa.string())
    except pa.ArrowInvalid:  # not UTF-8: written as {"b64": ...} by the other ways
        return None
    if pc.any(pc.match_substring_regex(text, _ESCAPED)).as_py():
        return None
    return values


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
