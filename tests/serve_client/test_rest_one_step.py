"""The REST client's short paths give what the full paths give, seen on the wire by a raw
HTTP server: the request body (orjson's text at once, ``json``'s where a value is NaN or
infinite), each request's bytes (header lines kept by the connection, against http.client
writing them every time) and what is made of an answer's head (read without the email
parser when plain, against http.client reading the same answer)."""

from __future__ import annotations

import http.client
import json
import re
import socketserver
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import orjson
import pytest

from tfship.serve_client import ModelNotFoundError, RestServingClient

STATUS = b'{"model_version_status": [{"version": "3", "state": "AVAILABLE", "status": {}}]}'
NOT_FOUND = b'{"error": "Servable not found for request: Latest(m)"}'
TENSOR = {"dtype": "DT_FLOAT", "tensor_shape": {"unknown_rank": True}}
METADATA = json.dumps(
    {
        "model_spec": {"name": "m", "version": "3"},
        "metadata": {
            "signature_def": {
                "signature_def": {
                    "serving_default": {
                        "method_name": "tensorflow/serving/predict",
                        "inputs": {"x": TENSOR},
                        "outputs": {"y": TENSOR},
                    }
                }
            }
        },
    }
).encode()
OUTPUTS = b'{"outputs": [[0.5, 1.5]]}'


def _plain(body: bytes, status: bytes = b"200 OK") -> bytes:
    return (
        b"HTTP/1.1 "
        + status
        + b"\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
        % (
            len(body),
            body,
        )
    )


class _Wire(socketserver.ThreadingTCPServer):
    """A raw HTTP/1.1 server: records each request as received (connection number, bytes) and
    answers it with ``answer(request)``: (the answer's bytes, whether to close afterwards)."""

    daemon_threads = True
    allow_reuse_address = True
    received: list[tuple[int, bytes]]
    answer: Callable[[bytes], tuple[bytes, bool]]
    connections = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Recording(socketserver.StreamRequestHandler):
    server: _Wire

    def handle(self) -> None:
        self.server.connections += 1
        number = self.server.connections
        while True:
            raw = b""
            while not raw.endswith(b"\r\n\r\n"):
                line = self.rfile.readline()
                if not line:
                    return
                raw += line
            length = re.search(rb"\r\ncontent-length: (\d+)\r\n", raw, re.IGNORECASE)
            raw += self.rfile.read(int(length.group(1))) if length else b""
            self.server.received.append((number, raw))
            answer, close = self.server.answer(raw)
            self.wfile.write(answer)
            if close:
                return


@pytest.fixture
def wire() -> Iterator[_Wire]:
    server = _Wire(("127.0.0.1", 0), _Recording)
    server.received = []
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _by_path(request: bytes) -> tuple[bytes, bool]:
    line = request.split(b"\r\n", 1)[0]
    if b"/metadata " in line:
        return _plain(METADATA), False
    return _plain(OUTPUTS if b":predict " in line else STATUS), False


# -------------------------------------------------------------------------- request bodies


@pytest.mark.parametrize(
    "x",
    [
        np.array([[0.1, 1e-8, 3.4e38, -0.0, 16777217.0]], np.float32),
        np.array([[0.1, 1 / 3, 1e300]]),
        np.array([[1.5, np.nan]], np.float32),
        np.array([np.inf, -np.inf]),
        np.array([[2**62 + 1, -7]], np.int64),
        np.float32("nan"),
        np.float32(2.5),
        np.array(np.float32("-inf")),
    ],
    ids=["float32", "float64", "NaN", "infinities", "int64", "NaN scalar", "scalar", "0-d -inf"],
)
def test_the_body_is_orjsons_text_or_jsons_where_a_value_is_not_finite(wire: _Wire, x: Any) -> None:
    wire.answer = _by_path
    with RestServingClient(wire.url, validate=False) as client:
        client.predict("m", {"x": x})
    body = wire.received[-1][1].split(b"\r\n\r\n", 1)[1]
    if np.isfinite(x).all():
        assert body == orjson.dumps({"inputs": {"x": x}}, option=orjson.OPT_SERIALIZE_NUMPY)
    else:  # orjson would write null: json writes NaN and Infinity, as TF Serving reads them
        assert body == json.dumps({"inputs": {"x": np.asarray(x).tolist()}}).encode()
        assert b"null" not in body


# ------------------------------------------------------------------------ request heads


@pytest.mark.parametrize(
    "headers", [None, {"X-Token": "été", "Accept": "*/*"}, {"Host": "serving.example"}], ids=str
)
def test_each_request_is_the_bytes_http_client_writes(wire: _Wire, headers: dict[str, str] | None) -> None:
    wire.answer = _by_path
    with RestServingClient(wire.url, headers=headers) as client:
        for _ in range(3):  # the first request on the connection keeps the lines, later ones use them
            client.status("m")
            client.predict("m", {"x": np.array([[1.0, 2.0]], np.float32)})
    ours = [raw for _, raw in wire.received]
    assert len({number for number, _ in wire.received}) == 1
    wire.received = []
    plain = http.client.HTTPConnection("127.0.0.1", wire.server_address[1], timeout=10)
    for raw in ours:
        head, body = raw.split(b"\r\n\r\n", 1)
        method, path = head.split(b" ")[:2]
        plain.request(
            method.decode(),
            path.decode(),
            body=body if method == b"POST" else None,
            headers={"Content-Type": "application/json", **(headers or {})},
        )
        plain.getresponse().read()
    plain.close()
    assert ours == [raw for _, raw in wire.received]


# ------------------------------------------------------------------------- answer heads

OK = b"HTTP/1.1 200 OK\r\n"
# How an answer may be framed: (its bytes, whether the server closes the connection after it).
# An answer that says the connection closes leaves it open here: the client must close it.
ANSWERS: dict[str, tuple[bytes, bool]] = {
    "plain": (_plain(STATUS), False),
    "http 1.0": (b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(STATUS), STATUS), False),
    "http 1.0 keep-alive": (
        b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: %d\r\n\r\n%s" % (len(STATUS), STATUS),
        False,
    ),
    "chunked": (
        OK + b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(STATUS), STATUS),
        False,
    ),
    "until closed": (OK + b"\r\n" + STATUS, True),
    "closes": (OK + b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(STATUS), STATUS), False),
    "odd spacing": (
        b"HTTP/1.1 200   Fine  \r\nX-A:\t  spaced  \r\nX-B:\r\nContent-Length:  %d\r\n\r\n%s"
        % (len(STATUS), STATUS),
        False,
    ),
    "twice": (
        OK + b"Set-Cookie: a\r\nSet-Cookie: b\r\ncontent-length: %d\r\n\r\n%s" % (len(STATUS), STATUS),
        False,
    ),
    "continue first": (b"HTTP/1.1 100 Continue\r\n\r\n" + _plain(STATUS), False),
    "folded": (OK + b"X-Long: one\r\n two\r\nContent-Length: %d\r\n\r\n%s" % (len(STATUS), STATUS), False),
    "latin-1": (OK + b"X-Name: caf\xe9\r\nContent-Length: %d\r\n\r\n%s" % (len(STATUS), STATUS), False),
    "not found": (_plain(NOT_FOUND, b"404 Not Found"), False),
    "not found, folded": (
        b"HTTP/1.1 404 Not Found\r\nX-Long: one\r\n two\r\nContent-Length: %d\r\n\r\n%s"
        % (len(NOT_FOUND), NOT_FOUND),
        False,
    ),
}


def _connections(wire: _Wire) -> list[int]:
    """The connection of each request received, numbered from the first one seen."""
    numbers = [number for number, _ in wire.received]
    return [number - numbers[0] for number in numbers]


def _served(wire: _Wire, first: tuple[bytes, bool]) -> None:
    """Answer the first request with ``first``, later ones with the plain status answer."""
    answers = [first]
    wire.received = []
    wire.answer = lambda request: answers.pop() if answers else (_plain(STATUS), False)


@pytest.mark.parametrize("answer", list(ANSWERS), ids=list(ANSWERS))
def test_an_answer_reads_as_http_client_reads_it(wire: _Wire, answer: str) -> None:
    _served(wire, ANSWERS[answer])
    plain = http.client.HTTPConnection("127.0.0.1", wire.server_address[1], timeout=10)
    read = []
    for _ in range(2):
        plain.request("GET", "/v1/models/m")
        response = plain.getresponse()
        read.append((response.status, response.read()))
    plain.close()
    theirs = _connections(wire)
    _served(wire, ANSWERS[answer])
    with RestServingClient(wire.url, retries=0) as client:
        try:
            got: Any = client.status("m")
        except ModelNotFoundError as exc:
            got = exc
        again = client.status("m")
    assert _connections(wire) == theirs  # the same connections kept or closed
    assert read[1] == (200, STATUS) and [s.version for s in again] == [3]
    if read[0] == (200, STATUS):
        assert [(s.version, s.state) for s in got] == [(3, "AVAILABLE")]
    else:
        assert read[0] == (404, NOT_FOUND)
        assert isinstance(got, ModelNotFoundError) and "Servable not found" in str(got)
