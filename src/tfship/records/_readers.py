"""Streaming readers for batch jobs: CSV, JSONL, Parquet and TFRecord of ``tf.train.Example``.

Each reader yields :class:`Chunk` s of at most ``chunk_rows`` rows, so memory does not grow with
the file. Every row keeps its file and line (record number for Parquet and TFRecord) so that a
rejected row can be found again. Rows that cannot even be read (bad JSON, a CSV line with the
wrong number of cells) come out as rejects, not as errors.
"""

from __future__ import annotations

import csv
import glob
import io
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from tfship.errors import DataError, InputError
from tfship.records import MISSING as _MISSING
from tfship.schema import (  # importing it also lifts the csv module's cap on a cell
    CsvMissing,
    Schema,
    read_csv_header,
)

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


def read_chunks(path: Path, chunk_rows: int, wanted: set[str] | None = None) -> Iterator[Chunk]:
    """Chunks of one file; ``wanted`` restricts the columns kept (None keeps all)."""
    readers = {"csv": _csv, "jsonl": _jsonl, "parquet": _parquet, "tfrecord": _tfrecord}
    return readers[format_of(path)](path, chunk_rows, wanted)


def read_records(path: Path, limit: int | None = None, schema: Schema | None = None) -> list[Any]:
    """The records of a small file, whole: a dict per CSV/JSONL/Parquet row, bytes per TFRecord.

    For the commands that take a handful of records (warmup requests, client calls) through
    the same readers as batch jobs. CSV cells stay text; JSON values keep their types; a
    null or an absent key is left out of its record. With ``schema``, every record is checked
    against it first (values, shapes, missing values without a default; in a ``tf.Example``
    the kind of each list), so that a bad record is named by file and line (CSV, JSONL) or
    record number (Parquet, TFRecord) before anything uses it.

    Raises:
        InputError: the file is missing or of an unknown type, or a row is malformed (named by
            file and line).
        DataError: with ``schema``, a record that does not fit it (named by file and line).
    """
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    records: list[Any] = []
    for chunk in read_chunks(path, chunk_rows=1024):
        if chunk.rejects:
            bad = chunk.rejects[0]
            raise InputError(f"{bad.source}:{bad.line}: {bad.reason}")
        places = [f"{chunk.source}:{line}" for line in chunk.lines.tolist()]
        if chunk.serialized is not None:
            for place, data in zip(places, chunk.serialized):
                if schema is not None:
                    check_example(schema, bytes(data), place)
                records.append(bytes(data))
        else:
            columns = {k: _python_list(v) for k, v in chunk.columns.items()}
            csv_rule = CsvMissing() if chunk.csv else None
            for i, place in enumerate(places):
                # a null and an absent key are both missing: the record leaves the name out
                record = {
                    k: v[i] for k, v in columns.items() if v[i] is not None and v[i] is not _MISSING
                }
                if schema is not None:
                    schema.convert_record(record, where=place, csv=csv_rule)
                records.append(record)
        if limit is not None and len(records) >= limit:
            return records[:limit]
    return records


#: the value list of a ``tf.train.Feature`` that holds each dtype.
_EXAMPLE_KINDS = {"string": "bytes_list", "float32": "float_list", "int64": "int64_list"}


def check_example(schema: Schema, data: bytes, where: str) -> None:
    """Check one serialized ``tf.train.Example`` against ``schema``, as parsing would.

    Raises:
        DataError: not an Example, a feature in the wrong kind of list (``bytes_list`` for a
            number), or values the schema refuses; named by ``where`` and the feature.
    """
    from tfship._tf import tf

    try:
        feats = tf().train.Example.FromString(data).features.feature
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
                f"{where}: field {feature.name!r}: expected {feature.dtype} values ({want}), "
                f"found a {kind}"
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


def _csv_block(
    source: str, names: list[str], block: bytes, first: int, wanted: set[str] | None
) -> Chunk:
    count = block.count(b"\n")
    numbers = np.arange(first + 1, first + 1 + count, dtype=np.int64)
    texts = LazyLines(block)
    blank = b"\n\n" in block or b"\n\r\n" in block or block[:1] in (b"\n", b"\r")
    if not blank:
        try:
            table = _arrow_csv(block, names)
        except Exception:  # noqa: BLE001 - any Arrow parse failure: take the slow path
            table = None
        if table is not None and table.num_rows == count:
            columns = {n: table.column(n) for n in names if wanted is None or n in wanted}
            return Chunk(source, numbers, columns, texts=texts, csv=True)
    lines = list(texts)
    keep = [i for i, line in enumerate(lines) if line.strip()]
    return _csv_slow(source, names, [lines[i] for i in keep], numbers[keep], wanted)


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
    source: str, names: list[str], texts: list[str], numbers: Array, wanted: set[str] | None
) -> Chunk:
    rejects: list[Reject] = []
    good_rows: list[list[str]] = []
    good_lines: list[int] = []
    good_texts: list[str] = []
    for text, number in zip(texts, numbers.tolist()):
        try:
            cells = next(csv.reader([text], strict=True), [])
        except csv.Error as exc:
            rejects.append(Reject(source, number, f"unparseable CSV line: {exc}", text))
            continue
        if len(cells) != len(names):
            reason = f"expected {len(names)} CSV cells (as in the header), found {len(cells)}"
            rejects.append(Reject(source, number, reason, text))
            continue
        good_rows.append(cells)
        good_lines.append(number)
        good_texts.append(text)
    columns: dict[str, Any] = {}
    for i, name in enumerate(names):
        if wanted is None or name in wanted:
            columns[name] = [row[i] for row in good_rows]
    lines = np.asarray(good_lines, dtype=np.int64)
    return Chunk(source, lines, columns, rejects=rejects, texts=good_texts, csv=True)


# -- JSONL -------------------------------------------------------------------------------------


def _jsonl(path: Path, chunk_rows: int, wanted: set[str] | None) -> Iterator[Chunk]:
    source = str(path)
    with io.TextIOWrapper(_open_binary(path), encoding="utf-8") as f:
        number = 0
        while True:
            lines = list(islice(f, chunk_rows))
            if not lines:
                return
            records: list[dict[str, Any]] = []
            numbers: list[int] = []
            texts: list[str] = []
            rejects: list[Reject] = []
            for line in lines:
                number += 1
                text = line.rstrip("\r\n")
                if not text.strip():
                    continue
                try:
                    record = json.loads(text)
                except json.JSONDecodeError as exc:
                    rejects.append(Reject(source, number, f"unparseable JSON: {exc}", text))
                    continue
                if not isinstance(record, dict):
                    reason = f"expected a JSON object, found {type(record).__name__}"
                    rejects.append(Reject(source, number, reason, text))
                    continue
                records.append(record)
                numbers.append(number)
                texts.append(text)
            seen = set().union(*records) if records else set()
            names = seen & wanted if wanted is not None else seen
            columns = {n: [r.get(n, _MISSING) for r in records] for n in sorted(names)}
            lines_arr = np.asarray(numbers, dtype=np.int64)
            yield Chunk(source, lines_arr, columns, rejects=rejects, texts=texts, names=sorted(seen))


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
    from tfship._tf import tf

    t = tf()
    compression = "GZIP" if _gzipped(path) else ""
    dataset = t.data.TFRecordDataset(str(path), compression_type=compression).batch(chunk_rows)
    start = 0
    iterator = iter(dataset.as_numpy_iterator())
    while True:
        try:
            batch = next(iterator)
        except StopIteration:
            return
        except t.errors.OpError as exc:
            raise DataError(
                f"{path}: corrupt TFRecord after record {start}: {exc.message.splitlines()[0]}"
            ) from exc
        serialized = np.empty(len(batch), dtype=object)
        serialized[:] = list(batch)
        lines = np.arange(start + 1, start + 1 + len(batch), dtype=np.int64)
        start += len(batch)
        yield Chunk(str(path), lines, {}, serialized=serialized)


def example_columns(serialized: Array, names: Sequence[str]) -> dict[str, list[Any]]:
    """Features ``names`` of serialized examples as Python values (one list per name)."""
    from tfship._tf import tf

    parse = tf().train.Example.FromString
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
