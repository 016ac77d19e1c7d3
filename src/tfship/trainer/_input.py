"""Training and evaluation ``input_fn``s over CSV and TFRecord files, driven by the schema."""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tfship._tf import tf
from tfship._values import CSV_LIST_SEPARATOR
from tfship.errors import DataError, InputError
from tfship.schema import CsvMissing, Schema, read_csv_header
from tfship.trainer._cluster import Shard


@dataclass(frozen=True)
class InputOptions:
    """How files are read: batch, shuffling, epochs and parallelism.

    Example:
        >>> InputOptions(batch_size=64, epochs=None).shuffle_buffer
        1000
    """

    batch_size: int = 32
    epochs: int | None = None
    shuffle_buffer: int = 1000
    reader_threads: int = 1
    parser_threads: int = 2
    prefetch: int = 2
    seed: int = 0
    #: a CSV file without a feature's column is read with the feature's default in every
    #: row (with a warning); by default it is refused
    fill_missing_columns: bool = False


def expand(patterns: Sequence[str]) -> list[str]:
    """Files matched by the globs, sorted, so every run reads them in the same order.

    Raises:
        InputError: a pattern matches nothing.
    """
    files: list[str] = []
    for pattern in patterns:
        matched = sorted(glob.glob(pattern))
        if not matched:
            raise InputError(f"no file matches {pattern!r}")
        files.extend(matched)
    return files


def build_input_fn(
    schema: Schema,
    patterns: Sequence[str],
    config: InputOptions,
    *,
    training: bool,
    shard: Shard | None = None,
) -> Callable[[], Any]:
    """An Estimator ``input_fn`` yielding ``(features, labels)`` batches from CSV or TFRecord files.

    The format is chosen from the first file's extension (``.csv`` or anything else for
    TFRecord of ``tf.Example``). Evaluation reads every file once, in order, unshuffled.
    With a ``shard``, this replica reads only its share: whole files when there are at least
    as many files as replicas, else every ``count``-th record (see :meth:`Shard.plan`).

    Example:
        >>> from tfship.data import infer_schema, penguins_split
        >>> train_csv, _ = penguins_split("data")
        >>> schema = infer_schema(train_csv, label="species")
        >>> fn = build_input_fn(schema, [str(train_csv)], InputOptions(batch_size=4), training=True,
        ...                     shard=Shard(1, 3))
        >>> features, labels = next(iter(fn()))
        >>> sorted(features)[:2], features["island"].shape, labels.shape
        (['bill_depth_mm', 'bill_length_mm'], TensorShape([4]), TensorShape([4]))
    """
    files = expand(patterns)
    records: tuple[int, int] | None = None
    if shard is not None:
        files, records = shard.plan(files)
    if files[0].endswith(".csv"):
        header = _csv_header(files, schema, config.fill_missing_columns)
        return lambda: _csv_dataset(schema, files, header, config, training, records)
    if all(os.path.getsize(f) == 0 for f in files):  # a TFRecord file without a record is empty
        raise DataError(f"no rows: {', '.join(files)} {'is' if len(files) == 1 else 'are'} empty")
    return lambda: _tfrecord_dataset(schema, files, config, training, records)


def _csv_header(files: Sequence[str], schema: Schema, fill_missing_columns: bool) -> list[str]:
    """The header the files share (TensorFlow reads every file by the first one's)."""
    from tfship.records._shared import check_columns, schema_fields

    headers = {}
    has_rows = False
    for path in files:
        with open(path, "rb") as fh:
            headers[path] = read_csv_header(fh)
            has_rows = has_rows or any(line.strip() for line in fh)
    if not has_rows:
        raise DataError(f"no rows: {', '.join(files)} {'holds' if len(files) == 1 else 'hold'} a header only")
    first, header = files[0], headers[files[0]]
    for path, other in headers.items():
        if other != header:
            raise DataError(f"{path}: its header differs from that of {first} ({other} against {header})")
    check_columns(schema_fields(schema), header, first, fill_missing_columns=fill_missing_columns)
    return header


def _csv_dataset(
    schema: Schema,
    files: list[str],
    header: list[str],
    config: InputOptions,
    training: bool,
    records: tuple[int, int] | None,
) -> Any:
    t = tf()
    # Every column is read as a string and converted per feature, so "NA" and empty cells
    # take the schema's default the same way the loaders do.
    defaults = [[""] for _ in header]
    dataset = t.data.experimental.CsvDataset(files, defaults, header=True)
    dataset = _shard_records(dataset, records)
    dataset = dataset.map(lambda *cols: dict(zip(header, cols)))
    dataset = _shuffle_repeat(dataset, config, training)
    dataset = dataset.batch(config.batch_size)
    dataset = dataset.map(lambda rows: _convert_batch(schema, rows), num_parallel_calls=config.parser_threads)
    return dataset.prefetch(config.prefetch)


def _shard_records(dataset: Any, records: tuple[int, int] | None) -> Any:
    # Before shuffling: the split must not depend on the shuffle order.
    return dataset if records is None else dataset.shard(*records)


def _shuffle_repeat(dataset: Any, config: InputOptions, training: bool) -> Any:
    if training:
        dataset = dataset.shuffle(config.shuffle_buffer, seed=config.seed, reshuffle_each_iteration=True)
        return dataset.repeat(config.epochs)
    return dataset


def _convert_batch(schema: Schema, rows: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    t = tf()
    features = {}
    for f in schema.features:
        if f.name not in rows:
            features[f.name] = _default_column(f, t.shape(next(iter(rows.values())))[0])
            continue
        features[f.name] = _convert_column(f, rows[f.name])
    label_feature_dtype = schema.label.dtype
    label = rows[schema.label.name]
    if label_feature_dtype != "string":
        label = t.strings.to_number(label, out_type=getattr(t, label_feature_dtype))
    return features, label


def _is_missing(t: Any, column: Any, dtype: str) -> Any:
    # The loaders' CSV rule: "" anywhere, NA-style tokens only in numeric columns.
    rule = CsvMissing()
    cells = t.strings.strip(column) if rule.strips(dtype) else column
    return t.reduce_any(t.stack([t.equal(cells, m) for m in sorted(rule.tokens(dtype))]), axis=0)


def _convert_column(f: Any, column: Any) -> Any:
    t = tf()
    dtype = getattr(t, f.dtype)
    if f.shape is None:
        parts = t.strings.split(t.where(_is_missing(t, column, f.dtype), "", column), CSV_LIST_SEPARATOR)
        values = parts if f.dtype == "string" else t.strings.to_number(parts, out_type=dtype)
        return values.to_sparse()
    if f.shape:
        parts = t.strings.split(column, CSV_LIST_SEPARATOR).to_tensor(shape=[None, f.size])
        values = parts if f.dtype == "string" else t.strings.to_number(parts, out_type=dtype)
        return t.reshape(values, [-1, *f.shape])
    default = "" if f.default is None else str(f.default)
    filled = t.where(_is_missing(t, column, f.dtype), default, column)
    return filled if f.dtype == "string" else t.strings.to_number(filled, out_type=dtype)


def _default_column(f: Any, batch: Any) -> Any:
    t = tf()
    return t.fill([batch], t.constant(f.default, dtype=getattr(t, f.dtype)))


def _tfrecord_dataset(
    schema: Schema, files: list[str], config: InputOptions, training: bool, records: tuple[int, int] | None
) -> Any:
    t = tf()
    spec = schema.parse_spec(include_label=True)
    dataset = t.data.Dataset.from_tensor_slices(files)
    dataset = dataset.interleave(
        t.data.TFRecordDataset, cycle_length=config.reader_threads, deterministic=True
    )
    dataset = _shard_records(dataset, records)
    dataset = _shuffle_repeat(dataset, config, training)
    dataset = dataset.batch(config.batch_size)

    def parse(serialized: Any) -> tuple[dict[str, Any], Any]:
        parsed = t.io.parse_example(serialized, spec)
        label = parsed.pop(schema.label.name)
        return parsed, label

    dataset = dataset.map(parse, num_parallel_calls=config.parser_threads)
    return dataset.prefetch(config.prefetch)
