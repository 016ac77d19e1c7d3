"""Fields and missing values: what a typed input is, once.

A :class:`Field` is one name a user writes with the type it takes: a ``tf.Example`` feature of a
parsing signature, a signature's input, or a schema's feature. ``MISSING`` marks a value a record
did not give (a key absent from a record, an empty cell), distinct from any value it could give.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy.typing as npt

from tfship._wire import shape_text

Array = npt.NDArray[Any]

MISSING: Any = object()
"""A value a record does not give; readers put it where a key or a cell is absent."""


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
