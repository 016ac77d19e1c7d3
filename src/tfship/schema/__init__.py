"""One feature schema: the spine that the trainer, receivers, loaders and warmup share.

A schema is one JSON file::

    {"version": 1,
     "label": {"name": "species", "kind": "multiclass", "vocabulary": ["Adelie", "Gentoo"]},
     "features": [
       {"name": "bill_length_mm", "dtype": "float32", "shape": [], "default": 43.9,
        "use": {"kind": "numeric", "normalize": {"mean": 43.9, "std": 5.4}}},
       {"name": "island", "dtype": "string", "default": "",
        "use": {"kind": "categorical", "vocabulary": ["Biscoe", "Dream"], "as": "indicator"}}
     ],
     "crosses": [{"features": ["island", "sex"], "hash_buckets": 16, "as": "indicator"}],
     "groups": {"user": ["island"], "item": ["bill_length_mm"]}}

``dtype`` is ``float32``, ``int64`` or ``string``. ``shape`` is ``[]`` (one value per example, the
default), ``[k]`` (exactly k values) or ``null`` (any number of values: a sparse feature).
``use.kind`` is ``numeric`` (optional ``normalize`` with ``mean``/``std``), ``bucketized``
(``boundaries``), ``categorical`` (``vocabulary`` or ``vocabulary_file``), ``identity``
(``num_buckets``) or ``hash`` (``buckets``); a numeric or bucketized feature, and a regression
label, may record the ``range`` (``[min, max]``) seen in the data; categorical kinds are shown
to the model ``as`` ``indicator`` or ``embedding`` (with ``dimension``). ``groups`` name feature groups (the
``two_tower`` model's ``user`` and ``item`` towers).

Example:
    >>> s = Schema.from_dict({"label": {"name": "y", "kind": "regression"},
    ...                       "features": [{"name": "x", "dtype": "float32", "default": 0.0}]})
    >>> s.convert_record({"x": "2.5"})
    {'x': [2.5]}
    >>> s.convert_record({"x": "NA"}, csv=CsvMissing())
    {'x': [0.0]}
"""

from __future__ import annotations

import csv

# The classes below are named in this module (see its end), so ``typing.get_type_hints`` reads
# their annotations here: these are the names those annotations use.
from collections.abc import Mapping  # noqa: F401
from typing import Any  # noqa: F401

# The value and missing rules have their one home in ``tfship._values``; these are their
# public spellings.
from tfship._values import (
    NA_VALUES,
    CsvMissing,
    coerce_value,
    csv_column_dtype,
    field_values,
    is_missing,
    overflows,
)
from tfship.schema._features import DTYPES, LABEL_KINDS, USE_KINDS, Feature, Label
from tfship.schema._headers import (
    HEADER_REPEATED,
    CsvLineError,
    MissingColumnError,
    csv_line_cells,
    did_you_mean,
    nearest_name,
    read_csv_header,
)
from tfship.schema._model import Schema

__all__ = [
    "CsvLineError",
    "CsvMissing",
    "DTYPES",
    "Feature",
    "HEADER_REPEATED",
    "LABEL_KINDS",
    "Label",
    "MissingColumnError",
    "NA_VALUES",
    "Schema",
    "USE_KINDS",
    "coerce_value",
    "csv_column_dtype",
    "csv_line_cells",
    "did_you_mean",
    "field_values",
    "is_missing",
    "nearest_name",
    "overflows",
    "read_csv_header",
]

# Python's csv module refuses a cell over 128 KiB unless told otherwise, and a free-text
# column can hold more; every CSV reader of tfship imports this module, so none has the cap.
CSV_FIELD_LIMIT = 2**31 - 1
csv.field_size_limit(max(csv.field_size_limit(), CSV_FIELD_LIMIT))

# Users import these from ``tfship.schema``: reprs, tracebacks and pickles name them there.
for _public in (CsvLineError, Feature, Label, MissingColumnError, Schema):
    _public.__module__ = __name__
del _public
