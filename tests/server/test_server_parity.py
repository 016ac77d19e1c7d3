"""Requests TF Serving 2.15.1 answers, answered the same way: over gRPC (official stubs) and
plain HTTP, on a TF1 graph like TF Serving's half_plus_two and a TF2 model whose signatures
read different inputs.
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
from prometheus_client.parser import text_string_to_metric_families
from tensorflow_serving.apis import (
    inference_pb2,
    predict_pb2,
    prediction_service_pb2_grpc,
)

from tfship.cli import cli
from tfship.server import ModelConfig, ModelServer, ServerOptions

from .conftest import serve_process

pytestmark = pytest.mark.slow
METRICS_PATH = "/monitoring/prometheus/metrics"


def export_half_plus_two(base: Path) -> Path:
    """A TF1 graph like TF Serving's half_plus_two (x: [?, 1], y = 0.5 * x + 2), plus:

    * ``matmul``: x2 [?, 2] @ [[1], [1]] (a MatMul refuses a vector);
    * ``loose``: its signature says [?, 3] but the placeholder has no shape at all;
    * ``total``: the sum of x, a scalar output.
    """
    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [None, 1], name="x")
        a, b = v1.Variable(0.5, name="a"), v1.Variable(2.0, name="b")
        y = tf.add(a * x, b, name="y")
        x2 = v1.placeholder(tf.float32, [None, 2], name="x2")
        product = tf.matmul(x2, tf.constant([[1.0], [1.0]]), name="product")
        z = v1.placeholder(tf.float32, None, name="z")
        doubled = tf.multiply(z, 2.0, name="doubled")
        total = tf.reduce_sum(x, name="total")
        info = v1.saved_model.build_tensor_info
        loose_in = info(z)
        loose_in.tensor_shape.CopyFrom(tf.TensorShape([None, 3]).as_proto())
        predict = v1.saved_model.signature_constants.PREDICT_METHOD_NAME

        def signature(inputs: dict[str, Any], outputs: dict[str, Any]) -> Any:
            return v1.saved_model.build_signature_def(inputs, outputs, predict)

        signatures = {
            "serving_default": signature({"x": info(x)}, {"y": info(y)}),
            "matmul": signature({"x": info(x2)}, {"y": info(product)}),
            "loose": signature({"z": loose_in}, {"doubled": info(doubled)}),
            "total": signature({"x": info(x)}, {"total": info(total)}),
        }
        with v1.Session(graph=graph) as session:
            session.run(v1.global_variables_initializer())
            builder = v1.saved_model.Builder(str(base / "1"))
            builder.add_meta_graph_and_variables(session, ["serve"], signature_def_map=signatures)
            builder.save()
    return base


def export_two_inputs(base: Path) -> Path:
    """A TF2 model whose classify and regress signatures each read their own Example input."""
    spec = {"x": tf.io.FixedLenFeature([1], tf.float32)}

    class Model(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")])
        def classify(self, inputs: Any) -> dict[str, Any]:
            x = tf.io.parse_example(inputs, spec)["x"]
            scores = tf.concat([1.0 - tf.sigmoid(x), tf.sigmoid(x)], axis=1)
            classes = tf.tile(tf.constant([["neg", "pos"]]), [tf.shape(x)[0], 1])
            return {"scores": scores, "classes": classes}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")])
        def regress(self, inputs: Any) -> dict[str, Any]:
            return {"outputs": tf.io.parse_example(inputs, spec)["x"][:, 0] * 3.0}

    model = Model()
    tf.saved_model.save(
        model,
        str(base / "1"),
        signatures={
            "classify": model.classify,
            "regress": model.regress,
        },
    )
    return base


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("parity")
    return {
        "half_plus_two": export_half_plus_two(root / "half_plus_two"),
        "two_inputs": export_two_inputs(root / "two_inputs"),
    }


@pytest.fixture(scope="module")
def server(bases: dict[str, Path]) -> Iterator[ModelServer]:
    models = [ModelConfig(name, str(path)) for name, path in bases.items()]
    options = ServerOptions(port=0, rest_port=0, prometheus_path=METRICS_PATH)
    with ModelServer(models, options) as srv:
        yield srv


@pytest.fixture(scope="module")
def stub(server: ModelServer) -> Iterator[Any]:
    with grpc.insecure_channel(server.address) as channel:
        yield prediction_service_pb2_grpc.PredictionServiceStub(channel)


def predict(stub: Any, value: Any, signature: str = "", name: str = "x") -> Any:
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "half_plus_two"
    request.model_spec.signature_name = signature
    request.inputs[name].CopyFrom(tf.make_tensor_proto(np.asarray(value, np.float32)))
    return stub.Predict(request, timeout=30)


def http(server: ModelServer, path: str, body: Any = None) -> tuple[int, str]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{server.rest_url}{path}", data=data)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read().decode()


# 1. no shape pre-check ------------------------------------------------------------------------
def test_quickstart_request_over_rest(server: ModelServer) -> None:
    status, text = http(server, "/v1/models/half_plus_two:predict", {"instances": [1.0, 2.0, 5.0]})
    assert (status, json.loads(text)) == (200, {"predictions": [2.5, 3.0, 4.5]})


@pytest.mark.parametrize(
    ("value", "expected"),
    [([1.0, 2.0, 5.0], [2.5, 3.0, 4.5]), (3.0, 3.5), ([[1.0, 2.0], [3.0, 4.0]], [[2.5, 3.0], [3.5, 4.0]])],
    ids=["vector", "scalar", "matrix"],
)
def test_shapes_the_graph_accepts_run_over_grpc(stub: Any, value: Any, expected: Any) -> None:
    y = predict(stub, value).outputs["y"]
    assert [d.size for d in y.tensor_shape.dim] == list(np.shape(expected))
    np.testing.assert_allclose(tf.make_ndarray(y), expected)


def test_signature_shape_is_not_the_placeholder_shape(stub: Any) -> None:
    # the signature claims [?, 3]; the placeholder takes anything, and so does TF Serving
    doubled = predict(stub, [1.0, 2.0], "loose", "z").outputs["doubled"]
    np.testing.assert_allclose(tf.make_ndarray(doubled), [2.0, 4.0])


def test_an_op_that_refuses_the_shape_answers_with_its_own_error(stub: Any, server: ModelServer) -> None:
    with pytest.raises(grpc.RpcError) as info:
        predict(stub, [1.0, 2.0, 3.0], "matmul")
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = info.value.details()
    # MatMul's own words, which depend on the kernel this CPU gets (Eigen or oneDNN).
    assert details in (
        "In[0] ndims must be >= 2",
        "In[0] and In[1] has different ndims: [3] vs. [2,1]",
    ), details
    assert "\n" not in details and "[[" not in details and "expected shape" not in details
    status, text = http(
        server, "/v1/models/half_plus_two:predict", {"signature_name": "matmul", "instances": [1.0, 2.0, 3.0]}
    )
    assert (status, json.loads(text)["error"]) == (400, details)


def test_local_model_run_feeds_like_the_server(bases: dict[str, Path]) -> None:
    from tfship.loaders import load

    with load(bases["half_plus_two"] / "1") as model:
        np.testing.assert_allclose(
            model.run({"x": np.array([1.0, 2.0, 5.0], np.float32)})["y"], [2.5, 3.0, 4.5]
        )


# 2. MultiInference on TF2 signatures over different inputs -----------------------------------
def test_multi_inference_feeds_each_signature_its_own_input(stub: Any) -> None:
    request = inference_pb2.MultiInferenceRequest()
    for key, method in (("classify", "classify"), ("regress", "regress")):
        task = request.tasks.add(method_name=f"tensorflow/serving/{method}")
        task.model_spec.name, task.model_spec.signature_name = "two_inputs", key
    for value in (0.0, 2.0):
        request.input.example_list.examples.add().features.feature["x"].float_list.value.append(value)
    response = stub.MultiInference(request, timeout=30)
    classified, regressed = response.results
    assert classified.model_spec.signature_name == "classify"
    assert [c.label for c in classified.classification_result.classifications[1].classes] == ["neg", "pos"]
    score = classified.classification_result.classifications[1].classes[1].score
    assert score == pytest.approx(1 / (1 + np.exp(-2.0)), rel=1e-5)
    assert [r.value for r in regressed.regression_result.regressions] == [0.0, 6.0]
    assert regressed.model_spec.version.value == 1


# 3. REST error bodies are JSON ----------------------------------------------------------------
def test_rest_errors_with_quotes_are_json(server: ModelServer) -> None:
    name = 'it\'s "quoted"\t'
    status, text = http(
        server, "/v1/models/half_plus_two:predict", {"signature_name": name, "instances": [1.0]}
    )
    assert status == 400
    # rapidjson's escapes: \" and \t; the single quote stays as it is
    escaped = r"\"it" + "'" + r"s \"quoted\"\t\""
    assert text == '{\n    "error": "Serving signature name: ' + escaped + ' not found in signature def"\n}'
    assert json.loads(text) == {"error": f'Serving signature name: "{name}" not found in signature def'}


# 4. every output carries tensor_shape ----------------------------------------------------------
def test_scalar_outputs_carry_an_empty_tensor_shape(stub: Any) -> None:
    total = predict(stub, [[1.0], [2.0]], "total").outputs["total"]
    assert total.HasField("tensor_shape") and list(total.tensor_shape.dim) == []
    assert list(total.float_val) == [3.0] and total.tensor_content == b""


# 5. start-up errors read as TF Serving's -------------------------------------------------------
def test_bad_model_config_reads_as_tf_serving(tmp_path: Path) -> None:
    config = tmp_path / "models.config"
    config.write_text('model_config_list { config { name: "m" base_pth: "/x" } }')
    result = CliRunner().invoke(cli, ["serve", "--model_config_file", str(config)])
    assert result.exit_code == 2
    assert result.output.startswith(
        "Error: Error parsing text-format tensorflow.serving.ModelServerConfig: 1:40: "
    )
    assert result.output.count("\n") == 1 and "Traceback" not in result.output


# 6. TF Serving's flags ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--use_alts_credentials=true", "--saved_model_tags", "serve"],
            "TF Serving flags not supported by tfship serve: --use_alts_credentials, --saved_model_tags",
        ),
        (["--no_such_flag=1"], "unknown flag --no_such_flag"),
        (["--enable_batching=maybe"], "--enable_batching=maybe: expected true or false"),
    ],
)
def test_unknown_and_unsupported_flags_are_one_line(args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["serve", "--port=0", *args])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and message in result.output, result.output


def test_tf_serving_command_line_runs_as_is(bases: dict[str, Path], tmp_path: Path) -> None:
    monitoring = tmp_path / "monitoring.config"
    monitoring.write_text(f'prometheus_config {{ enable: true, path: "{METRICS_PATH}" }}')
    batching = tmp_path / "batching.config"
    batching.write_text(
        "max_batch_size { value: 16 } batch_timeout_micros { value: 500 } num_batch_threads { value: 4 }"
    )
    with serve_process(
        "--port=0",
        "--rest_api_port",
        "0",
        "--model_name=half_plus_two",
        f"--model_base_path={bases['half_plus_two']}",
        "--enable_batching",
        f"--batching_parameters_file={batching}",
        f"--monitoring_config_file={monitoring}",
        "--rest_api_timeout_in_ms=5000",
        "--file_system_poll_wait_seconds",
        "2",
        "--grpc_channel_arguments",
        "grpc.max_concurrent_streams=100",
        "--tensorflow_intra_op_parallelism=2",
        "--grpc_max_threads=8",
    ) as served:
        url = served.info["rest"]
        body = json.dumps({"instances": [1.0, 2.0, 5.0]}).encode()
        with urllib.request.urlopen(f"{url}/v1/models/half_plus_two:predict", body, 30) as reply:
            assert json.loads(reply.read()) == {"predictions": [2.5, 3.0, 4.5]}
        with urllib.request.urlopen(f"{url}{METRICS_PATH}", timeout=30) as reply:
            assert reply.headers["Content-Type"].startswith("text/plain")
            assert ":tensorflow:serving:request_count" in reply.read().decode()
    # what tfship's batching cannot honour is named, not dropped silently
    assert f"{batching}: num_batch_threads: no counterpart in tfship serve's batching" in served.stderr


# 7. monitoring ------------------------------------------------------------------------------------
def test_prometheus_page_counts_requests_per_model_api_and_status(stub: Any, server: ModelServer) -> None:
    predict(stub, [1.0])
    assert http(server, "/v1/models/half_plus_two:predict", {"instances": [1.0]})[0] == 200
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "nope"
    with pytest.raises(grpc.RpcError):
        stub.Predict(request, timeout=30)
    status, text = http(server, METRICS_PATH)
    assert status == 200
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }
    count = ":tensorflow:serving:request_count"
    assert samples[(count, (("model_name", "half_plus_two"), ("status", "OK")))] >= 1
    assert samples[(count, (("model_name", "nope"), ("status", "NOT_FOUND")))] == 1
    latency = ":tensorflow:serving:request_latency_count"
    key = (("API", "Predict"), ("entrypoint", "GRPC"), ("model_name", "half_plus_two"))
    assert samples[(latency, key)] >= 1
    rest = (("API", "Predict"), ("entrypoint", "REST"), ("model_name", "half_plus_two"))
    assert samples[(latency, rest)] >= 1
    bucket = ":tensorflow:serving:request_latency_bucket"
    assert samples[(bucket, (*key[:2], ("le", "+Inf"), key[2]))] == samples[(latency, key)]
    status, text = http(server, "/monitoring/other")
    assert status == 404
