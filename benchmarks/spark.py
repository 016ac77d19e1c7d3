"""Spark batch prediction throughput: ``tfship predict --runner spark`` against what Spark users write.

On the demo's ``dnn`` export and synthetic CSV of ``benchmarks/loaders.py`` (the same setup),
the ``predict`` signature, batches of 1024, measured side by side in one run:

- the Spark runner (``tfship.loaders.spark.run_job``) on ``local[2]``: CSV -> CSV of the
  probabilities, reading, conversion, model, rejects and writing, one model per Python worker
  (the time from the call to the files written: the driver's check of the export included, the
  session's start not);
- the hand-written ``pyspark.ml.functions.predict_batch_udf`` on the same session: Spark reads
  the CSV, ``make_predict_fn`` loads ``tf.saved_model.load(export).signatures["predict"]`` and
  builds one ``tf.train.Example`` per row, the probabilities are written as Parquet (target:
  the Spark runner >= 2x);
- the local runner (``tfship predict``, in process, the same job) on the same file and the same
  2 cores: the ratio is reported, no target (Spark adds its scheduling, a Python worker per
  core with its own TensorFlow and model, and the results' trip to the driver).

Each Spark path runs once on a session started beforehand whose Python workers have imported
TensorFlow already (Spark reuses them across jobs); each path pays for its own model loads.
Usage: ``python benchmarks/spark.py [--rows N] [--workdir DIR]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from loaders import BATCH, _example_builder, setup


def _spec(csv_path: Path, out: Path) -> Any:
    """The job of every path here: the probabilities of each row, as the hand-written UDF."""
    from tfship.loaders import JobSpec

    return JobSpec([str(csv_path)], out, signature="predict", outputs=["probabilities"], batch_size=BATCH)


def time_local_runner(export: Path, csv_path: Path, out: Path) -> tuple[float, int]:
    from tfship.loaders import load, run_job

    with load(export, signature="predict") as model:
        summary = run_job(model, _spec(csv_path, out), progress=False)
    assert summary.rejected == 0, summary.first_rejects
    return summary.seconds, summary.predicted


def time_spark_runner(export: Path, csv_path: Path, out: Path) -> tuple[float, int]:
    from tfship.loaders.spark import run_job

    spec = _spec(csv_path, out)
    started = time.perf_counter()
    summary = run_job(export, spec)
    seconds = time.perf_counter() - started
    assert summary.rejected == 0, summary.first_rejects
    print(
        f"spark runner: {summary.tasks} tasks, {summary.model_loads} model load(s) in "
        f"{summary.python_workers} Python worker(s)",
        file=sys.stderr,
    )
    return seconds, summary.predicted


def time_hand_udf(spark: Any, schema: Any, export: Path, csv_path: Path, out: Path) -> tuple[float, int]:
    """What a Spark user writes today (the pattern of Spark's own predict_batch_udf docs)."""
    from pyspark.ml.functions import predict_batch_udf
    from pyspark.sql.types import ArrayType, FloatType

    names = [f.name for f in schema.features]
    assert names == [
        "island",
        "bill_length_mm",
        "bill_depth_mm",
        "flipper_length_mm",
        "body_mass_g",
        "sex",
        "year",
    ], names
    export_dir = str(export)

    def make_predict_fn() -> Any:
        import pandas as pd
        import tensorflow as tf

        signature = tf.saved_model.load(export_dir).signatures["predict"]
        build = _example_builder(schema)

        def predict(  # predict_batch_udf passes one array per column, by position
            island: np.ndarray,
            bill_length_mm: np.ndarray,
            bill_depth_mm: np.ndarray,
            flipper_length_mm: np.ndarray,
            body_mass_g: np.ndarray,
            sex: np.ndarray,
            year: np.ndarray,
        ) -> np.ndarray:
            frame = pd.DataFrame(
                {
                    "island": island,
                    "bill_length_mm": bill_length_mm,
                    "bill_depth_mm": bill_depth_mm,
                    "flipper_length_mm": flipper_length_mm,
                    "body_mass_g": body_mass_g,
                    "sex": sex,
                    "year": year,
                }
            )
            examples = tf.constant([build(r) for r in frame.to_dict("records")])
            result: np.ndarray = signature(examples=examples)["probabilities"].numpy()
            return result

        return predict

    udf = predict_batch_udf(make_predict_fn, return_type=ArrayType(FloatType()), batch_size=BATCH)
    started = time.perf_counter()
    frame = spark.read.csv(str(csv_path), header=True, inferSchema=True)
    scored = frame.withColumn("probabilities", udf(*names))
    scored.write.mode("overwrite").parquet(str(out))
    seconds = time.perf_counter() - started
    rows = spark.read.parquet(str(out)).count()
    return seconds, rows


def _import_tensorflow(_: Any) -> int:
    import tensorflow  # noqa: F401

    return os.getpid()


def warm_up(spark: Any) -> None:
    """Start the Python workers and import TensorFlow in them, so that neither path pays for
    it (Spark reuses its workers across jobs); each path still loads its own model."""
    cores = spark.sparkContext.defaultParallelism
    for _ in range(2):  # twice: every worker once, on every core
        spark.sparkContext.parallelize(range(cores), cores).map(_import_tensorflow).collect()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000, help="rows of the synthetic CSV")
    parser.add_argument("--steps", type=int, default=200, help="training steps of the dnn")
    parser.add_argument("--workdir", type=Path, default=None, help="keep and reuse files here")
    parser.add_argument(
        "--short", action="store_true", help="2,000 rows and 20 steps: every path runs, no target judged"
    )
    args = parser.parse_args()
    if args.short:
        args.rows, args.steps = 2_000, 20
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from tfship.loaders._spark import start_session

    # Python workers unpickle the hand-written UDF, which uses loaders.py's Example builder.
    here = str(Path(__file__).resolve().parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [here, os.environ.get("PYTHONPATH")] if p)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        schema, _, export, csv_path = setup(workdir, args.rows, args.steps)
        print(f"export {export}, {args.rows:,} rows, batch {BATCH}, local[2]", file=sys.stderr)
        spark = start_session("local[2]")
        try:
            warm_up(spark)
            results = {
                "spark runner (tfship, local[2])": time_spark_runner(
                    export, csv_path, workdir / "spark-out.csv"
                ),
                "hand-written predict_batch_udf (local[2])": time_hand_udf(
                    spark, schema, export, csv_path, workdir / "udf-out.parquet"
                ),
            }
        finally:
            spark.stop()
        results["local runner (tfship predict, in process)"] = time_local_runner(
            export, csv_path, workdir / "local-out.csv"
        )
    ours = results["spark runner (tfship, local[2])"]
    ours_rate = ours[1] / ours[0]
    targets = {"hand-written predict_batch_udf (local[2])": 2.0}
    print(f"{'path':<46}{'rows':>10}{'seconds':>10}{'rows/s':>11}{'spark x':>9}{'target':>8}")
    for name, (seconds, rows) in results.items():
        rate = rows / seconds
        ratio = ours_rate / rate
        target = f">={targets[name]:g}" if name in targets else ""
        judged = name in targets and not args.short
        mark = "" if not judged else (" ok" if ratio >= targets[name] else " MISS")
        print(f"{name:<46}{rows:>10,}{seconds:>10.2f}{rate:>11,.0f}{ratio:>9.2f}{target:>8}{mark}")
    print("(spark x = the Spark runner's rows/s / that path's rows/s; one run, same file, same 2 cores)")


if __name__ == "__main__":
    main()
