"""Records: the data a user hands tfship, one row at a time, and what it becomes.

The one home of fields and missing values, the streaming readers of record files (CSV, JSON
Lines, Parquet, TFRecord of ``tf.train.Example``), the conversion of a chunk of rows to typed
columns, and the one builder of ``tf.train.Example`` from a record, fed by interchangeable
typing rules. It needs neither TensorFlow nor pandas.
"""

from __future__ import annotations

from tfship.records._examples import (
    ByFields,
    ByJson,
    BySchema,
    ByValue,
    FeatureValues,
    Typing,
    examples_from_json,
    fill_example,
    parse_spec_fields,
    to_example,
)
from tfship.records._fields import MISSING, Column, Field, SparseColumn

__all__ = [
    "ByFields",
    "ByJson",
    "BySchema",
    "ByValue",
    "Column",
    "FeatureValues",
    "Field",
    "MISSING",
    "SparseColumn",
    "Typing",
    "examples_from_json",
    "fill_example",
    "parse_spec_fields",
    "to_example",
]
