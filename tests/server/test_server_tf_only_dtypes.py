"""A served signature of one of TensorFlow's float8 or int4 types: the Open Inference Protocol
names the type and says it has no V2 datatype, and a Predict tensor of the type is refused in
one line that names it, never decoded to a wrong value.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

from tfship.server import ModelConfig, ModelServer, ServerOptions

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

# Types TensorFlow 2.15 already has: signature key -> DataType name.
TYPES = {"float8_e4m3fn": "DT_FLOAT8_E4M3FN", "int4": "DT_INT4"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModelServer]:
    import tensorflow as tf

    base = tmp_path_factory.mktemp("tf_only_dtypes")
    module = tf.Module()
    signatures = {}
    for key in TYPES:

        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.dtypes.as_dtype(key), name="x")])
        def echo(x: Any) -> dict[str, Any]:
            return {"y": tf.identity(x)}

        signatures[key] = echo.get_concrete_function()
    tf.saved_model.save(module, str(base / "1"), signatures=signatures)
    srv = ModelServer([ModelConfig("m", str(base))], ServerOptions(port=0, rest_port=0, poll_seconds=0))
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def _post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.mark.parametrize("key", sorted(TYPES))
def test_v2_metadata_and_requests_say_there_is_no_v2_datatype(server: ModelServer, key: str) -> None:
    url = f"{server.rest_url}/v2/models/m"
    with urllib.request.urlopen(f"{url}?signature_name={key}", timeout=60) as answer:
        metadata = json.loads(answer.read())
    assert metadata["parameters"]["signature_name"] == key
    assert metadata["inputs"] == [{"name": "x", "datatype": TYPES[key], "shape": [-1, 2]}]
    body = {
        "parameters": {"signature_name": key},
        "inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1.0, 2.0]}],
    }
    status, answer = _post(f"{url}/infer", body)
    assert status == 400
    assert answer["error"] == (
        f"input 'x' has datatype FP32, but signature '{key}' takes {TYPES[key]} "
        "(no Open Inference Protocol datatype)"
    )


@pytest.mark.parametrize("key", sorted(TYPES))
def test_a_predict_tensor_of_the_type_is_refused_by_name(server: ModelServer, key: str) -> None:
    from tensorflow.core.framework import types_pb2

    request = predict_pb2.PredictRequest()
    request.model_spec.name, request.model_spec.signature_name = "m", key
    tensor = request.inputs["x"]
    tensor.dtype = types_pb2.DataType.Value(TYPES[key])
    tensor.tensor_shape.dim.add(size=1)
    tensor.tensor_shape.dim.add(size=2)
    tensor.tensor_content = b"\x01\x02"  # TensorFlow's bytes: one a value
    with grpc.insecure_channel(server.address) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        with pytest.raises(grpc.RpcError) as caught:
            stub.Predict(request, timeout=60)
    details = caught.value.details() or ""
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, details
    assert "\n" not in details
    assert f"({key}, one of TensorFlow's float8, float4, int4 and int2 types" in details
