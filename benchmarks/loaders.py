"""Batch prediction throughput: ``tfship predict`` against the ways users score a CSV today.

On the demo's ``dnn`` export (penguins schema, trained here for a few steps) and a synthetic CSV of
the same schema (``tfship.data.synthesize``), measured side by side in one run, all on the
``predict`` signature with batches of 1024:

- ``tfship predict`` CSV -> CSV (in process: reading, conversion, model and writing);
- ``estimator.predict`` with the trainer's ``tf.data`` CSV input_fn over the same file (target:
  tfship >= 2x); it only iterates over the predictions, it writes nothing;
- the loop a user writes: pandas reads the CSV, one ``tf.train.Example`` per row,
  ``tf.saved_model.load(...).signatures["predict"]`` per batch (target: tfship >= 5x);
- the model alone: the signature run on pre-built serialized batches already in memory (the
  limit; target: tfship >= 0.5x);
- ``tfship predict`` as a command (a fresh process: import, load, job) and its peak RSS;
- the output formats side by side: the same job writing CSV, JSONL and Parquet, with the
  default outputs (class and probability) and with every output of the signature (target:
  JSONL >= 0.7x the CSV rate), and the peak RSS of the JSONL command.

Usage: ``python benchmarks/loaders.py [--rows N] [--rss-rows N] [--workdir DIR] [--quick] [--short]``.
The default row count keeps ``make bench`` short; ``--rows 1000000`` is the claim,
``--rss-rows 10000000`` adds the peak-RSS run on ten million rows; ``--quick`` times the output
formats only, on 50,000 rows; ``--short`` runs every row on 3,000 rows (the peak-RSS run on
4,000) of a dnn trained for 20 steps, and judges no target.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

BATCH = 1024
BIN = Path(sys.executable).parent


def setup(workdir: Path, rows: int, steps: int) -> tuple[Any, Path, Path, Path]:
    """Schema, model dir, export and a synthetic CSV of ``rows`` rows (reused when present)."""
    from tfship.data import infer_schema, penguins_split
    from tfship.schema import Schema

    schema_path = workdir / "schema.json"
    model_dir = workdir / "model"
    export_base = model_dir / "export" / "final"
    if not schema_path.exists():
        train_csv, _ = penguins_split(workdir / "data")
        infer_schema(train_csv, "species").save(schema_path)
    schema = Schema.load(schema_path)
    exports = sorted(export_base.glob("[0-9]*")) if export_base.exists() else []
    if not exports:
        from tfship.trainer import ModelOptions, RunOptions, train

        print(f"training the dnn for {steps} steps ...", file=sys.stderr)
        train_csv, eval_csv = workdir / "data" / "train.csv", workdir / "data" / "eval.csv"
        if not train_csv.exists():
            train_csv, eval_csv = penguins_split(workdir / "data")
        result = train(
            schema,
            model_dir,
            [str(train_csv)],
            [str(eval_csv)],
            model=ModelOptions("dnn", hidden_units=(32, 16)),
            run=RunOptions(max_steps=steps, checkpoint_every=steps, exports=("final",)),
        )
        exports = [Path(result.exports["final"][-1])]
    csv_path = synthetic_csv(schema, rows, workdir)
    return schema, model_dir, exports[-1], csv_path


def synthetic_csv(schema: Any, rows: int, workdir: Path) -> Path:
    from tfship.data import synthesize

    path = workdir / f"synth-{rows}.csv"
    if not path.exists():
        print(f"writing {rows:,} synthetic rows ...", file=sys.stderr)
        synthesize(schema, rows, path, seed=0)
    return path


def time_tfship(
    export: Path, csv_path: Path, out: Path, outputs: list[str] | None = None
) -> tuple[float, int]:
    from tfship.loaders import JobSpec, load, run_job

    with load(export, signature="predict") as model:
        spec = JobSpec(
            [str(csv_path)], out, signature="predict", batch_size=BATCH, outputs=outputs, ignore_unknown=True
        )
        summary = run_job(model, spec, progress=False)
    assert summary.rejected == 0, summary.first_rejects
    return summary.seconds, summary.predicted


def time_formats(export: Path, csv_path: Path, workdir: Path) -> dict[str, tuple[float, int]]:
    """The same job writing each output format, with default and with all outputs."""
    from tfship.loaders import load

    with load(export, signature="predict") as model:
        every = sorted(model.signature("predict").outputs)
    results: dict[str, tuple[float, int]] = {}
    for label, outputs in (("default outputs", None), ("all outputs", every)):
        for fmt in ("csv", "jsonl", "parquet"):
            results[f"{fmt} ({label})"] = time_tfship(export, csv_path, workdir / f"fmt.{fmt}", outputs)
    return results


def print_formats(results: dict[str, tuple[float, int]], judge: bool = True) -> None:
    print(f"{'output format':<32}{'rows':>11}{'seconds':>10}{'rows/s':>12}{'x CSV':>8}{'target':>8}")
    for name, (seconds, rows) in results.items():
        label = name.split(" ", 1)[1]
        csv_seconds, csv_rows = results[f"csv {label}"]
        ratio = (rows / seconds) / (csv_rows / csv_seconds)
        target = ">=0.7" if name.startswith("jsonl") else ""
        mark = (" ok" if ratio >= 0.7 else " MISS") if target and judge else ""
        print(f"{name:<32}{rows:>11,}{seconds:>10.2f}{rows / seconds:>12,.0f}{ratio:>8.2f}{target:>8}{mark}")


def time_estimator(schema: Any, model_dir: Path, csv_path: Path) -> tuple[float, int]:
    from tfship.trainer import InputOptions, build_estimator, build_input_fn

    est = build_estimator(None, model_dir)
    config = InputOptions(batch_size=BATCH, epochs=1)
    input_fn = build_input_fn(schema, [str(csv_path)], config, training=False)
    started = time.perf_counter()
    rows = 0
    for batch in est.predict(input_fn, yield_single_examples=False):
        rows += len(batch["probabilities"])
    return time.perf_counter() - started, rows


def _example_builder(schema: Any) -> Any:
    """What a user writes: one tf.train.Example per row, by hand, from the column dtypes."""
    from tfship._tf import tf

    train = tf().train
    kinds = {f.name: f.dtype for f in schema.features}

    def build(record: dict[str, Any]) -> bytes:
        feats = {}
        for name, dtype in kinds.items():
            value = record.get(name)
            if value is None or (isinstance(value, float) and np.isnan(value)):
                continue
            if dtype == "string":
                feats[name] = train.Feature(bytes_list=train.BytesList(value=[str(value).encode()]))
            elif dtype == "int64":
                feats[name] = train.Feature(int64_list=train.Int64List(value=[int(value)]))
            else:
                feats[name] = train.Feature(float_list=train.FloatList(value=[float(value)]))
        return train.Example(features=train.Features(feature=feats)).SerializeToString()

    return build


def read_frame(schema: Any, csv_path: Path, limit: int | None = None) -> Any:
    """The CSV as a user reads it for this schema: ``NA`` is a value of a string column (the
    penguins' ``sex``), a missing number only in a numeric one, as the schema says."""
    import pandas as pd

    from tfship.schema import CsvMissing

    numeric = [f.name for f in schema.features if f.dtype != "string"]
    tokens = sorted(CsvMissing().tokens("float32"))
    strings = {f.name: str for f in schema.features if f.dtype == "string"}
    return pd.read_csv(
        csv_path,
        nrows=limit,
        keep_default_na=False,
        na_values={name: tokens for name in numeric},
        dtype=strings,
    )


def time_user_loop(schema: Any, export: Path, csv_path: Path) -> tuple[float, int]:

    from tfship._tf import tf

    t = tf()
    build = _example_builder(schema)
    started = time.perf_counter()
    signature = t.saved_model.load(str(export)).signatures["predict"]
    frame = read_frame(schema, csv_path)
    rows = 0
    for start in range(0, len(frame), BATCH):
        records = frame.iloc[start : start + BATCH].to_dict("records")
        examples = t.constant([build(r) for r in records])
        out = signature(examples=examples)
        rows += int(out["probabilities"].shape[0])
    return time.perf_counter() - started, rows


def time_model_alone(schema: Any, export: Path, csv_path: Path, limit: int) -> tuple[float, int]:

    from tfship.loaders import load

    build = _example_builder(schema)
    frame = read_frame(schema, csv_path, limit)
    serialized = np.array([build(r) for r in frame.to_dict("records")], dtype=object)
    batches = [serialized[i : i + BATCH] for i in range(0, len(serialized), BATCH)]
    with load(export, signature="predict") as model:
        model.run({"examples": batches[0]})  # first call builds the callable
        started = time.perf_counter()
        rows = sum(len(model.run({"examples": b})["probabilities"]) for b in batches)
    return time.perf_counter() - started, rows


def time_command(export: Path, csv_path: Path, out: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of ``tfship predict`` as a fresh process (its own peak,
    from ``wait4``, not the largest child's so far)."""
    cmd = [
        str(BIN / "tfship"),
        "predict",
        str(export),
        "-i",
        str(csv_path),
        "-o",
        str(out),
        "-s",
        "predict",
        "--batch-size",
        str(BATCH),
    ]
    started = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            errors.seek(0)
            raise RuntimeError(f"{' '.join(cmd)} failed: {errors.read().decode()[-2000:]}")
    return time.perf_counter() - started, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rows",
        type=int,
        default=None,
        help="rows of the synthetic CSV (default 200,000; 50,000 with --quick; 3,000 with --short)",
    )
    parser.add_argument(
        "--rss-rows",
        type=int,
        default=None,
        help="also run `tfship predict` on this many rows for peak RSS (default 0: skip; 4,000 with --short)",
    )
    parser.add_argument(
        "--steps", type=int, default=None, help="training steps of the dnn (default 200; 20 with --short)"
    )
    parser.add_argument("--workdir", type=Path, default=None, help="keep and reuse files here")
    parser.add_argument(
        "--quick", action="store_true", help="time the output formats only, on 50,000 rows (unless --rows)"
    )
    parser.add_argument(
        "--short",
        action="store_true",
        help="every row on small sizes, to see that each path runs (no targets)",
    )
    args = parser.parse_args()
    if args.rows is None:
        args.rows = 3_000 if args.short else 50_000 if args.quick else 200_000
    if args.rss_rows is None:
        args.rss_rows = 4_000 if args.short else 0
    if args.steps is None:
        args.steps = 20 if args.short else 200
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        schema, model_dir, export, csv_path = setup(workdir, args.rows, args.steps)
        if args.quick:
            print_formats(time_formats(export, csv_path, workdir), judge=not args.short)
            return
        big = synthetic_csv(schema, args.rss_rows, workdir) if args.rss_rows else None
        print(
            f"export {export}, {args.rows:,} rows of {len(schema.features)} features, batch {BATCH}",
            file=sys.stderr,
        )
        results: dict[str, tuple[float, int]] = {}
        if big is not None:
            big_seconds, big_rss = time_command(export, big, workdir / "big-out.csv")
        cmd_seconds, cmd_rss = time_command(export, csv_path, workdir / "cmd-out.csv")
        jsonl_seconds, jsonl_rss = time_command(export, csv_path, workdir / "cmd-out.jsonl")
        formats = time_formats(export, csv_path, workdir)
        results["tfship predict (CSV->CSV)"] = time_tfship(export, csv_path, workdir / "out.csv")
        results["estimator.predict (tf.data CSV)"] = time_estimator(schema, model_dir, csv_path)
        results["user loop (pandas + Example + TF2 signature)"] = time_user_loop(schema, export, csv_path)
        results["model alone (serialized batches in memory)"] = time_model_alone(
            schema, export, csv_path, min(args.rows, 200_000)
        )
    ours = results["tfship predict (CSV->CSV)"]
    ours_rate = ours[1] / ours[0]
    targets = {
        "estimator.predict (tf.data CSV)": 2.0,
        "user loop (pandas + Example + TF2 signature)": 5.0,
        "model alone (serialized batches in memory)": 0.5,
    }
    print(f"{'path':<48}{'rows':>11}{'seconds':>10}{'rows/s':>12}{'tfship x':>10}{'target':>8}")
    for name, (seconds, rows) in results.items():
        rate = rows / seconds
        ratio = ours_rate / rate
        target = f">={targets[name]:g}" if name in targets else ""
        mark = "" if name not in targets or args.short else (" ok" if ratio >= targets[name] else " MISS")
        print(f"{name:<48}{rows:>11,}{seconds:>10.2f}{rate:>12,.0f}{ratio:>10.2f}{target:>8}{mark}")
    print(
        f"tfship predict as a command on {args.rows:,} rows: {cmd_seconds:.2f} s wall "
        f"(import + load + job), peak RSS {cmd_rss:,.0f} MB"
    )
    print(f"the same command writing JSONL: {jsonl_seconds:.2f} s wall, peak RSS {jsonl_rss:,.0f} MB")
    print_formats(formats, judge=not args.short)
    if big is not None:
        print(
            f"tfship predict as a command on {args.rss_rows:,} rows: {big_seconds:.2f} s wall, "
            f"peak RSS {big_rss:,.0f} MB"
        )
    print("(tfship x = tfship predict rows/s / that path's rows/s; one run, same file, same machine)")


if __name__ == "__main__":
    main()
