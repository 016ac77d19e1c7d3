"""Records: the data a user hands tfship, one row at a time, and what it becomes.

The one home of fields and missing values, the streaming readers of record files (CSV, JSON
Lines, Parquet, TFRecord of ``tf.train.Example``), the conversion of a chunk of rows to typed
columns, and the one builder of ``tf.train.Example`` from a record, fed by interchangeable
typing rules. It needs neither TensorFlow nor pandas.
"""

from __future__ import annotations

from tfship.records._convert import (
    check_columns,
    convert_chunk,
    convert_value,
    select_rows,
    slice_rows,
)
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
from tfship.records._fields import (
    MISSING,
    Column,
    Field,
    SparseColumn,
    coo_from_lengths,
    empty_sparse,
    schema_fields,
)
from tfship.records._readers import (
    Chunk,
    Reject,
    check_example,
    columns_of,
    example_columns,
    expand_inputs,
    format_of,
    read_chunks,
    read_records,
    type_csv_records,
)

__all__ = [
    "ByFields",
    "ByJson",
    "BySchema",
    "ByValue",
    "Chunk",
    "Column",
    "FeatureValues",
    "Field",
    "MISSING",
    "Reject",
    "SparseColumn",
    "Typing",
    "check_columns",
    "check_example",
    "columns_of",
    "convert_chunk",
    "convert_value",
    "coo_from_lengths",
    "empty_sparse",
    "example_columns",
    "examples_from_json",
    "expand_inputs",
    "fill_example",
    "format_of",
    "parse_spec_fields",
    "read_chunks",
    "read_records",
    "schema_fields",
    "select_rows",
    "slice_rows",
    "to_example",
    "type_csv_records",
]
