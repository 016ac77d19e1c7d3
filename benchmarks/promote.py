"""The whole ``tfship promote`` decision on the penguins model, and the time of each check.

A penguins dnn is trained (200 steps, an export every 100), the first export is the served
baseline, the second the candidate; 1,000 requests (the eval rows, repeated) are replayed and
both models are evaluated on the eval rows. ``tfship promote`` runs as a user types it, in a
fresh process, with ``--dry-run --json``; the table gives its wall time and the seconds of each
check from its decision.

Target: the whole decision under 30 s on two cores.

Run: python benchmarks/promote.py [--requests N] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
SRC = pathlib.Path(__file__).resolve().parents[1] / "src"
TARGET_S = 30.0


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}  # loopback only
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), *filter(None, [env.get("PYTHONPATH")])])
    return env


def _tfship(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tfship", *args], capture_output=True, text=True, env=_env(), check=False
    )


def _prepare(root: pathlib.Path, count: int) -> tuple[pathlib.Path, pathlib.Path, pathlib.Path, pathlib.Path]:
    """(candidate, base path holding the baseline, requests file, eval file)."""
    data, schema, model = root / "data", root / "schema.json", root / "model"
    for args in (
        ("data", "penguins", "--out", str(data)),
        ("schema", "infer", str(data / "train.csv"), "--label", "species", "--out", str(schema)),
        (
            "train",
            "--schema",
            str(schema),
            "--train",
            str(data / "train.csv"),
            "--eval",
            str(data / "eval.csv"),
            "--model-dir",
            str(model),
            "--max-steps",
            "200",
        ),
    ):
        done = _tfship(*args)
        if done.returncode != 0:
            sys.exit(f"tfship {' '.join(args)} failed: {done.stderr}")
    older, newer = sorted((model / "export" / "latest").iterdir())[-2:]
    base = root / "serving"
    base.mkdir()
    older.rename(base / "1")
    with open(data / "eval.csv") as handle:
        rows = [{k: v for k, v in row.items() if v not in ("", "NA")} for row in csv.DictReader(handle)]
    requests = root / "requests.jsonl"
    with open(requests, "w") as handle:
        for index in range(count):
            record = dict(rows[index % len(rows)])
            record.pop("species", None)
            handle.write(json.dumps(_typed(record)) + "\n")
    return newer, base, requests, data / "eval.csv"


def _typed(record: dict[str, str]) -> dict[str, object]:
    typed: dict[str, object] = {}
    for key, value in record.items():
        try:
            typed[key] = int(value)
        except ValueError:
            try:
                typed[key] = float(value)
            except ValueError:
                typed[key] = value
    return typed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--workdir", type=pathlib.Path)
    parser.add_argument(
        "--short", action="store_true", help="50 replayed requests; every check still runs, no target judged"
    )
    args = parser.parse_args()
    if args.short:
        args.requests = 50
    with tempfile.TemporaryDirectory(prefix="tfship-bench-promote-") as tmp:
        root = args.workdir or pathlib.Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        candidate, base, requests, eval_file = _prepare(root, args.requests)
        started = time.perf_counter()
        done = _tfship(
            "promote",
            str(candidate),
            "--to",
            str(base),
            "--requests",
            str(requests),
            "-n",
            str(args.requests),
            "--eval",
            str(eval_file),
            "--change",
            "accuracy>=-0.05",
            "--min-agreement",
            "0.9",
            "--max-diff",
            "0.5",
            "--dry-run",
            "--json",
        )
        wall = time.perf_counter() - started
    if done.returncode not in (0, 3):
        sys.exit(f"tfship promote failed: {done.stderr}")
    decision = json.loads(done.stdout)
    verdict = "not judged (--short)" if args.short else "met" if wall < TARGET_S else "not met"
    print(
        f"tfship promote --dry-run, {args.requests} replayed requests: {wall:.1f} s wall "
        f"(target < {TARGET_S:.0f} s: {verdict}); "
        f"verdict: {'promote' if decision['promoted'] else 'refuse'}"
    )
    print(f"{'check':<14} {'verdict':<8} seconds")
    for check in decision["checks"]:
        print(f"{check['check']:<14} {check['verdict']:<8} {decision['seconds'].get(check['check'], 0):.2f}")
    print(
        "(serves includes starting both tfship serve processes, in parallel; ready includes "
        "one request per signature)"
    )


if __name__ == "__main__":
    main()
