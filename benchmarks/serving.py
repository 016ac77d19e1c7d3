"""Predict through the local server against calling LocalModel in-process, side by side.

One run measures:

* requests/s at batch 1 for 1, 8 and 32 concurrent clients: ``LocalModel.run`` from that many
  threads in this process; the server (``tfship serve``, in its own process) called over gRPC
  with the official stubs, without and with server-side batching;
* the time of one Predict whose output is a 1024x1024 float32 tensor (4 MiB of ``float_val``
  on the wire), against ``LocalModel.run`` of the same signature;
* REST: one more server with both ports, called by gRPC (official stubs) and by plain
  ``http.client`` clients that each keep one connection open (as ``requests.Session`` or curl
  with several URLs do): requests/s for 1, 8 and 32 clients and the REST/gRPC ratio, then the
  p50 latency of a batch-1 Predict over one kept-alive connection, REST against gRPC.

It prints each with its ratio, and ``tfship serve`` against the transport floor (targets: at
least 0.8x the floor's requests/s at 1 and 8 clients, at most 1.25x its time for the 4 MiB
answer; keep-alive REST at least 0.5x gRPC with a p50 under 5 ms), and against a second floor
that also runs the model on a fixed input before its constant reply: what the model's own
run costs any server on this stack, so what is left is tfship's own work; then tfship's
``ServingClient`` on REST against a plain kept-alive ``http.client`` posting the same JSON;
and the cost of request logging: requests/s at 1 and 8 clients of a server whose model config
logs every request (``logging_config``, sampling 1.0, TFRecord) against the same config
without it, measured in turns (target: at least 0.95x), with the records written and dropped;
and the Open Inference Protocol (KServe V2) on the same kind of server: ModelInfer over gRPC
with raw contents against the official Predict stub at batch 1 from 1 and 8 clients, ModelInfer
over REST with binary tensors against REST Predict, and the 4 MiB answer over both (targets:
at least 0.9x Predict's requests/s, at most 1.1x its time for the 4 MiB answer).

Usage: ``python benchmarks/serving.py [--seconds 2] [--rest-only] [--v2-only] [--short]``;
``--short`` measures 0.2 s each with 8 clients only, to see that every path runs (no targets).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

CLIENTS = (1, 8, 32)
SHORT_CLIENTS = (8,)


def export_model(base: Path) -> Path:
    """A small MLP (16 -> 64 -> 8) as version 1 of ``base``."""
    from tfship._tf import tf

    tf_ = tf()
    rng = np.random.default_rng(0)

    class Mlp(tf_.Module):  # type: ignore[misc,name-defined]  # tf is a module imported when called
        def __init__(self) -> None:
            super().__init__()
            self.w1 = tf_.Variable(rng.normal(size=(16, 64)).astype(np.float32))
            self.w2 = tf_.Variable(rng.normal(size=(64, 8)).astype(np.float32))

        @tf_.function(input_signature=[tf_.TensorSpec([None, 16], tf_.float32, name="x")])
        def serve(self, x: Any) -> dict[str, Any]:
            hidden = tf_.nn.relu(tf_.matmul(x, self.w1))
            return {"scores": tf_.nn.softmax(tf_.matmul(hidden, self.w2))}

        @tf_.function(input_signature=[tf_.TensorSpec([None, 16], tf_.float32, name="x")])
        def big(self, x: Any) -> dict[str, Any]:
            # a 1024x1024 float32 answer that depends on the request
            return {"image": tf_.fill([1024, 1024], 1.0) * tf_.reduce_sum(x)}

    model = Mlp()
    path = base / "1"
    tf_.saved_model.save(model, str(path), signatures={"serving_default": model.serve, "big": model.big})
    return path


def median_seconds(call: Callable[[], Any], repeats: int) -> float:
    """Median wall time of ``call()`` over ``repeats`` runs (after one warm-up run)."""
    call()
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    return float(np.median(times))


def rate(clients: int, seconds: float, make_call: Callable[[], Callable[[], object]]) -> float:
    """Requests/s of ``clients`` threads each calling its own ``make_call()`` for ``seconds``."""
    counts = [0] * clients
    start = threading.Barrier(clients + 1)
    stop = threading.Event()

    def worker(index: int) -> None:
        call = make_call()
        call()  # warm the connection and the model's callable
        start.wait()
        while not stop.is_set():
            call()
            counts[index] += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    return sum(counts) / (time.perf_counter() - began)


def local_rates(
    version_dir: Path, seconds: float, clients: tuple[int, ...]
) -> tuple[dict[int, float], float]:
    """In-process requests/s per client count, and the median time of the large-output call."""
    from tfship.loaders import load

    model = load(version_dir)
    x = np.ones([1, 16], np.float32)
    try:
        rates = {n: rate(n, seconds, lambda: lambda: model.run({"x": x})) for n in clients}
        big = median_seconds(lambda: model.run({"x": x}, signature="big"), 20)
        return rates, big
    finally:
        model.close()


def big_reply() -> bytes:
    """A PredictResponse of one 1024x1024 float32 output, as the server writes it."""
    from tfship._wire import encode_predict_response

    return encode_predict_response([("image", np.ones([1024, 1024], np.float32), None)], b"")


def start_server(
    base: Path, batching: bool = False, rest: bool = False, config: list[str] | None = None
) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    """``tfship serve`` in its own process; returns it and the ports it announced.

    ``config`` replaces the model flags (a ``--model-config`` file and what goes with it).
    """
    models = config or ["--model-base-path", str(base), "--model-name", "bench"]
    args = [sys.executable, "-m", "tfship", "serve", *models, "--port", "0", "--json"]
    if batching:
        args += ["--enable-batching", "--max-batch-size", "32", "--batch-timeout-ms", "1"]
    if rest:
        args += ["--rest-port", "0"]
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        process.kill()
        raise SystemExit("the server did not start")
    info: dict[str, Any] = json.loads(line)
    return process, info


# Opens one connection: its call, and what closes it.
Opener = Callable[[], tuple[Callable[[], object], Callable[[], None]]]


class Connections:
    """The connections a measurement opens, each closed when it ends."""

    def __init__(self) -> None:
        self.closers: list[Callable[[], None]] = []

    def maker(self, opener: Opener) -> Callable[[], Callable[[], object]]:
        """``make_call`` for :func:`rate`: each call opens a connection of its own."""

        def make_call() -> Callable[[], object]:
            call, close = opener()
            self.closers.append(close)
            return call

        return make_call

    def close(self) -> None:
        for close in self.closers:
            close()


@contextlib.contextmanager
def served(base: Path, **options: Any) -> Iterator[tuple[dict[str, Any], Connections]]:
    """A ``tfship serve`` process (``start_server``'s options) while the block runs: the ports
    it announced and the connections to it, all closed and the server stopped at the end."""
    process, info = start_server(base, **options)
    connections = Connections()
    try:
        yield info, connections
    finally:
        connections.close()
        process.terminate()
        process.wait(timeout=60)


def rates_in_turns(
    openers: Sequence[tuple[str, Opener]],
    clients: tuple[int, ...],
    seconds: float,
    rounds: int,
    connections: Connections,
) -> tuple[dict[str, dict[int, float]], dict[str, float]]:
    """Requests/s of each kind of call per client count, and each kind's p50 latency in ms.

    Measured in turns, each kind once a round, each figure the median of the rounds: a busy
    machine slows every kind alike. The latency is that of sequential calls over one
    connection, steadier than a rate on a shared machine.
    """
    runs: dict[str, dict[int, list[float]]] = {kind: {n: [] for n in clients} for kind, _ in openers}
    for _ in range(rounds):
        for n in clients:
            for kind, opener in openers:
                runs[kind][n].append(rate(n, seconds, connections.maker(opener)))
    rates = {kind: {n: float(np.median(v)) for n, v in per.items()} for kind, per in runs.items()}
    latency = {kind: p50_ms(connections.maker(opener)(), 200) for kind, opener in openers}
    return rates, latency


def big_call_times(address: str, request: Any) -> dict[str, float]:
    """Median times of one large-output Predict: official stub (reply parsed), bytes only."""
    import grpc
    from tensorflow_serving.apis import prediction_service_pb2_grpc

    options = [("grpc.max_receive_message_length", 2**31 - 1)]
    with grpc.insecure_channel(address, options=options) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        raw = channel.unary_unary(
            "/tensorflow.serving.PredictionService/Predict",
            request_serializer=lambda message: message.SerializeToString(),
            response_deserializer=lambda data: data,
        )
        return {
            "stub": median_seconds(lambda: stub.Predict(request, timeout=60), 20),
            "bytes": median_seconds(lambda: raw(request, timeout=60), 20),
        }


def serve_constant_reply(kind: str, version_dir: str | None = None, request_file: str | None = None) -> None:
    """Serve Predict with one pre-serialized reply (the transport floor), until killed.

    With ``version_dir`` each call also runs that model's signature (``big`` for the big
    reply, else the default) on a fixed input through ``LocalModel.checked_runner``, in the
    handler's thread, before the same constant reply: the floor of any server on this stack
    that runs the model (no request read, no checks, no answer written). ``request_file``, a
    serialized ``PredictRequest``, names another model's signature, input and outputs (every
    output of the signature when it filters none), read once at start-up.
    """
    from concurrent import futures

    import grpc

    from tfship._wire import encode_predict_response

    small = [("scores", np.full([1, 8], 0.125, np.float32), None)]
    reply = big_reply() if kind == "big" else encode_predict_response(small, b"")

    def answer(_request: bytes, _context: Any) -> bytes:
        return reply

    if version_dir is not None:
        from tfship.loaders import load

        model = load(version_dir)
        signature, outputs = ("big", ["image"]) if kind == "big" else ("serving_default", ["scores"])
        feeds: dict[str, Any] = {"x": np.ones([1, 16], np.float32)}
        if request_file is not None:
            signature, feeds, outputs = request_feeds(model, Path(request_file).read_bytes())
        run = model.checked_runner(signature, outputs)
        assert run is not None

        def answer(_request: bytes, _context: Any) -> bytes:
            run(feeds)
            return reply

    handler = grpc.method_handlers_generic_handler(
        "tensorflow.serving.PredictionService",
        {
            "Predict": grpc.unary_unary_rpc_method_handler(
                answer,
                request_deserializer=lambda data: data,
                response_serializer=lambda data: data,
            )
        },
    )
    server = grpc.server(
        futures.ThreadPoolExecutor(64), options=[("grpc.max_send_message_length", 2**31 - 1)]
    )
    server.add_generic_rpc_handlers((handler,))
    print(server.add_insecure_port("127.0.0.1:0"), flush=True)
    server.start()
    server.wait_for_termination()


def request_feeds(model: Any, request: bytes) -> tuple[str, dict[str, Any], list[str]]:
    """The signature, feeds and outputs a serialized ``PredictRequest`` asks ``model`` for."""
    from tfship._wire import DEFAULT_SIGNATURE, decode_tensor, protos

    message = protos().predict_pb2.PredictRequest.FromString(request)
    signature = message.model_spec.signature_name or DEFAULT_SIGNATURE
    feeds = {key: decode_tensor(tensor) for key, tensor in message.inputs.items()}
    outputs = list(message.output_filter) or sorted(model.signature(signature).outputs)
    return signature, feeds, outputs


def against_floor(
    base: Path, seconds: float, clients: tuple[int, ...], rounds: int
) -> tuple[
    dict[int, float],
    dict[str, float],
    dict[int, float],
    dict[str, float],
    dict[int, float],
    dict[str, float],
]:
    """``tfship serve``, the floor and the floor that runs the model, measured in turns,
    ``rounds`` times, each figure the median of its rounds: on a shared machine the load
    moves during a run, and measuring one side after the other would put a different load
    on each.

    Returns the server's requests/s and large-answer times, the floor's, and those of the
    floor that runs the model.
    """
    import grpc
    from tensorflow_serving.apis import prediction_service_pb2_grpc

    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    process, info = start_server(base)
    floors = {
        kind: subprocess.Popen(
            [sys.executable, __file__, "--constant-reply-server", kind],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for kind in ("small", "big")
    }
    for kind in ("small", "big"):
        floors[f"model {kind}"] = subprocess.Popen(
            [sys.executable, __file__, "--constant-reply-server", kind, "--model", str(base / "1")],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
    channels: list[Any] = []
    try:
        addresses = {"server": info["grpc"]}
        for kind, floor_process in floors.items():
            assert floor_process.stdout is not None
            addresses[kind] = f"127.0.0.1:{int(floor_process.stdout.readline())}"
        small = big_request()
        small.model_spec.signature_name = ""

        def make_call(address: str) -> Callable[[], Callable[[], None]]:
            def make() -> Callable[[], None]:
                channel = grpc.insecure_channel(address)
                channels.append(channel)
                stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
                return lambda: stub.Predict(small, timeout=30)

            return make

        rates: dict[str, dict[int, list[float]]] = {"server": {}, "floor": {}, "model": {}}
        bigs: dict[str, list[dict[str, float]]] = {"server": [], "floor": [], "model": []}
        sides = (
            ("server", addresses["server"]),
            ("floor", addresses["small"]),
            ("model", addresses["model small"]),
        )
        for _ in range(rounds):
            for n in clients:
                for side, address in sides:
                    rates[side].setdefault(n, []).append(rate(n, seconds, make_call(address)))
            for side, address in (
                ("server", addresses["server"]),
                ("floor", addresses["big"]),
                ("model", addresses["model big"]),
            ):
                bigs[side].append(big_call_times(address, big_request()))

        def per_n(side: str) -> dict[int, float]:
            return {n: float(np.median(values)) for n, values in rates[side].items()}

        def times(side: str) -> dict[str, float]:
            return {key: float(np.median([t[key] for t in bigs[side]])) for key in bigs[side][0]}

        return (
            per_n("server"),
            times("server"),
            per_n("floor"),
            times("floor"),
            per_n("model"),
            times("model"),
        )
    finally:
        for channel in channels:
            channel.close()
        for running in (process, *floors.values()):
            running.terminate()
            running.wait(timeout=60)


def server_rates(
    base: Path, batching: bool, seconds: float, clients: tuple[int, ...]
) -> tuple[dict[int, float], dict[str, float]]:
    """Requests/s over gRPC per client count, and the large-output call's median times."""
    import grpc
    from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

    from tfship._tf import tf

    request = predict_pb2.PredictRequest()
    request.model_spec.name = "bench"
    request.inputs["x"].CopyFrom(tf().make_tensor_proto(np.ones([1, 16], np.float32)))
    process, info = start_server(base, batching)
    address = info["grpc"]
    channels: list[Any] = []

    def make_call() -> Callable[[], None]:
        channel = grpc.insecure_channel(address)
        channels.append(channel)
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        return lambda: stub.Predict(request, timeout=30)

    try:
        rates = {n: rate(n, seconds, make_call) for n in clients}
        return rates, big_call_times(address, big_request())
    finally:
        for channel in channels:
            channel.close()
        process.terminate()
        process.wait(timeout=60)


def big_request() -> Any:
    from tensorflow_serving.apis import predict_pb2  # the official stubs take their own class

    from tfship._wire import encode_tensor

    request = predict_pb2.PredictRequest()
    request.model_spec.name, request.model_spec.signature_name = "bench", "big"
    request.inputs["x"].ParseFromString(encode_tensor(np.ones([1, 16], np.float32)).SerializeToString())
    return request


# request logging ---------------------------------------------------------------------------
LOG_CLIENTS = (1, 8)


def logging_config_files(base: Path, where: Path) -> tuple[list[str], list[str]]:
    """``tfship serve`` arguments for one model config without request logging and one that
    logs every request (sampling 1.0, TFRecord); both with Prometheus metrics on REST."""
    monitoring = where / "monitoring.config"
    monitoring.write_text('prometheus_config { enable: true path: "/metrics" }')
    entry = f'name: "bench" base_path: "{base}" model_platform: "tensorflow"'
    logging = (
        f'logging_config {{ log_collector_config {{ type: "" filename_prefix: "{where}/requests" }} '
        "sampling_config { sampling_rate: 1.0 } }"
    )
    arguments = []
    for name, extra in (("plain", ""), ("logged", logging)):
        path = where / f"{name}.config"
        path.write_text(f"model_config_list {{ config {{ {entry} {extra} }} }}")
        arguments.append(
            ["--model-config", str(path), "--monitoring-config-file", str(monitoring), "--rest-port", "0"]
        )
    return arguments[0], arguments[1]


def logging_rates(
    base: Path, seconds: float, clients: tuple[int, ...], rounds: int
) -> tuple[dict[int, float], dict[int, float], dict[int, float], dict[str, float]]:
    """Requests/s without and with request logging, and the ratio of each round's pair: the
    two are measured back to back, in alternating order, ``rounds`` times, each figure the
    median (short turns, many of them, give both sides the same share of a shared machine's
    load). Also the logged server's ``request_log_count`` by status at the end."""
    import urllib.request

    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        plain_args, logged_args = logging_config_files(base, Path(tmp))
        servers = [stack.enter_context(served(base, config=args)) for args in (plain_args, logged_args)]
        measured: list[dict[int, list[float]]] = [{}, {}]
        for turn in range(rounds):
            for n in clients:
                for side in (0, 1) if turn % 2 == 0 else (1, 0):
                    info, connections = servers[side]
                    make_call = connections.maker(functools.partial(grpc_call, info["grpc"]))
                    measured[side].setdefault(n, []).append(rate(n, seconds, make_call))
        with urllib.request.urlopen(servers[1][0]["rest"] + "/metrics", timeout=30) as page:
            counts = _log_counts(page.read().decode())
    plain, logged = ({n: float(np.median(v)) for n, v in side.items()} for side in measured)
    paired = {n: float(np.median(np.divide(measured[1][n], measured[0][n]))) for n in clients}
    return plain, logged, paired, counts


def _log_counts(page: str) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    return {
        sample.labels["status_code"]: sample.value
        for family in text_string_to_metric_families(page)
        for sample in family.samples
        if sample.name == ":tensorflow:serving:request_log_count"
    }


def print_logging_cost(
    plain: dict[int, float],
    logged: dict[int, float],
    paired: dict[int, float],
    counts: dict[str, float],
    judged: bool,
) -> None:
    """Request logging at sampling 1.0 against none: the claim of its row."""
    print("Predict, batch 1, gRPC; requests/s without request logging and with logging_config at")
    print("sampling 1.0 (every request and answer written as a PredictionLog TFRecord), measured")
    print("in alternating turns; the ratio is the median of each turn's pair")
    for n in plain:
        print(f"{n:>7} clients | no logging {plain[n]:>8.0f} | logging {logged[n]:>8.0f} | {paired[n]:.2f}x")
    ratios = ", ".join(f"{n} clients {paired[n]:.2f}x" for n in plain)
    print(f"request logging / none, requests/s: {ratios} (target >= 0.95x at 1 and 8 clients)")
    written, dropped = int(counts.get("OK", 0)), int(counts.get("RESOURCE_EXHAUSTED", 0))
    print(f"records logged: {written:,} written, {dropped:,} dropped at a full queue")
    if not judged:
        print("targets: not judged (--short)")


# REST ----------------------------------------------------------------------------------------
REST_BODY = json.dumps({"instances": [[1.0] * 16]}).encode()


def rest_call(url: str) -> tuple[Callable[[], None], Callable[[], None]]:
    """One kept-alive ``http.client`` connection posting a batch-1 Predict; (call, close)."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    headers = {"Content-Type": "application/json"}

    def call() -> None:
        connection.request("POST", "/v1/models/bench:predict", REST_BODY, headers)
        response = connection.getresponse()
        body = response.read()
        if response.status != 200:
            raise SystemExit(f"REST Predict failed: {response.status} {body[:200]!r}")

    return call, connection.close


def grpc_call(address: str) -> tuple[Callable[[], None], Callable[[], None]]:
    """One channel calling a batch-1 Predict with the official stubs; (call, close)."""
    import grpc
    from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

    from tfship._tf import tf

    request = predict_pb2.PredictRequest()
    request.model_spec.name = "bench"
    request.inputs["x"].CopyFrom(tf().make_tensor_proto(np.ones([1, 16], np.float32)))
    channel = grpc.insecure_channel(address)
    stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    return (lambda: stub.Predict(request, timeout=30)), channel.close


def client_call(url: str) -> tuple[Callable[[], object], Callable[[], None]]:
    """tfship's own ``ServingClient`` on the REST transport (pooled httpx); (call, close)."""
    from tfship.serve_client import ServingClient

    client = ServingClient(url, validate=False)
    inputs = {"x": np.ones([1, 16], np.float32)}
    return (lambda: client.predict("bench", inputs)), client.close


def p50_ms(call: Callable[[], object], count: int) -> float:
    """Median latency in ms of ``count`` sequential calls (after one warm-up call)."""
    return median_seconds(call, count) * 1000.0


def rest_rates(base: Path, seconds: float, clients: tuple[int, ...]) -> dict[str, Any]:
    """gRPC and keep-alive REST against one server: requests/s per client count, p50 latency."""
    with served(base, rest=True) as (info, connections):
        address, url = info["grpc"], info["rest"]
        openers: tuple[tuple[str, Opener], ...] = (
            ("grpc", lambda: grpc_call(address)),
            ("rest", lambda: rest_call(url)),
            ("client", lambda: client_call(url)),
        )
        rates, latency = rates_in_turns(openers, clients, seconds, 1, connections)
        return {"rates": rates, "p50": latency}


def print_rest(result: dict[str, Any]) -> None:
    rates, p50 = result["rates"], result["p50"]
    print("Predict, batch 1, one server; REST = http.client, one kept-alive connection per client;")
    print("ServingClient = tfship's client on its REST transport (pooled keep-alive connections)")
    print(
        f"{'clients':>7} | {'gRPC req/s':>10} | {'REST req/s':>10} | {'REST/gRPC':>9} | "
        f"{'ServingClient REST':>18} | {'/gRPC':>6}"
    )
    for n in rates["grpc"]:
        print(
            f"{n:>7} | {rates['grpc'][n]:>10.0f} | {rates['rest'][n]:>10.0f} | "
            f"{rates['rest'][n] / rates['grpc'][n]:>8.2f}x | {rates['client'][n]:>18.0f} | "
            f"{rates['client'][n] / rates['grpc'][n]:>5.2f}x"
        )
    for kind, name in (("rest", "http.client"), ("client", "ServingClient")):
        print(
            f"p50 latency over one connection, {name}: REST {p50[kind]:.2f} ms, gRPC "
            f"{p50['grpc']:.2f} ms (REST/gRPC {p50[kind] / p50['grpc']:.2f}x)"
        )
    ratios = ", ".join(f"{n} clients {rates['client'][n] / rates['rest'][n]:.2f}x" for n in rates["rest"])
    print(f"ServingClient REST / plain http.client REST, requests/s: {ratios}")


# The Open Inference Protocol (KServe V2) ---------------------------------------------------------
V2_CLIENTS = (1, 8)


def v2_infer_call(
    address: str, signature: str | None = None
) -> tuple[Callable[[], None], Callable[[], None]]:
    """One channel calling ModelInfer with raw contents, the reply parsed; (call, close)."""
    import grpc

    from tfship._wire import protos

    pb = protos().grpc_service_pb2
    request = pb.ModelInferRequest(model_name="bench")
    request.inputs.add(name="x", datatype="FP32", shape=[1, 16])
    request.raw_input_contents.append(np.ones([1, 16], np.float32).tobytes())
    if signature is not None:
        request.parameters["signature_name"].string_param = signature
    options = [("grpc.max_receive_message_length", 2**31 - 1)]
    channel = grpc.insecure_channel(address, options=options)
    infer = channel.unary_unary(
        "/inference.GRPCInferenceService/ModelInfer",
        request_serializer=lambda message: message.SerializeToString(),
        response_deserializer=pb.ModelInferResponse.FromString,
    )
    return (lambda: infer(request, timeout=60)), channel.close


def v2_rest_call(url: str) -> tuple[Callable[[], None], Callable[[], None]]:
    """One kept-alive ``http.client`` connection posting a batch-1 ModelInfer with binary
    tensors both ways (as tritonclient sends numpy arrays); (call, close)."""
    import http.client
    from urllib.parse import urlsplit

    head = json.dumps(
        {
            "inputs": [
                {"name": "x", "shape": [1, 16], "datatype": "FP32", "parameters": {"binary_data_size": 64}}
            ],
            "parameters": {"binary_data_output": True},
        }
    ).encode()
    body = head + np.ones([1, 16], np.float32).tobytes()
    headers = {"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": str(len(head))}
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)

    def call() -> None:
        connection.request("POST", "/v2/models/bench/infer", body, headers)
        response = connection.getresponse()
        answer = response.read()
        if response.status != 200:
            raise SystemExit(f"V2 REST infer failed: {response.status} {answer[:200]!r}")

    return call, connection.close


def v2_rates(base: Path, seconds: float, clients: tuple[int, ...], rounds: int) -> dict[str, Any]:
    """V2 against TF Serving's API on one server: requests/s over gRPC and REST per client
    count, and the median time of the 4 MiB answer over gRPC."""
    with served(base, rest=True) as (info, connections):
        address, url = info["grpc"], info["rest"]
        openers: tuple[tuple[str, Opener], ...] = (
            ("predict_grpc", lambda: grpc_call(address)),
            ("v2_grpc", lambda: v2_infer_call(address)),
            ("predict_rest", lambda: rest_call(url)),
            ("v2_rest", lambda: v2_rest_call(url)),
        )
        rates, latency = rates_in_turns(openers, clients, seconds, rounds, connections)
        big = {
            "predict": big_call_times(address, big_request())["stub"],
            "v2": median_seconds(connections.maker(lambda: v2_infer_call(address, "big"))(), 20),
        }
        return {"rates": rates, "big": big, "p50": latency}


def print_v2(result: dict[str, Any]) -> None:
    rates, big = result["rates"], result["big"]
    print("Open Inference Protocol (V2) against TF Serving's API on one server, batch 1, requests/s;")
    print("gRPC: official Predict stub against ModelInfer with raw contents, replies parsed;")
    print("REST: http.client kept alive, Predict JSON against ModelInfer with binary tensors;")
    print("each kind measured in turns, the median of 3 rounds (1 with --short)")
    print(
        f"{'clients':>7} | {'Predict gRPC':>12} | {'V2 gRPC raw':>11} | {'V2/Predict':>10} | "
        f"{'Predict REST':>12} | {'V2 REST binary':>14} | {'V2/Predict':>10}"
    )
    for n in rates["v2_grpc"]:
        grpc_ratio = rates["v2_grpc"][n] / rates["predict_grpc"][n]
        rest_ratio = rates["v2_rest"][n] / rates["predict_rest"][n]
        print(
            f"{n:>7} | {rates['predict_grpc'][n]:>12.0f} | {rates['v2_grpc'][n]:>11.0f} | "
            f"{grpc_ratio:>9.2f}x | {rates['predict_rest'][n]:>12.0f} | {rates['v2_rest'][n]:>14.0f} | "
            f"{rest_ratio:>9.2f}x"
        )
    p50 = result["p50"]
    print(
        f"p50 latency, batch 1, one connection: V2 gRPC raw {p50['v2_grpc']:.2f} ms, Predict gRPC "
        f"{p50['predict_grpc']:.2f} ms ({p50['v2_grpc'] / p50['predict_grpc']:.2f}x); V2 REST binary "
        f"{p50['v2_rest']:.2f} ms, Predict REST {p50['predict_rest']:.2f} ms "
        f"({p50['v2_rest'] / p50['predict_rest']:.2f}x)"
    )
    print(
        f"1024x1024 float32 answer, median of 20 calls: V2 gRPC raw {big['v2'] * 1e3:.2f} ms, "
        f"Predict {big['predict'] * 1e3:.2f} ms ({big['v2'] / big['predict']:.2f}x, target <= 1.10x)"
    )
    print("V2 / TF Serving's API targets: requests/s >= 0.90x over gRPC (1 and 8 clients) and REST")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--seconds", type=float, default=None, help="per measurement (default 2; 0.2 with --short)"
    )
    parser.add_argument("--constant-reply-server", choices=("small", "big"), help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--request", help=argparse.SUPPRESS)
    parser.add_argument("--rest-only", action="store_true", help="only the REST rows")
    parser.add_argument("--v2-only", action="store_true", help="only the Open Inference Protocol rows")
    parser.add_argument(
        "--short", action="store_true", help="0.2 s per measurement, 8 clients only: every path, no targets"
    )
    args = parser.parse_args()
    seconds = args.seconds if args.seconds is not None else 0.2 if args.short else 2.0
    clients = SHORT_CLIENTS if args.short else CLIENTS
    if args.constant_reply_server:
        serve_constant_reply(args.constant_reply_server, args.model, args.request)
        return
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "bench"
        base.mkdir()
        version_dir = export_model(base)
        v2 = v2_rates(base, seconds, SHORT_CLIENTS if args.short else V2_CLIENTS, 1 if args.short else 3)
        if args.v2_only:
            print_v2(v2)
            return
        rest = rest_rates(base, seconds, clients)
        if args.rest_only:
            print_rest(rest)
            return
        local, local_big = local_rates(version_dir, seconds, clients)
        plain, plain_big, floor_rates, floor, model_floor, model_big = against_floor(
            base, seconds, clients, rounds=1 if args.short else 3
        )
        batched, _ = server_rates(base, True, seconds, clients)
        log_clients = SHORT_CLIENTS if args.short else LOG_CLIENTS
        # a quarter of --seconds per turn, four times as many turns: the same time, finer turns
        log_cost = logging_rates(base, seconds / 4, log_clients, rounds=2 if args.short else 12)
    print("Predict with a 1024x1024 float32 output (4 MiB of float_val), median of 20 calls")
    print(f"  {'LocalModel.run (in process)':<56} {local_big * 1e3:7.2f} ms")
    for label, key in (("official stub, reply parsed", "stub"), ("reply bytes only", "bytes")):
        print(
            f"  {'gRPC server, ' + label:<56} {plain_big[key] * 1e3:7.2f} ms "
            f"({plain_big[key] / local_big:6.1f}x)"
        )
        print(
            f"  {'gRPC floor (constant reply), ' + label:<56} {floor[key] * 1e3:7.2f} ms "
            f"({floor[key] / local_big:6.1f}x)"
        )
    print()
    print("Predict, batch 1, MLP 16-64-8; requests/s (ratio to in-process LocalModel.run);")
    print("the floor is a gRPC server (same stack) that returns a constant reply; the server and")
    print("the floor are measured in turns, the median of 3 rounds each (1 with --short)")
    print(
        f"{'clients':>7} | {'LocalModel':>10} | {'gRPC server':>19} | {'gRPC + batching':>19} | "
        f"{'gRPC floor':>19}"
    )
    for n in clients:
        cells = [f"{r[n]:>9.0f} ({r[n] / local[n]:>5.2f}x)" for r in (plain, batched, floor_rates)]
        print(f"{n:>7} | {local[n]:>10.0f} | " + " | ".join(cells))
    print()
    print_floor_ratios(plain, floor_rates, plain_big, floor, (model_floor, model_big), judged=not args.short)
    print()
    print_rest(rest)
    print()
    print_logging_cost(*log_cost, judged=not args.short)
    print()
    print_v2(v2)


def print_floor_ratios(
    plain: dict[int, float],
    floor_rates: dict[int, float],
    plain_big: dict[str, float],
    floor: dict[str, float],
    model: tuple[dict[int, float], dict[str, float]],
    judged: bool,
) -> None:
    """tfship serve against the transport floor: the claims of this benchmark."""
    rates = ", ".join(f"{n} clients {plain[n] / floor_rates[n]:.2f}x" for n in plain)
    print(f"tfship serve / floor, requests/s: {rates} (target >= 0.80x at 1 and 8 clients)")
    # what the model's own run costs any server on this stack, and what tfship adds to it
    model_rates, model_big = model
    ratios = ", ".join(f"{n} clients {model_rates[n] / floor_rates[n]:.2f}x" for n in plain)
    print(f"floor running the model / floor, requests/s: {ratios}")
    ratios = ", ".join(f"{n} clients {plain[n] / model_rates[n]:.2f}x" for n in plain)
    print(f"tfship serve / floor running the model, requests/s: {ratios}")
    print(
        f"floor running the model / floor, time of the 4 MiB answer, bytes only: "
        f"{model_big['bytes'] / floor['bytes']:.2f}x; tfship serve / floor running the model: "
        f"{plain_big['bytes'] / model_big['bytes']:.2f}x"
    )
    times = ", ".join(
        f"{label} {plain_big[key] / floor[key]:.2f}x"
        for label, key in (("reply parsed", "stub"), ("bytes only", "bytes"))
    )
    print(f"tfship serve / floor, time of the 4 MiB answer: {times} (target <= 1.25x)")
    if not judged:
        print("targets: not judged (--short)")


if __name__ == "__main__":
    main()
