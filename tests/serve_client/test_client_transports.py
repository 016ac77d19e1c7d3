"""One client over three transports: every feature works on each, REST keeps its connection.

A small loopback TCP proxy in front of the real server's REST port counts the connections the
client opens and reads the request lines that pass through it.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

import tfship.serve_client as errors
from tfship.serve_client import (
    AsyncInProcessTransport,
    AsyncServingClient,
    InProcessTransport,
    MicroBatchingOptions,
    RestServingClient,
    RestTransport,
    ServingClient,
)

X = [[1.0, 2.0], [3.0, 4.0]]
_REQUEST_LINE = re.compile(rb"(GET|POST) (\S+) HTTP/1\.[01]\r\n")


class CountingProxy:
    """Forwards 127.0.0.1:port to an upstream port; counts connections, keeps what clients sent."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sent: list[bytearray] = []  # client -> server bytes, one buffer per connection
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def accepted(self) -> int:
        return len(self.sent)

    @property
    def requests(self) -> list[str]:
        """``METHOD PATH`` of every request sent through the proxy, in order per connection."""
        with self._lock:
            streams = [bytes(s) for s in self.sent]
        return [f"{m.decode()} {p.decode()}" for s in streams for m, p in _REQUEST_LINE.findall(s)]

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            server = socket.create_connection(("127.0.0.1", self.upstream))
            record = bytearray()
            with self._lock:
                self.sent.append(record)
                self._sockets += [client, server]
            threading.Thread(target=self._pump, args=(client, server, record), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, None), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, record: bytearray | None) -> None:
        try:
            while data := source.recv(65536):
                if record is not None:
                    with self._lock:
                        record.extend(data)
                target.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, target):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.listener.close()
        with self._lock:
            for sock in self._sockets:
                sock.close()


@pytest.fixture()
def proxy(server: Any) -> Any:
    counting = CountingProxy(server.rest_port)
    try:
        yield counting
    finally:
        counting.close()


# -------------------------------------------------------------------------------- REST


def test_rest_client_reuses_its_connection(proxy: CountingProxy) -> None:
    url = f"http://127.0.0.1:{proxy.port}"
    with RestServingClient(url, timeout=20) as rest:
        for _ in range(5):
            assert np.allclose(rest.predict("m", {"x": X}).as_numpy("y"), [[7.0], [13.0]])
        assert rest.status("m")[0].state == "AVAILABLE"
    assert proxy.requests == ["GET /v1/models/m/metadata"] + ["POST /v1/models/m:predict"] * 5 + [
        "GET /v1/models/m"
    ]
    assert proxy.accepted == 1
    with RestServingClient(url) as other:  # the count can fail: a second client connects again
        other.status("m")
    assert proxy.accepted == 2


def test_async_rest_client_reuses_its_connection(proxy: CountingProxy) -> None:
    async def calls() -> list[Any]:
        async with AsyncServingClient(f"http://127.0.0.1:{proxy.port}", timeout=20) as client:
            return [await client.predict("m", {"x": X}, version=1) for _ in range(4)]

    results = asyncio.run(calls())
    assert all(np.allclose(r.as_numpy("y"), [[6.0], [12.0]]) for r in results)
    assert len(proxy.requests) == 5
    assert proxy.accepted == 1


def test_an_http_target_picks_the_rest_transport(server: Any) -> None:
    with ServingClient(server.rest_url) as client:
        assert isinstance(client.transport, RestTransport)
        assert client.predict("m", {"x": X}, label="stable").model_spec.version is None
    with pytest.raises(ValueError, match="not both"):
        ServingClient(server.address, transport=RestTransport(server.rest_url))


def test_rest_batching_merges_concurrent_predicts(proxy: CountingProxy) -> None:
    config = MicroBatchingOptions(max_batch_size=32, batch_timeout_s=0.2)
    barrier = threading.Barrier(6)
    with RestServingClient(f"http://127.0.0.1:{proxy.port}", batching=config) as rest:

        def one(i: int) -> Any:
            barrier.wait()
            return rest.predict("m", {"x": [[float(i), 1.0]]})

        with ThreadPoolExecutor(6) as pool:
            results = list(pool.map(one, range(6)))
    for i, result in enumerate(results):
        assert np.allclose(result.as_numpy("y"), [[i + 2.0 + 2.0]])
    assert proxy.requests.count("POST /v1/models/m:predict") < 6


class _ScriptedRest(BaseHTTPRequestHandler):
    """TF Serving's REST answers for a one-input model; ``failures`` are popped per predict."""

    protocol_version = "HTTP/1.1"
    failures: list[tuple[int, str]] = []
    paths: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server names
        self.paths.append(self.path)
        signature = {
            "method_name": "tensorflow/serving/predict",
            "inputs": {"x": {"dtype": "DT_FLOAT", "tensor_shape": {"dim": [{"size": "-1"}]}}},
            "outputs": {"x": {"dtype": "DT_FLOAT", "tensor_shape": {"dim": [{"size": "-1"}]}}},
        }
        self._answer(
            200,
            {
                "model_spec": {"name": "m", "version": "1"},
                "metadata": {"signature_def": {"signature_def": {"serving_default": signature}}},
            },
        )

    def do_POST(self) -> None:  # noqa: N802
        self.paths.append(self.path)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.failures:
            status, message = self.failures.pop(0)
            self._answer(status, {"error": message})
        else:
            self._answer(200, {"outputs": body["inputs"]["x"]})

    def _answer(self, status: int, doc: Any) -> None:
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def test_rest_rejected_call_refetches_signatures() -> None:
    _ScriptedRest.paths = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _ScriptedRest)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        with RestServingClient(f"127.0.0.1:{httpd.server_address[1]}") as rest:
            assert rest.predict("m", {"x": [1.0]}).as_numpy("x").tolist() == [1.0]
            rest.predict("m", {"x": [2.0]})
            _ScriptedRest.failures = [(400, "signature changed")]
            with pytest.raises(errors.InvalidInputError, match="signature changed"):
                rest.predict("m", {"x": [1.0]})
            rest.predict("m", {"x": [1.0]})
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert _ScriptedRest.paths.count("/v1/models/m/metadata") == 2
    assert _ScriptedRest.paths.count("/v1/models/m:predict") == 4


# -------------------------------------------------------------------------- in-process


@pytest.fixture(scope="module")
def local(server: Any) -> Any:
    with ServingClient(transport=InProcessTransport(server), timeout=20) as client:
        yield client


def test_in_process_answers_as_grpc_does(local: ServingClient, client: ServingClient) -> None:
    for call in ({"inputs": {"x": X}}, {"inputs": {"x": X}, "version": 1, "output_filter": ["doubled"]}):
        here, there = local.predict("m", **call), client.predict("m", **call)
        assert here.model_spec == there.model_spec
        assert {k: v.tolist() for k, v in here.outputs.items()} == {
            k: v.tolist() for k, v in there.outputs.items()
        }
    records = [{"x": [1.0, 2.0]}]
    assert (
        local.classify("m", records, signature="classify").classes
        == client.classify("m", records, signature="classify").classes
    )
    assert local.regress("m", records, signature="regress").values.tolist() == [5.0]
    tasks = [("classify", "classify")]
    multi = local.multi_inference("m", records, tasks).results[0]
    assert multi.classes == client.multi_inference("m", records, tasks).results[0].classes  # type: ignore[union-attr]
    assert local.status("m") == client.status("m")
    assert set(local.metadata("m").signatures) == set(client.metadata("m").signatures)
    assert local.wait_until_available("m", 1, timeout=5).version == 1


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"model": "ghost"}, errors.ModelNotFoundError),
        ({"model": "m", "version": 9}, errors.VersionNotFoundError),
        ({"model": "m", "signature": "nope"}, errors.ServingSignatureNotFoundError),
    ],
)
def test_in_process_errors_are_the_grpc_classes(
    server: Any, kwargs: dict[str, Any], error: type[errors.ServingCallError]
) -> None:
    with ServingClient(transport=InProcessTransport(server), validate=False) as raw:
        with pytest.raises(error) as info:
            raw.predict(inputs={"x": X}, **kwargs)
    assert info.value.code is not None  # the server answered, as it would over gRPC


def test_in_process_validates_before_running(local: ServingClient) -> None:
    with pytest.raises(errors.InvalidInputError, match=r"\[\?, 2\]") as info:
        local.predict("m", {"x": [1.0, 2.0]})
    assert info.value.code is None


def test_async_in_process(server: Any) -> None:
    async def calls() -> list[Any]:
        async with AsyncServingClient(transport=AsyncInProcessTransport(server)) as c:
            return list(await asyncio.gather(*(c.predict("m", {"x": [[float(i), 0.0]]}) for i in range(4))))

    results = asyncio.run(calls())
    assert [r.as_numpy("y")[0, 0] for r in results] == [2.0, 3.0, 4.0, 5.0]


def test_in_process_needs_a_server() -> None:
    with pytest.raises(TypeError, match="ModelServer"):
        InProcessTransport(object())  # type: ignore[arg-type]  # the wrong argument is the point


def test_in_process_reload_reports_the_core_status(local: ServingClient) -> None:
    from tensorflow_serving.config import model_server_config_pb2

    with pytest.raises(errors.InvalidInputError, match="ModelConfigList") as info:
        local.reload_config(model_server_config_pb2.ModelServerConfig())
    assert info.value.code == "INVALID_ARGUMENT"
