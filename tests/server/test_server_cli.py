"""``tfship serve`` end to end and the public names of the server package."""

from __future__ import annotations

from pathlib import Path

import grpc
import numpy as np
import pytest
import tensorflow as tf
from click.testing import CliRunner
from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

import tfship.server as server_package
from tfship.cli import cli

from .conftest import serve_process

pytestmark = pytest.mark.slow


def test_server_names_are_exported() -> None:
    server_names = {
        "BatchingOptions",
        "LocalServerError",
        "ModelConfig",
        "ModelServer",
        "RequestLogOptions",
        "ServerConfigError",
        "ServerOptions",
        "StateEvent",
        "SslConfig",
        "VersionPolicy",
        "read_config_file",
    }
    assert server_names == set(server_package.__all__)
    assert server_package.__all__ == sorted(server_package.__all__)
    for name in server_names:
        assert getattr(server_package, name).__name__ == name


def test_serve_runs_until_sigterm(module_base: Path) -> None:
    args = [
        "--model-base-path",
        str(module_base),
        "--model-name",
        "module",
        "--port",
        "0",
        "--rest-port",
        "0",
    ]
    with serve_process(*args) as served:
        info = served.info
        assert info["models"][0]["available_versions"] == [2]
        assert info["grpc"].startswith("127.0.0.1:") and info["grpc"] != "127.0.0.1:0"
        with grpc.insecure_channel(info["grpc"]) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            request = predict_pb2.PredictRequest()
            request.model_spec.name = "module"
            request.inputs["x"].CopyFrom(tf.make_tensor_proto(np.zeros([1, 2], np.float32)))
            assert stub.Predict(request, timeout=30).model_spec.version.value == 2
    assert "stopped" in served.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model-base-path", "/does/not/exist"], "Could not find base path /does/not/exist"),
        ([], "nothing to serve"),
        (["--model-base-path", ".", "--version-policy", "newest"], "version policy 'newest'"),
    ],
)
def test_serve_errors_are_one_line(args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["serve", "--port", "0", *args])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_serve_reads_a_model_config_file(tmp_path: Path) -> None:
    config = tmp_path / "models.config"
    config.write_text('model_config_list { config { name: "m" base_path: "relative/path" } }')
    result = CliRunner().invoke(cli, ["serve", "--port", "0", "--model-config", str(config)])
    assert result.exit_code == 2
    assert "Expected model m to have an absolute path or URI; got base_path()=relative/path" in result.output
