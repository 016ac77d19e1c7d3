"""The Parquet reader: record batches of the wanted columns, as Arrow arrays."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from tfship.errors import DataError
from tfship.records._chunks import Chunk


def parquet_chunks(path: Path, chunk_rows: int, wanted: set[str] | None) -> Iterator[Chunk]:
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:  # noqa: BLE001 - Arrow raises several types for a bad file
        raise DataError(f"{path}: not a readable Parquet file ({exc})") from exc
    names = [n for n in parquet.schema_arrow.names if wanted is None or n in wanted]
    start = 0
    for batch in parquet.iter_batches(batch_size=chunk_rows, columns=names):
        lines = np.arange(start + 1, start + 1 + batch.num_rows, dtype=np.int64)
        start += batch.num_rows
        yield Chunk(str(path), lines, {n: batch.column(n) for n in names})
