"""Which writer a batch job writes its output with, by format: JSONL, CSV, Parquet, TFRecord.

Each format's writer is a module of its own (``_jsonl_writer``, ``_arrow_writers`` for CSV
and Parquet, ``_log_writer`` for a TFRecord of ``PredictionLog``); what they share is the
publishing of ``_publish`` (a temporary file renamed into place by ``close``: a reader never
sees half a file) and the value rules of ``_output_values``. JSONL and Parquet keep each
output's per-row shape (``class_ids`` stays ``[1]``, as TF Serving's REST API answers); CSV
has one cell per value (see ``_output_view`` for what a row holds).
"""

from __future__ import annotations

from pathlib import Path

from tfship.errors import InputError
from tfship.loaders._arrow_writers import CsvWriter, ParquetWriter
from tfship.loaders._jsonl_writer import JsonlWriter
from tfship.loaders._log_writer import PredictionLogWriter
from tfship.loaders._publish import Writer, is_stdout

WRITE_FORMATS = ("jsonl", "csv", "parquet", "tfrecord")


def make_writer(
    fmt: str,
    path: Path,
    *,
    signature: str = "serving_default",
    model_name: str = "",
    method: str = "",
) -> Writer:
    """The writer for ``fmt`` (jsonl, csv, parquet, tfrecord)."""
    if fmt == "jsonl":
        return JsonlWriter(path)
    if fmt == "csv":
        return CsvWriter(path)
    if fmt == "parquet":
        return ParquetWriter(path)
    if fmt == "tfrecord":
        return PredictionLogWriter(path, signature=signature, model_name=model_name, method=method)
    raise InputError(f"unknown output format {fmt!r}; choose one of: {', '.join(WRITE_FORMATS)}")


def format_for(path: Path, fmt: str | None) -> str:
    """The output format: ``fmt`` if given, else from the suffix of ``path`` (``-``: jsonl).

    Raises:
        InputError: no format and an unknown suffix, or a binary format to standard output.
    """
    if is_stdout(path):
        if fmt not in (None, "jsonl", "csv"):
            raise InputError(f"{fmt} output cannot go to standard output ('-'): give a file name")
        return fmt or "jsonl"
    if fmt is not None:
        return fmt
    guess = {
        ".jsonl": "jsonl",
        ".json": "jsonl",
        ".csv": "csv",
        ".parquet": "parquet",
        ".tfrecord": "tfrecord",
        ".tfrecords": "tfrecord",
    }.get(path.suffix.lower())
    if guess is None:
        raise InputError(
            f"cannot tell the output format of {str(path)!r} from its suffix; "
            f"pass --format ({', '.join(WRITE_FORMATS)})"
        )
    return guess
