"""The threads that answer gRPC calls: few under load, more when stuck, none once stopped.

Seen from outside, on real servers: the threads a server starts (named ``tfship-grpc_N``)
while 16 clients call a small model, while its one busy thread is inside a slow model, and
after it stops.
"""

from __future__ import annotations

import threading
import time
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest

from tfship.server import ModelConfig, ModelServer, ServerOptions

from .test_server_reliability import hammer


def _call_threads(before: set[threading.Thread]) -> set[threading.Thread]:
    """Threads answering gRPC calls started since ``before`` (the watcher is not one)."""
    return {
        thread
        for thread in threading.enumerate()
        if thread not in before and thread.name.startswith("tfship-grpc_")
    }


@pytest.mark.timing  # a stalled CPU lets a call wait long enough for another thread to start
def test_sixteen_clients_of_a_small_model_are_answered_by_the_busy_threads_alone(
    module_base: Path,
) -> None:
    before = set(threading.enumerate())
    options = ServerOptions(port=0, poll_seconds=0, grpc_workers=32, grpc_busy_workers=2)
    with ModelServer([ModelConfig("module", str(module_base))], options) as server:
        with futures.ThreadPoolExecutor(16) as clients:
            answered = list(clients.map(lambda _: hammer(server.address, 25), range(16)))
        assert sum(len(versions) for versions in answered) == 16 * 25
        # 2 take every call (a stall of a loaded machine may add one; a thread per
        # overlapping call, as a plain pool starts, would be 16)
        assert len(_call_threads(before)) <= 3
    deadline = time.monotonic() + 10
    while _call_threads(before) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _call_threads(before) == set(), "the server's threads outlived it"


# a slow model --------------------------------------------------------------------------------
def _export_slow_model(base: Path) -> None:
    """A model whose ``spin`` signature keeps its thread busy for ``seconds`` of wall time."""
    import tensorflow as tf

    class Slow(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([], tf.float64, name="seconds")])
        def spin(self, seconds: Any) -> dict[str, Any]:
            end = tf.timestamp() + seconds
            turns = tf.while_loop(
                lambda n: tf.timestamp() < end, lambda n: n + 1, [tf.constant(0, tf.int64)]
            )[0]
            return {"turns": turns}

    module = Slow()
    tf.saved_model.save(module, str(base / "1"), signatures={"serving_default": module.spin})


def test_a_status_call_is_answered_while_the_one_busy_thread_runs_a_slow_model(
    tmp_path: Path,
) -> None:
    from tensorflow_serving.apis import (
        get_model_status_pb2,
        model_service_pb2_grpc,
        predict_pb2,
        prediction_service_pb2_grpc,
    )

    base = tmp_path / "slow"
    base.mkdir()
    _export_slow_model(base)
    before = set(threading.enumerate())
    options = ServerOptions(port=0, poll_seconds=0, grpc_workers=4, grpc_busy_workers=1)
    with (
        ModelServer([ModelConfig("slow", str(base))], options) as server,
        grpc.insecure_channel(server.address) as channel,
    ):
        predictions = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        models = model_service_pb2_grpc.ModelServiceStub(channel)
        request = predict_pb2.PredictRequest()
        request.model_spec.name = "slow"
        request.inputs["seconds"].dtype = 2  # DT_DOUBLE
        request.inputs["seconds"].double_val.append(4.0)
        with futures.ThreadPoolExecutor(1) as caller:
            slow = caller.submit(predictions.Predict, request, timeout=60)
            time.sleep(0.5)  # the slow call is in the model now
            status = get_model_status_pb2.GetModelStatusRequest()
            status.model_spec.name = "slow"
            began = time.monotonic()
            answer = models.GetModelStatus(status, timeout=30)
            waited = time.monotonic() - began
            assert 2 <= len(_call_threads(before)) <= 4
            assert not slow.done(), "the slow call ended before the status call was answered"
            turns = slow.result(60).outputs["turns"].int64_val[0]
    assert answer.model_version_status[0].version == 1
    assert waited < 2.0, f"the status call waited {waited:.2f} s behind the slow model"
    assert turns > 0 and np.isfinite(turns)
