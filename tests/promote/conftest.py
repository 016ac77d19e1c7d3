"""Real SavedModels for the promotion tests: small TF2 modules that differ in one way each."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

WEIGHTS = [[1.0, -1.0, 0.5], [0.5, 1.0, -1.0], [-1.0, 0.5, 1.0], [0.2, 0.2, 0.2]]


def export_module(
    path: Path, *, weights: list[list[float]] = WEIGHTS, output: str = "scores", heavy: bool = False
) -> Path:
    """A softmax classifier over four floats (``x``), exported with one ``serving_default``.

    ``output`` names its output, ``weights`` sets its answers and ``heavy`` adds twenty
    300x300 matmuls whose result (which shrinks to zero) is added to the logits, so it answers
    the same, slower.
    """
    import tensorflow as tf

    class Model(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = tf.Variable(weights)

        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
        def serve(self, x: Any) -> dict[str, Any]:
            logits = tf.matmul(x, self.w)
            if heavy:
                m = tf.fill([300, 300], tf.reduce_mean(tf.abs(x)) * 1e-6 + 1e-3)
                for _ in range(20):
                    m = tf.matmul(m, m)
                logits = logits + tf.reduce_sum(m) * 1e-30
            return {output: tf.nn.softmax(logits)}

    model = Model()
    tf.saved_model.save(model, str(path), signatures={"serving_default": model.serve})
    return path


def export_writer(path: Path, written: Path) -> Path:
    """A TF1 export that writes files on the host: its init op writes ``written/init`` when it is
    loaded, and its ``serving_default`` writes ``written/run`` on every request."""
    import tensorflow as tf

    v1 = tf.compat.v1
    with tf.Graph().as_default(), v1.Session() as session:
        x = v1.placeholder(tf.float32, [None, 4], name="x")
        with tf.control_dependencies([tf.io.write_file(str(written / "run"), "a request ran")]):
            y = tf.identity(x * 2.0, name="y")
        init = tf.io.write_file(str(written / "init"), "the export was loaded")
        builder = v1.saved_model.Builder(str(path))
        signature = v1.saved_model.predict_signature_def({"x": x}, {"y": y})
        builder.add_meta_graph_and_variables(
            session, ["serve"], signature_def_map={"serving_default": signature}, main_op=init
        )
        builder.save()
    return path


@pytest.fixture(scope="session")
def modules(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """baseline, a copy of it, renamed output, other answers, heavier, and one that cannot load."""
    root = tmp_path_factory.mktemp("modules")
    made = {
        "baseline": export_module(root / "baseline"),
        "renamed": export_module(root / "renamed", output="probabilities"),
        "differs": export_module(root / "differs", weights=[[-w for w in row] for row in WEIGHTS]),
        "slower": export_module(root / "slower", heavy=True),
    }
    made["same"] = Path(shutil.copytree(made["baseline"], root / "same"))
    broken = Path(shutil.copytree(made["baseline"], root / "broken"))
    for data in (broken / "variables").glob("variables.data-*"):
        data.write_bytes(b"not a checkpoint shard")
    made["broken"] = broken
    records = root / "requests.jsonl"
    rows = [[0.1 * i, 1.0 - 0.1 * i, 0.5, (-1.0) ** i] for i in range(20)]
    records.write_text("".join(json.dumps({"x": row}) + "\n" for row in rows))
    made["requests"] = records
    return made


def base_with(tmp_path: Path, version: Path, number: int = 1) -> Path:
    """A base path holding ``version`` as version ``number``."""
    base = tmp_path / "serving"
    base.mkdir()
    shutil.copytree(version, base / str(number))
    return base


@contextmanager
def serving(base: Path, name: str = "m") -> Iterator[str]:
    """``tfship serve`` on ``base`` in its own process, polling often; yields its gRPC address."""
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tfship",
            "serve",
            "--model-base-path",
            str(base),
            "--model-name",
            name,
            "--port",
            "0",
            "--poll-seconds",
            "0.2",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        line = process.stdout.readline()
        assert line, process.stderr.read()
        yield str(json.loads(line)["grpc"])
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
