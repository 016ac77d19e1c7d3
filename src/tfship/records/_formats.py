"""Record files by their suffix: which reader reads one, the files a pattern names, their columns.

A ``.gz`` file is read by the suffix before it (all formats but Parquet); :func:`open_binary`
opens either kind for the readers.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO, cast

from tfship.errors import InputError
from tfship.schema import read_csv_header

#: file suffix -> reader format.
FORMATS: dict[str, str] = {
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".tfrecord": "tfrecord",
    ".tfrecords": "tfrecord",
    ".tfr": "tfrecord",
}


def expand_inputs(patterns: Sequence[str]) -> list[Path]:
    """Files named by paths or globs, in the order given (each glob sorted).

    Raises:
        InputError: a pattern matches nothing, or a file has an unknown suffix.
    """
    files: list[Path] = []
    for pattern in patterns:
        matches = sorted(glob.glob(os.path.expanduser(pattern), recursive=True))
        matches = [m for m in matches if os.path.isfile(m)]
        if not matches:
            raise InputError(f"input {pattern!r} matches no file")
        files.extend(Path(m) for m in matches)
    for path in files:
        format_of(path)
    return files


def format_of(path: Path) -> str:
    """The reader format of a file, from its suffix (``.gz`` files by the suffix before it)."""
    suffix = plain_path(path).suffix.lower()
    fmt = FORMATS.get(suffix)
    if fmt is None or (_gzipped(path) and fmt == "parquet"):
        raise InputError(
            f"input {str(path)!r}: unknown file type {suffix!r}; "
            f"known: {', '.join(sorted(FORMATS))} (all but Parquet also as .gz)"
        )
    return fmt


def _gzipped(path: Path) -> bool:
    return path.suffix.lower() == ".gz"


def plain_path(path: Path) -> Path:
    """The path without its ``.gz``, whose suffix names the format."""
    return path.with_suffix("") if _gzipped(path) else path


def open_binary(path: Path) -> BinaryIO:
    """The file opened for reading bytes, uncompressed as it is read when it is a ``.gz``."""
    if _gzipped(path):
        import gzip

        # a GzipFile reads as any binary file does (typeshed declares it apart from BinaryIO)
        return cast(BinaryIO, gzip.open(path, "rb"))
    return open(path, "rb")  # noqa: SIM115 - closed by the caller's with


def columns_of(path: Path) -> list[str] | None:
    """The column names of a CSV or Parquet file (None for formats without a header)."""
    fmt = format_of(path)
    if fmt == "csv":
        with open_binary(path) as f:
            return read_csv_header(f)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return list(pq.ParquetFile(path).schema_arrow.names)
    return None
