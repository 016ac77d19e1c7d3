"""Batch prediction on Apache Spark (``tfship[spark]``): a DataFrame in, a DataFrame out.

``predict(df, export)`` adds the columns ``tfship predict`` writes (a classifier's ``class`` and
``probability``, a regression's ``prediction``; or the signature outputs asked for) and a
``reject`` column to every row of ``df``, scored by ``LocalModel`` on the executors: the same
conversion, ``tf.Example`` parsing signatures, string features, casts and bad-row reasons as
``tfship predict``. A row the model cannot take keeps its place, with null predictions and its
reason in ``reject``.
``run_job`` is ``tfship predict --runner spark``: files in, files out, on a Spark master.

It is built on ``DataFrame.mapInArrow``, not ``pyspark.ml.functions.predict_batch_udf``: the
Arrow batches go straight into tfship's converter (nulls stay nulls, list columns stay lists),
one function returns both the predictions and each bad row's reason (a UDF returns only the
former, so one bad row fails its whole task), and tfship sizes the model's batches itself, a
batch of one included. Each Python worker process loads the export once and keeps it for
every later batch and task (Spark reuses its Python workers). The export must be readable at
the same path on every executor: a shared file system (NFS, a mounted bucket), or a copy at the
same path on each machine.

Importing this module does not import pyspark or TensorFlow.

Example, in a Spark session ``spark``::

    from tfship.loaders.spark import predict
    scored = predict(spark.read.parquet("rows.parquet"), "export/best")
    scored.where("reject IS NULL").select("id", "class", "probability").show()
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from tfship.errors import InputError
from tfship.loaders._job import JobSpec, score
from tfship.loaders._model import resolve_export_dir
from tfship.loaders._output_view import OutputView, output_view
from tfship.loaders._spark import DEFAULT_MASTER, Plan, SparkJobSummary, run_spark_job, scorer
from tfship.records import Chunk

__all__ = ["SparkJobSummary", "predict", "run_job"]

Array = npt.NDArray[Any]

# numpy-style dtype name -> (Spark SQL type class, Arrow type name)
_TYPES: dict[str, tuple[str, str]] = {
    "float16": ("FloatType", "float32"),
    "float32": ("FloatType", "float32"),
    "float64": ("DoubleType", "float64"),
    "int8": ("ByteType", "int8"),
    "int16": ("ShortType", "int16"),
    "int32": ("IntegerType", "int32"),
    "int64": ("LongType", "int64"),
    "uint8": ("ShortType", "int16"),
    "uint16": ("IntegerType", "int32"),
    "uint32": ("LongType", "int64"),
    "bool": ("BooleanType", "bool_"),
    "string": ("StringType", "string"),
}


@dataclass(frozen=True)
class _Output:
    """One prediction column: its key, dtype and the rank of one row's value."""

    key: str
    dtype: str
    rank: int

    def spark(self) -> Any:
        from pyspark.sql import types

        kind = getattr(types, _TYPES[self.dtype][0])()
        for _ in range(self.rank):
            kind = types.ArrayType(kind)
        return kind

    def arrow(self) -> Any:
        import pyarrow as pa

        kind = getattr(pa, _TYPES[self.dtype][1])()
        for _ in range(self.rank):
            kind = pa.list_(kind)
        return kind


def predict(
    df: Any,
    export: str | Path,
    *,
    signature: str | None = None,
    outputs: Sequence[str] | None = None,
    batch_size: int = 1024,
    reject_column: str = "reject",
) -> Any:
    """Score every row of a Spark DataFrame with a SavedModel; returns a new DataFrame.

    Args:
        df: a ``pyspark.sql.DataFrame`` whose columns are the signature's features or inputs
            (by name; other columns pass through untouched).
        export: a SavedModel directory, or an export base (its newest version), at a path
            every executor can read.
        signature: the signature key (default ``serving_default``, or the only one).
        outputs: the output keys to add as columns. Default: the columns ``tfship predict``
            writes, each row's answer: a classifier's ``class`` and ``probability``, a
            regression's ``prediction``; all outputs, sorted, for a signature of another shape.
        batch_size: rows per model call.
        reject_column: the name of the column holding a rejected row's reason (null when the
            row was predicted).

    Returns:
        ``df``'s columns, then one column per output (a row's value: a number or string, or
        nested arrays for outputs of higher rank), then ``reject_column``; row order and
        partitioning are ``df``'s. Predictions: ``.where(f"{reject_column} IS NULL")``;
        rejects: ``.where(f"{reject_column} IS NOT NULL")``.

    Raises:
        InputError: a required feature is not a column of ``df``, or an output's name is
            already one; an output has a dtype or rank a column cannot hold.
        ModelError: the export cannot be loaded; SignatureNotFoundError: no such signature.

    Example::

        scored = predict(df, "export/best", outputs=["probabilities"])
        scored.columns  # ['species', 'island', 'bill_length_mm', ..., 'probabilities', 'reject']
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    export_dir = str(resolve_export_dir(export).resolve())
    loaded = scorer(export_dir, signature)  # here too: check the columns before any task runs
    adapter = loaded.adapter
    chosen = None if outputs is None else loaded.model.output_keys(adapter.sig.key, outputs)
    view = output_view(adapter.sig, chosen, "parquet")
    specs = _output_specs(view, adapter.sig, adapter.where)
    columns = list(df.columns)
    missing = [f.name for f in adapter.fields.values() if f.required and f.name not in columns]
    if missing:
        raise InputError(
            f"the DataFrame has no column {', '.join(map(repr, missing))}, required by "
            f"{adapter.where} (no default); its columns: {', '.join(columns)}"
        )
    clash = [name for name in [*(spec.key for spec in specs), reject_column] if name in columns]
    if clash:
        raise InputError(
            f"the DataFrame already has a column {', '.join(map(repr, clash))}; rename it, "
            "or choose other outputs or another reject column name"
        )
    from pyspark.sql.types import StringType, StructField, StructType

    schema = StructType(
        [*df.schema.fields, *(StructField(s.key, s.spark()) for s in specs)]
        + [StructField(reject_column, StringType())]
    )
    plan = Plan(export_dir, adapter.sig.key, view, batch_size=batch_size)
    return df.mapInArrow(functools.partial(_score_batches, plan, specs, reject_column), schema)


def _output_specs(view: OutputView, sig: Any, where: str) -> list[_Output]:
    """The columns ``view`` writes: a raw output's own, or a row's answer (``class`` and
    ``probability``, ``prediction``), typed from the outputs they come from."""
    if view.kind == "raw":
        return [_output_spec(key, sig.outputs[key], where) for key in view.keys]
    if view.kind == "value":
        (key,) = view.keys
        return [_Output("prediction", sig.outputs[key].dtype, 0)]
    probability = "scores" if view.kind == "scores" else "probabilities"
    return [_Output("class", "string", 0), _Output("probability", sig.outputs[probability].dtype, 0)]


def _output_spec(key: str, info: Any, where: str) -> _Output:
    if info.dtype not in _TYPES:
        raise InputError(
            f"{where}: output {key!r} is {info.dtype}, which no Spark column holds; "
            "leave it out with outputs="
        )
    if info.shape is None or not info.shape:
        raise InputError(
            f"{where}: output {key!r} has no batch dimension (shape {info.shape}); leave it out with outputs="
        )
    return _Output(key, info.dtype, len(info.shape) - 1)


def _score_batches(
    plan: Plan, specs: list[_Output], reject_column: str, batches: Iterator[Any]
) -> Iterator[Any]:
    """Runs on executors: each Arrow batch gets its prediction columns and reasons."""
    import pyarrow as pa

    preparer, runner = plan.steps()
    for batch in batches:
        rows = batch.num_rows
        raw = {name: batch.column(name) for name in batch.schema.names if name in preparer.wanted}
        # The row's position stands in for its line: rejects come back by position.
        chunk = Chunk("DataFrame", np.arange(rows, dtype=np.int64), raw)
        scored = score(preparer.prepare(chunk), runner, False)
        rejected = np.zeros(rows, dtype=bool)
        reasons: list[str | None] = [None] * rows
        for reject in scored.rejects:
            rejected[reject.line] = True
            reasons[reject.line] = reject.reason
        written = plan.view.columns(scored.outputs) if scored.outputs else {}
        added = [_column(written.get(s.key), rejected, s) for s in specs]
        arrays = [*batch.columns, *added, pa.array(reasons, type=pa.string())]
        names = [*batch.schema.names, *(s.key for s in specs), reject_column]
        yield pa.RecordBatch.from_arrays(arrays, names=names)


def _column(values: Array | None, rejected: Array, spec: _Output) -> Any:
    """One output as an Arrow column over every row of the batch; null where rejected."""
    import pyarrow as pa

    rows = rejected.size
    if values is None or not values.size and rejected.all():
        return pa.nulls(rows, type=spec.arrow())
    if values.dtype == object:
        values = np.vectorize(_text, otypes=[object])(values) if values.size else values
    full = np.zeros((rows, *values.shape[1:]), dtype=values.dtype)
    if values.dtype == object:
        full[...] = ""
    full[~rejected] = values
    kind = spec.arrow()
    if spec.rank == 0:
        return pa.array(full, type=kind, mask=rejected)
    array: Any = pa.array(full.reshape(-1), type=_leaf(kind))
    sizes = list(full.shape[1:])
    for depth in range(len(sizes) - 1, -1, -1):
        # lists of sizes[depth] items, as many as the dims before it make
        count, size = rows * int(np.prod(sizes[:depth])), sizes[depth]
        offsets = pa.array(np.arange(count + 1, dtype=np.int32) * size)
        array = pa.ListArray.from_arrays(offsets, array, mask=pa.array(rejected) if depth == 0 else None)
    return array


def _leaf(kind: Any) -> Any:
    while hasattr(kind, "value_type"):
        kind = kind.value_type
    return kind


def _text(value: Any) -> Any:
    # TensorFlow's strings are bytes; a Spark string column holds text.
    return value.decode("utf-8", "backslashreplace") if isinstance(value, bytes) else value


def run_job(export: str | Path, spec: JobSpec, master: str = DEFAULT_MASTER) -> SparkJobSummary:
    """``tfship predict --runner spark``: predict ``spec``'s files on ``master``.

    The active ``SparkSession`` is used when there is one, else one is started on ``master``.
    The inputs and the export must be readable at the same paths on every executor. Rows are
    read and converted by tfship's readers on the executors; the driver writes the outputs and
    rejects in input order, exactly as :func:`tfship.loaders.run_job` does.

    Returns:
        A :class:`SparkJobSummary`: the counts, and how often the model was loaded.

    Example::

        run_job("export/best", JobSpec(["rows.csv"], Path("preds.csv")), "spark://h:7077")
    """
    return run_spark_job(Path(os.fspath(export)), spec, master)
