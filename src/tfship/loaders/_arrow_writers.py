"""The Arrow table writers: CSV (one cell per output value) and Parquet (per-row shapes kept).

A chunk becomes one Arrow table; the first chunk's table schema opens the file. CSV has one
cell per value: ``probabilities_0``, ``probabilities_1``, ... or just ``class_ids`` when a
row holds one value; Parquet writes a multi-valued output as a fixed-size list column.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from tfship.loaders._output_values import keep_values, text_value
from tfship.loaders._publish import Writer

Array = npt.NDArray[Any]


def _arrow_output(key: str, array: Array, flatten: bool) -> list[tuple[str, Any]]:
    import pyarrow as pa

    rows = array.shape[0]
    per_row = int(np.prod(array.shape[1:])) if array.ndim > 1 else 1
    flat = array.reshape(rows, per_row) if array.ndim != 1 else array.reshape(rows, 1)
    if flatten:
        if array.ndim == 1 or per_row == 1:
            return [(key, _arrow_values(flat[:, 0]))]
        return [(f"{key}_{i}", _arrow_values(flat[:, i])) for i in range(per_row)]
    if array.ndim == 1:
        return [(key, _arrow_values(array))]
    values = _arrow_values(array.reshape(-1))
    nested = values
    for size in reversed(array.shape[1:]):
        nested = pa.FixedSizeListArray.from_arrays(nested, size)
    return [(key, nested)]


def _arrow_values(values: Array) -> Any:
    import pyarrow as pa

    if values.dtype == object:
        binary = pa.array(values, type=pa.binary()) if _all_bytes(values) else None
        if binary is not None:
            try:
                return binary.cast(pa.string())
            except pa.ArrowInvalid:
                return binary
        return pa.array([text_value(v) if isinstance(v, bytes) else v for v in values.tolist()])
    return pa.array(values)


def _all_bytes(values: Array) -> bool:
    return all(isinstance(v, bytes) for v in values[:16])


def _arrow_keep(column: Any, as_text: bool) -> Any:
    import pyarrow as pa

    if isinstance(column, (pa.Array, pa.ChunkedArray)):
        return column.cast(pa.string()) if as_text else column
    values = keep_values(column)
    if as_text:
        # CSV cells are text anyway; files of one job may type an id column differently.
        return pa.array([None if v is None else _cell(v) for v in values], type=pa.string())
    return pa.array(values)


def _cell(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _table(keep: Mapping[str, Any], outputs: Mapping[str, Array], flatten: bool) -> Any:
    import pyarrow as pa

    names: list[str] = []
    arrays: list[Any] = []
    for name, column in keep.items():
        names.append(name)
        arrays.append(_arrow_keep(column, as_text=flatten))
    for key, array in outputs.items():
        for name, column in _arrow_output(key, array, flatten):
            names.append(name)
            arrays.append(column)
    return pa.Table.from_arrays(arrays, names=names)


class _ArrowWriter(Writer):
    """Base of the Arrow table writers: the first chunk's table schema opens the file."""

    flatten = False

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.writer: Any = None

    def write(
        self,
        keep: Mapping[str, Any],
        outputs: Mapping[str, Array],
        inputs: Mapping[str, Any] | None = None,
    ) -> None:
        table = _table(keep, outputs, flatten=self.flatten)
        if self.writer is None:
            self.writer = self._open(table.schema)
        self.writer.write_table(self._conform(table))
        self.rows += table.num_rows

    def _open(self, schema: Any) -> Any:
        raise NotImplementedError

    def _conform(self, table: Any) -> Any:
        """The chunk's table as the open file takes it."""
        return table


class CsvWriter(_ArrowWriter):
    """CSV with a header; one cell per output value (``scores_0``, ``scores_1``, ...)."""

    flatten = True

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.stream: BinaryIO = self.file.open()

    def _open(self, schema: Any) -> Any:
        import pyarrow.csv as pacsv

        options = pacsv.WriteOptions(quoting_style="needed")
        return pacsv.CSVWriter(self.stream, schema, write_options=options)

    def finish(self) -> None:
        try:
            if self.writer is not None:
                self.writer, writer = None, self.writer
                writer.close()
        finally:
            self.stream.close()


class ParquetWriter(_ArrowWriter):
    """Parquet; multi-valued outputs are fixed-size list columns."""

    def _open(self, schema: Any) -> Any:
        import pyarrow.parquet as pq

        return pq.ParquetWriter(str(self.tmp), schema)

    def _conform(self, table: Any) -> Any:
        # A Parquet file has one schema: the first chunk's.
        return table.cast(self.writer.schema)

    def finish(self) -> None:
        if self.writer is not None:
            self.writer, writer = None, self.writer
            writer.close()
