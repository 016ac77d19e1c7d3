"""Tiny real exports and running servers shared by the server tests.

* ``module_base``: a TF2 ``tf.Module`` SavedModel under versions 1 and 2 (``y = x @ w + v``
  where ``v`` is the version, so a response tells which version answered), with a string
  signature and a two-input signature.
* ``estimator_base``: a canned ``LinearClassifier`` (binary) trained a few steps and exported
  with a parsing receiver: classification, regression and predict signatures.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest

from estimator_lane import build
from tfship.server import ModelServer, ServerOptions


@dataclass
class ServeProcess:
    """A ``tfship serve --json`` process: its start-up line, and its stderr once stopped."""

    info: dict[str, Any] = field(default_factory=dict)
    stderr: str = ""
    pid: int = 0


@contextmanager
def serve_process(*args: str, open_files: tuple[int, int] | None = None) -> Iterator[ServeProcess]:
    """Run ``tfship serve ARGS --json`` in its own process, as a user starts it; on leaving,
    stop it with SIGTERM and check that it exited 0 (it is killed if anything went wrong).

    ``open_files`` sets the process's (soft, hard) limit on open files before it starts.
    """
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}

    def limit() -> None:
        import resource

        if open_files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, open_files)

    process = subprocess.Popen(
        [sys.executable, "-m", "tfship", "serve", *args, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=limit,
    )
    running = ServeProcess(pid=process.pid)
    try:
        assert process.stdout is not None and process.stderr is not None
        line = process.stdout.readline()
        assert line, f"tfship serve did not start: {process.stderr.read()}"
        running.info = json.loads(line)
        yield running
        process.send_signal(signal.SIGTERM)
        _, running.stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, running.stderr


def export_module(directory: Path, version: int) -> Path:
    """Write the TF2 test model as ``directory/<version>``; outputs depend on ``version``."""
    import tensorflow as tf

    offset = float(version)

    class Model(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = tf.Variable([[1.0], [2.0]])

        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32, name="x")])
        def serve(self, x: Any) -> dict[str, Any]:
            return {"y": tf.matmul(x, self.w) + offset, "doubled": x * 2.0}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
        def strings(self, text: Any) -> dict[str, Any]:
            return {
                "upper_bytes": tf.strings.upper(text),
                "upper": tf.strings.upper(text),
                "length": tf.strings.length(text, unit="BYTE"),
            }

        @tf.function(
            input_signature=[
                tf.TensorSpec([None], tf.float32, name="a"),
                tf.TensorSpec([None], tf.int64, name="b"),
            ]
        )
        def pair(self, a: Any, b: Any) -> dict[str, Any]:
            return {"sum": a + tf.cast(b, tf.float32)}

    model = Model()
    path = directory / str(version)
    tf.saved_model.save(
        model,
        str(path),
        signatures={
            "serving_default": model.serve,
            "strings": model.strings,
            "pair": model.pair,
        },
    )
    return path


@pytest.fixture(scope="session")
def module_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Base path holding versions 1 and 2 of the TF2 module (never modified by tests)."""
    base = tmp_path_factory.mktemp("module") / "base"
    base.mkdir()
    for version in (1, 2):
        export_module(base, version)
    return base


@pytest.fixture(scope="session")
def module_version3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished version 3 of the module, outside any base path, to drop in during tests."""
    staging = tmp_path_factory.mktemp("module3")
    return export_module(staging, 3)


@pytest.fixture(scope="session")
def estimator_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Base path with version 1 of the canned estimator export (parsing receiver)."""
    return Path(build("estimator_builds:linear_base", tmp_path_factory.mktemp("estimator")))


@pytest.fixture(scope="session")
def server(module_base: Path, estimator_base: Path) -> Iterator[ModelServer]:
    """One server for read-only tests: ``module`` (all versions) and ``linear``, gRPC + REST."""
    from tfship.server import ModelConfig, VersionPolicy

    models = [
        ModelConfig("module", str(module_base), VersionPolicy("all"), {"stable": 1, "canary": 2}),
        ModelConfig("linear", str(estimator_base)),
    ]
    srv = ModelServer(models, ServerOptions(port=0, rest_port=0, poll_seconds=0.2))
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="session")
def channel(server: ModelServer) -> Iterator[grpc.Channel]:
    """A plain channel to the shared server, with the 2 GiB limits TF Serving uses."""
    options = [
        ("grpc.max_send_message_length", 2**31 - 1),
        ("grpc.max_receive_message_length", 2**31 - 1),
    ]
    ch = grpc.insecure_channel(server.address, options=options)
    try:
        yield ch
    finally:
        ch.close()


@pytest.fixture(scope="session")
def stub(channel: grpc.Channel) -> Any:
    from tensorflow_serving.apis import prediction_service_pb2_grpc

    return prediction_service_pb2_grpc.PredictionServiceStub(channel)


@pytest.fixture(scope="session")
def model_stub(channel: grpc.Channel) -> Any:
    from tensorflow_serving.apis import model_service_pb2_grpc

    return model_service_pb2_grpc.ModelServiceStub(channel)
