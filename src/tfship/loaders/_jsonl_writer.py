"""The JSON Lines writer: one JSON object per row, pass-through columns then outputs.

Each column becomes one JSON text per row, and one element-wise join of Arrow's writes the
lines; Arrow's compute kernels run without holding the interpreter's lock, so the model's
thread goes on while a chunk is written. Numbers, booleans and text become their texts by
Arrow's kernels and numpy (``_arrow_texts``); a column they do not take is written row by row
(``_value_text``), in the same text: orjson's, a float32 as its shortest text, a NaN or an
infinity as Python's ``json`` writes them. A column's text depends on that column alone, so a
file says a value the same way in every chunk.
"""

from __future__ import annotations

import decimal
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from tfship.loaders._output_values import json_values, keep_values, text_value
from tfship.loaders._publish import Writer
from tfship.records._shared import slice_rows

Array = npt.NDArray[Any]


class JsonlWriter(Writer):
    """One JSON object per row: pass-through columns, then outputs (per-row shapes kept).

    Lines are assembled by Arrow's kernels without the interpreter's lock (``_arrow_lines``);
    a chunk of more text than one Arrow array holds is written in halves.
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
        self._write_rows(keep, outputs, rows)
        self.rows += rows

    def _write_rows(self, keep: Mapping[str, Any], outputs: Mapping[str, Array], rows: int) -> None:
        data = _arrow_lines(keep, outputs, rows)
        if data is not None:
            self.stream.write(data)
        elif rows == 1:  # one row of more text than an Arrow array holds
            self.stream.write(_json_line(keep, outputs))
        else:  # more text than an Arrow array holds: each half apart
            half = rows // 2
            for start, stop in ((0, half), (half, rows)):
                self._write_rows(
                    {k: slice_rows(v, start, stop) for k, v in keep.items()},
                    {k: v[start:stop] for k, v in outputs.items()},
                    stop - start,
                )

    def finish(self) -> None:
        self.stream.close()


def _kept_floats(column: Any) -> Any:
    """A kept numpy column of floats as doubles: a kept value is written as the Python value
    it was read as (``keep_values``), so a float32 as its double, not its shortest text.

    None for a kept column of floats that are not all finite (numpy or Arrow): those are
    written row by row.
    """
    if isinstance(column, np.ndarray) and column.dtype.kind == "f":
        return column.astype(np.float64) if np.isfinite(column).all() else None
    if hasattr(column, "type") and hasattr(column, "to_numpy"):
        import pyarrow as pa
        import pyarrow.compute as pc

        if pa.types.is_floating(column.type) and not pc.all(pc.is_finite(column), min_count=0).as_py():
            return None
    return column


def _json_line(keep: Mapping[str, Any], outputs: Mapping[str, Array]) -> bytes:
    """One row's line, its values written one by one (``_value_text``)."""
    import orjson

    values = {k: keep_values(v)[0] for k, v in keep.items()}
    values.update({k: json_values(v)[0] if v.dtype == object else v[0] for k, v in outputs.items()})
    inner = b",".join(orjson.dumps(k) + b":" + _value_text(v) for k, v in values.items())
    return b"{" + inner + b"}\n"


def _arrow_lines(keep: Mapping[str, Any], outputs: Mapping[str, Array], rows: int) -> memoryview | None:
    """The rows as JSON lines, kept columns then outputs, assembled by Arrow; None when the
    lines would not fit one Arrow array.

    Each column becomes one text per row (``_column_texts``); one element-wise join then
    writes every line, the keys and brackets between the texts, so the result is the joined
    array's data as it is. A column's text depends on that column alone.
    """
    import orjson
    import pyarrow as pa
    import pyarrow.compute as pc

    if rows == 0:
        return memoryview(b"")
    pieces: list[Any] = []  # per place in a line: a literal or each row's text
    literal = b""
    columns = [(name, True, values) for name, values in keep.items()]
    columns += [(name, False, values) for name, values in outputs.items()]
    for position, (name, kept, values) in enumerate(columns):
        key = (b"{" if position == 0 else b",") + orjson.dumps(name) + b":"
        try:
            texts, around = _column_texts(values, rows, kept)
        except (pa.ArrowCapacityError, OverflowError):  # over 2 GiB of text in one column
            return None
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


def _column_texts(values: Any, rows: int, kept: bool) -> tuple[Any, tuple[bytes, bytes]]:
    """Each row's JSON text of one column (a binary Arrow array, or one ``bytes`` for every
    row) and what goes around it: by Arrow's kernels where they take the column
    (``_arrow_texts``), else row by row (``_value_text``): a 3-D output, an Arrow column of
    another type (dates, lists), a kept float column with nulls or non-finite values, a kept
    column read as Python values."""
    import pyarrow as pa

    floats = _kept_floats(values) if kept else values
    found = None if floats is None else _arrow_texts(floats, rows)
    if found is not None:
        return found
    python: Any  # each row's value, as ``_value_text`` writes it
    if kept:
        python = keep_values(values)
    elif values.dtype == object:
        python = json_values(values)
    else:
        python = list(values)  # numpy rows: a float32 keeps its own shortest text
    return pa.array([_value_text(v) for v in python], pa.binary()), _NOTHING


#: how ``json`` writes the floats JSON has no number for.
_NON_FINITE = {"nan": b"NaN", "inf": b"Infinity", "-inf": b"-Infinity"}


def _value_text(value: Any) -> bytes:
    """One value's JSON text as the column ways write it: orjson's, with a NaN or an infinity
    written as ``json`` writes them, and ``json``'s for what orjson cannot write."""
    import orjson

    if isinstance(value, (list, tuple)):
        return b"[" + b",".join(_value_text(v) for v in value) + b"]"
    if isinstance(value, np.ndarray) and value.dtype.kind == "f" and not np.isfinite(value).all():
        if value.ndim == 0:
            return _value_text(value[()])
        return b"[" + b",".join(_value_text(v) for v in value) + b"]"
    if isinstance(value, (float, np.floating)) and not np.isfinite(value):
        return _NON_FINITE[str(float(value))]
    try:
        return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY)  # type: ignore[no-any-return]
    except TypeError:  # an integer past 64 bits, a Decimal, bytes (a kept binary column)
        pass
    if isinstance(value, decimal.Decimal) and value.is_finite():
        return str(value).encode("ascii")  # the number as the file holds it
    if isinstance(value, bytes):
        return _value_text(text_value(value))
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8")


def _arrow_texts(values: Any, rows: int) -> tuple[Any, tuple[bytes, bytes]] | None:
    """Each row's JSON text of ``values`` as a binary Arrow array (or one text for every row,
    as ``bytes``), and what goes around it.

    Taken: numeric and boolean numpy arrays of one or two dimensions, arrays of ``bytes``
    (text, escaped where it needs it, or ``{"b64": ...}``), and Arrow columns of numbers,
    booleans or text (nulls written ``null``; a float column with nulls is not taken).
    Anything else is None, and written row by row.
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
                texts, quote = _quoted(values.cast(pa.binary()))
                return texts, (quote, quote)
            if (pa.types.is_integer(kind) or pa.types.is_boolean(kind)) and values.null_count:
                texts = pc.cast(values, pa.string()).cast(pa.binary())  # as orjson writes them
                return pc.fill_null(texts, pa.scalar(b"null", pa.binary())), _NOTHING
            if values.null_count or not (
                pa.types.is_integer(kind) or pa.types.is_boolean(kind) or pa.types.is_floating(kind)
            ):
                return None
            # A kept value is written as the Python value it was read as (a float as a double).
            values = values.to_numpy(zero_copy_only=False)
            values = values.astype(np.float64) if values.dtype.kind == "f" else values
        if not isinstance(values, np.ndarray) or len(values) != rows or values.ndim not in (1, 2):
            return None
        if values.ndim == 2 and rows > 1 and bool((values == values[:1]).all()):  # all_classes
            return _value_text(json_values(values[:1])[0] if values.dtype == object else values[0]), _NOTHING
        if values.dtype == object:
            return _string_texts(values, rows)
        if values.dtype.kind in "biuf":
            return _number_texts(values, rows)
        return None
    except (pa.ArrowException, TypeError, ValueError):  # a value or a type Arrow does not take
        return None


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
    flat = values.reshape(-1)
    text = orjson.dumps(flat, option=orjson.OPT_SERIALIZE_NUMPY)
    if len(text) >= 2**31:
        return None
    commas = np.flatnonzero(np.frombuffer(text, dtype=np.uint8) == ord(","))
    if len(commas) != rows * width - 1:
        return None
    finite = np.isfinite(flat) if flat.dtype.kind == "f" else None
    if finite is None or finite.all():
        return _cut(text, commas, rows, width), around
    # orjson writes a NaN or an infinity as null: each value is cut apart, those written as
    # ``json`` writes them, and the values of a row joined again.
    texts = _cut(text, commas, flat.size, 1)
    for mask, token in (
        (np.isnan(flat), b"NaN"),
        (flat == np.inf, b"Infinity"),
        (flat == -np.inf, b"-Infinity"),
    ):
        if mask.any():
            texts = pc.if_else(pa.array(mask), pa.scalar(token, pa.binary()), texts)
    if values.ndim == 1:
        return texts, around
    ends = pa.array(np.arange(0, rows * width + 1, width, dtype=np.int32))
    return pc.binary_join(pa.ListArray.from_arrays(ends, texts), b","), around


def _cut(text: bytes, commas: Array, count: int, width: int) -> Any:
    """``count`` texts of ``width`` values each, cut from orjson's ``[v,v,...]`` at ``commas``.

    Text r runs from the comma (or bracket) before it up to the next: one byte too many, taken
    off by one slice, so the texts are views of ``text`` with no object per value.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    cuts = np.empty(count + 1, dtype=np.int32)
    cuts[0], cuts[-1] = 0, len(text) - 1
    cuts[1:-1] = commas[width - 1 :: width]
    held = pa.Array.from_buffers(pa.binary(), count, [None, pa.py_buffer(cuts), pa.py_buffer(text)])
    return pc.binary_slice(held, 1, len(text))


def _string_texts(values: Array, rows: int) -> tuple[Any, tuple[bytes, bytes]] | None:
    """Each row's text of an array of ``bytes`` (one per row, or a list of them per row)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    texts, quote = _quoted(pa.array(values.reshape(-1), pa.binary()))
    if values.ndim == 1:
        return texts, (quote, quote)
    width = values.shape[1]
    if width == 0:
        return b"", _BRACKETS
    ends = pa.array(np.arange(0, rows * width + 1, width, dtype=np.int32))
    joined = pc.binary_join(pa.ListArray.from_arrays(ends, texts), quote + b"," + quote)
    return joined, (b"[" + quote, quote + b"]")


#: a byte JSON writes escaped inside a string: a control character, a quote or a backslash.
_ESCAPED = r'[\x00-\x1f"\\]'


def _quoted(values: Any) -> tuple[Any, bytes]:
    """Each value of a binary Arrow array as its JSON text, and the quote still to put around
    each (none once any value needed more than quotes).

    UTF-8 text with nothing to escape is its own text between quotes (Arrow's kernels); other
    values are written as orjson writes what ``text_value`` makes of them (escaped text, or
    ``{"b64": ...}`` for bytes that are not UTF-8), one at a time, those values only. A null
    is written ``null``.
    """
    import orjson
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        text = values.cast(pa.string())
    except pa.ArrowInvalid:  # bytes that are not UTF-8 somewhere: each value apart
        each = [b"null" if v is None else orjson.dumps(text_value(v)) for v in values.to_pylist()]
        return pa.array(each, pa.binary()), b""
    odd = pc.fill_null(pc.match_substring_regex(text, _ESCAPED), False)
    any_odd = pc.any(odd).as_py()
    if not values.null_count and not any_odd:
        return values, b'"'  # the usual: class names, ids
    quoted = pc.binary_join_element_wise(b'"', values, b'"', b"")
    if any_odd:
        escaped = np.full(len(values), b"", dtype=object)
        escaped[np.flatnonzero(odd.to_numpy(zero_copy_only=False))] = [
            orjson.dumps(v) for v in pc.filter(text, odd).to_pylist()
        ]
        quoted = pc.if_else(odd, pa.array(escaped, pa.binary()), quoted)
    return (pc.fill_null(quoted, pa.scalar(b"null", pa.binary())) if quoted.null_count else quoted), b""


#: bytes written before and after each row's text (the brackets split off a 2-D array's rows).
_NOTHING = (b"", b"")
_BRACKETS = (b"[", b"]")
