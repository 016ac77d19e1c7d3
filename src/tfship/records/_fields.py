"""Fields and missing values: what a typed input is, once.

A :class:`Field` is one name a user writes with the type it takes: a ``tf.Example`` feature of a
parsing signature, a signature's input, or a schema's feature. ``MISSING`` (a value a record did
not give) and the rules of which values are missing live in ``tfship._values``, with the schema's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt

from tfship._wire import shape_text

if TYPE_CHECKING:
    from tfship.schema import Schema

Array = npt.NDArray[Any]


class SparseColumn(NamedTuple):
    """A sparse column in COO form: ``indices`` [n, rank] int64, ``values``, ``dense_shape``."""

    indices: Array
    values: Array
    dense_shape: Array

    @property
    def rows(self) -> int:
        return int(self.dense_shape[0])


Column = Array | SparseColumn


@dataclass(frozen=True)
class Field:
    """One name a user writes: a ``tf.Example`` feature of a parsing signature, or an input.

    ``shape`` is the shape of one row (``None`` entries are free dimensions, a ``None`` shape
    any rank); ``sparse`` fields take a variable number of values per row.
    """

    name: str
    dtype: str
    shape: tuple[int | None, ...] | None
    sparse: bool = False
    default: Array | None = None

    @property
    def required(self) -> bool:
        """Whether a record must give this field (dense and without a default)."""
        return not self.sparse and self.default is None

    def describe(self) -> str:
        """``float32 [2]``, ``string, variable length``: what the field expects, for messages."""
        if self.sparse:
            return f"{self.dtype}, variable length"
        shape = "any shape" if self.shape is None else shape_text(self.shape)
        return f"{self.dtype} {shape} per row"


def coo_from_lengths(lengths: Array, values: Array) -> SparseColumn:
    """The [rows, longest row] COO column of row lengths and their concatenated values.

    Example:
        >>> column = coo_from_lengths(np.array([2, 0, 1]), np.array([1.0, 2.0, 3.0]))
        >>> column.indices.tolist(), column.dense_shape.tolist()
        ([[0, 0], [0, 1], [2, 0]], [3, 2])
    """
    rows = lengths.size
    row_ids = np.repeat(np.arange(rows, dtype=np.int64), lengths)
    starts = np.cumsum(lengths) - lengths
    positions = np.arange(values.size, dtype=np.int64) - np.repeat(starts, lengths)
    width = int(lengths.max()) if rows else 0
    return SparseColumn(
        np.stack([row_ids, positions], axis=1).reshape(-1, 2),
        values,
        np.array([rows, width], np.int64),
    )


def empty_sparse(field: Field, rows: int) -> SparseColumn:
    """A sparse column of ``field``'s dtype with ``rows`` empty rows.

    Example:
        >>> empty_sparse(Field("tags", "string", None, sparse=True), 2).dense_shape.tolist()
        [2, 0]
    """
    return SparseColumn(
        np.zeros((0, 2), np.int64),
        np.zeros(0, dtype=object if field.dtype == "string" else np.dtype(field.dtype)),
        np.array([rows, 0], np.int64),
    )


def schema_fields(schema: Schema) -> dict[str, Field]:
    """A schema's features and label as fields, by name (the label required, one value a row).

    Example:
        >>> from tfship.schema import Schema
        >>> schema = Schema.from_dict({"label": {"name": "y", "kind": "binary"}, "features": [
        ...     {"name": "x", "dtype": "float32", "shape": [2], "default": 0.0, "use": {"kind": "numeric"}}]})
        >>> [(f.name, f.shape, f.default.tolist() if f.default is not None else None)
        ...  for f in schema_fields(schema).values()]
        [('x', (2,), [0.0, 0.0]), ('y', (), None)]
    """
    out = {}
    for f in schema.features:
        default = None if f.default is None or f.shape is None else np.asarray(f.default)
        if default is not None and f.shape:
            default = np.broadcast_to(default, f.shape)
        shape = None if f.shape is None else tuple(f.shape)
        out[f.name] = Field(f.name, f.dtype, shape, f.shape is None, default)
    label = schema.label
    out[label.name] = Field(label.name, label.dtype, (), False, None)
    return out
