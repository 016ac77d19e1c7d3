"""Training throughput on a local TF_CONFIG cluster against one process.

The same model (``dnn`` 32-16 on the penguins schema), data and batch size, measured side by side
in one run:

- one process: ``tfship train`` without TF_CONFIG;
- ``--local-cluster workers=0,ps=1``: the chief alone as one training replica, its variables on a
  ps over gRPC (the cost of the parameter-server runtime itself);
- ``--local-cluster workers=1,ps=1``: two training replicas (chief and one worker) and one ps;
- with ``--workers 2`` also ``workers=2,ps=1`` (three replicas).

Throughput is taken from the chief's step lines once training runs: global steps (every replica's
updates) times the batch size over the time between the first and the last step line, so
start-up is left out; start-up (launch to the chief's first step line) is shown on its own. On a
2-core machine the cluster tasks share the same cores: the ratios are informative, not a target.

Usage: ``python benchmarks/cluster.py [--steps N] [--batch-size N] [--workers N] [--workdir DIR]
[--short]``; ``--short`` trains 40 steps per run and, unless ``--workers`` is given, only the
smallest cluster (``workers=0,ps=1``), so that every path runs in a short time (the numbers then
say little).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

STEP_LINE = re.compile(r"^(?:\[chief 0\] )?step (\d+)\b")


def setup(workdir: Path) -> tuple[Path, Path, Path]:
    """The penguins split and their schema (reused when present)."""
    from tfship.data import infer_schema, penguins_split

    train_csv, eval_csv = workdir / "data" / "train.csv", workdir / "data" / "eval.csv"
    if not train_csv.exists():
        train_csv, eval_csv = penguins_split(workdir / "data")
    schema_path = workdir / "schema.json"
    if not schema_path.exists():
        infer_schema(train_csv, "species").save(schema_path)
    return schema_path, train_csv, eval_csv


def run(args: list[str], env: dict[str, str]) -> tuple[float, list[tuple[float, int]]]:
    """Run a ``tfship train`` command; returns its wall time and (time, global step) of step lines."""
    started = time.monotonic()
    steps: list[tuple[float, int]] = []
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    tail: list[str] = []

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            found = STEP_LINE.match(line)
            if found:
                steps.append((time.monotonic() - started, int(found.group(1))))
            tail.append(line)
            del tail[:-20]

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    code = process.wait(timeout=1800)
    reader.join(timeout=10)
    if code != 0:
        sys.exit(f"{' '.join(args[3:])} failed:\n{''.join(tail)}")
    return time.monotonic() - started, steps


def measure(
    label: str, replicas: int, extra: list[str], common: list[str], batch: int, env: dict[str, str]
) -> dict[str, float | str | int]:
    wall, steps = run([*common, *extra], env)
    if len(steps) < 2:
        sys.exit(f"{label}: fewer than two step lines; raise --steps")
    (t0, s0), (t1, s1) = steps[0], steps[-1]
    return {
        "label": label,
        "replicas": replicas,
        "examples_per_s": (s1 - s0) * batch / max(t1 - t0, 1e-9),
        "startup_s": t0,
        "wall_s": wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=None, help="training steps per run (default 1500)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="largest number of workers beside the chief (default 1; 0 with --short)",
    )
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--short", action="store_true", help="40 steps per run: every path, little time")
    opts = parser.parse_args()
    if opts.steps is None:
        opts.steps = 40 if opts.short else 1500
    if opts.workers is None:
        opts.workers = 0 if opts.short else 1
    # removed when the process ends, even on sys.exit; a --workdir is kept
    scratch = tempfile.TemporaryDirectory(prefix="tfship-bench-cluster-")
    workdir = opts.workdir or Path(scratch.name)
    schema, train_csv, eval_csv = setup(workdir)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    env.pop("TF_CONFIG", None)
    log_every = max(opts.steps // 15, 10)

    def common(name: str) -> list[str]:
        return [
            sys.executable,
            "-m",
            "tfship",
            "train",
            "--schema",
            str(schema),
            "--train",
            str(train_csv),
            "--eval",
            str(eval_csv),
            "--model-dir",
            str(workdir / name),
            "--hidden-units",
            "32,16",
            "--batch-size",
            str(opts.batch_size),
            "--max-steps",
            str(opts.steps),
            "--checkpoint-every",
            str(opts.steps),
            "--log-every",
            str(log_every),
            "--export",
            "",
        ]

    rows = [measure("one process", 1, [], common("single"), opts.batch_size, env)]
    for workers in range(0, opts.workers + 1):
        spec = f"workers={workers},ps=1"
        rows.append(
            measure(
                f"--local-cluster {spec}",
                workers + 1,
                ["--local-cluster", spec],
                common(f"cluster-{workers}"),
                opts.batch_size,
                env,
            )
        )
    base = float(rows[0]["examples_per_s"])
    print(f"training throughput, {opts.steps} steps of {opts.batch_size} examples, {os.cpu_count()} cores")
    print(
        f"{'run':<34} {'replicas':>8} {'examples/s':>11} {'vs one process':>15} {'start-up s':>11}"
        f" {'wall s':>7}"
    )
    for row in rows:
        ratio = float(row["examples_per_s"]) / base
        print(
            f"{row['label']:<34} {row['replicas']:>8} {float(row['examples_per_s']):>11,.0f} "
            f"{ratio:>14.2f}x {float(row['startup_s']):>11.1f} {float(row['wall_s']):>7.1f}"
        )


if __name__ == "__main__":
    main()
