"""The readers of record files: CSV, JSON Lines, JSON, Parquet and TFRecord of ``tf.train.Example``.

Each reader yields :class:`Chunk` s of at most ``chunk_rows`` rows, so memory does not grow with
the file. Every row keeps its file and line (record number for Parquet and TFRecord) so that a
rejected row can be found again. Rows that cannot even be read (bad JSON, a CSV line with the
wrong number of cells) come out as rejects, not as errors. :func:`read_records` reads a small
file whole for the commands that take a handful of records, and types CSV cells by the one
rule (:func:`type_csv_records`). Nothing here needs TensorFlow. This module is the one way in:
:func:`read_chunks` picks each file's reader by its format.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, overload

from tfship._values import MISSING as _MISSING
from tfship.errors import InputError
from tfship.records._chunks import Chunk, RawColumn
from tfship.records._csv_reader import csv_chunks, type_csv_records
from tfship.records._fields import Field, schema_fields
from tfship.records._formats import format_of
from tfship.records._jsonl_reader import jsonl_chunks
from tfship.records._parquet_reader import parquet_chunks
from tfship.records._tfrecord_reader import check_example, tfrecord_chunks
from tfship.schema import Schema


def read_chunks(
    path: Path, chunk_rows: int, wanted: set[str] | None = None, fields: Mapping[str, Field] | None = None
) -> Iterator[Chunk]:
    """Chunks of one file; ``wanted`` restricts the columns kept (None keeps all).

    ``fields`` are the fields the columns will be converted to, when the caller knows them:
    JSON Lines are then read by Arrow's columnar reader wherever the values it makes are the
    ones ``json`` reads (see ``_jsonl_reader``), as Arrow arrays; without them, and for every
    other line, as Python lists. The converted columns are the same either way.
    """
    if format_of(path) == "jsonl":
        return jsonl_chunks(path, chunk_rows, wanted, fields)
    readers = {"csv": csv_chunks, "parquet": parquet_chunks, "tfrecord": tfrecord_chunks}
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


def _python_list(column: RawColumn) -> list[Any]:
    return list(column.to_pylist() if hasattr(column, "to_pylist") else column)
