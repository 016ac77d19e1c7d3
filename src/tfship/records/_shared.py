"""What other tfship packages need of ``records`` and a user does not: its door to them.

The chunk conversion behind batch jobs and training's row check, the typed columns it hands
on, the file helpers of the readers and the Example filling of TF Serving's REST front end.
A module of another package imports these here, never from the modules that define them, so
a move inside ``records`` breaks nothing outside it; none of them is public API.
"""

from __future__ import annotations

from tfship._values import MISSING
from tfship.records._convert import check_columns, convert_chunk, convert_value, select_rows, slice_rows
from tfship.records._csv_reader import type_csv_records
from tfship.records._examples import examples_from_json, fill_example, parse_spec_fields
from tfship.records._fields import Column, SparseColumn, coo_from_lengths, empty_sparse, schema_fields
from tfship.records._formats import columns_of, expand_inputs, format_of
from tfship.records._tfrecord_reader import check_example, example_columns

__all__ = [
    "Column",
    "MISSING",
    "SparseColumn",
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
    "schema_fields",
    "select_rows",
    "slice_rows",
    "type_csv_records",
]
