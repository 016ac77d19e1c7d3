"""The readers of record files: CSV, JSON Lines, JSON, Parquet and TFRecord of ``tf.train.Example``.

Each reader yields :class:`Chunk` s of at most ``chunk_rows`` rows, so memory does not grow with
the file. Every row keeps its file and line (record number for Parquet and TFRecord) so that a
rejected row can be found again. Rows that cannot even be read (bad JSON, a CSV line with the
wrong number of cells) come out as rejects, not as errors. :func:`read_records` reads a small
file whole for the commands that take a handful of records, and types CSV cells by the one
rule (:func:`type_csv_records`). Nothing here needs TensorFlow: TFRecord framing is read by
``tfship._wire`` and Examples are parsed with tfship's own message classes.
"""

from __future__ import annotations

import glob
import io
import json
import logging
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, islice
from operator import itemgetter
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np
import numpy.typing as npt

from tfship._values import MISSING as _MISSING
from tfship.errors import DataError, InputError, value_text
from tfship.records._fields import Field, schema_fields
from tfship.schema import (  # importing it also lifts the csv module's cap on a cell
    CsvLineError,
    CsvMissing,
    Schema,
    csv_column_dtype,
    csv_line_cells,
    field_values,
    read_csv_header,
)
from tfship.schema._shared import not_utf8

Array = npt.NDArray[Any]

#: file suffix -> reader format.
FORMATS: dict[str, str] = {
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".tfrecord": "tfrecord",
    ".tfrecords": "tfrecord",
    ".tfr": "tfrecord",
}

log = logging.getLogger(__name__)


@dataclass
class Reject:
    """A row that did not make it: where it was, why, and its text when it has one."""

    source: str
    line: int
    reason: str
    record: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.source, "line": self.line, "reason": self.reason, "record": self.record}


@dataclass
class Chunk:
    """Consecutive rows of one file, as raw columns (Arrow arrays or Python lists).

    ``serialized`` holds the records of a TFRecord file instead of columns; ``texts`` the raw
    text of each row (CSV, JSONL) for the rejects file. ``csv`` says the columns are CSV cell
    text, where missing values are spelled as tokens (see ``tfship.schema.CsvMissing``).
    ``names`` are all the names the rows of a JSONL chunk carry, kept or not (files with a
    header name theirs once, in the header).
    """

    source: str
    lines: Array
    columns: dict[str, Any]
    rejects: list[Reject] = field(default_factory=list)
    texts: Sequence[str] | None = None
    serialized: Array | None = None
    csv: bool = False
    names: Sequence[str] | None = None
    #: blank lines of a CSV file, skipped by every reader (they are no row, good or bad)
    blank_lines: list[int] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return int(self.lines.size)


def expand_inputs(patterns: Sequence[str]) -> list[Path]:
    """Files named by paths or globs, in the order given (each glob sorted).

    Raises:
        InputError: a pattern matches nothing, or a file has an unknown suffix.
    """
    files: list[Path] = []
    for pattern in patterns:
        matches = sorted(glob.glob(os.path.expanduser(pattern), recursive=True))
        matches = [m for m in matches if os.path.isfile(m)]
        if not matches:
            raise InputError(f"input {pattern!r} matches no file")
        files.extend(Path(m) for m in matches)
    for path in files:
        format_of(path)
    return files


def format_of(path: Path) -> str:
    """The reader format of a file, from its suffix (``.gz`` files by the suffix before it)."""
    suffix = _plain(path).suffix.lower()
    fmt = FORMATS.get(suffix)
    if fmt is None or (_gzipped(path) and fmt == "parquet"):
        raise InputError(
            f"input {str(path)!r}: unknown file type {suffix!r}; "
            f"known: {', '.join(sorted(FORMATS))} (all but Parquet also as .gz)"
        )
    return fmt


def _gzipped(path: Path) -> bool:
    return path.suffix.lower() == ".gz"


def _plain(path: Path) -> Path:
    return path.with_suffix("") if _gzipped(path) else path


def _open_binary(path: Path) -> Any:
    if _gzipped(path):
        import gzip

        return gzip.open(path, "rb")
    return open(path, "rb")  # noqa: SIM115 - closed by the caller's with


def columns_of(path: Path) -> list[str] | None:
    """The column names of a CSV or Parquet file (None for formats without a header)."""
    fmt = format_of(path)
    if fmt == "csv":
        with _open_binary(path) as f:
            return read_csv_header(f)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return list(pq.ParquetFile(path).schema_arrow.names)
    return None


def read_chunks(
    path: Path, chunk_rows: int, wanted: set[str] | None = None, fields: Mapping[str, Field] | None = None
) -> Iterator[Chunk]:
    """Chunks of one file; ``wanted`` restricts the columns kept (None keeps all).

    ``fields`` are the fields the columns will be converted to, when the caller knows them:
    JSON Lines are then read by Arrow's columnar reader wherever the values it makes are the
    ones ``json`` reads (see :func:`_arrow_json`), as Arrow arrays; without them, and for every
    other line, as Python lists. The converted columns are the same either way.
    """
    if format_of(path) == "jsonl":
        return _jsonl(path, chunk_rows, wanted, fields)
    readers = {"csv": _csv, "parquet": _parquet, "tfrecord": _tfrecord}
    return readers[format_of(path)](path, chunk_rows, wanted)


@overload
def read_records(
    path: Path,
    limit: int | None = ...,
    schema: Schema | None = ...,
    *,
    fields: Mapping[str, Field] | None = ...,
    places: Literal[False] = ...,
) -> list[Any]: ...


@overload
def read_records(
    path: Path,
    limit: int | None = ...,
    schema: Schema | None = ...,
    *,
    fields: Mapping[str, Field] | None = ...,
    places: Literal[True],
) -> list[tuple[str, Any]]: ...


def read_records(
    path: Path,
    limit: int | None = None,
    schema: Schema | None = None,
    *,
    fields: Mapping[str, Field] | None = None,
    places: bool = False,
) -> list[Any] | list[tuple[str, Any]]:
    """The records of a small file, whole: a dict per CSV/JSON/Parquet row, bytes per TFRecord.

    For the commands that take a handful of records (warmup requests, client calls, the
    requests a promotion replays) through the same readers as batch jobs. JSON values keep
    their types, and a null or an absent key is left out of its record. CSV cells are typed
    once, by :func:`type_csv_records`: by ``fields`` or the ``schema`` when the caller knows
    the types, else each column by the rule ``tfship schema infer`` uses; a missing cell is
    left out. A ``.json`` file may hold a list of records, or ``{"instances": [...]}`` or
    ``{"examples": [...]}``, as well as one record per line. With ``schema``, every record is
    checked against it (values, shapes, missing values without a default; in a
    ``tf.Example`` the kind of each list), so that a bad record is named by file and line
    (CSV, JSON) or record number (Parquet, TFRecord) before anything uses it. With
    ``places=True``, each record comes with that place, ``(place, record)``, for a caller
    whose own checks name a bad record.

    Raises:
        InputError: the file is missing or of an unknown type, or a row is malformed (named by
            file and line).
        DataError: a CSV cell that is not of its field's type, or with ``schema`` a record
            that does not fit it (named by file and line).

    Example:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "rows.csv"
        >>> _ = path.write_text('n,x,name\\n81,1.5,"Adelie, Dream"\\nNA,,Gentoo\\n')
        >>> read_records(path)
        [{'n': 81, 'x': 1.5, 'name': 'Adelie, Dream'}, {'name': 'Gentoo'}]
        >>> [place.rsplit("/", 1)[-1] for place, _ in read_records(path, places=True)]
        ['rows.csv:2', 'rows.csv:3']
    """
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    records: list[Any] = []
    where: list[str] = []
    is_csv = False
    for chunk in read_chunks(path, chunk_rows=1024):
        if chunk.rejects:
            bad = chunk.rejects[0]
            raise InputError(f"{bad.source}:{bad.line}: {bad.reason}")
        where.extend(f"{chunk.source}:{line}" for line in chunk.lines.tolist())
        if chunk.serialized is not None:
            records.extend(bytes(data) for data in chunk.serialized)
        else:
            is_csv = chunk.csv
            columns = {k: _python_list(v) for k, v in chunk.columns.items()}
            for i in range(chunk.rows):
                # a null and an absent key are both missing: the record leaves the name out
                records.append(
                    {k: v[i] for k, v in columns.items() if v[i] is not None and v[i] is not _MISSING}
                )
        if limit is not None and len(records) >= limit:
            break
    records, where = records[:limit], where[:limit]
    if is_csv:
        known = dict(schema_fields(schema) if schema is not None else {}, **(fields or {}))
        records = type_csv_records(records, known, places=where)
    if schema is not None:
        for place, record in zip(where, records):
            if isinstance(record, bytes):
                check_example(schema, record, place)
            else:
                schema.convert_record(record, where=place)
    return list(zip(where, records)) if places else records


def type_csv_records(
    rows: Sequence[Mapping[str, str]],
    fields: Mapping[str, Field] | None = None,
    *,
    csv: CsvMissing | None = None,
    places: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """CSV rows of text cells as typed records, by the one rule for a record file's cells.

    A column named in ``fields`` takes its field's type (and a multi-valued field splits its
    cell on ``|``); any other column takes the type ``tfship schema infer`` gives it
    (``tfship.schema.csv_column_dtype``: ``int64`` when every cell is a whole number,
    ``float32`` when every cell is a number, else ``string``). A cell missing by the ``csv``
    rule (an empty cell anywhere, ``NA`` and its kin in a numeric column) is left out of its
    record; a string cell is kept exactly as written.

    Raises:
        DataError: a cell that is not of its field's type, named by its place (``places``,
            else its row number) and the field.

    Example:
        >>> type_csv_records([{"n": "81", "s": "NA"}, {"n": "NA", "s": "x"}])
        [{'n': 81, 's': 'NA'}, {'s': 'x'}]
        >>> type_csv_records([{"n": "81"}], {"n": Field("n", "string", ())})
        [{'n': '81'}]
    """
    rule = csv or CsvMissing()
    names = list(dict.fromkeys(name for row in rows for name in row))
    typed = dict(fields or {})
    for name in names:
        if name not in typed:
            dtype = csv_column_dtype((row.get(name, "") for row in rows), rule)
            if dtype == "string":
                _note_text_in_numbers(name, [row.get(name) for row in rows], rule, places)
            typed[name] = Field(name, dtype, ())
    out: list[dict[str, Any]] = []
    for number, row in enumerate(rows):
        record: dict[str, Any] = {}
        for name, text in row.items():
            fld = typed[name]
            if not isinstance(text, str):
                record[name] = text
            elif not rule.cell(text, fld.dtype):
                try:
                    record[name] = _typed_cell(fld, text, rule)
                except ValueError as exc:
                    place = places[number] if places is not None else f"row {number + 1}"
                    raise DataError(f"{place}: {exc}") from None
        out.append(record)
    return out


def _note_text_in_numbers(
    name: str, cells: Sequence[Any], rule: CsvMissing, places: Sequence[str] | None
) -> None:
    """Say so when a column of numbers is read as text because of a few cells that are not."""
    present = [(i, c) for i, c in enumerate(cells) if isinstance(c, str) and not rule.cell(c, "float32")]
    words = [(i, c) for i, c in present if csv_column_dtype([c], rule) == "string"]
    if not words or len(words) * 2 >= len(present):
        return
    number, text = words[0]
    place = places[number] if places is not None else f"row {number + 1}"
    log.warning(
        "column %r is read as text: %s (%s) is not a number, though %d of its %d cells are; "
        "a schema (--schema FILE) reads it as numbers and names the bad cells",
        name,
        value_text(text),
        place,
        len(present) - len(words),
        len(present),
    )


def _typed_cell(fld: Field, text: str, rule: CsvMissing) -> Any:
    shape = None if fld.sparse else fld.shape
    values = field_values(fld.name, fld.dtype, shape, None, text, rule)
    return values[0] if shape == () else values


#: the value list of a ``tf.train.Feature`` that holds each dtype.
_EXAMPLE_KINDS = {"string": "bytes_list", "float32": "float_list", "int64": "int64_list"}


def _parse_example(data: bytes) -> Any:
    from tfship._wire import protos

    return protos().example_pb2.Example.FromString(data)


def check_example(schema: Schema, data: bytes, where: str) -> None:
    """Check one serialized ``tf.train.Example`` against ``schema``, as parsing would.

    Raises:
        DataError: not an Example, a feature in the wrong kind of list (``bytes_list`` for a
            number), or values the schema refuses; named by ``where`` and the feature.
    """
    try:
        feats = _parse_example(data).features.feature
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError and its relatives
        raise DataError(f"{where}: not a serialized tf.train.Example ({exc})") from None
    record: dict[str, Any] = {}
    for feature in schema.features:
        entry = feats.get(feature.name)
        kind = entry.WhichOneof("kind") if entry is not None else None
        if kind is None:
            continue
        want = _EXAMPLE_KINDS.get(feature.dtype)
        if want is not None and kind != want:
            raise DataError(
                f"{where}: field {feature.name!r}: expected {feature.dtype} values ({want}), found a {kind}"
            )
        values = list(getattr(entry, kind).value)
        record[feature.name] = values[0] if feature.shape == () and len(values) == 1 else values
    schema.convert_record(record, where=where)


def _python_list(column: Any) -> list[Any]:
    return list(column.to_pylist() if hasattr(column, "to_pylist") else column)


# -- CSV ---------------------------------------------------------------------------------------


#: bytes of CSV parsed at once: about 25 thousand rows of a few numeric columns.
CSV_BLOCK_BYTES = 1 << 20


def _csv(path: Path, chunk_rows: int, wanted: set[str] | None) -> Iterator[Chunk]:
    # Whole blocks of lines go to Arrow's parser: no Python object per line unless a row is
    # rejected. Line numbers come from counting newlines, so each block is checked to hold
    # one row per line (no blank lines, no quoted newlines) before they are trusted.
    with _open_binary(path) as f:
        names = read_csv_header(f)
        if not names:
            return
        number = 1
        rest = b""
        while True:
            data = f.read(CSV_BLOCK_BYTES)
            if not data:
                if rest:
                    yield _csv_block(str(path), names, rest + b"\n", number, wanted)
                return
            data = rest + data
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                rest = data
                continue
            block, rest = data[:cut], data[cut:]
            yield _csv_block(str(path), names, block, number, wanted)
            number += block.count(b"\n")


class LazyLines(Sequence[str]):
    """The text of each line of a block, decoded only if a rejected row asks for it."""

    def __init__(self, block: bytes) -> None:
        self.block = block
        self._lines: list[bytes] | None = None

    def _split(self) -> list[bytes]:
        if self._lines is None:
            self._lines = self.block.split(b"\n")[:-1]
        return self._lines

    def __len__(self) -> int:
        return len(self._split())

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return self._split()[index].rstrip(b"\r").decode("utf-8", "replace")


def _csv_block(source: str, names: list[str], block: bytes, first: int, wanted: set[str] | None) -> Chunk:
    count = block.count(b"\n")
    numbers = np.arange(first + 1, first + 1 + count, dtype=np.int64)
    texts = LazyLines(block)
    blank = b"\n\n" in block or b"\n\r\n" in block or block[:1] in (b"\n", b"\r")
    if not blank:
        try:
            table = _arrow_csv(block, names)
        except Exception:  # noqa: BLE001 - any Arrow parse failure (not UTF-8 too): the slow path
            table = None
        if table is not None and table.num_rows == count and not _holds_header(table, names):
            columns = {n: table.column(n) for n in names if wanted is None or n in wanted}
            return Chunk(source, numbers, columns, texts=texts, csv=True)
    return _csv_slow(source, names, block.split(b"\n")[:-1], numbers, wanted)


def _holds_header(table: Any, names: list[str]) -> bool:
    """Whether a row may repeat the header: its first cell is the first name (checked whole on
    the line-by-line path)."""
    import pyarrow.compute as pc

    return bool(pc.any(pc.equal(table.column(0), names[0])).as_py())


def _arrow_csv(data: bytes, names: list[str]) -> Any:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    # Every column is read as text; the conversion to the model's dtypes (with its own
    # missing-value and list rules) happens later, column by column.
    return pacsv.read_csv(
        io.BytesIO(data),
        read_options=pacsv.ReadOptions(column_names=names, use_threads=False),
        parse_options=pacsv.ParseOptions(newlines_in_values=False),
        convert_options=pacsv.ConvertOptions(
            column_types={n: pa.string() for n in names},
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
        ),
    )


def _csv_slow(
    source: str, names: list[str], lines: list[bytes], numbers: Array, wanted: set[str] | None
) -> Chunk:
    rejects: list[Reject] = []
    blank: list[int] = []
    good_rows: list[list[str]] = []
    good_lines: list[int] = []
    good_texts: list[str] = []
    for line, number in zip(lines, numbers.tolist()):
        try:
            cells = csv_line_cells(line, names)
        except CsvLineError as exc:
            text = line.rstrip(b"\r").decode("utf-8", "replace")
            rejects.append(Reject(source, number, str(exc), text))
            continue
        if cells is None:
            blank.append(number)
            continue
        good_rows.append(cells)
        good_lines.append(number)
        good_texts.append(line.rstrip(b"\r").decode("utf-8"))
    columns: dict[str, Any] = {}
    for i, name in enumerate(names):
        if wanted is None or name in wanted:
            columns[name] = [row[i] for row in good_rows]
    rows = np.asarray(good_lines, dtype=np.int64)
    return Chunk(source, rows, columns, rejects=rejects, texts=good_texts, csv=True, blank_lines=blank)


# -- JSONL -------------------------------------------------------------------------------------


def _jsonl(
    path: Path, chunk_rows: int, wanted: set[str] | None, fields: Mapping[str, Field] | None = None
) -> Iterator[Chunk]:
    source = str(path)
    if _plain(path).suffix.lower() == ".json":
        with io.TextIOWrapper(_open_binary(path), encoding="utf-8-sig") as f:
            if _is_document(f):
                rows = _document_rows(f.read(), source)
                while batch := list(islice(rows, chunk_rows)):
                    yield _json_chunk(source, [_json_part(source, batch)], wanted)
                return
    with _open_binary(path) as f:
        stream: Any = f
        before = 0
        if fields is not None:
            # Whole blocks of plain lines go to Arrow; from the first block that is not plain
            # on, the file is read line by line below (the chunks as ever from there).
            blocks = _JsonBlocks(f, chunk_rows)
            for block in blocks:
                chunk = _arrow_json(source, block, blocks.before, wanted, fields)
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

    def __init__(self, stream: Any, before: int = 0) -> None:
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
    ``rest`` hands back what was read but not yet yielded."""

    def __init__(self, stream: Any, chunk_rows: int) -> None:
        self.stream = stream
        self.chunk_rows = chunk_rows
        self.before = 0
        self.pending = b""  # read, past the block last yielded

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
                yield data[low:high]

    def rest(self) -> bytes:
        """What was read past the block last yielded, to the end of its line."""
        rest = self.pending
        if rest and not rest.endswith(b"\n"):
            rest += self.stream.readline()
        return rest


def _plain_json_lines(block: bytes) -> int | None:
    """How many lines ``block`` holds when every one is a JSON object with nothing around it
    that Arrow reads as ``json`` does: no blank line, no lone carriage return, no integer of
    19 digits or more, no ``NaN`` or infinity (which only ``json`` reads); else None."""
    if b"NaN" in block or b"Infinity" in block:
        return None
    data = np.frombuffer(block, dtype=np.uint8)
    ends = np.flatnonzero(data == 0x0A)
    if not ends.size or data[0] != 0x7B or ends[-1] != data.size - 1:
        return None
    before = data[ends - 1]
    crlf = before == 0x0D
    last = np.where(crlf, data[np.maximum(ends - 2, 0)], before)
    if not (last == 0x7D).all() or not (data[ends[:-1] + 1] == 0x7B).all():
        return None
    if b"\r" in block and int(np.count_nonzero(data == 0x0D)) != int(np.count_nonzero(crlf)):
        return None  # a lone carriage return ends a line for json's reader
    if _long_digits(block):
        return None
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
    source: str, block: bytes, before: int, wanted: set[str] | None, fields: Mapping[str, Field]
) -> Chunk | None:
    """The rows of a block of JSON lines read by Arrow's JSON reader (in C++, without the GIL),
    or None when the block is not plain (see :func:`_plain_json_lines`), Arrow refuses it, or
    a wanted column's type is not one whose values are those ``json`` reads."""
    import pyarrow as pa
    import pyarrow.json as pajson

    count = _plain_json_lines(block)
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
    for number, line in enumerate(lines, before + 1):
        text = line.rstrip(b"\r\n").decode("utf-8", "replace")
        if text.strip():
            batch.append((number, text, _json_value(line)))
    return _json_part(source, batch)


def _json_value(line: bytes) -> Any:
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
        )
    seen = set().union(*part.records) if part.records else set()
    names = seen & wanted if wanted is not None else seen
    columns = {n: _json_column(part.records, n) for n in sorted(names)}
    return Chunk(source, part.lines, columns, rejects=part.rejects, texts=part.texts, names=sorted(seen))


def _json_column(records: list[dict[str, Any]], name: str) -> list[Any]:
    """The values of ``name`` across records, ``MISSING`` where a record lacks it."""
    try:
        return list(map(itemgetter(name), records))  # in C, when every record has the name
    except KeyError:
        return [r.get(name, _MISSING) for r in records]


# -- Parquet -----------------------------------------------------------------------------------


def _parquet(path: Path, chunk_rows: int, wanted: set[str] | None) -> Iterator[Chunk]:
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:  # noqa: BLE001 - Arrow raises several types for a bad file
        raise DataError(f"{path}: not a readable Parquet file ({exc})") from exc
    names = [n for n in parquet.schema_arrow.names if wanted is None or n in wanted]
    start = 0
    for batch in parquet.iter_batches(batch_size=chunk_rows, columns=names):
        lines = np.arange(start + 1, start + 1 + batch.num_rows, dtype=np.int64)
        start += batch.num_rows
        yield Chunk(str(path), lines, {n: batch.column(n) for n in names})


# -- TFRecord ----------------------------------------------------------------------------------


def _tfrecord(path: Path, chunk_rows: int, wanted: set[str] | None) -> Iterator[Chunk]:
    from tfship._wire import read_tfrecords

    start = 0
    with _open_binary(path) as stream:
        records = read_tfrecords(stream, where=str(path))
        while True:
            batch: list[bytes] = []
            try:
                batch.extend(islice(records, chunk_rows))
            except InputError as exc:  # a truncated or corrupt record: the file is damaged
                what = re.sub(r"^record \d+ ", "", str(exc).removeprefix(f"{path}: "))
                raise DataError(
                    f"{path}: corrupt TFRecord after record {start + len(batch)}: the next record {what}"
                ) from None
            if not batch:
                return
            serialized = np.empty(len(batch), dtype=object)
            serialized[:] = batch
            lines = np.arange(start + 1, start + 1 + len(batch), dtype=np.int64)
            start += len(batch)
            yield Chunk(str(path), lines, {}, serialized=serialized)


def example_columns(serialized: Array, names: Sequence[str]) -> dict[str, list[Any]]:
    """Features ``names`` of serialized examples as Python values (one list per name)."""
    from tfship._wire import protos

    parse = protos().example_pb2.Example.FromString
    columns: dict[str, list[Any]] = {n: [] for n in names}
    for data in serialized:
        feats = parse(data).features.feature
        for name in names:
            feature = feats.get(name)
            kind = feature.WhichOneof("kind") if feature is not None else None
            if kind is None:
                columns[name].append(_MISSING)
                continue
            values = list(getattr(feature, kind).value)
            values = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in values]
            columns[name].append(values[0] if len(values) == 1 else values)
    return columns
