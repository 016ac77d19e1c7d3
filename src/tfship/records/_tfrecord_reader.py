"""The TFRecord reader of ``tf.train.Example``, and the Examples it yields read or checked.

Framing is read by ``tfship._wire`` and Examples are parsed with tfship's own message classes,
so nothing here needs TensorFlow.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tfship._values import MISSING as _MISSING
from tfship._wire import Example
from tfship.errors import DataError, InputError
from tfship.records._chunks import Chunk
from tfship.records._formats import open_binary
from tfship.schema import Schema


def tfrecord_chunks(path: Path, chunk_rows: int, wanted: set[str] | None) -> Iterator[Chunk]:
    from tfship._wire import read_tfrecord_runs

    start = 0  # records in the chunks yielded
    with open_binary(path) as stream:
        runs = read_tfrecord_runs(stream, where=str(path))
        pending: list[bytes] = []  # read, not yet in a chunk
        while True:
            try:
                while len(pending) < chunk_rows and (run := next(runs, None)) is not None:
                    pending += run
            except InputError as exc:  # a truncated or corrupt record: the file is damaged
                what = re.sub(r"^record \d+ ", "", str(exc).removeprefix(f"{path}: "))
                raise DataError(
                    f"{path}: corrupt TFRecord after record {start + len(pending)}: the next record {what}"
                ) from None
            if not pending:
                return
            whole = max(len(pending) // chunk_rows, 1) * chunk_rows  # all of it at the end
            for low in range(0, min(whole, len(pending)), chunk_rows):
                batch = pending[low : low + chunk_rows]
                serialized = np.empty(len(batch), dtype=object)
                serialized[:] = batch
                lines = np.arange(start + 1, start + 1 + len(batch), dtype=np.int64)
                start += len(batch)
                yield Chunk(str(path), lines, {}, serialized=serialized)
            del pending[:whole]


def example_columns(serialized: Iterable[bytes], names: Sequence[str]) -> dict[str, list[Any]]:
    """Features ``names`` of serialized examples as Python values (one list per name).

    ``serialized`` is any run of them: a chunk's ``serialized`` array, or a list of bytes.
    """
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


#: the value list of a ``tf.train.Feature`` that holds each dtype.
_EXAMPLE_KINDS = {"string": "bytes_list", "float32": "float_list", "int64": "int64_list"}


def _parse_example(data: bytes) -> Example:
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
