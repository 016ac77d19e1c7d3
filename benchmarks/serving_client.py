"""Serving client speed: tfship's codec and client against TensorFlow's official path.

Measured in one run, best of several repeats, and printed as a table of ratios:

1. decode a PredictResponse holding 1M floats (typed ``float_val``, as TF Serving writes it):
   ``decode_predict_response`` vs ``PredictResponse.FromString`` + ``tf.make_ndarray``;
2. encode Python lists of floats and of strings: ``encode_tensor`` vs ``tf.make_tensor_proto``;
3. a Predict round trip over loopback gRPC returning a 1024x1024 float output:
   ``ServingClient.predict`` vs the official stub with ``make_tensor_proto``/``make_ndarray``.
   The server answers with a pre-serialized response, so the client's work is what differs.

Run: python benchmarks/serving_client.py
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent import futures
from typing import Any

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
for _name in ("grpc_proxy", "http_proxy", "https_proxy", "GRPC_PROXY", "HTTP_PROXY", "HTTPS_PROXY"):
    os.environ.pop(_name, None)  # loopback only


def best_ms(func: Callable[[], Any], repeats: int = 15) -> float:
    """Best wall time of ``func`` in milliseconds (after one warm-up call)."""
    func()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def float_response(shape: tuple[int, ...], seed: int = 0) -> bytes:
    from tfship._wire import protos

    values = np.random.default_rng(seed).random(shape, dtype=np.float32)
    resp = protos().predict_pb2.PredictResponse()
    resp.model_spec.name = "bench"
    resp.model_spec.version.value = 1
    out = resp.outputs["y"]
    out.dtype = 1
    for size in shape:
        out.tensor_shape.dim.add(size=size)
    out.float_val.extend(values.ravel().tolist())
    data: bytes = resp.SerializeToString()
    return data


def bench_decode(tf: Any) -> list[tuple[str, float, float]]:
    from tfship._wire import decode_predict_response, protos

    data = float_response((1000, 1000))
    cls = protos().predict_pb2.PredictResponse
    ours = decode_predict_response(data).outputs["y"]
    theirs = tf.make_ndarray(cls.FromString(data).outputs["y"])
    assert np.array_equal(ours, theirs)
    official = best_ms(lambda: tf.make_ndarray(cls.FromString(data).outputs["y"]), 7)
    fast = best_ms(lambda: decode_predict_response(data).outputs["y"])
    return [("decode 1M floats (float_val)", official, fast)]


def bench_encode(tf: Any) -> list[tuple[str, float, float]]:
    from tfship._wire import encode_tensor

    rng = np.random.default_rng(1)
    floats = rng.random((64, 1000)).tolist()
    strings = ["".join(chr(97 + c) for c in row) for row in rng.integers(0, 26, (10000, 100))]
    rows = []
    for label, value in (
        ("encode 64x1000 Python floats", floats),
        ("encode 10k Python strings (100 B)", strings),
    ):
        assert (
            tf.make_ndarray(encode_tensor(value)).tolist()
            == tf.make_ndarray(tf.make_tensor_proto(value)).tolist()
        )
        # More repeats than elsewhere: each call is short, and a loaded machine adds noise.
        official = best_ms(lambda v=value: tf.make_tensor_proto(v), 40)
        fast = best_ms(lambda v=value: encode_tensor(v), 40)
        rows.append((label, official, fast))
    return rows


def bench_round_trip(tf: Any) -> list[tuple[str, float, float]]:
    import grpc
    from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

    from tfship.serve_client import ServingClient

    answer = float_response((1024, 1024), seed=2)

    def handler(details: Any) -> Any:
        return grpc.unary_unary_rpc_method_handler(
            lambda request, context: answer,
            request_deserializer=None,
            response_serializer=None,
        )

    class Generic(grpc.GenericRpcHandler):
        def service(self, details: Any) -> Any:
            return handler(details)

    limit = [("grpc.max_send_message_length", 2**31 - 1), ("grpc.max_receive_message_length", 2**31 - 1)]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), options=limit)
    server.add_generic_rpc_handlers([Generic()])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    x = np.random.default_rng(3).random((8, 128), dtype=np.float32)
    try:
        channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=limit)
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)

        def official() -> Any:
            request = predict_pb2.PredictRequest()
            request.model_spec.name = "bench"
            request.inputs["x"].CopyFrom(tf.make_tensor_proto(x))
            response = stub.Predict(request, timeout=30)
            return tf.make_ndarray(response.outputs["y"])

        with ServingClient(f"127.0.0.1:{port}", validate=False) as client:

            def ours() -> Any:
                return client.predict("bench", {"x": x}).as_numpy("y")

            assert np.array_equal(official(), ours())
            slow_ms = best_ms(official, 7)
            fast_ms = best_ms(ours, 7)
        channel.close()
    finally:
        server.stop(None)
    return [("Predict round trip, 1024x1024 f32 out", slow_ms, fast_ms)]


def main() -> None:
    from tfship._tf import tf as import_tf

    tf = import_tf()
    rows = bench_decode(tf) + bench_encode(tf) + bench_round_trip(tf)
    targets = {"decode": 5.0, "encode": 10.0, "Predict": 2.0}
    width = max(len(r[0]) for r in rows)
    print(f"{'case':<{width}}  {'official ms':>11}  {'tfship ms':>9}  {'speed-up':>8}  target")
    for label, official, fast in rows:
        target = targets[label.split()[0]]
        ratio = official / fast
        print(f"{label:<{width}}  {official:>11.3f}  {fast:>9.3f}  {ratio:>7.1f}x  >= {target:g}x")


if __name__ == "__main__":
    main()
