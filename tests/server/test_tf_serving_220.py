"""What TF Serving 2.16 to 2.20 changed, against real servers: Predict answers as
``tensor_content`` (``--enable_serialization_as_tensor_content``), read by TensorFlow, the
official stubs and tfship's client; ``PredictRequest.request_options``; the REST JSON reader
of 2.18 over HTTP; 2.20's model-config rules; no retry of a load its caller calls permanent.

TF Serving 2.20.0's ``tensorflow_model_server_test.py`` has the cases of 2.15.1's (only its
config-reload wait grew to 10 s); ``util/json_tensor_test.cc`` added the two deep-nesting
cases, ported here over HTTP and in tests/wire/test_wire_json_220.py.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
import tensorflow as tf
from click.testing import CliRunner
from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

from tfship.cli import cli
from tfship.serve_client import ServingClient
from tfship.server import LocalServerError, ModelConfig, ModelServer, ServerOptions, read_config_file

from .conftest import export_module, serve_process

pytestmark = [pytest.mark.slow]
X = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
Y = X @ np.array([[1.0], [2.0]], np.float32) + 1.0
MODES = ["fields", "content"]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tfs220") / "m"
    root.mkdir()
    export_module(root, 1)
    return root


@pytest.fixture(scope="module")
def servers(base: Path) -> Iterator[dict[str, ModelServer]]:
    """One server answering with typed fields (the default), one with tensor_content."""
    started: dict[str, ModelServer] = {}
    try:
        for mode in MODES:
            options = ServerOptions(port=0, rest_port=0, tensor_content=mode == "content")
            started[mode] = ModelServer([ModelConfig("m", str(base))], options).start()
        yield started
    finally:
        for server in started.values():
            server.stop()


def official_predict(server: ModelServer, signature: str, name: str, value: Any) -> Any:
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "m"
    request.model_spec.signature_name = signature
    request.inputs[name].CopyFrom(tf.make_tensor_proto(value))
    with grpc.insecure_channel(server.address) as channel:
        return prediction_service_pb2_grpc.PredictionServiceStub(channel).Predict(request, timeout=30)


@pytest.mark.parametrize("mode", MODES)
def test_predict_answers_in_the_chosen_encoding(servers: dict[str, ModelServer], mode: str) -> None:
    response = official_predict(servers[mode], "", "x", X)
    for alias, expected in [("y", Y), ("doubled", X * 2)]:
        tensor = response.outputs[alias]
        assert tensor.dtype == tf.float32.as_datatype_enum
        assert [d.size for d in tensor.tensor_shape.dim] == list(expected.shape)
        if mode == "content":  # Tensor::AsProtoTensorContent: the values' bytes, no float_val
            assert tensor.tensor_content == expected.astype("<f4").tobytes() and not tensor.float_val
        else:
            assert not tensor.tensor_content and list(tensor.float_val) == expected.ravel().tolist()
        np.testing.assert_array_equal(tf.make_ndarray(tensor), expected)


@pytest.mark.parametrize("mode", MODES)
def test_string_and_integer_outputs_read_back_by_tensorflows_own_decoder(
    servers: dict[str, ModelServer], mode: str
) -> None:
    words = np.array([b"ab", b"", "é".encode(), b"\xff" * 300], dtype=object)
    response = official_predict(servers[mode], "strings", "text", words)
    upper = response.outputs["upper"]
    assert bool(upper.tensor_content) == (mode == "content")
    # tf.make_ndarray cannot read strings from tensor_content; TensorFlow's C++ FromProto can
    decoded = tf.io.parse_tensor(upper.SerializeToString(), out_type=tf.string).numpy()
    assert decoded.tolist() == [w.upper() for w in words]
    lengths = tf.io.parse_tensor(response.outputs["length"].SerializeToString(), out_type=tf.int32)
    assert lengths.numpy().tolist() == [2, 0, 2, 300]


@pytest.mark.parametrize("mode", MODES)
def test_tfships_client_decodes_either_answer(servers: dict[str, ModelServer], mode: str) -> None:
    with ServingClient(servers[mode].address, timeout=30) as client:
        result = client.predict("m", {"x": X})
        np.testing.assert_array_equal(result.as_numpy("y"), Y)
        assert result.as_numpy("y").dtype == np.float32
        words = client.predict("m", {"text": np.array([b"ab", b"\x00z"], dtype=object)}, signature="strings")
        assert words.as_numpy("upper").tolist() == [b"AB", b"\x00Z"]
        assert words.as_numpy("length").tolist() == [2, 2]
        empty = client.predict("m", {"x": np.zeros((0, 2), np.float32)})
        assert empty.as_numpy("y").shape == (0, 1)


@pytest.mark.parametrize("mode", MODES)
def test_the_asyncio_client_decodes_either_answer(servers: dict[str, ModelServer], mode: str) -> None:
    import asyncio

    from tfship.serve_client import AsyncServingClient

    async def run() -> tuple[Any, Any]:
        async with AsyncServingClient(servers[mode].address, timeout=30) as client:
            numbers = await client.predict("m", {"x": X})
            words = await client.predict("m", {"text": np.array([b"q"], dtype=object)}, signature="strings")
            return numbers.as_numpy("y"), words.as_numpy("upper")

    y, upper = asyncio.run(run())
    np.testing.assert_array_equal(y, Y)
    assert upper.tolist() == [b"Q"]


def test_the_rest_api_answers_the_same_in_both_modes(servers: dict[str, ModelServer]) -> None:
    bodies = {
        mode: rest(server, "/v1/models/m:predict", {"instances": X.tolist()})
        for mode, server in servers.items()
    }
    assert bodies["fields"] == bodies["content"]
    assert bodies["fields"][0] == 200 and json.loads(bodies["fields"][1])["predictions"][0]["y"] == [6.0]


def test_request_options_are_read_and_the_call_answered(servers: dict[str, ModelServer]) -> None:
    """PredictRequest.request_options (field 7, TF Serving 2.17+) as a 2.20 client writes it:
    client_id, deterministic_mode FIXED_DECODER_SLOT, return_stoptokens [1, 2], max_cache_length."""
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "m"
    request.inputs["x"].CopyFrom(tf.make_tensor_proto(X))
    options = b"\x0a\x08checkout" + b"\x10\x01" + b"\x22\x02\x01\x02" + b"\x30\x80\x01"
    data = request.SerializeToString() + b"\x3a" + bytes([len(options)]) + options
    if "RequestOptions" in predict_pb2.PredictRequest.DESCRIPTOR.nested_types_by_name:  # a 2.17+ API
        parsed = predict_pb2.PredictRequest.FromString(data)
        assert parsed.request_options.client_id == b"checkout"
        assert list(parsed.request_options.return_stoptokens) == [1, 2]
    with grpc.insecure_channel(servers["fields"].address) as channel:
        call = channel.unary_unary(
            "/tensorflow.serving.PredictionService/Predict",
            request_serializer=lambda raw: raw,
            response_deserializer=predict_pb2.PredictResponse.FromString,
        )
        response = call(data, timeout=30)
    np.testing.assert_array_equal(tf.make_ndarray(response.outputs["y"]), Y)


# ------------------------------------------------------------ json_tensor_test.cc 2.20, over HTTP


def rest(server: ModelServer, path: str, body: Any) -> tuple[int, str]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(f"{server.rest_url}{path}", data=data)
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_deeply_nested_well_formed_over_http(servers: dict[str, ModelServer]) -> None:
    body = b'{"instances": [[1.0, 2.0]], "nested": ' + b"[" * 500_000 + b"]" * 500_000 + b"}"
    status, text = rest(servers["fields"], "/v1/models/m:predict", body)
    assert (status, json.loads(text)) == (200, {"predictions": [{"y": [6.0], "doubled": [2.0, 4.0]}]})


def test_deeply_nested_malformed_over_http(servers: dict[str, ModelServer]) -> None:
    body = b'{"signature_name": ' + b"[" * 500_000 + b"]" * 500_000 + b', "instances": [[1.0, 2.0]]}'
    status, text = rest(servers["fields"], "/v1/models/m:predict", body)
    error = json.loads(text)["error"]
    assert status == 400 and error.endswith("'signature_name' key must be a string value.")
    assert len(error) < 400  # the quoted value stops at 256 bytes


def test_what_follows_the_body_is_not_read(servers: dict[str, ModelServer]) -> None:
    body = json.dumps({"instances": X.tolist()}).encode() + b" }} not json"
    status, text = rest(servers["fields"], "/v1/models/m:predict", body)
    assert status == 200 and json.loads(text)["predictions"][1]["y"] == [12.0]


def test_a_long_bad_value_is_quoted_up_to_256_bytes(servers: dict[str, ModelServer]) -> None:
    body = {"instances": [[1.0, 2.0]], "signature_name": list(range(2000))}
    status, text = rest(servers["fields"], "/v1/models/m:predict", body)
    error = json.loads(text)["error"]
    assert status == 400
    assert error.startswith('JSON Value: {\n    "instances": [[1.0, 2.0]],\n    "signature_name": [0, 1, 2, ')
    assert "1999" not in error and len(error.encode()) < 256 + 120


# ------------------------------------------------------------ flags and config files


def test_the_tf_serving_flag_turns_tensor_content_on(base: Path) -> None:
    args = [f"--model_base_path={base}", "--model_name=m", "--port=0"]
    with serve_process(*args, "--enable_serialization_as_tensor_content=true") as running:
        server_address = running.info["grpc"]
        request = predict_pb2.PredictRequest()
        request.model_spec.name = "m"
        request.inputs["x"].CopyFrom(tf.make_tensor_proto(X))
        with grpc.insecure_channel(server_address) as channel:
            response = prediction_service_pb2_grpc.PredictionServiceStub(channel).Predict(request, timeout=30)
    assert response.outputs["y"].tensor_content == Y.astype("<f4").tobytes()


def test_a_flag_tfship_cannot_honour_is_refused_in_one_line(base: Path) -> None:
    result = CliRunner().invoke(
        cli, ["serve", f"--model_base_path={base}", "--xla_gpu_compilation_enabled=true"]
    )
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "Error: TF Serving flag not supported by tfship serve: --xla_gpu_compilation_enabled"
    ]


def test_model_type_is_read_as_tf_serving_2_20_reads_it(tmp_path: Path, base: Path) -> None:
    def config(fields: str) -> Path:
        path = tmp_path / "models.config"
        path.write_text(f'model_config_list {{ config {{ name: "m" base_path: "{base}" {fields} }} }}')
        return path

    assert [m.name for m in read_config_file(config("model_type: TENSORFLOW"))] == ["m"]
    with pytest.raises(Exception, match="Illegal setting both ModelServerConfig::model_type"):
        read_config_file(config('model_type: TENSORFLOW model_platform: "tensorflow"'))
    with pytest.raises(Exception, match="model_type choice 2 not supported"):
        read_config_file(config("model_type: OTHER"))


@pytest.mark.parametrize("retry", [True, False])
def test_a_load_error_called_permanent_is_not_retried(tmp_path: Path, retry: bool) -> None:
    """ServerCore::Options::should_retry_model_load (TF Serving 2.18): asked after each failure."""
    broken = tmp_path / "broken" / "1"
    broken.mkdir(parents=True)
    (broken / "saved_model.pb").write_bytes(b"not a SavedModel")
    asked: list[tuple[grpc.StatusCode, str]] = []

    def should_retry(code: grpc.StatusCode, message: str) -> bool:
        asked.append((code, message))
        return retry

    options = ServerOptions(
        port=0, max_load_retries=2, load_retry_interval_s=0.05, should_retry_load=should_retry
    )
    with pytest.raises(LocalServerError, match="did not become available|broken"):
        ModelServer([ModelConfig("broken", str(broken.parent))], options).start()
    assert len(asked) == (2 if retry else 1)
    assert all(isinstance(code, grpc.StatusCode) and message for code, message in asked)


def test_the_first_load_wait_ends_at_its_timeout(tmp_path: Path, base: Path) -> None:
    """ServerCore::Options::servable_state_waiter_timeout (TF Serving 2.17): a model whose
    load keeps failing (retried every 30 s) ends start-up after the timeout, not the retries."""
    import time

    broken = tmp_path / "broken" / "1"
    broken.mkdir(parents=True)
    (broken / "saved_model.pb").write_bytes(b"not a SavedModel")
    models = [ModelConfig("broken", str(broken.parent))]
    options = ServerOptions(port=0, max_load_retries=5, load_retry_interval_s=30, load_wait_timeout_s=3)
    started = time.monotonic()
    with pytest.raises(LocalServerError) as info:
        ModelServer(models, options).start()
    assert time.monotonic() - started < 25
    assert (
        str(info.value) == "1 model(s) did not become available: {{name: broken version: 1}, } (waited 3 s)"
    )
    with ModelServer([ModelConfig("m", str(base))], ServerOptions(port=0, load_wait_timeout_s=60)) as server:
        with ServingClient(server.address, timeout=30) as client:
            np.testing.assert_array_equal(client.predict("m", {"x": X}).as_numpy("y"), Y)
