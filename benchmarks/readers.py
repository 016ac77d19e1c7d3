"""Rows/s of the one reader of records, per file format: CSV, JSON Lines and Parquet.

The same table (synthetic penguins, ``tfship.data.synthesize``) is written as CSV, as JSON Lines
(one object a row, typed values) and as Parquet, then each file is read the way a batch job
reads it: ``read_chunks`` in chunks of 16,384 rows and ``convert_chunk`` to the schema's typed
columns, every row good. The formats take turns in each repeat, so a busy machine slows them
alike; each prints its median rows/s with the spread over repeats and its ratio to CSV's in the
same repeat (median, then the spread); then the median CPU seconds of each, steadier than wall
time on shared cores. Target: JSON Lines within 2x of CSV (>= 0.5x its rows/s). Every format
must give the same converted columns, checked before any timing.

Usage: ``python benchmarks/readers.py [--rows N] [--repeats N] [--short]``. ``--short`` reads
3,000 rows twice and judges no target.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

FORMATS = ("csv", "jsonl", "parquet")
CHUNK_ROWS = 16_384


def write_table(workdir: Path, rows: int) -> tuple[dict[str, Any], dict[str, Path]]:
    """The schema's fields and the same table in each format."""
    import orjson
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from tfship.data import infer_schema, penguins_split, synthesize
    from tfship.records._shared import schema_fields

    train_csv, _ = penguins_split(workdir / "data")
    schema = infer_schema(train_csv, "species")
    paths = {fmt: workdir / f"table.{fmt}" for fmt in FORMATS}
    synthesize(schema, rows, paths["csv"], seed=0)
    # strings as written ("NA" is a sex, as the CSV rule reads a string column); no missing numbers
    table = pacsv.read_csv(paths["csv"], convert_options=pacsv.ConvertOptions(strings_can_be_null=False))
    pq.write_table(table, paths["parquet"])
    with open(paths["jsonl"], "wb") as out:
        for record in table.to_pylist():
            out.write(orjson.dumps(record) + b"\n")
    return schema_fields(schema), paths


def read(path: Path, fields: dict[str, Any]) -> tuple[tuple[float, float], int, dict[str, Any]]:
    """Wall and CPU seconds to read and convert ``path``, its rows, and its converted columns."""
    from tfship.records import read_chunks
    from tfship.records._shared import convert_chunk
    from tfship.schema import CsvMissing

    started, cpu = time.perf_counter(), time.process_time()
    rows, parts = 0, []
    for chunk in read_chunks(path, CHUNK_ROWS, set(fields), fields):  # as a job reads, fields known
        converted = convert_chunk(
            fields, chunk.columns, chunk.rows, CsvMissing() if chunk.csv else None, source=str(path)
        )
        if converted.bad or chunk.rejects:
            raise SystemExit(f"{path}: rejected rows: {converted.bad or chunk.rejects[:3]}")
        rows += chunk.rows
        parts.append(converted.columns)
    seconds = (time.perf_counter() - started, time.process_time() - cpu)
    columns = {name: np.concatenate([np.asarray(p[name]) for p in parts]) for name in fields}
    return seconds, rows, columns


def same_columns(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.keys() == b.keys() and all(a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]) for k in a)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None, help="rows of the table (default 200,000)")
    parser.add_argument("--repeats", type=int, default=None, help="turns of the three formats (default 7)")
    parser.add_argument("--short", action="store_true", help="3,000 rows, 2 repeats, no target judged")
    args = parser.parse_args()
    rows = args.rows or (3_000 if args.short else 200_000)
    repeats = args.repeats or (2 if args.short else 7)
    with tempfile.TemporaryDirectory() as tmp:
        print(f"writing {rows:,} rows as {', '.join(FORMATS)} ...", file=sys.stderr)
        fields, paths = write_table(Path(tmp), rows)
        sizes = {fmt: path.stat().st_size for fmt, path in paths.items()}
        first = {fmt: read(paths[fmt], fields) for fmt in FORMATS}  # warm-up, and the check
        agree = all(same_columns(first["csv"][2], first[fmt][2]) for fmt in FORMATS)
        seconds: dict[str, list[float]] = {fmt: [] for fmt in FORMATS}
        cpu: dict[str, list[float]] = {fmt: [] for fmt in FORMATS}
        for _ in range(repeats):
            for fmt in FORMATS:
                (wall, used), _, _ = read(paths[fmt], fields)
                seconds[fmt].append(wall)
                cpu[fmt].append(used)
    print(
        f"read_chunks + convert_chunk, {rows:,} rows of {len(fields)} columns, chunks of "
        f"{CHUNK_ROWS:,}, {repeats} turns"
    )
    print(f"{'format':<10}{'rows':>10}{'MB':>8}{'rows/s median (spread)':>34}{'x CSV (spread)':>24}")
    for fmt in FORMATS:
        rates = [rows / s for s in seconds[fmt]]
        ratios = [c / s for c, s in zip(seconds["csv"], seconds[fmt])]
        print(
            f"{fmt:<10}{rows:>10,}{sizes[fmt] / 1e6:>8.1f}"
            f"{f'{statistics.median(rates):,.0f} ({min(rates):,.0f}-{max(rates):,.0f})':>34}"
            f"{f'{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}x)':>24}"
        )
    cpu_s = {fmt: statistics.median(cpu[fmt]) for fmt in FORMATS}
    print(
        f"CPU seconds, median: {', '.join(f'{fmt} {cpu_s[fmt]:.3f}' for fmt in FORMATS)}; "
        f"JSON Lines / CSV {cpu_s['jsonl'] / cpu_s['csv']:.2f}x (on a busy machine the wall ratio drifts)"
    )
    print(f"the same converted columns from every format: {agree}")
    jsonl = statistics.median(c / s for c, s in zip(seconds["csv"], seconds["jsonl"]))
    verdict = "not judged (--short)" if args.short else ("met" if jsonl >= 0.5 else "MISSED")
    print(f"target: JSON Lines >= 0.5x CSV's rows/s: {jsonl:.2f}x, {verdict}")
    if not agree:
        raise SystemExit("the formats gave different columns")


if __name__ == "__main__":
    main()
