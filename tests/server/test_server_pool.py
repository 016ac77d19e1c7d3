"""The threads that answer gRPC calls (``server/_pool.py``): few under load, more when stuck.

The pool alone, then a real server whose only busy thread is inside a slow model while a
status call arrives.
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

from tfship.server import ModelServer, ServerOptions
from tfship.server._cli import translate_tf_serving_flags
from tfship.server._config import ModelConfig
from tfship.server._pool import CallPool, processors


def test_calls_return_their_results_and_raise_their_errors() -> None:
    pool = CallPool(busy=2, most=4, name="t")
    try:
        assert [f.result(5) for f in [pool.submit(pow, 2, n) for n in range(6)]] == [
            1, 2, 4, 8, 16, 32
        ]
        failing = pool.submit(int, "not a number")
        with pytest.raises(ValueError, match="not a number"):
            failing.result(5)
        assert pool.submit(dict, a=1).result(5) == {"a": 1}
    finally:
        pool.shutdown()


def test_many_short_overlapping_calls_keep_to_the_busy_threads() -> None:
    # 16 callers at once, each call a little work: the pool never needs a third thread
    pool = CallPool(busy=2, most=16, name="t", stuck_after=0.2)
    try:
        def caller() -> None:
            for _ in range(200):
                pool.submit(sum, range(200)).result(5)

        callers = [threading.Thread(target=caller) for _ in range(16)]
        for thread in callers:
            thread.start()
        for thread in callers:
            thread.join(60)
        assert pool.threads == 2
    finally:
        pool.shutdown()


def test_a_call_behind_stuck_threads_gets_a_thread_of_its_own() -> None:
    pool = CallPool(busy=1, most=3, name="t", stuck_after=0.01)
    release = threading.Event()
    try:
        slow = pool.submit(release.wait, 30)
        began = time.monotonic()
        quick = pool.submit(lambda: "answered")
        assert quick.result(5) == "answered"
        assert time.monotonic() - began < 2.0
        assert not slow.done() and pool.threads == 2
    finally:
        release.set()
        pool.shutdown()
    assert slow.result(5) is True


def test_threads_added_for_stuck_calls_leave_when_idle_and_never_pass_most() -> None:
    pool = CallPool(busy=1, most=3, name="t", stuck_after=0.01, idle_exit=0.2)
    release = threading.Event()
    try:
        waiting = [pool.submit(release.wait, 30) for _ in range(6)]
        deadline = time.monotonic() + 5
        while pool.threads < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)  # room to overshoot, if it would
        assert pool.threads == 3
        release.set()
        assert all(f.result(5) for f in waiting)
        deadline = time.monotonic() + 5
        while pool.threads > 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pool.threads == 1
    finally:
        release.set()
        pool.shutdown()


def test_shutdown_finishes_what_was_queued_and_refuses_new_calls() -> None:
    pool = CallPool(busy=1, most=1, name="t")
    queued = [pool.submit(time.sleep, 0.01) for _ in range(5)]
    pool.shutdown(wait=True)
    assert all(f.done() and f.exception() is None for f in queued)
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(print)
    with pytest.raises(ValueError, match="busy <= most"):
        CallPool(busy=3, most=2)


def test_cancelled_queued_calls_never_run() -> None:
    pool = CallPool(busy=1, most=1, name="t")
    release, ran = threading.Event(), []
    first = pool.submit(release.wait, 30)
    later = pool.submit(ran.append, 1)
    pool.shutdown(wait=False, cancel_futures=True)
    release.set()
    assert first.result(5) is True
    assert later.cancelled() and ran == []


def test_tf_servings_thread_flag_sets_the_most_threads() -> None:
    assert translate_tf_serving_flags(["--grpc_max_threads=8"]) == ["--grpc-max-threads=8"]
    assert processors() >= 1


# a real server --------------------------------------------------------------------------------
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
    options = ServerOptions(port=0, poll_seconds=0, grpc_workers=4, grpc_busy_workers=1)
    with ModelServer([ModelConfig("slow", str(base))], options) as server, \
            grpc.insecure_channel(server.address) as channel:
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
            assert not slow.done(), "the slow call ended before the status call was answered"
            turns = slow.result(60).outputs["turns"].int64_val[0]
    assert answer.model_version_status[0].version == 1
    assert waited < 2.0, f"the status call waited {waited:.2f} s behind the slow model"
    assert turns > 0 and np.isfinite(turns)
