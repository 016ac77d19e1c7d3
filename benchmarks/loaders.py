"""Batch prediction throughput: ``tfship predict`` against the model alone and the ways users score a file.

On the demo's ``dnn`` export (penguins schema, trained here for a few steps) and a synthetic CSV of
the same schema (``tfship.data.synthesize``), written once more as Parquet, TFRecord and JSONL,
all on the ``predict`` signature with batches of 1024. One model is loaded once; every row below
is measured ``--repeats`` times, the repeats interleaved (row A, row B, ..., then again), and
shown as the median rate with the lowest and highest:

- ``tfship predict`` CSV -> CSV in process (reading, conversion, model and writing), against
  the model alone on serialized batches already in memory (target: >= 0.9x) and the model
  alone on parsed features already in memory (what tfship feeds the graph: the true floor);
- Parquet, TFRecord and JSONL inputs -> CSV against CSV -> CSV (target: each >= 0.9x);
- the same CSV and TFRecord jobs and the model alone at ``--batch-size 16384``, reported: a
  model call has a cost of its own, and a TFRecord job pays for parsing its Examples in the
  graph and for the records' framing, so the batch size moves these rows most;
- CSV -> JSONL and CSV -> Parquet against CSV -> CSV, with the default outputs (class and
  probability) and with every output of the signature (target: JSONL >= 0.8x in every repeat);
- ``tfship predict`` as a command (a fresh process): its wall time minus the job's own time
  (from ``--json``) against importing TensorFlow and loading the model in a bare script
  (target: <= 1.2x), and its peak RSS;
- once each, on at most 200,000 rows: on the estimator lane ``estimator.predict`` with the
  trainer's ``tf.data`` CSV input_fn (target: tfship >= 2x), and the loop a user writes
  (pandas, one ``tf.train.Example`` per row, the TF2 signature per batch; target: tfship >= 5x).

Usage: ``python benchmarks/loaders.py [--rows N] [--rss-rows N] [--repeats N] [--workdir DIR]
[--quick] [--short]``. The default row count keeps ``make bench`` short; ``--rows 1000000`` is
the claim, ``--rss-rows 10000000`` adds the peak-RSS run on ten million rows (target: no higher
than 581 MB); ``--quick`` times the output formats only, on 50,000 rows; ``--short`` runs every
row on 3,000 rows (the peak-RSS run on 4,000) of a dnn trained for 20 steps, once, and judges
no target.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

BATCH = 1024
BIG_BATCH = 16384
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


def write_inputs(schema: Any, csv_path: Path) -> dict[str, Path]:
    """The synthetic CSV as Parquet, TFRecord (one ``tf.train.Example`` per row) and JSONL, the
    same rows and values (written once, next to the CSV)."""
    import orjson
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tfship._wire import write_tfrecord_file

    stem = csv_path.with_suffix("")
    paths = {
        "csv": csv_path,
        "parquet": stem.with_suffix(".parquet"),
        "tfrecord": stem.with_suffix(".tfrecord"),
        "jsonl": stem.with_suffix(".jsonl"),
    }
    if all(p.exists() for p in paths.values()):
        return paths
    print(f"writing {csv_path.name} as Parquet, TFRecord and JSONL ...", file=sys.stderr)
    frame = read_frame(schema, csv_path)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), paths["parquet"])
    records = frame.to_dict("records")
    for record in records:
        for key, value in record.items():
            if isinstance(value, float) and np.isnan(value):
                record[key] = None
    with open(paths["jsonl"], "wb") as f:
        for start in range(0, len(records), 65536):
            f.write(b"".join(orjson.dumps(r) + b"\n" for r in records[start : start + 65536]))
    build = _example_builder(schema)
    write_tfrecord_file(paths["tfrecord"], (build(r) for r in records))
    return paths


def time_job(
    model: Any, source: Path, out: Path, outputs: list[str] | None = None, batch: int = BATCH
) -> tuple[float, int]:
    """The job's own seconds (reading, conversion, model, writing) and rows, in process."""
    from tfship.loaders import JobSpec, run_job

    spec = JobSpec(
        [str(source)], out, signature="predict", batch_size=batch, outputs=outputs, ignore_unknown=True
    )
    summary = run_job(model, spec, progress=False)
    assert summary.rejected == 0, summary.first_rejects
    return summary.seconds, summary.predicted


def serialized_batches(tfrecord: Path, batch: int = BATCH) -> list[Any]:
    from tfship._wire import read_tfrecord_file

    records = read_tfrecord_file(tfrecord)
    serialized = np.empty(len(records), dtype=object)
    serialized[:] = records
    return [serialized[i : i + batch] for i in range(0, len(serialized), batch)]


def parsed_batches(model: Any, csv_path: Path) -> list[dict[str, Any]]:
    """The CSV read and typed by tfship, in batches of typed columns, all in memory."""
    from tfship.loaders._job import ChunkPreparer
    from tfship.records import read_chunks
    from tfship.records._shared import slice_rows

    adapter = model.adapter("predict")
    preparer = ChunkPreparer(adapter, [], want_inputs=False)
    batches = []
    for chunk in read_chunks(csv_path, 65536, preparer.wanted):
        prepared = preparer.prepare(chunk)
        assert prepared.columns is not None and not prepared.rejects
        for start in range(0, prepared.rows, BATCH):
            stop = min(start + BATCH, prepared.rows)
            batches.append({k: slice_rows(c, start, stop) for k, c in prepared.columns.items()})
    return batches


def time_model_serialized(model: Any, batches: list[Any]) -> tuple[float, int]:
    model.run({"examples": batches[0]})  # the first call builds the callable
    started = time.perf_counter()
    rows = sum(len(model.run({"examples": b})["probabilities"]) for b in batches)
    return time.perf_counter() - started, rows


def time_model_parsed(model: Any, batches: list[dict[str, Any]]) -> tuple[float, int]:
    adapter = model.adapter("predict")
    adapter.run_columns(batches[0], None)  # the first call builds the callable
    started = time.perf_counter()
    rows = sum(len(adapter.run_columns(b, None)["probabilities"]) for b in batches)
    return time.perf_counter() - started, rows


def predict_command(export: Path, source: Path, out: Path) -> list[str]:
    return [
        str(BIN / "tfship"),
        "predict",
        str(export),
        "-i",
        str(source),
        "-o",
        str(out),
        "-s",
        "predict",
        "--batch-size",
        str(BATCH),
        "--json",
    ]


#: Starts a command and prints its output, then its wall seconds, peak RSS in KiB and exit code.
#: A process's peak RSS from wait4 counts the memory of the process it was forked from, which
#: is this benchmark (a model and batches in memory); forked from this small script, it does not.
LAUNCH = """
import os, subprocess, sys, time
started = time.perf_counter()
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE)
out = child.stdout.read()
_, status, usage = os.wait4(child.pid, 0)
wall = time.perf_counter() - started
sys.stdout.buffer.write(out)
print(wall, usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"""


def time_process(cmd: list[str]) -> tuple[float, float, bytes]:
    """Wall seconds, peak RSS (MB) and standard output of ``cmd`` as a fresh process."""
    with tempfile.TemporaryFile() as errors:
        done = subprocess.run([sys.executable, "-c", LAUNCH, *cmd], stdout=subprocess.PIPE, stderr=errors)
        printed, _, figures = done.stdout.rstrip(b"\n").rpartition(b"\n")
        wall, rss, code = figures.split()
        if done.returncode != 0 or int(code) != 0:
            errors.seek(0)
            raise RuntimeError(f"{' '.join(cmd)} failed: {errors.read().decode()[-2000:]}")
    return float(wall), int(rss) / 1024, printed


def time_command(export: Path, source: Path, out: Path) -> tuple[float, float, float]:
    """``tfship predict`` as a fresh process: wall seconds, the job's own seconds, peak RSS (MB)."""
    wall, rss, printed = time_process(predict_command(export, source, out))
    return wall, float(json.loads(printed)["seconds"]), rss


BARE_LOAD = """
import sys, tensorflow as tf
tf.saved_model.load(sys.argv[1])
"""


def time_bare_load(export: Path) -> float:
    """Wall seconds of a bare script that imports TensorFlow and loads the export."""
    return time_process([sys.executable, "-c", BARE_LOAD, str(export)])[0]


class Spread:
    """Rates of one row over the repeats: median, lowest, highest."""

    def __init__(self, runs: list[tuple[float, int]]) -> None:
        self.runs = runs
        self.rates = [rows / seconds for seconds, rows in runs]
        self.rows = runs[0][1]

    @property
    def rate(self) -> float:
        return statistics.median(self.rates)

    def text(self) -> str:
        low, high = min(self.rates), max(self.rates)
        return f"{self.rows:>11,}{self.rate:>12,.0f}{low:>12,.0f}{high:>12,.0f}"

    def ratios(self, base: Spread) -> list[float]:
        """Per repeat: this row's rate over ``base``'s in the same repeat."""
        return [a / b for a, b in zip(self.rates, base.rates)]


def ratio_text(ratios: list[float]) -> str:
    return f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"


def judge(ratios: list[float], target: float, every: bool, short: bool) -> str:
    if short:
        return ""
    value = min(ratios) if every else statistics.median(ratios)
    return " ok" if value >= target else " MISS"


def print_table(
    title: str, rows: dict[str, Spread], base: str, targets: dict[str, tuple[float, bool]], short: bool
) -> None:
    print(f"{title:<44}{'rows':>11}{'rows/s':>12}{'lowest':>12}{'highest':>12}  x {base}")
    for name, spread in rows.items():
        ratios = spread.ratios(rows[base]) if name != base else [1.0] * len(spread.rates)
        target, every = targets.get(name, (0.0, False))
        goal = f"  target >={target:g}{' every' if every else ''}" if name in targets else ""
        mark = judge(ratios, target, every, short) if name in targets else ""
        print(f"{name:<44}{spread.text()}  {ratio_text(ratios)}{goal}{mark}")


def time_formats(model: Any, csv_path: Path, workdir: Path, repeats: int) -> dict[str, Spread]:
    """The same job writing each output format, with default and with all outputs."""
    every = sorted(model.signature("predict").outputs)
    runs: dict[str, list[tuple[float, int]]] = {}
    for _ in range(repeats):
        for label, outputs in (("default outputs", None), ("all outputs", every)):
            for fmt in ("csv", "jsonl", "parquet"):
                name = f"CSV -> {fmt} ({label})"
                runs.setdefault(name, []).append(time_job(model, csv_path, workdir / f"fmt.{fmt}", outputs))
    return {name: Spread(r) for name, r in runs.items()}


def print_formats(results: dict[str, Spread], short: bool) -> None:
    print(f"{'output format':<44}{'rows':>11}{'rows/s':>12}{'lowest':>12}{'highest':>12}  x CSV output")
    for name, spread in results.items():
        label = name.split(" (", 1)[1]
        ratios = spread.ratios(results[f"CSV -> csv ({label}"])
        target = "  target >=0.8 every" if "jsonl" in name else ""
        mark = judge(ratios, 0.8, True, short) if target else ""
        print(f"{name:<44}{spread.text()}  {ratio_text(ratios)}{target}{mark}")


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


def has_estimator() -> bool:
    import importlib.util

    return importlib.util.find_spec("tensorflow_estimator") is not None


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
        "--repeats", type=int, default=None, help="interleaved repeats (default 3; 1 with --short)"
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
    if args.repeats is None:
        args.repeats = 1 if args.short else 3
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from tfship.loaders import load

    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        schema, model_dir, export, csv_path = setup(workdir, args.rows, args.steps)
        if args.quick:
            with load(export, signature="predict") as model:
                print_formats(time_formats(model, csv_path, workdir, args.repeats), args.short)
            return
        inputs = write_inputs(schema, csv_path)
        big = synthetic_csv(schema, args.rss_rows, workdir) if args.rss_rows else None
        print(
            f"export {export}, {args.rows:,} rows of {len(schema.features)} features, batch {BATCH}, "
            f"{args.repeats} interleaved repeat(s)",
            file=sys.stderr,
        )
        warm = synthetic_csv(schema, 2 * BATCH, workdir)
        runs: dict[str, list[tuple[float, int]]] = {}
        big_runs: dict[str, list[tuple[float, int]]] = {}
        commands: list[tuple[float, float, float]] = []
        bare: list[float] = []
        # The commands first, while this process is small: a child's peak RSS (from wait4)
        # starts at its parent's size when it was forked.
        for _ in range(args.repeats):
            commands.append(time_command(export, csv_path, workdir / "cmd-out.csv"))
            bare.append(time_bare_load(export))
        if big is not None:
            big_wall, big_job, big_rss = time_command(export, big, workdir / "big-out.csv")
        with load(export, signature="predict") as model:
            time_job(model, warm, workdir / "warm.csv")
            serialized = serialized_batches(inputs["tfrecord"])
            parsed = parsed_batches(model, csv_path)
            cases = {
                "CSV -> CSV": lambda: time_job(model, csv_path, workdir / "out.csv"),
                "model alone, serialized batches": lambda: time_model_serialized(model, serialized),
                "model alone, parsed features": lambda: time_model_parsed(model, parsed),
                "Parquet -> CSV": lambda: time_job(model, inputs["parquet"], workdir / "out.csv"),
                "TFRecord -> CSV": lambda: time_job(model, inputs["tfrecord"], workdir / "out.csv"),
                "JSONL -> CSV": lambda: time_job(model, inputs["jsonl"], workdir / "out.csv"),
            }
            for _ in range(args.repeats):
                for name, case in cases.items():
                    runs.setdefault(name, []).append(case())
            cases.clear()  # let the batches in memory go
            big_batches = serialized_batches(inputs["tfrecord"], BIG_BATCH)
            cases = {
                "CSV -> CSV": lambda: time_job(model, csv_path, workdir / "out.csv", batch=BIG_BATCH),
                "TFRecord -> CSV": lambda: time_job(
                    model, inputs["tfrecord"], workdir / "out.csv", batch=BIG_BATCH
                ),
                "model alone, serialized batches": lambda: time_model_serialized(model, big_batches),
            }
            for _ in range(args.repeats):
                for name, case in cases.items():
                    big_runs.setdefault(name, []).append(case())
            cases.clear()
            formats = time_formats(model, csv_path, workdir, args.repeats)
        others: dict[str, tuple[float, int]] = {}
        # the slow paths on at most 200,000 rows (their rate is per row)
        small = csv_path if args.rows <= 200_000 else synthetic_csv(schema, 200_000, workdir)
        if has_estimator():
            others["estimator.predict (tf.data CSV)"] = time_estimator(schema, model_dir, small)
        others["user loop (pandas + Example + TF2 signature)"] = time_user_loop(schema, export, small)
    results = {name: Spread(r) for name, r in runs.items()}
    jobs = {k: v for k, v in results.items() if "model alone" not in k}
    print(f"tfship predict, {args.rows:,} rows, median rate of {args.repeats} repeat(s) (lowest, highest):")
    floor = {"CSV -> CSV": results["CSV -> CSV"]}
    floor["model alone, serialized batches"] = results["model alone, serialized batches"]
    floor["model alone, parsed features"] = results["model alone, parsed features"]
    print_table("against the model", floor, "CSV -> CSV", {}, args.short)
    ours = results["CSV -> CSV"]
    for name in ("model alone, serialized batches", "model alone, parsed features"):
        ratios = ours.ratios(results[name])
        target = "  target >=0.9" if "serialized" in name else ""
        mark = judge(ratios, 0.9, False, args.short) if target else ""
        print(f"  CSV -> CSV / {name}: {ratio_text(ratios)}{target}{mark}")
    print_table(
        "input format",
        jobs,
        "CSV -> CSV",
        {k: (0.9, False) for k in ("Parquet -> CSV", "TFRecord -> CSV", "JSONL -> CSV")},
        args.short,
    )
    print_table(
        f"at --batch-size {BIG_BATCH} (reported)",
        {name: Spread(r) for name, r in big_runs.items()},
        "CSV -> CSV",
        {},
        args.short,
    )
    print_formats(formats, args.short)
    overhead = [wall - job for wall, job, _ in commands]
    start_ratios = [o / b for o, b in zip(overhead, bare)]
    mark = judge([1 / r for r in start_ratios], 1 / 1.2, False, args.short)
    print(
        f"tfship predict as a command on {args.rows:,} rows: wall "
        f"{statistics.median(c[0] for c in commands):.2f} s, "
        f"job {statistics.median(c[1] for c in commands):.2f} s, "
        f"wall - job {statistics.median(overhead):.2f} s ({min(overhead):.2f}-{max(overhead):.2f}); "
        f"bare import tensorflow + load {statistics.median(bare):.2f} s ({min(bare):.2f}-{max(bare):.2f}); "
        f"start-up {ratio_text(start_ratios)} of bare, target <=1.2x{mark}; "
        f"peak RSS {max(c[2] for c in commands):,.0f} MB"
    )
    if big is not None:
        mark = "" if args.short else (" ok" if big_rss <= 581 else " MISS")
        print(
            f"tfship predict as a command on {args.rss_rows:,} rows: {big_wall:.2f} s wall, "
            f"job {big_job:.2f} s, "
            f"peak RSS {big_rss:,.0f} MB (target <= 581 MB){mark}"
        )
    ours_rate = ours.rate
    targets = {"estimator.predict (tf.data CSV)": 2.0, "user loop (pandas + Example + TF2 signature)": 5.0}
    print(f"{'once each':<48}{'rows':>11}{'seconds':>10}{'rows/s':>12}{'tfship x':>10}{'target':>8}")
    for name, (seconds, rows) in others.items():
        rate = rows / seconds
        ratio = ours_rate / rate
        mark = "" if args.short else (" ok" if ratio >= targets[name] else " MISS")
        print(
            f"{name:<48}{rows:>11,}{seconds:>10.2f}{rate:>12,.0f}{ratio:>10.2f}{f'>={targets[name]:g}':>8}{mark}"
        )
    print(
        "(x = rate over the base row's rate in the same repeat: median (lowest-highest); "
        "same files, same machine)"
    )


if __name__ == "__main__":
    main()
