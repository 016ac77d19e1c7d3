"""Request logging from a TF Serving 2.20 model config: real servers write PredictionLog files
that TensorFlow's TFRecord reader, TF Serving's own PredictionLog message, tfship's readers and
``tfship promote --requests`` read back."""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
import tensorflow as tf
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families
from tensorflow_serving.apis import (
    classification_pb2,
    inference_pb2,
    predict_pb2,
    prediction_log_pb2,
    prediction_service_pb2_grpc,
    regression_pb2,
)

from tfship.cli import cli
from tfship.inspect import read_warmup
from tfship.server import (
    ModelServer,
    RequestLogOptions,
    ServerConfigError,
    ServerOptions,
    read_config_file,
)

METRICS = "/monitoring/prometheus/metrics"


def export_model(base: Path) -> Path:
    """Version 1 of a TF2 model with a Predict, a Classify and a Regress signature."""
    spec = {"x": tf.io.FixedLenFeature([1], tf.float32, default_value=[0.0])}

    class Model(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32, name="x")])
        def serve(self, x: Any) -> dict[str, Any]:
            return {"y": tf.reduce_sum(x, axis=1, keepdims=True) + 1.0}

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
    signatures = {"serving_default": model.serve, "classify": model.classify, "regress": model.regress}
    tf.saved_model.save(model, str(base / "1"), signatures=signatures)
    return base


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_model(tmp_path_factory.mktemp("logged") / "m")


def model_entry(base: Path, prefix: Path, body: str, name: str = "m") -> str:
    """One model of a config as TF Serving 2.20 reads it, with a logging_config."""
    return f"""
  config {{
    name: "{name}"
    base_path: "{base}"
    model_platform: "tensorflow"
    logging_config {{
      log_collector_config {{ type: "" filename_prefix: "{prefix}" }}
      {body}
    }}
  }}"""


def config_text(base: Path, prefix: Path, body: str = "sampling_config { sampling_rate: 1.0 }") -> str:
    return "model_config_list {" + model_entry(base, prefix, body) + "\n}\n"


@contextmanager
def logged_server(tmp_path: Path, text: str, **options: Any) -> Iterator[ModelServer]:
    path = tmp_path / "models.config"
    path.write_text(text)
    opts = ServerOptions(port=0, rest_port=0, prometheus_path=METRICS, **options)
    with ModelServer(read_config_file(path), opts) as server:
        server.wait_until_available("m", timeout=60)
        yield server


def log_files(prefix: Path, suffix: str = ".tfrecord") -> list[Path]:
    stem = f"{prefix.name}-{socket.gethostname()}-{os.getpid()}-"
    return sorted(p for p in prefix.parent.iterdir() if p.name.startswith(stem) and p.name.endswith(suffix))


def read_logs(files: list[Path]) -> list[Any]:
    """The records through TensorFlow's reader, parsed by TF Serving's own message."""
    dataset = tf.data.TFRecordDataset([str(p) for p in files])
    return [prediction_log_pb2.PredictionLog.FromString(r.numpy()) for r in dataset]


def predict_request(value: list[list[float]]) -> Any:
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "m"
    request.inputs["x"].CopyFrom(tf.make_tensor_proto(np.asarray(value, np.float32)))
    return request


def example_input(target: Any, values: list[float]) -> None:
    for value in values:
        example = target.example_list.examples.add()
        example.features.feature["x"].float_list.value.append(value)


def post(server: ModelServer, path: str, body: Any) -> Any:
    request = urllib.request.Request(f"{server.rest_url}{path}", data=json.dumps(body).encode())
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def log_counts(server: ModelServer) -> dict[str, float]:
    with urllib.request.urlopen(f"{server.rest_url}{METRICS}", timeout=30) as answer:
        page = answer.read().decode()
    return {
        sample.labels["status_code"]: sample.value
        for family in text_string_to_metric_families(page)
        for sample in family.samples
        if sample.name == ":tensorflow:serving:request_log_count"
    }


def test_every_request_kind_of_both_apis_is_logged_and_read_back(base: Path, tmp_path: Path) -> None:
    prefix = tmp_path / "logs" / "requests"
    body = """sampling_config {
        sampling_rate: 1.0
        per_task_sampling_configs { dc: "elsewhere" sampling_rate: 0.0 }
      }"""
    sent: list[tuple[str, Any, Any]] = []
    with logged_server(tmp_path, config_text(base, prefix, body)) as server:
        with grpc.insecure_channel(server.address) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            request = predict_request([[1.0, 2.0], [3.0, 4.0]])
            sent.append(("predict_log", request, stub.Predict(request, timeout=30)))
            classify = classification_pb2.ClassificationRequest()
            classify.model_spec.name, classify.model_spec.signature_name = "m", "classify"
            example_input(classify.input, [0.5, -1.0])
            sent.append(("classify_log", classify, stub.Classify(classify, timeout=30)))
            regress = regression_pb2.RegressionRequest()
            regress.model_spec.name, regress.model_spec.signature_name = "m", "regress"
            example_input(regress.input, [2.0])
            sent.append(("regress_log", regress, stub.Regress(regress, timeout=30)))
            multi = inference_pb2.MultiInferenceRequest()
            for key, method in (("classify", "classify"), ("regress", "regress")):
                task = multi.tasks.add(method_name=f"tensorflow/serving/{method}")
                task.model_spec.name, task.model_spec.signature_name = "m", key
            example_input(multi.input, [1.0])
            sent.append(("multi_inference_log", multi, stub.MultiInference(multi, timeout=30)))
        rest_predict = post(server, "/v1/models/m:predict", {"instances": [[5.0, 6.0]]})
        rest_regress = post(
            server, "/v1/models/m:regress", {"signature_name": "regress", "examples": [{"x": 4.0}]}
        )
        assert rest_predict == {"predictions": [[12.0]]} and rest_regress == {"results": [12.0]}
        counts = log_counts(server)  # written by now or still queued: the page may lag, never lead
        assert counts.get("OK", 0) <= 6 and "RESOURCE_EXHAUSTED" not in counts
    files = log_files(prefix)
    assert len(files) == 1
    logs = read_logs(files)
    assert [log.WhichOneof("log_type") for log in logs] == [
        "predict_log",
        "classify_log",
        "regress_log",
        "multi_inference_log",
        "predict_log",
        "regress_log",
    ]
    for log, (kind, request, response) in zip(logs, sent):
        assert getattr(log, kind).request == request
        assert getattr(log, kind).response == response
    for log, signature in zip(
        logs, ["serving_default", "classify", "regress", "", "serving_default", "regress"]
    ):
        meta = log.log_metadata
        assert (meta.model_spec.name, meta.model_spec.version.value) == ("m", 1)
        assert meta.model_spec.signature_name == signature
        assert meta.sampling_config.sampling_rate == 1.0
        assert list(meta.saved_model_tags) == ["serve"]
        assert abs(meta.timestamp_secs - time.time()) < 600
    rest_log = logs[4].predict_log
    assert tf.make_ndarray(rest_log.request.inputs["x"]).tolist() == [[5.0, 6.0]]
    assert tf.make_ndarray(rest_log.response.outputs["y"]).tolist() == [[12.0]]
    # tfship's own reader (inspect, warmup files) reads the same records
    assert [log.WhichOneof("log_type") for log in read_warmup(files[0])][:2] == [
        "predict_log",
        "classify_log",
    ]


def test_promote_replays_a_request_log(base: Path, tmp_path: Path) -> None:
    prefix = tmp_path / "requests"
    with logged_server(tmp_path, config_text(base, prefix)) as server:
        with grpc.insecure_channel(server.address) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            for row in range(5):
                stub.Predict(predict_request([[row, 1.0]]), timeout=30)
        post(server, "/v1/models/m:predict", {"instances": [[7.0, 8.0], [9.0, 1.0]]})
    (log,) = log_files(prefix)
    serving = tmp_path / "serving"
    shutil.copytree(base, serving)
    candidate = shutil.copytree(base / "1", tmp_path / "candidate")
    args = ["promote", str(candidate), "--to", str(serving), "--requests", str(log), "--dry-run"]
    result = CliRunner().invoke(cli, [*args, "--latency-calls", "5", "--max-latency-ratio", "100"])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert f"answered 6/6 requests from {log}" in result.stdout
    assert f"7 rows from {log}: max diff 0 " in result.stdout


def test_sampling_zero_logs_nothing_and_a_rate_logs_about_that_share(base: Path, tmp_path: Path) -> None:
    none, half = tmp_path / "none" / "r", tmp_path / "half" / "r"
    entries = model_entry(base, none, "sampling_config { sampling_rate: 0.0 }") + model_entry(
        base, half, "sampling_config { sampling_rate: 0.5 }", name="h"
    )
    text = "model_config_list {" + entries + "\n}\n"
    sent = 300
    with logged_server(tmp_path, text) as server:
        with grpc.insecure_channel(server.address) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            for name in ("m", "h"):
                for _ in range(sent):
                    request = predict_request([[1.0, 2.0]])
                    request.model_spec.name = name
                    stub.Predict(request, timeout=30)
    assert read_logs(log_files(none)) == []
    logged = read_logs(log_files(half))
    # binomial(300, 0.5): mean 150, sd 8.7; 6 sd either side
    assert 98 <= len(logged) <= 202, len(logged)
    assert {log.log_metadata.sampling_config.sampling_rate for log in logged} == {0.5}


def test_per_task_sampling_picks_the_first_rule_of_this_task(base: Path, tmp_path: Path) -> None:
    prefix = tmp_path / "r"
    body = """sampling_config {
        sampling_rate: 0.0
        per_task_sampling_configs { dc: "aa" task_index: 1 sampling_rate: 0.0 }
        per_task_sampling_configs { dc: "aa" sampling_rate: 1.0 }
      }"""
    options = {"request_log": RequestLogOptions(dc="aa", task_index=0)}
    with logged_server(tmp_path, config_text(base, prefix, body), **options) as server:
        with grpc.insecure_channel(server.address) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            for _ in range(3):
                stub.Predict(predict_request([[1.0, 2.0]]), timeout=30)
    logs = read_logs(log_files(prefix))
    assert len(logs) == 3 and logs[0].log_metadata.sampling_config.sampling_rate == 1.0


def test_files_rotate_by_size_and_a_restart_appends_to_the_last_one(base: Path, tmp_path: Path) -> None:
    prefix = tmp_path / "r"
    options = {"request_log": RequestLogOptions(max_file_bytes=1000)}
    for rounds in (30, 5):
        with logged_server(tmp_path, config_text(base, prefix), **options) as server:
            with grpc.insecure_channel(server.address) as channel:
                stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
                for row in range(rounds):
                    stub.Predict(predict_request([[float(row), 0.0]]), timeout=30)
    files = log_files(prefix)
    assert len(files) >= 4 and all(0 < f.stat().st_size <= 1000 for f in files), files
    logs = read_logs(files)
    sent = [float(row) for row in range(30)] + [float(row) for row in range(5)]
    assert [tf.make_ndarray(log.predict_log.request.inputs["x"])[0, 0] for log in logs] == sent


def test_a_full_queue_drops_and_counts_and_never_blocks_a_request(base: Path, tmp_path: Path) -> None:
    prefix = tmp_path / "r"
    # the first file is a pipe nobody reads yet: the writer waits in its open() like on a hung disk
    pipe = Path(f"{prefix}-{socket.gethostname()}-{os.getpid()}-00000.tfrecord")
    os.mkfifo(pipe)
    sent, queued = 40, 4
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_bytes()))
    options = {"request_log": RequestLogOptions(queue_records=queued)}
    with logged_server(tmp_path, config_text(base, prefix), **options) as server:
        with grpc.insecure_channel(server.address) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            for row in range(sent):  # each would wait for its timeout if logging could block
                answer = stub.Predict(predict_request([[float(row), 1.0]]), timeout=30)
                assert tf.make_ndarray(answer.outputs["y"]).tolist() == [[row + 2.0]]
        counts = log_counts(server)
        assert counts.get("OK", 0) == 0, counts  # nothing written while the writer waits
        dropped = int(counts["RESOURCE_EXHAUSTED"])
        assert sent - 2 * queued - 1 <= dropped < sent, counts
        reader.start()  # now the queued records get written
    reader.join(timeout=60)
    kept = tmp_path / "kept.tfrecord"
    kept.write_bytes(received[0])
    assert len(read_logs([kept])) == sent - dropped


def test_jsonl_collector_writes_one_prediction_log_per_line(base: Path, tmp_path: Path) -> None:
    from google.protobuf import json_format

    prefix = tmp_path / "r"
    text = config_text(base, prefix).replace('type: ""', 'type: "jsonl"')
    with logged_server(tmp_path, text) as server:
        with grpc.insecure_channel(server.address) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            request = predict_request([[1.0, 2.0]])
            response = stub.Predict(request, timeout=30)
    (path,) = log_files(prefix, ".jsonl")
    (line,) = path.read_text().splitlines()
    log = json_format.ParseDict(json.loads(line), prediction_log_pb2.PredictionLog())
    assert log.predict_log.request == request and log.predict_log.response == response
    assert json.loads(line)["log_metadata"]["model_spec"]["name"] == "m"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            'log_collector_config { type: "bigquery" filename_prefix: "/tmp/r" }',
            'logging_config.log_collector_config.type "bigquery" is not supported; expected ""',
        ),
        (
            'log_collector_config { filename_prefix: "" }',
            "logging_config.log_collector_config.filename_prefix is empty",
        ),
        (
            'log_collector_config { filename_prefix: "/tmp/r" } sampling_config { sampling_rate: 1.5 }',
            "logging_config.sampling_config.sampling_rate 1.5: expected a number from 0 to 1",
        ),
        (
            'log_collector_config { filename_prefix: "/tmp/r" } sampling_config { attributes: 1 }',
            "logging_config.sampling_config.attributes 1 is not supported",
        ),
        (
            'log_collector_config { filename_prefix: "/tmp/r" } custom_logging_config { '
            "[type.googleapis.com/tensorflow.serving.SamplingConfig] { sampling_rate: 1 } }",
            "logging_config.custom_logging_config (type.googleapis.com/tensorflow.serving."
            "SamplingConfig) is not supported",
        ),
    ],
)
def test_what_cannot_be_honoured_is_refused_in_one_line(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "models.config"
    text = f'model_config_list {{ config {{ name: "m" base_path: "/srv/m" logging_config {{ {body} }} }} }}'
    path.write_text(text)
    with pytest.raises(ServerConfigError) as caught:
        read_config_file(path)
    assert str(caught.value).startswith(f"{path}: model m: {message}"), str(caught.value)
    assert "\n" not in str(caught.value)


def test_an_unwritable_prefix_is_one_line_at_start(base: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    config = tmp_path / "models.config"
    config.write_text(config_text(base, blocker / "logs" / "r"))
    result = CliRunner().invoke(cli, ["serve", f"--model_config_file={config}", "--port=0"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"Error: model m: request log filename_prefix {blocker}/logs/r: ")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_a_reloaded_config_moves_the_log(base: Path, tmp_path: Path) -> None:
    from google.protobuf import text_format
    from tensorflow_serving.apis import model_management_pb2, model_service_pb2_grpc

    first, second = tmp_path / "first" / "r", tmp_path / "second" / "r"
    with logged_server(tmp_path, config_text(base, first)) as server:
        with grpc.insecure_channel(server.address) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            stub.Predict(predict_request([[1.0, 0.0]]), timeout=30)
            reload = model_management_pb2.ReloadConfigRequest()
            text_format.Parse(config_text(base, second), reload.config)
            answer = model_service_pb2_grpc.ModelServiceStub(channel).HandleReloadConfigRequest(
                reload, timeout=60
            )
            assert answer.status.error_code == 0, answer.status.error_message
            stub.Predict(predict_request([[2.0, 0.0]]), timeout=30)
            blocker = tmp_path / "a-file"
            blocker.write_text("")
            bad = model_management_pb2.ReloadConfigRequest()
            text_format.Parse(config_text(base, blocker / "r"), bad.config)
            with pytest.raises(grpc.RpcError) as refused:
                model_service_pb2_grpc.ModelServiceStub(channel).HandleReloadConfigRequest(bad, timeout=60)
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert refused.value.details() == (
                f"model m: request log filename_prefix {blocker}/r: cannot write files there: Not a directory"
            )
            stub.Predict(predict_request([[3.0, 0.0]]), timeout=30)  # still logged where it was
    values = [
        [tf.make_ndarray(log.predict_log.request.inputs["x"])[0, 0] for log in read_logs(log_files(prefix))]
        for prefix in (first, second)
    ]
    assert values == [[1.0], [2.0, 3.0]]


def test_tfship_serve_takes_the_request_log_flags_and_writes_what_is_queued_on_sigterm(
    base: Path, tmp_path: Path
) -> None:
    from .conftest import serve_process

    prefix = tmp_path / "r"
    config = tmp_path / "models.config"
    config.write_text(config_text(base, prefix))
    flags = ["--request-log-max-file-bytes=500", "--request-log-queue-size=64"]
    with serve_process(f"--model_config_file={config}", "--port=0", *flags) as running:
        with grpc.insecure_channel(running.info["grpc"]) as channel:
            grpc.channel_ready_future(channel).result(timeout=60)
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            for row in range(5):
                stub.Predict(predict_request([[float(row), 0.0]]), timeout=60)
    stem = f"{prefix.name}-{socket.gethostname()}-{running.pid}-"
    files = sorted(p for p in tmp_path.iterdir() if p.name.startswith(stem))
    assert len(files) >= 2 and all(f.stat().st_size <= 500 for f in files), files
    logs = read_logs(files)
    assert [tf.make_ndarray(log.predict_log.request.inputs["x"])[0, 0] for log in logs] == [0, 1, 2, 3, 4]


def test_an_open_inference_request_is_logged_as_the_predict_it_amounts_to(base: Path, tmp_path: Path) -> None:
    prefix = tmp_path / "logs" / "v2"
    infer = {
        "inputs": [{"name": "x", "datatype": "FP32", "shape": [2, 2], "data": [1.0, 2.0, 3.0, 4.0]}],
        "parameters": {"signature_name": "serving_default"},
    }
    with logged_server(tmp_path, config_text(base, prefix)) as server:
        answer = post(server, "/v2/models/m/infer", infer)
        assert answer["outputs"][0]["data"] == [4.0, 8.0]
    logs = read_logs(log_files(prefix))
    assert [log.WhichOneof("log_type") for log in logs] == ["predict_log"]
    log = logs[0].predict_log
    assert (log.request.model_spec.name, log.request.model_spec.signature_name) == ("m", "serving_default")
    assert tf.make_ndarray(log.request.inputs["x"]).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert tf.make_ndarray(log.response.outputs["y"]).tolist() == [[4.0], [8.0]]
    assert logs[0].log_metadata.model_spec.version.value == 1
    # and a replay of the log through TF Serving's Predict gives the logged answer
    with logged_server(tmp_path, config_text(base, tmp_path / "logs" / "replay")) as server:
        with grpc.insecure_channel(server.address) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            replayed = stub.Predict(log.request, timeout=30).outputs["y"]
            assert tf.make_ndarray(replayed).tolist() == tf.make_ndarray(log.response.outputs["y"]).tolist()
