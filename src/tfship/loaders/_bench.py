"""``tfship bench``: load time, first-call latency, p50/p99 latency and rows/s per batch size."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tfship.errors import InputError
from tfship.loaders._predict import SignatureAdapter
from tfship.records import Field, read_chunks
from tfship.records._shared import (
    Column,
    SparseColumn,
    convert_chunk,
    coo_from_lengths,
    expand_inputs,
    select_rows,
    slice_rows,
)


@dataclass
class BatchTiming:
    """Timings of one batch size."""

    batch_size: int
    first_ms: float
    p50_ms: float
    p99_ms: float
    calls: int

    @property
    def rows_per_second(self) -> float:
        return self.batch_size / (self.p50_ms / 1000) if self.p50_ms > 0 else 0.0


@dataclass
class BenchReport:
    """What ``tfship bench`` measured.

    Example:
        >>> BenchReport("m", "serving_default", "synthetic", 0.1, 0.05).table().splitlines()[0]
        'model m  signature serving_default  rows synthetic'
    """

    model: str
    signature: str
    rows: str
    import_seconds: float
    load_seconds: float
    timings: list[BatchTiming] = field(default_factory=list)

    def table(self) -> str:
        """The human report: a header, then one line per batch size."""
        lines = [
            f"model {self.model}  signature {self.signature}  rows {self.rows}",
            f"import tensorflow {self.import_seconds:.2f} s, load {self.load_seconds * 1000:.0f} ms",
            f"{'batch':>7} {'first ms':>9} {'p50 ms':>9} {'p99 ms':>9} {'rows/s':>12} {'calls':>6}",
        ]
        for t in self.timings:
            lines.append(
                f"{t.batch_size:>7} {t.first_ms:>9.2f} {t.p50_ms:>9.3f} {t.p99_ms:>9.3f} "
                f"{t.rows_per_second:>12,.0f} {t.calls:>6}"
            )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "signature": self.signature,
            "rows": self.rows,
            "import_seconds": round(self.import_seconds, 4),
            "load_seconds": round(self.load_seconds, 4),
            "batches": [
                {
                    "batch_size": t.batch_size,
                    "first_ms": round(t.first_ms, 3),
                    "p50_ms": round(t.p50_ms, 4),
                    "p99_ms": round(t.p99_ms, 4),
                    "rows_per_second": round(t.rows_per_second, 1),
                    "calls": t.calls,
                }
                for t in self.timings
            ],
        }


def run_bench(
    path: Path,
    *,
    signature: str | None = None,
    batch_sizes: list[int],
    input_file: str | None = None,
    seconds: float = 2.0,
) -> BenchReport:
    """Load the model once and time its signature at each batch size (see ``tfship bench``)."""
    from tfship._tf import tf
    from tfship.loaders._model import load

    started = time.perf_counter()
    tf()
    import_seconds = time.perf_counter() - started
    rows_needed = max(batch_sizes)
    with load(path, signature=signature) as model:
        adapter = model.adapter(signature)
        if input_file is None:
            columns, source = synthetic_columns(adapter, rows_needed), "synthetic"
        else:
            columns, source = _file_columns(adapter, input_file, rows_needed), input_file
        report = BenchReport(str(model.path), adapter.sig.key, source, import_seconds, model.load_seconds)
        for size in batch_sizes:
            batch = {k: _repeat(c, size) for k, c in columns.items()}
            report.timings.append(_time(adapter, batch, size, seconds))
    return report


def _time(adapter: SignatureAdapter, batch: dict[str, Column], size: int, seconds: float) -> BatchTiming:
    started = time.perf_counter()
    adapter.run_columns(batch, None)
    first = time.perf_counter() - started
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline or len(latencies) < 5:
        t0 = time.perf_counter()
        adapter.run_columns(batch, None)
        latencies.append(time.perf_counter() - t0)
    ms = np.asarray(latencies) * 1000
    return BatchTiming(
        size, first * 1000, float(np.percentile(ms, 50)), float(np.percentile(ms, 99)), len(ms)
    )


def _repeat(column: Column, size: int) -> Column:
    rows = column.rows if isinstance(column, SparseColumn) else int(column.shape[0])
    if rows >= size:
        return slice_rows(column, 0, size)
    take = np.arange(size) % rows
    if not isinstance(column, SparseColumn):
        repeated: Column = column[take]
        return repeated
    # Repeat sparse rows by rebuilding from per-row value lists.
    per_row: list[list[Any]] = [[] for _ in range(rows)]
    for (row, _), value in zip(column.indices.tolist(), column.values.tolist()):
        per_row[row].append(value)
    lengths = np.asarray([len(per_row[i]) for i in take], dtype=np.int64)
    flat = [v for i in take for v in per_row[i]]
    values = np.asarray(flat, dtype=column.values.dtype) if flat else column.values[:0]
    return coo_from_lengths(lengths, values)


def synthetic_columns(adapter: SignatureAdapter, rows: int, seed: int = 0) -> dict[str, Column]:
    """Random rows that fit the signature: numbers, short strings, 0 to 3 values per sparse row."""
    rng = np.random.default_rng(seed)
    raw: dict[str, list[Any]] = {}
    for name, fld in adapter.fields.items():
        raw[name] = [_synthetic_value(fld, rng) for _ in range(rows)]
    converted = convert_chunk(adapter.fields, raw, rows)
    return converted.columns


def _synthetic_value(fld: Field, rng: np.random.Generator) -> Any:
    count = int(rng.integers(0, 4)) if fld.sparse else int(np.prod([d or 1 for d in fld.shape or ()]))
    if fld.dtype == "string":
        values: list[Any] = [f"v{int(rng.integers(0, 10))}" for _ in range(count)]
    elif fld.dtype.startswith("int"):
        values = rng.integers(0, 10, size=count).tolist()
    else:
        values = rng.normal(size=count).round(4).tolist()
    if not fld.sparse and fld.shape == ():
        return values[0]
    return values


def _file_columns(adapter: SignatureAdapter, pattern: str, rows: int) -> dict[str, Column]:
    from tfship.loaders._job import ChunkPreparer

    preparer = ChunkPreparer(adapter, [], want_inputs=False)
    for path in expand_inputs([pattern]):
        preparer.check_file(path)
        for chunk in read_chunks(path, rows, preparer.wanted):
            prepared = preparer.prepare(chunk)
            if prepared.columns is None:
                assert prepared.serialized is not None
                examples = prepared.serialized
                return adapter.typed_columns({}) if not examples.size else _from_examples(adapter, examples)
            if prepared.rows:
                keep = np.ones(prepared.rows, dtype=bool)
                return {k: select_rows(c, keep) for k, c in prepared.columns.items()}
    raise InputError(f"input {pattern!r} has no row the model accepts")


def _from_examples(adapter: SignatureAdapter, examples: np.ndarray) -> dict[str, Column]:  # type: ignore[type-arg]
    from tfship.records._shared import example_columns

    raw = example_columns(examples, list(adapter.fields))
    return convert_chunk(adapter.fields, raw, len(examples)).columns
