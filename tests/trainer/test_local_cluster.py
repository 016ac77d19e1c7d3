"""Whole clusters on 127.0.0.1: real processes, one per task, talking gRPC through TF_CONFIG.

Each test starts ``tfship train --local-cluster`` (or one task alone) as a subprocess with a
deadline, on the bundled penguins, with a small model and few steps.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from tfship.cli import cli
from tfship.records import BySchema, to_example
from tfship.schema import Schema
from tfship.trainer import make_tf_config

pytestmark = pytest.mark.slow

_DEADLINE = 240


def _free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports on 127.0.0.1 that were free a moment ago."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _train_args(tiny_model: Any, model_dir: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tfship",
        "train",
        "--schema",
        str(tiny_model.schema_path),
        "--train",
        str(tiny_model.train_csv),
        "--eval",
        str(tiny_model.eval_csv),
        "--model-dir",
        str(model_dir),
        "--hidden-units",
        "8",
        *extra,
    ]


def _accuracy(export_dir: Path, schema: Schema, eval_csv: Path) -> float:
    import csv

    import tensorflow as tf

    with eval_csv.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    typing = BySchema(schema)
    examples = [to_example(r, typing, where=f"row {i}").SerializeToString() for i, r in enumerate(rows)]
    out = tf.saved_model.load(str(export_dir)).signatures["predict"](examples=tf.constant(examples))
    vocabulary = list(schema.label.vocabulary or [])
    predicted = [vocabulary[i] for i in np.argmax(out["probabilities"].numpy(), axis=1)]
    return float(np.mean([p == r[schema.label.name] for p, r in zip(predicted, rows)]))


def test_a_cluster_with_evaluator_trains_ends_by_itself_and_exports_the_best(
    tiny_model: Any, tmp_path: Path
) -> None:
    model_dir = tmp_path / "cluster"
    args = _train_args(
        tiny_model,
        model_dir,
        "--max-steps",
        "60",
        "--checkpoint-every",
        "30",
        "--log-every",
        "30",
        "--local-cluster",
        "workers=2,ps=1,evaluator=1",
        "--json",
    )
    done = subprocess.run(args, capture_output=True, text=True, timeout=_DEADLINE)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    # Every task ended by itself with 0, the ps too: the launcher stops tasks only on failure.
    assert summary["exit_codes"] == {"ps 0": 0, "chief 0": 0, "worker 0": 0, "worker 1": 0, "evaluator 0": 0}
    assert "[ps 0] ps 0: the chief finished training at step" in done.stderr
    for task in ("chief 0", "worker 0", "worker 1", "ps 0", "evaluator 0"):
        assert f"[{task}] {task} of cluster chief:1 worker:2 ps:1 (+ evaluator), model_dir" in done.stderr
    assert re.search(r"\[evaluator 0\] evaluated step \d+: accuracy", done.stderr)
    assert summary["global_step"] >= 60 and "accuracy" in summary["metrics"]
    # Only the evaluator exported: one final version, a best one, and the latest ones.
    assert len(summary["exports"]["final"]) == 1 and len(summary["exports"]["best"]) == 1
    best = Path(summary["exports"]["best"][0])
    schema = tiny_model.schema
    cluster_accuracy = _accuracy(best, schema, tiny_model.eval_csv)
    single_accuracy = _accuracy(tiny_model.export("best"), schema, tiny_model.eval_csv)
    assert abs(cluster_accuracy - single_accuracy) <= 0.05, (cluster_accuracy, single_accuracy)
    predicted = CliRunner().invoke(
        cli, ["predict", str(best), str(tiny_model.eval_csv), "-o", str(tmp_path / "p.csv"), "--json"]
    )
    assert predicted.exit_code == 0, predicted.output
    assert json.loads(predicted.output.splitlines()[-1])["predicted"] == 68


def test_without_evaluator_the_chief_exports_final(tiny_model: Any, tmp_path: Path) -> None:
    model_dir = tmp_path / "cluster"
    args = _train_args(
        tiny_model,
        model_dir,
        "--max-steps",
        "40",
        "--checkpoint-every",
        "40",
        "--local-cluster",
        "workers=1,ps=1",
        "--json",
    )
    done = subprocess.run(args, capture_output=True, text=True, timeout=_DEADLINE)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert set(summary["exports"]) == {"final"} and len(summary["exports"]["final"]) == 1
    assert (Path(summary["exports"]["final"][0]) / "saved_model.pb").exists()
    assert summary["notes"] == ["best and latest exports need an evaluator task; exported final only"]
    assert "[chief 0] final: exported" in done.stderr
    assert set(summary["exit_codes"].values()) == {0}


class _Launcher:
    """``tfship train --local-cluster`` in the background, its stderr read line by line."""

    def __init__(self, args: list[str]) -> None:
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        assert self.process.stderr is not None
        stream = self.process.stderr

        def pump() -> None:
            for line in stream:
                self.lines.put(line.rstrip("\n"))

        threading.Thread(target=pump, daemon=True).start()

    def wait_for(self, pattern: str, timeout: float = 120) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=1)
            except queue.Empty:
                assert self.process.poll() is None, "\n".join(self.seen[-30:])
                continue
            self.seen.append(line)
            found = re.search(pattern, line)
            if found:
                return found
        raise AssertionError(f"no line matching {pattern!r}:\n" + "\n".join(self.seen[-30:]))

    def finish(self, timeout: float = 60) -> list[str]:
        self.process.wait(timeout=timeout)
        time.sleep(0.5)
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return self.seen

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdout, self.process.stderr):
            assert stream is not None
            stream.close()

    def pids(self) -> dict[str, int]:
        found = (re.search(r"\[cluster\] started (\w+ \d) \(pid (\d+)\)", line) for line in self.seen)
        return {m.group(1): int(m.group(2)) for m in found if m}


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")  # exited, not yet reaped by whoever adopted it


def _long_run(tiny_model: Any, tmp_path: Path, spec: str) -> _Launcher:
    args = _train_args(
        tiny_model,
        tmp_path / "cluster",
        "--max-steps",
        "1000000",
        "--checkpoint-every",
        "100000",
        "--log-every",
        "20",
        "--export",
        "",
        "--local-cluster",
        spec,
    )
    return _Launcher(args)


def test_a_killed_worker_stops_the_whole_cluster(tiny_model: Any, tmp_path: Path) -> None:
    launcher = _long_run(tiny_model, tmp_path, "workers=2,ps=1")
    try:
        launcher.wait_for(r"^\[worker 1\] worker 1 of cluster")
        launcher.wait_for(r"^\[chief 0\] step \d+")
        pids = launcher.pids()
        os.kill(pids["worker 1"], signal.SIGKILL)
        lines = launcher.finish()
    finally:
        launcher.close()
    assert launcher.process.returncode == 1
    assert lines[-1].startswith("Error: worker 1 failed (killed by SIGKILL)"), lines[-5:]
    assert set(pids) == {"ps 0", "chief 0", "worker 0", "worker 1"}
    assert all(_gone(pid) for pid in pids.values()), "a task outlived the launcher"


def test_an_interrupt_stops_every_task(tiny_model: Any, tmp_path: Path) -> None:
    launcher = _long_run(tiny_model, tmp_path, "workers=0,ps=1")
    try:
        launcher.wait_for(r"^\[chief 0\] step \d+")
        pids = launcher.pids()
        launcher.process.send_signal(signal.SIGINT)
        launcher.finish()
    finally:
        launcher.close()
    assert launcher.process.returncode != 0
    assert set(pids) == {"ps 0", "chief 0"}
    assert all(_gone(pid) for pid in pids.values()), "a task outlived the interrupt"


# The short wait runs out while the task still imports TensorFlow, with stderr muted: the
# line must reach the user all the same.
@pytest.mark.parametrize(("task_type", "wait"), [("ps", "3"), ("chief", "3"), ("chief", "0.2")])
def test_a_task_whose_peer_never_comes_up_fails_naming_it(
    tiny_model: Any, tmp_path: Path, task_type: str, wait: str
) -> None:
    ports = _free_ports(2)
    cluster = {"chief": [f"127.0.0.1:{ports[0]}"], "ps": [f"127.0.0.1:{ports[1]}"]}
    env = {**os.environ, "TF_CONFIG": json.dumps(make_tf_config(cluster, task_type, 0))}
    args = _train_args(tiny_model, tmp_path / "m", "--max-steps", "10", "--cluster-timeout-secs", wait)
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
    missing = "chief 0" if task_type == "ps" else "ps 0"
    address = cluster[missing.split()[0]][0]
    assert done.returncode == 1, done.stderr[-2000:]
    expected = (
        f"Error: {task_type} 0: {missing} at {address} did not answer within {wait}s; is that task running?"
    )
    assert expected in done.stderr.splitlines(), done.stderr[-2000:]


def test_a_task_whose_port_is_taken_says_so(tiny_model: Any, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        cluster = {"chief": [f"127.0.0.1:{_free_ports(1)[0]}"], "ps": [address]}
        env = {**os.environ, "TF_CONFIG": json.dumps(make_tf_config(cluster, "ps", 0))}
        args = _train_args(tiny_model, tmp_path / "m", "--max-steps", "10", "--cluster-timeout-secs", "3")
        done = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 1, done.stderr[-2000:]
    expected = f"Error: ps 0: could not start its gRPC server at {address}; is the port in use?"
    assert done.stderr.splitlines()[-1] == expected, done.stderr[-2000:]
