"""The JSON Lines reader, and the reader of a ``.json`` file that holds one document.

JSON Lines are parsed by Arrow a block at once when the caller knows the fields and the block is
plain, else by orjson a chunk at once, and line by line through ``json`` wherever the two could
read a line differently (NaN, an integer past 64 bits, a bad line), so the rows and rejects are
``json``'s. A ``.json`` document is a list of records, or ``{"instances": [...]}`` or
``{"examples": [...]}``, each record with the line it starts on.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, islice
from operator import itemgetter
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from tfship._values import MISSING as _MISSING
from tfship.errors import InputError
from tfship.records._chunks import Array, Chunk, LazyLines, Reject
from tfship.records._fields import Field
from tfship.records._formats import open_binary, plain_path
from tfship.schema._shared import not_utf8


def jsonl_chunks(
    path: Path, chunk_rows: int, wanted: set[str] | None, fields: Mapping[str, Field] | None = None
) -> Iterator[Chunk]:
    source = str(path)
    if plain_path(path).suffix.lower() == ".json":
        with io.TextIOWrapper(open_binary(path), encoding="utf-8-sig") as f:
            if _is_document(f):
                rows = _document_rows(f.read(), source)
                while batch := list(islice(rows, chunk_rows)):
                    yield _json_chunk(source, [_json_part(source, batch)], wanted)
                return
    with open_binary(path) as f:
        stream: Iterator[bytes] = f
        before = 0
        if fields is not None:
            # Whole blocks of plain lines go to Arrow; from the first block that is not plain
            # on, the file is read line by line below (the chunks as ever from there).
            blocks = _JsonBlocks(f, chunk_rows)
            for block in blocks:
                chunk = _arrow_json(source, block, blocks.ends, blocks.before, wanted, fields)
                if chunk is None:
                    stream = chain(iter(io.BytesIO(block + blocks.rest())), f)
                    break
                blocks.before += chunk.rows
                yield chunk
            else:
                return
            before = blocks.before
        lines = _TextLines(stream, before)
        while True:
            # a chunk holds chunk_rows lines that are not blank (rows and rejects), as ever
            parts: list[_JsonPart] = []
            count = 0
            while count < chunk_rows and (group := lines.take(chunk_rows - count)):
                parts.append(_json_lines(source, group, lines.number - len(group)))
                count += parts[-1].count
            if not count:
                return
            yield _json_chunk(source, parts, wanted)


_BOM = b"\xef\xbb\xbf"


def _lone_cr(data: bytes) -> bool:
    return b"\r" in data and data.count(b"\r") != data.count(b"\r\n")


class _TextLines:
    """The lines of a binary stream as text mode reads them: a lone CR ends a line too
    (universal newlines), and a byte-order mark at the start is not part of the first line."""

    def __init__(self, stream: Iterator[bytes], before: int = 0) -> None:
        self.stream = stream
        self.number = before  # lines taken so far
        self.carry: list[bytes] = []

    def take(self, count: int) -> list[bytes]:
        """The next ``count`` lines at most, each with its line end."""
        lines, self.carry = self.carry[:count], self.carry[count:]
        if len(lines) < count:
            more = list(islice(self.stream, count - len(lines)))
            if self.number == 0 and not lines and more and more[0].startswith(_BOM):
                more[0] = more[0][len(_BOM) :]
            if _lone_cr(b"".join(more)):
                more = [piece for line in more for piece in line.splitlines(keepends=True)]
            lines += more
            lines, self.carry = lines[:count], lines[count:]
        self.number += len(lines)
        return lines


#: bytes of JSON Lines read at once for Arrow: about ten thousand rows of a few fields.
JSON_BLOCK_BYTES = 1 << 21


class _JsonBlocks:
    """Blocks of whole lines of a binary stream, at most ``chunk_rows`` lines each, the first
    without its byte-order mark; ``before`` counts the lines before the next block, and
    ``rest`` hands back what was read but not yet yielded; ``ends`` holds where the lines of
    the block last yielded end (the offsets of their newlines)."""

    def __init__(self, stream: BinaryIO, chunk_rows: int) -> None:
        self.stream = stream
        self.chunk_rows = chunk_rows
        self.before = 0
        self.pending = b""  # read, past the block last yielded
        self.ends: Array = np.zeros(0, dtype=np.intp)

    def __iter__(self) -> Iterator[bytes]:
        start = True
        while True:
            data = self.stream.read(JSON_BLOCK_BYTES)
            if start and data.startswith(_BOM):
                data = data[len(_BOM) :]
            start = False
            data, self.pending = self.pending + data, b""
            if not data:
                return
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                line_end = self.stream.readline()
                if line_end:
                    self.pending = data + line_end
                    continue
                data, cut = data + b"\n", len(data) + 1  # the last line, without its end
            ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8, count=cut) == 0x0A)
            edges = [0, *(ends[self.chunk_rows - 1 :: self.chunk_rows] + 1).tolist()]
            if edges[-1] != cut:
                edges.append(cut)
            for low, high in zip(edges, edges[1:]):
                self.pending = data[high:]
                self.ends = ends[np.searchsorted(ends, low) : np.searchsorted(ends, high)] - low
                yield data[low:high]

    def rest(self) -> bytes:
        """What was read past the block last yielded, to the end of its line."""
        rest = self.pending
        if rest and not rest.endswith(b"\n"):
            rest += self.stream.readline()
        return rest


def _plain_json_lines(block: bytes, ends: Array) -> int | None:
    """How many lines ``block`` holds (``ends``: where each ends) when every one is a JSON
    object with nothing around it, as Arrow reads them: no blank line and no lone carriage
    return (which ends a line for ``json``'s reader); else None."""
    data = np.frombuffer(block, dtype=np.uint8)
    if not ends.size or data[0] != 0x7B or ends[-1] != data.size - 1:
        return None
    before = data[ends - 1]
    crlf = before == 0x0D
    last = np.where(crlf, data[np.maximum(ends - 2, 0)], before)
    if not (last == 0x7D).all() or not (data[ends[:-1] + 1] == 0x7B).all():
        return None
    if b"\r" in block and int(np.count_nonzero(data == 0x0D)) != int(np.count_nonzero(crlf)):
        return None  # a lone carriage return ends a line for json's reader
    return int(ends.size)


#: the Arrow types (by name) of a JSON column whose values are those ``json`` reads, by the
#: kind of the field that takes it (a JSON integer in a column of floats becomes a float, which
#: only a float field takes as it is); a kept column takes the types it is written back as.
_ARROW_JSON_TYPES = {
    "float": {"double", "int64", "null"},
    "int": {"int64", "null"},
    "string": {"string", "null"},
    "kept": {"string", "int64", "bool", "null"},
}


def _arrow_json(
    source: str,
    block: bytes,
    ends: Array,
    before: int,
    wanted: set[str] | None,
    fields: Mapping[str, Field],
) -> Chunk | None:
    """The rows of a block of JSON lines read by Arrow's JSON reader (in C++, without the GIL),
    or None when the block is not plain (see :func:`_plain_json_lines`), Arrow refuses it, or
    a wanted column's values may not be those ``json`` reads: a type other than the field's
    (an integer past 64 bits is a double to Arrow), or a ``NaN`` or infinity, which Arrow
    reads in a number column and orjson does not. Arrow's doubles are those Python's
    ``float`` makes of the same text, however many digits it has."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pajson

    count = _plain_json_lines(block, ends)
    if count is None:
        return None
    try:
        table = pajson.read_json(
            pa.py_buffer(block),
            read_options=pajson.ReadOptions(use_threads=False, block_size=len(block) + 1),
        )
    except Exception:  # noqa: BLE001 - any refusal (bad JSON, not UTF-8, a duplicate key): line by line
        return None
    if table.num_rows != count:
        return None
    names = table.column_names
    keep = [n for n in names if wanted is None or n in wanted]
    for name in keep:
        fld = fields.get(name)
        kind = "kept" if fld is None else _json_kind(fld)
        if kind is None or str(table.schema.field(name).type) not in _ARROW_JSON_TYPES[kind]:
            return None
    lines = np.arange(before + 1, before + 1 + count, dtype=np.int64)
    columns = {n: table.column(n).combine_chunks() for n in sorted(keep)}
    for column in columns.values():
        if column.type == pa.float64() and pc.all(pc.is_finite(column)).as_py() is False:
            return None  # NaN or infinity: read as json reads them, line by line
    return Chunk(source, lines, columns, texts=LazyLines(block), names=sorted(names))


def _json_kind(fld: Field) -> str | None:
    if fld.sparse or fld.shape != ():
        return None
    if fld.dtype == "string":
        return "string"
    return "int" if fld.dtype.startswith("int") else "float" if fld.dtype.startswith("float") else None


#: 19 digits in a row may be an integer beyond 64 bits, which orjson reads as a float; found
#: as a run of zeros once every digit is one (a regular expression takes longer than parsing).
_ZEROS = bytes.maketrans(b"123456789", b"000000000")
_LONG_RUN = b"0" * 19


def _long_digits(data: bytes) -> bool:
    return _LONG_RUN in data.translate(_ZEROS)


@dataclass
class _JsonPart:
    """Consecutive lines of a JSON Lines file: the records, their lines and texts, the rejects."""

    records: list[dict[str, Any]]
    lines: Array
    texts: Sequence[str]
    rejects: list[Reject]
    #: blank lines among them: no row, good or bad, but named in a note as a CSV file's are
    blank: list[int] = field(default_factory=list)

    @property
    def count(self) -> int:
        """Its lines that are not blank."""
        return len(self.records) + len(self.rejects)


def _json_lines(source: str, lines: list[bytes], before: int) -> _JsonPart:
    """The lines that follow line ``before``, read.

    orjson parses them at once when every one is a JSON object it reads as the standard
    ``json`` module does; any other line (blank, bad JSON, not an object, not UTF-8, a long
    integer, a lone carriage return) sends them line by line, through :func:`_json_value`.
    Either way the rows, their values and the rejects are the same.
    """
    import orjson

    block = b"".join(lines)
    if not block.endswith(b"\n"):
        block += b"\n"
    if not _lone_cr(block) and not _long_digits(block):
        try:
            records = [orjson.loads(line) for line in lines]
        except orjson.JSONDecodeError:
            records = []
        if set(map(type, records)) == {dict}:
            numbers = np.arange(before + 1, before + 1 + len(records), dtype=np.int64)
            return _JsonPart(records, numbers, LazyLines(block), [])
    batch: list[tuple[int, str, Any]] = []
    blank: list[int] = []
    for number, line in enumerate(lines, before + 1):
        text = line.rstrip(b"\r\n").decode("utf-8", "replace")
        if text.strip():
            batch.append((number, text, _json_value(line)))
        else:
            blank.append(number)
    part = _json_part(source, batch)
    part.blank = blank
    return part


def _json_value(line: bytes) -> object:
    """The value of one line as the standard ``json`` module reads it, or why it is none."""
    import orjson

    if not _long_digits(line):
        try:
            return orjson.loads(line)
        except orjson.JSONDecodeError:
            pass  # json says why (or reads what orjson refuses: NaN, a lone surrogate, 1e400)
    try:
        text = line.rstrip(b"\r\n").decode("utf-8")
    except UnicodeDecodeError as exc:
        return _Unreadable(not_utf8(exc))
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        return _Unreadable(f"unparseable JSON: {exc}")
    except RecursionError:
        return _Unreadable("unparseable JSON: nested too deeply")


def _is_document(f: io.TextIOWrapper) -> bool:
    """Whether a ``.json`` file holds one JSON document rather than one record per line: it
    opens a list, or its first line is not a whole record, or it wraps its records in
    ``instances`` or ``examples``. The stream is left at its start."""
    first = f.readline()
    while first and not first.strip():
        first = f.readline()
    f.seek(0)
    if first.lstrip().startswith("["):
        return True
    try:
        record = json.loads(first)
    except json.JSONDecodeError:
        return True
    return isinstance(record, dict) and any(isinstance(record.get(k), list) for k in _WRAPPERS)


#: the keys a JSON document may wrap its records in (as TF Serving's REST API does).
_WRAPPERS = ("instances", "examples")


def _skip(text: str, pos: int) -> int:
    """The first position at or after ``pos`` that is not JSON whitespace."""
    while pos < len(text) and text[pos] in " \t\n\r":
        pos += 1
    return pos


class _Unreadable(str):
    """The reason a row could not be read, in place of its value."""


def _document_rows(text: str, source: str) -> Iterator[tuple[int, str, Any]]:
    """The records of a JSON document, each with the line it starts on: the items of a list
    (or of the list under ``instances`` or ``examples``), or the document itself."""
    try:
        whole = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{source}:{exc.lineno}: invalid JSON at column {exc.colno}: {exc.msg}") from None
    start = _skip(text, 0)
    if isinstance(whole, dict):
        key = next((k for k in _WRAPPERS if isinstance(whole.get(k), list)), None)
        if key is None:
            yield text.count("\n", 0, start) + 1, text.strip(), whole
            return
        start = _value_at(text, start, key)
    yield from _list_items(text, start)


def _value_at(text: str, pos: int, wanted: str) -> int:
    """Where the value of key ``wanted`` starts in the (valid) JSON object at ``pos``."""
    decoder = json.JSONDecoder()
    pos += 1
    while True:
        pos = _skip(text, pos)
        key, pos = decoder.raw_decode(text, pos)
        pos = _skip(text, _skip(text, pos) + 1)  # past the colon
        if key == wanted:
            return pos
        _, pos = decoder.raw_decode(text, pos)
        pos = _skip(text, pos) + 1  # past the comma


def _list_items(text: str, pos: int) -> Iterator[tuple[int, str, Any]]:
    """(line, text, value) of each item of the (valid) JSON list at ``pos``."""
    decoder = json.JSONDecoder()
    line, counted = 1, 0
    pos += 1
    while True:
        pos = _skip(text, pos)
        if text[pos] == "]":
            return
        value, end = decoder.raw_decode(text, pos)
        line += text.count("\n", counted, pos)
        counted = pos
        yield line, text[pos:end], value
        pos = _skip(text, end)
        if text[pos] == ",":
            pos += 1


def _json_part(source: str, batch: list[tuple[int, str, Any]]) -> _JsonPart:
    """(line, text, value) of each row as records and rejects: a row must be a JSON object."""
    records: list[dict[str, Any]] = []
    numbers: list[int] = []
    texts: list[str] = []
    rejects: list[Reject] = []
    for number, text, record in batch:
        if isinstance(record, _Unreadable):
            rejects.append(Reject(source, number, str(record), text))
            continue
        if not isinstance(record, dict):
            reason = f"expected a JSON object, found {type(record).__name__}"
            rejects.append(Reject(source, number, reason, text))
            continue
        records.append(record)
        numbers.append(number)
        texts.append(text)
    return _JsonPart(records, np.asarray(numbers, dtype=np.int64), texts, rejects)


def _json_chunk(source: str, parts: list[_JsonPart], wanted: set[str] | None) -> Chunk:
    if len(parts) == 1:
        part = parts[0]
    else:
        part = _JsonPart(
            [r for p in parts for r in p.records],
            np.concatenate([p.lines for p in parts]),
            [t for p in parts for t in p.texts],
            [r for p in parts for r in p.rejects],
            [n for p in parts for n in p.blank],
        )
    seen = set().union(*part.records) if part.records else set()
    names = seen & wanted if wanted is not None else seen
    columns = {n: _json_column(part.records, n) for n in sorted(names)}
    return Chunk(
        source,
        part.lines,
        columns,
        rejects=part.rejects,
        texts=part.texts,
        names=sorted(seen),
        blank_lines=part.blank,
    )


def _json_column(records: list[dict[str, Any]], name: str) -> list[Any]:
    """The values of ``name`` across records, ``MISSING`` where a record lacks it."""
    try:
        return list(map(itemgetter(name), records))  # in C, when every record has the name
    except KeyError:
        return [r.get(name, _MISSING) for r in records]
