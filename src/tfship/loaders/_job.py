"""The batch job behind ``tfship predict``: files in, predictions out, in order, nothing lost.

Reading and conversion run in a background thread, one chunk ahead of the model (TensorFlow
releases the GIL while it runs), through a bounded queue, so memory stays flat whatever the
input size. Every row ends up either in the output or in the rejects, with its file, line and
reason; the summary shows that predicted + rejected = rows in.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from tfship._files import errors_name
from tfship.errors import DataError, InputError, ModelInputError
from tfship.loaders._output_view import OutputView, output_view
from tfship.loaders._publish import RejectsWriter, Writer, is_stdout
from tfship.loaders._writers import format_for, make_writer
from tfship.records import Chunk, Reject, read_chunks
from tfship.records._shared import (
    Column,
    check_columns,
    columns_of,
    convert_chunk,
    example_columns,
    expand_inputs,
    format_of,
    select_rows,
    slice_rows,
)
from tfship.schema import CsvMissing

if TYPE_CHECKING:
    from tfship.loaders._model import LocalModel
    from tfship.loaders._predict import SignatureAdapter

Array = npt.NDArray[Any]
log = logging.getLogger(__name__)


class TooManyRejectsError(DataError):
    """Raised after a batch job when more rows were rejected than ``--max-rejects`` allows."""

    def __init__(self, message: str, *, summary: JobSummary) -> None:
        super().__init__(message)
        self.summary = summary


@dataclass
class JobSummary:
    """What a batch job did: rows in, predicted, rejected, time, and where it wrote.

    ``seconds`` is the job's own time (reading, the model, writing), which rows/s is of, from
    when both the job and its model were there; ``load_seconds`` the model's load (which the
    command overlaps with opening and reading the input), and ``total_seconds`` the whole command's,
    from the start of its process when known, when known. ``startup_seconds`` is the total
    less the job: starting Python, importing TensorFlow, loading the model, closing.

    Example:
        >>> JobSummary(rows_in=10, predicted=9, rejected=1, seconds=0.5, output="p.csv").line()
        'rows in: 10, predicted: 9, rejected: 1 (20 rows/s, predict 0.50 s) -> p.csv'
        >>> JobSummary(rows_in=10, predicted=10, seconds=0.5, load_seconds=1.25,
        ...            total_seconds=4.0, output="p.csv").line().split(" (")[1]
        '20 rows/s, predict 0.50 s, load 1.25 s, start-up 3.50 s, total 4.00 s) -> p.csv'
    """

    rows_in: int = 0
    predicted: int = 0
    rejected: int = 0
    seconds: float = 0.0
    output: str = ""
    rejects: str | None = None
    files: int = 0
    first_rejects: list[Reject] = field(default_factory=list, repr=False)
    load_seconds: float | None = None
    total_seconds: float | None = None

    @property
    def rows_per_second(self) -> float:
        return self.rows_in / self.seconds if self.seconds > 0 else 0.0

    @property
    def startup_seconds(self) -> float | None:
        return None if self.total_seconds is None else max(self.total_seconds - self.seconds, 0.0)

    def line(self) -> str:
        """The one-line summary ``tfship predict`` prints."""
        times = f"predict {self.seconds:.2f} s"
        if self.load_seconds is not None:
            times += f", load {self.load_seconds:.2f} s"
        if self.total_seconds is not None:
            times += f", start-up {self.startup_seconds:.2f} s, total {self.total_seconds:.2f} s"
        return (
            f"rows in: {self.rows_in:,}, predicted: {self.predicted:,}, "
            f"rejected: {self.rejected:,} ({self.rows_per_second:,.0f} rows/s, {times}) -> {self.output}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows_in": self.rows_in,
            "predicted": self.predicted,
            "rejected": self.rejected,
            "seconds": round(self.seconds, 4),
            "load_seconds": None if self.load_seconds is None else round(self.load_seconds, 4),
            "total_seconds": None if self.total_seconds is None else round(self.total_seconds, 4),
            "startup_seconds": None if self.startup_seconds is None else round(self.startup_seconds, 4),
            "rows_per_second": round(self.rows_per_second, 1),
            "output": self.output,
            "rejects": self.rejects,
            "files": self.files,
        }


@dataclass
class Prepared:
    """A chunk after conversion: the good rows, ready to run, and the rows set aside."""

    source: str
    lines: Array
    columns: dict[str, Column] | None
    serialized: Array | None
    keep: dict[str, Any]
    rejects: list[Reject]
    rows_in: int

    @property
    def rows(self) -> int:
        return int(self.lines.size)


@dataclass
class JobSpec:
    """Everything a batch job needs to know, shared by the local and the Beam runners.

    ``output`` ``-`` is standard output (JSONL, or CSV). ``outputs`` ``None`` writes each
    row's answer (a classifier's ``class`` and ``probability``, a regression's ``prediction``;
    see ``output_view``). ``ignore_unknown`` leaves out input columns the signature does not
    take, logging a warning that names them; ``False`` refuses such a file.

    Example:
        >>> JobSpec(["data/*.csv"], Path("preds.parquet"), keep_columns=["id"]).batch_size
        1024
    """

    inputs: Sequence[str]
    output: Path
    fmt: str | None = None
    signature: str | None = None
    outputs: Sequence[str] | None = None
    batch_size: int = 1024
    keep_columns: Sequence[str] = ()
    rejects: Path | None = None
    max_rejects: int | None = None
    chunk_rows: int = 16384
    na_values: Sequence[str] | None = None
    na_strings: bool = False
    fill_missing_columns: bool = False
    ignore_unknown: bool = True

    @property
    def csv_missing(self) -> CsvMissing:
        """The missing-cell rule of CSV inputs: default tokens unless ``na_values`` is given."""
        if self.na_values is None:
            return CsvMissing(strings=self.na_strings)
        return CsvMissing(tuple(self.na_values), strings=self.na_strings)


def check_unknown_columns(
    source: str,
    names: Sequence[str],
    wanted: set[str],
    where: str,
    takes: Sequence[str],
    ignore_unknown: bool,
    noted: set[tuple[str, ...]],
) -> None:
    """Refuse the names of ``source`` outside ``wanted``, or (``ignore_unknown``) log them as a
    warning, once per set of such names (``noted`` keeps the sets already logged)."""
    unknown = tuple(sorted(set(names) - wanted))
    if not unknown:
        return
    listed = ", ".join(map(repr, unknown))
    if not ignore_unknown:
        raise InputError(f"{source}: column(s) {listed} not inputs of {where} (it takes: {', '.join(takes)})")
    if unknown not in noted:
        noted.add(unknown)
        log.warning("ignored column(s) %s of %s: not inputs of %s", listed, source, where)


def note_blank_lines(source: str, lines: Sequence[int]) -> None:
    """Say which blank lines of a CSV or JSON Lines file were skipped (no row: neither read nor
    rejected)."""
    if lines:
        shown = ", ".join(map(str, lines[:5]))
        more = f" and {len(lines) - 5} more" if len(lines) > 5 else ""
        log.warning("skipped %d blank line(s) of %s, at line(s) %s%s", len(lines), source, shown, more)


class ChunkPreparer:
    """Converts reader chunks for one signature; also used by the Beam pipeline.

    A column that is neither an input nor kept is left out with a warning naming it (once per
    set of such names), or with ``ignore_unknown=False`` refused.
    """

    def __init__(
        self,
        adapter: SignatureAdapter,
        keep_columns: Sequence[str],
        want_inputs: bool,
        csv: CsvMissing | None = None,
        *,
        fill_missing_columns: bool = False,
        ignore_unknown: bool = True,
    ):
        self.adapter = adapter
        self.keep_columns = list(keep_columns)
        self.want_inputs = want_inputs
        self.csv = csv or CsvMissing()
        self.fill_missing_columns = fill_missing_columns
        self._checked: set[str] = set()
        self.ignore_unknown = ignore_unknown
        self._noted: set[tuple[str, ...]] = set()

    @property
    def wanted(self) -> set[str]:
        return set(self.adapter.fields) | set(self.keep_columns)

    def check_file(self, path: Path) -> None:
        """Fail before any work when a file's header lacks a feature or a kept column.

        The whole check of one input file: its header read, the fields checked by
        ``tfship.records.check_columns``, then the kept and the unknown columns. A JSONL
        file's columns are the keys of its first records.
        """
        names = columns_of(path)
        if names is None:
            if format_of(path) == "jsonl":
                first = next(iter(read_chunks(path, 1024)), None)
                if first is not None and first.rows and first.names is not None:
                    self._check(str(path), first.names)
            return
        self._check(str(path), names)
        absent = [n for n in self.keep_columns if n not in names]
        if absent:
            raise InputError(
                f"{path}: column(s) to keep {', '.join(map(repr, absent))} not in the file; "
                f"the file has: {', '.join(names)}"
            )
        self.check_unknown(str(path), names)

    def check_unknown(self, source: str, names: Sequence[str]) -> None:
        """Refuse, or note once, the columns of ``source`` that are neither inputs nor kept."""
        check_unknown_columns(
            source,
            names,
            self.wanted,
            self.adapter.where,
            list(self.adapter.fields),
            self.ignore_unknown,
            self._noted,
        )

    def _check(self, source: str, names: Sequence[str]) -> None:
        self._checked.add(source)
        check_columns(
            self.adapter.fields,
            names,
            source,
            where=self.adapter.where,
            fill_missing_columns=self.fill_missing_columns,
        )

    def prepare(self, chunk: Chunk) -> Prepared:
        if chunk.names is not None:
            self.check_unknown(chunk.source, chunk.names)
        rows_in = chunk.rows + len(chunk.rejects)
        rejects = list(chunk.rejects)
        if chunk.serialized is not None and self.adapter.parsing:
            kept = example_columns(chunk.serialized, self.keep_columns) if self.keep_columns else {}
            return Prepared(chunk.source, chunk.lines, None, chunk.serialized, kept, rejects, rows_in)
        raw = chunk.columns
        if chunk.serialized is not None:
            raw = example_columns(chunk.serialized, sorted(self.wanted))
        csv = self.csv if chunk.csv else None
        if chunk.source not in self._checked and chunk.serialized is None and chunk.rows:
            self._check(chunk.source, chunk.names or list(raw))  # JSONL: its first records' keys
        converted = convert_chunk(
            self.adapter.fields,
            raw,
            chunk.rows,
            csv,
            source=chunk.source,
            where=self.adapter.where,
            fill_missing_columns=self.fill_missing_columns,
        )
        good = np.ones(chunk.rows, dtype=bool)
        for row, reason in sorted(converted.bad.items()):
            good[row] = False
            text = chunk.texts[row] if chunk.texts is not None else None
            rejects.append(Reject(chunk.source, int(chunk.lines[row]), reason, text))
        rejects.sort(key=lambda r: r.line)
        columns = converted.columns
        keep: dict[str, Any] = {k: raw.get(k) for k in self.keep_columns}
        if not good.all():
            columns = {k: select_rows(c, good) for k, c in columns.items()}
            keep = {k: _take(v, good) for k, v in keep.items()}
        return Prepared(chunk.source, chunk.lines[good], columns, None, keep, rejects, rows_in)


def _take(column: Any, mask: Array) -> Any:
    if column is None:
        return [None] * int(mask.sum())
    if hasattr(column, "filter"):
        import pyarrow as pa

        return column.filter(pa.array(mask))
    if isinstance(column, np.ndarray):
        return column[mask]
    return [v for v, m in zip(column, mask.tolist()) if m]


def _take_keep(keep: Mapping[str, Any], mask: Array) -> dict[str, Any]:
    return {k: _take(v, mask) for k, v in keep.items()}


class BatchRunner:
    """Runs prepared chunks through the model in batches; isolates rows the model refuses."""

    def __init__(self, adapter: SignatureAdapter, keys: Sequence[str], batch_size: int):
        self.adapter = adapter
        self.keys = list(keys)
        self.batch_size = batch_size

    def run(self, prepared: Prepared) -> tuple[dict[str, Array], Array, list[tuple[int, str]]]:
        """Outputs for the rows the model accepted, their mask, and (row, reason) for the rest."""
        outputs: list[dict[str, Array]] = []
        bad: list[tuple[int, str]] = []
        for start in range(0, prepared.rows, self.batch_size):
            stop = min(start + self.batch_size, prepared.rows)
            self._isolate(prepared, start, stop, outputs, bad)
        good = np.ones(prepared.rows, dtype=bool)
        for row, _ in bad:
            good[row] = False
        merged = {k: np.concatenate([o[k] for o in outputs]) for k in self.keys} if outputs else {}
        return merged, good, bad

    def _call(self, prepared: Prepared, start: int, stop: int) -> dict[str, Array]:
        if prepared.serialized is not None:
            return self.adapter.run_examples(prepared.serialized[start:stop], self.keys)
        assert prepared.columns is not None
        batch = {k: slice_rows(c, start, stop) for k, c in prepared.columns.items()}
        return self.adapter.run_columns(batch, self.keys)

    def _isolate(
        self,
        prepared: Prepared,
        start: int,
        stop: int,
        outputs: list[dict[str, Array]],
        bad: list[tuple[int, str]],
    ) -> None:
        try:
            outputs.append(self._call(prepared, start, stop))
        except ModelInputError as exc:
            # One bad row fails its whole batch: split until the culprits are alone.
            if stop - start == 1:
                bad.append((start, f"the model rejected the row: {exc}"))
                return
            middle = (start + stop) // 2
            self._isolate(prepared, start, middle, outputs, bad)
            self._isolate(prepared, middle, stop, outputs, bad)


class _Progress:
    """Rows and rows/s on stderr, on a terminal only, at most twice a second."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.started = time.perf_counter()
        self.shown = 0.0

    def update(self, rows: int, final: bool = False) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if not final and now - self.shown < 0.5:
            return
        self.shown = now
        rate = rows / max(now - self.started, 1e-9)
        sys.stderr.write(f"\r{rows:,} rows  {rate:,.0f} rows/s")
        if final:
            sys.stderr.write("\n")
        sys.stderr.flush()


def background(produce: Iterator[Any], depth: int = 2) -> Iterator[Any]:
    """Iterate ``produce`` in a thread, ``depth`` items ahead; errors surface in the consumer."""
    items: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def work() -> None:
        try:
            for item in produce:
                while not stop.is_set():
                    try:
                        items.put(("item", item), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            items.put(("done", None))
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer thread
            items.put(("error", exc))

    thread = threading.Thread(target=work, name="tfship-reader", daemon=True)
    thread.start()
    try:
        while True:
            kind, value = items.get()
            if kind == "done":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        stop.set()
        thread.join(timeout=5)


class BackgroundWriter:
    """Runs a writer's ``write`` calls in a thread, in order, so writing overlaps the model."""

    def __init__(self, writer: Writer, depth: int = 2) -> None:
        self.writer = writer
        self.items: queue.Queue[tuple[Any, ...] | None] = queue.Queue(maxsize=depth)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._work, name="tfship-writer", daemon=True)
        self.thread.start()

    def _work(self) -> None:
        while True:
            item = self.items.get()
            if item is None:
                return
            if self.error is None:
                try:
                    self.writer.write(*item)
                except BaseException as exc:  # noqa: BLE001 - re-raised in the job's thread
                    self.error = exc

    def write(self, *item: Any) -> None:
        self._raise()
        self.items.put(item)

    def _raise(self) -> None:
        if self.error is not None:
            raise self.error

    def _drain(self) -> None:
        self.items.put(None)
        self.thread.join()

    def finish(self) -> None:
        """Write what is queued, then flush and close the file (not yet in place)."""
        self._drain()
        self._raise()
        self.writer.finish()

    def commit(self) -> None:
        self.writer.commit()

    @property
    def path(self) -> Path:
        return self.writer.path

    def close(self) -> None:
        self.finish()
        self.commit()

    def abort(self) -> None:
        self._drain()
        self.writer.abort()


#: the modules each input and output format reads or writes with, imported where they are used
_FORMAT_MODULES = {
    "csv": ("pyarrow.csv", "pyarrow.compute"),
    "jsonl": ("pyarrow.json", "pyarrow.compute", "orjson"),
    "parquet": ("pyarrow.parquet", "pyarrow.compute"),
    "tfrecord": ("tfship._wire._tfrecord", "google.protobuf.message"),
}


def import_for_job(spec: JobSpec) -> bool:
    """Import, in this thread, every module the job's formats use, so that no stage imports
    while TensorFlow is imported in another thread (two threads importing at once can
    deadlock in Python's import locks). False when the job needs TensorFlow itself (a
    ``PredictionLog`` output): its model is then best loaded before the job.
    """
    import gzip  # noqa: F401 - a .gz input

    try:
        fmt = format_for(spec.output, spec.fmt)
        formats = {format_of(path) for path in expand_inputs(spec.inputs)} | {fmt}
    except InputError:  # said by the job, after the model's load as ever
        return False
    if fmt == "tfrecord":
        return False
    for name in sorted({module for f in formats for module in _FORMAT_MODULES.get(f, ())}):
        importlib.import_module(name)
    if "tfrecord" in formats:
        from tfship._wire import protos

        protos()  # the Example messages kept columns are read from
    return True


def run_job(
    model: LocalModel,
    spec: JobSpec,
    *,
    progress: bool | None = None,
    echo_reject: Callable[[Reject], None] | None = None,
) -> JobSummary:
    """Predict every row of ``spec.inputs`` into ``spec.output``; bad rows go to the rejects.

    Args:
        model: the loaded model.
        spec: inputs, output, format, signature, outputs, batch size, kept columns, rejects.
        progress: show a progress line on stderr; ``None``: only when stderr is a terminal.
        echo_reject: called with each reject when there is no rejects file.

    Returns:
        The :class:`JobSummary`.

    Raises:
        InputError: an input is missing, of an unknown type, or lacks a required column.
        TooManyRejectsError: more rows were rejected than ``spec.max_rejects`` (after the run;
            the output and rejects files are written).

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> ab = [tf.TensorSpec([None], name="a"), tf.TensorSpec([None], name="b")]
        >>> m.f = tf.function(lambda a, b: {"y": a + b}, ab, autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> from tfship.loaders import load
        >>> _ = Path("rows.csv").write_text("a,b\\n1,2\\n3,4\\n")
        >>> with load("m") as model:
        ...     run_job(model, JobSpec(["rows.csv"], Path("preds.csv"))).line()
        'rows in: 2, predicted: 2, rejected: 0 (...) -> preds.csv'
        >>> Path("preds.csv").read_text().split()
        ['"y"', '3', '7']
    """
    if spec.batch_size < 1:
        raise InputError(f"batch size must be at least 1, got {spec.batch_size}")
    files = expand_inputs(spec.inputs)
    fmt = format_for(spec.output, spec.fmt)
    adapter = model.adapter(spec.signature)
    chosen = None if spec.outputs is None else model.output_keys(adapter.sig.key, spec.outputs)
    view = output_view(adapter.sig, chosen, fmt)
    preparer = ChunkPreparer(
        adapter,
        spec.keep_columns,
        fmt == "tfrecord",
        spec.csv_missing,
        fill_missing_columns=spec.fill_missing_columns,
        ignore_unknown=spec.ignore_unknown,
    )
    for path in files:
        preparer.check_file(path)
    summary = JobSummary(output=output_name(spec.output), files=len(files))
    summary.rejects = str(spec.rejects) if spec.rejects else None
    writer = BackgroundWriter(
        make_writer(
            fmt,
            spec.output,
            signature=adapter.sig.key,
            model_name=model.path.parent.name,
            method=adapter.sig.method_name,
        )
    )
    rejects = RejectsWriter(spec.rejects) if spec.rejects else None
    show = _Progress(sys.stderr.isatty() if progress is None else progress)
    started = time.perf_counter()
    chunk_rows = max(spec.chunk_rows, spec.batch_size)

    def prepared_chunks() -> Iterator[Prepared]:
        for path in files:
            for chunk in read_chunks(path, chunk_rows, preparer.wanted, adapter.fields):
                note_blank_lines(chunk.source, chunk.blank_lines)
                yield preparer.prepare(chunk)

    runner = BatchRunner(adapter, view.keys, spec.batch_size)

    def scored_chunks() -> Iterator[Scored]:
        for prepared in background(prepared_chunks()):
            yield score(prepared, runner, fmt == "tfrecord")
        model._loaded()  # a model still loading (no row ran it): nothing published if it fails

    emit_all(
        scored_chunks(), view, writer, rejects, summary, echo_reject, lambda: show.update(summary.rows_in)
    )
    # the job's own time: reading ahead while the model loaded is part of the start-up
    summary.seconds = time.perf_counter() - max(started, model._ready_at)
    summary.load_seconds = model.load_seconds
    show.update(summary.rows_in, final=True)
    _check_rejects(spec, summary)
    return summary


@dataclass
class Scored:
    """A prepared chunk after the model: what the writer and the rejects receive, in order.

    Built where the model runs (this process, or a Spark executor) and handed to ``emit``
    where the files are written; it pickles.
    """

    rows_in: int
    keep: dict[str, Any]
    outputs: dict[str, Array]
    inputs: dict[str, Any] | None
    predicted: int
    rejects: list[Reject]


def score(prepared: Prepared, runner: BatchRunner, want_inputs: bool) -> Scored:
    """Run a prepared chunk; rows the model refuses join the chunk's rejects, sorted by line."""
    all_rejects = list(prepared.rejects)
    outputs: dict[str, Array] = {}
    keep: dict[str, Any] = {}
    inputs: dict[str, Any] | None = None
    predicted = 0
    if prepared.rows:
        outputs, good, bad = runner.run(prepared)
        for row, reason in bad:
            all_rejects.append(Reject(prepared.source, int(prepared.lines[row]), reason))
        keep = prepared.keep if good.all() else _take_keep(prepared.keep, good)
        inputs = _request_inputs(runner.adapter, prepared, good) if want_inputs else None
        predicted = int(good.sum())
    all_rejects.sort(key=lambda r: r.line)
    return Scored(prepared.rows_in, keep, outputs, inputs, predicted, all_rejects)


def emit_all(
    chunks: Iterable[Scored],
    view: OutputView,
    writer: Writer | BackgroundWriter,
    rejects: RejectsWriter | None,
    summary: JobSummary,
    echo_reject: Callable[[Reject], None] | None,
    after_each: Callable[[], None] | None = None,
) -> None:
    """``emit`` every scored chunk, in order, then close the writers; abort both on failure.

    Both files are closed (where a full disk shows) before either is renamed into place, and
    the rejects go first: an output in place means its rejects are too. A failure leaves the
    old files as they were.
    """
    try:
        for scored in chunks:
            emit(scored, view, writer, rejects, summary, echo_reject)
            if after_each is not None:
                after_each()
        with errors_name(writer.path):
            writer.finish()
        if rejects is not None:
            with errors_name(rejects.path):
                rejects.finish()
            rejects.commit()
        writer.commit()
    except BaseException:
        writer.abort()
        if rejects is not None:
            rejects.abort()
        raise


def emit(
    scored: Scored,
    view: OutputView,
    writer: Writer | BackgroundWriter,
    rejects: RejectsWriter | None,
    summary: JobSummary,
    echo_reject: Callable[[Reject], None] | None,
) -> None:
    """Write one scored chunk (its outputs as ``view`` shows them) and count it into ``summary``."""
    summary.rows_in += scored.rows_in
    if scored.outputs:
        with errors_name(writer.path):
            writer.write(scored.keep, view.columns(scored.outputs), scored.inputs)
    summary.predicted += scored.predicted
    for reject in scored.rejects:
        summary.rejected += 1
        if len(summary.first_rejects) < 5:
            summary.first_rejects.append(reject)
        if rejects is not None:
            with errors_name(rejects.path):
                rejects.write(reject)
        elif echo_reject is not None:
            echo_reject(reject)


def _request_inputs(adapter: SignatureAdapter, prepared: Prepared, good: Array) -> dict[str, Any]:
    """The inputs of each row as a PredictRequest would carry them (for PredictionLog)."""
    if adapter.parsing:
        assert adapter.example_key is not None
        if prepared.serialized is not None:
            return {adapter.example_key: prepared.serialized[good]}
        assert prepared.columns is not None
        columns = {k: select_rows(c, good) for k, c in prepared.columns.items()}
        return {adapter.example_key: adapter.serialize(columns)}
    assert prepared.columns is not None
    return {k: c[good] for k, c in prepared.columns.items() if isinstance(c, np.ndarray)}


def _is_the_command() -> bool:
    """Whether this process is the ``tfship`` command itself, not a program that runs the
    command inside its own process (a test's runner, a script calling the CLI)."""
    program = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return program == "tfship" or (program == "__main__.py" and "tfship" in sys.argv[0])


def leave_when_done() -> None:
    """End the ``tfship`` command's process now that its files are closed and in place: flush
    the streams and the logs, and exit without tearing TensorFlow down (its threads, its
    thousands of modules), which takes about a third of the time importing it took. A program
    that runs the command inside its own process goes on."""
    if not _is_the_command():
        return
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


def process_seconds() -> float | None:
    """Seconds since this process started when it is the ``tfship`` command (Linux: from
    ``/proc``), or None: unknown, or a program that runs the command inside its own process."""
    if not _is_the_command():
        return None
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return max(time.clock_gettime(time.CLOCK_BOOTTIME) - int(fields[19]) / ticks, 0.0)
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def output_name(path: Path) -> str:
    """How the summary names the output: its path, or ``<stdout>`` for ``-``."""
    return "<stdout>" if is_stdout(path) else str(path)


def _check_rejects(spec: JobSpec, summary: JobSummary) -> None:
    if spec.max_rejects is None or summary.rejected <= spec.max_rejects:
        return
    first = summary.first_rejects[0] if summary.first_rejects else None
    detail = f"; first: {first.source}:{first.line}: {first.reason}" if first else ""
    raise TooManyRejectsError(
        f"{summary.rejected:,} of {summary.rows_in:,} rows rejected, more than the "
        f"{spec.max_rejects:,} allowed{detail}",
        summary=summary,
    )
