"""Records: the data a user hands tfship, one row at a time, and what it becomes.

The one home of fields and missing values, the streaming readers of record files (CSV, JSON
Lines, Parquet, TFRecord of ``tf.train.Example``), the conversion of a chunk of rows to typed
columns, and the one builder of ``tf.train.Example`` from a record, fed by interchangeable
typing rules. It needs neither TensorFlow nor pandas.
"""

from __future__ import annotations

from typing import Any

from tfship._deprecated import OldNames
from tfship.records import _shared
from tfship.records._chunks import Chunk, Reject
from tfship.records._examples import (
    ByFields,
    ByJson,
    BySchema,
    ByValue,
    FeatureValues,
    Typing,
    to_example,
)
from tfship.records._fields import Field
from tfship.records._read import read_chunks, read_records

__all__ = [
    "ByFields",
    "ByJson",
    "BySchema",
    "ByValue",
    "Chunk",
    "FeatureValues",
    "Field",
    "Reject",
    "Typing",
    "read_chunks",
    "read_records",
    "to_example",
]

# Every name of the door was public here before: the door's list is the one list of them.
_OLD = OldNames(__name__, withdrawn={name: f"{_shared.__name__}.{name}" for name in _shared.__all__})


def __getattr__(name: str) -> Any:
    return _OLD.resolve(name)
