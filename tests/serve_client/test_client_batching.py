"""Client-side micro-batching: concurrent predicts share requests, each gets its own rows."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import numpy as np
import pytest

import tfship.serve_client as errors
from tfship.serve_client import MicroBatchingOptions, ServingClient

from .conftest import ScriptedServer


def _run_together(client: ServingClient, count: int, call: Any) -> list[Any]:
    barrier = threading.Barrier(count)

    def one(i: int) -> Any:
        barrier.wait()
        return call(client, i)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(one, range(count)))


def test_concurrent_predicts_are_merged(scripted: ScriptedServer) -> None:
    config = MicroBatchingOptions(max_batch_size=64, batch_timeout_s=0.2)
    with ServingClient(scripted.address, validate=False, batching=config) as client:
        results = _run_together(client, 8, lambda c, i: c.predict("m", {"x": np.full((2, 3), i, np.float32)}))
    for i, result in enumerate(results):
        assert np.array_equal(result.as_numpy("x"), np.full((2, 3), i, np.float32))
    assert len(scripted.calls) < 8  # merged into fewer requests than calls


def test_full_batch_is_sent_without_waiting(scripted: ScriptedServer) -> None:
    config = MicroBatchingOptions(max_batch_size=4, batch_timeout_s=30.0)
    with ServingClient(scripted.address, validate=False, batching=config) as client:
        results = _run_together(client, 4, lambda c, i: c.predict("m", {"x": [[float(i)]]}))
    assert sorted(float(r.as_numpy("x")[0, 0]) for r in results) == [0.0, 1.0, 2.0, 3.0]
    assert len(scripted.calls) == 1


def test_batched_failure_reaches_every_caller(scripted: ScriptedServer) -> None:
    scripted.failures = [(grpc.StatusCode.INVALID_ARGUMENT, "bad batch")]
    config = MicroBatchingOptions(max_batch_size=3, batch_timeout_s=30.0)

    def call(c: ServingClient, i: int) -> Any:
        try:
            return c.predict("m", {"x": [[1.0]]})
        except errors.InvalidInputError as exc:
            return exc

    with ServingClient(scripted.address, validate=False, batching=config) as client:
        results = _run_together(client, 3, call)
    assert all(isinstance(r, errors.InvalidInputError) for r in results)


def test_batching_against_the_server(server: Any) -> None:
    config = MicroBatchingOptions(max_batch_size=32, batch_timeout_s=0.05)
    with ServingClient(server.address, batching=config) as client:
        results = _run_together(client, 6, lambda c, i: c.predict("m", {"x": [[float(i), 1.0]]}))
    for i, result in enumerate(results):
        assert np.allclose(result.as_numpy("y"), [[i + 2.0 + 2.0]])


def test_config_is_checked() -> None:
    with pytest.raises(ValueError, match="max_batch_size"):
        MicroBatchingOptions(max_batch_size=0)
    with pytest.raises(ValueError, match="batch_timeout_s must be >= 0"):
        MicroBatchingOptions(batch_timeout_s=-0.1)


def test_batches_never_exceed_the_size(scripted: ScriptedServer) -> None:
    from tensorflow_serving.apis import predict_pb2

    config = MicroBatchingOptions(max_batch_size=5, batch_timeout_s=0.2)
    with ServingClient(scripted.address, validate=False, batching=config) as client:
        results = _run_together(client, 6, lambda c, i: c.predict("m", {"x": [[1.0]] * 2}))
    assert all(r.as_numpy("x").shape == (2, 1) for r in results)
    sizes = [
        predict_pb2.PredictRequest.FromString(body).inputs["x"].tensor_shape.dim[0].size
        for _, body, _ in scripted.calls
    ]
    assert sum(sizes) == 12 and max(sizes) <= 5
