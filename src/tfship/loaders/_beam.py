"""``tfship predict --runner beam``: the batch job as an Apache Beam pipeline.

Rows are read per file, converted one by one (bad rows to a rejects output), and scored by
Beam's ``RunInference`` with :class:`LocalModelHandler`, a ``ModelHandler`` on ``LocalModel``:
Beam batches the rows, loads the model once per worker and routes failures to its dead-letter
output, which joins the rejects. The last step gathers results by (file, line) and writes the
same files, in the same order, as the local runner. DirectRunner runs in this process; other
runners are chosen with ``--beam-option runner=...`` and their own options.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tfship._tf import install_command, is_verbose
from tfship.errors import InputError
from tfship.loaders._beam_rows import ERROR_KEY as _ERROR_KEY
from tfship.loaders._beam_rows import NAMESPACE as _NAMESPACE
from tfship.loaders._beam_rows import counter as _counter
from tfship.loaders._job import (
    JobSpec,
    JobSummary,
    _check_rejects,
    check_unknown_columns,
    output_name,
)
from tfship.loaders._output_view import OutputView, output_view
from tfship.loaders._predict import object_array
from tfship.loaders._publish import RejectsWriter, is_stdout
from tfship.loaders._writers import format_for, make_writer
from tfship.records import Field, Reject, read_chunks
from tfship.records._shared import convert_value, expand_inputs
from tfship.schema import CsvMissing

log = logging.getLogger(__name__)


class _QuietBeam(logging.Filter):
    """Drops Beam's notices below ERROR (some go straight to the root logger)."""

    def filter(self, record: logging.LogRecord) -> bool:
        from_beam = record.name.startswith("apache_beam") or "apache_beam" in record.pathname
        return record.levelno >= logging.ERROR or not from_beam


_QUIET = _QuietBeam()


def _beam() -> Any:
    if not is_verbose():
        # Optional-connector notices on import, type-hint conversions, memory probes.
        logging.getLogger().addFilter(_QUIET)
        logging.getLogger("apache_beam").setLevel(logging.ERROR)
    try:
        import apache_beam
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise InputError(f"the Beam runner needs Apache Beam: {install_command('beam')}") from exc
    return apache_beam


def pipeline_options(options: Sequence[str]) -> Any:
    """Beam ``PipelineOptions`` from ``KEY=VALUE`` strings (DirectRunner unless told)."""
    from apache_beam.options.pipeline_options import PipelineOptions

    flags: list[str] = []
    for option in options:
        key, sep, value = option.partition("=")
        if not sep or not key.strip():
            raise InputError(f"Beam option {option!r}: expected KEY=VALUE, e.g. runner=DirectRunner")
        flags.append(f"--{key.strip().lstrip('-')}={value}")
    if not any(f.startswith("--runner=") for f in flags):
        flags.append("--runner=DirectRunner")
    if not is_verbose() and not any(f.startswith("--default_sdk_harness_log_level=") for f in flags):
        # Worker processes (multi_processing, portable runners) log their life at INFO.
        flags.append("--default_sdk_harness_log_level=ERROR")
    return PipelineOptions(flags)


# -- per-row steps (module level: Beam pickles them) --------------------------------------------


def read_rows(
    item: tuple[int, str],
    fields: dict[str, Field],
    keep: list[str],
    serialized_ok: bool,
    unknown: tuple[bool, str] = (True, "the signature"),
) -> Iterator[Any]:
    """Rows of one file as ((file index, line), row); unreadable rows tagged ``rejects``.

    ``unknown`` is (``ignore_unknown``, the signature's name): a JSONL name that is neither an
    input nor kept is left out with a warning, or refused (CSV and Parquet headers are checked
    before the pipeline starts).
    """
    from apache_beam import pvalue

    rows_in = _counter("rows_in")
    index, path = item
    wanted = set(fields) | set(keep)
    noted: set[tuple[str, ...]] = set()
    for chunk in read_chunks(Path(path), 4096, wanted):
        if chunk.names is not None:
            check_unknown_columns(path, chunk.names, wanted, unknown[1], list(fields), unknown[0], noted)
        rows_in.inc(chunk.rows + len(chunk.rejects))
        if chunk.blank_lines:  # no row; the driver says how many lines were skipped
            _counter("blank_lines").inc(len(chunk.blank_lines))
        for reject in chunk.rejects:
            yield pvalue.TaggedOutput("rejects", ((index, reject.line), reject.to_dict()))
        if chunk.serialized is not None:
            for line, data in zip(chunk.lines.tolist(), chunk.serialized):
                yield (index, line), {"serialized": data, "source": path, "text": None}
            continue
        columns = {
            k: (v.to_pylist() if hasattr(v, "to_pylist") else list(v)) for k, v in chunk.columns.items()
        }
        for i, line in enumerate(chunk.lines.tolist()):
            row = {k: (None if _is_sentinel(v[i]) else v[i]) for k, v in columns.items()}
            text = chunk.texts[i] if chunk.texts is not None else None
            yield (index, line), {"raw": row, "source": path, "text": text, "csv": chunk.csv}


def _is_sentinel(value: Any) -> bool:
    from tfship.records._shared import MISSING as _MISSING

    return value is _MISSING


def convert_row(
    element: tuple[tuple[int, int], dict[str, Any]],
    fields: dict[str, Field],
    keep: list[str],
    parsing: bool,
    csv: CsvMissing | None = None,
) -> Iterator[Any]:
    """Typed values of one row, or a tagged reject with the reason; ``csv``: CSV's missing cells."""
    from apache_beam import pvalue

    key, row = element
    if "serialized" in row:
        from tfship.records._shared import example_columns

        names = list(keep) if parsing else sorted(set(fields) | set(keep))
        found = example_columns(object_array([row["serialized"]]), names)
        raw = {k: (None if _is_sentinel(v[0]) else v[0]) for k, v in found.items()}
        if parsing:
            yield key, {"serialized": row["serialized"], "keep": raw}
            return
        row = {**row, "raw": raw}
    raw = row["raw"]
    try:
        rule = (csv or CsvMissing()) if row.get("csv") else None
        values = {name: convert_value(fld, raw.get(name), rule) for name, fld in fields.items()}
    except ValueError as exc:
        reject = Reject(row["source"], key[1], str(exc), row["text"])
        yield pvalue.TaggedOutput("rejects", (key, reject.to_dict()))
        return
    yield key, {"values": values, "keep": {k: raw.get(k) for k in keep}}


def split_result(element: tuple[tuple[int, int], Any], sources: dict[int, str]) -> Iterator[Any]:
    """Predictions go on; rows the model refused become tagged rejects."""
    from apache_beam import pvalue

    key, result = element
    inference = result.inference
    if _ERROR_KEY in inference:
        reject = Reject(sources[key[0]], key[1], inference[_ERROR_KEY])
        yield pvalue.TaggedOutput("rejects", (key, reject.to_dict()))
        return
    _counter("predicted").inc()
    yield key, (result.example.get("keep", {}), inference)


def dead_letter(element: Any, sources: dict[int, str]) -> Iterator[tuple[Any, dict[str, Any]]]:
    """A batch Beam could not score at all (its dead-letter output), as one reject per row."""
    batch, exception = element
    for key, _ in batch:
        reason = f"inference failed: {exception}"
        yield key, Reject(sources[key[0]], key[1], reason).to_dict()


def write_predictions(
    items: list[Any], output: str, fmt: str, signature: str, view: OutputView, keep: list[str]
) -> int:
    """Write all predictions in (file, line) order with the local runner's writer."""
    items = sorted(items, key=lambda kv: kv[0])
    writer = make_writer(fmt, Path(output), signature=signature)
    try:
        for start in range(0, len(items), 4096):
            part = items[start : start + 4096]
            kept = {k: [v[0].get(k) for _, v in part] for k in keep}
            outputs = {k: np.stack([v[1][k] for _, v in part]) for k in view.keys}
            writer.write(kept, view.columns(outputs))
        writer.close()
    except BaseException:
        writer.abort()
        raise
    return len(items)


def write_rejects(items: list[Any], path: str | None) -> int:
    """Write the rejects in (file, line) order, counting them as a Beam metric."""
    _counter("rejected").inc(len(items))
    if path is None:
        for _, reject in sorted(items, key=lambda kv: kv[0]):
            log.warning("rejected %s:%s: %s", reject["file"], reject["line"], reject["reason"])
        return len(items)
    writer = RejectsWriter(Path(path))
    try:
        for _, reject in sorted(items, key=lambda kv: kv[0]):
            writer.write(Reject(reject["file"], reject["line"], reject["reason"], reject["record"]))
        writer.close()
    except BaseException:
        writer.abort()
        raise
    return len(items)


def run_beam_job(model_path: Path, spec: JobSpec, beam_options: Sequence[str]) -> JobSummary:
    """Run ``spec`` as a Beam pipeline; same outputs, rejects and summary as the local runner.

    Example:
        >>> import tensorflow as tf
        >>> m = tf.Module()
        >>> ab = [tf.TensorSpec([None], name="a"), tf.TensorSpec([None], name="b")]
        >>> m.f = tf.function(lambda a, b: {"y": a + b}, ab, autograph=False)
        >>> tf.saved_model.save(m, "m/1", signatures=m.f)
        >>> _ = Path("rows.csv").write_text("a,b\\n1,2\\n3,4\\n")
        >>> run_beam_job(Path("m/1"), JobSpec(["rows.csv"], Path("p.csv")), []).line()
        'rows in: 2, predicted: 2, rejected: 0 (...) -> p.csv'
    """
    import time

    from tfship.loaders._model import load

    beam = _beam()
    from apache_beam.ml.inference.base import KeyedModelHandler, RunInference

    files = expand_inputs(spec.inputs)
    fmt = format_for(spec.output, spec.fmt)
    if fmt == "tfrecord":
        raise InputError("the Beam runner writes jsonl, csv or parquet; tfrecord is local only")
    if is_stdout(spec.output):
        raise InputError("the Beam runner writes files (a worker writes the output): '-' is local only")
    # Read the signature once here, to check columns and to give the workers plain data.
    with load(model_path, signature=spec.signature) as model:
        from tfship.loaders._job import ChunkPreparer

        adapter = model.adapter(spec.signature)
        chosen = None if spec.outputs is None else model.output_keys(adapter.sig.key, spec.outputs)
        view = output_view(adapter.sig, chosen, fmt)
        preparer = ChunkPreparer(
            adapter,
            spec.keep_columns,
            False,
            spec.csv_missing,
            fill_missing_columns=spec.fill_missing_columns,
            ignore_unknown=spec.ignore_unknown,
        )
        for path in files:
            preparer.check_file(path)
        fields, parsing, signature = dict(adapter.fields), adapter.parsing, adapter.sig.key
        where = adapter.where
        export_dir = str(model.path)
    keep = list(spec.keep_columns)
    sources = {i: str(p) for i, p in enumerate(files)}
    from tfship.loaders.beam import LocalModelHandler

    handler: Any = KeyedModelHandler(
        LocalModelHandler(export_dir, signature, list(view.keys), spec.batch_size)
    )
    started = time.perf_counter()
    with beam.Pipeline(options=pipeline_options(beam_options)) as pipeline:
        read = (
            pipeline
            | "Files" >> beam.Create(sorted(sources.items()))
            | "Read"
            >> beam.FlatMap(read_rows, fields, keep, parsing, (spec.ignore_unknown, where)).with_outputs(
                "rejects", main="rows"
            )
        )
        converted = read.rows | "Convert" >> beam.FlatMap(
            convert_row, fields, keep, parsing, spec.csv_missing
        ).with_outputs("rejects", main="rows")
        predicted, dlq = converted.rows | "Predict" >> RunInference(handler).with_exception_handling()
        scored = predicted | "Split" >> beam.FlatMap(split_result, sources).with_outputs(
            "rejects", main="rows"
        )
        failed = dlq.failed_inferences | "DeadLetter" >> beam.FlatMap(dead_letter, sources)
        _ = (
            scored.rows
            | "GatherPredictions" >> beam.combiners.ToList()
            | "WritePredictions" >> beam.Map(write_predictions, str(spec.output), fmt, signature, view, keep)
        )
        _ = (
            (read.rejects, converted.rejects, scored.rejects, failed)
            | "AllRejects" >> beam.Flatten()
            | "GatherRejects" >> beam.combiners.ToList()
            | "WriteRejects" >> beam.Map(write_rejects, str(spec.rejects) if spec.rejects else None)
        )
    summary = JobSummary(
        output=output_name(spec.output),
        rejects=str(spec.rejects) if spec.rejects else None,
        files=len(files),
        seconds=time.perf_counter() - started,
    )
    counters = _counters(pipeline)
    summary.rows_in = counters.get("rows_in", 0)
    summary.predicted = counters.get("predicted", 0)
    summary.rejected = counters.get("rejected", 0)
    log.info("beam: the model was loaded %d time(s), once per worker process", counters.get("model_loads", 0))
    if counters.get("blank_lines", 0):
        log.warning("skipped %d blank line(s) of the input(s): no rows", counters["blank_lines"])
    _check_rejects(spec, summary)
    return summary


def _counters(pipeline: Any) -> dict[str, int]:
    from apache_beam.metrics.metric import MetricsFilter

    result = pipeline.result if hasattr(pipeline, "result") else None
    if result is None:
        return {}
    found = result.metrics().query(MetricsFilter().with_namespace(_NAMESPACE))["counters"]
    totals: dict[str, int] = {}
    for counter in found:
        name = counter.key.metric.name
        value = counter.committed if counter.committed is not None else counter.attempted
        totals[name] = totals.get(name, 0) + int(value or 0)
    return totals
