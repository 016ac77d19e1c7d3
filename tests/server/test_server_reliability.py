"""Bounded load, a hot swap under load, garbage input and message limits, on 127.0.0.1."""

from __future__ import annotations

import os
import shutil
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

from tfship.server import BatchingOptions, ModelConfig, ModelServer, ServerOptions

pytestmark = pytest.mark.slow
THREADS, CALLS = 16, 25


def request(rows: int = 1, model: str = "module") -> Any:
    message = predict_pb2.PredictRequest()
    message.model_spec.name = model
    x = np.arange(rows * 2, dtype=np.float32).reshape(rows, 2)
    message.inputs["x"].CopyFrom(tf.make_tensor_proto(x))
    return message


def hammer(address: str, calls: int, rows: int = 1, model: str = "module") -> list[int]:
    """One client: ``calls`` Predicts; returns the versions that answered."""
    with grpc.insecure_channel(address) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        versions = []
        for _ in range(calls):
            response = stub.Predict(request(rows, model), timeout=30)
            y = tf.make_ndarray(response.outputs["y"])
            version = int(response.model_spec.version.value)
            # y = x @ [1, 2] + version: a batch split back wrongly would show here
            x = tf.make_ndarray(request(rows, model).inputs["x"])
            np.testing.assert_allclose(y, x @ np.array([[1.0], [2.0]]) + version)
            versions.append(version)
        return versions


def test_sixteen_concurrent_clients_without_failure(server: ModelServer) -> None:
    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(lambda _: hammer(server.address, CALLS), range(THREADS)))
    assert sum(len(r) for r in results) == THREADS * CALLS
    assert {v for r in results for v in r} == {2}


def test_rest_under_sixteen_concurrent_clients(server: ModelServer) -> None:
    import json

    def client(_: int) -> int:
        done = 0
        for _ in range(CALLS):
            body = json.dumps({"instances": [[1.0, 2.0]]}).encode()
            req = urllib.request.Request(f"{server.rest_url}/v1/models/module:predict", data=body)
            with urllib.request.urlopen(req, timeout=30) as response:
                assert json.loads(response.read())["predictions"][0]["y"] == [7.0]
            done += 1
        return done

    with ThreadPoolExecutor(THREADS) as pool:
        assert sum(pool.map(client, range(THREADS))) == THREADS * CALLS


def test_batching_merges_concurrent_requests(module_base: Path) -> None:
    config = ModelConfig("module", str(module_base))
    with ModelServer([config], ServerOptions(port=0, batching=BatchingOptions(8, 0.005))) as server:
        with ThreadPoolExecutor(THREADS) as pool:
            results = list(pool.map(lambda i: hammer(server.address, 10, 1 + i % 3), range(THREADS)))
        assert sum(len(r) for r in results) == THREADS * 10
        manager = server._require_started()
        with manager.servable(request().model_spec) as servable:
            assert servable.batcher is not None
            batches = servable.batcher.batches_run
        # 160 requests in fewer runs: some were merged
        assert 0 < batches < THREADS * 10


def test_hot_swap_under_load_drops_nothing(tmp_path: Path, module_base: Path, module_version3: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    shutil.copytree(module_base / "1", base / "1")
    config = ModelConfig("module", str(base))
    with ModelServer([config], ServerOptions(port=0, poll_seconds=0.1)) as server:
        swapped = threading.Event()
        failures: list[BaseException] = []
        seen: list[list[int]] = []

        def client() -> None:
            try:
                versions: list[int] = []
                deadline = time.monotonic() + 60
                # keep calling until the swap is over, then 20 more calls
                while not swapped.is_set() and time.monotonic() < deadline:
                    versions += hammer(server.address, 5)
                versions += hammer(server.address, 20)
                seen.append(versions)
            except BaseException as exc:  # noqa: BLE001 - collected and asserted below
                failures.append(exc)

        threads = [threading.Thread(target=client) for _ in range(THREADS)]
        for thread in threads:
            thread.start()
        time.sleep(0.3)
        staging = base / "temp-3"
        shutil.copytree(module_version3, staging)
        os.rename(staging, base / "3")
        server.wait_until_available("module", 3, timeout=60)
        deadline = time.monotonic() + 30
        while server.history("module")[-1].state != "END" and time.monotonic() < deadline:
            time.sleep(0.05)
        swapped.set()
        for thread in threads:
            thread.join(timeout=120)
        assert failures == []
        assert len(seen) == THREADS
        assert all(v[-20:] == [3] * 20 for v in seen)
        assert {1, 3} >= {v for s in seen for v in s}
        assert server.available_versions("module") == [3]


def raw_call(address: str, method: str, payload: bytes) -> grpc.RpcError:
    with grpc.insecure_channel(address) as channel:
        call = channel.unary_unary(method)  # bytes in, bytes out: no client-side checks
        with pytest.raises(grpc.RpcError) as info:
            call(payload, timeout=30)
    return info.value


@pytest.mark.parametrize(
    "method",
    [
        "/tensorflow.serving.PredictionService/Predict",
        "/tensorflow.serving.PredictionService/Classify",
        "/tensorflow.serving.PredictionService/GetModelMetadata",
        "/tensorflow.serving.ModelService/GetModelStatus",
    ],
)
def test_garbage_bytes_never_crash_the_server(server: ModelServer, method: str) -> None:
    rng = np.random.default_rng(7)
    for size in (1, 17, 4096):
        error = raw_call(server.address, method, rng.bytes(size))
        # bytes that are no protobuf: INTERNAL, as gRPC C++ answers in TF Serving; bytes that
        # happen to parse are a request without a model_spec: INVALID_ARGUMENT
        assert error.code() in (grpc.StatusCode.INTERNAL, grpc.StatusCode.INVALID_ARGUMENT)
    empty = raw_call(server.address, method, b"")
    assert (empty.code(), empty.details()) == (grpc.StatusCode.INVALID_ARGUMENT, "Missing ModelSpec")
    assert hammer(server.address, 1) == [2]


def test_rest_garbage_is_400(server: ModelServer) -> None:
    rng = np.random.default_rng(11)
    for size in (1, 100, 5000):
        data = rng.bytes(size)
        req = urllib.request.Request(f"{server.rest_url}/v1/models/module:predict", data=data, method="POST")
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(req, timeout=30)
        assert info.value.code == 400
        info.value.close()
    assert hammer(server.address, 1) == [2]


def test_message_over_the_configured_limit_is_resource_exhausted(module_base: Path) -> None:
    config = ModelConfig("module", str(module_base))
    with ModelServer([config], ServerOptions(port=0, max_message_bytes=1 << 20)) as server:
        with grpc.insecure_channel(server.address) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            with pytest.raises(grpc.RpcError) as info:
                stub.Predict(request(rows=200_000), timeout=30)  # 1.6 MB of floats
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert hammer(server.address, 1, rows=2) == [2]


def test_default_limit_takes_messages_over_grpcs_4_mib(server: ModelServer) -> None:
    options = [("grpc.max_send_message_length", 2**31 - 1), ("grpc.max_receive_message_length", 2**31 - 1)]
    with grpc.insecure_channel(server.address, options=options) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        response = stub.Predict(request(rows=700_000), timeout=60)  # 5.6 MB each way
    assert [d.size for d in response.outputs["doubled"].tensor_shape.dim] == [700_000, 2]


def test_health_service_is_off_like_tf_servings_default(server: ModelServer) -> None:
    error = raw_call(server.address, "/grpc.health.v1.Health/Check", b"")
    assert error.code() == grpc.StatusCode.UNIMPLEMENTED


def test_long_error_texts_are_truncated_like_tf_serving(stub: Any) -> None:
    def details(signature: str) -> str:
        message = request()
        message.model_spec.signature_name = signature
        with pytest.raises(grpc.RpcError) as info:
            stub.Predict(message, timeout=30)
        assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        text: str = info.value.details()
        return text

    whole = 'Serving signature key "' + "z" * 2000 + '" not found.'
    assert details("z" * 2000) == whole[:1024] + "...TRUNCATED"
    assert details("nope") == 'Serving signature key "nope" not found.'
